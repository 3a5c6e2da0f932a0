//! A mistake in a suite file, located at its file, line, column and field, and the name a
//! mistyped one was likely meant to be.

use std::fmt;
use std::path::{Path, PathBuf};

/// A mistake in a suite file, located.
#[derive(Debug, Clone, PartialEq)]
pub struct SuiteError {
    pub file: PathBuf,
    pub line: Option<u64>,
    pub column: Option<u64>,
    /// Dotted path of the field, e.g. `graders.accuracy.extractor_config`.
    pub field: String,
    pub message: String,
    /// How to fix it, where gavel can tell.
    pub hint: Option<String>,
}

impl fmt::Display for SuiteError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.file.display())?;
        if let Some(line) = self.line {
            write!(f, ":{line}")?;
            if let Some(column) = self.column {
                write!(f, ":{column}")?;
            }
        }
        if self.field.is_empty() {
            write!(f, ": {}", self.message)?;
        } else {
            write!(f, ": {}: {}", self.field, self.message)?;
        }
        if let Some(hint) = &self.hint {
            write!(f, "\n  hint: {hint}")?;
        }
        Ok(())
    }
}

impl std::error::Error for SuiteError {}

/// One mistake where a list of them is reported: `?` turns a single error into the list.
impl From<SuiteError> for Vec<SuiteError> {
    fn from(error: SuiteError) -> Vec<SuiteError> {
        vec![error]
    }
}

impl crate::config::FieldProblem {
    /// The problem as an error of the suite file `file` (located later by its field).
    pub fn in_file(self, file: &Path) -> SuiteError {
        SuiteError::at(file, self.field, self.message)
    }
}

impl SuiteError {
    /// An error about a field whose location is not known (found after parsing).
    pub fn at(file: &Path, field: impl Into<String>, message: impl Into<String>) -> SuiteError {
        SuiteError {
            file: file.to_path_buf(),
            line: None,
            column: None,
            field: field.into(),
            message: message.into(),
            hint: None,
        }
    }

    /// `errors` in the order of their lines; those without one (about the whole file) last.
    pub fn sort(errors: &mut [SuiteError]) {
        errors.sort_by_key(|e| (e.line.is_none(), e.line, e.column));
    }

    pub fn with_hint(mut self, hint: impl Into<String>) -> SuiteError {
        self.hint = Some(hint.into());
        self
    }
}

/// The candidate closest to `given`, when it is close enough to be a likely typo.
pub fn closest<'a>(given: &str, candidates: impl IntoIterator<Item = &'a str>) -> Option<&'a str> {
    candidates
        .into_iter()
        .map(|c| (strsim::jaro_winkler(given, c), c))
        .filter(|(score, _)| *score >= 0.8)
        .max_by(|a, b| a.0.total_cmp(&b.0))
        .map(|(_, c)| c)
}
