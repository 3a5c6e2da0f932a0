//! Inspect AI samples: one sample of an Inspect log (`EvalSample` as a `.eval` log's
//! `samples/<id>_epoch_<n>.json` member or an entry of a `.json` log's `samples` holds it), one
//! turn.
//!
//! The sample's `messages` are the run: `system`, `user`, `assistant` (its `tool_calls`, each
//! `{id, function, arguments}` with `function` the tool's name and `arguments` an object, kept
//! as its JSON text) and `tool` (`tool_call_id`, `error`). Content is a string or a list of
//! parts: `text` parts are text, `reasoning` parts become [`Event::Reasoning`] (their
//! `reasoning`, or `summary` when it is redacted), other parts (images, audio, ...) empty parts.
//! Each assistant message is one model call, with the model and `usage` of the `model` event
//! whose output is that message; the run's usage is the sum of its calls', else the sample's
//! `model_usage`. `output.completion` is the final output; an `error` makes the run an error,
//! a `limit` of time a timeout and any other limit a failure. Text Inspect moved to the
//! sample's `attachments` (`attachment://<hash>`) is read from there.

use std::borrow::Cow;
use std::collections::HashMap;

use serde::Deserialize;
use serde_json::value::RawValue;

use super::evaldeck::{DECISIVE_KEYS, EPOCH};
use super::json::{self, Expecting, Object, Text, first_byte, first_key_among};
use super::{
    Content, ConvertError, Converter, Event, Format, LlmCall, RunStatus, Tokens, ToolCall,
    ToolReturn, ToolStatus, Trajectory,
};

pub struct InspectConverter;

#[derive(Deserialize)]
struct Sample<'a> {
    #[serde(borrow, default)]
    input: Option<&'a RawValue>,
    #[serde(borrow)]
    messages: Vec<Object<Message<'a>>>,
    #[serde(borrow, default)]
    output: Option<Object<Output<'a>>>,
    #[serde(borrow, default)]
    events: Option<Vec<Object<LogEvent<'a>>>>,
    #[serde(default)]
    model_usage: Option<HashMap<String, Object<Usage>>>,
    #[serde(borrow, default)]
    attachments: Option<HashMap<String, Text<'a>>>,
    #[serde(borrow, default)]
    error: Option<&'a RawValue>,
    #[serde(borrow, default)]
    limit: Option<Object<Limit<'a>>>,
    #[serde(default)]
    total_time: Option<f64>,
}

impl Expecting for Sample<'_> {
    const WHAT: &'static str = "an Inspect sample {id, epoch, input, messages, output, ...}";
}

#[derive(Deserialize)]
struct Message<'a> {
    #[serde(borrow)]
    role: Text<'a>,
    #[serde(borrow, default)]
    id: Option<Text<'a>>,
    #[serde(borrow, default)]
    content: Option<&'a RawValue>,
    #[serde(borrow, default)]
    tool_calls: Option<Vec<Object<InspectToolCall<'a>>>>,
    #[serde(borrow, default)]
    tool_call_id: Option<Text<'a>>,
    #[serde(borrow, default)]
    error: Option<Object<ToolError<'a>>>,
    #[serde(borrow, default)]
    model: Option<Text<'a>>,
}

impl Expecting for Message<'_> {
    const WHAT: &'static str = "an Inspect chat message {role, content, ...}";
}

#[derive(Deserialize)]
struct InspectToolCall<'a> {
    #[serde(borrow)]
    id: Text<'a>,
    #[serde(borrow)]
    function: Text<'a>,
    #[serde(borrow)]
    arguments: &'a RawValue,
    #[serde(borrow, default)]
    parse_error: Option<Text<'a>>,
}

impl Expecting for InspectToolCall<'_> {
    const WHAT: &'static str = "a tool call {id, function, arguments}";
}

#[derive(Deserialize)]
struct ToolError<'a> {
    #[serde(borrow, default)]
    message: Option<Text<'a>>,
}

impl Expecting for ToolError<'_> {
    const WHAT: &'static str = "a tool error {type, message}";
}

#[derive(Deserialize)]
struct Part<'a> {
    #[serde(rename = "type", borrow)]
    kind: Text<'a>,
    #[serde(borrow, default)]
    text: Option<Text<'a>>,
    #[serde(borrow, default)]
    reasoning: Option<Text<'a>>,
    #[serde(borrow, default)]
    summary: Option<Text<'a>>,
    #[serde(default)]
    redacted: bool,
}

impl Expecting for Part<'_> {
    const WHAT: &'static str = "a content part {type, ...}";
}

#[derive(Deserialize)]
struct Output<'a> {
    #[serde(borrow, default)]
    completion: Option<Text<'a>>,
    #[serde(borrow, default)]
    choices: Vec<Object<Choice<'a>>>,
    #[serde(default)]
    usage: Option<Object<Usage>>,
}

impl Expecting for Output<'_> {
    const WHAT: &'static str = "a model output {model, choices, completion, usage}";
}

#[derive(Deserialize)]
struct Choice<'a> {
    #[serde(borrow)]
    message: Object<MessageId<'a>>,
}

impl Expecting for Choice<'_> {
    const WHAT: &'static str = "a choice {message, stop_reason}";
}

#[derive(Deserialize)]
struct MessageId<'a> {
    #[serde(borrow, default)]
    id: Option<Text<'a>>,
}

impl Expecting for MessageId<'_> {
    const WHAT: &'static str = "a chat message {id, role, content, ...}";
}

#[derive(Deserialize)]
struct Usage {
    input_tokens: u64,
    output_tokens: u64,
    total_tokens: u64,
}

impl Expecting for Usage {
    const WHAT: &'static str = "a model usage {input_tokens, output_tokens, total_tokens}";
}

impl Usage {
    fn tokens(&self) -> Tokens {
        Tokens {
            prompt_tokens: self.input_tokens,
            completion_tokens: self.output_tokens,
            total_tokens: self.total_tokens,
        }
    }
}

/// An entry of the sample's `events`; only `model` events' outputs are read.
#[derive(Deserialize)]
struct LogEvent<'a> {
    #[serde(borrow)]
    event: Text<'a>,
    #[serde(borrow, default)]
    output: Option<&'a RawValue>,
}

impl Expecting for LogEvent<'_> {
    const WHAT: &'static str = "an event {event, ...}";
}

#[derive(Deserialize)]
struct Limit<'a> {
    #[serde(rename = "type", borrow)]
    kind: Text<'a>,
}

impl Expecting for Limit<'_> {
    const WHAT: &'static str = "a limit {type, limit}";
}

impl Converter for InspectConverter {
    fn detect(&self, raw: &RawValue) -> bool {
        first_byte(raw) == Some(b'{') && first_key_among(raw, &DECISIVE_KEYS) == Some(EPOCH)
    }

    fn convert<'a>(&self, raw: &'a RawValue) -> Result<Trajectory<'a>, ConvertError> {
        let Object(sample): Object<Sample> = json::parse(raw.get(), || "trajectory".into())?;
        let calls = model_calls(sample.events.unwrap_or_default())?;
        let attachments = sample.attachments.unwrap_or_default();
        let resolve = |text: Cow<'a, str>| -> Cow<'a, str> {
            match text
                .strip_prefix("attachment://")
                .and_then(|hash| attachments.get(hash))
            {
                Some(Text(stored)) => stored.clone(),
                None => text,
            }
        };
        let mut events = Vec::with_capacity(sample.messages.len() * 2);
        let mut usage = None;
        for (index, Object(message)) in sample.messages.into_iter().enumerate() {
            let at = format!("trajectory.messages[{index}]");
            let (parts, reasoning) = content(message.content, &format!("{at}.content"))?;
            let parts: Vec<Cow<'a, str>> = parts.into_iter().map(&resolve).collect();
            match &*message.role.0 {
                "system" => events.push(Event::System {
                    text: into_content(parts).into_flat(),
                }),
                "user" => events.push(Event::User {
                    content: into_content(parts),
                }),
                "assistant" => {
                    let tokens = message
                        .id
                        .as_ref()
                        .and_then(|id| calls.get(&*id.0))
                        .copied();
                    if let Some(tokens) = tokens {
                        tokens.add_to(&mut usage);
                    }
                    events.push(Event::LlmCall(LlmCall {
                        model: message.model.map(|m| m.0),
                        tokens,
                        ..LlmCall::default()
                    }));
                    events.extend(reasoning.into_iter().map(|text| Event::Reasoning {
                        text: resolve(text),
                    }));
                    if parts.iter().any(|part| !part.is_empty()) {
                        events.push(Event::Assistant {
                            content: into_content(parts),
                        });
                    }
                    for Object(call) in message.tool_calls.into_iter().flatten() {
                        events.push(Event::ToolCall(ToolCall {
                            id: call.id.0,
                            name: call.function.0,
                            arguments: call.arguments.get().into(),
                            failed: call.parse_error.is_some(),
                        }));
                    }
                }
                "tool" => {
                    let mut text = parts.join("\n");
                    let status = match message.error {
                        Some(Object(error)) => {
                            if text.is_empty() {
                                text = error.message.map(|m| m.0.into_owned()).unwrap_or_default();
                            }
                            ToolStatus::Error
                        }
                        None => ToolStatus::Success,
                    };
                    events.push(Event::ToolReturn(ToolReturn {
                        call_id: message.tool_call_id.map(|t| t.0).unwrap_or_default(),
                        content: text.into(),
                        status,
                        json: false,
                    }));
                }
                other => {
                    return Err(ConvertError(format!(
                        "{at}.role: unknown role `{other}` (expected system, user, assistant \
                         or tool)"
                    )));
                }
            }
        }
        if usage.is_none()
            && let Some(by_model) = sample.model_usage
        {
            for Object(model) in by_model.values() {
                model.tokens().add_to(&mut usage);
            }
        }
        let status = if sample.error.is_some() {
            RunStatus::Error
        } else {
            match sample.limit {
                Some(Object(limit)) if matches!(&*limit.kind.0, "time" | "working") => {
                    RunStatus::Timeout
                }
                Some(_) => RunStatus::Failure,
                None => RunStatus::Success,
            }
        };
        let input = match sample.input {
            Some(raw) if first_byte(raw) == Some(b'"') => {
                let Text(text) = json::parse(raw.get(), || "trajectory.input".into())?;
                Some(resolve(text))
            }
            Some(raw) if first_byte(raw) == Some(b'[') => last_user_text(raw, resolve)?,
            _ => None,
        };
        Ok(Trajectory {
            format: Format::Inspect,
            turns: vec![events],
            output: sample
                .output
                .and_then(|Object(output)| output.completion)
                .map(|t| t.0)
                .filter(|text| !text.is_empty()),
            status,
            input,
            duration_ms: sample.total_time.map(|seconds| seconds * 1000.0),
            usage,
        })
    }
}

/// The text of the last `user` message of an input given as a list of messages: its text
/// parts (attachments resolved), the non-empty ones joined by a line ending; `None` when no
/// message is the user's.
fn last_user_text<'a>(
    raw: &'a RawValue,
    resolve: impl Fn(Cow<'a, str>) -> Cow<'a, str>,
) -> Result<Option<Cow<'a, str>>, ConvertError> {
    let messages: Vec<Object<Message>> = json::parse(raw.get(), || "trajectory.input".into())?;
    let Some((index, Object(message))) = messages
        .into_iter()
        .enumerate()
        .rfind(|(_, Object(message))| message.role.0 == "user")
    else {
        return Ok(None);
    };
    let (parts, _) = content(
        message.content,
        &format!("trajectory.input[{index}].content"),
    )?;
    let mut parts: Vec<Cow<'a, str>> = parts
        .into_iter()
        .map(resolve)
        .filter(|part| !part.is_empty())
        .collect();
    Ok(Some(if parts.len() == 1 {
        parts.pop().unwrap_or_default()
    } else {
        parts.join("\n").into()
    }))
}

/// The tokens of each model call, by the id of the message it answered with.
fn model_calls<'a>(
    events: Vec<Object<LogEvent<'a>>>,
) -> Result<HashMap<Cow<'a, str>, Tokens>, ConvertError> {
    let mut calls = HashMap::new();
    for (index, Object(event)) in events.into_iter().enumerate() {
        let (true, Some(raw)) = (event.event.0 == "model", event.output) else {
            continue;
        };
        let Object(output): Object<Output> =
            json::parse(raw.get(), || format!("trajectory.events[{index}].output"))?;
        let usage = output.usage.map(|Object(usage)| usage.tokens());
        for Object(choice) in output.choices {
            if let (Some(Text(id)), Some(tokens)) = (choice.message.0.id, usage) {
                calls.insert(id, tokens);
            }
        }
    }
    Ok(calls)
}

/// A message's content: the text of each part (non-text parts as empty ones), and the texts of
/// its reasoning parts.
type Parts<'a> = (Vec<Cow<'a, str>>, Vec<Cow<'a, str>>);

fn content<'a>(raw: Option<&'a RawValue>, at: &str) -> Result<Parts<'a>, ConvertError> {
    let Some(raw) = raw else {
        return Ok((Vec::new(), Vec::new()));
    };
    match json::text_or::<Vec<Object<Part>>>(raw, at)? {
        json::TextOr::Text(text) => Ok((vec![text], Vec::new())),
        json::TextOr::Other(list) => {
            let (mut parts, mut reasoning) = (Vec::new(), Vec::new());
            for (index, Object(part)) in list.into_iter().enumerate() {
                match &*part.kind.0 {
                    "text" => parts.push(json::required(
                        part.text,
                        &format!("{at}[{index}]"),
                        "text",
                        "a text part",
                    )?),
                    "reasoning" => {
                        let text = if part.redacted {
                            part.summary
                        } else {
                            part.reasoning.or(part.summary)
                        };
                        reasoning.push(text.map(|t| t.0).unwrap_or_default());
                    }
                    _ => parts.push(Cow::Borrowed("")),
                }
            }
            Ok((parts, reasoning))
        }
    }
}

/// One part is the text as written; several are kept apart.
fn into_content(mut parts: Vec<Cow<'_, str>>) -> Content<'_> {
    if parts.len() == 1 {
        Content::Text(parts.pop().unwrap_or_default())
    } else {
        Content::Parts(parts)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::input::trajectory::testing::{convert_as, recorded_file, tokens, weather_run};
    use crate::input::trajectory::{Trajectory, detect};

    fn inspect(text: &str) -> Result<Trajectory<'_>, ConvertError> {
        convert_as(text, Format::Inspect)
    }

    /// The first epoch of the weather run as Inspect recorded it, from the rows of the same run
    /// in every format.
    fn recorded_sample() -> String {
        let rows = recorded_file("same-run.jsonl");
        let row: serde_json::Value = rows
            .lines()
            .map(|line| serde_json::from_str(line).unwrap())
            .find(|row: &serde_json::Value| row["id"] == "inspect")
            .unwrap();
        row["trajectory"].to_string()
    }

    #[test]
    fn converts_a_recorded_sample() {
        let text = recorded_sample();
        let trajectory = inspect(&text).unwrap();
        assert_eq!(
            trajectory.turns,
            vec![weather_run("mockllm/model", r#"{"city":"Paris"}"#)]
        );
        assert_eq!(trajectory.usage, Some(tokens(130, 21)));
        assert_eq!(trajectory.status, RunStatus::Success);
        assert_eq!(trajectory.output.as_deref(), Some("Paris: 18C and sunny."));
        assert_eq!(
            trajectory.input.as_deref(),
            Some("What is the weather in Paris?")
        );
        assert_eq!(trajectory.duration_ms, Some(500.0));
        let raw: &RawValue = serde_json::from_str(&text).unwrap();
        assert_eq!(detect(raw), Some(Format::Inspect));
    }

    #[test]
    fn reads_parts_reasoning_tool_errors_and_limits() {
        let text = r#"{"id": 1, "epoch": 2, "input": [{"role": "user", "content": "q"}],
          "messages": [
            {"role": "user", "content": [{"type": "text", "text": "look"},
                                         {"type": "image", "image": "attachment://a1"}]},
            {"id": "m1", "role": "assistant", "model": "m",
             "content": [{"type": "reasoning", "reasoning": "think", "redacted": false},
                         {"type": "reasoning", "reasoning": "xyz", "summary": "short",
                          "redacted": true},
                         {"type": "text", "text": "attachment://t1"}],
             "tool_calls": [{"id": "c1", "function": "f", "arguments": {},
                             "parse_error": "bad JSON"}]},
            {"role": "tool", "tool_call_id": "c1", "content": "",
             "error": {"type": "parsing", "message": "bad JSON"}}
          ],
          "model_usage": {"m": {"input_tokens": 3, "output_tokens": 2, "total_tokens": 5}},
          "attachments": {"t1": "a long answer"},
          "limit": {"type": "message", "limit": 3}}"#;
        let trajectory = inspect(text).unwrap();
        assert_eq!(
            trajectory.turns[0],
            vec![
                Event::User {
                    content: Content::Parts(vec!["look".into(), "".into()])
                },
                Event::LlmCall(LlmCall {
                    model: Some("m".into()),
                    ..LlmCall::default()
                }),
                Event::Reasoning {
                    text: "think".into()
                },
                Event::Reasoning {
                    text: "short".into()
                },
                Event::Assistant {
                    content: Content::Text("a long answer".into())
                },
                Event::ToolCall(ToolCall {
                    id: "c1".into(),
                    name: "f".into(),
                    arguments: "{}".into(),
                    failed: true,
                }),
                Event::ToolReturn(ToolReturn {
                    call_id: "c1".into(),
                    content: "bad JSON".into(),
                    status: ToolStatus::Error,
                    json: false,
                }),
            ]
        );
        assert_eq!(trajectory.usage, Some(tokens(3, 2)));
        assert_eq!(trajectory.status, RunStatus::Failure);
        assert_eq!(trajectory.input.as_deref(), Some("q"));
        let status = |extra: &str| {
            let text = format!(r#"{{"epoch": 1, "messages": [], {extra}}}"#);
            inspect(&text).unwrap().status
        };
        assert_eq!(status(r#""limit": {"type": "time"}"#), RunStatus::Timeout);
        assert_eq!(
            status(r#""error": {"message": "boom", "traceback": ""}"#),
            RunStatus::Error
        );
        assert_eq!(status(r#""error": null"#), RunStatus::Success);
    }

    #[test]
    fn an_input_of_messages_is_the_last_user_message_text() {
        let input = |input: &str| {
            let text = format!(
                r#"{{"epoch": 1, "messages": [], "input": {input},
                    "attachments": {{"h1": "a long question"}}}}"#
            );
            inspect(&text).unwrap().input.map(Cow::into_owned)
        };
        assert_eq!(
            input(
                r#"[{"role": "system", "content": "be brief"},
                    {"role": "user", "content": "first"},
                    {"role": "assistant", "content": "an answer"},
                    {"role": "user", "content": [{"type": "text", "text": "attachment://h1"},
                                                 {"type": "image", "image": "x"},
                                                 {"type": "text", "text": "and this"}]},
                    {"role": "tool", "tool_call_id": "c", "content": "18C"}]"#
            )
            .as_deref(),
            Some("a long question\nand this")
        );
        assert_eq!(
            input(r#"[{"role": "user", "content": "only"}]"#).as_deref(),
            Some("only")
        );
        assert_eq!(
            input(r#""attachment://h1""#).as_deref(),
            Some("a long question")
        );
        assert_eq!(input(r#"[{"role": "system", "content": "s"}]"#), None);
        assert_eq!(input("[]"), None);
    }

    #[test]
    fn malformed_samples_name_the_path() {
        for (input, expected) in [
            (r#"{"epoch": 1}"#, "trajectory: missing field `messages`"),
            (
                r#"{"epoch": 1, "messages": [{"role": "assistant", "tool_calls": [{"id": "c", "arguments": {}}]}]}"#,
                "trajectory.messages[0].tool_calls[0]: missing field `function`",
            ),
            (
                r#"{"epoch": 1, "messages": [{"role": "critic", "content": "x"}]}"#,
                "trajectory.messages[0].role: unknown role `critic` (expected system, user, \
                 assistant or tool)",
            ),
            (
                r#"{"epoch": 1, "messages": [{"role": "user", "content": [{"type": "text"}]}]}"#,
                "trajectory.messages[0].content[0].text: missing; a text part requires it",
            ),
            (
                r#"{"epoch": 1, "messages": [], "events": [{"event": "model", "output": {"choices": [], "usage": {"input_tokens": 1}}}]}"#,
                "trajectory.events[0].output.usage: missing field `output_tokens`",
            ),
            (
                r#"{"epoch": 1, "messages": [], "input": [{"content": "q"}]}"#,
                "trajectory.input[0]: missing field `role`",
            ),
            (
                r#"{"epoch": 1, "messages": [], "input": [{"role": "user", "content": [{"type": "text"}]}]}"#,
                "trajectory.input[0].content[0].text: missing; a text part requires it",
            ),
        ] {
            assert_eq!(inspect(input).unwrap_err().0, expected, "for {input}");
        }
    }

    #[test]
    fn detection_tells_samples_from_traces_and_chat_logs() {
        let detect_text = |text: &str| detect(serde_json::from_str(text).unwrap());
        assert_eq!(
            detect_text(r#"{"id": "a", "epoch": 1, "input": "q", "messages": []}"#),
            Some(Format::Inspect)
        );
        assert_eq!(
            detect_text(r#"{"input": "q", "epoch": 1}"#),
            Some(Format::Evaldeck)
        );
        assert_eq!(
            detect_text(r#"{"messages": [{"role": "user", "content": "q"}]}"#),
            Some(Format::OpenAi)
        );
    }
}
