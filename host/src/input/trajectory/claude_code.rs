//! Claude Code session transcripts: the records of a session file
//! (`~/.claude/projects/<project>/<sessionId>.jsonl`, one JSON object a line) as a list, one turn.
//!
//! Records are read in the order written. A `user` or `assistant` record's `message` holds an
//! Anthropic message and converts as [`anthropic`](super::anthropic) converts one; the pieces of
//! one response, which Claude Code writes a record per content block, share the message `id` and
//! are one model call (with the first piece's `usage`). Records of a subagent
//! (`isSidechain: true`) are part of the run like the others. Any other record (`summary`,
//! `system`, `file-history-snapshot`, ...) is an [`Event::Other`](super::Event::Other) of its
//! `type`.

use serde::Deserialize;
use serde_json::value::RawValue;

use super::anthropic::{Conversion, Message};
use super::json::{self, Expecting, Object, Text, first_byte, first_element, first_key_among};
use super::{ConvertError, Converter, Format, Trajectory};

pub struct ClaudeCodeConverter;

#[derive(Deserialize)]
struct Record<'a> {
    #[serde(rename = "type", borrow)]
    kind: Text<'a>,
    #[serde(borrow, default)]
    message: Option<Object<Message<'a>>>,
}

impl Expecting for Record<'_> {
    const WHAT: &'static str = "a transcript record {type, message, uuid, sessionId, ...}";
}

/// Keys every record of a transcript has, and no other format's items.
pub(crate) const RECORD_KEYS: [&str; 3] = ["sessionId", "parentUuid", "leafUuid"];

impl Converter for ClaudeCodeConverter {
    fn detect(&self, raw: &RawValue) -> bool {
        first_byte(raw) == Some(b'[')
            && first_element(raw).is_some_and(|first| {
                first_byte(first) == Some(b'{') && first_key_among(first, &RECORD_KEYS).is_some()
            })
    }

    fn convert<'a>(&self, raw: &'a RawValue) -> Result<Trajectory<'a>, ConvertError> {
        let records: Vec<Object<Record>> = json::parse(raw.get(), || "trajectory".to_string())?;
        let mut conversion = Conversion::default();
        for (index, Object(record)) in records.into_iter().enumerate() {
            let at = format!("trajectory[{index}]");
            match (&*record.kind.0, record.message) {
                (kind @ ("user" | "assistant"), Some(Object(message))) => {
                    if message.role() != kind {
                        return Err(ConvertError(format!(
                            "{at}: a record of type {kind} holds a message of role `{}`, where \
                             Claude Code writes both the same: fix or remove the record",
                            message.role()
                        )));
                    }
                    conversion.message(message, &format!("{at}.message"))?;
                }
                (kind @ ("user" | "assistant"), None) => {
                    return Err(json::missing(
                        &at,
                        "message",
                        &format!("a record of type {kind}"),
                    ));
                }
                _ => conversion.other(record.kind.0),
            }
        }
        Ok(conversion.finish(Format::ClaudeCode))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::input::trajectory::testing::{call as tool_call, convert_as, returned, tokens};
    use crate::input::trajectory::{Content, Event, LlmCall, Tokens, detect};

    fn claude_code(text: &str) -> Result<Trajectory<'_>, ConvertError> {
        convert_as(text, Format::ClaudeCode)
    }

    /// A session as Claude Code writes it: a response's text and tool call in two records
    /// sharing the message id, the tool's result, the answer, and a summary.
    const SESSION: &str = r#"[
      {"parentUuid": null, "isSidechain": false, "userType": "external", "cwd": "/w",
       "sessionId": "s1", "version": "2.0.0", "type": "user",
       "message": {"role": "user", "content": "What is in notes.txt?"},
       "uuid": "u1", "timestamp": "2026-01-01T00:00:00Z"},
      {"parentUuid": "u1", "isSidechain": false, "sessionId": "s1", "type": "assistant",
       "message": {"id": "msg_1", "type": "message", "role": "assistant", "model": "claude-x",
                   "content": [{"type": "text", "text": "Reading it."}], "stop_reason": null,
                   "usage": {"input_tokens": 10, "output_tokens": 4}},
       "requestId": "req_1", "uuid": "a1"},
      {"parentUuid": "a1", "isSidechain": false, "sessionId": "s1", "type": "assistant",
       "message": {"id": "msg_1", "type": "message", "role": "assistant", "model": "claude-x",
                   "content": [{"type": "tool_use", "id": "toolu_1", "name": "Read",
                                "input": {"file_path": "/w/notes.txt"}}],
                   "stop_reason": "tool_use", "usage": {"input_tokens": 10, "output_tokens": 4}},
       "uuid": "a2"},
      {"parentUuid": "a2", "isSidechain": false, "sessionId": "s1", "type": "user",
       "message": {"role": "user", "content": [{"tool_use_id": "toolu_1", "type": "tool_result",
                                                "content": "buy milk"}]},
       "toolUseResult": {"type": "text", "file": {"filePath": "/w/notes.txt"}}, "uuid": "u2"},
      {"parentUuid": "u2", "isSidechain": false, "sessionId": "s1", "type": "assistant",
       "message": {"id": "msg_2", "type": "message", "role": "assistant", "model": "claude-x",
                   "content": [{"type": "text", "text": "It says: buy milk."}],
                   "stop_reason": "end_turn", "usage": {"input_tokens": 30, "output_tokens": 6}},
       "uuid": "a3"},
      {"type": "summary", "summary": "Read notes", "leafUuid": "a3"}
    ]"#;

    #[test]
    fn converts_a_session() {
        let trajectory = claude_code(SESSION).unwrap();
        let call = |tokens: Tokens| {
            Event::LlmCall(LlmCall {
                model: Some("claude-x".into()),
                tokens: Some(tokens),
                ..LlmCall::default()
            })
        };
        assert_eq!(trajectory.format, Format::ClaudeCode);
        assert_eq!(trajectory.usage, Some(tokens(40, 10)));
        assert_eq!(
            trajectory.turns[0],
            vec![
                Event::User {
                    content: Content::Text("What is in notes.txt?".into())
                },
                call(tokens(10, 4)),
                Event::Assistant {
                    content: Content::Parts(vec!["Reading it.".into()])
                },
                tool_call("toolu_1", "Read", r#"{"file_path": "/w/notes.txt"}"#),
                returned("toolu_1", "buy milk", false),
                call(tokens(30, 6)),
                Event::Assistant {
                    content: Content::Parts(vec!["It says: buy milk.".into()])
                },
                Event::Other {
                    kind: "summary".into()
                },
            ]
        );
        assert_eq!(
            trajectory.final_output().as_deref(),
            Some("It says: buy milk.")
        );
        assert_eq!(
            detect(serde_json::from_str(SESSION).unwrap()),
            Some(Format::ClaudeCode)
        );
    }

    #[test]
    fn malformed_records_name_the_path() {
        for (input, expected) in [
            (
                r#"[{"sessionId": "s", "type": "assistant"}]"#,
                "trajectory[0].message: missing; a record of type assistant requires it",
            ),
            (
                r#"[{"sessionId": "s", "message": {"role": "user", "content": "x"}}]"#,
                "trajectory[0]: missing field `type`",
            ),
            (
                r#"[{"sessionId": "s", "type": "user", "message": {"role": "assistant", "content": "x"}}]"#,
                "trajectory[0]: a record of type user holds a message of role `assistant`, where \
                 Claude Code writes both the same: fix or remove the record",
            ),
            (
                r#"[{"sessionId": "s", "type": "user", "message": {"role": "user", "content": [{"type": "tool_result"}]}}]"#,
                "trajectory[0].message.content[0].tool_use_id: missing; a tool_result block \
                 requires it",
            ),
        ] {
            assert_eq!(claude_code(input).unwrap_err().0, expected, "for {input}");
        }
    }
}
