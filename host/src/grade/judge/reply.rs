//! Reading a chat-completions, Messages API or embeddings response and the judge's
//! `{score, rationale}` answer inside it.
//!
//! A reply is read only where gavel looks. Each JSON value is kept as its text (a borrowed
//! [`RawValue`], checked as JSON but not built) until a field of it is read, and what gavel does
//! not read is skipped, so reading a reply costs about its own size whatever it holds. A field
//! is found as `serde_json::Value::get` finds it (the last of a repeated key; a value that is no
//! object has none), so a reply reads as it did when it was parsed whole.
//!
//! Every text read here leaves with the API key redacted (`ApiKey::redact`): each string as it is
//! read, the verdict's inside the reply's, and the excerpts of a reply that cannot be read.

use std::fmt;

use serde::Deserializer as _;
use serde::de::{DeserializeSeed, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde_json::value::RawValue;
use serde_json::{Map, Number, Value};

use super::http::ApiKey;

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
    ScoreNotNumber(Number),
    /// Python's `float()` refused the text, shown as its `repr`.
    #[error("could not convert string to float: {0}")]
    ScoreNotFloat(String),
    /// The score as JSON text, compact.
    #[error("score must be a number, got {0}")]
    ScoreType(String),
}

/// A JSON value of a reply, kept as its text.
type Raw<'a> = &'a RawValue;

/// How many calls to other tools a reply without the grading tool's call names.
const CALLS_NAMED: usize = 8;
/// What a chat completion's `usage` keeps: its token counts, numbers (or nulls) in objects
/// nested at most [`USAGE_DEPTH`] deep, of the first [`USAGE_ENTRIES`] entries (kept or not) at
/// every depth together, each named in at most [`USAGE_NAME`] bytes. OpenAI's has `prompt_tokens_details:
/// {cached_tokens}`; anything else an endpoint puts there is dropped, so that it cannot swell
/// every line of the results.
const USAGE_DEPTH: usize = 3;
const USAGE_ENTRIES: usize = 64;
const USAGE_NAME: usize = 64;
/// The token counts of a Messages API reply, as letta-evals records them.
const MESSAGE_COUNTS: [&str; 4] = [
    "input_tokens",
    "output_tokens",
    "cache_creation_input_tokens",
    "cache_read_input_tokens",
];

/// `choices[0].message.content` and `usage` of an OpenAI chat-completions response body.
pub fn completion(body: &str, key: &ApiKey) -> Result<Completion, ReplyError> {
    let (message, usage) = chat_message(body, key)?;
    let [content, refusal] = fields(message, ["content", "refusal"]).unwrap_or_default();
    let Some(content) = content.and_then(|content| string(content, key)) else {
        return Err(match refusal.and_then(|refusal| string(refusal, key)) {
            Some(refusal) => ReplyError::Refused(refusal),
            None => ReplyError::NoContent,
        });
    };
    Ok(Completion { content, usage })
}

/// The vectors of `data[i].embedding`, in order, of an OpenAI embeddings response body that
/// embedded `count` texts.
pub fn embeddings(body: &str, count: usize, key: &ApiKey) -> Result<Vec<Vec<f64>>, ReplyError> {
    let reply = reply_json(body, key)?;
    let mut vectors = Vec::new();
    let mut whole = true;
    let listed = field(reply, "data").is_some_and(|data| {
        items(data, |item| {
            let vector = field(item, "embedding")
                .and_then(|vector| serde_json::from_str(vector.get()).ok())
                .filter(|_| vectors.len() < count);
            match vector {
                Some(vector) => vectors.push(vector),
                None => whole = false,
            }
            whole
        })
    });
    if listed && whole && vectors.len() == count {
        Ok(vectors)
    } else {
        Err(not_a(body, "data[].embedding", "embeddings response", key))
    }
}

/// The arguments of the first call to the tool `name` in `choices[0].message.tool_calls` of an
/// OpenAI chat-completions response body, as the content to read the verdict from, and `usage`.
pub fn tool_call(body: &str, name: &str, key: &ApiKey) -> Result<Completion, ReplyError> {
    let (message, usage) = chat_message(body, key)?;
    let [calls, refusal, content] =
        fields(message, ["tool_calls", "refusal", "content"]).unwrap_or_default();
    // The arguments of the call to `name`, once found; else the names of the calls made.
    let mut called = None;
    let mut others = Vec::new();
    let mut unlisted = 0;
    if let Some(calls) = calls {
        items(calls, |call| {
            let [called_name, arguments] = field(call, "function")
                .and_then(|function| fields(function, ["name", "arguments"]))
                .unwrap_or_default();
            let called_name = called_name.and_then(|called| string(called, key));
            if called_name.as_deref() == Some(name) {
                called = Some(arguments);
                return false;
            }
            if others.len() < CALLS_NAMED {
                others.push(called_name.unwrap_or_else(|| "?".to_string()));
            } else {
                unlisted += 1;
            }
            true
        });
    }
    let Some(arguments) = called else {
        let instead = if let Some(refusal) = refusal.and_then(|refusal| string(refusal, key)) {
            format!("; the model refused: {refusal}")
        } else if !others.is_empty() {
            let more = match unlisted {
                0 => String::new(),
                n => format!(" and {n} more"),
            };
            format!("; it called {}{more}", excerpt(&others.join(", "), key))
        } else {
            match content.and_then(|content| string(content, key)) {
                Some(text) if !text.trim().is_empty() => {
                    format!("; it answered: {}", excerpt(&text, key))
                }
                _ => String::new(),
            }
        };
        return Err(ReplyError::NoToolCall {
            name: name.to_string(),
            instead,
        });
    };
    let content = match arguments {
        Some(arguments) if is_object(arguments) => compact(arguments, key),
        Some(arguments) => {
            string(arguments, key).ok_or_else(|| ReplyError::NoArguments(name.to_string()))?
        }
        None => return Err(ReplyError::NoArguments(name.to_string())),
    };
    Ok(Completion { content, usage })
}

/// `content[0].text` of an Anthropic Messages API response, as letta-evals reads it, and its
/// `usage` as letta-evals records it (input, output and cache token counts).
pub fn message(body: &str, key: &ApiKey) -> Result<Completion, ReplyError> {
    let reply = reply_json(body, key)?;
    let [blocks, usage] = fields(reply, ["content", "usage"]).unwrap_or_default();
    let block = (blocks.and_then(first))
        .ok_or_else(|| not_a(body, "content[0]", "Messages API reply", key))?;
    let [text, kind] = fields(block, ["text", "type"]).unwrap_or_default();
    let Some(content) = text.and_then(|text| string(text, key)) else {
        let kind = kind.and_then(|kind| string(kind, key));
        return Err(ReplyError::NotText(
            kind.unwrap_or_else(|| "unknown".to_string()),
        ));
    };
    let usage = usage
        .and_then(|usage| fields(usage, MESSAGE_COUNTS))
        .map(|counts| {
            let counts = MESSAGE_COUNTS.iter().zip(counts).map(|(name, value)| {
                (
                    name.to_string(),
                    value.and_then(count).unwrap_or(Value::Null),
                )
            });
            Value::Object(counts.collect())
        });
    Ok(Completion { content, usage })
}

/// `choices[0].message` of a chat completion, and its token counts.
fn chat_message<'a>(body: &'a str, key: &ApiKey) -> Result<(Raw<'a>, Option<Value>), ReplyError> {
    let reply = reply_json(body, key)?;
    let [choices, usage] = fields(reply, ["choices", "usage"]).unwrap_or_default();
    let message = (choices.and_then(first))
        .and_then(|choice| field(choice, "message"))
        .ok_or_else(|| not_a(body, "choices[0].message", "chat completion", key))?;
    let mut room = USAGE_ENTRIES;
    let usage = usage.and_then(|usage| token_counts(usage, USAGE_DEPTH, &mut room, key));
    Ok((message, usage.map(Value::Object)))
}

/// The numbers and nulls of the object `usage`, and the objects of them while `depth` allows,
/// of the first `room` entries read at every depth; `None` when `usage` is no object.
fn token_counts(
    usage: Raw<'_>,
    depth: usize,
    room: &mut usize,
    key: &ApiKey,
) -> Option<Map<String, Value>> {
    let mut kept = Map::new();
    let object = entries(usage, |name, value| {
        if *room == 0 || name.len() > USAGE_NAME {
            return;
        }
        *room -= 1;
        let value = match count(value) {
            Some(count) => count,
            None if depth > 1 => match token_counts(value, depth - 1, room, key) {
                Some(inner) => Value::Object(inner),
                None => return,
            },
            None => return,
        };
        kept.insert(key.redact(name), value);
    });
    object.then_some(kept)
}

/// Why `body` is not the kind of reply expected: it has nothing at `path`.
fn not_a(body: &str, path: &'static str, kind: &'static str, key: &ApiKey) -> ReplyError {
    ReplyError::NotA {
        path,
        kind,
        excerpt: excerpt(body, key),
    }
}

fn reply_json<'a>(body: &'a str, key: &ApiKey) -> Result<Raw<'a>, ReplyError> {
    serde_json::from_str(body).map_err(|e| ReplyError::NotJson {
        reason: e.to_string(),
        excerpt: excerpt(body, key),
    })
}

/// The judge's answer, read as letta-evals reads it (`json.loads`, `float(obj["score"])`, a
/// clamp to [0, 1], a missing rationale as ""), except that a NaN score is an error instead
/// of 1.0.
pub fn verdict(content: &str, key: &ApiKey) -> Result<Verdict, ReplyError> {
    let not_json = |e: serde_json::Error| ReplyError::VerdictNotJson {
        reason: e.to_string(),
        excerpt: excerpt(content, key),
    };
    let text = quote_python_constants(content);
    let answer: Raw<'_> = serde_json::from_str(&text).map_err(not_json)?;
    let Some([score, rationale]) = fields(answer, ["score", "rationale"]) else {
        return Err(ReplyError::VerdictNotObject(excerpt(content, key)));
    };
    let score = match score.filter(|score| score.get() != "null") {
        None => return Err(ReplyError::NoScore),
        Some(score) if score.get().starts_with(['[', '{']) => {
            return Err(ReplyError::ScoreType(compact(score, key)));
        }
        // Only a number too large for a float fails here, as it failed the whole answer when
        // the answer was parsed whole.
        Some(score) => read_score(serde_json::from_str(score.get()).map_err(not_json)?, key)?,
    };
    if score.is_nan() {
        return Err(ReplyError::NanScore);
    }
    let rationale = match rationale.filter(|rationale| rationale.get() != "null") {
        None => String::new(),
        Some(rationale) => string(rationale, key).unwrap_or_else(|| compact(rationale, key)),
    };
    Ok(Verdict {
        score: score.clamp(0.0, 1.0),
        rationale,
    })
}

/// A score that is a number, a boolean or a string, read as Python's `float()` reads it.
fn read_score(score: Value, key: &ApiKey) -> Result<f64, ReplyError> {
    match score {
        Value::Number(n) => n.as_f64().ok_or(ReplyError::ScoreNotNumber(n)),
        Value::Bool(b) => Ok(if b { 1.0 } else { 0.0 }),
        Value::String(s) => python_float(&s).ok_or_else(|| {
            ReplyError::ScoreNotFloat(crate::grade::python::repr_str(&key.redact(s)))
        }),
        other => Err(ReplyError::ScoreType(other.to_string())),
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

/// The start of a reply, for error messages that stay readable, with the key redacted.
fn excerpt(text: &str, key: &ApiKey) -> String {
    const MAX: usize = 200;
    let text = key.redact(text.to_string());
    match text.char_indices().nth(MAX) {
        Some((cut, _)) => format!("{}...", &text[..cut]),
        None => text,
    }
}

/// The values of `keys` in the object `value` (`None` for each it lacks), or `None` when
/// `value` is no object.
fn fields<'a, const N: usize>(value: Raw<'a>, keys: [&str; N]) -> Option<[Option<Raw<'a>>; N]> {
    let mut found = [None; N];
    let object = entries(value, |key, item| {
        if let Some(i) = keys.iter().position(|k| *k == key) {
            found[i] = Some(item);
        }
    });
    object.then_some(found)
}

/// The value of `key` in the object `value`.
fn field<'a>(value: Raw<'a>, key: &str) -> Option<Raw<'a>> {
    let [found] = fields(value, [key])?;
    found
}

/// The first item of the list `value`.
fn first(value: Raw<'_>) -> Option<Raw<'_>> {
    let mut first = None;
    items(value, |item| {
        first = Some(item);
        false
    });
    first
}

/// `value` when it is a string, the key redacted.
fn string(value: Raw<'_>, key: &ApiKey) -> Option<String> {
    (value.get().starts_with('"'))
        .then(|| serde_json::from_str(value.get()).ok())
        .flatten()
        .map(|text| key.redact(text))
}

/// `value` when it is a number or null.
fn count(value: Raw<'_>) -> Option<Value> {
    let text = value.get();
    if !text.starts_with(|c: char| c == '-' || c == 'n' || c.is_ascii_digit()) {
        return None;
    }
    let count: Option<Number> = serde_json::from_str(text).ok()?;
    Some(count.map_or(Value::Null, Value::Number))
}

fn is_object(value: Raw<'_>) -> bool {
    value.get().starts_with('{')
}

/// Gives `each` the entries of the object `value` in order; `false` when `value` is no object.
fn entries<'a>(value: Raw<'a>, each: impl FnMut(String, Raw<'a>)) -> bool {
    struct Entries<F>(F);
    impl<'de, F: FnMut(String, Raw<'de>)> Visitor<'de> for Entries<F> {
        type Value = ();
        fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("an object")
        }
        fn visit_map<A: MapAccess<'de>>(mut self, mut map: A) -> Result<(), A::Error> {
            while let Some(key) = map.next_key()? {
                let item = map.next_value()?;
                (self.0)(key, item);
            }
            Ok(())
        }
    }
    let mut reader = serde_json::Deserializer::from_str(value.get());
    is_object(value) && reader.deserialize_map(Entries(each)).is_ok()
}

/// Gives `each` the items of the list `value` in order until it returns `false`, and skips the
/// rest; `false` when `value` is no list.
fn items<'a>(value: Raw<'a>, each: impl FnMut(Raw<'a>) -> bool) -> bool {
    struct Items<F>(F);
    impl<'de, F: FnMut(Raw<'de>) -> bool> Visitor<'de> for Items<F> {
        type Value = ();
        fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("a list")
        }
        fn visit_seq<A: SeqAccess<'de>>(mut self, mut seq: A) -> Result<(), A::Error> {
            while let Some(item) = seq.next_element()? {
                if !(self.0)(item) {
                    while seq.next_element::<IgnoredAny>()?.is_some() {}
                }
            }
            Ok(())
        }
    }
    let mut reader = serde_json::Deserializer::from_str(value.get());
    value.get().starts_with('[') && reader.deserialize_seq(Items(each)).is_ok()
}

/// `value` as `serde_json` writes a value it parsed (no spaces, its forms of numbers and
/// strings; a repeated key is written each time), without building it; its own text when it
/// nests deeper than `serde_json` reads. The key is redacted from its strings and names.
fn compact(value: Raw<'_>, key: &ApiKey) -> String {
    let mut out = String::with_capacity(value.get().len());
    let mut reader = serde_json::Deserializer::from_str(value.get());
    match Compact(&mut out, key).deserialize(&mut reader) {
        Ok(()) => out,
        Err(_) => key.redact(value.get().to_string()),
    }
}

/// Writes the value it reads to its string, compact, the key redacted.
struct Compact<'o, 'k>(&'o mut String, &'k ApiKey);

impl Compact<'_, '_> {
    fn put<E>(self, scalar: Value) -> Result<(), E> {
        self.0.push_str(&scalar.to_string());
        Ok(())
    }
}

impl<'de> DeserializeSeed<'de> for Compact<'_, '_> {
    type Value = ();
    fn deserialize<D: serde::Deserializer<'de>>(self, deserializer: D) -> Result<(), D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Compact<'_, '_> {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON value")
    }
    fn visit_unit<E>(self) -> Result<(), E> {
        self.put(Value::Null)
    }
    fn visit_bool<E>(self, b: bool) -> Result<(), E> {
        self.put(Value::from(b))
    }
    fn visit_u64<E>(self, n: u64) -> Result<(), E> {
        self.put(Value::from(n))
    }
    fn visit_i64<E>(self, n: i64) -> Result<(), E> {
        self.put(Value::from(n))
    }
    fn visit_f64<E>(self, n: f64) -> Result<(), E> {
        self.put(Value::from(n))
    }
    fn visit_str<E>(self, s: &str) -> Result<(), E> {
        let text = self.1.redact(s.to_string());
        self.put(Value::from(text))
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        let Compact(out, key) = self;
        out.push('[');
        let mut separator = "";
        loop {
            let mark = out.len();
            out.push_str(separator);
            if seq.next_element_seed(Compact(&mut *out, key))?.is_none() {
                out.truncate(mark);
                break;
            }
            separator = ",";
        }
        out.push(']');
        Ok(())
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        let Compact(out, key) = self;
        out.push('{');
        let mut separator = "";
        while let Some(name) = map.next_key::<String>()? {
            out.push_str(separator);
            out.push_str(&Value::from(key.redact(name)).to_string());
            out.push(':');
            map.next_value_seed(Compact(&mut *out, key))?;
            separator = ",";
        }
        out.push('}');
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A key long enough to be redacted; no reply here holds it.
    fn key() -> ApiKey {
        ApiKey::new("sk-reply-test-key".into())
    }

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
        assert_eq!(verdict(r#"{"score": Infinity}"#, &key()), ok(1.0, ""));
        assert_eq!(
            verdict(r#"{"score": -Infinity, "rationale": "x"}"#, &key()),
            ok(0.0, "x")
        );
        assert_eq!(
            verdict(r#"{"score": true, "rationale": "b"}"#, &key()),
            ok(1.0, "b")
        );
        assert_eq!(
            verdict(r#"{"score": "nan"}"#, &key()),
            Err(ReplyError::NanScore)
        );
        assert_eq!(
            verdict(r#"{"score": NaN}"#, &key()),
            Err(ReplyError::NanScore)
        );
        assert_eq!(
            verdict(r#"{"score": [1]}"#, &key()),
            Err(ReplyError::ScoreType("[1]".into()))
        );
        assert!(matches!(
            verdict("[0.5]", &key()),
            Err(ReplyError::VerdictNotObject(_))
        ));
        assert!(matches!(
            verdict("```json\n{}```", &key()),
            Err(ReplyError::VerdictNotJson { .. })
        ));
    }

    #[test]
    fn completions() {
        let body = r#"{"choices":[{"message":{"role":"assistant","content":"{}"}}],"usage":{"total_tokens":3}}"#;
        assert_eq!(
            completion(body, &key()),
            Ok(Completion {
                content: "{}".into(),
                usage: Some(serde_json::json!({"total_tokens": 3})),
            })
        );
        let refusal = r#"{"choices":[{"message":{"content":null,"refusal":"no"}}]}"#;
        assert_eq!(
            completion(refusal, &key()),
            Err(ReplyError::Refused("no".into()))
        );
        assert!(matches!(
            completion(r#"{"error":"x"}"#, &key()),
            Err(ReplyError::NotA {
                path: "choices[0].message",
                ..
            })
        ));
        assert!(matches!(
            completion("<html>", &key()),
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
            tool_call(&both, "submit_grade", &key()),
            Ok(Completion {
                content: r#"{"score": 0.5}"#.into(),
                usage: Some(serde_json::json!({"total_tokens": 4})),
            })
        );
        let object = reply(serde_json::json!({"tool_calls": [
            call("submit_grade", serde_json::json!({"score": 1})),
        ]}));
        assert_eq!(
            tool_call(&object, "submit_grade", &key()).map(|c| c.content),
            Ok(r#"{"score":1}"#.into())
        );
        let no_call = |message| {
            tool_call(&reply(message), "submit_grade", &key())
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

    /// A reply with `field` (a JSON text) beside a good verdict.
    fn padded(field: &str) -> String {
        format!(
            r#"{{"id": "x", "padding": {field}, "choices": [{{"index": 0, "message": {{"content": "{{\"score\": 1}}", "extra": {field}}}}}], "usage": {{"total_tokens": 3}}}}"#
        )
    }

    /// What gavel does not read is skipped, not built: a field nested far deeper than
    /// serde_json builds a value is no obstacle, nor are numbers too large for a float there.
    #[test]
    fn what_is_not_read_is_not_built() {
        let deep = format!("{}{}", "[".repeat(100_000), "]".repeat(100_000));
        for field in [deep.as_str(), "[1e999, -1e999]"] {
            assert_eq!(
                completion(&padded(field), &key()),
                Ok(Completion {
                    content: r#"{"score": 1}"#.into(),
                    usage: Some(serde_json::json!({"total_tokens": 3})),
                }),
                "{}",
                &field[..10.min(field.len())]
            );
        }
    }

    /// Replies that are not JSON are refused with serde_json's reason, as when they were parsed
    /// whole; a field is found as `Value::get` finds it.
    #[test]
    fn replies_read_as_values_read() {
        for body in [
            "<html>",
            "",
            r#"{"choices": ["#,
            r#"{"choices": [] "usage": 1}"#,
            r#"{"a": "\x"}"#,
            r#"{"a": 1} trailing"#,
            r#"{"a": 01}"#,
        ] {
            let Err(ReplyError::NotJson { reason, excerpt }) = completion(body, &key()) else {
                panic!("{body} is read");
            };
            let value = serde_json::from_str::<Value>(body).expect_err("not JSON");
            assert_eq!((reason, excerpt), (value.to_string(), body.to_string()));
        }
        let content = |body: &str| completion(body, &key()).map(|c| c.content);
        // The last of a repeated key counts, as Python's json.loads keeps it.
        assert_eq!(
            content(
                r#"{"choices": 1, "choices": [{"message": {"content": "a", "content": "b"}}]}"#
            ),
            Ok("b".into())
        );
        // A message that is no object has no content.
        assert_eq!(
            content(r#"{"choices": [{"message": null}]}"#),
            Err(ReplyError::NoContent)
        );
        assert_eq!(
            content(r#"{"choices": [{"message": {"content": ["a"], "refusal": 1}}]}"#),
            Err(ReplyError::NoContent)
        );
        for body in [
            r#"[{"choices": []}]"#,
            r#"{"choices": {"0": {}}}"#,
            r#"{"choices": [[]]}"#,
        ] {
            assert!(
                matches!(
                    content(body),
                    Err(ReplyError::NotA {
                        path: "choices[0].message",
                        ..
                    })
                ),
                "{body}"
            );
        }
        let escaped = r#"{"choices": [{"m\u0065ssage": {"content": "\u00e9\"\n"}}]}"#;
        assert_eq!(content(escaped), Ok("é\"\n".into()));
    }

    /// A chat completion's usage keeps its token counts: numbers and nulls, in objects up to
    /// three deep, the first 64 entries, each named in at most 64 bytes; OpenAI's stays as it
    /// was sent.
    #[test]
    fn usage_keeps_only_token_counts() {
        let usage = |usage: &str| {
            let body = format!(
                r#"{{"choices": [{{"message": {{"content": "{{}}"}}}}], "usage": {usage}}}"#
            );
            completion(&body, &key()).expect("a completion").usage
        };
        let openai = r#"{"prompt_tokens": 19, "completion_tokens": 10, "total_tokens": 29,
            "prompt_tokens_details": {"cached_tokens": 0, "audio_tokens": 0},
            "completion_tokens_details": {"reasoning_tokens": 0, "audio_tokens": null,
            "accepted_prediction_tokens": 0, "rejected_prediction_tokens": 0}, "cost": 1.5e-5}"#;
        assert_eq!(
            usage(openai).map(|u| u.to_string()),
            Some(
                serde_json::from_str::<Value>(openai)
                    .expect("JSON")
                    .to_string()
            )
        );
        let long = "n".repeat(65);
        let hostile = format!(
            r#"{{"prompt_tokens": 1, "note": "{long}", "list": [1, 2], "flag": true,
            "{long}": 3, "a": {{"b": {{"c": 4, "d": {{"e": 5}}}}}}, "total_tokens": 2}}"#
        );
        assert_eq!(
            usage(&hostile),
            Some(serde_json::json!({"prompt_tokens": 1, "a": {"b": {"c": 4}}, "total_tokens": 2}))
        );
        let many: Vec<String> = (0..100)
            .map(|i| format!(r#""k{i}": {{"n": {i}}}"#))
            .collect();
        let kept = usage(&format!("{{{}}}", many.join(", "))).expect("a usage");
        let expected: Map<String, Value> = (0..32)
            .map(|i| (format!("k{i}"), serde_json::json!({"n": i})))
            .collect();
        assert_eq!(kept, Value::Object(expected));
        for nothing in ["null", "7", r#""a lot""#, "[1]"] {
            assert_eq!(usage(nothing), None, "{nothing}");
        }
    }

    #[test]
    fn messages() {
        let body = r#"{"content": [{"type": "text", "text": "{}"}], "usage": {"input_tokens": 5,
            "output_tokens": [0, 0], "cache_read_input_tokens": null, "service_tier": "x"}}"#;
        assert_eq!(
            message(body, &key()),
            Ok(Completion {
                content: "{}".into(),
                usage: Some(serde_json::json!({
                    "input_tokens": 5,
                    "output_tokens": null,
                    "cache_creation_input_tokens": null,
                    "cache_read_input_tokens": null,
                })),
            })
        );
        let block = |block: &str| message(&format!(r#"{{"content": [{block}]}}"#), &key());
        assert_eq!(
            block(r#"{"type": "tool_use", "input": {}}"#),
            Err(ReplyError::NotText("tool_use".into()))
        );
        assert_eq!(
            block(r#""text""#),
            Err(ReplyError::NotText("unknown".into()))
        );
        assert!(matches!(
            message(r#"{"content": []}"#, &key()),
            Err(ReplyError::NotA {
                path: "content[0]",
                ..
            })
        ));
    }

    #[test]
    fn embeddings_match_their_texts() {
        let body = r#"{"data": [{"embedding": [1, -0.5]}, {"embedding": [2e0]}], "usage": {}}"#;
        assert_eq!(
            embeddings(body, 2, &key()),
            Ok(vec![vec![1.0, -0.5], vec![2.0]])
        );
        for (body, count) in [
            (body, 1),
            (body, 3),
            (r#"{"data": [{"embedding": [1, "2"]}]}"#, 1),
            (r#"{"data": {"embedding": [1]}}"#, 1),
        ] {
            assert!(
                matches!(
                    embeddings(body, count, &key()),
                    Err(ReplyError::NotA {
                        path: "data[].embedding",
                        ..
                    })
                ),
                "{body} {count}"
            );
        }
    }

    /// What is shown of a JSON value (a rationale or a score that is no string, tool arguments
    /// given as an object) is written as serde_json writes the value it parses.
    #[test]
    fn compact_writes_as_serde_json_writes() {
        for text in [
            r#"{"b": [1, 2.50, -0, 1e2, 18446744073709551615, -9223372036854775808], "a": null}"#,
            r#"["\u00e9\n\"", true, false, {}, [], {"x": {"y": []}}]"#,
            "0.1",
            r#""\ud83d\ude00""#,
        ] {
            let raw: Raw<'_> = serde_json::from_str(text).expect("JSON");
            let value: Value = serde_json::from_str(text).expect("JSON");
            assert_eq!(compact(raw, &key()), value.to_string(), "{text}");
        }
        assert_eq!(
            verdict(r#"{"score": 1, "rationale": ["a", {"b": 1.0}]}"#, &key()).map(|v| v.rationale),
            Ok(r#"["a",{"b":1.0}]"#.into())
        );
        assert_eq!(
            verdict(r#"{"score": {"value": 1}}"#, &key()),
            Err(ReplyError::ScoreType(r#"{"value":1}"#.into()))
        );
        assert!(matches!(
            verdict(r#"{"score": 1e999}"#, &key()),
            Err(ReplyError::VerdictNotJson { .. })
        ));
    }

    /// What is read of a reply has the key redacted at every depth: its strings and token
    /// counts' names, the verdict's JSON inside them, and the excerpts of what cannot be read,
    /// however long.
    #[test]
    fn nothing_read_of_a_reply_holds_the_key() {
        let key = key();
        let once = r"sk-\u0072eply-test-key";
        let twice = r"sk-\\u0072eply-test-key";
        let content = format!(r#"{{\"score\": 1, \"rationale\": \"\\\"{twice}\\\" and {once}\"}}"#);
        let body = format!(
            r#"{{"choices": [{{"message": {{"content": "{content}"}}}}], "usage": {{"{once}": 1}}}}"#
        );
        let read = completion(&body, &key).expect("a completion");
        assert_eq!(read.usage, Some(serde_json::json!({"[redacted]": 1})));
        assert_eq!(
            verdict(&read.content, &key).map(|v| v.rationale),
            Ok(r#""[redacted]" and [redacted]"#.into())
        );
        let arguments = serde_json::json!({"score": 1, "rationale": {once: [once]}});
        let body = serde_json::json!({"choices": [{"message": {"tool_calls": [
            {"function": {"name": "grade", "arguments": arguments}},
        ]}}]})
        .to_string();
        let call = tool_call(&body, "grade", &key).expect("a call");
        assert_eq!(
            verdict(&call.content, &key).map(|v| v.rationale),
            Ok(r#"{"[redacted]":["[redacted]"]}"#.into())
        );
        let deep = format!("{}\"{once}\"{}", "[".repeat(200), "]".repeat(200));
        let rationale = |content: &str| verdict(content, &key).expect("a verdict").rationale;
        let error = |reply: Result<Verdict, ReplyError>| reply.expect_err("an error").to_string();
        let unread =
            |reply: Result<Completion, ReplyError>| reply.expect_err("an error").to_string();
        // The key written across the cut of a long excerpt.
        let long = format!("<{}{once}>", "x".repeat(190));
        for (shown, part) in [
            (
                error(verdict(&format!("not JSON {twice}"), &key)),
                "not JSON [redacted]",
            ),
            (
                error(verdict(&format!(r#"{{"score": "{once}"}}"#), &key)),
                "'[redacted]'",
            ),
            (
                error(verdict(&format!(r#"{{"score": {{"{once}": 1}}}}"#), &key)),
                r#"{"[redacted]":1}"#,
            ),
            (
                rationale(&format!(r#"{{"score": 1, "rationale": {deep}}}"#)),
                "\"[redacted]\"",
            ),
            (unread(completion(&long, &key)), "x[redact"),
            (
                unread(message(
                    &format!(r#"{{"content": [], "e": "{twice}"}}"#),
                    &key,
                )),
                "[redacted]",
            ),
        ] {
            assert!(shown.contains(part), "{part} not in {shown}");
            assert!(
                !shown.contains("sk-") && !shown.contains("u0072"),
                "{shown}"
            );
        }
    }

    /// A reply that calls many other tools names the first few and counts the rest.
    #[test]
    fn many_other_calls_are_counted() {
        let calls: Vec<Value> = (0..20)
            .map(|i| serde_json::json!({"function": {"name": format!("t{i}"), "arguments": "{}"}}))
            .collect();
        let body = serde_json::json!({"choices": [{"message": {"tool_calls": calls}}]}).to_string();
        assert_eq!(
            tool_call(&body, "submit_grade", &key()).map_err(|e| e.to_string()),
            Err(
                "No submit_grade tool call found in judge agent response; it called t0, t1, t2, \
                 t3, t4, t5, t6, t7 and 12 more"
                    .into()
            )
        );
    }
}
