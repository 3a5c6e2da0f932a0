//! The smallest pack: a grader that passes every sample without looking at it. Benchmarks use
//! it as the floor, the cost of a sandboxed call itself.

use gavel_guest::prelude::*;

/// Passes every sample.
fn constant(_: &GradeInput, _: &NoConfig) -> Grade {
    Grade::pass("constant")
}

gavel_guest::pack! {
    graders: {
        /// Passes every sample (a benchmark floor).
        constant,
    },
}
