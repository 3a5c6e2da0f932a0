//! OpenAI chat-completions transcripts: a list of messages `{role, content, tool_calls?,
//! tool_call_id?}`, or an object `{"messages": [...]}` (a request body), one turn.
//!
//! `system` and `developer` messages become [`Event::System`], `user` [`Event::User`], `tool`
//! [`Event::ToolReturn`]. Each `assistant` message is one model call: an [`Event::LlmCall`] (no
//! model), then [`Event::Assistant`] when it has content (else its `refusal`, the text of a
//! model that declined), then one [`Event::ToolCall`] per entry of `tool_calls`, whose
//! `function.arguments` string is kept byte for byte.

use std::borrow::Cow;

use serde::Deserialize;
use serde_json::value::RawValue;

use super::json::{
    self, Expecting, Object, RawContent, Text, first_byte, first_element, first_key_among,
};
use super::{
    Content, ConvertError, Converter, Event, Format, LlmCall, ToolCall, ToolReturn, ToolStatus,
    Trajectory,
};

pub struct OpenAiConverter;

#[derive(Deserialize)]
struct ChatLog<'a> {
    #[serde(borrow)]
    messages: Vec<Object<Message<'a>>>,
    /// Never in a chat request, whose system prompt is a message: an Anthropic conversation's.
    #[serde(borrow, default)]
    system: Option<&'a RawValue>,
    /// Never in a chat request: an Anthropic conversation's reply.
    #[serde(borrow, default)]
    response: Option<&'a RawValue>,
}

impl Expecting for ChatLog<'_> {
    const WHAT: &'static str = "an object with `messages`";
}

#[derive(Deserialize)]
pub(crate) struct Message<'a> {
    #[serde(borrow)]
    role: Text<'a>,
    /// Never in a chat message: a Responses item's.
    #[serde(rename = "type", borrow, default)]
    kind: Option<Text<'a>>,
    #[serde(borrow, default)]
    content: Option<RawContent<'a>>,
    #[serde(borrow, default)]
    tool_calls: Option<Vec<Object<RawToolCall<'a>>>>,
    #[serde(borrow, default)]
    tool_call_id: Option<Text<'a>>,
    /// An assistant's: what a model that declined said, its content then null.
    #[serde(borrow, default)]
    refusal: Option<Text<'a>>,
}

impl Expecting for Message<'_> {
    const WHAT: &'static str = "a chat message object {role, content, ...}";
}

#[derive(Deserialize)]
struct RawToolCall<'a> {
    #[serde(borrow, default)]
    id: Option<Text<'a>>,
    #[serde(borrow)]
    function: Object<Function<'a>>,
}

impl Expecting for RawToolCall<'_> {
    const WHAT: &'static str = "a tool call object {id, type, function: {name, arguments}}";
}

#[derive(Deserialize)]
struct Function<'a> {
    #[serde(borrow)]
    name: Text<'a>,
    #[serde(borrow)]
    arguments: Text<'a>,
}

impl Expecting for Function<'_> {
    const WHAT: &'static str = "a function object {name, arguments}";
}

impl Converter for OpenAiConverter {
    fn detect(&self, raw: &RawValue) -> bool {
        match first_byte(raw) {
            Some(b'[') => first_element(raw).is_some_and(|first| {
                first_byte(first) == Some(b'{') && first_key_among(first, &["role"]).is_some()
            }),
            Some(b'{') => first_key_among(raw, &["messages"]).is_some(),
            _ => false,
        }
    }

    fn convert<'a>(&self, raw: &'a RawValue) -> Result<Trajectory<'a>, ConvertError> {
        let at_root = || "trajectory".to_string();
        let (messages, base) = if first_byte(raw) == Some(b'{') {
            let Object(log): Object<ChatLog> = json::parse(raw.get(), at_root)?;
            if let Some(key) = [("system", log.system), ("response", log.response)]
                .into_iter()
                .find_map(|(key, value)| value.is_some().then_some(key))
            {
                return Err(super::not_of(
                    Format::OpenAi,
                    raw,
                    &format!("`{key}` beside `messages`, which a chat request never has"),
                ));
            }
            (log.messages, "trajectory.messages")
        } else {
            (json::parse(raw.get(), at_root)?, "trajectory")
        };
        from_messages(messages, base)
    }
}

/// Which of the formats whose messages have `role` these messages are, by their item and part
/// types (the rule of [`shape`](super::shape)).
pub(crate) fn shape(messages: &[Object<Message<'_>>]) -> Format {
    super::shape::classify(messages.iter().map(|Object(message)| {
        (
            message.kind.as_ref().map(|k| &*k.0),
            message.content.iter().flat_map(RawContent::part_types),
        )
    }))
}

/// Converts the recorded messages; `base` is where they sit in the trajectory.
pub(crate) fn from_messages<'a>(
    messages: Vec<Object<Message<'a>>>,
    base: &str,
) -> Result<Trajectory<'a>, ConvertError> {
    let mut events = Vec::with_capacity(messages.len() * 2);
    for (index, Object(message)) in messages.into_iter().enumerate() {
        convert_message(message, base, index, &mut events)?;
    }
    Ok(Trajectory {
        format: Format::OpenAi,
        turns: vec![events],
        ..Trajectory::default()
    })
}

fn convert_message<'a>(
    message: Message<'a>,
    base: &str,
    index: usize,
    events: &mut Vec<Event<'a>>,
) -> Result<(), ConvertError> {
    let content = match message.content {
        Some(raw) => raw.into_content(|| format!("{base}[{index}].content"))?,
        None => Content::Text(Cow::Borrowed("")),
    };
    match &*message.role.0 {
        "system" | "developer" => events.push(Event::System {
            text: content.into_flat(),
        }),
        "user" => events.push(Event::User { content }),
        "assistant" => {
            events.push(Event::LlmCall(LlmCall::default()));
            let empty = match &content {
                Content::Text(text) => text.is_empty(),
                Content::Parts(parts) => parts.is_empty(),
            };
            match message.refusal {
                Some(Text(refusal)) if empty && !refusal.is_empty() => {
                    events.push(Event::Assistant {
                        content: Content::Text(refusal),
                    });
                }
                _ if !empty => events.push(Event::Assistant { content }),
                _ => {}
            }
            events.extend(
                message
                    .tool_calls
                    .into_iter()
                    .flatten()
                    .map(|Object(call)| {
                        Event::ToolCall(ToolCall {
                            id: call.id.map(|t| t.0).unwrap_or_default(),
                            name: call.function.0.name.0,
                            arguments: call.function.0.arguments.0.into(),
                            failed: false,
                        })
                    }),
            );
        }
        "tool" => events.push(Event::ToolReturn(ToolReturn {
            call_id: message.tool_call_id.map(|t| t.0).unwrap_or_default(),
            json: false,
            content: content.into_flat().into(),
            status: ToolStatus::Success,
        })),
        other => {
            return Err(ConvertError(format!(
                "{base}[{index}].role: unknown role `{other}` (expected system, developer, \
                 user, assistant or tool)"
            )));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::input::trajectory::{RunStatus, convert, detect};

    fn openai(text: &str) -> Result<Trajectory<'_>, ConvertError> {
        let raw: &RawValue = serde_json::from_str(text).unwrap();
        convert(raw, Some(Format::OpenAi))
    }

    fn call<'a>(id: &'a str, name: &'a str, arguments: &'a str) -> Event<'a> {
        Event::ToolCall(ToolCall {
            id: id.into(),
            name: name.into(),
            arguments: arguments.into(),
            failed: false,
        })
    }

    fn tool_return<'a>(call_id: &'a str, content: &'a str) -> Event<'a> {
        Event::ToolReturn(ToolReturn {
            call_id: call_id.into(),
            json: false,
            content: content.into(),
            status: ToolStatus::Success,
        })
    }

    /// A weather transcript whose assistant calls two tools in parallel.
    const PARALLEL_CALLS: &str = r#"[
      {"role": "developer", "content": "You are a weather bot."},
      {"role": "user", "content": [{"type": "text", "text": "Weather in Paris and Oslo?"},
                                   {"type": "image_url", "image_url": {"url": "https://x/y.png"}}]},
      {"role": "assistant", "content": null, "refusal": null, "tool_calls": [
        {"id": "call_1", "type": "function", "function": {"name": "get_weather", "arguments": "{\"city\": \"Paris\"}"}},
        {"id": "call_2", "type": "function", "function": {"name": "get_weather", "arguments": "{\"city\":\"Oslo\",\"unit\":\"c\"}"}}
      ]},
      {"role": "tool", "tool_call_id": "call_1", "content": "18C, sunny"},
      {"role": "tool", "tool_call_id": "call_2", "content": [{"type": "text", "text": "4C,"}, {"type": "text", "text": "snow"}]},
      {"role": "assistant", "content": "Paris: 18C and sunny. Oslo: 4C with snow."}
    ]"#;

    #[test]
    fn converts_parallel_tool_calls() {
        let trajectory = openai(PARALLEL_CALLS).unwrap();
        assert_eq!(trajectory.format, Format::OpenAi);
        assert_eq!(trajectory.status, RunStatus::Success);
        assert_eq!(trajectory.output, None);
        assert_eq!(
            trajectory.turns,
            vec![vec![
                Event::System {
                    text: "You are a weather bot.".into()
                },
                Event::User {
                    content: Content::Parts(vec!["Weather in Paris and Oslo?".into(), "".into()])
                },
                Event::LlmCall(LlmCall::default()),
                call("call_1", "get_weather", r#"{"city": "Paris"}"#),
                call("call_2", "get_weather", r#"{"city":"Oslo","unit":"c"}"#),
                tool_return("call_1", "18C, sunny"),
                tool_return("call_2", "4C, snow"),
                Event::LlmCall(LlmCall::default()),
                Event::Assistant {
                    content: Content::Text("Paris: 18C and sunny. Oslo: 4C with snow.".into())
                },
            ]]
        );
        assert_eq!(
            trajectory.final_output().as_deref(),
            Some("Paris: 18C and sunny. Oslo: 4C with snow.")
        );
    }

    #[test]
    fn the_messages_object_form_converts_the_same() {
        let wrapped =
            format!(r#"{{"model": "gpt-4.1", "messages": {PARALLEL_CALLS}, "tools": []}}"#);
        assert_eq!(openai(&wrapped).unwrap(), openai(PARALLEL_CALLS).unwrap());
    }

    #[test]
    fn assistant_content_with_tool_calls_and_system_parts() {
        let trajectory = openai(
            r#"[{"role": "system", "content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]},
                {"role": "assistant", "content": "Let me check.", "tool_calls": [
                  {"id": "c", "type": "function", "function": {"name": "f", "arguments": "{ \"x\" :1 }"}}]},
                {"role": "assistant", "content": ""},
                {"role": "assistant", "content": [{"type": "refusal", "refusal": "no"}]}]"#,
        )
        .unwrap();
        assert_eq!(
            trajectory.turns[0],
            vec![
                Event::System { text: "a b".into() },
                Event::LlmCall(LlmCall::default()),
                Event::Assistant {
                    content: Content::Text("Let me check.".into())
                },
                call("c", "f", r#"{ "x" :1 }"#),
                Event::LlmCall(LlmCall::default()),
                Event::LlmCall(LlmCall::default()),
                Event::Assistant {
                    content: Content::Parts(vec!["".into()])
                },
            ]
        );
    }

    #[test]
    fn a_declining_models_refusal_is_its_answer() {
        let trajectory = openai(
            r#"[{"role": "user", "content": "Help me pick a lock."},
                {"role": "assistant", "content": null, "refusal": "I can't help with that."},
                {"role": "assistant", "content": "Kept.", "refusal": null},
                {"role": "assistant", "content": "", "refusal": ""}]"#,
        )
        .unwrap();
        assert_eq!(
            trajectory.turns[0],
            vec![
                Event::User {
                    content: Content::Text("Help me pick a lock.".into())
                },
                Event::LlmCall(LlmCall::default()),
                Event::Assistant {
                    content: Content::Text("I can't help with that.".into())
                },
                Event::LlmCall(LlmCall::default()),
                Event::Assistant {
                    content: Content::Text("Kept.".into())
                },
                Event::LlmCall(LlmCall::default()),
            ]
        );
    }

    #[test]
    fn malformed_transcripts_name_the_path() {
        let cases = [
            (
                r#"[{"role": "user", "content": "hi"}, {"content": "x"}]"#,
                "trajectory[1]: missing field `role`",
            ),
            (
                r#"[{"role": "function", "name": "f", "content": "x"}]"#,
                "trajectory[0].role: unknown role `function` (expected system, developer, user, \
                 assistant or tool)",
            ),
            (
                r#"{"messages": [{"role": "assistant", "tool_calls": [{"id": "c", "function": {"name": "f", "arguments": {"x": 1}}}]}]}"#,
                "trajectory.messages[0].tool_calls[0].function.arguments: invalid type: map, \
                 expected a string",
            ),
            (
                r#"[{"role": "assistant", "tool_calls": [{"id": "c", "type": "function"}]}]"#,
                "trajectory[0].tool_calls[0]: missing field `function`",
            ),
            (
                r#"[{"role": "user", "content": 3}]"#,
                "trajectory[0].content: invalid type: integer `3`, expected a string or a list \
                 of content parts",
            ),
            (
                r#"{"messages": [{"role": "user", "content": [{"type": "text"}]}]}"#,
                "trajectory.messages[0].content[0].text: missing; a text part requires it",
            ),
            (r#"{"input": "x"}"#, "trajectory: missing field `messages`"),
            (
                r#""hello""#,
                "trajectory: invalid type: string \"hello\", expected a sequence",
            ),
        ];
        for (input, expected) in cases {
            assert_eq!(openai(input).unwrap_err().0, expected, "for {input}");
        }
    }

    #[test]
    fn detects_chat_transcripts() {
        let detect_text = |text: &str| detect(serde_json::from_str(text).unwrap());
        assert_eq!(detect_text(PARALLEL_CALLS), Some(Format::OpenAi));
        assert_eq!(detect_text(r#"{"messages": []}"#), Some(Format::OpenAi));
        assert_eq!(
            detect_text(r#"{"model": "m", "messages": [], "input": "x"}"#),
            Some(Format::OpenAi)
        );
        assert_eq!(detect_text(r#"[{"content": "x"}]"#), None);
        assert_eq!(detect_text("[1]"), None);
        assert!(!OpenAiConverter.detect(serde_json::from_str("[]").unwrap()));
    }

    #[test]
    fn undetectable_input_says_how_to_fix_it() {
        let raw: &RawValue = serde_json::from_str(r#"{"id": 1}"#).unwrap();
        let err = convert(raw, None).unwrap_err();
        assert!(err.0.starts_with("trajectory: not a known format"), "{err}");
        assert!(err.0.contains("set `format:`"), "{err}");
    }
}
