//! A trajectory read in place, inside the row that holds it: the recorded structure of the format
//! its shape shows, parsed in the same pass as the rest of the row.
//!
//! The general path reads the trajectory as raw JSON text, detects its format from that text and
//! then parses it again with the format's converter: every byte of it is scanned two to four
//! times. [`Inline`] settles the format from the shape as the parser meets it (a list of lists is
//! Letta, a list of objects OpenAI, an object whose first decisive key is `steps`, `output` or
//! `input` an evaldeck trace) and keeps the same structure the converter would have parsed, so
//! converting it gives the same trajectory. The fields of a Letta message whose shape depends on
//! its type, which the converter keeps raw until it knows the type, are read typed here. What the
//! shape alone cannot settle (an OpenAI `{"messages": ...}` object, a shape no format has), a
//! structure that does not parse, or such a field in another shape is a parse error here, and the
//! caller takes the general path, whose conversion and errors are the authoritative ones.

use std::fmt;

use serde::de::{self, DeserializeSeed, MapAccess, SeqAccess, Visitor};
use serde::{Deserialize, Deserializer};

use super::json::{Object, Text};
use super::{ConvertError, Format, Trajectory, evaldeck, letta, openai};
use crate::input::fast::scan::Scanner;

/// A trajectory's recorded structure, with the format it was read as.
pub struct Inline<'a>(Structure<'a>);

enum Structure<'a> {
    Letta(Vec<letta::Turn<'a, letta::InPlace>>),
    /// Converted as the [`Scanner`] read it.
    LettaConverted(Result<Trajectory<'a>, ConvertError>),
    OpenAi(Vec<Object<openai::Message<'a>>>),
    Evaldeck(evaldeck::Trace<'a>),
    /// Converted as the [`Scanner`] read it.
    EvaldeckConverted(Result<Trajectory<'a>, ConvertError>),
}

impl<'a> Inline<'a> {
    pub fn format(&self) -> Format {
        match self.0 {
            Structure::Letta(_) | Structure::LettaConverted(_) => Format::Letta,
            Structure::OpenAi(_) => Format::OpenAi,
            Structure::Evaldeck(_) | Structure::EvaldeckConverted(_) => Format::Evaldeck,
        }
    }

    /// The converted trajectory, or `None` when `format` is forced and is not the one the shape
    /// showed (the forced format's converter must then read the raw text).
    pub fn convert(self, format: Option<Format>) -> Option<Result<Trajectory<'a>, ConvertError>> {
        if format.is_some_and(|forced| forced != self.format()) {
            return None;
        }
        // Anthropic messages and Responses items have `role` too: their block and item types,
        // which a chat message never has, leave them to detection.
        if let Structure::OpenAi(messages) = &self.0
            && format.is_none()
            && openai::shape(messages) != Format::OpenAi
        {
            return None;
        }
        Some(match self.0 {
            Structure::Letta(turns) => letta::from_turns(turns),
            Structure::LettaConverted(converted) => converted,
            Structure::OpenAi(messages) => openai::from_messages(messages, "trajectory"),
            Structure::Evaldeck(trace) => evaldeck::from_trace(trace),
            Structure::EvaldeckConverted(converted) => converted,
        })
    }

    /// A Letta trajectory (a list of turns) or an evaldeck trace read by the [`Scanner`], which
    /// leaves every other shape to serde.
    pub fn scan(scanner: &mut Scanner<'a>) -> Option<Inline<'a>> {
        let structure = if scanner.peek()? == b'{' {
            Structure::EvaldeckConverted(evaldeck::Trace::scan(scanner)?)
        } else {
            Structure::LettaConverted(letta::scan_trajectory(scanner)?)
        };
        Some(Inline(structure))
    }
}

impl<'de> Deserialize<'de> for Inline<'de> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(ShapeVisitor).map(Inline)
    }
}

struct ShapeVisitor;

impl<'de> Visitor<'de> for ShapeVisitor {
    type Value = Structure<'de>;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a recorded trajectory")
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        match seq.next_element::<First>()? {
            None => Ok(Structure::Letta(Vec::new())),
            Some(First::Turn(turn)) => {
                let mut turns = vec![turn];
                while let Some(turn) = seq.next_element()? {
                    turns.push(turn);
                }
                Ok(Structure::Letta(turns))
            }
            Some(First::Message(message)) => {
                let mut messages = vec![Object(message)];
                while let Some(message) = seq.next_element()? {
                    messages.push(message);
                }
                Ok(Structure::OpenAi(messages))
            }
        }
    }

    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Self::Value, A::Error> {
        let mut keys = DecisiveKey { map, first: None };
        let trace = evaldeck::Trace::deserialize(de::value::MapAccessDeserializer::new(&mut keys))?;
        if evaldeck::is_trace(keys.first) {
            Ok(Structure::Evaldeck(trace))
        } else {
            Err(de::Error::custom("not an evaldeck trace"))
        }
    }
}

/// The first element of a list trajectory: a Letta turn or an OpenAI message.
enum First<'a> {
    Turn(letta::Turn<'a, letta::InPlace>),
    Message(openai::Message<'a>),
}

impl<'de> Deserialize<'de> for First<'de> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct FirstVisitor;

        impl<'de> Visitor<'de> for FirstVisitor {
            type Value = First<'de>;

            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a list of messages or a message object")
            }

            fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Self::Value, A::Error> {
                Deserialize::deserialize(de::value::SeqAccessDeserializer::new(seq))
                    .map(First::Turn)
            }

            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Self::Value, A::Error> {
                Deserialize::deserialize(de::value::MapAccessDeserializer::new(map))
                    .map(First::Message)
            }
        }

        deserializer.deserialize_any(FirstVisitor)
    }
}

/// A map read through, noting the first of the keys that tell an evaldeck trace from an OpenAI
/// chat log (the rule of `EvaldeckConverter::detect`).
struct DecisiveKey<A> {
    map: A,
    first: Option<&'static str>,
}

impl<'de, A: MapAccess<'de>> MapAccess<'de> for &mut DecisiveKey<A> {
    type Error = A::Error;

    fn next_key_seed<K: DeserializeSeed<'de>>(
        &mut self,
        seed: K,
    ) -> Result<Option<K::Value>, A::Error> {
        let Some(Text(key)) = self.map.next_key::<Text<'de>>()? else {
            return Ok(None);
        };
        if self.first.is_none() {
            self.first = evaldeck::DECISIVE_KEYS
                .into_iter()
                .find(|decisive| *decisive == key);
        }
        match key {
            std::borrow::Cow::Borrowed(key) => seed
                .deserialize(de::value::BorrowedStrDeserializer::new(key))
                .map(Some),
            std::borrow::Cow::Owned(key) => seed
                .deserialize(de::value::StringDeserializer::new(key))
                .map(Some),
        }
    }

    fn next_value_seed<V: DeserializeSeed<'de>>(&mut self, seed: V) -> Result<V::Value, A::Error> {
        self.map.next_value_seed(seed)
    }

    fn size_hint(&self) -> Option<usize> {
        self.map.size_hint()
    }
}

#[cfg(test)]
mod tests {
    use serde_json::value::RawValue;

    use super::*;
    use crate::input::trajectory::convert;

    /// Read in place, `text` gives what the general path gives, or is left to it.
    fn same_as_general(text: &str, format: Option<Format>) -> bool {
        let general = convert(serde_json::from_str::<&RawValue>(text).unwrap(), format);
        match serde_json::from_str::<Inline>(text) {
            Ok(inline) => match inline.convert(format) {
                Some(converted) => {
                    assert_eq!(converted, general, "{text}");
                    true
                }
                None => false,
            },
            Err(_) => false,
        }
    }

    #[test]
    fn shapes_settle_the_format_as_detection_does() {
        let letta = r#"[[{"message_type": "user_message", "content": "hi"},
            {"message_type": "assistant_message", "content": [{"type": "text", "text": "yo"}]}]]"#;
        let openai =
            r#"[{"role": "user", "content": "hi"}, {"role": "assistant", "content": "yo"}]"#;
        let evaldeck = r#"{"id": "t", "input": "hi", "output": "yo", "steps": [
            {"type": "tool_call", "tool_name": "f", "tool_args": {"a": 1}, "tool_result": "r"}]}"#;
        for (text, format) in [
            (letta, Format::Letta),
            ("[]", Format::Letta),
            ("[[], []]", Format::Letta),
            (openai, Format::OpenAi),
            (evaldeck, Format::Evaldeck),
        ] {
            assert!(same_as_general(text, None), "{text}");
            assert!(same_as_general(text, Some(format)), "{text}");
            assert_eq!(
                serde_json::from_str::<Inline>(text).unwrap().format(),
                format
            );
        }
        // A forced format the shape does not show is left to that format's converter.
        assert!(!same_as_general("[]", Some(Format::OpenAi)));
        assert!(!same_as_general(evaldeck, Some(Format::OpenAi)));
    }

    #[test]
    fn what_the_shape_cannot_settle_is_left_to_the_general_path() {
        for text in [
            // An OpenAI request body, and objects with no decisive key or `messages` first.
            r#"{"messages": [{"role": "user", "content": "hi"}]}"#,
            r#"{"id": "t"}"#,
            r#"{"messages": [], "input": "hi"}"#,
            // Messages without a role, scalars, and structures that do not parse.
            r#"[{"content": "hi"}]"#,
            "[1]",
            r#""text""#,
            r#"[[{"message_type": 3}]]"#,
            r#"{"steps": 3}"#,
        ] {
            assert!(!same_as_general(text, None), "{text}");
        }
        // A decisive key after others still settles it; an escaped key counts by its value.
        assert!(same_as_general(
            r#"{"id": "t", "status": "success", "outp\u0075t": "yo", "messages": 1}"#,
            None
        ));
    }

    #[test]
    fn role_lists_of_other_formats_are_left_to_detection() {
        let anthropic = r#"[{"role": "user", "content": "hi"}, {"role": "assistant",
            "content": [{"type": "tool_use", "id": "t", "name": "f", "input": {}}]}]"#;
        let responses = r#"[{"role": "user", "content": "hi"}, {"type": "message",
            "role": "assistant", "content": [{"type": "output_text", "text": "yo"}]}]"#;
        for (text, format) in [
            (anthropic, Format::Anthropic),
            (responses, Format::OpenAiResponses),
        ] {
            assert!(!same_as_general(text, None), "{text}");
            let raw = serde_json::from_str::<&RawValue>(text).unwrap();
            assert_eq!(convert(raw, None).unwrap().format, format);
            // Read as chat messages in place only when the suite names that format.
            assert!(same_as_general(text, Some(Format::OpenAi)), "{text}");
        }
        // Objects of theirs are no trace: the scanner leaves them to serde, and serde to
        // detection.
        for text in [
            r#"{"id": "r", "object": "response", "status": "completed", "output": [
                {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "yo"}]}]}"#,
            r#"{"id": "m", "type": "message", "role": "assistant", "content": [{"type": "text", "text": "yo"}]}"#,
        ] {
            assert!(Inline::scan(&mut Scanner::new(text)).is_none(), "{text}");
            assert!(!same_as_general(text, None), "{text}");
        }
    }

    #[test]
    fn a_field_of_another_shape_is_left_to_the_general_path() {
        // A message type no built-in reads may carry any field in any shape.
        for text in [
            r#"[[{"message_type": "stop_reason", "content": {"not": "content"}},
                 {"message_type": "user_message", "content": "hi"}]]"#,
            r#"[[{"message_type": "approval_response_message", "reasoning": ["r"]}]]"#,
        ] {
            assert!(serde_json::from_str::<Inline>(text).is_err(), "{text}");
            let general = convert(serde_json::from_str::<&RawValue>(text).unwrap(), None);
            assert!(general.is_ok(), "{text}");
        }
        // The same messages with fields of the shapes read are converted in place; `tool_call`
        // stays raw, and is read only when `tool_calls` is empty.
        assert!(same_as_general(
            r#"[[{"message_type": "stop_reason", "content": "end"},
                 {"message_type": "tool_call_message", "tool_call": 7,
                  "tool_calls": [{"name": "f", "arguments": "{}", "tool_call_id": "c"}]},
                 {"message_type": "tool_return_message", "tool_call_id": "c",
                  "tool_return": "r\u00e9", "status": "success"},
                 {"message_type": "hidden_reasoning_message", "hidden_reasoning": null}]]"#,
            None
        ));
        // Read and refused as the general path refuses it.
        let text = r#"[[{"message_type": "tool_call_message", "tool_call": {"name": 7},
                         "tool_calls": []}]]"#;
        assert!(same_as_general(text, None));
        assert!(convert(serde_json::from_str::<&RawValue>(text).unwrap(), None).is_err());
    }

    #[test]
    fn a_scanned_trace_converts_and_fails_as_the_converter_does() {
        for (text, fails) in [
            // The run status is checked before the steps, wherever its key is.
            (
                r#"{"steps": [{"type": "nope"}], "status": "odd", "output": "o"}"#,
                true,
            ),
            // The first step that fails is the error.
            (
                r#"{"steps": [{"type": "tool_call", "status": "odd"}, {"type": "nope"}],
                    "output": "o"}"#,
                true,
            ),
            (
                r#"{"input": "i", "steps": [{"type": "llm_call", "model": "m"},
                    {"type": "tool_call", "tool_name": "f", "tool_result": "r\u00e9"}],
                    "output": "o", "status": "timeout"}"#,
                false,
            ),
        ] {
            let scanned = Inline::scan(&mut Scanner::new(text))
                .unwrap()
                .convert(None)
                .unwrap();
            assert_eq!(scanned.is_err(), fails, "{text}");
            let general = convert(serde_json::from_str::<&RawValue>(text).unwrap(), None);
            assert_eq!(scanned, general, "{text}");
        }
    }

    #[test]
    fn conversion_errors_are_the_converters_own() {
        let text = r#"[[{"content": "no type"}]]"#;
        let inline: Inline = serde_json::from_str(text).unwrap();
        assert_eq!(
            inline.convert(None).unwrap().unwrap_err(),
            convert(serde_json::from_str::<&RawValue>(text).unwrap(), None).unwrap_err()
        );
    }
}
