//! What a run reports, read the way its consumers read it: JUnit XML through a JUnit parser,
//! `summary.json` statistics recomputed from their textbook formulas, sample selection by
//! `--filter` and `--max-samples`, the output modes, the progress bar through a
//! pseudo-terminal, and the outputs refused where they would write over an input or leave
//! `results/`.

use std::path::Path;
use std::process::{Command, Output};

use crate::common::{Workspace, stderr, stdout};
use serde_json::{Value, json};

const SUITE: &str = "name: capitals
dataset: data.jsonl
graders:
  answer:
    kind: tool
    function: contains
";

fn row(id: &str, answer: &str, truth: &str, tags: &[&str]) -> Value {
    json!({
        "id": id,
        "input": "What is the capital?",
        "ground_truth": truth,
        "tags": tags,
        "trajectory": [[
            {"id": "m1", "date": "2026-01-01T00:00:00Z", "message_type": "user_message", "content": "What is the capital?"},
            {"id": "m2", "date": "2026-01-01T00:00:01Z", "message_type": "assistant_message", "content": answer}
        ]]
    })
}

/// A row whose trajectory has no assistant message: nothing to grade, an error.
fn silent_row(id: &str) -> Value {
    json!({
        "id": id,
        "input": "What is the capital?",
        "ground_truth": "Paris",
        "trajectory": [[
            {"id": "m1", "date": "2026-01-01T00:00:00Z", "message_type": "user_message", "content": "What is the capital?"}
        ]]
    })
}

fn ids(results: &[Value]) -> Vec<String> {
    results
        .iter()
        .map(|r| r["sample_id"].as_str().expect("string id").to_string())
        .collect()
}

fn assert_ok(output: &Output) {
    assert_eq!(output.status.code(), Some(0), "stderr: {}", stderr(output));
}

#[test]
fn junit_report_is_read_by_a_junit_consumer() {
    let ws = Workspace::new();
    ws.write("suite.yaml", SUITE);
    ws.write_rows(
        "data.jsonl",
        &[
            row("paris", "It is Paris.", "Paris", &[]),
            row("lyon", "Lyon, <surely> & \"so\"", "Paris", &[]),
            silent_row("silent"),
        ],
    );
    assert_ok(&ws.gavel(&["run", "suite.yaml", "-o", "out", "--junit", "report.xml"]));

    let file = std::fs::File::open(ws.path("report.xml")).expect("the report exists");
    let suites = junit_parser::from_reader(std::io::BufReader::new(file)).expect("valid JUnit");
    assert_eq!((suites.tests, suites.failures, suites.errors), (3, 1, 1));
    let suite = &suites.suites[0];
    assert_eq!(suite.name, "capitals");
    let names: Vec<&str> = suite
        .cases
        .iter()
        .map(|c| c.original_name.as_str())
        .collect();
    assert_eq!(names, ["paris", "lyon", "silent"]);
    assert!(suite.cases[0].status.is_success());
    let failure = suite.cases[1].status.failure_as_ref();
    assert_eq!(failure.message, "answer: Contains ground_truth: False");
    assert!(
        failure.text.contains("submission: Lyon,") && failure.text.contains("surely"),
        "{}",
        failure.text
    );
    // junit-parser splits text at entity references, so the escaping is checked on the file.
    let xml = std::fs::read_to_string(ws.path("report.xml")).expect("report");
    assert!(
        xml.contains("submission: Lyon, &lt;surely&gt; &amp; \"so\"</failure>"),
        "{xml}"
    );
    let error = suite.cases[2].status.error_as_ref();
    assert!(
        error.message.contains("Empty submission"),
        "{}",
        error.message
    );
}

#[test]
fn filters_and_max_samples_select_rows() {
    let ws = Workspace::new();
    ws.write("suite.yaml", SUITE);
    ws.write_rows(
        "data.jsonl",
        &[
            row("s1", "Paris", "Paris", &["geo"]),
            row("s2", "Paris", "Paris", &["geo", "hard"]),
            row("s3", "Rome", "Paris", &["hard"]),
            row("s4", "Paris", "Paris", &[]),
            row("s5", "Lyon", "Paris", &["geo"]),
            row("s6", "Paris", "Paris", &[]),
        ],
    );
    let selected = |args: &[&str]| {
        let mut all = vec!["run", "suite.yaml", "-o", "out"];
        all.extend_from_slice(args);
        let output = ws.gavel(&all);
        assert_ok(&output);
        let results = ws.results("out");
        assert_eq!(
            ws.summary("out")["counts"]["total"],
            results.len(),
            "the summary counts what was selected"
        );
        ids(&results)
    };
    assert_eq!(selected(&["--filter", "tag:geo"]), ["s1", "s2", "s5"]);
    assert_eq!(
        selected(&["--filter", "id:s4", "--filter", "tag:hard"]),
        ["s2", "s3", "s4"]
    );
    assert_eq!(
        selected(&["--filter", "s3"]),
        ["s3"],
        "a bare value matches ids"
    );
    assert_eq!(selected(&["--filter", "hard"]), ["s2", "s3"], "and tags");
    assert_eq!(selected(&["--max-samples", "2"]), ["s1", "s2"]);
    assert_eq!(
        selected(&["--filter", "tag:geo", "--max-samples", "2"]),
        ["s1", "s2"]
    );
    assert_eq!(
        selected(&[
            "--filter",
            "tag:geo",
            "--filter",
            "id:s6",
            "--max-samples",
            "3"
        ]),
        ["s1", "s2", "s5"],
        "max-samples counts after the filters"
    );

    ws.write("suite.yaml", &format!("{SUITE}max_samples: 3\n"));
    assert_eq!(selected(&[]), ["s1", "s2", "s3"]);
    assert_eq!(
        selected(&["--max-samples", "1"]),
        ["s1"],
        "the flag overrides the suite"
    );
}

fn choose(n: u64, k: u64) -> f64 {
    if k > n {
        return 0.0;
    }
    (0..k).fold(1.0, |acc, i| acc * (n - i) as f64 / (k - i) as f64)
}

fn close(actual: &Value, expected: f64) -> bool {
    actual.as_f64().is_some_and(|a| (a - expected).abs() < 1e-9)
}

#[test]
fn repeated_runs_give_pass_at_k_and_pass_rates_a_wilson_interval() {
    // Passes per id over three recorded runs each.
    let runs: [(&str, [bool; 3]); 4] = [
        ("a", [true, false, true]),
        ("b", [false, false, true]),
        ("c", [true, true, true]),
        ("d", [false, false, false]),
    ];
    let rows: Vec<Value> = runs
        .iter()
        .flat_map(|(id, passes)| {
            passes
                .iter()
                .map(|&pass| row(id, if pass { "Paris" } else { "Lyon" }, "Paris", &[]))
        })
        .collect();
    let ws = Workspace::new();
    ws.write("suite.yaml", SUITE);
    ws.write_rows("data.jsonl", &rows);
    assert_ok(&ws.gavel(&["run", "suite.yaml", "-o", "out"]));
    let summary = ws.summary("out");
    assert_eq!(summary["counts"]["total"], 12);
    assert_eq!(summary["counts"]["samples"], 4);
    let metric = &summary["metrics"]["answer"];

    for k in 1..=3u64 {
        let per_id = |f: &dyn Fn(u64, u64) -> f64| -> f64 {
            runs.iter()
                .map(|(_, passes)| {
                    let c = passes.iter().filter(|&&p| p).count() as u64;
                    f(3, c)
                })
                .sum::<f64>()
                / runs.len() as f64
        };
        let pass_at = per_id(&|n, c| 1.0 - choose(n - c, k) / choose(n, k));
        let pass_hat = per_id(&|n, c| choose(c, k) / choose(n, k));
        let key = k.to_string();
        assert!(
            close(&metric["pass_at_k"][&key], pass_at),
            "pass@{k}: {} != {pass_at}",
            metric["pass_at_k"][&key]
        );
        assert!(
            close(&metric["pass_hat_k"][&key], pass_hat),
            "pass^{k}: {} != {pass_hat}",
            metric["pass_hat_k"][&key]
        );
    }
    assert!(
        metric["pass_at_k"].get("4").is_none(),
        "k stops at the runs recorded"
    );

    // Wilson score interval of 6 passes in 12 at z = 1.96.
    let (n, p, z) = (12.0_f64, 0.5_f64, 1.959_963_984_540_054_f64);
    let centre = (p + z * z / (2.0 * n)) / (1.0 + z * z / n);
    let half = z / (1.0 + z * z / n) * (p * (1.0 - p) / n + z * z / (4.0 * n * n)).sqrt();
    assert!(close(&metric["pass_rate"], 0.5));
    assert!(close(&metric["pass_rate_ci95"][0], centre - half));
    assert!(close(&metric["pass_rate_ci95"][1], centre + half));
}

#[test]
fn a_recorded_run_finds_a_row_without_an_id_by_its_line_index_blank_lines_counted() {
    let ws = Workspace::new();
    ws.write(
        "suite.yaml",
        "name: runs\ndataset: data.jsonl\ntrajectories: [run_1.jsonl]\ngraders:\n  answer:\n    kind: tool\n    function: contains\n",
    );
    // The second row is on line 3: its id is 2, as letta-evals gives it.
    ws.write(
        "data.jsonl",
        "{\"input\": \"Capital of France?\", \"ground_truth\": \"Paris\"}\n\n\
         {\"input\": \"Capital of Italy?\", \"ground_truth\": \"Rome\"}\n",
    );
    let record = |id: u64, answer: &str| {
        json!({"sample_id": id, "trajectory": [[
            {"id": "m1", "date": "2026-01-01T00:00:00Z", "message_type": "assistant_message", "content": answer}
        ]]})
    };
    ws.write_rows("run_1.jsonl", &[record(0, "Paris"), record(2, "Rome")]);
    assert_ok(&ws.gavel(&["run", "suite.yaml", "-o", "out"]));
    let results = std::fs::read_to_string(ws.path("out/results.jsonl")).unwrap();
    let graded: Vec<(Value, Value)> = results
        .lines()
        .map(|line| {
            let result: Value = serde_json::from_str(line).unwrap();
            (
                result["sample_id"].clone(),
                result["grades"]["answer"]["score"].clone(),
            )
        })
        .collect();
    assert_eq!(graded, [(json!(0), json!(1.0)), (json!(2), json!(1.0))]);
}

#[test]
fn recorded_run_files_are_runs_of_one_sample() {
    let ws = Workspace::new();
    ws.write(
        "suite.yaml",
        "name: runs\ndataset: data.jsonl\ntrajectories: [run_1.jsonl, run_2.jsonl]\ngraders:\n  answer:\n    kind: tool\n    function: contains\n",
    );
    ws.write_rows(
        "data.jsonl",
        &[
            json!({"id": "q1", "input": "Capital of France?", "ground_truth": "Paris"}),
            json!({"id": "q2", "input": "Capital of Italy?", "ground_truth": "Rome"}),
        ],
    );
    let record = |id: &str, answer: &str| {
        json!({"sample_id": id, "trajectory": [[
            {"id": "m1", "date": "2026-01-01T00:00:00Z", "message_type": "assistant_message", "content": answer}
        ]]})
    };
    ws.write_rows(
        "run_1.jsonl",
        &[record("q1", "Paris"), record("q2", "Milan")],
    );
    ws.write_rows(
        "run_2.jsonl",
        &[record("q2", "Rome"), record("q1", "Paris")],
    );
    assert_ok(&ws.gavel(&["run", "suite.yaml", "-o", "out"]));
    let summary = ws.summary("out");
    assert_eq!(
        (&summary["counts"]["total"], &summary["counts"]["samples"]),
        (&json!(4), &json!(2))
    );
    let metric = &summary["metrics"]["answer"];
    // q1 passes both runs, q2 one of two.
    assert!(close(&metric["pass_at_k"]["1"], (1.0 + 0.5) / 2.0));
    assert!(close(&metric["pass_at_k"]["2"], (1.0 + 1.0) / 2.0));
    assert!(close(&metric["pass_hat_k"]["2"], (1.0 + 0.0) / 2.0));
}

/// Rows of the dataset that no recorded run names are not graded, and `gavel validate` says
/// which, by line and id: a run that did not record every row is not taken for one that did.
#[test]
fn validate_names_the_rows_no_recorded_run_names() {
    let ws = Workspace::new();
    ws.write(
        "suite.yaml",
        "name: runs\ndataset: data.jsonl\ntrajectories: [run_1.jsonl]\ngraders:\n  answer:\n    kind: tool\n    function: contains\n",
    );
    ws.write_rows(
        "data.jsonl",
        &[
            json!({"id": "q1", "input": "Capital of France?", "ground_truth": "Paris"}),
            json!({"id": "q2", "input": "Capital of Italy?", "ground_truth": "Rome"}),
            json!({"input": "Capital of Spain?", "ground_truth": "Madrid"}),
        ],
    );
    let record = json!({"sample_id": "q1", "trajectory": [[
        {"id": "m1", "date": "2026-01-01T00:00:00Z", "message_type": "assistant_message", "content": "Paris"}
    ]]});
    ws.write_rows("run_1.jsonl", &[record]);
    let validated = ws.gavel(&["validate", "suite.yaml"]);
    assert_ok(&validated);
    let said = stderr(&validated);
    for warning in [
        "warning: data.jsonl:2: no recorded run of the suite's trajectories names this row's id (q2): the row is not graded",
        "warning: data.jsonl:3: no recorded run of the suite's trajectories names this row's id (2): the row is not graded",
    ] {
        assert!(said.contains(warning), "{said}");
    }
    assert_ok(&ws.gavel(&["run", "suite.yaml", "-o", "out"]));
    assert_eq!(ws.summary("out")["counts"]["total"], json!(1));
}

#[test]
fn output_modes_plain_json_and_quiet() {
    let ws = Workspace::new();
    ws.write(
        "suite.yaml",
        &format!(
            "{SUITE}gate:\n  kind: simple\n  metric_key: answer\n  aggregation: avg_score\n  op: gte\n  value: 0.9\n"
        ),
    );
    ws.write_rows(
        "data.jsonl",
        &[
            row("paris", "Paris", "Paris", &[]),
            row("lyon", "Lyon", "Paris", &[]),
        ],
    );

    let plain = ws.gavel(&["run", "suite.yaml", "-o", "plain"]);
    assert_eq!(plain.status.code(), Some(1), "the gate fails");
    let table = stdout(&plain);
    assert!(
        table.contains("capitals: 2 samples: 1 passed, 1 failed, 0 errored"),
        "{table}"
    );
    assert!(
        table.contains("metric") && table.contains("pass rate"),
        "{table}"
    );
    // The verdict is said once: the gate's message opens with it, and the line says it first.
    assert!(table.contains("gate: FAILED (answer "), "{table}");
    assert!(!table.contains("gate failed"), "{table}");
    assert!(
        table.contains("failing samples:\n  lyon  answer: Contains ground_truth: False"),
        "{table}"
    );
    assert!(!table.contains('\u{1b}'), "no colour when piped: {table:?}");
    assert!(
        stderr(&plain).contains("graded 2/2"),
        "a piped run prints plain progress lines: {}",
        stderr(&plain)
    );

    let json = ws.gavel(&["run", "suite.yaml", "-o", "json", "--json"]);
    assert_eq!(json.status.code(), Some(1));
    let printed: Value = serde_json::from_str(&stdout(&json)).expect("--json prints JSON");
    assert_eq!(printed, ws.summary("json"));
    assert_eq!(stderr(&json), "", "--json keeps stderr for errors");

    let quiet = ws.gavel(&["run", "suite.yaml", "-o", "quiet", "--quiet"]);
    assert_eq!(
        quiet.status.code(),
        Some(1),
        "quiet runs still report the gate by exit code"
    );
    assert_eq!(
        (stdout(&quiet), stderr(&quiet)),
        (String::new(), String::new())
    );
    assert_eq!(ws.results("quiet").len(), 2);
}

/// Runs `gavel` expecting it to refuse (exit 2) with an error that says `said`.
fn refused(ws: &Workspace, args: &[&str], said: &str) {
    let output = ws.gavel(args);
    let err = stderr(&output);
    assert_eq!(output.status.code(), Some(2), "{args:?}: {err}");
    assert!(err.contains(said), "{args:?}: {err}");
}

#[test]
fn an_output_flag_never_writes_over_what_the_run_reads() {
    let ws = Workspace::new();
    ws.write("suite.yaml", SUITE);
    ws.write_rows("data.jsonl", &[row("paris", "Paris", "Paris", &[])]);
    std::os::unix::fs::symlink("data.jsonl", ws.path("link.jsonl")).unwrap();
    let before = |name: &str| std::fs::read(ws.path(name)).unwrap();
    let (dataset, suite) = (before("data.jsonl"), before("suite.yaml"));
    fn run(junit: &str) -> [&str; 6] {
        ["run", "suite.yaml", "-o", "out", "--junit", junit]
    }
    for (junit, input) in [
        ("data.jsonl", "the dataset data.jsonl"),
        ("./data.jsonl", "the dataset data.jsonl"),
        ("link.jsonl", "the dataset data.jsonl"),
        ("suite.yaml", "the suite suite.yaml"),
    ] {
        refused(
            &ws,
            &run(junit),
            &format!(
                "error: cannot write the JUnit report to {junit}: it is the same file as {input}, \
                 which this command reads; give --junit another path"
            ),
        );
        assert_eq!(before("data.jsonl"), dataset, "--junit {junit}");
        assert_eq!(before("suite.yaml"), suite, "--junit {junit}");
        assert!(!ws.path("out/results.jsonl").exists(), "--junit {junit}");
    }
    // The run's own results are not the JUnit report's either.
    refused(
        &ws,
        &run("out/results.jsonl"),
        "the same file as the run's results out/results.jsonl, which this command writes too",
    );
    assert_ok(&ws.gavel(&run("report.xml")));
}

#[test]
fn report_and_diff_never_write_over_the_runs_they_read() {
    let ws = Workspace::new();
    ws.write("suite.yaml", SUITE);
    ws.write_rows("data.jsonl", &[row("paris", "Paris", "Paris", &[])]);
    assert_ok(&ws.gavel(&["run", "suite.yaml", "-o", "base"]));
    assert_ok(&ws.gavel(&["run", "suite.yaml", "-o", "out"]));
    let files = [
        "out/results.jsonl",
        "out/run.json",
        "base/results.jsonl",
        "data.jsonl",
    ];
    let before: Vec<Vec<u8>> = files
        .iter()
        .map(|f| std::fs::read(ws.path(f)).unwrap())
        .collect();
    refused(
        &ws,
        &["report", "out", "-o", "out/results.jsonl"],
        "cannot write the report to out/results.jsonl: it is the same file as the run's results \
         out/results.jsonl, which this command reads; give -o another path",
    );
    refused(
        &ws,
        &["report", "out", "-o", "./out/run.json"],
        "it is the same file as the run's record out/run.json",
    );
    refused(&ws, &["report", "out", "-o", "data.jsonl"], "the dataset");
    refused(
        &ws,
        &["diff", "base", "out", "--html", "out/results.jsonl"],
        "cannot write the report to out/results.jsonl: it is the same file as the run's results \
         out/results.jsonl, which this command reads; give --html another path",
    );
    refused(
        &ws,
        &["diff", "base", "out", "--html", "base/results.jsonl"],
        "it is the same file as the base run's results base/results.jsonl",
    );
    for (file, was) in files.iter().zip(&before) {
        assert_eq!(&std::fs::read(ws.path(file)).unwrap(), was, "{file}");
    }
    assert_ok(&ws.gavel(&["report", "out", "-o", "report.html"]));
}

#[test]
fn a_suite_name_makes_a_folder_of_its_own_inside_results() {
    let ws = Workspace::new();
    ws.write_rows("data.jsonl", &[row("paris", "Paris", "Paris", &[])]);
    for (name, folder) in [("..", "results/.."), ("", "results/"), (".", "results/.")] {
        ws.write(
            "suite.yaml",
            &SUITE.replace("capitals", &format!("\"{name}\"")),
        );
        refused(
            &ws,
            &["run", "suite.yaml"],
            &format!(
                "error: suite.yaml:1:7: name: \"{name}\" cannot name the run's default folder: \
                 results/<name> would be {folder}, not a folder of its own inside results/\n  \
                 hint: give the suite a name with a letter or digit in it, or its output folder \
                 with `output:` in the suite or -o DIR"
            ),
        );
        for written in [
            "results.jsonl",
            "results/results.jsonl",
            "run.json",
            "results/run.json",
        ] {
            assert!(!ws.path(written).exists(), "name {name:?} wrote {written}");
        }
    }
    // Told where, the run goes there; any other name keeps its folder.
    assert_ok(&ws.gavel(&["run", "suite.yaml", "-o", "dots"]));
    ws.write("suite.yaml", &SUITE.replace("capitals", "\"a/b c..\""));
    assert_ok(&ws.gavel(&["run", "suite.yaml"]));
    assert_eq!(ws.results("results/a-b-c..").len(), 1);
}

/// Runs `gavel` under a pseudo-terminal (util-linux `script`), returning what the terminal
/// received.
fn on_terminal(dir: &Path, args: &str, no_color: bool) -> String {
    let command = format!("'{}' {args}", env!("CARGO_BIN_EXE_gavel"));
    let mut script = Command::new("script");
    script
        .args(["-qec", &command, "/dev/null"])
        .current_dir(dir)
        .env("GAVEL_CACHE_DIR", dir.join(".cache"))
        .env("TERM", "xterm");
    if no_color {
        script.env("NO_COLOR", "1");
    } else {
        script.env_remove("NO_COLOR");
    }
    let output = script
        .output()
        .expect("util-linux `script` runs (it provides the pseudo-terminal)");
    assert_eq!(
        output.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&output.stdout)
    );
    String::from_utf8_lossy(&output.stdout).into_owned()
}

#[test]
fn a_terminal_gets_a_progress_bar_and_colour_unless_no_color() {
    let ws = Workspace::new();
    ws.write("suite.yaml", SUITE);
    let rows: Vec<Value> = (0..20_000)
        .map(|i| {
            let answer = if i % 4 == 0 { "Lyon" } else { "Paris" };
            row(&format!("s{i}"), answer, "Paris", &[])
        })
        .collect();
    ws.write_rows("data.jsonl", &rows);

    let screen = on_terminal(ws.dir.path(), "run suite.yaml -o tty", false);
    assert!(
        screen.contains("/20000"),
        "a bar with the total: {screen:.400}"
    );
    assert!(screen.contains("ETA"), "an ETA: {screen:.400}");
    let rate = regex::Regex::new(r" \d+/s ETA").expect("pattern");
    assert!(rate.is_match(&screen), "a whole-number rate: {screen:.400}");
    assert!(
        screen.contains("answer 75%"),
        "the running pass rate per metric"
    );
    assert!(
        screen.contains("\u{1b}[32m"),
        "a coloured bar on a terminal"
    );
    assert!(
        screen.contains("capitals: 20000 samples: 15000 passed"),
        "the end summary follows the bar"
    );

    let plain = on_terminal(ws.dir.path(), "run suite.yaml -o tty-plain", true);
    assert!(plain.contains("ETA"), "still a bar with NO_COLOR");
    assert!(
        !plain.contains("\u{1b}[3"),
        "no colour codes with NO_COLOR: {plain:.400}"
    );

    let quiet = on_terminal(ws.dir.path(), "run suite.yaml -o tty-quiet --quiet", false);
    assert_eq!(quiet, "", "--quiet prints nothing, even on a terminal");
}
