//! evaldeck cases in their `turns:` shape (what `EvalCase.model_dump()` writes) through
//! `gavel run`: how each turn finds its recorded trace, the grader entries evaldeck drops and
//! gavel grades, and the mistakes refused before grading. The recorded evaldeck verdicts are in
//! `conformance.rs`.

use crate::common::{Workspace, stderr};
use serde_json::{Value, json};

const SUITE: &str = "name: turns\ndataset: data.jsonl\ngraders:\n  case:\n    kind: expectations\n";

fn trace(output: &str, tools: &[&str]) -> Value {
    let steps: Vec<Value> = tools
        .iter()
        .map(|t| json!({"type": "tool_call", "tool_name": t, "tool_args": {}}))
        .collect();
    json!({"input": "u", "output": output, "status": "success", "steps": steps})
}

fn turn(user: &str, expected: Value) -> Value {
    json!({"user": user, "expected": expected, "graders": []})
}

/// The `case` grade of each result, by sample id.
fn grades(ws: &Workspace) -> Vec<(Value, Value)> {
    ws.results("out")
        .into_iter()
        .map(|r| (r["sample_id"].clone(), r["grades"]["case"].clone()))
        .collect()
}

fn turn_statuses(grade: &Value) -> Vec<String> {
    grade["metadata"]["turns"]
        .as_array()
        .expect("metadata.turns")
        .iter()
        .map(|t| t["status"].as_str().unwrap_or_default().to_string())
        .collect()
}

#[test]
fn each_turn_is_graded_against_its_own_recorded_trace() {
    let ws = Workspace::new();
    ws.write(
        "suite.yaml",
        "name: turns\ndataset: data.jsonl\ntrajectories: runs.jsonl\ngraders:\n  case:\n    kind: expectations\n",
    );
    let two_turns = json!([
        turn("find", json!({"tools_called": ["search"]})),
        turn(
            "book",
            json!({"tools_called": ["book"], "tools_not_called": ["search"]})
        ),
    ]);
    ws.write_rows(
        "data.jsonl",
        &[
            // One recording in another format: the single turn's.
            json!({"id": "openai", "name": "openai", "turns": [turn("hi", json!({"output_contains": ["hello"]}))]}),
            // Two turns, one trace: the second turn has none to be graded against.
            json!({"id": "short", "name": "short", "turns": two_turns}),
            // Two turns, their traces in a run record of the trajectories file.
            json!({"id": "joined", "name": "joined", "turns": two_turns}),
        ],
    );
    ws.write_rows(
        "runs.jsonl",
        &[
            json!({"sample_id": "openai", "trajectory": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "Hello there"}]}),
            json!({"sample_id": "short", "trajectory": trace("found", &["search"])}),
            json!({"sample_id": "joined", "trajectory": [trace("found", &["search"]), trace("booked", &["book"])]}),
        ],
    );
    let output = ws.gavel(&["run", "suite.yaml", "-o", "out", "--quiet"]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let grades = grades(&ws);

    let (_, openai) = &grades[0];
    assert_eq!(
        (&openai["status"], &openai["score"]),
        (&json!("pass"), &json!(1.0)),
        "{openai}"
    );

    let (_, short) = &grades[1];
    assert_eq!(short["status"], "error", "{short}");
    assert_eq!(turn_statuses(short), ["pass", "error"]);
    assert_eq!(short["metadata"]["failed_at_turn"], 1);
    assert!(
        short["rationale"]
            .as_str()
            .unwrap()
            .contains("turn 2: execution: no recorded trace for turn 2 of 2"),
        "{short}"
    );

    // Each turn saw its own trace: `search`, called in the first, is not in the second's.
    let (_, joined) = &grades[2];
    assert_eq!(
        (&joined["status"], &joined["score"]),
        (&json!("pass"), &json!(1.0)),
        "{joined}"
    );
    assert_eq!(turn_statuses(joined), ["pass", "pass"]);
    // What the run's submission is: the last turn's output.
    assert_eq!(joined["submission"], "booked");
}

#[test]
fn grader_entries_evaldeck_drops_are_graded() {
    let ws = Workspace::new();
    ws.write("suite.yaml", SUITE);
    let graders = json!([
        {"type": "regex", "params": {"pattern": "UA\\d+"}},
        {"type": "not_contains", "params": {"values": ["sorry"]}},
        {"type": "Equals", "params": {"expected": "Booked  UA12"}},
    ]);
    let failing = json!([
        {"type": "regex", "params": {"pattern": "^Confirmation"}},
        {"type": "max_steps", "params": {"max_steps": 0}},
    ]);
    ws.write_rows(
        "data.jsonl",
        &[
            json!({"id": 0, "name": "pass", "turns": [{"user": "book", "graders": graders}], "trajectory": trace("Booked UA12", &["book"])}),
            json!({"id": 1, "name": "fail", "turns": [{"user": "book", "graders": failing}], "trajectory": trace("Booked UA12", &["book"])}),
            json!({"id": 2, "name": "judge", "turns": [{"user": "book", "graders": [{"type": "code", "module": "m", "function": "f"}]}], "trajectory": trace("ok", &[])}),
        ],
    );
    let output = ws.gavel(&["run", "suite.yaml", "-o", "out", "--quiet"]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let grades = grades(&ws);

    let checks = |grade: &Value| -> Value {
        let checks = grade["metadata"]["turns"][0]["checks"].as_array().unwrap();
        checks
            .iter()
            .map(|c| json!([c["check"], c["status"]]))
            .collect()
    };
    let (_, pass) = &grades[0];
    assert_eq!(pass["status"], "pass", "{pass}");
    assert_eq!(
        checks(pass),
        json!([
            ["output_matches", "pass"],
            ["output_not_contains", "pass"],
            ["output_equals", "pass"]
        ])
    );
    let (_, fail) = &grades[1];
    assert_eq!(
        (&fail["status"], &fail["score"]),
        (&json!("fail"), &json!(0.0)),
        "{fail}"
    );
    assert!(
        fail["rationale"]
            .as_str()
            .unwrap()
            .contains("turn 1: output_matches: Output does not match pattern: ^Confirmation"),
        "{fail}"
    );
    // A code entry of a dataset row, whose module no case file locates, says how it is run,
    // never passed unsaid.
    let (_, judge) = &grades[2];
    assert_eq!(judge["status"], "error", "{judge}");
    assert!(
        judge["rationale"].as_str().unwrap().contains(
            "the `type: code` entry `m.f` is run when its case is graded with `gavel run CASES \
             --traces TRACES`"
        ),
        "{judge}"
    );
}

#[test]
fn an_unknown_grader_type_in_a_turn_is_refused_with_its_place() {
    let ws = Workspace::new();
    ws.write("suite.yaml", SUITE);
    ws.write_rows(
        "data.jsonl",
        &[
            json!({"id": 0, "name": "ok", "turns": [{"user": "a"}], "trajectory": trace("a", &[])}),
            json!({"id": 1, "name": "typo", "turns": [{"user": "a"}, {"user": "b", "graders": [{"type": "contans"}]}], "trajectory": [trace("a", &[]), trace("b", &[])]}),
        ],
    );
    let output = ws.gavel(&["run", "suite.yaml", "-o", "out"]);
    assert_eq!(output.status.code(), Some(2));
    let err = stderr(&output);
    assert!(
        err.contains("data.jsonl:2:")
            && err.contains("turns[1].graders[0].type: unknown grader type `contans`"),
        "{err}"
    );
}

/// evaldeck's `EvalCase.expected` is the first turn's: a check without `config:` reads it (not a
/// top-level `expected` beside `turns`), over the whole recorded run.
#[test]
fn a_check_without_config_reads_the_first_turns_expected_block() {
    let ws = Workspace::new();
    ws.write(
        "suite.yaml",
        "name: turns\ndataset: data.jsonl\ngraders:\n  called:\n    kind: tool\n    function: tools_called\n",
    );
    ws.write_rows(
        "data.jsonl",
        &[json!({
            "id": 0,
            "name": "first",
            "expected": {"tools_called": ["never"]},
            "turns": [
                turn("find", json!({"tools_called": ["search"]})),
                turn("book", json!({"tools_called": ["book", "pay"]})),
            ],
            "trajectory": [trace("found", &["search"]), trace("booked", &["book"])],
        })],
    );
    let output = ws.gavel(&["run", "suite.yaml", "-o", "out", "--quiet"]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let grade = &ws.results("out")[0]["grades"]["called"];
    assert_eq!(
        (&grade["status"], &grade["rationale"]),
        (&json!("pass"), &json!("All 1 required tools were called")),
        "{grade}"
    );
}
