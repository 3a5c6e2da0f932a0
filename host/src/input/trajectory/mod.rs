//! The canonical trajectory: one model for every recorded-run format.
//!
//! Converters (one module per format, behind [`Converter`]) turn a raw JSON trajectory into a
//! [`Trajectory`]. The model keeps, losslessly, everything a built-in reads: turn boundaries,
//! message order, content parts, tool-call ids, names and raw argument text (byte for byte), tool
//! returns and status, final output, run status, LLM calls with model and token counts, step
//! count and duration.

pub(crate) mod anthropic;
pub(crate) mod claude_code;
pub(crate) mod evaldeck;
pub mod inline;
pub(crate) mod inspect;
pub(crate) mod json;
pub(crate) mod letta;
pub(crate) mod openai;
pub(crate) mod otel;
pub(crate) mod responses;
pub(crate) mod shape;

use std::borrow::Cow;
use std::fmt;

use serde::Serialize;
use serde_json::value::RawValue;

pub use crate::config::spec::Format;
pub use anthropic::AnthropicConverter;
pub use claude_code::ClaudeCodeConverter;
pub use evaldeck::EvaldeckConverter;
pub use inspect::InspectConverter;
pub use letta::LettaConverter;
pub use openai::OpenAiConverter;
pub use otel::OtelConverter;
pub use responses::ResponsesConverter;

use crate::input::fast::scan::{self, Scanned};

/// A recorded agent run in canonical form. Its text is borrowed from the recording where the
/// recording has it as is (a JSON string without escapes): a row's trajectory then costs no
/// allocation or copy per string.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Trajectory<'a> {
    /// The format the trajectory was converted from.
    pub format: Format,
    /// Turns in order; each holds its events in order. Formats without turn boundaries
    /// (evaldeck, openai) have exactly one turn.
    pub turns: Vec<Vec<Event<'a>>>,
    /// The run's final output where the recording states one (evaldeck `output`);
    /// [`Trajectory::final_output`] falls back to the last assistant message.
    pub output: Option<Cow<'a, str>>,
    /// The run's outcome (evaldeck `status`; `success` for formats that do not record one).
    pub status: RunStatus,
    /// The task given to the agent, where the recording has it.
    pub input: Option<Cow<'a, str>>,
    /// Wall-clock duration of the run in milliseconds, where recorded.
    pub duration_ms: Option<f64>,
    /// Token usage of the agent under test, where recorded at run level.
    pub usage: Option<Tokens>,
}

/// One event of a trajectory.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Event<'a> {
    System {
        text: Cow<'a, str>,
    },
    User {
        content: Content<'a>,
    },
    Assistant {
        content: Content<'a>,
    },
    Reasoning {
        text: Cow<'a, str>,
    },
    /// One tool call. A message that carries several calls becomes several events that share
    /// the message id.
    ToolCall(ToolCall<'a>),
    ToolReturn(ToolReturn<'a>),
    /// One call of the model. Letta and OpenAI recordings imply these; evaldeck records them.
    LlmCall(LlmCall<'a>),
    /// Input from a human in the middle of a run (evaldeck `human_input`).
    HumanInput {
        text: Option<Cow<'a, str>>,
    },
    /// A message type no built-in reads (approval, summary, event messages ...), kept by name.
    Other {
        kind: Cow<'a, str>,
    },
}

/// Message content: plain text or a list of parts, kept apart because extractors flatten parts
/// with a separator.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(untagged)]
pub enum Content<'a> {
    Text(Cow<'a, str>),
    /// The text of each part; non-text parts (images) are kept as empty strings.
    Parts(Vec<Cow<'a, str>>),
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ToolCall<'a> {
    /// The call id; empty when the recording has none.
    pub id: Cow<'a, str>,
    pub name: Cow<'a, str>,
    /// The arguments exactly as recorded: the JSON text of a Letta/OpenAI `arguments` string, or
    /// the JSON text of an evaldeck `tool_args` object.
    pub arguments: ToolText<'a>,
    /// Whether the step itself failed (evaldeck step `status: failure`).
    pub failed: bool,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ToolReturn<'a> {
    pub call_id: Cow<'a, str>,
    /// The tool's output as text. A JSON value that is not a string is kept as its JSON text.
    pub content: ToolText<'a>,
    pub status: ToolStatus,
    /// Whether `content` is the JSON text of a recorded value that is not a string (an evaldeck
    /// `tool_result` list, number or object), which Python shows as its repr.
    #[serde(skip)]
    pub json: bool,
}

/// Text a recording holds as a JSON string, kept as written until it is read: the arguments of
/// tool calls and what tools returned are JSON themselves, with an escape every few bytes, and
/// few graders read them. [`ToolText::text`] decodes it; it compares, prints and serializes as
/// its text.
#[derive(Clone)]
pub struct ToolText<'a>(Scanned<'a>);

impl ToolText<'_> {
    pub fn text(&self) -> Cow<'_, str> {
        match &self.0 {
            Scanned::Text(text) => Cow::Borrowed(text),
            Scanned::Escaped(inside) => Cow::Owned(scan::decode_short(inside)),
        }
    }
}

impl<'a> From<Scanned<'a>> for ToolText<'a> {
    fn from(scanned: Scanned<'a>) -> Self {
        ToolText(scanned)
    }
}

impl<'a> From<Cow<'a, str>> for ToolText<'a> {
    fn from(text: Cow<'a, str>) -> Self {
        ToolText(Scanned::Text(text))
    }
}

impl<'a> From<&'a str> for ToolText<'a> {
    fn from(text: &'a str) -> Self {
        ToolText(Scanned::Text(Cow::Borrowed(text)))
    }
}

impl From<String> for ToolText<'_> {
    fn from(text: String) -> Self {
        ToolText(Scanned::Text(Cow::Owned(text)))
    }
}

impl Default for ToolText<'_> {
    fn default() -> Self {
        ToolText::from("")
    }
}

impl PartialEq for ToolText<'_> {
    fn eq(&self, other: &Self) -> bool {
        self.text() == other.text()
    }
}

impl fmt::Debug for ToolText<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&self.text(), f)
    }
}

impl fmt::Display for ToolText<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text())
    }
}

impl Serialize for ToolText<'_> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&self.text())
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ToolStatus {
    Success,
    Error,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct LlmCall<'a> {
    pub model: Option<Cow<'a, str>>,
    pub input: Option<Cow<'a, str>>,
    pub output: Option<Cow<'a, str>>,
    pub tokens: Option<Tokens>,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Tokens {
    pub prompt_tokens: u64,
    pub completion_tokens: u64,
    pub total_tokens: u64,
}

impl Tokens {
    /// `tokens` added to the run's `usage`, which starts at zero; counts past what 64 bits
    /// hold (only a hostile recording's) stay at the largest.
    pub(crate) fn add_to(self, usage: &mut Option<Tokens>) {
        let run = usage.get_or_insert_with(Tokens::default);
        run.prompt_tokens = run.prompt_tokens.saturating_add(self.prompt_tokens);
        run.completion_tokens = run.completion_tokens.saturating_add(self.completion_tokens);
        run.total_tokens = run.total_tokens.saturating_add(self.total_tokens);
    }
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum RunStatus {
    #[default]
    Success,
    Failure,
    Timeout,
    Error,
}

impl RunStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            RunStatus::Success => "success",
            RunStatus::Failure => "failure",
            RunStatus::Timeout => "timeout",
            RunStatus::Error => "error",
        }
    }
}

impl Format {
    /// Every format, in the order detection tries them: each format's shape excludes those
    /// tried before it (a response object has `output` as a trace does, and Anthropic and
    /// Responses lists have `role` as chat messages do).
    pub const ALL: [Format; 8] = [
        Format::Letta,
        Format::ClaudeCode,
        Format::OpenAiResponses,
        Format::Inspect,
        Format::Evaldeck,
        Format::Anthropic,
        Format::OpenAi,
        Format::Otel,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Format::Letta => "letta",
            Format::Evaldeck => "evaldeck",
            Format::OpenAi => "openai",
            Format::OpenAiResponses => "openai_responses",
            Format::Anthropic => "anthropic",
            Format::ClaudeCode => "claude_code",
            Format::Otel => "otel",
            Format::Inspect => "inspect",
        }
    }

    fn converter(self) -> &'static dyn Converter {
        match self {
            Format::Letta => &LettaConverter,
            Format::Evaldeck => &EvaldeckConverter,
            Format::OpenAi => &OpenAiConverter,
            Format::OpenAiResponses => &ResponsesConverter,
            Format::Anthropic => &AnthropicConverter,
            Format::ClaudeCode => &ClaudeCodeConverter,
            Format::Otel => &OtelConverter,
            Format::Inspect => &InspectConverter,
        }
    }
}

/// A trajectory that could not be converted: what is wrong, in words that name the field.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{0}")]
pub struct ConvertError(pub String);

/// Turns one recorded-run format into the canonical model. Adding a format is one new module
/// that implements this trait, plus a line in [`Format`].
pub trait Converter: Sync {
    /// Whether `raw` has this format's shape. Called only when the suite leaves the format to
    /// detection; must be cheap (look at the first bytes and keys, not the whole document).
    fn detect(&self, raw: &RawValue) -> bool;
    /// Converts the whole trajectory.
    fn convert<'a>(&self, raw: &'a RawValue) -> Result<Trajectory<'a>, ConvertError>;
}

/// Converts `raw` with the given format, or the first format whose shape it has.
pub fn convert(raw: &RawValue, format: Option<Format>) -> Result<Trajectory<'_>, ConvertError> {
    let format = match format {
        Some(format) => format,
        None => detect(raw).ok_or_else(|| {
            ConvertError(
                "trajectory: not a known format (letta: a list of turns, each a list of messages \
                 with `message_type`; evaldeck: an object with `steps` or `output`; openai: a list \
                 of messages with `role`; openai_responses: a response object or a list of \
                 Responses items; anthropic: a message object, `{messages, response}` or a list \
                 of messages with Anthropic content blocks; claude_code: a list of session \
                 records with `sessionId`; otel: an OTLP JSON object with `resourceSpans`, or a \
                 list of them; inspect: an Inspect sample with `epoch`); set `format:` in the suite to force one"
                    .to_string(),
            )
        })?,
    };
    format.converter().convert(raw)
}

/// Why `raw`, read as the `format` a suite named, is not of that format: `why`, and the format
/// its shape has, if any.
fn not_of(format: Format, raw: &RawValue, why: &str) -> ConvertError {
    let instead = match detect(raw).filter(|shown| *shown != format) {
        Some(shown) => format!(
            "; its shape is {0}'s: set `format: {0}`, or leave `format:` out",
            shown.name()
        ),
        None => String::new(),
    };
    ConvertError(format!(
        "trajectory: {why}, so it is not a recording in the {} format{instead}",
        format.name()
    ))
}

/// The format whose shape `raw` has, if any.
pub fn detect(raw: &RawValue) -> Option<Format> {
    Format::ALL.into_iter().find(|f| f.converter().detect(raw))
}

impl<'a> Content<'a> {
    /// letta-evals' `flatten_content`: text as is (borrowed); parts joined with a single space.
    pub fn flatten(&self) -> Cow<'_, str> {
        match self {
            Content::Text(text) => Cow::Borrowed(text),
            Content::Parts(parts) => Cow::Owned(parts.join(" ")),
        }
    }

    /// [`Content::flatten`] of content that is not kept: plain text stays as it was read,
    /// borrowed from the row rather than copied.
    fn into_flat(self) -> Cow<'a, str> {
        match self {
            Content::Text(text) => text,
            parts => Cow::Owned(parts.flatten().into_owned()),
        }
    }
}

impl<'a> Trajectory<'a> {
    /// Traces recorded one per turn of a conversation, as one run: their turns in order, the
    /// first one's input, the last one's output and status.
    pub fn joined(traces: &[Trajectory<'a>]) -> Trajectory<'a> {
        let last = traces.last();
        Trajectory {
            format: last.map_or(Format::Evaldeck, |t| t.format),
            turns: traces
                .iter()
                .flat_map(|t| t.turns.iter().cloned())
                .collect(),
            output: last.and_then(|t| t.output.clone()),
            status: last.map_or(RunStatus::Success, |t| t.status),
            input: traces.first().and_then(|t| t.input.clone()),
            duration_ms: None,
            usage: None,
        }
    }

    /// Every event, across turns, in order.
    pub fn events(&self) -> impl DoubleEndedIterator<Item = &Event<'a>> + Clone {
        self.turns.iter().flatten()
    }

    /// True when there is no event at all (`[]`, `[[]]`, `[[],[]]`): letta-evals' empty guard.
    pub fn is_empty(&self) -> bool {
        self.turns.iter().all(Vec::is_empty)
    }

    /// Contents of the assistant messages, across turns, in order.
    pub fn assistant_messages(&self) -> impl DoubleEndedIterator<Item = &Content<'a>> + Clone {
        self.events().filter_map(|e| match e {
            Event::Assistant { content } => Some(content),
            _ => None,
        })
    }

    /// Tool calls in order.
    pub fn tool_calls(&self) -> impl DoubleEndedIterator<Item = &ToolCall<'a>> + Clone {
        self.events().filter_map(|e| match e {
            Event::ToolCall(call) => Some(call),
            _ => None,
        })
    }

    /// evaldeck's `tools_called`: names of the tool calls in order, duplicates kept, empty names
    /// skipped.
    pub fn tools_called(&self) -> Vec<&str> {
        self.tool_calls()
            .map(|c| &*c.name)
            .filter(|n| !n.is_empty())
            .collect()
    }

    /// LLM calls in order.
    pub fn llm_calls(&self) -> impl Iterator<Item = &LlmCall<'a>> {
        self.events().filter_map(|e| match e {
            Event::LlmCall(call) => Some(call),
            _ => None,
        })
    }

    /// evaldeck's `step_count`: LLM calls, tool calls, reasoning and human input.
    pub fn step_count(&self) -> usize {
        self.events()
            .filter(|e| {
                matches!(
                    e,
                    Event::LlmCall(_)
                        | Event::ToolCall(_)
                        | Event::Reasoning { .. }
                        | Event::HumanInput { .. }
                )
            })
            .count()
    }

    /// Sum of `total_tokens` over the LLM calls, or the run-level usage where no call has any.
    pub fn total_tokens(&self) -> u64 {
        let from_calls: u64 = self
            .llm_calls()
            .filter_map(|c| c.tokens.map(|t| t.total_tokens))
            .fold(0, u64::saturating_add);
        if from_calls == 0 {
            self.usage.map_or(0, |u| u.total_tokens)
        } else {
            from_calls
        }
    }

    /// The final output: the recorded one, else the last assistant message flattened; borrowed
    /// unless it has to be flattened.
    pub fn final_output(&self) -> Option<Cow<'_, str>> {
        match &self.output {
            Some(output) => Some(Cow::Borrowed(output)),
            None => self.assistant_messages().next_back().map(Content::flatten),
        }
    }
}

/// Helpers of the converters' tests.
#[cfg(test)]
pub(crate) mod testing {
    use super::*;

    /// `text` converted as `format`.
    pub(crate) fn convert_as(text: &str, format: Format) -> Result<Trajectory<'_>, ConvertError> {
        let raw: &RawValue = serde_json::from_str(text).unwrap();
        convert(raw, Some(format))
    }

    /// A tool call that did not fail.
    pub(crate) fn call<'a>(id: &'a str, name: &'a str, arguments: &'a str) -> Event<'a> {
        Event::ToolCall(ToolCall {
            id: id.into(),
            name: name.into(),
            arguments: arguments.into(),
            failed: false,
        })
    }

    /// A successful tool return, of text (or, if `json`, of a value's JSON text).
    pub(crate) fn returned<'a>(call_id: &'a str, content: &'a str, json: bool) -> Event<'a> {
        Event::ToolReturn(ToolReturn {
            call_id: call_id.into(),
            content: content.into(),
            status: ToolStatus::Success,
            json,
        })
    }

    /// A recording of `host/tests/data/traces/`, which `tests/traces/make.py` writes with the
    /// model APIs' own SDKs and tracers.
    pub(crate) fn recorded_file(name: &str) -> String {
        let path = format!("{}/tests/data/traces/{name}", env!("CARGO_MANIFEST_DIR"));
        std::fs::read_to_string(path).unwrap()
    }

    /// The events of the weather run every recording in `host/tests/data/traces/` holds: the
    /// system prompt, the task, a call of `get_weather` with `arguments` as the recording writes
    /// them, its return and the answer, the two model calls by `model` with their tokens.
    pub(crate) fn weather_run<'a>(model: &'a str, arguments: &'a str) -> Vec<Event<'a>> {
        let model_call = |tokens: Tokens| {
            Event::LlmCall(LlmCall {
                model: Some(model.into()),
                tokens: Some(tokens),
                ..LlmCall::default()
            })
        };
        vec![
            Event::System {
                text: "You are a weather bot.".into(),
            },
            Event::User {
                content: Content::Text("What is the weather in Paris?".into()),
            },
            model_call(self::tokens(50, 12)),
            call("call_1", "get_weather", arguments),
            returned("call_1", "18C, sunny", false),
            model_call(self::tokens(80, 9)),
            Event::Assistant {
                content: Content::Text("Paris: 18C and sunny.".into()),
            },
        ]
    }

    /// Token counts whose total is their sum.
    pub(crate) fn tokens(prompt: u64, completion: u64) -> Tokens {
        Tokens {
            prompt_tokens: prompt,
            completion_tokens: completion,
            total_tokens: prompt.saturating_add(completion),
        }
    }
}
