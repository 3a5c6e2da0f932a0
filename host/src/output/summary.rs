//! Aggregates over graded samples: what `summary.json` holds.
//!
//! ```json
//! {
//!   "counts": {"total": 30, "samples": 10, "passed": 21, "failed": 6, "errored": 3},
//!   "metrics": {
//!     "correctness": {
//!       "n": 27, "mean": 0.78, "std": 0.42, "stderr": 0.08, "ci95": [0.62, 0.94],
//!       "min": 0.0, "max": 1.0, "p50": 1.0, "p90": 1.0, "p95": 1.0, "p99": 1.0,
//!       "pass_rate": 0.78, "pass_rate_ci95": [0.59, 0.89], "errored": 0, "skipped": 0,
//!       "pass_at_k": {"1": 0.78, "2": 0.9, "3": 0.93},
//!       "pass_hat_k": {"1": 0.78, "2": 0.64, "3": 0.55}
//!     }
//!   },
//!   "reward": {"n": 27, "mean": 0.78, "std": 0.42, "stderr": 0.08, "ci95": [0.62, 0.94],
//!              "min": 0.0, "max": 1.0, "p50": 1.0, "p90": 1.0, "p95": 1.0, "p99": 1.0},
//!   "gate": {"passed": true, "checks": [...], "message": "..."}
//! }
//! ```
//!
//! - `counts`: one per results row, by [`SampleResult::status`]; `samples` counts distinct ids
//!   (smaller than `total` when recorded runs repeat a sample).
//! - `metrics`, in the suite's grader order. Samples in error (`SampleResult::error` set) are left
//!   out of every metric, as letta-evals leaves them out of its means. Within the others, a grade
//!   counts towards its metric when its status is `pass` or `fail` (`n`); `error` grades are
//!   counted in `errored` and `skip` grades in `skipped`, neither enters the statistics.
//!   `std` is the sample standard deviation (n - 1), `stderr` = std / sqrt(n). `ci95` is an
//!   interval for the mean that stays within [0, 1] when every score does: the Wilson score
//!   interval at the mean with an effective size n·m(1-m)/σ² (σ² the variance with
//!   denominator n), which for scores of 0 and 1 is the Wilson interval of the pass share and
//!   for scores close together comes to mean ± 1.96 σ/√n; scores outside [0, 1] (rewards, say)
//!   get the normal approximation mean ± 1.96 stderr. `pass_rate` is the share of the
//!   `n` grades whose status is `pass`, `pass_rate_ci95` its Wilson score interval. Percentiles
//!   interpolate linearly between order statistics, as `numpy.percentile` does by default.
//!   A statistic that needs more samples than there are is `null` (`std` needs two).
//! - `pass_at_k` / `pass_hat_k` appear only when some sample id occurs in more than one row:
//!   for each id with `n` graded runs of which `c` pass, pass@k = 1 - C(n-c, k) / C(n, k) (the
//!   unbiased estimator of Chen et al.) and pass^k = C(c, k) / C(n, k) (τ-bench: all k runs
//!   pass), averaged over ids, for k = 1 up to the smallest `n`.
//! - `reward`: the same statistics over the rows that carry a reward; `null` when none does.
//! - `gate`: the gate's outcome ([`GateOutcome`]), `null` without a gate.
//!
//! Memory: each metric keeps a histogram of its exact score values, which grows with the number
//! of distinct scores (few for built-in graders; a judge or a pack with free-form scores makes
//! more), never with the number of rows. Repeated runs are recognised without a record per id
//! ([`Aggregator::streaming`]): a Bloom filter of 10 bits a row flags the ids that may have been
//! seen before, and only those ids' results are grouped, from a second read of `results.jsonl`
//! that parses just their lines. Every statistic is computed from the sorted
//! histogram and the id-ordered counters, so the summary does not depend on the order rows were
//! added: a run resumed after an interruption writes the same bytes as one that was not.

use std::cmp::Ordering;
use std::collections::btree_map::Entry;
use std::collections::{BTreeMap, HashSet};
use std::fmt;
use std::hash::{Hash, Hasher};
use std::path::Path;

use serde::Serialize;
use serde::ser::{SerializeMap, Serializer};

use crate::config::gate::{Aggregation, Op};
use crate::grade::{GradeKey, Status};
use crate::input::sample::SampleId;
use crate::output::result::{
    ErrorCategory, ResultsError, SampleResult, leading_id, read_results_where,
};

/// The 97.5th percentile of the standard normal distribution.
const Z95: f64 = 1.959_963_984_540_054;

/// A finite score, ordered by value (`-0.0` is stored as `0.0` so both count as one value).
#[derive(Debug, Clone, Copy)]
struct Value(f64);

impl PartialEq for Value {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}

impl Eq for Value {}

impl PartialOrd for Value {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Value {
    fn cmp(&self, other: &Self) -> Ordering {
        self.0.total_cmp(&other.0)
    }
}

/// The exact multiset of a metric's scores: memory grows with the number of distinct values,
/// and every statistic is read from the values in ascending order, never in arrival order.
/// Most scores are 0 or 1: those two are counted aside, which spares the map's search for
/// every grade of every sample.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Histogram {
    zeros: u64,
    ones: u64,
    /// Every other value.
    others: BTreeMap<Value, u64>,
    len: u64,
}

impl Histogram {
    /// Adds a finite value; callers keep non-finite scores out (they are errors, not scores).
    pub fn insert(&mut self, value: f64) {
        if value == 0.0 {
            self.zeros += 1;
        } else if value == 1.0 {
            self.ones += 1;
        } else {
            *self.others.entry(Value(value)).or_insert(0) += 1;
        }
        self.len += 1;
    }

    pub fn len(&self) -> u64 {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// This multiset with every value of `other` added.
    pub fn merged(&self, other: &Histogram) -> Histogram {
        let mut merged = self.clone();
        merged.zeros += other.zeros;
        merged.ones += other.ones;
        for (value, count) in &other.others {
            *merged.others.entry(*value).or_insert(0) += count;
        }
        merged.len += other.len;
        merged
    }

    /// The distinct values in ascending order, each with how many times it was inserted
    /// (`-0.0` counts as `0.0`).
    pub fn counts(&self) -> impl Iterator<Item = (f64, u64)> + '_ {
        use std::ops::Bound::{Excluded, Unbounded};
        let range = |from, to| self.others.range((from, to)).map(|(v, &c)| (v.0, c));
        let [zero, one] = [Value(0.0), Value(1.0)];
        range(Unbounded, Excluded(Value(-0.0)))
            .chain((self.zeros > 0).then_some((0.0, self.zeros)))
            .chain(range(Excluded(zero), Excluded(one)))
            .chain((self.ones > 0).then_some((1.0, self.ones)))
            .chain(range(Excluded(one), Unbounded))
    }

    /// The sum of all values times `scale`, rounded once at the end.
    fn sum(&self, scale: f64) -> Wide {
        self.counts()
            .map(|(v, c)| Wide::product(v * scale, c as f64))
            .fold(Wide::default(), Wide::add)
    }

    /// The mean, correctly rounded as Python's `statistics.mean` (which is exact).
    pub fn mean(&self) -> Option<f64> {
        (!self.is_empty()).then(|| self.unscaled(|scale| self.sum(scale).div(self.len as f64).hi))
    }

    /// Sample standard deviation (divisor n - 1), as Python's `statistics.stdev`.
    pub fn std(&self) -> Option<f64> {
        if self.len < 2 {
            return None;
        }
        Some(self.unscaled(|scale| {
            let mean = self.sum(scale).div(self.len as f64);
            let squares = self
                .counts()
                .map(|(v, c)| {
                    let d = Wide::from(v * scale).add(mean.neg());
                    d.mul(d).mul(Wide::from(c as f64))
                })
                .fold(Wide::default(), Wide::add);
            squares.div((self.len - 1) as f64).sqrt()
        }))
    }

    /// `measure` of the values (given the factor they are scaled by), as they are or, where that
    /// overflows, of the values scaled by the power of two that brings the largest to about 1,
    /// scaled back: a power of two scales exactly (but for values too small to count beside the
    /// largest), so the result is what Python's exact arithmetic gives for huge scores too.
    fn unscaled(&self, measure: impl Fn(f64) -> f64) -> f64 {
        let plain = measure(1.0);
        if plain.is_finite() {
            return plain;
        }
        let largest = self
            .min()
            .map_or(0.0, f64::abs)
            .max(self.max().map_or(0.0, f64::abs));
        if !largest.is_finite() || largest == 0.0 {
            return plain;
        }
        // The exponent of the largest magnitude, a normal number here as the plain measure
        // overflowed (`log2` may round up to 1024 at the top).
        let exponent = ((largest.to_bits() >> 52) & 0x7ff) as i32 - 1023;
        measure(2f64.powi(-exponent)) * 2f64.powi(exponent)
    }

    pub fn min(&self) -> Option<f64> {
        self.counts().next().map(|(v, _)| v)
    }

    pub fn max(&self) -> Option<f64> {
        self.counts().last().map(|(v, _)| v)
    }

    /// The value at 0-based position `index` of the sorted values.
    fn nth(&self, index: u64) -> Option<f64> {
        let mut seen = 0;
        for (value, count) in self.counts() {
            seen += count;
            if index < seen {
                return Some(value);
            }
        }
        None
    }

    /// `numpy.percentile(values, p)` with its default linear interpolation, `p` in [0, 100].
    pub fn percentile(&self, p: f64) -> Option<f64> {
        let last = self.len.checked_sub(1)?;
        let position = last as f64 * (p / 100.0);
        let below = position.floor();
        if below >= last as f64 {
            return self.nth(last);
        }
        let a = self.nth(below as u64)?;
        let b = self.nth(below as u64 + 1)?;
        let t = position - below;
        // numpy interpolates from the nearer end, which decides the last bit of the result.
        let diff = b - a;
        Some(if t >= 0.5 {
            b - diff * (1.0 - t)
        } else {
            a + diff * t
        })
    }

    /// Python's `statistics.median`: the middle value, or the mean of the two middle values.
    pub fn median(&self) -> Option<f64> {
        let half = self.len / 2;
        if self.len % 2 == 1 {
            self.nth(half)
        } else {
            Some((self.nth(half.checked_sub(1)?)? + self.nth(half)?) / 2.0)
        }
    }

    /// How many values satisfy `predicate`.
    pub fn count_where(&self, predicate: impl Fn(f64) -> bool) -> u64 {
        self.counts()
            .filter(|&(v, _)| predicate(v))
            .map(|(_, c)| c)
            .sum()
    }
}

/// A double-double number, `hi + lo` with about 106 bits of precision: sums, means and
/// variances over a histogram carry it and round once at the end, so they come out as Python's
/// exact `statistics` functions give them, and independent of the order of the terms.
#[derive(Debug, Clone, Copy, Default)]
struct Wide {
    hi: f64,
    lo: f64,
}

impl From<f64> for Wide {
    fn from(hi: f64) -> Wide {
        Wide { hi, lo: 0.0 }
    }
}

impl Wide {
    /// `a + b` where `|a| >= |b|`, renormalised.
    fn fast(a: f64, b: f64) -> Wide {
        let hi = a + b;
        Wide {
            hi,
            lo: b - (hi - a),
        }
    }

    /// `a * b` exactly.
    fn product(a: f64, b: f64) -> Wide {
        let hi = a * b;
        Wide {
            hi,
            lo: a.mul_add(b, -hi),
        }
    }

    fn neg(self) -> Wide {
        Wide {
            hi: -self.hi,
            lo: -self.lo,
        }
    }

    fn add(self, other: Wide) -> Wide {
        let sum = self.hi + other.hi;
        let shifted = sum - self.hi;
        let error = (self.hi - (sum - shifted)) + (other.hi - shifted);
        Wide::fast(sum, error + self.lo + other.lo)
    }

    fn mul(self, other: Wide) -> Wide {
        let p = Wide::product(self.hi, other.hi);
        Wide::fast(p.hi, p.lo + (self.hi * other.lo + self.lo * other.hi))
    }

    fn div(self, divisor: f64) -> Wide {
        let first = self.hi / divisor;
        let rest = self.add(Wide::product(-first, divisor));
        Wide::fast(first, rest.hi / divisor)
    }

    /// The square root, rounded once: one Newton step from the `f64` root.
    fn sqrt(self) -> f64 {
        let root = self.hi.sqrt();
        if root == 0.0 || !root.is_finite() {
            return root;
        }
        let residual = self.add(Wide::product(-root, root));
        root + residual.hi / (2.0 * root)
    }
}

/// Wilson score interval for `passed` successes out of `n`.
fn wilson(passed: u64, n: u64) -> Option<[f64; 2]> {
    if n == 0 {
        return None;
    }
    Some(wilson_at(passed as f64 / n as f64, n as f64))
}

/// The 95% interval of a mean `mean` of `n` scores with sample standard deviation `std`: the
/// Wilson interval at an effective size when every score is within [0, 1], else the normal
/// approximation (see the module documentation).
fn mean_interval(mean: f64, std: f64, n: u64, within_unit: bool) -> [f64; 2] {
    let n = n as f64;
    if !within_unit {
        let half = Z95 * std / n.sqrt();
        return [mean - half, mean + half];
    }
    let spread = mean * (1.0 - mean);
    let variance = std * std * (n - 1.0) / n;
    if variance > 0.0 {
        wilson_at(mean, n * spread / variance)
    } else if spread > 0.0 {
        // Every score the same, strictly between 0 and 1: nothing varies.
        [mean, mean]
    } else {
        // All 0 or all 1: as many passes (or failures) in a row.
        wilson_at(mean, n)
    }
}

/// Wilson score interval for a share `p` of `n` trials (`n` may be an effective size).
fn wilson_at(p: f64, n: f64) -> [f64; 2] {
    let z2 = Z95 * Z95;
    let denominator = 1.0 + z2 / n;
    let centre = (p + z2 / (2.0 * n)) / denominator;
    let half = Z95 * (p * (1.0 - p) / n + z2 / (4.0 * n * n)).sqrt() / denominator;
    [(centre - half).max(0.0), (centre + half).min(1.0)]
}

/// Rows by outcome; `samples` counts distinct sample ids.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Counts {
    pub total: u64,
    pub samples: u64,
    pub passed: u64,
    pub failed: u64,
    pub errored: u64,
}

/// Descriptive statistics of a set of scores (a metric's, or the rewards).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Stats {
    pub n: u64,
    pub mean: Option<f64>,
    pub std: Option<f64>,
    pub stderr: Option<f64>,
    pub ci95: Option<[f64; 2]>,
    pub min: Option<f64>,
    pub max: Option<f64>,
    pub p50: Option<f64>,
    pub p90: Option<f64>,
    pub p95: Option<f64>,
    pub p99: Option<f64>,
}

impl Stats {
    fn of(scores: &Histogram) -> Stats {
        let mean = scores.mean();
        let std = scores.std();
        let stderr = std.map(|s| s / (scores.len() as f64).sqrt());
        let (min, max) = (scores.min(), scores.max());
        let within_unit = min.is_some_and(|v| v >= 0.0) && max.is_some_and(|v| v <= 1.0);
        let ci95 = mean
            .zip(std)
            .map(|(m, s)| mean_interval(m, s, scores.len(), within_unit));
        Stats {
            n: scores.len(),
            mean,
            std,
            stderr,
            ci95,
            min,
            max,
            p50: scores.percentile(50.0),
            p90: scores.percentile(90.0),
            p95: scores.percentile(95.0),
            p99: scores.percentile(99.0),
        }
    }
}

/// One metric's aggregates (see the module documentation for what each field means).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct MetricSummary {
    #[serde(flatten)]
    pub stats: Stats,
    pub pass_rate: Option<f64>,
    pub pass_rate_ci95: Option<[f64; 2]>,
    pub errored: u64,
    pub skipped: u64,
    /// pass@k by k; present only when some sample id was graded in more than one row.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pass_at_k: Option<BTreeMap<u32, f64>>,
    /// pass^k by k (all k runs pass); present exactly when `pass_at_k` is.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pass_hat_k: Option<BTreeMap<u32, f64>>,
    #[serde(skip)]
    scores: Histogram,
    /// The scores of samples whose extraction found nothing, which only a gate counts.
    #[serde(skip)]
    unextracted: Histogram,
}

impl MetricSummary {
    /// Every graded score of this metric, for aggregations the summary does not precompute.
    pub fn scores(&self) -> &Histogram {
        &self.scores
    }

    /// The scores a gate aggregates: letta-evals' gate (up to 0.20.0) counted a sample whose
    /// trajectory or submission was empty with the 0 its graders gave it; the metrics, like
    /// letta-evals' summary since, leave such a sample out.
    pub fn gate_scores(&self) -> std::borrow::Cow<'_, Histogram> {
        if self.unextracted.is_empty() {
            std::borrow::Cow::Borrowed(&self.scores)
        } else {
            std::borrow::Cow::Owned(self.scores.merged(&self.unextracted))
        }
    }
}

/// The aggregates of a run: `summary.json`.
#[derive(Debug, Clone, PartialEq)]
pub struct Summary {
    pub counts: Counts,
    /// In the suite's grader order.
    pub metrics: Vec<(String, MetricSummary)>,
    pub reward: Option<Stats>,
    pub gate: Option<GateOutcome>,
    /// Ctrl-C stopped the run: the figures are of the samples graded before it, and no gate
    /// was applied.
    pub interrupted: bool,
}

impl Summary {
    pub fn metric(&self, key: &str) -> Option<&MetricSummary> {
        self.metrics.iter().find(|(k, _)| k == key).map(|(_, m)| m)
    }
}

/// One comparison the gate made.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct GateCheck {
    /// The metric key, or `weighted_average(key=weight, ...)` with normalised weights.
    pub metric: String,
    pub aggregation: Aggregation,
    /// For `accuracy`: the per-sample rule, such as `score >= 0.5`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pass_rule: Option<String>,
    pub value: f64,
    pub op: Op,
    pub threshold: f64,
    pub passed: bool,
}

impl fmt::Display for GateCheck {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {}", self.metric, self.aggregation.name())?;
        if let Some(rule) = &self.pass_rule {
            write!(f, " ({rule})")?;
        }
        write!(
            f,
            " = {} {} {}: {}",
            self.value,
            self.op.symbol(),
            self.threshold,
            if self.passed { "passed" } else { "failed" }
        )
    }
}

/// Whether the gate passed, every comparison it made, and one line saying why.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct GateOutcome {
    pub passed: bool,
    pub checks: Vec<GateCheck>,
    pub message: String,
}

impl Aggregator {
    /// Hands the results of the finished run in `path` that [`Aggregator::regroup`] needs to
    /// it, when it needs any: only lines whose id may repeat are parsed whole.
    pub fn regroup_file(&mut self, path: &Path) -> Result<(), ResultsError> {
        if !self.needs_regroup() {
            return Ok(());
        }
        // Result lines begin with their id (`ResultsFile::append`), so most are skipped after
        // reading a few bytes.
        let aggregator = std::cell::RefCell::new(self);
        let repeats = |line: &str| {
            let id = line.strip_prefix(r#"{"sample_id":"#).and_then(leading_id);
            id.is_none_or(|id| aggregator.borrow().may_repeat(&id))
        };
        read_results_where(path, "", repeats, |result| {
            aggregator.borrow_mut().regroup(&result)
        })
    }
}

struct Metrics<'a>(&'a [(String, MetricSummary)]);

impl Serialize for Metrics<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(Some(self.0.len()))?;
        for (key, metric) in self.0 {
            map.serialize_entry(key, metric)?;
        }
        map.end()
    }
}

impl Serialize for Summary {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(None)?;
        if self.interrupted {
            map.serialize_entry("interrupted", &true)?;
        }
        map.serialize_entry("counts", &self.counts)?;
        map.serialize_entry("metrics", &Metrics(&self.metrics))?;
        map.serialize_entry("reward", &self.reward)?;
        map.serialize_entry("gate", &self.gate)?;
        map.end()
    }
}

#[derive(Debug, Default)]
struct MetricAccumulator {
    scores: Histogram,
    unextracted: Histogram,
    passed: u64,
    errored: u64,
    skipped: u64,
}

/// Graded runs and passes of one metric for one sample id.
#[derive(Debug, Clone, Copy, Default)]
struct Runs {
    graded: u32,
    passed: u32,
}

/// How many ids of a single run each had nothing graded, a failed run, a passed run.
#[derive(Debug, Clone, Default)]
struct Singles([u64; 3]);

impl Singles {
    const RUNS: [Runs; 3] = [
        Runs {
            graded: 0,
            passed: 0,
        },
        Runs {
            graded: 1,
            passed: 0,
        },
        Runs {
            graded: 1,
            passed: 1,
        },
    ];

    /// The count of ids whose one run gave `runs` (at most one graded run, passed or not).
    fn count(&mut self, runs: Runs) -> &mut u64 {
        &mut self.0[(runs.graded + runs.passed) as usize]
    }

    /// Every counted id's runs, in the order of [`Singles::RUNS`].
    fn runs(&self) -> impl Iterator<Item = Runs> + Clone + '_ {
        Self::RUNS
            .iter()
            .zip(self.0)
            .flat_map(|(&runs, n)| std::iter::repeat_n(runs, n as usize))
    }
}

/// Streams [`SampleResult`]s into a [`Summary`] in memory that does not grow with the rows.
#[derive(Debug)]
pub struct Aggregator {
    keys: Vec<GradeKey>,
    counts: Counts,
    metrics: Vec<MetricAccumulator>,
    rewards: Histogram,
    /// Per sample id, per metric (in `keys` order), for the ids known to repeat.
    runs: BTreeMap<SampleId, Box<[Runs]>>,
    repeated: bool,
    tracking: Tracking,
    /// Per metric: how many single-run ids had each of the pairs a single run can give.
    singles: Vec<Singles>,
    single_ids: u64,
    scratch: Box<[Runs]>,
}

/// Which ids get a per-id record as they are added.
#[derive(Debug)]
enum Tracking {
    /// Every id: exact at once, memory grows with distinct ids.
    All,
    /// None: every result is counted as a single run while [`Seen`] notes the ids that may
    /// have been seen before; [`Aggregator::regroup`] then moves those ids' results into
    /// per-id records, from a second read of the results.
    Streaming {
        seen: Seen,
        flagged: HashSet<SampleId>,
    },
}

impl Aggregator {
    /// An aggregator that keeps a record per distinct id (right for small runs and tests).
    pub fn new(metric_keys: Vec<GradeKey>) -> Self {
        let n = metric_keys.len();
        let metrics = metric_keys
            .iter()
            .map(|_| MetricAccumulator::default())
            .collect();
        Aggregator {
            keys: metric_keys,
            counts: Counts::default(),
            metrics,
            rewards: Histogram::default(),
            runs: BTreeMap::new(),
            repeated: false,
            tracking: Tracking::All,
            singles: vec![Singles::default(); n],
            single_ids: 0,
            scratch: vec![Runs::default(); n].into(),
        }
    }

    /// An aggregator whose memory stays flat over about `expected_rows()` results (a bit per
    /// integer id, or a Bloom filter of 10 bits a row) however many distinct ids they have. When some id may repeat
    /// ([`Aggregator::needs_regroup`]), every result is handed to [`Aggregator::regroup`] once
    /// more before [`Aggregator::finish`].
    /// `expected_rows` is asked only when the Bloom filter is built, at the first id that is not
    /// a small integer, so a count still being taken holds nothing up before then.
    pub fn streaming(
        metric_keys: Vec<GradeKey>,
        expected_rows: impl Fn() -> u64 + Send + 'static,
    ) -> Self {
        Aggregator {
            tracking: Tracking::Streaming {
                seen: Seen::new(Box::new(expected_rows)),
                flagged: HashSet::new(),
            },
            ..Aggregator::new(metric_keys)
        }
    }

    pub fn add(&mut self, result: &SampleResult) {
        self.counts.total += 1;
        match result.status() {
            Status::Pass | Status::Skip => self.counts.passed += 1,
            Status::Fail => self.counts.failed += 1,
            Status::Error => self.counts.errored += 1,
        }
        if let Some(reward) = result.reward.filter(|r| r.is_finite()) {
            self.rewards.insert(reward);
        }
        let unextracted = result
            .error
            .as_ref()
            .is_some_and(|e| e.category == ErrorCategory::Extraction);
        if unextracted {
            for (i, (key, metric)) in self.keys.iter().zip(self.metrics.iter_mut()).enumerate() {
                if let Some(grade) = result.grade_at(i, key)
                    && matches!(grade.status, Status::Pass | Status::Fail)
                    && grade.score.is_finite()
                {
                    metric.unextracted.insert(grade.score);
                }
            }
        }
        if result.error.is_none() {
            for (i, (key, metric)) in self.keys.iter().zip(self.metrics.iter_mut()).enumerate() {
                let Some(grade) = result.grade_at(i, key) else {
                    continue;
                };
                match grade.status {
                    Status::Pass | Status::Fail if grade.score.is_finite() => {
                        metric.scores.insert(grade.score);
                        metric.passed += u64::from(grade.status == Status::Pass);
                    }
                    Status::Skip => metric.skipped += 1,
                    Status::Pass | Status::Fail | Status::Error => metric.errored += 1,
                }
            }
        }
        match &mut self.tracking {
            Tracking::All => {
                Self::runs_of(&self.keys, result, &mut self.scratch);
                self.add_runs(result.sample_id.clone());
            }
            Tracking::Streaming { seen, flagged } => {
                if seen.insert(&result.sample_id) {
                    flagged.insert(result.sample_id.clone());
                }
                Self::runs_of(&self.keys, result, &mut self.scratch);
                self.single_ids += 1;
                for (single, runs) in self.singles.iter_mut().zip(self.scratch.iter()) {
                    *single.count(*runs) += 1;
                }
            }
        }
    }

    /// Whether some id may have been added more than once, so that the results must be handed
    /// to [`Aggregator::regroup`] before [`Aggregator::finish`] for pass@k to be right.
    pub fn needs_regroup(&self) -> bool {
        matches!(&self.tracking, Tracking::Streaming { flagged, .. } if !flagged.is_empty())
    }

    /// Whether [`Aggregator::regroup`] wants the results of `id`.
    pub fn may_repeat(&self, id: &SampleId) -> bool {
        matches!(&self.tracking, Tracking::Streaming { flagged, .. } if flagged.contains(id))
    }

    /// Second look at a result already [`add`](Aggregator::add)ed: one of an id that may
    /// repeat is moved from the single-run counts into that id's record.
    pub fn regroup(&mut self, result: &SampleResult) {
        let Tracking::Streaming { flagged, .. } = &self.tracking else {
            return;
        };
        if !flagged.contains(&result.sample_id) {
            return;
        }
        Self::runs_of(&self.keys, result, &mut self.scratch);
        for (single, runs) in self.singles.iter_mut().zip(self.scratch.iter()) {
            let count = single.count(*runs);
            *count = count.saturating_sub(1);
        }
        self.single_ids -= 1;
        self.add_runs(result.sample_id.clone());
    }

    /// Adds `scratch` to the record of `id`.
    fn add_runs(&mut self, id: SampleId) {
        let runs = match self.runs.entry(id) {
            Entry::Occupied(entry) => {
                self.repeated = true;
                entry.into_mut()
            }
            Entry::Vacant(entry) => entry.insert(vec![Runs::default(); self.keys.len()].into()),
        };
        for (total, one) in runs.iter_mut().zip(self.scratch.iter()) {
            total.graded += one.graded;
            total.passed += one.passed;
        }
    }

    /// The graded and passed runs one result contributes to each metric.
    fn runs_of(keys: &[GradeKey], result: &SampleResult, out: &mut [Runs]) {
        out.fill(Runs::default());
        if result.error.is_some() {
            return;
        }
        for (i, (key, runs)) in keys.iter().zip(out.iter_mut()).enumerate() {
            if let Some(grade) = result.grade_at(i, key)
                && matches!(grade.status, Status::Pass | Status::Fail)
                && grade.score.is_finite()
            {
                runs.graded = 1;
                runs.passed = u32::from(grade.status == Status::Pass);
            }
        }
    }

    pub fn finish(self) -> Summary {
        let counts = Counts {
            samples: self.runs.len() as u64 + self.single_ids,
            ..self.counts
        };
        let metrics = self
            .keys
            .into_iter()
            .zip(self.metrics)
            .enumerate()
            .map(|(index, (key, metric))| {
                let n = metric.scores.len();
                let (pass_at_k, pass_hat_k) = if self.repeated {
                    let singles = self.singles[index].runs();
                    repeated_runs(self.runs.values().map(|runs| runs[index]).chain(singles))
                } else {
                    (None, None)
                };
                let summary = MetricSummary {
                    stats: Stats::of(&metric.scores),
                    pass_rate: (n > 0).then(|| metric.passed as f64 / n as f64),
                    pass_rate_ci95: wilson(metric.passed, n),
                    errored: metric.errored,
                    skipped: metric.skipped,
                    pass_at_k,
                    pass_hat_k,
                    scores: metric.scores,
                    unextracted: metric.unextracted,
                };
                (key.into_owned(), summary)
            })
            .collect();
        let reward = (!self.rewards.is_empty()).then(|| Stats::of(&self.rewards));
        Summary {
            counts,
            metrics,
            reward,
            gate: None,
            interrupted: false,
        }
    }
}

type ByK = Option<BTreeMap<u32, f64>>;

/// pass@k and pass^k averaged over the ids that have at least one graded run, for k up to the
/// smallest number of graded runs of any such id.
fn repeated_runs(per_id: impl Iterator<Item = Runs> + Clone) -> (ByK, ByK) {
    let graded = per_id.filter(|r| r.graded > 0);
    let Some(max_k) = graded.clone().map(|r| r.graded).min() else {
        return (None, None);
    };
    let ids = graded.clone().count() as f64;
    let mut at = BTreeMap::new();
    let mut hat = BTreeMap::new();
    for k in 1..=max_k {
        let mean_over_ids = |estimate: fn(Runs, u32) -> f64| {
            graded
                .clone()
                .map(|r| Wide::from(estimate(r, k)))
                .fold(Wide::default(), Wide::add)
                .div(ids)
                .hi
        };
        at.insert(
            k,
            mean_over_ids(|r, k| 1.0 - choose_ratio(r.graded - r.passed, r.graded, k)),
        );
        hat.insert(k, mean_over_ids(|r, k| choose_ratio(r.passed, r.graded, k)));
    }
    (Some(at), Some(hat))
}

/// C(m, k) / C(n, k) for m <= n, as a product that neither overflows nor loses precision.
fn choose_ratio(m: u32, n: u32, k: u32) -> f64 {
    if m < k {
        return 0.0;
    }
    (0..k)
        .map(|i| f64::from(m - i) / f64::from(n - i))
        .product()
}

/// Integer ids below this are tracked exactly, a bit each (8 MiB at most).
const DENSE_IDS: i64 = 1 << 26;

/// The sample ids seen so far: exactly for the small non-negative integers most datasets
/// number their rows with, so that a run without repeats needs no second read of its results;
/// in a [`Bloom`] filter, built on the first other id, for the rest.
#[derive(Debug)]
struct Seen {
    dense: Vec<u64>,
    other: Option<Bloom>,
    expected: ExpectedRows,
}

/// How many rows a [`Bloom`] filter is sized for, asked when one is built.
struct ExpectedRows(Box<dyn Fn() -> u64 + Send>);

impl std::fmt::Debug for ExpectedRows {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ExpectedRows")
    }
}

impl Seen {
    fn new(expected: Box<dyn Fn() -> u64 + Send>) -> Seen {
        Seen {
            dense: Vec::new(),
            other: None,
            expected: ExpectedRows(expected),
        }
    }

    /// Adds `id`; whether it may have been added before.
    fn insert(&mut self, id: &SampleId) -> bool {
        match id {
            SampleId::Int(i) if (0..DENSE_IDS).contains(i) => {
                let (word, mask) = ((i / 64) as usize, 1u64 << (i % 64));
                if word >= self.dense.len() {
                    self.dense.resize(word + 1, 0);
                }
                let seen = self.dense[word] & mask != 0;
                self.dense[word] |= mask;
                seen
            }
            _ => self
                .other
                .get_or_insert_with(|| Bloom::new((self.expected.0)()))
                .insert(id),
        }
    }
}

/// A set of sample ids that may answer "seen before" wrongly (about 1% of the time at the
/// expected size) but never forgets one: 10 bits an expected row, three probes.
#[derive(Debug)]
struct Bloom {
    bits: Vec<u64>,
    mask: u64,
}

impl Bloom {
    fn new(expected: u64) -> Bloom {
        let bits = expected.saturating_mul(10).next_power_of_two().max(1 << 12);
        Bloom {
            bits: vec![0; (bits / 64) as usize],
            mask: bits - 1,
        }
    }

    /// Adds `id`; whether it may have been added before.
    fn insert(&mut self, id: &SampleId) -> bool {
        let mut hasher = std::hash::DefaultHasher::new();
        id.hash(&mut hasher);
        let h = hasher.finish();
        let step = h.rotate_left(32) | 1;
        let mut seen = true;
        for i in 0..3u64 {
            let bit = h.wrapping_add(i.wrapping_mul(step)) & self.mask;
            let (word, mask) = ((bit / 64) as usize, 1u64 << (bit % 64));
            seen &= self.bits[word] & mask != 0;
            self.bits[word] |= mask;
        }
        seen
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::grade::Grade;
    use crate::output::result::{ErrorCategory, SampleError};

    fn row(id: i64, grades: &[(&str, f64)]) -> SampleResult {
        SampleResult {
            sample_id: SampleId::Int(id),
            grades: grades
                .iter()
                .map(|(k, s)| (k.to_string().into(), Grade::scored(*s, "")))
                .collect(),
            reward: None,
            error: None,
        }
    }

    fn histogram(values: &[f64]) -> Histogram {
        let mut h = Histogram::default();
        for &v in values {
            h.insert(v);
        }
        h
    }

    fn keys(keys: &[&str]) -> Vec<GradeKey> {
        keys.iter().map(|k| k.to_string().into()).collect()
    }

    #[test]
    fn percentiles_match_numpy_linear_interpolation() {
        // Expected values computed with numpy.percentile(values, p).
        let h = histogram(&[0.1, 0.2, 0.3, 0.4, 0.5]);
        assert_eq!(h.percentile(50.0), Some(0.3));
        assert_eq!(h.percentile(90.0), Some(0.46));
        assert_eq!(h.percentile(95.0), Some(0.48));
        assert_eq!(h.percentile(99.0), Some(0.496));
        assert_eq!(h.percentile(100.0), Some(0.5));
        assert_eq!(h.percentile(0.0), Some(0.1));
        let h = histogram(&[0.0, 1.0]);
        assert_eq!(h.percentile(95.0), Some(0.95));
        assert_eq!(h.percentile(50.0), Some(0.5));
        let h = histogram(&[1.0, 0.0, 0.0, 1.0, 1.0, 1.0, 0.5]);
        // sorted [0, 0, 0.5, 1, 1, 1, 1]: position 6 * 0.25 = 1.5
        assert_eq!(h.percentile(25.0), Some(0.25));
        assert_eq!(histogram(&[0.7]).percentile(99.0), Some(0.7));
        assert_eq!(Histogram::default().percentile(50.0), None);
    }

    #[test]
    fn median_follows_python_statistics() {
        assert_eq!(histogram(&[3.0, 1.0, 2.0]).median(), Some(2.0));
        assert_eq!(histogram(&[0.25, 1.0, 0.5, 0.0]).median(), Some(0.375));
        assert_eq!(histogram(&[0.4]).median(), Some(0.4));
        assert_eq!(Histogram::default().median(), None);
    }

    #[test]
    fn histogram_keeps_one_entry_per_distinct_value() {
        let mut h = Histogram::default();
        for i in 0..100_000 {
            h.insert(if i % 4 == 0 { 1.0 } else { 0.0 });
        }
        h.insert(-0.0);
        h.insert(0.5);
        h.insert(0.5);
        assert_eq!(
            h.counts().collect::<Vec<_>>(),
            [(0.0, 75_001), (0.5, 2), (1.0, 25_000)]
        );
        assert_eq!(h.len(), 100_003);
        assert_eq!(h.count_where(|v| v >= 1.0), 25_000);
        assert_eq!(h.min(), Some(0.0));
        assert!(h.min().unwrap().is_sign_positive());
    }

    #[test]
    fn histogram_values_come_in_ascending_order_around_the_common_scores() {
        let values = [
            2.5, 1.0, -3.0, 0.0, 0.25, 1.0, -0.0, 7.0, 0.25, -1e-300, 1e-300, 1.0000001,
        ];
        let mut h = Histogram::default();
        for v in values {
            h.insert(v);
        }
        let mut sorted: Vec<f64> = values
            .iter()
            .map(|&v| if v == 0.0 { 0.0 } else { v })
            .collect();
        sorted.sort_by(f64::total_cmp);
        let expanded: Vec<f64> = h
            .counts()
            .flat_map(|(v, c)| std::iter::repeat_n(v, c as usize))
            .collect();
        assert_eq!(expanded, sorted);
        assert_eq!((h.min(), h.max()), (Some(-3.0), Some(7.0)));
        assert_eq!(h.median(), Some(0.25));
    }

    #[test]
    fn histogram_of_only_common_scores() {
        let mut h = Histogram::default();
        h.insert(1.0);
        assert_eq!(
            (h.min(), h.max(), h.mean()),
            (Some(1.0), Some(1.0), Some(1.0))
        );
        h.insert(0.0);
        assert_eq!(
            (h.min(), h.max(), h.median()),
            (Some(0.0), Some(1.0), Some(0.5))
        );
        assert_eq!(h.std(), Some(std::f64::consts::FRAC_1_SQRT_2));
    }

    #[test]
    fn mean_and_std_are_exact_for_repeated_values() {
        let h = histogram(&[0.1; 10]);
        assert_eq!(h.mean(), Some(0.1));
        assert_eq!(h.std(), Some(0.0));
        // statistics.stdev([1.0, 0.0, 1.0]) == 0.5773502691896257
        let h = histogram(&[1.0, 0.0, 1.0]);
        assert_eq!(h.mean(), Some(2.0 / 3.0));
        assert_eq!(h.std(), Some(0.5773502691896257));
        assert_eq!(histogram(&[0.5]).std(), None);
    }

    /// Scores whose sum or squares overflow an `f64` still have the mean and deviation Python's
    /// `statistics` gives them (its figures, from CPython 3.11), not NaN.
    #[test]
    fn mean_and_std_of_huge_scores_do_not_overflow() {
        let h = histogram(&[1.5e308, 1.5e308]);
        assert_eq!((h.mean(), h.std()), (Some(1.5e308), Some(0.0)));
        assert_eq!(
            histogram(&[1e200, -1e200]).std(),
            Some(1.414213562373095e200)
        );
        assert_eq!(
            histogram(&[1e308, 1e308, 1e-300]).mean(),
            Some(6.666666666666666e307)
        );
        assert_eq!(histogram(&[1e308, -1e308, 3.0]).std(), Some(1e308));
        let max = f64::MAX;
        assert_eq!(
            histogram(&[max, max, 1.0]).mean(),
            Some(1.1984620899082105e308)
        );
    }

    #[test]
    fn wilson_interval_matches_the_closed_form() {
        // 8 of 10 at z = 1.96: the textbook interval is [0.4902, 0.9433].
        let [lo, hi] = wilson(8, 10).unwrap();
        assert!((lo - 0.4902).abs() < 1e-4, "{lo}");
        assert!((hi - 0.9433).abs() < 1e-4, "{hi}");
        // All passing: the interval stays inside [0, 1] and does not collapse.
        let [lo, hi] = wilson(20, 20).unwrap();
        assert!(lo > 0.8 && lo < 1.0, "{lo}");
        assert_eq!(hi, 1.0);
        assert_eq!(wilson(0, 0), None);
    }

    fn letta_vector(name: &str) -> serde_json::Value {
        let vectors: Vec<serde_json::Value> = serde_json::from_str(include_str!(
            "../../tests/data/conformance/letta-vectors-extra.json"
        ))
        .unwrap();
        vectors
            .into_iter()
            .find(|v| v["kind"] == "summary" && v["name"] == name)
            .unwrap()
    }

    /// letta-evals' `summarize_model`: errored samples are counted but left out of the means.
    #[test]
    fn errored_samples_are_left_out_of_metrics_as_letta_evals_does() {
        let vector = letta_vector("summarize_model");
        let metric_keys: Vec<String> =
            serde_json::from_value(vector["grader_keys"].clone()).unwrap();
        let mut a = Aggregator::new(metric_keys.iter().cloned().map(Into::into).collect());
        for r in vector["results"].as_array().unwrap() {
            let grades = r["grades"].as_object().unwrap();
            a.add(&SampleResult {
                sample_id: serde_json::from_value(r["sample_id"].clone()).unwrap(),
                grades: grades
                    .iter()
                    .map(|(k, g)| {
                        (
                            k.clone().into(),
                            Grade::scored(g["score"].as_f64().unwrap(), ""),
                        )
                    })
                    .collect(),
                reward: r["reward"]["score"].as_f64(),
                error: r.get("error").map(|e| SampleError {
                    category: ErrorCategory::Grading,
                    message: e["message"].as_str().unwrap().to_string(),
                }),
            });
        }
        let s = a.finish();
        let expected = &vector["expected"];
        assert_eq!(s.counts.total, expected["n_total"].as_u64().unwrap());
        assert_eq!(
            s.counts.total - s.counts.errored,
            expected["n_attempted"].as_u64().unwrap()
        );
        for key in &metric_keys {
            let metric = s.metric(key).unwrap();
            assert_eq!(
                metric.stats.mean,
                expected["per_metric"][key].as_f64(),
                "{key}"
            );
            assert_eq!(metric.stats.n, 2, "{key}");
        }
        assert_eq!(s.reward.as_ref().unwrap().mean, expected["reward"].as_f64());
        assert!(s.metric("c").unwrap().pass_at_k.is_none());
    }

    /// letta-evals' `summarize_runs`: the spread is the sample standard deviation.
    #[test]
    fn std_matches_letta_evals_run_statistics() {
        let vector = letta_vector("summarize_runs");
        let mut a = Aggregator::new(keys(&["c"]));
        for (id, reward) in vector["per_run_rewards"]
            .as_array()
            .unwrap()
            .iter()
            .enumerate()
        {
            let reward = reward.as_f64().unwrap();
            let mut r = row(id as i64, &[("c", reward)]);
            r.reward = Some(reward);
            a.add(&r);
        }
        let s = a.finish();
        let expected = &vector["expected"];
        let c = &s.metric("c").unwrap().stats;
        assert_eq!(c.mean, expected["per_metric"]["c"].as_f64());
        assert_eq!(c.std, expected["per_metric_std"]["c"].as_f64());
        let reward = s.reward.unwrap();
        assert_eq!(reward.mean, expected["reward"].as_f64());
        assert_eq!(reward.std, expected["reward_std"].as_f64());
        assert_eq!(reward.stderr, Some(reward.std.unwrap() / 3f64.sqrt()));
        let [lo, hi] = reward.ci95.unwrap();
        if reward.min.unwrap() < 0.0 || reward.max.unwrap() > 1.0 {
            assert!((hi - lo - 2.0 * Z95 * reward.stderr.unwrap()).abs() < 1e-12);
        } else {
            assert!(0.0 <= lo && lo <= hi && hi <= 1.0);
        }
    }

    /// The mean's interval stays within [0, 1] for scores that do: for 0/1 scores it is the
    /// Wilson interval of the pass share (the normal one would be [-0.066, 1.066] below), for
    /// scores close together it comes to the normal one, and outside [0, 1] it is the normal.
    #[test]
    fn the_mean_interval_respects_the_score_range() {
        let stats = |scores: &[f64]| {
            let mut a = Aggregator::new(keys(&["c"]));
            for (i, score) in scores.iter().enumerate() {
                a.add(&row(i as i64, &[("c", *score)]));
            }
            a.finish().metric("c").unwrap().stats.clone()
        };
        let mut binary = vec![1.0; 9];
        binary.push(0.0);
        let s = stats(&binary);
        let [lo, hi] = s.ci95.unwrap();
        let [wlo, whi] = wilson(9, 10).unwrap();
        assert!(
            (lo - wlo).abs() < 1e-12 && (hi - whi).abs() < 1e-12,
            "{lo} {hi}"
        );
        let normal_hi = s.mean.unwrap() + Z95 * s.stderr.unwrap();
        assert!(normal_hi > 1.0 && hi < 1.0);

        let [lo, hi] = stats(&[1.0; 20]).ci95.unwrap();
        assert_eq!(hi, 1.0);
        assert!((lo - wilson(20, 20).unwrap()[0]).abs() < 1e-12);
        assert_eq!(stats(&[0.5; 20]).ci95, Some([0.5, 0.5]));

        let close: Vec<f64> = (0..400).map(|i| 0.5 + f64::from(i % 3) * 0.01).collect();
        let s = stats(&close);
        let [lo, hi] = s.ci95.unwrap();
        let half = Z95 * s.stderr.unwrap();
        assert!(
            ((hi - lo) / (2.0 * half) - 1.0).abs() < 0.01,
            "{lo} {hi} {half}"
        );

        let s = stats(&[-2.0, 3.0, 0.5]);
        let [lo, hi] = s.ci95.unwrap();
        assert!((hi - lo - 2.0 * Z95 * s.stderr.unwrap()).abs() < 1e-12);
        assert!(lo < -2.0);
    }

    #[test]
    fn error_and_skip_grades_are_counted_apart() {
        let mut a = Aggregator::new(keys(&["c", "missing"]));
        let mut r = row(0, &[]);
        r.grades = vec![("c".into(), Grade::error("sandbox: fuel exhausted"))];
        a.add(&r);
        r.grades = vec![("c".into(), Grade::new(0.0, Status::Skip, "no expected"))];
        a.add(&r);
        r.grades = vec![("c".into(), Grade::new(f64::NAN, Status::Pass, "bad"))];
        a.add(&r);
        r.grades = vec![("c".into(), Grade::pass("ok"))];
        a.add(&r);
        let s = a.finish();
        let c = s.metric("c").unwrap();
        assert_eq!((c.stats.n, c.errored, c.skipped), (1, 2, 1));
        assert_eq!(c.pass_rate, Some(1.0));
        let missing = s.metric("missing").unwrap();
        assert_eq!(missing.stats.n, 0);
        assert_eq!(missing.stats.mean, None);
        assert_eq!(missing.pass_rate, None);
        assert_eq!((s.counts.errored, s.counts.passed), (1, 3));
    }

    #[test]
    fn pass_at_k_uses_the_unbiased_estimator_per_sample() {
        let mut a = Aggregator::new(keys(&["c"]));
        // id 0: 1 pass of 3 runs; id 1: 3 of 3; id 2: 0 of 4.
        for (id, scores) in [
            (0, vec![1.0, 0.0, 0.0]),
            (1, vec![1.0; 3]),
            (2, vec![0.0; 4]),
        ] {
            for score in scores {
                a.add(&row(id, &[("c", score)]));
            }
        }
        let s = a.finish();
        assert_eq!((s.counts.total, s.counts.samples), (10, 3));
        let c = s.metric("c").unwrap();
        let at = c.pass_at_k.as_ref().unwrap();
        let hat = c.pass_hat_k.as_ref().unwrap();
        assert_eq!(at.keys().copied().collect::<Vec<_>>(), vec![1, 2, 3]);
        // pass@k of id 0: 1 - C(2,k)/C(3,k) = 1/3, 2/3, 1.
        let close = |a: f64, b: f64| (a - b).abs() < 1e-12;
        assert!(close(at[&1], (1.0 / 3.0 + 1.0 + 0.0) / 3.0));
        assert!(close(at[&2], (2.0 / 3.0 + 1.0 + 0.0) / 3.0));
        assert!(close(at[&3], (1.0 + 1.0 + 0.0) / 3.0));
        // pass^k of id 0: C(1,k)/C(3,k) = 1/3, 0, 0.
        assert!(close(hat[&1], at[&1]));
        assert!(close(hat[&2], 1.0 / 3.0));
        assert!(close(hat[&3], 1.0 / 3.0));
    }

    #[test]
    fn summary_does_not_depend_on_arrival_order() {
        let mut rows = Vec::new();
        for i in 0..200_i64 {
            let score = [0.1, 0.7, 0.3, 1.0, 0.0][(i * 7 % 5) as usize];
            let mut r = row(i % 60, &[("c", score), ("q", 1.0 - score)]);
            r.reward = Some(score * 0.3 + 0.1);
            rows.push(r);
        }
        let summarise = |rows: &[SampleResult]| {
            let mut a = Aggregator::new(keys(&["c", "q"]));
            rows.iter().for_each(|r| a.add(r));
            serde_json::to_string(&a.finish()).unwrap()
        };
        let forward = summarise(&rows);
        rows.reverse();
        assert_eq!(forward, summarise(&rows));
        rows.sort_by_key(|r| (r.sample_id.clone(), r.grades[0].1.score.to_bits()));
        assert_eq!(forward, summarise(&rows));
    }

    #[test]
    fn serialises_the_documented_shape() {
        let mut a = Aggregator::new(keys(&["exact", "contains"]));
        a.add(&row(0, &[("exact", 1.0), ("contains", 1.0)]));
        a.add(&row(1, &[("exact", 0.0), ("contains", 1.0)]));
        let json = serde_json::to_value(a.finish()).unwrap();
        assert_eq!(
            json["counts"],
            serde_json::json!({"total": 2, "samples": 2, "passed": 1, "failed": 1, "errored": 0})
        );
        let metric_order: Vec<&String> = json["metrics"].as_object().unwrap().keys().collect();
        assert_eq!(metric_order, ["exact", "contains"]);
        let exact = &json["metrics"]["exact"];
        for field in [
            "n",
            "mean",
            "std",
            "stderr",
            "ci95",
            "min",
            "max",
            "p50",
            "p90",
            "p95",
            "p99",
            "pass_rate",
            "pass_rate_ci95",
            "errored",
            "skipped",
        ] {
            assert!(exact.get(field).is_some(), "missing {field} in {exact}");
        }
        assert!(exact.get("pass_at_k").is_none());
        assert!(exact.get("scores").is_none());
        assert_eq!(exact["mean"], 0.5);
        assert_eq!(json["reward"], serde_json::Value::Null);
        assert_eq!(json["gate"], serde_json::Value::Null);
    }

    #[test]
    fn streaming_with_a_second_look_equals_tracking_every_id() {
        let mut rows = Vec::new();
        for i in 0..5_000_i64 {
            let score = [0.1, 0.7, 0.3, 1.0, 0.0][(i * 7 % 5) as usize];
            // Ids below 40 repeat; the rest occur once.
            let id = if i < 400 { i % 40 } else { i };
            let mut r = row(id, &[("c", score), ("q", 1.0 - score)]);
            if i % 97 == 0 {
                r.error = Some(SampleError {
                    category: ErrorCategory::Grading,
                    message: "boom".into(),
                });
            }
            rows.push(r);
        }
        let mut exact = Aggregator::new(keys(&["c", "q"]));
        let n = rows.len() as u64;
        let mut streaming = Aggregator::streaming(keys(&["c", "q"]), move || n);
        for r in &rows {
            exact.add(r);
            streaming.add(r);
        }
        assert!(streaming.needs_regroup());
        rows.iter().for_each(|r| streaming.regroup(r));
        let (exact, streaming) = (exact.finish(), streaming.finish());
        assert!(exact.metric("c").unwrap().pass_at_k.is_some());
        assert_eq!(
            serde_json::to_string(&exact).unwrap(),
            serde_json::to_string(&streaming).unwrap()
        );
    }

    #[test]
    fn small_integer_ids_are_tracked_exactly() {
        let mut streaming = Aggregator::streaming(keys(&["c"]), || 10);
        for i in (0..200_000).rev() {
            streaming.add(&row(i, &[("c", 1.0)]));
        }
        // Many more ids than expected, none repeated: nothing to read again.
        assert!(!streaming.needs_regroup());
        streaming.add(&row(70_000, &[("c", 0.0)]));
        streaming.add(&row(-1, &[("c", 0.0)]));
        assert!(streaming.needs_regroup());
        assert!(streaming.may_repeat(&SampleId::Int(70_000)));
        assert!(!streaming.may_repeat(&SampleId::Int(70_001)));
        assert!(!streaming.may_repeat(&SampleId::Int(-1)));
    }

    #[test]
    fn the_expected_row_count_is_asked_once_and_only_for_the_filter() {
        use std::sync::Arc;
        use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};
        let asked = Arc::new(AtomicUsize::new(0));
        let counter = asked.clone();
        let mut streaming = Aggregator::streaming(keys(&["c"]), move || {
            counter.fetch_add(1, SeqCst);
            1_000
        });
        (0..1_000).for_each(|i| streaming.add(&row(i, &[("c", 1.0)])));
        assert_eq!(asked.load(SeqCst), 0);
        streaming.add(&row(-1, &[("c", 1.0)]));
        streaming.add(&row(DENSE_IDS, &[("c", 1.0)]));
        assert_eq!(asked.load(SeqCst), 1);
        assert!(!streaming.needs_regroup());
    }

    #[test]
    fn ids_wrongly_flagged_as_repeats_change_nothing() {
        // Far more ids than the filter was sized for: many are flagged though none repeats.
        // (Ids past the exactly tracked ones go to the filter.)
        let mut exact = Aggregator::new(keys(&["c"]));
        let mut streaming = Aggregator::streaming(keys(&["c"]), || 10);
        let rows: Vec<SampleResult> = (DENSE_IDS - 10..DENSE_IDS + 20_000)
            .map(|i| row(i, &[("c", if i % 3 == 0 { 0.0 } else { 1.0 })]))
            .collect();
        for r in &rows {
            exact.add(r);
            streaming.add(r);
        }
        assert!(streaming.needs_regroup());
        rows.iter().for_each(|r| streaming.regroup(r));
        let streaming = streaming.finish();
        assert_eq!(streaming.counts.samples, 20_010);
        assert!(streaming.metric("c").unwrap().pass_at_k.is_none());
        assert_eq!(
            serde_json::to_string(&exact.finish()).unwrap(),
            serde_json::to_string(&streaming).unwrap()
        );
    }
}
