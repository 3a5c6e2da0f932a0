//! One chat-completions call with retries: exponential backoff with full jitter, `Retry-After`
//! honoured, a deadline per attempt, a reply read up to [`REPLY_LIMIT`], and redirects followed
//! only within the endpoint's own scheme, host and port (the key goes nowhere else).

use std::ops::Range;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant, SystemTime};

use reqwest::header::{CONTENT_TYPE, HeaderMap, LOCATION};
use reqwest::{StatusCode, Url};
use serde_json::Value;

/// The first backoff step and the largest one (the OpenAI SDK's values).
const BACKOFF_BASE: Duration = Duration::from_millis(500);
const BACKOFF_CAP: Duration = Duration::from_secs(8);
/// The longest wait a `Retry-After` header can impose, so a server cannot stall a run.
const RETRY_AFTER_CAP: Duration = Duration::from_secs(60);
/// Requests, across samples, that failed the same way one after another (no good answer in
/// between: connections refused, timeouts, the same 5xx status, resets) before the endpoint is
/// taken as down: a wrong `base_url`, a server that is down, hangs or fails every request would
/// otherwise cost every sample its full round of retries.
const FAILURES_DOWN: u32 = 5;
/// A run's retries to one endpoint: this many, and one more for every [`RETRY_SHARE`] requests
/// sent, so that an endpoint failing often, between good answers, cannot multiply the requests
/// of a run by `max_retries`.
const RETRY_BUDGET: u64 = 20;
const RETRY_SHARE: u64 = 5;
/// How much of a failing reply's body the message that stops the run quotes.
const QUOTED_BODY: usize = 200;
/// The largest judge reply read: a verdict takes a few KiB, and a reply is held whole while
/// it is read, so an endpoint that sends more is cut off rather than trusted with memory.
pub const REPLY_LIMIT: u64 = 8 << 20;
/// Redirects followed within the endpoint's origin before giving up.
const MAX_REDIRECTS: usize = 10;

/// How the key is sent.
#[derive(Debug, Clone, Copy)]
pub enum Auth {
    /// `Authorization: Bearer <key>` (OpenAI).
    Bearer,
    /// `x-api-key: <key>` with the `anthropic-version` the Messages API requires.
    AnthropicKey,
}

/// The Messages API version gavel speaks.
const ANTHROPIC_VERSION: &str = "2023-06-01";

/// The shortest key that is taken for a secret and redacted (see [`ApiKey::redact`]).
const SHORTEST_SECRET: usize = 8;
/// What the key is replaced by.
const REDACTED: &str = "[redacted]";
/// How many times the JSON escapes of a text are read in looking for the key in it: a reply
/// is JSON whose strings hold the verdict's JSON, so escapes of either can write the key.
const ESCAPE_READINGS: usize = 2;

/// An API key that never prints.
#[derive(Clone)]
pub struct ApiKey(String);

impl ApiKey {
    pub fn new(key: String) -> ApiKey {
        ApiKey(key)
    }

    /// The key, when it is taken for a secret: a key shorter than [`SHORTEST_SECRET`] is a
    /// placeholder such as a local server's `EMPTY`, and replacing it would mangle replies that
    /// happen to contain it.
    fn secret(&self) -> Option<&str> {
        Some(self.0.as_str()).filter(|key| key.len() >= SHORTEST_SECRET)
    }

    /// `text` with the key replaced wherever it is written: as it is, or with JSON escapes
    /// (`\u0067` for `g`, or `\\u0067` a level deeper) that reading them turns into the key. The
    /// rest stays as written, so a text without the key is unchanged and JSON stays JSON.
    /// Replies, what is read of them and the reasons that quote them are redacted.
    pub fn redact(&self, text: String) -> String {
        let mut spans = self.spans(&text);
        if self.secret().is_some() && text.contains('\\') {
            // The readings so far, the last one deepest.
            let mut readings: Vec<String> = Vec::new();
            for _ in 0..ESCAPE_READINGS {
                let last = readings.last().unwrap_or(&text);
                let read: String = read_chars(last).map(|(c, _)| c).collect();
                if read.len() == last.len() {
                    break;
                }
                let found = self.spans(&read).into_iter();
                let mut ends: Vec<usize> = found.flat_map(|span| [span.start, span.end]).collect();
                for earlier in readings.iter().rev().chain([&text]) {
                    ends = written_at(earlier, &ends);
                }
                spans.extend(ends.chunks(2).map(|span| span[0]..span[1]));
                readings.push(read);
            }
            spans.sort_by_key(|span| span.start);
        }
        ApiKey::replace(text, spans)
    }

    /// Where `text` holds the key, in order (none when the key is no secret).
    fn spans(&self, text: &str) -> Vec<Range<usize>> {
        let Some(key) = self.secret() else {
            return Vec::new();
        };
        text.match_indices(key)
            .map(|(at, _)| at..at + key.len())
            .collect()
    }

    /// `text` with each of `spans` (ranges of it, ordered by their start, perhaps overlapping)
    /// replaced as the key is.
    fn replace(text: String, spans: Vec<Range<usize>>) -> String {
        if spans.is_empty() {
            return text;
        }
        let mut out = String::with_capacity(text.len());
        let mut at = 0;
        for span in spans {
            if span.start >= at {
                out.push_str(&text[at..span.start]);
                out.push_str(REDACTED);
            }
            at = at.max(span.end);
        }
        out.push_str(&text[at..]);
        out
    }
}

/// The chars that reading the JSON escapes of `text` gives, each with the length of its
/// writing. What JSON does not read as an escape (`\x`, a lone surrogate) stays as it is.
fn read_chars(text: &str) -> impl Iterator<Item = (char, usize)> + '_ {
    let mut at = 0;
    std::iter::from_fn(move || {
        let plain = text[at..].chars().next()?;
        let (c, written) = escape(&text[at..]).unwrap_or((plain, plain.len_utf8()));
        at += written;
        Some((c, written))
    })
}

/// Where in `text` the bytes `positions` of its reading (in order, each the start of a char or
/// the end) are written.
fn written_at(text: &str, positions: &[usize]) -> Vec<usize> {
    let mut chars = read_chars(text);
    let (mut read, mut written) = (0, 0);
    let mut found = Vec::with_capacity(positions.len());
    for &position in positions {
        while read < position {
            let Some((c, length)) = chars.next() else {
                break;
            };
            read += c.len_utf8();
            written += length;
        }
        found.push(written);
    }
    found
}

/// The char that the JSON escape at the start of `text` stands for, and the escape's length.
fn escape(text: &str) -> Option<(char, usize)> {
    let rest = text.strip_prefix('\\')?;
    let c = match rest.bytes().next()? {
        b'"' => '"',
        b'\\' => '\\',
        b'/' => '/',
        b'b' => '\u{8}',
        b'f' => '\u{c}',
        b'n' => '\n',
        b'r' => '\r',
        b't' => '\t',
        b'u' => {
            // A UTF-16 code unit: `\u` and four hex digits from `from` on.
            let unit = |from: usize| {
                let hex = rest.get(from..from + 5)?.strip_prefix('u')?;
                let hex = hex.bytes().all(|b| b.is_ascii_hexdigit()).then_some(hex)?;
                u16::from_str_radix(hex, 16).ok()
            };
            let first = unit(0)?;
            if let Some(Ok(c)) = char::decode_utf16([first]).next() {
                return Some((c, 6));
            }
            let second = rest[5..].starts_with('\\').then(|| unit(6)).flatten()?;
            let c = char::decode_utf16([first, second]).next()?.ok()?;
            return Some((c, 12));
        }
        _ => return None,
    };
    Some((c, 2))
}

impl std::fmt::Debug for ApiKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ApiKey([redacted])")
    }
}

#[derive(Debug)]
pub struct Transport {
    pub client: reqwest::Client,
    pub endpoint: Url,
    pub api_key: ApiKey,
    pub auth: Auth,
    /// Why there is no key, when its variable is unset: the first request is refused with it,
    /// which stops the run, so that a suite validates without one.
    pub missing_key: Option<String>,
    pub max_retries: u32,
    pub timeout: Duration,
    /// Why the endpoint cannot be used at all, once that is known (the key redacted): no
    /// request is sent after, for good in a run, for a while in a service.
    pub down: Fuse,
    /// Whether a 404 says the endpoint is down (in a run, whose suite names the model) or only
    /// that this request's model is not there (in a service, whose clients name models).
    pub missing_is_down: bool,
    /// The failures since the endpoint last answered well.
    pub streak: Mutex<Streak>,
    /// Requests sent (first attempts), which the retry budget grows with.
    pub sent: AtomicU64,
    /// Requests sent and not yet answered, and attempts repeated, for the progress line.
    pub in_flight: AtomicUsize,
    pub retries: AtomicU64,
}

/// Whether an endpoint is down, and why: tripped once, it stays so for good (a run, which
/// stops), or for `hold` (a service, which asks again after that, as the endpoint may be back).
#[derive(Debug, Default)]
pub struct Fuse {
    tripped: Mutex<Option<(String, Instant)>>,
    hold: Option<Duration>,
}

impl Fuse {
    /// A fuse that stays tripped for `hold` (for good when none).
    pub fn holding(hold: Option<Duration>) -> Fuse {
        Fuse {
            tripped: Mutex::default(),
            hold,
        }
    }

    /// Why the endpoint is down, while it is.
    pub fn get(&self) -> Option<String> {
        let tripped = self.tripped();
        tripped.as_ref().map(|(reason, _)| reason.clone())
    }

    /// Trips the fuse with `reason` unless it is tripped already; why it is.
    fn trip(&self, reason: impl FnOnce() -> String) -> String {
        let mut tripped = self.tripped();
        let (reason, _) = tripped.get_or_insert_with(|| (reason(), Instant::now()));
        reason.clone()
    }

    /// The state, with a trip whose hold has passed cleared.
    fn tripped(&self) -> std::sync::MutexGuard<'_, Option<(String, Instant)>> {
        let mut tripped = self.tripped.lock().unwrap_or_else(PoisonError::into_inner);
        if let (Some((_, at)), Some(hold)) = (tripped.as_ref(), self.hold)
            && at.elapsed() >= hold
        {
            *tripped = None;
        }
        tripped
    }
}

/// How an attempt failed, as far as telling a dead endpoint from a bad moment goes.
#[derive(Debug, Clone)]
pub enum Failing {
    /// No connection could be made.
    Connect,
    /// No answer within the timeout.
    Timeout,
    /// This status, with the start of the reply's body.
    Status(StatusCode, String),
    /// The connection broke (reset, closed mid-reply).
    Broken,
}

impl Failing {
    fn same_as(&self, other: &Failing) -> bool {
        match (self, other) {
            (Failing::Status(a, _), Failing::Status(b, _)) => a == b,
            _ => std::mem::discriminant(self) == std::mem::discriminant(other),
        }
    }
}

/// The failures of one kind in a row, across samples, since the endpoint last answered well.
#[derive(Debug, Default)]
pub struct Streak {
    failing: Option<Failing>,
    count: u32,
}

impl Streak {
    /// Counts `failing`; the count of failures alike in a row.
    fn add(&mut self, failing: &Failing) -> u32 {
        match &self.failing {
            Some(last) if last.same_as(failing) => self.count += 1,
            _ => {
                self.failing = Some(failing.clone());
                self.count = 1;
            }
        }
        self.count
    }
}

/// Why a request got no 2xx reply.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum RequestError {
    /// The endpoint cannot be used at all (see [`Transport::down`]).
    #[error("{0}")]
    Down(String),
    /// This request was refused, and another would be too.
    #[error("{0}")]
    Refused(String),
    /// Each attempt failed in a way worth retrying, up to the last.
    #[error("{reason} (gave up after {attempts} attempts)")]
    GaveUp { reason: String, attempts: u32 },
    /// An attempt failed in a way worth retrying, but the run's retries are spent.
    #[error(
        "{reason} (not retried: the run's {spent} retries to this endpoint are spent, a share \
         of the requests sent)"
    )]
    BudgetSpent { reason: String, spent: u64 },
}

enum Attempt {
    Done(String),
    Retry {
        reason: String,
        after: Option<Duration>,
        /// How it failed, when a run of such failures means the endpoint is down (a rate
        /// limit does not).
        failing: Option<Failing>,
    },
    Fatal(String),
    /// The endpoint refuses every request alike (a wrong key, URL or model), or cannot be
    /// reached at all.
    Down(String),
}

impl Transport {
    /// POSTs `body` and returns the 2xx reply text with the key redacted, so that what is read,
    /// cached or recorded of it never holds the key, or why no such reply came.
    pub async fn post(&self, body: &str) -> Result<String, RequestError> {
        if let Some(reason) = &self.missing_key {
            return Err(RequestError::Down(self.down.trip(|| reason.clone())));
        }
        self.sent.fetch_add(1, Ordering::Relaxed);
        let mut retries = 0;
        loop {
            if let Some(reason) = self.down.get() {
                return Err(RequestError::Down(reason.clone()));
            }
            match self.attempt(body).await {
                Attempt::Done(text) => return Ok(self.api_key.redact(text)),
                Attempt::Fatal(reason) => return Err(RequestError::Refused(reason)),
                Attempt::Down(reason) => {
                    return Err(RequestError::Down(
                        self.down.trip(|| self.api_key.redact(reason)),
                    ));
                }
                Attempt::Retry { reason, .. } if retries >= self.max_retries => {
                    return Err(RequestError::GaveUp {
                        reason,
                        attempts: retries + 1,
                    });
                }
                Attempt::Retry { reason, after, .. } => {
                    if let Err(spent) = self.spend_retry() {
                        return Err(RequestError::BudgetSpent { reason, spent });
                    }
                    tokio::time::sleep(after.unwrap_or_else(|| backoff(retries))).await;
                    retries += 1;
                }
            }
        }
    }

    /// Takes one retry from the run's budget, or says how many were taken when it is spent.
    fn spend_retry(&self) -> Result<(), u64> {
        let budget = RETRY_BUDGET + self.sent.load(Ordering::Relaxed) / RETRY_SHARE;
        (self.retries)
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |taken| {
                (taken < budget).then_some(taken + 1)
            })
            .map(drop)
    }

    async fn attempt(&self, body: &str) -> Attempt {
        self.in_flight.fetch_add(1, Ordering::Relaxed);
        let attempt = self.send(body).await;
        self.in_flight.fetch_sub(1, Ordering::Relaxed);
        let mut streak = self.streak.lock().unwrap_or_else(PoisonError::into_inner);
        match &attempt {
            Attempt::Done(_) => *streak = Streak::default(),
            Attempt::Retry {
                reason,
                failing: Some(failing),
                ..
            } if streak.add(failing) >= FAILURES_DOWN => {
                return Attempt::Down(self.down_after(failing, reason));
            }
            _ => {}
        }
        attempt
    }

    /// Why the endpoint is taken as down after [`FAILURES_DOWN`] requests failed as `failing`
    /// did, the last with `reason`.
    fn down_after(&self, failing: &Failing, reason: &str) -> String {
        let n = FAILURES_DOWN;
        match failing {
            Failing::Connect => format!("{reason} ({n} connections failed in a row)"),
            Failing::Timeout => format!(
                "judge endpoint did not answer {n} requests in a row within the timeout of {}s",
                self.timeout.as_secs_f64()
            ),
            Failing::Status(status, body) if body.trim().is_empty() => {
                format!("judge endpoint answered HTTP {status} to {n} requests in a row")
            }
            Failing::Status(status, body) => format!(
                "judge endpoint answered HTTP {status} to {n} requests in a row: {}",
                body.trim()
            ),
            Failing::Broken => format!("{reason} ({n} requests in a row)"),
        }
    }

    async fn send(&self, body: &str) -> Attempt {
        let request = self.client.post(self.endpoint.clone());
        let request = match self.auth {
            Auth::Bearer => request.bearer_auth(&self.api_key.0),
            Auth::AnthropicKey => request
                .header("x-api-key", &self.api_key.0)
                .header("anthropic-version", ANTHROPIC_VERSION),
        };
        let sent = request
            .header(CONTENT_TYPE, "application/json")
            .timeout(self.timeout)
            .body(body.to_owned())
            .send()
            .await;
        let response = match sent {
            Ok(response) => response,
            Err(e) => return self.transport_failure(&e),
        };
        let status = response.status();
        if status.is_redirection()
            && let Some(to) = redirect_target(&response)
            && to.origin() != self.endpoint.origin()
        {
            return Attempt::Fatal(format!(
                "judge endpoint {} redirected to {}, another host; gavel sends the API key \
                 only to the endpoint's own scheme, host and port, so it did not follow (set \
                 base_url to the address the judge is served from)",
                origin(&self.endpoint),
                origin(&to)
            ));
        }
        let after = retry_after(response.headers(), SystemTime::now());
        let text = match read_capped(response).await {
            Ok(text) => text,
            Err(Cut::TooLarge) => {
                return Attempt::Fatal(format!(
                    "judge reply was larger than {} MiB; gavel stopped reading it",
                    REPLY_LIMIT >> 20
                ));
            }
            Err(Cut::Failed(e)) => return self.transport_failure(&e),
        };
        if status.is_success() {
            Attempt::Done(text)
        } else if is_retryable(status) {
            Attempt::Retry {
                reason: http_failure(status, &text),
                after,
                failing: (status != StatusCode::TOO_MANY_REQUESTS)
                    .then(|| Failing::Status(status, text.chars().take(QUOTED_BODY).collect())),
            }
        } else if is_endpoint_refusal(status)
            && (self.missing_is_down || status != StatusCode::NOT_FOUND)
        {
            Attempt::Down(http_failure(status, &text))
        } else {
            Attempt::Fatal(http_failure(status, &text))
        }
    }

    fn transport_failure(&self, error: &reqwest::Error) -> Attempt {
        let reason = if error.is_timeout() {
            format!(
                "judge request timed out after {}s",
                self.timeout.as_secs_f64()
            )
        } else {
            error_chain(error)
        };
        if error.is_builder() {
            return Attempt::Fatal(reason);
        }
        let failing = if error.is_timeout() {
            Failing::Timeout
        } else if error.is_connect() {
            Failing::Connect
        } else {
            Failing::Broken
        };
        // Refused or reset connections and timeouts are worth another try.
        Attempt::Retry {
            reason,
            after: None,
            failing: Some(failing),
        }
    }
}

/// The HTTP client of judge requests: redirects are followed only while they stay at the
/// origin they started from, since reqwest keeps headers such as `x-api-key` (and the body,
/// the prompt) on a hop to another host.
pub fn client() -> reqwest::Result<reqwest::Client> {
    let policy = reqwest::redirect::Policy::custom(|attempt| {
        let same_origin = (attempt.previous().first())
            .is_some_and(|first| first.origin() == attempt.url().origin());
        if !same_origin {
            attempt.stop()
        } else if attempt.previous().len() > MAX_REDIRECTS {
            attempt.error(format!("more than {MAX_REDIRECTS} redirects"))
        } else {
            attempt.follow()
        }
    });
    reqwest::Client::builder()
        .user_agent(concat!("gavel/", env!("CARGO_PKG_VERSION")))
        .redirect(policy)
        .build()
}

/// Where a redirect the client did not follow points, resolved against the URL it came from.
fn redirect_target(response: &reqwest::Response) -> Option<Url> {
    let location = response.headers().get(LOCATION)?.to_str().ok()?;
    response.url().join(location).ok()
}

/// `scheme://host:port` of `url`.
fn origin(url: &Url) -> String {
    url.origin().ascii_serialization()
}

/// Why a reply was not read whole.
enum Cut {
    TooLarge,
    Failed(reqwest::Error),
}

/// The reply's body as text, read piece by piece and given up past [`REPLY_LIMIT`] (or at once
/// when its announced length is larger).
async fn read_capped(mut response: reqwest::Response) -> Result<String, Cut> {
    let announced = response.content_length().unwrap_or(0);
    if announced > REPLY_LIMIT {
        return Err(Cut::TooLarge);
    }
    // Room for the announced length at once: grown by doubling, a buffer would take up to twice
    // the reply.
    let mut body = Vec::with_capacity(announced as usize);
    while let Some(chunk) = response.chunk().await.map_err(Cut::Failed)? {
        if (body.len() + chunk.len()) as u64 > REPLY_LIMIT {
            return Err(Cut::TooLarge);
        }
        body.extend_from_slice(&chunk);
    }
    Ok(String::from_utf8(body)
        .unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned()))
}

/// The statuses that say every request to the endpoint will fail alike: a key refused (401,
/// 403), or no such endpoint or model (404).
fn is_endpoint_refusal(status: StatusCode) -> bool {
    matches!(status.as_u16(), 401 | 403 | 404)
}

/// The statuses the OpenAI SDK retries: request timeout, conflict, rate limit, server errors.
fn is_retryable(status: StatusCode) -> bool {
    matches!(status.as_u16(), 408 | 409 | 429) || status.is_server_error()
}

/// Full jitter: a uniform wait between zero and the capped exponential step.
fn backoff(retries: u32) -> Duration {
    let step = BACKOFF_BASE
        .saturating_mul(2u32.saturating_pow(retries))
        .min(BACKOFF_CAP);
    step.mul_f64(fastrand::f64())
}

/// `retry-after-ms` (OpenAI's) or `Retry-After` in seconds or as an HTTP date, capped.
fn retry_after(headers: &HeaderMap, now: SystemTime) -> Option<Duration> {
    let header = |name: &str| {
        headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .map(str::trim)
    };
    let wait = if let Some(ms) = header("retry-after-ms").and_then(|v| v.parse::<f64>().ok()) {
        Duration::try_from_secs_f64(ms / 1000.0).ok()?
    } else {
        let value = header("retry-after")?;
        match value.parse::<f64>() {
            Ok(seconds) => Duration::try_from_secs_f64(seconds).ok()?,
            Err(_) => httpdate::parse_http_date(value)
                .ok()?
                .duration_since(now)
                .unwrap_or(Duration::ZERO),
        }
    };
    Some(wait.min(RETRY_AFTER_CAP))
}

/// `HTTP 401 Unauthorized: <the server's error.message, or the start of its reply>`.
fn http_failure(status: StatusCode, body: &str) -> String {
    let message = serde_json::from_str::<Value>(body)
        .ok()
        .and_then(|v| {
            v.pointer("/error/message")
                .and_then(Value::as_str)
                .map(String::from)
        })
        .unwrap_or_else(|| body.chars().take(300).collect());
    let message = message.trim();
    if message.is_empty() {
        format!("judge endpoint answered HTTP {status}")
    } else {
        format!("judge endpoint answered HTTP {status}: {message}")
    }
}

/// An error with its causes, which say what actually failed (refused, reset, DNS, TLS).
pub(crate) fn error_chain(error: &(dyn std::error::Error + 'static)) -> String {
    let mut out = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        let text = cause.to_string();
        if !out.contains(&text) {
            out.push_str(": ");
            out.push_str(&text);
        }
        source = cause.source();
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use reqwest::header::HeaderValue;

    /// A run's fuse stays tripped with its first reason; a service's lets the endpoint be asked
    /// again once its hold has passed.
    #[test]
    fn a_fuse_holds_for_good_in_a_run_and_for_a_while_in_a_service() {
        let run = Fuse::holding(None);
        assert_eq!(run.get(), None);
        assert_eq!(run.trip(|| "key refused".into()), "key refused");
        assert_eq!(run.trip(|| "later".into()), "key refused");
        std::thread::sleep(Duration::from_millis(30));
        assert_eq!(run.get().as_deref(), Some("key refused"));
        let service = Fuse::holding(Some(Duration::from_millis(20)));
        service.trip(|| "timeouts".into());
        assert_eq!(service.get().as_deref(), Some("timeouts"));
        std::thread::sleep(Duration::from_millis(30));
        assert_eq!(service.get(), None);
        assert_eq!(service.trip(|| "again".into()), "again");
        // Tripped again once the hold passed, without a look in between: the new reason.
        std::thread::sleep(Duration::from_millis(30));
        assert_eq!(service.trip(|| "third".into()), "third");
    }

    fn headers(pairs: &[(&'static str, &str)]) -> HeaderMap {
        let mut map = HeaderMap::new();
        for (name, value) in pairs {
            map.insert(*name, HeaderValue::from_str(value).expect("header value"));
        }
        map
    }

    #[test]
    fn retry_after_forms() {
        let now = httpdate::parse_http_date("Sun, 06 Nov 1994 08:49:37 GMT").expect("date");
        let wait = |pairs| retry_after(&headers(pairs), now);
        assert_eq!(wait(&[("retry-after", "2")]), Some(Duration::from_secs(2)));
        assert_eq!(
            wait(&[("retry-after", "0.25")]),
            Some(Duration::from_millis(250))
        );
        assert_eq!(
            wait(&[("retry-after", "Sun, 06 Nov 1994 08:49:40 GMT")]),
            Some(Duration::from_secs(3))
        );
        assert_eq!(
            wait(&[("retry-after", "Sun, 06 Nov 1994 08:00:00 GMT")]),
            Some(Duration::ZERO)
        );
        assert_eq!(
            wait(&[("retry-after", "1"), ("retry-after-ms", "20")]),
            Some(Duration::from_millis(20))
        );
        assert_eq!(wait(&[("retry-after", "3600")]), Some(RETRY_AFTER_CAP));
        assert_eq!(wait(&[("retry-after", "-1")]), None);
        assert_eq!(wait(&[("retry-after", "soon")]), None);
        assert_eq!(wait(&[]), None);
    }

    #[test]
    fn backoff_is_jittered_below_a_growing_cap() {
        for retries in 0..10 {
            let cap = BACKOFF_BASE.saturating_mul(1 << retries).min(BACKOFF_CAP);
            for _ in 0..50 {
                assert!(backoff(retries) <= cap);
            }
        }
        let waits: Vec<Duration> = (0..20).map(|_| backoff(3)).collect();
        assert!(waits.iter().any(|w| *w != waits[0]), "no jitter: {waits:?}");
    }

    #[test]
    fn http_failures_quote_the_server() {
        assert_eq!(
            http_failure(
                StatusCode::UNAUTHORIZED,
                r#"{"error": {"message": "Incorrect API key", "type": "auth"}}"#
            ),
            "judge endpoint answered HTTP 401 Unauthorized: Incorrect API key"
        );
        assert_eq!(
            http_failure(StatusCode::BAD_GATEWAY, "  "),
            "judge endpoint answered HTTP 502 Bad Gateway"
        );
        assert!(is_retryable(StatusCode::TOO_MANY_REQUESTS));
        assert!(is_retryable(StatusCode::SERVICE_UNAVAILABLE));
        assert!(!is_retryable(StatusCode::BAD_REQUEST));
    }

    #[test]
    fn keys_are_redacted() {
        let key = ApiKey::new("sk-secret".into());
        assert_eq!(
            key.redact("bad key sk-secret!".into()),
            "bad key [redacted]!"
        );
        assert_eq!(format!("{key:?}"), "ApiKey([redacted])");
        // A placeholder key is no secret, and replies that happen to hold it stay as they are.
        let placeholder = ApiKey::new("none".into());
        assert_eq!(
            placeholder.redact(r#"{"rationale": "none of it"}"#.into()),
            r#"{"rationale": "none of it"}"#
        );
    }

    /// The key is redacted however JSON escapes write it, a level deep or two, and only the
    /// span that spells it changes: a text without it stays as it is, and JSON stays JSON.
    #[test]
    fn the_key_is_redacted_in_every_spelling() {
        let key = ApiKey::new("sk-reply-test-key".into());
        let redacted = |text: &str| key.redact(text.to_string());
        for spelling in [
            "sk-reply-test-key",
            r"sk-\u0072eply-test-key",
            r"\u0073\u006b-reply-test-ke\u0079",
            r"sk-\\u0072eply-test-key",
            r"sk-\u005cu0072eply-test-key",
        ] {
            assert_eq!(
                redacted(&format!(r#"{{"a": "é\u00e9 \"{spelling}\"\n"}}"#)),
                r#"{"a": "é\u00e9 \"[redacted]\"\n"}"#,
                "{spelling}"
            );
        }
        // Escapes JSON does not read, or that read as something else, hide no key.
        for text in [
            r#"{"a": "x\"y\\z\u00e9\ud83d\ude00\n"}"#,
            r"sk-\\\\u0072eply-test-key",
            r"sk-\x72eply-test-key \ud800 \u12",
            "",
        ] {
            assert_eq!(redacted(text), text);
        }
        // A key too short to be a secret is left wherever it is.
        let placeholder = ApiKey::new("EMPTY".into());
        assert_eq!(
            placeholder.redact(r"EMPTY \u0045MPTY".into()),
            r"EMPTY \u0045MPTY"
        );
    }
}
