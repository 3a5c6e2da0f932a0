//! Built-in graders and the shared tool-grader pipeline.
//!
//! - [`letta`]: letta-evals' tool functions over `(sample, submission)`.
//! - [`evaldeck`]: evaldeck's code checks over the whole trajectory.
//! - [`expectations`]: a sample's `expected:` block, AND-combined as evaldeck does.

pub mod evaldeck;
pub mod expectations;
pub mod letta;

/// A name and its one-line description, as `gavel list` prints them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Described {
    pub name: &'static str,
    pub description: &'static str,
}
