//! The sandbox against hostile packs: every attack ends in an `error` grade with its exact,
//! stable reason, and the same pack keeps grading normally afterwards.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use gavel::grade::pack::{
    FunctionKind, GuestError, Limits, Pack, PackError, PackHost, PackSpec, Writes,
};
use gavel::grade::{Grade, Status};
use gavel::input::sample::{Sample, SampleId, Texts};
use gavel::input::trajectory::{Content, Event, ToolCall, Trajectory};
use gavel_test_artifacts::guests;
use serde_json::{Value, json};

fn cache_dir() -> &'static Path {
    static DIR: OnceLock<tempfile::TempDir> = OnceLock::new();
    DIR.get_or_init(|| tempfile::tempdir().expect("temporary directory"))
        .path()
}

fn host() -> PackHost {
    PackHost::new(cache_dir()).expect("pack host")
}

fn spec(path: &Path, limits: Option<Limits>) -> PackSpec {
    PackSpec {
        path: path.to_path_buf(),
        sha256: None,
        limits,
        allow: None,
    }
}

fn adversary_with(limits: Limits) -> Pack {
    adversary_writing(Writes::Few, limits)
}

/// The adversary in the instance pool for components that write as `writes` says.
fn adversary_writing(writes: Writes, limits: Limits) -> Pack {
    host()
        .load_writing(
            writes,
            "adversary",
            &spec(Path::new(guests::ADVERSARY), Some(limits)),
            Path::new("/"),
            &Limits::default(),
        )
        .expect("adversary pack loads")
}

fn adversary() -> &'static Pack {
    static PACK: OnceLock<Pack> = OnceLock::new();
    PACK.get_or_init(|| adversary_with(Limits::default()))
}

fn sample() -> Sample<'static> {
    Sample {
        id: Some(SampleId::Str("s-1".to_string())),
        ground_truth: Some(Texts::One("42".to_string())),
        metadata: json!({"topic": "math"})
            .as_object()
            .cloned()
            .unwrap_or_default(),
        ..Sample::default()
    }
}

fn trajectory() -> Trajectory<'static> {
    Trajectory {
        turns: vec![
            vec![
                Event::User {
                    content: Content::Text("what is 6 x 7?".into()),
                },
                Event::ToolCall(ToolCall {
                    id: "c1".into(),
                    name: "calculator".into(),
                    arguments: r#"{"expr": "6*7"}"#.into(),
                    failed: false,
                }),
            ],
            vec![Event::Assistant {
                content: Content::Parts(vec!["it is".into(), "42".into()]),
            }],
        ],
        output: Some("42".into()),
        ..Trajectory::default()
    }
}

fn grade_with(pack: &Pack, grader: &str, submission: &str) -> Grade {
    pack.grader(grader, &Value::Null)
        .expect("grader exists")
        .grade(&sample(), &trajectory(), submission)
}

fn sandbox_meta<'a>(grade: &'a Grade, key: &str) -> Option<&'a Value> {
    grade.details().metadata.get("sandbox")?.get(key)
}

/// Runs `attack`, asserts it failed with exactly `reason`, then asserts the same pack still
/// grades normally.
fn assert_contained(pack: &Pack, attack: &str, reason: &str) -> Grade {
    let grade = grade_with(pack, attack, "attack");
    assert_eq!(grade.status, Status::Error, "{attack}: {grade:?}");
    assert_eq!(grade.rationale, reason, "{attack}");
    assert_eq!(grade.score, 0.0);
    assert_eq!(grade.submission, "attack");
    let after = grade_with(pack, "ok", "still fine");
    assert_eq!(after.status, Status::Pass, "after {attack}: {after:?}");
    assert_eq!(after.rationale, "still fine");
    grade
}

#[test]
fn describes_itself_and_its_wit_version() {
    let info = adversary().info();
    assert_eq!(info.name, "adversary");
    assert_eq!(info.wit_version, "0.1.0");
    let kind = |name: &str| {
        info.functions
            .iter()
            .find(|f| f.name == name)
            .map(|f| f.kind)
    };
    assert_eq!(kind("ok"), Some(FunctionKind::Grader));
    assert_eq!(kind("echo"), Some(FunctionKind::Extractor));

    let inspected = PackHost::uncached()
        .inspect(Path::new(guests::ADVERSARY))
        .expect("inspect");
    assert_eq!(&inspected, info);
    let text = inspected.to_string();
    assert!(
        text.starts_with("adversary 0.0.0 (gavel:grader@0.1.0)\n"),
        "{text}"
    );
    assert!(text.contains("\n  extractor  echo "), "{text}");
}

#[test]
fn a_well_behaved_grade_carries_its_cost() {
    let grade = grade_with(adversary(), "ok", "hello");
    assert_eq!((grade.status, grade.score), (Status::Pass, 1.0));
    assert_eq!(grade.rationale, "hello");
    assert_eq!(grade.submission, "hello");
    let fuel = sandbox_meta(&grade, "fuel_used")
        .and_then(Value::as_u64)
        .unwrap();
    assert!(fuel > 0 && fuel < 1_000_000, "{fuel}");
    let peak = sandbox_meta(&grade, "peak_memory_bytes")
        .and_then(Value::as_u64)
        .unwrap();
    assert!(peak >= 65_536, "{peak}");
}

#[test]
fn the_sample_and_trajectory_arrive_whole() {
    let grade = grade_with(adversary(), "describe-sample", "");
    assert_eq!(
        grade.rationale,
        r#"id=s-1 ground_truth=42 turns=2 events=3 output=42 metadata={"topic":"math"}"#
    );
}

#[test]
fn infinite_loop_runs_out_of_fuel() {
    let grade = assert_contained(adversary(), "spin", "fuel exhausted");
    assert_eq!(
        sandbox_meta(&grade, "fuel_used").and_then(Value::as_u64),
        Some(gavel::grade::pack::DEFAULT_FUEL)
    );
}

#[test]
fn infinite_loop_with_endless_fuel_hits_the_deadline() {
    let pack = adversary_with(Limits {
        fuel: Some(u64::MAX / 2),
        timeout_ms: Some(100),
        ..Limits::default()
    });
    let start = Instant::now();
    let grade = assert_contained(&pack, "spin", "deadline exceeded");
    assert!(start.elapsed() < Duration::from_secs(10));
    // Fuel burned before a wall-clock deadline depends on the machine: not reported.
    assert_eq!(sandbox_meta(&grade, "fuel_used"), None);
}

#[test]
fn memory_bomb_hits_the_memory_limit() {
    let pack = adversary_with(Limits {
        memory_mb: Some(16),
        ..Limits::default()
    });
    let grade = assert_contained(&pack, "memory-bomb", "memory limit exceeded");
    let peak = sandbox_meta(&grade, "peak_memory_bytes")
        .and_then(Value::as_u64)
        .unwrap();
    assert!(peak <= 16 << 20 && peak > 8 << 20, "{peak}");
}

#[test]
fn recursion_overflows_either_stack_without_harm() {
    assert_contained(
        adversary(),
        "shadow-recursion",
        "guest trapped: out-of-bounds memory access",
    );
    assert_contained(
        adversary(),
        "native-recursion",
        "guest trapped: stack overflow",
    );
}

#[test]
fn huge_return_values_are_refused() {
    assert_contained(adversary(), "huge-rationale", "output too large");
    let huge = adversary()
        .extractor("huge", &Value::Null)
        .unwrap()
        .extract(&sample(), &trajectory());
    assert_eq!(huge, Err(GuestError::OutputTooLarge));
    // The same output passes under a limit that allows it.
    let roomy = adversary_with(Limits {
        output_kb: Some(4096),
        ..Limits::default()
    });
    assert_eq!(
        grade_with(&roomy, "huge-rationale", "").status,
        Status::Pass
    );
}

/// Printing past the limit is cut without the guest noticing: one that prints without end runs
/// on until its fuel is gone (with a deadline that cannot come first), and says it was cut.
#[test]
fn stdout_flood_is_cut_unnoticed() {
    let pack = adversary_with(Limits {
        timeout_ms: Some(600_000),
        ..Limits::default()
    });
    let grade = assert_contained(&pack, "stdout-flood", "fuel exhausted");
    assert_eq!(sandbox_meta(&grade, "stdout_cut"), Some(&json!(true)));
    assert_eq!(sandbox_meta(&grade, "stderr_cut"), None);
    assert_eq!(sandbox_meta(&grade, "stderr"), None);
}

#[test]
fn traps_panics_and_exit_are_error_grades() {
    assert_contained(adversary(), "unreachable", "guest trapped: unreachable");
    let panic = assert_contained(adversary(), "panic", "guest trapped: unreachable");
    let stderr = sandbox_meta(&panic, "stderr")
        .and_then(Value::as_str)
        .unwrap();
    assert!(stderr.contains("grader bug on \"attack\""), "{stderr}");
    let exit = assert_contained(adversary(), "exit", "guest exited");
    // WASI p2 `exit` carries only success or failure.
    assert_eq!(sandbox_meta(&exit, "exit_code"), Some(&json!(1)));
}

#[test]
fn invalid_results_are_error_grades() {
    assert_contained(adversary(), "nan", "invalid score: NaN");
    assert_contained(
        adversary(),
        "too-high",
        "invalid score: 1.5 is out of range [0, 1]",
    );
    assert_contained(
        adversary(),
        "bad-metadata",
        "invalid metadata: not a JSON object",
    );
    assert_contained(
        adversary(),
        "refuse",
        "guest returned error: cannot grade \"attack\"",
    );
}

#[test]
fn the_guest_sees_no_files_env_network_or_real_time_and_fixed_randomness() {
    let first = grade_with(adversary(), "probe", "");
    assert_eq!(first.status, Status::Pass, "{first:?}");
    let seen: Value = serde_json::from_str(&first.rationale).unwrap();
    assert_eq!(seen["file"], "denied");
    assert_eq!(seen["dir"], "denied");
    assert_eq!(seen["env"], 0);
    assert_eq!(seen["args"], 0);
    assert_eq!(seen["wall"], 1_700_000_000);
    // An hour's sleep returns at once, the guest's clock moved on by the hour it asked for (the
    // test would otherwise wait an hour).
    assert_eq!(seen["slept_ms"], 3_600_000);
    assert_eq!(seen["tcp"], "denied");
    assert!(seen["random"].as_u64().is_some());
    let second = grade_with(adversary(), "probe", "");
    assert_eq!(first, second, "randomness and clocks reproduce");
}

/// In both instance pools (packs', and the interpreter's, which keeps 32 MiB of a slot
/// resident), a call finds nothing an earlier call wrote: the slot's reset restores every page.
#[test]
fn a_secret_left_by_one_call_is_gone_in_the_next() {
    for writes in [Writes::Few, Writes::Scattered] {
        // Scanning all of memory takes more than the default fuel and, on a busy machine, more
        // than the default deadline. This tests isolation, not speed: the fuel is several times
        // what the scan counts (a count that does not depend on the machine), and the deadline
        // is the longest a suite may set, ten minutes, so that only a scan that never ends
        // meets it.
        let pack = adversary_writing(
            writes,
            Limits {
                fuel: Some(2_000_000_000),
                timeout_ms: Some(600_000),
                ..Limits::default()
            },
        );
        let found = |grader: &str| {
            let grade = grade_with(&pack, grader, "top-secret-42");
            assert_eq!(grade.status, Status::Pass, "{writes:?}: {grade:?}");
            serde_json::from_str::<Value>(&grade.rationale).unwrap()
        };
        // The probe can find a secret: in the call that left it.
        let control = found("leak-and-find");
        assert!(
            control["matches"].as_u64().unwrap() > 0,
            "{writes:?}: {control}"
        );

        assert_eq!(
            grade_with(&pack, "leak-secret", "top-secret-42").status,
            Status::Pass
        );
        assert_eq!(
            found("find-secret"),
            json!({"heap_secret": 0, "grown_dirty": 0, "matches": 0}),
            "{writes:?}"
        );
    }
}

#[test]
fn same_pack_same_data_same_grades() {
    let grades: Vec<Grade> = (0..3)
        .map(|_| grade_with(adversary(), "describe-sample", "x"))
        .collect();
    assert_eq!(grades[0], grades[1]);
    assert_eq!(grades[1], grades[2]);
}

#[test]
fn attacks_on_other_threads_do_not_disturb_honest_calls() {
    let pack = adversary();
    let attacks = [
        "spin",
        "memory-bomb",
        "panic",
        "native-recursion",
        "stdout-flood",
        "exit",
    ];
    std::thread::scope(|scope| {
        for attack in attacks {
            scope.spawn(move || {
                for _ in 0..3 {
                    assert_eq!(grade_with(pack, attack, "a").status, Status::Error);
                }
            });
        }
        for t in 0..4 {
            scope.spawn(move || {
                for i in 0..25 {
                    let submission = format!("honest {t}/{i}");
                    let grade = grade_with(pack, "ok", &submission);
                    assert_eq!(grade.status, Status::Pass);
                    assert_eq!(grade.rationale, submission);
                }
            });
        }
    });
}

#[test]
fn extractors_return_text_nothing_or_a_reason() {
    let extract = |name: &str| {
        adversary()
            .extractor(name, &json!({}))
            .unwrap()
            .extract(&sample(), &trajectory())
    };
    assert_eq!(extract("echo"), Ok(Some("42".to_string())));
    assert_eq!(extract("nothing"), Ok(None));
}

#[test]
fn functions_are_checked_before_any_sample() {
    let pack = adversary();
    let err = pack.grader("nope", &Value::Null).err().unwrap();
    let message = err.to_string();
    assert!(
        message.starts_with("pack `adversary` has no function `nope`; it has: ok, spin, "),
        "{message}"
    );
    let err = pack.grader("echo", &Value::Null).err().unwrap();
    assert_eq!(
        err.to_string(),
        "pack `adversary`: `echo` is an extractor, not a grader"
    );
    let err = pack.extractor("ok", &Value::Null).err().unwrap();
    assert_eq!(
        err.to_string(),
        "pack `adversary`: `ok` is a grader, not an extractor"
    );
    let err = pack.grader("ok", &json!({"reject": true})).err().unwrap();
    assert_eq!(
        err.to_string(),
        "pack `adversary`: config of `ok` rejected: ok: `reject` is not a valid option"
    );
    let err = pack.grader("ok", &json!([1])).err().unwrap();
    assert!(matches!(err, PackError::ConfigRejected { .. }), "{err}");
}

fn load_error(path: &Path, sha256: Option<String>) -> String {
    let spec = PackSpec {
        path: path.to_path_buf(),
        sha256,
        limits: None,
        allow: None,
    };
    match host().load("p", &spec, Path::new("/"), &Limits::default()) {
        Ok(_) => panic!("{} loaded", path.display()),
        Err(err) => err.to_string(),
    }
}

fn temp_file(name: &str, bytes: &[u8]) -> PathBuf {
    let path = cache_dir().join(name);
    std::fs::write(&path, bytes).unwrap();
    path
}

#[test]
fn a_core_module_is_refused() {
    let path = temp_file("core.wasm", b"\0asm\x01\0\0\0");
    assert_eq!(
        load_error(&path, None),
        format!(
            "pack `p`: {} is a core WebAssembly module, not a component (build for \
             wasm32-wasip2, or wrap it with `wasm-tools component new`)",
            path.display()
        )
    );
    let path = temp_file("text.wasm", b"(component)");
    assert!(load_error(&path, None).ends_with("is not a WebAssembly binary"));
    assert!(
        load_error(Path::new("/no/such/pack.wasm"), None)
            .starts_with("pack `p`: cannot read /no/such/pack.wasm: ")
    );
}

#[test]
fn a_component_for_another_wit_version_is_refused() {
    let path = Path::new(guests::FUTURE_WIT);
    assert_eq!(
        load_error(path, None),
        format!(
            "pack `p`: {} targets gavel:grader@9.0.0, which this gavel does not support \
             (supported: gavel:grader@0.1.x, gavel:grader@0.2.x)",
            path.display()
        )
    );
}

#[test]
fn the_pinned_sha256_is_enforced() {
    let path = Path::new(guests::CONSTANT);
    let bytes = std::fs::read(path).unwrap();
    let actual: String = {
        use sha2::Digest;
        sha2::Sha256::digest(&bytes)
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect()
    };
    let wrong = "0".repeat(64);
    assert_eq!(
        load_error(path, Some(wrong.clone())),
        format!(
            "pack `p`: {} does not match its pinned sha256: expected {wrong}, the file has {actual}",
            path.display()
        )
    );
    assert_eq!(
        load_error(path, Some("abc".to_string())),
        "pack `p`: sha256 `abc` is not 64 hexadecimal digits"
    );
    let pinned = PackSpec {
        path: path.to_path_buf(),
        sha256: Some(actual.to_uppercase()),
        limits: None,
        allow: None,
    };
    let pack = host().load("p", &pinned, Path::new("/"), &Limits::default());
    assert_eq!(pack.unwrap().info().name, "constant");
}

#[test]
fn compiled_components_are_cached_on_disk() {
    let dir = tempfile::tempdir().unwrap();
    let spec = spec(Path::new(guests::CONSTANT), None);
    let load = || {
        PackHost::new(dir.path())
            .unwrap()
            .load("c", &spec, Path::new("/"), &Limits::default())
            .unwrap()
    };
    load();
    // Compiled packs are kept in the cache folder's `packs/`.
    let artifacts: Vec<_> = std::fs::read_dir(dir.path().join("packs"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert_eq!(artifacts.len(), 1, "{artifacts:?}");
    assert_eq!(artifacts[0].extension().unwrap(), "cwasm");
    let modified = std::fs::metadata(&artifacts[0])
        .unwrap()
        .modified()
        .unwrap();
    let pack = load();
    assert_eq!(
        std::fs::metadata(&artifacts[0])
            .unwrap()
            .modified()
            .unwrap(),
        modified,
        "the second load reads the artifact instead of compiling again"
    );
    let grade = pack
        .grader("one", &Value::Null)
        .unwrap()
        .grade(&sample(), &trajectory(), "");
    assert_eq!(grade.status, Status::Pass);
    // The artifact is mapped while a pack built from it lives.
    drop(pack);

    // A damaged artifact is compiled again rather than trusted.
    std::fs::write(&artifacts[0], b"garbage").unwrap();
    let pack = load();
    assert_eq!(pack.info().name, "constant");
}

#[test]
fn packs_are_send_and_sync() {
    fn shared<T: Send + Sync>() {}
    shared::<PackHost>();
    shared::<Pack>();
    shared::<gavel::grade::pack::PackGrader>();
    shared::<gavel::grade::pack::PackExtractor>();
}
