//! `gavel diff`: two runs of a changed suite compared through the binary, their statistics
//! held to values computed with SciPy (`scipy.stats.binomtest`, `scipy.stats.ttest_1samp`).

use crate::common::{Workspace, stderr, stdout};
use serde_json::{Value, json};

const SUITE: &str = "name: capitals
dataset: data.jsonl
graders:
  answer:
    kind: tool
    function: contains
";

fn row(i: usize, right: bool) -> Value {
    let answer = if right { "It is Paris." } else { "It is Lyon." };
    json!({
        "id": format!("q{i}"),
        "input": "What is the capital of France?",
        "ground_truth": "Paris",
        "trajectory": [[
            {"id": "m1", "date": "2026-01-01T00:00:00Z", "message_type": "user_message", "content": "What is the capital of France?"},
            {"id": "m2", "date": "2026-01-01T00:00:01Z", "message_type": "assistant_message", "content": answer}
        ]]
    })
}

/// Two runs of 40 samples: the base passes q0..q29; the candidate fails q0..q14 and passes
/// q30 and q31 as well: 15 flips to fail, 2 to pass.
fn two_runs() -> Workspace {
    let ws = Workspace::new();
    ws.write("suite.yaml", SUITE);
    let base: Vec<Value> = (0..40).map(|i| row(i, i < 30)).collect();
    ws.write_rows("data.jsonl", &base);
    assert_eq!(
        ws.gavel(&["run", "suite.yaml", "-o", "base"]).status.code(),
        Some(0)
    );
    let candidate: Vec<Value> = (0..40).map(|i| row(i, (15..32).contains(&i))).collect();
    ws.write_rows("data.jsonl", &candidate);
    assert_eq!(
        ws.gavel(&["run", "suite.yaml", "-o", "cand"]).status.code(),
        Some(0)
    );
    ws
}

fn close(actual: &Value, expected: f64) {
    let actual = actual.as_f64().expect("a number");
    assert!(
        (actual - expected).abs() <= 1e-9 * expected.abs().max(1.0),
        "{actual} is not {expected}"
    );
}

#[test]
fn a_regression_is_measured_listed_and_fails_the_gate() {
    let ws = two_runs();
    let output = ws.gavel(&["diff", "base", "cand", "--json"]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let diff: Value = serde_json::from_str(&stdout(&output)).unwrap();
    assert_eq!(
        (diff["shared"].as_u64(), diff["only_in_base"].as_u64()),
        (Some(40), Some(0))
    );
    let m = &diff["metrics"][0];
    assert_eq!(m["metric"], "answer");
    assert_eq!(m["pairs"], 40);
    assert_eq!(
        (m["pass_to_fail"].as_u64(), m["fail_to_pass"].as_u64()),
        (Some(15), Some(2))
    );
    close(&m["base"]["pass_rate"], 0.75);
    close(&m["candidate"]["pass_rate"], 0.425);
    close(&m["pass_rate_change"], -0.325);
    close(&m["mcnemar_p"], 0.002_349_853_515_625);
    close(&m["mean_change"]["mean"], -0.325);
    close(&m["mean_change"]["p_value"], 0.000_908_827_285_583_187_2);
    close(&m["mean_change"]["interval"][0], -0.508_040_705_117_109_9);
    close(&m["mean_change"]["interval"][1], -0.141_959_294_882_890_2);
    assert_eq!(m["regressed"], true);
    assert_eq!(m["improved"], false);
    let to_fail: Vec<&str> = m["flipped_to_fail"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["sample_id"].as_str().unwrap())
        .collect();
    assert_eq!(
        to_fail,
        (0..15).map(|i| format!("q{i}")).collect::<Vec<_>>()
    );
    assert_eq!(
        m["flipped_to_fail"][0]["rationale"],
        "Contains ground_truth: False"
    );
    assert_eq!(m["flipped_to_pass"].as_array().unwrap().len(), 2);

    // The table and the flipped samples, for people.
    let text = ws.gavel(&["diff", "base", "cand", "--show", "3"]);
    let out = stdout(&text);
    assert!(out.contains("REGRESSED"), "{out}");
    assert!(out.contains("75.0% -> 42.5%"), "{out}");
    assert!(
        out.contains("answer: 15 pass -> fail:\n  q0  Contains ground_truth: False"),
        "{out}"
    );
    assert!(out.contains("... and 12 more"), "{out}");
    assert!(out.contains("answer: 2 fail -> pass:\n  q30"), "{out}");

    // CI gates on it: exit 1 when the named metric regressed.
    let gated = ws.gavel(&["diff", "base", "cand", "--fail-on", "answer"]);
    assert_eq!(gated.status.code(), Some(1), "{}", stderr(&gated));
    assert!(stderr(&gated).contains("regressed: answer"));
    // The other way round it improved, and the gate holds.
    let reverse = ws.gavel(&["diff", "cand", "base", "--fail-on", "answer", "--json"]);
    assert_eq!(reverse.status.code(), Some(0));
    let diff: Value = serde_json::from_str(&stdout(&reverse)).unwrap();
    assert_eq!(diff["metrics"][0]["improved"], true);
    // At a far stricter level the change is not significant.
    let strict = ws.gavel(&[
        "diff",
        "base",
        "cand",
        "--fail-on",
        "answer",
        "--alpha",
        "0.0001",
    ]);
    assert_eq!(strict.status.code(), Some(0), "{}", stdout(&strict));
}

#[test]
fn the_same_run_twice_has_no_change() {
    let ws = two_runs();
    let output = ws.gavel(&[
        "diff",
        "base",
        "base/results.jsonl",
        "--fail-on",
        "answer",
        "--json",
    ]);
    assert_eq!(output.status.code(), Some(0));
    let diff: Value = serde_json::from_str(&stdout(&output)).unwrap();
    let m = &diff["metrics"][0];
    assert_eq!(
        (m["pass_to_fail"].as_u64(), m["fail_to_pass"].as_u64()),
        (Some(0), Some(0))
    );
    assert_eq!(m["mcnemar_p"], 1.0);
    assert_eq!(m["mean_change"]["p_value"], 1.0);
    assert_eq!(
        (m["regressed"].as_bool(), m["improved"].as_bool()),
        (Some(false), Some(false))
    );
}

#[test]
fn the_html_report_carries_the_comparison() {
    let ws = two_runs();
    let output = ws.gavel(&["diff", "base", "cand", "--html", "diff.html"]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let html = std::fs::read_to_string(ws.path("diff.html")).unwrap();
    assert!(html.contains(r#"<section id="diff">"#));
    assert!(html.contains(r#"<span class="fail">regressed</span>"#));
    assert!(html.contains("<bdi>answer</bdi>: 15 pass → fail"));
    // A flipped sample links to its view in the candidate's report.
    assert!(html.contains(
        r##"<a href="#sample=0"><bdi>q0</bdi></a>: <bdi>Contains ground_truth: False</bdi>"##
    ));
}

#[test]
fn unpaired_samples_and_bad_input_are_said() {
    let ws = two_runs();
    // A candidate with a third of the samples and a metric the base lacks.
    ws.write(
        "part/results.jsonl",
        "{\"sample_id\":\"q0\",\"grades\":{\"answer\":{\"score\":1.0,\"status\":\"pass\",\"rationale\":\"\",\"submission\":\"\"},\"tone\":{\"score\":1.0,\"status\":\"pass\",\"rationale\":\"\",\"submission\":\"\"}}}\n\
         {\"sample_id\":\"new\",\"grades\":{\"answer\":{\"score\":0.0,\"status\":\"fail\",\"rationale\":\"\",\"submission\":\"\"}}}\n",
    );
    let output = ws.gavel(&["diff", "base", "part", "--json"]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let diff: Value = serde_json::from_str(&stdout(&output)).unwrap();
    assert_eq!(diff["shared"], 1);
    assert_eq!(diff["only_in_base"], 39);
    assert_eq!(diff["only_in_candidate"], 1);
    assert_eq!(diff["only_candidate_metrics"], json!(["tone"]));
    assert_eq!(diff["metrics"][0]["pairs"], 1);
    assert_eq!(diff["metrics"][0]["mean_change"]["interval"], Value::Null);

    let unknown = ws.gavel(&["diff", "base", "cand", "--fail-on", "tone"]);
    assert_eq!(unknown.status.code(), Some(2));
    assert!(
        stderr(&unknown)
            .contains("--fail-on tone: no such metric in both runs; they share: answer")
    );
    let missing = ws.gavel(&["diff", "base", "nowhere"]);
    assert_eq!(missing.status.code(), Some(2));
    assert!(
        stderr(&missing).contains("nowhere: cannot open"),
        "{}",
        stderr(&missing)
    );
    ws.write("junk/results.jsonl", "{\"sample_id\": 1, \"grades\": 5}\n");
    let junk = ws.gavel(&["diff", "base", "junk"]);
    assert_eq!(junk.status.code(), Some(2));
    assert!(
        stderr(&junk).contains("junk/results.jsonl:1: not a gavel result line"),
        "{}",
        stderr(&junk)
    );
    let alpha = ws.gavel(&["diff", "base", "cand", "--alpha", "2"]);
    assert_eq!(alpha.status.code(), Some(2));
}

/// A run of another suite, `cities`, over its own dataset `cities.jsonl` of `rows`, in folder
/// `out`.
fn other_suite(ws: &Workspace, rows: &[Value], out: &str) {
    ws.write(
        "cities.yaml",
        &SUITE
            .replace("capitals", "cities")
            .replace("data.jsonl", "cities.jsonl"),
    );
    ws.write_rows("cities.jsonl", rows);
    let run = ws.gavel(&["run", "cities.yaml", "-o", out]);
    assert_eq!(run.status.code(), Some(0), "{}", stderr(&run));
}

#[test]
fn runs_that_pair_nothing_are_refused_not_passed() {
    let ws = two_runs();
    let rows: Vec<Value> = (0..10)
        .map(|i| {
            let mut row = row(i, true);
            row["id"] = json!(format!("c{i}"));
            row
        })
        .collect();
    other_suite(&ws, &rows, "cities");
    let gated = ws.gavel(&["diff", "base", "cities", "--fail-on", "answer"]);
    assert_eq!(gated.status.code(), Some(2), "{}", stdout(&gated));
    let said = stderr(&gated);
    assert!(
        said.starts_with("error: base and cities paired 0 of 40 base and 10 candidate samples: no sample is in both (40 only in the base, 10 only in the candidate); they ran different suites: the base `capitals` ("),
        "{said}"
    );
    assert!(
        said.contains("; they read different datasets: the base "),
        "{said}"
    );
    assert!(said.contains("--allow-unpaired"), "{said}");
    assert_eq!(stdout(&gated), "", "nothing is compared");

    // Asked to, it compares them, and says what it compared; a gate on them has nothing to
    // pass on, and fails.
    let allowed = ws.gavel(&[
        "diff",
        "base",
        "cities",
        "--fail-on",
        "answer",
        "--allow-unpaired",
        "--json",
    ]);
    let said = stderr(&allowed);
    assert_eq!(allowed.status.code(), Some(1), "{said}");
    assert!(
        said.starts_with("warning: base and cities paired 0 of 40"),
        "{said}"
    );
    assert!(
        said.contains("gate failed: answer: no sample is graded on it in both runs"),
        "{said}"
    );
    let diff: Value = serde_json::from_str(&stdout(&allowed)).unwrap();
    assert_eq!(diff["shared"], 0);

    // Results files without run.json are refused for pairing nothing all the same.
    std::fs::copy(ws.path("cities/results.jsonl"), ws.path("bare.jsonl")).unwrap();
    let bare = ws.gavel(&["diff", "base/results.jsonl", "bare.jsonl"]);
    assert_eq!(bare.status.code(), Some(2));
    assert!(
        stderr(&bare).contains("paired 0 of 40 base and 10 candidate samples: no sample is in both (40 only in the base, 10 only in the candidate)\n"),
        "{}",
        stderr(&bare)
    );
}

#[test]
fn runs_of_another_suite_or_dataset_are_refused_even_when_ids_meet() {
    let ws = two_runs();
    // The same ids, graded by another suite over another dataset.
    let rows: Vec<Value> = (0..40).map(|i| row(i, true)).collect();
    other_suite(&ws, &rows, "cities");
    let output = ws.gavel(&["diff", "base", "cities"]);
    assert_eq!(output.status.code(), Some(2));
    let said = stderr(&output);
    assert!(
        said.contains("paired 40 of 40 base and 40 candidate samples: they ran different suites"),
        "{said}"
    );
    assert!(said.contains("cities.jsonl"), "{said}");

    // The same suite pointed at another dataset file.
    ws.write(
        "capitals-b.yaml",
        &SUITE.replace("data.jsonl", "cities.jsonl"),
    );
    assert_eq!(
        ws.gavel(&["run", "capitals-b.yaml", "-o", "moved"])
            .status
            .code(),
        Some(0)
    );
    let moved = ws.gavel(&["diff", "base", "moved"]);
    assert_eq!(moved.status.code(), Some(2));
    let said = stderr(&moved);
    assert!(
        said.contains(
            "paired 40 of 40 base and 40 candidate samples: they read different datasets: the base "
        ),
        "{said}"
    );
    assert!(!said.contains("different suites"), "{said}");

    // A suite edited between two runs over the same dataset is the change a diff measures.
    ws.write("suite.yaml", &SUITE.replace("contains", "exact_match"));
    assert_eq!(
        ws.gavel(&["run", "suite.yaml", "-o", "edited"])
            .status
            .code(),
        Some(0)
    );
    let edited = ws.gavel(&["diff", "cand", "edited"]);
    assert_eq!(edited.status.code(), Some(0), "{}", stderr(&edited));
    assert_eq!(stderr(&edited), "");
}

/// A copy of the run in `from` as the run in `to`, its `results.jsonl` edited by `edit`.
fn edited(ws: &Workspace, from: &str, to: &str, edit: impl Fn(&str) -> String) {
    let read = |file: &str| std::fs::read_to_string(ws.path(from).join(file)).unwrap();
    ws.write(&format!("{to}/run.json"), &read("run.json"));
    ws.write(
        &format!("{to}/results.jsonl"),
        &edit(&read("results.jsonl")),
    );
}

#[test]
fn a_gate_fails_on_a_candidate_that_graded_nothing() {
    let ws = two_runs();
    // The candidate's samples are the base's, each grade in error.
    edited(&ws, "base", "errored", |results| {
        results
            .replace(r#""status":"pass""#, r#""status":"error""#)
            .replace(r#""status":"fail""#, r#""status":"error""#)
    });
    let gated = ws.gavel(&["diff", "base", "errored", "--fail-on", "answer"]);
    let err = stderr(&gated);
    assert_eq!(gated.status.code(), Some(1), "{err}");
    assert!(
        err.contains(
            "gate failed: answer: no sample is graded on it in both runs (the base graded 40 \
             samples on it, the candidate 0; the others are in error or have no grade of it), \
             so there is nothing to compare\n"
        ),
        "{err}"
    );
    assert!(
        stdout(&gated).contains("pairs"),
        "it is compared all the same"
    );
    // Without a gate it is only compared.
    let compared = ws.gavel(&["diff", "base", "errored"]);
    assert_eq!(compared.status.code(), Some(0), "{}", stderr(&compared));
}

#[test]
fn an_unfinished_run_is_said_and_fails_the_gate() {
    let ws = two_runs();
    for state in ["running", "interrupted"] {
        // As a run killed after its first result leaves its folder.
        edited(&ws, "cand", "part", |results| {
            results.split_inclusive('\n').take(1).collect()
        });
        let record = std::fs::read_to_string(ws.path("part/run.json")).unwrap();
        ws.write(
            "part/run.json",
            &record.replace("\"complete\"", &format!("\"{state}\"")),
        );
        let said = format!("part holds an unfinished run (part/run.json says `{state}`: it was ");
        for (base, candidate) in [("base", "part"), ("part", "base")] {
            let gated = ws.gavel(&["diff", base, candidate, "--fail-on", "answer"]);
            let err = stderr(&gated);
            assert_eq!(gated.status.code(), Some(1), "{err}");
            assert!(err.starts_with(&format!("gate failed: {said}")), "{err}");
            assert!(
                err.contains(" -o part --resume`, then compare again\n"),
                "{err}"
            );
        }
        // Without a gate it is compared on what it graded, and said.
        let compared = ws.gavel(&["diff", "base", "part/results.jsonl"]);
        let err = stderr(&compared);
        assert_eq!(compared.status.code(), Some(0), "{err}");
        assert!(err.starts_with(&format!("warning: {said}")), "{err}");
        assert!(
            err.ends_with("; until then it is compared on what it graded\n"),
            "{err}"
        );
    }
}

#[test]
fn a_change_that_is_not_a_number_counts_as_regressed() {
    let ws = two_runs();
    // Scores too large to add up: the paired differences' mean is not a number.
    edited(&ws, "base", "huge", |results| {
        results
            .replace(r#""score":1.0"#, r#""score":1e308"#)
            .replacen(r#""score":1e308"#, r#""score":-1e308"#, 1)
    });
    let output = ws.gavel(&["diff", "base", "huge", "--json"]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let diff: Value = serde_json::from_str(&stdout(&output)).unwrap();
    let m = &diff["metrics"][0];
    assert_eq!(m["mean_change"]["mean"], Value::Null, "NaN is written null");
    assert_eq!(
        (m["regressed"].as_bool(), m["improved"].as_bool()),
        (Some(true), Some(false))
    );
    let gated = ws.gavel(&["diff", "base", "huge", "--fail-on", "answer"]);
    assert_eq!(gated.status.code(), Some(1), "{}", stderr(&gated));
    assert!(stderr(&gated).contains("regressed: answer"));
    assert!(
        stdout(&gated).contains(
            "  answer: the change is not a finite number (scores too large to add up?), so it \
             counts as regressed\n"
        ),
        "{}",
        stdout(&gated)
    );
}

#[test]
fn huge_means_are_written_with_an_exponent() {
    let ws = two_runs();
    edited(&ws, "base", "big", |results| {
        results.replace(r#""score":1.0"#, r#""score":1e300"#)
    });
    let output = ws.gavel(&["diff", "base", "big", "--html", "diff.html"]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let html = std::fs::read_to_string(ws.path("diff.html")).unwrap();
    // 30 of the 40 pairs score 1e300 in place of 1.
    for text in [stdout(&output), html] {
        assert!(
            text.contains("0.750 → 7.500e299") || text.contains("0.750 -> 7.500e299"),
            "{text}"
        );
        assert!(text.contains("+7.500e299"), "{text}");
        let digits = text
            .split(|c: char| !c.is_ascii_digit())
            .map(str::len)
            .max();
        assert!(digits < Some(20), "a number written in full: {text}");
    }
}
