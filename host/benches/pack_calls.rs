//! Fresh-instance pack calls per second: an example pack's grader against the floor of a
//! grader that returns a constant, on one thread and on every core; and the C example pack's
//! grader when `examples/packs-c/build.sh` has built it.
//!
//! `cargo bench -p gavel --bench pack_calls` (add `-- 200000` for more calls per row).

use std::path::Path;
use std::time::Instant;

use gavel::pack::{Limits, PackGrader, PackHost, PackSpec};
use gavel::sample::{Sample, SampleId, Texts};
use gavel::trajectory::{Content, Event, ToolCall, Trajectory};
use serde_json::Value;

fn grader(host: &PackHost, path: &str, function: &str) -> PackGrader {
    let spec = PackSpec {
        path: path.into(),
        sha256: None,
        limits: None,
    };
    host.load(function, &spec, Path::new("/"), &Limits::default())
        .and_then(|pack| pack.grader(function, &Value::Null))
        .unwrap_or_else(|e| panic!("{e}"))
}

fn sample() -> (Sample, Trajectory) {
    let sample = Sample {
        id: Some(SampleId::Int(7)),
        input: Some(Texts::One("Find a flight from SFO to JFK".to_string())),
        ground_truth: Some(Texts::One("UA 15".to_string())),
        ..Sample::default()
    };
    let trajectory = Trajectory {
        turns: vec![vec![
            Event::User {
                content: Content::Text("Find a flight from SFO to JFK".to_string()),
            },
            Event::ToolCall(ToolCall {
                id: "call-1".to_string(),
                name: "search_flights".to_string(),
                arguments: r#"{"from": "SFO", "to": "JFK", "date": "2026-12-01"}"#.to_string(),
                failed: false,
            }),
            Event::Assistant {
                content: Content::Text("UA 15 leaves at 08:00.".to_string()),
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
            "constant (floor)",
            grader(&host, gavel_test_artifacts::guests::CONSTANT, "one"),
        ),
        (
            "flight-args.search_args",
            grader(
                &host,
                gavel_test_artifacts::packs::FLIGHT_ARGS,
                "search_args",
            ),
        ),
    ];
    let c_pack =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/packs-c/build/c_graders.wasm");
    if c_pack.is_file() {
        let path = c_pack.to_str().expect("a UTF-8 path");
        rows.push((
            "c-graders.contains_answer (C)",
            grader(&host, path, "contains_answer"),
        ));
    } else {
        println!(
            "(no C row: run examples/packs-c/build.sh to build {})",
            c_pack.display()
        );
    }
    for (_, grader) in &rows {
        measure(grader, 1, 1_000);
    }
    println!("fresh-instance pack calls, {calls} calls per row, {cores} cores");
    println!(
        "{:<30} {:>14} {:>14} {:>12}",
        "grader", "1 thread /s", "all cores /s", "µs/call (1)"
    );
    for (name, grader) in &rows {
        let one = measure(grader, 1, calls);
        let all = measure(grader, cores, calls);
        println!("{name:<30} {one:>14.0} {all:>14.0} {:>12.2}", 1e6 / one);
    }
}
