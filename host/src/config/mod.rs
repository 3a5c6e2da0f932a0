//! What a suite asks for, read from its file: the suite, its gate and its reward.

pub mod gate;
pub mod openai;
pub mod position;
pub mod pyyaml;
pub mod reward;
pub mod suite;

/// A mistake in one field of a suite found after parsing (a metric key the gate names but no
/// grader has): the field's dotted path, which locates it in the file, and what is wrong.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{field}: {message}")]
pub struct FieldProblem {
    pub field: String,
    pub message: String,
}

/// The mistakes a check found, one a line.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{}", .0.iter().map(ToString::to_string).collect::<Vec<_>>().join("\n"))]
pub struct FieldProblems(pub Vec<FieldProblem>);

impl FieldProblems {
    /// `Ok` when there are none.
    pub fn into_result(problems: Vec<FieldProblem>) -> Result<(), FieldProblems> {
        if problems.is_empty() {
            Ok(())
        } else {
            Err(FieldProblems(problems))
        }
    }
}
