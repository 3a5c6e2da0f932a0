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
    /// An integer (a number written without fraction or exponent).
    Int,
    /// Such an integer or null.
    OptInt,
    /// `true`, `false` or null.
    OptBool,
    /// An object.
    Object,
    /// An object or null.
    OptObject,
    /// A list of strings.
    Strs,
    /// A list of strings or null.
    OptStrs,
    /// An object of this model's usual form, or null.
    OptModel(Model),
    /// A list of objects of this model's usual form.
    Models(Model),
    /// A list (of steps: each is checked where the digest locates it).
    Steps,
    /// Anything.
    Any,
    /// Nothing the host vouches for: a record with this field is left to the interpreter.
    Unvouched,
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

/// A stand-in model's fields in its order, each with its check: the digest gives the place of
/// each of a `Trace`'s and a `Step`'s fields in this order.
type Model = &'static [(&'static str, Kind, Presence)];

const TRACE_STATUS: &[&str] = &["success", "failure", "timeout", "error"];
const STEP_TYPE: &[&str] = &["llm_call", "tool_call", "reasoning", "human_input"];
const STEP_STATUS: &[&str] = &["success", "failure", "pending"];

/// evaldeck's `Trace` (`stubs/evaldeck/trace.py`).
const TRACE: Model = &[
    ("id", Id, Required),
    ("input", Str, Required),
    ("output", OptStr, Optional),
    ("status", Enum(TRACE_STATUS), Optional),
    ("steps", Steps, Optional),
    ("started_at", Datetime, Required),
    ("completed_at", OptDatetime, Optional),
    ("duration_ms", OptNumber, Optional),
    ("metadata", Object, Optional),
    ("framework", OptStr, Optional),
    ("agent_name", OptStr, Optional),
];

/// evaldeck's `Step`.
const STEP: Model = &[
    ("id", Id, Required),
    ("type", Enum(STEP_TYPE), Required),
    ("timestamp", Datetime, Required),
    ("status", Enum(STEP_STATUS), Optional),
    ("model", OptStr, Optional),
    ("input", OptStr, Optional),
    ("output", OptStr, Optional),
    ("tokens", OptModel(TOKENS), Optional),
    ("tool_name", OptStr, Optional),
    ("tool_args", OptObject, Optional),
    ("tool_result", Any, Optional),
    ("reasoning_text", OptStr, Optional),
    ("parent_id", OptStr, Optional),
    ("error", OptStr, Optional),
    ("duration_ms", OptNumber, Optional),
    ("metadata", Object, Optional),
];

/// evaldeck's `TokenUsage`.
const TOKENS: Model = &[
    ("prompt_tokens", Int, Optional),
    ("completion_tokens", Int, Optional),
    ("total_tokens", Int, Optional),
];

/// evaldeck's `EvalCase` (`stubs/evaldeck/test_case.py`), as the runtime makes it of a row
/// (`convert.evaldeck_case`): the row's `input` (with its `expected` and `graders`) is its
/// one turn.
const CASE: Model = &[
    ("name", Str, Optional),
    ("description", OptStr, Optional),
    // A case written with its turns.
    ("turns", Unvouched, Optional),
    ("timeout", OptNumber, Optional),
    ("retries", OptInt, Optional),
    ("tags", Strs, Optional),
    ("metadata", Object, Optional),
    ("reference_output", OptStr, Optional),
    ("reference_tools", OptStrs, Optional),
    ("input", Str, Optional),
    ("expected", OptModel(EXPECTED), Optional),
    ("graders", Models(GRADER), Optional),
];

/// evaldeck's `ExpectedBehavior`.
const EXPECTED: Model = &[
    ("tools_called", OptStrs, Optional),
    ("tools_not_called", OptStrs, Optional),
    ("tool_call_order", OptStrs, Optional),
    ("output_contains", OptStrs, Optional),
    ("output_not_contains", OptStrs, Optional),
    ("output_equals", OptStr, Optional),
    ("output_matches", OptStr, Optional),
    ("max_steps", OptInt, Optional),
    ("min_steps", OptInt, Optional),
    ("max_tool_calls", OptInt, Optional),
    ("max_llm_calls", OptInt, Optional),
    ("task_completed", OptBool, Optional),
    ("custom", OptObject, Optional),
];

/// evaldeck's `GraderConfig`.
const GRADER: Model = &[
    ("type", Str, Required),
    ("params", Object, Optional),
    ("prompt", OptStr, Optional),
    ("model", OptStr, Optional),
    ("threshold", OptNumber, Optional),
    ("module", OptStr, Optional),
    ("function", OptStr, Optional),
];

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

/// A key or string value as it decodes: what is between its quotes when it has no escape (a
/// string the parser took holds no control character), else as serde decodes it.
fn string(raw: &RawValue) -> Option<Cow<'_, str>> {
    let text = raw.get();
    match text.strip_prefix('"').and_then(|t| t.strip_suffix('"')) {
        Some(inner) if !inner.contains('\\') => Some(Cow::Borrowed(inner)),
        _ => serde_json::from_str::<Cow<'_, str>>(text).ok(),
    }
}

/// The value each of `fields` takes in `object` (its last member of that name, as Python's
/// parser keeps it), or None when a key does not decode.
fn by_field<'a>(object: &Members<'a>, model: Model) -> Option<Vec<Option<&'a RawValue>>> {
    let mut found = vec![None; model.len()];
    for (key, value) in &object.0 {
        let key = string(key)?;
        if let Some(i) = model.iter().position(|(name, _, _)| *name == key) {
            found[i] = Some(*value);
        }
    }
    Some(found)
}

/// The digest of `row`, whose own `trajectory` member is `recording` (a slice of `row`), an
/// evaldeck recording: None when the host cannot tell that the interpreter's check would find
/// it usual (or its text is too long for the digest's numbers, past 4 Gi characters).
/// Otherwise the digest, numbers of four bytes each (unsigned, little-endian: the interpreter
/// reads them as an array of its C `unsigned int`s, without parsing):
///
/// - 1 when the case the runtime makes of the row's other members is of the usual form its
///   check takes (see [`CASE`]), else 0;
/// - `n`, the row's member count less its `trajectory`, then those `n` members' key and value
///   starts, in their order;
/// - the start of each `Trace` field's value, in [`TRACE`]'s order (0 when it is left out: no
///   value starts where the row's `{` does);
/// - for each step, in order, the start of each `Step` field's value, in [`STEP`]'s order.
///
/// Starts are indices of characters (Unicode scalar values), as Python indexes the row's text.
pub(super) fn evaldeck(row: &str, recording: &str) -> Option<Vec<u8>> {
    if row.len() >= MAX_DIGITS && longest_digit_run(row) >= MAX_DIGITS {
        return None;
    }
    let top = members(row)?;
    let trace = members(recording)?;
    let trace_values = by_field(&trace, TRACE)?;
    if !usual(&trace_values, TRACE) {
        return None;
    }
    let mut steps = Vec::new();
    if let Some(list) = trace_values[4] {
        for step in serde_json::from_str::<Vec<&RawValue>>(list.get()).ok()? {
            let values = by_field(&members(step.get())?, STEP)?;
            if !usual(&values, STEP) {
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
    let case = by_field(&top, CASE).is_some_and(|values| usual(&values, CASE));
    for values in std::iter::once(&trace_values).chain(&steps) {
        starts.extend(values.iter().map(|v| v.map_or(0, |v| start(row, v.get()))));
    }
    let mut digest = Vec::with_capacity(4 * (2 + starts.len()));
    let head = [usize::from(case), members];
    for number in head.into_iter().chain(char_indices(row, &starts)) {
        digest.extend(u32::try_from(number).ok()?.to_le_bytes());
    }
    Some(digest)
}

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
    let (mut longest, mut run) = (0, 0);
    for b in text.bytes() {
        run = if b.is_ascii_digit() { run + 1 } else { 0 };
        longest = longest.max(run);
    }
    longest
}

/// Whether every field's value passes its check, and every required one is there.
fn usual(values: &[Option<&RawValue>], model: Model) -> bool {
    values
        .iter()
        .zip(model)
        .all(|(value, (_, kind, presence))| match value {
            None => *presence == Optional,
            Some(value) => takes(*kind, value),
        })
}

/// Whether `text` is an object of `model`'s usual form.
fn object_usual(text: &str, model: Model) -> bool {
    members(text)
        .and_then(|object| by_field(&object, model))
        .is_some_and(|values| usual(&values, model))
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
        Int => {
            let digits = text.strip_prefix('-').unwrap_or(text);
            !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit())
        }
        OptInt => null || takes(Int, value),
        OptBool => null || text == "true" || text == "false",
        Object => text.starts_with('{'),
        OptObject => null || takes(Object, value),
        Strs => serde_json::from_str::<Vec<&RawValue>>(text)
            .is_ok_and(|items| items.iter().all(|item| takes(Str, item))),
        OptStrs => null || takes(Strs, value),
        OptModel(model) => null || object_usual(text, model),
        Models(model) => serde_json::from_str::<Vec<&RawValue>>(text)
            .is_ok_and(|items| items.iter().all(|item| object_usual(item.get(), model))),
        Steps => text.starts_with('['),
        Any => true,
        Unvouched => false,
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

    /// The digest of `row` as the interpreter reads it: a number every four bytes.
    fn digest_of(row: &str) -> Option<Vec<usize>> {
        let recording = recorded(row);
        let digest = evaldeck(row, recording)?;
        assert_eq!(digest.len() % 4, 0);
        Some(
            digest
                .chunks(4)
                .map(|n| u32::from_le_bytes([n[0], n[1], n[2], n[3]]) as usize)
                .collect(),
        )
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

    /// Rows labelled with the verdict of the runtime's check of the case it makes of them, as
    /// [`FORMS`] (`UsualForms` checks the same labels).
    const CASES: &str =
        include_str!("../../../runtime/python/tests/data/evaldeck/usual-cases.json");

    #[test]
    fn the_host_vouches_only_for_a_case_the_interpreter_takes() {
        let forms: Vec<Value> = serde_json::from_str(FORMS).unwrap();
        let cases: Vec<Value> = serde_json::from_str(CASES).unwrap();
        assert!(cases.len() > 20);
        for case in &cases {
            let mut row = case["row"].clone();
            row["trajectory"] = forms[0]["recording"].clone();
            let starts = digest_of(&row.to_string()).unwrap();
            assert_eq!(
                starts[0] == 1,
                case["usual"] == json!(true),
                "{}",
                case["why"]
            );
        }
    }

    #[test]
    fn each_start_is_where_its_value_stands() {
        let forms: Vec<Value> = serde_json::from_str(FORMS).unwrap();
        let recording = &forms[0]["recording"];
        let row = row_of(recording);
        let starts = digest_of(&row).unwrap();
        let whole: Value = serde_json::from_str(&row).unwrap();
        let members = starts[1];
        assert_eq!(members, whole.as_object().unwrap().len() - 1);
        for pair in starts[2..2 + 2 * members].chunks(2) {
            let key = value_at(&row, pair[0]);
            assert_ne!(key, json!("trajectory"));
            assert_eq!(whole[key.as_str().unwrap()], value_at(&row, pair[1]));
        }
        let trace = &starts[2 + 2 * members..];
        for (i, (field, _, _)) in TRACE.iter().enumerate() {
            match recording.get(field) {
                None => assert_eq!(trace[i], 0, "{field}"),
                Some(value) => assert_eq!(&value_at(&row, trace[i]), value, "{field}"),
            }
        }
        let steps = recording["steps"].as_array().unwrap();
        let located: Vec<_> = trace[TRACE.len()..].chunks(STEP.len()).collect();
        assert_eq!(located.len(), steps.len());
        for (step, starts) in steps.iter().zip(located) {
            for (i, (field, _, _)) in STEP.iter().enumerate() {
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
    fn the_models_are_the_stand_ins() {
        let trace = include_str!("../../../runtime/python/stubs/evaldeck/trace.py");
        let case = include_str!("../../../runtime/python/stubs/evaldeck/test_case.py");
        for (source, class, model) in [
            (trace, "class Trace(", TRACE),
            (trace, "class Step(", STEP),
            (trace, "class TokenUsage(", TOKENS),
            (case, "class ExpectedBehavior(", EXPECTED),
            (case, "class GraderConfig(", GRADER),
        ] {
            let body = &source[source.find(class).unwrap()..];
            let body = &body[..body.find("\n\n\n").unwrap_or(body.len())];
            let declared: Vec<&str> = body
                .split("Field(\"")
                .skip(1)
                .map(|rest| &rest[..rest.find('"').unwrap()])
                .collect();
            let names: Vec<&str> = model.iter().map(|(name, _, _)| *name).collect();
            assert_eq!(declared, names, "{class}");
        }
    }
}
