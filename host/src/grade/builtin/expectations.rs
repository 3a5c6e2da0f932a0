//! A sample's `expected:` block, graded as evaldeck grades a test case: one check per key, in
//! evaldeck's order, AND-combined (an error wins, then a fail; skips and passes are neutral).
//! Unlike evaldeck, every documented key is checked, `output_equals`, `output_matches` and
//! `min_steps` included.

use crate::grade::builtin::evaldeck::Check;
use crate::grade::{CheckOutcome, Grade, Status};
use crate::input::sample::{Expected, Sample};

/// Grades `sample.expected`. Score: the share of sub-checks that passed (evaldeck's
/// `pass_rate`). The sub-checks are listed in `metadata.checks`.
pub fn grade(sample: &Sample<'_>) -> Grade {
    let Some(expected) = &sample.expected else {
        return Grade::new(
            0.0,
            Status::Skip,
            "sample has no `expected:` block; nothing to check",
        );
    };
    let checks = checks_for(expected);
    if checks.is_empty() {
        return Grade::new(
            0.0,
            Status::Skip,
            "the sample's `expected:` block sets no check",
        );
    }
    let mut status = Status::Pass;
    let mut passed = 0;
    let mut problems = Vec::new();
    let mut listed = Vec::with_capacity(checks.len());
    for check in &checks {
        let grade = check.outcome(sample);
        match grade.status {
            Status::Pass => passed += 1,
            Status::Error => status = Status::Error,
            Status::Fail if status != Status::Error => status = Status::Fail,
            Status::Fail | Status::Skip => {}
        }
        if grade.status != Status::Pass {
            problems.push([check.name(), ": ", &grade.rationale].concat());
        }
        listed.push(CheckOutcome {
            check: check.name(),
            status: grade.status,
            message: grade.rationale.into_owned(),
        });
    }
    let total = checks.len();
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

/// The checks a block asks for, in evaldeck's order (`_build_graders_for_turn`), with the keys
/// evaldeck leaves unchecked placed after their nearest kin. Each check reads its value from the
/// block itself.
fn checks_for(expected: &Expected) -> Vec<Check> {
    let listed = |list: &Option<Vec<String>>| list.as_ref().is_some_and(|l| !l.is_empty());
    // Built only when wanted: a block sets a few of the twelve.
    let candidates: [(bool, fn() -> Check); 12] = [
        (listed(&expected.output_contains), || {
            Check::OutputContains {
                values: None,
                case_sensitive: false,
            }
        }),
        (listed(&expected.output_not_contains), || {
            Check::OutputNotContains {
                values: None,
                case_sensitive: false,
            }
        }),
        (expected.output_equals.is_some(), || Check::OutputEquals {
            expected: None,
            normalize_whitespace: true,
        }),
        (expected.output_matches.is_some(), || Check::OutputMatches {
            pattern: None,
            flags: 0,
        }),
        (listed(&expected.tools_called), || Check::ToolsCalled {
            required: None,
        }),
        (listed(&expected.tools_not_called), || {
            Check::ToolsNotCalled { forbidden: None }
        }),
        (listed(&expected.tool_call_order), || Check::ToolCallOrder {
            expected_order: None,
        }),
        (expected.max_steps.is_some(), || Check::MaxSteps {
            max_steps: None,
        }),
        (expected.min_steps.is_some(), || Check::MinSteps {
            min_steps: None,
        }),
        (expected.max_tool_calls.is_some(), || Check::MaxToolCalls {
            max_tool_calls: None,
        }),
        (expected.max_llm_calls.is_some(), || Check::MaxLlmCalls {
            max_llm_calls: None,
        }),
        (
            expected.task_completed.is_some(),
            // The block's own `task_completed` overrides this default when grading.
            || Check::TaskCompleted {
                require_success: true,
            },
        ),
    ];
    candidates
        .into_iter()
        .filter_map(|(wanted, check)| wanted.then(check))
        .collect()
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
    fn no_block_or_empty_block_is_skipped() {
        let g = grade(&sample(None, "x", &[]));
        assert_eq!((g.status, g.score), (Status::Skip, 0.0));
        assert!(g.rationale.contains("expected"));
        let g = grade(&sample(Some(json!({"output_contains": []})), "x", &[]));
        assert_eq!(g.status, Status::Skip);
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
    fn an_error_outranks_a_fail() {
        let g = grade(&sample(
            Some(json!({"output_contains": ["zzz"], "output_matches": "(", "max_steps": 5})),
            "out",
            &[],
        ));
        assert_eq!(g.status, Status::Error);
        assert!((g.score - 1.0 / 3.0).abs() < 1e-12);
        assert!(
            g.rationale.contains("output_matches: Invalid regex"),
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
