//! The C example pack (`examples/packs-c/`), built by its own build.sh and run through the real
//! `gavel` binary: its graders grade, its extractor extracts, and the grader that aborts on
//! purpose becomes an `error` grade while everything else is graded.

use std::path::Path;

use crate::common::{Workspace, c, stderr, stdout};
use serde_json::Value;

fn grade<'a>(result: &'a Value, metric: &str) -> &'a Value {
    &result["grades"][metric]
}

#[test]
fn the_c_pack_grades_its_suite_and_an_abort_becomes_an_error_grade() {
    let Some(_pack) = c::example_pack() else {
        return;
    };
    let suite = c::repo_root().join("examples/packs-c/suite.yaml");
    let ws = Workspace::new();
    let out = ws.path("out");
    let output = ws.gavel(&["run", suite.to_str().unwrap(), "-o", out.to_str().unwrap()]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert!(
        stdout(&output).contains("gate: passed"),
        "{}",
        stdout(&output)
    );

    let results = ws.results("out");
    let ids: Vec<&str> = results
        .iter()
        .map(|r| r["sample_id"].as_str().unwrap())
        .collect();
    assert_eq!(
        ids,
        [
            "booked",
            "searched-too-often",
            "bad-confirmation",
            "crash",
            "no-ground-truth"
        ]
    );
    let statuses = |metric: &str| -> Vec<&str> {
        results
            .iter()
            .map(|r| grade(r, metric)["status"].as_str().unwrap())
            .collect()
    };
    assert_eq!(
        statuses("answer"),
        ["pass", "pass", "fail", "pass", "error"]
    );
    assert_eq!(
        statuses("confirmation"),
        ["pass", "pass", "fail", "pass", "pass"]
    );
    assert_eq!(
        statuses("tool_budget"),
        ["pass", "fail", "pass", "pass", "pass"]
    );
    assert_eq!(
        statuses("searches"),
        ["pass", "fail", "pass", "pass", "pass"]
    );
    // The abort hits the one row whose answer says CRASH; the same function grades the others.
    assert_eq!(
        statuses("crash_probe"),
        ["pass", "pass", "pass", "error", "pass"]
    );

    let [booked, too_often, bad, crash, no_truth] = results.as_slice() else {
        panic!("five results");
    };
    // The C extractor chose the submission; the grader compared it ignoring case.
    assert_eq!(grade(booked, "answer")["submission"], "UA482913");
    assert_eq!(grade(booked, "answer")["rationale"], "found 'ua482913'");
    assert_eq!(grade(bad, "answer")["submission"], "dl-55");
    assert_eq!(grade(bad, "answer")["expected"], "DL550121");

    let budget = grade(too_often, "tool_budget");
    assert_eq!(budget["rationale"], "4 tool calls, more than 3");
    assert_eq!(budget["metadata"]["tool_calls"], 4);
    assert_eq!(budget["expected"], "<= 3");
    assert_eq!(budget["actual"], 4);
    assert_eq!(
        grade(too_often, "searches")["rationale"],
        "3 search_flights calls, more than 1"
    );

    let confirmation = grade(bad, "confirmation");
    assert_eq!(
        confirmation["rationale"],
        "Booking confirmation format is invalid"
    );
    assert_eq!(confirmation["expected"], "Confirmation: XX000000");
    assert_eq!(
        confirmation["actual"],
        "Your booking is confirmed, reference dl-55.\nFINAL ANSWER: dl-55"
    );

    let crashed = grade(crash, "crash_probe");
    assert_eq!(crashed["rationale"], "guest trapped: unreachable");
    assert_eq!(crashed["score"], 0.0);
    for metric in ["answer", "confirmation", "tool_budget", "searches"] {
        assert_eq!(grade(crash, metric)["status"], "pass", "{metric} on crash");
    }
    assert_eq!(
        grade(no_truth, "answer")["rationale"],
        "guest returned error: the sample has no ground_truth (or one per turn)"
    );
    // Every pack grade says what the call cost.
    assert!(grade(booked, "tool_budget")["metadata"]["sandbox"]["fuel_used"].as_u64() > Some(0));

    let summary = ws.summary("out");
    assert_eq!(summary["counts"]["errored"], 2, "{summary}");
}

/// A suite beside the example's dataset, using the built pack by absolute path.
fn suite_with(ws: &Workspace, pack: &Path, graders: &str) {
    let dataset = c::repo_root().join("examples/packs-c/dataset.jsonl");
    ws.write(
        "suite.yaml",
        &format!(
            "name: c-config\ndataset: {}\npacks:\n  c:\n    path: {}\ngraders:\n{graders}",
            dataset.display(),
            pack.display()
        ),
    );
}

#[test]
fn configs_are_checked_by_the_c_code_before_any_sample_runs() {
    let Some(pack) = c::example_pack() else {
        return;
    };
    for (config, message) in [
        (
            "{max_calls: lots}",
            "config.max_calls: expected a whole number >= 0, found the string \"lots\"",
        ),
        (
            "{max_calls: -1}",
            "config.max_calls: expected a whole number >= 0, found -1",
        ),
        (
            "{max_calls: 2.5}",
            "config.max_calls: expected a whole number >= 0, found 2.5",
        ),
        (
            "{max_call: 3}",
            "config: unknown key `max_call`; known keys: max_calls, tool",
        ),
        ("{tool: search_flights}", "config.max_calls: missing"),
        (
            "{max_calls: 1, tool: [a, b]}",
            "config.tool: expected a string, found an array",
        ),
    ] {
        let ws = Workspace::new();
        suite_with(
            &ws,
            &pack,
            &format!(
                "  budget:\n    kind: tool\n    function: c.tool_budget\n    config: {config}\n"
            ),
        );
        let output = ws.gavel(&["validate", "suite.yaml"]);
        assert_eq!(
            output.status.code(),
            Some(2),
            "{config}: {}",
            stdout(&output)
        );
        let err = stderr(&output);
        assert!(err.contains(message), "{config}: {err}");
    }

    // A marker that needs JSON escapes (a quote, a tab) reaches the C code as the text it is.
    let ws = Workspace::new();
    ws.write_rows(
        "rows.jsonl",
        &[serde_json::json!({
            "id": "quoted",
            "ground_truth": "42",
            "trajectory": [
                {"role": "user", "content": "Status?"},
                {"role": "assistant", "content": "He said \"done\"\t42\nand left."}
            ]
        })],
    );
    ws.write(
        "suite.yaml",
        &format!(
            "name: c-marker\ndataset: rows.jsonl\npacks:\n  c:\n    path: {}\ngraders:\n  answer:\n    kind: tool\n    function: c.contains_answer\n    extractor: c.final_answer\n    extractor_config: {{marker: \"\\\"done\\\"\\t\"}}\n",
            pack.display()
        ),
    );
    let output = ws.gavel(&["run", "suite.yaml", "-o", "out"]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let results = ws.results("out");
    assert_eq!(
        grade(&results[0], "answer")["submission"],
        "42",
        "{}",
        results[0]
    );
    assert_eq!(grade(&results[0], "answer")["status"], "pass");
}

#[test]
fn the_c_pack_describes_itself() {
    let Some(pack) = c::example_pack() else {
        return;
    };
    let ws = Workspace::new();
    let output = ws.gavel(&["inspect", pack.to_str().expect("a UTF-8 path")]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let text = stdout(&output);
    assert!(
        text.contains("c-graders 0.1.0 (gavel:grader@0.1.0)"),
        "{text}"
    );
    for line in [
        "grader     contains_answer",
        "grader     booking_confirmation",
        "grader     tool_budget",
        "grader     abort_on_crash",
        "extractor  final_answer",
    ] {
        assert!(text.contains(line), "{line}: {text}");
    }
}

#[test]
fn a_long_output_is_cut_to_100_bytes_without_splitting_a_character() {
    let Some(pack) = c::example_pack() else {
        return;
    };
    let ws = Workspace::new();
    // 60 two-byte characters: 100 bytes end exactly after the 50th; 99 would split one.
    for (id, text, kept) in [
        ("even", "é".repeat(60), "é".repeat(50)),
        (
            "odd",
            format!("x{}", "é".repeat(60)),
            format!("x{}", "é".repeat(49)),
        ),
    ] {
        ws.write_rows(
            &format!("{id}.jsonl"),
            &[serde_json::json!({
                "id": id,
                "trajectory": [{"role": "user", "content": "?"}, {"role": "assistant", "content": text}]
            })],
        );
        ws.write(
            "suite.yaml",
            &format!(
                "name: c-utf8\ndataset: {id}.jsonl\npacks:\n  c:\n    path: {}\ngraders:\n  confirmation:\n    kind: tool\n    function: c.booking_confirmation\n",
                pack.display()
            ),
        );
        let output = ws.gavel(&["run", "suite.yaml", "-o", id]);
        assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
        let results = ws.results(id);
        let confirmation = grade(&results[0], "confirmation");
        assert_eq!(confirmation["status"], "fail", "{confirmation}");
        assert_eq!(confirmation["actual"], kept.as_str(), "{id}");
    }
}

/// `build/empty.wasm`, the pack-call benchmark's floor, is a working pack: its one grader passes
/// every row without reading it, and it refuses a function it does not have.
#[test]
fn the_floor_pack_passes_every_row_and_has_one_function() {
    let Some(pack) = c::example_pack() else {
        return;
    };
    let empty = pack.with_file_name("empty.wasm");
    let ws = Workspace::new();
    let output = ws.gavel(&["inspect", empty.to_str().expect("a UTF-8 path")]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let text = stdout(&output);
    assert!(text.contains("empty 0.1.0 (gavel:grader@0.1.0)"), "{text}");
    assert!(text.contains("grader     pass"), "{text}");

    suite_with(
        &ws,
        &empty,
        "  floor:\n    kind: tool\n    function: c.pass\n    extractor: last_assistant\n",
    );
    let output = ws.gavel(&["run", "suite.yaml", "-o", "out"]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let results = ws.results("out");
    assert_eq!(results.len(), 5);
    for result in &results {
        let floor = grade(result, "floor");
        assert_eq!(floor["status"], "pass", "{result}");
        assert_eq!(floor["rationale"], "passed", "{result}");
    }

    suite_with(
        &ws,
        &empty,
        "  floor:\n    kind: tool\n    function: c.contains_answer\n",
    );
    let output = ws.gavel(&["validate", "suite.yaml"]);
    assert_eq!(output.status.code(), Some(2), "{}", stdout(&output));
    let err = stderr(&output);
    assert!(
        err.contains("pack `c` has no function `contains_answer`; it has: pass"),
        "{err}"
    );
}
