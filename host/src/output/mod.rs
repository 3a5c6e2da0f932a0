//! What a run writes: results, the summary and JUnit.

pub mod diff;
pub mod gate;
pub mod junit;
pub mod record;
pub mod report;
pub mod result;
pub mod summary;

use std::path::{Path, PathBuf};

/// The results file of a run's folder: a line per sample.
pub const RESULTS_FILE: &str = "results.jsonl";
/// The summary file of a run's folder.
pub const SUMMARY_FILE: &str = "summary.json";

/// The files a run writes in its folder `dir`, and a report or a comparison of it reads, each
/// with what it is: its results, its summary and its record.
pub fn run_files(dir: &Path) -> [(&'static str, PathBuf); 3] {
    [
        ("results", dir.join(RESULTS_FILE)),
        ("summary", dir.join(SUMMARY_FILE)),
        ("record", dir.join(record::RUN_FILE)),
    ]
}
