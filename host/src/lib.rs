//! gavel: a grader host for AI-agent evaluations.
//!
//! Data flows one way: suite + dataset -> samples -> trajectory (canonical) -> extractor ->
//! grader -> grade -> results writer + aggregates -> gate -> exit code.

pub mod extract;
pub mod grade;
pub mod graders;
pub mod pack;
pub mod python;
pub mod result;
pub mod sample;
pub mod trajectory;
