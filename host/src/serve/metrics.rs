//! The server's counters in Prometheus' text format: requests by route and status code, their
//! latency, samples by suite and status, grades in error because a grader could not grade, and
//! where each suite's warm Python instances were started.

use std::collections::BTreeMap;
use std::fmt::Write;
use std::sync::{Mutex, PoisonError};
use std::time::Duration;

use super::grading::Tally;
use crate::grade::pack::Started;

/// Upper bounds of the latency histogram's buckets, in seconds.
const BUCKETS: [f64; 12] = [
    0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 10.0,
];

#[derive(Default)]
struct Latency {
    counts: [u64; BUCKETS.len()],
    count: u64,
    sum: f64,
}

#[derive(Default)]
struct Counters {
    requests: BTreeMap<(&'static str, u16), u64>,
    latency: BTreeMap<&'static str, Latency>,
    samples: BTreeMap<(String, &'static str), u64>,
    grading_failures: BTreeMap<String, u64>,
}

#[derive(Default)]
pub struct Metrics(Mutex<Counters>);

impl Metrics {
    fn counters(&self) -> std::sync::MutexGuard<'_, Counters> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// A request answered on `route` with `code` after `took`.
    pub fn request(&self, route: &'static str, code: u16, took: Duration) {
        let mut counters = self.counters();
        *counters.requests.entry((route, code)).or_default() += 1;
        let latency = counters.latency.entry(route).or_default();
        let seconds = took.as_secs_f64();
        for (count, bound) in latency.counts.iter_mut().zip(BUCKETS) {
            if seconds <= bound {
                *count += 1;
            }
        }
        latency.count += 1;
        latency.sum += seconds;
    }

    /// A request's results for `suite`.
    pub fn graded(&self, suite: &str, tally: &Tally) {
        let mut counters = self.counters();
        for (&status, n) in &tally.samples {
            *counters
                .samples
                .entry((suite.to_string(), status))
                .or_default() += n;
        }
        if tally.grading_failures > 0 {
            *counters
                .grading_failures
                .entry(suite.to_string())
                .or_default() += tally.grading_failures;
        }
    }

    /// Everything counted, in Prometheus' text format, with the requests being graded and
    /// waiting now, and how each suite's warm instances were started (`warm`, by suite).
    pub fn render(&self, grading: usize, queued: usize, warm: &[(&str, Started)]) -> String {
        let counters = self.counters();
        let mut out = String::new();
        let gauges = [
            (
                "gavel_serve_requests_grading",
                "Requests being graded now.",
                grading,
            ),
            (
                "gavel_serve_requests_queued",
                "Requests waiting for a place to grade.",
                queued,
            ),
        ];
        for (name, help, value) in gauges {
            let _ = writeln!(
                out,
                "# HELP {name} {help}\n# TYPE {name} gauge\n{name} {value}"
            );
        }
        let requests = (counters.requests.iter())
            .map(|((route, code), n)| (format!("route=\"{route}\",code=\"{code}\""), *n));
        counter(
            &mut out,
            "gavel_serve_requests_total",
            "Requests answered, by route and status code.",
            requests,
        );
        let name = "gavel_serve_request_duration_seconds";
        let _ = writeln!(
            out,
            "# HELP {name} Time from a request's arrival to its answer.\n# TYPE {name} histogram"
        );
        for (route, latency) in &counters.latency {
            let bounds = BUCKETS.iter().map(f64::to_string).chain(["+Inf".into()]);
            let counts = latency.counts.iter().chain([&latency.count]);
            for (bound, count) in bounds.zip(counts) {
                let _ = writeln!(
                    out,
                    "{name}_bucket{{route=\"{route}\",le=\"{bound}\"}} {count}"
                );
            }
            let _ = writeln!(out, "{name}_sum{{route=\"{route}\"}} {}", latency.sum);
            let _ = writeln!(out, "{name}_count{{route=\"{route}\"}} {}", latency.count);
        }
        let samples = (counters.samples.iter())
            .map(|((suite, status), n)| (format!("suite=\"{suite}\",status=\"{status}\""), *n));
        counter(
            &mut out,
            "gavel_serve_samples_total",
            "Samples graded, by suite and status.",
            samples,
        );
        let failures =
            (counters.grading_failures.iter()).map(|(suite, n)| (format!("suite=\"{suite}\""), *n));
        counter(
            &mut out,
            "gavel_serve_grading_failures_total",
            "Grades in error because a grader could not grade: a sandbox's trap, timeout, fuel \
             or memory, a judge's failure.",
            failures,
        );
        let started = warm.iter().flat_map(|(suite, started)| {
            [("request", started.in_pass), ("ahead", started.ahead)]
                .map(|(place, n)| (format!("suite=\"{suite}\",where=\"{place}\""), n))
        });
        counter(
            &mut out,
            "gavel_serve_warm_instances_started_total",
            "Warm Python instances started, by suite: in a request's time (none was waiting) or \
             ahead of the requests (replacing a spent one).",
            started,
        );
        out
    }
}

/// Appends a counter's help, type and `(labels, value)` samples to `out`.
fn counter(out: &mut String, name: &str, help: &str, samples: impl Iterator<Item = (String, u64)>) {
    let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} counter");
    for (labels, n) in samples {
        let _ = writeln!(out, "{name}{{{labels}}} {n}");
    }
}
