//! JSON plumbing shared by the converters: cheap shape checks for detection, typed borrowed
//! parsing whose errors name the path inside the trajectory, and the content shape Letta and
//! OpenAI share.

use std::borrow::Cow;
use std::fmt;
use std::marker::PhantomData;

use serde::de::{self, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde::{Deserialize, Deserializer};
use serde_json::value::RawValue;

use super::{Content, ConvertError, ToolText};
use crate::input::fast::scan::{Scanner, Seen};

/// Parses `text` as `T`. On failure the error names the path: `at()` (where `text` sits in the
/// trajectory) followed by the path inside `text`.
pub(crate) fn parse<'a, T: Deserialize<'a>>(
    text: &'a str,
    at: impl FnOnce() -> String,
) -> Result<T, ConvertError> {
    serde_json::from_str(text).map_err(|first| {
        // Tracking the path costs an allocation per key, so only a failed parse pays for it:
        // parsing is deterministic, so the second pass fails at the same place.
        let mut de = serde_json::Deserializer::from_str(text);
        let (inner, err) = match serde_path_to_error::deserialize::<_, T>(&mut de) {
            Err(err) => (render_path(err.path()), err.into_inner()),
            Ok(_) => (String::new(), first),
        };
        ConvertError(format!("{}{inner}: {}", at(), message(&err)))
    })
}

/// A field as a recording holds it, read as `T` once its value is needed: raw text, parsed then
/// (its errors name the path), or a value already read typed in the pass over the row.
pub(crate) trait Field<'a, T> {
    fn read(self, at: impl FnOnce() -> String) -> Result<T, ConvertError>;
}

impl<'a, T: Deserialize<'a>> Field<'a, T> for &'a RawValue {
    fn read(self, at: impl FnOnce() -> String) -> Result<T, ConvertError> {
        parse(self.get(), at)
    }
}

/// A value's JSON text as recorded, parsed when it is needed. Serde finds its end as
/// `&RawValue` does; the [`Scanner`] hands it over having checked it.
#[derive(Clone, Copy)]
pub(crate) struct RawJson<'a>(pub(crate) &'a str);

impl<'de: 'a, 'a> Deserialize<'de> for RawJson<'a> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        <&RawValue>::deserialize(deserializer).map(|raw| RawJson(raw.get()))
    }
}

impl<'a, T: Deserialize<'a>> Field<'a, T> for RawJson<'a> {
    fn read(self, at: impl FnOnce() -> String) -> Result<T, ConvertError> {
        parse(self.0, at)
    }
}

/// A value read typed in the same pass as the row around it. A value of another shape fails
/// that pass, and the row is read again on the general path.
#[derive(Deserialize)]
#[serde(transparent)]
pub(crate) struct Typed<T>(pub(crate) T);

impl<T> Field<'_, T> for Typed<T> {
    fn read(self, _: impl FnOnce() -> String) -> Result<T, ConvertError> {
        Ok(self.0)
    }
}

fn render_path(path: &serde_path_to_error::Path) -> String {
    use serde_path_to_error::Segment;
    let mut out = String::new();
    for segment in path.iter() {
        match segment {
            Segment::Seq { index } => out.push_str(&format!("[{index}]")),
            Segment::Map { key } | Segment::Enum { variant: key } => {
                out.push('.');
                out.push_str(key);
            }
            Segment::Unknown => out.push_str(".?"),
        }
    }
    out
}

/// serde_json's message without its "at line L column C" suffix: positions inside a value cut
/// out of a dataset line mean nothing to the reader, the path does.
fn message(err: &serde_json::Error) -> String {
    let text = err.to_string();
    let suffix = format!(" at line {} column {}", err.line(), err.column());
    match text.strip_suffix(&suffix) {
        Some(stripped) => stripped.to_string(),
        None => text,
    }
}

/// Error text for a field that `needed_by` must carry.
pub(crate) fn missing(at: &str, field: &str, needed_by: &str) -> ConvertError {
    ConvertError(format!("{at}.{field}: missing; {needed_by} requires it"))
}

/// A field `needed_by` must carry, or the error that says so.
pub(crate) fn required<'a>(
    field: Option<Text<'a>>,
    at: &str,
    name: &str,
    needed_by: &str,
) -> Result<Cow<'a, str>, ConvertError> {
    field
        .map(|t| t.0)
        .ok_or_else(|| missing(at, name, needed_by))
}

/// A value recorded as a string or as something else (a list of parts or blocks, ...).
pub(crate) enum TextOr<'a, T> {
    Text(Cow<'a, str>),
    Other(T),
}

/// `raw` (at `at`) read as a string or as `T`.
pub(crate) fn text_or<'a, T: Deserialize<'a>>(
    raw: &'a RawValue,
    at: &str,
) -> Result<TextOr<'a, T>, ConvertError> {
    if first_byte(raw) == Some(b'"') {
        parse(raw.get(), || at.to_string()).map(|Text(text)| TextOr::Text(text))
    } else {
        parse(raw.get(), || at.to_string()).map(TextOr::Other)
    }
}

/// The first byte of a JSON value: `[`, `{`, `"`, a digit, ...
pub(crate) fn first_byte(raw: &RawValue) -> Option<u8> {
    raw.get().trim_start().bytes().next()
}

/// The first element of a JSON array, read without scanning the rest of the array.
pub(crate) fn first_element(raw: &RawValue) -> Option<&RawValue> {
    struct First<'de>(Option<&'de RawValue>);

    impl<'de> Visitor<'de> for &mut First<'de> {
        type Value = ();

        fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
            f.write_str("an array")
        }

        fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
            self.0 = seq.next_element()?;
            Err(de::Error::custom(STOP))
        }
    }

    let mut first = First(None);
    // The visitor stops the parser with an error once it has what it needs.
    let _ = serde_json::Deserializer::from_str(raw.get()).deserialize_seq(&mut first);
    first.0
}

/// The first top-level key of a JSON object that is one of `keys`. Keys are read in order and
/// the scan stops there, so a decisive key early in the object costs nothing further.
pub(crate) fn first_key_among<'k>(raw: &RawValue, keys: &[&'k str]) -> Option<&'k str> {
    scan_keys(raw, keys, None).map(|(key, _)| key)
}

/// The value of `key` in the object `raw`, as written, if it comes before all of `before`.
pub(crate) fn value_before<'r>(
    raw: &'r RawValue,
    key: &str,
    before: &[&str],
) -> Option<&'r RawValue> {
    let keys: Vec<&str> = std::iter::once(key).chain(before.iter().copied()).collect();
    scan_keys(raw, &keys, Some(key)).and_then(|(_, value)| value)
}

/// The first of `keys` in the object `raw`, with its value if it is `value_of` (reading a value
/// costs a scan of it).
fn scan_keys<'r, 'k>(
    raw: &'r RawValue,
    keys: &[&'k str],
    value_of: Option<&str>,
) -> Option<(&'k str, Option<&'r RawValue>)> {
    struct Keys<'k, 'l, 'v, 'r> {
        keys: &'l [&'k str],
        value_of: Option<&'v str>,
        found: Option<(&'k str, Option<&'r RawValue>)>,
    }

    impl<'r> Visitor<'r> for &mut Keys<'_, '_, '_, 'r> {
        type Value = ();

        fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
            f.write_str("an object")
        }

        fn visit_map<A: MapAccess<'r>>(self, mut map: A) -> Result<(), A::Error> {
            while let Some(Text(key)) = map.next_key()? {
                if let Some(&hit) = self.keys.iter().find(|k| **k == key) {
                    let value = if self.value_of == Some(hit) {
                        Some(map.next_value()?)
                    } else {
                        None
                    };
                    self.found = Some((hit, value));
                    return Err(de::Error::custom(STOP));
                }
                map.next_value::<IgnoredAny>()?;
            }
            Ok(())
        }
    }

    let mut scan = Keys {
        keys,
        value_of,
        found: None,
    };
    let _ = serde_json::Deserializer::from_str(raw.get()).deserialize_map(&mut scan);
    scan.found
}

const STOP: &str = "scan stopped early";

/// A JSON string, borrowed from the input when it has no escapes. serde borrows a bare
/// `Cow<str>` field but never one inside `Option`, which is where most of ours are.
#[derive(Debug)]
pub(crate) struct Text<'a>(pub Cow<'a, str>);

impl<'a> Text<'a> {
    /// An `Option<Text>` read by the [`Scanner`], as serde reads it.
    pub(crate) fn scan_nullable(scanner: &mut Scanner<'a>) -> Option<Option<Text<'a>>> {
        scanner.nullable(|s| s.text().map(Text))
    }
}

/// Read by serde as a [`Text`]: the general path decodes it.
impl<'de: 'a, 'a> Deserialize<'de> for ToolText<'a> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        Text::deserialize(deserializer).map(|Text(text)| ToolText::from(text))
    }
}

impl<'a> ToolText<'a> {
    /// An `Option<ToolText>` read by the [`Scanner`], as serde reads it.
    pub(crate) fn scan_nullable(scanner: &mut Scanner<'a>) -> Option<Option<ToolText<'a>>> {
        scanner.nullable(|s| s.text_or_escaped().map(ToolText::from))
    }
}

impl<'de: 'a, 'a> Deserialize<'de> for Text<'a> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct TextVisitor;

        impl<'de> Visitor<'de> for TextVisitor {
            type Value = Text<'de>;

            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a string")
            }

            fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<Self::Value, E> {
                Ok(Text(Cow::Borrowed(v)))
            }

            fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
                Ok(Text(Cow::Owned(v.to_string())))
            }

            fn visit_string<E: de::Error>(self, v: String) -> Result<Self::Value, E> {
                Ok(Text(Cow::Owned(v)))
            }
        }

        deserializer.deserialize_str(TextVisitor)
    }
}

/// A JSON object read as `T`. serde's derived structs also accept an array of their fields in
/// order; no recording is written that way, so an array where an object belongs is an error.
#[derive(Debug)]
pub(crate) struct Object<T>(pub T);

/// What an [`Object`] of this type is, for "expected ..." in errors.
pub(crate) trait Expecting {
    const WHAT: &'static str;
}

impl<'de, T: Deserialize<'de> + Expecting> Deserialize<'de> for Object<T> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct ObjectVisitor<T>(PhantomData<T>);

        impl<'de, T: Deserialize<'de> + Expecting> Visitor<'de> for ObjectVisitor<T> {
            type Value = Object<T>;

            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str(T::WHAT)
            }

            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Self::Value, A::Error> {
                T::deserialize(de::value::MapAccessDeserializer::new(map)).map(Object)
            }
        }

        deserializer.deserialize_map(ObjectVisitor(PhantomData))
    }
}

/// Message content as Letta and OpenAI record it: a string or a list of typed parts.
#[derive(Debug)]
pub(crate) enum RawContent<'a> {
    Text(Cow<'a, str>),
    Parts(Vec<Object<RawPart<'a>>>),
}

/// One content part. Only text parts carry text; images, audio and the like count as empty
/// parts so that joining the parts keeps their separators, as letta-evals' flattening does.
#[derive(Debug, Default, Deserialize)]
pub(crate) struct RawPart<'a> {
    #[serde(rename = "type", borrow, default)]
    kind: Option<Text<'a>>,
    #[serde(borrow, default)]
    text: Option<Text<'a>>,
}

impl<'a> RawPart<'a> {
    /// Read by the [`Scanner`], as serde reads it.
    fn scan(scanner: &mut Scanner<'a>) -> Option<Self> {
        let mut part = RawPart::default();
        let mut seen = Seen::default();
        scanner.object(|s, key| match key {
            "type" => seen.set(0, &mut part.kind, Text::scan_nullable(s)),
            "text" => seen.set(1, &mut part.text, Text::scan_nullable(s)),
            _ => s.skip(),
        })?;
        Some(part)
    }
}

impl Expecting for RawPart<'_> {
    const WHAT: &'static str = "a content part object such as {\"type\": \"text\", \"text\": ...}";
}

impl<'de: 'a, 'a> Deserialize<'de> for RawContent<'a> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct ContentVisitor;

        impl<'de> Visitor<'de> for ContentVisitor {
            type Value = RawContent<'de>;

            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a string or a list of content parts")
            }

            fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<Self::Value, E> {
                Ok(RawContent::Text(Cow::Borrowed(v)))
            }

            fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
                Ok(RawContent::Text(Cow::Owned(v.to_string())))
            }

            fn visit_string<E: de::Error>(self, v: String) -> Result<Self::Value, E> {
                Ok(RawContent::Text(Cow::Owned(v)))
            }

            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
                let mut parts = Vec::with_capacity(seq.size_hint().unwrap_or(2));
                while let Some(part) = seq.next_element()? {
                    parts.push(part);
                }
                Ok(RawContent::Parts(parts))
            }
        }

        deserializer.deserialize_any(ContentVisitor)
    }
}

impl<'a> RawContent<'a> {
    /// Read by the [`Scanner`], as serde reads it.
    pub(crate) fn scan(scanner: &mut Scanner<'a>) -> Option<Self> {
        if scanner.peek()? == b'[' {
            scanner
                .items(|s| RawPart::scan(s).map(Object))
                .map(RawContent::Parts)
        } else {
            scanner.text().map(RawContent::Text)
        }
    }

    /// The types its parts name (none for a string).
    pub(crate) fn part_types(&self) -> impl Iterator<Item = &str> {
        let parts = match self {
            RawContent::Text(_) => &[][..],
            RawContent::Parts(parts) => &parts[..],
        };
        parts
            .iter()
            .filter_map(|Object(part)| part.kind.as_ref().map(|k| &*k.0))
    }

    /// The canonical content. `at` names where this content sits, for the error of a text part
    /// without text.
    pub(crate) fn into_content(self, at: impl Fn() -> String) -> Result<Content<'a>, ConvertError> {
        match self {
            RawContent::Text(text) => Ok(Content::Text(text)),
            RawContent::Parts(parts) => parts
                .into_iter()
                .enumerate()
                .map(|(i, Object(part))| {
                    let is_text = part.kind.as_ref().is_none_or(|k| k.0 == "text");
                    match (is_text, part.text) {
                        (true, Some(Text(text))) => Ok(text),
                        (true, None) => {
                            Err(missing(&format!("{}[{i}]", at()), "text", "a text part"))
                        }
                        (false, _) => Ok(Cow::Borrowed("")),
                    }
                })
                .collect::<Result<_, _>>()
                .map(Content::Parts),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn raw(text: &str) -> &RawValue {
        serde_json::from_str(text).unwrap()
    }

    #[test]
    fn first_element_reads_only_the_head() {
        assert_eq!(
            first_element(raw(r#"[ {"a": 1}, [2], 3 ]"#)).map(RawValue::get),
            Some(r#"{"a": 1}"#)
        );
        assert!(first_element(raw("[]")).is_none());
        assert!(first_element(raw(r#"{"a": 1}"#)).is_none());
    }

    #[test]
    fn first_key_among_stops_at_the_first_listed_key() {
        let keys = ["input", "messages"];
        assert_eq!(
            first_key_among(
                raw(r#"{"id": {"x": [1]}, "messages": [], "input": "q"}"#),
                &keys
            ),
            Some("messages")
        );
        assert_eq!(first_key_among(raw(r#"{"id": 1}"#), &keys), None);
        assert_eq!(first_key_among(raw("[1]"), &keys), None);
        // An escaped key is compared by its value.
        assert_eq!(
            first_key_among(raw(r#"{"inp\u0075t": 1}"#), &keys),
            Some("input")
        );
    }

    #[test]
    fn text_borrows_unless_escaped() {
        let plain: Text = serde_json::from_str(r#""abc""#).unwrap();
        assert!(matches!(plain.0, Cow::Borrowed("abc")));
        let escaped: Text = serde_json::from_str(r#""a\nb""#).unwrap();
        assert!(matches!(escaped.0, Cow::Owned(ref s) if s == "a\nb"));
    }

    #[test]
    fn parse_errors_name_the_path_without_positions() {
        #[derive(Debug, Deserialize)]
        struct Outer<'a> {
            #[serde(borrow)]
            items: Vec<Option<Text<'a>>>,
        }
        impl Expecting for Outer<'_> {
            const WHAT: &'static str = "an outer object";
        }
        let ok = parse::<Outer>(r#"{"items": ["a", null]}"#, String::new).unwrap();
        assert!(matches!(
            ok.items[..],
            [Some(Text(Cow::Borrowed("a"))), None]
        ));
        let err =
            parse::<Outer>(r#"{"items": ["a", null, 3]}"#, || "trajectory.x".into()).unwrap_err();
        assert_eq!(
            err.0,
            "trajectory.x.items[2]: invalid type: integer `3`, expected a string"
        );
    }

    #[test]
    fn content_parts_keep_non_text_parts_as_empty() {
        let content: RawContent = serde_json::from_str(
            r#"[{"type": "text", "text": "a"}, {"type": "image", "source": {}}, {"text": "b"}]"#,
        )
        .unwrap();
        assert_eq!(
            content.into_content(|| "c".into()).unwrap(),
            Content::Parts(vec!["a".into(), "".into(), "b".into()])
        );
    }

    #[test]
    fn text_part_without_text_is_an_error() {
        let content: RawContent =
            serde_json::from_str(r#"[{"type": "text", "text": "a"}, {"type": "text"}]"#).unwrap();
        assert_eq!(
            content.into_content(|| "m.content".into()).unwrap_err().0,
            "m.content[1].text: missing; a text part requires it"
        );
    }
}
