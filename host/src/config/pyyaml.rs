//! YAML read as PyYAML 6's `yaml.safe_load` reads it, as letta-evals reads its suites and
//! evaldeck its case files.
//!
//! PyYAML follows YAML 1.1: a plain scalar is a boolean when it is one of `yes`, `no`, `on`,
//! `off`, `true`, `false` in lower, capitalised or upper case (`y` and `n` stay text), a null
//! when it is `~`, `null`, `Null`, `NULL` or empty, an integer in binary (`0b`), octal (a
//! leading `0`), hexadecimal (`0x`), decimal or base 60 (`1:20`), with `_` anywhere after the
//! first digit, and a float only with a dot (`1.0e+3`; `1e3` is text) or as `.inf`/`.nan`.
//! Quoted and block scalars are text. Merge keys (`<<`) and anchors are followed; a key given
//! twice keeps its last value, where it first stood.
//!
//! What PyYAML makes that a JSON value cannot hold is refused, located: dates and times,
//! infinities and NaN, integers beyond 64 bits, keys that are not text, and the tags gavel
//! has no value for (`!!binary`, `!!set`, `!!omap`, `!!pairs`, a local `!tag`).

use std::collections::HashMap;
use std::path::Path;
use std::sync::LazyLock;

use granit_parser::{Event, Options, Parser, ScalarStyle, ScanError, Span, StrInput, Tag};
use regex::Regex;
use serde_json::{Map, Number, Value};

use crate::config::error::SuiteError;

/// The values one YAML file may hold once its aliases are followed (each alias counts the
/// values it repeats): the limit that refuses an alias chain (`a: &a [x, x]`, `b: &b [*a, *a]`,
/// `c: [*b, *b]`, ... multiplying at each step) before it is built, for a suite's strict
/// reading (serde-saphyr's node budget) and for the PyYAML reading of suites and evaldeck case
/// files alike. A scalar, a list and a mapping are one value each.
pub(crate) const MAX_NODES: usize = 250_000;

/// The namespace of YAML's own tags (`!!str` is `tag:yaml.org,2002:str`).
const YAML_TAGS: &str = "tag:yaml.org,2002:";

/// What PyYAML's resolver makes of a plain scalar's text.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Implicit {
    Bool,
    Float,
    Int,
    Merge,
    Null,
    Timestamp,
    Value,
    Str,
}

/// The YAML 1.1 type patterns PyYAML's resolver tries, in its order.
static PATTERNS: LazyLock<Vec<(Implicit, Regex)>> = LazyLock::new(|| {
    [
        (
            Implicit::Bool,
            r"^(?:yes|Yes|YES|no|No|NO|true|True|TRUE|false|False|FALSE|on|On|ON|off|Off|OFF)$",
        ),
        (
            Implicit::Float,
            r"^(?:[-+]?(?:[0-9][0-9_]*)\.[0-9_]*(?:[eE][-+][0-9]+)?|\.[0-9][0-9_]*(?:[eE][-+][0-9]+)?|[-+]?[0-9][0-9_]*(?::[0-5]?[0-9])+\.[0-9_]*|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN))$",
        ),
        (
            Implicit::Int,
            r"^(?:[-+]?0b[0-1_]+|[-+]?0[0-7_]+|[-+]?(?:0|[1-9][0-9_]*)|[-+]?0x[0-9a-fA-F_]+|[-+]?[1-9][0-9_]*(?::[0-5]?[0-9])+)$",
        ),
        (Implicit::Merge, r"^<<$"),
        (Implicit::Null, r"^(?:~|null|Null|NULL|)$"),
        (
            Implicit::Timestamp,
            r"^(?:[0-9]{4}-[0-9]{2}-[0-9]{2}|[0-9]{4}-[0-9]{1,2}-[0-9]{1,2}(?:[Tt]|[ \t]+)[0-9]{1,2}:[0-9]{2}:[0-9]{2}(?:\.[0-9]*)?(?:[ \t]*(?:Z|[-+][0-9]{1,2}(?::[0-9]{2})?))?)$",
        ),
        (Implicit::Value, r"^=$"),
    ]
    .into_iter()
    .map(|(kind, pattern)| (kind, Regex::new(pattern).expect("a valid pattern")))
    .collect()
});

/// The type PyYAML resolves an untagged plain scalar to.
fn resolve(text: &str) -> Implicit {
    PATTERNS
        .iter()
        .find(|(_, pattern)| pattern.is_match(text))
        .map_or(Implicit::Str, |(kind, _)| *kind)
}

/// Why a scalar has no value, and how to make it text.
struct Refused {
    message: String,
    hint: Option<String>,
}

impl Refused {
    fn new(message: impl Into<String>) -> Refused {
        Refused {
            message: message.into(),
            hint: None,
        }
    }

    /// A value PyYAML makes that gavel cannot hold: quoting the scalar makes it text.
    fn unheld(what: &str) -> Refused {
        Refused {
            message: format!("PyYAML reads this as {what}, which gavel does not hold"),
            hint: Some("quote it to make it text".into()),
        }
    }

    fn hinted(mut self, hint: &str) -> Refused {
        self.hint = Some(hint.into());
        self
    }
}

/// A scalar's value as PyYAML constructs it for its tag (`None` tag: its resolved type).
fn construct(text: &str, style: ScalarStyle, tag: Option<&Tag>) -> Result<Value, Refused> {
    let kind = match tag.map(|tag| (tag.suffix_in_namespace(YAML_TAGS), tag)) {
        // No tag, or the non-specific `!`: resolved as written.
        None => implicit(text, style),
        Some((None, tag)) if tag.original() == "!" => implicit(text, style),
        Some((Some(name), _)) => match name.as_ref() {
            "str" => Implicit::Str,
            "bool" => Implicit::Bool,
            "int" => Implicit::Int,
            "float" => Implicit::Float,
            "null" => Implicit::Null,
            "timestamp" => Implicit::Timestamp,
            "merge" => Implicit::Merge,
            "value" => Implicit::Value,
            other => {
                return Err(Refused::unheld(&format!("a `!!{other}` value")));
            }
        },
        Some((None, tag)) => {
            return Err(Refused::new(format!(
                "PyYAML has no constructor for the tag `{}`",
                tag.original()
            ))
            .hinted("remove the tag"));
        }
    };
    match kind {
        Implicit::Str => Ok(Value::String(text.to_string())),
        Implicit::Null => Ok(Value::Null),
        Implicit::Bool => match text.to_lowercase().as_str() {
            "yes" | "true" | "on" => Ok(Value::Bool(true)),
            "no" | "false" | "off" => Ok(Value::Bool(false)),
            _ => Err(Refused::new(format!("`{text}` is not a YAML 1.1 boolean"))),
        },
        Implicit::Int => int(text).map(Value::Number),
        Implicit::Float => float(text).map(Value::Number),
        Implicit::Timestamp => Err(Refused::unheld("a date (`datetime`)")),
        Implicit::Merge | Implicit::Value => Err(Refused::new(format!(
            "PyYAML reads `{text}` as a YAML 1.1 `{}` marker, which has no value here",
            if kind == Implicit::Merge {
                "merge"
            } else {
                "value"
            }
        ))
        .hinted("quote it to make it text")),
    }
}

/// An untagged scalar's type: plain scalars resolved, the others text.
fn implicit(text: &str, style: ScalarStyle) -> Implicit {
    if style == ScalarStyle::Plain {
        resolve(text)
    } else {
        Implicit::Str
    }
}

/// The sign of a number's text, and the text after it.
fn signed(text: &str) -> (i128, &str) {
    match text.as_bytes().first() {
        Some(b'-') => (-1, &text[1..]),
        Some(b'+') => (1, &text[1..]),
        _ => (1, text),
    }
}

/// A YAML 1.1 integer as PyYAML constructs it: `_` dropped, then binary, hexadecimal, octal
/// (a leading `0`, or `0o` under an explicit tag), base 60 or decimal.
fn int(text: &str) -> Result<Number, Refused> {
    let cleaned = text.replace('_', "");
    let (sign, digits) = signed(&cleaned);
    let not_int = || Refused::new(format!("`{text}` is not an integer"));
    let parse = |digits: &str, radix: u32| {
        if digits.starts_with(['+', '-']) {
            return Err(not_int());
        }
        i128::from_str_radix(digits, radix).map_err(|_| not_int())
    };
    let magnitude = if digits == "0" {
        0
    } else if let Some(rest) = digits.strip_prefix("0b") {
        parse(rest, 2)?
    } else if let Some(rest) = digits.strip_prefix("0x") {
        parse(rest, 16)?
    } else if digits.starts_with('0') {
        let rest = digits
            .strip_prefix("0o")
            .or_else(|| digits.strip_prefix("0O"))
            .unwrap_or(digits);
        parse(rest, 8)?
    } else if digits.contains(':') {
        digits.split(':').try_fold(0i128, |total, part| {
            total
                .checked_mul(60)
                .and_then(|total| total.checked_add(parse(part, 10).ok()?))
                .ok_or_else(not_int)
        })?
    } else {
        parse(digits, 10)?
    };
    let value = sign * magnitude;
    i64::try_from(value)
        .map(Number::from)
        .or_else(|_| u64::try_from(value).map(Number::from))
        .map_err(|_| Refused::unheld("an integer beyond 64 bits"))
}

/// A YAML 1.1 float as PyYAML constructs it: `_` dropped, `.inf`, `.nan`, base 60 or decimal.
fn float(text: &str) -> Result<Number, Refused> {
    let cleaned = text.replace('_', "").to_lowercase();
    let (sign, digits) = signed(&cleaned);
    let not_float = || Refused::new(format!("`{text}` is not a number"));
    let parse = |digits: &str| {
        if digits.starts_with(['+', '-']) {
            return Err(not_float());
        }
        digits.trim().parse::<f64>().map_err(|_| not_float())
    };
    let magnitude = match digits {
        ".inf" => f64::INFINITY,
        ".nan" => f64::NAN,
        _ if digits.contains(':') => digits
            .split(':')
            .try_fold(0.0, |total, part| Ok(total * 60.0 + parse(part)?))?,
        _ => parse(digits)?,
    };
    Number::from_f64(sign as f64 * magnitude).ok_or_else(|| Refused::unheld("an infinity or NaN"))
}

/// Reads the one document of YAML `text` (of `file`) as `yaml.safe_load` does: an empty
/// document is null. Errors name the file, line, column and the field's path.
pub fn load(file: &Path, text: &str) -> Result<Value, SuiteError> {
    let (value, mut refused) = load_all(file, text)?;
    if refused.is_empty() {
        Ok(value)
    } else {
        Err(refused.swap_remove(0))
    }
}

/// [`load`], with each entry whose key is not text refused and left out rather than ending
/// the reading: the value of the rest, and the entries refused.
pub fn load_all(file: &Path, text: &str) -> Result<(Value, Vec<SuiteError>), SuiteError> {
    let mut options = Options::default();
    options.set_emit_comments(false);
    // `|` and `>` scalars that end the file without a line break end without one in PyYAML.
    options.block_scalar_eof_without_line_feed = true;
    let mut loader = Loader {
        file,
        events: Parser::new_from_str_with_options(text, options),
        anchors: HashMap::new(),
        made: 0,
        refused: Vec::new(),
    };
    let mut value = Value::Null;
    let mut documents = 0;
    while let Some((event, span)) = loader.next()? {
        match event {
            Event::DocumentStart(..) => {
                documents += 1;
                if documents > 1 {
                    return Err(loader
                        .error(&span, "", "PyYAML reads one document; this is a second")
                        .with_hint("keep one document a file"));
                }
                let (event, span) = loader.expect()?;
                value = loader.node(event, &span, "")?;
            }
            Event::StreamStart | Event::DocumentEnd | Event::StreamEnd => {}
            _ => return Err(loader.error(&span, "", "unexpected YAML content")),
        }
    }
    Ok((value, loader.refused))
}

/// Builds values from the parser's events.
struct Loader<'a> {
    file: &'a Path,
    events: Parser<'a, StrInput<'a>>,
    /// The value of each anchor seen, by the parser's anchor id, with the values it holds.
    anchors: HashMap<usize, (Value, usize)>,
    /// The values made so far, those repeated by aliases included (see [`MAX_NODES`]).
    made: usize,
    /// The entries left out for a key that is not text.
    refused: Vec<SuiteError>,
}

impl<'a> Loader<'a> {
    fn next(&mut self) -> Result<Option<(Event<'a>, Span)>, SuiteError> {
        self.events
            .next()
            .transpose()
            .map_err(|e| self.syntax_error(&e))
    }

    /// The next event, which the document's structure requires.
    fn expect(&mut self) -> Result<(Event<'a>, Span), SuiteError> {
        self.next()?
            .ok_or_else(|| SuiteError::at(self.file, "", "the YAML ends early"))
    }

    fn syntax_error(&self, error: &ScanError) -> SuiteError {
        let marker = error.marker();
        SuiteError {
            line: Some(marker.line() as u64),
            column: Some(marker.col() as u64 + 1),
            ..SuiteError::at(self.file, "", error.info())
        }
    }

    fn error(&self, span: &Span, field: &str, message: impl Into<String>) -> SuiteError {
        SuiteError {
            line: Some(span.start.line() as u64),
            column: Some(span.start.col() as u64 + 1),
            ..SuiteError::at(self.file, field, message.into())
        }
    }

    /// The node that starts with `event`, at field path `path`.
    fn node(&mut self, event: Event<'a>, span: &Span, path: &str) -> Result<Value, SuiteError> {
        let start = self.made;
        let (value, anchor) = match event {
            Event::Alias(id) => {
                let Some(&(_, nodes)) = self.anchors.get(&id) else {
                    return Err(self.error(
                        span,
                        path,
                        "this alias refers to the node that holds it",
                    ));
                };
                self.count(nodes, span, path)?;
                (self.anchors[&id].0.clone(), 0)
            }
            Event::Scalar(text, style, anchor, tag) => {
                self.count(1, span, path)?;
                let value = construct(&text, style, tag.as_deref()).map_err(|refused| {
                    let error = self.error(span, path, refused.message);
                    match refused.hint {
                        Some(hint) => error.with_hint(hint),
                        None => error,
                    }
                })?;
                (value, anchor)
            }
            Event::SequenceStart(_, anchor, tag) => {
                self.count(1, span, path)?;
                self.collection_tag(tag.as_deref(), "seq", span, path)?;
                let mut items = Vec::new();
                loop {
                    let (event, span) = self.expect()?;
                    if matches!(event, Event::SequenceEnd) {
                        break;
                    }
                    let item = self.node(event, &span, &format!("{path}[{}]", items.len()))?;
                    items.push(item);
                }
                (Value::Array(items), anchor)
            }
            Event::MappingStart(_, anchor, tag) => {
                self.count(1, span, path)?;
                self.collection_tag(tag.as_deref(), "map", span, path)?;
                (Value::Object(self.mapping(path)?), anchor)
            }
            _ => return Err(self.error(span, path, "unexpected YAML content")),
        };
        if anchor != 0 {
            self.anchors
                .insert(anchor, (value.clone(), self.made - start));
        }
        Ok(value)
    }

    /// Counts `nodes` more values made at `span`, refused past [`MAX_NODES`].
    fn count(&mut self, nodes: usize, span: &Span, path: &str) -> Result<(), SuiteError> {
        self.made += nodes;
        if self.made <= MAX_NODES {
            return Ok(());
        }
        Err(self
            .error(
                span,
                path,
                format!(
                    "the file holds more than {MAX_NODES} values once its aliases are followed \
                     (aliases of aliases multiply): it is refused rather than built"
                ),
            )
            .with_hint("write the values out, or use fewer aliases"))
    }

    /// Refuses a tag on a collection other than its own (`!!map`, `!!seq`) or `!`.
    fn collection_tag(
        &self,
        tag: Option<&Tag>,
        own: &str,
        span: &Span,
        path: &str,
    ) -> Result<(), SuiteError> {
        let Some(tag) = tag else { return Ok(()) };
        if tag.original() == "!" || tag.suffix_in_namespace(YAML_TAGS).as_deref() == Some(own) {
            return Ok(());
        }
        Err(self
            .error(
                span,
                path,
                format!("gavel reads no `{}` collection", tag.original()),
            )
            .with_hint("remove the tag"))
    }

    /// A mapping's entries after its start: its merge keys' entries first, in the order
    /// written, then its own; a later value of a key replaces an earlier one where the key
    /// first stood. PyYAML 6.0.4 keeps only the first of merged entries whose keys are the same
    /// Python object, which CPython makes of every empty or one-character (Latin-1) key.
    fn mapping(&mut self, path: &str) -> Result<Map<String, Value>, SuiteError> {
        let mut merged: Vec<(String, Value)> = Vec::new();
        let mut own: Vec<(String, Value)> = Vec::new();
        let merge_in = |merged: &mut Vec<(String, Value)>, map: Map<String, Value>| {
            for (key, value) in map {
                let shared = key.chars().nth(1).is_none() && key.chars().all(|c| c <= '\u{ff}');
                if !(shared && merged.iter().any(|(k, _)| *k == key)) {
                    merged.push((key, value));
                }
            }
        };
        loop {
            let (event, span) = self.expect()?;
            if matches!(event, Event::MappingEnd) {
                break;
            }
            let merge = match &event {
                Event::Scalar(text, ScalarStyle::Plain, _, None) => text == "<<",
                Event::Scalar(_, _, _, Some(tag)) => {
                    tag.suffix_in_namespace(YAML_TAGS).as_deref() == Some("merge")
                }
                _ => false,
            };
            if merge {
                let (event, span) = self.expect()?;
                let field = join(path, "<<");
                let value = self.node(event, &span, &field)?;
                let not_mappings = || {
                    self.error(
                        &span,
                        &field,
                        "a merge key takes a mapping or a list of mappings",
                    )
                };
                let maps = match value {
                    Value::Object(map) => vec![map],
                    Value::Array(items) => items
                        .into_iter()
                        .map(|item| match item {
                            Value::Object(map) => Ok(map),
                            _ => Err(not_mappings()),
                        })
                        .collect::<Result<Vec<_>, _>>()?,
                    _ => return Err(not_mappings()),
                };
                for map in maps {
                    merge_in(&mut merged, map);
                }
                continue;
            }
            let written = match &event {
                Event::Scalar(text, ..) => join(path, text),
                _ => path.to_string(),
            };
            let key = self.node(event, &span, path)?;
            let (event, value_span) = self.expect()?;
            let Value::String(key) = key else {
                self.node(event, &value_span, &written)?;
                let refused = self
                    .error(
                        &span,
                        &written,
                        format!("PyYAML reads this key as {}, not text", kind_of(&key)),
                    )
                    .with_hint("quote the key to make it text");
                self.refused.push(refused);
                continue;
            };
            let value = self.node(event, &value_span, &join(path, &key))?;
            own.push((key, value));
        }
        let mut map = Map::new();
        for (key, value) in merged.into_iter().chain(own) {
            map.insert(key, value);
        }
        Ok(map)
    }
}

/// `key` under `path`, dotted.
pub(crate) fn join(path: &str, key: &str) -> String {
    if path.is_empty() {
        key.to_string()
    } else {
        format!("{path}.{key}")
    }
}

/// A value's kind, in words.
fn kind_of(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "text",
        Value::Array(_) => "a list",
        Value::Object(_) => "a mapping",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::grade::python::python_repr;

    /// A scalar as PyYAML read it, recorded by `record_pyyaml_scalars.py`.
    #[derive(serde::Deserialize)]
    struct Vector {
        yaml: String,
        #[serde(rename = "type")]
        kind: Option<String>,
        repr: Option<String>,
    }

    fn load_str(text: &str) -> Result<Value, SuiteError> {
        load(Path::new("case.yaml"), text)
    }

    /// Whether gavel holds what PyYAML made: JSON's kinds, finite floats, 64-bit integers.
    fn held(kind: &str, repr: &str) -> bool {
        match kind {
            "str" | "bool" | "NoneType" | "list" | "dict" => true,
            "int" => repr.parse::<i64>().is_ok() || repr.parse::<u64>().is_ok(),
            "float" => repr.parse::<f64>().is_ok_and(f64::is_finite),
            _ => false,
        }
    }

    #[test]
    fn scalars_read_as_pyyaml_reads_them() {
        let path = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/data/conformance/pyyaml-scalars.json"
        );
        let text = std::fs::read_to_string(path).expect("the recorded scalars");
        let recorded: Value = serde_json::from_str(&text).expect("JSON");
        let vectors: Vec<Vector> =
            serde_json::from_value(recorded["vectors"].clone()).expect("vectors");
        assert!(vectors.len() > 150, "{}", vectors.len());
        for vector in vectors {
            let read = load_str(&format!("v: {}", vector.yaml));
            match (vector.kind.as_deref(), vector.repr.as_deref()) {
                (Some(kind), Some(repr)) if held(kind, repr) => {
                    let value = read.unwrap_or_else(|e| panic!("{:?}: {e}", vector.yaml));
                    let mut shown = String::new();
                    python_repr(&value["v"], &mut shown);
                    assert_eq!(shown, repr, "{:?}", vector.yaml);
                    let is_float = value["v"].as_number().is_some_and(Number::is_f64);
                    assert_eq!(is_float, kind == "float", "{:?}", vector.yaml);
                }
                // What PyYAML refuses, or makes and gavel cannot hold: refused, located.
                _ => {
                    let error = read.expect_err(&vector.yaml);
                    assert_eq!(error.line, Some(1), "{:?}: {error}", vector.yaml);
                }
            }
        }
    }

    #[test]
    fn a_refused_scalar_names_its_line_and_field() {
        let error = load_str("name: a\nturns:\n  - user: hi\n    expected:\n      x: 2024-01-01\n")
            .expect_err("a date");
        assert_eq!((error.line, error.column), (Some(5), Some(10)));
        assert_eq!(error.field, "turns[0].expected.x");
        assert!(error.message.contains("a date"), "{}", error.message);
        assert_eq!(error.hint.as_deref(), Some("quote it to make it text"));
        let error = load_str("a: 1\nyes: 2\n").expect_err("a boolean key");
        assert_eq!(error.line, Some(2));
        assert!(error.message.contains("a boolean"), "{}", error.message);
        let error = load_str("a: [1\n").expect_err("unclosed");
        assert_eq!(error.to_string(), "case.yaml:1:4: unclosed bracket '['");
        let error = load_str("a: 1\n---\na: 2\n").expect_err("two documents");
        assert_eq!(error.line, Some(2));
    }

    #[test]
    fn anchors_merge_keys_and_repeated_keys_read_as_pyyaml_reads_them() {
        // Recorded from `yaml.safe_load` with its key order.
        let text = "base: &b {x: 1, y: 2}\nmore: &m {y: 3, z: 4}\n\
                    one: {<<: *b, y: 5}\nboth: {w: 0, <<: [*b, *m]}\n\
                    again: {k: 1, k: 2, j: 3}\nalias: *m\nempty:\n\
                    b2: &b2 {xx: 1, yy: 2}\nm2: &m2 {yy: 3, zz: 4}\n\
                    both2: {ww: 0, <<: [*b2, *m2]}\ntwo: {<<: *b2, <<: *m2}\n";
        let value = load_str(text).expect("loads");
        let mut shown = String::new();
        python_repr(&value, &mut shown);
        assert_eq!(
            shown,
            "{'base': {'x': 1, 'y': 2}, 'more': {'y': 3, 'z': 4}, 'one': {'x': 1, 'y': 5}, \
             'both': {'x': 1, 'y': 2, 'z': 4, 'w': 0}, 'again': {'k': 2, 'j': 3}, \
             'alias': {'y': 3, 'z': 4}, 'empty': None, 'b2': {'xx': 1, 'yy': 2}, \
             'm2': {'yy': 3, 'zz': 4}, 'both2': {'xx': 1, 'yy': 3, 'zz': 4, 'ww': 0}, \
             'two': {'xx': 1, 'yy': 3, 'zz': 4}}"
        );
        assert_eq!(load_str("").expect("empty"), Value::Null);
    }
}
