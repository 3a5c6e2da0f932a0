//! A Python grader that runs a file with `python3`, through the `gavel` binary: the process is
//! a fresh interpreter instance of its own (the grader's folders read-only, nothing else of
//! its reach), cut by the grader's own limits, bounded in depth and number; and the folder a
//! grader starts in, against which relative paths resolve.

use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use crate::common::{Workspace, gavel_with_env, stderr};
use crate::python_graders::{cache, graded};

/// A grader of letta-evals' letta-code-simple-edit's shape: it reads the path of the file the
/// agent fixed from the submission, says so when the file is not there, else runs it with
/// `python3` and compares its output with the ground truth.
const RUNS_THE_FILE: &str = r#"import asyncio
import json
from pathlib import Path

from letta_evals.decorators import grader
from letta_evals.models import GradeResult


@grader
async def runs_the_file(sample, submission):
    path = Path(json.loads(submission)["file_path"]).resolve()
    if not path.exists():
        return GradeResult(score=0.0, rationale=f"File not found: {path}")
    try:
        process = await asyncio.create_subprocess_exec(
            "python3", str(path), stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE
        )
        try:
            out, err = await asyncio.wait_for(process.communicate(), timeout=30)
        except asyncio.TimeoutError:
            process.kill()
            await process.wait()
            return GradeResult(score=0.0, rationale="Script execution timed out")
        if process.returncode != 0:
            text = err.decode() if err else ""
            return GradeResult(
                score=0.0, rationale=f"Script failed with exit code {process.returncode}. Stderr: {text[:200]}"
            )
        got = out.decode().strip() if out else ""
        want = sample.ground_truth.strip() if sample.ground_truth else ""
        if got == want:
            return GradeResult(score=1.0, rationale=f"Output matches expected: {got}")
        return GradeResult(score=0.0, rationale=f"Output mismatch. Expected: '{want}', Got: '{got}'")
    except Exception as e:
        return GradeResult(score=0.0, rationale=f"Error running script: {e}")
"#;

/// A letta-evals row whose recorded run ends with the assistant saying `said`.
fn row(id: i64, ground_truth: &str, said: &str, extra: Value) -> Value {
    json!({
        "id": id,
        "input": "Find and fix the bug; answer with the file's path as JSON.",
        "ground_truth": ground_truth,
        "extra_vars": extra,
        "trajectory": [[
            {"id": "m1", "date": "2026-01-01T00:00:00Z", "message_type": "user_message", "content": "fix it"},
            {"id": "m2", "date": "2026-01-01T00:00:01Z", "message_type": "assistant_message", "content": said}
        ]]
    })
}

fn file_row(id: i64, ground_truth: &str, file: &Path) -> Value {
    let said = json!({"file_path": file}).to_string();
    row(id, ground_truth, &said, json!({}))
}

/// A suite of one `@grader` named `check` in `grader.py`, with `extra` (an `allow:` block,
/// `limits:`) at its top level.
fn suite(ws: &Workspace, grader: &str, extra: &str) {
    ws.write("grader.py", grader);
    ws.write(
        "suite.yaml",
        &format!(
            "name: processes\ndataset: data.jsonl\n{extra}graders:\n  check:\n    kind: tool\n    \
             function: grader.py:check\n    extractor: last_assistant\n"
        ),
    );
}

/// The `check` grade of each result, in order.
fn grades(results: &[Value]) -> Vec<&Value> {
    results.iter().map(|r| &r["grades"]["check"]).collect()
}

/// `(score, rationale)` of each `check` grade, which must not be an error.
fn said(results: &[Value]) -> Vec<(f64, String)> {
    grades(results)
        .into_iter()
        .map(|g| {
            assert_ne!(g["status"], "error", "{g}");
            (
                g["score"].as_f64().unwrap(),
                g["rationale"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

/// The agent's folder of the edit suite: a fixed file, one that does not compile, one whose
/// output is wrong.
fn agent_folder(ws: &Workspace) -> PathBuf {
    ws.write(
        "agent/sandbox/task_1.py",
        "def calculate_sum(numbers):\n    return sum(numbers)\n\n\nif __name__ == \"__main__\":\n    \
         print(f\"The sum is: {calculate_sum([1, 2, 3, 4, 5])}\")\n",
    );
    ws.write(
        "agent/sandbox/task_2.py",
        "def last(items)\n    return items[-1]\n\n\nprint(f\"The last element is: {last([10, 50])}\")\n",
    );
    ws.write(
        "agent/sandbox/task_3.py",
        "import sys\n\nprint(\"Average:\", 0)\nprint(\"Average:\", sum([10, 50]) / 2, file=sys.stdout)\n",
    );
    ws.path("agent").canonicalize().expect("agent folder")
}

fn edit_rows(agent: &Path) -> Vec<Value> {
    vec![
        file_row(1, "The sum is: 15", &agent.join("sandbox/task_1.py")),
        file_row(
            2,
            "The last element is: 50",
            &agent.join("sandbox/task_2.py"),
        ),
        file_row(
            3,
            "Average: 0\nAverage: 20.0",
            &agent.join("sandbox/task_3.py"),
        ),
        file_row(4, "x", &agent.join("sandbox/task_4.py")),
    ]
}

/// The `(score, rationale)` letta-evals 0.26.0 gives each row of `ws`'s `data.jsonl` with
/// `function` (`module:name`, a `@grader` beside the suite, sync or async) under CPython, with
/// `vars` in its environment, on the recorded run's last message: `None` where the peers' venv
/// is not there (outside CI).
pub(crate) fn letta_evals_grades(
    ws: &Workspace,
    function: &str,
    vars: &[(&str, &str)],
) -> Option<Vec<(f64, String)>> {
    let python = crate::common::peer_python("letta-evals")?;
    let script = r#"import asyncio, importlib, inspect, json, sys
sys.path.insert(0, sys.argv[1])
from letta_evals.models import Sample
module, name = sys.argv[3].split(":")
grade = getattr(importlib.import_module(module), name)
for line in open(sys.argv[2]):
    row = json.loads(line)
    sample = Sample(id=row["id"], input=row["input"], ground_truth=row["ground_truth"],
                    extra_vars=row.get("extra_vars"))
    result = grade(sample, row["trajectory"][0][-1]["content"])
    if inspect.isawaitable(result):
        result = asyncio.run(result)
    print(json.dumps([result.score, result.rationale]))
"#;
    let out = std::process::Command::new(python)
        .arg("-c")
        .arg(script)
        .arg(ws.dir.path())
        .arg(ws.path("data.jsonl"))
        .arg(function)
        .envs(vars.iter().copied())
        .output()
        .expect("the peers' python runs");
    assert!(out.status.success(), "{}", stderr(&out));
    Some(
        String::from_utf8_lossy(&out.stdout)
            .lines()
            .map(|l| serde_json::from_str(l).expect("a grade"))
            .collect(),
    )
}

#[test]
fn the_simple_edit_grader_runs_the_agents_file_where_granted_as_letta_evals_does() {
    let Some(cache) = cache() else {
        return;
    };
    let ws = Workspace::new();
    let agent = agent_folder(&ws);
    ws.write_rows("data.jsonl", &edit_rows(&agent));
    let grader = RUNS_THE_FILE.replace("runs_the_file", "check");
    suite(
        &ws,
        &grader,
        "allow:\n  files: [agent/]\nlimits:\n  timeout_ms: 60000\n",
    );
    let got = said(&graded(cache, &ws));
    let task = |n: u32| {
        agent
            .join(format!("sandbox/task_{n}.py"))
            .display()
            .to_string()
    };
    let want = vec![
        (1.0, "Output matches expected: The sum is: 15".to_string()),
        (
            0.0,
            format!(
                "Script failed with exit code 1. Stderr:   File \"{}\", line 1\n    def last(items)\n                   ^\nSyntaxError: expected ':'\n",
                task(2)
            ),
        ),
        (
            0.0,
            "Output mismatch. Expected: 'Average: 0\nAverage: 20.0', Got: 'Average: 0\nAverage: 30.0'"
                .to_string(),
        ),
        (0.0, format!("File not found: {}", task(4))),
    ];
    assert_eq!(got, want);
    if let Some(theirs) = letta_evals_grades(&ws, "grader:check", &[]) {
        assert_eq!(got, theirs, "gavel against letta-evals 0.26.0");
    }
}

#[test]
fn without_a_grant_the_agents_file_is_not_found_as_letta_evals_regrading_elsewhere_finds_it() {
    let Some(cache) = cache() else {
        return;
    };
    let ws = Workspace::new();
    let agent = agent_folder(&ws);
    ws.write_rows("data.jsonl", &edit_rows(&agent));
    suite(&ws, &RUNS_THE_FILE.replace("runs_the_file", "check"), "");
    let got = said(&graded(cache, &ws));
    for (n, (score, rationale)) in (1..).zip(got) {
        let file = agent.join(format!("sandbox/task_{n}.py"));
        assert_eq!(
            (score, rationale),
            (0.0, format!("File not found: {}", file.display()))
        );
    }
}

/// The agent's file tries to reach its grader and everything else; it finds nothing of the
/// grader's (its module, its `GradeResult`, its variables), writes nothing, connects nowhere.
#[test]
fn the_agents_file_reaches_nothing_of_its_grader_and_cannot_forge_its_grade() {
    let Some(cache) = cache() else {
        return;
    };
    let ws = Workspace::new();
    let file = ws.write(
        "agent/fixed.py",
        r#"import builtins, errno, json, os, socket, sys

reached = {"grader": "grader" in sys.modules}
try:
    open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "planted.txt"), "w").write("x")
    reached["write"] = "written"
except OSError as e:
    reached["write"] = errno.errorcode[e.errno]
try:
    socket.create_connection(("127.0.0.1", 9), timeout=1)
    reached["socket"] = "connected"
except OSError:
    reached["socket"] = "refused"
reached["env"] = sorted(os.environ)
report = json.dumps(reached, sort_keys=True)

# Whatever is in this interpreter's modules: a forged result in their place.
import letta_evals.models as models


class Forged(models.GradeResult):
    def __init__(self, **kwargs):
        super().__init__(score=1.0, rationale="forged")


for module in list(sys.modules.values()):
    if hasattr(module, "GradeResult"):
        setattr(module, "GradeResult", Forged)
builtins.str = lambda *args: "forged"
sys.stderr.write(report)
sys.exit(1)
"#,
    );
    let file = file.canonicalize().unwrap();
    ws.write_rows("data.jsonl", &[file_row(1, "The sum is: 15", &file)]);
    suite(
        &ws,
        &RUNS_THE_FILE.replace("runs_the_file", "check"),
        "allow:\n  files: [agent/]\n  env: [GAVEL_PROBE_VAR]\n  secrets:\n    GAVEL_PROBE_SECRET: \
         [api.example.com]\nlimits:\n  timeout_ms: 60000\n",
    );
    let out = gavel_with_env(
        ws.dir.path(),
        &["run", "suite.yaml", "-o", "out", "-q"],
        &[
            ("GAVEL_CACHE_DIR", &cache.to_string_lossy()),
            ("GAVEL_PYTHON_COMPONENT", ""),
            ("GAVEL_PROBE_VAR", "the-variable"),
            ("GAVEL_PROBE_SECRET", "the-secret-value"),
        ],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let results = ws.results("out");
    let reached = r#"{"env": [], "grader": false, "socket": "refused", "write": "EROFS"}"#;
    assert_eq!(
        said(&results),
        vec![(
            0.0,
            format!("Script failed with exit code 1. Stderr: {reached}")
        )]
    );
    assert!(!ws.path("agent/planted.txt").exists());
}

/// A grader that runs `code` (a Python expression's statements, with `subprocess`, `sys` and
/// `run(argv, **kwargs)` at hand) and grades 1 with what `said` holds as its rationale.
fn reporting(code: &str) -> String {
    let body: String = code.lines().map(|l| format!("    {l}\n")).collect();
    format!(
        "import subprocess\nimport sys\n\nfrom letta_evals.decorators import grader\n\
         from letta_evals.models import GradeResult\n\n\n@grader\ndef check(sample, submission):\n\
         {body}    return GradeResult(score=1.0, rationale=said)\n"
    )
}

fn one_row(ws: &Workspace) {
    ws.write_rows("data.jsonl", &[row(1, "", "done", json!({}))]);
}

/// What the [`reporting`] grader of `code` said, graded 1, on one row in `ws` with `extra`
/// at the suite's top level.
fn report(cache: &Path, ws: &Workspace, code: &str, extra: &str) -> String {
    one_row(ws);
    suite(ws, &reporting(code), extra);
    let mut said = said(&graded(cache, ws));
    assert_eq!(said.len(), 1);
    let (score, said) = said.remove(0);
    assert_eq!(score, 1.0, "{said}");
    said
}

/// A process's output is cut at the grader's `stdout_kb`, as the grader's own is, and the
/// grade stands.
#[test]
fn a_process_that_floods_its_output_is_cut_at_the_graders_limit() {
    let Some(cache) = cache() else {
        return;
    };
    let said = report(
        cache,
        &Workspace::new(),
        "p = subprocess.run([sys.executable, '-c', 'import sys\\nprint(\"x\" * 10**6)\\nsys.stderr.write(\"y\" * 10**6)'], capture_output=True)\n\
             said = f'{p.returncode} {len(p.stdout)} {len(p.stderr)}'",
        "limits:\n  timeout_ms: 60000\n  stdout_kb: 4\n",
    );
    assert_eq!(said, "0 4096 4096");
}

/// A process that spins spends its grader's fuel, or runs into its grader's deadline: the
/// grader's call ends there, an error grade naming the limit.
#[test]
fn a_process_that_spins_is_cut_by_its_graders_own_limits() {
    let Some(cache) = cache() else {
        return;
    };
    let spin = reporting(
        "subprocess.run(['python3', '-c', 'while True: pass'])\nsaid = 'the process ended'",
    );
    for (limits, reason) in [
        ("limits:\n  timeout_ms: 60000\n", "fuel exhausted"),
        (
            "limits:\n  timeout_ms: 3000\n  fuel: 1000000000000000\n",
            "deadline exceeded",
        ),
    ] {
        let ws = Workspace::new();
        one_row(&ws);
        suite(&ws, &spin, limits);
        let results = graded(cache, &ws);
        let grade = grades(&results)[0];
        assert_eq!(grade["status"], "error", "{grade}");
        assert!(
            grade["rationale"].as_str().unwrap().ends_with(reason),
            "{limits}: {grade}"
        );
    }
}

/// `timeout=` ends a process that runs past it with `subprocess.TimeoutExpired`, as CPython
/// does; the grader's call goes on.
#[test]
fn a_process_past_its_timeout_raises_timeout_expired() {
    let Some(cache) = cache() else {
        return;
    };
    let said = report(
        cache,
        &Workspace::new(),
        "try:\n    subprocess.run(['python3', '-c', 'while True: pass'], timeout=0.5)\n    said = 'ended'\n\
         except subprocess.TimeoutExpired as e:\n    said = f'{type(e).__name__}: {e}'",
        "limits:\n  timeout_ms: 60000\n  fuel: 1000000000000000\n",
    );
    assert_eq!(
        said,
        "TimeoutExpired: Command '['python3', '-c', 'while True: pass']' timed out after 0.5 seconds"
    );
}

/// A process that starts itself again and again is refused past three levels below the
/// grader, and a grader's call starts sixteen processes in all: each refusal an `OSError`
/// (EAGAIN) the code sees, as a system out of processes gives.
#[test]
fn processes_starting_processes_are_bounded_in_depth_and_number() {
    let Some(cache) = cache() else {
        return;
    };
    let ws = Workspace::new();
    ws.write(
        "again.py",
        "import subprocess, sys\n\ndepth = int(sys.argv[1])\ntry:\n    \
         p = subprocess.run([sys.executable, __file__, str(depth + 1)], capture_output=True, text=True)\n    \
         print(f'{depth}:{p.returncode} ' + p.stdout, end='')\nexcept OSError as e:\n    \
         print(f'{depth}:{e.strerror}', end='')\n",
    );
    let folder = ws.dir.path().canonicalize().unwrap();
    let said = report(
        cache,
        &ws,
        &format!(
            "deep = subprocess.run(['python3', '{}/again.py', '1'], capture_output=True, text=True).stdout\n\
             started = 0\ntry:\n    while started < 100:\n        \
             subprocess.run(['python3', '-c', 'pass'])\n        started += 1\n\
             except OSError as e:\n    refused = f'{{started}} then {{e.strerror}}'\n\
             said = deep + ' | ' + refused",
            folder.display()
        ),
        &format!(
            "allow:\n  files: [{}]\nlimits:\n  timeout_ms: 120000\n  fuel: 100000000000\n",
            folder.display()
        ),
    );
    assert_eq!(
        said,
        "1:0 2:0 3:Resource temporarily unavailable (gavel starts processes at most 3 deep) | \
         13 then Resource temporarily unavailable (a grader's call starts at most 16 processes)"
    );
}

/// A grader starts in the folder its row chose, else in its first granted folder, else at `/`
/// as a grader without files always did: `open("data.json")` and `os.getcwd()` resolve there,
/// and so does a process it starts without `cwd=`.
#[test]
fn a_grader_starts_in_its_rows_folder_else_its_first_granted_folder_else_at_the_root() {
    let Some(cache) = cache() else {
        return;
    };
    let ws = Workspace::new();
    for (folder, text) in [
        ("first", "first"),
        ("second", "second"),
        ("runs/r1", "row one"),
    ] {
        ws.write(&format!("{folder}/data.json"), text);
    }
    let path = |folder: &str| {
        ws.path(folder)
            .canonicalize()
            .unwrap()
            .display()
            .to_string()
    };
    ws.write_rows(
        "data.jsonl",
        &[row(1, "", "done", json!({"workspace": path("runs/r1")}))],
    );
    let grader = reporting(
        "import os\ntry:\n    text = open('data.json').read()\nexcept OSError as e:\n    text = type(e).__name__\n\
         child = subprocess.run(['python3', '-c', 'import os; print(os.getcwd())'], capture_output=True, text=True)\n\
         said = f'{os.getcwd()} {text} {child.stdout.strip()}'",
    );
    for (allow, want) in [
        (
            "allow:\n  files: [first/, second/]\n",
            format!("{0} first {0}", path("first")),
        ),
        (
            "allow:\n  files:\n    - first/\n    - {under: runs, row: extra_vars.workspace}\n",
            format!("{0} row one {0}", path("runs/r1")),
        ),
        ("", "/ FileNotFoundError /".to_string()),
    ] {
        suite(
            &ws,
            &grader,
            &format!("{allow}limits:\n  timeout_ms: 60000\n"),
        );
        assert_eq!(said(&graded(cache, &ws)), vec![(1.0, want)], "{allow}");
    }
}

/// A process's environment is what `env=` passes, nothing by default: the grader can pass on
/// only what it sees itself, so a secret reaches the process as its placeholder, and with no
/// network granted to the process the placeholder is worth nothing there.
#[test]
fn a_process_gets_only_the_environment_its_grader_passes() {
    let Some(cache) = cache() else {
        return;
    };
    let ws = Workspace::new();
    one_row(&ws);
    suite(
        &ws,
        &reporting(
            "import os\nshow = 'import os; print(sorted(os.environ.items()))'\n\
             alone = subprocess.run(['python3', '-c', show], capture_output=True, text=True).stdout\n\
             passed = subprocess.run(['python3', '-c', show], env=dict(os.environ), capture_output=True, text=True).stdout\n\
             said = alone + passed",
        ),
        "allow:\n  env: [GAVEL_PROBE_VAR]\n  secrets:\n    GAVEL_PROBE_SECRET: [api.example.com]\n",
    );
    let out = gavel_with_env(
        ws.dir.path(),
        &["run", "suite.yaml", "-o", "out", "-q"],
        &[
            ("GAVEL_CACHE_DIR", &cache.to_string_lossy()),
            ("GAVEL_PYTHON_COMPONENT", ""),
            ("GAVEL_PROBE_VAR", "the-variable"),
            ("GAVEL_PROBE_SECRET", "the-secret-value"),
        ],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let (score, said) = said(&ws.results("out")).remove(0);
    assert_eq!(score, 1.0);
    let (alone, passed) = said.split_once('\n').unwrap();
    assert_eq!(alone, "[]");
    assert!(
        passed.starts_with("[('GAVEL_PROBE_SECRET', 'gavel-secret-GAVEL_PROBE_SECRET-")
            && passed.ends_with("('GAVEL_PROBE_VAR', 'the-variable')]\n"),
        "{passed}"
    );
    assert!(!said.contains("the-secret-value"), "{said}");
}

/// `python3 -m MODULE` runs a module of the working folder (the grader's first granted one) or
/// of the standard library, and a shell command line of plain words that starts the
/// interpreter (`shell=True`, `asyncio.create_subprocess_shell`) runs as the shell would run
/// it; a line the shell would do more with (a pipe) is still no program there. (The grader's
/// coroutine is driven as gavel drives an async grader's, without an event loop.)
#[test]
fn a_module_and_a_plain_shell_line_run_as_processes() {
    let Some(cache) = cache() else {
        return;
    };
    let ws = Workspace::new();
    ws.write(
        "agent/helper.py",
        "import sys\nprint(__name__, sys.argv[1:], sys.argv[0].endswith('/agent/helper.py'))\n",
    );
    let said = report(
        cache,
        &ws,
        "import asyncio\n\
         mod = subprocess.run([sys.executable, '-m', 'helper', 'x'], capture_output=True, text=True)\n\
         tool = subprocess.run('python3 -m json.tool --compact', shell=True, input='{\"a\": [1, 2]}', capture_output=True, text=True)\n\
         async def shell():\n\
         \x20   p = await asyncio.create_subprocess_shell(\"python3 -c 'print(6 * 7)'\", stdout=asyncio.subprocess.PIPE)\n\
         \x20   out, _ = await p.communicate()\n\
         \x20   return out.decode()\n\
         try:\n\
         \x20   subprocess.run('python3 -c \"print(1)\" | cat', shell=True)\n\
         \x20   piped = 'ran'\n\
         except OSError as e:\n\
         \x20   piped = type(e).__name__\n\
         try:\n\
         \x20   shell().send(None)\n\
         except StopIteration as done:\n\
         \x20   shelled = done.value\n\
         said = f'{mod.returncode} {mod.stdout.strip()} | {tool.stdout.strip()} | {shelled.strip()} | {piped}'",
        "allow:\n  files: [agent/]\nlimits:\n  timeout_ms: 60000\n",
    );
    assert_eq!(said, "0 __main__ ['x'] True | {\"a\":[1,2]} | 42 | OSError");
}

/// `os.chdir` goes where CPython's goes: back to `/` (an empty folder when nothing is granted),
/// into `/tmp` where the grader has one, nowhere for a folder that is not there, and from `/`
/// up to `/` itself; and a process started from `/` starts there.
#[test]
fn a_grader_changes_folder_to_the_root_tmp_or_a_missing_folder_as_cpython_does() {
    let Some(cache) = cache() else {
        return;
    };
    let ws = Workspace::new();
    ws.write("agent/a.txt", "a");
    let grader = reporting(
        "import os\nseen = []\n\
         for folder in ['/', '/tmp', '/nope', '/', '..', '../..']:\n\
         \x20   try:\n\
         \x20       os.chdir(folder)\n\
         \x20       seen.append(os.getcwd())\n\
         \x20   except OSError as e:\n\
         \x20       seen.append(f'{type(e).__name__} {e.filename}')\n\
         child = subprocess.run(['python3', '-c', 'import os; print(os.getcwd())'], capture_output=True, text=True)\n\
         said = f'{seen} {os.listdir(\".\")} {child.stdout.strip()}'",
    );
    for (allow, tmp) in [
        ("", "FileNotFoundError /tmp"),
        ("allow:\n  files: [agent/]\n", "/tmp"),
    ] {
        one_row(&ws);
        suite(
            &ws,
            &grader,
            &format!("{allow}limits:\n  timeout_ms: 60000\n"),
        );
        assert_eq!(
            said(&graded(cache, &ws)),
            vec![(
                1.0,
                format!("['/', '{tmp}', 'FileNotFoundError /nope', '/', '/', '/'] [] /")
            )],
            "{allow}"
        );
    }
}

/// A script the grader wrote to its `/tmp` and runs with `sys.executable` is not there for the
/// process (its `/tmp` is its own): it fails as CPython fails on a missing file, naming the
/// interpreter (`sys.executable` is empty in the sandbox), and says how to pass the code.
#[test]
fn a_script_in_the_graders_tmp_is_not_the_processes_and_the_error_says_why() {
    let Some(cache) = cache() else {
        return;
    };
    let ws = Workspace::new();
    std::fs::create_dir_all(ws.path("work")).unwrap();
    let said = report(
        cache,
        &ws,
        "import tempfile\n\
         with tempfile.NamedTemporaryFile('w', suffix='.py', delete=False) as f:\n    \
             f.write('print(1)')\n\
         ran = subprocess.run([sys.executable, f.name], capture_output=True, text=True)\n\
         said = f'{ran.returncode} {ran.stderr}'",
        "allow:\n  files: [work/]\n",
    );
    assert!(
        said.starts_with("2 python3: can't open file '/tmp/"),
        "{said}"
    );
    assert!(
        said.ends_with(
            "(in gavel's sandbox a process has a /tmp of its own, not the grader's: pass a \
             script the grader wrote with -c)\n"
        ),
        "{said}"
    );
}
