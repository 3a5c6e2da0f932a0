//! The cache folder against whoever else could write it (a shared machine, a folder restored in
//! CI from a shared store): a planted interpreter component, a planted toolchain, a build
//! folder that is a link elsewhere, planted judge replies and temporary names, and cache or
//! key folders others may write. Nothing planted is loaded, run, trusted or written through.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use crate::common::{Workspace, gavel_off_runtime, stderr, stdout};
use crate::judge::KEY;
use crate::openai_server::{Reply, Server};
use gavel::grade::judge::{Judge, JudgeOptions};
use gavel::input::sample::{Sample, Texts};
use gavel_test_artifacts::guests;
use serde_json::json;

/// Runs `gavel` in `ws` with its own cache folder (`.cache`) and key folder (`config`), with
/// no toolchain or component named unless `vars` name one.
fn gavel(ws: &Workspace, args: &[&str], vars: &[(&str, &str)]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_gavel"))
        .args(args)
        .current_dir(ws.dir.path())
        .env("GAVEL_CACHE_DIR", ws.path(".cache"))
        .env("XDG_CONFIG_HOME", ws.path("config"))
        .env("GAVEL_TOOLCHAINS", ws.path("toolchains"))
        .env("GAVEL_PYTHON_COMPONENT", "")
        .env_remove("COMPONENTIZE_PY")
        .envs(vars.iter().copied())
        .output()
        .expect("gavel runs")
}

fn chmod(path: &Path, mode: u32) {
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).expect("chmod");
}

/// An executable shell script at `name` in `ws`.
fn script(ws: &Workspace, name: &str, text: &str) -> PathBuf {
    let path = ws.write(name, text);
    chmod(&path, 0o755);
    path
}

/// A stand-in componentize-py that writes `component` where it is asked to and notes each run
/// in `ran.log`.
fn stand_in_toolchain(ws: &Workspace) -> String {
    let log = ws.path("ran.log");
    script(
        ws,
        "stand-in/componentize-py",
        &format!(
            "#!/bin/sh\necho ran >> '{}'\nwhile [ $# -gt 0 ]; do\n  if [ \"$1\" = -o ]; then \
             out=$2; fi\n  shift\ndone\nprintf 'component' > \"$out\"\n",
            log.display()
        ),
    )
    .to_string_lossy()
    .into_owned()
}

fn runs(ws: &Workspace) -> usize {
    std::fs::read_to_string(ws.path("ran.log"))
        .unwrap_or_default()
        .lines()
        .count()
}

/// Every file under `dir` with its content, sorted.
fn snapshot(dir: &Path) -> Vec<(PathBuf, String)> {
    let mut files = crate::common::texts_under(dir);
    files.sort();
    files
}

#[test]
fn a_planted_interpreter_component_is_never_loaded() {
    let ws = Workspace::new();
    let toolchain = stand_in_toolchain(&ws);
    let with_toolchain = [("COMPONENTIZE_PY", toolchain.as_str())];
    let built = gavel(&ws, &["build-python"], &with_toolchain);
    assert_eq!(built.status.code(), Some(0), "{}", stderr(&built));
    let cached = PathBuf::from(stdout(&built).trim());
    assert_eq!(runs(&ws), 1);
    // gavel's own component is used again as it is.
    let again = gavel(&ws, &["build-python"], &with_toolchain);
    assert_eq!(again.status.code(), Some(0), "{}", stderr(&again));
    assert_eq!(runs(&ws), 1, "{}", stderr(&again));

    // A valid component (a test guest) planted under the cached name is built over, not used.
    std::fs::copy(guests::CONSTANT, &cached).expect("plant");
    let planted = gavel(&ws, &["build-python"], &with_toolchain);
    assert_eq!(planted.status.code(), Some(0), "{}", stderr(&planted));
    assert_eq!(runs(&ws), 2, "the component is built again");
    assert!(
        stderr(&planted).contains(&format!(
            "warning: the cached Python interpreter component {} was not used (it carries no \
             authentication tag); building it again",
            cached.display()
        )),
        "{}",
        stderr(&planted)
    );
    assert_ne!(
        std::fs::read(&cached).expect("rebuilt"),
        std::fs::read(guests::CONSTANT).expect("guest")
    );

    // Nor does a suite with Python graders load it: the interpreter is built again (here into
    // the stand-in's bytes, which are no component), never the planted one loaded.
    std::fs::copy(guests::CONSTANT, &cached).expect("plant");
    ws.write("g.py", "def grade(sample, item):\n    return 1.0\n");
    ws.write(
        "suite.yaml",
        "name: p\ndataset: data.jsonl\ngraders:\n  g:\n    kind: python\n    source_path: g.py\n",
    );
    ws.write("data.jsonl", "{\"id\": 1, \"input\": \"q\"}\n");
    let validated = gavel(&ws, &["validate", "suite.yaml"], &with_toolchain);
    assert_eq!(runs(&ws), 3, "{}", stderr(&validated));
    assert!(
        !stderr(&validated).contains("is not a Python interpreter component"),
        "{}",
        stderr(&validated)
    );
}

/// Plants at `name` in `ws` a toolchain command that would leave a marker file, in a folder of
/// mode `bin_mode`, then builds the interpreter where no toolchain can be installed (the build
/// stops for want of one once the planted one is refused); the build's output, after checking
/// that the planted command never ran.
fn build_beside_planted(ws: &Workspace, name: &str, bin_mode: u32) -> Output {
    let marker = ws.path("marker");
    script(
        ws,
        name,
        &format!("#!/bin/sh\necho planted > '{}'\n", marker.display()),
    );
    if let Some(bin) = Path::new(name).parent() {
        chmod(&ws.dir.path().join(bin), bin_mode);
    }
    let built = gavel(ws, &["build-python"], &[("PYTHON", "/nonexistent/python3")]);
    assert!(!marker.exists(), "{name} ran: {}", stderr(&built));
    assert_eq!(built.status.code(), Some(2), "{}", stderr(&built));
    assert!(
        stderr(&built).contains(gavel::grade::program::interpreter::TOOLCHAIN_MISSING),
        "{}",
        stderr(&built)
    );
    built
}

#[test]
fn a_planted_toolchain_in_the_cache_is_never_run() {
    let ws = Workspace::new();
    let runtime = ws.path(".cache/python/runtime");
    std::fs::create_dir_all(&runtime).expect("folders");
    for dir in [".cache", ".cache/python", ".cache/python/runtime"] {
        chmod(&ws.path(dir), 0o700);
    }
    // As a cache restored from elsewhere has it: this user's files, no one else may write them.
    let built = build_beside_planted(&ws, ".cache/python/runtime/.venv/bin/python", 0o700);
    assert!(
        stderr(&built).contains(&format!(
            "warning: the toolchain {} was not made by this gavel or has changed since (it \
             carries no authentication tag); it is installed again",
            runtime.join(".venv").display()
        )),
        "{}",
        stderr(&built)
    );
    assert!(!runtime.join(".venv").exists());
}

#[test]
fn a_shared_toolchain_others_may_write_is_never_run() {
    let ws = Workspace::new();
    let built = build_beside_planted(
        &ws,
        "toolchains/componentize-py-0.25.1/bin/componentize-py",
        0o777,
    );
    assert!(
        stderr(&built).contains("others may write bin in it (mode 777)"),
        "{}",
        stderr(&built)
    );
}

#[test]
fn a_toolchain_restored_with_the_cache_folder_is_never_run() {
    // The default cache folder is `~/.cache/gavel`; the shared toolchains live elsewhere
    // (`~/.local/share/gavel/toolchains`), so restoring the cache from a store others write
    // cannot bring a toolchain gavel runs, however private its files look.
    let ws = Workspace::new();
    let marker = ws.path("marker");
    let planted = "home/.cache/gavel/toolchains/componentize-py-0.25.1/bin/componentize-py";
    script(
        &ws,
        planted,
        &format!("#!/bin/sh\necho planted > '{}'\n", marker.display()),
    );
    let mut dir = Path::new(planted);
    while let Some(parent) = dir.parent().filter(|p| !p.as_os_str().is_empty()) {
        chmod(&ws.path(&parent.to_string_lossy()), 0o700);
        dir = parent;
    }
    let built = Command::new(env!("CARGO_BIN_EXE_gavel"))
        .arg("build-python")
        .current_dir(ws.dir.path())
        .env("HOME", ws.path("home"))
        .env("PYTHON", "/nonexistent/python3")
        .env("GAVEL_PYTHON_COMPONENT", "")
        .env_remove("GAVEL_CACHE_DIR")
        .env_remove("GAVEL_TOOLCHAINS")
        .env_remove("COMPONENTIZE_PY")
        .env_remove("XDG_CACHE_HOME")
        .env_remove("XDG_CONFIG_HOME")
        .env_remove("XDG_DATA_HOME")
        .output()
        .expect("gavel runs");
    assert!(!marker.exists(), "{planted} ran: {}", stderr(&built));
    assert_eq!(built.status.code(), Some(2), "{}", stderr(&built));
    assert!(
        stderr(&built).contains(gavel::grade::program::interpreter::TOOLCHAIN_MISSING),
        "{}",
        stderr(&built)
    );
}

#[test]
fn a_build_folder_linked_elsewhere_is_refused_and_what_it_points_to_untouched() {
    let ws = Workspace::new();
    let toolchain = stand_in_toolchain(&ws);
    ws.write("victim/keep.txt", "mine");
    ws.write("victim/sub/keep.txt", "mine too");
    let before = snapshot(&ws.path("victim"));
    std::fs::create_dir_all(ws.path(".cache/python")).expect("folders");
    chmod(&ws.path(".cache"), 0o700);
    chmod(&ws.path(".cache/python"), 0o700);
    std::os::unix::fs::symlink(ws.path("victim"), ws.path(".cache/python/runtime")).expect("link");
    let built = gavel(
        &ws,
        &["build-python"],
        &[("COMPONENTIZE_PY", toolchain.as_str())],
    );
    assert_eq!(snapshot(&ws.path("victim")), before, "{}", stderr(&built));
    assert_eq!(built.status.code(), Some(2), "{}", stderr(&built));
    assert!(
        stderr(&built).contains(&format!(
            "{} cannot hold what gavel trusts: it is not a folder (a symbolic link?)",
            ws.path(".cache/python/runtime").display()
        )),
        "{}",
        stderr(&built)
    );
    assert_eq!(runs(&ws), 0);
}

const JUDGED: &str = "name: judged
dataset: data.jsonl
graders:
  quality:
    kind: rubric
    prompt: 'Grade: {submission}'
    model: judge-model
    base_url: BASE_URL
    max_retries: 0
    timeout: 5
";

/// A chat completion whose verdict is `score`, as an endpoint sends it.
fn completion(score: f64) -> String {
    json!({
        "id": "chatcmpl-planted",
        "object": "chat.completion",
        "model": "judge-model",
        "choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant",
            "content": json!({"score": score, "rationale": "planted"}).to_string()}}],
        "usage": {"prompt_tokens": 1, "completion_tokens": 1},
    })
    .to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn planted_judge_replies_do_not_change_grades() {
    let server = Server::always(Reply::verdict(0.0, "honest")).await;
    let ws = Workspace::new();
    ws.write(
        "suite.yaml",
        &JUDGED.replace("BASE_URL", &server.base_url()),
    );
    let rows: Vec<_> = (0..6)
        .map(|i| {
            json!({"id": i, "input": "q", "trajectory": [[{"id": "m", "date":
            "2026-01-01T00:00:00Z", "message_type": "assistant_message", "content":
            format!("answer {i}")}]]})
        })
        .collect();
    ws.write_rows("data.jsonl", &rows);
    let config = ws.path("config").to_string_lossy().into_owned();
    let vars = [
        ("OPENAI_API_KEY", KEY),
        ("XDG_CONFIG_HOME", config.as_str()),
    ];
    let scores = |out: &str| -> Vec<f64> {
        ws.results(out)
            .iter()
            .map(|r| r["grades"]["quality"]["score"].as_f64().expect("a score"))
            .collect()
    };
    let first = gavel_off_runtime(
        ws.dir.path(),
        &["run", "suite.yaml", "-o", "a", "-q"],
        &vars,
    )
    .await;
    assert_eq!(first.status.code(), Some(0), "{}", stderr(&first));
    assert_eq!(scores("a"), [0.0; 6]);
    assert_eq!(server.request_count(), 6);

    // Every entry replaced by a valid reply of score 1.0 under its own name.
    let entries: Vec<PathBuf> = std::fs::read_dir(ws.path(".cache/judge"))
        .expect("the judge's cache")
        .map(|e| e.expect("entry").path())
        .collect();
    assert_eq!(entries.len(), 6);
    for entry in &entries {
        std::fs::write(entry, completion(1.0)).expect("plant");
    }
    let planted = gavel_off_runtime(
        ws.dir.path(),
        &["run", "suite.yaml", "-o", "b", "-q"],
        &vars,
    )
    .await;
    assert_eq!(planted.status.code(), Some(0), "{}", stderr(&planted));
    assert_eq!(scores("b"), [0.0; 6], "{}", stderr(&planted));
    assert_eq!(server.request_count(), 12, "the judge is asked again");
    let warnings = stderr(&planted)
        .matches("warning: the judge's cached reply")
        .count();
    assert_eq!(warnings, 1, "{}", stderr(&planted));
    assert!(
        stderr(&planted).contains("(it is not an entry gavel writes); the judge is asked again"),
        "{}",
        stderr(&planted)
    );

    // The replies asked again are cached again, and serve the next run.
    let again = gavel_off_runtime(
        ws.dir.path(),
        &["run", "suite.yaml", "-o", "c", "-q"],
        &vars,
    )
    .await;
    assert_eq!(scores("c"), [0.0; 6], "{}", stderr(&again));
    assert_eq!(server.request_count(), 12);
    assert!(!stderr(&again).contains("warning"), "{}", stderr(&again));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_planted_temporary_name_is_not_written_through() {
    let server = Server::always(Reply::verdict(0.5, "honest")).await;
    let env = |name: &str| (name == "OPENAI_API_KEY").then(|| KEY.to_string());
    let judge = |cache: &Path| {
        let spec = serde_json::from_value(
            json!({"prompt": "grade {submission}", "base_url": server.base_url()}),
        )
        .expect("spec");
        let options = JudgeOptions {
            cache_dir: Some(cache.to_path_buf()),
            ..JudgeOptions::default()
        };
        Judge::with_env(spec, Path::new("."), options, env).expect("judge")
    };
    let sample = Sample {
        input: Some(Texts::One("q".into())),
        ..Sample::default()
    };
    // The entry's name, learnt from a first cache.
    let learnt = tempfile::tempdir().expect("tempdir");
    judge(learnt.path()).grade(&sample, "answer").await;
    let [entry] = std::fs::read_dir(learnt.path().join("judge"))
        .expect("entries")
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        .collect::<Vec<_>>()
        .try_into()
        .expect("one entry");
    let key = entry.trim_end_matches(".json");

    // In a second cache, every name a temporary file of that entry could take in this process
    // is a link to a file elsewhere.
    let ws = Workspace::new();
    let victim = ws.write("victim", "precious");
    let cache = ws.path("cache");
    std::fs::create_dir_all(cache.join("judge")).expect("folder");
    let pid = std::process::id();
    for n in 0..3000 {
        for name in [
            format!(".{key}.{pid}.{n}.tmp"),
            format!(".{entry}.{pid}.{n}.tmp"),
        ] {
            std::os::unix::fs::symlink(&victim, cache.join("judge").join(name)).expect("link");
        }
    }
    let grade = judge(&cache).grade(&sample, "answer").await;
    assert_eq!(grade.score, 0.5);
    assert_eq!(
        std::fs::read_to_string(&victim).expect("victim"),
        "precious"
    );
}

/// A suite with one pack, which the pack cache and its key serve.
fn pack_suite(ws: &Workspace) {
    ws.write(
        "suite.yaml",
        &format!(
            "name: packed\ndataset: data.jsonl\npacks:\n  c:\n    path: {}\ngraders:\n  one: \
             {{kind: tool, function: c.one}}\n",
            guests::CONSTANT
        ),
    );
    ws.write("data.jsonl", "{\"id\": 1, \"input\": \"q\"}\n");
}

/// Makes `folder` writable by all, and checks that a run of the pack suite is refused with the
/// error naming it and `fix`, then that it runs once the folder is owner-only again.
fn refused_until_private(ws: &Workspace, folder: &Path, fix: &str) {
    pack_suite(ws);
    std::fs::create_dir_all(folder).expect("folder");
    chmod(folder, 0o777);
    let run = gavel(ws, &["run", "suite.yaml", "-o", "out", "-q"], &[]);
    assert_eq!(run.status.code(), Some(2), "{}", stderr(&run));
    assert!(
        stderr(&run).contains(&format!(
            "{0} cannot hold what gavel trusts: others may write it (mode 777): chmod go-w {0}, \
             or {fix}",
            folder.display()
        )),
        "{}",
        stderr(&run)
    );
    chmod(folder, 0o700);
    let run = gavel(ws, &["run", "suite.yaml", "-o", "out", "-q"], &[]);
    assert_eq!(run.status.code(), Some(0), "{}", stderr(&run));
}

#[test]
fn a_cache_folder_others_may_write_is_refused() {
    let ws = Workspace::new();
    refused_until_private(
        &ws,
        &ws.path(".cache"),
        "choose another cache folder (--cache-dir)",
    );
}

#[test]
fn a_key_folder_others_may_write_is_refused() {
    let ws = Workspace::new();
    let keys = ws.path("config/gavel");
    refused_until_private(&ws, &keys, "set XDG_CONFIG_HOME to a folder of your own");
    // Made only once the folder was owner-only.
    let made = std::fs::metadata(keys.join("pack-cache.key")).expect("the key");
    assert_eq!(made.permissions().mode() & 0o777, 0o600);
}
