//! A dataset row: a letta-evals sample, an evaldeck case, or both, with its recorded run.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, value::RawValue};

use crate::input::fast::scan::{Scanner, Seen};
use crate::input::trajectory::Trajectory;
use crate::input::trajectory::inline::Inline;

/// A sample's id: letta-evals accepts integers and strings; a whole float becomes an integer.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(untagged)]
pub enum SampleId {
    Int(i64),
    Str(String),
}

impl std::fmt::Display for SampleId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SampleId::Int(i) => write!(f, "{i}"),
            SampleId::Str(s) => f.write_str(s),
        }
    }
}

/// Text, or one text per turn (letta-evals' per-turn mode).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(untagged)]
pub enum Texts {
    One(String),
    PerTurn(Vec<String>),
}

/// Read by the value's own type, not by trying each variant on a buffered copy (serde's
/// untagged enums), which costs a copy of every row's input and ground truth and names no
/// expected type when it fails.
impl<'de> Deserialize<'de> for Texts {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Texts, D::Error> {
        struct TextsVisitor;
        impl<'de> serde::de::Visitor<'de> for TextsVisitor {
            type Value = Texts;

            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a string or a list of strings")
            }

            fn visit_str<E: serde::de::Error>(self, text: &str) -> Result<Texts, E> {
                Ok(Texts::One(text.to_owned()))
            }

            fn visit_string<E: serde::de::Error>(self, text: String) -> Result<Texts, E> {
                Ok(Texts::One(text))
            }

            fn visit_seq<A: serde::de::SeqAccess<'de>>(
                self,
                mut seq: A,
            ) -> Result<Texts, A::Error> {
                let mut texts = Vec::with_capacity(seq.size_hint().unwrap_or(0).min(1024));
                while let Some(text) = seq.next_element()? {
                    texts.push(text);
                }
                Ok(Texts::PerTurn(texts))
            }
        }
        deserializer.deserialize_any(TextsVisitor)
    }
}

impl Texts {
    /// Read by the [`Scanner`], as serde reads it.
    fn scan(scanner: &mut Scanner) -> Option<Texts> {
        if scanner.peek()? == b'[' {
            scanner.items(Scanner::string).map(Texts::PerTurn)
        } else {
            scanner.string().map(Texts::One)
        }
    }
}

/// evaldeck's `expected:` block. Every documented key is honoured (SPEC section 12).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Expected {
    pub tools_called: Option<Vec<String>>,
    pub tools_not_called: Option<Vec<String>>,
    pub tool_call_order: Option<Vec<String>>,
    pub output_contains: Option<Vec<String>>,
    pub output_not_contains: Option<Vec<String>>,
    pub output_equals: Option<String>,
    pub output_matches: Option<String>,
    pub max_steps: Option<u64>,
    pub min_steps: Option<u64>,
    pub max_tool_calls: Option<u64>,
    pub max_llm_calls: Option<u64>,
    pub task_completed: Option<bool>,
    /// Free-form data for custom graders; no built-in reads it.
    pub custom: Option<Map<String, Value>>,
}

impl Expected {
    /// Read by the [`Scanner`], as serde reads it. An unknown key, which serde refuses, is left
    /// to serde to report.
    fn scan(scanner: &mut Scanner) -> Option<Box<Expected>> {
        let mut expected = Expected::default();
        let mut seen = Seen::default();
        scanner.object(|s, key| {
            let strings = |s: &mut Scanner| s.nullable(|s| s.items(Scanner::string));
            let e = &mut expected;
            match key {
                "tools_called" => seen.set(0, &mut e.tools_called, strings(s)),
                "tools_not_called" => seen.set(1, &mut e.tools_not_called, strings(s)),
                "tool_call_order" => seen.set(2, &mut e.tool_call_order, strings(s)),
                "output_contains" => seen.set(3, &mut e.output_contains, strings(s)),
                "output_not_contains" => seen.set(4, &mut e.output_not_contains, strings(s)),
                "output_equals" => seen.set(5, &mut e.output_equals, s.nullable(Scanner::string)),
                "output_matches" => seen.set(6, &mut e.output_matches, s.nullable(Scanner::string)),
                "max_steps" => seen.set(7, &mut e.max_steps, s.nullable(Scanner::unsigned)),
                "min_steps" => seen.set(8, &mut e.min_steps, s.nullable(Scanner::unsigned)),
                "max_tool_calls" => {
                    seen.set(9, &mut e.max_tool_calls, s.nullable(Scanner::unsigned))
                }
                "max_llm_calls" => {
                    seen.set(10, &mut e.max_llm_calls, s.nullable(Scanner::unsigned))
                }
                "task_completed" => {
                    seen.set(11, &mut e.task_completed, s.nullable(Scanner::boolean))
                }
                "custom" => seen.set(12, &mut e.custom, s.serde()),
                _ => None,
            }
        })?;
        Some(Box::new(expected))
    }
}

/// The fields `T`'s derived `Deserialize` reads, by asking it to read a struct.
#[cfg(test)]
pub(crate) fn serde_fields<'de, T: Deserialize<'de>>() -> &'static [&'static str] {
    use serde::de::{self, Visitor};
    struct Fields<'f>(&'f mut &'static [&'static str]);
    impl<'de> de::Deserializer<'de> for Fields<'_> {
        type Error = de::value::Error;
        fn deserialize_any<V: Visitor<'de>>(self, _: V) -> Result<V::Value, Self::Error> {
            Err(de::Error::custom("only a struct's field list is asked for"))
        }
        fn deserialize_struct<V: Visitor<'de>>(
            self,
            _: &'static str,
            fields: &'static [&'static str],
            _: V,
        ) -> Result<V::Value, Self::Error> {
            *self.0 = fields;
            Err(de::Error::custom("the field list is all that is needed"))
        }
        serde::forward_to_deserialize_any! {
            bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string bytes
            byte_buf option unit unit_struct newtype_struct seq tuple tuple_struct map enum
            identifier ignored_any
        }
    }
    let mut fields: &'static [&'static str] = &[];
    let _ = T::deserialize(Fields(&mut fields));
    fields
}

/// One turn of an evaldeck case (`turns:`, as `EvalCase.model_dump()` writes it): what the user
/// said, and what to check of the agent's answer to it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CaseTurn {
    pub user: String,
    #[serde(default)]
    pub expected: Option<Box<Expected>>,
    #[serde(default)]
    pub graders: Vec<TurnGrader>,
}

/// An evaldeck case's turns and, when its run was recorded as a list of traces, the trace of each
/// turn, in order (empty otherwise: the single recording is the first turn's).
#[derive(Debug, Clone, Default)]
pub struct Case<'a> {
    pub turns: Vec<CaseTurn>,
    pub traces: Vec<Trajectory<'a>>,
}

impl Case<'_> {
    /// Whether a turn has an `llm` or `llm_rubric` entry, which asks a model.
    pub fn asks_model(&self) -> bool {
        (self.turns.iter().flat_map(|turn| &turn.graders)).any(|entry| {
            matches!(
                TurnGraderKind::of(&entry.kind),
                Some(TurnGraderKind::Llm | TurnGraderKind::LlmRubric)
            )
        })
    }
}

/// An entry of a turn's `graders:` list (evaldeck's `GraderConfig`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TurnGrader {
    /// The grader's type, matched case-insensitively as evaldeck matches it.
    #[serde(rename = "type")]
    pub kind: String,
    #[serde(default)]
    pub params: Map<String, Value>,
    #[serde(default)]
    pub prompt: Option<String>,
    #[serde(default)]
    pub model: Option<String>,
    #[serde(default)]
    pub threshold: Option<f64>,
    #[serde(default)]
    pub module: Option<String>,
    #[serde(default)]
    pub function: Option<String>,
}

/// The grader types a turn's `graders:` entry may name: evaldeck's grader names (`llm_rubric`
/// and `code` are documented by evaldeck, which builds only `llm`, `contains` and `tool_called`
/// from a case and drops the rest unsaid).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TurnGraderKind {
    Contains,
    NotContains,
    Equals,
    Regex,
    ToolCalled,
    ToolNotCalled,
    ToolOrder,
    MaxSteps,
    MaxToolCalls,
    MaxLlmCalls,
    TaskCompleted,
    Llm,
    LlmRubric,
    Code,
}

impl TurnGraderKind {
    const ALL: [(&'static str, TurnGraderKind); 14] = [
        ("contains", TurnGraderKind::Contains),
        ("not_contains", TurnGraderKind::NotContains),
        ("equals", TurnGraderKind::Equals),
        ("regex", TurnGraderKind::Regex),
        ("tool_called", TurnGraderKind::ToolCalled),
        ("tool_not_called", TurnGraderKind::ToolNotCalled),
        ("tool_order", TurnGraderKind::ToolOrder),
        ("max_steps", TurnGraderKind::MaxSteps),
        ("max_tool_calls", TurnGraderKind::MaxToolCalls),
        ("max_llm_calls", TurnGraderKind::MaxLlmCalls),
        ("task_completed", TurnGraderKind::TaskCompleted),
        ("llm", TurnGraderKind::Llm),
        ("llm_rubric", TurnGraderKind::LlmRubric),
        ("code", TurnGraderKind::Code),
    ];

    /// The kind `name` names, matched case-insensitively as evaldeck matches it.
    pub fn of(name: &str) -> Option<TurnGraderKind> {
        let name = name.to_lowercase();
        Self::ALL.iter().find(|(n, _)| *n == name).map(|(_, k)| *k)
    }

    /// The kind's name, as evaldeck names the grader.
    pub fn name(self) -> &'static str {
        Self::ALL
            .iter()
            .find(|(_, k)| *k == self)
            .map_or("", |(n, _)| n)
    }

    /// Every name, for messages.
    pub fn names() -> impl Iterator<Item = &'static str> {
        Self::ALL.iter().map(|(n, _)| *n)
    }
}

/// A Letta agent's memory, duck-typed as letta-evals does: `{blocks: [{label, value}]}`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct AgentState {
    #[serde(default)]
    pub blocks: Vec<MemoryBlock>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MemoryBlock {
    #[serde(default)]
    pub label: String,
    #[serde(default)]
    pub value: String,
}

/// One sample, ready to grade. Its trajectory may borrow text from the row it was read from.
#[derive(Debug, Clone, Default)]
pub struct Sample<'a> {
    pub id: Option<SampleId>,
    /// 1-based line of the row in its dataset file.
    pub line: usize,
    pub input: Option<Texts>,
    pub ground_truth: Option<Texts>,
    pub rubric_vars: Map<String, Value>,
    pub rubric: Option<String>,
    pub name: Option<String>,
    pub description: Option<String>,
    /// Boxed: letta-evals rows have none, and inline it made every sample 300 bytes larger to
    /// move.
    pub expected: Option<Box<Expected>>,
    /// An evaldeck case's turns, each graded against its own recorded trace; `expected` is then
    /// the first turn's, as evaldeck's `EvalCase.expected` is. Boxed: most rows have none.
    pub case: Option<Box<Case<'a>>>,
    pub reference_output: Option<String>,
    pub reference_tools: Vec<String>,
    pub tags: Vec<String>,
    pub metadata: Map<String, Value>,
    /// The recorded run; for a case of several turns recorded as one trace per turn, those
    /// traces joined in order (what a report shows), each kept alone in [`Case::traces`].
    pub trajectory: Option<Trajectory<'a>>,
    pub agent_state: Option<AgentState>,
    /// The row exactly as written (JSON object text), for graders that read every key.
    pub row: &'a str,
    /// The run record the trajectory came from, when a trajectories file supplied it.
    pub run: Option<&'a str>,
    /// What the host makes of `row`'s text once for all of the row's graders (the Python
    /// interpreter's digest of its evaldeck recording).
    pub row_memo: RowMemo,
}

/// Bytes made from a row's text on first need and kept for the row's later needs. They are
/// tied to the text they were made from: asked for another (a sample cloned with another row),
/// the memo makes that one's and keeps nothing.
#[derive(Debug, Clone, Default)]
pub struct RowMemo(std::sync::OnceLock<(usize, usize, Option<Vec<u8>>)>);

impl RowMemo {
    /// `make(row)`, made once for this `row`.
    pub fn get(&self, row: &str, make: impl Fn(&str) -> Option<Vec<u8>>) -> Option<Vec<u8>> {
        let at = (row.as_ptr() as usize, row.len());
        let (ptr, len, made) = self.0.get_or_init(|| (at.0, at.1, make(row)));
        match (*ptr, *len) == at {
            true => made.clone(),
            false => make(row),
        }
    }
}

impl<'a> Sample<'a> {
    /// The id to report: the row's own id, else its 0-based line index.
    pub fn id(&self) -> SampleId {
        self.id
            .clone()
            .unwrap_or(SampleId::Int(Sample::line_index(self.line)))
    }

    /// The 0-based index of line `line` (from 1): the id of a row without one.
    pub fn line_index(line: usize) -> i64 {
        line.saturating_sub(1) as i64
    }

    /// The ground truth as one text (`None` for a missing or per-turn ground truth).
    pub fn ground_truth_text(&self) -> Option<&str> {
        match &self.ground_truth {
            Some(Texts::One(s)) => Some(s),
            _ => None,
        }
    }

    /// The recorded trace of turn `index` (0-based) of the case's `turns`.
    pub fn turn_trace(&self, index: usize) -> Option<&Trajectory<'a>> {
        match &self.case {
            Some(case) if !case.traces.is_empty() => case.traces.get(index),
            _ => self.trajectory.as_ref().filter(|_| index == 0),
        }
    }

    /// The trajectory, or an empty one when the row recorded none.
    pub fn trajectory(&self) -> &Trajectory<'a> {
        static EMPTY: std::sync::OnceLock<Trajectory<'static>> = std::sync::OnceLock::new();
        self.trajectory
            .as_ref()
            .unwrap_or_else(|| EMPTY.get_or_init(Trajectory::default))
    }
}

/// The JSON text of a row's id, as recorded (an integer or a string, checked when the sample is
/// made).
#[derive(Debug, Clone, Copy)]
pub struct RawId<'a>(pub &'a str);

impl<'de: 'a, 'a> Deserialize<'de> for RawId<'a> {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        <&'de RawValue>::deserialize(deserializer).map(|raw| RawId(raw.get()))
    }
}

/// The JSON shape of a dataset row, before the trajectory is converted: the trajectory is raw
/// JSON text, or (`T` = [`crate::input::trajectory::inline::Inline`]) read in place.
#[derive(Deserialize)]
#[serde(bound(deserialize = "T: Deserialize<'de>"))]
pub struct RawRow<'a, T = &'a RawValue> {
    #[serde(default, borrow)]
    pub sample_id: Option<RawId<'a>>,
    #[serde(default, borrow)]
    pub id: Option<RawId<'a>>,
    #[serde(default)]
    pub input: Option<Texts>,
    /// letta-evals falls back to `prompt` when `input` is missing or empty.
    #[serde(default)]
    pub prompt: Option<Texts>,
    #[serde(default)]
    pub ground_truth: Option<Texts>,
    #[serde(default)]
    pub rubric_vars: Option<Map<String, Value>>,
    #[serde(default)]
    pub rubric: Option<String>,
    #[serde(default)]
    pub rubric_path: Option<String>,
    #[serde(default)]
    pub name: Option<String>,
    #[serde(default)]
    pub description: Option<String>,
    #[serde(default)]
    pub expected: Option<Box<Expected>>,
    #[serde(default)]
    pub turns: Option<Vec<CaseTurn>>,
    #[serde(default)]
    pub reference_output: Option<String>,
    #[serde(default)]
    pub reference_tools: Option<Vec<String>>,
    #[serde(default)]
    pub tags: Option<Vec<String>>,
    #[serde(default)]
    pub metadata: Option<Map<String, Value>>,
    #[serde(default)]
    pub trajectory: Option<T>,
    #[serde(default)]
    pub agent_state: Option<AgentState>,
}

impl<'a> RawRow<'a, Inline<'a>> {
    /// Reads the row into `row`, a [`RawRow::default`], by the [`Scanner`]: `None` for a row it
    /// leaves to serde (which reads it as `RawRow<Inline>`), such as one whose trajectory is
    /// neither a list of Letta turns nor an evaldeck trace; `row` then holds what was read
    /// before it stopped.
    pub fn scan(text: &'a str, row: &mut RawRow<'a, Inline<'a>>) -> Option<()> {
        let mut scanner = Scanner::new(text);
        let mut seen = Seen::default();
        scanner.object(|s, key| {
            let string = |s: &mut Scanner<'a>| s.nullable(Scanner::string);
            let strings = |s: &mut Scanner<'a>| s.nullable(|s| s.items(Scanner::string));
            let id = |s: &mut Scanner<'a>| s.nullable(|s| s.raw().map(RawId));
            match key {
                "sample_id" => seen.set(0, &mut row.sample_id, id(s)),
                "id" => seen.set(1, &mut row.id, id(s)),
                "input" => seen.set(2, &mut row.input, s.nullable(Texts::scan)),
                "prompt" => seen.set(3, &mut row.prompt, s.nullable(Texts::scan)),
                "ground_truth" => seen.set(4, &mut row.ground_truth, s.nullable(Texts::scan)),
                "rubric_vars" => seen.set(5, &mut row.rubric_vars, s.serde()),
                "rubric" => seen.set(6, &mut row.rubric, string(s)),
                "rubric_path" => seen.set(7, &mut row.rubric_path, string(s)),
                "name" => seen.set(8, &mut row.name, string(s)),
                "description" => seen.set(9, &mut row.description, string(s)),
                "expected" => seen.set(10, &mut row.expected, s.nullable(Expected::scan)),
                "reference_output" => seen.set(11, &mut row.reference_output, string(s)),
                "reference_tools" => seen.set(12, &mut row.reference_tools, strings(s)),
                "tags" => seen.set(13, &mut row.tags, strings(s)),
                "metadata" => seen.set(14, &mut row.metadata, s.serde()),
                "trajectory" => seen.set(15, &mut row.trajectory, s.nullable(Inline::scan)),
                "agent_state" => seen.set(16, &mut row.agent_state, s.serde()),
                "turns" => seen.set(17, &mut row.turns, s.serde()),
                _ => s.skip(),
            }
        })?;
        scanner.finish()
    }
}

impl<T> Default for RawRow<'_, T> {
    fn default() -> Self {
        RawRow {
            sample_id: None,
            id: None,
            input: None,
            prompt: None,
            ground_truth: None,
            rubric_vars: None,
            rubric: None,
            rubric_path: None,
            name: None,
            description: None,
            expected: None,
            turns: None,
            reference_output: None,
            reference_tools: None,
            tags: None,
            metadata: None,
            trajectory: None,
            agent_state: None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_row_memo_is_made_once_for_its_row_and_never_given_for_another() {
        let made = std::cell::Cell::new(0);
        let make = |row: &str| {
            made.set(made.get() + 1);
            Some(row.to_uppercase().into_bytes())
        };
        let (first, second) = (String::from(r#"{"a": 1}"#), String::from(r#"{"b": 2}"#));
        let sample = Sample {
            row: &first,
            ..Sample::default()
        };
        assert_eq!(
            sample.row_memo.get(sample.row, make).as_deref(),
            Some(&br#"{"A": 1}"#[..])
        );
        assert_eq!(
            sample.row_memo.get(sample.row, make).as_deref(),
            Some(&br#"{"A": 1}"#[..])
        );
        assert_eq!(made.get(), 1);
        let other = Sample {
            row: &second,
            ..sample.clone()
        };
        assert_eq!(
            other.row_memo.get(other.row, make).as_deref(),
            Some(&br#"{"B": 2}"#[..])
        );
        assert_eq!(made.get(), 2);
    }

    /// What the scanner and serde make of an `expected:` block written as `text`.
    fn both_read(text: &str) -> (Option<Expected>, Option<Expected>) {
        let scanned = Expected::scan(&mut Scanner::new(text)).map(|e| *e);
        (scanned, serde_json::from_str(text).ok())
    }

    /// A value of `key`'s type that serde reads, as a row writes it.
    fn value_of(key: &str) -> &'static str {
        [r#"["a", "b"]"#, r#""a""#, "3", "true", r#"{"k": 1}"#]
            .into_iter()
            .find(|value| both_read(&format!(r#"{{"{key}": {value}}}"#)).1.is_some())
            .unwrap_or_else(|| panic!("no value of `expected.{key}` reads"))
    }

    #[test]
    fn the_expected_scanner_reads_every_field_serde_reads() {
        let keys = serde_fields::<Expected>();
        assert!(keys.len() >= 13, "{keys:?}");
        for key in keys {
            let value = value_of(key);
            for text in [
                format!(r#"{{"{key}": {value}}}"#),
                format!(r#"{{"{key}": null}}"#),
            ] {
                let (scanned, read) = both_read(&text);
                assert_eq!(scanned, read, "the scanner's arm for `{key}`: {text}");
            }
            // Each key has a seen-bit of its own: twice is refused (as serde refuses it), and
            // beside any other key it is read.
            let twice = format!(r#"{{"{key}": {value}, "{key}": {value}}}"#);
            assert_eq!(both_read(&twice), (None, None), "{twice}");
            for other in keys.iter().filter(|other| *other != key) {
                let text = format!(r#"{{"{key}": {value}, "{other}": {}}}"#, value_of(other));
                let (scanned, read) = both_read(&text);
                assert!(read.is_some(), "{text}");
                assert_eq!(
                    scanned, read,
                    "the scanner's arms for `{key}` and `{other}`"
                );
            }
        }
    }

    #[test]
    fn texts_are_one_text_or_one_per_turn_and_nothing_else() {
        let read = |json: &str| serde_json::from_str::<Texts>(json).map_err(|e| e.to_string());
        assert_eq!(read(r#""plain""#), Ok(Texts::One("plain".into())));
        assert_eq!(read(r#""a\nb""#), Ok(Texts::One("a\nb".into())));
        assert_eq!(
            read(r#"["x", "y\"z"]"#),
            Ok(Texts::PerTurn(vec!["x".into(), "y\"z".into()]))
        );
        assert_eq!(read("[]"), Ok(Texts::PerTurn(Vec::new())));
        assert_eq!(
            read("5"),
            Err("invalid type: integer `5`, expected a string or a list of strings at line 1 column 1".into())
        );
        assert!(
            read(r#"["x", 1]"#)
                .unwrap_err()
                .contains("expected a string")
        );
        assert!(read(r#"{"x": "y"}"#).is_err());
        let row: RawRow = serde_json::from_str(r#"{"input": null, "ground_truth": "g"}"#).unwrap();
        assert_eq!(
            (row.input, row.ground_truth),
            (None, Some(Texts::One("g".into())))
        );
    }
}
