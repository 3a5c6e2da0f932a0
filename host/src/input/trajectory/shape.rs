//! Telling apart the recordings that are lists of role-tagged messages: OpenAI chat messages,
//! OpenAI Responses items and Anthropic messages share `role` and `content`, and only the types
//! of their items and content parts show which one a list is.
//!
//! The rule, over every item of the list:
//! - an item whose `type` is not `message` (`function_call`, `reasoning`, ...), or a content part
//!   of a Responses-only type (`input_text`, `output_text`, `input_image`, `input_file`): Responses;
//! - else a content block of an Anthropic-only type (`tool_use`, `tool_result`, `thinking`,
//!   `redacted_thinking`, `server_tool_use`, `web_search_tool_result`, `image`, `document`):
//!   Anthropic;
//! - else an item with `type: "message"`: Responses;
//! - else OpenAI chat (string content and `text` parts read the same in all three).

use serde::Deserialize;
use serde::de::IgnoredAny;
use serde_json::value::RawValue;

use super::Format;
use super::json::Text;

/// Content part types only the Responses API writes.
pub(crate) const RESPONSES_PARTS: [&str; 4] =
    ["input_text", "output_text", "input_image", "input_file"];

/// Content block types only Anthropic's Messages API writes.
pub(crate) const ANTHROPIC_BLOCKS: [&str; 8] = [
    "tool_use",
    "tool_result",
    "thinking",
    "redacted_thinking",
    "server_tool_use",
    "web_search_tool_result",
    "image",
    "document",
];

#[derive(Deserialize)]
struct Item<'a> {
    #[serde(rename = "type", borrow, default)]
    kind: Option<Text<'a>>,
    #[serde(borrow, default)]
    content: Option<Parts<'a>>,
}

/// Content: a string (no parts) or a list of parts, of which only the type is read.
struct Parts<'a>(Vec<Option<Text<'a>>>);

impl<'de: 'a, 'a> Deserialize<'de> for Parts<'a> {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        struct Part<'a> {
            #[serde(rename = "type", borrow, default)]
            kind: Option<Text<'a>>,
        }
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Either<'a> {
            #[serde(borrow)]
            Parts(Vec<Part<'a>>),
            Other(IgnoredAny),
        }
        Ok(match Either::deserialize(deserializer)? {
            Either::Parts(parts) => Parts(parts.into_iter().map(|p| p.kind).collect()),
            Either::Other(_) => Parts(Vec::new()),
        })
    }
}

/// The format of a list of message-like items by the rule above; `None` when `raw` is not a
/// list of objects.
pub(crate) fn message_list_format(raw: &RawValue) -> Option<Format> {
    let items: Vec<Item> = serde_json::from_str(raw.get()).ok()?;
    Some(classify(items.iter().map(|item| {
        (
            item.kind.as_ref().map(|k| &*k.0),
            item.content
                .iter()
                .flat_map(|parts| parts.0.iter().flatten().map(|k| &*k.0)),
        )
    })))
}

/// The rule above over items given as (their `type`, their content parts' types).
pub(crate) fn classify<'k, P: Iterator<Item = &'k str>>(
    items: impl Iterator<Item = (Option<&'k str>, P)>,
) -> Format {
    let mut anthropic = false;
    let mut typed_message = false;
    for (kind, parts) in items {
        match kind {
            Some("message") => typed_message = true,
            Some(_) => return Format::OpenAiResponses,
            None => {}
        }
        for part in parts {
            if RESPONSES_PARTS.contains(&part) {
                return Format::OpenAiResponses;
            }
            anthropic |= ANTHROPIC_BLOCKS.contains(&part);
        }
    }
    if anthropic {
        Format::Anthropic
    } else if typed_message {
        Format::OpenAiResponses
    } else {
        Format::OpenAi
    }
}
