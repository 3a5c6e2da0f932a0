//! The host's side of Python graders through the real `gavel` binary: `gavel:grader@0.2.0`
//! packs receive the row and the recorded run as written, and every Python suite form reaches
//! the interpreter as the function, files and modules it names, with its errors located before
//! any sample is graded.
//!
//! The interpreter here is the `interpreter-v1` test guest, which runs no Python but reports what
//! it was handed (`tests/guests/interpreter-v1`); the real interpreter is tested by
//! `python_graders.rs`.

use crate::common::{Workspace, gavel_with_env, stderr};
use gavel_test_artifacts::guests;
use serde_json::{Value, json};

fn letta_row(id: i64, answer: &str) -> Value {
    json!({
        "id": id,
        "input": "Classify the ticket",
        "ground_truth": "billing",
        "unknown_key": {"kept": [1, 2.50, "x"]},
        "trajectory": [[
            {"id": "m1", "date": "2026-01-01T00:00:00Z", "message_type": "user_message", "content": "Classify"},
            {"id": "m2", "date": "2026-01-01T00:00:01Z", "message_type": "assistant_message", "content": answer}
        ]]
    })
}

/// `gavel` in `ws` with the test interpreter standing in for the Python one.
fn gavel(ws: &Workspace, args: &[&str]) -> std::process::Output {
    gavel_with_env(
        ws.dir.path(),
        args,
        &[("GAVEL_PYTHON_COMPONENT", guests::INTERPRETER_V1)],
    )
}

fn run(ws: &Workspace) -> Vec<Value> {
    let out = gavel(ws, &["run", "suite.yaml", "-o", "out", "-q"]);
    assert!(matches!(out.status.code(), Some(0 | 1)), "{}", stderr(&out));
    ws.results("out")
}

#[test]
fn a_0_2_pack_receives_the_row_and_the_recorded_run_byte_for_byte() {
    let ws = Workspace::new();
    ws.write(
        "suite.yaml",
        &format!(
            "name: rows\ndataset: data.jsonl\npacks:\n  row:\n    path: {}\ngraders:\n  row:\n    kind: tool\n    function: row.row\n    extractor: row.recorded\n",
            guests::ROW_V2
        ),
    );
    // Written by hand: the spacing and the number format must reach the pack as they are.
    let row = r#"{"id": 1, "input": "hi", "extra": {"n": 2.50},  "trajectory": [[{"id": "m1", "date": "2026-01-01T00:00:00Z", "message_type": "assistant_message", "content": "hello"}]]}"#;
    ws.write("data.jsonl", &format!("{row}\n"));
    let results = run(&ws);
    let grade = &results[0]["grades"]["row"];
    assert_eq!(grade["rationale"], row, "{grade}");
    assert_eq!(
        grade["submission"],
        r#"[[{"id": "m1", "date": "2026-01-01T00:00:00Z", "message_type": "assistant_message", "content": "hello"}]]"#
    );
    assert_eq!(grade["metadata"]["format"], "letta");
}

#[test]
fn a_0_2_pack_receives_the_run_record_of_a_trajectories_file() {
    let ws = Workspace::new();
    ws.write(
        "suite.yaml",
        &format!(
            "name: rows\ndataset: data.jsonl\ntrajectories: runs.jsonl\npacks:\n  row:\n    path: {}\ngraders:\n  row:\n    kind: tool\n    function: row.row\n    extractor: row.recorded\n",
            guests::ROW_V2
        ),
    );
    ws.write("data.jsonl", "{\"id\": \"a\", \"input\": \"hi\"}\n");
    let record =
        r#"{"sample_id": "a", "trajectory": {"steps": [], "output": "done", "status": "success"}}"#;
    ws.write("runs.jsonl", &format!("{record}\n"));
    let results = run(&ws);
    let grade = &results[0]["grades"]["row"];
    assert_eq!(grade["rationale"], "{\"id\": \"a\", \"input\": \"hi\"}");
    assert_eq!(
        grade["submission"],
        r#"{"steps": [], "output": "done", "status": "success"}"#
    );
    assert_eq!(grade["metadata"]["format"], "evaldeck");
}

/// A letta-evals suite with a `@grader` and an `@extractor` in files, one helper module beside
/// them, and a custom reward.
fn letta_suite(ws: &Workspace) {
    ws.write(
        "graders/custom_evaluators.py",
        "import helpers.text\n\ndef ticket_classification_grader(sample, submission):\n    pass\n\ndef last_word(trajectory, config):\n    pass\n",
    );
    ws.write("graders/helpers/text.py", "def norm(s):\n    pass\n");
    ws.write("graders/helpers/__init__.py", "");
    ws.write("rewards.py", "def combine(ctx):\n    pass\n");
    ws.write(
        "suite.yaml",
        "name: tickets\ndataset: data.jsonl\ngraders:\n  by_file:\n    kind: tool\n    function: graders/custom_evaluators.py:ticket_classification_grader\n    extractor: graders/custom_evaluators.py:last_word\n    extractor_config: {count: 1}\n  bare:\n    kind: tool\n    function: ticket_classification_grader\nreward:\n  kind: custom\n  function: rewards.py:combine\n",
    );
    ws.write_rows("data.jsonl", &[letta_row(1, "billing"), letta_row(2, "")]);
}

#[test]
fn letta_graders_extractors_and_rewards_in_files_reach_the_interpreter_by_name() {
    let ws = Workspace::new();
    letta_suite(&ws);
    let results = run(&ws);
    let by_file = &results[0]["grades"]["by_file"];
    assert_eq!(
        by_file["rationale"],
        "letta-grader:custom_evaluators:ticket_classification_grader \
         entries=custom_evaluators modules=custom_evaluators,helpers,helpers.text \
         compiled=3 submission=last_word extracted"
    );
    assert_eq!(by_file["score"], 0.5);
    assert_eq!(by_file["status"], "fail");
    let bare = &results[0]["grades"]["bare"]["rationale"];
    assert!(
        bare.as_str()
            .unwrap()
            .starts_with("letta-grader::ticket_classification_grader "),
        "{bare}"
    );
    assert!(
        bare.as_str().unwrap().ends_with("submission=billing"),
        "{bare}"
    );
    assert_eq!(results[0]["reward"], 0.25);
    // letta-evals' guard: an empty submission scores 0 without calling the grader.
    let guarded = &results[1]["grades"]["bare"];
    assert_eq!(guarded["score"], 0.0);
    assert_eq!(
        guarded["rationale"],
        "Empty submission - extractor found no content"
    );
}

/// A name a decorator registered is looked up file by file, each file loaded alone: the file
/// that registers it is the grader's program, and a name two files register is refused naming
/// both.
#[test]
fn a_registered_name_is_found_in_the_one_file_that_registers_it() {
    let ws = Workspace::new();
    ws.write(
        "a/one.py",
        "def first(sample, submission):\n    pass\n\ndef shared(sample, submission):\n    pass\n",
    );
    ws.write(
        "b/two.py",
        "def second(sample, submission):\n    pass\n\ndef shared(sample, submission):\n    pass\n",
    );
    let suite = "name: names\ndataset: data.jsonl\ngraders:\n  one:\n    kind: tool\n    function: a/one.py:first\n  two:\n    kind: tool\n    function: b/two.py:second\n  bare:\n    kind: tool\n    function: second\n";
    ws.write("suite.yaml", suite);
    ws.write_rows("data.jsonl", &[letta_row(1, "billing")]);
    let results = run(&ws);
    assert_eq!(
        results[0]["grades"]["bare"]["rationale"],
        "letta-grader::second entries=two modules=two compiled=1 submission=billing"
    );

    ws.write(
        "suite.yaml",
        &suite.replace("function: second\n", "function: shared\n"),
    );
    let out = gavel(&ws, &["validate", "suite.yaml"]);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains(
            "graders.bare.function: `shared` is registered by two files, a/one.py and b/two.py: "
        ),
        "{err}"
    );
}

/// run.json's fingerprint of the Python sources covers the files a grader may import, not its
/// own file alone: a helper edited, `--resume` refuses to mix old grades with new ones.
#[test]
fn resume_refuses_a_run_whose_graders_helper_changed() {
    let ws = Workspace::new();
    letta_suite(&ws);
    let first = gavel(&ws, &["run", "suite.yaml", "-o", "out", "-q"]);
    assert!(
        matches!(first.status.code(), Some(0 | 1)),
        "{}",
        stderr(&first)
    );
    ws.write("graders/helpers/text.py", "def norm(s):\n    return s\n");
    let resumed = gavel(&ws, &["run", "suite.yaml", "-o", "out", "-q", "--resume"]);
    let err = stderr(&resumed);
    assert_eq!(resumed.status.code(), Some(2), "{err}");
    assert!(err.contains("pack `(python sources)` (sha256)"), "{err}");
}

#[test]
fn evaldeck_code_graders_name_a_function_or_a_class_with_params() {
    let ws = Workspace::new();
    ws.write(
        "my_graders.py",
        "def check_booking_format(trace, test_case):\n    pass\n\nclass TokenBudgetGrader:\n    pass\n",
    );
    ws.write(
        "suite.yaml",
        "name: bookings\ndataset: data.jsonl\ngraders:\n  format:\n    kind: code\n    module: my_graders\n    function: check_booking_format\n  budget:\n    kind: code\n    module: my_graders\n    class: TokenBudgetGrader\n    params: {max_tokens: 1000}\n",
    );
    ws.write_rows("data.jsonl", &[letta_row(1, "Confirmation: AB123456")]);
    let results = run(&ws);
    let format = &results[0]["grades"]["format"];
    assert!(
        format["rationale"]
            .as_str()
            .unwrap()
            .starts_with("evaldeck-function:my_graders:check_booking_format entries=my_graders "),
        "{format}"
    );
    // Checks grade the whole run: their submission is its final output.
    assert_eq!(format["submission"], "Confirmation: AB123456");
    let budget = &results[0]["grades"]["budget"];
    assert!(
        budget["rationale"]
            .as_str()
            .unwrap()
            .starts_with("evaldeck-class:my_graders:TokenBudgetGrader "),
        "{budget}"
    );
    assert_eq!(budget["metadata"]["config"], json!({"max_tokens": 1000}));
}

#[test]
fn openai_python_graders_apply_their_pass_threshold() {
    let ws = Workspace::new();
    ws.write("graders/length.py", "def grade(sample, item):\n    pass\n");
    ws.write(
        "suite.yaml",
        "name: openai\ndataset: data.jsonl\ngraders:\n  inline:\n    kind: python\n    name: inline grader\n    source: |\n      def grade(sample, item):\n          return 0.5\n    pass_threshold: 0.5\n  strict:\n    kind: python\n    source_path: graders/length.py\n",
    );
    ws.write_rows("data.jsonl", &[letta_row(1, "ok")]);
    let results = run(&ws);
    let inline = &results[0]["grades"]["inline"];
    assert!(
        inline["rationale"].as_str().unwrap().starts_with(
            "openai:openai_grader_inline:grade entries=openai_grader_inline \
                 modules=openai_grader_inline "
        ),
        "{inline}"
    );
    assert_eq!(
        (&inline["score"], &inline["status"]),
        (&json!(0.5), &json!("pass"))
    );
    // OpenAI's default threshold is 1.0.
    let strict = &results[0]["grades"]["strict"];
    assert!(
        strict["rationale"]
            .as_str()
            .unwrap()
            .starts_with("openai:length:grade entries=length modules=length "),
        "{strict}"
    );
    assert_eq!(strict["status"], "fail");
}

#[test]
fn load_errors_name_the_file_and_line_before_any_sample_is_graded() {
    let ws = Workspace::new();
    letta_suite(&ws);
    ws.write(
        "graders/helpers/text.py",
        "def norm(s):\n    pass\nimport numpy\n",
    );
    for args in [
        &["validate", "suite.yaml"][..],
        &["run", "suite.yaml", "-o", "out"],
    ] {
        let command = args[0];
        let out = gavel(&ws, args);
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(2), "{command}: {err}");
        assert!(
            err.contains(
                "graders.by_file.function: graders/helpers/text.py:3: ModuleNotFoundError: No module named 'numpy'"
            ),
            "{command}: {err}"
        );
        assert!(err.contains("nothing was graded"), "{err}");
    }
    assert!(!ws.path("out").exists());
}

#[test]
fn missing_files_modules_and_functions_are_reported_with_their_field() {
    let ws = Workspace::new();
    ws.write("my_graders.py", "def check(trace, test_case):\n    pass\n");
    ws.write(
        "suite.yaml",
        "name: broken\ndataset: data.jsonl\ngraders:\n  a:\n    kind: tool\n    function: nowhere.py:grade\n  b:\n    kind: code\n    module: not_here\n    function: check\n  c:\n    kind: code\n    module: my_graders\n  d:\n    kind: python\n    source: 'x = 1'\n    source_path: my_graders.py\n",
    );
    ws.write_rows("data.jsonl", &[letta_row(1, "ok")]);
    let out = gavel(&ws, &["validate", "suite.yaml"]);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("suite.yaml:6:15: graders.a.function: no such file: "),
        "{err}"
    );
    assert!(
        err.contains("suite.yaml:9:13: graders.b.module: no module `not_here` beside the suite"),
        "{err}"
    );
    assert!(
        !err.contains("could not be loaded"),
        "said once, not per grader: {err}"
    );

    // A file named without its function is said so, not taken for a pack.
    ws.write(
        "suite.yaml",
        "name: broken\ndataset: data.jsonl\ngraders:\n  a:\n    kind: tool\n    function: my_graders.py\n",
    );
    let err = stderr(&gavel(&ws, &["validate", "suite.yaml"]));
    assert!(
        err.contains(
            "suite.yaml:6:15: graders.a.function: `my_graders.py` names a Python file but not \
             the function in it"
        ) && err.contains("hint: write `my_graders.py:NAME`"),
        "{err}"
    );

    ws.write(
        "suite.yaml",
        "name: broken\ndataset: data.jsonl\ngraders:\n  c:\n    kind: code\n    module: my_graders\n  d:\n    kind: python\n    source: 'x = 1'\n    source_path: my_graders.py\n  e:\n    kind: code\n    module: my_graders\n    function: chekc\n",
    );
    let out = gavel(&ws, &["validate", "suite.yaml"]);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("graders.c.function: a `code` grader names either a `function` or a `class`"),
        "{err}"
    );
    assert!(
        err.contains("graders.d.source: a `python` grader has either `source`"),
        "{err}"
    );
    assert!(
        err.contains("graders.e.module: module 'my_graders' has no attribute 'chekc'"),
        "{err}"
    );
}

#[test]
fn a_suite_without_python_needs_no_interpreter() {
    let ws = Workspace::new();
    ws.write(
        "suite.yaml",
        "name: plain\ndataset: data.jsonl\ngraders:\n  a:\n    kind: tool\n    function: contains\n",
    );
    ws.write_rows("data.jsonl", &[letta_row(1, "billing")]);
    let out = gavel_with_env(
        ws.dir.path(),
        &["validate", "suite.yaml"],
        &[("GAVEL_PYTHON_COMPONENT", "/nonexistent/interpreter.wasm")],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
}
