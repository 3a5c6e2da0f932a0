//! `score_model` and `label_model`: a model asked, through the judge's transport, to answer in
//! a JSON schema (its reasoning steps and a result), the result read as a score in `range` or
//! as one of `labels`.

use std::sync::Arc;

use serde_json::{Map, Value, json};

use super::template::{RenderError, Template};
use super::{Errors, Fields, what};
use crate::grade::judge::{Judge, Unanswered};

/// A model grader, checked.
#[derive(Debug, Clone)]
pub struct ModelGrader {
    model: String,
    input: Vec<(String, Template)>,
    /// Fields of the request from `sampling_params`.
    sampling: Map<String, Value>,
    verdict: Verdict,
    judge: Arc<Judge>,
}

impl PartialEq for ModelGrader {
    fn eq(&self, other: &ModelGrader) -> bool {
        (&self.model, &self.input, &self.sampling, &self.verdict)
            == (&other.model, &other.input, &other.sampling, &other.verdict)
    }
}

#[derive(Debug, Clone, PartialEq)]
enum Verdict {
    Score {
        range: (f64, f64),
        pass_threshold: Option<f64>,
    },
    Label {
        labels: Vec<String>,
        passing: Vec<String>,
    },
}

const ROLES: &[&str] = &["system", "developer", "user", "assistant"];
/// `sampling_params` keys and the request field each sets.
const SAMPLING: &[(&str, &str)] = &[
    ("temperature", "temperature"),
    ("top_p", "top_p"),
    ("seed", "seed"),
    ("max_completions_tokens", "max_completion_tokens"),
    ("reasoning_effort", "reasoning_effort"),
];

/// Why a model grader has no answer; each sets its own flag of OpenAI's `errors`.
#[derive(Debug, thiserror::Error)]
pub enum AskError {
    #[error(transparent)]
    Variable(RenderError),
    #[error(transparent)]
    Unanswered(Unanswered),
    /// The model's reply, which holds no `result` its schema allows.
    #[error("the model's answer has no result as its schema asks: {0}")]
    Unreadable(String),
}

/// What the model answered, read: the reward, the grade's score within [0, 1], whether it
/// passes, and the usage of the request.
pub struct Answer {
    pub reward: f64,
    pub score: f64,
    pub passed: bool,
    pub usage: Option<Value>,
    pub model: String,
}

impl ModelGrader {
    /// Reads a `score_model` (`label` false) or `label_model` object's fields.
    pub(super) fn read(
        fields: &mut Fields<'_, '_>,
        label: bool,
        judge: Option<&Arc<Judge>>,
    ) -> Option<ModelGrader> {
        let model = fields.string("model", true);
        let input = messages(fields);
        let verdict = if label {
            labels(fields)
        } else {
            let range = range(fields);
            let pass_threshold = fields.number("pass_threshold");
            match (range, pass_threshold) {
                (Some(range), Some(pass_threshold)) => Some(Verdict::Score {
                    range,
                    pass_threshold,
                }),
                _ => None,
            }
        };
        let sampling = if label {
            Some(Map::new())
        } else {
            sampling(fields)
        };
        fields.finish();
        let Some(judge) = judge else {
            fields.push(
                "model",
                "a model grader needs a model endpoint".into(),
                Some(super::ENDPOINT_HINT),
            );
            return None;
        };
        Some(ModelGrader {
            model: model?.to_string(),
            input: input?,
            sampling: sampling?,
            verdict: verdict?,
            judge: judge.clone(),
        })
    }

    pub fn kind(&self) -> &'static str {
        match self.verdict {
            Verdict::Score { .. } => "score_model",
            Verdict::Label { .. } => "label_model",
        }
    }

    /// The model's answer about `item` and `sample`; `Err` sets the error's flag in `errors`.
    pub async fn ask(
        &self,
        item: &Value,
        sample: &Value,
        errors: &mut Errors,
    ) -> Result<Answer, AskError> {
        let mut messages = Vec::with_capacity(self.input.len());
        for (role, content) in &self.input {
            let content = content.render(item, sample).map_err(|e| {
                errors.invalid_variable_error = true;
                AskError::Variable(e)
            })?;
            messages.push(json!({"role": role, "content": content}));
        }
        let mut body = json!({
            "model": self.model,
            "messages": messages,
            "response_format": {
                "type": "json_schema",
                "json_schema": {"name": "grade", "strict": true, "schema": self.schema()},
            },
        });
        for (key, value) in &self.sampling {
            body[key] = value.clone();
        }
        let (content, usage) = self.judge.chat(&body).await.map_err(|e| {
            errors.model_grader_server_error = true;
            errors.model_grader_server_error_details = Some(e.to_string());
            AskError::Unanswered(e)
        })?;
        let result = serde_json::from_str::<Value>(&content)
            .ok()
            .and_then(|answer| answer.get("result").cloned());
        let unreadable = |errors: &mut Errors| {
            errors.model_grader_parse_error = true;
            AskError::Unreadable(content.clone())
        };
        let (reward, score, passed) = match (&self.verdict, result) {
            (
                Verdict::Score {
                    range: (low, high),
                    pass_threshold,
                },
                Some(Value::Number(n)),
            ) => {
                let reward = n.as_f64().unwrap_or(f64::NAN);
                if !reward.is_finite() {
                    return Err(unreadable(errors));
                }
                let score = ((reward - low) / (high - low)).clamp(0.0, 1.0);
                (reward, score, reward >= pass_threshold.unwrap_or(*high))
            }
            (Verdict::Label { labels, passing }, Some(Value::String(label)))
                if labels.contains(&label) =>
            {
                let passed = passing.contains(&label);
                let reward = if passed { 1.0 } else { 0.0 };
                (reward, reward, passed)
            }
            _ => return Err(unreadable(errors)),
        };
        Ok(Answer {
            reward,
            score,
            passed,
            usage,
            model: self.model.clone(),
        })
    }

    /// The answer's JSON schema: the reasoning steps, then the result.
    fn schema(&self) -> Value {
        let result = match &self.verdict {
            Verdict::Score { .. } => json!({"type": "number"}),
            Verdict::Label { labels, .. } => json!({"type": "string", "enum": labels}),
        };
        json!({
            "type": "object",
            "properties": {
                "steps": {
                    "type": "array",
                    "items": {
                        "type": "object",
                        "properties": {
                            "description": {"type": "string"},
                            "conclusion": {"type": "string"},
                        },
                        "required": ["description", "conclusion"],
                        "additionalProperties": false,
                    },
                },
                "result": result,
            },
            "required": ["steps", "result"],
            "additionalProperties": false,
        })
    }
}

/// `input`: messages of a role and a content, a text or an `input_text`/`output_text` part.
fn messages(fields: &mut Fields<'_, '_>) -> Option<Vec<(String, Template)>> {
    fields.read.push("input");
    let Some(Value::Array(items)) = fields.object.get("input") else {
        let found = fields.object.get("input").map_or("nothing", what);
        fields.push(
            "input",
            format!("must be a list of messages ({{role, content}}), not {found}"),
            None,
        );
        return None;
    };
    let mut out = Vec::new();
    let before = fields.errors.len();
    for (i, message) in items.iter().enumerate() {
        let at = format!("input[{i}]");
        let role = message.get("role").and_then(Value::as_str);
        let content = message.get("content").and_then(content_text);
        let unknown = message.as_object().and_then(|m| {
            m.keys()
                .find(|k| !["role", "content", "type"].contains(&k.as_str()))
        });
        match (role, content, unknown) {
            (_, _, Some(key)) => fields.push(
                &format!("{at}.{key}"),
                "unknown field".into(),
                Some("a message has role, content and type"),
            ),
            (Some(role), _, None) if !ROLES.contains(&role) => fields.push(
                &format!("{at}.role"),
                format!("`{role}` is not one of {}", ROLES.join(", ")),
                None,
            ),
            (Some(role), Some(text), None) => match Template::parse(&text) {
                Ok(template) => out.push((role.to_string(), template)),
                Err(e) => fields.push(&format!("{at}.content"), e.to_string(), None),
            },
            _ => fields.push(
                &at,
                "a message is {role, content}, its content a text, a part {type: input_text, \
                 text} or a list of such parts"
                    .into(),
                None,
            ),
        }
    }
    (fields.errors.len() == before).then_some(out)
}

/// A message's content as one text: a text, a text part (`{type: input_text, text}`), or a list
/// of them, whose texts are joined a line each; `None` for anything else (an image part).
fn content_text(content: &Value) -> Option<String> {
    fn part(part: &Value) -> Option<&str> {
        let kind = part.get("type").map_or(Some("input_text"), Value::as_str)?;
        matches!(kind, "input_text" | "output_text" | "text")
            .then(|| part.get("text")?.as_str())
            .flatten()
    }
    match content {
        Value::String(text) => Some(text.clone()),
        Value::Object(_) => part(content).map(str::to_string),
        Value::Array(parts) => parts
            .iter()
            .map(part)
            .collect::<Option<Vec<_>>>()
            .map(|texts| texts.join("\n")),
        _ => None,
    }
}

/// `range`: `[low, high]`, `[0, 1]` when absent.
fn range(fields: &mut Fields<'_, '_>) -> Option<(f64, f64)> {
    fields.read.push("range");
    let Some(given) = fields.object.get("range") else {
        return Some((0.0, 1.0));
    };
    let pair = given
        .as_array()
        .filter(|a| a.len() == 2)
        .and_then(|a| Some((a[0].as_f64()?, a[1].as_f64()?)))
        .filter(|(low, high)| low < high);
    if pair.is_none() {
        fields.push(
            "range",
            "must be two numbers, the lowest score and a higher highest: [0, 1]".into(),
            None,
        );
    }
    pair
}

/// `sampling_params`, as the request's fields.
fn sampling(fields: &mut Fields<'_, '_>) -> Option<Map<String, Value>> {
    fields.read.push("sampling_params");
    let Some(given) = fields.object.get("sampling_params") else {
        return Some(Map::new());
    };
    let Some(given) = given.as_object() else {
        fields.push(
            "sampling_params",
            format!("must be a mapping, not {}", what(given)),
            None,
        );
        return None;
    };
    let mut out = Map::new();
    let before = fields.errors.len();
    for (key, value) in given {
        match SAMPLING.iter().find(|(name, _)| name == key) {
            Some((_, field)) => {
                out.insert(field.to_string(), value.clone());
            }
            None => {
                let names: Vec<&str> = SAMPLING.iter().map(|(n, _)| *n).collect();
                fields.push(
                    &format!("sampling_params.{key}"),
                    "unknown field".into(),
                    Some(&format!("sampling_params has {}", names.join(", "))),
                );
            }
        }
    }
    (fields.errors.len() == before).then_some(out)
}

/// `labels` and `passing_labels`, the second a part of the first.
fn labels(fields: &mut Fields<'_, '_>) -> Option<Verdict> {
    fields.read.extend(["labels", "passing_labels"]);
    let list = |fields: &mut Fields<'_, '_>, key: &'static str| {
        let strings: Option<Vec<String>> = fields.object.get(key).and_then(|v| {
            v.as_array()?
                .iter()
                .map(|s| s.as_str().map(str::to_string))
                .collect()
        });
        match strings {
            Some(list) if !list.is_empty() => Some(list),
            _ => {
                fields.push(key, "must be a list of one or more strings".into(), None);
                None
            }
        }
    };
    let labels = list(fields, "labels")?;
    let passing = list(fields, "passing_labels")?;
    if let Some(stray) = passing.iter().find(|p| !labels.contains(p)) {
        fields.push(
            "passing_labels",
            format!("`{stray}` is not one of the labels ({})", labels.join(", ")),
            None,
        );
        return None;
    }
    Some(Verdict::Label { labels, passing })
}
