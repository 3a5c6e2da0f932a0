//! A run is one session over its output folder. It opens what an earlier run left there (its
//! record and its results), grades with a [`Policy`] (afresh, resuming an interrupted run, or
//! grading a finished run's errors again), and concludes: the summary and its gate, the JUnit
//! report, the record. Whatever stops it short leaves the folder as the policy promises: an
//! invalid dataset takes back everything the session wrote, an interrupted fresh or resumed
//! run keeps what finished for `--resume`, and a retry keeps every earlier result of what it
//! did not grade again.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};

use super::engine::{Batching, Pass, PassEnd, PassError, Selected, Validation};
use super::retry::{self, KeptLines, RETRY};
use super::{
    Graded, Junit, Observer, Outcome, PreviousRecord, ResultsCheck, RunError, RunFailure,
    RunOptions, RunSink, SameSamples, Setting, aggregator, check_rows, conclude, count,
    finish_junit, foreign_run, judge_down, judge_failed, judge_stopped, nothing_selected,
    open_junit, read_back, record_of, same_inputs, verify, write_error,
};
use crate::fsio;
use crate::grade::pack::BATCH_ROWS;
use crate::input::dataset::RowCount;
use crate::output::record::{Progress, RunRecord, State, Tokens};
use crate::output::result::{ResultsFile, SampleResult};
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
    fn after_judge_down(self) -> String {
        match self {
            Policy::RetryErrors => "--retry-errors retries what is still in error",
            Policy::Fresh | Policy::Resume => {
                "--resume continues (if the suite file is unchanged; else --overwrite starts afresh)"
            }
        }
        .to_string()
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
    /// Results the session's output holds.
    results: u64,
    judge_tokens: BTreeMap<String, Tokens>,
    aggregator: Aggregator,
    junit: Option<Junit>,
}

/// Where a pass that failed had got to, for its record.
struct Stopped {
    started: std::time::Instant,
    /// Results the session's output holds.
    results: u64,
    judge_tokens: BTreeMap<String, Tokens>,
}

/// What a session does once it has read what it needs.
enum Plan {
    /// The dataset has invalid rows: nothing is graded.
    Invalid(Validation),
    /// `--retry-errors` found nothing in error: the run is concluded as it is.
    AsItIs(Box<ReadBack>),
    Grade(Box<Planned>),
}

/// A run's results read back into its aggregates and JUnit report.
struct ReadBack {
    aggregator: Aggregator,
    junit: Option<Junit>,
}

/// What a session's pass grades and starts with.
struct Planned {
    /// Items that will have results, for the observer.
    total: RowCount,
    /// `--retry-errors`: the results graded again, by line.
    retry: Option<BTreeMap<u64, SampleResult>>,
    /// Results an earlier run wrote that are kept ahead of those graded (`--resume`).
    already: u64,
    /// Items graded again and not written (see [`Pass::replay`]).
    replay: u64,
    /// The items the pass reads.
    selected: Selected,
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
        let setting = Setting::of(prepared, options)?;
        let writes = super::outputs(&setting.out_dir, options.junit.as_deref());
        fsio::refuse_overwriting(&writes, &super::inputs_of(prepared)).map_err(RunError::from)?;
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
        match (self.policy, &self.previous.record) {
            (Policy::Resume, Some(recorded)) => {
                same_inputs(recorded, &self.record, out_dir, "resume", "--resume")
            }
            (Policy::Fresh, _) => {
                self.previous
                    .replaceable(out_dir, results_path, self.options.overwrite)
            }
            _ => Ok(()),
        }
    }

    /// Grades what the policy grades and concludes: the session is planned (what is graded,
    /// what an earlier run's results add), graded, and concluded.
    pub(super) fn run(self, observer: &mut dyn Observer) -> Result<Outcome, RunFailure> {
        match self.plan(observer)? {
            Plan::Invalid(validation) => Ok(Outcome::Invalid {
                validation,
                not_restored: None,
            }),
            Plan::AsItIs(read) => self.conclude_unchanged(*read),
            Plan::Grade(planned) => self.grade(*planned, observer),
        }
    }

    /// What the session grades and where its pass starts; the results an earlier run wrote
    /// that it keeps ahead of its own are read back into the aggregates.
    fn plan(&self, observer: &mut dyn Observer) -> Result<Plan, RunFailure> {
        let (Work { total, retry }, mut aggregator) = match self.work(observer)? {
            Ok(work) => work,
            Err(validation) => return Ok(Plan::Invalid(validation)),
        };
        let mut junit = open_junit(self.prepared, self.options.junit.as_deref())?;
        let results_path = &self.setting.results_path;
        let (already, replay, selected) = match &retry {
            Some(retry) if retry.is_empty() => {
                // Nothing is graded: the results are checked as they are read back.
                let selection = &self.setting.selection;
                let mut same = SameSamples::new(self.prepared, selection, results_path, 0)?;
                let observed = &mut *observer;
                read_back(
                    results_path,
                    &mut aggregator,
                    observed,
                    junit.as_mut(),
                    Some(&mut same),
                )?;
                same.finish(&self.setting.out_dir, RETRY, "--retry-errors")?;
                return Ok(Plan::AsItIs(Box::new(ReadBack { aggregator, junit })));
            }
            None if self.policy == Policy::Resume => {
                self.resumed(&mut aggregator, observer, junit.as_mut())?
            }
            _ => {
                let items = self.prepared.items().map_err(RunError::from)?;
                (0, 0, Selected::new(items, self.setting.selection.clone()))
            }
        };
        Ok(Plan::Grade(Box::new(Planned {
            total,
            retry,
            already,
            replay,
            selected,
            aggregator,
            junit,
        })))
    }

    /// `--resume`: the earlier results read back, each checked to be of this run's sample;
    /// grading goes on where that check stopped reading, so the dataset is read once. Warm
    /// graders' batches start where an uninterrupted run's start: the one left unfinished is
    /// graded again from its first sample, its results already written not written again.
    /// The results kept, the items graded again unwritten, and the items left.
    fn resumed(
        &self,
        aggregator: &mut Aggregator,
        observer: &mut dyn Observer,
        junit: Option<&mut Junit>,
    ) -> Result<(u64, u64, Selected), RunError> {
        let warm = Batching::of(&self.prepared.plan, false).warm_graders > 0;
        let keep = if warm { BATCH_ROWS } else { 0 };
        let results_path = &self.setting.results_path;
        let mut same =
            SameSamples::new(self.prepared, &self.setting.selection, results_path, keep)?;
        let already = read_back(results_path, aggregator, observer, junit, Some(&mut same))?;
        same.finish(&self.setting.out_dir, "resume", "--resume")?;
        let replay = if warm { already % BATCH_ROWS as u64 } else { 0 };
        Ok((already, replay, same.rest(replay)))
    }

    /// Concludes a retry that found nothing in error: the summary and the gate are the run's
    /// as it is, and its record stays, but for the judges' gradings of its last pass: this
    /// pass asked none (what a merge of shards adds up).
    fn conclude_unchanged(self, read: ReadBack) -> Result<Outcome, RunFailure> {
        let ReadBack { aggregator, junit } = read;
        let Setting {
            out_dir,
            results_path,
            selection,
            ..
        } = self.setting;
        let concluded = conclude(
            self.prepared,
            aggregator,
            &out_dir,
            false,
            selection.shard,
            None,
        )?;
        finish_junit(junit, self.options.junit.as_deref())?;
        let mut record = self.previous.record.unwrap_or(self.record);
        if let Some(progress) = record.progress.as_mut()
            && !progress.judge_calls.is_empty()
        {
            progress.judge_calls.clear();
            record.write(&out_dir)?;
        }
        let graded = Graded::whole(concluded, out_dir, results_path, record);
        Ok(Outcome::Graded(Box::new(graded)))
    }

    /// Grades what was planned into the session's [`Output`], keeps what the pass leaves (or
    /// takes it back, as the policy promises), and concludes.
    fn grade(
        mut self,
        planned: Planned,
        observer: &mut dyn Observer,
    ) -> Result<Outcome, RunFailure> {
        let Planned {
            total,
            retry,
            already,
            replay,
            selected,
            mut aggregator,
            mut junit,
        } = planned;
        let settled = total.clone();
        let results_path = &self.setting.results_path;
        let mut output = Output::open(self.policy, results_path)?;
        let kept = match &retry {
            Some(retry) => Some(KeptLines::open(
                results_path,
                retry.keys().copied().collect(),
            )?),
            None => None,
        };
        let check = match &retry {
            Some(_) => Some(Arc::new(Mutex::new(ResultsCheck::open(results_path)?))),
            None => None,
        };
        let started = std::time::Instant::now();
        if let Err(e) = self.mark() {
            return Err(RunFailure::from(e).with(self.take_back(output, junit)));
        }
        observer.start(total, already);
        let mut sink = RunSink {
            results: output.file(),
            aggregator: &mut aggregator,
            junit: junit.as_mut(),
            observer: &mut *observer,
            flush_each: false,
            written: 0,
            judge_tokens: self.prepared.plan.has_judge().then(BTreeMap::new),
            kept,
            check: check.clone(),
        };
        let pass = Pass {
            plan: self.prepared.plan.clone(),
            parser: self.prepared.parser.clone(),
            reward: self.setting.reward.clone(),
            workers: self.setting.workers,
            refuse_invalid: !self.options.skip_invalid,
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
        let complete = matches!(end, Ok(PassEnd::Complete));
        let foreign = check.and_then(|check| {
            let mut check = check.lock().unwrap_or_else(PoisonError::into_inner);
            check.finish(complete)
        });
        if let Some(line) = foreign {
            let refused = foreign_run(&self.setting.out_dir, line, RETRY, "--retry-errors");
            return Err(RunFailure::from(refused).with(self.take_back(output, junit)));
        }
        let end = match (end, rest) {
            (Ok(PassEnd::Refused), _) => return self.refused(output, junit),
            (Err(e), _) => {
                let stopped = Stopped {
                    started,
                    results: already + written,
                    judge_tokens,
                };
                return self.failed(e, output, junit, stopped);
            }
            (Ok(_), Err(source)) => {
                let path = output.file().path().to_path_buf();
                output.abandon();
                return Err(write_error(&path, source).into());
            }
            (Ok(end), Ok(_)) => end,
        };
        let ended = Ended {
            end,
            started,
            results: already + written,
            judge_tokens,
            aggregator,
            junit,
        };
        if end == PassEnd::Complete {
            // Every selected item has its result: the count is in without reading them again.
            settled.settle(ended.results);
        }
        self.keep(output, ended)
    }

    /// `run.json` says the session is running; a retry's run stays the finished one it was
    /// until its new results are whole.
    fn mark(&mut self) -> Result<(), RunError> {
        self.record.progress = Some(Progress::running());
        if self.policy == Policy::RetryErrors {
            return Ok(());
        }
        self.marked = true;
        Ok(self.record.write(&self.setting.out_dir)?)
    }

    /// The pass met an invalid row: nothing of this run is kept, and the rows are reported as
    /// if checked before grading.
    fn refused(self, output: Output, junit: Option<Junit>) -> Result<Outcome, RunFailure> {
        let not_restored = self.take_back(output, junit);
        match check_rows(
            self.prepared,
            self.setting.selection.clone(),
            self.setting.workers,
        ) {
            Ok(validation) => Ok(Outcome::Invalid {
                validation,
                not_restored,
            }),
            Err(e) => Err(RunFailure::after(not_restored, e)),
        }
    }

    /// The pass failed: a file that cannot be read is refused like an invalid row (nothing of
    /// this run is kept); any other failure, or that one with `--skip-invalid`, leaves what an
    /// interrupted run would have, its record saying so, for `--resume` and `gavel report`.
    fn failed(
        mut self,
        error: PassError,
        output: Output,
        junit: Option<Junit>,
        stopped: Stopped,
    ) -> Result<Outcome, RunFailure> {
        if matches!(error, PassError::Source(_)) && !self.options.skip_invalid {
            return Err(RunFailure::from(error).with(self.take_back(output, junit)));
        }
        output.abandon();
        // A retry's record stays the finished run's (`mark` wrote none).
        let recorded = self.marked.then(|| self.interrupted(stopped));
        Err(RunFailure::from(error).with(recorded.flatten()))
    }

    /// Records the run as interrupted where its pass `stopped`; the error of writing the
    /// record, if any.
    fn interrupted(&mut self, stopped: Stopped) -> Option<RunError> {
        self.record
            .ended(
                State::Interrupted,
                stopped.started.elapsed(),
                stopped.results,
                stopped.judge_tokens,
            )
            .write(&self.setting.out_dir)
            .err()
            .map(RunError::from)
    }

    /// Keeps the results of a pass that ended, and concludes; stopped short by a judge, a
    /// fresh or resumed run is an unfinished one (a retry's is still whole), and a run that
    /// selected nothing keeps nothing.
    fn keep(mut self, output: Output, ended: Ended) -> Result<Outcome, RunFailure> {
        let whole = self.policy == Policy::RetryErrors;
        if ended.end == PassEnd::JudgeDown && !whole {
            let finished = output.keep().err();
            let recorded = self.interrupted(Stopped {
                started: ended.started,
                results: ended.results,
                judge_tokens: ended.judge_tokens,
            });
            let down = judge_down(
                judge_stopped(self.prepared),
                ended.results,
                self.setting.out_dir,
                self.policy.after_judge_down(),
            );
            return Err(RunFailure::after(
                finished.into_iter().chain(recorded),
                down,
            ));
        }
        // A shard may hold none of a small dataset's samples; merged, the run has them all.
        if !whole
            && ended.results == 0
            && ended.end == PassEnd::Complete
            && self.setting.selection.shard.is_none()
        {
            let nothing = RunError::NothingSelected {
                what: nothing_selected(self.prepared, &self.setting.selection),
            };
            return Err(RunFailure::from(nothing).with(self.take_back(output, ended.junit)));
        }
        output.keep()?;
        self.conclude(ended)
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
            ..
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
        // Only a retry's pass ends here with its judge down: the run is whole, and fails.
        let stopped = (end == PassEnd::JudgeDown).then(|| judge_stopped(prepared));
        if let Some(progress) = self.record.progress.as_mut() {
            progress.judge_down.clone_from(&stopped);
            progress.judge_calls = prepared.plan.judge_calls();
        }
        self.record
            .ended(state, started.elapsed(), results, judge_tokens)
            .write(&out_dir)?;
        let judge_failed = match stopped {
            Some(stopped) => Some(judge_down(
                stopped,
                results,
                out_dir.clone(),
                self.policy.after_judge_down(),
            )),
            None => judge_failed(prepared, &out_dir, interrupted),
        };
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
                // money, so a suite with a judge checks every row first, unless an earlier run
                // checked them; any other suite checks rows as it grades them and takes back
                // what it wrote when it meets a bad one.
                let total =
                    if refuse_invalid && prepared.plan.has_judge() && !self.rows_checked_before() {
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

    /// Whether an earlier run in the folder checked the rows this session would: it read the
    /// same inputs (the dataset known by its stamp) and selection, and it graded, which a run
    /// refused for an invalid row leaves unrecorded. So a resumed run reads the dataset once.
    /// An invalid row the stamp misses (an edit inside a large file) is still refused by the
    /// pass, which takes back what it wrote.
    fn rows_checked_before(&self) -> bool {
        self.previous.record.as_ref().is_some_and(|recorded| {
            recorded.fingerprint.is_some()
                && recorded.progress.is_some()
                && recorded.changes(&self.record).is_empty()
        })
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
