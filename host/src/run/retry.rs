//! `--retry-errors`: a finished run's errors graded again, and nothing else. A sample with a
//! grade in error has those grades graded again and keeps its others; a sample in error without
//! one (no grades, or its extraction or reward failed) is graded whole; every other result is
//! kept as it was, byte for byte. The new `results.jsonl` is written beside the old one and
//! takes its place once whole, so a crash or a Ctrl-C loses no result: Ctrl-C keeps the earlier
//! results of what was not retried yet, and the run stays a finished one, whose summary is of
//! all of its results.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader};
use std::path::Path;

use super::engine::{Pass, PassEnd, Selected};
use super::{
    Graded, Observer, Outcome, PreviousRecord, RunError, RunFailure, RunOptions, RunSink,
    SameSamples, Setting, aggregator, check_rows, conclude, finish_junit, judge_down, judge_failed,
    open_junit, read_back, same_inputs, write_error,
};
use crate::fsio;
use crate::grade::Status;
use crate::input::dataset::{Items, RowCount};
use crate::output::record::{Progress, RunRecord, State};
use crate::output::result::{self, ResultsFile, Retry, SampleResult};
use crate::run::Prepared;

/// Where the new results are written until they replace the old.
const RETRY_FILE: &str = "results.jsonl.retry";

/// The lines of the results file being retried, read as the new one is written.
pub(super) struct KeptLines {
    old: BufReader<std::fs::File>,
    /// The number of the next line (from 0).
    pub(super) line: u64,
    text: Vec<u8>,
    /// The lines graded again, in order.
    retried: std::vec::IntoIter<u64>,
}

impl KeptLines {
    /// The lines of the results file at `path`; `retried`, the lines graded again, in order.
    pub(super) fn open(path: &Path, retried: Vec<u64>) -> Result<KeptLines, RunError> {
        let (old, _) = fsio::open_regular(path, fsio::cap::STREAM).map_err(|source| {
            RunError::from(result::ResultsError::Open {
                path: path.to_path_buf(),
                source,
            })
        })?;
        Ok(KeptLines {
            old: BufReader::new(old),
            line: 0,
            text: Vec::new(),
            retried: retried.into_iter(),
        })
    }

    /// The next line, with its newline; `None` at the end.
    pub(super) fn next_line(&mut self) -> std::io::Result<Option<&[u8]>> {
        self.text.clear();
        if self.old.read_until(b'\n', &mut self.text)? == 0 {
            return Ok(None);
        }
        self.line += 1;
        Ok(Some(&self.text))
    }

    /// The line of the next result graded again.
    pub(super) fn next_retried(&mut self) -> Option<u64> {
        self.retried.next()
    }
}

/// The result of a line of `results.jsonl`.
pub(super) fn parse_line(line: &[u8]) -> std::io::Result<SampleResult> {
    let text = std::str::from_utf8(line).map_err(std::io::Error::other)?;
    result::parse_result(text).map_err(std::io::Error::other)
}

/// Grades again what is in error in the finished run in the output folder.
pub(super) fn run(
    prepared: &Prepared,
    options: &RunOptions,
    observer: &mut dyn Observer,
    setting: Setting,
    previous: PreviousRecord,
    mut record: RunRecord,
) -> Result<Outcome, RunFailure> {
    let Setting {
        reward,
        workers,
        selection,
        out_dir,
        results_path,
    } = setting;
    let recorded = finished_run(&previous, &record, &out_dir, &results_path)?;
    // The results in error, by line.
    let mut retry = BTreeMap::new();
    let mut grades = 0u64;
    let mut line = 0u64;
    let metrics = prepared.plan.metrics.len() as u64;
    let mut same = SameSamples::new(prepared, &selection, &results_path)?;
    let total = result::read_previous(&results_path, |r| {
        if !same.check(&r) {
            return false;
        }
        match r.retry() {
            Retry::Nothing => {}
            Retry::Grades => {
                grades += r
                    .grades
                    .iter()
                    .filter(|(_, g)| g.status == Status::Error)
                    .count() as u64;
                retry.insert(line, r);
            }
            Retry::Sample => {
                grades += metrics;
                retry.insert(line, r);
            }
        }
        line += 1;
        true
    })?;
    same.finish(&out_dir, "retry the errors of", "--retry-errors")?;
    observer.retrying(grades, retry.len() as u64);
    let mut aggregator = aggregator(prepared, move || total);
    let junit_path = options.junit.as_deref();
    let mut junit = open_junit(prepared, junit_path)?;
    if retry.is_empty() {
        // Nothing is graded: the summary and the gate are the run's as it is.
        read_back(
            &results_path,
            &mut aggregator,
            observer,
            junit.as_mut(),
            None,
        )?;
        let (summary, summary_json, gate_passed) =
            conclude(prepared, aggregator, &out_dir, false, selection.shard, None)?;
        finish_junit(junit, junit_path)?;
        return Ok(Outcome::Graded(Box::new(Graded {
            summary,
            summary_json,
            out_dir,
            results_path,
            interrupted: false,
            gate_passed,
            record: recorded.clone(),
            judge_failed: None,
            isolation: None,
        })));
    }

    let temp_path = out_dir.join(RETRY_FILE);
    // Left by a retry that was killed: its results never replaced the run's.
    let _ = std::fs::remove_file(&temp_path);
    let mut temp =
        ResultsFile::open(&temp_path, false).map_err(|source| write_error(&temp_path, source))?;
    let kept = KeptLines::open(&results_path, retry.keys().copied().collect())?;
    let items = Items::open(&prepared.dataset, &prepared.runs)?;
    let started = std::time::Instant::now();
    record.progress = Some(Progress::running());
    observer.start(RowCount::known(retry.len() as u64), 0);
    let mut sink = RunSink {
        results: &mut temp,
        aggregator: &mut aggregator,
        junit: junit.as_mut(),
        observer: &mut *observer,
        flush_each: false,
        written: 0,
        judge_tokens: prepared.plan.has_judge().then(BTreeMap::new),
        kept: Some(kept),
    };
    let pass = Pass {
        plan: prepared.plan.clone(),
        parser: prepared.parser.clone(),
        reward,
        workers,
        refuse_invalid: !options.skip_invalid,
        retry: Some(retry),
        replay: 0,
        sink: &mut sink,
    };
    let end = pass.run(Selected::new(items, selection.clone()));
    // What was not graded again (all of it but what was, even after Ctrl-C) keeps its result.
    let rest = sink.keep_until(None);
    let judge_tokens = sink.judge_tokens.take().unwrap_or_default();
    observer.finish(matches!(end, Ok(PassEnd::Complete)));
    let end = match (end, rest) {
        (Ok(PassEnd::Refused), _) => {
            // A row that was valid is no longer (the dataset changed where its stamp does not
            // look): the run is left as it was, and the rows reported.
            let not_restored = temp.discard().err().map(|source| RunError::Restore {
                path: temp_path,
                source,
            });
            return match check_rows(prepared, selection, workers) {
                Ok(validation) => Ok(Outcome::Invalid {
                    validation,
                    not_restored,
                }),
                Err(e) => Err(RunFailure::after(not_restored, e)),
            };
        }
        (Err(e), _) => {
            let _ = temp.discard();
            return Err(e.into());
        }
        (Ok(_), Err(source)) => {
            let _ = temp.discard();
            return Err(write_error(&temp_path, source).into());
        }
        (Ok(end), Ok(_)) => end,
    };
    temp.finish()
        .and_then(|()| replace(&temp_path, &results_path))
        .map_err(|source| write_error(&results_path, source))?;
    let (summary, summary_json, gate_passed) =
        conclude(prepared, aggregator, &out_dir, false, selection.shard, None)?;
    finish_junit(junit, junit_path)?;
    // Every sample has its result, retried or not: the run is still a finished one, whose
    // errors a next --retry-errors retries.
    record
        .ended(
            State::Complete,
            started.elapsed(),
            summary.counts.total,
            judge_tokens,
        )
        .write(&out_dir)?;
    if end == PassEnd::JudgeDown {
        return Err(judge_down(
            prepared,
            summary.counts.total,
            out_dir,
            "--retry-errors retries what is still in error",
        )
        .into());
    }
    let judge_failed = judge_failed(prepared, &out_dir, end == PassEnd::Interrupted);
    Ok(Outcome::Graded(Box::new(Graded {
        summary,
        summary_json,
        out_dir,
        results_path,
        interrupted: end == PassEnd::Interrupted,
        gate_passed,
        record,
        judge_failed,
        isolation: None,
    })))
}

/// Puts the new results in the place of the old, on disk first: the rename never leaves a
/// file whose lines a power cut could take.
fn replace(temp: &Path, results: &Path) -> std::io::Result<()> {
    fsio::open_regular(temp, fsio::cap::STREAM)?.0.sync_all()?;
    std::fs::rename(temp, results)
}

/// The record of the finished run in `dir`, refused unless this run grades as it did.
fn finished_run<'p>(
    previous: &'p PreviousRecord,
    now: &RunRecord,
    dir: &Path,
    results: &Path,
) -> Result<&'p RunRecord, RunError> {
    let no_run = || RunError::NoRun {
        dir: dir.to_path_buf(),
    };
    let recorded = previous.record.as_ref().ok_or_else(no_run)?;
    match recorded.progress.as_ref().map(|p| p.state) {
        // A record made for a report says what to read, not that it was graded.
        None => return Err(no_run()),
        Some(State::Running | State::Interrupted) => {
            return Err(RunError::RetryUnfinished {
                dir: dir.to_path_buf(),
            });
        }
        Some(State::Complete) => {}
    }
    if !results.exists() {
        return Err(no_run());
    }
    same_inputs(recorded, now, dir, "retry the errors of", "--retry-errors")?;
    Ok(recorded)
}
