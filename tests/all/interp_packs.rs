//! The Python and JavaScript example packs (`examples/packs-python`, `examples/packs-js`), built
//! by their own `build.sh` and graded through the real `gavel run`: each pack's graders and
//! extractors against its dataset, a grader that raises turned into an `error` grade while
//! every other grade of that sample and every other sample is still graded, and the compiled
//! component served from the cache on the next run.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::Mutex;

use serde_json::Value;

/// Exit code of a pack's `build.sh` when the toolchain cannot be installed.
const TOOLCHAIN_MISSING: i32 = 3;

fn example(dir: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../examples")
        .join(dir)
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// Runs the pack's `build.sh` once per test process (tests run in parallel, and two builds in
/// one folder would trip over each other): true when `target/pack.wasm` is built. Without the
/// toolchain (and only then) the test is skipped, loudly, unless `CI` is set: CI installs it.
fn built(dir: &Path) -> bool {
    static BUILT: Mutex<BTreeMap<PathBuf, bool>> = Mutex::new(BTreeMap::new());
    let mut built = BUILT
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    if let Some(&done) = built.get(dir) {
        return done;
    }
    let done = build(dir);
    built.insert(dir.to_path_buf(), done);
    done
}

fn build(dir: &Path) -> bool {
    let output = Command::new("sh")
        .arg("build.sh")
        .current_dir(dir)
        .output()
        .unwrap_or_else(|e| panic!("cannot run {}/build.sh: {e}", dir.display()));
    let log = format!("{}{}", text(&output.stdout), text(&output.stderr));
    match output.status.code() {
        Some(0) => {
            assert!(dir.join("target/pack.wasm").is_file(), "{log}");
            true
        }
        Some(TOOLCHAIN_MISSING) if std::env::var_os("CI").is_none() => {
            eprintln!(
                "\n========================================================================\n\
                 SKIPPED: {} cannot be built here, its toolchain could not be installed:\n\
                 {log}\
                 ========================================================================\n",
                dir.display()
            );
            false
        }
        _ => panic!(
            "{}/build.sh failed ({}):\n{log}",
            dir.display(),
            output.status
        ),
    }
}

/// A cache shared by the runs of this test binary and the next: compiling an interpreter
/// component takes seconds, and the second run is meant to load it.
fn cache_dir() -> PathBuf {
    Path::new(env!("CARGO_TARGET_TMPDIR")).join("interp-pack-cache")
}

fn gavel(dir: &Path, args: &[&str]) -> Output {
    gavel_caching_in(dir, &cache_dir(), args)
}

/// gavel with its own pack cache: a test that compiles a pack [`run_twice`] runs must not
/// write its artifact between that test's two runs.
fn gavel_caching_in(dir: &Path, cache: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_gavel"))
        .args(args)
        .current_dir(dir)
        .env("GAVEL_CACHE_DIR", cache)
        .output()
        .expect("gavel runs")
}

struct Run {
    /// Results by sample id.
    results: Vec<(String, Value)>,
    summary: Value,
}

impl Run {
    fn grade(&self, id: &str, metric: &str) -> &Value {
        let (_, result) = self
            .results
            .iter()
            .find(|(sample, _)| sample == id)
            .unwrap_or_else(|| panic!("no result for {id}"));
        &result["grades"][metric]
    }

    fn statuses(&self, metric: &str) -> Vec<(&str, &str)> {
        self.results
            .iter()
            .map(|(id, result)| {
                let status = result["grades"][metric]["status"]
                    .as_str()
                    .unwrap_or("none");
                (id.as_str(), status)
            })
            .collect()
    }
}

fn run_suite(dir: &Path, out: &Path) -> Run {
    let output = gavel(dir, &["run", "suite.yaml", "-o", out.to_str().unwrap()]);
    assert_eq!(
        output.status.code(),
        Some(0),
        "{}{}",
        text(&output.stdout),
        text(&output.stderr)
    );
    let results = std::fs::read_to_string(out.join("results.jsonl"))
        .expect("results.jsonl")
        .lines()
        .map(|line| {
            let value: Value = serde_json::from_str(line).expect("a JSON line");
            let id = match &value["sample_id"] {
                Value::String(id) => id.clone(),
                other => other.to_string(),
            };
            (id, value)
        })
        .collect();
    let summary = serde_json::from_str(
        &std::fs::read_to_string(out.join("summary.json")).expect("summary.json"),
    )
    .expect("summary.json is JSON");
    Run { results, summary }
}

/// The compiled artifacts of `pack` in the cache, with their modification times.
fn artifacts(pack: &Path) -> Vec<(PathBuf, std::time::SystemTime)> {
    use sha2::{Digest, Sha256};
    let digest = Sha256::digest(std::fs::read(pack).expect("the pack is readable"));
    let prefix: String = digest.iter().map(|b| format!("{b:02x}")).collect();
    let Ok(entries) = std::fs::read_dir(cache_dir().join("packs")) else {
        return Vec::new();
    };
    entries
        .map(|entry| entry.expect("a readable cache entry").path())
        .filter(|path| {
            let name = path.file_name().unwrap_or_default().to_string_lossy();
            name.starts_with(&prefix) && name.ends_with(".cwasm")
        })
        .map(|path| {
            let modified = std::fs::metadata(&path)
                .and_then(|m| m.modified())
                .expect("mtime");
            (path, modified)
        })
        .collect()
}

/// Runs the suite twice: the first run leaves the compiled component in the cache, the second
/// loads it (the artifact is not written again) and grades the same way.
fn run_twice(dir: &Path) -> Run {
    let out = tempfile::tempdir().expect("a temporary folder");
    let first = run_suite(dir, &out.path().join("first"));
    let pack = dir.join("target/pack.wasm");
    let cached = artifacts(&pack);
    assert_eq!(cached.len(), 1, "one compiled artifact: {cached:?}");
    let second = run_suite(dir, &out.path().join("second"));
    assert_eq!(artifacts(&pack), cached, "the second run compiled again");
    assert_eq!(
        first.results, second.results,
        "the same pack grades the same way"
    );
    first
}

fn stderr_of(grade: &Value) -> &str {
    grade["metadata"]["sandbox"]["stderr"]
        .as_str()
        .unwrap_or_default()
}

#[test]
fn python_pack_grades_through_gavel_run() {
    let dir = example("packs-python");
    if !built(&dir) {
        return;
    }
    let run = run_twice(&dir);

    assert_eq!(
        run.statuses("search_args"),
        [
            ("booked", "pass"),
            ("wrong-airport", "fail"),
            ("booking-failed", "pass"),
            ("adults-only", "pass"),
            ("no-tools", "fail"),
        ]
    );
    let wrong = run.grade("wrong-airport", "search_args");
    assert_eq!(wrong["actual"][0]["to"], "EWR", "{wrong}");
    assert_eq!(
        wrong["expected"],
        serde_json::json!({"from": "SFO", "to": "JFK", "passengers": {"adults": 2}})
    );
    assert_eq!(
        run.grade("no-tools", "search_args")["rationale"],
        "`search_flights` was never called"
    );

    // Scores between 0 and 1 with the pass threshold from the suite's config.
    assert_eq!(
        run.statuses("quality"),
        [
            ("booked", "pass"),
            ("wrong-airport", "fail"),
            ("booking-failed", "pass"),
            ("adults-only", "fail"),
            ("no-tools", "fail"),
        ]
    );
    let booked = run.grade("booked", "quality");
    assert_eq!(booked["score"], 0.7855, "{booked}");
    assert_eq!(booked["metadata"]["tool_selection"], 1.0);

    // The Python extractor feeds a built-in grader.
    assert_eq!(
        run.statuses("answer"),
        [
            ("booked", "pass"),
            ("wrong-airport", "fail"),
            ("booking-failed", "fail"),
            ("adults-only", "pass"),
            ("no-tools", "fail"),
        ]
    );
    assert_eq!(run.grade("booked", "answer")["submission"], "UA 15");
    assert_eq!(run.grade("booking-failed", "answer")["submission"], "none");

    // The deliberately buggy grader raises on the run without tool returns: that grade is an
    // error with the exception, the traceback is kept, and everything else is graded.
    let rate = run.grade("booking-failed", "tool_success");
    assert_eq!(
        (rate["status"].as_str(), rate["score"].as_f64()),
        (Some("fail"), Some(0.5))
    );
    let raised = run.grade("no-tools", "tool_success");
    assert_eq!(raised["status"], "error");
    assert_eq!(
        raised["rationale"],
        "guest returned error: ZeroDivisionError: division by zero"
    );
    let traceback = stderr_of(raised);
    assert!(
        traceback.contains("Traceback") && traceback.contains("in tool_success_rate"),
        "{traceback}"
    );
    assert_eq!(run.summary["counts"]["total"], 5);
    assert_eq!(run.summary["counts"]["errored"], 1);
}

#[test]
fn javascript_pack_grades_through_gavel_run() {
    let dir = example("packs-js");
    if !built(&dir) {
        return;
    }
    let run = run_twice(&dir);

    assert_eq!(
        run.statuses("booking"),
        [
            ("confirmed", "pass"),
            ("no-confirmation", "fail"),
            ("over-budget", "pass"),
            ("null-destination", "fail"),
            ("malformed-arguments", "pass"),
        ]
    );
    let missing = run.grade("no-confirmation", "booking");
    assert_eq!(missing["expected"], "Confirmation: XX000000");
    assert_eq!(missing["actual"], "Your flight is booked.");

    // Token counts arrive as u64 (BigInt in JavaScript).
    assert_eq!(
        run.statuses("budget"),
        [
            ("confirmed", "pass"),
            ("no-confirmation", "pass"),
            ("over-budget", "fail"),
            ("null-destination", "pass"),
            ("malformed-arguments", "pass"),
        ]
    );
    assert_eq!(
        run.grade("confirmed", "budget")["rationale"],
        "Used 950 tokens (budget: 2000)"
    );
    let over = run.grade("over-budget", "budget");
    assert_eq!(
        (over["expected"].as_str(), over["actual"].as_u64()),
        (Some("<= 2000"), Some(3200))
    );

    // The JavaScript extractor feeds a built-in grader.
    assert_eq!(
        run.grade("confirmed", "confirmation")["submission"],
        r#"{"flight":"UA 15","confirmation":"UA123456","seat":"12A"}"#
    );
    assert_eq!(
        run.statuses("confirmation"),
        [
            ("confirmed", "pass"),
            ("no-confirmation", "fail"),
            ("over-budget", "pass"),
            ("null-destination", "fail"),
            ("malformed-arguments", "pass"),
        ]
    );

    // The deliberately buggy grader throws on arguments that are not JSON: that grade is an
    // error with the exception, the stack is kept, and everything else is graded.
    assert_eq!(
        run.grade("null-destination", "arguments")["rationale"],
        "`search_flights` was called with null to"
    );
    let thrown = run.grade("malformed-arguments", "arguments");
    assert_eq!(thrown["status"], "error");
    let reason = thrown["rationale"].as_str().unwrap_or_default();
    assert!(
        reason.starts_with("guest returned error: SyntaxError: JSON.parse"),
        "{reason}"
    );
    let stack = stderr_of(thrown);
    assert!(stack.contains("noNullArgs@app.js"), "{stack}");
    assert_eq!(run.summary["counts"]["total"], 5);
    assert_eq!(run.summary["counts"]["errored"], 1);
}

#[test]
fn interpreter_pack_configs_are_checked_before_grading() {
    for (dir, bad, message) in [
        (
            "packs-python",
            "config: {threshold: 0.7}",
            "config of `quality_score` rejected: config.threshold: 'high' is not a number in [0, 1]",
        ),
        (
            "packs-js",
            "config: {max_tokens: 2000}",
            "config of `token_budget` rejected: config.max_tokens: \"lots\" is not a whole number of tokens",
        ),
    ] {
        let dir = example(dir);
        if !built(&dir) {
            continue;
        }
        let suite = std::fs::read_to_string(dir.join("suite.yaml")).expect("suite.yaml");
        assert!(suite.contains(bad), "{suite}");
        let broken = suite
            .replace("threshold: 0.7", "threshold: high")
            .replace("max_tokens: 2000", "max_tokens: lots");
        let work = tempfile::tempdir().expect("a temporary folder");
        std::fs::write(work.path().join("suite.yaml"), broken).expect("write the suite");
        for file in ["dataset.jsonl", "target/pack.wasm"] {
            let to = work.path().join(file);
            std::fs::create_dir_all(to.parent().expect("a parent")).expect("mkdir");
            std::fs::copy(dir.join(file), to).expect("copy");
        }
        let cache = work.path().join("cache");
        let output = gavel_caching_in(work.path(), &cache, &["validate", "suite.yaml"]);
        let err = text(&output.stderr);
        assert_eq!(output.status.code(), Some(2), "{err}");
        assert!(err.contains(message), "{err}");
    }
}

#[test]
fn the_packs_build_against_the_released_wit() {
    // Each pack folder carries its copy of the WIT so that it builds on its own, outside this
    // repository; a released version is frozen, so the copies must stay byte for byte the same.
    let released =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../wit/gavel-grader-0.1.0/grader.wit");
    let released = std::fs::read_to_string(released).expect("the released WIT");
    for dir in ["packs-python", "packs-js"] {
        let copy =
            std::fs::read_to_string(example(dir).join("wit/grader.wit")).expect("a WIT copy");
        assert!(
            copy == released,
            "examples/{dir}/wit/grader.wit differs from wit/gavel-grader-0.1.0"
        );
    }
}

/// A reply of `hello from loopback` to any request.
fn hello(_request: &str, stream: &mut std::net::TcpStream) {
    use std::io::Write;
    let body = "hello from loopback";
    let _ = write!(
        stream,
        "HTTP/1.1 200 OK\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
        body.len()
    );
}

#[test]
fn a_javascript_packs_fetch_reaches_a_granted_loopback_host_and_no_other() {
    let dir = example("packs-js");
    // The example's build installs the toolchain the fetching pack is built with.
    if !built(&dir) {
        return;
    }
    let pack = Path::new(env!("CARGO_TARGET_TMPDIR")).join("js-fetch/fetch.wasm");
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/js-fetch/build.sh");
    let output = Command::new("sh")
        .arg(&script)
        .arg(&pack)
        .output()
        .expect("sh runs");
    assert!(output.status.success(), "{}", text(&output.stderr));
    let (port, requests) = crate::network::server(hello);
    let work = tempfile::tempdir().expect("a temporary folder");
    // The same pack and row, granted the server's address, then granted nothing.
    let suite = format!(
        "name: js-fetch\ndataset: data.jsonl\nlimits: {{timeout_ms: 60000}}\npacks:\n  fetch:\n    path: {}\n\
         graders:\n  granted:\n    kind: tool\n    function: fetch.get\n    allow:\n      \
         network: [\"127.0.0.1:{port}\"]\n  refused:\n    kind: tool\n    function: fetch.get\n",
        pack.display()
    );
    std::fs::write(work.path().join("suite.yaml"), suite).expect("write the suite");
    let row = serde_json::json!({"id": 1, "input": "q", "trajectory": [[{"id": "m1",
        "date": "2026-01-01T00:00:00Z", "message_type": "assistant_message",
        "content": format!("http://127.0.0.1:{port}/hello")}]]});
    std::fs::write(work.path().join("data.jsonl"), format!("{row}\n")).expect("write the data");
    let run = run_suite(work.path(), &work.path().join("out"));
    assert_eq!(
        run.grade("1", "granted")["rationale"],
        "200 hello from loopback"
    );
    let refused = run.grade("1", "refused");
    assert_eq!(refused["status"], "fail", "{refused}");
    assert_eq!(
        refused["rationale"],
        "TypeError: NetworkError when attempting to fetch resource"
    );
    // Only the granted grader's request reached the server.
    assert_eq!(requests.try_iter().count(), 1);
}
