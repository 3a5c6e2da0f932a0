//! A sample's `expected:` block, graded as evaldeck grades a test case: one check per key, in
//! evaldeck's order, AND-combined (a check that fails or errs fails the block; skips and passes
//! are neutral). Unlike evaldeck, every documented key is checked, `output_equals`,
//! `output_matches` and `min_steps` included.
//!
//! A check's error (an invalid `output_matches` regex) is that check's verdict, as evaldeck's
//! grader reports it; the other checks still run and the block is a fail, counted in the metric
//! as evaldeck counts its errored case among those that did not pass.

use crate::grade::builtin::evaldeck;
use crate::grade::{CheckOutcome, Grade, Status};
use crate::input::sample::Sample;

/// Grades `sample.expected`. Score: the share of sub-checks that passed (evaldeck's
/// `pass_rate`). The sub-checks are listed in `metadata.checks`. A sample whose block is missing
/// or sets no check passes with score 0, as evaldeck passes a case with no grader (its
/// `pass_rate` of no grades is 0).
pub fn grade(sample: &Sample<'_>) -> Grade {
    let Some(expected) = &sample.expected else {
        return Grade::new(
            0.0,
            Status::Pass,
            "sample has no `expected:` block; nothing to check, so it passes as in evaldeck",
        );
    };
    let checks = evaldeck::outcomes(sample, expected);
    if checks.is_empty() {
        return Grade::new(
            0.0,
            Status::Pass,
            "the sample's `expected:` block sets no check, so it passes as in evaldeck",
        );
    }
    let total = checks.len();
    let mut passed = 0;
    let mut problems = Vec::new();
    let mut listed = Vec::with_capacity(total);
    for (name, grade) in checks {
        match grade.status {
            Status::Pass => passed += 1,
            Status::Fail | Status::Error => problems.push([name, ": ", &grade.rationale].concat()),
            Status::Skip => {}
        }
        listed.push(CheckOutcome {
            check: name,
            status: grade.status,
            message: grade.rationale.into_owned(),
        });
    }
    let status = if problems.is_empty() {
        Status::Pass
    } else {
        Status::Fail
    };
    let mut rationale = [
        itoa::Buffer::new().format(passed),
        "/",
        itoa::Buffer::new().format(total),
        " checks passed",
    ]
    .concat();
    for problem in problems {
        rationale.push_str("; ");
        rationale.push_str(&problem);
    }
    Grade::new(passed as f64 / total as f64, status, rationale).with_checks(listed)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::input::trajectory::{Content, Event, RunStatus, ToolCall, Trajectory};
    use serde_json::{Value, json};

    fn sample<'a>(expected: Option<Value>, output: &'a str, tools: &[&'a str]) -> Sample<'a> {
        let mut events: Vec<Event> = tools
            .iter()
            .map(|t| {
                Event::ToolCall(ToolCall {
                    id: "".into(),
                    name: (*t).into(),
                    arguments: "{}".into(),
                    failed: false,
                })
            })
            .collect();
        events.push(Event::Assistant {
            content: Content::Text(output.into()),
        });
        Sample {
            expected: expected.map(|e| serde_json::from_value(e).unwrap()),
            trajectory: Some(Trajectory {
                turns: vec![events],
                output: Some(output.into()),
                status: RunStatus::Success,
                ..Trajectory::default()
            }),
            ..Sample::default()
        }
    }

    /// The checks as a results file lists them in `metadata.checks`: `(check, status)`.
    fn checks(g: &Grade) -> Vec<(String, String)> {
        serde_json::to_value(g).unwrap()["metadata"]["checks"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| {
                (
                    c["check"].as_str().unwrap().into(),
                    c["status"].as_str().unwrap().into(),
                )
            })
            .collect()
    }

    #[test]
    fn no_block_or_a_block_without_checks_passes_as_in_evaldeck() {
        let g = grade(&sample(None, "x", &[]));
        assert_eq!((g.status, g.score), (Status::Pass, 0.0));
        assert!(
            g.rationale.contains("no `expected:` block"),
            "{}",
            g.rationale
        );
        for empty in [
            json!({}),
            json!({"output_contains": [], "tools_called": [], "tools_not_called": []}),
            json!({"custom": {"rubric": "polite"}}),
        ] {
            let g = grade(&sample(Some(empty.clone()), "x", &[]));
            assert_eq!((g.status, g.score), (Status::Pass, 0.0), "{empty}");
            assert!(g.rationale.contains("sets no check"), "{}", g.rationale);
        }
    }

    #[test]
    fn every_documented_key_is_checked_in_order() {
        let g = grade(&sample(
            Some(json!({
                "task_completed": true,
                "min_steps": 1,
                "output_matches": "^Done\\.$",
                "output_equals": "Done.",
                "tools_called": ["search"],
                "output_contains": ["done"],
            })),
            "Done.",
            &["search"],
        ));
        let pass = |c: &str| (c.to_string(), "pass".to_string());
        assert_eq!(
            checks(&g),
            [
                pass("output_contains"),
                pass("output_equals"),
                pass("output_matches"),
                pass("tools_called"),
                pass("min_steps"),
                pass("task_completed"),
            ]
        );
        assert_eq!((g.status, g.score), (Status::Pass, 1.0));
        assert_eq!(g.rationale, "6/6 checks passed");
    }

    #[test]
    fn a_checks_error_is_its_own_and_the_block_fails() {
        let g = grade(&sample(
            Some(json!({"output_contains": ["zzz"], "output_matches": "[bad", "max_steps": 5})),
            "out",
            &[],
        ));
        assert_eq!(
            checks(&g),
            [
                ("output_contains".to_string(), "fail".to_string()),
                ("output_matches".to_string(), "error".to_string()),
                ("max_steps".to_string(), "pass".to_string()),
            ]
        );
        assert_eq!(g.status, Status::Fail);
        assert!((g.score - 1.0 / 3.0).abs() < 1e-12);
        assert!(
            g.rationale.ends_with(
                "; output_matches: Invalid regex: unterminated character set at position 0"
            ),
            "{}",
            g.rationale
        );
        let g = grade(&sample(
            Some(json!({"output_contains": ["zzz"], "max_steps": 5})),
            "o",
            &[],
        ));
        assert_eq!((g.status, g.score), (Status::Fail, 0.5));
    }
}
