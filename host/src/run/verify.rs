//! `--verify-isolation N`: after a run, N of its samples, chosen by a seed, graded again with
//! every Python call in a fresh instance (as `isolation: sample` grades them), each grade
//! compared with the one the run wrote. A grade that differs shows that a grader's result
//! depended on what earlier samples of its batch left in its warm instance (a module global, a
//! cache): the report names the grader, the sample and both grades.
//!
//! The samples are drawn from the run's results by position (the same seed and results choose
//! the same samples); each is graded whole (its extractors, judges and built-ins too, judges
//! answering from their cache when it holds the reply), and its grades are compared as
//! `results.jsonl` writes them, without `metadata.sandbox` (the fuel and memory a call used,
//! which differ between a warm and a fresh instance by design).

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::engine::{Pass, PassEnd, PassError, Selected, Selection, Sink};
use super::{Prepared, RunError};
use crate::input::sample::SampleId;
use crate::output::result::{self, SampleResult};

/// The seed `--verify-seed` leaves to its default.
pub const DEFAULT_SEED: u64 = 1;

/// What `--verify-isolation` asks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct VerifyIsolation {
    /// Samples graded again (all of the run's when it has fewer).
    pub samples: u64,
    pub seed: u64,
}

/// What the check found: `summary.json`'s `isolation_check`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct IsolationCheck {
    pub seed: u64,
    /// The samples graded again, in input order.
    pub samples: Vec<SampleId>,
    /// Every grade that differs from the run's, in input order, then the suite's grader order.
    pub differences: Vec<Difference>,
}

impl IsolationCheck {
    pub fn passed(&self) -> bool {
        self.differences.is_empty()
    }
}

/// One grade that a fresh instance gave otherwise than the run's batch.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Difference {
    /// The grader's key in the suite.
    pub grader: String,
    pub sample_id: SampleId,
    /// The grade as the run wrote it (without `metadata.sandbox`).
    pub batch: Value,
    /// The grade of the fresh instances.
    pub fresh: Value,
}

/// Grades again `verify.samples` samples of the finished run whose results are in
/// `results_path` (graded from `selection`, with `workers` workers), each Python call in a
/// fresh instance, and compares their grades with the run's.
pub(super) fn check(
    prepared: &Prepared,
    verify: VerifyIsolation,
    selection: &Selection,
    workers: usize,
    results_path: &Path,
) -> Result<IsolationCheck, RunError> {
    let total = result::count_lines(results_path).map_err(|source| result::ResultsError::Open {
        path: results_path.to_path_buf(),
        source,
    })?;
    let chosen = choose(total, verify.samples, verify.seed);
    let mut batch = BTreeMap::new();
    // Each sample is graded whole: an earlier result without grades keeps none of them.
    let mut retry = BTreeMap::new();
    let mut position = 0;
    result::read_previous(results_path, |result| {
        if chosen.contains(&position) {
            retry.insert(
                position,
                SampleResult {
                    sample_id: result.sample_id.clone(),
                    grades: Vec::new(),
                    reward: None,
                    error: None,
                },
            );
            batch.insert(position, result);
        }
        position += 1;
        true
    })?;
    let items = prepared.items()?;
    let mut fresh = Collected::default();
    let pass = Pass {
        plan: prepared.plan.clone(),
        parser: prepared.parser.clone(),
        reward: None,
        workers,
        // A row the run wrote as invalid is graded (as invalid) again, and compared alike.
        refuse_invalid: false,
        retry: Some(retry),
        replay: 0,
        sink: &mut fresh,
    };
    let selection = Selection {
        skip: 0,
        ..selection.clone()
    };
    match pass.run(Selected::new(items, selection)) {
        Ok(PassEnd::Complete) => {}
        Ok(_) => return Err(RunError::IsolationCheck("it was interrupted".to_string())),
        Err(PassError::Source(e)) => return Err(e.into()),
        Err(e) => return Err(RunError::IsolationCheck(e.to_string())),
    }
    let mut differences = Vec::new();
    let samples = batch.values().map(|r| r.sample_id.clone()).collect();
    for (result, fresh) in batch.values().zip(fresh.results) {
        for (key, batch_grade) in &result.grades {
            let fresh_grade = fresh.grades.iter().find(|(k, _)| k == key).map(|(_, g)| g);
            let (batch_grade, fresh_grade) = (compared(batch_grade), fresh_grade.map(compared));
            if fresh_grade.as_ref() != Some(&batch_grade) {
                differences.push(Difference {
                    grader: key.to_string(),
                    sample_id: result.sample_id.clone(),
                    batch: batch_grade,
                    fresh: fresh_grade.unwrap_or(Value::Null),
                });
            }
        }
    }
    Ok(IsolationCheck {
        seed: verify.seed,
        samples,
        differences,
    })
}

/// A grade as `results.jsonl` writes it, without what differs between a warm and a fresh
/// instance by design (`metadata.sandbox`).
fn compared(grade: &crate::grade::Grade) -> Value {
    let mut value = serde_json::to_value(grade).unwrap_or(Value::Null);
    if let Some(metadata) = value.get_mut("metadata").and_then(Value::as_object_mut) {
        metadata.remove("sandbox");
    }
    value
}

/// `wanted` distinct positions below `total` (all of them when there are fewer), chosen by
/// `seed` alone (Floyd's sampling), in order.
fn choose(total: u64, wanted: u64, seed: u64) -> BTreeSet<u64> {
    let mut rng = fastrand::Rng::with_seed(seed);
    let mut chosen = BTreeSet::new();
    for j in total.saturating_sub(wanted)..total {
        let t = rng.u64(..=j);
        if !chosen.insert(t) {
            chosen.insert(j);
        }
    }
    chosen
}

/// The results of the fresh pass, in input order, read back from the lines the run would
/// write for them, as the run's own are.
#[derive(Default)]
struct Collected {
    results: Vec<SampleResult>,
}

impl Sink for Collected {
    fn write(&mut self, _results: &[SampleResult], lines: &[u8]) -> std::io::Result<()> {
        for line in lines.split(|&b| b == b'\n').filter(|line| !line.is_empty()) {
            self.results.push(crate::output::result::parse_line(line)?);
        }
        Ok(())
    }

    fn stopping(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::choose;

    #[test]
    fn a_seed_chooses_the_same_distinct_positions_and_another_seed_others() {
        let first = choose(1000, 10, 7);
        assert_eq!(first.len(), 10);
        assert!(first.iter().all(|&p| p < 1000));
        assert_eq!(first, choose(1000, 10, 7));
        assert_ne!(first, choose(1000, 10, 8));
        assert_eq!(choose(5, 10, 7), (0..5).collect());
    }
}
