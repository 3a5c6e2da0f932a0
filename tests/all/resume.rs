//! A run killed at any moment loses no finished sample, and `--resume` ends exactly where an
//! uninterrupted run ends.

use std::process::{Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;

use crate::common::{Workspace, stderr};
use crate::openai_server::{Reply, Server};
use serde_json::json;

pub const SUITE: &str = "\
name: resumable
dataset: data.jsonl
graders:
  correct:
    kind: tool
    function: contains
  exact:
    kind: tool
    function: exact_match
";

pub fn workspace(rows: usize) -> Workspace {
    let ws = Workspace::new();
    ws.write("suite.yaml", SUITE);
    let mut text = String::new();
    for i in 0..rows {
        let answer = if i % 3 == 0 {
            "Paris"
        } else {
            "It is Paris, surely."
        };
        let row = json!({
            "id": i,
            "input": "Capital of France?",
            "ground_truth": "Paris",
            "trajectory": [[
                {"id": "u", "date": "2026-01-01T00:00:00Z", "message_type": "user_message", "content": "Capital of France?"},
                {"id": "a", "date": "2026-01-01T00:00:01Z", "message_type": "assistant_message", "content": answer}
            ]]
        });
        text.push_str(&row.to_string());
        text.push('\n');
    }
    ws.write("data.jsonl", &text);
    ws
}

/// A small deterministic generator, so that the kill points are the same on every run.
struct Lcg(u64);

impl Lcg {
    fn next(&mut self, bound: u64) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (self.0 >> 33) % bound
    }
}

/// The lines of `results.jsonl` in `dir`, complete or not (0 when there is no file).
fn lines_written(ws: &Workspace, dir: &str) -> usize {
    std::fs::read(ws.path(dir).join("results.jsonl"))
        .map_or(0, |bytes| bytes.iter().filter(|&&b| b == b'\n').count())
}

#[test]
fn killed_runs_resume_to_the_uninterrupted_result() {
    const ROWS: usize = 30_000;
    let ws = workspace(ROWS);
    let clean = ws.gavel(&["run", "suite.yaml", "-o", "clean", "-q"]);
    assert!(clean.status.success(), "{}", stderr(&clean));

    let mut rng = Lcg(7);
    // Kills that landed while results were being written: after this run had added lines to
    // results.jsonl and before it had written them all.
    let mut mid_write = 0;
    let mut finished = false;
    for attempt in 0..12 {
        let mut args = vec!["run", "suite.yaml", "-o", "killed", "-q"];
        if attempt > 0 {
            args.push("--resume");
        }
        let before = lines_written(&ws, "killed");
        let mut child = Command::new(env!("CARGO_BIN_EXE_gavel"))
            .args(&args)
            .current_dir(ws.dir.path())
            .env("GAVEL_CACHE_DIR", ws.path(".cache"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("gavel starts");
        // Wait for this run's first lines, then kill it a random moment later.
        let mut exited = None;
        for _ in 0..2000 {
            exited = child.try_wait().expect("status");
            if exited.is_some() || lines_written(&ws, "killed") > before {
                break;
            }
            std::thread::sleep(Duration::from_millis(1));
        }
        if exited.is_none() {
            std::thread::sleep(Duration::from_millis(rng.next(60)));
            exited = child.try_wait().expect("status");
        }
        if let Some(status) = exited {
            assert!(status.success(), "a run that was not killed succeeds");
            finished = true;
            break;
        }
        child.kill().expect("SIGKILL");
        child.wait().expect("reaped");
        let after = lines_written(&ws, "killed");
        if after > before && after < ROWS {
            mid_write += 1;
        }
    }
    if !finished {
        let last = ws.gavel(&["run", "suite.yaml", "-o", "killed", "-q", "--resume"]);
        assert!(last.status.success(), "{}", stderr(&last));
    }
    assert!(
        mid_write > 0,
        "no kill landed while results were being written"
    );
    let read =
        |dir: &str, file: &str| std::fs::read(ws.path(dir).join(file)).expect("output exists");
    assert!(
        read("clean", "results.jsonl") == read("killed", "results.jsonl"),
        "results.jsonl after {mid_write} kills mid-write differs from the uninterrupted run"
    );
    assert_eq!(
        read("clean", "summary.json"),
        read("killed", "summary.json")
    );
}

#[test]
fn resume_after_a_torn_last_line_keeps_only_complete_lines() {
    let ws = workspace(50);
    assert!(
        ws.gavel(&["run", "suite.yaml", "-o", "clean", "-q"])
            .status
            .success()
    );
    let full = std::fs::read_to_string(ws.path("clean/results.jsonl")).unwrap();
    // The first 10 lines and half of the 11th, as a power cut could leave them.
    let lines: Vec<&str> = full.split_inclusive('\n').collect();
    let torn = format!(
        "{}{}",
        lines[..10].concat(),
        &lines[10][..lines[10].len() / 2]
    );
    ws.write("torn/results.jsonl", &torn);
    let out = ws.gavel(&["run", "suite.yaml", "-o", "torn", "-q", "--resume"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(
        std::fs::read_to_string(ws.path("torn/results.jsonl")).unwrap(),
        full
    );
}

/// Ctrl-C while samples are being graded: the run stops sending judge requests at once, ends
/// with 130, keeps what finished, writes the summary of it and says how to resume; `--resume`
/// then ends where an uninterrupted run ends. Its judge answers slowly until the signal is
/// sent, so the signal always lands mid-run, and counts the requests that reach it after.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ctrl_c_writes_the_summary_and_says_how_to_resume() {
    const ROWS: usize = 200;
    const JUDGE_CONCURRENCY: usize = 2;
    let slow = Arc::new(AtomicBool::new(true));
    let late = Arc::new(AtomicUsize::new(0));
    let (flag, late_seen) = (Arc::clone(&slow), Arc::clone(&late));
    let server = Server::start(move |_, _| {
        let reply = Reply::verdict(1.0, "fine");
        if flag.load(Ordering::SeqCst) {
            reply.after(Duration::from_millis(100))
        } else {
            late_seen.fetch_add(1, Ordering::SeqCst);
            reply
        }
    })
    .await;
    let ws = workspace(ROWS);
    ws.write(
        "suite.yaml",
        &format!(
            "name: judged\ndataset: data.jsonl\ngraders:\n  quality:\n    kind: rubric\n    \
             prompt: 'Answer: {{submission}}'\n    model: judge-model\n    base_url: {}\n    \
             concurrency: {JUDGE_CONCURRENCY}\n",
            server.base_url()
        ),
    );
    let gavel = |args: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_gavel"))
            .args(args)
            .current_dir(ws.dir.path())
            .env("GAVEL_CACHE_DIR", ws.path(".cache"))
            .env("OPENAI_API_KEY", "sk-test")
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("gavel starts")
    };
    let child = gavel(&[
        "run",
        "suite.yaml",
        "-o",
        "out",
        "--concurrency",
        "2",
        "--no-cache",
        "--max-samples",
        "190",
    ]);
    // A hundred milliseconds a sample, two at a time: the run takes ten seconds unless stopped.
    let started = std::time::Instant::now();
    while lines_written(&ws, "out") < 4 {
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "no results were written"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let sent = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .expect("kill runs");
    assert!(sent.success());
    slow.store(false, Ordering::SeqCst);
    let output = tokio::task::spawn_blocking(move || child.wait_with_output())
        .await
        .expect("joined")
        .expect("gavel ends");
    let err = stderr(&output);
    assert_eq!(output.status.code(), Some(130), "{err}");
    assert!(err.contains("stopping"), "{err}");
    // The command it says resumes this run: its selection repeated.
    let hint = err
        .lines()
        .find_map(|l| l.split_once("resume with: ").map(|(_, c)| c.to_string()))
        .unwrap_or_else(|| panic!("no command to resume with: {err}"));
    assert_eq!(
        hint,
        "gavel run suite.yaml --resume -o out --max-samples 190"
    );
    // Requests already on their way when the signal landed may arrive after it; no new ones.
    let late = late.load(Ordering::SeqCst);
    assert!(
        late <= JUDGE_CONCURRENCY,
        "{late} judge requests were sent after Ctrl-C"
    );
    let done = std::fs::read_to_string(ws.path("out/results.jsonl")).unwrap();
    assert!(done.ends_with('\n'), "only complete lines are written");
    let kept = done.lines().count();
    assert!((4..ROWS).contains(&kept), "{kept} of {ROWS} results kept");
    let summary = ws.summary("out");
    assert_eq!(
        summary["counts"]["total"], kept,
        "the summary is of what finished"
    );
    assert_eq!(summary["interrupted"], true, "and says it is partial");

    let wait = |child: std::process::Child| {
        tokio::task::spawn_blocking(move || child.wait_with_output().expect("gavel ends"))
    };
    let mut again: Vec<&str> = hint.split(' ').skip(1).collect();
    again.extend(["-q", "--no-cache"]);
    let resumed = wait(gavel(&again)).await.expect("joined");
    assert!(resumed.status.success(), "{}", stderr(&resumed));
    let clean = wait(gavel(&[
        "run",
        "suite.yaml",
        "-o",
        "clean",
        "-q",
        "--no-cache",
        "--max-samples",
        "190",
    ]))
    .await
    .expect("joined");
    assert!(clean.status.success(), "{}", stderr(&clean));
    for file in ["results.jsonl", "summary.json"] {
        assert!(
            std::fs::read(ws.path("out").join(file)).unwrap()
                == std::fs::read(ws.path("clean").join(file)).unwrap(),
            "{file} of the resumed run differs from the uninterrupted run's"
        );
    }
}

/// `--resume` continues only the run it was: a grader added to the suite, or rows changed,
/// and it refuses with exit 2 and says what changed, keeping the results as they were.
#[test]
fn resume_refuses_a_run_whose_inputs_changed() {
    let ws = workspace(20);
    let first = ws.gavel(&["run", "suite.yaml", "-o", "out", "-q", "--max-samples", "8"]);
    assert!(first.status.success(), "{}", stderr(&first));
    let kept = std::fs::read(ws.path("out/results.jsonl")).unwrap();

    ws.write(
        "suite.yaml",
        &format!("{SUITE}  again:\n    kind: tool\n    function: contains\n"),
    );
    let edited = ws.gavel(&["run", "suite.yaml", "-o", "out", "-q", "--resume"]);
    let err = stderr(&edited);
    assert_eq!(edited.status.code(), Some(2), "{err}");
    assert!(err.contains("cannot resume the run in out"), "{err}");
    assert!(err.contains("suite file content (sha256)"), "{err}");
    assert!(err.contains("max samples: was 8, now none"), "{err}");
    assert_eq!(std::fs::read(ws.path("out/results.jsonl")).unwrap(), kept);

    ws.write("suite.yaml", SUITE);
    let data = std::fs::read_to_string(ws.path("data.jsonl")).unwrap();
    ws.write("data.jsonl", &data.replacen("Paris", "Lyon", 1));
    let changed = ws.gavel(&[
        "run",
        "suite.yaml",
        "-o",
        "out",
        "-q",
        "--resume",
        "--max-samples",
        "8",
    ]);
    let err = stderr(&changed);
    assert_eq!(changed.status.code(), Some(2), "{err}");
    assert!(err.contains("dataset content"), "{err}");
    assert!(!err.contains("suite file"), "{err}");
}

/// A run that did not finish (interrupted, or killed before it could say) is not replaced by
/// a new run unless asked: `--overwrite` replaces it, `--resume` continues it.
#[test]
fn an_unfinished_run_is_replaced_only_with_overwrite() {
    let ws = workspace(20);
    let first = ws.gavel(&["run", "suite.yaml", "-o", "out", "-q"]);
    assert!(first.status.success(), "{}", stderr(&first));
    let record: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(ws.path("out/run.json")).unwrap()).unwrap();
    assert_eq!(record["progress"]["state"], "complete");
    assert_eq!(record["progress"]["results"], 20);
    // A finished run is replaced by the next without a word.
    let again = ws.gavel(&["run", "suite.yaml", "-o", "out", "-q"]);
    assert!(again.status.success(), "{}", stderr(&again));

    // As a run killed mid-way leaves it: results, and a record still saying `running`.
    let full = std::fs::read_to_string(ws.path("out/results.jsonl")).unwrap();
    let partial: String = full.split_inclusive('\n').take(5).collect();
    ws.write("out/results.jsonl", &partial);
    let text = std::fs::read_to_string(ws.path("out/run.json")).unwrap();
    ws.write("out/run.json", &text.replace("\"complete\"", "\"running\""));
    let refused = ws.gavel(&["run", "suite.yaml", "-o", "out", "-q"]);
    let err = stderr(&refused);
    assert_eq!(refused.status.code(), Some(2), "{err}");
    assert!(
        err.contains("out holds an unfinished run (5 results)"),
        "{err}"
    );
    assert_eq!(
        std::fs::read_to_string(ws.path("out/results.jsonl")).unwrap(),
        partial
    );
    let replaced = ws.gavel(&["run", "suite.yaml", "-o", "out", "-q", "--overwrite"]);
    assert!(replaced.status.success(), "{}", stderr(&replaced));
    assert_eq!(
        std::fs::read_to_string(ws.path("out/results.jsonl")).unwrap(),
        full
    );
}

/// Results in the output folder without the `run.json` of a run (someone else's, or a record
/// removed) are not replaced unless asked.
#[test]
fn results_without_a_record_are_replaced_only_with_overwrite() {
    let ws = workspace(3);
    ws.write("out/results.jsonl", "{\"theirs\": true}\n");
    let refused = ws.gavel(&["run", "suite.yaml", "-o", "out", "-q"]);
    let err = stderr(&refused);
    assert_eq!(refused.status.code(), Some(2), "{err}");
    assert!(
        err.contains("holds a results.jsonl but no run.json"),
        "{err}"
    );
    assert_eq!(
        std::fs::read_to_string(ws.path("out/results.jsonl")).unwrap(),
        "{\"theirs\": true}\n"
    );
    let replaced = ws.gavel(&["run", "suite.yaml", "-o", "out", "-q", "--overwrite"]);
    assert!(replaced.status.success(), "{}", stderr(&replaced));
    assert_eq!(ws.results("out").len(), 3);
}

/// Lines no run of [`SUITE`] writes for sample 1, each with what is wrong with it: a grade of
/// a metric the suite does not have, and no grade at all without an error.
pub const FOREIGN_LINES: [(&str, &str); 2] = [
    (
        r#"{"sample_id":1,"grades":{"other":{"score":1.0,"status":"pass","rationale":"","submission":""}}}"#,
        "a grade of `other`, which is not a metric of the suite",
    ),
    (
        r#"{"sample_id":1,"grades":{}}"#,
        "no grade of the suite's metric `correct`",
    ),
];

/// The first `lines` lines of `results`, the second replaced by `line`.
pub fn with_second_line(results: &str, lines: usize, line: &str) -> String {
    (results.split_inclusive('\n').take(lines).enumerate())
        .map(|(i, kept)| {
            if i == 1 {
                format!("{line}\n")
            } else {
                kept.to_string()
            }
        })
        .collect()
}

/// A line graded on other metrics than the suite's is not of the run: `--resume` refuses it
/// as `gavel merge` does, naming its file, line and metric, and leaves the file as it was.
#[test]
fn resume_refuses_a_line_graded_on_other_metrics() {
    let ws = workspace(6);
    let first = ws.gavel(&["run", "suite.yaml", "-o", "out", "-q"]);
    assert!(first.status.success(), "{}", stderr(&first));
    let full = std::fs::read_to_string(ws.path("out/results.jsonl")).unwrap();
    let record = std::fs::read_to_string(ws.path("out/run.json")).unwrap();
    ws.write(
        "out/run.json",
        &record.replace("\"complete\"", "\"running\""),
    );
    for (line, wrong) in FOREIGN_LINES {
        let partial = with_second_line(&full, 3, line);
        ws.write("out/results.jsonl", &partial);
        let resumed = ws.gavel(&["run", "suite.yaml", "-o", "out", "-q", "--resume"]);
        let err = stderr(&resumed);
        assert_eq!(resumed.status.code(), Some(2), "{err}");
        assert!(err.contains("cannot resume the run in out"), "{err}");
        assert!(
            err.contains(&format!("out/results.jsonl:2: sample `1`: {wrong}")),
            "{err}"
        );
        assert_eq!(
            std::fs::read_to_string(ws.path("out/results.jsonl")).unwrap(),
            partial
        );
    }
}

/// A second Ctrl-C quits at once, and loses no line that had finished: every line the run had
/// written before the signals is there, complete.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_second_ctrl_c_quits_at_once_keeping_every_finished_line() {
    let server =
        Server::always(Reply::verdict(1.0, "fine").after(Duration::from_millis(200))).await;
    let ws = workspace(100);
    ws.write(
        "suite.yaml",
        &format!(
            "name: judged\ndataset: data.jsonl\ngraders:\n  quality:\n    kind: rubric\n    \
             prompt: 'Answer: {{submission}}'\n    model: judge-model\n    base_url: {}\n",
            server.base_url()
        ),
    );
    let child = Command::new(env!("CARGO_BIN_EXE_gavel"))
        .args(["run", "suite.yaml", "-o", "out", "--no-cache"])
        .current_dir(ws.dir.path())
        .env("OPENAI_API_KEY", "sk-test")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("gavel starts");
    let started = std::time::Instant::now();
    while lines_written(&ws, "out") < 2 {
        assert!(started.elapsed() < Duration::from_secs(60), "no results");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let seen = lines_written(&ws, "out");
    for _ in 0..2 {
        let sent = Command::new("kill")
            .args(["-INT", &child.id().to_string()])
            .status()
            .expect("kill runs");
        assert!(sent.success());
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let output = tokio::task::spawn_blocking(move || child.wait_with_output())
        .await
        .expect("joined")
        .expect("gavel ends");
    assert_eq!(output.status.code(), Some(130), "{}", stderr(&output));
    let text = std::fs::read_to_string(ws.path("out/results.jsonl")).unwrap();
    assert!(text.ends_with('\n'), "only complete lines");
    assert!(
        text.lines().count() >= seen,
        "{} < {seen}",
        text.lines().count()
    );
    for line in text.lines() {
        serde_json::from_str::<serde_json::Value>(line).expect("a complete result");
    }
}

/// What a run's grades depend on is compared by content, not by the path it was named by: the
/// suite named another way resumes with its inline Python, and a recorded-run file whose
/// content changed under the same name is refused.
#[test]
fn resume_compares_inline_python_and_recorded_runs_by_content() {
    let Some(cache) = crate::python_graders::cache() else {
        return;
    };
    let ws = Workspace::new();
    ws.write(
        "suite.yaml",
        "name: inline\ndataset: data.jsonl\ntrajectories: [run.jsonl]\ngraders:\n  said:\n    \
         kind: python\n    source: |\n      def grade(sample, item):\n          \
         return 1.0 if 'Paris' in sample['output_text'] else 0.0\n",
    );
    let record = |i: usize, answer: &str| {
        json!({"sample_id": i, "trajectory": [[
            {"id": "a", "date": "2026-01-01T00:00:01Z", "message_type": "assistant_message", "content": answer}
        ]]})
    };
    let rows: Vec<_> = (0..6)
        .map(|i| json!({"id": i, "input": "Capital of France?"}))
        .collect();
    ws.write_rows("data.jsonl", &rows);
    ws.write_rows(
        "run.jsonl",
        &(0..6).map(|i| record(i, "Paris")).collect::<Vec<_>>(),
    );
    let run = |suite: &str, more: &[&str]| {
        let mut args = vec!["run", suite, "-o", "out", "-q"];
        args.extend_from_slice(more);
        crate::python_graders::gavel(cache, ws.dir.path(), &args)
    };
    let first = run("suite.yaml", &["--max-samples", "2"]);
    assert_eq!(first.status.code(), Some(0), "{}", stderr(&first));
    let absolute = ws.path("suite.yaml").display().to_string();
    for suite in ["./suite.yaml", absolute.as_str()] {
        let resumed = run(suite, &["--max-samples", "3", "--resume"]);
        assert_eq!(resumed.status.code(), Some(2));
        let err = stderr(&resumed);
        // Only the selection changed, which says the rest compared equal.
        assert!(err.contains("max samples: was 2, now 3"), "{err}");
        assert!(!err.contains("python sources"), "{err}");
        let resumed = run(suite, &["--max-samples", "2", "--resume"]);
        assert_eq!(resumed.status.code(), Some(0), "{}", stderr(&resumed));
    }
    ws.write_rows(
        "run.jsonl",
        &(0..6).map(|i| record(i, "Lyon")).collect::<Vec<_>>(),
    );
    let changed = run("suite.yaml", &["--max-samples", "2", "--resume"]);
    let err = stderr(&changed);
    assert_eq!(changed.status.code(), Some(2), "{err}");
    assert!(err.contains("trajectories content: was "), "{err}");
    assert!(!err.contains("suite file"), "{err}");
}
