//! Rubric templates, formatted as letta-evals formats them: Python's
//! `string.Formatter().vformat(rubric, (), values)`, every value a `str` (the sample's input and
//! ground truth, the submission, and each `rubric_vars` value `str()`-ed).
//!
//! What fails on every sample in Python (a syntax error, a positional field, an unknown
//! conversion, a format spec a `str` refuses) is refused when the template is parsed, with
//! Python's own message. What depends on the sample (an unknown variable, an index past the end
//! of a value, a spec built from a variable) is that sample's error when grading.

use std::borrow::Cow;
use std::collections::HashMap;

use serde_json::{Map, Value};

use super::format::{self, Access, Field, Part, PyError};
use crate::grade::python::{python_str, repr_str};
use crate::input::sample::{Sample, Texts};

/// The variables every rubric may use; a sample's `rubric_vars` may not redefine them.
pub const RESERVED: [&str; 3] = ["input", "ground_truth", "submission"];

/// A parsed rubric.
#[derive(Debug, Clone, PartialEq)]
pub struct Template {
    parts: Vec<Part>,
}

/// Why a rubric text fails on every sample. `position` is the 0-based character offset of the
/// replacement field (or of the stray brace).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error(
    "{problem} at position {position}: letta-evals formats the rubric with Python's str.format, \
     which fails on it for every sample (write '{{{{' and '}}}}' for literal braces)"
)]
pub struct TemplateError {
    pub position: usize,
    pub problem: String,
}

impl Template {
    pub fn parse(text: &str) -> Result<Template, TemplateError> {
        let template = Template {
            parts: format::parse(text),
        };
        match first_static_problem(&template.parts) {
            Some(error) => Err(error),
            None => Ok(template),
        }
    }

    /// The variable names, in order of first use.
    pub fn placeholders(&self) -> Vec<&str> {
        let mut names: Vec<&str> = Vec::new();
        collect_names(&self.parts, &mut names);
        names
    }

    /// Fills the fields from the sample and the submission, as letta-evals'
    /// `build_judge_prompt` does.
    pub fn render(&self, sample: &Sample<'_>, submission: &str) -> Result<String, RenderError> {
        check_reserved(&sample.rubric_vars)?;
        let mut values: HashMap<&str, Cow<'_, str>> = HashMap::new();
        let text = |t: &Option<Texts>| t.as_ref().map(texts_str).unwrap_or_default();
        values.insert("input", Cow::Owned(text(&sample.input)));
        values.insert("ground_truth", Cow::Owned(text(&sample.ground_truth)));
        values.insert("submission", Cow::Borrowed(submission));
        for (key, value) in &sample.rubric_vars {
            let mut shown = String::new();
            python_str(value, &mut shown);
            values.insert(key, Cow::Owned(shown));
        }
        let mut out = String::new();
        match format::render(
            &self.parts,
            &|name| values.get(name).map(|v| &**v),
            &mut out,
        ) {
            Ok(()) => Ok(out),
            Err(PyError {
                kind: "KeyError",
                message,
            }) => Err(unknown_placeholder(&message, &sample.rubric_vars)),
            Err(PyError { kind, message }) => Err(RenderError::Python { kind, message }),
        }
    }

    /// The first variable that neither the reserved variables nor `vars` provide.
    pub fn check_vars(&self, vars: &Map<String, Value>) -> Result<(), RenderError> {
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

fn collect_names<'t>(parts: &'t [Part], names: &mut Vec<&'t str>) {
    for part in parts {
        if let Part::Field(field) = part {
            if !field.positional() && !names.contains(&field.name.as_str()) {
                names.push(&field.name);
            }
            collect_names(&field.spec, names);
        }
    }
}

/// The first error, in the order Python meets them, that no sample can avoid.
fn first_static_problem(parts: &[Part]) -> Option<TemplateError> {
    let at = |position: usize, e: &PyError| TemplateError {
        position,
        problem: [e.kind, ": ", &e.message].concat(),
    };
    for part in parts {
        match part {
            Part::Literal(_) => {}
            Part::Broken { error, position } => return Some(at(*position, error)),
            Part::Field(field) => {
                if let Some(problem) = field_problem(field) {
                    return Some(TemplateError {
                        position: field.position,
                        problem,
                    });
                }
                if let Some(problem) = first_static_problem(&field.spec) {
                    return Some(problem);
                }
                let literal_spec: Option<String> = field
                    .spec
                    .iter()
                    .map(|p| match p {
                        Part::Literal(text) => Some(text.as_str()),
                        _ => None,
                    })
                    .collect();
                if let Some(spec) = literal_spec
                    && let Err(e) = format::format_str("", &spec, &mut String::new())
                {
                    return Some(at(field.position, &e));
                }
            }
        }
    }
    None
}

fn field_problem(field: &Field) -> Option<String> {
    if field.positional() {
        return Some(
            "IndexError: tuple index out of range (a positional field; name a variable such as \
             {input})"
                .into(),
        );
    }
    for access in &field.access {
        match access {
            Access::Index(_) => {}
            Access::Bad(e) => return Some([e.kind, ": ", &e.message].concat()),
            Access::Key(_) => {
                return Some("TypeError: string indices must be integers, not 'str'".into());
            }
            Access::Attribute(name) => {
                return Some(format!(
                    "attribute access ('.{name}') is not supported: every value is a str, whose \
                     attributes are methods"
                ));
            }
        }
    }
    match field.conversion {
        None | Some('r' | 's' | 'a') => None,
        Some(other) => Some(format!("ValueError: Unknown conversion specifier {other}")),
    }
}

/// letta-evals refuses `rubric_vars` that would shadow a reserved variable.
pub fn check_reserved(vars: &Map<String, Value>) -> Result<(), RenderError> {
    match RESERVED.iter().find(|name| vars.contains_key(**name)) {
        Some(name) => Err(RenderError::Reserved(name)),
        None => Ok(()),
    }
}

/// Why a rubric cannot be filled in for a sample, in letta-evals' words where it has them.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum RenderError {
    #[error(
        "rubric_vars key '{0}' collides with a reserved variable. Reserved names: ('input', 'ground_truth', 'submission')"
    )]
    Reserved(&'static str),
    /// `available`: the variables there are, sorted, each as Python's `repr`.
    #[error(
        "Rubric references {{{name}}} but no value was provided. Available variables: [{}]. Reserved variables (['input', 'ground_truth', 'submission']) come from the Sample; add other variables via sample.rubric_vars.",
        available.join(", ")
    )]
    UnknownPlaceholder {
        name: String,
        available: Vec<String>,
    },
    /// Python's `str.format` raised.
    #[error("rubric: {kind}: {message}")]
    Python { kind: &'static str, message: String },
    /// A sample's own rubric does not parse.
    #[error("rubric: {0}")]
    Rubric(TemplateError),
}

fn unknown_placeholder(name: &str, vars: &Map<String, Value>) -> RenderError {
    let mut available: Vec<&str> = vars.keys().map(String::as_str).chain(RESERVED).collect();
    available.sort_unstable();
    available.dedup();
    RenderError::UnknownPlaceholder {
        name: name.to_string(),
        available: available.iter().map(|name| repr_str(name)).collect(),
    }
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
    /// rendered one, the same error where Python raised. Un-doubled JSON braces, which Python
    /// reports only when rendering, are refused when parsing.
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
                Err(err) => {
                    let note = vector["note"].as_str().unwrap_or_default();
                    assert!(note.contains("JSON"), "{rubric}: {err}");
                    assert!(err.problem.starts_with("ValueError: "), "{err}");
                    refused += 1;
                    continue;
                }
            };
            let rendered = template.render(&sample, submission);
            match (expected.as_str(), expected["error"]["message"].as_str()) {
                (Some(prompt), _) => assert_eq!(rendered.as_deref(), Ok(prompt), "{rubric}"),
                (None, Some(message)) => {
                    assert_eq!(
                        rendered.map_err(|e| e.to_string()),
                        Err(message.to_string())
                    )
                }
                (None, None) => panic!("unexpected vector shape: {vector}"),
            }
        }
        assert_eq!(refused, 1);
        assert_eq!(seen, 10);
    }

    /// Every template of `tests/data/python-format-cases.json`, recorded from CPython 3.11 by
    /// `gen_format_cases.py`: the same text, or the same exception type and message. A template
    /// that fails whatever the values is refused when parsed; one gavel refuses, Python fails on
    /// too (but for attribute access, which renders a method's address in Python).
    #[test]
    fn formats_as_cpython_does() {
        let text = include_str!("../../../tests/data/python-format-cases.json");
        let recorded: Value = serde_json::from_str(text).expect("recording");
        let vars = recorded["vars"].as_object().expect("vars");
        let lookup = |name: &str| vars.get(name).and_then(Value::as_str);
        let cases = recorded["cases"].as_array().expect("cases");
        assert!(cases.len() > 100);
        let mut failures = Vec::new();
        for case in cases {
            let template = case["template"].as_str().expect("template");
            let mut out = String::new();
            let got = match format::render(&format::parse(template), &lookup, &mut out) {
                Ok(()) => json!({"result": out}),
                Err(e) => json!({"error": {"type": e.kind, "message": e.message}}),
            };
            let parsed = Template::parse(template);
            let python_error = &case["error"];
            if case["result"]
                .as_str()
                .is_some_and(|r| r.starts_with("<built-in method"))
            {
                let err = parsed.expect_err(template).to_string();
                assert!(err.contains("attribute access"), "{err}");
                continue;
            }
            let want = match case.get("result") {
                Some(result) => json!({"result": result}),
                None => json!({"error": python_error}),
            };
            if got != want {
                failures.push(format!("{template:?}: got {got}, want {want}"));
            }
            let depends_on_values = python_error["type"] == "KeyError"
                || python_error["message"] == "string index out of range"
                || template.contains(":{");
            match (&parsed, python_error.is_null()) {
                (Err(e), true) => failures.push(format!("{template:?}: refused ({e})")),
                (Ok(_), false) if !depends_on_values => {
                    failures.push(format!("{template:?}: not refused when parsed"))
                }
                _ => {}
            }
        }
        assert!(failures.is_empty(), "{}", failures.join("\n"));
    }

    #[test]
    fn a_static_problem_is_located_and_worded_as_python() {
        assert_eq!(
            Template::parse("ab{ground_truth:>+5}"),
            Err(TemplateError {
                position: 2,
                problem: "ValueError: Sign not allowed in string format specifier".into(),
            })
        );
        assert_eq!(Template::parse("x {input").map_err(|e| e.position), Err(2));
        let err = Template::parse("é } x").expect_err("stray brace");
        assert_eq!(err.position, 2);
        assert!(
            err.to_string().starts_with(
                "ValueError: Single '}' encountered in format string at position 2: letta-evals"
            ),
            "{err}"
        );
        let err = Template::parse("{0}").expect_err("positional");
        assert!(
            err.problem.contains("name a variable such as {input}"),
            "{err}"
        );
    }

    #[test]
    fn escapes_and_placeholder_listing() {
        let template = Template::parse("{{{k}}} {k!r:>{w}} {{x}} {input}").expect("parse");
        assert_eq!(template.placeholders(), vec!["k", "w", "input"]);
        let sample = Sample {
            rubric_vars: json!({"k": "v", "w": 4})
                .as_object()
                .cloned()
                .unwrap_or_default(),
            ..Sample::default()
        };
        assert_eq!(
            template.render(&sample, "s").as_deref(),
            Ok("{v}  'v' {x} ")
        );
        assert!(template.check_vars(&sample.rubric_vars).is_ok());
        let err = template.check_vars(&Map::new()).expect_err("k is unknown");
        assert!(
            err.to_string()
                .starts_with("Rubric references {k} but no value"),
            "{err}"
        );
        let err = Template::parse("{input[9]}")
            .expect("parse")
            .render(&sample, "s")
            .expect_err("past the end");
        assert_eq!(
            err.to_string(),
            "rubric: IndexError: string index out of range"
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
        assert_eq!(err, RenderError::Reserved("ground_truth"));
        assert!(
            err.to_string()
                .starts_with("rubric_vars key 'ground_truth' collides"),
            "{err}"
        );
    }
}
