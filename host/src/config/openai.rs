//! `kind: openai` in a suite: one of OpenAI's grader objects, written under `grader:` or kept
//! in a JSON file named by `grader_path:`. Its `python` graders become gavel's `kind: python`;
//! the others are checked and run by `grade/openai/`.

use std::path::{Path, PathBuf};

use serde::Deserialize;
use serde_json::{Map, Value};

use crate::config::allow::AllowSpec;
use crate::config::error::SuiteError;
use crate::config::position::Positions;
use crate::config::spec::PythonSpec;
use crate::config::spec::{Isolation, RubricSpec};
use crate::fsio;

/// A mistake in a grader object: the dotted path of its field inside the object (empty for
/// the object itself), what is wrong and how to fix it.
#[derive(Debug, Clone, PartialEq)]
pub struct GraderError {
    pub field: String,
    pub message: String,
    pub hint: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OpenAiSpec {
    /// The grader object, as OpenAI's API takes it.
    #[serde(default)]
    pub grader: Option<Value>,
    /// A JSON file holding the grader object, relative to the suite.
    #[serde(default)]
    pub grader_path: Option<String>,
    #[serde(default)]
    pub display_name: Option<String>,
    /// For `score_model` and `label_model`: the judge's transport settings (`kind: rubric`'s
    /// `base_url`, `api_key_env`, `max_retries`, `timeout`, `concurrency`).
    #[serde(default)]
    pub base_url: Option<String>,
    #[serde(default)]
    pub api_key_env: Option<String>,
    #[serde(default)]
    pub max_retries: Option<u32>,
    #[serde(default)]
    pub timeout: Option<f64>,
    #[serde(default)]
    pub concurrency: Option<usize>,
    /// For a `python` grader: the Python packages its code imports.
    #[serde(default)]
    pub requirements: Vec<String>,
    /// For a `python` grader: what it may reach, over the suite's `allow:`.
    #[serde(default)]
    pub allow: Option<AllowSpec>,
    /// For a `python` grader: where its calls run (`batch` or `sample`).
    #[serde(default)]
    pub isolation: Option<Isolation>,
    /// The JSON file the grader object was read from, and where its fields are written.
    #[serde(skip)]
    pub file: Option<(PathBuf, Positions)>,
    /// The `python` graders inside its `multi`s, each as a `kind: python` grader with its place
    /// in the object (`graders.NAME`, ...).
    #[serde(skip)]
    pub python: Vec<(String, PythonSpec)>,
}

/// A dataset's row shape, as a suite's `dataset_format:` names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
pub enum DatasetFormat {
    /// OpenAI's eval rows, `{"item": {...}, "sample": {...}}`.
    #[serde(rename = "openai_eval")]
    OpenAiEval,
}

/// The keys of OpenAI's `python` grader object.
const PYTHON_KEYS: &[&str] = &["type", "name", "source", "image_tag", "pass_threshold"];

impl OpenAiSpec {
    /// The judge settings its model graders ask through: its transport settings, the judge's
    /// defaults for the rest.
    pub fn transport(&self) -> RubricSpec {
        let mut settings = Map::new();
        let mut set = |key: &str, value: Option<Value>| {
            if let Some(value) = value {
                settings.insert(key.to_string(), value);
            }
        };
        set("base_url", self.base_url.clone().map(Value::from));
        set("api_key_env", self.api_key_env.clone().map(Value::from));
        set("max_retries", self.max_retries.map(Value::from));
        set("timeout", self.timeout.map(Value::from));
        set("concurrency", self.concurrency.map(Value::from));
        serde_json::from_value(Value::Object(settings))
            .expect("the settings are RubricSpec's fields, of its types")
    }

    /// A mistake `error` of the grader object of the grader at `field`, located in the suite
    /// (`suite`) or in the JSON file that holds the object.
    pub fn mistake(&self, suite: &Path, field: &str, error: GraderError) -> SuiteError {
        let mistake = match &self.file {
            Some((path, positions)) => {
                let at = positions.value(&error.field);
                SuiteError {
                    line: at.map(|(line, _)| line),
                    column: at.map(|(_, column)| column),
                    ..SuiteError::at(path, error.field.clone(), error.message)
                }
            }
            None => {
                let inner = if error.field.is_empty() {
                    format!("{field}.grader")
                } else {
                    format!("{field}.grader.{}", error.field)
                };
                SuiteError::at(suite, inner, error.message)
            }
        };
        match error.hint {
            Some(hint) => mistake.with_hint(hint),
            None => mistake,
        }
    }
}

/// Fills `grader` from `grader_path`; one of the two must be written.
pub(crate) fn read_object(
    spec: &mut OpenAiSpec,
    field: &str,
    suite: &Path,
    base_dir: &Path,
) -> Result<(), Vec<SuiteError>> {
    let refuse = |message: &str| {
        vec![
            SuiteError::at(suite, format!("{field}.grader"), message)
                .with_hint("write the grader object under `grader:`, or name its JSON file with `grader_path:`"),
        ]
    };
    match (&spec.grader, &spec.grader_path) {
        (Some(_), None) => Ok(()),
        (None, None) => Err(refuse(
            "a `kind: openai` grader needs `grader` or `grader_path`",
        )),
        (Some(_), Some(_)) => Err(refuse("`grader` and `grader_path` are both written")),
        (None, Some(relative)) => {
            let path = base_dir.join(relative);
            let at_path = |message: String| {
                vec![SuiteError::at(
                    suite,
                    format!("{field}.grader_path"),
                    message,
                )]
            };
            let text = fsio::read_text(&path, fsio::cap::TEXT)
                .map_err(|e| at_path(format!("cannot read {}: {e}", path.display())))?;
            let value: Value = serde_json::from_str(&text).map_err(|e| {
                vec![SuiteError {
                    line: Some(e.line() as u64),
                    column: Some(e.column() as u64),
                    ..SuiteError::at(&path, "", format!("not a JSON grader object: {e}"))
                }]
            })?;
            spec.grader = Some(value);
            spec.file = Some((path, Positions::of(&text)));
            Ok(())
        }
    }
}

/// The `kind: python` grader an OpenAI `python` grader object is; `None` for other types.
pub(crate) fn as_python(
    spec: &OpenAiSpec,
    field: &str,
    suite: &Path,
) -> Result<Option<PythonSpec>, Vec<SuiteError>> {
    match &spec.grader {
        Some(Value::Object(object)) if is_python(object) => {
            python_at(spec, object, "", field, suite).map(Some)
        }
        _ => Ok(None),
    }
}

/// The `python` graders inside the object's `multi`s, each as a `kind: python` grader with
/// its place in the object; every mistake of theirs is reported.
pub(crate) fn inner_python(
    spec: &OpenAiSpec,
    field: &str,
    suite: &Path,
) -> Result<Vec<(String, PythonSpec)>, Vec<SuiteError>> {
    let Some(object) = &spec.grader else {
        return Ok(Vec::new());
    };
    let (mut found, mut errors) = (Vec::new(), Vec::new());
    for (at, inner) in python_inside(object) {
        match python_at(spec, inner, &at, field, suite) {
            Ok(python) => found.push((at, python)),
            Err(mut e) => errors.append(&mut e),
        }
    }
    if errors.is_empty() {
        Ok(found)
    } else {
        Err(errors)
    }
}

fn is_python(object: &Map<String, Value>) -> bool {
    object.get("type").and_then(Value::as_str) == Some("python")
}

/// The `python` graders among the sub-graders of the `multi` `object` and of the `multi`s
/// inside it, each with its place in the object (`graders.NAME`, `graders.NAME.graders.NAME`).
pub fn python_inside(object: &Value) -> Vec<(String, &Map<String, Value>)> {
    let mut found = Vec::new();
    inside(object, "", &mut found);
    found
}

fn inside<'a>(object: &'a Value, at: &str, found: &mut Vec<(String, &'a Map<String, Value>)>) {
    if object.get("type").and_then(Value::as_str) != Some("multi") {
        return;
    }
    let Some(graders) = object.get("graders").and_then(Value::as_object) else {
        return;
    };
    for (name, grader) in graders {
        let place = match at {
            "" => format!("graders.{name}"),
            at => format!("{at}.graders.{name}"),
        };
        match grader {
            Value::Object(python) if is_python(python) => found.push((place, python)),
            _ => inside(grader, &place, found),
        }
    }
}

/// The `kind: python` grader the `python` grader object `object`, at `at` in the object of
/// `spec`, is: its code and threshold, with the packages, reach and isolation `spec` gives.
fn python_at(
    spec: &OpenAiSpec,
    object: &Map<String, Value>,
    at: &str,
    field: &str,
    suite: &Path,
) -> Result<PythonSpec, Vec<SuiteError>> {
    let mut errors = Vec::new();
    let mut mistake = |key: &str, message: String, hint: Option<&str>| {
        errors.push(spec.mistake(
            suite,
            field,
            GraderError {
                field: match at {
                    "" => key.to_string(),
                    at => format!("{at}.{key}"),
                },
                message,
                hint: hint.map(str::to_string),
            },
        ));
    };
    for key in object.keys().filter(|k| !PYTHON_KEYS.contains(&k.as_str())) {
        mistake(
            key,
            "unknown field".into(),
            Some(&format!("a python grader has {}", PYTHON_KEYS.join(", "))),
        );
    }
    let text = |key: &str| object.get(key).and_then(Value::as_str).map(str::to_string);
    if text("source").is_none() {
        mistake(
            "source",
            "a `python` grader needs `source`, its code as a string".into(),
            Some("def grade(sample, item) -> float: ..."),
        );
    }
    let pass_threshold = match object.get("pass_threshold") {
        None => None,
        Some(Value::Number(n)) => n.as_f64(),
        Some(_) => {
            mistake("pass_threshold", "must be a number".into(), None);
            None
        }
    };
    if !errors.is_empty() {
        return Err(errors);
    }
    Ok(PythonSpec {
        source: text("source"),
        source_path: None,
        pass_threshold,
        name: text("name"),
        image_tag: None,
        requirements: spec.requirements.clone(),
        display_name: spec.display_name.clone(),
        allow: spec.allow.clone(),
        isolation: spec.isolation,
    })
}
