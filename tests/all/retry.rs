//! `--retry-errors` grades again only what is in error in a finished run, keeps every other
//! line as it was, and ends with the files a run without those errors writes.

use std::process::{Command, Output, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;

use serde_json::json;

use crate::common::{Workspace, gavel_with_env, stderr};
use crate::openai_server::{Recorded, Reply, Server};
use crate::resume::{FOREIGN_LINES, SUITE, with_second_line, workspace};

const ROWS: usize = 12;

/// Two judges and a built-in; each judge's prompt names its grader and the sample's answer.
pub(crate) fn judged_workspace(base_url: &str) -> Workspace {
    let ws = Workspace::new();
    let judge = |name: &str| {
        format!(
            "  {name}:\n    kind: rubric\n    prompt: '{name} of {{submission}}'\n    model: m\n    \
             base_url: {base_url}\n    max_retries: 0\n    concurrency: 2\n"
        )
    };
    ws.write(
        "suite.yaml",
        &format!(
            "name: retried\ndataset: data.jsonl\ngraders:\n{}{}  correct:\n    kind: tool\n    \
             function: contains\n",
            judge("quality"),
            judge("tone")
        ),
    );
    let rows: Vec<_> = (0..ROWS)
        .map(|i| {
            json!({
                "id": i,
                "input": "Capital of France?",
                "ground_truth": "Paris",
                "trajectory": [[
                    {"id": "u", "date": "2026-01-01T00:00:00Z", "message_type": "user_message", "content": "Capital of France?"},
                    {"id": "a", "date": "2026-01-01T00:00:01Z", "message_type": "assistant_message", "content": format!("Answer {i}: Paris")}
                ]]
            })
        })
        .collect();
    ws.write_rows("data.jsonl", &rows);
    ws
}

/// Runs gavel off the test's runtime, which serves the judge.
pub(crate) async fn gavel(ws: &Workspace, args: &[&str]) -> Output {
    let dir = ws.dir.path().to_path_buf();
    let args: Vec<String> = args.iter().map(ToString::to_string).collect();
    tokio::task::spawn_blocking(move || {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        gavel_with_env(&dir, &args, &[("OPENAI_API_KEY", "sk-test")])
    })
    .await
    .expect("joined")
}

/// Runs `gavel run` of the judged workspace's suite into `out`: the whole dataset, or the
/// shard `I/N` given, regrading only the errored grades of `out` when `retry`.
pub(crate) async fn judged_run(
    ws: &Workspace,
    out: &str,
    shard: Option<&str>,
    retry: bool,
) -> Output {
    let mut args = vec!["run", "suite.yaml", "--no-cache", "-q", "-o", out];
    if let Some(shard) = shard {
        args.extend(["--shard", shard]);
    }
    if retry {
        args.push("--retry-errors");
    }
    gavel(ws, &args).await
}

/// The grader and the sample a judge request is for, as `quality 3`.
/// Whether `request` is one of the grades a judge fails first: the quality of samples 3 and 7,
/// the tone of 7.
pub(crate) fn fails_first(request: &Recorded) -> bool {
    ["quality 3", "quality 7", "tone 7"].contains(&asked(request).as_str())
}

/// A judge's reply: a 500 when `failed`, else a passing verdict.
pub(crate) fn judged(failed: bool) -> Reply {
    if failed {
        Reply::status(500, r#"{"error": {"message": "overloaded"}}"#)
    } else {
        Reply::verdict(1.0, "fine")
    }
}

fn asked(request: &Recorded) -> String {
    let prompt = request.prompt();
    let (grader, rest) = prompt.split_once(" of Answer ").expect("a rubric");
    let (sample, _) = rest.split_once(':').expect("an answer");
    format!("{grader} {sample}")
}

fn read(ws: &Workspace, path: &str) -> Vec<u8> {
    std::fs::read(ws.path(path)).expect("file exists")
}

/// A judge that fails some requests (quality of samples 3 and 7, tone of 7) until it recovers:
/// `--retry-errors` sends exactly those three requests again, keeps every other line and grade,
/// and ends with the results and the summary of a run that met no error.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn retry_errors_regrades_only_the_errored_grades() {
    let failing = Arc::new(AtomicBool::new(true));
    let flag = Arc::clone(&failing);
    let server = Server::start(move |_, request| {
        judged(fails_first(request) && flag.load(Ordering::SeqCst))
    })
    .await;
    let ws = judged_workspace(&server.base_url());
    let first = gavel(&ws, &["run", "suite.yaml", "-o", "out", "--no-cache", "-q"]).await;
    assert_eq!(first.status.code(), Some(0), "{}", stderr(&first));
    let errored: Vec<_> = ws
        .results("out")
        .iter()
        .filter(|r| r.get("error").is_some())
        .map(|r| r["sample_id"].clone())
        .collect();
    assert_eq!(
        errored,
        [json!(3), json!(7)],
        "the first run met the errors"
    );
    let before = String::from_utf8(read(&ws, "out/results.jsonl")).unwrap();

    failing.store(false, Ordering::SeqCst);
    let sent_before = server.request_count();
    let retried = gavel(
        &ws,
        &[
            "run",
            "suite.yaml",
            "-o",
            "out",
            "--no-cache",
            "--retry-errors",
        ],
    )
    .await;
    let err = stderr(&retried);
    assert_eq!(retried.status.code(), Some(0), "{err}");
    assert!(
        err.contains("retrying 3 errored grades of 2 samples"),
        "{err}"
    );
    let text = String::from_utf8_lossy(&retried.stdout);
    assert!(
        text.contains("12 samples: 12 passed, 0 failed, 0 errored"),
        "{text}"
    );
    let mut sent: Vec<String> = server.requests()[sent_before..].iter().map(asked).collect();
    sent.sort();
    assert_eq!(
        sent,
        ["quality 3", "quality 7", "tone 7"],
        "only errored grades are asked"
    );

    let after = String::from_utf8(read(&ws, "out/results.jsonl")).unwrap();
    let (before, after): (Vec<&str>, Vec<&str>) =
        (before.lines().collect(), after.lines().collect());
    assert_eq!(after.len(), ROWS);
    for (i, (was, is)) in before.iter().zip(&after).enumerate() {
        assert_eq!(i == 3 || i == 7, was != is, "line {i}: {was} -> {is}");
    }
    assert!(!ws.path("out/results.jsonl.retry").exists());
    let record: serde_json::Value = serde_json::from_slice(&read(&ws, "out/run.json")).unwrap();
    assert_eq!(record["progress"]["state"], "complete");
    let tokens = record["progress"]["judge_tokens"]
        .as_object()
        .expect("judge tokens");
    let grades: u64 = tokens.values().map(|t| t["grades"].as_u64().unwrap()).sum();
    assert_eq!(grades, 3, "the tokens are this run's: {tokens:?}");

    let clean = gavel(
        &ws,
        &["run", "suite.yaml", "-o", "clean", "--no-cache", "-q"],
    )
    .await;
    assert!(clean.status.success(), "{}", stderr(&clean));
    for file in ["results.jsonl", "summary.json"] {
        assert!(
            read(&ws, &format!("out/{file}")) == read(&ws, &format!("clean/{file}")),
            "{file} after --retry-errors differs from a clean run's"
        );
    }
}

/// A sample in error without a grade in error (here an internal error left no grades) is
/// graded whole; the other lines stay as they were.
#[test]
fn a_sample_in_error_is_graded_whole() {
    let ws = workspace(10);
    let clean = ws.gavel(&["run", "suite.yaml", "-o", "out", "-q"]);
    assert!(clean.status.success(), "{}", stderr(&clean));
    let whole = read(&ws, "out/results.jsonl");
    let summary = read(&ws, "out/summary.json");
    let text = String::from_utf8(whole.clone()).unwrap();
    let broken: String = text
        .split_inclusive('\n')
        .enumerate()
        .map(|(i, line)| {
            if i == 4 {
                "{\"sample_id\":4,\"grades\":{},\"error\":{\"category\":\"grading\",\"message\":\"internal error\"}}\n".to_string()
            } else {
                line.to_string()
            }
        })
        .collect();
    ws.write("out/results.jsonl", &broken);
    let retried = ws.gavel(&["run", "suite.yaml", "-o", "out", "--retry-errors"]);
    let err = stderr(&retried);
    assert!(retried.status.success(), "{err}");
    assert!(
        err.contains("retrying 2 errored grades of 1 sample\n"),
        "{err}"
    );
    assert!(read(&ws, "out/results.jsonl") == whole);
    assert!(read(&ws, "out/summary.json") == summary);
}

/// Nothing in error: nothing is graded or rewritten, and the exit code is the gate's.
#[test]
fn nothing_to_retry_grades_nothing_and_exits_with_the_gate() {
    let ws = workspace(6);
    // Two rows in three answer exactly: `exact` averages 1/3, under the gate.
    ws.write(
        "suite.yaml",
        &format!("{SUITE}gate: {{kind: simple, metric_key: exact, op: gte, value: 0.5}}\n"),
    );
    let first = ws.gavel(&["run", "suite.yaml", "-o", "out", "-q"]);
    assert_eq!(first.status.code(), Some(1), "{}", stderr(&first));
    let results = read(&ws, "out/results.jsonl");
    let record = read(&ws, "out/run.json");
    let retried = ws.gavel(&["run", "suite.yaml", "-o", "out", "--retry-errors"]);
    let err = stderr(&retried);
    assert_eq!(retried.status.code(), Some(1), "{err}");
    assert!(
        err.contains("nothing to retry: no grade is in error"),
        "{err}"
    );
    let text = String::from_utf8_lossy(&retried.stdout);
    assert!(text.contains("gate: FAILED"), "{text}");
    assert!(read(&ws, "out/results.jsonl") == results);
    assert!(read(&ws, "out/run.json") == record, "nothing was graded");
}

/// Retried grades are not mixed with a run graded from other inputs or another selection.
#[test]
fn retry_errors_refuses_a_run_whose_inputs_changed() {
    let ws = workspace(10);
    let first = ws.gavel(&["run", "suite.yaml", "-o", "out", "-q", "--max-samples", "4"]);
    assert!(first.status.success(), "{}", stderr(&first));
    let kept = read(&ws, "out/results.jsonl");
    let other = ws.gavel(&["run", "suite.yaml", "-o", "out", "--retry-errors"]);
    let err = stderr(&other);
    assert_eq!(other.status.code(), Some(2), "{err}");
    assert!(
        err.contains("cannot retry the errors of the run in out"),
        "{err}"
    );
    assert!(err.contains("max samples: was 4, now none"), "{err}");
    assert!(err.contains("without --retry-errors"), "{err}");

    ws.write(
        "suite.yaml",
        &format!("{SUITE}  again:\n    kind: tool\n    function: contains\n"),
    );
    let edited = ws.gavel(&[
        "run",
        "suite.yaml",
        "-o",
        "out",
        "--retry-errors",
        "--max-samples",
        "4",
    ]);
    let err = stderr(&edited);
    assert_eq!(edited.status.code(), Some(2), "{err}");
    assert!(err.contains("suite file content (sha256)"), "{err}");
    assert!(!err.contains("max samples"), "{err}");
    assert!(read(&ws, "out/results.jsonl") == kept);
}

/// A line graded on other metrics than the suite's is not of the run: `--retry-errors`
/// refuses it as `gavel merge` does, naming its file, line and metric, and grades nothing.
#[test]
fn retry_errors_refuses_a_line_graded_on_other_metrics() {
    let ws = workspace(6);
    let first = ws.gavel(&["run", "suite.yaml", "-o", "out", "-q"]);
    assert!(first.status.success(), "{}", stderr(&first));
    let full = String::from_utf8(read(&ws, "out/results.jsonl")).unwrap();
    let record = read(&ws, "out/run.json");
    for (line, wrong) in FOREIGN_LINES {
        let edited = with_second_line(&full, 6, line);
        ws.write("out/results.jsonl", &edited);
        let retried = ws.gavel(&["run", "suite.yaml", "-o", "out", "--retry-errors"]);
        let err = stderr(&retried);
        assert_eq!(retried.status.code(), Some(2), "{err}");
        assert!(
            err.contains("cannot retry the errors of the run in out"),
            "{err}"
        );
        assert!(
            err.contains(&format!("out/results.jsonl:2: sample `1`: {wrong}")),
            "{err}"
        );
        assert!(read(&ws, "out/results.jsonl") == edited.as_bytes());
        assert!(read(&ws, "out/run.json") == record);
    }
}

/// Only a finished run is retried: an unfinished one is finished first with --resume, and a
/// folder without a run is named; --resume and --overwrite do not go with it.
#[test]
fn retry_errors_needs_a_finished_run() {
    let ws = workspace(10);
    let none = ws.gavel(&["run", "suite.yaml", "-o", "empty", "--retry-errors"]);
    let err = stderr(&none);
    assert_eq!(none.status.code(), Some(2), "{err}");
    assert!(
        err.contains("empty holds no finished run to retry"),
        "{err}"
    );
    assert!(!ws.path("empty").exists(), "no folder is made for it");

    let first = ws.gavel(&["run", "suite.yaml", "-o", "out", "-q"]);
    assert!(first.status.success(), "{}", stderr(&first));
    let text = std::fs::read_to_string(ws.path("out/run.json")).unwrap();
    for state in ["running", "interrupted"] {
        ws.write(
            "out/run.json",
            &text.replace("\"complete\"", &format!("\"{state}\"")),
        );
        let unfinished = ws.gavel(&["run", "suite.yaml", "-o", "out", "--retry-errors"]);
        let err = stderr(&unfinished);
        assert_eq!(unfinished.status.code(), Some(2), "{err}");
        assert!(err.contains("finish it first with --resume"), "{err}");
    }

    for flag in ["--resume", "--overwrite"] {
        let both = ws.gavel(&["run", "suite.yaml", "-o", "out", "--retry-errors", flag]);
        let err = stderr(&both);
        assert_eq!(both.status.code(), Some(2), "{err}");
        assert!(err.contains("cannot be used with"), "{err}");
    }
}

/// Ctrl-C while retrying: exit 130, no result lost (what was not retried yet keeps its earlier
/// line), the run still complete; a second `--retry-errors` retries the rest and ends where a
/// clean run ends.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ctrl_c_while_retrying_keeps_every_result() {
    let state = Arc::new(AtomicUsize::new(FAILING));
    let seen = Arc::clone(&state);
    let server = Server::start(move |_, request| match seen.load(Ordering::SeqCst) {
        // An answer without a verdict: a run of 5xx would take the endpoint as down.
        FAILING if asked(request).starts_with("quality") => Reply::completion("no verdict"),
        SLOW => Reply::verdict(1.0, "fine").after(Duration::from_millis(300)),
        _ => Reply::verdict(1.0, "fine"),
    })
    .await;
    let ws = judged_workspace(&server.base_url());
    let first = gavel(&ws, &["run", "suite.yaml", "-o", "out", "--no-cache", "-q"]).await;
    let err = stderr(&first);
    assert_eq!(first.status.code(), Some(2), "{err}");
    assert!(
        err.contains("judge `quality` answered none of the"),
        "{err}"
    );
    let before = String::from_utf8(read(&ws, "out/results.jsonl")).unwrap();
    assert_eq!(
        before.matches("\"error\":{").count(),
        ROWS,
        "every sample errored"
    );

    state.store(SLOW, Ordering::SeqCst);
    let child = Command::new(env!("CARGO_BIN_EXE_gavel"))
        .args([
            "run",
            "suite.yaml",
            "-o",
            "out",
            "--no-cache",
            "--retry-errors",
        ])
        .args(["--concurrency", "2"])
        .current_dir(ws.dir.path())
        .env("OPENAI_API_KEY", "sk-test")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("gavel starts");
    let started = std::time::Instant::now();
    // Two requests at a time (the judges' `concurrency`), each answered after 300 ms: Ctrl-C
    // once the new results file holds a retried result (on a loaded machine the answers can
    // reach the results well after the server sent them).
    let retrying = ws.path("out/results.jsonl.retry");
    while !std::fs::read_to_string(&retrying)
        .unwrap_or_default()
        .lines()
        .any(|line| !line.contains("\"error\":{"))
    {
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "no retried result was written"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let sent = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .expect("kill runs");
    assert!(sent.success());
    let output = tokio::task::spawn_blocking(move || child.wait_with_output())
        .await
        .expect("joined")
        .expect("gavel ends");
    let err = stderr(&output);
    assert_eq!(output.status.code(), Some(130), "{err}");
    assert!(err.contains("--retry-errors -o out"), "{err}");
    let after = String::from_utf8(read(&ws, "out/results.jsonl")).unwrap();
    let (was, is): (Vec<&str>, Vec<&str>) = (before.lines().collect(), after.lines().collect());
    assert_eq!(is.len(), ROWS, "every sample has its result");
    let fixed = is
        .iter()
        .filter(|line| !line.contains("\"error\":{"))
        .count();
    assert!(
        (1..ROWS).contains(&fixed),
        "{fixed} retried before Ctrl-C stopped it"
    );
    for (old, new) in was.iter().zip(&is) {
        assert!(
            new.contains("\"error\":{") == (old == new),
            "{old} -> {new}"
        );
    }
    let record: serde_json::Value = serde_json::from_slice(&read(&ws, "out/run.json")).unwrap();
    assert_eq!(record["progress"]["state"], "complete");

    state.store(FINE, Ordering::SeqCst);
    let rest = gavel(
        &ws,
        &[
            "run",
            "suite.yaml",
            "-o",
            "out",
            "--no-cache",
            "-q",
            "--retry-errors",
        ],
    )
    .await;
    assert!(rest.status.success(), "{}", stderr(&rest));
    let clean = gavel(
        &ws,
        &["run", "suite.yaml", "-o", "clean", "--no-cache", "-q"],
    )
    .await;
    assert!(clean.status.success(), "{}", stderr(&clean));
    for file in ["results.jsonl", "summary.json"] {
        assert!(
            read(&ws, &format!("out/{file}")) == read(&ws, &format!("clean/{file}")),
            "{file} after an interrupted retry and another differs from a clean run's"
        );
    }
}

/// The judge of [`ctrl_c_while_retrying_keeps_every_result`]: failing `quality`, slow, fine.
const FAILING: usize = 0;
const SLOW: usize = 1;
const FINE: usize = 2;
const REFUSED: usize = 3;

/// A judge refused while errors are retried: the unsharded run and the merge of its shards,
/// each retried with the judge refused, both exit 2 naming the judge; the merged run's record
/// keeps why, and once the shards' errors are retried with the judge back the merge passes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_judge_down_while_retrying_fails_the_run_and_its_merged_shards_alike() {
    let state = Arc::new(AtomicUsize::new(FAILING));
    let seen = Arc::clone(&state);
    let server = Server::start(move |_, request| match seen.load(Ordering::SeqCst) {
        // An answer without a verdict: an error grade, the endpoint still up.
        FAILING if asked(request).starts_with("quality") => Reply::completion("no verdict"),
        REFUSED => Reply::status(401, r#"{"error": {"message": "Incorrect API key"}}"#),
        _ => Reply::verdict(1.0, "fine"),
    })
    .await;
    let ws = judged_workspace(&server.base_url());
    for (out, shard) in [("whole", None), ("s0", Some("0/2")), ("s1", Some("1/2"))] {
        let first = judged_run(&ws, out, shard, false).await;
        assert_eq!(first.status.code(), Some(2), "{}", stderr(&first));
    }
    let merge = |out: &'static str| ["merge", "s0", "s1", "-q", "-o", out];

    state.store(REFUSED, Ordering::SeqCst);
    let whole = judged_run(&ws, "whole", None, true).await;
    let err = stderr(&whole);
    assert_eq!(whole.status.code(), Some(2), "{err}");
    assert!(err.contains("judge `quality` cannot be used"), "{err}");
    for (out, shard) in [("s0", "0/2"), ("s1", "1/2")] {
        let retried = judged_run(&ws, out, Some(shard), true).await;
        assert_eq!(retried.status.code(), Some(2), "{}", stderr(&retried));
    }
    let merged = gavel(&ws, &merge("merged")).await;
    let err = stderr(&merged);
    assert_eq!(
        merged.status.code(),
        Some(2),
        "the merge exits as the run: {err}"
    );
    assert!(err.contains("judge `quality` cannot be used"), "{err}");
    assert!(err.contains("--shard 0/2 --retry-errors -o s0"), "{err}");
    let record: serde_json::Value = serde_json::from_slice(&read(&ws, "merged/run.json")).unwrap();
    assert_eq!(record["progress"]["judge_down"]["key"], "quality");

    state.store(FINE, Ordering::SeqCst);
    for (out, shard) in [("s0", "0/2"), ("s1", "1/2")] {
        let retried = judged_run(&ws, out, Some(shard), true).await;
        assert_eq!(retried.status.code(), Some(0), "{}", stderr(&retried));
    }
    let healed = gavel(&ws, &merge("healed")).await;
    assert_eq!(healed.status.code(), Some(0), "{}", stderr(&healed));
    let whole = judged_run(&ws, "whole", None, true).await;
    assert_eq!(whole.status.code(), Some(0), "{}", stderr(&whole));
    for file in ["results.jsonl", "summary.json"] {
        assert!(
            read(&ws, &format!("healed/{file}")) == read(&ws, &format!("whole/{file}")),
            "{file} of the merged shards differs from the unsharded run's"
        );
    }
}

/// A resumed run of a suite with a judge reads the dataset once more than nothing: the
/// interrupted run checked every row of the same dataset (known by its stamp), so the rows are
/// not checked again before grading, and grading goes on where the check of the earlier results
/// stopped reading. It opens the dataset as often as a run that checks rows as it grades them
/// (`--skip-invalid`), and ends where a run that was never stopped ends.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_resumed_run_with_a_judge_reads_the_dataset_once() {
    let healed = Arc::new(AtomicBool::new(false));
    let flag = Arc::clone(&healed);
    let server = Server::start(move |i, _| {
        if i >= 8 && !flag.load(Ordering::SeqCst) {
            Reply::status(401, r#"{"error": {"message": "Incorrect API key"}}"#)
        } else {
            Reply::verdict(1.0, "fine")
        }
    })
    .await;
    let ws = judged_workspace(&server.base_url());
    let run = ["run", "suite.yaml", "--no-cache", "-q", "-o"];
    let stopped = gavel(&ws, &[&run[..], &["out"]].concat()).await;
    let err = stderr(&stopped);
    assert_eq!(stopped.status.code(), Some(2), "{err}");
    assert!(err.contains("cannot be used"), "{err}");
    healed.store(true, Ordering::SeqCst);

    let opens = crate::common::Opens::watch(&ws.path("data.jsonl"));
    let resumed = gavel(&ws, &[&run[..], &["out", "--resume"]].concat()).await;
    assert_eq!(resumed.status.code(), Some(0), "{}", stderr(&resumed));
    let resuming = opens.count();
    let checked_as_graded = gavel(&ws, &[&run[..], &["skipping", "--skip-invalid"]].concat()).await;
    assert_eq!(checked_as_graded.status.code(), Some(0));
    assert_eq!(
        resuming,
        opens.count(),
        "the resumed run opened the dataset {resuming} times"
    );

    let clean = gavel(&ws, &[&run[..], &["clean"]].concat()).await;
    assert_eq!(clean.status.code(), Some(0));
    for file in ["results.jsonl", "summary.json"] {
        assert!(
            read(&ws, &format!("out/{file}")) == read(&ws, &format!("clean/{file}")),
            "{file} after the resume differs from a clean run's"
        );
    }
}

/// `--retry-errors` reads the dataset once: each earlier result is checked to be of the sample
/// at its place as the retry reads the dataset to grade, not in a pass of its own before. It
/// opens the dataset as often as a fresh run does; results of another run are still refused,
/// and left as they were.
#[test]
fn a_retry_reads_the_dataset_once() {
    let ws = workspace(10);
    let clean = ws.gavel(&["run", "suite.yaml", "-o", "out", "-q"]);
    assert!(clean.status.success(), "{}", stderr(&clean));
    let text = String::from_utf8(read(&ws, "out/results.jsonl")).unwrap();
    let error = "{\"sample_id\":4,\"grades\":{},\"error\":{\"category\":\"grading\",\"message\":\"internal error\"}}\n";
    let broken: String = (text.split_inclusive('\n').enumerate())
        .map(|(i, line)| if i == 4 { error } else { line })
        .collect();
    ws.write("out/results.jsonl", &broken);

    let opens = crate::common::Opens::watch(&ws.path("data.jsonl"));
    let retried = ws.gavel(&["run", "suite.yaml", "-o", "out", "-q", "--retry-errors"]);
    assert!(retried.status.success(), "{}", stderr(&retried));
    let retrying = opens.count();
    let fresh = ws.gavel(&["run", "suite.yaml", "-o", "fresh", "-q"]);
    assert!(fresh.status.success(), "{}", stderr(&fresh));
    assert_eq!(
        retrying,
        opens.count(),
        "the retry opened the dataset {retrying} times"
    );
    assert!(read(&ws, "out/results.jsonl") == text.as_bytes());

    // Line 8 is another sample's: the retry grades line 4, then refuses the file at line 8.
    let foreign: String = (text.split_inclusive('\n').enumerate())
        .map(|(i, line)| match i {
            4 => error.to_string(),
            8 => line.replacen("\"sample_id\":8", "\"sample_id\":\"x8\"", 1),
            _ => line.to_string(),
        })
        .collect();
    ws.write("out/results.jsonl", &foreign);
    let refused = ws.gavel(&["run", "suite.yaml", "-o", "out", "-q", "--retry-errors"]);
    let err = stderr(&refused);
    assert_eq!(refused.status.code(), Some(2), "{err}");
    assert!(
        err.contains("cannot retry the errors of the run in out"),
        "{err}"
    );
    assert!(
        err.contains(
            "results.jsonl:9: the result of sample `x8`, where this run's sample 9 is `8`"
        ),
        "{err}"
    );
    assert!(read(&ws, "out/results.jsonl") == foreign.as_bytes());
    assert!(!ws.path("out/results.jsonl.retry").exists());
}
