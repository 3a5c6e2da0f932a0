//! Grading one sample with a plan: letta-evals' tool-grader path (guard, extractor, function),
//! its per-turn mode, composites and judges; then letta-evals' sample error detection.

use std::borrow::Cow;
use std::sync::LazyLock;
use std::time::Instant;

use memchr::memmem;
use serde_json::{Value, json};

use crate::grade::builtin::{evaldeck, expectations};
use crate::grade::extract::Extractor;
use crate::grade::judge::Judge;
use crate::grade::openai;
use crate::grade::{Grade, GradeKey, Status};
use crate::input::sample::{Sample, Texts};
use crate::input::trajectory::Trajectory;
use crate::output::result::{ErrorCategory, SampleError, SampleResult};
use crate::plan::{Extraction, Function, Node, Plan};

pub const EMPTY_TRAJECTORY: &str = "Empty trajectory - agent produced no messages";
pub const EMPTY_SUBMISSION: &str = "Empty submission - extractor found no content";

/// Grades a sample with every metric of the plan, in order, and applies letta-evals' error
/// detection. The reward is left to the caller. `kept`, an earlier result of the sample
/// (`--retry-errors`), keeps the grades it keeps ([`SampleResult::kept_grade`]): only the
/// others are graded.
pub async fn grade_sample(
    plan: &Plan,
    sample: &Sample<'_>,
    kept: Option<&SampleResult>,
) -> SampleResult {
    let mut grades = Vec::with_capacity(plan.metrics.len());
    let mut extracted = Extracted::default();
    for (i, metric) in plan.metrics.iter().enumerate() {
        let grade = match kept.and_then(|result| result.kept_grade(i, metric.key)) {
            Some(grade) => grade.clone(),
            None => grade_node(&metric.node, sample, &mut extracted).await,
        };
        grades.push((Cow::Borrowed(metric.key), grade));
    }
    let error = detect_error(plan, sample, &grades);
    SampleResult {
        sample_id: sample.id(),
        grades,
        reward: None,
        error,
    }
}

/// The submission a built-in extractor took from the sample last, and the extractor: graders
/// with equal extractors (the four of a letta-evals suite that leaves `extractor` to its
/// default, say) grade one submission, extracted once.
#[derive(Default)]
struct Extracted<'p> {
    last: Option<(&'p Extractor, Result<String, Grade>)>,
}

impl<'p> Extracted<'p> {
    /// What `extractor` takes from the sample, as [`builtin_extract`] takes it. Synchronous: a
    /// built-in takes microseconds, and a future here would be built and moved for every
    /// sample.
    fn get(
        &mut self,
        extractor: &'p Extractor,
        extract: impl FnOnce() -> Result<String, Grade>,
    ) -> Result<String, Grade> {
        match &self.last {
            Some((last, outcome)) if *last == extractor => outcome.clone(),
            _ => {
                let outcome = extract();
                self.last = Some((extractor, outcome.clone()));
                outcome
            }
        }
    }
}

async fn grade_node<'p>(
    node: &'p Node,
    sample: &Sample<'_>,
    extracted: &mut Extracted<'p>,
) -> Grade {
    match node {
        Node::Tool {
            extraction,
            function,
        } => graded_submission(extraction, Scorer::Function(function), sample, extracted).await,
        Node::Judge { extraction, judge } => {
            graded_submission(extraction, Scorer::Judge(judge), sample, extracted).await
        }
        Node::Check(check) => with_output(check.grade(sample), sample),
        Node::OpenAi { grader, python } => {
            let mut results = openai::PythonResults::new();
            for (at, node) in python {
                let started = Instant::now();
                let grade = Box::pin(grade_node(node, sample, extracted)).await;
                let result = openai::PythonResult {
                    score: grade.score,
                    passed: grade.status == Status::Pass,
                    error: (grade.status == Status::Error).then(|| grade.rationale.into_owned()),
                    seconds: started.elapsed().as_secs_f64(),
                };
                results.insert(at.clone(), result);
            }
            Box::pin(openai_grade(grader, sample, &results)).await
        }
        Node::Program {
            grader,
            pass_threshold,
        } => {
            let grade = grader
                .grade_off_worker(sample, sample.trajectory(), "")
                .await;
            with_output(thresholded(grade, *pass_threshold), sample)
        }
        // Only a case of turns may ask a model: a plain `expected:` block is graded without
        // building a future for every sample.
        Node::Expectations(graders) => {
            let grade = match &sample.case {
                Some(case) => Box::pin(expectations::grade_case(sample, case, graders)).await,
                None => expectations::grade(sample),
            };
            with_output(grade, sample)
        }
        Node::Composite { all, children } => {
            let mut subs = Vec::with_capacity(children.len());
            for (key, child) in children {
                subs.push((
                    key.clone(),
                    Box::pin(grade_node(child, sample, extracted)).await,
                ));
            }
            with_output(evaldeck::combine(*all, subs), sample)
        }
    }
}

/// An OpenAI grader object's grade of the row's item and sample: its reward (within [0, 1]),
/// pass or fail as the grader decides, an error grade where it had none, the sub-graders'
/// rewards in `metadata.sub_rewards` (those of its `python` sub-graders in `python`); the submission is the sample's `output_text`.
async fn openai_grade(
    grader: &openai::Grader,
    sample: &Sample<'_>,
    python: &openai::PythonResults,
) -> Grade {
    let (item, given) = openai::row::item_and_sample(sample);
    let outcome = grader.run(&item, &given, python, None).await;
    let submission = given
        .get("output_text")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string();
    let grade = match outcome.error {
        Some(error) => Grade::error(error),
        None => Grade::new(
            outcome.score,
            if outcome.passed {
                Status::Pass
            } else {
                Status::Fail
            },
            format!("{} `{}`: {}", grader.kind(), grader.name, outcome.reward),
        ),
    };
    let grade = if outcome.sub_rewards.is_empty() {
        grade
    } else {
        grade.with_metadata("sub_rewards", Value::Object(outcome.sub_rewards))
    };
    grade.with_submission(submission)
}

/// OpenAI's rule: a grade passes when its score reaches the grader's `pass_threshold`; an error
/// stays one.
fn thresholded(mut grade: Grade, threshold: Option<f64>) -> Grade {
    if let Some(threshold) = threshold
        && matches!(grade.status, Status::Pass | Status::Fail)
    {
        grade.status = if grade.score >= threshold {
            Status::Pass
        } else {
            Status::Fail
        };
    }
    grade
}

/// Checks read the trajectory's final output; it is what they graded.
fn with_output(mut grade: Grade, sample: &Sample<'_>) -> Grade {
    if grade.submission.is_empty() {
        grade.submission = sample
            .trajectory()
            .final_output()
            .map(Cow::into_owned)
            .unwrap_or_default();
    }
    grade
}

#[derive(Clone, Copy)]
enum Scorer<'a> {
    Function(&'a Function),
    Judge(&'a Judge),
}

/// letta-evals' per-turn mode applies when both `input` and `ground_truth` are lists.
async fn graded_submission<'p>(
    extraction: &'p Extraction,
    scorer: Scorer<'_>,
    sample: &Sample<'_>,
    extracted: &mut Extracted<'p>,
) -> Grade {
    match (&sample.input, &sample.ground_truth) {
        (Some(Texts::PerTurn(inputs)), Some(Texts::PerTurn(truths))) => {
            per_turn(extraction, scorer, sample, inputs, truths).await
        }
        _ => {
            let trajectory = sample.trajectory();
            let submission = match extraction {
                Extraction::Builtin(extractor) => {
                    extracted.get(extractor, || builtin_extract(extractor, sample, trajectory))
                }
                Extraction::Pack(_) => guarded_extract(extraction, sample, trajectory).await,
            };
            scored(submission, scorer, sample, trajectory).await
        }
    }
}

async fn one_turn(
    extraction: &Extraction,
    scorer: Scorer<'_>,
    sample: &Sample<'_>,
    trajectory: &Trajectory<'_>,
) -> Grade {
    scored(
        guarded_extract(extraction, sample, trajectory).await,
        scorer,
        sample,
        trajectory,
    )
    .await
}

/// The grade of an extracted submission, or the guard's grade when there was none to grade.
async fn scored(
    submission: Result<String, Grade>,
    scorer: Scorer<'_>,
    sample: &Sample<'_>,
    trajectory: &Trajectory<'_>,
) -> Grade {
    let submission = match submission {
        Ok(submission) => submission,
        Err(grade) => return grade,
    };
    let grade = match scorer {
        Scorer::Function(Function::Letta(f)) => f.grade(sample, &submission),
        Scorer::Function(Function::Pack(g)) => {
            g.grade_off_worker(sample, trajectory, &submission).await
        }
        // Boxed: the judge's request is a large future, and every grader's futures would
        // otherwise carry its size, moved at each call on the way down.
        Scorer::Judge(judge) => Box::pin(judge.grade(sample, &submission)).await,
    };
    grade.with_submission(submission)
}

/// The guard shared by tool and rubric graders: an empty trajectory or an empty submission
/// scores 0 without calling the grader.
async fn guarded_extract(
    extraction: &Extraction,
    sample: &Sample<'_>,
    trajectory: &Trajectory<'_>,
) -> Result<String, Grade> {
    match extraction {
        Extraction::Builtin(e) => builtin_extract(e, sample, trajectory),
        Extraction::Pack(e) => {
            not_empty(trajectory)?;
            guarded(e.extract_off_worker(sample, trajectory).await)
        }
    }
}

/// [`guarded_extract`] for a built-in extractor, which needs no waiting.
fn builtin_extract(
    extractor: &Extractor,
    sample: &Sample<'_>,
    trajectory: &Trajectory<'_>,
) -> Result<String, Grade> {
    not_empty(trajectory)?;
    guarded(extractor.extract(sample, trajectory))
}

/// The guard's first check: an empty trajectory scores 0 before any extractor runs.
fn not_empty(trajectory: &Trajectory<'_>) -> Result<(), Grade> {
    if trajectory.is_empty() {
        return Err(Grade::fail(EMPTY_TRAJECTORY));
    }
    Ok(())
}

/// The guard's verdict on what an extractor returned.
fn guarded(extracted: Result<Option<String>, impl std::fmt::Display>) -> Result<String, Grade> {
    match extracted {
        Ok(Some(submission)) if !submission.is_empty() => Ok(submission),
        Ok(_) => Err(Grade::fail(EMPTY_SUBMISSION)),
        Err(reason) => Err(Grade::error(format!("extractor failed: {reason}"))),
    }
}

async fn per_turn(
    extraction: &Extraction,
    scorer: Scorer<'_>,
    sample: &Sample<'_>,
    inputs: &[String],
    truths: &[String],
) -> Grade {
    let full = sample.trajectory();
    let mut turns = Vec::with_capacity(inputs.len());
    let mut any_error = None;
    for (i, (input, truth)) in inputs.iter().zip(truths).enumerate() {
        let turn = Sample {
            input: Some(Texts::One(input.clone())),
            ground_truth: Some(Texts::One(truth.clone())),
            trajectory: None,
            ..sample.clone()
        };
        let trajectory = Trajectory {
            turns: full.turns.get(i).cloned().into_iter().collect(),
            ..full.clone()
        };
        let grade = one_turn(extraction, scorer, &turn, &trajectory).await;
        if grade.status == Status::Error && any_error.is_none() {
            any_error = Some(format!("turn {i}: {}", grade.rationale));
        }
        turns.push(grade);
    }
    let total = turns.len();
    let passed = turns.iter().filter(|g| g.score >= 1.0).count();
    let score = if total == 0 {
        0.0
    } else {
        turns.iter().map(|g| g.score).sum::<f64>() / total as f64
    };
    let marks: Vec<&str> = turns
        .iter()
        .map(|g| if g.score >= 1.0 { "✓" } else { "✗" })
        .collect();
    let submission = turns
        .iter()
        .enumerate()
        .map(|(i, g)| format!("[Turn {i}] {}", g.submission))
        .collect::<Vec<_>>()
        .join(" | ");
    let per_turn: Vec<Value> = turns
        .iter()
        .enumerate()
        .map(|(i, g)| {
            json!({"turn": i, "score": g.score, "rationale": g.rationale, "submission": g.submission})
        })
        .collect();
    let rationale = format!("{passed}/{total} passed: {}", marks.join(" "));
    let grade = match any_error {
        Some(reason) => Grade::new(score, Status::Error, reason),
        None => Grade::scored(score, rationale),
    };
    grade
        .with_submission(submission)
        .with_metadata("turns_passed", json!(passed))
        .with_metadata("turns_total", json!(total))
        .with_metadata("per_turn_grades", Value::Array(per_turn))
}

/// Whether a rationale says `Empty trajectory` or `Empty submission` anywhere, as letta-evals
/// looks for them. Searched for as one word and what follows it: `str::contains` prepares a new
/// search for every call, which cost more than grading the sample's score of 0.
fn says_empty(rationale: &str) -> bool {
    static EMPTY: LazyLock<memmem::Finder<'static>> =
        LazyLock::new(|| memmem::Finder::new("Empty "));
    EMPTY.find_iter(rationale.as_bytes()).any(|at| {
        let rest = &rationale.as_bytes()[at + "Empty ".len()..];
        rest.starts_with(b"trajectory") || rest.starts_with(b"submission")
    })
}

/// letta-evals' `detect_errors`: the first grader alone decides whether the sample is an
/// extraction error; otherwise any grade in error makes it a grading error.
fn detect_error(
    plan: &Plan,
    sample: &Sample<'_>,
    grades: &[(GradeKey, Grade)],
) -> Option<SampleError> {
    if let (Some(metric), Some((_, first))) = (plan.metrics.first(), grades.first())
        && matches!(metric.node, Node::Tool { .. } | Node::Judge { .. })
        && first.status != Status::Error
        && first.score == 0.0
        && (sample.trajectory().is_empty()
            || first.submission.is_empty()
            || says_empty(&first.rationale))
    {
        return Some(SampleError {
            category: ErrorCategory::Extraction,
            message: first.rationale.to_string(),
        });
    }
    let failed: Vec<String> = grades
        .iter()
        .filter(|(_, g)| g.status == Status::Error)
        .map(|(k, g)| format!("{k}: {}", g.rationale))
        .collect();
    (!failed.is_empty()).then(|| SampleError {
        category: ErrorCategory::Grading,
        message: format!("Grading failed for: {}", failed.join("; ")),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_rationale_says_empty_where_letta_evals_finds_it_says_so() {
        for rationale in [
            EMPTY_TRAJECTORY,
            EMPTY_SUBMISSION,
            "",
            "Empty",
            "Empty ",
            "Empty trajector",
            "Empty submission",
            "judge: Empty submission, scored 0",
            "Empty answer. Empty trajectory",
            "Empty Empty trajectory",
            "EmptyEmpty submission",
            "empty trajectory",
            "Contains ground_truth: False",
            "Ëmpty trajectory, Empty submissioné",
        ] {
            let python =
                rationale.contains("Empty trajectory") || rationale.contains("Empty submission");
            assert_eq!(says_empty(rationale), python, "{rationale:?}");
        }
    }
}
