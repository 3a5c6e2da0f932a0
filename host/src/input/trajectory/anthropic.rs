//! Anthropic Messages API recordings, one turn: a response message (`{"type": "message", "role":
//! "assistant", "content": [...], "model", "stop_reason", "usage"}`, as
//! `client.messages.create(...).model_dump()` writes it); a conversation, the request's
//! `{"system", "messages": [...]}` with the reply under `response`; or a list of messages (each a
//! request message `{role, content}` or a response message).
//!
//! Content is a string or a list of blocks, which become events in order:
//! - `system` (a string or text blocks) an [`Event::System`];
//! - in a user message, text, image and document blocks one [`Event::User`] per run of them
//!   (images and documents empty parts), and each `tool_result` an [`Event::ToolReturn`]
//!   (`is_error` an error return; content a string, text blocks joined by a newline, or the JSON
//!   text of blocks that are not all text);
//! - in an assistant message, an [`Event::LlmCall`] first (its `model`, and its `usage` as
//!   tokens: input tokens, cache reads and cache writes are the prompt's), then text blocks one
//!   [`Event::Assistant`] per run of them, `tool_use` and `server_tool_use` an [`Event::ToolCall`]
//!   (arguments: the JSON text of `input`, byte for byte), `web_search_tool_result` and other
//!   `*_tool_result` blocks an [`Event::ToolReturn`] (their content's JSON text), `thinking` an
//!   [`Event::Reasoning`] of its text and `redacted_thinking` one of no text;
//! - any other block type an [`Event::Other`] of that type.
//!
//! The last assistant message's `stop_reason` is the run's status: `max_tokens` and `refusal`
//! are failures, every other reason a success.

use std::borrow::Cow;

use serde::Deserialize;
use serde::de::IgnoredAny;
use serde_json::value::RawValue;

use super::json::{self, Expecting, Object, Text, TextOr, first_byte, value_before};
use super::shape;
use super::{
    Content, ConvertError, Converter, Event, Format, LlmCall, RunStatus, Tokens, ToolCall,
    ToolReturn, ToolStatus, Trajectory,
};

pub struct AnthropicConverter;

/// A request body with the reply: `{"system", "messages", "response"}`.
#[derive(Deserialize)]
struct Conversation<'a> {
    #[serde(borrow, default)]
    system: Option<&'a RawValue>,
    #[serde(borrow)]
    messages: Vec<Object<Message<'a>>>,
    #[serde(borrow, default)]
    response: Option<Object<Message<'a>>>,
}

impl Expecting for Conversation<'_> {
    const WHAT: &'static str = "an object {system, messages: [...], response}";
}

/// A request message or a response message.
#[derive(Deserialize)]
pub(crate) struct Message<'a> {
    #[serde(borrow)]
    role: Text<'a>,
    #[serde(borrow, default)]
    id: Option<Text<'a>>,
    #[serde(borrow)]
    content: &'a RawValue,
    #[serde(borrow, default)]
    model: Option<Text<'a>>,
    #[serde(borrow, default)]
    stop_reason: Option<Text<'a>>,
    #[serde(default)]
    usage: Option<Object<Usage>>,
}

impl Message<'_> {
    /// Who wrote it: `user` or `assistant` in a well-formed message.
    pub(crate) fn role(&self) -> &str {
        &self.role.0
    }
}

impl Expecting for Message<'_> {
    const WHAT: &'static str = "a message object {role, content}";
}

#[derive(Deserialize)]
struct Block<'a> {
    #[serde(rename = "type", borrow)]
    kind: Text<'a>,
    #[serde(borrow, default)]
    text: Option<Text<'a>>,
    #[serde(borrow, default)]
    thinking: Option<Text<'a>>,
    #[serde(borrow, default)]
    id: Option<Text<'a>>,
    #[serde(borrow, default)]
    name: Option<Text<'a>>,
    #[serde(borrow, default)]
    input: Option<&'a RawValue>,
    #[serde(borrow, default)]
    tool_use_id: Option<Text<'a>>,
    #[serde(borrow, default)]
    content: Option<&'a RawValue>,
    #[serde(default)]
    is_error: Option<bool>,
}

impl Expecting for Block<'_> {
    const WHAT: &'static str = "a content block object {type, ...}";
}

#[derive(Deserialize)]
struct Usage {
    input_tokens: u64,
    output_tokens: u64,
    #[serde(default)]
    cache_creation_input_tokens: Option<u64>,
    #[serde(default)]
    cache_read_input_tokens: Option<u64>,
}

impl Expecting for Usage {
    const WHAT: &'static str = "a usage object {input_tokens, output_tokens, ...}";
}

/// What tells a conversation object from an OpenAI `{"messages"}` body without reading it all.
#[derive(Deserialize)]
struct Head<'a> {
    #[serde(borrow, default)]
    messages: Option<&'a RawValue>,
    #[serde(default)]
    response: Option<IgnoredAny>,
    #[serde(default)]
    system: Option<IgnoredAny>,
}

impl Converter for AnthropicConverter {
    fn detect(&self, raw: &RawValue) -> bool {
        match first_byte(raw) {
            Some(b'{') => {
                value_before(raw, "type", &["messages", "steps", "input", "output"])
                    .is_some_and(|kind| kind.get() == "\"message\"")
                    || serde_json::from_str::<Head>(raw.get()).is_ok_and(|head| {
                        head.messages.is_some_and(|messages| {
                            head.response.is_some()
                                || head.system.is_some()
                                || shape::message_list_format(messages) == Some(Format::Anthropic)
                        })
                    })
            }
            Some(b'[') => shape::message_list_format(raw) == Some(Format::Anthropic),
            _ => false,
        }
    }

    fn convert<'a>(&self, raw: &'a RawValue) -> Result<Trajectory<'a>, ConvertError> {
        let at_root = || "trajectory".to_string();
        let mut conversion = Conversion::default();
        if first_byte(raw) == Some(b'[') {
            let messages: Vec<Object<Message>> = json::parse(raw.get(), at_root)?;
            conversion.messages(messages, "trajectory")?;
        } else if value_before(raw, "type", &["messages"]).is_some() {
            let Object(message): Object<Message> = json::parse(raw.get(), at_root)?;
            conversion.message(message, "trajectory")?;
        } else {
            let Object(log): Object<Conversation> = json::parse(raw.get(), at_root)?;
            if let Some(system) = log.system {
                conversion.system(system, "trajectory.system")?;
            }
            conversion.messages(log.messages, "trajectory.messages")?;
            if let Some(Object(response)) = log.response {
                conversion.message(response, "trajectory.response")?;
            }
        }
        Ok(conversion.finish(Format::Anthropic))
    }
}

/// Messages converted in order into one turn.
#[derive(Default)]
pub(crate) struct Conversion<'a> {
    events: Vec<Event<'a>>,
    status: RunStatus,
    usage: Option<Tokens>,
    /// The `id` of the last assistant message: a response recorded in several pieces (one per
    /// block, as Claude Code writes it) is one model call.
    response: Option<Cow<'a, str>>,
}

impl<'a> Conversion<'a> {
    fn messages(
        &mut self,
        messages: Vec<Object<Message<'a>>>,
        base: &str,
    ) -> Result<(), ConvertError> {
        self.events.reserve(messages.len() * 2);
        for (index, Object(message)) in messages.into_iter().enumerate() {
            self.message(message, &format!("{base}[{index}]"))?;
        }
        Ok(())
    }

    fn system(&mut self, raw: &'a RawValue, at: &str) -> Result<(), ConvertError> {
        let text = match blocks_or_text(raw, at)? {
            TextOr::Text(text) => text,
            TextOr::Other(blocks) => Cow::Owned(
                blocks
                    .into_iter()
                    .enumerate()
                    .map(|(i, Object(block))| text_of(block, &format!("{at}[{i}]")))
                    .collect::<Result<Vec<_>, _>>()?
                    .join("\n"),
            ),
        };
        self.events.push(Event::System { text });
        Ok(())
    }

    /// An event a message is not (a record of another kind), kept by name.
    pub(crate) fn other(&mut self, kind: Cow<'a, str>) {
        self.events.push(Event::Other { kind });
    }

    pub(crate) fn message(&mut self, message: Message<'a>, at: &str) -> Result<(), ConvertError> {
        let user = match &*message.role.0 {
            "user" => true,
            "assistant" => false,
            other => {
                return Err(ConvertError(format!(
                    "{at}.role: unknown role `{other}` (expected user or assistant; the system \
                     prompt is the conversation's `system`)"
                )));
            }
        };
        let id = message.id.map(|id| id.0);
        let same_response = !user && id.is_some() && id == self.response;
        if !user {
            self.response = id;
        }
        if !user && !same_response {
            let tokens = message.usage.map(|Object(u)| {
                let prompt = (u.input_tokens)
                    .saturating_add(u.cache_creation_input_tokens.unwrap_or(0))
                    .saturating_add(u.cache_read_input_tokens.unwrap_or(0));
                Tokens {
                    prompt_tokens: prompt,
                    completion_tokens: u.output_tokens,
                    total_tokens: prompt.saturating_add(u.output_tokens),
                }
            });
            if let Some(tokens) = tokens {
                tokens.add_to(&mut self.usage);
            }
            self.events.push(Event::LlmCall(LlmCall {
                model: message.model.map(|m| m.0),
                tokens,
                ..LlmCall::default()
            }));
        }
        if let Some(reason) = &message.stop_reason {
            self.status = match &*reason.0 {
                "max_tokens" | "refusal" => RunStatus::Failure,
                _ => RunStatus::Success,
            };
        }
        let at = format!("{at}.content");
        let blocks = match blocks_or_text(message.content, &at)? {
            TextOr::Text(text) => {
                let content = Content::Text(text);
                self.events.push(if user {
                    Event::User { content }
                } else {
                    Event::Assistant { content }
                });
                return Ok(());
            }
            TextOr::Other(blocks) => blocks,
        };
        let mut parts: Vec<Cow<'a, str>> = Vec::new();
        for (index, Object(block)) in blocks.into_iter().enumerate() {
            let at = format!("{at}[{index}]");
            let kind = &*block.kind.0;
            if matches!(kind, "text" | "image" | "document") {
                parts.push(if kind == "text" {
                    text_of(block, &at)?
                } else {
                    Cow::Borrowed("")
                });
                continue;
            }
            self.flush(&mut parts, user);
            let event = self.block(block, &at)?;
            self.events.push(event);
        }
        self.flush(&mut parts, user);
        Ok(())
    }

    /// The run of text parts read so far, as one message.
    fn flush(&mut self, parts: &mut Vec<Cow<'a, str>>, user: bool) {
        if parts.is_empty() {
            return;
        }
        let content = Content::Parts(std::mem::take(parts));
        self.events.push(if user {
            Event::User { content }
        } else {
            Event::Assistant { content }
        });
    }

    /// A block that is not message text.
    fn block(&mut self, block: Block<'a>, at: &str) -> Result<Event<'a>, ConvertError> {
        let kind = block.kind.0;
        Ok(match &*kind {
            "tool_use" | "server_tool_use" => Event::ToolCall(ToolCall {
                id: required(block.id, at, "id", &kind)?,
                name: required(block.name, at, "name", &kind)?,
                arguments: block
                    .input
                    .map(RawValue::get)
                    .ok_or_else(|| json::missing(at, "input", &format!("a {kind} block")))?
                    .into(),
                failed: false,
            }),
            "tool_result" => {
                let status = if block.is_error == Some(true) {
                    ToolStatus::Error
                } else {
                    ToolStatus::Success
                };
                let (content, json) = match block.content {
                    None => (Cow::Borrowed(""), false),
                    Some(raw) => tool_result_text(raw, &format!("{at}.content"))?,
                };
                Event::ToolReturn(ToolReturn {
                    call_id: required(block.tool_use_id, at, "tool_use_id", &kind)?,
                    content: content.into(),
                    status,
                    json,
                })
            }
            "thinking" => Event::Reasoning {
                text: required(block.thinking, at, "thinking", &kind)?,
            },
            "redacted_thinking" => Event::Reasoning {
                text: Cow::Borrowed(""),
            },
            result if result.ends_with("_tool_result") => {
                let content = block
                    .content
                    .ok_or_else(|| json::missing(at, "content", &format!("a {result} block")))?;
                let error = content.get().contains("_tool_result_error\"");
                Event::ToolReturn(ToolReturn {
                    call_id: required(block.tool_use_id, at, "tool_use_id", result)?,
                    content: content.get().into(),
                    status: if error {
                        ToolStatus::Error
                    } else {
                        ToolStatus::Success
                    },
                    json: true,
                })
            }
            _ => Event::Other { kind },
        })
    }

    pub(crate) fn finish(self, format: Format) -> Trajectory<'a> {
        Trajectory {
            format,
            turns: vec![self.events],
            status: self.status,
            usage: self.usage,
            ..Trajectory::default()
        }
    }
}

/// Message content as recorded: a string or a list of blocks.
fn blocks_or_text<'a>(
    raw: &'a RawValue,
    at: &str,
) -> Result<TextOr<'a, Vec<Object<Block<'a>>>>, ConvertError> {
    json::text_or(raw, at)
}

/// A tool result's content as text: a string as is, text blocks joined by a newline, other
/// blocks (images, documents) as the JSON text of the list (then `true`).
fn tool_result_text<'a>(raw: &'a RawValue, at: &str) -> Result<(Cow<'a, str>, bool), ConvertError> {
    match blocks_or_text(raw, at)? {
        TextOr::Text(text) => Ok((text, false)),
        TextOr::Other(blocks) if blocks.iter().all(|Object(b)| b.kind.0 == "text") => {
            let texts = blocks
                .into_iter()
                .enumerate()
                .map(|(i, Object(block))| text_of(block, &format!("{at}[{i}]")))
                .collect::<Result<Vec<_>, _>>()?;
            Ok((Cow::Owned(texts.join("\n")), false))
        }
        TextOr::Other(_) => Ok((Cow::Borrowed(raw.get()), true)),
    }
}

fn text_of<'a>(block: Block<'a>, at: &str) -> Result<Cow<'a, str>, ConvertError> {
    if block.kind.0 != "text" {
        return Err(ConvertError(format!(
            "{at}.type: `{}` where a text block belongs (expected {{\"type\": \"text\", \"text\": \
             ...}})",
            block.kind.0
        )));
    }
    required(block.text, at, "text", "text")
}

/// A field a block of type `kind` must carry.
fn required<'a>(
    field: Option<Text<'a>>,
    at: &str,
    name: &str,
    kind: &str,
) -> Result<Cow<'a, str>, ConvertError> {
    json::required(field, at, name, &format!("a {kind} block"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::input::trajectory::detect;
    use crate::input::trajectory::testing::recorded_file as data;
    use crate::input::trajectory::testing::{convert_as, tokens};

    fn anthropic(text: &str) -> Result<Trajectory<'_>, ConvertError> {
        convert_as(text, Format::Anthropic)
    }

    #[test]
    fn a_conversation_named_another_format_is_refused_naming_its_own() {
        let conversation = r#"{"model": "claude-x", "system": "Be brief.",
            "messages": [{"role": "user", "content": "hi"}],
            "response": {"type": "message", "role": "assistant",
                         "content": [{"type": "text", "text": "hello"}]}}"#;
        let theirs = "its shape is anthropic's: set `format: anthropic`, or leave `format:` out";
        assert_eq!(
            convert_as(conversation, Format::Evaldeck).unwrap_err().0,
            format!(
                "trajectory: no `input`, `output` or `steps`, so it is not a recording in the \
                 evaldeck format; {theirs}"
            )
        );
        assert_eq!(
            convert_as(conversation, Format::OpenAi).unwrap_err().0,
            format!(
                "trajectory: `system` beside `messages`, which a chat request never has, so it \
                 is not a recording in the openai format; {theirs}"
            )
        );
        let reply_only = conversation.replace(r#""system": "Be brief.","#, "");
        assert!(
            convert_as(&reply_only, Format::OpenAi)
                .unwrap_err()
                .0
                .starts_with("trajectory: `response` beside `messages`"),
        );
        // A shape no format has says only what it lacks.
        assert_eq!(
            convert_as(r#"{"id": "x"}"#, Format::Evaldeck)
                .unwrap_err()
                .0,
            "trajectory: no `input`, `output` or `steps`, so it is not a recording in the \
             evaldeck format"
        );
        assert!(anthropic(conversation).is_ok());
    }

    fn arguments(event: &Event) -> serde_json::Value {
        match event {
            Event::ToolCall(call) => serde_json::from_str(&call.arguments.text()).unwrap(),
            other => panic!("not a tool call: {other:?}"),
        }
    }

    /// The request's system prompt and messages with the reply, as the anthropic SDK dumps
    /// them.
    #[test]
    fn converts_a_conversation() {
        let text = data("anthropic-conversation.json");
        let trajectory = anthropic(&text).unwrap();
        let events = &trajectory.turns[0];
        assert_eq!(trajectory.format, Format::Anthropic);
        assert_eq!(trajectory.status, RunStatus::Success);
        assert_eq!(trajectory.usage, Some(tokens(80, 9)));
        assert_eq!(events.len(), 7, "{events:?}");
        assert_eq!(
            events[..3],
            [
                Event::System {
                    text: "You are a weather bot.".into()
                },
                Event::User {
                    content: Content::Text("What is the weather in Paris?".into())
                },
                Event::LlmCall(LlmCall::default()),
            ]
        );
        let Event::ToolCall(call) = &events[3] else {
            panic!("{:?}", events[3]);
        };
        assert_eq!((&*call.id, &*call.name), ("toolu_1", "get_weather"));
        assert_eq!(arguments(&events[3]), serde_json::json!({"city": "Paris"}));
        assert_eq!(
            events[4..],
            [
                Event::ToolReturn(ToolReturn {
                    call_id: "toolu_1".into(),
                    content: "18C, sunny".into(),
                    status: ToolStatus::Success,
                    json: false,
                }),
                Event::LlmCall(LlmCall {
                    model: Some("claude-sonnet-4-5-20250929".into()),
                    tokens: Some(tokens(80, 9)),
                    ..LlmCall::default()
                }),
                Event::Assistant {
                    content: Content::Parts(vec!["Paris: 18C and sunny.".into()])
                },
            ][..]
        );
        assert_eq!(
            trajectory.final_output().as_deref(),
            Some("Paris: 18C and sunny.")
        );
        assert_eq!(
            detect(serde_json::from_str(&text).unwrap()),
            Some(Format::Anthropic)
        );
    }

    /// A response with thinking, redacted thinking, text and a tool call.
    #[test]
    fn converts_a_response_message() {
        let text = data("anthropic-message.json");
        let trajectory = anthropic(&text).unwrap();
        let events = &trajectory.turns[0];
        assert_eq!(
            events[..4],
            [
                Event::LlmCall(LlmCall {
                    model: Some("claude-sonnet-4-5-20250929".into()),
                    tokens: Some(tokens(50, 12)),
                    ..LlmCall::default()
                }),
                Event::Reasoning {
                    text: "The user wants Paris; call the tool.".into()
                },
                Event::Reasoning { text: "".into() },
                Event::Assistant {
                    content: Content::Parts(vec!["Let me look.".into()])
                },
            ][..]
        );
        assert_eq!(arguments(&events[4]), serde_json::json!({"city": "Paris"}));
        assert_eq!(events.len(), 5);
        assert_eq!(trajectory.tools_called(), ["get_weather"]);
        assert_eq!(trajectory.step_count(), 4);
        assert_eq!(
            detect(serde_json::from_str(&text).unwrap()),
            Some(Format::Anthropic)
        );
    }

    #[test]
    fn blocks_of_every_kind_in_a_message_list() {
        let trajectory = anthropic(
            r#"[{"role": "user", "content": [
                  {"type": "text", "text": "Look:"},
                  {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "AA=="}},
                  {"type": "tool_result", "tool_use_id": "t1", "is_error": true,
                   "content": [{"type": "text", "text": "no"}, {"type": "text", "text": "such file"}]},
                  {"type": "tool_result", "tool_use_id": "t2",
                   "content": [{"type": "image", "source": {}}]}]},
                {"role": "assistant", "stop_reason": "max_tokens",
                 "usage": {"input_tokens": 10, "output_tokens": 5, "cache_read_input_tokens": 90},
                 "content": [
                  {"type": "server_tool_use", "id": "s1", "name": "web_search", "input": {"query":"q"}},
                  {"type": "web_search_tool_result", "tool_use_id": "s1",
                   "content": {"type": "web_search_tool_result_error", "error_code": "unavailable"}},
                  {"type": "container_upload", "file_id": "f"},
                  {"type": "text", "text": "a"}, {"type": "text", "text": "b"}]}]"#,
        )
        .unwrap();
        assert_eq!(trajectory.status, RunStatus::Failure);
        assert_eq!(trajectory.usage, Some(tokens(100, 5)));
        assert_eq!(
            trajectory.turns[0],
            vec![
                Event::User {
                    content: Content::Parts(vec!["Look:".into(), "".into()])
                },
                Event::ToolReturn(ToolReturn {
                    call_id: "t1".into(),
                    content: "no\nsuch file".into(),
                    status: ToolStatus::Error,
                    json: false,
                }),
                Event::ToolReturn(ToolReturn {
                    call_id: "t2".into(),
                    content: r#"[{"type": "image", "source": {}}]"#.into(),
                    status: ToolStatus::Success,
                    json: true,
                }),
                Event::LlmCall(LlmCall {
                    tokens: Some(tokens(100, 5)),
                    ..LlmCall::default()
                }),
                Event::ToolCall(ToolCall {
                    id: "s1".into(),
                    name: "web_search".into(),
                    arguments: r#"{"query":"q"}"#.into(),
                    failed: false,
                }),
                Event::ToolReturn(ToolReturn {
                    call_id: "s1".into(),
                    content:
                        r#"{"type": "web_search_tool_result_error", "error_code": "unavailable"}"#
                            .into(),
                    status: ToolStatus::Error,
                    json: true,
                }),
                Event::Other {
                    kind: "container_upload".into()
                },
                Event::Assistant {
                    content: Content::Parts(vec!["a".into(), "b".into()])
                },
            ]
        );
    }

    #[test]
    fn malformed_recordings_name_the_path() {
        let cases = [
            (
                r#"{"messages": [{"role": "system", "content": "x"}], "response": null}"#,
                "trajectory.messages[0].role: unknown role `system` (expected user or \
                 assistant; the system prompt is the conversation's `system`)",
            ),
            (
                r#"{"messages": [{"role": "user"}]}"#,
                "trajectory.messages[0]: missing field `content`",
            ),
            (
                r#"{"type": "message", "role": "assistant", "content": [{"type": "tool_use", "id": "t", "name": "f"}]}"#,
                "trajectory.content[0].input: missing; a tool_use block requires it",
            ),
            (
                r#"[{"role": "user", "content": [{"type": "tool_result", "content": "x"}]}]"#,
                "trajectory[0].content[0].tool_use_id: missing; a tool_result block requires it",
            ),
            (
                r#"[{"role": "assistant", "content": [{"type": "thinking", "signature": "s"}]}]"#,
                "trajectory[0].content[0].thinking: missing; a thinking block requires it",
            ),
            (
                r#"[{"role": "assistant", "content": [{"text": "x"}]}]"#,
                "trajectory[0].content[0]: missing field `type`",
            ),
            (
                r#"{"system": [{"type": "image"}], "messages": []}"#,
                "trajectory.system[0].type: `image` where a text block belongs (expected \
                 {\"type\": \"text\", \"text\": ...})",
            ),
            (
                r#"{"type": "message", "role": "assistant", "content": [], "usage": {"output_tokens": 1}}"#,
                "trajectory.usage: missing field `input_tokens`",
            ),
            (
                r#"[{"role": "user", "content": 3}]"#,
                "trajectory[0].content: invalid type: integer `3`, expected a sequence",
            ),
        ];
        for (input, expected) in cases {
            assert_eq!(anthropic(input).unwrap_err().0, expected, "for {input}");
        }
    }

    #[test]
    fn detects_anthropic_shapes_and_leaves_chat_to_openai() {
        let detect_text = |text: &str| detect(serde_json::from_str(text).unwrap());
        for anthropic in [
            r#"{"id": "m", "type": "message", "role": "assistant", "content": []}"#,
            r#"{"messages": [{"role": "user", "content": "x"}], "response": {}}"#,
            r#"{"system": "s", "messages": []}"#,
            r#"{"messages": [{"role": "assistant", "content": [{"type": "tool_use"}]}]}"#,
            r#"[{"role": "user", "content": "x"}, {"role": "assistant", "content": [{"type": "thinking"}]}]"#,
            r#"[{"role": "user", "content": [{"type": "text", "text": "x"}, {"type": "tool_result"}]}]"#,
        ] {
            assert_eq!(
                detect_text(anthropic),
                Some(Format::Anthropic),
                "{anthropic}"
            );
        }
        for chat in [
            r#"{"model": "m", "messages": [{"role": "user", "content": "x"}]}"#,
            r#"[{"role": "user", "content": [{"type": "text", "text": "x"}]}]"#,
            r#"[{"role": "user", "content": [{"type": "image_url", "image_url": {}}]}]"#,
        ] {
            assert_eq!(detect_text(chat), Some(Format::OpenAi), "{chat}");
        }
    }
}
