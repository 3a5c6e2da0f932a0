//! A run killed at any moment loses no finished sample, and `--resume` ends exactly where an
//! uninterrupted run ends.

use std::process::{Command, Stdio};
use std::time::Duration;

use crate::common::{Workspace, stderr};
use serde_json::json;

const SUITE: &str = "\
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

fn workspace(rows: usize) -> Workspace {
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

#[test]
fn killed_runs_resume_to_the_uninterrupted_result() {
    let ws = workspace(30_000);
    let clean = ws.gavel(&["run", "suite.yaml", "-o", "clean", "-q"]);
    assert!(clean.status.success(), "{}", stderr(&clean));

    let mut rng = Lcg(7);
    let mut kills = 0;
    let mut finished = false;
    for attempt in 0..12 {
        let mut args = vec!["run", "suite.yaml", "-o", "killed", "-q"];
        if attempt > 0 {
            args.push("--resume");
        }
        let mut child = Command::new(env!("CARGO_BIN_EXE_gavel"))
            .args(&args)
            .current_dir(ws.dir.path())
            .env("GAVEL_CACHE_DIR", ws.path(".cache"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("gavel starts");
        std::thread::sleep(Duration::from_millis(20 + rng.next(400)));
        match child.try_wait().expect("status") {
            Some(status) => {
                assert!(status.success(), "a run that was not killed succeeds");
                finished = true;
                break;
            }
            None => {
                child.kill().expect("SIGKILL");
                child.wait().expect("reaped");
                kills += 1;
            }
        }
    }
    if !finished {
        let last = ws.gavel(&["run", "suite.yaml", "-o", "killed", "-q", "--resume"]);
        assert!(last.status.success(), "{}", stderr(&last));
    }
    assert!(kills > 0, "at least one run was killed part-way");
    let read =
        |dir: &str, file: &str| std::fs::read(ws.path(dir).join(file)).expect("output exists");
    assert!(
        read("clean", "results.jsonl") == read("killed", "results.jsonl"),
        "results.jsonl after {kills} kills differs from the uninterrupted run"
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

#[test]
fn ctrl_c_writes_the_summary_and_says_how_to_resume() {
    let ws = workspace(200_000);
    let child = Command::new(env!("CARGO_BIN_EXE_gavel"))
        .args(["run", "suite.yaml", "-o", "out"])
        .current_dir(ws.dir.path())
        .env("GAVEL_CACHE_DIR", ws.path(".cache"))
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("gavel starts");
    // Wait until grading has started (results.jsonl exists), then interrupt.
    for _ in 0..600 {
        if ws.path("out/results.jsonl").exists() {
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    std::thread::sleep(Duration::from_millis(100));
    let pid = child.id().to_string();
    let sent = Command::new("kill")
        .args(["-INT", &pid])
        .status()
        .expect("kill runs");
    assert!(sent.success());
    let output = child.wait_with_output().expect("gavel ends");
    let err = stderr(&output);
    if output.status.success() {
        // The whole dataset was graded before the signal arrived: nothing to resume.
        return;
    }
    assert_eq!(output.status.code(), Some(130), "{err}");
    assert!(err.contains("--resume"), "{err}");
    assert!(ws.path("out/summary.json").exists());
    let done = std::fs::read_to_string(ws.path("out/results.jsonl")).unwrap();
    assert!(
        done.ends_with('\n') || done.is_empty(),
        "only complete lines are written"
    );
    let resumed = ws.gavel(&["run", "suite.yaml", "-o", "out", "-q", "--resume"]);
    assert!(resumed.status.success(), "{}", stderr(&resumed));
    assert_eq!(ws.results("out").len(), 200_000);
}
