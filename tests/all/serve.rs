//! `gavel serve` through the real binary and a plain HTTP client on a socket: the grade endpoint
//! answers the lines `gavel run` writes, byte for byte; OpenRLHF's reward client gets its
//! rewards; and hostile requests (huge bodies, deep JSON, clients that trickle bytes, requests
//! without the token, a Python grader that spins or floods) cost their own deadline and leave
//! every other request answered.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

use crate::common::{Drained, Workspace, gavel_command};
use crate::python_graders::{cache, paris_row};
use serde_json::{Value, json};

const SUITE: &str = "name: capitals
dataset: data.jsonl
graders:
  answer:
    kind: tool
    function: contains
reward:
  kind: metric
  metric_key: answer
";

/// A `gavel serve` started on a free port of 127.0.0.1, stopped when dropped. Its log (a line a
/// request, on stderr) is read as it comes, so that the server never waits on a full pipe, and
/// printed when the test fails.
struct Server {
    child: Child,
    addr: SocketAddr,
    log: Option<Drained>,
}

impl Server {
    fn start(ws: &Workspace, args: &[&str], vars: &[(&str, &str)]) -> Server {
        let mut all = vec!["serve", "--listen", "127.0.0.1:0"];
        // A server that is not told loads the Python interpreter as it starts, building it
        // into the test's fresh cache: only the tests that post Python graders ask that.
        if !args.contains(&"--load-python") {
            all.extend(["--load-python", "first-use"]);
        }
        all.extend_from_slice(args);
        let mut child = gavel_command(ws.dir.path(), &all, vars)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("gavel serve starts");
        let mut line = String::new();
        BufReader::new(child.stdout.take().expect("stdout"))
            .read_line(&mut line)
            .expect("the address is printed");
        let log = Drained::new(child.stderr.take().expect("stderr"));
        let Some(addr) = (line.strip_prefix("listening on http://"))
            .and_then(|rest| rest.split(' ').next())
            .and_then(|addr| addr.parse().ok())
        else {
            let _ = child.kill();
            let _ = child.wait();
            panic!("no address printed: {line:?}; stderr: {}", log.finish());
        };
        Server {
            child,
            addr,
            log: Some(log),
        }
    }

    fn connect(&self) -> TcpStream {
        let stream = TcpStream::connect(self.addr).expect("connects");
        stream
            .set_read_timeout(Some(Duration::from_secs(120)))
            .expect("read timeout");
        stream
    }

    /// Sends one request and reads its answer.
    fn request(&self, method: &str, path: &str, headers: &[(&str, &str)], body: &[u8]) -> Reply {
        let mut stream = self.connect();
        send_head(&mut stream, method, path, headers, Some(body.len()));
        stream.write_all(body).expect("body sent");
        read_reply(stream)
    }

    /// A connection on which a POST of `body` to `path` is sent, its answer not read yet.
    fn posted(&self, path: &str, body: &[u8]) -> TcpStream {
        let mut stream = self.connect();
        send_head(&mut stream, "POST", path, &[], Some(body.len()));
        stream.write_all(body).expect("body sent");
        stream
    }

    fn get(&self, path: &str) -> Reply {
        self.request("GET", path, &[], b"")
    }

    fn post(&self, path: &str, body: &[u8]) -> Reply {
        self.request("POST", path, &[], body)
    }

    /// Sends SIGTERM, and returns the exit code and what the server wrote on stderr.
    fn terminate(mut self) -> (Option<i32>, String) {
        self.signal_term();
        let code = self.child.wait().expect("the server exits").code();
        (code, self.log.take().expect("the log").finish())
    }

    /// Sends SIGTERM and waits for the server's exit code, failing with `why` if it has not
    /// exited within `limit`.
    fn terminated_within(&mut self, limit: Duration, why: &str) -> Option<i32> {
        self.signal_term();
        let started = Instant::now();
        loop {
            if let Some(status) = self.child.try_wait().expect("the server's status") {
                return status.code();
            }
            assert!(started.elapsed() < limit, "{why}");
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    fn signal_term(&self) {
        let status = std::process::Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .status()
            .expect("kill runs");
        assert!(status.success());
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        if std::thread::panicking()
            && let Some(log) = self.log.take()
        {
            eprintln!("gavel serve's stderr:\n{}", log.finish());
        }
    }
}

fn send_head(
    stream: &mut TcpStream,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    length: Option<usize>,
) {
    let mut head = format!("{method} {path} HTTP/1.1\r\nHost: test\r\nConnection: close\r\n");
    if let Some(length) = length {
        head.push_str(&format!("Content-Length: {length}\r\n"));
    }
    for (name, value) in headers {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    head.push_str("\r\n");
    stream.write_all(head.as_bytes()).expect("head sent");
}

struct Reply {
    status: u16,
    head: String,
    body: Vec<u8>,
}

impl Reply {
    fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }

    fn json(&self) -> Value {
        serde_json::from_slice(&self.body)
            .unwrap_or_else(|e| panic!("{e}: {} {}", self.status, self.text()))
    }

    /// The answer's lines of `results.jsonl`, each parsed.
    fn results(&self) -> Vec<Value> {
        (self.text().lines())
            .map(|l| serde_json::from_str(l).expect("a result"))
            .collect()
    }

    fn header(&self, name: &str) -> Option<String> {
        self.head.lines().find_map(|line| {
            let (key, value) = line.split_once(':')?;
            key.eq_ignore_ascii_case(name)
                .then(|| value.trim().to_string())
        })
    }
}

fn read_reply(mut stream: TcpStream) -> Reply {
    let mut raw = Vec::new();
    let _ = stream.read_to_end(&mut raw);
    let split = raw
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .unwrap_or_else(|| panic!("no HTTP answer: {:?}", String::from_utf8_lossy(&raw)));
    let head = String::from_utf8_lossy(&raw[..split]).into_owned();
    let status = head
        .split(' ')
        .nth(1)
        .and_then(|s| s.parse().ok())
        .expect("a status code");
    Reply {
        status,
        head,
        body: raw[split + 4..].to_vec(),
    }
}

/// A letta-evals row whose run answers `answer` (no `id`: its index is its id).
fn row(answer: &str) -> Value {
    json!({"input": "What is the capital of France?", "ground_truth": "Paris", "trajectory": [[
        {"id": "m1", "date": "2026-01-01T00:00:00Z", "message_type": "assistant_message", "content": answer}
    ]]})
}

fn capitals() -> (Workspace, Vec<Value>) {
    let ws = Workspace::new();
    ws.write("suite.yaml", SUITE);
    let rows = vec![
        row("It is Paris."),
        row("Lyon"),
        json!({"id": "silent", "input": "q", "ground_truth": "Paris", "trajectory": [[]]}),
        json!({"id": "bad", "input": 3}),
    ];
    ws.write_rows("data.jsonl", &rows);
    (ws, rows)
}

#[test]
fn the_grade_endpoint_answers_the_lines_gavel_run_writes() {
    let (ws, rows) = capitals();
    let run = ws.gavel(&["run", "suite.yaml", "-o", "out", "-q", "--skip-invalid"]);
    assert!(matches!(run.status.code(), Some(0 | 1)), "{run:?}");
    let written = std::fs::read(ws.path("out/results.jsonl")).expect("results.jsonl");

    let server = Server::start(&ws, &["--suite", "caps=suite.yaml"], &[]);
    let jsonl = std::fs::read(ws.path("data.jsonl")).expect("data.jsonl");
    let reply = server.post("/v1/suites/caps/grade", &jsonl);
    assert_eq!(reply.status, 200, "{}", reply.text());
    assert_eq!(
        reply.header("content-type").as_deref(),
        Some("application/x-ndjson")
    );
    // Byte for byte, but for where an invalid row is: the request's body, not a file.
    let written = String::from_utf8_lossy(&written).replace("data.jsonl:4:", "request body:4:");
    assert_eq!(reply.text(), written);

    let array = serde_json::to_vec_pretty(&rows).expect("rows");
    let reply = server.post("/v1/suites/caps/grade", &array);
    assert_eq!(reply.status, 200, "{}", reply.text());
    assert_eq!(reply.text(), written);

    assert_eq!(server.get("/healthz").status, 200);
    assert_eq!(server.get("/readyz").status, 200);
    // HEAD as probes send it: the status and headers, no body.
    let head = server.request("HEAD", "/healthz", &[], b"");
    assert_eq!((head.status, head.text().as_str()), (200, ""));
    assert_eq!(server.get("/v1/suites").json(), json!({"suites": ["caps"]}));
    let metrics = server.get("/metrics").text();
    for line in [
        "gavel_serve_requests_total{route=\"grade\",code=\"200\"} 2",
        "gavel_serve_samples_total{suite=\"caps\",status=\"pass\"} 2",
        "gavel_serve_samples_total{suite=\"caps\",status=\"error\"} 4",
        "gavel_serve_request_duration_seconds_count{route=\"grade\"} 2",
    ] {
        assert!(metrics.lines().any(|l| l == line), "{line} in:\n{metrics}");
    }
    let missing = server.post("/v1/suites/nope/grade", &jsonl);
    assert_eq!(missing.status, 404);
    assert!(missing.json()["error"].as_str().unwrap().contains("`nope`"));
    let (code, log) = server.terminate();
    assert_eq!(code, Some(0), "{log}");
    let logged: Vec<Value> = (log.lines())
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect();
    assert!(
        logged
            .iter()
            .any(|l| l["route"] == "grade" && l["status"] == 200 && l["rows"] == 4),
        "{log}"
    );
}

#[test]
fn a_suite_that_does_not_load_stops_the_server_with_its_located_error() {
    let ws = Workspace::new();
    ws.write("suite.yaml", "name: x\ndataset: data.jsonl\ngraders:\n  a:\n    kind: tool\n    function: no_such_grader\n");
    ws.write_rows("data.jsonl", &[row("Paris")]);
    let out = gavel_command(
        ws.dir.path(),
        &[
            "serve",
            "--listen",
            "127.0.0.1:0",
            "--suite",
            "x=suite.yaml",
        ],
        &[],
    )
    .output()
    .expect("gavel runs");
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("suite.yaml:6"), "{err}");
    assert!(err.contains("no_such_grader"), "{err}");
    assert!(out.stdout.is_empty(), "nothing listened");
}

/// What OpenRLHF's `SingleTurnAgentExecutor._fetch_rewards_via_http` posts with aiohttp's
/// `session.post(url, json=payload)`: the decoded prompt and response as one query.
#[test]
fn openrlhf_reward_requests_get_a_reward_per_query() {
    let (ws, _) = capitals();
    let server = Server::start(&ws, &["--suite", "caps=suite.yaml"], &[]);
    let payload = json!({
        "query": ["<|user|>Capital of France?<|assistant|>Paris, of course.", "<|user|>Capital of France?<|assistant|>Lyon"],
        "prompts": ["<|user|>Capital of France?<|assistant|>", "<|user|>Capital of France?<|assistant|>"],
        "labels": ["Paris", "Paris"],
    });
    let reply = server.request(
        "POST",
        "/v1/suites/caps/openrlhf",
        &[("Content-Type", "application/json")],
        payload.to_string().as_bytes(),
    );
    assert_eq!(reply.status, 200, "{}", reply.text());
    let answer = reply.json();
    assert_eq!(answer["rewards"], json!([1.0, 0.0]));
    assert_eq!(answer["scores"], json!([1.0, 0.0]));
    assert_eq!(answer["extra_logs"]["answer"], json!([1.0, 0.0]));
    assert_eq!(answer["extra_logs"]["gavel_error"], json!([0.0, 0.0]));

    ws.write(
        "plain.yaml",
        &SUITE.replace("reward:\n  kind: metric\n  metric_key: answer\n", ""),
    );
    drop(server);
    let server = Server::start(
        &ws,
        &["--suite", "caps=suite.yaml", "--suite", "plain=plain.yaml"],
        &[],
    );
    let no_reward = server.post("/v1/suites/plain/openrlhf", payload.to_string().as_bytes());
    assert_eq!(no_reward.status, 409, "{}", no_reward.text());
    assert!(
        no_reward.text().contains("has no `reward:`"),
        "{}",
        no_reward.text()
    );

    let uneven = json!({"query": ["a", "b"], "prompts": ["a"], "labels": ["x", "y"]});
    let reply = server.post("/v1/suites/caps/openrlhf", uneven.to_string().as_bytes());
    assert_eq!(reply.status, 400);
    assert!(
        reply
            .text()
            .contains("`prompts` has 1 entries for 2 queries")
    );
}

#[test]
fn a_body_past_the_limit_is_refused_whole_or_streamed() {
    let (ws, _) = capitals();
    let server = Server::start(
        &ws,
        &["--suite", "caps=suite.yaml", "--max-body", "1000"],
        &[],
    );
    // Declared too large: refused before any of it is read.
    let mut stream = server.connect();
    send_head(
        &mut stream,
        "POST",
        "/v1/suites/caps/grade",
        &[],
        Some(1 << 30),
    );
    let reply = read_reply(stream);
    assert_eq!(reply.status, 413, "{}", reply.text());
    // Chunked, with no length: refused once past the limit.
    let mut stream = server.connect();
    send_head(
        &mut stream,
        "POST",
        "/v1/suites/caps/grade",
        &[("Transfer-Encoding", "chunked")],
        None,
    );
    let chunk = format!("{:x}\r\n{}\r\n", 600, "x".repeat(600));
    for _ in 0..4 {
        if stream.write_all(chunk.as_bytes()).is_err() {
            break;
        }
    }
    let reply = read_reply(stream);
    assert_eq!(reply.status, 413, "{}", reply.text());
    assert_eq!(server.get("/healthz").status, 200);
}

#[test]
fn deeply_nested_rows_are_error_results_and_the_server_stays_up() {
    let (ws, _) = capitals();
    let server = Server::start(&ws, &["--suite", "caps=suite.yaml"], &[]);
    let depth = 200_000;
    let deep = format!(
        "{{\"input\": {}1{}}}\n{}\n",
        "[".repeat(depth),
        "]".repeat(depth),
        row("Paris")
    );
    let reply = server.post("/v1/suites/caps/grade", deep.as_bytes());
    assert_eq!(reply.status, 200, "{}", reply.text());
    let results = reply.results();
    assert_eq!(results.len(), 2);
    assert_eq!(results[0]["error"]["category"], "invalid", "{}", results[0]);
    assert_eq!(results[1]["grades"]["answer"]["status"], "pass");
    // As an array element too: read whole, an invalid row.
    let array = format!("[{}1{}]", "[".repeat(depth), "]".repeat(depth));
    let reply = server.post("/v1/suites/caps/grade", array.as_bytes());
    assert_eq!(reply.status, 200, "{}", reply.text());
    let result: Value = serde_json::from_slice(&reply.body).expect("one result");
    assert_eq!(result["error"]["category"], "invalid", "{result}");
    assert_eq!(server.get("/healthz").status, 200);
}

/// A client that sends its body a byte at a time is answered `408` at its deadline, while
/// another client is answered meanwhile.
#[test]
fn a_client_that_trickles_its_body_spends_its_own_deadline() {
    let (ws, _) = capitals();
    let server = Server::start(&ws, &["--suite", "caps=suite.yaml", "--deadline", "2"], &[]);
    let mut slow = server.connect();
    send_head(
        &mut slow,
        "POST",
        "/v1/suites/caps/grade",
        &[],
        Some(10_000),
    );
    let trickle = {
        let mut slow = slow.try_clone().expect("clone");
        std::thread::spawn(move || {
            for _ in 0..10_000 {
                if slow.write_all(b" ").is_err() {
                    return;
                }
                std::thread::sleep(Duration::from_millis(50));
            }
        })
    };
    let jsonl = std::fs::read(ws.path("data.jsonl")).expect("data.jsonl");
    assert_eq!(server.post("/v1/suites/caps/grade", &jsonl).status, 200);
    let reply = read_reply(slow);
    assert_eq!(reply.status, 408, "{}", reply.text());
    assert_eq!(reply.header("connection").as_deref(), Some("close"));
    trickle.join().expect("the trickle ends");
}

#[test]
fn the_bearer_token_is_asked_for_and_never_shown() {
    let (ws, _) = capitals();
    let token = "s3cret-t0ken-for-the-test";
    let server = Server::start(
        &ws,
        &["--suite", "caps=suite.yaml"],
        &[("GAVEL_SERVE_TOKEN", token)],
    );
    let jsonl = std::fs::read(ws.path("data.jsonl")).expect("data.jsonl");
    let path = "/v1/suites/caps/grade";
    let none = server.post(path, &jsonl);
    assert_eq!(none.status, 401);
    assert_eq!(none.header("www-authenticate").as_deref(), Some("Bearer"));
    let wrong = server.request(
        "POST",
        path,
        &[("Authorization", "Bearer s3cret-t0ken-for-the-tesT")],
        &jsonl,
    );
    assert_eq!(wrong.status, 401);
    assert_eq!(server.get("/metrics").status, 401);
    assert_eq!(server.get("/healthz").status, 200);
    let bearer = format!("Bearer {token}");
    let right = server.request("POST", path, &[("Authorization", &bearer)], &jsonl);
    assert_eq!(right.status, 200, "{}", right.text());
    let metrics = server.request("GET", "/metrics", &[("Authorization", &bearer)], b"");
    assert_eq!(metrics.status, 200);
    // The scheme's name is read in any case; the token as written, and whole.
    let lower = format!("bearer {token}");
    let any_case = server.request("GET", "/metrics", &[("Authorization", &lower)], b"");
    assert_eq!(any_case.status, 200);
    let longer = format!("Bearer {token}x");
    for (header, status) in [(&longer, 401), (&"Bearer ".to_string(), 401)] {
        let reply = server.request("GET", "/metrics", &[("Authorization", header)], b"");
        assert_eq!(reply.status, status, "{header}");
    }
    for reply in [&none, &wrong, &right, &metrics] {
        assert!(!reply.text().contains(token) && !reply.head.contains(token));
    }
    let (code, log) = server.terminate();
    assert_eq!(code, Some(0));
    assert!(!log.contains(token), "{log}");
    assert!(log.contains("\"status\":401"), "{log}");
}

/// SIGTERM: the request in flight (its body still arriving) is answered, no new connection is
/// taken, and the server exits 0.
#[test]
fn sigterm_drains_the_requests_in_flight() {
    let (ws, _) = capitals();
    let server = Server::start(&ws, &["--suite", "caps=suite.yaml"], &[]);
    let addr = server.addr;
    let jsonl = std::fs::read(ws.path("data.jsonl")).expect("data.jsonl");
    let mut in_flight = server.connect();
    send_head(
        &mut in_flight,
        "POST",
        "/v1/suites/caps/grade",
        &[("Expect", "100-continue")],
        Some(jsonl.len()),
    );
    // `100 Continue` comes once the request is being answered: it is in flight.
    let mut interim = Vec::new();
    let mut byte = [0u8];
    while !interim.ends_with(b"\r\n\r\n") {
        in_flight.read_exact(&mut byte).expect("an interim answer");
        interim.push(byte[0]);
    }
    assert!(interim.starts_with(b"HTTP/1.1 100"), "{interim:?}");
    in_flight.write_all(&jsonl[..10]).expect("first bytes");
    let finish = std::thread::spawn({
        let mut in_flight = in_flight.try_clone().expect("clone");
        let rest = jsonl[10..].to_vec();
        move || {
            std::thread::sleep(Duration::from_millis(500));
            in_flight.write_all(&rest).expect("the rest is taken");
        }
    });
    let (code, log) = server.terminate();
    finish.join().expect("sent");
    let reply = read_reply(in_flight);
    assert_eq!(reply.status, 200, "{}", reply.text());
    assert_eq!(reply.text().lines().count(), 4);
    assert_eq!(code, Some(0), "{log}");
    assert!(TcpStream::connect(addr).is_err(), "no longer listening");
}

/// A connection that posts 200,000 rows to the suite `caps`, whose answer (tens of MB) it then
/// leaves unread.
fn asked_and_not_read(server: &Server) -> TcpStream {
    let rows = "{}\n".repeat(200_000);
    let mut stalled = server.connect();
    send_head(
        &mut stalled,
        "POST",
        "/v1/suites/caps/grade",
        &[],
        Some(rows.len()),
    );
    stalled
        .write_all(rows.as_bytes())
        .expect("the body is taken");
    stalled
}

/// A chunked body's data, and whether its last chunk came (else it was broken off).
fn dechunked(mut body: &[u8]) -> (Vec<u8>, bool) {
    let mut data = Vec::new();
    loop {
        let Some(end) = body.windows(2).position(|w| w == b"\r\n") else {
            return (data, false);
        };
        let size = std::str::from_utf8(&body[..end])
            .ok()
            .and_then(|size| usize::from_str_radix(size.trim(), 16).ok());
        let Some(size) = size else {
            return (data, false);
        };
        if size == 0 {
            return (data, &body[end..] == b"\r\n\r\n");
        }
        let chunk = &body[end + 2..];
        if chunk.len() < size + 2 {
            data.extend_from_slice(chunk);
            return (data, false);
        }
        data.extend_from_slice(&chunk[..size]);
        body = &chunk[size + 2..];
    }
}

/// A client that asks and then takes in none of its (large) answer for `--header-timeout` has
/// its connection closed, the answer broken off, and the pass that graded it stopped.
#[test]
fn a_client_that_never_reads_its_answer_is_let_go() {
    let (ws, _) = capitals();
    let server = Server::start(
        &ws,
        &["--suite", "caps=suite.yaml", "--header-timeout", "1"],
        &[],
    );
    let mut stalled = asked_and_not_read(&server);
    std::thread::sleep(Duration::from_secs(4));
    let mut received = Vec::new();
    let _ = stalled.read_to_end(&mut received);
    let split = (received.windows(4).position(|w| w == b"\r\n\r\n")).expect("the answer began");
    let head = String::from_utf8_lossy(&received[..split]);
    assert!(head.starts_with("HTTP/1.1 200"), "{head}");
    assert!(head.contains("transfer-encoding: chunked"), "{head}");
    let (lines, whole) = dechunked(&received[split + 4..]);
    assert!(
        !whole,
        "the whole answer was written to a client that read none of it"
    );
    let lines = lines.split(|&b| b == b'\n').count() - 1;
    assert!(lines < 200_000, "{lines} lines");
    // The pass stopped with its client, and the server serves on.
    assert!(metric(&server, "gavel_serve_requests_grading 0"));
    assert_eq!(server.get("/healthz").status, 200);
    let (_, log) = server.terminate();
    assert!(
        log.contains("\"error\":\"the client closed the connection before the answer's end\""),
        "{log}"
    );
}

/// An answer of many lines streams as it is graded: the lines `gavel run` writes, in order,
/// while the server holds a few pieces of it (and of the rows) rather than all of it.
#[test]
fn a_large_answer_streams_whole_in_bounded_memory() {
    let ws = Workspace::new();
    ws.write("suite.yaml", SUITE);
    // 400,000 rows without a trajectory: a body of 1.2 MB, an answer of 95 MB.
    let rows = "{}\n".repeat(400_000);
    ws.write("data.jsonl", &rows);
    let run = ws.gavel(&["run", "suite.yaml", "-o", "out", "-q", "--skip-invalid"]);
    assert!(matches!(run.status.code(), Some(0 | 1)), "{run:?}");
    let written = std::fs::read(ws.path("out/results.jsonl")).expect("results.jsonl");

    let server = Server::start(&ws, &["--suite", "caps=suite.yaml"], &[]);
    let reply = server.post("/v1/suites/caps/grade", rows.as_bytes());
    assert_eq!(reply.status, 200);
    assert_eq!(
        reply.header("transfer-encoding").as_deref(),
        Some("chunked")
    );
    let (lines, whole) = dechunked(&reply.body);
    assert!(whole, "the answer's last chunk came");
    assert!(lines == written, "the answer differs from results.jsonl");
    // Held whole, the answer alone took 95 MB, its results' counts 22 MB more, the rows read
    // ahead 52 MB.
    let status = std::fs::read_to_string(format!("/proc/{}/status", server.child.id()))
        .expect("the server's status");
    let peak_kib: u64 = (status.lines())
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .expect("its peak");
    assert!(peak_kib < 80 * 1024, "the server peaked at {peak_kib} KiB");
    assert!(metric(
        &server,
        "gavel_serve_samples_total{suite=\"caps\",status=\"error\"} 400000"
    ));
    let (_, log) = server.terminate();
    assert!(log.contains("\"rows\":400000"), "{log}");
}

/// A streamed answer whose deadline passes before its end (its client reads too slowly) is
/// broken off: its status was sent, so the connection closes before the last chunk, and no
/// client takes the lines it got for the whole answer.
#[test]
fn a_streamed_answer_past_its_deadline_is_broken_off() {
    let (ws, _) = capitals();
    let args = ["--suite", "caps=suite.yaml", "--deadline", "2"];
    let server = Server::start(&ws, &args, &[]);
    let mut slow = asked_and_not_read(&server);
    std::thread::sleep(Duration::from_secs(4));
    let mut received = Vec::new();
    let _ = slow.read_to_end(&mut received);
    let split = (received.windows(4).position(|w| w == b"\r\n\r\n")).expect("the answer began");
    let head = String::from_utf8_lossy(&received[..split]);
    assert!(head.contains("transfer-encoding: chunked"), "{head}");
    let (_, whole) = dechunked(&received[split + 4..]);
    assert!(!whole, "an answer cut at its deadline ended as if whole");
    assert!(metric(&server, "gavel_serve_requests_grading 0"));
    let (_, log) = server.terminate();
    assert!(
        log.contains("\"status\":200") && log.contains("deadline passed"),
        "{log}"
    );
}

/// SIGTERM with a client that never reads its (large) answer: the drain waits for it no longer
/// than the deadline and a grace, then closes its connection and exits.
#[test]
fn a_drain_does_not_wait_for_a_client_that_never_reads() {
    let (ws, _) = capitals();
    let mut server = Server::start(&ws, &["--suite", "caps=suite.yaml", "--deadline", "2"], &[]);
    let stalled = asked_and_not_read(&server);
    // The answer (tens of MB) fills the socket's buffers and waits for a reader.
    std::thread::sleep(Duration::from_secs(1));
    let code = server.terminated_within(
        Duration::from_secs(30),
        "the drain still waits for the client that never reads",
    );
    assert_eq!(code, Some(0));
    drop(stalled);
}

const HOSTILE: &str = "from letta_evals.decorators import grader
from letta_evals.models import GradeResult


@grader
def fair(sample, submission):
    ok = 'Paris' in submission
    return GradeResult(score=1.0 if ok else 0.0, rationale='fair')


@grader
def spin(sample, submission):
    while True:
        pass


@grader
def flood(sample, submission):
    while True:
        print('x' * 4096)


CALLS = []


@grader
def counts(sample, submission):
    CALLS.append(1)
    return GradeResult(score=len(CALLS) / 100, rationale='calls made in this instance')


@grader
def tally(sample, submission):
    CALLS.append(1)
    return GradeResult(score=len(CALLS) / 1000, rationale='calls made in this instance')


@grader
def deep(sample, submission):
    def down(n):
        return down(n + 1)
    try:
        down(0)
    except RecursionError as e:
        return GradeResult(score=0.5, rationale=type(e).__name__)


@grader
def deepest(sample, submission):
    import sys
    sys.setrecursionlimit(1_000_000)
    nested = []
    for _ in range(30_000):
        nested = [nested]
    return GradeResult(score=1.0, rationale=str(len(repr(nested))))
";

/// A server of the suite `name` in a workspace holding [`HOSTILE`], `rows` Paris rows and a
/// suite per entry of `suites` (`NAME: YAML after the dataset line`), started with `args`;
/// `None` when the interpreter cannot be built here.
fn hostile_server(
    suites: &[(&str, &str)],
    rows: i64,
    args: &[&str],
    vars: &[(&str, &str)],
) -> Option<(Workspace, Server)> {
    let ws = Workspace::new();
    let server = hostile_server_in(&ws, suites, rows, args, vars)?;
    Some((ws, server))
}

/// [`hostile_server`] in `ws`, which may hold more files the suites name.
fn hostile_server_in(
    ws: &Workspace,
    suites: &[(&str, &str)],
    rows: i64,
    args: &[&str],
    vars: &[(&str, &str)],
) -> Option<Server> {
    let cache = cache()?.to_string_lossy();
    ws.write("hostile.py", HOSTILE);
    let mut all: Vec<String> = ["--load-python", "start"]
        .iter()
        .chain(args)
        .map(|a| a.to_string())
        .collect();
    for (name, yaml) in suites {
        ws.write(
            &format!("{name}.yaml"),
            &format!("name: {name}\ndataset: data.jsonl\n{yaml}"),
        );
        all.extend(["--suite".to_string(), format!("{name}={name}.yaml")]);
    }
    let rows: Vec<Value> = (1..=rows)
        .map(|i| paris_row(i, if i == 2 { "Lyon" } else { "Paris" }))
        .collect();
    ws.write_rows("data.jsonl", &rows);
    let all: Vec<&str> = all.iter().map(String::as_str).collect();
    let mut vars = vars.to_vec();
    vars.extend([("GAVEL_CACHE_DIR", &*cache), ("GAVEL_PYTHON_COMPONENT", "")]);
    Some(Server::start(ws, &all, &vars))
}

/// The suite lines of [`HOSTILE`]'s graders named.
fn graders(names: &[&str]) -> String {
    let mut yaml = String::from("graders:\n");
    for name in names {
        yaml.push_str(&format!(
            "  {name}:\n    kind: tool\n    function: hostile.py:{name}\n"
        ));
    }
    yaml
}

/// Whether `/metrics` has the line `line` now.
fn metric(server: &Server, line: &str) -> bool {
    server.get("/metrics").text().lines().any(|l| l == line)
}

/// A Python grader that spins or floods stdout costs its own calls' limits: its grades are
/// errors with the limit's reason, every other grade stands, and the server answers others.
#[test]
fn python_graders_that_spin_or_flood_cost_their_own_limits() {
    let suite = format!(
        "limits: {{timeout_ms: 1000}}\n{}",
        graders(&["fair", "spin", "flood"])
    );
    let Some((ws, server)) = hostile_server(&[("h", &suite)], 2, &["--deadline", "120"], &[])
    else {
        return;
    };
    let jsonl = std::fs::read(ws.path("data.jsonl")).expect("data.jsonl");
    let reply = server.post("/v1/suites/h/grade", &jsonl);
    assert_eq!(reply.status, 200, "{}", reply.text());
    let results = reply.results();
    let fair: Vec<&Value> = results
        .iter()
        .map(|r| &r["grades"]["fair"]["score"])
        .collect();
    assert_eq!(fair, [&json!(1.0), &json!(0.0)]);
    for result in &results {
        for name in ["spin", "flood"] {
            assert_eq!(result["grades"][name]["status"], "error", "{result}");
        }
    }
    assert_eq!(server.get("/healthz").status, 200);
    assert!(metric(
        &server,
        "gavel_serve_grading_failures_total{suite=\"h\"} 4"
    ));
}

/// Recursion to Python's limit, and past it to the sandbox's wasm stack, is the grader's own
/// outcome (a `RecursionError` it catches, a stack overflow trap), in a suite's grader and in a
/// posted one, as under `gavel run`: the threads the server makes its calls on have the native
/// stack a call's wasm stack needs, and the server answers on.
#[test]
fn recursion_to_the_limit_and_past_it_costs_only_its_own_grade() {
    let suite = graders(&["fair", "deep", "deepest"]);
    let Some((ws, server)) = hostile_server(&[("h", &suite)], 2, &[], &[]) else {
        return;
    };
    let jsonl = std::fs::read(ws.path("data.jsonl")).expect("data.jsonl");
    let reply = server.post("/v1/suites/h/grade", &jsonl);
    assert_eq!(reply.status, 200, "{}", reply.text());
    let results = reply.results();
    assert_eq!(results.len(), 2);
    for (result, fair) in results.iter().zip([1.0, 0.0]) {
        let grades = &result["grades"];
        assert_eq!(grades["fair"]["score"], json!(fair), "{result}");
        assert_eq!(grades["deep"]["score"], json!(0.5), "{result}");
        assert_eq!(grades["deep"]["rationale"], "RecursionError", "{result}");
        assert_eq!(grades["deepest"]["status"], "error", "{result}");
        assert_eq!(
            grades["deepest"]["rationale"], "guest trapped: stack overflow",
            "{result}"
        );
    }
    let posted = json!({
        "grader": {"type": "python", "name": "deep", "source": "def grade(sample, item):\n    def down(n):\n        return down(n + 1)\n    try:\n        return down(0)\n    except RecursionError:\n        return 0.25\n"},
        "model_sample": "x",
    });
    let reply = server.post(
        "/v1/fine_tuning/alpha/graders/run",
        posted.to_string().as_bytes(),
    );
    assert_eq!(reply.status, 200, "{}", reply.text());
    assert_eq!(reply.json()["reward"], json!(0.25), "{}", reply.text());
    assert_eq!(server.get("/healthz").status, 200);
}

/// Past the requests graded at once and those queued, a request is turned away with `429` and
/// `Retry-After` at once, while the one grading (a Python grader spinning to its timeout)
/// finishes.
#[test]
fn past_the_places_and_the_queue_requests_get_429_with_retry_after() {
    let suite = format!("limits: {{timeout_ms: 1000}}\n{}", graders(&["spin"]));
    let args = ["--concurrency", "1", "--queue", "0"];
    let Some((ws, server)) = hostile_server(&[("b", &suite)], 4, &args, &[]) else {
        return;
    };
    let jsonl = std::fs::read(ws.path("data.jsonl")).expect("data.jsonl");
    let first = std::thread::spawn({
        let mut stream = server.connect();
        let jsonl = jsonl.clone();
        move || {
            send_head(
                &mut stream,
                "POST",
                "/v1/suites/b/grade",
                &[],
                Some(jsonl.len()),
            );
            stream.write_all(&jsonl).expect("body sent");
            read_reply(stream)
        }
    });
    // The first request holds the one place once the server says it is grading.
    while !metric(&server, "gavel_serve_requests_grading 1") {
        assert!(
            !first.is_finished(),
            "the first request ended before it was seen grading"
        );
        std::thread::yield_now();
    }
    let turned_away = server.post("/v1/suites/b/grade", &jsonl);
    assert_eq!(turned_away.status, 429, "{}", turned_away.text());
    assert_eq!(turned_away.header("retry-after").as_deref(), Some("1"));
    let first = first.join().expect("the first request is answered");
    assert_eq!(first.status, 200, "{}", first.text());
    assert_eq!(first.text().lines().count(), 4);
}

/// Requests whose bodies are still arriving hold the places to grade and wait: one more is
/// turned away before its body is read, so connections cannot hold more bodies in memory than
/// the places allow.
#[test]
fn a_request_past_the_places_is_turned_away_before_its_body_is_read() {
    let (ws, _) = capitals();
    let args = [
        "--suite",
        "caps=suite.yaml",
        "--concurrency",
        "1",
        "--queue",
        "1",
    ];
    let server = Server::start(&ws, &args, &[]);
    let declared = 1 << 20;
    let mut held = Vec::new();
    for _ in 0..2 {
        let mut stream = server.connect();
        send_head(
            &mut stream,
            "POST",
            "/v1/suites/caps/grade",
            &[],
            Some(declared),
        );
        stream.write_all(b"{}\n").expect("the body begins");
        held.push(stream);
    }
    // The first two are admitted once the server reads their bodies' first bytes.
    std::thread::sleep(Duration::from_millis(500));
    let mut third = server.connect();
    send_head(
        &mut third,
        "POST",
        "/v1/suites/caps/grade",
        &[],
        Some(declared),
    );
    third
        .set_read_timeout(Some(Duration::from_secs(10)))
        .expect("timeout");
    let reply = read_reply(third);
    assert_eq!(reply.status, 429, "{}", reply.text());
    assert_eq!(reply.header("retry-after").as_deref(), Some("1"));
    drop(held);
}

/// Rows still grading at the request's deadline: `504`, and the pass is halted (the place it
/// held is free again for the next request, answered in full).
#[test]
fn rows_still_grading_at_the_deadline_are_answered_504() {
    // Each row spins for a second: graded whole, they would hold the one place for half a
    // minute, and the next request would pass its own deadline waiting.
    let slow = format!(
        "limits: {{timeout_ms: 1000, fuel: 100000000000}}\n{}",
        graders(&["fair", "spin"])
    );
    let suites = [("slow", slow.as_str()), ("fair", &graders(&["fair"]))];
    let args = ["--deadline", "5", "--concurrency", "1"];
    let Some((ws, server)) = hostile_server(&suites, 30, &args, &[]) else {
        return;
    };
    let jsonl = std::fs::read(ws.path("data.jsonl")).expect("data.jsonl");
    let late = server.post("/v1/suites/slow/grade", &jsonl);
    assert_eq!(late.status, 504, "{}", late.text());
    assert!(late.text().contains("deadline"), "{}", late.text());
    let one = jsonl.split(|&b| b == b'\n').next().expect("a row");
    let fair = server.post("/v1/suites/fair/grade", one);
    assert_eq!(fair.status, 200, "{}", fair.text());
    assert!(metric(
        &server,
        "gavel_serve_requests_total{route=\"grade\",code=\"504\"} 1"
    ));
}

/// A client that sends its headers a byte at a time has its connection closed at the header
/// timeout, while other clients are answered.
#[test]
fn a_client_that_trickles_its_headers_is_closed_at_the_header_timeout() {
    let (ws, _) = capitals();
    let server = Server::start(
        &ws,
        &[
            "--suite",
            "caps=suite.yaml",
            "--header-timeout",
            "1",
            "--deadline",
            "600",
        ],
        &[],
    );
    let mut slow = server.connect();
    let trickle = {
        let mut slow = slow.try_clone().expect("clone");
        std::thread::spawn(move || {
            slow.write_all(b"POST /v1/suites/caps/grade HTTP/1.1\r\n")
                .expect("request line");
            for _ in 0..10_000 {
                if slow.write_all(b"X-Slow: 1\r\n").is_err() {
                    return;
                }
                std::thread::sleep(Duration::from_millis(50));
            }
        })
    };
    assert_eq!(server.get("/healthz").status, 200);
    let mut rest = Vec::new();
    let end = slow.read_to_end(&mut rest);
    assert!(
        end.is_ok(),
        "closed by the server, not by the client's timeout: {end:?}"
    );
    trickle.join().expect("the trickle ends");
}

#[test]
fn a_folder_of_suites_is_served_each_by_its_file_stem() {
    let (ws, _) = capitals();
    ws.write(
        "suites/capitals.yaml",
        &SUITE.replace("data.jsonl", "../data.jsonl"),
    );
    ws.write(
        "suites/again.yml",
        &SUITE.replace("data.jsonl", "../data.jsonl"),
    );
    ws.write("suites/notes.txt", "not a suite");
    let server = Server::start(&ws, &["--suites", "suites"], &[]);
    assert_eq!(
        server.get("/v1/suites").json(),
        json!({"suites": ["again", "capitals"]})
    );
    let jsonl = std::fs::read(ws.path("data.jsonl")).expect("data.jsonl");
    assert_eq!(server.post("/v1/suites/again/grade", &jsonl).status, 200);
}

/// OpenAI's `openai` package, pointed at the server, runs and validates grader objects of
/// every type gavel runs (tests/serve/openai_graders.py); a Python grader it posts reaches no
/// file, variable or socket of the server's.
#[test]
fn openais_client_runs_and_validates_grader_objects() {
    let Some(python) = crate::common::peer_python("OpenAI's client") else {
        return;
    };
    let token = "t0ken-of-the-graders-test";
    let Some((ws, server)) = hostile_server(
        &[("h", &graders(&["fair"]))],
        1,
        &[],
        &[
            ("GAVEL_SERVE_TOKEN", token),
            ("GAVEL_PROBE_SECRET", "the-server's-secret"),
        ],
    ) else {
        return;
    };
    ws.write("readable.txt", "the server's file");
    let script =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/serve/openai_graders.py");
    let out = std::process::Command::new(&python)
        .arg(&script)
        .arg(format!("http://{}/v1", server.addr))
        .arg(token)
        .arg(ws.path("readable.txt"))
        .env_remove("OPENAI_API_KEY")
        .env_remove("OPENAI_BASE_URL")
        .output()
        .expect("the client runs");
    let said = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success(), "{said}");
    assert!(said.contains("ok python_reaches_nothing"), "{said}");
    assert!(said.contains("ok multi_with_python"), "{said}");
    let bearer = format!("Bearer {token}");
    let metrics = server.request("GET", "/metrics", &[("Authorization", &bearer)], b"");
    for line in [
        "gavel_serve_requests_total{route=\"graders_run\",code=\"400\"} 1",
        "gavel_serve_requests_total{route=\"graders_validate\",code=\"401\"} 1",
    ] {
        assert!(metrics.text().lines().any(|l| l == line), "{line}");
    }
}

/// `gavel serve` of the suite `caps` in `ws`, whose model graders ask the endpoint at
/// `base_url` with the tests' key.
fn judged_server(ws: &Workspace, base_url: &str) -> Server {
    let args = [
        "--suite",
        "caps=suite.yaml",
        "--judge-base-url",
        base_url,
        "--judge-api-key-env",
        "JUDGE_KEY",
    ];
    Server::start(ws, &args, &[("JUDGE_KEY", crate::judge::KEY)])
}

/// A score_model posted to graders/run asks the endpoint the server was started with, with
/// its key; without one it is refused, naming the field. Its messages are OpenAI's: a content
/// is a text or a list of text parts.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn posted_model_graders_ask_only_the_servers_judge_endpoint() {
    let model =
        crate::openai_server::Server::start(|_, request| crate::openai_graders::answer(request))
            .await;
    let grader = json!({
        "type": "score_model",
        "name": "score",
        "model": "gpt-4o-mini",
        "input": [
            {"role": "system", "content": [{"type": "input_text", "text": "Grade the answer."}]},
            {"role": "user", "content": [
                {"type": "input_text", "text": "Question: {{item.question}}"},
                {"type": "input_text", "text": "Answer: {{sample.output_text}}"},
            ]},
        ],
        "range": [0, 10],
        "pass_threshold": 5,
    });
    let body = json!({"grader": grader, "model_sample": "Paris", "item": {"question": "Capital?"}})
        .to_string();
    let (ws, _) = capitals();
    let base_url = model.base_url();
    let (asked, refused) = tokio::task::spawn_blocking(move || {
        let server = judged_server(&ws, &base_url);
        let asked = server.post("/v1/fine_tuning/alpha/graders/run", body.as_bytes());
        let bare = Server::start(&ws, &["--suite", "caps=suite.yaml"], &[]);
        let refused = bare.post("/v1/fine_tuning/alpha/graders/run", body.as_bytes());
        (asked, refused)
    })
    .await
    .expect("the requests end");
    assert_eq!(asked.status, 200, "{}", asked.text());
    let answer = asked.json();
    assert_eq!(answer["reward"], json!(8.0), "{answer}");
    assert_eq!(answer["metadata"]["sampled_model_name"], "gpt-4o-mini");
    let requests = model.requests();
    assert_eq!(requests.len(), 1);
    let sent = requests[0].json();
    assert_eq!(
        sent["messages"][0]["content"], "Grade the answer.",
        "{sent}"
    );
    assert_eq!(
        sent["messages"][1]["content"], "Question: Capital?\nAnswer: Paris",
        "{sent}"
    );
    assert_eq!(
        requests[0].header("authorization"),
        Some(format!("Bearer {}", crate::judge::KEY).as_str())
    );
    assert_eq!(refused.status, 400, "{}", refused.text());
    let error = &refused.json()["error"];
    assert_eq!(error["param"], "grader.model", "{error}");
    assert_eq!(error["type"], "invalid_request_error");
    assert!(
        error["message"]
            .as_str()
            .unwrap()
            .contains("--judge-base-url"),
        "{error}"
    );
}

/// A model one request names and the endpoint does not have (404) fails that request alone:
/// the next request, naming a model it has, is answered, and nothing of the first's failure
/// reaches it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_requests_missing_model_does_not_take_the_judge_down_for_the_next() {
    use crate::openai_server::Reply;
    let model = crate::openai_server::Server::start(|_, request| {
        if request.json()["model"] == "bogus" {
            Reply::status(
                404,
                r#"{"error": {"message": "The model `bogus` does not exist"}}"#,
            )
        } else {
            crate::openai_graders::answer(request)
        }
    })
    .await;
    let body = |name: &str| {
        json!({
            "grader": {
                "type": "score_model",
                "name": "score",
                "model": name,
                "input": [{"role": "user", "content": "Answer: {{sample.output_text}}"}],
                "range": [0, 10],
            },
            "model_sample": "Paris",
            "item": {},
        })
        .to_string()
    };
    let (ws, _) = capitals();
    let base_url = model.base_url();
    let (missing, answered) = tokio::task::spawn_blocking(move || {
        let server = judged_server(&ws, &base_url);
        let run = "/v1/fine_tuning/alpha/graders/run";
        let missing = server.post(run, body("bogus").as_bytes());
        let answered = server.post(run, body("gpt-4o-mini").as_bytes());
        (missing, answered)
    })
    .await
    .expect("the requests end");
    assert_eq!(missing.status, 200, "{}", missing.text());
    let failed = missing.json();
    assert_eq!(failed["reward"], json!(0.0), "{failed}");
    assert!(
        failed["metadata"]["errors"]["model_grader_server_error_details"]
            .as_str()
            .is_some_and(|d| d.contains("`bogus` does not exist")),
        "{failed}"
    );
    assert_eq!(answered.status, 200, "{}", answered.text());
    let answer = answered.json();
    assert_eq!(answer["reward"], json!(8.0), "{answer}");
    assert_eq!(
        answer["metadata"]["errors"]["model_grader_server_error"],
        json!(false),
        "{answer}"
    );
    assert_eq!(model.requests().len(), 2, "the second request was sent");
}

/// The body limit binds OpenAI's routes as the others, each answered in its own error shape.
#[test]
fn openais_routes_are_bounded_and_answer_openais_error_object() {
    let (ws, _) = capitals();
    let server = Server::start(
        &ws,
        &["--suite", "caps=suite.yaml", "--max-body", "100"],
        &[],
    );
    let large = json!({"grader": {"type": "string_check", "name": "x".repeat(200)}}).to_string();
    let reply = server.post("/v1/fine_tuning/alpha/graders/validate", large.as_bytes());
    assert_eq!(reply.status, 413, "{}", reply.text());
    let error = &reply.json()["error"];
    assert!(
        error["message"].as_str().unwrap().contains("100 bytes"),
        "{error}"
    );
    assert_eq!(error["type"], "invalid_request_error");
    assert_eq!(error["param"], Value::Null);
    let reply = server.post("/v1/suites/caps/grade", large.as_bytes());
    assert_eq!(reply.status, 413);
    assert!(reply.json()["error"].is_string(), "{}", reply.text());
    let reply = server.get("/v1/fine_tuning/alpha/graders/run");
    assert_eq!(reply.status, 405);
    assert_eq!(reply.header("allow").as_deref(), Some("POST"));
    assert!(
        (reply.json()["error"]["message"].as_str()).is_some_and(|m| m.ends_with(": send POST")),
        "{}",
        reply.text()
    );
    let reply = server.post("/healthz", b"");
    assert_eq!(reply.status, 405);
    assert_eq!(reply.header("allow").as_deref(), Some("GET, HEAD"));
    // A request is an object: a list is not read as its fields in order, and a field missing
    // or of another type is the error's `param`.
    let run = "/v1/fine_tuning/alpha/graders/run";
    let grader = json!({"type": "x"});
    for (body, param) in [
        (json!([grader, "Paris", null]), Value::Null),
        (json!({"grader": grader}), json!("model_sample")),
        (
            json!({"grader": grader, "model_sample": 5}),
            json!("model_sample"),
        ),
    ] {
        let reply = server.post(run, body.to_string().as_bytes());
        assert_eq!(reply.status, 400, "{body}: {}", reply.text());
        let error = &reply.json()["error"];
        assert_eq!(error["param"], param, "{body}: {error}");
        assert!(!error.to_string().contains("RunBody"), "{error}");
    }
}

/// A posted `multi` whose sub-graders outlast the request's deadline is answered `504` at the
/// deadline, and its grading stops there too rather than run on unseen: told to stop, the server
/// exits at once instead of once 5,000 long comparisons are done (minutes of a core).
#[test]
fn a_posted_multi_past_its_deadline_stops_grading_there() {
    let (ws, _) = capitals();
    let args = ["--suite", "caps=suite.yaml", "--deadline", "2"];
    let mut server = Server::start(&ws, &args, &[]);
    let text: String = (0..20_000u32)
        .map(|i| char::from(b'a' + (i * 7 % 11) as u8))
        .collect();
    let reversed: String = text.chars().rev().collect();
    let graders: serde_json::Map<String, Value> = (0..5_000)
        .map(|i| {
            let similar = json!({"type": "text_similarity", "input": "{{sample.output_text}}",
                "reference": "{{item.r}}", "evaluation_metric": "fuzzy_match",
                "pass_threshold": 0.5});
            (format!("s{i}"), similar)
        })
        .collect();
    let body = json!({
        "grader": {"type": "multi", "name": "m", "graders": graders, "calculate_output": "s0"},
        "model_sample": text,
        "item": {"r": reversed},
    });
    let path = "/v1/fine_tuning/alpha/graders/run";
    let reply = server.post(path, body.to_string().as_bytes());
    assert_eq!(reply.status, 504, "{}", reply.text());
    let code = server.terminated_within(
        Duration::from_secs(120),
        "the server still grades the request answered 504",
    );
    let log = server.log.take().expect("the log").finish();
    assert_eq!(code, Some(0), "{log}");
}

/// A posted `python` grader whose code does not load is a `400` at `grader.source` naming the
/// line of the source posted, not the folder or suite the server made for it.
#[test]
fn a_posted_python_graders_mistake_is_said_at_its_own_line() {
    let Some((_ws, server)) = hostile_server(&[("h", &graders(&["fair"]))], 1, &[], &[]) else {
        return;
    };
    let path = "/v1/fine_tuning/alpha/graders/run";
    for (source, said) in [
        (
            "def grade(sample, item):\n    return (\n",
            "grader.source: line 2: SyntaxError: '(' was never closed",
        ),
        (
            "x = 1\n",
            "grader.source: module 'openai_grader_grader' has no attribute 'grade'. Available: x",
        ),
    ] {
        let body = json!({"grader": {"type": "python", "name": "p", "source": source},
            "model_sample": "x"});
        let reply = server.post(path, body.to_string().as_bytes());
        assert_eq!(reply.status, 400, "{}", reply.text());
        let error = &reply.json()["error"];
        assert_eq!(error["message"], said, "{error}");
        assert_eq!(error["param"], "grader.source", "{error}");
    }
}

/// A client that closes its side of the connection once its request is sent (as `nc -N` does)
/// is answered all the same.
#[test]
fn a_client_that_half_closes_after_its_request_is_answered() {
    let (ws, _) = capitals();
    let server = Server::start(&ws, &["--suite", "caps=suite.yaml"], &[]);
    let jsonl = std::fs::read(ws.path("data.jsonl")).expect("data.jsonl");
    let stream = server.posted("/v1/suites/caps/grade", &jsonl);
    stream
        .shutdown(std::net::Shutdown::Write)
        .expect("our side closed");
    let reply = read_reply(stream);
    assert_eq!(reply.status, 200, "{}", reply.text());
    assert_eq!(reply.text().lines().count(), 4);
}

/// A grader object holding more `python` graders than one request may prepare is refused at
/// `grader.graders`, before any is compiled.
#[test]
fn a_multi_of_too_many_python_graders_is_refused() {
    let (ws, _) = capitals();
    let server = Server::start(&ws, &["--suite", "caps=suite.yaml"], &[]);
    let graders: serde_json::Map<String, Value> = (0..9)
        .map(|i| {
            let source = format!("def grade(sample, item):\n    return {i} / 10\n");
            (format!("p{i}"), json!({"type": "python", "source": source}))
        })
        .collect();
    let body = json!({
        "grader": {"type": "multi", "name": "m", "graders": graders, "calculate_output": "p0"},
        "model_sample": "x",
    });
    for route in ["run", "validate"] {
        let mut body = body.clone();
        if route == "validate" {
            body.as_object_mut().unwrap().remove("model_sample");
        }
        let path = format!("/v1/fine_tuning/alpha/graders/{route}");
        let reply = server.post(&path, body.to_string().as_bytes());
        assert_eq!(reply.status, 400, "{}", reply.text());
        let error = &reply.json()["error"];
        assert_eq!(error["param"], "grader.graders", "{error}");
        let message = error["message"].as_str().unwrap();
        assert!(
            message.contains("at most 8 `python` graders") && message.contains("holds 9"),
            "{message}"
        );
    }
}

/// A posted Python grader runs with the default limits: one that spins runs out of fuel, its
/// own runtime error, and the server answers the next request.
#[test]
fn a_posted_python_grader_that_spins_ends_at_the_default_limits() {
    let Some((_ws, server)) = hostile_server(&[("h", &graders(&["fair"]))], 1, &[], &[]) else {
        return;
    };
    let spin = json!({
        "grader": {"type": "python", "name": "spin", "source": "def grade(sample, item):\n    while True:\n        pass\n"},
        "model_sample": "x",
    });
    let path = "/v1/fine_tuning/alpha/graders/run";
    let reply = server.post(path, spin.to_string().as_bytes());
    assert_eq!(reply.status, 200, "{}", reply.text());
    let errors = &reply.json()["metadata"]["errors"];
    assert_eq!(errors["python_grader_runtime_error"], true, "{errors}");
    assert_eq!(
        errors["python_grader_runtime_error_details"],
        "fuel exhausted"
    );
    let check = json!({
        "grader": {"type": "string_check", "name": "c", "input": "{{sample.output_text}}", "reference": "x", "operation": "eq"},
        "model_sample": "x",
    });
    let reply = server.post(path, check.to_string().as_bytes());
    assert_eq!(reply.status, 200, "{}", reply.text());
    assert_eq!(reply.json()["reward"], json!(1.0));
}

/// A posted `multi` runs its `python` sub-grader in the sandbox, its score in the formula; one
/// that raises is the multi's runtime error, flagged as a python grader's is.
#[test]
fn a_posted_multi_runs_its_python_sub_grader() {
    let Some((_ws, server)) = hostile_server(&[("h", &graders(&["fair"]))], 1, &[], &[]) else {
        return;
    };
    let multi = |source: &str| {
        json!({
            "grader": {"type": "multi", "name": "blend", "graders": {
                "exact": {"type": "string_check", "input": "{{sample.output_text}}", "reference": "{{item.city}}", "operation": "eq"},
                "length": {"type": "python", "image_tag": "2025-05-08", "source": source},
            }, "calculate_output": "0.5 * exact + 0.5 * length"},
            "model_sample": "Rome",
            "item": {"city": "Paris"},
        })
        .to_string()
    };
    let path = "/v1/fine_tuning/alpha/graders/run";
    let length = "def grade(sample, item):\n    return len(sample['output_text']) / 8\n";
    let reply = server.post(path, multi(length).as_bytes());
    assert_eq!(reply.status, 200, "{}", reply.text());
    let answer = reply.json();
    // 0.5 * 0 + 0.5 * (4 / 8).
    assert_eq!(answer["reward"], json!(0.25), "{answer}");
    assert_eq!(answer["sub_rewards"], json!({"exact": 0.0, "length": 0.5}));
    let raising = "def grade(sample, item):\n    raise ValueError('no verdict')\n";
    let reply = server.post(path, multi(raising).as_bytes());
    assert_eq!(reply.status, 200, "{}", reply.text());
    let answer = reply.json();
    let errors = &answer["metadata"]["errors"];
    assert_eq!(answer["reward"], json!(0.0), "{answer}");
    assert_eq!(errors["python_grader_runtime_error"], true, "{errors}");
    let details = errors["python_grader_runtime_error_details"]
        .as_str()
        .unwrap();
    assert!(details.contains("ValueError: no verdict"), "{details}");
    // Said at the line of the source posted, not in the words of the suite made for it.
    assert!(
        details.starts_with("ValueError: no verdict (at line 2)"),
        "{details}"
    );
    // A formula that divides by zero is only flagged in OpenAI's answer; the log says why.
    let dividing = multi(length).replace("0.5 * exact + 0.5 * length", "length / exact");
    let reply = server.post(path, dividing.as_bytes());
    assert_eq!(reply.status, 200, "{}", reply.text());
    assert_eq!(reply.json()["metadata"]["errors"]["other_error"], true);
    let (_, log) = server.terminate();
    let logged: Vec<Value> = (log.lines())
        .filter_map(|line| serde_json::from_str(line).ok())
        .filter(|line: &Value| line["status"] == 200)
        .collect();
    assert_eq!(logged.len(), 3, "{log}");
    assert_eq!(logged[0].get("error"), None, "{log}");
    let said = |line: &Value| line["error"].as_str().unwrap_or_default().to_string();
    assert!(said(&logged[1]).starts_with("`length`: "), "{log}");
    assert!(said(&logged[1]).contains("ValueError: no verdict"), "{log}");
    assert!(said(&logged[2]).starts_with("calculate_output"), "{log}");
}

/// A request sent on `stream` and its answer read (its status and body), the connection kept
/// open.
fn keep_alive(stream: &mut TcpStream, method: &str, path: &str, body: &[u8]) -> (u16, Vec<u8>) {
    let head = format!(
        "{method} {path} HTTP/1.1\r\nHost: test\r\nContent-Length: {}\r\n\r\n",
        body.len()
    );
    // In one write: a body sent after its head would wait for the head's acknowledgement.
    stream
        .write_all(&[head.as_bytes(), body].concat())
        .expect("request sent");
    let mut reader = BufReader::new(stream.try_clone().expect("clone"));
    let (mut status, mut length) = (0, 0);
    loop {
        let mut line = String::new();
        reader.read_line(&mut line).expect("a head line");
        if line == "\r\n" {
            break;
        }
        if status == 0 {
            status = line
                .split(' ')
                .nth(1)
                .and_then(|s| s.parse().ok())
                .unwrap_or(0);
        } else if let Some((name, value)) = line.split_once(':')
            && name.eq_ignore_ascii_case("content-length")
        {
            length = value.trim().parse().expect("a length");
        }
    }
    let mut body = vec![0; length];
    reader.read_exact(&mut body).expect("the body");
    (status, body)
}

/// Clients holding connections open take no more than `--max-connections`: past them a new
/// connection's request is answered `503` with `Retry-After` and closed, and a place freed is
/// taken again.
#[test]
fn connections_past_the_cap_are_answered_503_and_closed() {
    let (ws, _) = capitals();
    let server = Server::start(
        &ws,
        &["--suite", "caps=suite.yaml", "--max-connections", "2"],
        &[],
    );
    // Two clients that stay connected once answered, as idle keep-alive clients do.
    let mut held: Vec<TcpStream> = (0..2).map(|_| server.connect()).collect();
    for stream in &mut held {
        assert_eq!(keep_alive(stream, "GET", "/healthz", b"").0, 200);
    }
    let refused = server.get("/healthz");
    assert_eq!(refused.status, 503, "{}", refused.text());
    assert_eq!(refused.header("retry-after").as_deref(), Some("1"));
    assert!(
        refused
            .text()
            .contains("2 connections open, its --max-connections"),
        "{}",
        refused.text()
    );
    drop(held);
    // The server frees the places once it sees the two connections closed.
    let status = (0..1000)
        .map(|_| {
            let status = server.get("/healthz").status;
            if status != 200 {
                std::thread::sleep(Duration::from_millis(10));
            }
            status
        })
        .find(|&status| status == 200);
    assert_eq!(status, Some(200));
}

/// The Python interpreter is loaded as the server starts: one that cannot be loaded is said
/// then, before the server listens, and the server still answers everything else.
#[test]
fn an_interpreter_that_cannot_load_is_said_at_start() {
    let (ws, _) = capitals();
    let missing = ws.path("no-interpreter.wasm");
    let server = Server::start(
        &ws,
        &["--suite", "caps=suite.yaml", "--load-python", "start"],
        &[("GAVEL_PYTHON_COMPONENT", missing.to_str().unwrap())],
    );
    assert_eq!(server.get("/healthz").status, 200);
    let (code, stderr) = server.terminate();
    assert_eq!(code, Some(0), "{stderr}");
    assert!(
        stderr.contains(&format!(
            "warning: python graders posted to graders/run will be refused: \
             $GAVEL_PYTHON_COMPONENT names {}, which does not exist",
            missing.display()
        )),
        "{stderr}"
    );
}

/// A loaded suite's Python grader keeps its warm instance from one request to the next, as the
/// peers' reward servers keep their module (a global lasts until the instance is replaced); an
/// `isolation: sample` suite's calls each start afresh; and a grader posted to graders/run,
/// which anyone may send, never meets an instance another request used.
#[test]
fn warm_instances_cross_a_suites_requests_but_never_a_posted_graders() {
    let warm = graders(&["counts"]);
    let fresh = format!("isolation: sample\n{warm}");
    let suites = [("warm", warm.as_str()), ("fresh", fresh.as_str())];
    let Some((_ws, server)) = hostile_server(&suites, 1, &[], &[]) else {
        return;
    };
    let line = paris_row(1, "Paris").to_string() + "\n";
    let counted = |suite: &str| -> Vec<Value> {
        (0..3)
            .map(|_| {
                let reply = server.post(&format!("/v1/suites/{suite}/grade"), line.as_bytes());
                assert_eq!(reply.status, 200, "{}", reply.text());
                let result: Value = serde_json::from_str(&reply.text()).expect("a result");
                result["grades"]["counts"]["score"].clone()
            })
            .collect()
    };
    assert_eq!(counted("warm"), [json!(0.01), json!(0.02), json!(0.03)]);
    assert_eq!(counted("fresh"), [json!(0.01), json!(0.01), json!(0.01)]);
    let source = "CALLS = []\n\ndef grade(sample, item):\n    CALLS.append(1)\n    return len(CALLS) / 100\n";
    let posted = json!({
        "grader": {"type": "python", "name": "counts", "source": source},
        "model_sample": "x",
    })
    .to_string();
    for _ in 0..3 {
        let reply = server.post("/v1/fine_tuning/alpha/graders/run", posted.as_bytes());
        assert_eq!(reply.status, 200, "{}", reply.text());
        assert_eq!(reply.json()["reward"], json!(0.01), "{}", reply.text());
    }
}

/// A request's rows read in memory come back whole and in order however many batches of the
/// engine they fill (three here), each graded as `gavel run` grades it.
#[test]
fn a_request_of_several_batches_is_answered_whole_and_in_order() {
    let (ws, _) = capitals();
    let server = Server::start(&ws, &["--suite", "caps=suite.yaml"], &[]);
    let rows: String = (0..300)
        .map(|i| row(if i % 3 == 0 { "Lyon" } else { "It is Paris." }).to_string() + "\n")
        .collect();
    let reply = server.post("/v1/suites/caps/grade", rows.as_bytes());
    assert_eq!(reply.status, 200, "{}", reply.text());
    let results = reply.results();
    assert_eq!(results.len(), 300);
    for (i, result) in results.iter().enumerate() {
        assert_eq!(result["sample_id"], json!(i), "{result}");
        let want = if i % 3 == 0 { 0.0 } else { 1.0 };
        assert_eq!(result["reward"], json!(want), "{result}");
    }
}

/// The warm instances of `suite`'s Python graders started so far at `place` (`ahead` or
/// `request`), as `/metrics` counts them.
fn warm_started(server: &Server, suite: &str, place: &str) -> u64 {
    let name =
        format!("gavel_serve_warm_instances_started_total{{suite=\"{suite}\",where=\"{place}\"}} ");
    let metrics = server.get("/metrics").text();
    (metrics.lines())
        .find_map(|l| l.strip_prefix(name.as_str())?.parse().ok())
        .unwrap_or_else(|| panic!("no {name}in {metrics}"))
}

/// A loaded suite's warm instance is started before the first request, and replaced, once its
/// calls (`--warm-calls` of them) spent it, ahead of the next request: the replacement is
/// started off the request's path and waits for it, afresh (its module state new). No request
/// starts one.
#[test]
fn a_spent_warm_instance_is_replaced_ahead_of_the_next_request() {
    const CALLS: usize = 40;
    let warm = graders(&["tally"]);
    let bound = CALLS.to_string();
    let args = ["--warm-calls", &bound];
    let Some((_ws, server)) = hostile_server(&[("warm", &warm)], 1, &args, &[]) else {
        return;
    };
    let line = paris_row(1, "Paris").to_string() + "\n";
    let grade = || {
        let reply = server.post("/v1/suites/warm/grade", line.as_bytes());
        assert_eq!(reply.status, 200, "{}", reply.text());
        let result: Value = serde_json::from_str(&reply.text()).expect("a result");
        result["grades"]["tally"]["score"]
            .as_f64()
            .expect("a score")
    };
    let mut scores: Vec<f64> = (0..CALLS).map(|_| grade()).collect();
    // The instance's replacement is loading on another thread, started before its last call
    // spent it.
    let started = |place: &str| warm_started(&server, "warm", place);
    // Besides the one started before the server listened.
    let replaced = (0..120).any(|_| {
        let seen = started("ahead") >= 2;
        if !seen {
            std::thread::sleep(Duration::from_secs(1));
        }
        seen
    });
    assert!(replaced, "no replacement was started ahead");
    scores.extend((0..4).map(|_| grade()));
    let want: Vec<f64> = (1..=CALLS)
        .chain(1..=4)
        .map(|n| n as f64 / 1000.0)
        .collect();
    assert_eq!(scores, want);
    assert_eq!(started("request"), 0);
}

/// The server logs each request, a line on its stderr, and goes on answering however many it
/// logged: a client's 2,000 requests on one connection (far more lines than a pipe holds) are
/// each answered with its own grade, and the log has a line for each.
#[test]
fn a_long_run_of_requests_on_one_connection_is_answered_whole() {
    const REQUESTS: usize = 2000;
    let (ws, _) = capitals();
    let server = Server::start(&ws, &["--suite", "caps=suite.yaml"], &[]);
    let mut stream = server.connect();
    for i in 0..REQUESTS {
        let (answer, want) = if i % 3 == 0 {
            ("Lyon", 0.0)
        } else {
            ("It is Paris.", 1.0)
        };
        let line = row(answer).to_string() + "\n";
        let (status, body) = keep_alive(
            &mut stream,
            "POST",
            "/v1/suites/caps/grade",
            line.as_bytes(),
        );
        let text = String::from_utf8_lossy(&body);
        assert_eq!(status, 200, "request {i}: {text}");
        let result: Value = serde_json::from_str(&text).expect("a result");
        assert_eq!(result["reward"], json!(want), "request {i}: {result}");
    }
    drop(stream);
    let (code, log) = server.terminate();
    assert_eq!(code, Some(0), "{log}");
    let graded = (log.lines())
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|l| l["route"] == "grade" && l["suite"] == "caps" && l["status"] == 200)
        .count();
    assert_eq!(graded, REQUESTS, "{log}");
}

/// A Python grader whose module loads only while the file `state` of the folder it is granted
/// says `ok`, and whose grade counts the calls made in its instance.
const LOADS: &str = "from letta_evals.decorators import grader
from letta_evals.models import GradeResult

with open('state') as state:
    if state.read() != 'ok':
        raise RuntimeError('the state file says no')

CALLS = []


@grader
def tally(sample, submission):
    CALLS.append(1)
    return GradeResult(score=len(CALLS) / 1000, rationale='calls made in this instance')
";

/// A spent warm instance's replacement whose load fails (its module raises at import) is not
/// kept: the next request starts its own instance, which reports the load's error as a first
/// load does, and once the module loads again the requests are answered, afresh.
#[test]
fn a_replacement_that_does_not_load_is_not_kept() {
    let ws = Workspace::new();
    ws.write("loads.py", LOADS);
    let state = ws.write("granted/state", "ok");
    let suite = "allow:\n  files: [granted/]\n\
                 graders:\n  tally:\n    kind: tool\n    function: loads.py:tally\n";
    let args = ["--warm-calls", "3"];
    let Some(server) = hostile_server_in(&ws, &[("warm", suite)], 1, &args, &[]) else {
        return;
    };
    let line = paris_row(1, "Paris").to_string() + "\n";
    let grade = || -> Value {
        let reply = server.post("/v1/suites/warm/grade", line.as_bytes());
        assert_eq!(reply.status, 200, "{}", reply.text());
        let result: Value = serde_json::from_str(&reply.text()).expect("a result");
        result["grades"]["tally"].clone()
    };
    let score = |grade: Value| grade["score"].as_f64().unwrap_or_else(|| panic!("{grade}"));
    let mut scores = vec![score(grade()), score(grade())];
    std::fs::write(&state, "no").expect("state written");
    // The instance's third call spends it, and its replacement, started then, cannot load.
    scores.push(score(grade()));
    assert_eq!(scores, [0.001, 0.002, 0.003]);
    // The next request waits for that replacement's start to end, finds none kept, and
    // starts its own, whose load fails as a first one does.
    let failed = grade();
    assert_eq!(failed["status"], "error", "{failed}");
    assert!(
        failed
            .to_string()
            .contains("RuntimeError: the state file says no"),
        "{failed}"
    );
    assert_eq!(warm_started(&server, "warm", "request"), 1);
    std::fs::write(&state, "ok").expect("state written");
    let scores: Vec<f64> = (0..3).map(|_| score(grade())).collect();
    assert_eq!(scores, [0.001, 0.002, 0.003]);
}
