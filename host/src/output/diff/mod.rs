//! What changed between two runs of a suite: per metric, the change of the mean and of the
//! pass rate over the samples both runs graded, with paired tests, and the samples that
//! flipped between pass and fail.
//!
//! Samples are paired by id; rows that share an id (repeated runs) are paired in order, the
//! first run of an id in one file with its first run in the other. A grade enters a metric as
//! it enters the summary: its sample is not in error and its status is pass or fail with a
//! finite score. The pass rate's change is tested with McNemar's exact test on the pairs whose
//! outcome changed; the mean's with Student's t on the paired differences. A metric has
//! regressed when either test finds it worse at the chosen significance level, or when its
//! change is not a finite number: a gate never passes on a change it cannot measure.
//!
//! Two runs are worth comparing when they graded the same samples of one suite: [`mismatches`]
//! says why two are not (no sample paired, or their `run.json` name different suites or
//! datasets), and `gavel diff` refuses them unless told otherwise.

pub mod stats;

use std::collections::HashMap;
use std::path::Path;

use serde::Serialize;

use crate::grade::Status;
use crate::input::sample::SampleId;
use crate::output::record::RunRecord;
use crate::output::result::{ResultsError, SampleResult, read_results};
use stats::{Differences, Paired};

/// How many flipped samples are kept per metric and direction; the counts are always exact.
pub const FLIPS_KEPT: usize = 1000;

/// Magnitudes from which a score is written with an exponent: three decimals write a mean of
/// `1e308` in full, some 300 digits.
const WITH_EXPONENT: f64 = 1e9;

/// A score, a mean or a change as the comparison tables write it: three decimals (with a sign
/// when `signed`), or past a billion three decimals and an exponent, such as `1.000e308`.
pub fn decimals(value: f64, signed: bool) -> String {
    match (value.abs() >= WITH_EXPONENT, signed) {
        (false, false) => format!("{value:.3}"),
        (false, true) => format!("{value:+.3}"),
        (true, false) => format!("{value:.3e}"),
        (true, true) => format!("{value:+.3e}"),
    }
}

/// One metric's grade in one result: the score and whether it passed, when it was graded.
type Outcome = Option<(f64, bool)>;

/// The metric keys of a results file, in the order its results give them.
fn note_keys(keys: &mut Vec<String>, result: &SampleResult) {
    for (key, _) in &result.grades {
        if !keys.iter().any(|k| k == key) {
            keys.push(key.to_string());
        }
    }
}

fn outcome(result: &SampleResult, key: &str) -> Outcome {
    if result.error.is_some() {
        return None;
    }
    let grade = result.grade(key)?;
    (matches!(grade.status, Status::Pass | Status::Fail) && grade.score.is_finite())
        .then_some((grade.score, grade.status == Status::Pass))
}

/// A run's mean and pass rate of one metric over everything it graded.
#[derive(Debug, Clone, Copy, Default, Serialize)]
pub struct Side {
    pub n: u64,
    pub mean: Option<f64>,
    pub pass_rate: Option<f64>,
    #[serde(skip)]
    sum: f64,
    #[serde(skip)]
    passed: u64,
}

impl Side {
    fn add(&mut self, (score, passed): (f64, bool)) {
        self.n += 1;
        self.sum += score;
        self.passed += u64::from(passed);
    }

    fn finish(&mut self) {
        if self.n > 0 {
            self.mean = Some(self.sum / self.n as f64);
            self.pass_rate = Some(self.passed as f64 / self.n as f64);
        }
    }
}

/// A sample whose outcome on a metric flipped.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Flip {
    pub sample_id: SampleId,
    /// Which run of the id (0 for the first), for ids graded more than once.
    pub run: u32,
    /// The candidate's rationale: why it fails (or passes) now.
    pub rationale: String,
}

/// One metric compared.
#[derive(Debug, Clone, Serialize)]
pub struct MetricDiff {
    pub metric: String,
    pub base: Side,
    pub candidate: Side,
    /// Samples graded on this metric in both runs.
    pub pairs: u64,
    /// Candidate minus base over the pairs.
    pub mean_change: Paired,
    pub pass_rate_change: Option<f64>,
    pub pass_to_fail: u64,
    pub fail_to_pass: u64,
    /// McNemar's exact test of `pass_to_fail` against `fail_to_pass`.
    pub mcnemar_p: f64,
    /// Worse at the chosen level by either test.
    pub regressed: bool,
    /// Better at the chosen level by either test (and not worse by the other).
    pub improved: bool,
    /// Up to [`FLIPS_KEPT`] of each, in the candidate's order.
    pub flipped_to_fail: Vec<Flip>,
    pub flipped_to_pass: Vec<Flip>,
}

/// Two runs compared.
#[derive(Debug, Clone, Serialize)]
pub struct Diff {
    /// Confidence level of the intervals; significance is `1 - level`.
    pub level: f64,
    pub base_rows: u64,
    pub candidate_rows: u64,
    /// Rows of the candidate with a row of the same id (and run) in the base.
    pub shared: u64,
    pub only_in_base: u64,
    pub only_in_candidate: u64,
    pub metrics: Vec<MetricDiff>,
    /// Metrics one run has and the other has not.
    pub only_base_metrics: Vec<String>,
    pub only_candidate_metrics: Vec<String>,
}

impl Diff {
    pub fn metric(&self, key: &str) -> Option<&MetricDiff> {
        self.metrics.iter().find(|m| m.metric == key)
    }
}

impl MetricDiff {
    /// Why a gate on this metric has nothing to pass on: no sample is graded on it in both
    /// runs (on one side or the other each is in error, or has no grade of it). `None` when
    /// some are.
    pub fn ungraded(&self) -> Option<String> {
        (self.pairs == 0).then(|| {
            format!(
                "no sample is graded on it in both runs (the base graded {} samples on it, the \
                 candidate {}; the others are in error or have no grade of it), so there is \
                 nothing to compare",
                self.base.n, self.candidate.n
            )
        })
    }
}

/// Compares the results files `base` and `candidate` at confidence `level` (e.g. 0.95).
/// Memory: one small record per base row; the candidate is streamed.
pub fn compare(base: &Path, candidate: &Path, level: f64) -> Result<Diff, ResultsError> {
    let mut base_keys = Vec::new();
    let mut base_sides: Vec<Side> = Vec::new();
    let mut by_id: HashMap<(SampleId, u32), Box<[Outcome]>> = HashMap::new();
    let mut runs_seen: HashMap<SampleId, u32> = HashMap::new();
    let mut base_rows = 0u64;
    read_results(base, |result| {
        base_rows += 1;
        note_keys(&mut base_keys, &result);
        base_sides.resize(base_keys.len(), Side::default());
        // A row holds the metrics known when it was read; one added later is missing from it.
        let outcomes: Box<[Outcome]> = base_keys.iter().map(|k| outcome(&result, k)).collect();
        for (side, outcome) in base_sides.iter_mut().zip(outcomes.iter()) {
            if let Some(outcome) = outcome {
                side.add(*outcome);
            }
        }
        let run = next_run(&mut runs_seen, &result.sample_id);
        by_id.insert((result.sample_id, run), outcomes);
    })?;

    let mut candidate_keys: Vec<String> = Vec::new();
    let mut states: Vec<MetricState> = Vec::new();
    let mut runs_seen: HashMap<SampleId, u32> = HashMap::new();
    let (mut candidate_rows, mut shared) = (0u64, 0u64);
    read_results(candidate, |result| {
        candidate_rows += 1;
        note_keys(&mut candidate_keys, &result);
        while states.len() < candidate_keys.len() {
            let key = &candidate_keys[states.len()];
            states.push(MetricState::new(
                key,
                base_keys.iter().position(|k| k == key),
            ));
        }
        let run = next_run(&mut runs_seen, &result.sample_id);
        let paired = by_id.remove(&(result.sample_id.clone(), run));
        shared += u64::from(paired.is_some());
        for state in &mut states {
            let now = outcome(&result, &state.key);
            if let Some(now) = now {
                state.candidate.add(now);
            }
            let before = match (&paired, state.base_index) {
                (Some(outcomes), Some(index)) => outcomes.get(index).copied().flatten(),
                _ => None,
            };
            if let (Some(before), Some(now)) = (before, now) {
                state.pair(before, now, &result, run);
            }
        }
    })?;

    let alpha = 1.0 - level;
    let metrics = states
        .into_iter()
        .filter_map(|state| {
            let index = state.base_index?;
            Some(state.finish(base_sides[index], level, alpha))
        })
        .collect();
    Ok(Diff {
        level,
        base_rows,
        candidate_rows,
        shared,
        only_in_base: base_rows - shared,
        only_in_candidate: candidate_rows - shared,
        metrics,
        only_base_metrics: base_keys
            .iter()
            .filter(|k| !candidate_keys.contains(k))
            .cloned()
            .collect(),
        only_candidate_metrics: candidate_keys
            .iter()
            .filter(|k| !base_keys.contains(k))
            .cloned()
            .collect(),
    })
}

/// Why the runs of `diff` are not two runs of one suite over one dataset, each reason in words;
/// empty when nothing says so. `base` and `candidate` are their `run.json`, when they have one.
///
/// A suite is the same when its name or its content is (a suite edited between the runs is the
/// change a comparison measures); a dataset when its content is, or when it is the file at the
/// same place beside its suite (trajectories recorded again over the same samples).
pub fn mismatches(
    diff: &Diff,
    base: Option<&RunRecord>,
    candidate: Option<&RunRecord>,
) -> Vec<String> {
    let mut reasons = Vec::new();
    if diff.shared == 0 {
        reasons.push(format!(
            "no sample is in both ({} only in the base, {} only in the candidate)",
            diff.only_in_base, diff.only_in_candidate
        ));
    }
    let (Some(base), Some(candidate)) = (base, candidate) else {
        return reasons;
    };
    let suite_sha = |r: &RunRecord| r.fingerprint.as_ref().map(|f| f.suite_sha256.clone());
    let same_content = suite_sha(base).is_some() && suite_sha(base) == suite_sha(candidate);
    if base.name != candidate.name && !same_content {
        let suite = |r: &RunRecord| {
            let sha = suite_sha(r).map_or_else(String::new, |sha| {
                format!(", sha256 {}", sha.get(..12).unwrap_or(&sha))
            });
            format!("`{}` ({}{sha})", r.name, r.suite.display())
        };
        reasons.push(format!(
            "they ran different suites: the base {}, the candidate {}",
            suite(base),
            suite(candidate)
        ));
    }
    let stamp = |r: &RunRecord| r.fingerprint.as_ref().map(|f| f.dataset.clone());
    let same_data = stamp(base).is_some() && stamp(base) == stamp(candidate);
    let place = |r: &RunRecord| -> std::path::PathBuf {
        let folder = r.suite.parent().unwrap_or(Path::new(""));
        r.dataset
            .strip_prefix(folder)
            .unwrap_or(&r.dataset)
            .to_path_buf()
    };
    if place(base) != place(candidate) && !same_data {
        let dataset = |r: &RunRecord| {
            let stamp = stamp(r).map_or_else(String::new, |s| format!(" ({s})"));
            format!("{}{stamp}", r.dataset.display())
        };
        reasons.push(format!(
            "they read different datasets: the base {}, the candidate {}",
            dataset(base),
            dataset(candidate)
        ));
    }
    reasons
}

/// The 0-based run number of the next row of `id`.
fn next_run(seen: &mut HashMap<SampleId, u32>, id: &SampleId) -> u32 {
    let count = seen.entry(id.clone()).or_insert(0);
    *count += 1;
    *count - 1
}

/// One metric while the candidate is read.
struct MetricState {
    key: String,
    base_index: Option<usize>,
    candidate: Side,
    differences: Differences,
    pass_to_fail: u64,
    fail_to_pass: u64,
    passed_before: u64,
    passed_now: u64,
    flipped_to_fail: Vec<Flip>,
    flipped_to_pass: Vec<Flip>,
}

impl MetricState {
    fn new(key: &str, base_index: Option<usize>) -> MetricState {
        MetricState {
            key: key.to_string(),
            base_index,
            candidate: Side::default(),
            differences: Differences::default(),
            pass_to_fail: 0,
            fail_to_pass: 0,
            passed_before: 0,
            passed_now: 0,
            flipped_to_fail: Vec::new(),
            flipped_to_pass: Vec::new(),
        }
    }

    fn pair(&mut self, before: (f64, bool), now: (f64, bool), result: &SampleResult, run: u32) {
        self.differences.add(now.0 - before.0);
        self.passed_before += u64::from(before.1);
        self.passed_now += u64::from(now.1);
        let (count, kept) = match (before.1, now.1) {
            (true, false) => (&mut self.pass_to_fail, &mut self.flipped_to_fail),
            (false, true) => (&mut self.fail_to_pass, &mut self.flipped_to_pass),
            _ => return,
        };
        *count += 1;
        if kept.len() < FLIPS_KEPT {
            kept.push(Flip {
                sample_id: result.sample_id.clone(),
                run,
                rationale: result
                    .grade(&self.key)
                    .map(|g| g.rationale.to_string())
                    .unwrap_or_default(),
            });
        }
    }

    fn finish(mut self, base: Side, level: f64, alpha: f64) -> MetricDiff {
        self.candidate.finish();
        let mut base = base;
        base.finish();
        let mean_change = self.differences.paired(level);
        let pairs = mean_change.n;
        let mcnemar_p = stats::mcnemar_exact(self.pass_to_fail, self.fail_to_pass);
        let pass_rate_change = (pairs > 0)
            .then(|| (self.passed_now as f64 - self.passed_before as f64) / pairs as f64);
        let mean_significant = mean_change.p_value.is_some_and(|p| p < alpha);
        let flips_significant = mcnemar_p < alpha;
        let measured = mean_change.measured();
        let worse = !measured
            || (mean_significant && mean_change.mean < 0.0)
            || (flips_significant && self.pass_to_fail > self.fail_to_pass);
        let better = (mean_significant && mean_change.mean > 0.0)
            || (flips_significant && self.fail_to_pass > self.pass_to_fail);
        MetricDiff {
            metric: self.key,
            base,
            candidate: self.candidate,
            pairs,
            mean_change,
            pass_rate_change,
            pass_to_fail: self.pass_to_fail,
            fail_to_pass: self.fail_to_pass,
            mcnemar_p,
            regressed: worse,
            improved: better && !worse,
            flipped_to_fail: self.flipped_to_fail,
            flipped_to_pass: self.flipped_to_pass,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn huge_scores_are_written_with_an_exponent_and_others_as_they_were() {
        for (value, unsigned, signed) in [
            (0.5, "0.500", "+0.500"),
            (-0.25, "-0.250", "-0.250"),
            (1e-300, "0.000", "+0.000"),
            (123456789.0, "123456789.000", "+123456789.000"),
            (1e9, "1.000e9", "+1.000e9"),
            (1e308, "1.000e308", "+1.000e308"),
            (-2.5e300, "-2.500e300", "-2.500e300"),
            (f64::INFINITY, "inf", "+inf"),
            (f64::NAN, "NaN", "NaN"),
        ] {
            assert_eq!(decimals(value, false), unsigned, "{value}");
            assert_eq!(decimals(value, true), signed, "{value}");
        }
    }
}
