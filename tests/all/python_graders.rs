//! Python graders run by the real interpreter component through the `gavel` binary: the seed's
//! evaldeck graders verbatim, graded as evaldeck 0.1.5 grades them under CPython (recorded in
//! `host/tests/data/python/evaldeck-seed/expected.json` by its `record.py`), hostile graders
//! contained with stable reasons while every other grade stands, and a run that repeats.
//!
//! The interpreter is built once per test target folder with `gavel build-python` (componentize-py
//! from PyPI; about a minute) into a cache folder that every run here shares, so that it is also
//! compiled to native code once.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

use crate::common::c::in_ci;
use crate::common::{Workspace, data, gavel_with_env, stderr};
use gavel::grade::program::interpreter;
use serde_json::{Value, json};

/// The cache folder holding the interpreter component, built and compiled once for every test
/// of this binary; `None` when its toolchain cannot be installed here (no network), and then
/// only outside CI: the tests are skipped, loudly.
pub(crate) fn cache() -> Option<&'static Path> {
    static BUILT: OnceLock<Option<PathBuf>> = OnceLock::new();
    BUILT.get_or_init(build).as_deref()
}

fn build() -> Option<PathBuf> {
    let cache = Path::new(env!("CARGO_TARGET_TMPDIR")).join("python-interpreter");
    let out = Command::new(env!("CARGO_BIN_EXE_gavel"))
        .args(["build-python", "--cache-dir"])
        .arg(&cache)
        .output()
        .expect("gavel runs");
    let err = stderr(&out);
    if err.contains(interpreter::TOOLCHAIN_MISSING) && !in_ci() {
        eprintln!(
            "\n========================================================================\n\
             SKIPPED: the Python interpreter cannot be built here:\n{err}\
             ========================================================================\n"
        );
        return None;
    }
    assert!(out.status.success(), "gavel build-python failed:\n{err}");
    let component = PathBuf::from(String::from_utf8_lossy(&out.stdout).trim());
    assert!(component.starts_with(cache.join("python")), "{component:?}");
    // Compiled to native code now, rather than by every test that starts at once.
    let ws = Workspace::new();
    ws.write("g.py", "def grade(sample, item):\n    return 1.0\n");
    ws.write(
        "suite.yaml",
        "name: warm\ndataset: data.jsonl\ngraders:\n  g:\n    kind: python\n    source_path: g.py\n",
    );
    ws.write("data.jsonl", "{\"id\": 1, \"input\": \"q\"}\n");
    let out = gavel(&cache, ws.dir.path(), &["validate", "suite.yaml"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    Some(cache)
}

/// A cache folder given as a relative path works, though the build runs inside it: here with a
/// stand-in toolchain that writes whatever it is asked to, where it is asked to.
#[test]
fn the_interpreter_builds_into_a_cache_folder_given_relative() {
    use std::os::unix::fs::PermissionsExt;
    let ws = Workspace::new();
    let toolchain = ws.write(
        "componentize-py",
        "#!/bin/sh\nwhile [ $# -gt 0 ]; do\n  if [ \"$1\" = -o ]; then out=$2; fi\n  shift\ndone\n\
         printf 'component' > \"$out\"\n",
    );
    std::fs::set_permissions(&toolchain, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    let out = gavel_with_env(
        ws.dir.path(),
        &["build-python", "--cache-dir", "relative/cache"],
        &[("COMPONENTIZE_PY", &toolchain.to_string_lossy())],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let component = PathBuf::from(String::from_utf8_lossy(&out.stdout).trim());
    assert!(component.is_absolute(), "{component:?}");
    assert!(
        component.starts_with(
            ws.dir
                .path()
                .canonicalize()
                .expect("canonical")
                .join("relative/cache/python")
        ) || component.starts_with(ws.path("relative/cache/python")),
        "{component:?}"
    );
    // What the toolchain wrote, followed by the tag gavel adds.
    assert!(
        std::fs::read(&component)
            .expect("built")
            .starts_with(b"component"),
        "{component:?}"
    );
}

/// `gavel` in `dir` with the shared cache, where it finds the interpreter by its sources' hash.
pub(crate) fn gavel(cache: &Path, dir: &Path, args: &[&str]) -> std::process::Output {
    let cache = cache.to_string_lossy();
    // An empty `$GAVEL_PYTHON_COMPONENT` is none: the cached interpreter is the one tested.
    gavel_with_env(
        dir,
        args,
        &[("GAVEL_CACHE_DIR", &cache), ("GAVEL_PYTHON_COMPONENT", "")],
    )
}

fn results(dir: &Path, out: &str) -> Vec<Value> {
    std::fs::read_to_string(dir.join(out).join("results.jsonl"))
        .expect("results.jsonl exists")
        .lines()
        .map(|l| serde_json::from_str(l).expect("a result is JSON"))
        .collect()
}

/// The results of `gavel run suite.yaml` in `ws`, which must end graded (exit 0 or 1).
pub(crate) fn graded(cache: &Path, ws: &Workspace) -> Vec<Value> {
    let out = gavel(
        cache,
        ws.dir.path(),
        &["run", "suite.yaml", "-o", "out", "-q"],
    );
    assert!(matches!(out.status.code(), Some(0 | 1)), "{}", stderr(&out));
    results(ws.dir.path(), "out")
}

/// A letta-evals row asking for Paris, whose recorded run answers `answer`.
pub(crate) fn paris_row(id: i64, answer: &str) -> Value {
    json!({"id": id, "input": "q", "ground_truth": "Paris", "trajectory": [[
        {"id": "m1", "date": "2026-01-01T00:00:00Z", "message_type": "assistant_message", "content": answer}
    ]]})
}

/// Copies a test-data folder into a fresh workspace.
fn fixture(name: &str) -> Workspace {
    let ws = Workspace::new();
    for entry in std::fs::read_dir(data(name)).expect("fixture folder") {
        let path = entry.expect("entry").path();
        if path.is_file() {
            std::fs::copy(&path, ws.path(&path.file_name().unwrap().to_string_lossy()))
                .expect("copy fixture file");
        }
    }
    ws
}

#[test]
fn the_seed_evaldeck_graders_grade_as_evaldeck_does() {
    let Some(cache) = cache() else { return };
    let ws = fixture("python/evaldeck-seed");
    let results = graded(cache, &ws);
    let expected: Vec<Value> =
        serde_json::from_str(&std::fs::read_to_string(ws.path("expected.json")).unwrap()).unwrap();
    assert_eq!(expected.len(), results.len() * 4);
    for want in &expected {
        let result = results
            .iter()
            .find(|r| r["sample_id"] == want["id"])
            .unwrap_or_else(|| panic!("no result for {}", want["id"]));
        let grade = &result["grades"][want["grader"].as_str().unwrap()];
        let place = format!("{} {}: {grade}", want["id"], want["grader"]);
        assert_eq!(grade["status"], want["status"], "{place}");
        assert_eq!(grade["rationale"], want["message"], "{place}");
        if let Some(score) = want["score"].as_f64() {
            assert_eq!(grade["score"].as_f64(), Some(score), "{place}");
        }
        for field in ["expected", "actual"] {
            if !want[field].is_null() {
                assert_eq!(grade[field], want[field], "{place}: {field}");
            }
        }
    }
}

const HOSTILE: &str = r#"import os
import socket
import subprocess

from letta_evals.decorators import grader
from letta_evals.models import GradeResult, Sample


@grader
def fair(sample: Sample, submission: str) -> GradeResult:
    return GradeResult(score=1.0 if submission == sample.ground_truth else 0.0, rationale="compared")


@grader
def loop(sample: Sample, submission: str) -> GradeResult:
    while True:
        pass


@grader
def memory_bomb(sample: Sample, submission: str) -> GradeResult:
    hoard = []
    while True:
        hoard.append("x" * (1 << 20))


@grader
def huge_message(sample: Sample, submission: str) -> GradeResult:
    return GradeResult(score=1.0, rationale="x" * (64 << 20))


@grader
def stdout_flood(sample: Sample, submission: str) -> GradeResult:
    while True:
        print("flood " * 1000)


@grader
def passwd(sample: Sample, submission: str) -> GradeResult:
    with open("/etc/passwd") as f:
        return GradeResult(score=1.0, rationale=f.read())


@grader
def environ(sample: Sample, submission: str) -> GradeResult:
    return GradeResult(score=1.0, rationale=os.environ["HOME"])


@grader
def network(sample: Sample, submission: str) -> GradeResult:
    socket.create_connection(("127.0.0.1", 80), timeout=1)
    return GradeResult(score=1.0, rationale="connected")


@grader
def numpy(sample: Sample, submission: str) -> GradeResult:
    import numpy

    return GradeResult(score=float(numpy.mean([1.0])), rationale="imported")


@grader
def process(sample: Sample, submission: str) -> GradeResult:
    return GradeResult(score=1.0, rationale=subprocess.check_output(["id"]).decode())
"#;

const HOSTILE_NAMES: [&str; 9] = [
    "loop",
    "memory_bomb",
    "huge_message",
    "stdout_flood",
    "passwd",
    "environ",
    "network",
    "process",
    "numpy",
];

/// A suite of the `fair` grader and the hostile ones `names`, on two rows. Its deadline is far
/// beyond what the default fuel takes, so that the graders that spin or flood stop on their
/// fuel however loaded the machine is.
fn hostile_suite(names: &[&str]) -> Workspace {
    let ws = Workspace::new();
    ws.write("hostile.py", HOSTILE);
    let mut suite = String::from(
        "name: hostile\ndataset: data.jsonl\nlimits: {timeout_ms: 120000}\ngraders:\n  fair:\n    kind: tool\n    function: hostile.py:fair\n",
    );
    for name in names {
        suite.push_str(&format!(
            "  {name}:\n    kind: tool\n    function: hostile.py:{name}\n"
        ));
    }
    ws.write("suite.yaml", &suite);
    ws.write_rows("data.jsonl", &[paris_row(1, "Paris"), paris_row(2, "Lyon")]);
    ws
}

#[test]
fn hostile_graders_are_contained_and_every_other_grade_stands() {
    let Some(cache) = cache() else { return };
    let ws = hostile_suite(&HOSTILE_NAMES);
    let results = graded(cache, &ws);
    let fair: Vec<(f64, &str)> = results
        .iter()
        .map(|r| {
            let g = &r["grades"]["fair"];
            (g["score"].as_f64().unwrap(), g["status"].as_str().unwrap())
        })
        .collect();
    assert_eq!(fair, [(1.0, "pass"), (0.0, "fail")]);
    let reasons = [
        ("loop", "fuel exhausted"),
        ("memory_bomb", "memory limit exceeded"),
        ("huge_message", "memory limit exceeded"),
        ("stdout_flood", "fuel exhausted"),
        (
            "passwd",
            "guest returned error: FileNotFoundError: [Errno 44] No such file or directory: '/etc/passwd'",
        ),
        ("environ", "guest returned error: KeyError: 'HOME'"),
        (
            "network",
            "guest returned error: gaierror: [Errno -4] Non-recoverable error",
        ),
        (
            "process",
            "guest returned error: OSError: [Errno 58] wasi does not support processes.",
        ),
        (
            "numpy",
            "guest returned error: ModuleNotFoundError: No module named 'numpy'",
        ),
    ];
    assert_eq!(reasons.len(), HOSTILE_NAMES.len());
    for result in &results {
        for (name, reason) in reasons {
            let grade = &result["grades"][name];
            assert_eq!(grade["status"], "error", "{name}: {grade}");
            assert_eq!(grade["score"], 0.0, "{name}: {grade}");
            let rationale = grade["rationale"].as_str().unwrap();
            assert!(rationale.starts_with(reason), "{name}: {rationale}");
            assert!(!rationale.contains("root:x"), "{name} leaked: {rationale}");
        }
        // Limits are the sandbox's reasons alone; the loop ran to the default fuel exactly.
        let grade = |name: &str| &result["grades"][name];
        assert_eq!(grade("loop")["rationale"], "fuel exhausted");
        assert_eq!(grade("memory_bomb")["rationale"], "memory limit exceeded");
        assert_eq!(
            grade("loop")["metadata"]["sandbox"]["fuel_used"],
            100_000_000
        );
        let said = |name: &str| grade(name)["rationale"].as_str().unwrap().to_string();
        assert_eq!(
            grade("stdout_flood")["metadata"]["sandbox"]["stdout_cut"],
            true
        );
        assert!(said("passwd").ends_with("'/etc/passwd' (at hostile.py:40)"));
        assert!(said("numpy").ends_with("No module named 'numpy' (at hostile.py:57)"));
    }
}

#[test]
fn the_same_run_twice_writes_the_same_results() {
    let Some(cache) = cache() else { return };
    let ws = hostile_suite(&["loop", "passwd", "environ", "numpy"]);
    for out in ["a", "b"] {
        let run = gavel(
            cache,
            ws.dir.path(),
            &["run", "suite.yaml", "-o", out, "-q"],
        );
        assert!(matches!(run.status.code(), Some(0 | 1)), "{}", stderr(&run));
    }
    let read = |out: &str| std::fs::read_to_string(ws.path(out).join("results.jsonl")).unwrap();
    assert_eq!(read("a"), read("b"));
    let fuel =
        &results(ws.dir.path(), "a")[0]["grades"]["fair"]["metadata"]["sandbox"]["fuel_used"];
    assert!(fuel.as_u64().is_some_and(|fuel| fuel > 0), "{fuel}");
}

/// With `isolation: sample`, what a call leaves behind, in its module, in the interpreter's own
/// modules and in memory it grew, is gone for the next: each call starts from the interpreter's
/// snapshot, however its slot of the instance pool was used before (here also by calls that ran
/// out of memory).
const REMEMBERS: &str = r#"import builtins
import sys

from letta_evals.decorators import grader
from letta_evals.models import GradeResult, Sample

SEEN = []


@grader
def remembers(sample: Sample, submission: str) -> GradeResult:
    left = [
        place
        for place, found in [
            ("module", SEEN),
            ("sys", getattr(sys, "gavel_left", None)),
            ("builtins", getattr(builtins, "gavel_left", None)),
            ("memory", getattr(sys, "gavel_hoard", None)),
        ]
        if found
    ]
    SEEN.append(sample.id)
    sys.gavel_left = builtins.gavel_left = sample.id
    sys.gavel_hoard = [bytes([sample.id % 251]) * (1 << 20) for _ in range(24)]
    return GradeResult(score=0.0 if left else 1.0, rationale=f"left by an earlier call: {left}")


@grader
def memory_bomb(sample: Sample, submission: str) -> GradeResult:
    hoard = []
    while True:
        hoard.append("x" * (1 << 20))
"#;

#[test]
fn no_call_sees_what_an_earlier_call_left() {
    let Some(cache) = cache() else { return };
    let ws = Workspace::new();
    ws.write("remembers.py", REMEMBERS);
    ws.write(
        "suite.yaml",
        "name: fresh\ndataset: data.jsonl\nisolation: sample\ngraders:\n  remembers:\n    kind: tool\n    function: remembers.py:remembers\n  bomb:\n    kind: tool\n    function: remembers.py:memory_bomb\n",
    );
    let rows: Vec<Value> = (1..=40).map(|id| paris_row(id, "Paris")).collect();
    ws.write_rows("data.jsonl", &rows);
    let results = graded(cache, &ws);
    assert_eq!(results.len(), 40);
    for result in &results {
        let grade = &result["grades"]["remembers"];
        assert_eq!(grade["score"], 1.0, "{grade}");
        assert_eq!(
            result["grades"]["bomb"]["rationale"],
            "memory limit exceeded"
        );
    }
}

/// An evaldeck grader reads a run recorded as evaldeck's from its recording, and any other from
/// its events, which the host leaves out of a call only in the first case: the tool calls of
/// both kinds of rows reach it.
#[test]
fn an_evaldeck_grader_reads_each_run_from_its_recording_or_from_its_events() {
    let Some(cache) = cache() else { return };
    let ws = Workspace::new();
    ws.write(
        "tools.py",
        "from evaldeck.results import GradeResult\n\n\ndef tools(trace, test_case):\n    \
         return GradeResult.passed_result(\"tools\", \",\".join(s.tool_name for s in trace.tool_calls))\n",
    );
    ws.write(
        "suite.yaml",
        "name: tools\ndataset: data.jsonl\ngraders:\n  tools:\n    kind: code\n    module: tools\n    \
         function: tools\n",
    );
    let letta = json!({"id": 1, "input": "q", "trajectory": [[
        {"id": "m1", "date": "2026-01-01T00:00:00Z", "message_type": "tool_call_message",
         "tool_call": {"name": "search_flights", "arguments": "{}", "tool_call_id": "c1"}},
        {"id": "m2", "date": "2026-01-01T00:00:01Z", "message_type": "assistant_message", "content": "done"}
    ]]});
    let evaldeck = json!({"id": 2, "input": "q", "trajectory": {"input": "q", "output": "done", "steps": [
        {"type": "tool_call", "tool_name": "book_flight", "tool_args": {}}
    ]}});
    for (row, tools) in [(letta, "search_flights"), (evaldeck, "book_flight")] {
        ws.write_rows("data.jsonl", std::slice::from_ref(&row));
        let results = graded(cache, &ws);
        assert_eq!(results.len(), 1);
        assert_eq!(
            results[0]["grades"]["tools"]["rationale"], tools,
            "{}",
            results[0]
        );
    }
}

/// A recorded letta message knows which fields it was given, as letta_client's does: its
/// `model_fields_set` names them, extra keys included, and `to_dict()` gives them alone, a
/// `None` it was given kept. The expected text is what letta-client 1.12 gives for the same
/// messages (`AssistantMessage.model_validate(...)`).
#[test]
fn a_recorded_letta_message_dumps_the_fields_it_was_given() {
    let Some(cache) = cache() else { return };
    let ws = Workspace::new();
    ws.write(
        "g.py",
        "import json\n\n\
         from letta_evals.decorators import extractor, grader\n\
         from letta_evals.models import GradeResult\n\n\n\
         @extractor\n\
         def given(trajectory, config):\n    \
             return json.dumps([[sorted(m.model_fields_set), m.to_dict(mode='json')] for m in trajectory[-1]])\n\n\n\
         @grader\n\
         def echo(sample, submission):\n    \
             return GradeResult(score=1.0, rationale=submission)\n",
    );
    ws.write(
        "suite.yaml",
        "name: given\ndataset: data.jsonl\ngraders:\n  given:\n    kind: tool\n    \
         function: g.py:echo\n    extractor: g.py:given\n",
    );
    let row = json!({"id": 1, "input": "q", "trajectory": [[
        {"id": "m1", "date": "2026-01-01T00:00:00Z", "message_type": "assistant_message", "content": "Paris",
         "name": null, "otid": "o1", "zeta": 1},
        {"id": "m2", "date": "2026-01-01T00:00:01Z", "message_type": "tool_call_message",
         "tool_call": {"name": "search", "arguments": "{}", "tool_call_id": "c1"}}
    ]]});
    ws.write_rows("data.jsonl", &[row]);
    let results = graded(cache, &ws);
    assert_eq!(
        results[0]["grades"]["given"]["rationale"],
        "[[[\"content\", \"date\", \"id\", \"message_type\", \"name\", \"otid\", \"zeta\"], \
         {\"id\": \"m1\", \"content\": \"Paris\", \"date\": \"2026-01-01T00:00:00Z\", \
         \"message_type\": \"assistant_message\", \"name\": null, \"otid\": \"o1\", \"zeta\": 1}], \
         [[\"date\", \"id\", \"message_type\", \"tool_call\"], {\"id\": \"m2\", \
         \"date\": \"2026-01-01T00:00:01Z\", \"tool_call\": {\"arguments\": \"{}\", \"name\": \"search\", \
         \"tool_call_id\": \"c1\"}, \"message_type\": \"tool_call_message\"}]]",
        "{}",
        results[0]
    );
}

/// A row's evaldeck recording of the usual form, which the host vouches for, grades as its
/// values say; one the recording's check refuses still errors with evaldeck's own message.
#[test]
fn an_evaldeck_recording_grades_when_usual_and_errors_as_evaldeck_when_not() {
    let Some(cache) = cache() else { return };
    let ws = Workspace::new();
    ws.write(
        "steps.py",
        "from evaldeck.results import GradeResult\n\n\ndef steps(trace, test_case):\n    \
         said = [f\"{s.tool_name}@{s.timestamp.isoformat()}:{s.tool_args}\" for s in trace.tool_calls]\n    \
         return GradeResult.passed_result(\"steps\", f\"{test_case.input}|{trace.output}|{said}\")\n",
    );
    ws.write(
        "suite.yaml",
        "name: steps\ndataset: data.jsonl\ngraders:\n  steps:\n    kind: code\n    module: steps\n    \
         function: steps\n",
    );
    let step = json!({"id": "s1", "type": "tool_call", "timestamp": "2026-01-01T00:00:01.250+05:30",
                      "tool_name": "book_flight", "tool_args": {"to": "LAX"}});
    let trace = json!({"id": "t", "input": "Book ≥ 2", "output": "done", "started_at": "2026-01-01T00:00:00Z",
                       "steps": [step]});
    let usual = json!({"id": 1, "input": "Book ≥ 2", "trajectory": trace});
    let mut odd = usual.clone();
    odd["id"] = json!(2);
    odd["trajectory"]["metadata"] = Value::Null;
    ws.write_rows("data.jsonl", &[usual, odd]);
    let results = graded(cache, &ws);
    assert_eq!(results.len(), 2);
    assert_eq!(
        results[0]["grades"]["steps"]["rationale"],
        "Book ≥ 2|done|[\"book_flight@2026-01-01T00:00:01.250000+05:30:{'to': 'LAX'}\"]",
        "{}",
        results[0]
    );
    let error = results[1]["grades"]["steps"]["rationale"]
        .as_str()
        .unwrap_or_default();
    assert!(
        error.contains(
            "cannot build the recorded run as an evaldeck Trace: 1 validation error for Trace"
        ) && error.contains("metadata\n  Input should be a valid dictionary [type=dict_type"),
        "{error}"
    );
}

/// A grader's code is part of what a run graded with: edited, `--resume` refuses to mix old
/// grades with new ones and says the Python sources changed.
#[test]
fn resume_refuses_a_run_whose_python_graders_changed() {
    let Some(cache) = cache() else { return };
    let ws = hostile_suite(&[]);
    let first = gavel(
        cache,
        ws.dir.path(),
        &["run", "suite.yaml", "-o", "out", "-q"],
    );
    assert!(
        matches!(first.status.code(), Some(0 | 1)),
        "{}",
        stderr(&first)
    );
    let source = std::fs::read_to_string(ws.path("hostile.py")).unwrap();
    ws.write("hostile.py", &format!("{source}\n# edited\n"));
    let resumed = gavel(
        cache,
        ws.dir.path(),
        &["run", "suite.yaml", "-o", "out", "-q", "--resume"],
    );
    let err = stderr(&resumed);
    assert_eq!(resumed.status.code(), Some(2), "{err}");
    assert!(err.contains("pack `(python sources)` (sha256)"), "{err}");
}

#[test]
fn a_missing_package_imported_at_the_top_stops_the_run_naming_file_line_and_module() {
    let Some(cache) = cache() else { return };
    let ws = hostile_suite(&[]);
    ws.write(
        "hostile.py",
        &format!("import json\nimport numpy\n{HOSTILE}"),
    );
    let out = gavel(cache, ws.dir.path(), &["run", "suite.yaml", "-o", "out"]);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains(
            "graders.fair.function: hostile.py:2: ModuleNotFoundError: No module named 'numpy'"
        ),
        "{err}"
    );
    assert!(!ws.path("out").exists());
}

/// The README's example: every suite form, run from the suite's folder with a bare suite path
/// and from elsewhere with a relative one.
#[test]
fn the_example_suite_grades_from_its_folder_and_from_elsewhere() {
    let Some(cache) = cache() else { return };
    let ws = Workspace::new();
    let example = Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/python-graders");
    std::fs::create_dir(ws.path("example")).unwrap();
    for entry in std::fs::read_dir(&example).expect("the example folder") {
        let path = entry.expect("entry").path();
        let copy = ws.path("example").join(path.file_name().unwrap());
        std::fs::copy(&path, copy).expect("copy the example");
    }
    let inside = gavel(
        cache,
        &ws.path("example"),
        &["run", "suite.yaml", "-o", "out", "-q"],
    );
    let outside = gavel(
        cache,
        ws.dir.path(),
        &["run", "example/suite.yaml", "-o", "out", "-q"],
    );
    let graded = |out: &std::process::Output, dir: &Path| {
        assert_eq!(out.status.code(), Some(0), "{}", stderr(out));
        results(dir, "out")
            .iter()
            .map(|r| {
                let grades = ["ticket", "classified", "concise"].map(|key| {
                    let grade = &r["grades"][key];
                    format!(
                        "{key} {} {} {}",
                        grade["status"], grade["score"], grade["rationale"]
                    )
                });
                (r["sample_id"].clone(), grades, r["reward"].clone())
            })
            .collect::<Vec<_>>()
    };
    let graded_inside = graded(&inside, &ws.path("example"));
    assert_eq!(graded_inside, graded(&outside, ws.dir.path()));
    let rewards: Vec<&Value> = graded_inside.iter().map(|(_, _, reward)| reward).collect();
    assert_eq!(rewards, [&json!(1.0), &json!(0.375), &json!(1.0)]);
    assert_eq!(
        graded_inside[1].1,
        [
            r#"ticket "fail" 0.5 "matched: category""#,
            r#"classified "pass" 1.0 "one classify call""#,
            r#"concise "fail" 0.0 "grade returned 0.0""#,
        ]
    );
    assert_eq!(
        graded_inside[2].1[1],
        r#"classified "fail" 0.0 "expected exactly one classify call""#
    );
}

/// A suite's values are read as PyYAML reads them, as letta-evals and evaldeck read YAML: a
/// `BaseGrader`'s `params` get `yes` and `off` as booleans, `y` as text, `010` as 8, `1e3` as
/// text and `~` as None; quoted, `yes` stays text. A typed field PyYAML reads as another type
/// (`name: yes`) is refused at its line.
#[test]
fn suite_values_reach_python_as_pyyaml_reads_them() {
    let Some(cache) = cache() else { return };
    let ws = fixture("python/evaldeck-seed");
    ws.write(
        "echo.py",
        "from evaldeck.graders import BaseGrader\n\
         from evaldeck.results import GradeResult\n\n\
         class Echo(BaseGrader):\n\
         \x20   name = 'echo'\n\
         \x20   def __init__(self, **params):\n\
         \x20       self.params = params\n\
         \x20   def grade(self, trace, test_case):\n\
         \x20       return GradeResult.passed_result(self.name, repr(sorted(self.params.items())))\n",
    );
    let suite = "name: pyyaml\ndataset: data.jsonl\nformat: evaldeck\ngraders:\n  echo:\n    \
                 kind: code\n    module: echo\n    class: Echo\n    params: {a: yes, b: y, c: 010, \
                 d: 1e3, e: off, f: ~, g: 'yes', h: N}\n";
    ws.write("suite.yaml", suite);
    let run = gavel(
        cache,
        ws.dir.path(),
        &["run", "suite.yaml", "-o", "out", "-q"],
    );
    assert_eq!(run.status.code(), Some(0), "{}", stderr(&run));
    let results = results(ws.dir.path(), "out");
    assert_eq!(
        results[0]["grades"]["echo"]["rationale"],
        "[('a', True), ('b', 'y'), ('c', 8), ('d', '1e3'), ('e', False), ('f', None), \
         ('g', 'yes'), ('h', 'N')]"
    );

    ws.write("suite.yaml", &suite.replace("name: pyyaml", "name: yes"));
    let refused = gavel(cache, ws.dir.path(), &["validate", "suite.yaml"]);
    let err = stderr(&refused);
    assert_eq!(refused.status.code(), Some(2), "{err}");
    assert!(
        err.contains("suite.yaml:1:1: name: invalid type: boolean `true`"),
        "{err}"
    );
    assert!(err.contains("quote it to make it text"), "{err}");

    // A number quoted is text to PyYAML: the hint says to take the quotes away.
    ws.write(
        "suite.yaml",
        &format!("{suite}gate:\n  kind: simple\n  metric_key: echo\n  op: gte\n  value: \"0.5\"\n"),
    );
    let refused = gavel(cache, ws.dir.path(), &["validate", "suite.yaml"]);
    let err = stderr(&refused);
    assert_eq!(refused.status.code(), Some(2), "{err}");
    assert!(err.contains("gate.value: invalid type: string"), "{err}");
    assert!(
        err.contains("reads a quoted value as text; write it without quotes"),
        "{err}"
    );
}

/// Graders that import `anthropic` and `openai` load; with nothing granted, a call fails with the
/// client's own connection error, which one grader catches and the other lets through, its text
/// naming the sandbox's refusal.
#[test]
fn graders_importing_the_api_clients_catch_their_connection_error() {
    let Some(cache) = cache() else { return };
    let ws = Workspace::new();
    ws.write(
        "clients.py",
        r#"import anthropic
import openai
from letta_evals.decorators import grader
from letta_evals.models import GradeResult


@grader
def counted(sample, submission):
    client = anthropic.Anthropic(api_key="sk-test")
    try:
        client.messages.count_tokens(model="claude-sonnet-4-5", messages=[{"role": "user", "content": submission}])
    except anthropic.APIConnectionError as e:
        return GradeResult(score=0.5, rationale=f"{type(e).__module__}.{type(e).__name__}: {e}")
    return GradeResult(score=1.0, rationale="counted")


@grader
def judged(sample, submission):
    reply = openai.OpenAI(api_key="sk-test").chat.completions.create(
        model="gpt-4o-mini", messages=[{"role": "user", "content": submission}]
    )
    return GradeResult(score=1.0, rationale=reply.choices[0].message.content)
"#,
    );
    ws.write(
        "suite.yaml",
        "name: clients\ndataset: data.jsonl\ngraders:\n  counted:\n    kind: tool\n    function: clients.py:counted\n  judged:\n    kind: tool\n    function: clients.py:judged\n",
    );
    ws.write_rows("data.jsonl", &[paris_row(1, "Paris")]);
    let results = graded(cache, &ws);
    let grade = |name: &str| &results[0]["grades"][name];
    assert_eq!(grade("counted")["score"], 0.5, "{}", grade("counted"));
    assert_eq!(
        grade("counted")["rationale"],
        "anthropic.APIConnectionError: Connection error."
    );
    assert_eq!(grade("judged")["status"], "error", "{}", grade("judged"));
    // What the refusal says is the HTTP layer's own; the client's error and the place are fixed.
    let said = grade("judged")["rationale"].as_str().unwrap();
    assert!(
        said.starts_with("guest returned error: APIConnectionError: Connection error. ("),
        "{said}"
    );
    assert!(said.ends_with(") (at clients.py:19)"), "{said}");
}

/// A copy of the shared cache's interpreter (its component, stamp and compiled artifact) in a
/// cache folder of `ws`'s own; the copy and the component's path in it.
fn cache_copy(cache: &Path, ws: &Workspace) -> (PathBuf, PathBuf) {
    let built = gavel(cache, ws.dir.path(), &["build-python"]);
    assert_eq!(built.status.code(), Some(0), "{}", stderr(&built));
    let component = PathBuf::from(String::from_utf8_lossy(&built.stdout).trim());
    let stamp = component.with_extension("sha256");
    let digest = std::fs::read(&stamp).expect("the build stamped the component");
    let digest = String::from_utf8_lossy(&digest[..64]).into_owned();
    let copy = ws.path("cache");
    let mut wanted = vec![component.clone(), stamp];
    for entry in std::fs::read_dir(cache.join("packs")).expect("packs folder") {
        let path = entry.expect("entry").path();
        if path
            .file_name()
            .unwrap()
            .to_string_lossy()
            .starts_with(&digest)
        {
            wanted.push(path);
        }
    }
    assert_eq!(
        wanted.len(),
        3,
        "one compiled artifact of the component: {wanted:?}"
    );
    for path in wanted {
        let folder = copy.join(path.parent().unwrap().file_name().unwrap());
        std::fs::create_dir_all(&folder).expect("mkdir");
        std::fs::copy(&path, folder.join(path.file_name().unwrap())).expect("copy");
    }
    let name = component.file_name().unwrap();
    (copy.clone(), copy.join("python").join(name))
}

fn letta_suite(ws: &Workspace) {
    ws.write(
        "g.py",
        "from letta_evals.decorators import grader\n\
         from letta_evals.models import GradeResult\n\n\
         @grader\n\
         def paris(sample, submission):\n    \
             return GradeResult(score=float('Paris' in submission), rationale='')\n",
    );
    ws.write(
        "suite.yaml",
        "name: p\ndataset: data.jsonl\ngraders:\n  g:\n    kind: tool\n    \
         function: g.py:paris\n    extractor: last_assistant\n",
    );
    ws.write("data.jsonl", &format!("{}\n", paris_row(1, "It is Paris.")));
}

/// A run whose interpreter is compiled in the cache finds the compiled artifact by the digest
/// its stamp records, without reading the 25 MiB component: here the component is replaced by
/// other bytes after the build, and the run grades with the compiled one, building nothing.
#[test]
fn a_compiled_interpreter_loads_by_its_stamp_without_reading_the_component() {
    let Some(cache) = cache() else { return };
    let ws = Workspace::new();
    letta_suite(&ws);
    let (copy, component) = cache_copy(cache, &ws);
    std::fs::write(&component, b"not the component").expect("replace");
    let out = gavel(
        &copy,
        ws.dir.path(),
        &["run", "suite.yaml", "-o", "out", "-q"],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(!stderr(&out).contains("building"), "{}", stderr(&out));
    let results = results(ws.dir.path(), "out");
    assert_eq!(
        results[0]["grades"]["g"]["score"],
        json!(1.0),
        "{results:?}"
    );
}

/// A stamp that does not check out (planted, or damaged) is not trusted: the component is read
/// and checked as before, graded with, and stamped again.
#[test]
fn a_planted_interpreter_stamp_is_not_trusted() {
    let Some(cache) = cache() else { return };
    let ws = Workspace::new();
    letta_suite(&ws);
    let (copy, component) = cache_copy(cache, &ws);
    let stamp = component.with_extension("sha256");
    let genuine = std::fs::read(&stamp).expect("the build stamped the component");
    // A stamp naming another digest under a tag made without the key.
    let planted = [[b'0'; 64].as_slice(), &genuine[64..]].concat();
    std::fs::write(&stamp, &planted).expect("plant");
    assert_eq!(graded(&copy, &ws)[0]["grades"]["g"]["score"], json!(1.0));
    assert_eq!(std::fs::read(&stamp).expect("stamped again"), genuine);
}

/// An interpreter component named by `$GAVEL_PYTHON_COMPONENT` that speaks another
/// `gavel:interpreter` than this gavel (one built from other sources, whose runtime would
/// misread what the host hands it) is refused before any sample is graded, naming the file,
/// both versions and the fix. Here the real component, its interfaces' version rewritten.
#[test]
fn an_interpreter_of_other_sources_is_refused_before_grading() {
    let Some(cache) = cache() else { return };
    let ws = Workspace::new();
    letta_suite(&ws);
    let built = gavel(cache, ws.dir.path(), &["build-python"]);
    assert_eq!(built.status.code(), Some(0), "{}", stderr(&built));
    let component = PathBuf::from(String::from_utf8_lossy(&built.stdout).trim());
    let mut bytes = std::fs::read(&component).expect("the built component");
    // Every `gavel:interpreter/<interface>@<version>` it names, at version 9.9.9 (the same
    // length as the one it has, so that the component stays valid).
    let package = b"gavel:interpreter/";
    let mut rewritten = 0;
    let mut at = 0;
    while let Some(found) = bytes[at..]
        .windows(package.len())
        .position(|w| w == package)
    {
        let start = at + found + package.len();
        let Some(sign) = bytes[start..].iter().take(16).position(|&b| b == b'@') else {
            at = start;
            continue;
        };
        let version = start + sign + 1;
        let end = version
            + bytes[version..]
                .iter()
                .position(|b| !(b.is_ascii_digit() || *b == b'.'))
                .expect("the name ends");
        for b in &mut bytes[version..end] {
            if b.is_ascii_digit() {
                *b = b'9';
            }
        }
        rewritten += 1;
        at = end;
    }
    assert!(
        rewritten > 0,
        "the component names no gavel:interpreter interface"
    );
    let other = ws.path("other.wasm");
    std::fs::write(&other, &bytes).expect("write");
    let own_cache = ws.path("cache");
    let out = gavel_with_env(
        ws.dir.path(),
        &["run", "suite.yaml", "-o", "out", "-q"],
        &[
            ("GAVEL_CACHE_DIR", &own_cache.to_string_lossy()),
            ("GAVEL_PYTHON_COMPONENT", &other.to_string_lossy()),
        ],
    );
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    for wanted in [
        &*other.to_string_lossy(),
        "other sources than this gavel's",
        &format!(
            "gavel:interpreter@{}",
            gavel::grade::pack::INTERPRETER_PROTOCOL
        ),
        "speaks gavel:interpreter@9.9.9",
        "gavel build-python",
        "unset $GAVEL_PYTHON_COMPONENT",
    ] {
        assert!(err.contains(wanted), "{wanted:?} in {err}");
    }
    assert!(!ws.path("out/results.jsonl").exists(), "{err}");
}
