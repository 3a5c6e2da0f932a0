//! `gavel serve`: loaded suites graded over HTTP, one request's rows at a time.
//!
//! Every request is bounded: its body by size and by the request's deadline (a client that
//! trickles bytes spends its own), its headers by a read timeout, its grading by the deadline
//! (the pass is halted once it passes, and each sandboxed call by its own limits). Requests
//! graded at once are bounded, and so is the queue before them: past it, `429` with
//! `Retry-After`. On SIGTERM the server stops accepting, answers `503` to new requests on open
//! connections, lets the requests in flight finish, and returns (Ctrl-C also stops the passes
//! in flight, as it stops `gavel run`'s).
//!
//! OpenAI's `graders/run` and `graders/validate` are answered as OpenAI answers them
//! ([`graders`]), their errors as OpenAI's error object; a grader object they bring is granted
//! nothing.
//!
//! Routes are matched in [`Route::of`]: a new endpoint is a variant there and an arm in
//! [`Service::answer`].

mod body;
pub mod graders;
pub mod grading;
pub mod metrics;
pub mod openrlhf;
pub mod rows;
mod stall;

use std::collections::BTreeMap;
use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use bytes::Bytes;
use http::{HeaderValue, Method, Request, Response, StatusCode, header};
use http_body_util::{BodyExt, LengthLimitError, Limited};
use hyper::body::Incoming;
use hyper_util::rt::{TokioIo, TokioTimer};
use serde_json::json;
use sha2::{Digest, Sha256};
use tokio::net::TcpListener;
use tokio::sync::{OwnedSemaphorePermit, Semaphore, mpsc, watch};

use crate::grade::pack::{self, Kept};
use crate::run::Prepared;
use body::{AnswerBody, Streamed};
use graders::{Failure, Requested};
use grading::{Graded, GradingError, Piece};

/// A suite the server grades with, loaded once.
pub struct ServedSuite {
    pub prepared: Prepared,
    /// Samples of one request graded at once.
    pub workers: usize,
    /// Warm Python instances its requests reuse (see [`crate::grade::pack::Kept`]).
    kept: Arc<Kept>,
}

impl ServedSuite {
    /// `prepared` graded on `workers` threads a request, keeping warm Python instances of
    /// each grader for `concurrency` requests at once, each replaced after `warm_calls` calls:
    /// one of each is started now, so that the first request does not load the program in its
    /// time.
    pub fn new(
        prepared: Prepared,
        workers: usize,
        concurrency: usize,
        warm_calls: u32,
    ) -> ServedSuite {
        let kept = Arc::new(Kept::new(concurrency.max(1), warm_calls));
        kept.warm_up(&prepared.plan.program_functions());
        ServedSuite {
            prepared,
            workers,
            kept,
        }
    }
}

/// What bounds each request and the server's work.
#[derive(Debug, Clone)]
pub struct Limits {
    /// Requests graded at once.
    pub concurrency: usize,
    /// Requests waiting for one of those places; past them, `429`.
    pub queue: usize,
    /// The largest body accepted, in bytes; past it, `413`.
    pub max_body: usize,
    /// From a request's first byte to its answer; past it, `408` while the body is read, `504`
    /// while it is graded or queued.
    pub deadline: Duration,
    /// How long a connection may take to send a request's headers.
    pub header_timeout: Duration,
    /// Connections open at once; past them, a new connection's request is answered `503` and
    /// the connection closed, so that clients holding connections open cannot take every file
    /// descriptor.
    pub max_connections: usize,
}

/// Connections past [`Limits::max_connections`] answered `503` at once; past them too, a new
/// connection is closed unanswered.
const REFUSING: usize = 64;

/// How long an accept that failed (too many open files) waits before the next.
const ACCEPT_PAUSE: Duration = Duration::from_millis(50);

/// How long past the deadline a drain waits for answers to be read before closing their
/// connections.
const DRAIN_GRACE: Duration = Duration::from_secs(5);

/// The status logged for a request whose client closed its connection before its answer (as
/// nginx logs it; no client sees it).
const CLIENT_GONE: StatusCode = match StatusCode::from_u16(499) {
    Ok(status) => status,
    Err(_) => StatusCode::BAD_REQUEST,
};

/// What `Retry-After` says to a client turned away because the server is busy, in seconds.
const RETRY_BUSY: &str = "1";
/// What `Retry-After` says while the server drains: another replica should take the request.
const RETRY_DRAINING: &str = "5";

/// The server's state, shared by every connection.
pub struct Service {
    suites: BTreeMap<String, Arc<ServedSuite>>,
    requested: Arc<Requested>,
    limits: Limits,
    /// The SHA-256 of the bearer token every request but the probes must carry, if any.
    token: Option<[u8; 32]>,
    metrics: metrics::Metrics,
    slots: Arc<Semaphore>,
    /// Requests whose bodies are read or held: as many as may grade and wait, so that the
    /// bodies in memory are bounded by those places, not by the connections.
    admitted: Semaphore,
    waiting: AtomicUsize,
    draining: AtomicBool,
    /// Where each request's log line goes (the command line prints it on stderr).
    log: fn(&str),
}

/// The endpoints.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Route<'a> {
    Health,
    Ready,
    Metrics,
    Suites,
    /// Rows in, their `results.jsonl` lines out.
    Grade(&'a str),
    /// OpenRLHF's remote reward request in, rewards out.
    OpenRlhf(&'a str),
    /// OpenAI's `graders/run`: a grader object, an item and a sample in, the reward out.
    GraderRun,
    /// OpenAI's `graders/validate`: a grader object checked.
    GraderValidate,
}

impl<'a> Route<'a> {
    /// The route of `path`, and whether `method` is the one it answers.
    fn of(method: &Method, path: &'a str) -> Option<(Route<'a>, bool)> {
        let route = match path {
            "/healthz" => Route::Health,
            "/readyz" => Route::Ready,
            "/metrics" => Route::Metrics,
            "/v1/suites" => Route::Suites,
            "/v1/fine_tuning/alpha/graders/run" => Route::GraderRun,
            "/v1/fine_tuning/alpha/graders/validate" => Route::GraderValidate,
            _ => {
                let rest = path.strip_prefix("/v1/suites/")?;
                let (name, action) = rest.split_once('/')?;
                match action {
                    "grade" => Route::Grade(name),
                    "openrlhf" => Route::OpenRlhf(name),
                    _ => return None,
                }
            }
        };
        let allowed = route.allowed().split(", ").any(|m| m == method.as_str());
        Some((route, allowed))
    }

    /// The methods the route answers, as an `Allow` header lists them (HEAD is GET without the
    /// body, which hyper leaves out of the answer).
    fn allowed(self) -> &'static str {
        match self {
            Route::Health | Route::Ready | Route::Metrics | Route::Suites => "GET, HEAD",
            _ => "POST",
        }
    }

    /// The route's name in metrics and logs (without the suite's name, kept apart).
    fn label(self) -> &'static str {
        match self {
            Route::Health => "healthz",
            Route::Ready => "readyz",
            Route::Metrics => "metrics",
            Route::Suites => "suites",
            Route::Grade(_) => "grade",
            Route::OpenRlhf(_) => "openrlhf",
            Route::GraderRun => "graders_run",
            Route::GraderValidate => "graders_validate",
        }
    }

    /// Whether errors are answered as OpenAI's error object.
    fn openai(self) -> bool {
        matches!(self, Route::GraderRun | Route::GraderValidate)
    }

    fn suite(self) -> Option<&'a str> {
        match self {
            Route::Grade(name) | Route::OpenRlhf(name) => Some(name),
            _ => None,
        }
    }

    /// Whether the route needs the bearer token when the server has one (probes do not).
    fn guarded(self) -> bool {
        !matches!(self, Route::Health | Route::Ready)
    }
}

/// An answer, before it becomes a response.
struct Answer {
    status: StatusCode,
    content_type: &'static str,
    /// The body; an error's is written from `error` once the route says in which shape.
    body: Bytes,
    error: Option<Refusal>,
    retry_after: Option<&'static str>,
    /// Rows graded, for the log.
    rows: usize,
    /// The result lines as they are graded, in place of `body`, once they pass
    /// [`grading::HOLD`] bytes.
    streamed: Option<Streamed>,
    /// The methods a `405` names in its `Allow` header.
    allow: Option<&'static str>,
    /// Why the grade a `200` answers failed, for the log (the answer flags it in OpenAI's
    /// shape, which has no room for the text).
    failed_grade: Option<String>,
}

/// Why a request was not answered `200`, and the request's field at fault, where one is.
struct Refusal {
    message: String,
    param: Option<String>,
}

impl Refusal {
    /// `{"error": message}`, or on OpenAI's routes OpenAI's error object.
    fn body(&self, status: StatusCode, openai: bool) -> Bytes {
        let error = if openai {
            let kind = if status.is_server_error() {
                "server_error"
            } else {
                "invalid_request_error"
            };
            json!({"message": self.message, "type": kind, "param": self.param, "code": null})
        } else {
            json!(self.message)
        };
        (json!({ "error": error }).to_string() + "\n").into()
    }
}

impl Answer {
    fn ok(content_type: &'static str, body: impl Into<Bytes>) -> Answer {
        Answer {
            status: StatusCode::OK,
            content_type,
            body: body.into(),
            error: None,
            retry_after: None,
            rows: 0,
            streamed: None,
            allow: None,
            failed_grade: None,
        }
    }

    /// An error with `status`.
    fn error(status: StatusCode, message: impl std::fmt::Display) -> Answer {
        Answer {
            status,
            content_type: "application/json",
            body: Bytes::new(),
            error: Some(Refusal {
                message: message.to_string(),
                param: None,
            }),
            retry_after: None,
            rows: 0,
            streamed: None,
            allow: None,
            failed_grade: None,
        }
    }

    fn retry_after(mut self, seconds: &'static str) -> Answer {
        self.retry_after = Some(seconds);
        self
    }

    /// The HTTP response; an error's body must be written already.
    fn response(self) -> Response<AnswerBody> {
        let body = match self.streamed {
            Some(streamed) => AnswerBody::streamed(streamed),
            None => AnswerBody::whole(self.body),
        };
        let mut response = Response::new(body);
        *response.status_mut() = self.status;
        let headers = response.headers_mut();
        headers.insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static(self.content_type),
        );
        if let Some(seconds) = self.retry_after {
            headers.insert(header::RETRY_AFTER, HeaderValue::from_static(seconds));
        }
        if let Some(methods) = self.allow {
            headers.insert(header::ALLOW, HeaderValue::from_static(methods));
        }
        if self.status == StatusCode::UNAUTHORIZED {
            headers.insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
        }
        if matches!(
            self.status,
            StatusCode::REQUEST_TIMEOUT | StatusCode::PAYLOAD_TOO_LARGE
        ) {
            // The body was not read to its end: the connection cannot carry another request.
            headers.insert(header::CONNECTION, HeaderValue::from_static("close"));
        }
        response
    }
}

impl Service {
    pub fn new(
        suites: BTreeMap<String, ServedSuite>,
        requested: Requested,
        limits: Limits,
        token: Option<String>,
        log: fn(&str),
    ) -> Service {
        Service {
            requested: Arc::new(requested),
            slots: Arc::new(Semaphore::new(limits.concurrency.max(1))),
            admitted: Semaphore::new(limits.concurrency.max(1) + limits.queue),
            suites: (suites.into_iter())
                .map(|(name, suite)| (name, Arc::new(suite)))
                .collect(),
            limits,
            token: token.map(|token| Sha256::digest(token.as_bytes()).into()),
            metrics: metrics::Metrics::default(),
            waiting: AtomicUsize::new(0),
            draining: AtomicBool::new(false),
            log,
        }
    }

    /// Answers `request`, logs it (one JSON line) and counts it: once answered, or for a
    /// streamed answer once its end has gone.
    async fn handle(self: Arc<Self>, request: Request<Incoming>) -> Response<AnswerBody> {
        let arrived = Instant::now();
        let deadline = arrived + self.limits.deadline;
        let method = request.method().clone();
        let path = request.uri().path().to_string();
        let route = Route::of(&method, &path);
        let mut answer = match route {
            None => Answer::error(
                StatusCode::NOT_FOUND,
                format!("no endpoint at {path}: see GET /v1/suites for the suites served"),
            ),
            Some((route, false)) => {
                let mut answer = Answer::error(
                    StatusCode::METHOD_NOT_ALLOWED,
                    format!(
                        "{method} is not answered at {path}: send {}",
                        route.allowed()
                    ),
                );
                answer.allow = Some(route.allowed());
                answer
            }
            Some((route, true)) if route.guarded() && !self.authorized(&request) => Answer::error(
                StatusCode::UNAUTHORIZED,
                "a bearer token is required: send `Authorization: Bearer TOKEN`",
            ),
            Some((route, true)) => self.answer(route, request, deadline).await,
        };
        let openai = route.is_some_and(|(r, _)| r.openai());
        if let Some(error) = &answer.error {
            answer.body = error.body(answer.status, openai);
        }
        let label = route.map_or("none", |(route, _)| route.label());
        let suite = route.and_then(|(r, _)| r.suite());
        let status = answer.status.as_u16();
        match answer.streamed.as_mut() {
            Some(streamed) => {
                let suite = suite.unwrap_or_default().to_string();
                let service = self.clone();
                streamed.on_end(move |ended| {
                    let (rows, error) = match &ended {
                        Ok(tally) => {
                            service.metrics.graded(&suite, tally);
                            (tally.rows(), None)
                        }
                        Err(e) => (0, Some(e.to_string())),
                    };
                    let ask = Asked {
                        method: &method,
                        route: label,
                        suite: Some(&suite),
                    };
                    service.record(&ask, status, rows, error.as_deref(), arrived.elapsed());
                });
            }
            None => {
                let ask = Asked {
                    method: &method,
                    route: label,
                    suite,
                };
                let error = (answer.error.as_ref().map(|e| e.message.as_str()))
                    .or(answer.failed_grade.as_deref());
                self.record(&ask, status, answer.rows as u64, error, arrived.elapsed());
            }
        }
        answer.response()
    }

    /// Counts and logs an answer.
    fn record(&self, ask: &Asked<'_>, status: u16, rows: u64, error: Option<&str>, took: Duration) {
        self.metrics.request(ask.route, status, took);
        (self.log)(&log_line(ask, status, rows, error, took));
    }

    /// The answer to a request on a connection past [`Limits::max_connections`], counted and
    /// logged as route `connections`.
    fn over_connections(&self) -> Response<AnswerBody> {
        let mut answer = Answer::error(
            StatusCode::SERVICE_UNAVAILABLE,
            format!(
                "the server has {} connections open, its --max-connections: retry on a new \
                 connection once others close, or reuse an open one",
                self.limits.max_connections
            ),
        )
        .retry_after(RETRY_BUSY);
        if let Some(error) = &answer.error {
            answer.body = error.body(answer.status, false);
        }
        self.metrics
            .request("connections", answer.status.as_u16(), Duration::ZERO);
        answer.response()
    }

    /// Whether `request` carries the server's token (always, when it has none), the scheme's
    /// name in any case (RFC 9110); compared as SHA-256 digests, in time that depends neither
    /// on where the two first differ nor on the token's length.
    fn authorized(&self, request: &Request<Incoming>) -> bool {
        let Some(token) = &self.token else {
            return true;
        };
        let given = (request.headers().get(header::AUTHORIZATION))
            .map(|v| v.as_bytes())
            .filter(|v| v.len() > 7 && v[..7].eq_ignore_ascii_case(b"bearer "))
            .map_or(&b""[..], |v| &v[7..]);
        Sha256::digest(given)
            .iter()
            .zip(token)
            .fold(0u8, |diff, (a, b)| diff | (a ^ b))
            == 0
    }

    async fn answer(
        &self,
        route: Route<'_>,
        request: Request<Incoming>,
        deadline: Instant,
    ) -> Answer {
        match route {
            Route::Health => Answer::ok("text/plain", "ok\n"),
            Route::Ready if self.draining.load(Ordering::SeqCst) => {
                Answer::error(StatusCode::SERVICE_UNAVAILABLE, "the server is stopping")
            }
            Route::Ready => Answer::ok("text/plain", "ready\n"),
            Route::Metrics => {
                let warm: Vec<(&str, pack::Started)> = (self.suites.iter())
                    .map(|(name, suite)| (name.as_str(), suite.kept.started()))
                    .collect();
                Answer::ok(
                    "text/plain; version=0.0.4; charset=utf-8",
                    self.metrics.render(
                        self.limits.concurrency.max(1) - self.slots.available_permits(),
                        self.waiting.load(Ordering::SeqCst),
                        &warm,
                    ),
                )
            }
            Route::Suites => {
                let names: Vec<&String> = self.suites.keys().collect();
                Answer::ok(
                    "application/json",
                    json!({"suites": names}).to_string() + "\n",
                )
            }
            Route::Grade(name) | Route::OpenRlhf(name) => {
                match self.grade(route, name, request, deadline).await {
                    Ok(answer) | Err(answer) => answer,
                }
            }
            Route::GraderRun | Route::GraderValidate => {
                match self.grader(route, request, deadline).await {
                    Ok(answer) | Err(answer) => answer,
                }
            }
        }
    }

    /// Runs or checks the grader object of an OpenAI grader request, once a place is free.
    async fn grader(
        &self,
        route: Route<'_>,
        request: Request<Incoming>,
        deadline: Instant,
    ) -> Result<Answer, Answer> {
        self.open()?;
        let _admitted = self.admit()?;
        let body = self
            .body(request, deadline, "send a smaller grader object")
            .await?;
        let permit = self.place(deadline).await?;
        let requested = self.requested.clone();
        let answered = async move {
            if route == Route::GraderValidate {
                let body = graders::read(&body, "graders/validate")?;
                Ok((graders::validate(requested, body, permit).await?, None))
            } else {
                let body = graders::read(&body, "graders/run")?;
                graders::run(requested, body, deadline, permit).await
            }
        };
        let answer = match tokio::time::timeout_at(deadline.into(), answered).await {
            Err(_) => Err(Failure::Grading(GradingError::Deadline)),
            Ok(answer) => answer,
        };
        match answer {
            Ok((answer, failed)) => {
                let mut answer = Answer::ok("application/json", answer.to_string() + "\n");
                answer.failed_grade = failed;
                Ok(answer)
            }
            Err(Failure::Invalid { message, param }) => {
                let mut answer = Answer::error(StatusCode::BAD_REQUEST, "");
                answer.error = Some(Refusal { message, param });
                Err(answer)
            }
            Err(Failure::Server(message)) => {
                Err(Answer::error(StatusCode::INTERNAL_SERVER_ERROR, message))
            }
            Err(Failure::Grading(GradingError::Deadline)) => Err(Answer::error(
                StatusCode::GATEWAY_TIMEOUT,
                "the request's deadline passed before its grader ended: send a grader that \
                 ends sooner",
            )),
            Err(Failure::Grading(e)) => Err(failed(e)),
        }
    }

    /// A place among the requests read or held ([`Service::admitted`]); `429` when there is
    /// none, before the body is read.
    fn admit(&self) -> Result<tokio::sync::SemaphorePermit<'_>, Answer> {
        self.admitted.try_acquire().map_err(|_| busy())
    }

    /// `503` once the server drains.
    fn open(&self) -> Result<(), Answer> {
        if self.draining.load(Ordering::SeqCst) {
            return Err(Answer::error(
                StatusCode::SERVICE_UNAVAILABLE,
                "the server is stopping: send the request to another replica",
            )
            .retry_after(RETRY_DRAINING));
        }
        Ok(())
    }

    /// Reads the body of a grading request, waits for a place, grades its rows and answers.
    async fn grade(
        &self,
        route: Route<'_>,
        name: &str,
        request: Request<Incoming>,
        deadline: Instant,
    ) -> Result<Answer, Answer> {
        self.open()?;
        let Some(suite) = self.suites.get(name) else {
            return Err(Answer::error(
                StatusCode::NOT_FOUND,
                format!("no suite named `{name}` is served: see GET /v1/suites"),
            ));
        };
        if matches!(route, Route::OpenRlhf(_)) && suite.prepared.suite.file.reward.is_none() {
            return Err(Answer::error(
                StatusCode::CONFLICT,
                format!(
                    "suite `{name}` has no `reward:`, which OpenRLHF's rewards are: add one to \
                     its suite file"
                ),
            ));
        }
        let _admitted = self.admit()?;
        let body = self
            .body(request, deadline, "send the rows in smaller requests")
            .await?;
        let rows = match route {
            Route::OpenRlhf(_) => openrlhf::RewardRequest::parse(&body)
                .map_err(|e| Answer::error(StatusCode::BAD_REQUEST, e))?
                .rows(),
            _ => rows::json_lines(body.to_vec())
                .map_err(|e| Answer::error(StatusCode::BAD_REQUEST, e))?,
        };
        // OpenRLHF's answer is one JSON object of every reward: it is never streamed.
        let stream = matches!(route, Route::Grade(_));
        let graded = match self.graded(name, suite, rows, deadline, stream).await? {
            Outcome::Whole(graded) => graded,
            Outcome::Streamed(streamed) => {
                let mut answer = Answer::ok("application/x-ndjson", Bytes::new());
                answer.streamed = Some(streamed);
                return Ok(answer);
            }
        };
        let mut answer = match route {
            Route::OpenRlhf(_) => Answer::ok(
                "application/json",
                openrlhf::answer(&graded.scored).to_string() + "\n",
            ),
            _ => Answer::ok("application/x-ndjson", graded.lines),
        };
        answer.rows = graded.tally.rows() as usize;
        Ok(answer)
    }

    /// The request's body, refused past [`Limits::max_body`] (saying `mend`) or the deadline.
    async fn body(
        &self,
        request: Request<Incoming>,
        deadline: Instant,
        mend: &str,
    ) -> Result<Bytes, Answer> {
        let max = self.limits.max_body;
        let too_large = || {
            Answer::error(
                StatusCode::PAYLOAD_TOO_LARGE,
                format!("the body is larger than {max} bytes: {mend}"),
            )
        };
        let declared = (request.headers().get(header::CONTENT_LENGTH))
            .and_then(|v| v.to_str().ok()?.parse::<u64>().ok());
        if declared.is_some_and(|n| n > max as u64) {
            return Err(too_large());
        }
        let reading = Limited::new(request.into_body(), max).collect();
        match tokio::time::timeout_at(deadline.into(), reading).await {
            Err(_) => Err(Answer::error(
                StatusCode::REQUEST_TIMEOUT,
                "the body did not arrive before the request's deadline",
            )),
            Ok(Err(e)) if e.downcast_ref::<LengthLimitError>().is_some() => Err(too_large()),
            Ok(Err(e)) => Err(Answer::error(
                StatusCode::BAD_REQUEST,
                format!("cannot read the body: {e}"),
            )),
            Ok(Ok(collected)) => Ok(collected.to_bytes()),
        }
    }

    /// `rows` graded by `suite` once a place is free, within the deadline; when `stream` is
    /// set, the answer streams once its lines pass [`grading::HOLD`] bytes.
    async fn graded(
        &self,
        name: &str,
        suite: &Arc<ServedSuite>,
        rows: Vec<u8>,
        deadline: Instant,
        stream: bool,
    ) -> Result<Outcome, Answer> {
        let permit = self.place(deadline).await?;
        let suite = suite.clone();
        let runtime = tokio::runtime::Handle::current();
        let (sender, mut pieces) = mpsc::channel(grading::PIECES);
        let sender = stream.then_some(sender);
        // The pass is a task of its own: the place is held until it ends, not until the answer
        // leaves, so that a request past its deadline still counts until it stops (and a
        // streamed answer, until its end has gone). It runs on a thread for blocking work,
        // where its Python calls run too (one a request, as the places bound them) instead of
        // each hopping to another thread.
        let task = tokio::task::spawn_blocking(move || {
            let _permit = permit;
            let kept = Some(suite.kept.clone());
            let (prepared, workers) = (&suite.prepared, suite.workers);
            let grading = grading::grade(prepared, workers, rows, deadline, kept, sender);
            pack::block_on_here(&runtime, grading)
        });
        let mut task = std::pin::pin!(tokio::time::timeout_at(deadline.into(), task));
        let joined = tokio::select! {
            biased;
            first = pieces.recv() => match first {
                Some(Piece::Lines(first)) => {
                    return Ok(Outcome::Streamed(Streamed::new(first, pieces)));
                }
                // No piece came: the pass ended with its lines whole.
                _ => task.await,
            },
            joined = &mut task => joined,
        };
        let graded = match joined {
            Err(_) => Err(GradingError::Deadline),
            Ok(Err(e)) => Err(GradingError::Failed(e.to_string())),
            Ok(Ok(graded)) => graded,
        };
        let graded = graded.map_err(failed)?;
        self.metrics.graded(name, &graded.tally);
        Ok(Outcome::Whole(graded))
    }

    /// One of the places to grade, once free, waiting in the queue until the deadline; `429`
    /// when the queue is full.
    async fn place(&self, deadline: Instant) -> Result<OwnedSemaphorePermit, Answer> {
        if let Ok(permit) = self.slots.clone().try_acquire_owned() {
            return Ok(permit);
        }
        let queued = self.waiting.fetch_add(1, Ordering::SeqCst);
        let _left = Left(&self.waiting);
        if queued >= self.limits.queue {
            return Err(busy());
        }
        let waiting = self.slots.clone().acquire_owned();
        match tokio::time::timeout_at(deadline.into(), waiting).await {
            Ok(Ok(permit)) => Ok(permit),
            Ok(Err(_)) => Err(Answer::error(
                StatusCode::SERVICE_UNAVAILABLE,
                "the server is stopping",
            )
            .retry_after(RETRY_DRAINING)),
            Err(_) => Err(failed(GradingError::Deadline)),
        }
    }
}

/// A request's rows graded: their lines whole, or streaming.
enum Outcome {
    Whole(Graded),
    Streamed(Streamed),
}

/// What a request asked, for its log line and its counts.
struct Asked<'a> {
    method: &'a Method,
    route: &'static str,
    suite: Option<&'a str>,
}

/// `429`: every place to grade and wait is taken.
fn busy() -> Answer {
    Answer::error(
        StatusCode::TOO_MANY_REQUESTS,
        "every place to grade and wait is taken: retry later",
    )
    .retry_after(RETRY_BUSY)
}

/// The answer to a request whose grading failed.
fn failed(e: GradingError) -> Answer {
    match e {
        GradingError::Deadline => Answer::error(
            StatusCode::GATEWAY_TIMEOUT,
            GradingError::Deadline.to_string() + ": send fewer rows a request",
        ),
        GradingError::JudgeDown { .. } => Answer::error(StatusCode::BAD_GATEWAY, e),
        GradingError::Stopped => {
            Answer::error(StatusCode::SERVICE_UNAVAILABLE, e).retry_after(RETRY_DRAINING)
        }
        GradingError::Failed(_) => Answer::error(StatusCode::INTERNAL_SERVER_ERROR, e),
        // Nobody reads this answer; its log line says why it has none.
        GradingError::Gone => Answer::error(CLIENT_GONE, e),
    }
}

/// Counts a request out of the queue when it leaves it, however it leaves.
struct Left<'a>(&'a AtomicUsize);

impl Drop for Left<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

/// The JSON log line of an answered request: what was asked and how it ended, never its
/// headers or body (where a token or a row's data would be).
fn log_line(
    ask: &Asked<'_>,
    status: u16,
    rows: u64,
    error: Option<&str>,
    took: Duration,
) -> String {
    let time = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64());
    let mut line = json!({
        "time": time,
        "method": ask.method.as_str(),
        "route": ask.route,
        "status": status,
        "ms": took.as_secs_f64() * 1000.0,
    });
    if let Some(suite) = ask.suite {
        line["suite"] = json!(suite);
    }
    if rows > 0 {
        line["rows"] = json!(rows);
    }
    if let Some(error) = error {
        line["error"] = json!(error);
    }
    line.to_string()
}

/// Answers connections on `listener` until `stop` resolves, then drains: no new connection is
/// accepted, new requests are answered `503`, and the requests in flight finish before this
/// returns.
pub async fn serve(
    listener: TcpListener,
    service: Arc<Service>,
    stop: impl Future<Output = ()>,
) -> std::io::Result<()> {
    let (draining_tx, draining_rx) = watch::channel(false);
    let mut connections = tokio::task::JoinSet::new();
    let open = Arc::new(Semaphore::new(service.limits.max_connections.max(1)));
    let refusing = Arc::new(Semaphore::new(REFUSING));
    let mut stop = std::pin::pin!(stop);
    loop {
        let (stream, _peer): (tokio::net::TcpStream, SocketAddr) = tokio::select! {
            () = &mut stop => break,
            accepted = listener.accept() => match accepted {
                Ok(accepted) => accepted,
                // A connection reset before it was accepted, or too many open files: the
                // next accept may succeed, after a pause that lets connections close rather
                // than spin.
                Err(_) => {
                    tokio::time::sleep(ACCEPT_PAUSE).await;
                    continue;
                }
            },
            Some(_) = connections.join_next(), if !connections.is_empty() => continue,
        };
        let service = service.clone();
        let mut http = hyper::server::conn::http1::Builder::new();
        // A client that ends its side once its request is sent (`shutdown(SHUT_WR)`, `nc -N`)
        // still reads the answer.
        http.timer(TokioTimer::new())
            .header_read_timeout(service.limits.header_timeout)
            .half_close(true);
        let Ok(place) = open.clone().try_acquire_owned() else {
            if let Ok(refusal) = refusing.clone().try_acquire_owned() {
                http.keep_alive(false);
                connections.spawn(async move {
                    let _refusal = refusal;
                    let handler = hyper::service::service_fn(move |_| {
                        let service = service.clone();
                        async move { Ok::<_, Infallible>(service.over_connections()) }
                    });
                    let _ = http.serve_connection(TokioIo::new(stream), handler).await;
                });
            }
            continue;
        };
        let mut draining = draining_rx.clone();
        let stream = stall::WriteStall::new(stream, service.limits.header_timeout);
        connections.spawn(async move {
            let _place = place;
            let handler = hyper::service::service_fn(move |request| {
                let service = service.clone();
                async move { Ok::<_, Infallible>(service.handle(request).await) }
            });
            let connection = http.serve_connection(TokioIo::new(stream), handler);
            let mut connection = std::pin::pin!(connection);
            tokio::select! {
                _ = connection.as_mut() => return,
                _ = draining.wait_for(|d| *d) => connection.as_mut().graceful_shutdown(),
            }
            let _ = connection.await;
        });
    }
    drop(listener);
    service.draining.store(true, Ordering::SeqCst);
    for suite in service.suites.values() {
        suite.kept.stop();
    }
    let _ = draining_tx.send(true);
    // Requests in flight end within their deadline; a client that does not read its answer
    // could hold the drain past any grace period, losing the others' answers to a kill.
    let drained = async { while connections.join_next().await.is_some() {} };
    if tokio::time::timeout(service.limits.deadline + DRAIN_GRACE, drained)
        .await
        .is_err()
    {
        connections.abort_all();
    }
    Ok(())
}
