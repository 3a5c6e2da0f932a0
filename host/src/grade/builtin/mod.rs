//! Built-in graders and the shared tool-grader pipeline.
//!
//! - [`letta`]: letta-evals' tool functions over `(sample, submission)`.
//! - [`evaldeck`]: evaldeck's code checks over the whole trajectory.
//! - [`expectations`]: a sample's `expected:` block, AND-combined as evaldeck does.

pub mod evaldeck;
pub mod expectations;
pub mod letta;

/// A grader or extractor configuration that cannot work: which field, and why.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{field}: {message}")]
pub struct ConfigError {
    /// The key inside the grader's `config:` / `extractor_config:` (empty for the whole map).
    pub field: String,
    pub message: String,
}

impl ConfigError {
    pub fn new(field: impl Into<String>, message: impl Into<String>) -> ConfigError {
        ConfigError {
            field: field.into(),
            message: message.into(),
        }
    }
}

/// A name and its one-line description, as `gavel list` prints them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Described {
    pub name: &'static str,
    pub description: &'static str,
}
