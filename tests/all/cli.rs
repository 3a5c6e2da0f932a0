//! The command line as a user meets it: suites, datasets, mistakes, outputs and exit codes.

use crate::common::{Workspace, gavel_with_env, stderr, stdout};
use crate::golden;
use serde_json::{Value, json};

const SUITE: &str = "\
name: capitals
dataset: data.jsonl
graders:
  correct:
    kind: tool
    function: contains
    extractor: last_assistant
";

fn letta_row(id: i64, answer: &str, truth: &str) -> Value {
    json!({
        "id": id,
        "input": "What is the capital?",
        "ground_truth": truth,
        "trajectory": [[
            {"id": "m1", "date": "2026-01-01T00:00:00Z", "message_type": "user_message", "content": "What is the capital?"},
            {"id": "m2", "date": "2026-01-01T00:00:01Z", "message_type": "assistant_message", "content": answer}
        ]]
    })
}

fn capitals() -> Workspace {
    let ws = Workspace::new();
    ws.write("suite.yaml", SUITE);
    ws.write_rows(
        "data.jsonl",
        &[
            letta_row(1, "It is Paris.", "Paris"),
            letta_row(2, "Lyon, I think", "Paris"),
            letta_row(3, "Berlin", "berlin"),
        ],
    );
    ws
}

/// letta-evals' gate counted a sample with an empty submission as the 0 its grader gave it,
/// while the metrics leave it out as errored: the same run, two numbers.
#[test]
fn a_gate_counts_an_empty_submission_as_zero_as_letta_evals_gate_did() {
    let ws = Workspace::new();
    ws.write(
        "suite.yaml",
        &format!("{SUITE}gate: {{kind: simple, metric_key: correct, op: gte, value: 0.8}}\n"),
    );
    ws.write_rows(
        "data.jsonl",
        &[
            letta_row(1, "It is Paris.", "Paris"),
            letta_row(2, "Paris", "Paris"),
            letta_row(3, "Berlin", "berlin"),
            letta_row(4, "", "Rome"),
        ],
    );
    let out = ws.gavel(&["run", "suite.yaml", "-o", "out"]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let summary = ws.summary("out");
    assert_eq!(summary["metrics"]["correct"]["mean"], 1.0);
    assert_eq!(summary["metrics"]["correct"]["n"], 3);
    assert_eq!(summary["counts"]["errored"], 1);
    assert_eq!(summary["gate"]["passed"], false);
    assert_eq!(summary["gate"]["checks"][0]["value"], 0.75);
}

#[test]
fn run_writes_results_in_dataset_order_and_a_summary() {
    let ws = capitals();
    let out = ws.gavel(&["run", "suite.yaml", "-o", "out"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let results = ws.results("out");
    let ids: Vec<&Value> = results.iter().map(|r| &r["sample_id"]).collect();
    assert_eq!(ids, [&json!(1), &json!(2), &json!(3)]);
    let scores: Vec<f64> = results
        .iter()
        .map(|r| r["grades"]["correct"]["score"].as_f64().unwrap())
        .collect();
    assert_eq!(scores, [1.0, 0.0, 1.0]);
    assert_eq!(results[1]["grades"]["correct"]["status"], "fail");
    assert_eq!(
        results[0]["grades"]["correct"]["submission"],
        "It is Paris."
    );
    let summary = std::fs::read_to_string(ws.path("out/summary.json")).expect("summary.json");
    golden::check("capitals/summary.json", &summary);
    golden::check("capitals/run.stdout", &stdout(&out));
}

/// Nothing selected is a mistake in the command or the data, not a failed gate: exit 2 and a
/// message naming the filter or the file, with earlier results left as they were.
#[test]
fn nothing_selected_is_exit_2_naming_the_filter_or_file() {
    let ws = capitals();
    let before = earlier_results(&ws);
    let filtered = ws.gavel(&["run", "suite.yaml", "-o", "out", "--filter", "tag:nope"]);
    let err = stderr(&filtered);
    assert_eq!(filtered.status.code(), Some(2), "{err}");
    assert!(
        err.contains("nothing to grade: no sample of ")
            && err.contains("data.jsonl matches --filter tag:nope"),
        "{err}"
    );
    assert_eq!(std::fs::read(ws.path("out/results.jsonl")).unwrap(), before);

    ws.write("empty.jsonl", "");
    ws.write("empty.yaml", &SUITE.replace("data.jsonl", "empty.jsonl"));
    let empty = ws.gavel(&["run", "empty.yaml", "-o", "none"]);
    let err = stderr(&empty);
    assert_eq!(empty.status.code(), Some(2), "{err}");
    assert!(err.contains("empty.jsonl has no samples"), "{err}");
    assert!(!ws.path("none/summary.json").exists());
}

/// A file that is not JSON Lines at all, and a suite path that is a folder, each get one
/// sentence that says what is wrong and how to fix it, not an error on every line; a byte order
/// mark inside the file is said at its line.
#[test]
fn a_json_array_a_bom_and_a_folder_are_each_one_sentence() {
    let ws = capitals();
    let rows = std::fs::read_to_string(ws.path("data.jsonl")).unwrap();
    let array = format!("[\n{}\n]\n", rows.trim_end().replace('\n', ",\n"));
    for (text, says) in [
        (
            array,
            "the file holds a JSON array, but a dataset is JSON Lines",
        ),
        (
            format!("\u{feff}{rows}"),
            "the file starts with a UTF-8 byte order mark (BOM)",
        ),
    ] {
        ws.write("data.jsonl", &text);
        for command in ["run", "validate"] {
            let out = ws.gavel(&[command, "suite.yaml"]);
            let err = stderr(&out);
            assert_eq!(out.status.code(), Some(2), "{err}");
            assert_eq!(err.matches("error:").count(), 1, "{err}");
            assert!(err.contains(&format!("data.jsonl: {says}")), "{err}");
        }
    }
    // Two files joined, the second saved with a BOM: the line it starts is said as such.
    let second = rows.lines().nth(1).unwrap();
    ws.write(
        "data.jsonl",
        &rows.replacen(second, &format!("\u{feff}{second}"), 1),
    );
    let err = stderr(&ws.gavel(&["validate", "suite.yaml"]));
    assert!(
        err.contains("data.jsonl:2:1: the line starts with a UTF-8 byte order mark (BOM)"),
        "{err}"
    );
    let out = ws.gavel(&["run", "."]);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("this is a folder; give the suite file in it: ./suite.yaml"),
        "{err}"
    );
}

/// Every misspelt key and value of a suite in one pass, each at its own line and column, with
/// the likely meaning (a synonym too: `mean` is `avg_score`), and parser words put plainly.
#[test]
fn every_typo_of_a_suite_is_found_in_one_pass_where_it_is() {
    let ws = capitals();
    ws.write(
        "suite.yaml",
        "\
name: capitals
dataset: data.jsonl
descripton: typos
graders:
  correct:
    kind: tool
    functon: contains
    extractr: last_assistant
gate:
  kind: simple
  metric_key: correct
  aggregation: mean
  op: gte
  value: 0.5
",
    );
    let out = ws.gavel(&["validate", "suite.yaml"]);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    for (at, says) in [
        ("suite.yaml:3:1: descripton:", "did you mean `description`?"),
        (
            "suite.yaml:7:5: graders.correct.functon:",
            "did you mean `function`?",
        ),
        (
            "suite.yaml:8:5: graders.correct.extractr:",
            "did you mean `extractor`?",
        ),
        (
            "suite.yaml:12:16: gate.aggregation:",
            "did you mean `avg_score`?",
        ),
    ] {
        assert!(err.contains(at), "{at}: {err}");
        assert!(err.contains(says), "{says}: {err}");
    }
    assert!(err.contains("4 problems found"), "{err}");
    // The same for tools, as JSON on stdout.
    let json = ws.gavel(&["validate", "suite.yaml", "--format", "json"]);
    assert_eq!(json.status.code(), Some(2));
    let found: Value = serde_json::from_str(&stdout(&json)).expect("one JSON object");
    assert_eq!(found["valid"], false);
    let problems = found["problems"].as_array().unwrap();
    assert_eq!(problems.len(), 4, "{found}");
    assert_eq!(problems[1]["line"], 7);
    assert_eq!(problems[1]["column"], 5);
    assert_eq!(problems[1]["field"], "graders.correct.functon");
    assert_eq!(problems[1]["hint"], "did you mean `function`?");
    assert_eq!(stderr(&json), "");

    ws.write(
        "suite.yaml",
        "name: capitals\nname: again\ndataset: data.jsonl\nmax_samples: ten\ngraders: {}\n",
    );
    let err = stderr(&ws.gavel(&["validate", "suite.yaml"]));
    assert!(
        err.contains("suite.yaml:2:1: the key `name` appears twice in the same mapping; keep one"),
        "{err}"
    );
    for words in ["DuplicateKeyPolicy", "u64", "struct", "?:"] {
        assert!(!err.contains(words), "{words}: {err}");
    }
}

/// A pack that is not built yet is one error that says to build it, not one more for every
/// grader that uses it.
#[test]
fn an_unbuilt_pack_is_one_error_that_says_to_build_it() {
    let ws = capitals();
    ws.write("build.sh", "#!/bin/sh\n");
    ws.write(
        "suite.yaml",
        "name: capitals\ndataset: data.jsonl\npacks:\n  mine:\n    path: build/mine.wasm\n\
         graders:\n  a:\n    kind: tool\n    function: mine.check\n  b:\n    kind: tool\n    \
         function: mine.check\n    extractor: mine.take\n",
    );
    let out = ws.gavel(&["validate", "suite.yaml"]);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert_eq!(err.matches("error:").count(), 1, "{err}");
    assert!(
        err.contains("suite.yaml:5:5: packs.mine: pack `mine`: cannot read"),
        "{err}"
    );
    assert!(
        err.contains("hint: the pack is not built yet: run ./build.sh first"),
        "{err}"
    );
}

/// Numbers on the command line are checked before anything runs: a clear error and exit 2,
/// never a panic.
#[test]
fn out_of_range_numbers_are_refused_with_the_range() {
    let ws = capitals();
    for (args, says) in [
        (["--concurrency", "1000000"], "1000000 is not in 1..=1024"),
        (["--concurrency", "0"], "0 is not in 1..=1024"),
        (["--max-samples", "0"], "must be at least 1"),
        (["--max-samples", "many"], "not a whole number"),
    ] {
        let out = ws.gavel(&["run", "suite.yaml", "-o", "out", args[0], args[1]]);
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(says), "{args:?}: {err}");
        assert!(!ws.path("out").exists(), "{args:?}");
    }
}

/// `gavel --help` and each subcommand's, at a fixed width.
#[test]
fn help_is_as_recorded() {
    let ws = Workspace::new();
    for command in [
        "",
        "run",
        "validate",
        "list",
        "inspect",
        "new",
        "build-python",
        "merge",
        "serve",
    ] {
        let mut args: Vec<&str> = command.split_whitespace().collect();
        args.push("--help");
        let out = gavel_with_env(ws.dir.path(), &args, &[("COLUMNS", "100")]);
        assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
        let name = if command.is_empty() { "gavel" } else { command };
        golden::check(&format!("help/{name}.txt"), &stdout(&out));
    }
}

/// Ten mistakes of different kinds in different places, all reported by one `gavel validate`,
/// each at its own field and line, sorted by line: type errors inside a grader, unknown keys,
/// a grader keyed `y` (a boolean in YAML 1.1 parsers other than PyYAML), an unknown function, a
/// negative timeout, a bad gate aggregation and metric, a missing dataset.
#[test]
fn every_mistake_of_a_suite_is_reported_at_its_field_in_one_pass() {
    let ws = capitals();
    ws.write(
        "suite.yaml",
        "\
name: capitals
dataset: missing.jsonl
concurency: 4
graders:
  judge:
    kind: rubric
    prompt: 'Is {{ submission }} right?'
    model: gpt-4.1
    max_retries: many
    temperature: hot
  y:
    kind: tool
    function: contains
    extractr: last_assistant
  n:
    kind: tool
    function: containz
  exact:
    kind: tool
    function: exact_match
    colour: red
gate:
  kind: simple
  metric_key: corect
  aggregation: mean
  op: gte
  value: 0.8
limits:
  timeout_ms: -5
",
    );
    let out = ws.gavel(&["validate", "suite.yaml", "--format", "json"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    let found: Value = serde_json::from_str(&stdout(&out)).expect("JSON");
    let located: Vec<String> = (found["problems"].as_array().expect("problems").iter())
        .map(|p| {
            format!(
                "{}:{}: {}",
                p["file"].as_str().unwrap_or_default(),
                p["line"],
                p["field"]
            )
        })
        .collect();
    let expected: Vec<String> = [
        (2, "dataset"),
        (3, "concurency"),
        (9, "graders.judge.max_retries"),
        (10, "graders.judge.temperature"),
        (14, "graders.y.extractr"),
        (17, "graders.n.function"),
        (21, "graders.exact.colour"),
        (24, "gate.metric_key"),
        (25, "gate.aggregation"),
        (29, "limits.timeout_ms"),
    ]
    .iter()
    .map(|(line, field)| format!("suite.yaml:{line}: \"{field}\""))
    .collect();
    assert_eq!(located, expected, "{}", stdout(&out));
    let run = ws.gavel(&["run", "suite.yaml", "-o", "out"]);
    assert_eq!(run.status.code(), Some(2), "{}", stderr(&run));
    assert_eq!(
        stderr(&run).matches("error: ").count(),
        10,
        "{}",
        stderr(&run)
    );
}

/// Every mistake of a suite, found before grading, sorted by line.
#[test]
fn suite_errors_are_as_recorded() {
    let ws = capitals();
    ws.write(
        "suite.yaml",
        "\
name: capitals
dataset: data.jsonl
graders:
  correct:
    kind: tool
    function: containz
    extractor: last_asistant
  exact:
    kind: tool
    function: exact_match
    config: {flags: 1}
gate: {kind: simple, metric_key: corect, op: gte, value: 1}
reward: {kind: metric, metric_key: exct}
",
    );
    let out = ws.gavel(&["run", "suite.yaml", "-o", "out"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    golden::check("errors/suite.stderr", &stderr(&out));
    assert_eq!(stdout(&out), "");
    let validated = ws.gavel(&["validate", "suite.yaml"]);
    assert_eq!(validated.status.code(), Some(2));
    assert_eq!(
        stderr(&validated),
        stderr(&out),
        "validate reports as run does"
    );
}

/// Invalid rows: the first ten listed with file, line and field, then how many more.
#[test]
fn row_errors_are_as_recorded() {
    let ws = capitals();
    let mut text = String::new();
    for i in 0..14 {
        let row = letta_row(i, "Paris", "Paris");
        let line = match i % 3 {
            0 => row.to_string(),
            1 => row
                .to_string()
                .replacen("\"ground_truth\"", "\"ground_truth\":[1],\"x\"", 1),
            _ => "{\"id\": 5, \"input\": ".to_string(),
        };
        text.push_str(&line);
        text.push('\n');
    }
    ws.write("data.jsonl", &text);
    // Quiet: a piped run's progress lines carry a rate.
    let out = ws.gavel(&["run", "suite.yaml", "-o", "out", "-q"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    golden::check("errors/rows.stderr", &stderr(&out));
}

/// `--filter id:X` reads ids as the rows' samples read them, so X is what results.jsonl shows:
/// an escaped string id matches its text, a whole float its integer.
#[test]
fn filter_ids_match_the_ids_results_jsonl_shows() {
    let ws = Workspace::new();
    ws.write("suite.yaml", SUITE);
    let row = |id: &str| {
        letta_row(0, "Paris", "Paris")
            .to_string()
            .replacen("\"id\":0", &format!("\"id\":{id}"), 1)
    };
    let rows = [
        row(r#""caf\u00e9""#),
        row("100.0"),
        row("7"),
        row(r#""100""#),
    ];
    ws.write("data.jsonl", &(rows.join("\n") + "\n"));
    for (filter, expected) in [
        ("id:café", vec![json!("café")]),
        ("id:100", vec![json!(100), json!("100")]),
        ("100", vec![json!(100), json!("100")]),
        ("id:7", vec![json!(7)]),
    ] {
        let out = ws.gavel(&["run", "suite.yaml", "-o", "out", "-q", "--filter", filter]);
        assert_eq!(out.status.code(), Some(0), "{filter}: {}", stderr(&out));
        let ids: Vec<Value> = ws
            .results("out")
            .iter()
            .map(|r| r["sample_id"].clone())
            .collect();
        assert_eq!(ids, expected, "--filter {filter}");
    }
    // The escape is the file's spelling, not the id: nothing matches it.
    let escaped = ws.gavel(&[
        "run",
        "suite.yaml",
        "-o",
        "out",
        "-q",
        "--filter",
        "id:caf\\u00e9",
    ]);
    assert_eq!(escaped.status.code(), Some(2), "{}", stderr(&escaped));
    assert!(stderr(&escaped).contains("nothing to grade"));
}

#[test]
fn same_suite_twice_gives_identical_results() {
    let ws = capitals();
    assert!(
        ws.gavel(&["run", "suite.yaml", "-o", "a", "-q"])
            .status
            .success()
    );
    assert!(
        ws.gavel(&["run", "suite.yaml", "-o", "b", "-q"])
            .status
            .success()
    );
    let a = std::fs::read(ws.path("a/results.jsonl")).unwrap();
    let b = std::fs::read(ws.path("b/results.jsonl")).unwrap();
    assert_eq!(a, b);
}

#[test]
fn malformed_json_names_file_and_line_and_grades_nothing() {
    let ws = capitals();
    let good = letta_row(1, "Paris", "Paris").to_string();
    ws.write(
        "data.jsonl",
        &format!("{good}\n\n{{\"id\": 2, \"input\": \n{good}\n"),
    );
    let out = ws.gavel(&["run", "suite.yaml", "-o", "out"]);
    assert_eq!(out.status.code(), Some(2));
    let err = stderr(&out);
    assert!(err.contains("data.jsonl:3:"), "{err}");
    assert!(err.contains("--skip-invalid"), "{err}");
    assert!(!ws.path("out/results.jsonl").exists(), "nothing is graded");
}

#[test]
fn a_refused_run_leaves_earlier_results_as_they_were() {
    let ws = capitals();
    let before = earlier_results(&ws);
    // Thousands of good rows are graded before the bad one at the end is met.
    let text = good_rows(3000) + "{\"id\": 3000, \"input\": \n";
    ws.write("data.jsonl", &text);
    assert_refused_whole(&ws, &before, &["data.jsonl:3001:"]);
}

/// The results of a first, successful run into `out`.
fn earlier_results(ws: &Workspace) -> Vec<u8> {
    let first = ws.gavel(&["run", "suite.yaml", "-o", "out"]);
    assert_eq!(first.status.code(), Some(0), "{}", stderr(&first));
    std::fs::read(ws.path("out/results.jsonl")).expect("results")
}

/// `n` good rows, one a line.
fn good_rows(n: i64) -> String {
    (0..n)
        .map(|i| format!("{}\n", letta_row(i, "Paris", "Paris")))
        .collect()
}

/// Runs the suite into `out`, fresh and resumed: each run is refused (exit 2, an error naming
/// every one of `names`; resumed, one saying the dataset is not the one the results are of)
/// and leaves the earlier results, `before`, exactly as they were.
fn assert_refused_whole(ws: &Workspace, before: &[u8], names: &[&str]) {
    for resume in [false, true] {
        let mut args = vec!["run", "suite.yaml", "-o", "out"];
        if resume {
            args.push("--resume");
        }
        let refused = ws.gavel(&args);
        assert_eq!(refused.status.code(), Some(2), "{}", stderr(&refused));
        let err = stderr(&refused);
        if resume {
            assert!(err.contains("dataset content"), "{err}");
        } else {
            assert!(names.iter().all(|name| err.contains(name)), "{err}");
        }
        assert_eq!(
            std::fs::read(ws.path("out/results.jsonl")).expect("results"),
            before,
            "resume: {resume}"
        );
        assert!(!ws.path("out/results.jsonl.replaced").exists());
    }
}

#[test]
fn a_dataset_that_is_not_utf8_is_refused_whole_however_late_the_bad_bytes() {
    let ws = capitals();
    let before = earlier_results(&ws);
    // The rows are counted while grading starts, so good rows are graded before the bytes that
    // are not UTF-8 are read; none of them is kept.
    let mut bytes = good_rows(3000).into_bytes();
    bytes.extend_from_slice(b"{\"id\": 3000, \"input\": \"\xff\"}\n");
    std::fs::write(ws.path("data.jsonl"), bytes).unwrap();
    assert_refused_whole(&ws, &before, &["data.jsonl", "UTF-8"]);
}

#[test]
fn a_dataset_line_that_is_not_utf8_is_named_and_a_skip_invalid_run_it_stops_is_interrupted() {
    let ws = capitals();
    let mut bytes = good_rows(3000).into_bytes();
    bytes.extend_from_slice(b"{\"id\": 3000, \"input\": \"\xff\"}\n");
    std::fs::write(ws.path("data.jsonl"), bytes).unwrap();
    let named = "data.jsonl: line 3001: the file is not UTF-8 text: save it as UTF-8";
    let validate = ws.gavel(&["validate", "suite.yaml"]);
    assert_eq!(validate.status.code(), Some(2), "{}", stderr(&validate));
    assert!(stderr(&validate).contains(named), "{}", stderr(&validate));
    let run = ws.gavel(&["run", "suite.yaml", "-o", "out", "--skip-invalid"]);
    assert_eq!(run.status.code(), Some(2), "{}", stderr(&run));
    assert!(stderr(&run).contains(named), "{}", stderr(&run));
    // What was graded is kept, and the record says the run stopped short of its end.
    let record: Value =
        serde_json::from_slice(&std::fs::read(ws.path("out/run.json")).unwrap()).unwrap();
    let results = ws.results("out");
    assert_eq!(record["progress"]["state"], "interrupted", "{record}");
    assert_eq!(record["progress"]["results"], results.len(), "{record}");
    for (i, result) in results.iter().enumerate() {
        assert_eq!(result["sample_id"], i, "{result}");
    }
    let report = ws.gavel(&["report", "out"]);
    assert!(
        stderr(&report).contains("out/run.json says `interrupted`"),
        "{}",
        stderr(&report)
    );
}

#[test]
fn a_number_id_too_large_to_keep_is_refused_with_how_to_keep_it() {
    let ws = capitals();
    ws.write(
        "data.jsonl",
        &format!(
            "{}\n{}\n",
            letta_row(1, "Paris", "Paris"),
            letta_row(2, "Paris", "Paris")
                .to_string()
                .replace("\"id\":2", "\"id\":18446744073709551616")
        ),
    );
    let validate = ws.gavel(&["validate", "suite.yaml"]);
    assert_eq!(validate.status.code(), Some(2), "{}", stderr(&validate));
    assert!(
        stderr(&validate).contains(
            "data.jsonl:2: sample_id: the number is too large for a number id: write the id \
             as text, in quotes"
        ),
        "{}",
        stderr(&validate)
    );
}

/// A line that is JSON but not an object, or that stops inside its JSON, is refused in words
/// of the row, not of gavel's types or an unknown field. A list is refused too, not read as a
/// row's fields in order (its first item the id), in the dataset and in a recorded run alike.
#[test]
fn a_row_that_is_not_an_object_or_is_cut_off_is_said_so() {
    let ws = capitals();
    let good = letta_row(1, "Paris", "Paris").to_string();
    ws.write(
        "data.jsonl",
        &format!(
            "{good}\n\"Paris\"\nnull\n  [\"x\", \"y\", \"z\"]\n[]\n{}\n{}",
            &good[..good.len() / 2],
            good.replacen('{', "{\"metadata\": {\"score\": NaN}, ", 1)
        ),
    );
    let validate = ws.gavel(&["validate", "suite.yaml"]);
    assert_eq!(validate.status.code(), Some(2), "{}", stderr(&validate));
    let said = stderr(&validate);
    for line in [
        r#"data.jsonl:2:1: a row is a JSON object ({"input": ..., "ground_truth": ...}), not a string"#,
        r#"data.jsonl:3:1: a row is a JSON object ({"input": ..., "ground_truth": ...}), not null"#,
        r#"data.jsonl:4:3: a row is a JSON object ({"input": ..., "ground_truth": ...}), not a list"#,
        r#"data.jsonl:5:1: a row is a JSON object ({"input": ..., "ground_truth": ...}), not a list"#,
        "data.jsonl:6:",
        "the line ends before its JSON does (was the file cut off while it was written?)",
        "data.jsonl:7:24: metadata.score: expected value: NaN and Infinity are not JSON \
         (Python's json.dumps writes them unless given allow_nan=False); write null, or the \
         number as text",
    ] {
        assert!(said.contains(line), "{said}");
    }
    assert!(!said.contains("RawRow") && !said.contains("?:"), "{said}");
    // With --skip-invalid the lists are errors of their lines, not samples named `x`.
    let run = ws.gavel(&["run", "suite.yaml", "-o", "out", "--skip-invalid"]);
    let results = ws.results("out");
    assert_eq!(results.len(), 7, "{}{results:?}", stderr(&run));
    let ids: Vec<&Value> = results.iter().map(|r| &r["sample_id"]).collect();
    assert!(!ids.contains(&&json!("x")), "{ids:?}");
    assert!(
        results[3]["error"]["message"]
            .as_str()
            .unwrap()
            .contains("not a list"),
        "{results:?}"
    );
    // A recorded run given by --trajectories is read the same way.
    ws.write("data.jsonl", &format!("{good}\n"));
    ws.write("runs.jsonl", "{\"sample_id\": 1}\n[1, []]\n");
    let validate = ws.gavel(&["validate", "suite.yaml", "--trajectories", "runs.jsonl"]);
    assert_eq!(validate.status.code(), Some(2), "{}", stderr(&validate));
    assert!(
        stderr(&validate).contains("runs.jsonl:2:1: a row is a JSON object"),
        "{}",
        stderr(&validate)
    );
}

/// A suite indented with tabs, or empty, is refused saying how to mend it.
#[test]
fn a_suite_indented_with_tabs_or_empty_says_how_to_mend_it() {
    let ws = capitals();
    for (suite, said) in [
        (
            SUITE.replace("  correct:", "\tcorrect:"),
            "hint: YAML indents with spaces only: replace the tabs with spaces",
        ),
        (
            String::new(),
            "hint: the suite is empty or ends early: a suite holds at least `dataset` and `graders`",
        ),
    ] {
        ws.write("suite.yaml", &suite);
        let out = ws.gavel(&["validate", "suite.yaml"]);
        assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
        assert!(stderr(&out).contains(said), "{}", stderr(&out));
    }
}

/// A grader's key written one level too shallow (as a grader of its own, or as a key of the
/// suite) is said at both lines, each saying where the key belongs, in words rather than
/// serde's type names.
#[test]
fn a_graders_key_indented_too_little_is_said_where_it_belongs() {
    let ws = capitals();
    for (suite, line) in [
        (
            format!(
                "{}  function: contains\n",
                SUITE.replace("    function: contains\n", "")
            ),
            7,
        ),
        (
            format!(
                "{}function: contains\n",
                SUITE.replace("    function: contains\n", "")
            ),
            7,
        ),
    ] {
        ws.write("suite.yaml", &suite);
        let out = ws.gavel(&["validate", "suite.yaml"]);
        assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
        let err = stderr(&out);
        assert!(
            err.contains("suite.yaml:5:5: graders.correct: missing field `function`"),
            "{err}"
        );
        assert!(
            err.contains(&format!("hint: `function:` (line {line}) is indented as ")),
            "{err}"
        );
        assert!(
            err.contains(&format!("suite.yaml:{line}:"))
                && err.contains(
                    "hint: this `function:` belongs to the grader `correct:` (line 4), which \
                     lacks it: indent it under that grader, with its other keys"
                ),
            "{err}"
        );
        assert!(!err.contains("internally tagged"), "{err}");
    }
}

/// A grader's key indented deeper than the line before it, which YAML reads as more of that
/// line's value, is said as an indentation, whether or not the key has its own value; a value
/// of two words written on one line keeps the spelling hint.
#[test]
fn a_key_indented_deeper_than_the_line_before_is_said_as_indentation() {
    let ws = capitals();
    let hint = "hint: the line after `kind: tool` is indented deeper than `kind:`, so YAML reads \
                it as more of the value (`tool function`): indent `function` as `kind:` is";
    for suite in [
        SUITE.replace("    function: contains\n", "      function: contains\n"),
        SUITE.replace("    function: contains\n", "      function\n"),
    ] {
        ws.write("suite.yaml", &suite);
        let out = ws.gavel(&["validate", "suite.yaml"]);
        assert_eq!(out.status.code(), Some(2), "{suite}\n{}", stderr(&out));
        let err = stderr(&out);
        assert!(
            err.contains("graders.correct.kind: unknown variant `tool function`"),
            "{err}"
        );
        assert!(err.contains(hint), "{suite}\n{err}");
        assert!(!err.contains("did you mean"), "{err}");
    }
    ws.write(
        "suite.yaml",
        &SUITE.replace("kind: tool\n", "kind: tool function\n"),
    );
    let err = stderr(&ws.gavel(&["validate", "suite.yaml"]));
    assert!(err.contains("hint: did you mean `tool`?"), "{err}");
    assert!(!err.contains("indented deeper"), "{err}");
}

/// Graders written as a list (a suite's or a composite's), and a gate naming its grader in
/// `metric` (the aggregate's key), each say how to write them; a misspelt aggregate is still
/// read as its likely meaning.
#[test]
fn graders_as_a_list_and_a_grader_named_as_the_gates_metric_say_how_to_write_them() {
    let ws = capitals();
    let gate =
        |metric: &str| format!("{SUITE}gate:\n  metric: {metric}\n  op: gte\n  value: 0.5\n");
    for (suite, said) in [
        (
            SUITE.replace("  correct:\n    kind:", "  - kind:"),
            "hint: name each grader: `graders:` holds a `NAME:` line for each, its keys indented \
             under it, not a list of `- kind: ...` items",
        ),
        (
            gate("correct"),
            "hint: `metric` is how the scores are summed up (avg_score, accuracy, min, max, \
             median, p50, p95, p99); to name the grader `correct`, write `metric_key: correct`",
        ),
        (gate("avg"), "hint: did you mean `avg_score`?"),
        (
            SUITE.replace(
                "  correct:\n    kind: tool\n    function: contains\n    extractor: last_assistant\n",
                "  both:\n    kind: all\n    graders:\n      - kind: tool\n        function: contains\n",
            ),
            "suite.yaml:7:7: graders.both.graders: invalid type: sequence, expected a mapping \
             (`key: value` lines)\n  hint: name each grader: `graders:` holds a `NAME:` line",
        ),
    ] {
        ws.write("suite.yaml", &suite);
        let out = ws.gavel(&["validate", "suite.yaml"]);
        assert_eq!(out.status.code(), Some(2), "{suite}\n{}", stderr(&out));
        assert!(stderr(&out).contains(said), "{suite}\n{}", stderr(&out));
    }
}

/// An output folder that is a file is refused before grading, at the flag or at the suite's
/// `output:` line, rather than as a file under it that cannot be read.
#[test]
fn an_output_folder_that_is_a_file_is_refused_where_it_is_named() {
    let ws = capitals();
    ws.write("afile", "");
    let flag = ws.gavel(&["run", "suite.yaml", "-o", "afile"]);
    assert_eq!(flag.status.code(), Some(2), "{}", stderr(&flag));
    assert!(
        stderr(&flag).contains("error: -o afile is not a folder: name a folder for the run"),
        "{}",
        stderr(&flag)
    );
    ws.write(
        "suite.yaml",
        &SUITE.replace("graders:", "output: afile\ngraders:"),
    );
    let suite = ws.gavel(&["run", "suite.yaml"]);
    assert_eq!(suite.status.code(), Some(2), "{}", stderr(&suite));
    assert!(
        stderr(&suite).contains("suite.yaml:3:9: output: ")
            && stderr(&suite).contains("afile is not a folder"),
        "{}",
        stderr(&suite)
    );
}

/// A pack named by its path in a grader's `function:` (letta-evals' `file.wasm:name`) that does
/// not load is said once, at the grader that names it, not at the first grader of the suite
/// and then again as an unknown pack.
#[test]
fn a_pack_named_by_path_that_does_not_load_is_said_once_where_it_is_named() {
    let ws = capitals();
    ws.write("fake.wasm", "not a component");
    ws.write(
        "suite.yaml",
        &format!("{SUITE}  packed:\n    kind: tool\n    function: \"fake.wasm:f\"\n"),
    );
    let out = ws.gavel(&["validate", "suite.yaml"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    let errors: Vec<String> = (stderr(&out).lines())
        .filter(|l| l.starts_with("error: "))
        .map(str::to_string)
        .collect();
    assert_eq!(errors.len(), 1, "{errors:?}");
    assert!(
        errors[0]
            .starts_with("error: suite.yaml:10:15: graders.packed.function: pack `fake.wasm`: "),
        "{errors:?}"
    );
}

/// letta-evals downloads a dataset named by URL; gavel reads local files, and says so.
#[test]
fn a_dataset_named_by_url_is_refused_saying_to_download_it() {
    let ws = capitals();
    let url = "https://huggingface.co/datasets/org/repo/resolve/main/data.jsonl";
    ws.write(
        "suite.yaml",
        &SUITE.replace("dataset: data.jsonl", &format!("dataset: {url}")),
    );
    let validate = ws.gavel(&["validate", "suite.yaml"]);
    assert_eq!(validate.status.code(), Some(2), "{}", stderr(&validate));
    assert!(
        stderr(&validate).contains(&format!(
            "suite.yaml:2:10: dataset: {url} is a URL: gavel reads datasets from local files \
             only; download it (`curl -LO URL`) and name the file"
        )),
        "{}",
        stderr(&validate)
    );
}

#[test]
fn skip_invalid_grades_the_valid_rows_and_records_the_bad_ones() {
    let ws = capitals();
    let good = letta_row(1, "Paris", "Paris").to_string();
    ws.write(
        "data.jsonl",
        &format!("{good}\nnot json\n{}\n", letta_row(3, "Rome", "Rome")),
    );
    let out = ws.gavel(&["run", "suite.yaml", "-o", "out", "--skip-invalid"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let results = ws.results("out");
    assert_eq!(results.len(), 3);
    assert_eq!(results[0]["grades"]["correct"]["score"], 1.0);
    assert_eq!(results[1]["error"]["category"], "invalid");
    assert!(
        results[1]["error"]["message"]
            .as_str()
            .unwrap()
            .contains("data.jsonl:2")
    );
    assert_eq!(results[2]["grades"]["correct"]["score"], 1.0);
}

#[test]
fn a_row_of_the_wrong_shape_names_the_field() {
    let ws = capitals();
    ws.write_rows("data.jsonl", &[json!({"id": 1, "input": 42})]);
    let out = ws.gavel(&["run", "suite.yaml", "-o", "out"]);
    assert_eq!(out.status.code(), Some(2));
    let err = stderr(&out);
    assert!(
        err.contains("data.jsonl:1:") && err.contains("input"),
        "{err}"
    );
}

#[test]
fn validate_warns_of_a_row_without_an_id_that_takes_another_rows_naming_both_lines() {
    let ws = capitals();
    let mut unnamed = letta_row(0, "Rome", "Rome");
    unnamed.as_object_mut().unwrap().remove("id");
    ws.write_rows("data.jsonl", &[letta_row(1, "Paris", "Paris"), unnamed]);
    let out = ws.gavel(&["validate", "suite.yaml"]);
    assert_eq!(out.status.code(), Some(0));
    let err = stderr(&out);
    assert!(
        err.contains(
            "warning: data.jsonl:2: the row has no id, so it takes its 0-based line index, 1, \
             which is the id of the row on line 1: the two rows count as runs of one sample; \
             give this row an `id` of its own"
        ),
        "{err}"
    );
    // A run grades both rows, as letta-evals does, each its own result line.
    let out = ws.gavel(&["run", "suite.yaml", "-o", "out"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let results = std::fs::read_to_string(ws.path("out/results.jsonl")).unwrap();
    let ids: Vec<Value> = results
        .lines()
        .map(|line| serde_json::from_str::<Value>(line).unwrap()["sample_id"].clone())
        .collect();
    assert_eq!(ids, [json!(1), json!(1)]);
}

#[test]
fn unknown_suite_key_is_located_with_the_closest_valid_key() {
    let ws = capitals();
    ws.write(
        "suite.yaml",
        &SUITE.replace("extractor: last_assistant", "extractr: last_assistant"),
    );
    let out = ws.gavel(&["validate", "suite.yaml"]);
    assert_eq!(out.status.code(), Some(2));
    let err = stderr(&out);
    assert!(err.contains("suite.yaml:"), "{err}");
    assert!(err.contains("graders.correct"), "{err}");
    assert!(err.contains("did you mean `extractor`?"), "{err}");
}

#[test]
fn unknown_grader_and_extractor_names_are_found_before_grading() {
    let ws = capitals();
    ws.write(
        "suite.yaml",
        &SUITE
            .replace("function: contains", "function: contians")
            .replace("extractor: last_assistant", "extractor: last_asistant"),
    );
    let out = ws.gavel(&["validate", "suite.yaml"]);
    assert_eq!(out.status.code(), Some(2));
    let err = stderr(&out);
    assert!(
        err.contains("graders.correct.function") && err.contains("`contians`"),
        "{err}"
    );
    assert!(err.contains("did you mean `contains`?"), "{err}");
    assert!(
        err.contains("graders.correct.extractor") && err.contains("`last_asistant`"),
        "{err}"
    );
    let run = ws.gavel(&["run", "suite.yaml", "-o", "out"]);
    assert_eq!(run.status.code(), Some(2));
    assert!(
        !ws.path("out").exists(),
        "nothing is written for an invalid suite"
    );
}

#[test]
fn missing_required_config_and_invalid_suite_regex_are_static_errors() {
    let ws = capitals();
    ws.write(
        "suite.yaml",
        "name: x\ndataset: data.jsonl\ngraders:\n  a:\n    kind: tool\n    function: contains\n    extractor: pattern\n  b:\n    kind: tool\n    function: contains\n    extractor: pattern\n    extractor_config:\n      pattern: '[unclosed'\n",
    );
    let out = ws.gavel(&["validate", "suite.yaml"]);
    assert_eq!(out.status.code(), Some(2));
    let err = stderr(&out);
    assert!(err.contains("graders.a.extractor_config"), "{err}");
    assert!(err.contains("pattern"), "{err}");
    assert!(err.contains("graders.b.extractor_config.pattern"), "{err}");
}

#[test]
fn invalid_regex_in_ground_truth_grades_0_and_validate_names_the_row() {
    let ws = Workspace::new();
    ws.write(
        "suite.yaml",
        "name: r\ndataset: data.jsonl\ngraders:\n  fmt:\n    kind: tool\n    function: regex_match\n",
    );
    ws.write_rows(
        "data.jsonl",
        &[
            letta_row(1, "abc123", "[a-z]+\\d+"),
            letta_row(2, "abc", "[unclosed"),
            letta_row(3, "xyz", "^x"),
        ],
    );
    // letta-evals' verdict: a 0 with the reason, counted in the metric like any other grade.
    let out = ws.gavel(&["run", "suite.yaml", "-o", "out"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let results = ws.results("out");
    assert_eq!(results[0]["grades"]["fmt"]["status"], "pass");
    assert_eq!(results[1]["grades"]["fmt"]["status"], "fail");
    assert_eq!(results[1]["grades"]["fmt"]["score"], 0.0);
    assert_eq!(
        results[1]["grades"]["fmt"]["rationale"],
        "Invalid regex pattern: unterminated character set at position 0"
    );
    assert!(results[1].get("error").is_none(), "{}", results[1]);
    assert_eq!(results[2]["grades"]["fmt"]["status"], "pass");
    assert_eq!(ws.summary("out")["metrics"]["fmt"]["n"], 3);

    // validate passes the suite and warns, naming the row.
    let checked = ws.gavel(&["validate", "suite.yaml"]);
    let err = stderr(&checked);
    assert_eq!(checked.status.code(), Some(0), "{err}");
    assert!(
        err.contains("warning: data.jsonl:2: graders.fmt: ground_truth is not a valid Python regex (unterminated character set at position 0); it grades 0"),
        "{err}"
    );
    assert_eq!(err.matches("warning:").count(), 1, "{err}");
    // A message of a type no extractor reads would grade as an empty submission.
    let mut row = letta_row(4, "abc", "a");
    row["trajectory"][0][1]["message_type"] = json!("assistant");
    let mut rows = std::fs::read_to_string(ws.path("data.jsonl")).unwrap();
    rows.push_str(&format!("{row}\n"));
    ws.write("data.jsonl", &rows);
    let err = stderr(&ws.gavel(&["validate", "suite.yaml"]));
    assert!(
        err.contains(
            "warning: data.jsonl:4: trajectory: message_type `assistant` is no Letta message type"
        ),
        "{err}"
    );
    ws.write("data.jsonl", &rows.replacen(&format!("{row}\n"), "", 1));
    let filtered = ws.gavel(&["validate", "suite.yaml", "--filter", "id:3"]);
    assert!(
        stdout(&filtered).contains("1 sample of 3 selected by --filter id:3"),
        "{}",
        stdout(&filtered)
    );
    let none = ws.gavel(&["validate", "suite.yaml", "--filter", "tag:nope"]);
    assert_eq!(none.status.code(), Some(2));
    assert!(stderr(&none).contains("nothing to grade"));
}

#[test]
fn missing_dataset_file_is_named() {
    let ws = Workspace::new();
    ws.write("suite.yaml", SUITE);
    let out = ws.gavel(&["run", "suite.yaml", "-o", "out"]);
    assert_eq!(out.status.code(), Some(2));
    let err = stderr(&out);
    assert!(
        err.contains("dataset") && err.contains("data.jsonl"),
        "{err}"
    );
}

#[test]
fn missing_suite_file_is_named() {
    let ws = Workspace::new();
    let out = ws.gavel(&["run", "nope.yaml"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("nope.yaml"));
}

#[test]
fn unwritable_output_folder_is_an_error() {
    let ws = capitals();
    ws.write("blocker", "a file where a folder should be");
    let out = ws.gavel(&["run", "suite.yaml", "-o", "blocker/out"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("blocker/out"), "{}", stderr(&out));
}

#[test]
fn list_prints_every_builtin_with_a_description() {
    let ws = Workspace::new();
    let graders = stdout(&ws.gavel(&["list", "graders"]));
    golden::check("list/graders.txt", &graders);
    for name in [
        "exact_match",
        "contains",
        "regex_match",
        "ascii_printable_only",
        "output_contains",
        "tools_called",
        "tool_call_order",
        "task_completed",
        "expectations",
        "rubric",
    ] {
        let line = graders
            .lines()
            .find(|l| l.split_whitespace().next() == Some(name))
            .unwrap_or_else(|| panic!("{name} listed in:\n{graders}"));
        assert!(
            line.split_whitespace().count() > 2,
            "{name} has a description"
        );
    }
    let extractors = stdout(&ws.gavel(&["list", "extractors"]));
    golden::check("list/extractors.txt", &extractors);
    for name in [
        "last_assistant",
        "first_assistant",
        "all_assistant",
        "last_turn",
        "pattern",
        "tool_arguments",
        "tool_output",
        "after_marker",
        "memory_block",
    ] {
        assert!(extractors.contains(name), "{name} listed");
    }
}

#[test]
fn letta_suite_keys_load_with_a_notice() {
    let ws = capitals();
    ws.write(
        "suite.yaml",
        &format!("{SUITE}target:\n  kind: letta_code\n  model_handles: [openai/gpt-4.1]\nmax_concurrent: 4\nsample_tags: [a]\n"),
    );
    let out = ws.gavel(&["run", "suite.yaml", "-o", "out"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(err.contains("notice: `target`"), "{err}");
    assert!(err.contains("notice: `max_concurrent`"), "{err}");
}

#[test]
fn the_readme_quickstart_grades_with_a_webassembly_pack() {
    // The artifacts crate builds the example packs where the quickstart suite looks for them.
    let formats = std::path::Path::new(gavel_test_artifacts::packs::FORMATS);
    assert!(formats.is_file(), "{} is built", formats.display());
    let ws = Workspace::new();
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let suite = root.join("examples/quickstart/suite.yaml");
    let out = ws.path("qs");
    let output = ws.gavel(&["run", suite.to_str().unwrap(), "-o", out.to_str().unwrap()]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let results = ws.results("qs");
    let confirmation: Vec<&str> = results
        .iter()
        .map(|r| r["grades"]["confirmation"]["status"].as_str().unwrap())
        .collect();
    assert_eq!(confirmation, ["pass", "fail", "fail", "pass"]);
    let text = stdout(&output);
    assert!(text.contains("gate: passed"), "{text}");
}

#[test]
fn packs_that_write_to_stdout_or_stderr_grade_through_the_binary() {
    // `gavel run` grades on async worker threads, where WASI's blocking writes used to take
    // the whole process down the moment a guest printed.
    let adversary = gavel_test_artifacts::guests::ADVERSARY;
    let ws = capitals();
    ws.write(
        "suite.yaml",
        &format!(
            "name: printing
dataset: data.jsonl
limits: {{timeout_ms: 600000}}
packs:
  adv:
    path: {adversary}
graders:
  ok: {{kind: tool, function: adv.ok}}
  panic: {{kind: tool, function: adv.panic}}
  flood: {{kind: tool, function: adv.stdout-flood}}
"
        ),
    );
    let output = ws.gavel(&["run", "suite.yaml", "-o", "out"]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let results = ws.results("out");
    assert_eq!(results.len(), 3);
    for result in &results {
        let grades = &result["grades"];
        assert_eq!(grades["ok"]["status"], "pass", "{result}");
        assert_eq!(grades["panic"]["status"], "error", "{result}");
        assert_eq!(grades["panic"]["rationale"], "guest trapped: unreachable");
        let panic_stderr = grades["panic"]["metadata"]["sandbox"]["stderr"]
            .as_str()
            .unwrap_or_default();
        assert!(panic_stderr.contains("grader bug on"), "{result}");
        // Cut past its limit, the flood prints on until its fuel is gone.
        assert_eq!(grades["flood"]["rationale"], "fuel exhausted");
        assert_eq!(grades["flood"]["metadata"]["sandbox"]["stdout_cut"], true);
    }
}

#[test]
fn inspect_compiles_through_the_pack_cache() {
    // Interpreter packs take seconds to compile: `inspect` and `list --pack` keep the artifact
    // for the next command, as `run` does.
    let ws = Workspace::new();
    let pack = gavel_test_artifacts::packs::FORMATS;
    let output = ws.gavel(&["inspect", pack]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert!(stdout(&output).starts_with("formats 0.1.0 (gavel:grader@0.1.0)"));
    let artifacts: Vec<_> = std::fs::read_dir(ws.path(".cache/packs"))
        .expect("the cache folder exists")
        .map(|entry| entry.expect("readable").file_name())
        .collect();
    assert_eq!(artifacts.len(), 1, "{artifacts:?}");
    assert!(artifacts[0].to_string_lossy().ends_with(".cwasm"));
    let listed = ws.gavel(&["list", "graders", "--pack", pack]);
    assert!(
        stdout(&listed).contains("json_field"),
        "{}",
        stdout(&listed)
    );
}

#[test]
fn the_version_names_the_commit_built() {
    let ws = Workspace::new();
    let output = ws.gavel(&["--version"]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let text = stdout(&output);
    let line = text.trim_end();
    let rest = line
        .strip_prefix(concat!("gavel ", env!("CARGO_PKG_VERSION"), " ("))
        .and_then(|rest| rest.strip_suffix(')'))
        .unwrap_or_else(|| panic!("`{line}` is not `gavel VERSION (COMMIT)`"));
    // This test runs from a git checkout: the commit is its short hash, never `unknown`.
    let hash = rest.strip_suffix("-dirty").unwrap_or(rest);
    assert!(
        hash.len() >= 7 && hash.bytes().all(|b| b.is_ascii_hexdigit()),
        "`{rest}` is not a short commit hash"
    );
    let head = std::process::Command::new("git")
        .args(["rev-parse", "HEAD"])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("git runs");
    let head = String::from_utf8_lossy(&head.stdout);
    assert!(head.starts_with(hash), "{hash} is not HEAD {head}");
    // A subcommand says the same after its own name.
    let sub = ws.gavel(&["diff", "--version"]);
    assert_eq!(stdout(&sub), text.replacen("gavel", "gavel-diff", 1));
}
