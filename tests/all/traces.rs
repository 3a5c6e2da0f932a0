//! Recorded runs in the formats the model APIs' SDKs and tracers write (OpenAI Responses,
//! Anthropic Messages, OpenInference spans in OTLP JSON, Inspect logs), read from the files
//! `tests/traces/make.py` made with them: one agent run recorded in each format grades the same,
//! and a malformed recording is refused at its line.

use serde_json::{Value, json};

use crate::common::{Workspace, data, stderr};
use crate::report::script_data;

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
    assert_eq!(rows.len(), 6);
    ws.write_rows("same-run.jsonl", &rows);
    ws.write("suite.yaml", SUITE);
    let run = ws.gavel(&["run", "suite.yaml", "-o", "out", "-q"]);
    assert_eq!(run.status.code(), Some(0), "{}", stderr(&run));
    let results = ws.results("out");
    let ids: Vec<&str> = results
        .iter()
        .map(|r| r["sample_id"].as_str().unwrap())
        .collect();
    assert_eq!(
        ids,
        ["chat", "responses", "anthropic", "otel", "inspect", "genai"]
    );
    let grades: Vec<&Value> = results.iter().map(|r| &r["grades"]).collect();
    for name in ["answer", "tools", "calls", "steps", "output"] {
        assert_eq!(grades[0][name]["score"], 1.0, "{name}: {}", grades[0][name]);
    }
    assert_eq!(grades[0]["weather"]["submission"], "18C, sunny");
    assert_eq!(grades[1], grades[0], "responses against chat");
    assert_eq!(grades[2], grades[0], "anthropic against chat");
    assert_eq!(grades[3], grades[0], "OpenInference spans against chat");
    assert_eq!(grades[4], grades[0], "an Inspect sample against chat");
    assert_eq!(
        grades[5], grades[0],
        "OpenTelemetry GenAI spans against chat"
    );
}

pub const COLLECTOR_SUITE: &str = "\
name: traced
dataset: otel-genai.jsonl
graders:
  weather:
    kind: tool
    function: ascii_printable_only
    extractor: tool_output
    extractor_config: {tool_name: get_weather}
  tools:
    kind: tool
    function: tools_called
    config: {required: [get_weather]}
";

/// The recorded collector file as another writer may lay it out: a blank line first, a space
/// inside each object's brace, and each span's status by the enum's number, as OTLP JSON
/// writes enums (`1`, OK).
fn collector_file_laid_out_otherwise() -> String {
    let text = std::fs::read_to_string(data("traces/otel-genai.jsonl")).unwrap();
    let mut laid_out = String::from("\n");
    for line in text.lines() {
        let mut export: Value = serde_json::from_str(line).unwrap();
        for resource in export["resourceSpans"].as_array_mut().unwrap() {
            for scope in resource["scopeSpans"].as_array_mut().unwrap() {
                for span in scope["spans"].as_array_mut().unwrap() {
                    span["status"] = json!({"code": 1});
                }
            }
        }
        laid_out.push_str(&format!("{{ {}\n", &export.to_string()[1..]));
    }
    laid_out
}

#[test]
fn a_collector_file_of_interleaved_traces_is_a_dataset_of_a_row_per_trace() {
    for laid_out in [false, true] {
        let ws = Workspace::new();
        if laid_out {
            ws.write("otel-genai.jsonl", &collector_file_laid_out_otherwise());
        } else {
            std::fs::copy(data("traces/otel-genai.jsonl"), ws.path("otel-genai.jsonl")).unwrap();
        }
        ws.write("suite.yaml", COLLECTOR_SUITE);
        let run = ws.gavel(&["run", "suite.yaml", "-o", "out", "-q"]);
        assert_eq!(run.status.code(), Some(0), "{}", stderr(&run));
        assert_collector_results(&ws.results("out"));
    }
}

fn assert_collector_results(results: &[Value]) {
    let seen: Vec<(&str, &str)> = results
        .iter()
        .map(|r| {
            (
                r["sample_id"].as_str().unwrap(),
                r["grades"]["weather"]["submission"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        seen,
        [
            ("00000000000000000000000000000001", "18C, sunny"),
            ("00000000000000000000000000000005", "4C, snow")
        ]
    );
    for result in results {
        assert_eq!(result["grades"]["weather"]["score"], 1.0, "{result}");
        assert_eq!(result["grades"]["tools"]["score"], 1.0, "{result}");
    }
}

#[test]
fn a_malformed_span_of_a_collector_file_is_refused_at_its_line() {
    let ws = Workspace::new();
    let text = std::fs::read_to_string(data("traces/otel-genai.jsonl")).unwrap();
    let mut lines: Vec<Value> = text
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect();
    // The Oslo run's first span, on the first line, loses its span id.
    lines[0]["resourceSpans"][0]["scopeSpans"][1]["spans"][0]
        .as_object_mut()
        .unwrap()
        .remove("spanId");
    ws.write_rows("otel-genai.jsonl", &lines);
    ws.write("suite.yaml", COLLECTOR_SUITE);
    let run = ws.gavel(&["validate", "suite.yaml"]);
    let err = stderr(&run);
    assert_ne!(run.status.code(), Some(0), "{err}");
    assert!(
        err.contains(
            "otel-genai.jsonl: line 1: trace 00000000000000000000000000000005: \
             trajectory[0].resourceSpans[0].scopeSpans[0].spans[0]: missing field `spanId`"
        ),
        "{err}"
    );
}

const INSPECT_SUITE: &str = "\
name: rescored
dataset: LOG
graders:
  answer:
    kind: tool
    function: contains
  weather:
    kind: tool
    function: contains
    extractor: tool_output
    extractor_config: {tool_name: get_weather}
  tools:
    kind: tool
    function: tools_called
    config: {required: [get_weather]}
";

/// The suite over the Inspect log `name`, copied into `ws`.
fn inspect_suite(ws: &Workspace, name: &str) {
    std::fs::copy(data(&format!("traces/{name}")), ws.path(name)).unwrap();
    ws.write("suite.yaml", &INSPECT_SUITE.replace("LOG", name));
}

#[test]
fn an_inspect_log_is_a_dataset_of_a_row_per_sample_and_epoch() {
    let mut graded = Vec::new();
    for name in ["inspect-weather.eval", "inspect-weather.json"] {
        let ws = Workspace::new();
        inspect_suite(&ws, name);
        let run = ws.gavel(&["run", "suite.yaml", "-o", "out", "-q"]);
        assert_eq!(run.status.code(), Some(0), "{name}: {}", stderr(&run));
        let results = ws.results("out");
        let ids: Vec<&str> = results
            .iter()
            .map(|r| r["sample_id"].as_str().unwrap())
            .collect();
        assert_eq!(ids, ["paris", "paris"], "{name}: a row per epoch");
        for result in &results {
            for grader in ["answer", "weather", "tools"] {
                assert_eq!(result["grades"][grader]["score"], 1.0, "{name}: {result}");
            }
            assert_eq!(result["grades"]["weather"]["submission"], "18C, sunny");
        }
        // The two epochs are two runs of one sample.
        let summary = ws.summary("out");
        assert_eq!(summary["counts"]["samples"], 1, "{name}: {summary}");
        assert_eq!(
            summary["metrics"]["answer"]["pass_at_k"]["2"], 1.0,
            "{name}: {summary}"
        );
        graded.push(
            results
                .iter()
                .map(|r| r["grades"].clone())
                .collect::<Vec<_>>(),
        );
    }
    assert_eq!(graded[0], graded[1], "the .eval log against the .json log");
}

#[test]
fn a_malformed_inspect_log_is_refused_at_its_line() {
    let ws = Workspace::new();
    inspect_suite(&ws, "inspect-weather.json");
    let text = std::fs::read_to_string(ws.path("inspect-weather.json")).unwrap();
    // The first sample's tool call loses the name of its tool.
    let at = text.find("\"samples\": [").unwrap();
    let call = at + text[at..].find("\"function\": \"get_weather\",").unwrap();
    let broken = format!(
        "{}\"fn\"{}",
        &text[..call],
        &text[call + "\"function\"".len()..]
    );
    ws.write("inspect-weather.json", &broken);
    // The line after the one that opens the list, where the sample starts.
    let line = text[..at].lines().count() + 1;
    let run = ws.gavel(&["validate", "suite.yaml"]);
    let err = stderr(&run);
    assert_ne!(run.status.code(), Some(0), "{err}");
    let expected = format!(
        "inspect-weather.json: line {line}: trajectory.messages[2].tool_calls[0]: missing field \
         `function`"
    );
    assert!(err.contains(&expected), "{expected}\n{err}");
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

/// The records of a Claude Code session `id` that asks for the weather in `city`.
pub fn session(id: &str, city: &str) -> [Value; 3] {
    [
        serde_json::json!({"parentUuid": null, "sessionId": id, "type": "user",
            "message": {"role": "user", "content": format!("What is the weather in {city}?")},
            "uuid": "u1"}),
        serde_json::json!({"parentUuid": "u1", "sessionId": id, "type": "assistant",
            "message": {"id": "msg_1", "type": "message", "role": "assistant", "model": "claude-x",
                "content": [{"type": "tool_use", "id": "toolu_1", "name": "get_weather",
                    "input": {"city": city}}],
                "stop_reason": "tool_use", "usage": {"input_tokens": 50, "output_tokens": 12}},
            "uuid": "a1"}),
        serde_json::json!({"parentUuid": "a1", "sessionId": id, "type": "user",
            "message": {"role": "user", "content": [{"type": "tool_result",
                "tool_use_id": "toolu_1", "content": format!("{city}: 18C, sunny")}]},
            "uuid": "u2"}),
    ]
}

/// [`session`] as newer Claude Code versions write it: a file-history snapshot first, a record
/// with no session keys, so that detection misses it.
fn snapshot_first(id: &str, city: &str) -> Vec<Value> {
    let mut records = vec![serde_json::json!({"type": "file-history-snapshot",
        "messageId": "m0", "snapshot": {"trackedFileBackups": {}}, "isSnapshotUpdate": false})];
    records.extend(session(id, city));
    records
}

#[test]
fn a_claude_code_session_file_is_a_dataset_of_one_row() {
    let ws = Workspace::new();
    let records = session("s1", "Paris");
    ws.write_rows("s1.jsonl", &records);
    ws.write(
        "suite.yaml",
        &COLLECTOR_SUITE.replace("otel-genai.jsonl", "s1.jsonl"),
    );
    let run = ws.gavel(&["run", "suite.yaml", "-o", "out", "-q"]);
    assert_eq!(run.status.code(), Some(0), "{}", stderr(&run));
    let results = ws.results("out");
    assert_eq!(results.len(), 1);
    assert_eq!(results[0]["sample_id"], "s1");
    assert_eq!(
        results[0]["grades"]["weather"]["submission"],
        "Paris: 18C, sunny"
    );
    assert_eq!(results[0]["grades"]["tools"]["score"], 1.0);
}

#[test]
fn a_folder_of_session_files_is_a_dataset_of_a_row_per_file_in_name_order() {
    let ws = Workspace::new();
    ws.write_rows("sessions/b.jsonl", &session("s-oslo", "Oslo"));
    ws.write_rows("sessions/a.jsonl", &session("s-paris", "Paris"));
    ws.write("sessions/notes.txt", "not a session, not read");
    ws.write(
        "suite.yaml",
        &COLLECTOR_SUITE.replace("otel-genai.jsonl", "sessions"),
    );
    let run = ws.gavel(&["run", "suite.yaml", "-o", "out", "-q"]);
    assert_eq!(run.status.code(), Some(0), "{}", stderr(&run));
    let results = ws.results("out");
    let ids: Vec<&Value> = results.iter().map(|r| &r["sample_id"]).collect();
    assert_eq!(ids, ["s-paris", "s-oslo"]);
    assert_eq!(
        results[1]["grades"]["weather"]["submission"],
        "Oslo: 18C, sunny"
    );
    // A session recorded twice is refused, naming both files.
    ws.write_rows("sessions/c.jsonl", &session("s-paris", "Rome"));
    let run = ws.gavel(&["run", "suite.yaml", "-o", "out2", "-q"]);
    assert_eq!(run.status.code(), Some(2));
    let err = stderr(&run);
    assert!(
        err.contains("c.jsonl: session \"s-paris\" is also the session of ")
            && err.contains("a.jsonl: a session is one row; remove one of the two files"),
        "{err}"
    );
    // A file of the folder that is not a session is refused at its line.
    std::fs::remove_file(ws.path("sessions/c.jsonl")).unwrap();
    ws.write_rows("sessions/rows.jsonl", &[serde_json::json!({"id": 1})]);
    let run = ws.gavel(&["run", "suite.yaml", "-o", "out3", "-q"]);
    assert_eq!(run.status.code(), Some(2));
    let err = stderr(&run);
    assert!(
        err.contains("rows.jsonl: line 1: not a Claude Code transcript record"),
        "{err}"
    );
}

#[test]
fn session_files_are_recorded_runs_joined_to_rows_by_session_id() {
    let ws = Workspace::new();
    ws.write_rows("sessions/a.jsonl", &session("s-paris", "Paris"));
    ws.write_rows("sessions/b.jsonl", &session("s-oslo", "Oslo"));
    ws.write_rows("oslo.jsonl", &session("s-oslo", "Oslo"));
    ws.write_rows(
        "data.jsonl",
        &[
            serde_json::json!({"id": "s-oslo", "ground_truth": "Oslo: 18C, sunny"}),
            serde_json::json!({"id": "s-paris", "ground_truth": "Paris: 18C, sunny"}),
        ],
    );
    ws.write(
        "suite.yaml",
        "name: sessions\ndataset: data.jsonl\ntrajectories: sessions\ngraders:\n  weather:\n    \
         kind: tool\n    function: exact_match\n    extractor: tool_output\n    \
         extractor_config: {tool_name: get_weather}\n",
    );
    let run = ws.gavel(&["run", "suite.yaml", "-o", "out", "-q"]);
    assert_eq!(run.status.code(), Some(0), "{}", stderr(&run));
    let results = ws.results("out");
    // In the order of the runs: the folder's files by name.
    let ids: Vec<&Value> = results.iter().map(|r| &r["sample_id"]).collect();
    assert_eq!(ids, ["s-paris", "s-oslo"]);
    for result in &results {
        assert_eq!(result["grades"]["weather"]["score"], 1.0, "{result}");
    }
    // One session file, given on the command line.
    let run = ws.gavel(&[
        "run",
        "suite.yaml",
        "--trajectories",
        "oslo.jsonl",
        "-o",
        "one",
        "-q",
    ]);
    assert_eq!(run.status.code(), Some(0), "{}", stderr(&run));
    let results = ws.results("one");
    assert_eq!(results.len(), 1);
    assert_eq!(results[0]["sample_id"], "s-oslo");
    assert_eq!(results[0]["grades"]["weather"]["score"], 1.0);
}

#[test]
fn a_named_format_reads_a_file_that_detection_misses() {
    let ws = Workspace::new();
    ws.write_rows("s1.jsonl", &snapshot_first("s1", "Paris"));
    let suite = COLLECTOR_SUITE.replace("otel-genai.jsonl", "s1.jsonl");
    ws.write("suite.yaml", &format!("{suite}format: claude_code\n"));
    let run = ws.gavel(&["run", "suite.yaml", "-o", "out", "-q"]);
    assert_eq!(run.status.code(), Some(0), "{}", stderr(&run));
    assert_eq!(
        ids_and_weather(&ws, "out"),
        [("s1".to_string(), "Paris: 18C, sunny".to_string())]
    );

    // An Inspect log written on one line, which is no JSON Lines row.
    let log: Value = serde_json::from_str(
        &std::fs::read_to_string(data("traces/inspect-weather.json")).unwrap(),
    )
    .unwrap();
    ws.write("compact.json", &log.to_string());
    let suite = INSPECT_SUITE.replace("LOG", "compact.json");
    ws.write("inspect.yaml", &format!("{suite}format: inspect\n"));
    let run = ws.gavel(&["run", "inspect.yaml", "-o", "inspect", "-q"]);
    assert_eq!(run.status.code(), Some(0), "{}", stderr(&run));
    let results = ws.results("inspect");
    let ids: Vec<&Value> = results.iter().map(|r| &r["sample_id"]).collect();
    assert_eq!(ids, ["paris", "paris"]);
    assert_eq!(results[0]["grades"]["weather"]["submission"], "18C, sunny");
}

#[test]
fn a_folder_under_a_named_format_reads_each_file_as_that_format() {
    let ws = Workspace::new();
    ws.write_rows("sessions/a.jsonl", &session("s-paris", "Paris"));
    ws.write_rows("sessions/b.jsonl", &snapshot_first("s-oslo", "Oslo"));
    let suite = COLLECTOR_SUITE.replace("otel-genai.jsonl", "sessions");
    ws.write("suite.yaml", &format!("{suite}format: claude_code\n"));
    let run = ws.gavel(&["run", "suite.yaml", "-o", "out", "-q"]);
    assert_eq!(run.status.code(), Some(0), "{}", stderr(&run));
    assert_eq!(
        ids_and_weather(&ws, "out"),
        [
            ("s-paris".to_string(), "Paris: 18C, sunny".to_string()),
            ("s-oslo".to_string(), "Oslo: 18C, sunny".to_string())
        ]
    );
    // Detected, the snapshot's file is no session.
    ws.write("detected.yaml", &suite);
    let run = ws.gavel(&["run", "detected.yaml", "-o", "detected", "-q"]);
    assert_eq!(run.status.code(), Some(2));
    assert!(
        stderr(&run).contains("b.jsonl: line 1: not a Claude Code transcript record"),
        "{}",
        stderr(&run)
    );
    // A file of another format in the folder is refused, named, saying what was expected.
    std::fs::copy(data("traces/otel-genai.jsonl"), ws.path("sessions/c.jsonl")).unwrap();
    let run = ws.gavel(&["run", "suite.yaml", "-o", "other", "-q"]);
    assert_eq!(run.status.code(), Some(2));
    let err = stderr(&run);
    assert!(
        err.contains(
            "c.jsonl: this is an OpenTelemetry collector file (OTLP JSON), but the suite's \
             `format: claude_code` expects a Claude Code session file"
        ),
        "{err}"
    );
}

#[test]
fn a_file_not_of_the_named_format_is_refused_saying_what_was_expected() {
    let ws = Workspace::new();
    std::fs::copy(data("traces/otel-genai.jsonl"), ws.path("otel-genai.jsonl")).unwrap();
    ws.write(
        "suite.yaml",
        &format!("{COLLECTOR_SUITE}format: claude_code\n"),
    );
    for command in [
        &["run", "suite.yaml", "-o", "out", "-q"][..],
        &["validate", "suite.yaml"],
    ] {
        let run = ws.gavel(command);
        assert_eq!(run.status.code(), Some(2), "{command:?}");
        let err = stderr(&run);
        assert!(
            err.contains(
                "otel-genai.jsonl: this is an OpenTelemetry collector file (OTLP JSON), but the \
                 suite's `format: claude_code` expects a Claude Code session file"
            ),
            "{command:?}: {err}"
        );
    }

    inspect_suite(&ws, "inspect-weather.eval");
    let suite = std::fs::read_to_string(ws.path("suite.yaml")).unwrap();
    ws.write("suite.yaml", &format!("{suite}format: letta\n"));
    let run = ws.gavel(&["run", "suite.yaml", "-o", "letta", "-q"]);
    assert_eq!(run.status.code(), Some(2));
    let err = stderr(&run);
    assert!(
        err.contains(
            "inspect-weather.eval: this is an Inspect log, but the suite's `format: letta` \
             expects JSON Lines of dataset rows or run records"
        ),
        "{err}"
    );

    // A file read as the named format is refused at the line that is not of it.
    ws.write_rows("data.jsonl", &[serde_json::json!({"input": "hi"})]);
    ws.write(
        "suite.yaml",
        &format!(
            "{}format: claude_code\n",
            COLLECTOR_SUITE.replace("otel-genai.jsonl", "data.jsonl")
        ),
    );
    let run = ws.gavel(&["run", "suite.yaml", "-o", "rows", "-q"]);
    assert_eq!(run.status.code(), Some(2));
    let err = stderr(&run);
    assert!(err.contains("data.jsonl: line 1: "), "{err}");
}

/// The ids and weather-tool outputs of the results in `out`.
fn ids_and_weather(ws: &Workspace, out: &str) -> Vec<(String, String)> {
    ws.results(out)
        .iter()
        .map(|r| {
            (
                r["sample_id"].as_str().unwrap().to_string(),
                r["grades"]["weather"]["submission"]
                    .as_str()
                    .unwrap()
                    .to_string(),
            )
        })
        .collect()
}

/// The two agent runs of the GenAI collector file recorded in one trace, as a service that
/// traces a whole session writes them.
fn one_trace() -> String {
    std::fs::read_to_string(data("traces/otel-genai.jsonl"))
        .unwrap()
        .replace(
            "00000000000000000000000000000005",
            "00000000000000000000000000000001",
        )
}

#[test]
fn a_collector_file_gives_a_sample_per_root_span_when_the_suite_says_so() {
    let ws = Workspace::new();
    let text = std::fs::read_to_string(data("traces/otel-genai.jsonl")).unwrap();
    let one_trace = one_trace();
    assert_ne!(one_trace, text);
    ws.write("otel-genai.jsonl", &text);
    ws.write("one-trace.jsonl", &one_trace);
    let per_root = format!("{COLLECTOR_SUITE}sample_per: root_span\n");
    ws.write("per-root.yaml", &per_root);
    ws.write(
        "one-trace.yaml",
        &COLLECTOR_SUITE.replace("otel-genai.jsonl", "one-trace.jsonl"),
    );
    ws.write(
        "one-trace-per-root.yaml",
        &per_root.replace("otel-genai.jsonl", "one-trace.jsonl"),
    );
    for (suite, out) in [
        ("per-root.yaml", "per-root"),
        ("one-trace.yaml", "one-trace"),
        ("one-trace-per-root.yaml", "one-trace-per-root"),
    ] {
        let run = ws.gavel(&["run", suite, "-o", out, "-q"]);
        assert_eq!(run.status.code(), Some(0), "{suite}: {}", stderr(&run));
    }
    let (paris, oslo) = ("18C, sunny".to_string(), "4C, snow".to_string());
    // Each agent span is the root of its trace: a sample each, named by trace and span.
    assert_eq!(
        ids_and_weather(&ws, "per-root"),
        [
            (
                "00000000000000000000000000000001:0000000000000003".to_string(),
                paris.clone()
            ),
            (
                "00000000000000000000000000000005:0000000000000007".to_string(),
                oslo.clone()
            ),
        ]
    );
    // One trace of two runs is one sample, or two, one per root span.
    let one = ws.results("one-trace");
    assert_eq!(one.len(), 1);
    assert_eq!(one[0]["sample_id"], "00000000000000000000000000000001");
    assert_eq!(
        ids_and_weather(&ws, "one-trace-per-root"),
        [
            (
                "00000000000000000000000000000001:0000000000000003".to_string(),
                paris
            ),
            (
                "00000000000000000000000000000001:0000000000000007".to_string(),
                oslo
            ),
        ]
    );
}

/// What the recorded weather runs were asked.
const PARIS: &str = "What is the weather in Paris?";
const OSLO: &str = "What is the weather in Oslo?";

/// An evaldeck project in `dir` of the cases `(name, input, tool expected called)`.
fn weather_cases(ws: &Workspace, dir: &str, cases: &[(&str, &str, &str)]) {
    for (name, input, tool) in cases {
        ws.write(
            &format!("{dir}/{name}.yaml"),
            &format!("name: {name}\ninput: {input:?}\nexpected:\n  tools_called: [{tool}]\n"),
        );
    }
}

/// `gavel run DIR --traces TRACES` into `out-DIR`: its results' ids, statuses and submissions.
fn graded_cases(ws: &Workspace, dir: &str, traces: &str) -> Vec<(String, String, String)> {
    let out = format!("out-{dir}");
    let run = ws.gavel(&["run", dir, "--traces", traces, "-o", &out, "-q"]);
    assert_eq!(run.status.code(), Some(0), "{dir}: {}", stderr(&run));
    ws.results(&out)
        .iter()
        .map(|r| {
            let case = &r["grades"]["case"];
            let text = |v: &Value| v.as_str().unwrap_or_default().to_string();
            (
                text(&r["sample_id"]),
                text(&case["status"]),
                text(&case["submission"]),
            )
        })
        .collect()
}

#[test]
fn each_recorded_format_given_as_traces_is_paired_with_its_case() {
    let ws = Workspace::new();
    for name in [
        "otel-genai.jsonl",
        "otel-openinference.json",
        "responses-object.json",
        "responses-items.json",
        "anthropic-conversation.json",
        "inspect-weather.eval",
        "inspect-weather.json",
    ] {
        std::fs::copy(data(&format!("traces/{name}")), ws.path(name)).unwrap();
    }
    ws.write_rows("sessions/a.jsonl", &session("s-oslo", "Oslo"));
    ws.write_rows("sessions/b.jsonl", &session("s-paris", "Paris"));
    let pass =
        |id: &str, submission: &str| (id.to_string(), "pass".to_string(), submission.to_string());
    let answer = "Paris: 18C and sunny.";

    // GenAI spans carry no case name: each trace is paired by the question it was asked.
    weather_cases(
        &ws,
        "genai",
        &[
            ("weather", PARIS, "get_weather"),
            ("oslo", OSLO, "get_weather"),
        ],
    );
    assert_eq!(
        graded_cases(&ws, "genai", "otel-genai.jsonl"),
        [pass("oslo", "Oslo: 4C with snow."), pass("weather", answer)]
    );
    // OpenInference's `using_metadata({"case_name": ...})` names the case, whatever its input.
    weather_cases(&ws, "oi", &[("weather", "Paris?", "get_weather")]);
    assert_eq!(
        graded_cases(&ws, "oi", "otel-openinference.json"),
        [pass("weather", answer)]
    );
    // So does the metadata a Responses object gives back (it records no input).
    weather_cases(&ws, "object", &[("fahrenheit", "In F?", "web_search")]);
    assert_eq!(
        graded_cases(&ws, "object", "responses-object.json"),
        [pass("fahrenheit", "18C (64.4F) and sunny.")]
    );
    // Responses items and an Anthropic conversation: by their first user message.
    for (dir, file) in [
        ("items", "responses-items.json"),
        ("anthropic", "anthropic-conversation.json"),
    ] {
        weather_cases(&ws, dir, &[("weather", PARIS, "get_weather")]);
        assert_eq!(
            graded_cases(&ws, dir, file),
            [pass("weather", answer)],
            "{file}"
        );
    }
    // An Inspect sample names its case in its metadata (`Sample(metadata=...)`), each epoch a
    // run of it.
    weather_cases(&ws, "named", &[("weather", "Paris?", "get_weather")]);
    assert_eq!(
        graded_cases(&ws, "named", "inspect-weather.eval"),
        [pass("weather", answer), pass("weather", answer)]
    );
    // Else by its id, else by its input.
    let mut log: Value =
        serde_json::from_str(&std::fs::read_to_string(ws.path("inspect-weather.json")).unwrap())
            .unwrap();
    for sample in log["samples"].as_array_mut().unwrap() {
        sample["metadata"] = serde_json::json!({});
    }
    ws.write("unnamed.json", &serde_json::to_string_pretty(&log).unwrap());
    weather_cases(&ws, "by-id", &[("paris", "Paris?", "get_weather")]);
    assert_eq!(
        graded_cases(&ws, "by-id", "unnamed.json"),
        [pass("paris", answer), pass("paris", answer)]
    );
    weather_cases(&ws, "by-input", &[("weather", PARIS, "get_weather")]);
    assert_eq!(
        graded_cases(&ws, "by-input", "unnamed.json"),
        [pass("weather", answer), pass("weather", answer)]
    );
    // Claude Code sessions: by the first prompt.
    weather_cases(
        &ws,
        "claude",
        &[
            ("weather", PARIS, "get_weather"),
            ("oslo", OSLO, "get_weather"),
        ],
    );
    assert_eq!(
        graded_cases(&ws, "claude", "sessions"),
        [pass("oslo", ""), pass("weather", "")]
    );
}

#[test]
fn a_recorded_run_paired_with_no_case_is_refused_naming_its_sample_and_what_it_lacks() {
    let ws = Workspace::new();
    for name in [
        "otel-genai.jsonl",
        "anthropic-message.json",
        "anthropic-conversation.json",
        "inspect-weather.eval",
    ] {
        std::fs::copy(data(&format!("traces/{name}")), ws.path(name)).unwrap();
    }
    weather_cases(&ws, "cases", &[("weather", PARIS, "get_weather")]);
    let refused = |traces: &str| {
        let run = ws.gavel(&["run", "cases", "--traces", traces, "-o", "out", "-q"]);
        assert_eq!(run.status.code(), Some(2), "{traces}");
        assert!(!ws.path("out/results.jsonl").exists(), "{traces}");
        let err = stderr(&run);
        let errors: Vec<String> = err
            .lines()
            .filter(|l| l.starts_with("error: "))
            .map(str::to_string)
            .collect();
        (errors, err)
    };
    let lacks = "missing: a trace names the case it records, or was given a case's input; ";
    let (errors, err) = refused("otel-genai.jsonl");
    assert_eq!(
        errors,
        [format!(
            "error: otel-genai.jsonl:1: metadata.case_name: sample \
             `00000000000000000000000000000005`: {lacks}its id is no case's name, and its input \
             \"{OSLO}\" is no case's input"
        )],
        "{err}"
    );
    assert!(
        err.contains("using_metadata({\"case_name\": NAME})"),
        "{err}"
    );
    let (errors, err) = refused("anthropic-message.json");
    assert_eq!(
        errors[0],
        format!("error: anthropic-message.json:1: metadata.case_name: {lacks}it records no input"),
        "{err}"
    );
    // Both epochs of the Inspect sample, at their places in the log.
    weather_cases(&ws, "other", &[("forecast", PARIS, "get_weather")]);
    let run = ws.gavel(&[
        "run",
        "other",
        "--traces",
        "inspect-weather.eval",
        "-o",
        "out",
    ]);
    assert_eq!(run.status.code(), Some(2));
    let err = stderr(&run);
    for epoch in [1, 2] {
        assert!(
            err.contains(&format!(
                "error: inspect-weather.eval:{epoch}: metadata.case_name: sample `paris` (epoch \
                 {epoch}): no case is named `weather` in other\n"
            )),
            "{err}"
        );
    }
    // A run whose input is the input of two cases names its case.
    weather_cases(
        &ws,
        "cases",
        &[
            ("weather", PARIS, "get_weather"),
            ("again", PARIS, "get_weather"),
        ],
    );
    let (errors, err) = refused("anthropic-conversation.json");
    assert_eq!(
        errors[0],
        "error: anthropic-conversation.json:1: metadata.case_name: missing, and its input is the \
         input of several cases: `again`, `weather`",
        "{err}"
    );
}

/// A collector file of one trace holding two agent runs, under a suite that makes each root
/// span a sample (where the default makes the trace one), graded into `clean`: its results.
fn one_trace_per_root_span(ws: &Workspace) -> String {
    ws.write("one-trace.jsonl", &one_trace());
    ws.write(
        "suite.yaml",
        &format!(
            "{}sample_per: root_span\n",
            COLLECTOR_SUITE.replace("otel-genai.jsonl", "one-trace.jsonl")
        ),
    );
    let run = ws.gavel(&["run", "suite.yaml", "-o", "clean", "-q"]);
    assert_eq!(run.status.code(), Some(0), "{}", stderr(&run));
    assert_eq!(ws.results("clean").len(), 2);
    std::fs::read_to_string(ws.path("clean/results.jsonl")).unwrap()
}

#[test]
fn resume_reads_a_recording_with_the_suites_settings() {
    let ws = Workspace::new();
    let clean = one_trace_per_root_span(&ws);
    let first = clean.split_inclusive('\n').next().unwrap();
    ws.write("resumed/results.jsonl", first);
    let run = ws.gavel(&["run", "suite.yaml", "-o", "resumed", "-q", "--resume"]);
    assert_eq!(run.status.code(), Some(0), "{}", stderr(&run));
    assert_eq!(
        std::fs::read_to_string(ws.path("resumed/results.jsonl")).unwrap(),
        clean
    );
}

#[test]
fn retry_errors_reads_a_recording_with_the_suites_settings() {
    let ws = Workspace::new();
    let clean = one_trace_per_root_span(&ws);
    let run = ws.gavel(&["run", "suite.yaml", "-o", "retried", "-q"]);
    assert_eq!(run.status.code(), Some(0), "{}", stderr(&run));
    let lines: Vec<&str> = clean.split_inclusive('\n').collect();
    let failed = format!(
        "{}{{\"sample_id\":\"00000000000000000000000000000001:0000000000000007\",\"grades\":{{}},\
         \"error\":{{\"category\":\"grading\",\"message\":\"internal error\"}}}}\n",
        lines[0]
    );
    ws.write("retried/results.jsonl", &failed);
    let run = ws.gavel(&["run", "suite.yaml", "-o", "retried", "--retry-errors"]);
    assert_eq!(run.status.code(), Some(0), "{}", stderr(&run));
    assert_eq!(
        std::fs::read_to_string(ws.path("retried/results.jsonl")).unwrap(),
        clean
    );
}

/// `gavel report` of the run in `out`: the user messages each sample shows, in order.
fn reported_questions(ws: &Workspace, out: &str) -> Vec<Vec<Value>> {
    let page = format!("{out}.html");
    let run = ws.gavel(&["report", out, "-o", &page]);
    assert_eq!(run.status.code(), Some(0), "{}", stderr(&run));
    let html = std::fs::read_to_string(ws.path(&page)).unwrap();
    let details = script_data(&html, "details-data");
    details
        .as_array()
        .unwrap()
        .iter()
        .map(|detail| {
            assert!(detail["sample"]["problem"].is_null(), "{detail}");
            detail["sample"]["trajectory"]["turns"]
                .as_array()
                .unwrap()
                .iter()
                .flat_map(|turn| turn.as_array().unwrap())
                .filter(|event| event["type"] == "user")
                .map(|event| event["content"].clone())
                .collect()
        })
        .collect()
}

#[test]
fn report_reads_a_recording_with_the_runs_settings() {
    let ws = Workspace::new();
    // Each sample shows its own run: the question its root span was asked, and no other.
    one_trace_per_root_span(&ws);
    assert_eq!(reported_questions(&ws, "clean"), [[PARIS], [OSLO]]);
    // A session that only `format: claude_code` reads as one.
    ws.write_rows("s1.jsonl", &snapshot_first("s1", "Oslo"));
    let suite = COLLECTOR_SUITE.replace("otel-genai.jsonl", "s1.jsonl");
    ws.write("session.yaml", &format!("{suite}format: claude_code\n"));
    let run = ws.gavel(&["run", "session.yaml", "-o", "session", "-q"]);
    assert_eq!(run.status.code(), Some(0), "{}", stderr(&run));
    assert_eq!(reported_questions(&ws, "session"), [[OSLO]]);
}
