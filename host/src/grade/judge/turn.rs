//! evaldeck's `llm` and `llm_rubric` graders, as entries of a case turn's `graders:` list: the
//! prompt (`str.format` of evaldeck's template), one user message to the model, and the
//! verdict read from its free-text reply (`VERDICT:`, `REASON:`, `SCORE:`).

use serde_json::{Map, Value, json};

use super::format;
use super::{DEFAULT_MODEL, TurnJudges};
use crate::grade::python::{python_repr, python_str, repr_str};
use crate::grade::{Grade, Status};
use crate::input::sample::{Expected, TurnGrader};
use crate::input::trajectory::{Event, Trajectory};

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
    /// The turn's `expected:` block (`{expected}`).
    pub expected: Option<&'a Expected>,
    /// The turn's trace (`{trace}`).
    pub trace: &'a Trajectory<'a>,
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

/// Why evaldeck's prompt of a turn cannot be formatted: Python's exception, as `str()` shows
/// it.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
enum PromptError {
    /// A placeholder evaldeck does not fill: its `KeyError`, which shows the key's repr.
    #[error("{}", repr_str(.0))]
    Key(String),
    /// Another of Python's formatting errors: its message.
    #[error("{0}")]
    Format(String),
    #[error("params.rubric must be a map of criterion name to its description")]
    NoRubric,
    /// A criterion whose description is not text.
    #[error("params.rubric.{0} must be a string")]
    NotText(String),
}

/// The prompt evaldeck formats, or why it cannot.
fn prompt(entry: &TurnGrader, rubric: bool, turn: &TurnView<'_>) -> Result<String, PromptError> {
    let output = turn
        .output
        .filter(|o| !o.is_empty())
        .unwrap_or("(no output)");
    let name = format!("turn_{}", turn.index);
    let (rubric_text, trace_text, expected_text);
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
        trace_text = trace_summary(turn.trace);
        expected_text = expected_str(turn.expected);
        (
            template,
            vec![
                ("input", turn.input),
                ("output", output),
                ("task", DEFAULT_TASK),
                ("test_case_name", &name),
                ("trace", &trace_text),
                ("expected", &expected_text),
            ],
        )
    };
    let mut out = String::new();
    let lookup = |key: &str| values.iter().find(|(k, _)| *k == key).map(|(_, v)| *v);
    match format::render(&format::parse(template), &lookup, &mut out) {
        Ok(()) => Ok(out),
        Err(e) if e.kind == "KeyError" => Err(PromptError::Key(e.message)),
        Err(e) => Err(PromptError::Format(e.message)),
    }
}

/// evaldeck's `{trace}`: `Execution Trace:`, then a line for each step, numbered from 1:
/// `Tool: name(args)` (the arguments as a Python dict) and, for a result Python holds true, its
/// `str()` cut to 200 characters; `LLM: ` and `Reasoning: ` with the first 100 characters and
/// `...`. A human input step takes its number and shows nothing.
fn trace_summary(trace: &Trajectory<'_>) -> String {
    let mut out = String::from("Execution Trace:");
    let mut step = 0;
    for event in trace.turns.iter().flatten() {
        match event {
            Event::ToolCall(call) => {
                step += 1;
                let arguments = call.arguments.text();
                out.push_str(&format!("\n  {step}. Tool: {}(", call.name));
                match serde_json::from_str::<Value>(&arguments) {
                    Ok(value) => python_repr(&value, &mut out),
                    Err(_) => out.push_str(&arguments),
                }
                out.push(')');
            }
            Event::ToolReturn(result) => {
                let content = result.content.text();
                let mut shown = String::new();
                if !result.json {
                    shown.push_str(&content);
                } else if let Ok(value) = serde_json::from_str::<Value>(&content) {
                    if truthy(&value) {
                        python_str(&value, &mut shown);
                    }
                } else {
                    shown.push_str(&content);
                }
                if !shown.is_empty() {
                    out.push_str("\n      Result: ");
                    out.extend(shown.chars().take(200));
                }
            }
            Event::LlmCall(call) => {
                step += 1;
                out.push_str(&format!("\n  {step}. LLM: "));
                out.extend(call.output.as_deref().unwrap_or("").chars().take(100));
                out.push_str("...");
            }
            Event::Reasoning { text } => {
                step += 1;
                out.push_str(&format!("\n  {step}. Reasoning: "));
                out.extend(text.chars().take(100));
                out.push_str("...");
            }
            Event::HumanInput { .. } => step += 1,
            _ => {}
        }
    }
    out
}

/// Python's truth value of a JSON value.
fn truthy(value: &Value) -> bool {
    match value {
        Value::Null => false,
        Value::Bool(b) => *b,
        Value::Number(n) => n.as_f64() != Some(0.0),
        Value::String(s) => !s.is_empty(),
        Value::Array(items) => !items.is_empty(),
        Value::Object(map) => !map.is_empty(),
    }
}

/// evaldeck's `{expected}`: `str()` of the turn's block as `model_dump(exclude_none=True)`
/// gives it, its keys in their declared order (`{}` for a turn without one).
fn expected_str(expected: Option<&Expected>) -> String {
    let mut dumped = match expected.map(serde_json::to_value) {
        Some(Ok(Value::Object(map))) => map,
        _ => Map::new(),
    };
    dumped.retain(|_, value| !value.is_null());
    let mut out = String::new();
    python_repr(&Value::Object(dumped), &mut out);
    out
}

/// `params.rubric`, a map of criterion to description, as evaldeck lists it: `- name: text`.
fn rubric_lines(params: &Map<String, Value>) -> Result<String, PromptError> {
    let Some(Value::Object(rubric)) = params.get("rubric") else {
        return Err(PromptError::NoRubric);
    };
    let mut lines = Vec::with_capacity(rubric.len());
    for (name, description) in rubric {
        let Value::String(description) = description else {
            return Err(PromptError::NotText(name.clone()));
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
    use crate::input::trajectory::{Format, convert};

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
    fn trace_and_expected_are_filled_as_evaldeck_fills_them() {
        let raw: &serde_json::value::RawValue = serde_json::from_str(
            r#"{"input": "q", "output": "a", "steps": [
                {"type": "llm_call", "output": "ok"},
                {"type": "tool_call", "tool_name": "t", "tool_args": {"a": 1.5, "b": null, "c": true},
                 "tool_result": {"k": "v"}},
                {"type": "tool_call", "tool_name": "u", "tool_args": {}, "tool_result": "",
                 "status": "failure", "error": "boom"},
                {"type": "tool_call", "tool_name": "w", "tool_args": {"s": "it's"}, "tool_result": 0},
                {"type": "reasoning", "reasoning_text": "hm"},
                {"type": "human_input", "input": "more"},
                {"type": "tool_call", "tool_name": "x", "tool_args": {}, "tool_result": "é"}]}"#,
        )
        .expect("JSON");
        let trace = convert(raw, Some(Format::Evaldeck)).expect("a trace");
        let expected: Expected = serde_json::from_value(json!({
            "custom": {"n": null, "f": 2.0}, "max_steps": 3, "tools_called": [],
            "task_completed": false, "output_equals": null
        }))
        .expect("a block");
        let turn = TurnView {
            index: 0,
            input: "q",
            output: Some("a"),
            expected: Some(&expected),
            trace: &trace,
        };
        let filled = prompt(
            &entry(json!({"type": "llm", "prompt": "{expected}\n{trace}"})),
            false,
            &turn,
        );
        assert_eq!(
            filled.as_deref(),
            Ok(
                "{'tools_called': [], 'max_steps': 3, 'task_completed': False, \
                'custom': {'n': None, 'f': 2.0}}\n\
                Execution Trace:\n  1. LLM: ok...\n  2. Tool: t({'a': 1.5, 'b': None, 'c': True})\n      \
                Result: {'k': 'v'}\n  3. Tool: u({})\n  4. Tool: w({'s': \"it's\"})\n  \
                5. Reasoning: hm...\n  7. Tool: x({})\n      Result: é"
            )
        );
    }

    #[test]
    fn prompts_that_cannot_be_formatted_say_why() {
        let trace = Trajectory::default();
        let turn = TurnView {
            index: 2,
            input: "q",
            output: None,
            expected: None,
            trace: &trace,
        };
        let llm = |value| prompt(&entry(value), false, &turn).map_err(|e| e.to_string());
        assert_eq!(
            llm(json!({"type": "llm", "prompt": "{test_case_name}: {output}"})),
            Ok("turn_2: (no output)".to_string())
        );
        assert_eq!(
            llm(json!({"type": "llm", "prompt": "{nope}"})),
            Err("'nope'".to_string())
        );
        assert_eq!(
            llm(json!({"type": "llm", "prompt": "{expected}|{trace}"})),
            Ok("{}|Execution Trace:".to_string())
        );
        let rubric = |params| {
            prompt(
                &entry(json!({"type": "llm_rubric", "params": params})),
                true,
                &turn,
            )
            .map_err(|e| e.to_string())
        };
        assert!(rubric(json!({})).unwrap_err().contains("params.rubric"));
        assert!(
            rubric(json!({"rubric": {"a": 1}}))
                .unwrap_err()
                .contains("params.rubric.a")
        );
    }
}
