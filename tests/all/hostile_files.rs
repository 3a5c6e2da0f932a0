//! Files that are not what they claim: a FIFO, a device or a huge sparse file where gavel reads
//! a suite, a dataset, case files, traces or a results folder, or where a grader reads a
//! granted folder; an alias bomb in a case file;
//! symbolic links planted where gavel writes its outputs; a results folder of another run
//! resumed as this one. Each is refused with exit 2 and a message that names the file, and
//! nothing outside the output folder is touched. Every run is bounded: one that hangs is killed
//! and fails its test.

use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use crate::common::{Workspace, stderr};
use crate::evaldeck_project::{RUN_CASES, project};
use crate::resume::{SUITE, workspace};
use crate::traces::{COLLECTOR_SUITE, session};

/// How long a refusal may take before the run is taken to hang (it takes milliseconds).
const HANG: Duration = Duration::from_secs(30);

/// Runs `gavel` in `ws` like [`Workspace::gavel`], killed (and the test failed) if it has not
/// ended within [`HANG`].
fn gavel(ws: &Workspace, args: &[&str]) -> Output {
    gavel_caching(ws, args, &ws.path(".cache"))
}

/// [`gavel`] with the cache folder `cache`.
fn gavel_caching(ws: &Workspace, args: &[&str], cache: &Path) -> Output {
    let capture = |name: &str| {
        std::fs::File::create(ws.path(name))
            .map(Stdio::from)
            .expect("capture file")
    };
    let mut child = Command::new(env!("CARGO_BIN_EXE_gavel"))
        .args(args)
        .current_dir(ws.dir.path())
        .env("GAVEL_CACHE_DIR", cache)
        .env("GAVEL_PYTHON_COMPONENT", "")
        .env_remove("OPENAI_API_KEY")
        .stdin(Stdio::null())
        .stdout(capture(".stdout"))
        .stderr(capture(".stderr"))
        .spawn()
        .expect("gavel starts");
    let started = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().expect("status") {
            break status;
        }
        if started.elapsed() > HANG {
            let _ = child.kill();
            let _ = child.wait();
            panic!("gavel {args:?} did not end within {HANG:?}: it hangs");
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    Output {
        status,
        stdout: std::fs::read(ws.path(".stdout")).unwrap_or_default(),
        stderr: std::fs::read(ws.path(".stderr")).unwrap_or_default(),
    }
}

/// Runs `gavel` expecting exit 2 and an error that names `file` and says `why`.
fn refused(ws: &Workspace, args: &[&str], file: &str, why: &str) -> String {
    let output = gavel(ws, args);
    let err = stderr(&output);
    assert_eq!(output.status.code(), Some(2), "{args:?}: {err}");
    assert!(
        err.contains(file),
        "{args:?}: the error names {file}: {err}"
    );
    assert!(err.contains(why), "{args:?}: the error says {why:?}: {err}");
    err
}

fn mkfifo(path: &Path) {
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent).expect("folder");
    }
    rustix::fs::mkfifoat(
        rustix::fs::CWD,
        path,
        rustix::fs::Mode::from_raw_mode(0o600),
    )
    .expect("mkfifo");
}

const FIFO: &str = "it is a FIFO, not a regular file";

#[test]
fn a_fifo_as_suite_or_dataset_is_refused_without_waiting() {
    let ws = workspace(3);
    mkfifo(&ws.path("fifo.yaml"));
    refused(&ws, &["run", "fifo.yaml", "-o", "out"], "fifo.yaml", FIFO);
    refused(&ws, &["validate", "fifo.yaml"], "fifo.yaml", FIFO);

    std::fs::remove_file(ws.path("data.jsonl")).unwrap();
    mkfifo(&ws.path("data.jsonl"));
    refused(&ws, &["run", "suite.yaml", "-o", "out"], "data.jsonl", FIFO);
    assert!(!ws.path("out/results.jsonl").exists());
}

#[test]
fn a_fifo_as_case_file_or_traces_is_refused_without_waiting() {
    let ws = Workspace::new();
    project(&ws);
    mkfifo(&ws.path("fifo_case.yaml"));
    refused(
        &ws,
        &[
            "run",
            "fifo_case.yaml",
            "--traces",
            "traces.jsonl",
            "-o",
            "out",
        ],
        "fifo_case.yaml",
        FIFO,
    );
    mkfifo(&ws.path("fifo_traces.jsonl"));
    refused(
        &ws,
        &["run", "cases", "--traces", "fifo_traces.jsonl", "-o", "out"],
        "fifo_traces.jsonl",
        FIFO,
    );
}

#[test]
fn a_fifo_in_a_cases_or_sessions_folder_is_refused_as_not_a_regular_file() {
    let ws = Workspace::new();
    project(&ws);
    mkfifo(&ws.path("cases/d_fifo.yaml"));
    refused(
        &ws,
        &["run", "cases", "--traces", "traces.jsonl", "-o", "out"],
        "cases/d_fifo.yaml",
        "it is a FIFO, not a regular file: a case file is a regular YAML file",
    );
    // Named so that no case file is left: still told as what it is.
    let only = ws.path("only");
    mkfifo(&only.join("case.yml"));
    refused(
        &ws,
        &["run", "only", "--traces", "traces.jsonl", "-o", "out"],
        "only/case.yml",
        "it is a FIFO, not a regular file",
    );

    // A link to nothing is refused too, not left out: evaldeck fails opening it.
    std::fs::remove_file(ws.path("cases/d_fifo.yaml")).unwrap();
    std::os::unix::fs::symlink(ws.path("gone.yaml"), ws.path("cases/e_link.yaml")).unwrap();
    refused(
        &ws,
        &["run", "cases", "--traces", "traces.jsonl", "-o", "out"],
        "cases/e_link.yaml",
        "cannot tell what it is (No such file or directory (os error 2)): a case file is a \
         regular YAML file",
    );

    ws.write_rows("sessions/a.jsonl", &session("s-paris", "Paris"));
    mkfifo(&ws.path("sessions/b.jsonl"));
    ws.write(
        "suite.yaml",
        &COLLECTOR_SUITE.replace("otel-genai.jsonl", "sessions"),
    );
    let err = refused(
        &ws,
        &["run", "suite.yaml", "-o", "out"],
        "sessions/b.jsonl",
        "it is a FIFO, not a regular file: a folder dataset holds only session files, each a \
         regular file",
    );
    assert!(!err.contains("transcript record"), "{err}");

    // A link to nothing there is named, not left for the folder's first read to fail unnamed.
    std::fs::remove_file(ws.path("sessions/b.jsonl")).unwrap();
    std::os::unix::fs::symlink(ws.path("gone.jsonl"), ws.path("sessions/c.jsonl")).unwrap();
    refused(
        &ws,
        &["run", "suite.yaml", "-o", "out"],
        "sessions/c.jsonl",
        "cannot tell what it is (No such file or directory (os error 2)): a folder dataset holds \
         only session files, each a regular file",
    );
}

#[test]
fn a_fifo_as_results_is_refused_by_report_diff_resume_and_retry() {
    let ws = workspace(3);
    let first = gavel(&ws, &["run", "suite.yaml", "-o", "base", "-q"]);
    assert!(first.status.success(), "{}", stderr(&first));
    for dir in ["fifo", "resumed"] {
        std::fs::create_dir_all(ws.path(dir)).unwrap();
        for file in ["summary.json", "run.json"] {
            std::fs::copy(ws.path("base").join(file), ws.path(dir).join(file)).unwrap();
        }
        mkfifo(&ws.path(dir).join("results.jsonl"));
    }
    refused(&ws, &["report", "fifo"], "results.jsonl", FIFO);
    refused(&ws, &["diff", "base", "fifo"], "results.jsonl", FIFO);
    refused(&ws, &["diff", "fifo", "base"], "results.jsonl", FIFO);
    refused(
        &ws,
        &["run", "suite.yaml", "-o", "resumed", "--resume"],
        "results.jsonl",
        FIFO,
    );
    refused(
        &ws,
        &["run", "suite.yaml", "-o", "resumed", "--retry-errors"],
        "results.jsonl",
        FIFO,
    );
    // run.json and summary.json read back by a report.
    std::fs::remove_file(ws.path("fifo/results.jsonl")).unwrap();
    std::fs::copy(ws.path("base/results.jsonl"), ws.path("fifo/results.jsonl")).unwrap();
    for file in ["summary.json", "run.json"] {
        std::fs::remove_file(ws.path("fifo").join(file)).unwrap();
        mkfifo(&ws.path("fifo").join(file));
        refused(&ws, &["report", "fifo"], file, FIFO);
        std::fs::remove_file(ws.path("fifo").join(file)).unwrap();
        std::fs::copy(ws.path("base").join(file), ws.path("fifo").join(file)).unwrap();
    }
}

#[test]
fn a_device_as_dataset_or_suite_is_refused_before_a_byte_is_read() {
    let ws = workspace(3);
    std::fs::remove_file(ws.path("data.jsonl")).unwrap();
    std::os::unix::fs::symlink("/dev/zero", ws.path("data.jsonl")).unwrap();
    refused(
        &ws,
        &["run", "suite.yaml", "-o", "out"],
        "data.jsonl",
        "it is a device, not a regular file",
    );
    std::os::unix::fs::symlink("/dev/zero", ws.path("zero.yaml")).unwrap();
    refused(
        &ws,
        &["run", "zero.yaml", "-o", "out"],
        "zero.yaml",
        "it is a device, not a regular file",
    );
    refused(
        &ws,
        &["run", "/dev/zero", "-o", "out"],
        "/dev/zero",
        "it is a device, not a regular file",
    );
}

#[test]
fn a_sparse_suite_larger_than_the_cap_is_refused_unread() {
    let ws = workspace(3);
    let file = std::fs::File::create(ws.path("huge.yaml")).unwrap();
    // 3 GiB of holes: reading it whole would take 3 GiB of memory.
    file.set_len(3 << 30).unwrap();
    refused(
        &ws,
        &["run", "huge.yaml", "-o", "out"],
        "huge.yaml",
        "it is larger than the limit of 16 MiB",
    );
}

/// A billion laughs: nine levels of nine aliases of the level before, about 1 KiB written, some
/// 387 million values once built; each level on its line, indented by `indent`.
fn alias_chain(indent: &str) -> String {
    let mut text = format!("{indent}l0: &l0 [x, x, x, x, x, x, x, x, x]\n");
    for level in 1..9 {
        let before = format!("*l{}", level - 1);
        let items = [before.as_str(); 9].join(", ");
        text.push_str(&format!("{indent}l{level}: &l{level} [{items}]\n"));
    }
    text
}

#[test]
fn an_alias_bomb_case_file_is_refused_at_its_line() {
    let ws = Workspace::new();
    project(&ws);
    let bomb = format!(
        "name: bomb\ninput: hello\n{}expected:\n  output_contains: [hello]\n",
        alias_chain("")
    );
    assert!(bomb.len() < 1024, "{} bytes", bomb.len());
    ws.write("bomb.yaml", &bomb);
    let err = refused(
        &ws,
        &["run", "bomb.yaml", "--traces", "traces.jsonl", "-o", "out"],
        "bomb.yaml:",
        "more than 250000 values once its aliases are followed",
    );
    // Refused at the alias of the sixth level (line 8) that takes the values past the limit.
    assert!(err.contains("bomb.yaml:8:"), "{err}");

    // The suite reader refuses the same chain by the same rule.
    ws.write(
        "suite.yaml",
        &format!(
            "name: bomb\ndataset: d.jsonl\ngraders:\n  g:\n    kind: tool\n    function: contains\n    config:\n{}",
            alias_chain("      ")
        ),
    );
    refused(
        &ws,
        &["validate", "suite.yaml"],
        "suite.yaml:13:",
        "the file expands to more than 250000 values",
    );
}

/// A file outside the output folder that planted links point to; it must keep its content.
const PRECIOUS: &str = "precious\n";

/// Plants `out/<file>` as a symbolic link to `elsewhere` (which holds [`PRECIOUS`]).
fn plant(ws: &Workspace, file: &str) {
    ws.write("elsewhere", PRECIOUS);
    let link = ws.path("out").join(file);
    std::fs::create_dir_all(link.parent().unwrap()).unwrap();
    let _ = std::fs::remove_file(&link);
    std::os::unix::fs::symlink(ws.path("elsewhere"), &link).unwrap();
}

fn untouched(ws: &Workspace) {
    assert_eq!(
        std::fs::read_to_string(ws.path("elsewhere")).unwrap(),
        PRECIOUS,
        "the file a planted link points to was written through"
    );
}

const LINK: &str = "is a symbolic link; gavel does not write through one";

#[test]
fn links_planted_for_the_outputs_of_run_are_refused() {
    for (file, extra) in [
        ("results.jsonl", &[][..]),
        ("summary.json", &[][..]),
        ("junit.xml", &["--junit", "out/junit.xml"][..]),
        ("report.html", &["--report"][..]),
    ] {
        let ws = workspace(3);
        plant(&ws, file);
        let mut args = vec!["run", "suite.yaml", "-o", "out", "-q"];
        args.extend_from_slice(extra);
        refused(&ws, &args, file, LINK);
        untouched(&ws);
    }
    // run.json is read before it is written: a link to nowhere, which a write through it would
    // create.
    let ws = workspace(3);
    std::fs::create_dir_all(ws.path("out")).unwrap();
    std::os::unix::fs::symlink(ws.path("nowhere"), ws.path("out/run.json")).unwrap();
    refused(
        &ws,
        &["run", "suite.yaml", "-o", "out", "-q"],
        "run.json",
        LINK,
    );
    assert!(!ws.path("nowhere").exists(), "run.json was written through");

    // Resumed, results.jsonl is appended to.
    let ws = workspace(3);
    plant(&ws, "results.jsonl");
    refused(
        &ws,
        &["run", "suite.yaml", "-o", "out", "-q", "--resume"],
        "results.jsonl",
        LINK,
    );
    untouched(&ws);

    // An evaldeck project's rows and suite are written into the output folder.
    for file in ["cases.jsonl", "suite.yaml"] {
        let ws = Workspace::new();
        project(&ws);
        plant(&ws, file);
        refused(&ws, RUN_CASES, file, LINK);
        untouched(&ws);
    }
}

#[test]
fn a_link_planted_for_the_report_is_refused() {
    let ws = workspace(3);
    let first = gavel(&ws, &["run", "suite.yaml", "-o", "out", "-q"]);
    assert!(first.status.success(), "{}", stderr(&first));
    plant(&ws, "report.html");
    refused(&ws, &["report", "out"], "report.html", LINK);
    untouched(&ws);
}

/// The results of a run of six other samples, as another suite's run leaves them.
fn foreign_results(ws: &Workspace, rows: usize) -> Vec<u8> {
    let other = workspace(rows);
    let text = std::fs::read_to_string(other.path("data.jsonl")).unwrap();
    let renamed: String = text
        .lines()
        .enumerate()
        .map(|(i, line)| {
            line.replacen(&format!("\"id\":{i},"), &format!("\"id\":\"x{i}\","), 1) + "\n"
        })
        .collect();
    other.write("data.jsonl", &renamed);
    other.write("suite.yaml", &SUITE.replace("resumable", "another"));
    let run = gavel(&other, &["run", "suite.yaml", "-o", "out", "-q"]);
    assert!(run.status.success(), "{}", stderr(&run));
    let results = std::fs::read(other.path("out/results.jsonl")).unwrap();
    ws.write(
        "out/results.jsonl",
        &String::from_utf8(results.clone()).unwrap(),
    );
    results
}

#[test]
fn resume_into_another_runs_folder_is_refused() {
    // Without a run.json, the lines are all there is to tell.
    let ws = workspace(6);
    let foreign = foreign_results(&ws, 12);
    let err = refused(
        &ws,
        &["run", "suite.yaml", "-o", "out", "-q", "--resume"],
        "results.jsonl:1",
        "the result of sample `x0`, where this run's sample 1 is `0`",
    );
    assert!(err.contains("cannot resume the run in out"), "{err}");
    assert_eq!(
        std::fs::read(ws.path("out/results.jsonl")).unwrap(),
        foreign
    );

    // This run's first results, then more lines than it has samples.
    let ws = workspace(6);
    let clean = gavel(&ws, &["run", "suite.yaml", "-o", "out", "-q"]);
    assert!(clean.status.success(), "{}", stderr(&clean));
    let mine = std::fs::read_to_string(ws.path("out/results.jsonl")).unwrap();
    ws.write("out/results.jsonl", &format!("{mine}{mine}"));
    let text = std::fs::read_to_string(ws.path("out/run.json")).unwrap();
    ws.write("out/run.json", &text.replace("\"complete\"", "\"running\""));
    refused(
        &ws,
        &["run", "suite.yaml", "-o", "out", "-q", "--resume"],
        "results.jsonl:7",
        "one result more than the 6 samples this run grades",
    );

    // A finished run's record, with another run's results beside it.
    let ws = workspace(6);
    let clean = gavel(&ws, &["run", "suite.yaml", "-o", "out", "-q"]);
    assert!(clean.status.success(), "{}", stderr(&clean));
    foreign_results(&ws, 6);
    let err = refused(
        &ws,
        &["run", "suite.yaml", "-o", "out", "-q", "--retry-errors"],
        "results.jsonl:1",
        "the result of sample `x0`",
    );
    assert!(
        err.contains("cannot retry the errors of the run in out"),
        "{err}"
    );
}

/// Grades one row with a letta `@grader` `probe` whose body is `body` (after `import os`), in
/// `ws` where `work/` is granted, under `limits` (the suite's `limits:` block, or nothing): its
/// grade, which must have passed.
fn probe_granted(cache: &Path, ws: &Workspace, body: &str, limits: &str) -> serde_json::Value {
    let body: String = body.lines().map(|line| format!("    {line}\n")).collect();
    ws.write(
        "g.py",
        &format!(
            "import os\nfrom letta_evals.decorators import grader\n\
             from letta_evals.models import GradeResult\n\n@grader\n\
             def probe(sample, submission):\n{body}"
        ),
    );
    ws.write(
        "suite.yaml",
        &format!(
            "name: granted\ndataset: data.jsonl\nallow:\n  files: [work/]\n{limits}\
             graders:\n  probe:\n    kind: tool\n    function: g.py:probe\n"
        ),
    );
    ws.write_rows(
        "data.jsonl",
        &[crate::python_graders::paris_row(1, "Paris")],
    );
    let out = gavel_caching(ws, &["run", "suite.yaml", "-o", "out"], cache);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let grade = ws.results("out")[0]["grades"]["probe"].clone();
    assert_eq!(grade["status"], "pass", "{grade}");
    grade
}

/// A FIFO an agent left in a folder granted to a grader: opening it would wait for a writer
/// that never comes, on a host thread no deadline reaches. The grader is refused it as a
/// file it may not open, and the run goes on.
#[test]
fn a_fifo_in_a_granted_folder_is_refused_to_the_grader_not_waited_on() {
    let Some(cache) = crate::python_graders::cache() else {
        return;
    };
    let ws = Workspace::new();
    ws.write("work/notes.txt", "granted");
    mkfifo(&ws.path("work/pipe"));
    let grade = probe_granted(
        cache,
        &ws,
        "try:\n    with open('pipe') as f:\n        said = f.read()\n\
         except OSError as e:\n    said = f'{type(e).__name__}: {e.strerror}'\n\
         with open('notes.txt') as f:\n    said += ' | ' + f.read()\n\
         return GradeResult(score=1.0, rationale=said)",
        "limits:\n  timeout_ms: 2000\n",
    );
    assert_eq!(
        grade["rationale"],
        "PermissionError: Permission denied | granted"
    );
}

/// Sets its flag when dropped, a test's panic included.
struct SetOnDrop<'a>(&'a std::sync::atomic::AtomicBool);

impl Drop for SetOnDrop<'_> {
    fn drop(&mut self) {
        self.0.store(true, std::sync::atomic::Ordering::Relaxed);
    }
}

/// The same FIFO swapped in and out of a granted folder while the grader opens the name again
/// and again (an agent still at work): every opening either reads the file or is refused, none
/// waits, and the run ends.
#[test]
fn a_fifo_swapped_into_a_granted_folder_is_never_waited_on() {
    use std::sync::atomic::{AtomicBool, Ordering};
    let Some(cache) = crate::python_graders::cache() else {
        return;
    };
    let ws = Workspace::new();
    ws.write("file", "granted");
    ws.write("work/notes.txt", "granted");
    mkfifo(&ws.path("pipe"));
    let stop = AtomicBool::new(false);
    let grade = std::thread::scope(|scope| {
        // The FIFO and the file swapped in turns under one name, until gavel has ended.
        scope.spawn(|| {
            let (swapped, next) = (ws.path("work/swapped"), ws.path("work/.next"));
            while !stop.load(Ordering::Relaxed) {
                for source in ["pipe", "file"] {
                    let _ = std::fs::remove_file(&next);
                    if std::fs::hard_link(ws.path(source), &next).is_ok() {
                        let _ = std::fs::rename(&next, &swapped);
                    }
                }
            }
        });
        let _stop = SetOnDrop(&stop);
        probe_granted(
            cache,
            &ws,
            "seen = set()\nfor _ in range(3000):\n    try:\n\
             \x20       with open('swapped') as f:\n            seen.add(f.read())\n\
             \x20   except OSError as e:\n        seen.add(type(e).__name__)\n\
             return GradeResult(score=1.0, rationale=' '.join(sorted(seen)))",
            "limits:\n  timeout_ms: 20000\n  fuel: 10000000000\n",
        )
    });
    // Each opening found the file, or the FIFO (refused); nothing else.
    let seen = grade["rationale"].as_str().unwrap();
    assert!(
        seen.split(' ')
            .all(|s| matches!(s, "granted" | "PermissionError" | "FileNotFoundError")),
        "{seen}"
    );
    assert!(seen.contains("PermissionError"), "{seen}");
}

/// A file whose name is not UTF-8, which WASI cannot name, is left out of a granted folder's
/// listing; the rest of the folder is listed and walked as before, not hidden by an error.
#[test]
fn a_name_that_is_not_utf8_is_left_out_of_a_granted_folders_listing() {
    use std::os::unix::ffi::OsStrExt;
    let Some(cache) = crate::python_graders::cache() else {
        return;
    };
    let ws = Workspace::new();
    ws.write("work/main.py", "print('hi')");
    ws.write("work/sub/result.txt", "42");
    let odd = ws
        .path("work")
        .join(std::ffi::OsStr::from_bytes(b"bad\xff.txt"));
    std::fs::write(&odd, "odd").expect("a file of a non-UTF-8 name");
    let grade = probe_granted(
        cache,
        &ws,
        "listed = sorted(os.listdir('.'))\n\
         walked = sorted(os.path.join(d, f) for d, _, fs in os.walk('.') for f in fs)\n\
         return GradeResult(score=1.0, rationale=f'{listed} {walked}')",
        "",
    );
    assert_eq!(
        grade["rationale"], "['main.py', 'sub'] ['./main.py', './sub/result.txt']",
        "{grade}"
    );
}
