//! OpenAI Responses API recordings: a response object (`{"object": "response", "output": [...],
//! "usage": {...}}`, as `client.responses.create(...).model_dump()` writes it), or a list of
//! items, the request's `input` items followed by the response's `output` items, one turn.
//!
//! Items become events in order:
//! - `message` (also an input message without `type`): `system`/`developer` an
//!   [`Event::System`], `user` an [`Event::User`], `assistant` an [`Event::Assistant`]; content
//!   is a string or parts (`input_text`/`output_text` text, `refusal` its refusal text, images and
//!   files empty parts);
//! - `function_call` and `custom_tool_call` an [`Event::ToolCall`] (id: `call_id`; arguments:
//!   `arguments`, or a custom tool's `input`, byte for byte); `function_call_output` and
//!   `custom_tool_call_output` (a string, or content parts read as a message's and joined by a
//!   space) and the outputs of built-in calls (`computer_call_output`,
//!   `local_shell_call_output`, ..., kept as JSON text) an [`Event::ToolReturn`];
//! - `reasoning` an [`Event::Reasoning`]: its `content` texts, else its `summary` texts, joined
//!   by a blank line;
//! - `mcp_call` a tool call named by its `name`, with its `arguments`, and its `output` (or
//!   `error`, as an error return); every other `*_call` a built-in tool call named by the type
//!   without `_call` (`web_search`, `file_search`, `code_interpreter`, ...), whose arguments are
//!   the JSON text of what it was asked (`action`, `queries`, `code`, ...) and whose return is
//!   what the item recorded of its results (`results`, `outputs`, `result`), a `failed` status
//!   marking the call failed;
//! - any other item type an [`Event::Other`] of that type.
//!
//! Each run of model output (assistant messages, reasoning, calls) is one model call, an
//! [`Event::LlmCall`] before it; a response object's call carries its `model` and `usage`, which
//! is also the run's usage. A response's `status` is the run's: `completed` success,
//! `incomplete` and `cancelled` failure, `failed` error; its `instructions` come first as an
//! [`Event::System`].

use std::borrow::Cow;

use serde::Deserialize;
use serde_json::value::RawValue;

use super::json::{self, Expecting, Object, Text, TextOr, first_byte, value_before};
use super::shape;
use super::{
    Content, ConvertError, Converter, Event, Format, LlmCall, RunStatus, Tokens, ToolCall,
    ToolReturn, ToolStatus, Trajectory,
};

pub struct ResponsesConverter;

/// A response object, as the API returns it and the SDK dumps it.
#[derive(Deserialize)]
struct Response<'a> {
    #[serde(borrow, default)]
    model: Option<Text<'a>>,
    #[serde(borrow, default)]
    status: Option<Text<'a>>,
    #[serde(borrow, default)]
    instructions: Option<&'a RawValue>,
    #[serde(borrow)]
    output: Vec<Object<Item<'a>>>,
    #[serde(default)]
    usage: Option<Object<Usage>>,
}

impl Expecting for Response<'_> {
    const WHAT: &'static str = "a response object {object: \"response\", output: [...], ...}";
}

/// One input or output item. Which fields it needs depends on its type.
#[derive(Deserialize)]
struct Item<'a> {
    #[serde(rename = "type", borrow, default)]
    kind: Option<Text<'a>>,
    #[serde(borrow, default)]
    role: Option<Text<'a>>,
    #[serde(borrow, default)]
    content: Option<&'a RawValue>,
    #[serde(borrow, default)]
    id: Option<Text<'a>>,
    #[serde(borrow, default)]
    call_id: Option<Text<'a>>,
    #[serde(borrow, default)]
    name: Option<Text<'a>>,
    #[serde(borrow, default)]
    arguments: Option<Text<'a>>,
    #[serde(borrow, default)]
    input: Option<Text<'a>>,
    #[serde(borrow, default)]
    output: Option<&'a RawValue>,
    #[serde(borrow, default)]
    error: Option<&'a RawValue>,
    #[serde(borrow, default)]
    status: Option<Text<'a>>,
    #[serde(borrow, default)]
    summary: Option<Vec<Object<Part<'a>>>>,
    /// What a built-in call was asked: `action` (web search, computer, shell), `queries` (file
    /// search), `code` (code interpreter), `prompt` (image generation).
    #[serde(borrow, default)]
    action: Option<&'a RawValue>,
    #[serde(borrow, default)]
    queries: Option<&'a RawValue>,
    #[serde(borrow, default)]
    code: Option<&'a RawValue>,
    #[serde(borrow, default)]
    prompt: Option<&'a RawValue>,
    /// What a built-in call recorded of its results.
    #[serde(borrow, default)]
    results: Option<&'a RawValue>,
    #[serde(borrow, default)]
    outputs: Option<&'a RawValue>,
    #[serde(borrow, default)]
    result: Option<&'a RawValue>,
}

impl Expecting for Item<'_> {
    const WHAT: &'static str = "a Responses item object {type, ...}";
}

/// A content, summary or reasoning part: `{type, text}` or `{type: "refusal", refusal}`.
#[derive(Deserialize)]
struct Part<'a> {
    #[serde(rename = "type", borrow)]
    kind: Text<'a>,
    #[serde(borrow, default)]
    text: Option<Text<'a>>,
    #[serde(borrow, default)]
    refusal: Option<Text<'a>>,
}

impl Expecting for Part<'_> {
    const WHAT: &'static str = "a content part object {type, text}";
}

#[derive(Deserialize)]
struct Usage {
    input_tokens: u64,
    output_tokens: u64,
    #[serde(default)]
    total_tokens: Option<u64>,
}

impl Expecting for Usage {
    const WHAT: &'static str = "a usage object {input_tokens, output_tokens, total_tokens}";
}

/// Item types that are the model's own output: a run of them is one model call.
fn is_model_output(item: &Item) -> bool {
    match item.kind.as_ref().map(|k| &*k.0) {
        Some("message") | None => item.role.as_ref().is_some_and(|r| r.0 == "assistant"),
        Some("reasoning") => true,
        Some(kind) => kind.ends_with("_call"),
    }
}

impl Converter for ResponsesConverter {
    fn detect(&self, raw: &RawValue) -> bool {
        match first_byte(raw) {
            // A response object says so before its `output`.
            Some(b'{') => value_before(raw, "object", &["output", "steps", "input", "messages"])
                .is_some_and(|value| value.get() == "\"response\""),
            Some(b'[') => shape::message_list_format(raw) == Some(Format::OpenAiResponses),
            _ => false,
        }
    }

    fn convert<'a>(&self, raw: &'a RawValue) -> Result<Trajectory<'a>, ConvertError> {
        let at_root = || "trajectory".to_string();
        if first_byte(raw) == Some(b'{') {
            let Object(response): Object<Response> = json::parse(raw.get(), at_root)?;
            from_response(response)
        } else {
            let items: Vec<Object<Item>> = json::parse(raw.get(), at_root)?;
            let mut events = Vec::with_capacity(items.len() * 2);
            convert_items(items, "trajectory", None, &mut events)?;
            Ok(Trajectory {
                format: Format::OpenAiResponses,
                turns: vec![events],
                ..Trajectory::default()
            })
        }
    }
}

fn from_response(response: Response<'_>) -> Result<Trajectory<'_>, ConvertError> {
    let status = match response.status.as_ref().map(|s| &*s.0) {
        None | Some("completed") => RunStatus::Success,
        Some("incomplete" | "cancelled") => RunStatus::Failure,
        Some("failed") => RunStatus::Error,
        Some(other) => {
            return Err(ConvertError(format!(
                "trajectory.status: `{other}` is not the status of a finished response \
                 (expected completed, incomplete, cancelled or failed)"
            )));
        }
    };
    let usage = response.usage.map(|Object(u)| Tokens {
        prompt_tokens: u.input_tokens,
        completion_tokens: u.output_tokens,
        total_tokens: (u.total_tokens).unwrap_or(u.input_tokens.saturating_add(u.output_tokens)),
    });
    let mut events = Vec::with_capacity(response.output.len() * 2 + 1);
    if let Some(instructions) = response.instructions
        && instructions.get() != "null"
    {
        // A string, or a list of input items (a prompt template's messages).
        if first_byte(instructions) == Some(b'"') {
            let Text(text) =
                json::parse(instructions.get(), || "trajectory.instructions".to_string())?;
            events.push(Event::System { text });
        } else {
            let items = json::parse(instructions.get(), || "trajectory.instructions".to_string())?;
            convert_items(items, "trajectory.instructions", None, &mut events)?;
        }
    }
    let call = LlmCall {
        model: response.model.map(|m| m.0),
        tokens: usage,
        ..LlmCall::default()
    };
    convert_items(
        response.output,
        "trajectory.output",
        Some(call),
        &mut events,
    )?;
    Ok(Trajectory {
        format: Format::OpenAiResponses,
        turns: vec![events],
        status,
        usage,
        ..Trajectory::default()
    })
}

/// Converts `items` (at `base`) into `events`. `call` is the model call the first run of model
/// output is (a response's, with its model and usage); later runs are calls without either.
fn convert_items<'a>(
    items: Vec<Object<Item<'a>>>,
    base: &str,
    mut call: Option<LlmCall<'a>>,
    events: &mut Vec<Event<'a>>,
) -> Result<(), ConvertError> {
    let mut in_output = false;
    for (index, Object(item)) in items.into_iter().enumerate() {
        let model_output = is_model_output(&item);
        if model_output && !in_output {
            events.push(Event::LlmCall(call.take().unwrap_or_default()));
        }
        in_output = model_output;
        convert_item(item, &format!("{base}[{index}]"), events)?;
    }
    Ok(())
}

fn convert_item<'a>(
    item: Item<'a>,
    at: &str,
    events: &mut Vec<Event<'a>>,
) -> Result<(), ConvertError> {
    let kind = item.kind.as_ref().map_or("message", |k| &k.0).to_string();
    match &*kind {
        "message" => message(item, at, events)?,
        "function_call" | "custom_tool_call" => {
            let arguments = if kind == "function_call" {
                item.arguments
            } else {
                item.input
            };
            let field = if kind == "function_call" {
                "arguments"
            } else {
                "input"
            };
            events.push(Event::ToolCall(ToolCall {
                id: required(item.call_id, at, "call_id", &kind)?,
                name: required(item.name, at, "name", &kind)?,
                arguments: required(arguments, at, field, &kind)?.into(),
                failed: is_failed(&item.status),
            }));
        }
        "reasoning" => events.push(Event::Reasoning {
            text: reasoning_text(item.content, item.summary, at)?,
        }),
        "mcp_call" => {
            let id = required(item.id, at, "id", &kind)?;
            events.push(Event::ToolCall(ToolCall {
                id: id.clone(),
                name: required(item.name, at, "name", &kind)?,
                arguments: required(item.arguments, at, "arguments", &kind)?.into(),
                failed: is_failed(&item.status) || is_set(item.error),
            }));
            let (content, status) = match (item.output, item.error) {
                (_, Some(error)) if error.get() != "null" => (error, ToolStatus::Error),
                (Some(output), _) if output.get() != "null" => (output, ToolStatus::Success),
                _ => return Ok(()),
            };
            events.push(tool_return(id, content, status, &format!("{at}.output"))?);
        }
        kind if kind.ends_with("_call_output") => {
            let output = item
                .output
                .ok_or_else(|| json::missing(at, "output", &format!("a {kind} item")))?;
            let call_id = required(item.call_id, at, "call_id", kind)?;
            let at = format!("{at}.output");
            // A function's output may be content parts (`input_text`, `input_image`, ...),
            // read as a tool message's are; a built-in call's is its own object.
            let parts = matches!(kind, "function_call_output" | "custom_tool_call_output")
                && json::first_byte(output) == Some(b'[');
            events.push(if parts {
                Event::ToolReturn(ToolReturn {
                    call_id,
                    content: content(output, &at)?.into_flat().into(),
                    status: ToolStatus::Success,
                    json: false,
                })
            } else {
                tool_return(call_id, output, ToolStatus::Success, &at)?
            });
        }
        kind if kind.ends_with("_call") => {
            let arguments = builtin_arguments(&item);
            let id = required(item.id, at, "id", kind)?;
            let failed = is_failed(&item.status);
            events.push(Event::ToolCall(ToolCall {
                id: id.clone(),
                name: Cow::Owned(kind.trim_end_matches("_call").to_string()),
                arguments: arguments.into(),
                failed,
            }));
            let results = [item.results, item.outputs, item.result]
                .into_iter()
                .flatten()
                .find(|r| r.get() != "null");
            if let Some(results) = results {
                let status = if failed {
                    ToolStatus::Error
                } else {
                    ToolStatus::Success
                };
                events.push(tool_return(id, results, status, &format!("{at}.results"))?);
            }
        }
        other => events.push(Event::Other {
            kind: Cow::Owned(other.to_string()),
        }),
    }
    Ok(())
}

fn message<'a>(item: Item<'a>, at: &str, events: &mut Vec<Event<'a>>) -> Result<(), ConvertError> {
    let role = required(item.role, at, "role", "message")?;
    let content = match item.content {
        Some(raw) => content(raw, &format!("{at}.content"))?,
        None => return Err(json::missing(at, "content", "a message item")),
    };
    events.push(match &*role {
        "system" | "developer" => Event::System {
            text: match content {
                Content::Text(text) => text,
                parts => Cow::Owned(parts.flatten().into_owned()),
            },
        },
        "user" => Event::User { content },
        "assistant" => Event::Assistant { content },
        other => {
            return Err(ConvertError(format!(
                "{at}.role: unknown role `{other}` (expected system, developer, user or \
                 assistant)"
            )));
        }
    });
    Ok(())
}

/// Message content: a string, or parts whose text is kept (`refusal` parts their refusal) and
/// whose images and files are empty parts.
fn content<'a>(raw: &'a RawValue, at: &str) -> Result<Content<'a>, ConvertError> {
    let parts: Vec<Object<Part>> = match json::text_or(raw, at)? {
        TextOr::Text(text) => return Ok(Content::Text(text)),
        TextOr::Other(parts) => parts,
    };
    parts
        .into_iter()
        .enumerate()
        .map(|(i, Object(part))| part_text(part, &format!("{at}[{i}]")))
        .collect::<Result<_, _>>()
        .map(Content::Parts)
}

fn part_text<'a>(part: Part<'a>, at: &str) -> Result<Cow<'a, str>, ConvertError> {
    let kind = &*part.kind.0;
    match kind {
        "input_text" | "output_text" | "text" | "summary_text" | "reasoning_text" => part
            .text
            .map(|t| t.0)
            .ok_or_else(|| json::missing(at, "text", &format!("a part of type {kind}"))),
        "refusal" => part
            .refusal
            .map(|t| t.0)
            .ok_or_else(|| json::missing(at, "refusal", "a refusal part")),
        _ => Ok(Cow::Borrowed("")),
    }
}

/// A reasoning item's text: its `content` (the reasoning itself, where the model shares it),
/// else its `summary`, parts joined by a blank line.
fn reasoning_text<'a>(
    content: Option<&'a RawValue>,
    summary: Option<Vec<Object<Part<'a>>>>,
    at: &str,
) -> Result<Cow<'a, str>, ConvertError> {
    let (parts, field) = match content.filter(|c| c.get() != "null") {
        Some(raw) => (
            json::parse::<Vec<Object<Part>>>(raw.get(), || format!("{at}.content"))?,
            "content",
        ),
        None => (summary.unwrap_or_default(), "summary"),
    };
    let mut texts = parts
        .into_iter()
        .enumerate()
        .map(|(i, Object(part))| part_text(part, &format!("{at}.{field}[{i}]")))
        .collect::<Result<Vec<_>, _>>()?;
    Ok(if texts.len() == 1 {
        texts.remove(0)
    } else {
        Cow::Owned(texts.join("\n\n"))
    })
}

/// What a built-in call was asked, as JSON text: `{"action": ...}`, `{"queries": ...}`, ...,
/// each recorded value as written; `{}` when it recorded none.
fn builtin_arguments(item: &Item) -> String {
    let asked = [
        ("action", item.action),
        ("queries", item.queries),
        ("code", item.code),
        ("prompt", item.prompt),
    ];
    let fields: Vec<String> = asked
        .into_iter()
        .filter_map(|(key, value)| value.map(|v| format!("\"{key}\":{}", v.get())))
        .collect();
    format!("{{{}}}", fields.join(","))
}

/// A tool's return: a string as its text, anything else as its JSON text.
fn tool_return<'a>(
    call_id: Cow<'a, str>,
    raw: &'a RawValue,
    status: ToolStatus,
    at: &str,
) -> Result<Event<'a>, ConvertError> {
    let (content, json) = match json::text_or::<&RawValue>(raw, at)? {
        TextOr::Text(text) => (text, false),
        TextOr::Other(raw) => (Cow::Borrowed(raw.get()), true),
    };
    Ok(Event::ToolReturn(ToolReturn {
        call_id,
        content: content.into(),
        status,
        json,
    }))
}

/// A field an item of type `kind` must carry.
fn required<'a>(
    field: Option<Text<'a>>,
    at: &str,
    name: &str,
    kind: &str,
) -> Result<Cow<'a, str>, ConvertError> {
    json::required(field, at, name, &format!("a {kind} item"))
}

fn is_failed(status: &Option<Text>) -> bool {
    status.as_ref().is_some_and(|s| s.0 == "failed")
}

fn is_set(value: Option<&RawValue>) -> bool {
    value.is_some_and(|v| v.get() != "null")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::input::trajectory::detect;
    use crate::input::trajectory::testing::recorded_file as data;
    use crate::input::trajectory::testing::{call, convert_as, returned as tool_return, tokens};

    fn responses(text: &str) -> Result<Trajectory<'_>, ConvertError> {
        convert_as(text, Format::OpenAiResponses)
    }

    /// The request's input items and the output items of its two responses, as the openai
    /// SDK dumps them.
    #[test]
    fn converts_an_item_list() {
        let text = data("responses-items.json");
        let trajectory = responses(&text).unwrap();
        assert_eq!(trajectory.format, Format::OpenAiResponses);
        assert_eq!(
            trajectory.turns,
            vec![vec![
                Event::System {
                    text: "You are a weather bot.".into()
                },
                Event::User {
                    content: Content::Text("What is the weather in Paris?".into())
                },
                Event::LlmCall(LlmCall::default()),
                call("call_1", "get_weather", r#"{"city": "Paris"}"#),
                tool_return("call_1", "18C, sunny", false),
                Event::LlmCall(LlmCall::default()),
                Event::Assistant {
                    content: Content::Parts(vec!["Paris: 18C and sunny.".into()])
                },
            ]]
        );
        assert_eq!(
            trajectory.final_output().as_deref(),
            Some("Paris: 18C and sunny.")
        );
        assert_eq!(
            detect(serde_json::from_str(&text).unwrap()),
            Some(Format::OpenAiResponses)
        );
    }

    /// A response with reasoning and built-in tool calls, as the openai SDK dumps it.
    #[test]
    fn converts_a_response_object() {
        let text = data("responses-object.json");
        let trajectory = responses(&text).unwrap();
        let tokens = tokens(400, 120);
        assert_eq!(trajectory.status, RunStatus::Success);
        assert_eq!(trajectory.usage, Some(tokens));
        assert_eq!(trajectory.total_tokens(), 520);
        assert_eq!(
            trajectory.turns,
            vec![vec![
                Event::LlmCall(LlmCall {
                    model: Some("gpt-4.1-2025-04-14".into()),
                    tokens: Some(tokens),
                    ..LlmCall::default()
                }),
                Event::Reasoning {
                    text: "Search the web first.\n\nThen read the files.".into()
                },
                call(
                    "ws_1",
                    "web_search",
                    r#"{"action":{"type": "search", "queries": null, "query": "Paris weather today", "sources": null}}"#
                ),
                call("fs_1", "file_search", r#"{"queries":["paris climate"]}"#),
                tool_return(
                    "fs_1",
                    r#"[{"attributes": {}, "file_id": "file_1", "filename": "climate.md", "score": 0.9, "text": "Paris is mild."}]"#,
                    true
                ),
                call(
                    "ci_1",
                    "code_interpreter",
                    r#"{"code":"print(18 * 9 / 5 + 32)"}"#
                ),
                tool_return("ci_1", r#"[{"logs": "64.4", "type": "logs"}]"#, true),
                Event::Assistant {
                    content: Content::Parts(vec!["18C (64.4F) and sunny.".into()])
                },
            ]]
        );
        assert_eq!(
            trajectory.tools_called(),
            ["web_search", "file_search", "code_interpreter"]
        );
        assert_eq!(trajectory.step_count(), 5);
        assert_eq!(
            detect(serde_json::from_str(&text).unwrap()),
            Some(Format::OpenAiResponses)
        );
    }

    #[test]
    fn a_function_output_of_content_parts_is_read_as_their_text() {
        let trajectory = responses(
            r#"[{"type": "function_call", "call_id": "c1", "name": "look", "arguments": "{}"},
                {"type": "function_call_output", "call_id": "c1", "output": [
                  {"type": "input_text", "text": "18C,"},
                  {"type": "input_image", "image_url": "data:image/png;base64,AA"},
                  {"type": "input_text", "text": "sunny"}]},
                {"type": "custom_tool_call_output", "call_id": "c2", "output": "plain"},
                {"type": "computer_call_output", "call_id": "c3",
                 "output": [{"type": "computer_screenshot"}]}]"#,
        )
        .unwrap();
        assert_eq!(
            trajectory.turns[0][2..],
            [
                tool_return("c1", "18C,  sunny", false),
                tool_return("c2", "plain", false),
                tool_return("c3", r#"[{"type": "computer_screenshot"}]"#, true),
            ]
        );
        let error = responses(
            r#"[{"type": "function_call_output", "call_id": "c1", "output": [{"type": "input_text"}]}]"#,
        )
        .unwrap_err();
        assert_eq!(
            error.to_string(),
            "trajectory[0].output[0].text: missing; a part of type input_text requires it"
        );
    }

    #[test]
    fn instructions_status_mcp_and_custom_tools() {
        let trajectory = responses(
            r#"{"object": "response", "status": "incomplete", "model": "m",
                "instructions": [{"role": "developer", "content": [{"type": "input_text", "text": "Be brief."}]}],
                "output": [
                  {"type": "mcp_call", "id": "mcp_1", "name": "search", "server_label": "s",
                   "arguments": "{\"q\":1}", "output": null, "error": "denied"},
                  {"type": "custom_tool_call", "call_id": "c1", "name": "patch", "input": "*** Begin"},
                  {"type": "message", "role": "assistant", "content": [{"type": "refusal", "refusal": "No."}]},
                  {"type": "mcp_list_tools", "id": "l", "server_label": "s", "tools": []}
                ]}"#,
        )
        .unwrap();
        assert_eq!(trajectory.status, RunStatus::Failure);
        assert_eq!(trajectory.usage, None);
        assert_eq!(
            trajectory.turns[0],
            vec![
                Event::System {
                    text: "Be brief.".into()
                },
                Event::LlmCall(LlmCall {
                    model: Some("m".into()),
                    ..LlmCall::default()
                }),
                Event::ToolCall(ToolCall {
                    id: "mcp_1".into(),
                    name: "search".into(),
                    arguments: r#"{"q":1}"#.into(),
                    failed: true,
                }),
                Event::ToolReturn(ToolReturn {
                    call_id: "mcp_1".into(),
                    content: "denied".into(),
                    status: ToolStatus::Error,
                    json: false,
                }),
                call("c1", "patch", "*** Begin"),
                Event::Assistant {
                    content: Content::Parts(vec!["No.".into()])
                },
                Event::Other {
                    kind: "mcp_list_tools".into()
                },
            ]
        );
    }

    #[test]
    fn malformed_recordings_name_the_path() {
        let cases = [
            (
                r#"[{"type": "function_call", "call_id": "c", "arguments": "{}"}]"#,
                "trajectory[0].name: missing; a function_call item requires it",
            ),
            (
                r#"[{"type": "function_call_output", "call_id": "c"}]"#,
                "trajectory[0].output: missing; a function_call_output item requires it",
            ),
            (
                r#"[{"type": "message", "role": "tool", "content": "x"}]"#,
                "trajectory[0].role: unknown role `tool` (expected system, developer, user or \
                 assistant)",
            ),
            (
                r#"[{"type": "message", "role": "user", "content": [{"type": "input_text"}]}]"#,
                "trajectory[0].content[0].text: missing; a part of type input_text requires it",
            ),
            (
                r#"[{"type": "reasoning", "summary": [{"text": "x"}]}]"#,
                "trajectory[0].summary[0]: missing field `type`",
            ),
            (
                r#"{"object": "response", "status": "in_progress", "output": []}"#,
                "trajectory.status: `in_progress` is not the status of a finished response \
                 (expected completed, incomplete, cancelled or failed)",
            ),
            (
                r#"{"object": "response", "output": [], "usage": {"input_tokens": 1}}"#,
                "trajectory.usage: missing field `output_tokens`",
            ),
            (
                r#"{"object": "response", "output": [{"type": "web_search_call", "status": "completed"}]}"#,
                "trajectory.output[0].id: missing; a web_search_call item requires it",
            ),
            (
                r#"{"object": "response"}"#,
                "trajectory: missing field `output`",
            ),
        ];
        for (input, expected) in cases {
            assert_eq!(responses(input).unwrap_err().0, expected, "for {input}");
        }
    }

    #[test]
    fn detects_responses_and_leaves_other_shapes() {
        let detect_text = |text: &str| detect(serde_json::from_str(text).unwrap());
        assert_eq!(
            detect_text(r#"{"id": "r", "object": "response", "output": []}"#),
            Some(Format::OpenAiResponses)
        );
        assert_eq!(
            detect_text(r#"[{"role": "user", "content": [{"type": "input_text", "text": "x"}]}]"#),
            Some(Format::OpenAiResponses)
        );
        assert_eq!(
            detect_text(r#"[{"type": "message", "role": "user", "content": "x"}]"#),
            Some(Format::OpenAiResponses)
        );
        // `object` after `output` is a trace's field, not a response's header.
        assert_eq!(
            detect_text(r#"{"output": "x", "object": "response"}"#),
            Some(Format::Evaldeck)
        );
        assert_eq!(
            detect_text(r#"[{"role": "user", "content": "x"}]"#),
            Some(Format::OpenAi)
        );
    }
}
