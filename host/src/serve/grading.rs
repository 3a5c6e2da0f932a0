//! A request's rows graded by the engine, as `gavel run` grades a dataset: the same pass, the
//! same `results.jsonl` lines, collected in memory instead of written to a file; or, once they
//! pass [`HOLD`] bytes, handed on to the answer as they come, the pass waiting for its client
//! to take them in.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;
use std::time::Instant;

use bytes::Bytes;
use tokio::sync::mpsc;

use crate::grade::pack::{Kept, wait_here};
use crate::grade::{GradeKey, Status};
use crate::input::dataset::Items;
use crate::output::result::{ErrorCategory, SampleResult};
use crate::run::Prepared;
use crate::run::engine::{Pass, PassEnd, Selected, Selection, Sink, workers_runtime};

/// What the file of a request's rows is called in row errors.
const ROWS_NAME: &str = "request body";

/// Bytes of result lines held before a streamed answer starts: an answer shorter than this is
/// sent whole, with its length, and a request that fails before its end is answered with the
/// status that says why.
pub const HOLD: usize = 1 << 20;

/// Bytes of result lines gathered into one piece of a streamed answer.
const PIECE: usize = 256 << 10;

/// Pieces a streamed answer holds for its client; past them the pass waits for it to read.
pub const PIECES: usize = 4;

/// A request's results.
#[derive(Default)]
pub struct Graded {
    /// The `results.jsonl` lines, in row order, each with its newline (those not streamed).
    pub lines: Vec<u8>,
    /// What the OpenRLHF answer reads of each result, in row order; empty for a streamed pass,
    /// which does not keep them.
    pub scored: Vec<Scored>,
    /// What the metrics count of the results.
    pub tally: Tally,
}

/// The results of a request counted by status, and their grades in error because a grader
/// could not grade.
#[derive(Default, Debug, Clone, PartialEq, Eq)]
pub struct Tally {
    pub samples: BTreeMap<&'static str, u64>,
    pub grading_failures: u64,
}

impl Tally {
    fn add(&mut self, result: &SampleResult) {
        *self.samples.entry(result.status().as_str()).or_default() += 1;
        self.grading_failures += grading_failures(result);
    }

    /// Results counted.
    pub fn rows(&self) -> u64 {
        self.samples.values().sum()
    }
}

/// What a streamed answer is sent: its lines, a piece at a time, then how the pass ended.
pub enum Piece {
    Lines(Bytes),
    End(Result<Tally, GradingError>),
}

/// A result's reward and grades, without the rest.
pub struct Scored {
    pub status: Status,
    pub reward: Option<f64>,
    pub grades: Vec<(GradeKey, f64)>,
    /// Grades in error because a grader could not grade (a sandbox's trap, timeout, fuel or
    /// memory, a judge's failure).
    pub grading_failures: u64,
}

impl Scored {
    fn of(result: &SampleResult) -> Scored {
        Scored {
            status: result.status(),
            reward: result.reward,
            grades: (result.grades.iter())
                .map(|(key, grade)| (key.clone(), grade.score))
                .collect(),
            grading_failures: grading_failures(result),
        }
    }
}

/// Grades of `result` in error because a grader could not grade, or one when the sample itself
/// failed to grade without any.
fn grading_failures(result: &SampleResult) -> u64 {
    let failed_grades = (result.grades.iter())
        .filter(|(_, g)| g.status == Status::Error)
        .count() as u64;
    let failed_sample = result
        .error
        .as_ref()
        .is_some_and(|e| e.category == ErrorCategory::Grading && failed_grades == 0);
    failed_grades + u64::from(failed_sample)
}

/// Why a request's rows have no results.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum GradingError {
    #[error("the request's deadline passed before its rows were graded")]
    Deadline,
    #[error("judge `{key}` cannot be used: {reason}")]
    JudgeDown { key: String, reason: String },
    #[error("the server is stopping")]
    Stopped,
    #[error("the client closed the connection before the answer's end")]
    Gone,
    #[error("grading failed: {0}")]
    Failed(String),
}

/// Collects a pass's lines until the deadline, which halts the pass; lines that come after it
/// are refused. Given a stream, it sends the lines on once they pass [`HOLD`] bytes.
struct Collect {
    graded: Graded,
    deadline: Instant,
    late: bool,
    /// The client stopped reading the pieces sent.
    gone: bool,
    stream: Option<Stream>,
}

/// Where a streamed answer's pieces go, and whether the first has gone.
struct Stream {
    pieces: mpsc::Sender<Piece>,
    started: bool,
}

impl Collect {
    fn late(&mut self) -> std::io::Error {
        self.late = true;
        std::io::Error::new(
            std::io::ErrorKind::TimedOut,
            GradingError::Deadline.to_string(),
        )
    }
}

impl Sink for Collect {
    fn write(&mut self, results: &[SampleResult], lines: &[u8]) -> std::io::Result<()> {
        if Instant::now() >= self.deadline {
            return Err(self.late());
        }
        self.graded.lines.extend_from_slice(lines);
        for result in results {
            self.graded.tally.add(result);
        }
        let Some(stream) = &mut self.stream else {
            self.graded.scored.extend(results.iter().map(Scored::of));
            return Ok(());
        };
        let due = if stream.started { PIECE } else { HOLD };
        if self.graded.lines.len() < due {
            return Ok(());
        }
        let piece = Piece::Lines(std::mem::take(&mut self.graded.lines).into());
        // The pass waits here, within its deadline, while the client has not read the pieces
        // before: what a streamed answer holds in memory is bounded by them.
        match wait_here(stream.pieces.send(piece), self.deadline) {
            Ok(Ok(())) => {
                stream.started = true;
                Ok(())
            }
            Ok(Err(_)) => {
                self.gone = true;
                Err(std::io::Error::new(
                    std::io::ErrorKind::BrokenPipe,
                    GradingError::Gone.to_string(),
                ))
            }
            Err(_) => Err(self.late()),
        }
    }

    fn stopping(&mut self) -> std::io::Result<()> {
        Ok(())
    }

    fn deadline(&self) -> Option<Instant> {
        Some(self.deadline)
    }
}

/// Grades `rows` (JSON Lines) with `prepared`'s plan, `workers` samples at once, on the
/// runtime it is awaited on; invalid rows are error results, as `gavel run --skip-invalid`
/// writes them. Python graders take their warm instances from `kept` and leave them there;
/// without it, the request's instances are its own.
///
/// Given `pieces`, lines past [`HOLD`] bytes are sent there as they come, the last piece saying
/// how the pass ended (and what is returned holds nothing); the pass waits while the client has
/// not read the pieces sent, within the deadline, and stops once they are no longer read.
/// Shorter, the lines are returned whole and nothing is sent.
pub async fn grade(
    prepared: &Prepared,
    workers: usize,
    rows: Vec<u8>,
    deadline: Instant,
    kept: Option<Arc<Kept>>,
    pieces: Option<mpsc::Sender<Piece>>,
) -> Result<Graded, GradingError> {
    let items = Items::in_memory(Path::new(ROWS_NAME), rows);
    grade_items(prepared, workers, items, deadline, kept, pieces).await
}

/// [`grade_items`] for a caller without a runtime (the Python package): the pass runs on
/// worker threads of its own, as `gavel run`'s does, and its Python instances are its own.
pub fn grade_items_blocking(
    prepared: &Prepared,
    workers: usize,
    items: Items,
    deadline: Instant,
) -> Result<Graded, GradingError> {
    workers_runtime(workers)
        .map_err(|e| GradingError::Failed(e.to_string()))?
        .block_on(grade_items(prepared, workers, items, deadline, None, None))
}

/// [`grade`] over any stream of rows (held in memory, or a dataset file read as `gavel run`
/// reads it), each invalid row located in the file its items name.
async fn grade_items(
    prepared: &Prepared,
    workers: usize,
    items: Items,
    deadline: Instant,
    kept: Option<Arc<Kept>>,
    pieces: Option<mpsc::Sender<Piece>>,
) -> Result<Graded, GradingError> {
    let mut sink = Collect {
        graded: Graded::default(),
        deadline,
        late: false,
        gone: false,
        stream: pieces.map(|pieces| Stream {
            pieces,
            started: false,
        }),
    };
    let pass = Pass {
        plan: prepared.plan.clone(),
        parser: prepared.parser.clone(),
        reward: prepared.suite.file.reward.clone().map(Arc::new),
        workers,
        refuse_invalid: false,
        retry: None,
        replay: 0,
        sink: &mut sink,
    };
    let end = (pass.run_within(Selected::new(items, Selection::default()), kept)).await;
    let ended = match end {
        // Halted at the deadline, the pass ends as if complete, short of rows.
        _ if sink.late || Instant::now() >= deadline => Err(GradingError::Deadline),
        Ok(PassEnd::Complete) => Ok(()),
        Ok(PassEnd::JudgeDown) => Err(match prepared.plan.judge_down() {
            Some((key, reason)) => GradingError::JudgeDown {
                key: key.to_string(),
                reason,
            },
            None => GradingError::Failed("a judge stopped answering".to_string()),
        }),
        Ok(PassEnd::Interrupted | PassEnd::Refused) => Err(GradingError::Stopped),
        _ if sink.gone => Err(GradingError::Gone),
        Err(e) => Err(GradingError::Failed(e.to_string())),
    };
    let Collect { graded, stream, .. } = sink;
    let Some(Stream {
        pieces,
        started: true,
    }) = stream
    else {
        return ended.map(|()| graded);
    };
    // The rest of the lines, then how the pass ended, within the deadline; past it, the
    // pieces end without their end, and the answer is broken off.
    let end = async {
        let ended = match ended {
            Ok(()) if graded.lines.is_empty() => Ok(graded.tally),
            Ok(()) => match pieces.send(Piece::Lines(graded.lines.into())).await {
                Ok(()) => Ok(graded.tally),
                Err(_) => Err(GradingError::Gone),
            },
            Err(e) => Err(e),
        };
        let _ = pieces.send(Piece::End(ended)).await;
    };
    let _ = tokio::time::timeout_at(deadline.into(), end).await;
    Ok(Graded::default())
}
