//! A judge endpoint that fails every request (never answers, answers 500) stops the run after a
//! few requests, not after every sample's retries; one that fails now and then does not; and the
//! run's `--concurrency` bounds the requests in flight to it.

use std::time::Duration;

use crate::common::{Workspace, stderr};
use crate::judge::{JUDGED_SUITE, KEY, gavel, judged_rows};
use crate::openai_server::{Reply, Server};

/// Failures alike in a row that take an endpoint as down (`FAILURES_DOWN` in
/// host/src/grade/judge/http.rs).
const FAILURES_DOWN: usize = 5;

/// The judged suite against `server`, with `changes` made to its text.
fn workspace(server: &Server, rows: usize, changes: &[(&str, &str)]) -> Workspace {
    let ws = Workspace::new();
    let mut suite = JUDGED_SUITE.replace("BASE_URL", &server.base_url());
    for (from, to) in changes {
        assert!(suite.contains(from), "the suite has {from}");
        suite = suite.replace(from, to);
    }
    ws.write("suite.yaml", &suite);
    judged_rows(&ws, rows);
    ws
}

async fn run(ws: &Workspace, extra: &[&str]) -> std::process::Output {
    let args = [
        &["run", "suite.yaml", "-q", "--no-cache", "-o", "out"],
        extra,
    ]
    .concat();
    gavel(ws, &args, &[("OPENAI_API_KEY", KEY)]).await
}

/// An endpoint that takes every request and never answers: the run stops with exit 2 after
/// about five timeouts (the judge's concurrency is 2: the requests already on their way time
/// out too), not after every sample's three attempts.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_judge_that_never_answers_stops_the_run() {
    let server = Server::always(Reply::Silent).await;
    let ws = workspace(&server, 12, &[("timeout: 5", "timeout: 0.3")]);
    let stopped = run(&ws, &[]).await;
    let err = stderr(&stopped);
    assert_eq!(stopped.status.code(), Some(2), "{err}");
    assert!(
        err.contains("judge `quality` cannot be used, and no more requests were sent to it"),
        "{err}"
    );
    assert!(err.contains(&server.base_url()), "{err}");
    assert!(
        err.contains("did not answer 5 requests in a row within the timeout of 0.3s"),
        "{err}"
    );
    let sent = server.request_count();
    assert!(
        (FAILURES_DOWN..=FAILURES_DOWN + 2).contains(&sent),
        "{sent} requests"
    );
    assert!(ws.results("out").is_empty());
}

/// An endpoint that answers 500 to everything: exit 2 after five requests (and those already
/// on their way), with the status and the start of what it said.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_judge_answering_500_stops_the_run() {
    let said: String = "upstream exploded; ".repeat(20);
    let server = Server::always(Reply::status(500, &said)).await;
    let ws = workspace(&server, 20, &[]);
    let stopped = run(&ws, &[]).await;
    let err = stderr(&stopped);
    assert_eq!(stopped.status.code(), Some(2), "{err}");
    assert!(err.contains(&server.base_url()), "{err}");
    let quoted: String = said.chars().take(200).collect();
    let message = format!(
        "answered HTTP 500 Internal Server Error to 5 requests in a row: {}\n",
        quoted.trim()
    );
    assert!(err.contains(&message), "{err}");
    let sent = server.request_count();
    assert!(
        (FAILURES_DOWN..=FAILURES_DOWN + 2).contains(&sent),
        "{sent} requests"
    );
}

/// An endpoint that fails four times in a row, twice, and then answers: every sample is
/// graded, each failure retried, and the run passes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_flapping_judge_does_not_stop_the_run() {
    let server = Server::start(|i, _| {
        if i < 10 && i % 5 != 4 {
            Reply::status(503, r#"{"error": {"message": "overloaded"}}"#)
        } else {
            Reply::verdict(0.9, "fine")
        }
    })
    .await;
    let ws = workspace(&server, 10, &[("max_retries: 2", "max_retries: 4")]);
    let done = run(&ws, &["--concurrency", "1"]).await;
    assert_eq!(done.status.code(), Some(0), "{}", stderr(&done));
    let results = ws.results("out");
    assert_eq!(results.len(), 10);
    assert!(
        results
            .iter()
            .all(|r| r["grades"]["quality"]["status"] == "pass"),
        "{results:?}"
    );
    assert_eq!(server.request_count(), 18, "ten samples and eight retries");
}

/// `--concurrency N` bounds the requests in flight to a judge whose own `concurrency:` is
/// larger.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrency_bounds_the_requests_in_flight() {
    for n in [1, 3] {
        let server =
            Server::always(Reply::verdict(0.9, "fine").after(Duration::from_millis(200))).await;
        let ws = workspace(&server, 12, &[("concurrency: 2", "concurrency: 16")]);
        let done = run(&ws, &["--concurrency", &n.to_string()]).await;
        assert_eq!(done.status.code(), Some(0), "{}", stderr(&done));
        assert_eq!(server.request_count(), 12);
        assert_eq!(server.max_in_flight(), n, "--concurrency {n}");
    }
}

/// An endpoint that answers every request, never with a verdict: every judge grade is an error,
/// and a run without a gate (which would exit 0) exits 2 naming the judge and the first
/// reason, its results kept.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_judge_that_grades_nothing_fails_the_run() {
    let server = Server::always(Reply::completion("I think it deserves a good score.")).await;
    let gate = &JUDGED_SUITE[JUDGED_SUITE.find("gate:").expect("a gate")..];
    let ws = workspace(&server, 4, &[(gate, "")]);
    let failed = run(&ws, &[]).await;
    let err = stderr(&failed);
    assert_eq!(failed.status.code(), Some(2), "{err}");
    assert!(
        err.contains("judge `quality` answered none of the 4 gradings it was asked for"),
        "{err}"
    );
    assert!(err.contains("the first: "), "{err}");
    let results = ws.results("out");
    assert_eq!(results.len(), 4);
    assert!(
        results
            .iter()
            .all(|r| r["grades"]["quality"]["status"] == "error"),
        "{results:?}"
    );
    assert_eq!(server.request_count(), 4, "an answer is not retried");
}
