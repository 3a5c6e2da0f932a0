//! A token-budget grader whose budget each suite sets in `config:`.

use gavel_guest::prelude::*;
use serde::Deserialize;

/// The grader's config: `config: {max_tokens: 1000}` in the suite.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Budget {
    max_tokens: u64,
}

/// Passes when the run used at most `max_tokens` tokens in total.
fn token_budget(input: &GradeInput, config: &Budget) -> Grade {
    let total = input.trajectory.total_tokens();
    let budget = config.max_tokens;
    let grade = if total <= budget {
        Grade::pass(format!("Used {total} tokens (budget: {budget})"))
    } else {
        Grade::fail("Exceeded token budget")
            .expected(format!("<= {budget}"))
            .actual(total.to_string())
    };
    grade.metadata("total_tokens", total)
}

gavel_guest::pack! {
    graders: {
        /// Passes when the run used at most `max_tokens` tokens (set per suite).
        token_budget,
    },
}
