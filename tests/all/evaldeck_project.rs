//! evaldeck projects through `gavel run CASES --traces TRACES`: a folder of evaldeck case files
//! (or one of them) and their recorded traces, graded as evaldeck grades them, and the mistakes
//! in either refused before grading, each with its file and line.

use crate::common::{Workspace, data, load_json, stderr};
use crate::conformance::check_turns_grade;
use serde_json::{Value, json};

/// The test project: `cases/` holds a single-turn case in the older `input:` form (`weather`),
/// a three-turn case whose second turn fails (`booking`), a `.yml` case with a grader entry
/// (`greet`) and `_draft.yaml`, which is not a case.
pub fn project(ws: &Workspace) {
    let root = data("evaldeck-project");
    for name in [
        "a_weather.yaml",
        "b_booking.yaml",
        "c_greet.yml",
        "_draft.yaml",
    ] {
        let text = std::fs::read_to_string(root.join("cases").join(name)).expect("case file");
        ws.write(&format!("cases/{name}"), &text);
    }
    let traces = std::fs::read_to_string(root.join("traces.jsonl")).expect("traces file");
    ws.write("traces.jsonl", &traces);
}

/// `gavel run` of the project's cases and traces into `out`.
pub(crate) const RUN_CASES: &[&str] = &["run", "cases", "--traces", "traces.jsonl", "-o", "out"];

/// Grades `cases` with `traces.jsonl` into `out`, expecting it to succeed.
fn graded(ws: &Workspace) {
    let output = ws.gavel(&[
        "run",
        "cases",
        "--traces",
        "traces.jsonl",
        "-o",
        "out",
        "--quiet",
    ]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
}

/// Runs gavel expecting it to refuse: exit 2, nothing graded; its error lines.
fn refused(ws: &Workspace, args: &[&str]) -> String {
    let output = ws.gavel(args);
    let err = stderr(&output);
    assert_eq!(output.status.code(), Some(2), "{err}");
    assert!(err.contains("nothing was graded"), "{err}");
    assert!(!ws.path("out").join("results.jsonl").exists());
    err
}

#[test]
fn a_folder_of_cases_is_graded_with_its_traces_in_evaldeck_order() {
    let ws = Workspace::new();
    project(&ws);
    graded(&ws);
    let results = ws.results("out");
    let graded: Vec<(Value, Value, Value)> = results
        .iter()
        .map(|r| {
            let grade = &r["grades"]["case"];
            (
                r["sample_id"].clone(),
                grade["status"].clone(),
                grade["score"].clone(),
            )
        })
        .collect();
    // `.yaml` files by name, then `.yml` files; `_draft.yaml` skipped.
    assert_eq!(
        graded,
        vec![
            (json!("weather"), json!("pass"), json!(1.0)),
            (json!("booking"), json!("fail"), json!(0.5)),
            (json!("greet"), json!("pass"), json!(1.0)),
        ]
    );
    // The older single-turn form is one turn with its `expected` checks.
    let weather = &results[0]["grades"]["case"];
    let checks: Vec<&Value> = weather["metadata"]["turns"][0]["checks"]
        .as_array()
        .expect("checks")
        .iter()
        .map(|c| &c["check"])
        .collect();
    assert_eq!(checks, [&json!("output_contains"), &json!("tools_called")]);
    // The list of traces is graded turn by turn: turn 2 fails, turn 3 is skipped.
    let booking = &results[1]["grades"]["case"];
    assert_eq!(booking["metadata"]["failed_at_turn"], json!(1));
    assert_eq!(
        booking["rationale"],
        json!(
            "1/2 checks passed; turn 2: tools_called: Required tools not called: ['book_flight']; turn 3 skipped"
        )
    );
    // A `graders:` entry of the older form is the turn's.
    let greet = &results[2]["grades"]["case"];
    assert_eq!(
        greet["metadata"]["turns"][0]["checks"][0]["message"],
        json!("All 1 values found in output")
    );
    // `--filter` picks cases by name.
    let one = ws.gavel(&[
        "run",
        "cases",
        "--traces",
        "traces.jsonl",
        "--filter",
        "id:booking",
        "-o",
        "one",
        "--quiet",
    ]);
    assert_eq!(one.status.code(), Some(0), "{}", stderr(&one));
    assert_eq!(ws.results("one"), results[1..2]);
    // The run is a suite run like any other: its dataset and suite are in the output folder.
    assert!(ws.path("out/cases.jsonl").is_file());
    let again = ws.gavel(&["run", "out/suite.yaml", "-o", "again", "--quiet"]);
    assert_eq!(again.status.code(), Some(0), "{}", stderr(&again));
    assert_eq!(ws.results("again"), results);
}

#[test]
fn one_case_file_is_graded_with_the_trace_naming_it() {
    let ws = Workspace::new();
    project(&ws);
    ws.write_rows(
        "one.jsonl",
        &[json!({"input": "Say hello", "output": "goodbye", "metadata": {"case_name": "greet"}})],
    );
    let output = ws.gavel(&[
        "run",
        "cases/c_greet.yml",
        "--traces",
        "one.jsonl",
        "-o",
        "out",
        "--quiet",
    ]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let results = ws.results("out");
    assert_eq!(results.len(), 1);
    assert_eq!(results[0]["grades"]["case"]["status"], json!("fail"));
}

#[test]
fn mistakes_in_cases_and_traces_are_each_reported_with_file_and_line() {
    let ws = Workspace::new();
    ws.write("cases/a.yaml", "name: weather\ninput: x\n");
    ws.write("cases/b.yaml", "# the same name\nname: weather\ninput: y\n");
    ws.write("cases/c.yaml", "input: [unclosed\n");
    ws.write("cases/d.yaml", "description: no name\ninput: z\n");
    ws.write("cases/e.yml", "name: lonely\ninput: q\n");
    ws.write(
        "traces.jsonl",
        "{\"input\":\"x\",\"metadata\":{\"case_name\":\"weather\"}}\n\n\
         {\"input\":\"x\",\"metadata\":{\"case_name\":\"nobody\"}}\n\
         not json\n\
         {\"input\":\"x\"}\n\
         {\"input\":\"x\",\"metadata\":{\"case_name\":\"weather\"}}\n",
    );
    let err = refused(
        &ws,
        &["run", "cases", "--traces", "traces.jsonl", "-o", "out"],
    );
    let errors: Vec<&str> = err.lines().filter(|l| l.starts_with("error: ")).collect();
    let expected = [
        "error: cases/b.yaml:2: name: the case `weather` is also in cases/a.yaml:1",
        "error: cases/c.yaml:1:8: unclosed bracket '['",
        "error: cases/d.yaml: name: missing",
        // The trace naming `nobody` is not refused: it may be the case of c.yaml or d.yaml,
        // which could not be read (their errors say what to mend).
        "error: traces.jsonl:4: not JSON: expected ident at line 1 column 2",
        "error: traces.jsonl:5: the case `weather`, whose input it was given, already has its trace on line 1",
        "error: traces.jsonl:6: metadata.case_name: the case `weather` already has its trace on line 1",
        "error: cases/e.yml:1: name: the case `lonely` has no trace in traces.jsonl",
    ];
    assert_eq!(errors, expected, "{err}");
    // Each says how to fix it.
    assert!(err.contains("hint: add `name: ...`"), "{err}");
    assert!(
        err.contains(
            "hint: add a line whose trace has `\"metadata\": {\"case_name\": \"lonely\"}`"
        ),
        "{err}"
    );
    // Once every case file reads, the name that matches none is refused.
    ws.write("cases/c.yaml", "name: closed\ninput: w\n");
    ws.write("cases/d.yaml", "name: named\ninput: z\n");
    let err = refused(
        &ws,
        &["run", "cases", "--traces", "traces.jsonl", "-o", "out"],
    );
    assert!(
        err.contains(
            "error: traces.jsonl:3: metadata.case_name: no case is named `nobody` in cases"
        ),
        "{err}"
    );
}

#[test]
fn a_traces_file_saved_with_a_byte_order_mark_is_refused_with_its_mend() {
    let ws = Workspace::new();
    ws.write("cases/a.yaml", "name: weather\ninput: x\n");
    ws.write(
        "traces.jsonl",
        "\u{feff}{\"input\":\"x\",\"metadata\":{\"case_name\":\"weather\"}}\n",
    );
    let err = refused(&ws, &["validate", "cases", "--traces", "traces.jsonl"]);
    assert!(
        err.contains(
            "error: traces.jsonl:1: the file starts with a UTF-8 byte order mark (BOM), which \
             JSON Lines does not allow"
        ) && err.contains("sed -i"),
        "{err}"
    );
    // Nothing else is said of a file that could not be read.
    assert_eq!(err.matches("error: ").count(), 1, "{err}");
}

#[test]
fn a_case_that_asks_for_what_cannot_be_graded_is_refused_at_its_line() {
    let ws = Workspace::new();
    ws.write("cases/a.yaml", "name: listless\nturns: one turn\n");
    ws.write(
        "cases/b.yaml",
        "name: typo\ninput: x\n\ngraders:\n  - type: containz\n",
    );
    ws.write(
        "cases/c.yaml",
        "name: late\nturns:\n  - user: hi\n  - user: again\n    graders:\n      - type: regexx\n",
    );
    let traces: String = ["listless", "typo", "late"]
        .iter()
        .map(|name| format!("{{\"input\":\"x\",\"metadata\":{{\"case_name\":\"{name}\"}}}}\n"))
        .collect();
    ws.write("traces.jsonl", &traces);
    let err = refused(
        &ws,
        &["run", "cases", "--traces", "traces.jsonl", "-o", "out"],
    );
    let errors: Vec<&str> = err.lines().filter(|l| l.starts_with("error: ")).collect();
    assert_eq!(errors.len(), 3, "{err}");
    assert!(
        errors[0].starts_with(
            "error: cases/a.yaml:2: turns: invalid type: string \"one turn\", expected a sequence"
        ),
        "{err}"
    );
    assert!(
        errors[1].starts_with(
            "error: cases/b.yaml:4: graders: turns[0].graders[0].type: unknown grader type `containz` (known: "
        ),
        "{err}"
    );
    assert!(
        errors[2].starts_with(
            "error: cases/c.yaml:2: turns: turns[1].graders[0].type: unknown grader type `regexx`"
        ),
        "{err}"
    );
    // Nothing is written for the run: the cases are refused before a dataset is made of them.
    assert!(!ws.path("out").join("cases.jsonl").exists(), "{err}");

    // A field of another type than evaldeck's is said at the case file's key, not at the row
    // written for the case (a file of a folder that is gone once `validate` ends).
    ws.write(
        "cases/a.yaml",
        "name: listless\nturns: [{user: x}]\nmetadata: [1]\n",
    );
    ws.write("cases/b.yaml", "name: typo\ninput: x\n");
    ws.write("cases/c.yaml", "name: late\ntags: nope\ninput: x\n");
    for command in [&["validate"][..], &["run", "-o", "out"]] {
        let err = refused(
            &ws,
            &[command, &["cases", "--traces", "traces.jsonl"]].concat(),
        );
        let errors: Vec<&str> = err.lines().filter(|l| l.starts_with("error: ")).collect();
        assert_eq!(
            errors,
            [
                "error: cases/a.yaml:3: metadata: invalid type: sequence, expected a map",
                "error: cases/c.yaml:2: tags: invalid type: string \"nope\", expected a sequence",
            ],
            "{err}"
        );
    }
}

#[test]
fn cases_without_traces_or_a_folder_without_cases_say_what_to_give() {
    let ws = Workspace::new();
    ws.write("empty/notes.txt", "nothing here");
    ws.write_rows("traces.jsonl", &[]);
    let err = refused(
        &ws,
        &["run", "empty", "--traces", "traces.jsonl", "-o", "out"],
    );
    assert!(
        err.contains("error: empty: this folder holds no case file"),
        "{err}"
    );
    project(&ws);
    let err = refused(&ws, &["run", "cases", "-o", "out"]);
    assert!(
        err.contains("hint: for a folder of evaldeck case files, give their traces: --traces FILE"),
        "{err}"
    );
    let err = refused(&ws, &["run", "cases/b_booking.yaml", "-o", "out"]);
    assert!(
        err.contains("hint: this looks like an evaldeck case file: grade it with its recorded traces, --traces FILE"),
        "{err}"
    );
    let err = refused(
        &ws,
        &["run", "cases", "--traces", "missing.jsonl", "-o", "out"],
    );
    assert!(
        err.contains("error: missing.jsonl: cannot read the traces file"),
        "{err}"
    );

    // evaldeck's own layout: its configuration names the cases' folder, whose subfolders are
    // its suites. Each way in says what to give.
    ws.write(
        "proj/evaldeck.yaml",
        "version: 1\nagent: {module: a, function: b}\ntest_dir: evals\n",
    );
    ws.write("proj/evals/smoke/a.yaml", "name: a\ninput: x\n");
    let config =
        "proj/evaldeck.yaml: this is evaldeck's project configuration, which gavel does not read";
    let hint = "subfolders: gavel run proj/evals --traces TRACES.jsonl";
    for args in [
        &["validate", "proj", "--traces", "traces.jsonl"][..],
        &["validate", "proj/evaldeck.yaml"],
        &[
            "run",
            "proj/evaldeck.yaml",
            "--traces",
            "traces.jsonl",
            "-o",
            "out",
        ],
    ] {
        let err = refused(&ws, args);
        assert!(
            err.contains(config) && err.contains(hint),
            "{args:?}: {err}"
        );
        assert_eq!(err.matches("error: ").count(), 1, "{args:?}: {err}");
    }
    let err = refused(&ws, &["validate", "proj/evals", "--traces", "traces.jsonl"]);
    assert!(
        err.contains("hint: its subfolders (smoke) may each be a suite of cases"),
        "{err}"
    );
}

/// The project of `type: code` entries (`host/tests/data/evaldeck-code`): the seed's
/// `check_booking_format` (its `my_graders.py`, verbatim) in its single-turn case and on each turn
/// of a multi-turn one, a function that raises on the second turn of a third case, and one of a
/// module named by a dotted name (`checks.seats`) with details of its own; in `ws`.
/// Returns `expected.json`: evaldeck's grades of them, recorded by its `record.py`.
fn code_project(ws: &Workspace) -> Vec<Value> {
    let root = data("evaldeck-code");
    for name in [
        "cases/a_booking.yaml",
        "cases/b_flow.yaml",
        "cases/c_fares.yaml",
        "cases/fares.py",
        "cases/d_seats.yaml",
        "cases/checks/__init__.py",
        "cases/checks/seats.py",
        "traces.jsonl",
    ] {
        ws.write(name, &std::fs::read_to_string(root.join(name)).expect(name));
    }
    let seed = data("python/evaldeck-seed/my_graders.py");
    ws.write(
        "cases/my_graders.py",
        &std::fs::read_to_string(seed).expect("the seed's graders"),
    );
    serde_json::from_str(&std::fs::read_to_string(root.join("expected.json")).expect("expected"))
        .expect("expected.json is JSON")
}

/// gavel run in `ws` with the Python interpreter's cache.
fn gavel_python(cache: &std::path::Path, ws: &Workspace, args: &[&str]) -> std::process::Output {
    crate::python_graders::gavel(cache, ws.dir.path(), args)
}

#[test]
fn code_entries_run_their_function_in_the_sandbox_as_evaldeck_runs_it() {
    let Some(cache) = crate::python_graders::cache() else {
        return;
    };
    let ws = Workspace::new();
    let recorded = code_project(&ws);
    let output = gavel_python(cache, &ws, &[RUN_CASES, &["-q"]].concat());
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let results = ws.results("out");
    assert_eq!(results.len(), recorded.len());
    for (result, want) in results.iter().zip(&recorded) {
        let grade = &result["grades"]["case"];
        let case = want["name"].as_str().expect("name");
        assert_eq!(result["sample_id"], want["name"], "{grade}");
        assert_eq!(grade["status"], want["status"], "{case}: {grade}");
        assert_eq!(grade["score"], want["pass_rate"], "{case}: {grade}");
        assert_eq!(
            grade["metadata"]["failed_at_turn"], want["failed_at_turn"],
            "{case}: {grade}"
        );
        let turns = grade["metadata"]["turns"].as_array().expect("turns");
        let wanted = want["turns"].as_array().expect("turns");
        assert_eq!(turns.len(), wanted.len(), "{case}: {grade}");
        for (turn, want) in turns.iter().zip(wanted) {
            let place = format!("{case} turn {}", want["turn_index"]);
            assert_eq!(turn["turn_index"], want["turn_index"], "{place}");
            assert_eq!(turn["status"], want["status"], "{place}: {turn}");
            assert_eq!(turn["skipped"], want["skipped"], "{place}: {turn}");
            let checks = turn["checks"].as_array().expect("checks");
            let grades = want["grades"].as_array().expect("grades");
            assert_eq!(checks.len(), grades.len(), "{place}: {turn}");
            for (check, want) in checks.iter().zip(grades) {
                assert_eq!(check["status"], want["status"], "{place}: {check}");
                assert_eq!(check["message"], want["message"], "{place}: {check}");
                if check["check"] != "code" {
                    continue;
                }
                let details = &check["details"];
                assert_eq!(details["grader_name"], want["grader_name"], "{place}");
                for (key, value) in want["details"].as_object().expect("details") {
                    assert_eq!(&details[key], value, "{place}: details.{key}");
                }
                // evaldeck's score, or (none given) 1 for a pass and 0 otherwise.
                let score = want["score"]
                    .as_f64()
                    .unwrap_or(if want["status"] == "pass" { 1.0 } else { 0.0 });
                assert_eq!(details["score"].as_f64(), Some(score), "{place}: {check}");
                for field in ["expected", "actual"] {
                    let got = details.get(field).unwrap_or(&Value::Null);
                    assert_eq!(got, &want[field], "{place}: {field}");
                }
                // A fresh sandbox call with the pack limits: its usage is recorded.
                assert!(
                    details["sandbox"]["fuel_used"].as_u64() > Some(0),
                    "{check}"
                );
            }
        }
    }
    // The function that raised is an error check with evaldeck's text, and errs its case.
    assert_eq!(
        results[2]["grades"]["case"]["rationale"],
        json!("1/2 checks passed; turn 2: code: Custom grader error: 'premium'")
    );
    // The suite written for the run finds the modules beside the case files again.
    let again = gavel_python(cache, &ws, &["run", "out/suite.yaml", "-o", "again", "-q"]);
    assert_eq!(again.status.code(), Some(0), "{}", stderr(&again));
    let grades = |results: Vec<Value>| -> Vec<Value> {
        results
            .into_iter()
            .map(|r| r["grades"]["case"].clone())
            .collect()
    };
    assert_eq!(grades(ws.results("again")), grades(results));
}

#[test]
fn a_code_entry_whose_function_cannot_be_loaded_is_refused_at_its_line() {
    let Some(cache) = crate::python_graders::cache() else {
        return;
    };
    // (file edited, text replaced, by, the one error's start, and what it then says)
    let mistakes = [
        (
            "cases/b_flow.yaml",
            "module: my_graders",
            "module: booking_graders",
            "error: cases/b_flow.yaml:8: turns[0].graders[0]: ",
            "no module `booking_graders` beside the case file: neither ",
        ),
        (
            "cases/c_fares.yaml",
            "function: check_fare",
            "function: check_fair",
            "error: cases/c_fares.yaml:5: turns[0].graders[0]: ",
            "fares.py: module 'fares' has no attribute 'check_fair'",
        ),
        // A module that does not load fails each entry naming it: said once, at the first.
        (
            "cases/fares.py",
            "FARES = {",
            "FARES = {(",
            "error: cases/c_fares.yaml:5: turns[0].graders[0]: ",
            "SyntaxError: ",
        ),
        (
            "cases/fares.py",
            "from evaldeck",
            "import numpy\nfrom evaldeck",
            "error: cases/c_fares.yaml:5: turns[0].graders[0]: ",
            "ModuleNotFoundError: No module named 'numpy'",
        ),
        (
            "cases/a_booking.yaml",
            "    function: check_booking_format\n",
            "",
            "error: cases/a_booking.yaml:6: graders[0].function: missing",
            "",
        ),
    ];
    // `gavel validate --traces` checks the cases as `gavel run --traces` grades them, and
    // writes nothing.
    let validate_cases: &[&str] = &["validate", "cases", "--traces", "traces.jsonl"];
    let ws = Workspace::new();
    code_project(&ws);
    let output = gavel_python(cache, &ws, validate_cases);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert_eq!(
        String::from_utf8_lossy(&output.stdout).trim(),
        "cases: valid (1 metric, 4 samples)"
    );
    assert!(!ws.path("out").exists());
    for (file, from, to, start, says) in mistakes {
        let ws = Workspace::new();
        code_project(&ws);
        let text = std::fs::read_to_string(ws.path(file)).expect(file);
        assert!(text.contains(from), "{file}: {from}");
        ws.write(file, &text.replacen(from, to, 1));
        // `gavel validate` refuses the cases, and the suite written for the run, alike.
        for args in [validate_cases, RUN_CASES, &["validate", "out/suite.yaml"]] {
            let output = gavel_python(cache, &ws, args);
            let err = stderr(&output);
            assert_eq!(output.status.code(), Some(2), "{args:?}: {err}");
            assert!(!ws.path("out/results.jsonl").exists(), "{err}");
            let errors: Vec<&str> = err.lines().filter(|l| l.starts_with("error: ")).collect();
            assert_eq!(errors.len(), 1, "{file}: {from}: {err}");
            assert!(
                errors[0].starts_with(start) && errors[0].contains(says),
                "{file}: {from}: {err}"
            );
            if args == validate_cases {
                assert!(!ws.path("out").exists(), "{err}");
            } else if !ws.path("out/suite.yaml").exists() {
                // A case file's own mistake is refused before the suite is written.
                assert!(start.ends_with("missing"), "{err}");
                break;
            }
        }
    }
}

/// Copies the files of `evaldeck-pyyaml/` named into the workspace, under the same names.
fn pyyaml_project(ws: &Workspace, names: &[&str]) {
    for name in names {
        let text = std::fs::read_to_string(data("evaldeck-pyyaml").join(name)).expect("file");
        ws.write(name, &text);
    }
}

#[test]
fn case_files_are_read_as_pyyaml_reads_them() {
    let recorded = load_json("evaldeck-pyyaml/recorded.json");
    let ws = Workspace::new();
    let files = ["cases/a_letters.yaml", "cases/b_numbers.yaml"];
    pyyaml_project(&ws, &files);
    pyyaml_project(&ws, &["traces.jsonl"]);
    graded(&ws);
    // The rows hold what evaldeck read: `input: y` and `user: Y` are text, `0b11` is 3, `010`
    // is 8, `on` and `Yes` are true, a quoted `'no'` is text.
    let rows: Vec<Value> = std::fs::read_to_string(ws.path("out").join("cases.jsonl"))
        .expect("the rows")
        .lines()
        .map(|line| serde_json::from_str(line).expect("a row"))
        .collect();
    let results = ws.results("out");
    assert_eq!(results.len(), files.len());
    for ((file, row), result) in files.iter().zip(&rows).zip(&results) {
        let want = &recorded[file];
        let case = &want["case"];
        for (turn, read) in row["turns"]
            .as_array()
            .expect("turns")
            .iter()
            .zip(case["turns"].as_array().expect("recorded turns"))
        {
            assert_eq!(turn["user"], read["user"], "{file}");
            for (key, value) in turn["expected"].as_object().expect("expected") {
                assert_eq!(&read["expected"][key], value, "{file}: {key}");
            }
        }
        // And graded it as evaldeck did.
        let grade = &result["grades"]["case"];
        if let Err(why) = check_turns_grade(grade, &want["expected"]) {
            panic!("{file}: {why}");
        }
    }
    assert_eq!(rows[0]["turns"][0]["user"], "y");
    assert_eq!(rows[1]["turns"][0]["expected"]["max_steps"], 3);
}

#[test]
fn a_case_file_evaldeck_refuses_for_a_yaml_1_1_boolean_is_refused() {
    let recorded = load_json("evaldeck-pyyaml/recorded.json");
    // evaldeck: `user: off` is False, which a turn's `user` (text) does not take.
    let refusal = recorded["refused/switch.yaml"]["error"]
        .as_str()
        .expect("evaldeck refused the file");
    assert!(
        refusal.contains("user\n  Input should be a valid string") && refusal.contains("False"),
        "{refusal}"
    );
    let ws = Workspace::new();
    pyyaml_project(&ws, &["refused/switch.yaml", "refused.jsonl"]);
    let err = refused(
        &ws,
        &["run", "refused", "--traces", "refused.jsonl", "-o", "out"],
    );
    let errors: Vec<&str> = err.lines().filter(|l| l.starts_with("error: ")).collect();
    assert_eq!(
        errors,
        [
            "error: refused/switch.yaml:2: turns: turns[1].user: invalid type: boolean `false`, expected a string"
        ],
        "{err}"
    );
}

/// A run of cases writes its rows and suite into its folder, again at each run; a `suite.yaml`
/// or `cases.jsonl` there that no such run wrote (the user's own) is left alone, and the run
/// refused.
#[test]
fn a_run_of_cases_does_not_write_over_a_suite_of_the_users_own() {
    let ws = Workspace::new();
    project(&ws);
    graded(&ws);
    let written = std::fs::read_to_string(ws.path("out/suite.yaml")).expect("the suite");
    assert!(
        written.starts_with("# Written by `gavel run --traces`"),
        "{written}"
    );
    // Again into the same folder: what the first run wrote is written again.
    graded(&ws);
    for own in ["suite.yaml", "cases.jsonl"] {
        let mine = Workspace::new();
        project(&mine);
        mine.write(&format!("out/{own}"), "# mine\n");
        let output = mine.gavel(&[RUN_CASES, &["--quiet"]].concat());
        assert_eq!(output.status.code(), Some(2), "{}", stderr(&output));
        assert!(
            stderr(&output).contains("no run of evaldeck cases wrote it"),
            "{}",
            stderr(&output)
        );
        let kept = std::fs::read_to_string(mine.path(&format!("out/{own}"))).expect("kept");
        assert_eq!(kept, "# mine\n");
    }
}
