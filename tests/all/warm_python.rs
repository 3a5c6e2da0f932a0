//! Python graders in warm instances: a grader's samples share an instance per batch of
//! consecutive rows, deterministically (the same bytes at any `--concurrency`, run after run,
//! and after `--resume`), `isolation: sample` keeps a fresh instance per call, and fresh calls
//! run in parallel up to the run's concurrency.

use std::path::Path;

use crate::common::{Workspace, stderr};
use crate::python_graders::{cache, gavel, paris_row};
use gavel::grade::pack::{BATCH_ROWS, peak_calls_in_flight};
use gavel::run::{Observer, RunOptions};
use serde_json::Value;

/// A letta-evals `@grader` that counts its calls in a module global and says the count.
pub(crate) const COUNTING: &str = r#"from letta_evals.decorators import grader
from letta_evals.models import GradeResult

calls = 0


@grader
def counted(sample, submission):
    global calls
    calls += 1
    return GradeResult(score=1.0, rationale=f"call {calls}")
"#;

fn counting_suite(ws: &Workspace, isolation: &str, rows: i64) {
    ws.write("graders/counting.py", COUNTING);
    ws.write(
        "suite.yaml",
        &format!(
            "name: counting\ndataset: data.jsonl\n{isolation}graders:\n  counted:\n    kind: tool\n    \
             function: graders/counting.py:counted\n"
        ),
    );
    let rows: Vec<Value> = (0..rows).map(|i| paris_row(i, "Paris")).collect();
    ws.write_rows("data.jsonl", &rows);
}

fn run(cache: &Path, ws: &Workspace, out: &str, extra: &[&str]) -> String {
    let mut args = vec!["run", "suite.yaml", "-o", out, "-q"];
    args.extend_from_slice(extra);
    let output = gavel(cache, ws.dir.path(), &args);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    std::fs::read_to_string(ws.path(out).join("results.jsonl")).expect("results.jsonl")
}

fn rationales(results: &str) -> Vec<String> {
    results
        .lines()
        .map(|line| {
            let result: Value = serde_json::from_str(line).expect("a result is JSON");
            result["grades"]["counted"]["rationale"]
                .as_str()
                .expect("a rationale")
                .to_string()
        })
        .collect()
}

#[test]
fn a_graders_state_lasts_one_batch_and_the_bytes_do_not_depend_on_concurrency() {
    let Some(cache) = cache() else { return };
    let ws = Workspace::new();
    let rows = 2 * BATCH_ROWS as i64 + 10;
    counting_suite(&ws, "", rows);
    let one = run(cache, &ws, "one", &["--concurrency", "1"]);
    // The module is imported once per batch, and its calls are the batch's samples in order.
    let expected: Vec<String> = (0..rows as usize)
        .map(|i| format!("call {}", i % BATCH_ROWS + 1))
        .collect();
    assert_eq!(rationales(&one), expected);
    let two = run(cache, &ws, "two", &["--concurrency", "2"]);
    assert_eq!(one, two, "--concurrency 1 and 2 write the same bytes");
    let again = run(cache, &ws, "again", &["--concurrency", "2"]);
    assert_eq!(two, again, "the same run twice writes the same bytes");
}

#[test]
fn resume_grades_the_unfinished_batch_again_from_its_first_sample() {
    let Some(cache) = cache() else { return };
    let ws = Workspace::new();
    counting_suite(&ws, "", BATCH_ROWS as i64 + 20);
    let full = run(cache, &ws, "clean", &[]);
    // Interrupted after the first batch and 6 samples of the second.
    let lines: Vec<&str> = full.split_inclusive('\n').collect();
    ws.write("part/results.jsonl", &lines[..BATCH_ROWS + 6].concat());
    let resumed = run(cache, &ws, "part", &["--resume", "--concurrency", "2"]);
    assert_eq!(resumed, full);
}

#[test]
fn retry_errors_grades_each_retried_sample_fresh_at_any_concurrency() {
    let Some(cache) = cache() else { return };
    let ws = Workspace::new();
    counting_suite(&ws, "", 12);
    // Raises at every fifth call of an instance: the errors of a batch depend on its state.
    let failing = COUNTING.replace(
        "    return GradeResult",
        "    if calls % 5 == 0:\n        raise ValueError(f\"call {calls}\")\n    return GradeResult",
    );
    ws.write("graders/counting.py", &failing);
    let first = run(cache, &ws, "first", &[]);
    for out in ["one", "two"] {
        std::fs::create_dir_all(ws.path(out)).expect("folder");
        for file in ["results.jsonl", "run.json"] {
            std::fs::copy(ws.path("first").join(file), ws.path(out).join(file)).expect("copy");
        }
    }
    let one = run(cache, &ws, "one", &["--retry-errors", "--concurrency", "1"]);
    let two = run(cache, &ws, "two", &["--retry-errors", "--concurrency", "2"]);
    assert_eq!(one, two);
    let before = rationales(&first);
    let after = rationales(&one);
    for (i, (before, after)) in before.iter().zip(&after).enumerate() {
        if (i + 1) % 5 == 0 {
            assert!(before.contains("ValueError"), "{before}");
            // Graded again in an instance of its own: its first call.
            assert_eq!(after, "call 1");
        } else {
            assert_eq!(after, before);
        }
    }
}

#[test]
fn isolation_sample_gives_every_call_a_fresh_instance() {
    let Some(cache) = cache() else { return };
    for (isolation, at) in [("isolation: sample\n", "the suite"), ("", "the grader")] {
        let ws = Workspace::new();
        counting_suite(&ws, isolation, 5);
        if isolation.is_empty() {
            let suite = std::fs::read_to_string(ws.path("suite.yaml")).expect("suite");
            ws.write("suite.yaml", &format!("{suite}    isolation: sample\n"));
        }
        let results = run(cache, &ws, "out", &[]);
        assert_eq!(rationales(&results), vec!["call 1"; 5], "set by {at}");
    }
}

#[test]
fn an_unknown_isolation_is_refused_naming_its_field() {
    let Some(cache) = cache() else { return };
    let ws = Workspace::new();
    counting_suite(&ws, "isolation: fresh\n", 1);
    let out = gavel(cache, ws.dir.path(), &["validate", "suite.yaml"]);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("isolation"), "{err}");
    assert!(err.contains("`batch`") && err.contains("`sample`"), "{err}");
}

/// Quiet: the test reads the results file.
struct Unobserved;

impl Observer for Unobserved {
    fn previous(&mut self, _: &gavel::output::result::SampleResult) {}
    fn retrying(&mut self, _: u64, _: u64) {}
    fn start(&mut self, _: gavel::input::dataset::RowCount, _: u64) {}
    fn graded(&mut self, _: &gavel::output::result::SampleResult) {}
    fn stopping(&mut self) {}
    fn finish(&mut self, _: bool) {}
}

/// Fresh Python calls that each run to their deadline overlap, as many at once as the run's
/// concurrency allows and no more: the host counts the calls in flight. (Before, a run graded
/// its first 128 rows one after another in one task, whatever its concurrency.) The only run
/// of this test binary made in its own process, so the count is this run's.
#[test]
fn fresh_python_calls_run_in_parallel_up_to_the_concurrency() {
    let Some(cache) = cache() else { return };
    let ws = Workspace::new();
    ws.write(
        "spin.py",
        "def grade(sample, item):\n    while True:\n        pass\n",
    );
    ws.write(
        "suite.yaml",
        "name: spin\ndataset: data.jsonl\nisolation: sample\nlimits:\n  timeout_ms: 200\n  \
         fuel: 1000000000000\ngraders:\n  spin:\n    kind: python\n    source_path: spin.py\n",
    );
    let rows: Vec<Value> = (0..12).map(|i| paris_row(i, "Paris")).collect();
    ws.write_rows("data.jsonl", &rows);
    let prepared = gavel::run::prepare(
        &ws.path("suite.yaml"),
        &gavel::run::Options {
            cache_dir: Some(cache.to_path_buf()),
            no_judge_cache: false,
            trajectories: Vec::new(),
            serving: false,
        },
    )
    .unwrap_or_else(|e| panic!("{e:?}"));
    let options = RunOptions {
        output_dir: Some(ws.path("out")),
        concurrency: Some(4),
        ..RunOptions::default()
    };
    gavel::run::run(&prepared, &options, &mut Unobserved).unwrap_or_else(|e| panic!("{e:?}"));
    let results = ws.results("out");
    assert_eq!(results.len(), 12);
    for result in &results {
        assert_eq!(
            result["grades"]["spin"]["rationale"], "deadline exceeded",
            "{result}"
        );
    }
    let peak = peak_calls_in_flight();
    assert!((2..=4).contains(&peak), "{peak} calls at once");
}

/// A letta-evals `@grader` whose call imports a module of its folder.
const IMPORTING: &str = r#"from letta_evals.decorators import grader
from letta_evals.models import GradeResult


@grader
def imported(sample, submission):
    import helper

    return GradeResult(score=helper.score(submission), rationale="imported")
"#;

/// A suite whose one grader is `graders/grading.py`'s `function`, named after it, over three
/// rows answering Paris.
fn graded_by(ws: &Workspace, function: &str) {
    ws.write(
        "suite.yaml",
        &format!(
            "name: {function}\ndataset: data.jsonl\ngraders:\n  {function}:\n    kind: tool\n    \
             function: graders/grading.py:{function}\n"
        ),
    );
    let rows: Vec<Value> = (0..3).map(|i| paris_row(i, "Paris")).collect();
    ws.write_rows("data.jsonl", &rows);
}

/// A module of a few dozen functions: compiling it is most of a call that imports it.
fn helper_source() -> String {
    let mut text = String::from("def score(text):\n    return 1.0 if 'Paris' in text else 0.0\n");
    for i in 0..40 {
        text.push_str(&format!(
            "\n\ndef part_{i}(values):\n    return {{key: [v * {i} for v in values if v] for key in range({i})}}\n"
        ));
    }
    text
}

/// The fuel of each sample's call to `imported`.
fn fuels(results: &str) -> Vec<u64> {
    results
        .lines()
        .map(|line| {
            let result: Value = serde_json::from_str(line).expect("a result is JSON");
            let grade = &result["grades"]["imported"];
            assert_eq!(grade["score"], 1.0, "{grade}");
            grade["metadata"]["sandbox"]["fuel_used"]
                .as_u64()
                .expect("fuel_used")
        })
        .collect()
}

#[test]
fn an_unrelated_large_python_file_beside_a_grader_leaves_its_calls_fuel_alone() {
    let Some(cache) = cache() else { return };
    let ws = Workspace::new();
    ws.write("graders/grading.py", IMPORTING);
    ws.write("graders/helper.py", &helper_source());
    graded_by(&ws, "imported");
    let alone = fuels(&run(cache, &ws, "alone", &[]));

    // Half a megabyte of Python nobody imports (a scratch copy of some code, say).
    let mut scratch = String::new();
    for i in 0..8_000 {
        scratch.push_str(&format!(
            "def scratch_{i}(x):\n    return [x, {i}, {{'key': (x, {i})}}]\n\n\n"
        ));
    }
    assert!(scratch.len() > 400_000);
    ws.write("graders/scratch/unused.py", &scratch);
    let beside = fuels(&run(cache, &ws, "beside", &[]));

    // Fuel is deterministic: the helper is compiled once per run in either case, never by
    // the call that imports it, so the calls cost what they cost alone, to a few per cent
    // (the interpreter's tables hold one more module name).
    assert_eq!(alone.len(), beside.len());
    for (alone, beside) in alone.iter().zip(&beside) {
        assert!(
            beside.abs_diff(*alone) <= alone / 50,
            "a call cost {alone} fuel alone and {beside} with the unrelated file beside it"
        );
    }
}

/// A file a grader names in an import statement but that does not compile is said once, by
/// name, when the run starts: the grader does not import it on the rows graded here, so
/// nothing else would say it, and a row that reached the import would fail there.
#[test]
fn a_python_file_a_grader_may_import_that_does_not_compile_is_named_once() {
    let Some(cache) = cache() else { return };
    let ws = Workspace::new();
    ws.write(
        "graders/grading.py",
        r#"from letta_evals.decorators import grader
from letta_evals.models import GradeResult


def rarely():
    import broken

    return broken


@grader
def fine(sample, submission):
    return GradeResult(score=1.0, rationale="fine")
"#,
    );
    ws.write("graders/broken.py", "def broken(:\n    return 1\n");
    graded_by(&ws, "fine");
    let output = gavel(
        cache,
        ws.dir.path(),
        &["run", "suite.yaml", "-o", "out", "-q"],
    );
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let warning = "warning: graders/broken.py: the Python file does not compile; a grader that \
                   imports it fails there, with Python's reason\n";
    assert_eq!(
        stderr(&output).matches(warning).count(),
        1,
        "{}",
        stderr(&output)
    );
    let results = std::fs::read_to_string(ws.path("out").join("results.jsonl")).expect("results");
    assert_eq!(results.lines().count(), 3);
    for line in results.lines() {
        let result: Value = serde_json::from_str(line).expect("a result is JSON");
        assert_eq!(result["grades"]["fine"]["score"], 1.0, "{result}");
    }
}
