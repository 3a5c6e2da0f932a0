//! gavel: a grader host for AI-agent evaluations.
//!
//! Data flows one way: suite + dataset -> samples -> trajectory (canonical) -> extractor ->
//! grader -> grade -> results writer + aggregates -> gate -> exit code.

// Suite errors and grades travel as `Err` once per grader or suite, never in a tight loop;
// boxing them would only add indirection to every caller.
#![allow(clippy::result_large_err)]

pub mod alloc;
pub mod dataset;
pub mod extract;
pub mod gate;
pub mod grade;
pub mod graders;
pub mod grading;
pub mod judge;
pub mod junit;
pub mod pack;
pub mod plan;
pub mod python;
pub mod result;
pub mod reward;
pub mod runner;
pub mod sample;
pub mod scaffold;
pub mod scan;
pub mod setup;
pub mod suite;
pub mod summary;
pub mod trajectory;
