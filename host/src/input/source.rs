//! The error of a dataset or runs file that cannot be read at all, whichever reader met it.

use std::path::{Path, PathBuf};

/// A dataset or runs file that cannot be read at all.
#[derive(Debug, thiserror::Error)]
#[error("{}: {message}", path.display())]
pub struct SourceError {
    pub path: PathBuf,
    pub message: String,
}

impl SourceError {
    pub(crate) fn io(path: &Path, what: &str, e: std::io::Error) -> SourceError {
        SourceError {
            path: path.to_path_buf(),
            message: format!("cannot {what}: {e}"),
        }
    }
}

/// Why a recording (an Inspect log, a collector file, a session file) cannot be made into rows:
/// what is wrong, and where in the file when it is at one place.
#[derive(Debug, thiserror::Error)]
pub enum RecordingError {
    /// The file as a whole.
    #[error("{0}")]
    File(String),
    /// A line of the file.
    #[error("line {line}: {message}")]
    Line { line: usize, message: String },
    /// A member of an archive (an Inspect `.eval` log).
    #[error("{member}: {message}")]
    Member { member: String, message: String },
}

impl RecordingError {
    /// What is wrong at `line`.
    pub(crate) fn at_line(line: usize, message: impl ToString) -> RecordingError {
        RecordingError::Line {
            line,
            message: message.to_string(),
        }
    }
}
