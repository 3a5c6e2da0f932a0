//! Running a suite, the library's one entry: [`prepare`] checks everything that can be checked
//! before any sample is graded, and [`run`] grades the selected rows, writes `results.jsonl`,
//! `summary.json` and the JUnit report, and applies the gate. What it returns, an [`Outcome`] or
//! the [`RunError`]s that stopped it, is all a caller prints; an [`Observer`] sees the results
//! as they are written (the command line's progress bar and list of failing samples).

pub mod engine;
pub mod grading;
mod merge;
mod retry;
mod session;
pub mod setup;
mod verify;

use std::collections::BTreeMap;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;

pub use engine::{Filter, Validation, on_second_ctrl_c};
pub use merge::{MergeError, Shards, merge};
pub use setup::{Options, Prepared, default_cache_dir, prepare};
pub use verify::{DEFAULT_SEED, Difference, IsolationCheck, VerifyIsolation};

use crate::config::suite::SuiteError;
use crate::fsio;
use crate::grade::GradeKey;
use crate::grade::grants::Reach;
use crate::input::dataset::{Item, ItemError, Items, RowCount, SourceError};
use crate::input::select::result_id;
use crate::input::shard::Shard;
use crate::output::junit::JunitWriter;
use crate::output::record::{
    FileStamp, Fingerprint, JudgeCalls, JudgeDown, RUN_FILE, RecordError, RunRecord, Tokens,
};
use crate::output::result::{self, ResultsError, ResultsFile, SampleResult};
use crate::output::summary::{Aggregator, Summary};
use crate::output::{RESULTS_FILE, SUMMARY_FILE};
use engine::{PassError, Selected, Selection, Sink};

/// What `gavel run` may change about a suite's run.
#[derive(Debug, Clone, Default)]
pub struct RunOptions {
    /// The output folder; the suite's `output`, else `results/<suite name>`, when `None`.
    pub output_dir: Option<PathBuf>,
    /// Samples graded at once, and requests in flight to every judge at once; the suite's
    /// `concurrency`, else the number of cores (and each judge's own `concurrency:` for its
    /// requests), when `None`.
    pub concurrency: Option<usize>,
    /// Grade at most this many samples (after the filters); the suite's `max_samples` when `None`.
    pub max_samples: Option<u64>,
    /// Grade only samples that match one of these (all of them when empty).
    pub filters: Vec<Filter>,
    /// Keep the results an interrupted run wrote and grade only what is missing.
    pub resume: bool,
    /// Replace an unfinished run in the output folder (without it, such a run is refused).
    pub overwrite: bool,
    /// Grade again only what is in error in the finished run in the output folder, keeping
    /// every other result and grade (see `run/retry.rs`).
    pub retry_errors: bool,
    /// Grade the valid rows of a dataset with invalid ones, each invalid row an error result.
    pub skip_invalid: bool,
    /// Also write a JUnit report here.
    pub junit: Option<PathBuf>,
    /// Grade only the samples of this shard (`gavel merge` joins the shards' folders).
    pub shard: Option<Shard>,
    /// After the run, grade some of its samples again in fresh instances and report each
    /// grade that differs (see `run/verify.rs`).
    pub verify_isolation: Option<VerifyIsolation>,
}

/// How a run ended, short of an error.
#[derive(Debug)]
pub enum Outcome {
    /// The selected samples were graded (all of them, unless `interrupted`).
    Graded(Box<Graded>),
    /// The dataset has invalid rows: nothing of this run was graded, or kept. `not_restored`
    /// says what of an earlier run's output could not be put back.
    Invalid {
        validation: Validation,
        not_restored: Option<RunError>,
    },
}

/// What a run that graded wrote.
#[derive(Debug)]
pub struct Graded {
    pub summary: Summary,
    /// `summary.json`'s text, without its final newline.
    pub summary_json: String,
    pub out_dir: PathBuf,
    pub results_path: PathBuf,
    /// Ctrl-C stopped the run: what finished is written, and `--resume` continues (retrying
    /// errors, the results not retried yet keep theirs, and `--retry-errors` retries them).
    pub interrupted: bool,
    /// The gate passed, or the suite has none (never for an interrupted run: its data is
    /// partial).
    pub gate_passed: bool,
    /// What was written to `run.json`.
    pub record: RunRecord,
    /// A judge failed the run whatever its gate says: it answered none of the gradings it was
    /// asked for (every grade it gave is an error), or it could not be used while errors were
    /// retried (here, or in a merged shard), and what it left in error is kept.
    pub judge_failed: Option<RunError>,
    /// What `--verify-isolation` found (also in the summary, as `isolation_check`).
    pub isolation: Option<IsolationCheck>,
}

impl Graded {
    /// What a run wrote that graded every sample, with no judge that failed and no isolation
    /// check; `concluded` is what [`conclude`] made of it.
    fn whole(
        concluded: (Summary, String, bool),
        out_dir: PathBuf,
        results_path: PathBuf,
        record: RunRecord,
    ) -> Graded {
        let (summary, summary_json, gate_passed) = concluded;
        Graded {
            summary,
            summary_json,
            out_dir,
            results_path,
            interrupted: false,
            gate_passed,
            record,
            judge_failed: None,
            isolation: None,
        }
    }
}

/// Why a run stopped without an outcome. Each is one line of the command line's report.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    #[error("cannot create the output folder {}: {source}", .dir.display())]
    OutputDir {
        dir: PathBuf,
        source: std::io::Error,
    },
    #[error("-o {0}")]
    NotAFolder(String),
    /// A write that failed, its error naming the file.
    #[error(transparent)]
    Named(std::io::Error),
    #[error("cannot write {}: {source}", .path.display())]
    Write {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("cannot write the JUnit report: {0}")]
    Junit(std::io::Error),
    #[error("cannot restore {}: {source}", .path.display())]
    Restore {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("cannot render the summary: {0}")]
    Render(serde_json::Error),
    #[error(transparent)]
    Record(#[from] RecordError),
    /// A mistake in the suite that only a run finds: a name that makes no default folder.
    #[error(transparent)]
    Suite(SuiteError),
    #[error(transparent)]
    Overwrites(#[from] fsio::Overwrites),
    #[error(
        "cannot {what} the run in {}: it was graded with other inputs, and its grades would be \
         mixed with new ones:\n  {}\ngrade afresh without {flag} (with --overwrite if the run is unfinished), or put back what \
         changed",
        .dir.display(), .changes.join("\n  ")
    )]
    ResumeMismatch {
        dir: PathBuf,
        changes: Vec<String>,
        /// What was asked: `resume`, or `retry the errors of`; and its flag.
        what: &'static str,
        flag: &'static str,
    },
    #[error(
        "{} holds no finished run to retry; grade it first without --retry-errors",
        .dir.display()
    )]
    NoRun { dir: PathBuf },
    #[error(
        "{} holds an unfinished run; finish it first with --resume, then retry its errors with \
         --retry-errors",
        .dir.display()
    )]
    RetryUnfinished { dir: PathBuf },
    #[error(
        "{} holds an unfinished run ({results} results); continue it with --resume, or replace \
         it with --overwrite",
        .dir.display()
    )]
    Unfinished { dir: PathBuf, results: u64 },
    #[error(
        "{} holds a results.jsonl but no run.json, so it is no run gavel can tell for its own; \
         replace it with --overwrite, or give the run another folder with -o",
        .dir.display()
    )]
    NotARun { dir: PathBuf },
    #[error(
        "judge `{key}` cannot be used, and no more requests were sent to it: {reason}\n\
         the {kept} results graded before it are kept in {}; once it is fixed, {next}",
        .dir.display()
    )]
    JudgeDown {
        key: String,
        reason: String,
        kept: u64,
        dir: PathBuf,
        /// How to go on once the judge works.
        next: String,
    },
    #[error(
        "judge `{key}` answered none of the {failed} gradings it was asked for, so every grade \
         it gave is an error; the first: {reason}\nthe results are kept in {}; once the judge \
         answers, --retry-errors grades them again",
        .dir.display()
    )]
    JudgeNeverAnswered {
        key: String,
        failed: u64,
        reason: String,
        dir: PathBuf,
    },
    #[error("nothing to grade: {what}")]
    NothingSelected { what: String },
    #[error(
        "cannot verify isolation: grading the chosen samples again in fresh instances failed: \
         {0}; the run's results are kept"
    )]
    IsolationCheck(String),
    #[error(transparent)]
    Source(#[from] SourceError),
    #[error(transparent)]
    Pass(#[from] PassError),
    #[error(transparent)]
    Results(#[from] ResultsError),
    #[error(transparent)]
    Merge(#[from] MergeError),
}

/// What stopped a run: the error that stopped it, and `also` what else failed as it stopped
/// (an earlier run's files that could not be put back, say), in the order it happened. Each is
/// one line of the command line's report.
#[derive(Debug)]
pub struct RunFailure {
    pub first: RunError,
    pub also: Vec<RunError>,
}

impl RunFailure {
    /// The failure of `errors`, in order; `None` when there are none.
    pub fn of(errors: Vec<RunError>) -> Option<RunFailure> {
        let mut errors = errors.into_iter();
        let first = errors.next()?;
        Some(RunFailure {
            first,
            also: errors.collect(),
        })
    }

    /// `error`, after what failed `earlier`.
    pub fn after(earlier: impl IntoIterator<Item = RunError>, error: RunError) -> RunFailure {
        let mut earlier = earlier.into_iter();
        match earlier.next() {
            Some(first) => RunFailure {
                first,
                also: earlier.chain([error]).collect(),
            },
            None => error.into(),
        }
    }

    /// This failure, and then `more`.
    #[must_use]
    pub fn with(mut self, more: impl IntoIterator<Item = RunError>) -> RunFailure {
        self.also.extend(more);
        self
    }

    /// Every error, the first first.
    pub fn errors(&self) -> impl Iterator<Item = &RunError> {
        std::iter::once(&self.first).chain(&self.also)
    }
}

impl<E: Into<RunError>> From<E> for RunFailure {
    fn from(error: E) -> RunFailure {
        RunFailure {
            first: error.into(),
            also: Vec::new(),
        }
    }
}

/// Sees a run's results as they are written, in input order.
pub trait Observer: Send {
    /// A result an earlier run wrote: read back on `--resume` before grading starts, or kept
    /// by `--retry-errors` (in order among the results it grades again).
    fn previous(&mut self, result: &SampleResult);
    /// `--retry-errors` will grade `grades` grades of `samples` samples again (none: nothing
    /// is graded).
    fn retrying(&mut self, grades: u64, samples: u64);
    /// Grading starts: `total` items will have results, `already` of them from earlier runs.
    fn start(&mut self, total: RowCount, already: u64);
    /// A result graded by this run.
    fn graded(&mut self, result: &SampleResult);
    /// Ctrl-C: no new sample is started; those in flight finish or are abandoned.
    fn stopping(&mut self);
    /// Grading stopped; `complete` when every selected item was graded.
    fn finish(&mut self, complete: bool);
}

/// Samples graded at once at most: each is a thread, and a suite's letta-evals
/// `max_concurrent` (meant for requests to an agent) can be in the thousands.
pub const MAX_WORKERS: usize = 1024;

/// Samples graded at once when neither the command line nor the suite says: one per core.
pub fn default_workers() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

/// Samples graded at once: `given` (the command line's), else the suite's `concurrency`, else
/// one per core. A concurrency given also bounds the requests in flight to the plan's judges,
/// which a grader's own `concurrency:` may only lower.
pub fn workers(prepared: &Prepared, given: Option<usize>) -> usize {
    let given = given
        .or(prepared.suite.concurrency())
        .map(|n| n.clamp(1, MAX_WORKERS));
    if let Some(n) = given {
        prepared.plan.requests.set(n);
    }
    given.unwrap_or_else(|| default_workers().clamp(1, MAX_WORKERS))
}

/// Grades a prepared suite in its output folder (see `run/session.rs`).
pub fn run(
    prepared: &Prepared,
    options: &RunOptions,
    observer: &mut dyn Observer,
) -> Result<Outcome, RunFailure> {
    session::Session::open(prepared, options)?.run(observer)
}

/// Why a run that was not interrupted failed though it graded every sample: a judge that
/// answered none of its gradings.
fn judge_failed(prepared: &Prepared, dir: &Path, interrupted: bool) -> Option<RunError> {
    if interrupted {
        return None;
    }
    let calls = prepared.plan.judge_never_answered()?;
    Some(never_answered(calls, dir))
}

/// The error of a run whose judge answered none of the gradings `calls` counts.
fn never_answered(calls: JudgeCalls, dir: &Path) -> RunError {
    RunError::JudgeNeverAnswered {
        key: calls.key,
        failed: calls.failed,
        reason: calls.first_failure.unwrap_or_default(),
        dir: dir.to_path_buf(),
    }
}

/// How a run reads its options and the suite.
struct Setting {
    reward: Option<Arc<crate::config::reward::RewardSpec>>,
    workers: usize,
    selection: Selection,
    out_dir: PathBuf,
    results_path: PathBuf,
}

impl Setting {
    /// The run's setting.
    fn of(prepared: &Prepared, options: &RunOptions) -> Result<Setting, RunError> {
        let out_dir = output_dir(options, prepared)?;
        Ok(Setting {
            reward: prepared.suite.file.reward.clone().map(Arc::new),
            workers: workers(prepared, options.concurrency),
            selection: Selection {
                max_samples: options.max_samples.or(prepared.suite.file.max_samples),
                filters: options.filters.clone(),
                skip: 0,
                shard: options.shard,
            },
            results_path: out_dir.join(RESULTS_FILE),
            out_dir,
        })
    }
}

/// The files a run reads besides those of its output folder, each with what it is: its `suite`,
/// its `dataset` and its recorded `runs`.
pub fn inputs(suite: &Path, dataset: &Path, runs: &[PathBuf]) -> Vec<(String, PathBuf)> {
    let suite = ("the suite".to_string(), suite.to_path_buf());
    let dataset = ("the dataset".to_string(), dataset.to_path_buf());
    let runs = runs
        .iter()
        .map(|run| ("the recorded runs".to_string(), run.clone()));
    [suite, dataset].into_iter().chain(runs).collect()
}

/// [`inputs`] of a run of `prepared`.
fn inputs_of(prepared: &Prepared) -> Vec<(String, PathBuf)> {
    inputs(&prepared.suite.path, &prepared.dataset, &prepared.runs)
}

/// The files a run writes: those of its folder `out_dir` (chosen by `-o`), and the JUnit
/// report at `junit`.
pub fn outputs(out_dir: &Path, junit: Option<&Path>) -> Vec<fsio::Written> {
    let folder = crate::output::run_files(out_dir).map(|(what, path)| fsio::Written {
        what: format!("the run's {what}"),
        path,
        flag: "-o",
    });
    let junit = junit.map(|path| fsio::Written {
        what: "the JUnit report".to_string(),
        path: path.to_path_buf(),
        flag: "--junit",
    });
    folder.into_iter().chain(junit).collect()
}

/// Refuses to go on with the run recorded in `dir` (`what`, asked by `flag`) when this run
/// would grade with other inputs: its grades would be mixed with new ones.
fn same_inputs(
    recorded: &RunRecord,
    now: &RunRecord,
    dir: &Path,
    what: &'static str,
    flag: &'static str,
) -> Result<(), RunError> {
    let changes = recorded.changes(now);
    if changes.is_empty() {
        return Ok(());
    }
    Err(RunError::ResumeMismatch {
        dir: dir.to_path_buf(),
        changes,
        what,
        flag,
    })
}

/// The aggregator of a run of `prepared` that will have `total` results.
fn aggregator(prepared: &Prepared, total: impl Fn() -> u64 + Send + 'static) -> Aggregator {
    Aggregator::streaming(
        prepared
            .plan
            .metrics
            .iter()
            .map(|m| GradeKey::Borrowed(m.key))
            .collect(),
        total,
    )
}

type Junit = JunitWriter<BufWriter<std::fs::File>>;

fn open_junit(prepared: &Prepared, path: Option<&Path>) -> Result<Option<Junit>, RunError> {
    let Some(path) = path else { return Ok(None) };
    fsio::create_output(path)
        .and_then(|file| JunitWriter::new(BufWriter::new(file), &prepared.suite.file.name))
        .map(Some)
        .map_err(|source| write_error(path, source))
}

fn finish_junit(junit: Option<Junit>, path: Option<&Path>) -> Result<(), RunError> {
    if let (Some(writer), Some(path)) = (junit, path) {
        writer
            .finish()
            .and_then(|mut out| out.flush())
            .map_err(|source| write_error(path, source))?;
    }
    Ok(())
}

/// Hands the results an earlier run wrote to `path` to the aggregates, the observer and the
/// JUnit report, in order; how many there are. With `same`, each is first checked to be of
/// this run's sample.
fn read_back(
    path: &Path,
    aggregator: &mut Aggregator,
    observer: &mut dyn Observer,
    mut junit: Option<&mut Junit>,
    mut same: Option<&mut SameSamples>,
) -> Result<u64, RunError> {
    let mut junit_error = None;
    let read = result::read_previous(path, |r| {
        if let Some(same) = same.as_mut()
            && !same.check(&r)
        {
            return false;
        }
        aggregator.add(&r);
        observer.previous(&r);
        if let Some(writer) = junit.as_mut()
            && let Err(e) = writer.add(&r)
        {
            junit_error.get_or_insert(e);
        }
        true
    });
    if let Some(e) = junit_error {
        return Err(RunError::Junit(e));
    }
    Ok(read?)
}

/// Checks, line by line, that the results an earlier run wrote are of this run's selected
/// samples, in their order: the results of another suite's or dataset's run would otherwise be
/// continued or retried as this run's, and counted for samples they are not of. What it read of
/// the selection, the rest is what a resumed run grades ([`SameSamples::rest`]).
struct SameSamples {
    selected: Selected,
    path: PathBuf,
    line: u64,
    /// The first line that is not of this run, said as where and why.
    foreign: Option<String>,
    /// The last items checked, at most `keep` of them, for [`SameSamples::rest`].
    recent: std::collections::VecDeque<Result<Item, ItemError>>,
    keep: usize,
    /// The suite's metrics, which each result must have graded.
    metrics: Vec<&'static str>,
}

impl SameSamples {
    /// Checks against `selection`; `keep`, how many of the items checked last
    /// [`SameSamples::rest`] may give again.
    fn new(
        prepared: &Prepared,
        selection: &Selection,
        path: &Path,
        keep: usize,
    ) -> Result<SameSamples, RunError> {
        let items = prepared.items()?;
        let selection = Selection {
            skip: 0,
            ..selection.clone()
        };
        Ok(SameSamples {
            selected: Selected::new(items, selection),
            path: path.to_path_buf(),
            line: 0,
            foreign: None,
            recent: std::collections::VecDeque::with_capacity(keep),
            keep,
            metrics: prepared.plan.metrics.iter().map(|m| m.key).collect(),
        })
    }

    /// Whether `result`, the next line's, is of the next selected sample, graded on the
    /// suite's metrics.
    fn check(&mut self, result: &SampleResult) -> bool {
        self.line += 1;
        let (file, line, held) = (self.path.clone(), self.line, &result.sample_id);
        let next = self.selected.next_item();
        let id = next
            .as_ref()
            .map(|next| next.as_ref().ok().and_then(result_id));
        if let Some(next) = next.filter(|_| self.keep > 0) {
            if self.recent.len() == self.keep {
                self.recent.pop_front();
            }
            self.recent.push_back(next);
        }
        self.foreign = foreign_line(&file, line, &held.to_string(), id)
            .or_else(|| foreign_grades(&file, line, result, &self.metrics));
        self.foreign.is_none()
    }

    /// Refuses to `what` (asked by `flag`) the run in `dir` when a line was not of it.
    fn finish(
        &mut self,
        dir: &Path,
        what: &'static str,
        flag: &'static str,
    ) -> Result<(), RunError> {
        match self.foreign.take() {
            None => Ok(()),
            Some(line) => Err(foreign_run(dir, line, what, flag)),
        }
    }

    /// The selected items after those checked, the last `again` of those checked first (at
    /// most the `keep` asked).
    fn rest(mut self, again: u64) -> Selected {
        let skipped = self.recent.len().saturating_sub(again as usize);
        self.selected.again(self.recent.drain(skipped..))
    }
}

/// Refuses to `what` (asked by `flag`) the run in `dir`, whose results file has `line`, said
/// as where and why, that is not of it.
fn foreign_run(dir: &Path, line: String, what: &'static str, flag: &'static str) -> RunError {
    RunError::ResumeMismatch {
        dir: dir.to_path_buf(),
        changes: vec![line],
        what,
        flag,
    }
}

/// Why line `line` of the results file `file`, the result of sample `held`, is not of this run:
/// `next` is the id of the sample the run selects at its place (`None` when it has no more,
/// `Some(None)` when the item's id cannot be read, which is not held against it).
fn foreign_line(
    file: &Path,
    line: u64,
    held: &str,
    next: Option<Option<String>>,
) -> Option<String> {
    let file = file.display();
    match next {
        None => Some(format!(
            "{file}:{line}: one result more than the {} samples this run grades",
            line - 1
        )),
        Some(Some(id)) if id != held => Some(format!(
            "{file}:{line}: the result of sample `{held}`, where this run's sample {line} is \
             `{id}`"
        )),
        _ => None,
    }
}

/// Why line `line` of the results file `file`, `result`, is not of a run of the suite's
/// `metrics`: a grade of another metric, or one of them missing
/// ([`SampleResult::foreign_grades`]).
fn foreign_grades(
    file: &Path,
    line: u64,
    result: &SampleResult,
    metrics: &[&str],
) -> Option<String> {
    let what = result.foreign_grades(metrics)?;
    Some(format!(
        "{}:{line}: sample `{}`: {what}",
        file.display(),
        result.sample_id
    ))
}

/// Checks, as a `--retry-errors` pass reads the selection, that each line of the results being
/// retried is of the sample read at its place, so that the dataset is read once; the pass's
/// results take the place of the old only when every line was.
struct ResultsCheck {
    lines: result::ResultLines,
    path: PathBuf,
    /// The first line that is not of this run, said as where and why.
    foreign: Option<String>,
}

impl ResultsCheck {
    fn open(path: &Path) -> Result<ResultsCheck, RunError> {
        Ok(ResultsCheck {
            lines: result::ResultLines::open(path)?,
            path: path.to_path_buf(),
            foreign: None,
        })
    }

    /// The first line found not of this run; once the pass read every selected item
    /// (`complete`), a line past them is one.
    fn finish(&mut self, complete: bool) -> Option<String> {
        if self.foreign.is_none() && complete {
            let line = self.lines.line + 1;
            if let Ok(Some(text)) = self.lines.next_line()
                && let Ok(result) = result::parse_line(text)
            {
                self.foreign = foreign_line(&self.path, line, &result.sample_id.to_string(), None);
            }
        }
        self.foreign.take()
    }
}

impl engine::Check for ResultsCheck {
    fn item(&mut self, next: &Result<Item, ItemError>) -> bool {
        let line = self.lines.line + 1;
        // A line that cannot be read fails the retry where its result is kept or retried.
        if let Ok(Some(text)) = self.lines.next_line()
            && let Ok(result) = result::parse_line(text)
        {
            let id = next.as_ref().ok().and_then(result_id);
            self.foreign = foreign_line(&self.path, line, &result.sample_id.to_string(), Some(id));
        }
        self.foreign.is_none()
    }
}

/// The summary of the results file in `out_dir`, all of whose results `aggregator` has seen,
/// with the gate applied, written to `summary.json`: the summary, its text, and whether the
/// gate passed. `summary.json` has `isolation_check` too when `--verify-isolation` made one.
fn conclude(
    prepared: &Prepared,
    mut aggregator: Aggregator,
    out_dir: &Path,
    partial: bool,
    shard: Option<Shard>,
    isolation: Option<&IsolationCheck>,
) -> Result<(Summary, String, bool), RunError> {
    aggregator.regroup_file(&out_dir.join(RESULTS_FILE))?;
    let mut summary = aggregator.finish();
    // A gate applied to part of the data says nothing about the whole: an interrupted run's
    // summary has none, and says it is partial; a shard's has none either, and `gavel merge`
    // applies it to the whole.
    summary.interrupted = partial;
    let gate_passed = match &prepared.suite.file.gate {
        Some(_) if partial => false,
        Some(_) if shard.is_some() => true,
        Some(gate) => gate.apply(&mut summary),
        None => true,
    };
    let summary_path = out_dir.join(SUMMARY_FILE);
    #[derive(serde::Serialize)]
    struct Written<'s> {
        #[serde(flatten)]
        summary: &'s Summary,
        #[serde(skip_serializing_if = "Option::is_none")]
        isolation_check: Option<&'s IsolationCheck>,
    }
    let written = Written {
        summary: &summary,
        isolation_check: isolation,
    };
    let summary_json = serde_json::to_string_pretty(&written).map_err(RunError::Render)?;
    fsio::write_output(&summary_path, format!("{summary_json}\n").as_bytes())
        .map_err(|source| write_error(&summary_path, source))?;
    Ok((summary, summary_json, gate_passed))
}

/// The judge whose endpoint could not be used, which stopped the pass.
fn judge_stopped(prepared: &Prepared) -> JudgeDown {
    let (key, reason) = prepared
        .plan
        .judge_down()
        .map(|(key, reason)| (key.to_string(), reason))
        .unwrap_or_default();
    JudgeDown { key, reason }
}

/// Why a run stopped (or failed) when `stopped`'s endpoint could not be used, with `kept`
/// results kept in `dir`; `next` says how to go on.
fn judge_down(stopped: JudgeDown, kept: u64, dir: PathBuf, next: String) -> RunError {
    let JudgeDown { key, reason } = stopped;
    RunError::JudgeDown {
        key,
        reason,
        kept,
        dir,
        next,
    }
}

fn write_error(path: &Path, source: std::io::Error) -> RunError {
    // A results file's own failures name it already.
    if source
        .get_ref()
        .is_some_and(|e| e.is::<crate::output::result::WriteFailed>())
    {
        return RunError::Named(source);
    }
    RunError::Write {
        path: path.to_path_buf(),
        source,
    }
}

fn output_dir(options: &RunOptions, prepared: &Prepared) -> Result<PathBuf, RunError> {
    let not_a_folder = |dir: &Path| {
        format!(
            "{} is not a folder: name a folder for the run (gavel makes it if it is not there)",
            dir.display()
        )
    };
    let suite = &prepared.suite;
    if let Some(dir) = &options.output_dir {
        return match dir.exists() && !dir.is_dir() {
            true => Err(RunError::NotAFolder(not_a_folder(dir))),
            false => Ok(dir.clone()),
        };
    }
    if let Some(dir) = &suite.file.output {
        let dir = suite.resolve(dir);
        if dir.exists() && !dir.is_dir() {
            let error = SuiteError::at(&suite.path, "output", not_a_folder(&dir));
            return Err(RunError::Suite(suite.locate(error)));
        }
        return Ok(dir);
    }
    default_output_dir(&suite.file.name).ok_or_else(|| {
        let unnamed = SuiteError::at(
            &suite.path,
            "name",
            format!(
                "{:?} cannot name the run's default folder: results/<name> would be {}, not a \
                 folder of its own inside results/",
                suite.file.name,
                Path::new("results")
                    .join(sanitise(&suite.file.name))
                    .display()
            ),
        )
        .with_hint(
            "give the suite a name with a letter or digit in it, or its output folder with \
             `output:` in the suite or -o DIR",
        );
        RunError::Suite(suite.locate(unnamed))
    })
}

/// Where the run of a suite named `name` is written when neither `-o` nor the suite says:
/// `results/<name>`, the name's characters a folder name should not hold each replaced by `-`.
/// `None` when that is no folder of its own inside `results/`: a name that is empty, `.` or `..`
/// would put the run in `results/` itself or in the folder above it.
pub fn default_output_dir(name: &str) -> Option<PathBuf> {
    let name = sanitise(name);
    if matches!(name.as_str(), "" | "." | "..") {
        return None;
    }
    Some(Path::new("results").join(name))
}

/// A suite name as a folder name.
fn sanitise(name: &str) -> String {
    name.chars()
        .map(|c| {
            if c.is_alphanumeric() || "-_.".contains(c) {
                c
            } else {
                '-'
            }
        })
        .collect()
}

/// Parses every selected row without grading (a run refuses bad rows before grading).
pub fn check_rows(
    prepared: &Prepared,
    selection: Selection,
    workers: usize,
) -> Result<Validation, RunError> {
    let items = prepared.items()?;
    let validation = engine::validate(
        Selected::new(items, selection),
        &prepared.parser,
        &prepared.plan,
        workers,
    )?;
    Ok(validation)
}

/// The output folder's `run.json` as this run found it: compared on `--resume`, and put back
/// when nothing of this run is kept.
struct PreviousRecord {
    path: PathBuf,
    text: Option<Vec<u8>>,
    record: Option<RunRecord>,
}

impl PreviousRecord {
    /// Refuses to replace, unless asked (`overwrite`), the results in `out_dir` (at
    /// `results_path`) that are not a finished run's: an unfinished run's, or results without
    /// the record of a run (someone else's file, or a run whose record was removed).
    fn replaceable(
        &self,
        out_dir: &Path,
        results_path: &Path,
        overwrite: bool,
    ) -> Result<(), RunError> {
        if overwrite {
            return Ok(());
        }
        match &self.record {
            // A link planted there is refused as one when the run writes, not taken for
            // results: only a regular file (not looked through) that holds something is
            // someone's.
            None if std::fs::symlink_metadata(results_path)
                .is_ok_and(|m| m.is_file() && m.len() > 0) =>
            {
                Err(RunError::NotARun {
                    dir: out_dir.to_path_buf(),
                })
            }
            // The unfinished run's results, wherever a link there leads (`count_lines`'s too).
            Some(recorded)
                if recorded.unfinished()
                    && std::fs::metadata(results_path).is_ok_and(|m| m.len() > 0) =>
            {
                Err(RunError::Unfinished {
                    dir: out_dir.to_path_buf(),
                    results: result::count_lines(results_path).unwrap_or(0),
                })
            }
            _ => Ok(()),
        }
    }

    fn read(dir: &Path) -> Result<PreviousRecord, RunError> {
        let path = dir.join(RUN_FILE);
        let text = RunRecord::read_text(&path)?;
        let record = match &text {
            Some(text) => Some(RunRecord::parse(text, path.clone())?),
            None => None,
        };
        Ok(PreviousRecord { path, text, record })
    }

    fn restore(&self) -> Option<RunError> {
        let restored = match &self.text {
            Some(text) => fsio::write_output(&self.path, text),
            None => std::fs::remove_file(&self.path).or_else(|e| {
                if e.kind() == std::io::ErrorKind::NotFound {
                    Ok(())
                } else {
                    Err(e)
                }
            }),
        };
        restored.err().map(|source| RunError::Restore {
            path: self.path.clone(),
            source,
        })
    }
}

/// The record of this run, before it grades: what it reads, fingerprinted.
fn record_of(
    prepared: &Prepared,
    options: &RunOptions,
    selection: &Selection,
) -> Result<RunRecord, RunError> {
    let read_error = |path: &Path| {
        let path = path.to_path_buf();
        move |source| RunError::from(RecordError::Read { path, source })
    };
    let suite = &prepared.suite;
    let fingerprint = Fingerprint {
        gavel: env!("CARGO_PKG_VERSION").to_string(),
        suite_sha256: suite.sha256.clone(),
        dataset: FileStamp::of(&prepared.dataset).map_err(read_error(&prepared.dataset))?,
        trajectories: (prepared.runs.iter())
            .map(|runs| FileStamp::of(runs).map_err(read_error(runs)))
            .collect::<Result<_, _>>()?,
        packs: prepared
            .packs
            .iter()
            .map(|(name, pack)| (name.clone(), pack.sha256().to_string()))
            .chain(
                prepared
                    .python_sha256
                    .iter()
                    .map(|sha| (PYTHON_SOURCES.to_string(), sha.clone())),
            )
            .collect(),
        skip_invalid: options.skip_invalid,
    };
    Ok(RunRecord {
        filters: options.filters.iter().map(ToString::to_string).collect(),
        max_samples: selection.max_samples,
        shard: selection.shard,
        grants: (prepared.plan.grants.iter())
            .map(|(field, grants)| (field.clone(), Reach::from(&**grants)))
            .collect(),
        fingerprint: Some(fingerprint),
        ..RunRecord::of_suite(suite)
    })
}

/// The fingerprint's name for the suite's Python sources among the packs.
const PYTHON_SOURCES: &str = "(python sources)";

/// Why nothing was selected, naming what selects.
fn nothing_selected(prepared: &Prepared, selection: &Selection) -> String {
    let dataset = prepared.dataset.display();
    if selection.filters.is_empty() {
        format!("{dataset} has no samples")
    } else {
        let filters: Vec<String> = selection.filters.iter().map(ToString::to_string).collect();
        format!(
            "no sample of {dataset} matches --filter {}",
            filters.join(" --filter ")
        )
    }
}

/// How many items the run will grade, counted only if something asks (see [`RowCount`]) before
/// the pass has read them all; a file that cannot be counted fails when the pass reads it.
fn count(prepared: &Prepared, selection: Selection) -> RowCount {
    if selection.filters.is_empty() && selection.shard.is_none() && prepared.runs.is_empty() {
        let max = selection.max_samples.filter(|max| *max > 0);
        return RowCount::of(&prepared.dataset, prepared.reading(), max);
    }
    let (dataset, runs) = (prepared.dataset.clone(), prepared.runs.clone());
    let reading = prepared.reading();
    RowCount::later(move || {
        let items = Items::open(&dataset, &runs, reading).ok()?;
        let mut selected = Selected::new(items, selection);
        let mut n = 0;
        while selected.next_item().is_some() {
            n += 1;
        }
        Some(n)
    })
}

/// Where a pass's results go: the results file, the aggregates, the JUnit report, the observer.
struct RunSink<'a> {
    results: &'a mut ResultsFile,
    aggregator: &'a mut Aggregator,
    junit: Option<&'a mut Junit>,
    observer: &'a mut dyn Observer,
    /// Each write reaches the disk as it is made (after Ctrl-C).
    flush_each: bool,
    /// Results written.
    written: u64,
    /// The judges' token counts by model, when the plan has a judge.
    judge_tokens: Option<BTreeMap<String, Tokens>>,
    /// `--retry-errors`: the earlier results, each written in its place around those graded
    /// again.
    kept: Option<retry::KeptLines>,
    /// `--retry-errors`: each item read checked to be the earlier run's at its place.
    check: Option<Arc<std::sync::Mutex<ResultsCheck>>>,
}

impl RunSink<'_> {
    /// Writes results graded by this run; `earlier`, the earlier result of the one result
    /// graded again, whose kept grades' tokens are not this run's.
    fn add(
        &mut self,
        results: &[SampleResult],
        lines: &[u8],
        earlier: Option<&SampleResult>,
    ) -> std::io::Result<()> {
        self.results.append(lines)?;
        self.written += results.len() as u64;
        if let Some(tokens) = self.judge_tokens.as_mut() {
            let graded = results.iter().flat_map(|r| r.grades.iter().enumerate());
            for (i, (key, grade)) in graded {
                if earlier.is_some_and(|e| e.kept_grade(i, key).is_some()) {
                    continue;
                }
                let metadata = &grade.details().metadata;
                if let (Some(model), Some(usage)) = (
                    metadata.get("model").and_then(serde_json::Value::as_str),
                    metadata.get("usage"),
                ) {
                    tokens.entry(model.to_string()).or_default().add(usage);
                }
            }
        }
        for result in results {
            self.aggregator.add(result);
            if let Some(junit) = self.junit.as_mut() {
                junit.add(result)?;
            }
            self.observer.graded(result);
        }
        if self.flush_each {
            self.results.flush()?;
        }
        Ok(())
    }

    /// Writes an earlier result's line, as it was.
    fn keep(&mut self, line: &[u8]) -> std::io::Result<()> {
        let result = result::parse_line(line)?;
        self.results.append(line)?;
        self.aggregator.add(&result);
        if let Some(junit) = self.junit.as_mut() {
            junit.add(&result)?;
        }
        self.observer.previous(&result);
        Ok(())
    }

    /// Writes the earlier results up to the next one graded again (all that are left when
    /// `None`), and passes over that one's line: its result.
    fn keep_until(&mut self, next: Option<u64>) -> std::io::Result<Option<SampleResult>> {
        let Some(mut kept) = self.kept.take() else {
            return Ok(None);
        };
        let written = (|| {
            while next.is_none_or(|next| kept.lines.line < next) {
                match kept.lines.next_line()? {
                    Some(line) => self.keep(line)?,
                    None => return Ok(None),
                }
            }
            kept.lines.next_line()?.map(result::parse_line).transpose()
        })();
        self.kept = Some(kept);
        written
    }
}

impl Sink for RunSink<'_> {
    fn write(&mut self, results: &[SampleResult], lines: &[u8]) -> std::io::Result<()> {
        if self.kept.is_none() {
            return self.add(results, lines, None);
        }
        for (result, line) in results.iter().zip(lines.split_inclusive(|&b| b == b'\n')) {
            let next = self.kept.as_mut().and_then(retry::KeptLines::next_retried);
            let earlier = self.keep_until(next)?;
            self.add(std::slice::from_ref(result), line, earlier.as_ref())?;
        }
        Ok(())
    }

    fn stopping(&mut self) -> std::io::Result<()> {
        self.flush_each = true;
        self.observer.stopping();
        self.results.flush()
    }

    fn check(&self) -> Option<Arc<std::sync::Mutex<dyn engine::Check>>> {
        let check = self.check.clone()?;
        Some(check)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A results file's failed write names the file once, however it reaches the user.
    #[test]
    fn a_results_files_failed_write_is_named_once() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("results.jsonl");
        let mut results = ResultsFile::open(&path, false).unwrap();
        results.fail_writes_for_test();
        let failed = results.append(&[b'x'; 1 << 17]).unwrap_err();
        let said = write_error(&path, failed).to_string();
        assert_eq!(said.matches("cannot write").count(), 1, "{said}");
        assert!(said.contains("results.jsonl"), "{said}");
        let other = std::io::Error::other("disk gone");
        let said = write_error(&path, other).to_string();
        assert_eq!(said, format!("cannot write {}: disk gone", path.display()));
    }
}
