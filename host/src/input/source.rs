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
