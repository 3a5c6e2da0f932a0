//! A request's rows graded by the engine, as `gavel run` grades a dataset: the same pass, the
//! same `results.jsonl` lines, collected in memory instead of written to a file.

use std::path::Path;
use std::sync::Arc;
use std::time::Instant;

use crate::grade::pack::Kept;
use crate::grade::{GradeKey, Status};
use crate::input::dataset::Items;
use crate::output::result::{ErrorCategory, SampleResult};
use crate::run::Prepared;
use crate::run::engine::{Pass, PassEnd, Selected, Selection, Sink, workers_runtime};

/// What the file of a request's rows is called in row errors.
const ROWS_NAME: &str = "request body";

/// A request's results.
#[derive(Default)]
pub struct Graded {
    /// The `results.jsonl` lines, in row order, each with its newline.
    pub lines: Vec<u8>,
    /// What the OpenRLHF answer and the metrics read of each result, in row order.
    pub scored: Vec<Scored>,
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
        let failed_grades = (result.grades.iter())
            .filter(|(_, g)| g.status == Status::Error)
            .count() as u64;
        let failed_sample = result
            .error
            .as_ref()
            .is_some_and(|e| e.category == ErrorCategory::Grading && failed_grades == 0);
        Scored {
            status: result.status(),
            reward: result.reward,
            grades: (result.grades.iter())
                .map(|(key, grade)| (key.clone(), grade.score))
                .collect(),
            grading_failures: failed_grades + u64::from(failed_sample),
        }
    }
}

/// Why a request's rows have no results.
#[derive(Debug, thiserror::Error)]
pub enum GradingError {
    #[error("the request's deadline passed before its rows were graded")]
    Deadline,
    #[error("judge `{key}` cannot be used: {reason}")]
    JudgeDown { key: String, reason: String },
    #[error("the server is stopping")]
    Stopped,
    #[error("grading failed: {0}")]
    Failed(String),
}

/// Collects a pass's lines until the deadline, which halts the pass; lines that come after it
/// are refused.
struct Collect {
    graded: Graded,
    deadline: Instant,
    late: bool,
}

impl Sink for Collect {
    fn write(&mut self, results: &[SampleResult], lines: &[u8]) -> std::io::Result<()> {
        if Instant::now() >= self.deadline {
            self.late = true;
            return Err(std::io::Error::new(
                std::io::ErrorKind::TimedOut,
                GradingError::Deadline.to_string(),
            ));
        }
        self.graded.lines.extend_from_slice(lines);
        self.graded.scored.extend(results.iter().map(Scored::of));
        Ok(())
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
pub async fn grade(
    prepared: &Prepared,
    workers: usize,
    rows: Vec<u8>,
    deadline: Instant,
    kept: Option<Arc<Kept>>,
) -> Result<Graded, GradingError> {
    let items = Items::in_memory(Path::new(ROWS_NAME), rows);
    grade_items(prepared, workers, items, deadline, kept).await
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
        .block_on(grade_items(prepared, workers, items, deadline, None))
}

/// [`grade`] over any stream of rows (held in memory, or a dataset file read as `gavel run`
/// reads it), each invalid row located in the file its items name.
pub async fn grade_items(
    prepared: &Prepared,
    workers: usize,
    items: Items,
    deadline: Instant,
    kept: Option<Arc<Kept>>,
) -> Result<Graded, GradingError> {
    let mut sink = Collect {
        graded: Graded::default(),
        deadline,
        late: false,
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
    match end {
        // Halted at the deadline, the pass ends as if complete, short of rows.
        _ if sink.late || Instant::now() >= deadline => Err(GradingError::Deadline),
        Ok(PassEnd::Complete) => Ok(sink.graded),
        Ok(PassEnd::JudgeDown) => Err(match prepared.plan.judge_down() {
            Some((key, reason)) => GradingError::JudgeDown {
                key: key.to_string(),
                reason,
            },
            None => GradingError::Failed("a judge stopped answering".to_string()),
        }),
        Ok(PassEnd::Interrupted | PassEnd::Refused) => Err(GradingError::Stopped),
        Err(e) => Err(GradingError::Failed(e.to_string())),
    }
}
