//! gavel: a grader host for AI-agent evaluations.
//!
//! Data flows one way: suite + dataset -> samples -> trajectory (canonical) -> extractor ->
//! grader -> grade -> results writer + aggregates -> gate -> exit code.

// Suite errors and grades travel as `Err` once per grader or suite, never in a tight loop;
// boxing them would only add indirection to every caller.
#![allow(clippy::result_large_err)]
// The library returns what it has to say (results, errors, notices through `notice`) and leaves
// printing and the process's exit status to the program running it.
#![deny(clippy::print_stdout, clippy::print_stderr, clippy::exit)]

pub mod alloc;
pub mod cache;
pub mod config;
pub mod fsio;
pub mod grade;
pub mod input;
pub mod notice;
pub mod output;
pub mod plan;
pub mod run;
pub mod scaffold;
pub mod serve;
pub mod terminal;
