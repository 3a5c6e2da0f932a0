//! OpenTelemetry traces in OTLP JSON, as the collector's file exporter writes them: an export
//! object `{"resourceSpans": [{"scopeSpans": [{"spans": [...]}]}]}`, or a list of them (the lines
//! of such a file). A row holds one trace: spans of more than one trace are refused.
//!
//! Spans are read in the order they started. Two conventions are read from their attributes:
//! - OpenInference (`openinference.span.kind`): an `LLM` span is one model call (`llm.model_name`,
//!   `llm.token_count.prompt`/`completion`/`total`) with its `llm.input_messages.N.message.*` and
//!   `llm.output_messages.N.message.*` (`role`, `content`, `tool_call_id`,
//!   `tool_calls.M.tool_call.id`/`function.name`/`function.arguments`); a `TOOL` span a tool's
//!   return (`tool_call.id`, else the span id; `output.value`);
//! - OpenTelemetry GenAI (`gen_ai.operation.name`): `chat`, `text_completion` and
//!   `generate_content` spans are model calls (`gen_ai.response.model`, else
//!   `gen_ai.request.model`; `gen_ai.usage.input_tokens`/`output_tokens`) with
//!   `gen_ai.input.messages` and `gen_ai.output.messages` (JSON: `[{role, parts: [{type: text,
//!   content} | {type: tool_call, id, name, arguments} | {type: tool_call_response, id,
//!   response}]}]`); an `execute_tool` span a tool's return (`gen_ai.tool.call.id`,
//!   `gen_ai.tool.call.result`).
//!
//! A model call's input messages repeat the conversation so far: only those past what earlier
//! calls held are events (the system prompt and the task, then each tool's return), then an
//! [`Event::LlmCall`], then its output (assistant text, tool calls). A tool's return recorded
//! both by a tool span and in a later call's input is one event. A span with status
//! `STATUS_CODE_ERROR` makes the run an error. Spans of neither convention (agent, chain, HTTP
//! spans) are no events.

use std::borrow::Cow;
use std::collections::{BTreeMap, HashMap, HashSet};

use serde::Deserialize;
use serde_json::value::RawValue;

use super::json::{self, Expecting, Object, Text, first_byte, first_element, first_key_among};
use super::{
    Content, ConvertError, Converter, Event, Format, LlmCall, RunStatus, Tokens, ToolCall,
    ToolReturn, ToolStatus, Trajectory,
};

pub struct OtelConverter;

type SpanExport<'a> = Export<'a, Object<Span<'a>>>;

/// An OTLP export object, its spans read as `S` (parsed spans here; their text as written where
/// a collector file is split by trace).
#[derive(Deserialize)]
#[serde(rename_all = "camelCase", bound(deserialize = "S: Deserialize<'de>"))]
pub(crate) struct Export<'a, S> {
    #[serde(borrow)]
    pub(crate) resource_spans: Vec<Object<ResourceSpans<'a, S>>>,
}

impl<S> Expecting for Export<'_, S> {
    const WHAT: &'static str = "an OTLP export object {resourceSpans: [...]}";
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", bound(deserialize = "S: Deserialize<'de>"))]
pub(crate) struct ResourceSpans<'a, S> {
    #[serde(borrow, default)]
    pub(crate) resource: Option<&'a RawValue>,
    #[serde(borrow, default = "Vec::new")]
    pub(crate) scope_spans: Vec<Object<ScopeSpans<'a, S>>>,
}

impl<S> Expecting for ResourceSpans<'_, S> {
    const WHAT: &'static str = "a resourceSpans object {resource, scopeSpans}";
}

#[derive(Deserialize)]
#[serde(bound(deserialize = "S: Deserialize<'de>"))]
pub(crate) struct ScopeSpans<'a, S> {
    #[serde(borrow, default)]
    pub(crate) scope: Option<&'a RawValue>,
    #[serde(default = "Vec::new")]
    pub(crate) spans: Vec<S>,
}

impl<S> Expecting for ScopeSpans<'_, S> {
    const WHAT: &'static str = "a scopeSpans object {scope, spans}";
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Span<'a> {
    #[serde(borrow)]
    trace_id: Text<'a>,
    #[serde(borrow)]
    span_id: Text<'a>,
    #[serde(borrow, default)]
    start_time_unix_nano: Option<Nanos<'a>>,
    #[serde(borrow, default)]
    attributes: Vec<Object<KeyValue<'a>>>,
    #[serde(default)]
    status: Option<Object<Status>>,
}

impl Expecting for Span<'_> {
    const WHAT: &'static str = "a span object {traceId, spanId, name, attributes, ...}";
}

/// A time in nanoseconds: OTLP JSON writes it as a string of digits, some writers as a number.
enum Nanos<'a> {
    Number(u64),
    Text(Cow<'a, str>),
}

impl<'de: 'a, 'a> Deserialize<'de> for Nanos<'a> {
    fn deserialize<D: serde::Deserializer<'de>>(value: D) -> Result<Nanos<'a>, D::Error> {
        struct Time;
        impl<'de> serde::de::Visitor<'de> for Time {
            type Value = Nanos<'de>;

            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a time in whole nanoseconds: a string of digits or an integer")
            }

            fn visit_u64<E: serde::de::Error>(self, nanos: u64) -> Result<Nanos<'de>, E> {
                Ok(Nanos::Number(nanos))
            }

            fn visit_borrowed_str<E: serde::de::Error>(
                self,
                text: &'de str,
            ) -> Result<Nanos<'de>, E> {
                Ok(Nanos::Text(Cow::Borrowed(text)))
            }

            fn visit_str<E: serde::de::Error>(self, text: &str) -> Result<Nanos<'de>, E> {
                Ok(Nanos::Text(Cow::Owned(text.to_owned())))
            }
        }
        value.deserialize_any(Time)
    }
}

#[derive(Deserialize)]
struct Status {
    #[serde(default)]
    code: Option<StatusCode>,
}

/// A span's status code, as OTLP JSON writes it (the enum's number, `2` for an error) or by
/// its name, as some exporters do (`STATUS_CODE_ERROR`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum StatusCode {
    Unset,
    Ok,
    Error,
}

impl<'de> Deserialize<'de> for StatusCode {
    fn deserialize<D: serde::Deserializer<'de>>(value: D) -> Result<StatusCode, D::Error> {
        struct Code;
        impl serde::de::Visitor<'_> for Code {
            type Value = StatusCode;

            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a status code: 0, 1 or 2, or STATUS_CODE_UNSET, _OK or _ERROR")
            }

            fn visit_u64<E: serde::de::Error>(self, code: u64) -> Result<StatusCode, E> {
                match code {
                    0 => Ok(StatusCode::Unset),
                    1 => Ok(StatusCode::Ok),
                    2 => Ok(StatusCode::Error),
                    _ => Err(E::invalid_value(
                        serde::de::Unexpected::Unsigned(code),
                        &self,
                    )),
                }
            }

            fn visit_str<E: serde::de::Error>(self, code: &str) -> Result<StatusCode, E> {
                match code {
                    "STATUS_CODE_UNSET" => Ok(StatusCode::Unset),
                    "STATUS_CODE_OK" => Ok(StatusCode::Ok),
                    "STATUS_CODE_ERROR" => Ok(StatusCode::Error),
                    _ => Err(E::invalid_value(serde::de::Unexpected::Str(code), &self)),
                }
            }
        }
        value.deserialize_any(Code)
    }
}

impl Expecting for Status {
    const WHAT: &'static str = "a status object {code, message}";
}

#[derive(Deserialize)]
struct KeyValue<'a> {
    #[serde(borrow)]
    key: Text<'a>,
    #[serde(borrow)]
    value: Object<AnyValue<'a>>,
}

impl Expecting for KeyValue<'_> {
    const WHAT: &'static str = "an attribute {key, value: {stringValue | intValue | ...}}";
}

/// An attribute value; arrays, maps and bytes are kept as their JSON text.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct AnyValue<'a> {
    #[serde(borrow, default)]
    string_value: Option<Text<'a>>,
    #[serde(borrow, default)]
    int_value: Option<&'a RawValue>,
}

impl Expecting for AnyValue<'_> {
    const WHAT: &'static str = "an attribute value {stringValue | intValue | ...}";
}

/// A span's attributes by key, with where the span sits for errors.
struct Attributes<'a> {
    at: String,
    values: BTreeMap<Cow<'a, str>, AnyValue<'a>>,
}

impl<'a> Attributes<'a> {
    fn text(&self, key: &str) -> Option<Cow<'a, str>> {
        self.values
            .get(key)?
            .string_value
            .as_ref()
            .map(|t| t.0.clone())
    }

    /// An integer attribute: OTLP JSON writes `intValue` as a string, some writers as a number.
    fn int(&self, key: &str) -> Result<Option<u64>, ConvertError> {
        let Some(raw) = self.values.get(key).and_then(|v| v.int_value) else {
            return Ok(None);
        };
        raw.get().trim_matches('"').parse().map(Some).map_err(|_| {
            ConvertError(format!(
                "{}: attribute `{key}`: intValue {} is not a whole number of tokens",
                self.at,
                raw.get()
            ))
        })
    }
}

/// The key an OTLP export object holds its spans under.
const SPAN_KEYS: [&str; 1] = ["resourceSpans"];

impl Converter for OtelConverter {
    fn detect(&self, raw: &RawValue) -> bool {
        match first_byte(raw) {
            Some(b'{') => first_key_among(raw, &SPAN_KEYS).is_some(),
            Some(b'[') => first_element(raw).is_some_and(|first| {
                first_byte(first) == Some(b'{') && first_key_among(first, &SPAN_KEYS).is_some()
            }),
            _ => false,
        }
    }

    fn convert<'a>(&self, raw: &'a RawValue) -> Result<Trajectory<'a>, ConvertError> {
        let exports: Vec<(String, SpanExport)> = if first_byte(raw) == Some(b'[') {
            let list: Vec<Object<SpanExport>> =
                json::parse(raw.get(), || "trajectory".to_string())?;
            list.into_iter()
                .enumerate()
                .map(|(i, Object(e))| (format!("trajectory[{i}]"), e))
                .collect()
        } else {
            let Object(export) = json::parse(raw.get(), || "trajectory".to_string())?;
            vec![("trajectory".to_string(), export)]
        };
        let mut spans = Vec::new();
        for (base, export) in exports {
            for (r, Object(resource)) in export.resource_spans.into_iter().enumerate() {
                for (s, Object(scope)) in resource.scope_spans.into_iter().enumerate() {
                    for (i, Object(span)) in scope.spans.into_iter().enumerate() {
                        let at = format!(
                            "{base}.resourceSpans[{r}].scopeSpans[{s}].spans[{i}] (span {})",
                            span.span_id.0
                        );
                        spans.push((at, span));
                    }
                }
            }
        }
        if let Some((at, other)) = spans
            .iter()
            .find(|(_, span)| span.trace_id.0 != spans[0].1.trace_id.0)
        {
            return Err(ConvertError(format!(
                "{at}: trace {} where the recording's first span is of trace {}; a recorded run \
                 is one trace (split the spans by traceId, one row each)",
                other.trace_id.0, spans[0].1.trace_id.0
            )));
        }
        let mut timed = Vec::with_capacity(spans.len());
        for (at, span) in spans {
            let start = match &span.start_time_unix_nano {
                None => 0,
                Some(Nanos::Number(n)) => u128::from(*n),
                Some(Nanos::Text(text)) => text.parse().map_err(|_| {
                    ConvertError(format!(
                        "{at}.startTimeUnixNano: `{text}` is not a time in nanoseconds"
                    ))
                })?,
            };
            timed.push((start, at, span));
        }
        // A trace's spans are ordered by their start; without any start they keep the order
        // written, but one span without it among others with theirs has no place.
        let untimed = |(_, _, span): &&(u128, String, Span)| span.start_time_unix_nano.is_none();
        if let (Some((_, at, _)), true) = (
            timed.iter().find(untimed),
            timed.iter().any(|t| !untimed(&t)),
        ) {
            return Err(ConvertError(format!(
                "{at}: no startTimeUnixNano, where the trace's other spans have one, so its \
                 place among them is not known; record each span's start"
            )));
        }
        // Stable: spans that started at the same time keep the order written.
        timed.sort_by_key(|(start, _, _)| *start);
        let mut conversion = Conversion::default();
        for (_, at, span) in timed {
            conversion.span(at, span)?;
        }
        Ok(Trajectory {
            format: Format::Otel,
            turns: vec![conversion.events],
            status: conversion.status,
            usage: conversion.usage,
            ..Trajectory::default()
        })
    }
}

#[derive(Default)]
struct Conversion<'a> {
    events: Vec<Event<'a>>,
    status: RunStatus,
    usage: Option<Tokens>,
    /// The conversation the last model call held (its input, then its output), by
    /// [`Message::key`].
    held: Vec<String>,
    /// How many times each message (by [`Message::key`]) is an event so far.
    met: HashMap<String, usize>,
    /// The returns that are an event already: by their call's id, or for a return without
    /// one, by its content.
    returned: HashSet<String>,
}

/// One message of a model call's input or output, in either convention.
struct Message<'a> {
    role: Cow<'a, str>,
    text: Option<Cow<'a, str>>,
    calls: Vec<(Cow<'a, str>, Cow<'a, str>, Cow<'a, str>)>,
    /// A tool message's call id and, in GenAI parts, its response.
    returns: Vec<(Cow<'a, str>, Cow<'a, str>)>,
}

impl Message<'_> {
    /// What tells the message from another: its role, text, calls by id and name (a call's
    /// arguments may be written otherwise in a later input) and returns.
    fn key(&self) -> String {
        let mut key = format!(
            "{}\0{}",
            self.role,
            self.text.as_deref().unwrap_or_default()
        );
        for (id, name, _) in &self.calls {
            key.push_str(&format!("\0call\0{id}\0{name}"));
        }
        for (id, content) in &self.returns {
            key.push_str(&format!("\0return\0{id}\0{content}"));
        }
        key
    }
}

impl<'a> Conversion<'a> {
    fn span(&mut self, at: String, span: Span<'a>) -> Result<(), ConvertError> {
        if span
            .status
            .as_ref()
            .is_some_and(|Object(s)| s.code == Some(StatusCode::Error))
        {
            self.status = RunStatus::Error;
        }
        let span_id = span.span_id.0;
        let attributes = Attributes {
            values: span
                .attributes
                .into_iter()
                .map(|Object(kv)| (kv.key.0, kv.value.0))
                .collect(),
            at,
        };
        let kind = attributes.text("openinference.span.kind");
        let operation = attributes.text("gen_ai.operation.name");
        match (kind.as_deref(), operation.as_deref()) {
            (Some("LLM"), _) => self.model_call(&attributes, openinference_messages)?,
            (_, Some("chat" | "text_completion" | "generate_content")) => {
                self.model_call(&attributes, genai_messages)?;
            }
            (Some("TOOL"), _) => self.tool_span(
                attributes.text("tool_call.id").unwrap_or(span_id),
                attributes.text("output.value"),
            ),
            (_, Some("execute_tool")) => self.tool_span(
                attributes.text("gen_ai.tool.call.id").unwrap_or(span_id),
                attributes.text("gen_ai.tool.call.result"),
            ),
            _ => {}
        }
        Ok(())
    }

    fn model_call(
        &mut self,
        attributes: &Attributes<'a>,
        messages: fn(&Attributes<'a>, &str) -> Result<Vec<Message<'a>>, ConvertError>,
    ) -> Result<(), ConvertError> {
        let (input, output) = (
            messages(attributes, "input")?,
            messages(attributes, "output")?,
        );
        let (keys_in, keys_out): (Vec<String>, Vec<String>) = (
            input.iter().map(Message::key).collect(),
            output.iter().map(Message::key).collect(),
        );
        // A call continues the conversation the last one held: what it adds are events. One
        // that does not (its history trimmed or summarised, a conversation of its own) adds
        // each message not met before, a message met n times being new at its n + 1st place.
        let continues = keys_in.get(..self.held.len()) == Some(&self.held[..]);
        let mut placed: HashMap<&str, usize> = HashMap::new();
        for (index, (message, key)) in input.into_iter().zip(&keys_in).enumerate() {
            let new = if continues {
                index >= self.held.len()
            } else {
                let place = placed.entry(key).or_default();
                *place += 1;
                *place > self.met.get(key).copied().unwrap_or(0)
            };
            if new {
                *self.met.entry(key.clone()).or_default() += 1;
                self.message(message, attributes)?;
            }
        }
        for key in &keys_out {
            *self.met.entry(key.clone()).or_default() += 1;
        }
        self.held = keys_in;
        self.held.extend(keys_out);
        let prompt = attributes
            .int("llm.token_count.prompt")?
            .or(attributes.int("gen_ai.usage.input_tokens")?);
        let completion = attributes
            .int("llm.token_count.completion")?
            .or(attributes.int("gen_ai.usage.output_tokens")?);
        let tokens = match (prompt, completion) {
            (None, None) => None,
            (prompt, completion) => {
                let (prompt, completion) = (prompt.unwrap_or(0), completion.unwrap_or(0));
                let total = attributes
                    .int("llm.token_count.total")?
                    .unwrap_or(prompt.saturating_add(completion));
                Some(Tokens {
                    prompt_tokens: prompt,
                    completion_tokens: completion,
                    total_tokens: total,
                })
            }
        };
        if let Some(tokens) = tokens {
            tokens.add_to(&mut self.usage);
        }
        let model = attributes
            .text("llm.model_name")
            .or_else(|| attributes.text("gen_ai.response.model"))
            .or_else(|| attributes.text("gen_ai.request.model"));
        self.events.push(Event::LlmCall(LlmCall {
            model,
            tokens,
            ..LlmCall::default()
        }));
        for message in output {
            self.message(message, attributes)?;
        }
        Ok(())
    }

    fn message(
        &mut self,
        message: Message<'a>,
        attributes: &Attributes<'a>,
    ) -> Result<(), ConvertError> {
        let text = message.text.unwrap_or_default();
        match &*message.role {
            "system" | "developer" => self.events.push(Event::System { text }),
            "user" => self.events.push(Event::User {
                content: Content::Text(text),
            }),
            "assistant" | "model" => {
                if !text.is_empty() {
                    self.events.push(Event::Assistant {
                        content: Content::Text(text),
                    });
                }
                for (id, name, arguments) in message.calls {
                    self.events.push(Event::ToolCall(ToolCall {
                        id,
                        name,
                        arguments: arguments.into(),
                        failed: false,
                    }));
                }
            }
            "tool" => {
                let mut returns = message.returns;
                if returns.len() == 1 && returns[0].1.is_empty() {
                    returns[0].1 = text;
                }
                for (call_id, content) in returns {
                    self.tool_span(call_id, Some(content));
                }
            }
            other => {
                return Err(ConvertError(format!(
                    "{}: a message of role `{other}` (expected system, user, assistant or tool)",
                    attributes.at
                )));
            }
        }
        Ok(())
    }

    /// A tool's return, unless the call's return is an event already.
    fn tool_span(&mut self, call_id: Cow<'a, str>, content: Option<Cow<'a, str>>) {
        let Some(content) = content else {
            return;
        };
        // A return without its call's id is told from another by what it says, so that two
        // calls' returns are both kept.
        let key = match &*call_id {
            "" => format!("\0{content}"),
            id => id.to_string(),
        };
        if self.returned.insert(key) {
            self.events.push(Event::ToolReturn(ToolReturn {
                call_id,
                content: content.into(),
                status: ToolStatus::Success,
                json: false,
            }));
        }
    }
}

/// OpenInference's flattened messages: `llm.{input,output}_messages.N.message.*`.
fn openinference_messages<'a>(
    attributes: &Attributes<'a>,
    side: &str,
) -> Result<Vec<Message<'a>>, ConvertError> {
    let mut messages = Vec::new();
    loop {
        let prefix = format!("llm.{side}_messages.{}.message.", messages.len());
        let Some(role) = attributes.text(&format!("{prefix}role")) else {
            break;
        };
        let mut calls = Vec::new();
        loop {
            let call = format!("{prefix}tool_calls.{}.tool_call.", calls.len());
            let Some(name) = attributes.text(&format!("{call}function.name")) else {
                break;
            };
            calls.push((
                attributes.text(&format!("{call}id")).unwrap_or_default(),
                name,
                attributes
                    .text(&format!("{call}function.arguments"))
                    .unwrap_or(Cow::Borrowed("{}")),
            ));
        }
        let returns = attributes
            .text(&format!("{prefix}tool_call_id"))
            .map(|id| vec![(id, Cow::Borrowed(""))])
            .unwrap_or_default();
        messages.push(Message {
            role,
            text: attributes.text(&format!("{prefix}content")),
            calls,
            returns,
        });
    }
    Ok(messages)
}

#[derive(Deserialize)]
struct GenAiMessage {
    role: String,
    #[serde(default)]
    parts: Vec<GenAiPart>,
}

#[derive(Deserialize)]
struct GenAiPart {
    #[serde(rename = "type")]
    kind: String,
    #[serde(default)]
    content: Option<String>,
    #[serde(default)]
    id: Option<String>,
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    arguments: Option<Box<RawValue>>,
    #[serde(default)]
    response: Option<Box<RawValue>>,
}

/// GenAI's `gen_ai.{input,output}.messages`, JSON text of a list of messages with parts.
fn genai_messages<'a>(
    attributes: &Attributes<'a>,
    side: &str,
) -> Result<Vec<Message<'a>>, ConvertError> {
    let key = format!("gen_ai.{side}.messages");
    let Some(text) = attributes.text(&key) else {
        return Ok(Vec::new());
    };
    let messages: Vec<GenAiMessage> =
        json::parse(&text, || format!("{}: attribute `{key}`", attributes.at))?;
    Ok(messages
        .into_iter()
        .map(|message| {
            let mut texts = Vec::new();
            let mut calls = Vec::new();
            let mut returns = Vec::new();
            for part in message.parts {
                match &*part.kind {
                    "text" => texts.push(part.content.unwrap_or_default()),
                    "tool_call" => calls.push((
                        Cow::Owned(part.id.unwrap_or_default()),
                        Cow::Owned(part.name.unwrap_or_default()),
                        Cow::Owned(raw_text(part.arguments)),
                    )),
                    "tool_call_response" => returns.push((
                        Cow::Owned(part.id.unwrap_or_default()),
                        Cow::Owned(raw_text(part.response)),
                    )),
                    _ => {}
                }
            }
            Message {
                role: Cow::Owned(message.role),
                text: (!texts.is_empty()).then(|| Cow::Owned(texts.join("\n"))),
                calls,
                returns,
            }
        })
        .collect())
}

/// A JSON value's text: a string's own text, anything else as written; `{}` when absent.
fn raw_text(raw: Option<Box<RawValue>>) -> String {
    match raw {
        None => "{}".to_string(),
        Some(raw) => {
            serde_json::from_str::<String>(raw.get()).unwrap_or_else(|_| raw.get().to_string())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::input::trajectory::detect;
    use crate::input::trajectory::testing::recorded_file;
    use crate::input::trajectory::testing::{
        call as tool_call, convert_as, returned, tokens, weather_run,
    };

    fn otel(text: &str) -> Result<Trajectory<'_>, ConvertError> {
        convert_as(text, Format::Otel)
    }

    /// Two chat completions under an agent span, as openinference-instrumentation-openai
    /// traced them.
    #[test]
    fn converts_openinference_spans() {
        let text = recorded_file("otel-openinference.json");
        let trajectory = otel(&text).unwrap();
        assert_eq!(trajectory.format, Format::Otel);
        assert_eq!(trajectory.status, RunStatus::Success);
        assert_eq!(trajectory.usage, Some(tokens(130, 21)));
        assert_eq!(
            trajectory.turns,
            vec![weather_run("gpt-4.1-2025-04-14", r#"{"city": "Paris"}"#)]
        );
        assert_eq!(
            detect(serde_json::from_str(&text).unwrap()),
            Some(Format::Otel)
        );
        // The lines of a file exporter's file, as a list, read the same.
        let lines = format!("[{text}]");
        assert_eq!(otel(&lines).unwrap().turns, trajectory.turns);
        assert_eq!(
            detect(serde_json::from_str(&lines).unwrap()),
            Some(Format::Otel)
        );
    }

    fn span(id: &str, start: &str, attributes: &str) -> String {
        format!(
            r#"{{"traceId": "t1", "spanId": "{id}", "startTimeUnixNano": "{start}",
                "attributes": [{attributes}]}}"#
        )
    }

    fn export(spans: &[String]) -> String {
        format!(
            r#"{{"resourceSpans": [{{"resource": {{}}, "scopeSpans": [{{"spans": [{}]}}]}}]}}"#,
            spans.join(",")
        )
    }

    fn text_attribute(key: &str, value: &str) -> String {
        format!(
            r#"{{"key": "{key}", "value": {{"stringValue": {}}}}}"#,
            serde_json::to_string(value).unwrap()
        )
    }

    /// GenAI spans, written here from the semantic conventions: a chat span whose messages are
    /// JSON attributes, an `execute_tool` span, and a second chat span that repeats the tool's
    /// return in its input; spans are read by start time, not as written.
    #[test]
    fn converts_genai_spans() {
        let chat = |input: &str, output: &str, usage: (u64, u64)| {
            [
                text_attribute("gen_ai.operation.name", "chat"),
                text_attribute("gen_ai.request.model", "m"),
                text_attribute("gen_ai.input.messages", input),
                text_attribute("gen_ai.output.messages", output),
                format!(
                    r#"{{"key": "gen_ai.usage.input_tokens", "value": {{"intValue": "{}"}}}},
                       {{"key": "gen_ai.usage.output_tokens", "value": {{"intValue": {}}}}}"#,
                    usage.0, usage.1
                ),
            ]
            .join(",")
        };
        let user = r#"{"role": "user", "parts": [{"type": "text", "content": "Weather?"}]}"#;
        let called = r#"{"role": "assistant", "parts": [{"type": "tool_call", "id": "c1",
            "name": "get_weather", "arguments": {"city": "Paris"}}]}"#;
        let tool_message = r#"{"role": "tool", "parts": [{"type": "tool_call_response", "id": "c1",
            "response": "sunny"}]}"#;
        let answer = r#"{"role": "assistant", "parts": [{"type": "text", "content": "Sunny."}]}"#;
        let text = export(&[
            span(
                "s3",
                "3",
                &chat(
                    &format!("[{user}, {called}, {tool_message}]"),
                    &format!("[{answer}]"),
                    (9, 2),
                ),
            ),
            span(
                "s1",
                "1",
                &chat(&format!("[{user}]"), &format!("[{called}]"), (5, 3)),
            ),
            span(
                "s2",
                "2",
                &[
                    text_attribute("gen_ai.operation.name", "execute_tool"),
                    text_attribute("gen_ai.tool.call.id", "c1"),
                    text_attribute("gen_ai.tool.call.result", "sunny"),
                ]
                .join(","),
            ),
        ]);
        let trajectory = otel(&text).unwrap();
        let call = |tokens: Tokens| {
            Event::LlmCall(LlmCall {
                model: Some("m".into()),
                tokens: Some(tokens),
                ..LlmCall::default()
            })
        };
        assert_eq!(
            trajectory.turns[0],
            vec![
                Event::User {
                    content: Content::Text("Weather?".into())
                },
                call(tokens(5, 3)),
                tool_call("c1", "get_weather", r#"{"city": "Paris"}"#),
                returned("c1", "sunny", false),
                call(tokens(9, 2)),
                Event::Assistant {
                    content: Content::Text("Sunny.".into())
                },
            ]
        );
    }

    /// A call whose input does not continue the conversation the last call held (its history
    /// summarised) adds the messages not met before, not those past the last call's count: the
    /// summary and the new tool return are events, the system message and the call met before
    /// are not again.
    #[test]
    fn a_call_whose_history_was_summarised_adds_what_is_new_in_it() {
        let chat = |input: &str, output: &str| {
            [
                text_attribute("gen_ai.operation.name", "chat"),
                text_attribute("gen_ai.input.messages", input),
                text_attribute("gen_ai.output.messages", output),
            ]
            .join(",")
        };
        let said = |role: &str, text: &str| {
            format!(r#"{{"role": "{role}", "parts": [{{"type": "text", "content": "{text}"}}]}}"#)
        };
        let call = |id: &str, city: &str| {
            format!(
                r#"{{"role": "assistant", "parts": [{{"type": "tool_call", "id": "{id}",
                "name": "get_weather", "arguments": {{"city": "{city}"}}}}]}}"#
            )
        };
        let back = |id: &str, what: &str| {
            format!(
                r#"{{"role": "tool", "parts": [{{"type": "tool_call_response", "id": "{id}",
                "response": "{what}"}}]}}"#
            )
        };
        let (system, user) = (said("system", "s"), said("user", "weather?"));
        let text = export(&[
            span(
                "s1",
                "1",
                &chat(
                    &format!("[{system}, {user}]"),
                    &format!("[{}]", call("c1", "Paris")),
                ),
            ),
            span(
                "s2",
                "2",
                &chat(
                    &format!(
                        "[{system}, {user}, {}, {}]",
                        call("c1", "Paris"),
                        back("c1", "18C")
                    ),
                    &format!("[{}]", call("c2", "Oslo")),
                ),
            ),
            span(
                "s3",
                "3",
                &chat(
                    &format!(
                        "[{system}, {}, {}, {}]",
                        said("user", "summary so far"),
                        call("c2", "Oslo"),
                        back("c2", "4C")
                    ),
                    &format!("[{}]", said("assistant", "Oslo 4C, Paris 18C")),
                ),
            ),
        ]);
        let trajectory = otel(&text).unwrap();
        let text = |text: &'static str| Content::Text(text.into());
        assert_eq!(
            trajectory.turns[0],
            vec![
                Event::System { text: "s".into() },
                Event::User {
                    content: text("weather?")
                },
                Event::LlmCall(LlmCall::default()),
                tool_call("c1", "get_weather", r#"{"city": "Paris"}"#),
                returned("c1", "18C", false),
                Event::LlmCall(LlmCall::default()),
                tool_call("c2", "get_weather", r#"{"city": "Oslo"}"#),
                Event::User {
                    content: text("summary so far")
                },
                returned("c2", "4C", false),
                Event::LlmCall(LlmCall::default()),
                Event::Assistant {
                    content: text("Oslo 4C, Paris 18C")
                },
            ]
        );
    }

    /// Returns without their call's id (GenAI's `id` is optional) are each an event, told
    /// apart by what they say; one repeated in a later call's input is still one event.
    #[test]
    fn returns_without_ids_are_each_kept() {
        let chat = |input: &str, output: &str| {
            [
                text_attribute("gen_ai.operation.name", "chat"),
                text_attribute("gen_ai.input.messages", input),
                text_attribute("gen_ai.output.messages", output),
            ]
            .join(",")
        };
        let user = r#"{"role": "user", "parts": [{"type": "text", "content": "Weather?"}]}"#;
        let called = r#"{"role": "assistant", "parts": [
            {"type": "tool_call", "name": "get_weather", "arguments": {"city": "Paris"}},
            {"type": "tool_call", "name": "get_weather", "arguments": {"city": "Oslo"}}]}"#;
        let back = |said: &str| {
            format!(
                r#"{{"role": "tool", "parts": [{{"type": "tool_call_response", "response": "{said}"}}]}}"#
            )
        };
        let (paris, oslo) = (back("18C"), back("4C"));
        let answer = r#"{"role": "assistant", "parts": [{"type": "text", "content": "Done."}]}"#;
        let text = export(&[
            span(
                "s1",
                "1",
                &chat(&format!("[{user}]"), &format!("[{called}]")),
            ),
            span(
                "s2",
                "2",
                &chat(
                    &format!("[{user}, {called}, {paris}, {oslo}]"),
                    &format!("[{answer}]"),
                ),
            ),
            span(
                "s3",
                "3",
                &chat(
                    &format!("[{user}, {called}, {paris}, {oslo}, {answer}, {paris}]"),
                    "[]",
                ),
            ),
        ]);
        let trajectory = otel(&text).unwrap();
        let returns: Vec<String> = (trajectory.turns[0].iter())
            .filter_map(|event| match event {
                Event::ToolReturn(r) => Some(r.content.text().into_owned()),
                _ => None,
            })
            .collect();
        assert_eq!(returns, ["18C", "4C"]);
    }

    /// Spans are placed by their start; without any start they keep the order written, and a
    /// span without one among spans with theirs is refused, not put first.
    #[test]
    fn a_span_without_a_start_among_timed_ones_is_refused() {
        let untimed = |id: &str| format!(r#"{{"traceId": "t1", "spanId": "{id}"}}"#);
        assert!(otel(&export(&[untimed("a"), untimed("b")])).is_ok());
        let error = otel(&export(&[span("a", "5", ""), untimed("b")]))
            .unwrap_err()
            .to_string();
        assert!(
            error.contains(
                "spans[1] (span b): no startTimeUnixNano, where the trace's other spans have one"
            ),
            "{error}"
        );
    }

    /// Counts past what 64 bits hold (a hostile recording's) stay at the largest, in each
    /// call and in the run's usage, instead of overflowing.
    #[test]
    fn token_counts_past_64_bits_stay_at_the_largest() {
        let usage = [
            text_attribute("openinference.span.kind", "LLM"),
            r#"{"key": "llm.token_count.prompt", "value": {"intValue": "18446744073709551615"}},
               {"key": "llm.token_count.completion", "value": {"intValue": "1"}}"#
                .to_string(),
        ]
        .join(",");
        let text = export(&[span("s1", "1", &usage), span("s2", "2", &usage)]);
        let trajectory = otel(&text).unwrap();
        let full = Tokens {
            prompt_tokens: u64::MAX,
            completion_tokens: 2,
            total_tokens: u64::MAX,
        };
        assert_eq!(trajectory.usage, Some(full));
        assert_eq!(trajectory.total_tokens(), u64::MAX);
    }

    /// A status code by number, as OTLP JSON writes enums, or by name, as some exporters do.
    #[test]
    fn an_error_status_makes_the_run_an_error() {
        let run = |code: &str| {
            let span =
                format!(r#"{{"traceId": "t", "spanId": "s", "status": {{"code": {code}}}}}"#);
            otel(&export(&[span])).map(|t| t.status)
        };
        for code in ["2", r#""STATUS_CODE_ERROR""#] {
            assert_eq!(run(code).unwrap(), RunStatus::Error, "{code}");
        }
        for code in [
            "0",
            "1",
            r#""STATUS_CODE_OK""#,
            r#""STATUS_CODE_UNSET""#,
            "null",
        ] {
            assert_eq!(run(code).unwrap(), RunStatus::Success, "{code}");
        }
        for code in ["3", r#""ERROR""#, "true"] {
            let error = run(code).unwrap_err().to_string();
            assert!(
                error.contains("status.code") && error.contains("0, 1 or 2"),
                "{code}: {error}"
            );
        }
    }

    #[test]
    fn malformed_spans_are_refused_at_the_span() {
        let at = "trajectory.resourceSpans[0].scopeSpans[0].spans";
        let cases = [
            (
                export(&[
                    span("a", "1", ""),
                    span("b", "2", "").replace("\"t1\"", "\"t2\""),
                ]),
                format!(
                    "{at}[1] (span b): trace t2 where the recording's first span is of trace \
                     t1; a recorded run is one trace (split the spans by traceId, one row each)"
                ),
            ),
            (
                export(&[span(
                    "a",
                    "1",
                    r#"{"key": "openinference.span.kind", "value": {"stringValue": "LLM"}},
                       {"key": "llm.token_count.prompt", "value": {"intValue": "many"}}"#,
                )]),
                format!(
                    "{at}[0] (span a): attribute `llm.token_count.prompt`: intValue \"many\" is \
                     not a whole number of tokens"
                ),
            ),
            (
                export(&[span("a", "soon", "")]),
                format!("{at}[0] (span a).startTimeUnixNano: `soon` is not a time in nanoseconds"),
            ),
            (
                export(&[span("a", "1", "")]).replace("\"1\"", "1.7e18"),
                format!(
                    "{at}[0].startTimeUnixNano: invalid type: floating point `1.7e+18`, expected \
                     a time in whole nanoseconds: a string of digits or an integer"
                ),
            ),
            (
                export(&[span(
                    "a",
                    "1",
                    &[
                        text_attribute("gen_ai.operation.name", "chat"),
                        text_attribute("gen_ai.input.messages", "[{\"parts\": []}]"),
                    ]
                    .join(","),
                )]),
                format!(
                    "{at}[0] (span a): attribute `gen_ai.input.messages`[0]: missing field `role`"
                ),
            ),
            (
                export(&[span(
                    "a",
                    "1",
                    &[
                        text_attribute("openinference.span.kind", "LLM"),
                        text_attribute("llm.input_messages.0.message.role", "critic"),
                    ]
                    .join(","),
                )]),
                format!(
                    "{at}[0] (span a): a message of role `critic` (expected system, user, \
                     assistant or tool)"
                ),
            ),
            (
                r#"{"resourceSpans": [{"scopeSpans": [{"spans": [{"spanId": "a"}]}]}]}"#
                    .to_string(),
                format!("{at}[0]: missing field `traceId`"),
            ),
            (
                r#"{"resourceSpans": [{"scopeSpans": [{"spans": [{"traceId": "t", "spanId": "a", "attributes": [{"key": "k"}]}]}]}]}"#
                    .to_string(),
                format!("{at}[0].attributes[0]: missing field `value`"),
            ),
        ];
        for (input, expected) in cases {
            assert_eq!(otel(&input).unwrap_err().0, expected, "for {input}");
        }
    }
}
