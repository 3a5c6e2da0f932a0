//! A sample's `expected:` block, graded as evaldeck grades a test case: one check per key, in
//! evaldeck's order, AND-combined (a check that fails or errs fails the block; skips and passes
//! are neutral). Unlike evaldeck, every documented key is checked, `output_equals`,
//! `output_matches` and `min_steps` included.
//!
//! A check's error (an invalid `output_matches` regex) is that check's verdict, as evaldeck's
//! grader reports it; the other checks still run and the block is a fail, counted in the metric
//! as evaldeck counts its errored case among those that did not pass.
//!
//! A case with `turns:` is graded as evaldeck's suite runner grades it, turn by turn.

use serde_json::{Value, json};

use crate::grade::builtin::evaldeck;
use crate::grade::judge::TurnJudges;
use crate::grade::judge::turn::{self, TurnView};
use crate::grade::pack::PackGrader;
use crate::grade::{CheckOutcome, Grade, Status};
use crate::input::sample::{Case, CaseTurn, Sample, Texts, TurnGrader, TurnGraderKind};
use crate::input::trajectory::Trajectory;

/// What a case's turns need beyond their checks: the endpoints of their `llm` entries and the
/// functions of their `code` entries.
pub struct TurnGraders {
    pub judges: TurnJudges,
    pub code: Vec<CaseCode>,
}

/// The function of a case turn's `type: code` entry, run by the Python interpreter.
pub struct CaseCode {
    pub module: String,
    pub function: String,
    pub grader: PackGrader,
}

impl CaseCode {
    /// Whether this is the function `module.function` names.
    pub fn named(&self, module: &str, function: &str) -> bool {
        self.module == module && self.function == function
    }
}

/// Grades `sample.expected`. Score: the share of sub-checks that passed (evaldeck's
/// `pass_rate`). The sub-checks are listed in `metadata.checks`. A sample whose block is missing
/// or sets no check passes with score 0, as evaldeck passes a case with no grader (its
/// `pass_rate` of no grades is 0). A case with `turns:` is graded by [`grade_case`].
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

/// evaldeck's AND of a case's grades (`add_grade`): an error wins, then a fail; a pass or a skip
/// leaves the status as it was.
fn and(status: Status, grade: Status) -> Status {
    match grade {
        Status::Error => Status::Error,
        Status::Fail if status != Status::Error => Status::Fail,
        Status::Pass | Status::Fail | Status::Skip => status,
    }
}

/// Grades an evaldeck case's `turns` as evaldeck's suite runner does: each turn's checks (its
/// `expected:` block in evaldeck's order, then its `graders:` entries) against that turn's own
/// trace; a turn with no check passes, one passes when none of its checks fails or errs. The
/// first turn that does not pass ends the case with its status (`failed_at_turn`), and the turns
/// after it are skipped. Score: the share of all the case's checks that passed (evaldeck's
/// `pass_rate`, 0 with no check). Each turn, its status and its checks are in `metadata.turns`.
/// `case` is the sample's own: a sample that is no case of turns is graded by [`grade`], without
/// a future.
pub async fn grade_case(sample: &Sample<'_>, case: &Case<'_>, graders: &TurnGraders) -> Grade {
    let turns = &case.turns;
    if turns.is_empty() {
        return Grade::error("Test case has no turns defined");
    }
    let mut status = Status::Pass;
    let mut failed_at = None;
    let (mut passed, mut total) = (0usize, 0usize);
    let mut problems = Vec::new();
    let mut recorded = Vec::with_capacity(turns.len());
    for (index, turn) in turns.iter().enumerate() {
        let mut entry = json!({"turn_index": index, "user_input": turn.user});
        if status != Status::Pass {
            entry["status"] = json!(Status::Skip);
            entry["skipped"] = json!(true);
            entry["checks"] = json!([]);
            recorded.push(entry);
            continue;
        }
        let mut turn_status = Status::Pass;
        let mut listed = Vec::new();
        for (name, grade) in turn_checks(sample, index, turn, graders).await {
            total += 1;
            turn_status = and(turn_status, grade.status);
            if grade.status == Status::Pass {
                passed += 1;
            } else {
                problems.push(format!("turn {}: {name}: {}", index + 1, grade.rationale));
            }
            let mut check =
                json!({"check": name, "status": grade.status, "message": grade.rationale});
            let details = &grade.details().metadata;
            if !details.is_empty() {
                check["details"] = Value::Object(details.clone());
            }
            listed.push(check);
        }
        if turn_status != Status::Pass {
            status = turn_status;
            failed_at = Some(index);
        }
        entry["status"] = json!(turn_status);
        entry["skipped"] = json!(false);
        entry["checks"] = Value::Array(listed);
        recorded.push(entry);
    }
    let mut rationale = if total == 0 {
        "no turn sets a check, so the case passes as in evaldeck".to_string()
    } else {
        format!("{passed}/{total} checks passed")
    };
    for problem in problems {
        rationale.push_str("; ");
        rationale.push_str(&problem);
    }
    if let Some(failed) = failed_at
        && failed + 1 < turns.len()
    {
        let (first, last) = (failed + 2, turns.len());
        if first == last {
            rationale.push_str(&format!("; turn {first} skipped"));
        } else {
            rationale.push_str(&format!("; turns {first}-{last} skipped"));
        }
    }
    let score = if total == 0 {
        0.0
    } else {
        passed as f64 / total as f64
    };
    Grade::new(score, status, rationale)
        .with_metadata("turns", Value::Array(recorded))
        .with_metadata("failed_at_turn", json!(failed_at))
}

/// Turn `index`'s checks and their grades against its own trace, in evaldeck's order.
async fn turn_checks(
    sample: &Sample<'_>,
    index: usize,
    turn: &CaseTurn,
    graders: &TurnGraders,
) -> Vec<(&'static str, Grade)> {
    let Some(trace) = sample.turn_trace(index) else {
        let turns = sample.case.as_ref().map_or(0, |case| case.turns.len());
        return vec![(
            "execution",
            Grade::error(format!(
                "no recorded trace for turn {} of {turns}: record the case's run as a list of \
                 evaldeck traces, one per turn",
                index + 1
            )),
        )];
    };
    // What evaldeck's graders see of a turn: a case of that turn alone, and its trace.
    let turn_sample = Sample {
        input: Some(Texts::One(turn.user.clone())),
        expected: turn.expected.clone(),
        trajectory: Some(trace.clone()),
        ..Sample::default()
    };
    let mut checks = turn
        .expected
        .as_deref()
        .map(|expected| evaldeck::outcomes(&turn_sample, expected))
        .unwrap_or_default();
    for grader in &turn.graders {
        let Some(kind) = TurnGraderKind::of(&grader.kind) else {
            checks.push((
                "graders",
                Grade::error(format!("unknown grader type `{}`", grader.kind)),
            ));
            continue;
        };
        checks.push(match evaldeck::turn_check(kind, &grader.params) {
            Ok(Some(check)) => (check.name(), check.grade(&turn_sample)),
            Ok(None) if matches!(kind, TurnGraderKind::Llm | TurnGraderKind::LlmRubric) => {
                let view = TurnView {
                    index,
                    input: trace.input.as_deref().unwrap_or(&turn.user),
                    output: trace.output.as_deref(),
                    expected: turn.expected.as_deref(),
                    trace,
                };
                let rubric = kind == TurnGraderKind::LlmRubric;
                (
                    kind.name(),
                    Box::pin(turn::grade(&graders.judges, grader, rubric, &view)).await,
                )
            }
            Ok(None) => (
                kind.name(),
                Box::pin(code_check(sample, (index, trace), grader, &graders.code)).await,
            ),
            Err(e) => (
                kind.name(),
                Grade::error(format!("params.{}: {}", e.field, e.message)),
            ),
        });
    }
    checks
}

/// Turn `index`'s `type: code` entry run as evaldeck's `CustomGrader(module=..., function=...)`
/// runs in its suite runner: given that turn's trace and `EvalCase(name="turn_<index>",
/// turns=[turn])`, in a fresh sandbox call off the async workers. The check's `details` hold the
/// function's `score`, `expected` and `actual` beside the grader's name.
async fn code_check(
    sample: &Sample<'_>,
    (index, trace): (usize, &Trajectory<'_>),
    entry: &TurnGrader,
    code: &[CaseCode],
) -> Grade {
    let (module, function) = (
        entry.module.as_deref().unwrap_or_default(),
        entry.function.as_deref().unwrap_or_default(),
    );
    let Some(code) = code.iter().find(|c| c.named(module, function)) else {
        return Grade::error(format!(
            "the `type: code` entry `{module}.{function}` is run when its case is graded with \
             `gavel run CASES --traces TRACES`, which finds the module beside the case file"
        ));
    };
    // The row the interpreter reads: the turn alone as a case, and its own recorded trace.
    let row: Value = serde_json::from_str(sample.row).unwrap_or_default();
    let recorded: Value = sample
        .run
        .and_then(|run| serde_json::from_str(run).ok())
        .unwrap_or_else(|| row.clone());
    let per_turn = sample
        .case
        .as_ref()
        .is_some_and(|case| !case.traces.is_empty());
    let turn_trace = match &recorded["trajectory"] {
        Value::Array(traces) if per_turn => traces.get(index).cloned().unwrap_or_default(),
        whole => whole.clone(),
    };
    let turn_row = json!({
        "name": format!("turn_{index}"),
        "turns": [row["turns"][index].clone()],
        "trajectory": turn_trace,
    })
    .to_string();
    let call = Sample {
        id: sample.id.clone(),
        line: sample.line,
        row: &turn_row,
        ..Sample::default()
    };
    let grade = code.grader.grade_off_worker(&call, trace, "").await;
    let (expected, actual) = (
        grade.details().expected.clone(),
        grade.details().actual.clone(),
    );
    let score = grade.score;
    let mut grade = grade.with_metadata("score", json!(score));
    for (key, value) in [("expected", expected), ("actual", actual)] {
        if let Some(value) = value {
            grade = grade.with_metadata(key, value);
        }
    }
    grade
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::input::sample::Case;
    use crate::input::trajectory::{Content, Event, RunStatus, ToolCall, Trajectory};

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

    /// A case of `turns` whose traces are `outputs`, each turn asking its output to contain
    /// `want`.
    fn case<'a>(outputs: &[&'a str], wants: &[&str]) -> Sample<'a> {
        let trace = |output: &'a str| Trajectory {
            turns: vec![Vec::new()],
            output: Some(output.into()),
            ..Trajectory::default()
        };
        let turns = wants
            .iter()
            .map(|want| {
                serde_json::from_value(
                    json!({"user": "u", "expected": {"output_contains": [want]}}),
                )
                .unwrap()
            })
            .collect();
        Sample {
            case: Some(Box::new(Case {
                turns,
                traces: outputs.iter().map(|o| trace(o)).collect(),
            })),
            ..Sample::default()
        }
    }

    /// The case's grade, with no endpoint reachable (its turns set no `llm` entry).
    fn graded_case(sample: &Sample<'_>) -> Grade {
        let graders = TurnGraders {
            judges: TurnJudges::new(std::path::Path::new("."), Default::default()),
            code: Vec::new(),
        };
        tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap()
            .block_on(grade_case(sample, sample.case.as_ref().unwrap(), &graders))
    }

    #[test]
    fn turns_after_the_first_that_does_not_pass_are_skipped_and_said_so() {
        let g = graded_case(&case(&["a", "x", "c", "d"], &["a", "b", "c", "d"]));
        assert_eq!((g.status, g.score), (Status::Fail, 0.5));
        assert_eq!(
            g.rationale,
            "1/2 checks passed; turn 2: output_contains: Missing values in output: ['b']; \
             turns 3-4 skipped"
        );
        let statuses: Vec<Value> = serde_json::to_value(&g).unwrap()["metadata"]["turns"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| json!([t["status"], t["skipped"]]))
            .collect();
        assert_eq!(
            statuses,
            [
                json!(["pass", false]),
                json!(["fail", false]),
                json!(["skip", true]),
                json!(["skip", true])
            ]
        );
        let g = graded_case(&case(&["x"], &["a", "b"]));
        assert!(g.rationale.ends_with("; turn 2 skipped"), "{}", g.rationale);
        // A last turn that fails skips nothing; a missing trace is an error of its turn.
        let g = graded_case(&case(&["a"], &["a", "b"]));
        assert_eq!(g.status, Status::Error);
        assert_eq!(
            g.rationale,
            "1/2 checks passed; turn 2: execution: no recorded trace for turn 2 of 2: record \
             the case's run as a list of evaldeck traces, one per turn"
        );
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
