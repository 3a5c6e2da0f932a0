//! `--retry-errors`: a finished run's errors graded again, and nothing else. A sample with a
//! grade in error has those grades graded again and keeps its others; a sample in error without
//! one (no grades, or its extraction or reward failed) is graded whole; every other result is
//! kept as it was, byte for byte. The new `results.jsonl` is written beside the old one and
//! takes its place once whole, so a crash or a Ctrl-C loses no result: Ctrl-C keeps the earlier
//! results of what was not retried yet, and the run stays a finished one, whose summary is of
//! all of its results.

use std::collections::BTreeMap;
use std::path::Path;

use super::{Prepared, PreviousRecord, RunError, foreign_grades, foreign_run, same_inputs};
use crate::fsio;
use crate::grade::Status;
use crate::output::record::{RunRecord, State};
use crate::output::result::{self, ResultLines, Retry, SampleResult};

/// What `--retry-errors` asks of an earlier run, as its errors say it.
pub(super) const RETRY: &str = "retry the errors of";

/// Where the new results are written until they replace the old.
pub(super) const RETRY_FILE: &str = "results.jsonl.retry";

/// The lines of the results file being retried, read as the new one is written.
pub(super) struct KeptLines {
    pub(super) lines: ResultLines,
    /// The lines graded again, in order.
    retried: std::vec::IntoIter<u64>,
}

impl KeptLines {
    /// The lines of the results file at `path`; `retried`, the lines graded again, in order.
    pub(super) fn open(path: &Path, retried: Vec<u64>) -> Result<KeptLines, RunError> {
        Ok(KeptLines {
            lines: ResultLines::open(path)?,
            retried: retried.into_iter(),
        })
    }

    /// The line of the next result graded again.
    pub(super) fn next_retried(&mut self) -> Option<u64> {
        self.retried.next()
    }
}

/// The results in error of the finished run whose results are in `results_path`; that each is
/// of the sample the run selects at its place is checked as the retry reads the dataset.
pub(super) struct Errored {
    /// The results graded again, by line.
    pub(super) retry: BTreeMap<u64, SampleResult>,
    /// The grades graded again.
    pub(super) grades: u64,
    /// The run's results.
    pub(super) results: u64,
}

impl Errored {
    /// The errors of the run in `dir`, whose results are in `results_path`; refused when a
    /// result is not graded on the suite's metrics (a line of another run), as `--resume` and
    /// `gavel merge` refuse it.
    pub(super) fn find(
        prepared: &Prepared,
        dir: &Path,
        results_path: &Path,
    ) -> Result<Errored, RunError> {
        let mut retry = BTreeMap::new();
        let mut grades = 0u64;
        let mut line = 0u64;
        let keys: Vec<&str> = prepared.plan.metrics.iter().map(|m| m.key).collect();
        let metrics = keys.len() as u64;
        let mut foreign = None;
        let results = result::read_previous(results_path, |r| {
            foreign = foreign_grades(results_path, line + 1, &r, &keys);
            if foreign.is_some() {
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
        if let Some(line) = foreign {
            return Err(foreign_run(dir, line, RETRY, "--retry-errors"));
        }
        Ok(Errored {
            retry,
            grades,
            results,
        })
    }
}

/// Puts the new results in the place of the old, on disk first: the rename never leaves a
/// file whose lines a power cut could take.
pub(super) fn replace(temp: &Path, results: &Path) -> std::io::Result<()> {
    fsio::open_regular(temp, fsio::cap::STREAM)?.0.sync_all()?;
    std::fs::rename(temp, results)
}

/// The record of the finished run in `dir`, refused unless this run grades as it did.
pub(super) fn finished_run<'p>(
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
