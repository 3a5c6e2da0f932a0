//! The table [`pack!`](crate::pack) builds, and the four exports it answers from.

use std::fmt::Display;

use serde::de::DeserializeOwned;

use crate::bindings::gavel::grader::types as wit_types;
use crate::{ExtractInput, Grade, GradeInput, convert};

/// What a grader function may return: a [`Grade`], or a `Result` whose error becomes
/// `guest returned error: ...` in the results.
///
/// ```
/// use gavel_guest::{Grade, IntoGrade};
///
/// assert!(Grade::pass("ok").into_grade().is_ok());
/// assert_eq!(Err::<Grade, _>("no ground truth").into_grade(), Err("no ground truth".to_string()));
/// ```
pub trait IntoGrade {
    /// The grade, or the error text.
    fn into_grade(self) -> Result<Grade, String>;
}

impl IntoGrade for Grade {
    fn into_grade(self) -> Result<Grade, String> {
        Ok(self)
    }
}

impl<E: Display> IntoGrade for Result<Grade, E> {
    fn into_grade(self) -> Result<Grade, String> {
        self.map_err(|e| e.to_string())
    }
}

/// What an extractor function may return: the submission (`String`), `Option<String>` (`None`:
/// nothing to extract), or a `Result` of either.
///
/// ```
/// use gavel_guest::IntoExtraction;
///
/// assert_eq!("42".to_string().into_extraction(), Ok(Some("42".to_string())));
/// assert_eq!(None::<String>.into_extraction(), Ok(None));
/// assert!(Err::<String, _>("bad config").into_extraction().is_err());
/// ```
pub trait IntoExtraction {
    /// The submission (`None` when there is nothing to extract), or the error text.
    fn into_extraction(self) -> Result<Option<String>, String>;
}

impl IntoExtraction for String {
    fn into_extraction(self) -> Result<Option<String>, String> {
        Ok(Some(self))
    }
}

impl IntoExtraction for Option<String> {
    fn into_extraction(self) -> Result<Option<String>, String> {
        Ok(self)
    }
}

impl<E: Display> IntoExtraction for Result<String, E> {
    fn into_extraction(self) -> Result<Option<String>, String> {
        self.map(Some).map_err(|e| e.to_string())
    }
}

impl<E: Display> IntoExtraction for Result<Option<String>, E> {
    fn into_extraction(self) -> Result<Option<String>, String> {
        self.map_err(|e| e.to_string())
    }
}

type GradeFn = Box<dyn Fn(&GradeInput<'_>, &str) -> Result<Grade, String>>;
type ExtractFn = Box<dyn Fn(&ExtractInput<'_>, &str) -> Result<Option<String>, String>>;

enum Run {
    Grade(GradeFn),
    Extract(ExtractFn),
}

/// One function of a pack, with its config type erased.
pub struct Function {
    name: &'static str,
    description: String,
    needs_ground_truth: bool,
    check_config: fn(&str) -> Result<(), String>,
    run: Run,
}

impl Function {
    /// A grader named `name`, described by its doc comment, whose config is `C`.
    pub fn grader<C, R>(
        name: &'static str,
        docs: &[&str],
        grade: fn(&GradeInput<'_>, &C) -> R,
    ) -> Function
    where
        C: DeserializeOwned + 'static,
        R: IntoGrade + 'static,
    {
        Function {
            name,
            description: describe(docs),
            needs_ground_truth: false,
            check_config: check_config::<C>,
            run: Run::Grade(Box::new(move |input, config| {
                grade(input, &parse_config::<C>(config)?).into_grade()
            })),
        }
    }

    /// An extractor named `name`, described by its doc comment, whose config is `C`.
    pub fn extractor<C, R>(
        name: &'static str,
        docs: &[&str],
        extract: fn(&ExtractInput<'_>, &C) -> R,
    ) -> Function
    where
        C: DeserializeOwned + 'static,
        R: IntoExtraction + 'static,
    {
        Function {
            name,
            description: describe(docs),
            needs_ground_truth: false,
            check_config: check_config::<C>,
            run: Run::Extract(Box::new(move |input, config| {
                extract(input, &parse_config::<C>(config)?).into_extraction()
            })),
        }
    }

    /// Marks the function as needing the sample's ground truth (the `needs_ground_truth` flag
    /// of [`pack!`](crate::pack)).
    pub fn needs_ground_truth(mut self) -> Function {
        self.needs_ground_truth = true;
        self
    }
}

/// A pack's name, version and functions; the four WIT exports are answered from it.
pub struct Registry {
    name: &'static str,
    version: &'static str,
    functions: Vec<Function>,
}

impl Registry {
    /// An empty pack.
    pub fn new(name: &'static str, version: &'static str) -> Registry {
        Registry {
            name,
            version,
            functions: Vec::new(),
        }
    }

    /// Adds a function.
    pub fn add(&mut self, function: Function) {
        self.functions.push(function);
    }

    /// The `describe` export.
    pub fn describe(&self) -> wit_types::PackInfo {
        wit_types::PackInfo {
            name: self.name.to_string(),
            version: self.version.to_string(),
            functions: self
                .functions
                .iter()
                .map(|f| wit_types::FunctionInfo {
                    name: f.name.to_string(),
                    kind: match f.run {
                        Run::Grade(_) => wit_types::FunctionKind::Grader,
                        Run::Extract(_) => wit_types::FunctionKind::Extractor,
                    },
                    description: f.description.clone(),
                    needs_ground_truth: f.needs_ground_truth,
                })
                .collect(),
        }
    }

    /// The `check-config` export.
    pub fn check_config(&self, name: &str, config: &str) -> Result<(), String> {
        (self.function(name)?.check_config)(config)
    }

    /// The `grade` export.
    pub fn grade(
        &self,
        name: &str,
        sample: wit_types::Sample,
        trajectory: wit_types::Trajectory,
        submission: &str,
        config: &str,
    ) -> Result<wit_types::Grade, String> {
        let Run::Grade(grade) = &self.function(name)?.run else {
            return Err(format!("`{name}` is an extractor, not a grader"));
        };
        let sample = convert::sample(sample)?;
        let trajectory = convert::trajectory(trajectory);
        let input = GradeInput {
            sample: &sample,
            trajectory: &trajectory,
            submission,
        };
        grade(&input, config).map(convert::grade)
    }

    /// The `extract` export.
    pub fn extract(
        &self,
        name: &str,
        sample: wit_types::Sample,
        trajectory: wit_types::Trajectory,
        config: &str,
    ) -> Result<Option<String>, String> {
        let Run::Extract(extract) = &self.function(name)?.run else {
            return Err(format!("`{name}` is a grader, not an extractor"));
        };
        let sample = convert::sample(sample)?;
        let trajectory = convert::trajectory(trajectory);
        let input = ExtractInput {
            sample: &sample,
            trajectory: &trajectory,
        };
        extract(&input, config)
    }

    fn function(&self, name: &str) -> Result<&Function, String> {
        self.functions
            .iter()
            .find(|f| f.name == name)
            .ok_or_else(|| {
                let known: Vec<&str> = self.functions.iter().map(|f| f.name).collect();
                format!(
                    "unknown function `{name}`; this pack provides: {}",
                    known.join(", ")
                )
            })
    }
}

/// The one-line description `gavel list` shows: the first paragraph of the doc comment.
fn describe(docs: &[&str]) -> String {
    docs.iter()
        .map(|line| line.trim())
        .skip_while(|line| line.is_empty())
        .take_while(|line| !line.is_empty())
        .collect::<Vec<_>>()
        .join(" ")
}

fn check_config<C: DeserializeOwned>(config: &str) -> Result<(), String> {
    parse_config::<C>(config).map(drop)
}

/// Parses a function's config (JSON object text) into the author's type. The error names the
/// field; the JSON line and column are left out because the config was written in YAML.
pub(crate) fn parse_config<C: DeserializeOwned>(config: &str) -> Result<C, String> {
    let mut deserializer = serde_json::Deserializer::from_str(config);
    serde_path_to_error::deserialize(&mut deserializer).map_err(|e| {
        let path = e.path().to_string();
        let inner = e.into_inner();
        let mut message = inner.to_string();
        if inner.line() > 0
            && let Some(at) = message.rfind(" at line ")
        {
            message.truncate(at);
        }
        if path == "." {
            format!("config: {message}")
        } else {
            format!("config.{path}: {message}")
        }
    })
}

#[cfg(test)]
mod tests {
    use serde::Deserialize;

    use super::*;
    use crate::{Error, NoConfig, Status};

    #[derive(Deserialize)]
    #[serde(deny_unknown_fields)]
    struct Threshold {
        min_len: usize,
        #[serde(default)]
        label: Option<String>,
    }

    fn long_enough(input: &GradeInput<'_>, config: &Threshold) -> Result<Grade, Error> {
        let truth = input
            .sample
            .ground_truth_text()
            .ok_or_else(|| Error::new("no ground truth"))?;
        let grade = if input.submission.len() >= config.min_len {
            Grade::pass(format!("long enough for {truth}"))
        } else {
            Grade::score(0.5, "too short").status(Status::Fail)
        };
        Ok(match &config.label {
            Some(label) => grade.metadata("label", label.as_str()),
            None => grade,
        })
    }

    fn first_tool(input: &ExtractInput<'_>, _: &NoConfig) -> Option<String> {
        input
            .trajectory
            .tools_called()
            .first()
            .map(|s| s.to_string())
    }

    fn registry() -> Registry {
        let mut registry = Registry::new("test", "1.2.3");
        registry.add(
            Function::grader(
                "long_enough",
                &[
                    " Passes long submissions.",
                    " Second line.",
                    "",
                    " Details.",
                ],
                long_enough,
            )
            .needs_ground_truth(),
        );
        registry.add(Function::extractor("first_tool", &[], first_tool));
        registry
    }

    fn sample(ground_truth: Option<&str>, metadata: &str) -> wit_types::Sample {
        wit_types::Sample {
            id: wit_types::SampleId::Str("s1".into()),
            input: None,
            ground_truth: ground_truth.map(|t| wit_types::Texts::One(t.into())),
            rubric_vars: "{}".into(),
            name: None,
            description: None,
            expected: None,
            reference_output: None,
            reference_tools: Vec::new(),
            tags: Vec::new(),
            metadata: metadata.into(),
            memory: None,
        }
    }

    fn trajectory(tools: &[&str]) -> wit_types::Trajectory {
        let events = tools
            .iter()
            .map(|name| {
                wit_types::Event::ToolCall(wit_types::ToolCall {
                    id: String::new(),
                    name: name.to_string(),
                    arguments: "{}".into(),
                    failed: false,
                })
            })
            .collect();
        wit_types::Trajectory {
            turns: vec![events],
            output: None,
            status: wit_types::RunStatus::Success,
            input: None,
            duration_ms: None,
            usage: None,
        }
    }

    #[test]
    fn describe_lists_functions_with_the_first_doc_paragraph() {
        let info = registry().describe();
        assert_eq!(
            (info.name.as_str(), info.version.as_str()),
            ("test", "1.2.3")
        );
        let grader = &info.functions[0];
        assert_eq!(grader.name, "long_enough");
        assert_eq!(grader.description, "Passes long submissions. Second line.");
        assert!(grader.needs_ground_truth);
        assert!(matches!(grader.kind, wit_types::FunctionKind::Grader));
        let extractor = &info.functions[1];
        assert_eq!(extractor.description, "");
        assert!(!extractor.needs_ground_truth);
        assert!(matches!(extractor.kind, wit_types::FunctionKind::Extractor));
    }

    #[test]
    fn check_config_names_the_field_without_json_positions() {
        let registry = registry();
        assert_eq!(
            registry.check_config("long_enough", r#"{"min_len": 3}"#),
            Ok(())
        );
        assert_eq!(
            registry.check_config("long_enough", "{}"),
            Err("config: missing field `min_len`".to_string())
        );
        assert_eq!(
            registry.check_config("long_enough", r#"{"min_len": -1}"#),
            Err("config.min_len: invalid value: integer `-1`, expected usize".to_string())
        );
        let typo = registry
            .check_config("long_enough", r#"{"min_len": 1, "lable": "x"}"#)
            .unwrap_err();
        assert!(
            typo.starts_with("config.lable: unknown field `lable`"),
            "{typo}"
        );
        assert!(registry.check_config("first_tool", "{}").is_ok());
        assert!(registry.check_config("first_tool", r#"{"x": 1}"#).is_err());
        assert_eq!(
            registry.check_config("nope", "{}"),
            Err("unknown function `nope`; this pack provides: long_enough, first_tool".to_string())
        );
    }

    #[test]
    fn grade_runs_the_grader_and_lowers_its_grade() {
        let registry = registry();
        let config = r#"{"min_len": 3, "label": "x"}"#;
        let grade = registry
            .grade(
                "long_enough",
                sample(Some("t"), "{}"),
                trajectory(&[]),
                "abcd",
                config,
            )
            .unwrap();
        assert_eq!(grade.score, 1.0);
        assert!(matches!(grade.status, Some(wit_types::Status::Pass)));
        assert_eq!(grade.rationale, "long enough for t");
        assert_eq!(grade.metadata.as_deref(), Some(r#"{"label":"x"}"#));

        let short = registry
            .grade(
                "long_enough",
                sample(Some("t"), "{}"),
                trajectory(&[]),
                "ab",
                r#"{"min_len": 3}"#,
            )
            .unwrap();
        assert_eq!(short.score, 0.5);
        assert!(matches!(short.status, Some(wit_types::Status::Fail)));
        assert_eq!(short.metadata, None);
    }

    #[test]
    fn grade_errors_are_the_functions_own_words() {
        let registry = registry();
        let config = r#"{"min_len": 3}"#;
        let run = || trajectory(&[]);
        assert_eq!(
            registry
                .grade("long_enough", sample(None, "{}"), run(), "abc", config)
                .unwrap_err(),
            "no ground truth"
        );
        assert_eq!(
            registry
                .grade("long_enough", sample(Some("t"), "{}"), run(), "abc", "{}")
                .unwrap_err(),
            "config: missing field `min_len`"
        );
        assert_eq!(
            registry
                .grade("first_tool", sample(None, "{}"), run(), "", "{}")
                .unwrap_err(),
            "`first_tool` is an extractor, not a grader"
        );
        let bad_metadata = registry
            .grade(
                "long_enough",
                sample(Some("t"), "[1]"),
                run(),
                "abc",
                config,
            )
            .unwrap_err();
        assert!(
            bad_metadata.starts_with("sample.metadata is not a JSON object"),
            "{bad_metadata}"
        );
    }

    #[test]
    fn extract_runs_the_extractor() {
        let registry = registry();
        assert_eq!(
            registry.extract(
                "first_tool",
                sample(None, "{}"),
                trajectory(&["", "search", "book"]),
                "{}"
            ),
            Ok(Some("search".to_string()))
        );
        assert_eq!(
            registry.extract("first_tool", sample(None, "{}"), trajectory(&[]), "{}"),
            Ok(None)
        );
        assert_eq!(
            registry.extract("long_enough", sample(None, "{}"), trajectory(&[]), "{}"),
            Err("`long_enough` is a grader, not an extractor".to_string())
        );
    }
}
