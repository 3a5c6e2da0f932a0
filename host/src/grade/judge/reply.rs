//! Reading a chat-completions or Messages API response and the judge's `{score, rationale}`
//! answer inside it.

use serde_json::{Map, Value};

/// What a chat-completions response carries for the judge.
#[derive(Debug, Clone, PartialEq)]
pub struct Completion {
    pub content: String,
    pub usage: Option<Value>,
}

/// The judge's verdict, with the score already clamped to [0, 1].
#[derive(Debug, Clone, PartialEq)]
pub struct Verdict {
    pub score: f64,
    pub rationale: String,
}

/// Why an endpoint's reply gives no verdict; the texts are letta-evals' where it has them.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ReplyError {
    #[error("endpoint reply is not JSON ({reason}): {excerpt}")]
    NotJson { reason: String, excerpt: String },
    #[error("endpoint reply has no {path}, so it is not a {kind}: {excerpt}")]
    NotA {
        path: &'static str,
        kind: &'static str,
        excerpt: String,
    },
    #[error("Model refused to grade: {0}")]
    Refused(String),
    #[error("Model returned no message content")]
    NoContent,
    /// `instead` says what the model did instead, led by "; ", or is empty.
    #[error("No {name} tool call found in judge agent response{instead}")]
    NoToolCall { name: String, instead: String },
    #[error("the {0} tool call has no arguments")]
    NoArguments(String),
    #[error("Model returned a {0} block where a text block with the verdict was expected")]
    NotText(String),
    #[error("judge reply is not valid JSON ({reason}): {excerpt}")]
    VerdictNotJson { reason: String, excerpt: String },
    #[error("judge reply is not a JSON object with score and rationale: {0}")]
    VerdictNotObject(String),
    #[error("Model returned a score of NaN")]
    NanScore,
    #[error("Model did not return a score")]
    NoScore,
    #[error("score {0} is not a number")]
    ScoreNotNumber(serde_json::Number),
    /// Python's `float()` refused the text, shown as its `repr`.
    #[error("could not convert string to float: {0}")]
    ScoreNotFloat(String),
    #[error("score must be a number, got {0}")]
    ScoreType(Value),
}

/// `choices[0].message.content` and `usage` of an OpenAI chat-completions response body.
pub fn completion(body: &str) -> Result<Completion, ReplyError> {
    let value = reply_json(body)?;
    let message = chat_message(&value, body)?;
    let content = match message.get("content") {
        Some(Value::String(content)) => content.clone(),
        _ => {
            return Err(match message.get("refusal").and_then(Value::as_str) {
                Some(refusal) => ReplyError::Refused(refusal.to_string()),
                None => ReplyError::NoContent,
            });
        }
    };
    Ok(Completion {
        content,
        usage: chat_usage(&value),
    })
}

/// The vectors of `data[i].embedding`, in order, of an OpenAI embeddings response body that
/// embedded `count` texts.
pub fn embeddings(body: &str, count: usize) -> Result<Vec<Vec<f64>>, ReplyError> {
    let value = reply_json(body)?;
    let vectors: Option<Vec<Vec<f64>>> = value["data"].as_array().and_then(|data| {
        data.iter()
            .map(|item| {
                item["embedding"]
                    .as_array()?
                    .iter()
                    .map(Value::as_f64)
                    .collect()
            })
            .collect()
    });
    match vectors {
        Some(vectors) if vectors.len() == count => Ok(vectors),
        _ => Err(not_a(body, "data[].embedding", "embeddings response")),
    }
}

/// The arguments of the first call to the tool `name` in `choices[0].message.tool_calls` of an
/// OpenAI chat-completions response body, as the content to read the verdict from, and `usage`.
pub fn tool_call(body: &str, name: &str) -> Result<Completion, ReplyError> {
    let value = reply_json(body)?;
    let message = chat_message(&value, body)?;
    let calls = message
        .get("tool_calls")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default();
    let function = |call: &Value| call.get("function").cloned().unwrap_or(Value::Null);
    let Some(called) = calls
        .iter()
        .map(function)
        .find(|f| f.get("name").and_then(Value::as_str) == Some(name))
    else {
        let others: Vec<String> = calls
            .iter()
            .map(|call| function(call)["name"].as_str().unwrap_or("?").to_string())
            .collect();
        let instead = match (message.get("refusal"), message.get("content")) {
            (Some(Value::String(refusal)), _) => format!("; the model refused: {refusal}"),
            _ if !others.is_empty() => format!("; it called {}", others.join(", ")),
            (_, Some(Value::String(text))) if !text.trim().is_empty() => {
                format!("; it answered: {}", excerpt(text))
            }
            _ => String::new(),
        };
        return Err(ReplyError::NoToolCall {
            name: name.to_string(),
            instead,
        });
    };
    let content = match called.get("arguments") {
        Some(Value::String(arguments)) => arguments.clone(),
        Some(Value::Object(arguments)) => Value::Object(arguments.clone()).to_string(),
        _ => return Err(ReplyError::NoArguments(name.to_string())),
    };
    Ok(Completion {
        content,
        usage: chat_usage(&value),
    })
}

/// `content[0].text` of an Anthropic Messages API response, as letta-evals reads it, and its
/// `usage` as letta-evals records it (input, output and cache token counts).
pub fn message(body: &str) -> Result<Completion, ReplyError> {
    let value = reply_json(body)?;
    let block =
        first(&value, "content").ok_or_else(|| not_a(body, "content[0]", "Messages API reply"))?;
    let content = match block.get("text") {
        Some(Value::String(text)) => text.clone(),
        _ => {
            let kind = block
                .get("type")
                .and_then(Value::as_str)
                .unwrap_or("unknown");
            return Err(ReplyError::NotText(kind.to_string()));
        }
    };
    let usage = value.get("usage").filter(|u| u.is_object()).map(|usage| {
        let count = |key: &str| usage.get(key).cloned().unwrap_or(Value::Null);
        serde_json::json!({
            "input_tokens": count("input_tokens"),
            "output_tokens": count("output_tokens"),
            "cache_creation_input_tokens": count("cache_creation_input_tokens"),
            "cache_read_input_tokens": count("cache_read_input_tokens"),
        })
    });
    Ok(Completion { content, usage })
}

/// `choices[0].message` of a chat completion.
fn chat_message<'v>(value: &'v Value, body: &str) -> Result<&'v Value, ReplyError> {
    first(value, "choices")
        .and_then(|choice| choice.get("message"))
        .ok_or_else(|| not_a(body, "choices[0].message", "chat completion"))
}

/// A chat completion's `usage`, when it reports one.
fn chat_usage(value: &Value) -> Option<Value> {
    value.get("usage").filter(|u| !u.is_null()).cloned()
}

/// The first item of the list `key` of `value`.
fn first<'v>(value: &'v Value, key: &str) -> Option<&'v Value> {
    value.get(key).and_then(|list| list.get(0))
}

/// Why `body` is not the kind of reply expected: it has nothing at `path`.
fn not_a(body: &str, path: &'static str, kind: &'static str) -> ReplyError {
    ReplyError::NotA {
        path,
        kind,
        excerpt: excerpt(body),
    }
}

fn reply_json(body: &str) -> Result<Value, ReplyError> {
    serde_json::from_str(body).map_err(|e| ReplyError::NotJson {
        reason: e.to_string(),
        excerpt: excerpt(body),
    })
}

/// The judge's answer, read as letta-evals reads it (`json.loads`, `float(obj["score"])`, a
/// clamp to [0, 1], a missing rationale as ""), except that a NaN score is an error instead
/// of 1.0.
pub fn verdict(content: &str) -> Result<Verdict, ReplyError> {
    let value: Value = serde_json::from_str(&quote_python_constants(content)).map_err(|e| {
        ReplyError::VerdictNotJson {
            reason: e.to_string(),
            excerpt: excerpt(content),
        }
    })?;
    let Value::Object(object) = value else {
        return Err(ReplyError::VerdictNotObject(excerpt(content)));
    };
    let score = score(&object)?;
    if score.is_nan() {
        return Err(ReplyError::NanScore);
    }
    let rationale = match object.get("rationale") {
        None | Some(Value::Null) => String::new(),
        Some(Value::String(s)) => s.clone(),
        Some(other) => other.to_string(),
    };
    Ok(Verdict {
        score: score.clamp(0.0, 1.0),
        rationale,
    })
}

fn score(object: &Map<String, Value>) -> Result<f64, ReplyError> {
    match object.get("score") {
        None | Some(Value::Null) => Err(ReplyError::NoScore),
        Some(Value::Number(n)) => n
            .as_f64()
            .ok_or_else(|| ReplyError::ScoreNotNumber(n.clone())),
        Some(Value::Bool(b)) => Ok(if *b { 1.0 } else { 0.0 }),
        Some(Value::String(s)) => python_float(s)
            .ok_or_else(|| ReplyError::ScoreNotFloat(crate::grade::python::repr_str(s))),
        Some(other) => Err(ReplyError::ScoreType(other.clone())),
    }
}

/// Python's `float(str)`: surrounding whitespace, `_` between digits, `nan`/`inf`/`infinity`
/// in any case.
fn python_float(text: &str) -> Option<f64> {
    let text = text.trim();
    let chars: Vec<char> = text.chars().collect();
    let underscores_ok = chars.iter().enumerate().all(|(i, c)| {
        *c != '_'
            || (i > 0
                && chars[i - 1].is_ascii_digit()
                && chars.get(i + 1).is_some_and(char::is_ascii_digit))
    });
    if !underscores_ok {
        return None;
    }
    let cleaned: String = chars.into_iter().filter(|c| *c != '_').collect();
    // Rust also accepts the spellings Python accepts for the special values.
    cleaned.parse::<f64>().ok()
}

/// Python's `json.loads` accepts the bare constants `NaN`, `Infinity` and `-Infinity`; JSON
/// does not. They become strings here so that the score reader treats them as Python would.
fn quote_python_constants(text: &str) -> std::borrow::Cow<'_, str> {
    const CONSTANTS: [&str; 3] = ["-Infinity", "Infinity", "NaN"];
    if !CONSTANTS.iter().any(|c| text.contains(c)) {
        return text.into();
    }
    let mut out = String::with_capacity(text.len() + 8);
    let mut in_string = false;
    let mut escaped = false;
    let mut rest = text;
    while let Some(c) = rest.chars().next() {
        if in_string {
            match (escaped, c) {
                (true, _) => escaped = false,
                (false, '\\') => escaped = true,
                (false, '"') => in_string = false,
                _ => {}
            }
        } else if c == '"' {
            in_string = true;
        } else if let Some(constant) = CONSTANTS.iter().find(|k| rest.starts_with(**k)) {
            out.push('"');
            out.push_str(constant);
            out.push('"');
            rest = &rest[constant.len()..];
            continue;
        }
        out.push(c);
        rest = &rest[c.len_utf8()..];
    }
    out.into()
}

/// The start of a reply, for error messages that stay readable.
fn excerpt(text: &str) -> String {
    const MAX: usize = 200;
    match text.char_indices().nth(MAX) {
        Some((cut, _)) => format!("{}...", &text[..cut]),
        None => text.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn python_float_follows_python() {
        assert_eq!(python_float(" 0.7\n"), Some(0.7));
        assert_eq!(python_float("1_000"), Some(1000.0));
        assert_eq!(python_float("+.5"), Some(0.5));
        assert_eq!(python_float("1e-1"), Some(0.1));
        assert_eq!(python_float("-Infinity"), Some(f64::NEG_INFINITY));
        assert!(python_float("nan").is_some_and(f64::is_nan));
        assert_eq!(python_float("1__0"), None);
        assert_eq!(python_float("_1"), None);
        assert_eq!(python_float("high"), None);
        assert_eq!(python_float(""), None);
    }

    #[test]
    fn constants_are_quoted_only_outside_strings() {
        assert_eq!(
            quote_python_constants(r#"{"score": NaN, "rationale": "NaN \" Infinity"}"#),
            r#"{"score": "NaN", "rationale": "NaN \" Infinity"}"#
        );
        assert_eq!(
            quote_python_constants(r#"[-Infinity,Infinity]"#),
            r#"["-Infinity","Infinity"]"#
        );
    }

    #[test]
    fn verdicts() {
        let ok = |score: f64, rationale: &str| {
            Ok(Verdict {
                score,
                rationale: rationale.to_string(),
            })
        };
        assert_eq!(verdict(r#"{"score": Infinity}"#), ok(1.0, ""));
        assert_eq!(
            verdict(r#"{"score": -Infinity, "rationale": "x"}"#),
            ok(0.0, "x")
        );
        assert_eq!(
            verdict(r#"{"score": true, "rationale": "b"}"#),
            ok(1.0, "b")
        );
        assert_eq!(verdict(r#"{"score": "nan"}"#), Err(ReplyError::NanScore));
        assert_eq!(verdict(r#"{"score": NaN}"#), Err(ReplyError::NanScore));
        assert_eq!(
            verdict(r#"{"score": [1]}"#),
            Err(ReplyError::ScoreType(serde_json::json!([1])))
        );
        assert!(matches!(
            verdict("[0.5]"),
            Err(ReplyError::VerdictNotObject(_))
        ));
        assert!(matches!(
            verdict("```json\n{}```"),
            Err(ReplyError::VerdictNotJson { .. })
        ));
    }

    #[test]
    fn completions() {
        let body = r#"{"choices":[{"message":{"role":"assistant","content":"{}"}}],"usage":{"total_tokens":3}}"#;
        assert_eq!(
            completion(body),
            Ok(Completion {
                content: "{}".into(),
                usage: Some(serde_json::json!({"total_tokens": 3})),
            })
        );
        let refusal = r#"{"choices":[{"message":{"content":null,"refusal":"no"}}]}"#;
        assert_eq!(completion(refusal), Err(ReplyError::Refused("no".into())));
        assert!(matches!(
            completion(r#"{"error":"x"}"#),
            Err(ReplyError::NotA {
                path: "choices[0].message",
                ..
            })
        ));
        assert!(matches!(
            completion("<html>"),
            Err(ReplyError::NotJson { .. })
        ));
    }

    #[test]
    fn tool_calls() {
        let reply = |message: serde_json::Value| {
            serde_json::json!({"choices": [{"message": message}], "usage": {"total_tokens": 4}})
                .to_string()
        };
        let call = |name: &str, arguments: serde_json::Value| serde_json::json!({"id": "c", "type": "function", "function": {"name": name, "arguments": arguments}});
        let both = reply(serde_json::json!({"content": null, "tool_calls": [
            call("lookup", serde_json::json!("{}")),
            call("submit_grade", serde_json::json!("{\"score\": 0.5}")),
        ]}));
        assert_eq!(
            tool_call(&both, "submit_grade"),
            Ok(Completion {
                content: r#"{"score": 0.5}"#.into(),
                usage: Some(serde_json::json!({"total_tokens": 4})),
            })
        );
        let object = reply(serde_json::json!({"tool_calls": [
            call("submit_grade", serde_json::json!({"score": 1})),
        ]}));
        assert_eq!(
            tool_call(&object, "submit_grade").map(|c| c.content),
            Ok(r#"{"score":1}"#.into())
        );
        let no_call = |message| {
            tool_call(&reply(message), "submit_grade")
                .unwrap_err()
                .to_string()
        };
        assert_eq!(
            no_call(serde_json::json!({"content": "It is fine: 0.9"})),
            "No submit_grade tool call found in judge agent response; it answered: It is fine: 0.9"
        );
        assert_eq!(
            no_call(serde_json::json!({"tool_calls": [call("lookup", serde_json::json!("{}"))]})),
            "No submit_grade tool call found in judge agent response; it called lookup"
        );
        assert_eq!(
            no_call(serde_json::json!({"content": null, "refusal": "no"})),
            "No submit_grade tool call found in judge agent response; the model refused: no"
        );
        assert_eq!(
            no_call(serde_json::json!({"content": null})),
            "No submit_grade tool call found in judge agent response"
        );
        assert_eq!(
            no_call(serde_json::json!({"tool_calls": [{"function": {"name": "submit_grade"}}]})),
            "the submit_grade tool call has no arguments"
        );
    }
}
