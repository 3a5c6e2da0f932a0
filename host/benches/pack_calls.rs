//! Fresh-instance pack calls per second: an example pack's grader against the floor of a
//! grader that returns a constant, on one thread and on every core; and, when they are built
//! (`examples/packs-c/build.sh`, `examples/build-interp-packs.sh`), the C pack's
//! `contains_answer` and the Python and JavaScript example packs' graders doing the same work as
//! the Rust one (parse a tool call's JSON arguments and check them).
//!
//! The floor is the fastest of the constant graders: the C pack `empty` (`examples/packs-c/
//! floor/empty.c`, a component that reads nothing) when it is built, else the Rust test guest
//! `constant`. The last column is each grader's time per call, on every core, over the floor's.
//!
//! `cargo bench -p gavel --bench pack_calls` (add `-- 200000` for more calls per row; the
//! interpreter packs, a thousand times slower per call, run for about three seconds a row).

use std::path::Path;
use std::time::Instant;

use gavel::pack::{Limits, PackGrader, PackHost, PackSpec};
use gavel::sample::{Sample, SampleId, Texts};
use gavel::trajectory::{Content, Event, ToolCall, Trajectory};
use serde_json::Value;

/// The allocator `gavel` itself runs with, so that calls are measured as a run makes them.
#[global_allocator]
static ALLOCATOR: gavel::alloc::MiMalloc = gavel::alloc::MiMalloc;

fn grader(host: &PackHost, path: &str, function: &str) -> PackGrader {
    configured(host, path, function, Value::Null)
}

fn configured(host: &PackHost, path: &str, function: &str, config: Value) -> PackGrader {
    let spec = PackSpec {
        path: path.into(),
        sha256: None,
        limits: None,
    };
    host.load(function, &spec, Path::new("/"), &Limits::default())
        .and_then(|pack| pack.grader(function, &config))
        .unwrap_or_else(|e| panic!("{e}"))
}

/// An example pack built by its own `build.sh`, if it has been.
fn interpreter_pack(dir: &str) -> Option<String> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../examples")
        .join(dir)
        .join("target/pack.wasm");
    path.is_file().then(|| path.display().to_string())
}

fn sample() -> (Sample<'static>, Trajectory<'static>) {
    let sample = Sample {
        id: Some(SampleId::Int(7)),
        input: Some(Texts::One("Find a flight from SFO to JFK".into())),
        ground_truth: Some(Texts::One("UA 15".to_string())),
        ..Sample::default()
    };
    let trajectory = Trajectory {
        turns: vec![vec![
            Event::User {
                content: Content::Text("Find a flight from SFO to JFK".into()),
            },
            Event::ToolCall(ToolCall {
                id: "call-1".into(),
                name: "search_flights".into(),
                arguments: r#"{"from": "SFO", "to": "JFK", "date": "2026-12-01"}"#.into(),
                failed: false,
            }),
            Event::Assistant {
                content: Content::Text("UA 15 leaves at 08:00.".into()),
            },
        ]],
        ..Trajectory::default()
    };
    (sample, trajectory)
}

/// Calls per second with `threads` threads sharing `calls` calls.
fn measure(grader: &PackGrader, threads: usize, calls: usize) -> f64 {
    let (sample, trajectory) = sample();
    let per_thread = calls / threads;
    let start = Instant::now();
    std::thread::scope(|scope| {
        for _ in 0..threads {
            scope.spawn(|| {
                for _ in 0..per_thread {
                    let grade = grader.grade(&sample, &trajectory, "UA 15");
                    assert_ne!(grade.status, gavel::grade::Status::Error, "{grade:?}");
                }
            });
        }
    });
    (per_thread * threads) as f64 / start.elapsed().as_secs_f64()
}

/// Enough calls for about `seconds` on one thread, judged from a few, within `[100, max]`.
fn calls_for(grader: &PackGrader, seconds: f64, max: usize) -> usize {
    let per_second = measure(grader, 1, 20);
    ((per_second * seconds) as usize).clamp(100, max)
}

fn main() {
    let calls: usize = std::env::args()
        .skip(1)
        .find_map(|arg| arg.parse().ok())
        .unwrap_or(50_000);
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let cache = std::env::temp_dir().join("gavel-bench-pack-cache");
    let host = PackHost::new(&cache).unwrap_or_else(|e| panic!("{e}"));
    let mut rows = vec![
        (
            "rust constant.one (floor)".to_string(),
            grader(&host, gavel_test_artifacts::guests::CONSTANT, "one"),
        ),
        (
            "rust flight-args.search_args".to_string(),
            grader(
                &host,
                gavel_test_artifacts::packs::FLIGHT_ARGS,
                "search_args",
            ),
        ),
    ];
    let c_build = Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/packs-c/build");
    for (file, name, function) in [
        ("empty.wasm", "c empty.pass (floor)", "pass"),
        (
            "c_graders.wasm",
            "c c-graders.contains_answer",
            "contains_answer",
        ),
    ] {
        let pack = c_build.join(file);
        match pack.to_str().filter(|_| pack.is_file()) {
            Some(path) => rows.push((name.to_string(), grader(&host, path, function))),
            None => println!("{name}: not built, skipped (examples/packs-c/build.sh builds it)"),
        }
    }
    let interpreters = [
        (
            "packs-python",
            "python tool_args_subset",
            "tool_args_subset",
            serde_json::json!({"tool": "search_flights", "args": {"from": "SFO"}}),
        ),
        ("packs-js", "js no_null_args", "no_null_args", Value::Null),
    ];
    for (dir, name, function, config) in interpreters {
        match interpreter_pack(dir) {
            // The first load compiles the component (tens of seconds); the cache keeps it.
            Some(path) => rows.push((name.to_string(), configured(&host, &path, function, config))),
            None => {
                println!("{name}: not built, skipped (examples/build-interp-packs.sh builds it)")
            }
        }
    }
    for (_, grader) in &rows {
        measure(grader, 1, 20);
    }
    println!("fresh-instance pack calls, up to {calls} calls per row, {cores} cores");
    println!(
        "{:<30} {:>12} {:>14} {:>12} {:>12} {:>10} {:>9}",
        "grader", "1 thread /s", "all cores /s", "µs/call (1)", "fuel/call", "peak MiB", "x floor"
    );
    let (sample, trajectory) = sample();
    let mut measured = Vec::with_capacity(rows.len());
    for (name, grader) in &rows {
        let n = calls_for(grader, 3.0, calls);
        let one = measure(grader, 1, n);
        let all = measure(grader, cores, n);
        let sandbox = grader
            .grade(&sample, &trajectory, "UA 15")
            .details()
            .metadata
            .get("sandbox")
            .cloned()
            .unwrap_or_default();
        let fuel = sandbox["fuel_used"].as_u64().unwrap_or(0);
        let peak = sandbox["peak_memory_bytes"].as_u64().unwrap_or(0) as f64 / f64::from(1 << 20);
        measured.push((name, one, all, fuel, peak));
    }
    let floor = measured
        .iter()
        .filter(|(name, ..)| name.contains("(floor)"))
        .map(|&(_, _, all, ..)| all)
        .fold(0.0, f64::max);
    for (name, one, all, fuel, peak) in measured {
        println!(
            "{name:<30} {one:>12.0} {all:>14.0} {:>12.1} {fuel:>12} {peak:>10.1} {:>9.2}",
            1e6 / one,
            floor / all
        );
    }
}
