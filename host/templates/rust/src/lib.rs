//! The {{name}} pack: a grader and an extractor, each a plain function listed in `pack!`.

use gavel_guest::prelude::*;
use serde::Deserialize;

/// The suite's `config:` for `contains_answer`; every key is optional.
#[derive(Default, Deserialize)]
#[serde(deny_unknown_fields, default)]
struct ContainsAnswer {
    /// Compare letters exactly as written (default: ignore case).
    case_sensitive: bool,
}

/// Passes when the submission, trimmed, contains the sample's ground truth.
fn contains_answer(input: &GradeInput, config: &ContainsAnswer) -> Result<Grade, Error> {
    let answer = input
        .sample
        .ground_truth_text()
        .ok_or_else(|| Error::new("the sample has no ground_truth"))?;
    let submission = input.submission.trim();
    let found = if config.case_sensitive {
        submission.contains(answer)
    } else {
        submission
            .to_lowercase()
            .contains(&answer.to_lowercase())
    };
    Ok(if found {
        Grade::pass(format!("found '{answer}'"))
    } else {
        Grade::fail(format!("'{answer}' is not in the answer"))
            .expected(answer)
            .actual(submission)
    })
}

/// Config of `final_answer`; every key is optional.
#[derive(Deserialize)]
#[serde(deny_unknown_fields, default)]
struct FinalAnswer {
    /// The text that introduces the answer.
    marker: String,
}

impl Default for FinalAnswer {
    fn default() -> Self {
        FinalAnswer {
            marker: "FINAL ANSWER:".to_string(),
        }
    }
}

/// The text after the last marker (default `FINAL ANSWER:`) in the agent's messages, up to the
/// end of its line and trimmed; nothing when no message has the marker.
fn final_answer(input: &ExtractInput, config: &FinalAnswer) -> Option<String> {
    input
        .trajectory
        .assistant_messages()
        .rev()
        .find_map(|content| {
            let text = content.flatten();
            let (_, after) = text.rsplit_once(config.marker.as_str())?;
            Some(after.lines().next().unwrap_or("").trim().to_string())
        })
}

gavel_guest::pack! {
    graders: {
        /// The submission contains the ground truth (case-insensitive unless configured).
        contains_answer(needs_ground_truth),
    },
    extractors: {
        /// The text after the last `FINAL ANSWER:` in the agent's messages.
        final_answer,
    },
}
