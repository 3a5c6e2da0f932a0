//! Rubric templates: the strict subset of Python's `str.format` that letta-evals rubrics use.
//!
//! Only plain `{name}` placeholders and the `{{`/`}}` escapes are accepted. Conversions
//! (`{x!r}`), format specs (`{x:>5}`), attribute access and indexing (`{x.y}`, `{x[0]}`) and
//! positional fields (`{}`, `{0}`) are rejected when the template is parsed, so a rubric never
//! behaves differently from what it looks like.

use serde_json::{Map, Value};

use crate::grade::python::repr_str;
use crate::input::sample::{Sample, Texts};

/// The variables every rubric may use; a sample's `rubric_vars` may not redefine them.
pub const RESERVED: [&str; 3] = ["input", "ground_truth", "submission"];

#[derive(Debug, Clone, PartialEq)]
enum Segment {
    Literal(String),
    Placeholder(String),
}

/// A parsed rubric.
#[derive(Debug, Clone, PartialEq)]
pub struct Template {
    segments: Vec<Segment>,
}

/// Why a rubric text is not a valid template. `position` is a 0-based character offset.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum TemplateError {
    #[error(
        "unmatched '{{' at position {position}: close the placeholder with '}}', or write '{{{{' for a literal brace"
    )]
    Unclosed { position: usize },
    #[error("single '}}' at position {position}: write '}}}}' for a literal brace")]
    StrayClose { position: usize },
    #[error(
        "placeholder {{{field}}} at position {position} {problem}; only plain {{name}} placeholders are supported (write '{{{{' and '}}}}' for literal braces)"
    )]
    Unsupported {
        field: String,
        position: usize,
        problem: &'static str,
    },
}

impl Template {
    pub fn parse(text: &str) -> Result<Template, TemplateError> {
        let mut segments = Vec::new();
        let mut literal = String::new();
        let mut chars = text.chars().enumerate().peekable();
        while let Some((position, c)) = chars.next() {
            match c {
                '{' if chars.next_if(|&(_, next)| next == '{').is_some() => literal.push('{'),
                '}' if chars.next_if(|&(_, next)| next == '}').is_some() => literal.push('}'),
                '}' => return Err(TemplateError::StrayClose { position }),
                '{' => {
                    let mut field = String::new();
                    loop {
                        match chars.next() {
                            None => return Err(TemplateError::Unclosed { position }),
                            Some((_, '}')) => break,
                            Some((_, c)) => field.push(c),
                        }
                    }
                    check_field(&field, position)?;
                    if !literal.is_empty() {
                        segments.push(Segment::Literal(std::mem::take(&mut literal)));
                    }
                    segments.push(Segment::Placeholder(field));
                }
                c => literal.push(c),
            }
        }
        if !literal.is_empty() {
            segments.push(Segment::Literal(literal));
        }
        Ok(Template { segments })
    }

    /// The placeholder names, in order of first use.
    pub fn placeholders(&self) -> Vec<&str> {
        let mut names: Vec<&str> = Vec::new();
        for segment in &self.segments {
            if let Segment::Placeholder(name) = segment
                && !names.contains(&name.as_str())
            {
                names.push(name);
            }
        }
        names
    }

    /// Fills the placeholders from the sample and the submission, as letta-evals'
    /// `build_judge_prompt` does.
    pub fn render(&self, sample: &Sample<'_>, submission: &str) -> Result<String, String> {
        check_reserved(&sample.rubric_vars)?;
        let mut out = String::new();
        for segment in &self.segments {
            match segment {
                Segment::Literal(text) => out.push_str(text),
                Segment::Placeholder(name) => match name.as_str() {
                    "input" => {
                        out.push_str(&sample.input.as_ref().map(texts_str).unwrap_or_default())
                    }
                    "ground_truth" => out.push_str(
                        &sample
                            .ground_truth
                            .as_ref()
                            .map(texts_str)
                            .unwrap_or_default(),
                    ),
                    "submission" => out.push_str(submission),
                    other => match sample.rubric_vars.get(other) {
                        Some(value) => python_str(value, &mut out),
                        None => return Err(unknown_placeholder(other, &sample.rubric_vars)),
                    },
                },
            }
        }
        Ok(out)
    }

    /// The first placeholder that neither the reserved variables nor `vars` provide.
    pub fn check_vars(&self, vars: &Map<String, Value>) -> Result<(), String> {
        match self
            .placeholders()
            .into_iter()
            .find(|name| !RESERVED.contains(name) && !vars.contains_key(*name))
        {
            Some(name) => Err(unknown_placeholder(name, vars)),
            None => Ok(()),
        }
    }
}

fn check_field(field: &str, position: usize) -> Result<(), TemplateError> {
    let unsupported = |problem| TemplateError::Unsupported {
        field: field.to_string(),
        position,
        problem,
    };
    if field.contains('{') {
        Err(unsupported("contains a nested '{'"))
    } else if field.contains('!') {
        Err(unsupported("has a conversion ('!')"))
    } else if field.contains(':') {
        Err(unsupported("has a format spec (':')"))
    } else if field.contains('[') || field.contains(']') {
        Err(unsupported("uses indexing ('[...]')"))
    } else if field.contains('.') {
        Err(unsupported("uses attribute access ('.')"))
    } else if field.is_empty() || field.chars().all(|c| c.is_ascii_digit()) {
        Err(unsupported(
            "is positional; name a variable such as {input}",
        ))
    } else {
        Ok(())
    }
}

/// letta-evals refuses `rubric_vars` that would shadow a reserved variable.
pub fn check_reserved(vars: &Map<String, Value>) -> Result<(), String> {
    match RESERVED.iter().find(|name| vars.contains_key(**name)) {
        Some(name) => Err(format!(
            "rubric_vars key '{name}' collides with a reserved variable. Reserved names: ('input', 'ground_truth', 'submission')"
        )),
        None => Ok(()),
    }
}

fn unknown_placeholder(name: &str, vars: &Map<String, Value>) -> String {
    let mut available: Vec<&str> = vars.keys().map(String::as_str).chain(RESERVED).collect();
    available.sort_unstable();
    available.dedup();
    let listed: Vec<String> = available.iter().map(|name| repr_str(name)).collect();
    format!(
        "Rubric references {{{name}}} but no value was provided. Available variables: [{}]. Reserved variables (['input', 'ground_truth', 'submission']) come from the Sample; add other variables via sample.rubric_vars.",
        listed.join(", ")
    )
}

/// Python's `str()` of a sample's text: a list renders as `['a', 'b']`.
fn texts_str(texts: &Texts) -> String {
    match texts {
        Texts::One(s) => s.clone(),
        Texts::PerTurn(items) => {
            let parts: Vec<String> = items.iter().map(|s| repr_str(s)).collect();
            format!("[{}]", parts.join(", "))
        }
    }
}

/// Python's `str()` of a JSON value as `json.loads` would have produced it: strings verbatim,
/// everything else as its Python repr (`True`, `None`, `{'a': 1}`, `0.5`, `1e+20`).
fn python_str(value: &Value, out: &mut String) {
    match value {
        Value::String(s) => out.push_str(s),
        other => python_repr(other, out),
    }
}

fn python_repr(value: &Value, out: &mut String) {
    match value {
        Value::Null => out.push_str("None"),
        Value::Bool(true) => out.push_str("True"),
        Value::Bool(false) => out.push_str("False"),
        Value::Number(n) => match (n.as_i64(), n.as_u64(), n.as_f64()) {
            (Some(i), _, _) => out.push_str(&i.to_string()),
            (_, Some(u), _) => out.push_str(&u.to_string()),
            (_, _, Some(f)) => out.push_str(&python_float_repr(f)),
            _ => out.push_str(&n.to_string()),
        },
        Value::String(s) => out.push_str(&repr_str(s)),
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                python_repr(item, out);
            }
            out.push(']');
        }
        Value::Object(map) => {
            out.push('{');
            for (i, (key, item)) in map.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                out.push_str(&repr_str(key));
                out.push_str(": ");
                python_repr(item, out);
            }
            out.push('}');
        }
    }
}

/// Python's `repr(float)`: the shortest round-tripping digits, in positional notation for
/// decimal exponents from -4 to 15 and in scientific notation (`1e+16`, `1.5e-07`) beyond.
fn python_float_repr(f: f64) -> String {
    if f.is_nan() {
        return "nan".into();
    }
    if f.is_infinite() {
        return if f > 0.0 { "inf" } else { "-inf" }.into();
    }
    // Rust's `{:e}` gives the same shortest digits as Python, as `d.ddde<exp>`.
    let sci = format!("{f:e}");
    let (mantissa, exp) = sci.split_once('e').unwrap_or((&sci, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    let (sign, mantissa) = match mantissa.strip_prefix('-') {
        Some(rest) => ("-", rest),
        None => ("", mantissa),
    };
    let digits: String = mantissa.chars().filter(|c| *c != '.').collect();
    if (-4..16).contains(&exp) {
        let point = exp + 1;
        let body = if point <= 0 {
            format!("0.{}{digits}", "0".repeat(point.unsigned_abs() as usize))
        } else if point as usize >= digits.len() {
            format!("{digits}{}.0", "0".repeat(point as usize - digits.len()))
        } else {
            let (int, frac) = digits.split_at(point as usize);
            format!("{int}.{frac}")
        };
        format!("{sign}{body}")
    } else {
        let exp_sign = if exp < 0 { '-' } else { '+' };
        format!("{sign}{mantissa}e{exp_sign}{:02}", exp.unsigned_abs())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn sample_from(json: &Value) -> Sample<'_> {
        let texts = |v: Option<&Value>| {
            v.filter(|v| !v.is_null())
                .map(|v| serde_json::from_value::<Texts>(v.clone()).expect("texts"))
        };
        Sample {
            input: texts(json.get("input")),
            ground_truth: texts(json.get("ground_truth")),
            rubric_vars: json
                .get("rubric_vars")
                .and_then(Value::as_object)
                .cloned()
                .unwrap_or_default(),
            rubric: json.get("rubric").and_then(Value::as_str).map(String::from),
            ..Sample::default()
        }
    }

    /// Every `judge_prompt` vector recorded from letta-evals: the rendered prompt where Python
    /// rendered one, the same error where Python raised, and a parse error where the vector
    /// relies on `str.format` features outside the supported subset.
    #[test]
    fn letta_templating_vectors() {
        let text = include_str!("../../../tests/data/conformance/letta-vectors-extra.json");
        let vectors: Vec<Value> = serde_json::from_str(text).expect("vector file");
        let mut seen = 0;
        let mut refused = 0;
        for vector in vectors.iter().filter(|v| v["kind"] == "judge_prompt") {
            seen += 1;
            let rubric = vector["config"]["rubric"].as_str().expect("rubric");
            let sample = sample_from(&vector["sample"]);
            let submission = vector["submission"].as_str().expect("submission");
            let expected = &vector["expected"];
            let template = match Template::parse(rubric) {
                Ok(template) => template,
                Err(err @ TemplateError::Unsupported { .. }) => {
                    // Python's live format mini-language, or un-doubled JSON braces that
                    // Python reports only when rendering: gavel refuses both when parsing.
                    let note = vector["note"].as_str().unwrap_or_default();
                    assert!(
                        note.contains("format") || note.contains("JSON"),
                        "{rubric}: {err}"
                    );
                    refused += 1;
                    continue;
                }
                Err(err) => panic!("{rubric}: {err}"),
            };
            let rendered = template.render(&sample, submission);
            match (expected.as_str(), expected["error"]["message"].as_str()) {
                (Some(prompt), _) => assert_eq!(rendered.as_deref(), Ok(prompt), "{rubric}"),
                (None, Some(message)) => assert_eq!(rendered, Err(message.to_string())),
                (None, None) => panic!("unexpected vector shape: {vector}"),
            }
        }
        assert_eq!(refused, 2);
        assert_eq!(seen, 10);
    }

    #[test]
    fn python_only_syntax_is_rejected_with_its_position() {
        let cases = [
            ("{submission!r}", "conversion"),
            ("ab{ground_truth:>5}", "format spec"),
            ("{input[0]}", "indexing"),
            ("{input.upper}", "attribute access"),
            ("{}", "positional"),
            ("{0}", "positional"),
            ("{a{b}}", "nested"),
        ];
        for (text, problem) in cases {
            let err = Template::parse(text).expect_err(text).to_string();
            assert!(err.contains(problem), "{text}: {err}");
        }
        assert_eq!(
            Template::parse("ab{ground_truth:>5}"),
            Err(TemplateError::Unsupported {
                field: "ground_truth:>5".into(),
                position: 2,
                problem: "has a format spec (':')",
            })
        );
        assert_eq!(
            Template::parse("x {input"),
            Err(TemplateError::Unclosed { position: 2 })
        );
        assert_eq!(
            Template::parse("é } x"),
            Err(TemplateError::StrayClose { position: 2 })
        );
    }

    #[test]
    fn escapes_and_placeholder_listing() {
        let template = Template::parse("{{{k}}} {k} {{x}} {input}").expect("parse");
        assert_eq!(template.placeholders(), vec!["k", "input"]);
        let sample = Sample {
            rubric_vars: json!({"k": "v"}).as_object().cloned().unwrap_or_default(),
            ..Sample::default()
        };
        assert_eq!(template.render(&sample, "s").as_deref(), Ok("{v} v {x} "));
        assert!(template.check_vars(&sample.rubric_vars).is_ok());
        let err = template.check_vars(&Map::new()).expect_err("k is unknown");
        assert!(
            err.starts_with("Rubric references {k} but no value"),
            "{err}"
        );
    }

    #[test]
    fn rubric_vars_render_as_python_str() {
        let cases = [
            (json!(0.1), "0.1"),
            (json!(1.0), "1.0"),
            (json!(-2.5), "-2.5"),
            (json!(1e16), "1e+16"),
            (json!(1.5e-7), "1.5e-07"),
            (json!(123456789012345.0), "123456789012345.0"),
            (json!(0.0001), "0.0001"),
            (json!(-7), "-7"),
            (json!(u64::MAX), "18446744073709551615"),
            (json!(false), "False"),
            (json!([1, "a", null, [true]]), "[1, 'a', None, [True]]"),
            (
                json!({"b": {"c": []}, "a": 2.0}),
                "{'b': {'c': []}, 'a': 2.0}",
            ),
            (json!("plain text"), "plain text"),
        ];
        for (value, expected) in cases {
            let mut out = String::new();
            python_str(&value, &mut out);
            assert_eq!(out, expected, "{value}");
        }
    }

    #[test]
    fn reserved_collision_is_refused() {
        let vars = json!({"ground_truth": "x"})
            .as_object()
            .cloned()
            .unwrap_or_default();
        let err = check_reserved(&vars).expect_err("collision");
        assert!(
            err.starts_with("rubric_vars key 'ground_truth' collides"),
            "{err}"
        );
    }
}
