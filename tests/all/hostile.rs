//! The host around the sandbox against hostile packs: planted compiled code, memory spread over
//! many memories, compile bombs, a describe that lists too much, pack files that are not
//! files, texts that steer the terminal, a pack that hogs the instance pool, and a pack that
//! spins beside a judge. Each attack is contained with its stable reason, within bounded time,
//! and the honest grades beside it do not change.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::{Duration, Instant};

use crate::common::{Workspace, stderr, stdout};
use crate::hostile_packs as hostile;
use crate::openai_server;
use gavel::grade::pack::{Limits, Pack, PackError, PackHost, PackSpec};
use gavel::grade::{Grade, Status};
use gavel::input::sample::Sample;
use gavel::input::trajectory::Trajectory;
use gavel_test_artifacts::guests;
use hostile::HostilePack;
use serde_json::{Value, json};

/// Runs `gavel` in `ws` with its own cache folder and its own key folder.
fn gavel(ws: &Workspace, args: &[&str], vars: &[(&str, &str)]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_gavel"))
        .args(args)
        .current_dir(ws.dir.path())
        .env("GAVEL_CACHE_DIR", ws.path(".cache"))
        .env("XDG_CONFIG_HOME", ws.path("config"))
        .env_remove("GAVEL_COMPILE_TIMEOUT_S")
        .env_remove("GAVEL_COMPILE_MEMORY_MB")
        .envs(vars.iter().copied())
        .output()
        .expect("gavel runs")
}

fn load(path: &Path, limits: Limits) -> Result<Pack, PackError> {
    let spec = PackSpec {
        path: path.to_path_buf(),
        sha256: None,
        limits: Some(limits),
        allow: None,
    };
    PackHost::uncached().load("hostile", &spec, Path::new("/"), &Limits::default())
}

fn grade(pack: &Pack, function: &str) -> Grade {
    let sample = Sample::default();
    let trajectory = Trajectory::default();
    pack.grader(function, &Value::Null)
        .expect("the grader exists")
        .grade(&sample, &trajectory, "x")
}

fn suite(ws: &Workspace, packs: &str, graders: &str, rows: usize) {
    let rows: Vec<Value> = (0..rows)
        .map(|i| {
            json!({"id": i, "input": "q", "ground_truth": "a", "trajectory": [[
                {"id": "m1", "date": "2026-01-01T00:00:00Z", "message_type": "user_message",
                 "content": "q"},
                {"id": "m2", "date": "2026-01-01T00:00:01Z", "message_type": "assistant_message",
                 "content": "a"}
            ]]})
        })
        .collect();
    ws.write_rows("data.jsonl", &rows);
    ws.write(
        "suite.yaml",
        &format!("name: hostile\ndataset: data.jsonl\npacks:\n{packs}graders:\n{graders}"),
    );
}

fn artifacts(dir: &Path) -> Vec<PathBuf> {
    let mut found: Vec<PathBuf> = std::fs::read_dir(dir)
        .expect("the cache folder exists")
        .map(|e| e.expect("readable").path())
        .collect();
    found.sort();
    found
}

#[test]
fn a_planted_or_damaged_compiled_artifact_is_compiled_again_never_run() {
    let ws = Workspace::new();
    suite(
        &ws,
        &format!("  c:\n    path: {}\n", guests::CONSTANT),
        "  one: {kind: tool, function: c.one}\n",
        3,
    );
    let first = gavel(&ws, &["run", "suite.yaml", "-o", "first", "-q"], &[]);
    assert_eq!(first.status.code(), Some(0), "{}", stderr(&first));
    let honest = std::fs::read(ws.path("first/results.jsonl")).unwrap();
    let cache = ws.path(".cache/packs");
    let [victim] = artifacts(&cache).try_into().expect("one artifact");

    // An artifact compiled by someone else (another key) from another pack, planted under the
    // victim's name: valid native code, but not authenticated by this user's key.
    let elsewhere = Workspace::new();
    let inspected = gavel(&elsewhere, &["inspect", guests::ADVERSARY], &[]);
    assert_eq!(inspected.status.code(), Some(0), "{}", stderr(&inspected));
    let [foreign] = artifacts(&elsewhere.path(".cache/packs"))
        .try_into()
        .expect("one artifact");
    std::fs::copy(&foreign, &victim).unwrap();
    let planted = gavel(&ws, &["run", "suite.yaml", "-o", "planted", "-q"], &[]);
    assert_eq!(planted.status.code(), Some(0), "{}", stderr(&planted));
    assert!(
        stderr(&planted).contains(&format!(
            "warning: pack `c`: the compiled artifact {} was not used (its authentication tag \
             does not match its content); compiling the pack again",
            victim.display()
        )),
        "{}",
        stderr(&planted)
    );
    assert_eq!(
        std::fs::read(ws.path("planted/results.jsonl")).unwrap(),
        honest
    );

    // One flipped byte in the middle of the code: refused the same way, no crash.
    let mut bytes = std::fs::read(&victim).unwrap();
    let middle = bytes.len() / 2;
    bytes[middle] ^= 0x40;
    std::fs::write(&victim, &bytes).unwrap();
    let flipped = gavel(&ws, &["run", "suite.yaml", "-o", "flipped", "-q"], &[]);
    assert_eq!(flipped.status.code(), Some(0), "{}", stderr(&flipped));
    assert!(
        stderr(&flipped).contains("authentication tag"),
        "{}",
        stderr(&flipped)
    );
    assert_eq!(
        std::fs::read(ws.path("flipped/results.jsonl")).unwrap(),
        honest
    );

    // The key lives outside the cache folder, readable by its owner only; the cache folder
    // holds the artifact alone (no temporary file left behind).
    use std::os::unix::fs::PermissionsExt;
    let key = ws.path("config/gavel/pack-cache.key");
    let mode = std::fs::metadata(&key).unwrap().permissions().mode();
    assert_eq!(mode & 0o777, 0o600);
    assert_eq!(artifacts(&cache), [victim]);
}

#[test]
fn without_a_cache_folder_nothing_is_cached_in_the_working_directory() {
    let ws = Workspace::new();
    let output = Command::new(env!("CARGO_BIN_EXE_gavel"))
        .args(["inspect", guests::CONSTANT])
        .current_dir(ws.dir.path())
        .env_remove("HOME")
        .env_remove("XDG_CACHE_HOME")
        .env_remove("XDG_CONFIG_HOME")
        .env_remove("GAVEL_CACHE_DIR")
        .output()
        .expect("gavel runs");
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert!(
        stdout(&output).starts_with("constant "),
        "{}",
        stdout(&output)
    );
    assert!(
        stderr(&output).starts_with("notice: no cache folder"),
        "{}",
        stderr(&output)
    );
    let left: Vec<_> = std::fs::read_dir(ws.dir.path()).unwrap().collect();
    assert!(left.is_empty(), "{left:?}");
}

#[test]
fn every_memory_of_a_call_counts_against_one_budget() {
    let dir = tempfile::tempdir().unwrap();
    let limits = Limits {
        memory_mb: Some(16),
        ..Limits::default()
    };
    // Seven core instances beside the pack's, each writing 3 MiB of its own memory when
    // instantiated: each memory well under the 16 MiB budget, the call over it.
    let hog = HostilePack {
        hogs: vec![48; 7],
        ..HostilePack::default()
    }
    .write(dir.path(), "hog");
    let start = Instant::now();
    let err = load(&hog, limits.clone()).err().expect("refused");
    assert!(start.elapsed() < Duration::from_secs(30));
    assert_eq!(
        err.to_string(),
        "pack `hostile`: describe failed: memory limit exceeded"
    );

    // Four of them fit: the peak reported is the sum of every memory.
    let fits = HostilePack {
        hogs: vec![48; 4],
        ..HostilePack::default()
    }
    .write(dir.path(), "fits");
    let pack = load(&fits, limits).unwrap();
    let g = grade(&pack, "ok");
    assert_eq!((g.status, g.rationale.as_ref()), (Status::Pass, "fine"));
    let peak = g.details().metadata["sandbox"]["peak_memory_bytes"]
        .as_u64()
        .unwrap();
    assert!(peak > 12 << 20 && peak <= 16 << 20, "{peak}");
}

#[test]
fn compile_bombs_stop_at_the_compile_limits() {
    let ws = Workspace::new();
    let nested = ws.path("nested.wasm");
    std::fs::write(&nested, hostile::nested_bomb(30, 2)).unwrap();
    let locals = ws.path("locals.wasm");
    std::fs::write(&locals, hostile::locals_bomb(20_000)).unwrap();
    let memory = [("GAVEL_COMPILE_MEMORY_MB", "1024")];
    let time = [("GAVEL_COMPILE_TIMEOUT_S", "3")];
    for (bomb, caps, reason) in [
        (
            &nested,
            &memory,
            "its nested components instantiate 1073741824 core instances once inlined; the \
             limit is 50 a component",
        ),
        (
            &locals,
            &time,
            "it took longer than the limit of 3 s (GAVEL_COMPILE_TIMEOUT_S)",
        ),
    ] {
        let start = Instant::now();
        let output = gavel(&ws, &["inspect", bomb.to_str().unwrap()], caps);
        assert!(start.elapsed() < Duration::from_secs(60));
        assert_eq!(output.status.code(), Some(2), "{}", stderr(&output));
        assert_eq!(
            stderr(&output).trim_end(),
            format!(
                "error: pack `{0}`: cannot compile {0}: {reason}",
                bomb.display()
            )
        );
    }
    // Under the default bounds an honest pack compiles as before (a loaded CI machine may
    // need more than the bombs' 3 s for it).
    let honest = gavel(&ws, &["inspect", guests::ADVERSARY], &[]);
    assert_eq!(honest.status.code(), Some(0), "{}", stderr(&honest));
}

#[test]
fn describe_is_capped_and_linear() {
    let dir = tempfile::tempdir().unwrap();
    let named = |n: usize| -> Vec<(Vec<u8>, Vec<u8>)> {
        (0..n)
            .map(|i| (format!("f{i}").into_bytes(), Vec::new()))
            .collect()
    };
    let crowd = HostilePack {
        functions: named(100_000),
        ..HostilePack::default()
    }
    .write(dir.path(), "crowd");
    let start = Instant::now();
    let err = load(&crowd, Limits::default()).err().expect("refused");
    assert!(start.elapsed() < Duration::from_secs(30));
    assert_eq!(
        err.to_string(),
        "pack `hostile`: describe failed: it lists 100000 functions; the limit is 1000"
    );

    let mut functions = named(1_000);
    functions[999].0 = b"f0".to_vec();
    let twice = HostilePack {
        functions,
        ..HostilePack::default()
    }
    .write(dir.path(), "twice");
    let err = load(&twice, Limits::default()).err().expect("refused");
    assert_eq!(
        err.to_string(),
        "pack `hostile`: describe failed: the function `f0` is listed twice"
    );

    let wordy = HostilePack {
        functions: vec![(b"ok".to_vec(), vec![b'w'; 1 << 20])],
        ..HostilePack::default()
    }
    .write(dir.path(), "wordy");
    let err = load(&wordy, Limits::default()).err().expect("refused");
    assert_eq!(
        err.to_string(),
        "pack `hostile`: describe failed: the description of `ok` is 1048576 bytes long; the \
         limit is 1024"
    );
}

#[test]
fn pack_files_are_read_only_when_small_regular_files() {
    let ws = Workspace::new();
    let zero = ws.path("zero.wasm");
    std::os::unix::fs::symlink("/dev/zero", &zero).unwrap();
    let fifo = ws.path("fifo.wasm");
    let made = Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .expect("mkfifo runs");
    assert!(made.success());
    let huge = ws.path("huge.wasm");
    std::fs::File::create(&huge)
        .and_then(|f| f.set_len(1 << 30))
        .unwrap();
    for (path, why) in [
        (&zero, "it is a device, not a regular file"),
        (&fifo, "it is a FIFO, not a regular file"),
        (&huge, "it is larger than the limit of 256 MiB"),
    ] {
        let start = Instant::now();
        let output = gavel(&ws, &["inspect", path.to_str().unwrap()], &[]);
        assert!(start.elapsed() < Duration::from_secs(30));
        assert_eq!(output.status.code(), Some(2), "{}", stderr(&output));
        assert_eq!(
            stderr(&output).trim_end(),
            format!("error: pack `{0}`: cannot read {0}: {why}", path.display())
        );
    }
}

#[test]
fn texts_a_pack_controls_reach_the_terminal_escaped() {
    let ws = Workspace::new();
    let painter = HostilePack {
        name: b"evil\x1b]0;owned\x07".to_vec(),
        version: b"1\x1b[2J".to_vec(),
        functions: vec![(
            b"ok".to_vec(),
            b"\x1b[1;1Hfake output\r\xc2\x9b31m".to_vec(),
        )],
        config_rejection: Some(b"no\x1b[2J\x1b]0;owned\x07".to_vec()),
        ..HostilePack::default()
    }
    .write(ws.dir.path(), "painter");
    // A failing grade's rationale is listed in the run's report.
    let failing = HostilePack {
        score: 0.0,
        rationale: b"bad\x1b[2J\x1b]0;owned\x07".to_vec(),
        ..HostilePack::default()
    }
    .write(ws.dir.path(), "failing");
    let painter = painter.to_str().unwrap();
    let inspected = gavel(&ws, &["inspect", painter], &[]);
    assert_eq!(inspected.status.code(), Some(0), "{}", stderr(&inspected));
    assert_eq!(
        stdout(&inspected),
        "evil\\u{1b}]0;owned\\u{7} 1\\u{1b}[2J (gavel:grader@0.1.0)\n  grader     ok  \
         \\u{1b}[1;1Hfake output\\u{d}\\u{9b}31m\n"
    );
    let listed = gavel(&ws, &["list", "graders", "--pack", painter], &[]);
    assert_eq!(listed.status.code(), Some(0), "{}", stderr(&listed));
    assert!(stdout(&listed).contains("\\u{1b}[1;1Hfake output"));

    suite(
        &ws,
        &format!("  p:\n    path: {painter}\n"),
        "  ok: {kind: tool, function: p.ok}\n",
        2,
    );
    let validated = gavel(&ws, &["validate", "suite.yaml"], &[]);
    assert_eq!(validated.status.code(), Some(2), "{}", stderr(&validated));
    assert!(
        stderr(&validated).contains("config of `ok` rejected: no\\u{1b}[2J\\u{1b}]0;owned\\u{7}"),
        "{}",
        stderr(&validated)
    );

    suite(
        &ws,
        &format!("  f:\n    path: {}\n", failing.display()),
        "  ok: {kind: tool, function: f.ok}\n",
        2,
    );
    let run = gavel(&ws, &["run", "suite.yaml", "-o", "out"], &[]);
    assert!(stdout(&run).contains("bad"), "{}", stdout(&run));
    for output in [&inspected, &listed, &validated, &run] {
        for stream in [&output.stdout, &output.stderr] {
            assert!(
                !stream.iter().any(|&b| b == 0x1b || b == 0x07),
                "{}",
                String::from_utf8_lossy(stream)
            );
        }
    }
}

#[test]
fn a_pack_holding_many_memories_at_high_concurrency_starves_no_other_pack() {
    let ws = Workspace::new();
    // Eight memories per call, in eight core instances.
    let hog = HostilePack {
        hogs: vec![1; 7],
        ..HostilePack::default()
    }
    .write(ws.dir.path(), "hog");
    suite(
        &ws,
        &format!(
            "  hog:\n    path: {}\n  c:\n    path: {}\n",
            hog.display(),
            guests::CONSTANT
        ),
        "  hog: {kind: tool, function: hog.ok}\n  one: {kind: tool, function: c.one}\n",
        2_000,
    );
    let run = |out: &str| {
        let output = gavel(
            &ws,
            &["run", "suite.yaml", "-o", out, "-q", "--concurrency", "200"],
            &[],
        );
        assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
        std::fs::read(ws.path(out).join("results.jsonl")).unwrap()
    };
    let first = run("first");
    for line in ws.results("first") {
        for key in ["hog", "one"] {
            assert_eq!(line["grades"][key]["status"], "pass", "{line}");
        }
    }
    assert_eq!(run("second"), first);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pack_spinning_to_its_deadline_does_not_hold_up_the_judge() {
    let server = openai_server::Server::always(
        openai_server::Reply::verdict(1.0, "good").after(Duration::from_millis(100)),
    )
    .await;
    let ws = Workspace::new();
    suite(
        &ws,
        &format!(
            "  adv:\n    path: {}\n    limits: {{fuel: 1000000000000000, timeout_ms: 1500}}\n",
            guests::ADVERSARY
        ),
        &format!(
            "  judged:\n    kind: rubric\n    prompt: \"{{input}} {{submission}}\"\n    \
             base_url: {}\n    timeout: 1\n    max_retries: 0\n  spin: {{kind: tool, function: \
             adv.spin}}\n",
            server.base_url()
        ),
        4,
    );
    let output = tokio::task::spawn_blocking(move || {
        let output = gavel(
            &ws,
            &["run", "suite.yaml", "-o", "out", "-q", "--concurrency", "1"],
            &[("OPENAI_API_KEY", "sk-test")],
        );
        (output, ws.results("out"))
    })
    .await
    .unwrap();
    let (output, results) = output;
    assert!(output.status.code().is_some(), "{}", stderr(&output));
    assert_eq!(results.len(), 4);
    for line in results {
        assert_eq!(line["grades"]["judged"]["status"], "pass", "{line}");
        assert_eq!(
            line["grades"]["spin"]["rationale"], "deadline exceeded",
            "{line}"
        );
    }
}
