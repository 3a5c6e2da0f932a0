//! Running a suite: checked before grading, then graded in parallel.

pub mod engine;
pub mod grading;
pub mod setup;
