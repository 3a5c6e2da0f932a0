//! Fresh-instance pack calls per second: an example pack's grader against the floor of a
//! grader that returns a constant, on one thread and on every core; and, when they are built
//! (`examples/packs-c/build.sh`, `examples/build-interp-packs.sh`), the C pack's
//! `contains_answer` and the Python and JavaScript example packs' graders doing the same work as
//! the Rust one (parse a tool call's JSON arguments and check them).
//!
//! The floor is the fastest of the constant graders: the C pack `empty` (`examples/packs-c/
//! floor/empty.c`, a component that reads nothing) when it is built, else the Rust test guest
//! `constant`. The last two columns are each grader's time per call over the floor's, on one
//! thread (`x floor 1`) and on every core (`x floor`).
//!
//! Each row is measured in five rounds, the rows taking turns, and each figure is the row's
//! median round: the ratio to the floor then compares measurements made in the same spells of a
//! shared machine.
//!
//! `cargo bench -p gavel --bench pack_calls` (add `-- 200000` for more calls per row and round;
//! the interpreter packs, a thousand times slower per call, run for about three seconds a row
//! in all).

use std::path::Path;
use std::time::Instant;

use gavel::grade::pack::{Limits, PackGrader, PackHost, PackSpec};
use gavel::input::sample::{Sample, SampleId, Texts};
use gavel::input::trajectory::{Content, Event, ToolCall, Trajectory};
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
        allow: None,
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

/// A row's figures: name, calls/s on one thread and on every core, fuel and peak memory.
type Measured<'r> = (&'r String, f64, f64, u64, f64);

/// Rounds of measurement: each row is measured once a round, the rows taking turns.
const ROUNDS: usize = 5;

/// The middle value (the upper middle one of an even count).
fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    values[values.len() / 2]
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
    println!(
        "fresh-instance pack calls, up to {calls} calls per row and round, {cores} cores, \
         median of {ROUNDS} rounds"
    );
    println!(
        "{:<30} {:>12} {:>14} {:>12} {:>12} {:>10} {:>9} {:>9}",
        "grader",
        "1 thread /s",
        "all cores /s",
        "µs/call (1)",
        "fuel/call",
        "peak MiB",
        "x floor 1",
        "x floor"
    );
    let (sample, trajectory) = sample();
    let counts: Vec<usize> = rows
        .iter()
        .map(|(_, grader)| calls_for(grader, 3.0 / ROUNDS as f64, calls))
        .collect();
    // Every row is measured once a round, the rows taking turns, so that a slow spell of the
    // machine falls on the graders and their floor alike; each figure is a row's median round.
    let mut rounds: Vec<(Vec<f64>, Vec<f64>)> = vec![(Vec::new(), Vec::new()); rows.len()];
    for _ in 0..ROUNDS {
        for (((_, grader), &n), (one, all)) in rows.iter().zip(&counts).zip(&mut rounds) {
            one.push(measure(grader, 1, n));
            all.push(measure(grader, cores, n));
        }
    }
    let mut measured = Vec::with_capacity(rows.len());
    for ((name, grader), (one, all)) in rows.iter().zip(rounds) {
        let (one, all) = (median(one), median(all));
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
    let floor = |rate: fn(&Measured) -> f64| {
        measured
            .iter()
            .filter(|m| m.0.contains("(floor)"))
            .map(rate)
            .fold(0.0, f64::max)
    };
    let (floor_one, floor_all) = (floor(|m| m.1), floor(|m| m.2));
    for (name, one, all, fuel, peak) in &measured {
        println!(
            "{name:<30} {one:>12.0} {all:>14.0} {:>12.1} {fuel:>12} {peak:>10.1} {:>9.2} {:>9.2}",
            1e6 / one,
            floor_one / one,
            floor_all / all
        );
    }
}
