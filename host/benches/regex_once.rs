//! One-off Python `re` searches: a pattern taken from a dataset row is compiled and searched
//! once, as graders do with per-row ground truths. Every search uses a distinct pattern, so no
//! compiled pattern is reused; the texts are answers of a few hundred bytes.
//!
//! `cargo bench -p gavel --bench regex_once` prints the time per search of each pattern shape.
//! `-- SHAPE N` runs only that shape, N times (for `valgrind --tool=callgrind`: the difference
//! between two runs with different N, divided by the difference in N, is the cost of one).

use std::time::Instant;

use gavel::grade::python::Regex;

const ANSWER: &str = "Sure! I looked this up in a few places to be certain, and here is what I \
                      found, with the details you asked for. Let me know if anything else would \
                      help, or if you want me to check another source before you decide. ";

/// A shape's pattern and a text it matches, made distinct by `i`.
type Shape = fn(usize) -> (String, String);

const SHAPES: &[(&str, Shape)] = &[
    ("capital", |i| {
        (
            format!(r"(?i)\bcapital of .+ is Paris{i}\b"),
            format!("{ANSWER}The capital of France is Paris{i}."),
        )
    }),
    ("celsius", |i| {
        (
            format!(r"(?<![\d-]){i}°C and \w+"),
            format!("{ANSWER}Right now it is {i}°C and sunny."),
        )
    }),
    ("product", |i| {
        let a = 400 + i;
        (
            format!(r"^{a} \* 261 = {}$", a * 261),
            format!("{a} * 261 = {}\n", a * 261),
        )
    }),
    ("confirmation", |i| {
        (
            format!(r"Confirmation: [A-Z]{{3}}\d{{3}}-{i}"),
            format!("{ANSWER}Booked. Confirmation: ABC123-{i}, thanks."),
        )
    }),
];

fn run(shape: Shape, n: usize) -> f64 {
    let cases: Vec<(String, String)> = (0..n).map(shape).collect();
    let start = Instant::now();
    for (pattern, text) in &cases {
        let found = Regex::search_once(pattern, 0, text).unwrap_or_else(|e| panic!("{e}"));
        assert!(found, "{pattern:?} on {text:?}");
    }
    start.elapsed().as_secs_f64() / n as f64
}

fn main() {
    let args: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with("--"))
        .collect();
    let only = args.first().map(String::as_str);
    let n = args.get(1).and_then(|n| n.parse().ok()).unwrap_or(2000);
    for &(name, shape) in SHAPES {
        if only.is_none_or(|only| only == name) {
            println!("{name:>14}: {:>8.2} µs per search", run(shape, n) * 1e6);
        }
    }
}
