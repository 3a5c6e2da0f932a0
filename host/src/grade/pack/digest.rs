//! The host's word on a row's evaldeck recording, so that the Python interpreter need not parse
//! and check it whole on every call (`host/runtime/python/gavel_runtime/convert.py`,
//! `evaldeck_vouched`).
//!
//! The interpreter builds an evaldeck `Trace` on first read when its check (`_usual` of
//! `stubs/_gavel_model.py`, written out per class from the fields of `stubs/evaldeck/trace.py`)
//! finds the recording of the usual form, which the `Trace` cannot refuse. [`evaldeck`] decides
//! the same natively, conservatively: it says "usual" only where that check would, and nothing
//! where it is unsure (the interpreter then parses and checks the row as it always has). With
//! its word it gives where each value the interpreter may read starts in the row's text, as a
//! Python string's index, so that a field's first read parses just that value.

use std::borrow::Cow;

use serde::Deserialize;
use serde_json::value::RawValue;

/// The fields of evaldeck's `Trace`, in the stand-in's order (`stubs/evaldeck/trace.py`): the
/// digest gives each one's place in this order.
const TRACE: [&str; 11] = [
    "id",
    "input",
    "output",
    "status",
    "steps",
    "started_at",
    "completed_at",
    "duration_ms",
    "metadata",
    "framework",
    "agent_name",
];

/// The fields of evaldeck's `Step`, in the stand-in's order.
const STEP: [&str; 16] = [
    "id",
    "type",
    "timestamp",
    "status",
    "model",
    "input",
    "output",
    "tokens",
    "tool_name",
    "tool_args",
    "tool_result",
    "reasoning_text",
    "parent_id",
    "error",
    "duration_ms",
    "metadata",
];

/// What the interpreter's check takes of a field's value.
#[derive(Clone, Copy)]
enum Kind {
    /// A string, not empty (an id the model would otherwise draw at random).
    Id,
    /// A string.
    Str,
    /// A string or null.
    OptStr,
    /// One of these strings.
    Enum(&'static [&'static str]),
    /// An ISO 8601 datetime of the narrow form of [`usual_datetime`].
    Datetime,
    /// Such a datetime or null.
    OptDatetime,
    /// A number or null.
    OptNumber,
    /// An object.
    Object,
    /// An object or null.
    OptObject,
    /// An integer (a number written without fraction or exponent).
    Int,
    /// null or an object of the usual form of evaldeck's `TokenUsage`.
    OptTokens,
    /// A list of objects of the usual form of evaldeck's `Step`.
    Steps,
    /// Anything.
    Any,
}

/// Whether a field may be left out: with `Required`, the check refuses a record without it
/// (it is required, or its default is drawn when taken: an id, a clock's reading).
#[derive(Clone, Copy, PartialEq, Eq)]
enum Presence {
    Required,
    Optional,
}

use Kind::*;
use Presence::*;

const TRACE_STATUS: &[&str] = &["success", "failure", "timeout", "error"];
const STEP_TYPE: &[&str] = &["llm_call", "tool_call", "reasoning", "human_input"];
const STEP_STATUS: &[&str] = &["success", "failure", "pending"];

/// Each `Trace` field's check, in [`TRACE`]'s order.
const TRACE_KINDS: [(Kind, Presence); 11] = [
    (Id, Required),
    (Str, Required),
    (OptStr, Optional),
    (Enum(TRACE_STATUS), Optional),
    (Steps, Optional),
    (Datetime, Required),
    (OptDatetime, Optional),
    (OptNumber, Optional),
    (Object, Optional),
    (OptStr, Optional),
    (OptStr, Optional),
];

/// Each `Step` field's check, in [`STEP`]'s order.
const STEP_KINDS: [(Kind, Presence); 16] = [
    (Id, Required),
    (Enum(STEP_TYPE), Required),
    (Datetime, Required),
    (Enum(STEP_STATUS), Optional),
    (OptStr, Optional),
    (OptStr, Optional),
    (OptStr, Optional),
    (OptTokens, Optional),
    (OptStr, Optional),
    (OptObject, Optional),
    (Any, Optional),
    (OptStr, Optional),
    (OptStr, Optional),
    (OptStr, Optional),
    (OptNumber, Optional),
    (Object, Optional),
];

/// `TokenUsage`'s fields, each an integer when present.
const TOKENS: [&str; 3] = ["prompt_tokens", "completion_tokens", "total_tokens"];

/// The longest run of digits the interpreter's JSON parser reads as an integer (CPython's
/// `sys.int_info.default_max_str_digits`): past it, parsing the row whole fails, which a field
/// parsed on first read must not hide.
const MAX_DIGITS: usize = 4300;

/// A JSON object's members in their order, each key and value as written.
struct Members<'a>(Vec<(&'a RawValue, &'a RawValue)>);

impl<'de> Deserialize<'de> for Members<'de> {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Visit;
        impl<'de> serde::de::Visitor<'de> for Visit {
            type Value = Members<'de>;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a JSON object")
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(
                self,
                mut map: A,
            ) -> Result<Self::Value, A::Error> {
                let mut members = Vec::new();
                while let Some(member) = map.next_entry::<&'de RawValue, &'de RawValue>()? {
                    members.push(member);
                }
                Ok(Members(members))
            }
        }
        deserializer.deserialize_map(Visit)
    }
}

/// The members of the JSON object `text`, or None when it is not one.
fn members(text: &str) -> Option<Members<'_>> {
    serde_json::from_str(text).ok()
}

/// A key or string value as it decodes.
fn string(raw: &RawValue) -> Option<Cow<'_, str>> {
    serde_json::from_str::<Cow<'_, str>>(raw.get()).ok()
}

/// The value each of `fields` takes in `object` (its last member of that name, as Python's
/// parser keeps it), or None when a key does not decode.
fn by_field<'a>(object: &Members<'a>, fields: &[&str]) -> Option<Vec<Option<&'a RawValue>>> {
    let mut found = vec![None; fields.len()];
    for (key, value) in &object.0 {
        let key = string(key)?;
        if let Some(i) = fields.iter().position(|f| *f == key) {
            found[i] = Some(*value);
        }
    }
    Some(found)
}

/// The digest of `row`, whose own `trajectory` member is `recording` (a slice of `row`), an
/// evaldeck recording: None when the host cannot tell that the interpreter's check would find
/// it usual (or its text is too long for the digest's numbers, past a million characters).
/// Otherwise the digest, a string of numbers, each one character (its code point, past the
/// surrogates: see [`encoded`]), read by the interpreter without parsing:
///
/// - `n`, the row's member count less its `trajectory`, then those `n` members' key and value
///   starts, in their order;
/// - the start of each `Trace` field's value, in [`TRACE`]'s order (0 when it is left out: no
///   value starts where the row's `{` does);
/// - for each step, in order, the start of each `Step` field's value, in [`STEP`]'s order.
///
/// Starts are indices of characters (Unicode scalar values), as Python indexes the row's text.
pub(super) fn evaldeck(row: &str, recording: &str) -> Option<String> {
    if longest_digit_run(row) >= MAX_DIGITS {
        return None;
    }
    let top = members(row)?;
    let trace = members(recording)?;
    let trace_values = by_field(&trace, &TRACE)?;
    if !usual(&trace_values, &TRACE_KINDS) {
        return None;
    }
    let mut steps = Vec::new();
    if let Some(list) = trace_values[4] {
        for step in serde_json::from_str::<Vec<&RawValue>>(list.get()).ok()? {
            let values = by_field(&members(step.get())?, &STEP)?;
            if !usual(&values, &STEP_KINDS) {
                return None;
            }
            steps.push(values);
        }
    }
    let mut starts = Vec::new();
    for (key, value) in &top.0 {
        if value.get().as_ptr() != recording.as_ptr() {
            starts.extend([start(row, key.get()), start(row, value.get())]);
        }
    }
    let members = starts.len() / 2;
    for values in std::iter::once(&trace_values).chain(&steps) {
        starts.extend(values.iter().map(|v| v.map_or(0, |v| start(row, v.get()))));
    }
    let mut digest = String::with_capacity(4 * (1 + starts.len()));
    for number in std::iter::once(members).chain(char_indices(row, &starts)) {
        digest.push(encoded(number)?);
    }
    Some(digest)
}

/// `number` as the one character the digest writes it as: its code point, past the surrogates
/// (which no string holds) for numbers from `0xD800`; None past the last code point.
fn encoded(number: usize) -> Option<char> {
    let point = u32::try_from(number).ok()?;
    char::from_u32(if point < SURROGATES {
        point
    } else {
        point.checked_add(0x800)?
    })
}

/// Where the surrogates start, which the digest's numbers skip.
const SURROGATES: u32 = 0xD800;

/// Where `part`, a slice of `row`, starts in it, in bytes.
fn start(row: &str, part: &str) -> usize {
    part.as_ptr() as usize - row.as_ptr() as usize
}

/// Each of `bytes` (offsets of `row` at characters' starts) as the index of its character.
fn char_indices(row: &str, bytes: &[usize]) -> Vec<usize> {
    let mut order: Vec<usize> = (0..bytes.len()).collect();
    order.sort_by_key(|&i| bytes[i]);
    let mut out = vec![0; bytes.len()];
    let (mut at, mut chars) = (0, 0);
    let text = row.as_bytes();
    for i in order {
        let to = bytes[i].min(text.len());
        if to > at {
            // Every byte that does not continue a character starts one.
            chars += text[at..to].iter().filter(|&&b| b & 0xC0 != 0x80).count();
            at = to;
        }
        out[i] = chars;
    }
    out
}

/// The length of the longest run of ASCII digits in `text`.
fn longest_digit_run(text: &str) -> usize {
    text.as_bytes()
        .split(|b| !b.is_ascii_digit())
        .map(<[u8]>::len)
        .max()
        .unwrap_or(0)
}

/// Whether every field's value passes its check, and every required one is there.
fn usual(values: &[Option<&RawValue>], kinds: &[(Kind, Presence)]) -> bool {
    values
        .iter()
        .zip(kinds)
        .all(|(value, (kind, presence))| match value {
            None => *presence == Optional,
            Some(value) => takes(*kind, value),
        })
}

/// Whether the interpreter's check for `kind` certainly takes `value` as its usual form.
fn takes(kind: Kind, value: &RawValue) -> bool {
    let text = value.get();
    let null = text == "null";
    match kind {
        Id => string(value).is_some_and(|s| !s.is_empty()),
        Str => string(value).is_some(),
        OptStr => null || takes(Str, value),
        Enum(names) => string(value).is_some_and(|s| names.contains(&&*s)),
        Datetime => string(value).is_some_and(|s| usual_datetime(&s)),
        OptDatetime => null || takes(Datetime, value),
        OptNumber => null || text.starts_with(|c: char| c == '-' || c.is_ascii_digit()),
        Object => text.starts_with('{'),
        OptObject => null || takes(Object, value),
        Int => {
            let digits = text.strip_prefix('-').unwrap_or(text);
            !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit())
        }
        OptTokens => {
            null || members(text)
                .and_then(|tokens| by_field(&tokens, &TOKENS))
                .is_some_and(|values| values.iter().flatten().all(|v| takes(Int, v)))
        }
        Steps => text.starts_with('['),
        Any => true,
    }
}

/// Whether `text` is a datetime of the one narrow form the host vouches for, which Python's
/// `datetime.fromisoformat` reads (since 3.11) as the interpreter's check does:
/// `YYYY-MM-DDTHH:MM:SS`, then optionally `.` and 3 or 6 digits, then optionally `Z` or
/// `+HH:MM`/`-HH:MM`, every part in its range (a real day of its month, a year from 1).
fn usual_datetime(text: &str) -> bool {
    let b = text.as_bytes();
    let number = |from: usize, len: usize| -> Option<u32> {
        let digits = b.get(from..from + len)?;
        digits
            .iter()
            .all(u8::is_ascii_digit)
            .then(|| digits.iter().fold(0, |n, d| n * 10 + u32::from(d - b'0')))
    };
    let at = |i: usize, c: u8| b.get(i) == Some(&c);
    let date_time = || -> Option<()> {
        let (year, month, day) = (number(0, 4)?, number(5, 2)?, number(8, 2)?);
        let (hour, minute, second) = (number(11, 2)?, number(14, 2)?, number(17, 2)?);
        let marks = at(4, b'-') && at(7, b'-') && at(10, b'T') && at(13, b':') && at(16, b':');
        let leap = year % 4 == 0 && (year % 100 != 0 || year % 400 == 0);
        let days = match month {
            2 if leap => 29,
            2 => 28,
            4 | 6 | 9 | 11 => 30,
            _ => 31,
        };
        let ok = marks
            && year >= 1
            && (1..=12).contains(&month)
            && (1..=days).contains(&day)
            && hour < 24
            && minute < 60
            && second < 60;
        ok.then_some(())
    };
    if date_time().is_none() {
        return false;
    }
    let mut i = 19;
    if at(i, b'.') {
        let digits = b[i + 1..].iter().take_while(|d| d.is_ascii_digit()).count();
        if digits != 3 && digits != 6 {
            return false;
        }
        i += 1 + digits;
    }
    match b.get(i) {
        None => true,
        Some(b'Z') => i + 1 == b.len(),
        Some(b'+' | b'-') => {
            i + 6 == b.len()
                && at(i + 3, b':')
                && number(i + 1, 2).is_some_and(|h| h < 24)
                && number(i + 4, 2).is_some_and(|m| m < 60)
        }
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{Value, json};

    /// Recordings each labelled with the interpreter's verdict (`usual`: true, false, or null
    /// for a form the interpreter takes and the host leaves to it); the interpreter's own tests
    /// check the same labels against its check (`tests/test_runtime.py`, `UsualForms`).
    const FORMS: &str =
        include_str!("../../../runtime/python/tests/data/evaldeck/usual-forms.json");

    fn row_of(recording: &Value) -> String {
        format!(
            r#"{{"id": 7, "name": "case-7", "input": "Book it, ≥ 2 seats", "expected": {{"tools_called": ["search"]}}, "trajectory" : {recording}, "tags": ["é"]}}"#
        )
    }

    /// The JSON value that starts at character `index` of `text`.
    fn value_at(text: &str, index: usize) -> Value {
        let byte = text.char_indices().nth(index).unwrap().0;
        let mut values = serde_json::Deserializer::from_str(&text[byte..]).into_iter::<Value>();
        values.next().unwrap().unwrap()
    }

    fn digest_of(row: &str) -> Option<Vec<usize>> {
        let recording = recorded(row);
        evaldeck(row, recording).map(|d| d.chars().map(decoded).collect())
    }

    fn recorded(row: &str) -> &str {
        #[derive(Deserialize)]
        struct Row<'a> {
            #[serde(borrow)]
            trajectory: &'a RawValue,
        }
        serde_json::from_str::<Row<'_>>(row)
            .unwrap()
            .trajectory
            .get()
    }

    /// A digest's character as the number it stands for, as the interpreter reads it.
    fn decoded(c: char) -> usize {
        let point = c as u32;
        (if point >= SURROGATES + 0x800 {
            point - 0x800
        } else {
            point
        }) as usize
    }

    #[test]
    fn numbers_past_the_surrogates_skip_them() {
        for number in [0, 1, 0xD7FF, 0xD800, 0xDFFF, 0xE000, 0x10FFFF - 0x800] {
            assert_eq!(decoded(encoded(number).unwrap()), number);
        }
        assert_eq!(encoded(0x10FFFF - 0x7FF), None);
    }

    #[test]
    fn the_host_vouches_only_for_what_the_interpreter_takes() {
        let forms: Vec<Value> = serde_json::from_str(FORMS).unwrap();
        assert!(forms.len() > 40);
        for form in &forms {
            let row = row_of(&form["recording"]);
            let vouched = digest_of(&row).is_some();
            assert_eq!(vouched, form["usual"] == json!(true), "{}", form["why"]);
        }
    }

    #[test]
    fn each_start_is_where_its_value_stands() {
        let forms: Vec<Value> = serde_json::from_str(FORMS).unwrap();
        let recording = &forms[0]["recording"];
        let row = row_of(recording);
        let starts = digest_of(&row).unwrap();
        let whole: Value = serde_json::from_str(&row).unwrap();
        let members = starts[0];
        assert_eq!(members, whole.as_object().unwrap().len() - 1);
        for pair in starts[1..1 + 2 * members].chunks(2) {
            let key = value_at(&row, pair[0]);
            assert_ne!(key, json!("trajectory"));
            assert_eq!(whole[key.as_str().unwrap()], value_at(&row, pair[1]));
        }
        let trace = &starts[1 + 2 * members..];
        for (i, field) in TRACE.iter().enumerate() {
            match recording.get(field) {
                None => assert_eq!(trace[i], 0, "{field}"),
                Some(value) => assert_eq!(&value_at(&row, trace[i]), value, "{field}"),
            }
        }
        let steps = recording["steps"].as_array().unwrap();
        let located: Vec<_> = trace[TRACE.len()..].chunks(STEP.len()).collect();
        assert_eq!(located.len(), steps.len());
        for (step, starts) in steps.iter().zip(located) {
            for (i, field) in STEP.iter().enumerate() {
                match step.get(field) {
                    None => assert_eq!(starts[i], 0, "{field}"),
                    Some(value) => assert_eq!(&value_at(&row, starts[i]), value, "{field}"),
                }
            }
        }
    }

    #[test]
    fn an_integer_too_long_for_python_leaves_the_row_to_the_interpreter() {
        let forms: Vec<Value> = serde_json::from_str(FORMS).unwrap();
        let mut recording = forms[0]["recording"].clone();
        let row = row_of(&recording);
        assert!(digest_of(&row).is_some());
        recording["steps"][2]["tool_result"] = json!("x");
        let long = row_of(&recording).replace("\"x\"", &"9".repeat(MAX_DIGITS));
        assert!(digest_of(&long).is_none());
    }

    #[test]
    fn the_field_orders_are_the_stand_ins() {
        let source = include_str!("../../../runtime/python/stubs/evaldeck/trace.py");
        for (class, fields) in [("class Trace(", &TRACE[..]), ("class Step(", &STEP[..])] {
            let body = &source[source.find(class).unwrap()..];
            let body = &body[..body.find("\n\n\n").unwrap_or(body.len())];
            let declared: Vec<&str> = body
                .split("Field(\"")
                .skip(1)
                .map(|rest| &rest[..rest.find('"').unwrap()])
                .collect();
            assert_eq!(declared, fields, "{class}");
        }
    }
}
