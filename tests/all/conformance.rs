//! Every vector recorded from letta-evals 0.26.0 and evaldeck 0.1.5, through the real
//! `gavel run` path: a suite and a dataset row per vector.

use crate::common::{Workspace, load_json, stderr, stdout};
use serde_json::{Value, json};

const DATE: &str = "2026-01-01T00:00:00Z";

/// Runs a one-grader suite over one row; returns the grade, or the failed run's stderr.
fn grade_one(grader: Value, row: Value) -> Result<Value, (i32, String)> {
    let ws = Workspace::new();
    let suite = json!({"name": "vector", "dataset": "data.jsonl", "graders": {"g": grader}});
    // JSON is YAML: the suite is written as JSON text.
    ws.write("suite.yaml", &suite.to_string());
    ws.write_rows("data.jsonl", &[row]);
    let output = ws.gavel(&["run", "suite.yaml", "-o", "out", "--quiet"]);
    if !output.status.success() {
        return Err((output.status.code().unwrap_or(-1), stderr(&output)));
    }
    let results = ws.results("out");
    assert_eq!(results.len(), 1, "one result line per row");
    Ok(results[0]["grades"]["g"].clone())
}

fn assistant(text: &Value) -> Value {
    json!([[{"id": "message-1", "date": DATE, "message_type": "assistant_message", "content": text}]])
}

/// Errors letta-evals raises from a config it could have checked up front; gavel refuses the
/// suite before grading (SPEC section 12).
fn is_static(error_type: &str) -> bool {
    matches!(error_type, "KeyError" | "ValueError" | "error")
}

#[test]
fn letta_vectors_through_gavel_run() {
    let vectors = load_json("conformance/letta-vectors.json");
    let mut failures = Vec::new();
    let mut checked = 0;
    for (i, v) in vectors.as_array().expect("a list").iter().enumerate() {
        let name = v["name"].as_str().unwrap_or_default();
        let config = &v["config"];
        let sample = v["sample"].clone();
        let (grader, row) = match v["kind"].as_str() {
            Some("extractor") => {
                let expected = &v["expected"];
                let truth = expected.as_str().unwrap_or("");
                let mut row = json!({"id": 0, "input": "x", "ground_truth": truth, "trajectory": v["trajectory"]});
                if !v["agent_state"].is_null() {
                    row["agent_state"] = v["agent_state"].clone();
                }
                (
                    json!({"kind": "tool", "function": "exact_match", "extractor": name, "extractor_config": config}),
                    row,
                )
            }
            Some("grader") => {
                let mut row = json!({"id": 0});
                for key in ["input", "ground_truth"] {
                    if let Some(value) = sample.get(key).filter(|v| !v.is_null()) {
                        row[key] = value.clone();
                    }
                }
                if config["mode"] == "direct" {
                    row["trajectory"] = assistant(&v["submission"]);
                    (json!({"kind": "tool", "function": name}), row)
                } else {
                    row["trajectory"] = v["trajectory"].clone();
                    let mut grader = json!({"kind": "tool", "function": config["function"]});
                    for key in ["extractor", "extractor_config"] {
                        if let Some(value) = config.get(key) {
                            grader[key] = value.clone();
                        }
                    }
                    (grader, row)
                }
            }
            other => panic!("vector {i}: unknown kind {other:?}"),
        };
        checked += 1;
        let outcome = grade_one(grader, row);
        let expected = &v["expected"];
        let verdict: Result<(), String> = match (&outcome, expected.get("error")) {
            (Err((code, err)), Some(error)) if is_static(error["type"].as_str().unwrap_or("")) => {
                if *code == 2 && err.contains("extractor_config") {
                    Ok(())
                } else {
                    Err(format!(
                        "expected a suite error (exit 2) naming extractor_config, got {code}: {err}"
                    ))
                }
            }
            (Ok(grade), Some(_)) => {
                if grade["status"] == "error" {
                    Ok(())
                } else {
                    Err(format!("expected an error grade, got {grade}"))
                }
            }
            (Err((code, err)), _) => Err(format!("gavel run failed ({code}): {err}")),
            (Ok(grade), None) => check_letta_grade(v, grade),
        };
        if let Err(why) = verdict {
            failures.push(format!("vector {i} ({} {name}): {why}", v["kind"]));
        }
    }
    assert!(checked >= 80, "the vector file holds the recorded vectors");
    assert!(
        failures.is_empty(),
        "{} of {checked} vectors differ:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

fn check_letta_grade(v: &Value, grade: &Value) -> Result<(), String> {
    let expected = &v["expected"];
    if v["kind"] == "extractor" {
        let want = expected.as_str().unwrap_or("");
        let got = grade["submission"].as_str().unwrap_or_default();
        return if got == want {
            Ok(())
        } else {
            Err(format!("extracted {got:?}, expected {want:?}"))
        };
    }
    let direct_empty = v["config"]["mode"] == "direct" && v["submission"] == "";
    if direct_empty {
        // Through `gavel run` an empty submission meets letta-evals' guard, as it does in
        // letta-evals' own pipeline: the function is not called.
        return if grade["score"] == 0.0
            && grade["rationale"] == "Empty submission - extractor found no content"
        {
            Ok(())
        } else {
            Err(format!("expected the empty-submission guard, got {grade}"))
        };
    }
    let mut problems = Vec::new();
    if grade["score"].as_f64() != expected["score"].as_f64() {
        problems.push(format!("score {} != {}", grade["score"], expected["score"]));
    }
    let rationale = expected["rationale"].as_str().unwrap_or_default();
    let got_rationale = grade["rationale"].as_str().unwrap_or_default();
    if got_rationale != rationale {
        problems.push(format!("rationale {got_rationale:?} != {rationale:?}"));
    }
    if let Some(submission) = expected.get("submission")
        && grade["submission"] != *submission
    {
        problems.push(format!(
            "submission {} != {submission}",
            grade["submission"]
        ));
    }
    if problems.is_empty() {
        Ok(())
    } else {
        Err(problems.join("; "))
    }
}

/// evaldeck grader names and the gavel check names they are.
const CHECK_NAMES: &[(&str, &str)] = &[
    ("contains", "output_contains"),
    ("not_contains", "output_not_contains"),
    ("equals", "output_equals"),
    ("regex", "output_matches"),
    ("tool_called", "tools_called"),
    ("tool_not_called", "tools_not_called"),
    ("tool_order", "tool_call_order"),
    ("max_steps", "max_steps"),
    ("max_tool_calls", "max_tool_calls"),
    ("max_llm_calls", "max_llm_calls"),
    ("task_completed", "task_completed"),
];

/// evaldeck class names -> gavel check names.
fn check_name(grader: &str) -> Option<&'static str> {
    CHECK_NAMES
        .iter()
        .find(|(evaldeck, _)| *evaldeck == grader)
        .map(|(_, gavel)| *gavel)
}

/// gavel check names -> evaldeck grader names.
fn grader_name(check: &str) -> Option<&'static str> {
    CHECK_NAMES
        .iter()
        .find(|(_, gavel)| *gavel == check)
        .map(|(evaldeck, _)| *evaldeck)
}

fn evaldeck_grader(grader: &str, params: &Value) -> Option<Value> {
    if grader == "composite" {
        let mut subs = serde_json::Map::new();
        for (i, sub) in params["graders"].as_array()?.iter().enumerate() {
            let spec = evaldeck_grader(sub["grader"].as_str()?, &sub["params"])?;
            subs.insert(format!("sub{i}"), spec);
        }
        let all = params
            .get("require_all")
            .and_then(Value::as_bool)
            .unwrap_or(true);
        return Some(json!({"kind": if all { "all" } else { "any" }, "graders": subs}));
    }
    Some(json!({"kind": "tool", "function": check_name(grader)?, "config": params}))
}

#[test]
fn evaldeck_vectors_through_gavel_run() {
    let vectors = load_json("conformance/evaldeck-vectors.json");
    let mut failures = Vec::new();
    let mut checked = 0;
    let mut not_applicable = std::collections::BTreeSet::new();
    for (i, v) in vectors.as_array().expect("a list").iter().enumerate() {
        let grader_name = v["grader"].as_str().unwrap_or_default();
        let params = &v["params"];
        let mut row = json!({"id": i, "input": "u", "trajectory": v["trace"]});
        let grader = if grader_name == "evaluator" {
            let case = &params["case"];
            if case.get("graders").is_some() {
                // evaldeck's per-case grader lists drop most types silently; informative only.
                not_applicable.insert("evaluator with graders:");
                continue;
            }
            row["expected"] = case["expected"].clone();
            json!({"kind": "expectations"})
        } else {
            match evaldeck_grader(grader_name, params) {
                Some(grader) => grader,
                None => {
                    // The LLM reply parser and Python custom graders have no YAML form here.
                    not_applicable.insert(grader_name);
                    continue;
                }
            }
        };
        if let Some(expected) = v.get("case_expected").filter(|e| !e.is_null()) {
            row["expected"] = expected.clone();
        }
        checked += 1;
        let mut want_status = v["expected_status"]
            .as_str()
            .unwrap_or_default()
            .to_string();
        let mut want_score = v["expected_score"].as_f64();
        if v["note"]
            .as_str()
            .is_some_and(|n| n.contains("produce NO graders"))
        {
            // SPEC section 12: gavel checks output_equals, output_matches and min_steps.
            want_status = "fail".to_string();
            want_score = None;
        }
        match grade_one(grader, row) {
            Ok(grade) => {
                let mut problems = Vec::new();
                if grade["status"] != want_status.as_str() {
                    problems.push(format!("status {} != {want_status}", grade["status"]));
                }
                if let Some(score) = want_score
                    && grade["score"].as_f64() != Some(score)
                {
                    problems.push(format!("score {} != {score}", grade["score"]));
                }
                if !problems.is_empty() {
                    failures.push(format!(
                        "vector {i} ({grader_name}): {} in {grade}",
                        problems.join("; ")
                    ));
                }
            }
            // SPEC section 12: a regex in a suite's config that cannot compile is refused before
            // grading (evaldeck errs on it mid-run).
            Err((2, err)) if err.contains("invalid regex") => {}
            Err((code, err)) => failures.push(format!(
                "vector {i} ({grader_name}): gavel run failed ({code}): {err}"
            )),
        }
    }
    let expected_na: std::collections::BTreeSet<&str> =
        ["custom", "evaluator with graders:", "llm_response"]
            .into_iter()
            .collect();
    assert!(
        not_applicable.is_subset(&expected_na),
        "vectors skipped without a reason: {not_applicable:?}"
    );
    assert!(checked >= 60, "the vector file holds the recorded vectors");
    assert!(
        failures.is_empty(),
        "{} of {checked} vectors differ:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

/// evaldeck's `test_no_expected_behavior`: a case with no `expected:`, an empty one, empty lists
/// or only `custom:` has no grader, and evaldeck passes it (with a `pass_rate` of 0).
#[test]
fn evaldeck_cases_with_nothing_to_check_pass() {
    let trace = json!({"input": "u", "output": "done", "status": "success", "steps": []});
    for expected in [
        None,
        Some(json!({})),
        Some(json!({"output_contains": [], "tools_called": []})),
        Some(json!({"custom": {"rubric": "polite"}})),
    ] {
        let mut row = json!({"id": 1, "input": "u", "trajectory": trace});
        if let Some(expected) = &expected {
            row["expected"] = expected.clone();
        }
        let grade = grade_one(json!({"kind": "expectations"}), row).expect("graded");
        assert_eq!(
            (&grade["status"], &grade["score"]),
            (&json!("pass"), &json!(0.0)),
            "expected: {expected:?} gave {grade}"
        );
    }
}

/// A case whose `expected.output_matches` is no valid regex, recorded from evaldeck 0.1.5 by
/// `gen_evaldeck_check_errors.py`: that check is evaldeck's error, worded as evaldeck words it
/// (CPython's `re.error` text), the other checks of the block still run, and the block's score is
/// evaldeck's pass rate. evaldeck marks the case ERROR and counts it among those that did not pass;
/// gavel fails the block, so the sample stays in the metric instead of being dropped as errored.
#[test]
fn an_invalid_output_matches_regex_is_that_checks_error_only() {
    let records = load_json("evaldeck-check-errors.json");
    let records = records.as_array().expect("a list");
    let rows: Vec<Value> = records
        .iter()
        .enumerate()
        .map(|(i, r)| json!({"id": i, "input": "u", "expected": r["expected"], "trajectory": r["trace"]}))
        .collect();
    let ws = Workspace::new();
    ws.write(
        "suite.yaml",
        "name: block\ndataset: data.jsonl\ngraders:\n  g: {kind: expectations}\n",
    );
    ws.write_rows("data.jsonl", &rows);
    let validated = ws.gavel(&["validate", "suite.yaml"]);
    assert!(validated.status.success(), "{}", stderr(&validated));
    let said = format!("{}{}", stdout(&validated), stderr(&validated));
    assert!(
        said.contains("graders.g: expected.output_matches is no valid regex (unterminated character set at position 0)"),
        "{said}"
    );
    let output = ws.gavel(&["run", "suite.yaml", "-o", "out", "--quiet"]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let results = ws.results("out");
    assert_eq!(results.len(), records.len());
    for (record, result) in records.iter().zip(&results) {
        let grade = &result["grades"]["g"];
        let want: Vec<Value> = record["grades"]
            .as_array()
            .expect("grades")
            .iter()
            .map(|g| json!([check_name(g[0].as_str().expect("name")), g[1], g[2]]))
            .collect();
        let got: Vec<Value> = grade["metadata"]["checks"]
            .as_array()
            .expect("checks")
            .iter()
            .map(|c| json!([c["check"], c["status"], c["message"]]))
            .collect();
        assert_eq!(got, want, "{}", record["expected"]);
        assert_eq!(record["status"], "error");
        assert_eq!(grade["status"], "fail", "{grade}");
        assert_eq!(grade["score"], record["pass_rate"], "{grade}");
        assert!(
            result.get("error").is_none(),
            "not a sample error: {result}"
        );
    }
    let summary = ws.summary("out");
    assert_eq!(summary["counts"]["errored"], 0);
    assert_eq!(summary["metrics"]["g"]["n"], records.len());
    assert_eq!(summary["metrics"]["g"]["pass_rate"], 0.0);
}

/// Every case recorded from evaldeck's suite runner in its `turns:` shape
/// (`record_evaldeck_turns.py`), graded by `kind: expectations` through `gavel run`: the case's
/// status, score (evaldeck's pass rate) and `failed_at_turn`, and each turn's status, skip and
/// checks with their messages, as evaldeck recorded them. The traces are given as a list, one
/// per turn, and a single-turn case's also as the trace alone.
#[test]
fn evaldeck_turn_vectors_through_gavel_run() {
    let vectors = load_json("conformance/evaldeck-turn-vectors.json");
    let vectors = vectors.as_array().expect("a list");
    let mut rows = Vec::new();
    let mut expected = Vec::new();
    for v in vectors {
        let traces = v["traces"].as_array().expect("traces");
        let mut forms = vec![Value::Array(traces.clone())];
        if traces.len() == 1 {
            forms.push(traces[0].clone());
        }
        for form in forms {
            let mut row = v["case"].clone();
            row["id"] = json!(rows.len());
            if !traces.is_empty() {
                row["trajectory"] = form;
            }
            rows.push(row);
            expected.push(v);
        }
    }
    let ws = Workspace::new();
    ws.write(
        "suite.yaml",
        "name: turns\ndataset: data.jsonl\ngraders:\n  case:\n    kind: expectations\n",
    );
    ws.write_rows("data.jsonl", &rows);
    let output = ws.gavel(&["run", "suite.yaml", "-o", "out", "--quiet"]);
    assert!(
        matches!(output.status.code(), Some(0)),
        "{}",
        stderr(&output)
    );
    let results = ws.results("out");
    assert_eq!(results.len(), rows.len());
    let mut failures = Vec::new();
    for (result, v) in results.iter().zip(&expected) {
        let name = v["case"]["name"].as_str().unwrap_or_default();
        if let Err(why) = check_turns_grade(&result["grades"]["case"], &v["expected"]) {
            failures.push(format!("{name} (row {}): {why}", result["sample_id"]));
        }
    }
    assert!(
        vectors.len() >= 14,
        "the vector file holds the recorded cases"
    );
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

pub(crate) fn check_turns_grade(grade: &Value, want: &Value) -> Result<(), String> {
    if grade["status"] != want["status"] {
        return Err(format!(
            "status {} != {} in {grade}",
            grade["status"], want["status"]
        ));
    }
    if grade["score"].as_f64() != want["pass_rate"].as_f64() {
        return Err(format!("score {} != {}", grade["score"], want["pass_rate"]));
    }
    if let Some(error) = want["error"].as_str() {
        return if grade["rationale"] == error {
            Ok(())
        } else {
            Err(format!("rationale {} != {error}", grade["rationale"]))
        };
    }
    let metadata = &grade["metadata"];
    if metadata["failed_at_turn"] != want["failed_at_turn"] {
        return Err(format!(
            "failed_at_turn {} != {}",
            metadata["failed_at_turn"], want["failed_at_turn"]
        ));
    }
    let turns: Vec<Value> = metadata["turns"]
        .as_array()
        .ok_or("no metadata.turns")?
        .iter()
        .map(|t| {
            let checks: Vec<Value> = t["checks"]
                .as_array()
                .into_iter()
                .flatten()
                .map(|c| {
                    let check = c["check"].as_str().unwrap_or_default();
                    json!([grader_name(check).unwrap_or(check), c["status"], c["message"]])
                })
                .collect();
            json!({"turn_index": t["turn_index"], "status": t["status"], "skipped": t["skipped"], "grades": checks})
        })
        .collect();
    if Value::Array(turns.clone()) != want["turns"] {
        return Err(format!("turns {} != {}", json!(turns), want["turns"]));
    }
    Ok(())
}
