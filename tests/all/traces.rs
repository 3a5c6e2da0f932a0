//! Recorded runs in the formats the model APIs' SDKs and tracers write (OpenAI Responses,
//! Anthropic Messages, OpenInference spans in OTLP JSON), read from the files
//! `tests/traces/make.py` made with them: one agent run recorded in each format grades the same,
//! and a malformed recording is refused at its line.

use serde_json::Value;

use crate::common::{Workspace, data, stderr};

const SUITE: &str = "\
name: traces
dataset: same-run.jsonl
graders:
  answer:
    kind: tool
    function: exact_match
  weather:
    kind: tool
    function: contains
    extractor: tool_output
    extractor_config: {tool_name: get_weather}
  tools:
    kind: tool
    function: tools_called
  calls:
    kind: tool
    function: max_llm_calls
  steps:
    kind: tool
    function: max_steps
  output:
    kind: tool
    function: output_contains
";

/// The rows of `same-run.jsonl` with what the suite checks.
fn rows() -> Vec<Value> {
    let text = std::fs::read_to_string(data("traces/same-run.jsonl")).unwrap();
    text.lines()
        .map(|line| {
            let mut row: Value = serde_json::from_str(line).unwrap();
            row["ground_truth"] = "Paris: 18C and sunny.".into();
            row["expected"] = serde_json::json!({
                "tools_called": ["get_weather"],
                "max_llm_calls": 2,
                "max_steps": 3,
                "output_contains": ["18C"],
            });
            row
        })
        .collect()
}

#[test]
fn one_run_recorded_in_each_format_grades_the_same() {
    let ws = Workspace::new();
    let rows = rows();
    assert_eq!(rows.len(), 4);
    ws.write_rows("same-run.jsonl", &rows);
    ws.write("suite.yaml", SUITE);
    let run = ws.gavel(&["run", "suite.yaml", "-o", "out", "-q"]);
    assert_eq!(run.status.code(), Some(0), "{}", stderr(&run));
    let results = ws.results("out");
    let ids: Vec<&str> = results
        .iter()
        .map(|r| r["sample_id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, ["chat", "responses", "anthropic", "otel"]);
    let grades: Vec<&Value> = results.iter().map(|r| &r["grades"]).collect();
    for name in ["answer", "tools", "calls", "steps", "output"] {
        assert_eq!(grades[0][name]["score"], 1.0, "{name}: {}", grades[0][name]);
    }
    assert_eq!(grades[0]["weather"]["submission"], "18C, sunny");
    assert_eq!(grades[1], grades[0], "responses against chat");
    assert_eq!(grades[2], grades[0], "anthropic against chat");
    assert_eq!(grades[3], grades[0], "OpenInference spans against chat");
}

#[test]
fn a_malformed_recording_is_refused_at_its_line_and_field() {
    let ws = Workspace::new();
    let mut rows = rows();
    rows[2]["trajectory"]["messages"][1]["content"][0]
        .as_object_mut()
        .unwrap()
        .remove("name");
    rows[1]["trajectory"][2]
        .as_object_mut()
        .unwrap()
        .remove("call_id");
    rows[3]["trajectory"]["resourceSpans"][0]["scopeSpans"][0]["spans"][0]["traceId"] =
        "ff".repeat(16).into();
    ws.write_rows("same-run.jsonl", &rows);
    ws.write("suite.yaml", SUITE);
    let run = ws.gavel(&["validate", "suite.yaml"]);
    let err = stderr(&run);
    assert_ne!(run.status.code(), Some(0), "{err}");
    assert!(
        err.contains(
            "same-run.jsonl:2: trajectory[2].call_id: missing; a function_call item requires it"
        ),
        "{err}"
    );
    assert!(
        err.contains(
            "same-run.jsonl:3: trajectory.messages[1].content[0].name: missing; a tool_use \
             block requires it"
        ),
        "{err}"
    );
    assert!(
        err.contains(
            "same-run.jsonl:4: trajectory.resourceSpans[0].scopeSpans[0].spans[1] (span \
             0000000000000004): trace 00000000000000000000000000000001 where the recording's \
             first span is of trace ffffffffffffffffffffffffffffffff"
        ),
        "{err}"
    );
}
