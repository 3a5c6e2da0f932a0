//! A run is one session over its output folder. It opens what an earlier run left there (its
//! record and its results), grades with a [`Policy`] (afresh, resuming an interrupted run, or
//! grading a finished run's errors again), and concludes: the summary and its gate, the JUnit
//! report, the record. Whatever stops it short leaves the folder as the policy promises: an
//! invalid dataset takes back everything the session wrote, an interrupted fresh or resumed
//! run keeps what finished for `--resume`, and a retry keeps every earlier result of what it
//! did not grade again.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use super::engine::{Batching, Pass, PassEnd, PassError, Selected, Validation};
use super::retry::{self, KeptLines};
use super::{
    Graded, Junit, Observer, Outcome, PreviousRecord, RunError, RunFailure, RunOptions, RunSink,
    SameSamples, Setting, aggregator, check_rows, conclude, count, finish_junit, judge_down,
    judge_failed, nothing_selected, open_junit, read_back, record_of, same_inputs, verify,
    write_error,
};
use crate::grade::pack::BATCH_ROWS;
use crate::input::dataset::RowCount;
use crate::output::record::{Progress, RunRecord, State, Tokens};
use crate::output::result::{self, ResultsFile, SampleResult};
use crate::output::summary::Aggregator;
use crate::run::Prepared;

/// What a session does with what an earlier run left in its output folder.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Policy {
    /// Grade the selection afresh, replacing a finished run (an unfinished one only with
    /// `--overwrite`).
    Fresh,
    /// `--resume`: keep what an interrupted run wrote and grade the rest.
    Resume,
    /// `--retry-errors`: grade again what is in error in a finished run, keeping the rest; the
    /// run stays a finished one whatever stops the session.
    RetryErrors,
}

impl Policy {
    fn of(options: &RunOptions) -> Policy {
        if options.retry_errors {
            Policy::RetryErrors
        } else if options.resume {
            Policy::Resume
        } else {
            Policy::Fresh
        }
    }

    /// How to go on once a judge that stopped the session works again.
    fn after_judge_down(self) -> &'static str {
        match self {
            Policy::RetryErrors => "--retry-errors retries what is still in error",
            Policy::Fresh | Policy::Resume => {
                "--resume continues (if the suite file is unchanged; else --overwrite starts afresh)"
            }
        }
    }
}

/// A run of a prepared suite over its output folder.
pub(super) struct Session<'p> {
    prepared: &'p Prepared,
    options: &'p RunOptions,
    policy: Policy,
    setting: Setting,
    /// `run.json` as the session found it.
    previous: PreviousRecord,
    /// This run's record.
    record: RunRecord,
    /// `run.json` says this session is running: taking back what it wrote puts back the
    /// earlier record.
    marked: bool,
}

/// How a session's pass ended, with what it leaves to conclude.
struct Ended {
    end: PassEnd,
    started: std::time::Instant,
    judge_tokens: BTreeMap<String, Tokens>,
    aggregator: Aggregator,
    junit: Option<Junit>,
}

/// What the session grades: the selection's items past those an earlier run graded, or the
/// results in error.
struct Work {
    /// Items that will have results, for the observer.
    total: RowCount,
    /// `--retry-errors`: the results graded again, by line.
    retry: Option<BTreeMap<u64, SampleResult>>,
}

impl<'p> Session<'p> {
    /// Opens the output folder: what an earlier run left there is read and checked against
    /// what `options` ask of it.
    pub(super) fn open(
        prepared: &'p Prepared,
        options: &'p RunOptions,
    ) -> Result<Session<'p>, RunFailure> {
        let setting = Setting::of(prepared, options);
        let previous = PreviousRecord::read(&setting.out_dir)?;
        let record = record_of(prepared, options, &setting.selection)?;
        let session = Session {
            prepared,
            options,
            policy: Policy::of(options),
            setting,
            previous,
            record,
            marked: false,
        };
        session.admit()?;
        Ok(session)
    }

    /// Refuses what the policy may not do with the run the folder holds.
    fn admit(&self) -> Result<(), RunError> {
        let Setting {
            out_dir,
            results_path,
            ..
        } = &self.setting;
        if self.policy == Policy::RetryErrors {
            retry::finished_run(&self.previous, &self.record, out_dir, results_path)?;
            return Ok(());
        }
        std::fs::create_dir_all(out_dir).map_err(|source| RunError::OutputDir {
            dir: out_dir.clone(),
            source,
        })?;
        let Some(recorded) = &self.previous.record else {
            return Ok(());
        };
        let results = std::fs::metadata(results_path).map_or(0, |m| m.len());
        match self.policy {
            Policy::Resume => same_inputs(recorded, &self.record, out_dir, "resume", "--resume"),
            Policy::Fresh if !self.options.overwrite && recorded.unfinished() && results > 0 => {
                Err(RunError::Unfinished {
                    dir: out_dir.clone(),
                    results: result::count_lines(results_path).unwrap_or(0),
                })
            }
            Policy::Fresh | Policy::RetryErrors => Ok(()),
        }
    }

    /// Grades what the policy grades and concludes.
    pub(super) fn run(mut self, observer: &mut dyn Observer) -> Result<Outcome, RunFailure> {
        let prepared = self.prepared;
        let options = self.options;
        let refuse_invalid = !options.skip_invalid;
        let (work, mut aggregator) = match self.work(observer)? {
            Ok(work) => work,
            Err(validation) => {
                return Ok(Outcome::Invalid {
                    validation,
                    not_restored: None,
                });
            }
        };
        let Work { total, retry } = work;
        // Results an earlier run wrote that are kept ahead of those graded (`--resume`).
        let mut already = 0;
        let settled = total.clone();
        let junit_path = options.junit.as_deref();
        let mut junit = open_junit(prepared, junit_path)?;
        let results_path = self.setting.results_path.clone();
        let out_dir = self.setting.out_dir.clone();
        // Warm graders' batches start where an uninterrupted run's start: the one left unfinished
        // is graded again from its first sample, its results already written not written again.
        let warm = Batching::of(&prepared.plan, false).warm_graders > 0;
        let mut resumed = None;
        match &retry {
            None if self.policy == Policy::Resume => {
                let keep = if warm { BATCH_ROWS } else { 0 };
                let mut same =
                    SameSamples::new(prepared, &self.setting.selection, &results_path, keep)?;
                already = read_back(
                    &results_path,
                    &mut aggregator,
                    observer,
                    junit.as_mut(),
                    Some(&mut same),
                )?;
                same.finish(&out_dir, "resume", "--resume")?;
                resumed = Some(same);
            }
            Some(retry) if retry.is_empty() => {
                // Nothing is graded: the summary and the gate are the run's as it is.
                read_back(
                    &results_path,
                    &mut aggregator,
                    observer,
                    junit.as_mut(),
                    None,
                )?;
                let shard = self.setting.selection.shard;
                let concluded = conclude(prepared, aggregator, &out_dir, false, shard, None)?;
                finish_junit(junit, junit_path)?;
                let record = self.previous.record.unwrap_or(self.record);
                let graded = Graded::whole(concluded, out_dir, results_path, record);
                return Ok(Outcome::Graded(Box::new(graded)));
            }
            _ => {}
        }

        let mut output = Output::open(self.policy, &results_path)?;
        let kept = match &retry {
            Some(retry) => Some(KeptLines::open(
                &results_path,
                retry.keys().copied().collect(),
            )?),
            None => None,
        };
        let replay = if warm { already % BATCH_ROWS as u64 } else { 0 };
        // Resumed, grading goes on where the check of the earlier results stopped reading: the
        // dataset is read once.
        let selected = match resumed {
            Some(same) => same.rest(replay),
            None => Selected::new(
                prepared.items().map_err(RunError::from)?,
                self.setting.selection.clone(),
            ),
        };
        let started = std::time::Instant::now();
        self.record.progress = Some(Progress::running());
        // A retry's run stays the finished one it was until its new results are whole.
        if self.policy != Policy::RetryErrors {
            self.marked = true;
            if let Err(e) = self.record.write(&out_dir) {
                return Err(RunFailure::from(e).with(self.take_back(output, junit)));
            }
        }
        observer.start(total, already);
        let mut sink = RunSink {
            results: output.file(),
            aggregator: &mut aggregator,
            junit: junit.as_mut(),
            observer: &mut *observer,
            flush_each: false,
            written: 0,
            judge_tokens: prepared.plan.has_judge().then(BTreeMap::new),
            kept,
        };
        let pass = Pass {
            plan: prepared.plan.clone(),
            parser: prepared.parser.clone(),
            reward: self.setting.reward.clone(),
            workers: self.setting.workers,
            refuse_invalid,
            retry,
            replay,
            sink: &mut sink,
        };
        let end = pass.run(selected);
        // What was not graded again keeps its earlier result (even after Ctrl-C).
        let rest = sink.keep_until(None);
        let written = sink.written;
        let judge_tokens = sink.judge_tokens.take().unwrap_or_default();
        observer.finish(matches!(end, Ok(PassEnd::Complete)));
        let end = match (end, rest) {
            (Ok(PassEnd::Refused), _) => {
                // Nothing of this run is kept: the rows are reported as if checked before
                // grading.
                let not_restored = self.take_back(output, junit);
                return match check_rows(
                    prepared,
                    self.setting.selection.clone(),
                    self.setting.workers,
                ) {
                    Ok(validation) => Ok(Outcome::Invalid {
                        validation,
                        not_restored,
                    }),
                    Err(e) => Err(RunFailure::after(not_restored, e)),
                };
            }
            // A file that cannot be read is refused like an invalid row: nothing of this run is
            // kept.
            (Err(e @ PassError::Source(_)), _) if refuse_invalid => {
                return Err(RunFailure::from(e).with(self.take_back(output, junit)));
            }
            (Err(e), _) => {
                output.abandon();
                return Err(e.into());
            }
            (Ok(_), Err(source)) => {
                let path = output.file().path().to_path_buf();
                output.abandon();
                return Err(write_error(&path, source).into());
            }
            (Ok(end), Ok(_)) => end,
        };
        // Stopped short, a fresh or resumed run is an unfinished one; a retry's is still whole.
        let whole = self.policy == Policy::RetryErrors;
        if end == PassEnd::JudgeDown && !whole {
            let kept = already + written;
            let finished = output.keep().err();
            let recorded = self
                .record
                .ended(State::Interrupted, started.elapsed(), kept, judge_tokens)
                .write(&out_dir)
                .err()
                .map(RunError::from);
            let down = judge_down(prepared, kept, out_dir, self.policy.after_judge_down());
            return Err(RunFailure::after(
                finished.into_iter().chain(recorded),
                down,
            ));
        }
        if end == PassEnd::Complete {
            // Every selected item has its result: the count is in without reading them again.
            settled.settle(already + written);
        }
        // A shard may hold none of a small dataset's samples; merged, the run has them all.
        if !whole
            && already + written == 0
            && end == PassEnd::Complete
            && self.setting.selection.shard.is_none()
        {
            let nothing = RunError::NothingSelected {
                what: nothing_selected(prepared, &self.setting.selection),
            };
            return Err(RunFailure::from(nothing).with(self.take_back(output, junit)));
        }
        output.keep()?;
        self.conclude(Ended {
            end,
            started,
            judge_tokens,
            aggregator,
            junit,
        })
    }

    /// Concludes a session whose results are kept: the summary and its gate, the JUnit report,
    /// the record, and what the command line reports.
    fn conclude(mut self, ended: Ended) -> Result<Outcome, RunFailure> {
        let Ended {
            end,
            started,
            judge_tokens,
            aggregator,
            junit,
        } = ended;
        let prepared = self.prepared;
        let junit_path = self.options.junit.as_deref();
        let (out_dir, results_path) = (
            self.setting.out_dir.clone(),
            self.setting.results_path.clone(),
        );
        let whole = self.policy == Policy::RetryErrors;
        let interrupted = end == PassEnd::Interrupted;
        let isolation = match self.options.verify_isolation {
            Some(verify) if !interrupted && !whole => Some(verify::check(
                prepared,
                verify,
                &self.setting.selection,
                self.setting.workers,
                &results_path,
            )?),
            _ => None,
        };
        let partial = interrupted && !whole;
        let shard = self.setting.selection.shard;
        let concluded = conclude(
            prepared,
            aggregator,
            &out_dir,
            partial,
            shard,
            isolation.as_ref(),
        )?;
        finish_junit(junit, junit_path)?;
        let state = if partial {
            State::Interrupted
        } else {
            State::Complete
        };
        let results = concluded.0.counts.total;
        self.record
            .ended(state, started.elapsed(), results, judge_tokens)
            .write(&out_dir)?;
        if end == PassEnd::JudgeDown {
            let next = self.policy.after_judge_down();
            return Err(judge_down(prepared, results, out_dir, next).into());
        }
        let judge_failed = judge_failed(prepared, &out_dir, interrupted);
        Ok(Outcome::Graded(Box::new(Graded {
            interrupted,
            judge_failed,
            isolation,
            ..Graded::whole(concluded, out_dir, results_path, self.record)
        })))
    }

    /// What the session grades, and the aggregator of its results; `Err` with what was found
    /// when the dataset is checked before grading and has invalid rows.
    fn work(
        &self,
        observer: &mut dyn Observer,
    ) -> Result<Result<(Work, Aggregator), Validation>, RunFailure> {
        let prepared = self.prepared;
        let refuse_invalid = !self.options.skip_invalid;
        Ok(Ok(match self.policy {
            Policy::RetryErrors => {
                let errored = retry::Errored::find(
                    prepared,
                    &self.setting.selection,
                    &self.setting.out_dir,
                    &self.setting.results_path,
                )?;
                observer.retrying(errored.grades, errored.retry.len() as u64);
                let results = errored.results;
                let work = Work {
                    total: RowCount::known(errored.retry.len() as u64),
                    retry: Some(errored.retry),
                };
                (work, aggregator(prepared, move || results))
            }
            Policy::Fresh | Policy::Resume => {
                // No row is graded while the dataset has an invalid one. Judge requests cost
                // money, so a suite with a judge checks every row first; any other suite checks
                // rows as it grades them and takes back what it wrote when it meets a bad one.
                let total = if refuse_invalid && prepared.plan.has_judge() {
                    let validation = check_rows(
                        prepared,
                        self.setting.selection.clone(),
                        self.setting.workers,
                    )?;
                    if validation.invalid > 0 {
                        return Ok(Err(validation));
                    }
                    RowCount::known(validation.total)
                } else {
                    count(prepared, self.setting.selection.clone())
                };
                let expected = total.clone();
                let work = Work { total, retry: None };
                (
                    work,
                    aggregator(prepared, move || expected.wait().unwrap_or(0)),
                )
            }
        }))
    }

    /// Takes back what the session wrote: its results, its record and its JUnit report.
    /// `Some` when what an earlier run wrote could not be put back.
    fn take_back(&self, output: Output, junit: Option<Junit>) -> Option<RunError> {
        let not_restored = output
            .take_back()
            .or_else(|| self.marked.then(|| self.previous.restore()).flatten());
        drop(junit);
        if let Some(path) = &self.options.junit {
            let _ = std::fs::remove_file(path);
        }
        not_restored
    }
}

/// Where a session writes its results: `results.jsonl` itself (afresh, or appended to on
/// `--resume`), or a file beside it that takes its place once whole (`--retry-errors`, so that
/// a crash or a Ctrl-C loses no earlier result).
pub(super) enum Output {
    Direct(ResultsFile),
    Replacing { file: ResultsFile, results: PathBuf },
}

impl Output {
    pub(super) fn open(policy: Policy, results: &Path) -> Result<Output, RunError> {
        let open = |path: &Path, append| {
            ResultsFile::open(path, append).map_err(|source| write_error(path, source))
        };
        Ok(match policy {
            Policy::Fresh => Output::Direct(open(results, false)?),
            Policy::Resume => Output::Direct(open(results, true)?),
            Policy::RetryErrors => {
                let temp = results.with_file_name(retry::RETRY_FILE);
                // Left by a retry that was killed: its results never replaced the run's.
                let _ = std::fs::remove_file(&temp);
                Output::Replacing {
                    file: open(&temp, false)?,
                    results: results.to_path_buf(),
                }
            }
        })
    }

    pub(super) fn file(&mut self) -> &mut ResultsFile {
        match self {
            Output::Direct(file) | Output::Replacing { file, .. } => file,
        }
    }

    /// Keeps what was written: `results.jsonl` holds it.
    pub(super) fn keep(self) -> Result<(), RunError> {
        match self {
            Output::Direct(file) => {
                let path = file.path().to_path_buf();
                file.finish().map_err(|source| write_error(&path, source))
            }
            Output::Replacing { file, results } => {
                let temp = file.path().to_path_buf();
                file.finish()
                    .and_then(|()| retry::replace(&temp, &results))
                    .map_err(|source| write_error(&results, source))
            }
        }
    }

    /// Stops on an error: `results.jsonl` holds what an interrupted run would have left.
    fn abandon(self) {
        let _ = match self {
            Output::Direct(file) => file.finish(),
            Output::Replacing { file, .. } => file.discard(),
        };
    }

    /// Takes back everything written; `Some` when the earlier results could not be put back.
    pub(super) fn take_back(self) -> Option<RunError> {
        let (Output::Direct(file) | Output::Replacing { file, .. }) = self;
        let path = file.path().to_path_buf();
        file.discard()
            .err()
            .map(|source| RunError::Restore { path, source })
    }
}
