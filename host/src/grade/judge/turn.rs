//! evaldeck's `llm` and `llm_rubric` graders, as entries of a case turn's `graders:` list: the
//! prompt (`str.format` of evaldeck's template), one user message to the model, and the
//! verdict read from its free-text reply (`VERDICT:`, `REASON:`, `SCORE:`).

use serde_json::{Map, Value, json};

use super::format::{self, Part};
use super::{DEFAULT_MODEL, TurnJudges};
use crate::grade::python::repr_str;
use crate::grade::{Grade, Status};
use crate::input::sample::TurnGrader;

const DEFAULT_TASK: &str = "Determine if the agent completed the task correctly.";

const DEFAULT_PROMPT: &str = "You are evaluating an AI agent's response.

User Input: {input}
Agent Output: {output}

Task: {task}

Evaluate whether the agent's response meets the requirements.
Respond with exactly one of: PASS or FAIL
Then provide a brief explanation.

Format:
VERDICT: PASS or FAIL
REASON: Your explanation
";

const RUBRIC_PROMPT: &str = "You are evaluating an AI agent's response using a scoring rubric.

User Input: {input}
Agent Output: {output}

Scoring Rubric:
{rubric}

For each criterion, provide a score from 1-5 where:
1 = Poor, 2 = Below Average, 3 = Average, 4 = Good, 5 = Excellent

Format your response as:
CRITERION: criterion_name
SCORE: X
REASON: explanation

After scoring all criteria, provide:
TOTAL_SCORE: X/Y
VERDICT: PASS or FAIL
";

/// What a turn's LLM grader reads of its turn.
pub struct TurnView<'a> {
    /// The turn's index from 0 (evaldeck names the case it grades `turn_<index>`).
    pub index: usize,
    pub input: &'a str,
    /// The trace's output; empty or absent is `(no output)`.
    pub output: Option<&'a str>,
}

/// Grades one turn with a `type: llm` entry (`rubric` false) or a `type: llm_rubric` entry.
pub async fn grade(
    judges: &TurnJudges,
    entry: &TurnGrader,
    rubric: bool,
    turn: &TurnView<'_>,
) -> Grade {
    let model = entry.model.as_deref().unwrap_or(DEFAULT_MODEL);
    let prompt = match prompt(entry, rubric, turn) {
        Ok(prompt) => prompt,
        Err(reason) => return Grade::error(format!("LLM grader error: {reason}")),
    };
    let judge = match judges.for_model(model) {
        Ok(judge) => judge,
        Err(reason) => return Grade::error(format!("LLM grader error: {reason}")),
    };
    let reply = match judge.complete(model, 0.0, &prompt).await {
        Ok(reply) => reply,
        Err(reason) => return Grade::error(format!("LLM grader error: {reason}")),
    };
    let verdict = parse(&reply);
    let status = match (entry.threshold, verdict.score) {
        (Some(threshold), Some(score)) if score >= threshold => Status::Pass,
        (Some(_), Some(_)) => Status::Fail,
        _ => verdict.status,
    };
    Grade::new(verdict.score.unwrap_or(0.0), status, verdict.reason)
        .with_metadata("score", json!(verdict.score))
        .with_metadata("model", json!(model))
        .with_metadata("raw_response", json!(reply))
}

/// The prompt evaldeck formats, or why it cannot: Python's exception, as `str()` shows it.
fn prompt(entry: &TurnGrader, rubric: bool, turn: &TurnView<'_>) -> Result<String, String> {
    let output = turn
        .output
        .filter(|o| !o.is_empty())
        .unwrap_or("(no output)");
    let name = format!("turn_{}", turn.index);
    let rubric_text;
    let (template, values): (&str, Vec<(&str, &str)>) = if rubric {
        rubric_text = rubric_lines(&entry.params)?;
        (
            RUBRIC_PROMPT,
            vec![
                ("input", turn.input),
                ("output", output),
                ("rubric", &rubric_text),
            ],
        )
    } else {
        let template = entry
            .prompt
            .as_deref()
            .filter(|p| !p.is_empty())
            .unwrap_or(DEFAULT_PROMPT);
        let parts = format::parse(template);
        if let Some(missing) = ["trace", "expected"]
            .into_iter()
            .find(|name| names(&parts, name))
        {
            return Err(format!(
                "gavel does not fill `{{{missing}}}` in a turn's llm prompt; leave it out of \
                 `prompt`"
            ));
        }
        (
            template,
            vec![
                ("input", turn.input),
                ("output", output),
                ("task", DEFAULT_TASK),
                ("test_case_name", &name),
            ],
        )
    };
    let mut out = String::new();
    let lookup = |key: &str| values.iter().find(|(k, _)| *k == key).map(|(_, v)| *v);
    match format::render(&format::parse(template), &lookup, &mut out) {
        Ok(()) => Ok(out),
        Err(e) if e.kind == "KeyError" => Err(repr_str(&e.message)),
        Err(e) => Err(e.message),
    }
}

/// Whether a template's fields (spec fields included) name the variable `name`.
fn names(parts: &[Part], name: &str) -> bool {
    parts.iter().any(|part| match part {
        Part::Field(field) => field.name == name || names(&field.spec, name),
        Part::Literal(_) | Part::Broken { .. } => false,
    })
}

/// `params.rubric`, a map of criterion to description, as evaldeck lists it: `- name: text`.
fn rubric_lines(params: &Map<String, Value>) -> Result<String, String> {
    let Some(Value::Object(rubric)) = params.get("rubric") else {
        return Err("params.rubric must be a map of criterion name to its description".to_string());
    };
    let mut lines = Vec::with_capacity(rubric.len());
    for (name, description) in rubric {
        let Value::String(description) = description else {
            return Err(format!("params.rubric.{name} must be a string"));
        };
        lines.push(format!("- {name}: {description}"));
    }
    Ok(lines.join("\n"))
}

/// What evaldeck reads from the model's reply.
#[derive(Debug, PartialEq)]
struct Verdict {
    status: Status,
    reason: String,
    score: Option<f64>,
}

/// evaldeck's reading: the first `VERDICT: PASS|FAIL` (any case), else PASS alone passes and
/// any FAIL fails; the reason after the first `REASON:` (any case, stripped), else the reply's
/// first 200 characters; the number after the first `SCORE:`, above 1 read out of 10 (up to 10)
/// or out of 100.
fn parse(reply: &str) -> Verdict {
    let upper = reply.to_uppercase();
    let verdict = after_each(&upper, "VERDICT:", |rest| {
        let rest = rest.trim_start();
        if rest.starts_with("PASS") {
            Some(Status::Pass)
        } else if rest.starts_with("FAIL") {
            Some(Status::Fail)
        } else {
            None
        }
    });
    let status = verdict.unwrap_or(if upper.contains("PASS") && !upper.contains("FAIL") {
        Status::Pass
    } else {
        Status::Fail
    });
    let reason = reason(reply).unwrap_or_else(|| reply.chars().take(200).collect());
    let score = after_each(reply, "SCORE:", |rest| {
        let rest = rest.trim_start();
        let whole = rest.len() - rest.trim_start_matches(|c: char| c.is_ascii_digit()).len();
        if whole == 0 {
            return None;
        }
        let mut end = whole;
        if let Some(fraction) = rest[whole..].strip_prefix('.') {
            let digits = fraction.len()
                - fraction
                    .trim_start_matches(|c: char| c.is_ascii_digit())
                    .len();
            if digits > 0 {
                end += 1 + digits;
            }
        }
        rest[..end].parse::<f64>().ok()
    })
    .map(|score| match score {
        s if s > 10.0 => s / 100.0,
        s if s > 1.0 => s / 10.0,
        s => s,
    });
    Verdict {
        status,
        reason,
        score,
    }
}

/// The first `Some` of `read` over what follows each occurrence of `marker` in `text`.
fn after_each<T>(text: &str, marker: &str, read: impl Fn(&str) -> Option<T>) -> Option<T> {
    text.match_indices(marker)
        .find_map(|(at, _)| read(&text[at + marker.len()..]))
}

/// `REASON:\s*(.+)` searched case-insensitively over the whole reply, stripped.
fn reason(reply: &str) -> Option<String> {
    let marker = "reason:";
    reply.char_indices().find_map(|(at, _)| {
        let rest = reply[at..].get(..marker.len())?;
        if !rest.eq_ignore_ascii_case(marker) {
            return None;
        }
        let after = &reply[at + marker.len()..];
        (!after.is_empty()).then(|| after.trim().to_string())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn verdicts_read_as_evaldeck_reads_them() {
        let v = parse("VERDICT: PASS\nREASON: good\nwork ");
        assert_eq!(
            v,
            Verdict {
                status: Status::Pass,
                reason: "good\nwork".into(),
                score: None
            }
        );
        assert_eq!(parse("verdict:  fail").status, Status::Fail);
        assert_eq!(parse("it would pass").status, Status::Pass);
        assert_eq!(parse("pass or fail").status, Status::Fail);
        assert_eq!(parse("no idea").status, Status::Fail);
        assert_eq!(parse("no idea").reason, "no idea");
        assert_eq!(parse("SCORE: 8\nVERDICT: FAIL").score, Some(0.8));
        assert_eq!(parse("SCORE: 0.5").score, Some(0.5));
        assert_eq!(parse("SCORE: 75").score, Some(0.75));
        assert_eq!(parse("score: 7\nTOTAL_SCORE: 9.5/20").score, Some(0.95));
        assert_eq!(parse("SCORE: x SCORE: 3.").score, Some(0.3));
        assert_eq!(parse("Reason:").reason, "Reason:");
    }

    fn entry(value: Value) -> TurnGrader {
        serde_json::from_value(value).unwrap()
    }

    #[test]
    fn prompts_that_cannot_be_formatted_say_why() {
        let turn = TurnView {
            index: 2,
            input: "q",
            output: None,
        };
        let llm = |value| prompt(&entry(value), false, &turn);
        assert_eq!(
            llm(json!({"type": "llm", "prompt": "{test_case_name}: {output}"})),
            Ok("turn_2: (no output)".to_string())
        );
        assert_eq!(
            llm(json!({"type": "llm", "prompt": "{nope}"})),
            Err("'nope'".to_string())
        );
        for missing in ["trace", "expected"] {
            let why =
                llm(json!({"type": "llm", "prompt": format!("{{x:{{{missing}}}}}")})).unwrap_err();
            assert!(why.contains(&format!("`{{{missing}}}`")), "{why}");
        }
        let rubric = |params| {
            prompt(
                &entry(json!({"type": "llm_rubric", "params": params})),
                true,
                &turn,
            )
        };
        assert!(rubric(json!({})).unwrap_err().contains("params.rubric"));
        assert!(
            rubric(json!({"rubric": {"a": 1}}))
                .unwrap_err()
                .contains("params.rubric.a")
        );
    }
}
