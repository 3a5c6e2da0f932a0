//! OpenAI's grader objects (`string_check`, `text_similarity`, `multi`; `python` through the
//! interpreter, whose results a `multi`'s run is given), read from their JSON as OpenAI writes
//! them and run on an item and a sample. [`Grader::run`] answers what OpenAI's `graders/run` endpoint answers: the reward,
//! the sub-rewards and the metadata.

pub mod formula;
pub mod meteor;
pub mod model;
pub mod row;
pub mod similarity;
pub mod template;
pub mod wordnet;

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Instant;

use serde::Serialize;
use serde_json::{Map, Value};

pub use crate::config::openai::GraderError;
use crate::config::suite::closest;
use crate::grade::judge::Judge;
use formula::Formula;
use model::ModelGrader;
use similarity::Metric;
use template::Template;
use wordnet::WordNet;

/// A grader object, checked.
#[derive(Debug, Clone, PartialEq)]
pub struct Grader {
    /// Its `name`, or the name it is known by where it has none.
    pub name: String,
    kind: Kind,
}

#[derive(Debug, Clone, PartialEq)]
enum Kind {
    StringCheck {
        input: Template,
        reference: Template,
        operation: Operation,
    },
    TextSimilarity {
        input: Template,
        reference: Template,
        metric: Similarity,
        pass_threshold: Option<f64>,
    },
    Multi {
        graders: Vec<(String, Grader)>,
        formula: Formula,
    },
    Model(ModelGrader),
    /// A `python` sub-grader of a `multi`: its code runs in gavel's Python sandbox before the
    /// `multi` is graded, and its result is looked up by `at`, its place in the object.
    Python {
        at: String,
    },
}

/// A `text_similarity` metric: one gavel computes, `meteor` over WordNet, or `cosine` of two
/// embeddings.
#[derive(Debug, Clone)]
enum Similarity {
    Local(Metric),
    Meteor(&'static WordNet),
    Cosine(Arc<Judge>),
}

impl PartialEq for Similarity {
    fn eq(&self, other: &Similarity) -> bool {
        match (self, other) {
            (Similarity::Local(a), Similarity::Local(b)) => a == b,
            (Similarity::Meteor(_), Similarity::Meteor(_)) => true,
            (Similarity::Cosine(_), Similarity::Cosine(_)) => true,
            _ => false,
        }
    }
}

/// Where a model endpoint is given to a grader object that asks one.
const ENDPOINT_HINT: &str = "in a suite, set base_url and api_key_env on its `kind: openai` grader; \
                             over `gavel serve`, start the server with --judge-base-url";

/// The model whose embeddings `cosine` compares, as OpenAI's grader does.
const EMBEDDING_MODEL: &str = "text-embedding-3-large";

/// Where a grader object's model graders and `cosine` metrics ask: the judge's transport, at
/// the chat-completions endpoint and at the embeddings endpoint.
#[derive(Debug, Clone, Default)]
pub struct Endpoints {
    pub chat: Option<Arc<Judge>>,
    pub embeddings: Option<Arc<Judge>>,
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Operation {
    Eq,
    Ne,
    Like,
    Ilike,
}

const OPERATIONS: &[(&str, Operation)] = &[
    ("eq", Operation::Eq),
    ("ne", Operation::Ne),
    ("like", Operation::Like),
    ("ilike", Operation::Ilike),
];

/// The grader types OpenAI documents; gavel runs those its reader knows.
const TYPES: &[&str] = &[
    "string_check",
    "text_similarity",
    "score_model",
    "label_model",
    "python",
    "multi",
];

/// What a `python` sub-grader gave on a row, graded by gavel's Python sandbox: its score,
/// whether it passed its `pass_threshold`, the error its code raised or the limit it hit, and
/// the seconds it took.
#[derive(Debug, Clone, PartialEq)]
pub struct PythonResult {
    pub score: f64,
    pub passed: bool,
    pub error: Option<String>,
    pub seconds: f64,
}

/// The results of a grader object's `python` sub-graders on a row, by their place in the
/// object (`graders.NAME`, `graders.NAME.graders.NAME`).
pub type PythonResults = HashMap<String, PythonResult>;

/// What running a grader on one item and sample gives, in the shape of OpenAI's
/// `graders/run` answer.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Outcome {
    pub reward: f64,
    pub metadata: Metadata,
    pub sub_rewards: Map<String, Value>,
    /// Tokens the model graders spent, by model; empty where no model was asked.
    pub model_grader_token_usage_per_model: Map<String, Value>,
    /// Whether the grade passes: the grader's threshold, or a string check that holds.
    #[serde(skip)]
    pub passed: bool,
    /// The reward as a grade's score, within [0, 1] (a `score_model`'s over its range).
    #[serde(skip)]
    pub score: f64,
    /// What went wrong, where something did (the flag in `metadata.errors` says which kind).
    #[serde(skip)]
    pub error: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Metadata {
    pub name: String,
    #[serde(rename = "type")]
    pub kind: &'static str,
    pub errors: Errors,
    /// Seconds the grade took.
    pub execution_time: f64,
    /// The sub-graders' scores (a `multi`); empty otherwise.
    pub scores: Map<String, Value>,
    /// The tokens the model grader spent in all (OpenAI's client reads an integer).
    pub token_usage: Option<u64>,
    pub sampled_model_name: Option<String>,
}

/// OpenAI's error flags of a grade.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Errors {
    pub formula_parse_error: bool,
    pub sample_parse_error: bool,
    pub truncated_observation_error: bool,
    pub unresponsive_reward_error: bool,
    pub invalid_variable_error: bool,
    pub other_error: bool,
    pub python_grader_server_error: bool,
    pub python_grader_server_error_type: Option<String>,
    pub python_grader_runtime_error: bool,
    pub python_grader_runtime_error_details: Option<String>,
    pub model_grader_server_error: bool,
    pub model_grader_refusal_error: bool,
    pub model_grader_parse_error: bool,
    pub model_grader_server_error_details: Option<String>,
}

impl Outcome {
    fn new(name: &str, kind: &'static str, reward: f64, passed: bool) -> Outcome {
        Outcome {
            reward,
            metadata: Metadata {
                name: name.to_string(),
                kind,
                errors: Errors::default(),
                execution_time: 0.0,
                scores: Map::new(),
                token_usage: None,
                sampled_model_name: None,
            },
            sub_rewards: Map::new(),
            model_grader_token_usage_per_model: Map::new(),
            passed,
            score: reward.clamp(0.0, 1.0),
            error: None,
        }
    }

    /// A `python` grader's outcome (run by gavel's Python sandbox, not here): its score, or
    /// the error its code raised or the limit it hit.
    pub fn python(name: &str, result: &PythonResult) -> Outcome {
        let mut outcome = Outcome::new(name, "python", result.score, result.passed);
        outcome.metadata.execution_time = result.seconds;
        if let Some(error) = &result.error {
            outcome.reward = 0.0;
            outcome.metadata.errors.python_grader_runtime_error = true;
            outcome.metadata.errors.python_grader_runtime_error_details = Some(error.clone());
            outcome.error = Some(error.clone());
        }
        outcome
    }
}

impl Grader {
    /// Reads the grader object `value`; `name` is what it is called where it has no `name`,
    /// and `endpoints` where its model graders and `cosine` metrics ask. Every mistake is reported,
    /// each at its field.
    pub fn parse(
        value: &Value,
        name: &str,
        endpoints: &Endpoints,
    ) -> Result<Grader, Vec<GraderError>> {
        let mut errors = Vec::new();
        let grader = read(value, "", name, endpoints, &mut errors);
        match grader {
            Some(grader) if errors.is_empty() => Ok(grader),
            _ => Err(errors),
        }
    }

    /// OpenAI's type name of this grader.
    pub fn kind(&self) -> &'static str {
        match &self.kind {
            Kind::StringCheck { .. } => "string_check",
            Kind::TextSimilarity { .. } => "text_similarity",
            Kind::Multi { .. } => "multi",
            Kind::Model(model) => model.kind(),
            Kind::Python { .. } => "python",
        }
    }

    /// Grades `sample` (OpenAI's `{output_text, output_json, output_tools, choices}`) of
    /// `item` (the dataset row); `python` holds what its `python` sub-graders gave on them. Past
    /// `deadline`, a `multi` grades no further sub-grader.
    pub async fn run(
        &self,
        item: &Value,
        sample: &Value,
        python: &PythonResults,
        deadline: Option<Instant>,
    ) -> Outcome {
        let started = Instant::now();
        let mut outcome = self.grade(item, sample, python, deadline).await;
        outcome.metadata.execution_time = started.elapsed().as_secs_f64();
        outcome
    }

    fn outcome(&self, reward: f64, passed: bool) -> Outcome {
        Outcome::new(&self.name, self.kind(), reward, passed)
    }

    fn failed(&self, error: String, flag: impl FnOnce(&mut Errors)) -> Outcome {
        let mut outcome = self.outcome(0.0, false);
        flag(&mut outcome.metadata.errors);
        outcome.error = Some(error);
        outcome
    }

    /// The places in the object of its `python` sub-graders, whose results [`Grader::run`]
    /// is given.
    pub fn python_places(&self) -> Vec<&str> {
        match &self.kind {
            Kind::Python { at } => vec![at.as_str()],
            Kind::Multi { graders, .. } => graders
                .iter()
                .flat_map(|(_, g)| g.python_places())
                .collect(),
            _ => Vec::new(),
        }
    }

    async fn grade(
        &self,
        item: &Value,
        sample: &Value,
        python: &PythonResults,
        deadline: Option<Instant>,
    ) -> Outcome {
        let texts = |input: &Template, reference: &Template| {
            Ok::<_, template::RenderError>((
                input.render(item, sample)?,
                reference.render(item, sample)?,
            ))
        };
        match &self.kind {
            Kind::StringCheck {
                input,
                reference,
                operation,
            } => match texts(input, reference) {
                Ok((input, reference)) => {
                    let holds = match operation {
                        Operation::Eq => input == reference,
                        Operation::Ne => input != reference,
                        Operation::Like => input.contains(&reference),
                        Operation::Ilike => {
                            input.to_lowercase().contains(&reference.to_lowercase())
                        }
                    };
                    self.outcome(if holds { 1.0 } else { 0.0 }, holds)
                }
                Err(e) => self.failed(e.to_string(), |f| f.invalid_variable_error = true),
            },
            Kind::TextSimilarity {
                input,
                reference,
                metric,
                pass_threshold,
            } => match texts(input, reference) {
                Ok((input, reference)) => {
                    let score = match metric {
                        Similarity::Local(metric) => match metric.score(&input, &reference) {
                            Ok(score) => score,
                            Err(e) => return self.failed(e.to_string(), |f| f.other_error = true),
                        },
                        Similarity::Meteor(wordnet) => {
                            similarity::meteor(wordnet, &input, &reference)
                        }
                        Similarity::Cosine(judge) => {
                            match judge.embed(EMBEDDING_MODEL, &[&input, &reference]).await {
                                Ok(vectors) => cosine(&vectors[0], &vectors[1]),
                                Err(e) => {
                                    return self.failed(e.to_string(), |f| {
                                        f.model_grader_server_error = true;
                                        f.model_grader_server_error_details = Some(e.to_string());
                                    });
                                }
                            }
                        }
                    };
                    self.outcome(score, score >= pass_threshold.unwrap_or(1.0))
                }
                Err(e) => self.failed(e.to_string(), |f| f.invalid_variable_error = true),
            },
            Kind::Multi { graders, formula } => {
                let mut scores = HashMap::new();
                let mut subs = Map::new();
                for (key, grader) in graders {
                    if deadline.is_some_and(|deadline| Instant::now() >= deadline) {
                        return self.failed(
                            format!("the deadline passed before `{key}` was graded"),
                            |f| f.other_error = true,
                        );
                    }
                    let sub = Box::pin(grader.grade(item, sample, python, deadline)).await;
                    if let Some(error) = sub.error {
                        let mut outcome = self.outcome(0.0, false);
                        outcome.metadata.errors = sub.metadata.errors;
                        outcome.error = Some(format!("`{key}`: {error}"));
                        return outcome;
                    }
                    scores.insert(key.as_str(), sub.reward);
                    subs.insert(key.clone(), Value::from(sub.reward));
                }
                match formula.evaluate(&scores) {
                    Ok(reward) if reward.is_finite() => {
                        let mut outcome = self.outcome(reward, reward >= 1.0);
                        outcome.metadata.scores = subs.clone();
                        outcome.sub_rewards = subs;
                        outcome
                    }
                    Ok(reward) => self.failed(
                        format!("calculate_output gives {reward}, not a finite number"),
                        |f| f.other_error = true,
                    ),
                    Err(e) => self.failed(format!("calculate_output: {e}"), |f| {
                        f.other_error = true;
                    }),
                }
            }
            Kind::Model(model) => {
                let mut errors = Errors::default();
                match model.ask(item, sample, &mut errors).await {
                    Ok(answer) => {
                        let mut outcome = self.outcome(answer.reward, answer.passed);
                        outcome.score = answer.score;
                        if let Some(usage) = answer.usage {
                            outcome.metadata.token_usage =
                                usage.get("total_tokens").and_then(Value::as_u64);
                            outcome
                                .model_grader_token_usage_per_model
                                .insert(answer.model.clone(), usage);
                        }
                        outcome.metadata.sampled_model_name = Some(answer.model);
                        outcome
                    }
                    Err(error) => self.failed(error.to_string(), |flags| *flags = errors),
                }
            }
            Kind::Python { at } => match python.get(at) {
                Some(result) => Outcome::python(&self.name, result),
                None => self.failed(format!("the python grader at `{at}` was not run"), |f| {
                    f.python_grader_server_error = true;
                }),
            },
        }
    }
}

/// Whether the grader object `value`, or one of its sub-graders, asks a model.
pub fn asks_model(value: &Value) -> bool {
    any_grader(value, &|grader| {
        matches!(
            grader.get("type").and_then(Value::as_str),
            Some("score_model" | "label_model")
        )
    })
}

/// Whether the grader object `value`, or one of its sub-graders, compares embeddings.
pub fn asks_embeddings(value: &Value) -> bool {
    any_grader(value, &|grader| {
        grader.get("evaluation_metric").and_then(Value::as_str) == Some("cosine")
    })
}

fn any_grader(value: &Value, found: &dyn Fn(&Value) -> bool) -> bool {
    found(value)
        || (value.get("graders").and_then(Value::as_object))
            .is_some_and(|graders| graders.values().any(|g| any_grader(g, found)))
}

/// The cosine of the angle between `a` and `b`; 0 where either is all zeros.
fn cosine(a: &[f64], b: &[f64]) -> f64 {
    let dot: f64 = a.iter().zip(b).map(|(x, y)| x * y).sum();
    let norm = |v: &[f64]| v.iter().map(|x| x * x).sum::<f64>().sqrt();
    let norms = norm(a) * norm(b);
    if norms == 0.0 { 0.0 } else { dot / norms }
}

/// The grader object at `at` (`""` for the top), each mistake added to `errors`.
fn read(
    value: &Value,
    at: &str,
    name: &str,
    endpoints: &Endpoints,
    errors: &mut Vec<GraderError>,
) -> Option<Grader> {
    let Some(object) = value.as_object() else {
        errors.push(error(
            at,
            format!("a grader object is a mapping, not {}", what(value)),
            Some("write it as OpenAI does: {type: string_check, name: ..., input: ..., ...}"),
        ));
        return None;
    };
    let mut fields = Fields {
        object,
        at,
        errors,
        read: vec!["type", "name"],
    };
    let kind = fields.string("type", true)?;
    let name = fields.string("name", false).unwrap_or(name).to_string();
    let kind = match kind {
        "string_check" => {
            let input = fields.template("input");
            let reference = fields.template("reference");
            let operation = fields.choice("operation", OPERATIONS);
            fields.finish();
            Kind::StringCheck {
                input: input?,
                reference: reference?,
                operation: operation?,
            }
        }
        "text_similarity" => {
            let input = fields.template("input");
            let reference = fields.template("reference");
            let metric = fields.metric(endpoints);
            let pass_threshold = fields.number("pass_threshold");
            fields.finish();
            Kind::TextSimilarity {
                input: input?,
                reference: reference?,
                metric: metric?,
                pass_threshold: pass_threshold?,
            }
        }
        "multi" => {
            let graders = fields.graders(endpoints);
            let formula = fields.string("calculate_output", true);
            fields.finish();
            let graders = graders?;
            let names: Vec<&str> = graders.iter().map(|(k, _)| k.as_str()).collect();
            let formula = match Formula::parse(formula?, &names) {
                Ok(formula) => formula,
                Err(e) => {
                    errors.push(error(
                        &join(at, "calculate_output"),
                        e.to_string(),
                        Some("use numbers, the sub-graders' names, + - * /, parentheses and min, max, abs, floor, ceil, exp, sqrt, log"),
                    ));
                    return None;
                }
            };
            Kind::Multi { graders, formula }
        }
        "python" if at.is_empty() => {
            errors.push(error(
                "type",
                "a `python` grader runs in a suite, through gavel's Python sandbox".into(),
                Some("grade it with `gavel run` (kind: openai) rather than on its own"),
            ));
            return None;
        }
        // Its other fields are checked where its code is made ready for the sandbox.
        "python" => Kind::Python { at: at.to_string() },
        "score_model" | "label_model" => Kind::Model(ModelGrader::read(
            &mut fields,
            kind == "label_model",
            endpoints.chat.as_ref(),
        )?),
        other => {
            let hint = closest(other, TYPES.iter().copied())
                .map(|c| format!("did you mean `{c}`?"))
                .unwrap_or_else(|| format!("the types are {}", TYPES.join(", ")));
            errors.push(error(
                &join(at, "type"),
                format!("unknown grader type `{other}`"),
                Some(&hint),
            ));
            return None;
        }
    };
    Some(Grader { name, kind })
}

/// Reads the fields of one grader object, noting each key it reads so that `finish` can name
/// the others.
struct Fields<'a, 'e> {
    object: &'a Map<String, Value>,
    at: &'a str,
    errors: &'e mut Vec<GraderError>,
    read: Vec<&'static str>,
}

impl<'a> Fields<'a, '_> {
    fn push(&mut self, key: &str, message: String, hint: Option<&str>) {
        self.errors.push(error(&join(self.at, key), message, hint));
    }

    fn string(&mut self, key: &'static str, required: bool) -> Option<&'a str> {
        self.read.push(key);
        match self.object.get(key) {
            Some(Value::String(s)) => Some(s),
            None if !required => None,
            None => {
                self.push("", format!("`{key}` is missing"), None);
                None
            }
            Some(other) => {
                self.push(key, format!("must be a string, not {}", what(other)), None);
                None
            }
        }
    }

    fn template(&mut self, key: &'static str) -> Option<Template> {
        let text = self.string(key, true)?;
        Template::parse(text)
            .map_err(|e| {
                self.push(
                    key,
                    e.to_string(),
                    Some("write variables as {{item.NAME}} or {{sample.output_text}}"),
                )
            })
            .ok()
    }

    fn choice<T: Copy>(&mut self, key: &'static str, choices: &[(&str, T)]) -> Option<T> {
        let given = self.string(key, true)?;
        if let Some((_, value)) = choices.iter().find(|(n, _)| *n == given) {
            return Some(*value);
        }
        let names: Vec<&str> = choices.iter().map(|(n, _)| *n).collect();
        let hint = closest(given, names.iter().copied()).map(|c| format!("did you mean `{c}`?"));
        self.push(
            key,
            format!("`{given}` is not one of {}", names.join(", ")),
            hint.as_deref(),
        );
        None
    }

    fn metric(&mut self, endpoints: &Endpoints) -> Option<Similarity> {
        let names: Vec<(&str, Option<Metric>)> = Metric::NAMES.to_vec();
        if let Some(metric) = self.choice("evaluation_metric", &names)? {
            return Some(Similarity::Local(metric));
        }
        let given = self.object["evaluation_metric"]
            .as_str()
            .unwrap_or_default();
        // `meteor` and `cosine` are the names without a metric of their own.
        match (given, &endpoints.embeddings) {
            ("meteor", _) => match wordnet::get() {
                Ok(wordnet) => Some(Similarity::Meteor(wordnet)),
                Err(e) => {
                    self.push("evaluation_metric", e.to_string(), None);
                    None
                }
            },
            (_, Some(judge)) => Some(Similarity::Cosine(judge.clone())),
            (_, None) => {
                self.push(
                    "evaluation_metric",
                    "`cosine` needs an embeddings endpoint".into(),
                    Some(ENDPOINT_HINT),
                );
                None
            }
        }
    }

    /// An optional number; `Some(None)` when absent, `None` when wrong.
    fn number(&mut self, key: &'static str) -> Option<Option<f64>> {
        self.read.push(key);
        match self.object.get(key) {
            None => Some(None),
            Some(Value::Number(n)) if n.as_f64().is_some_and(f64::is_finite) => Some(n.as_f64()),
            Some(other) => {
                self.push(key, format!("must be a number, not {}", what(other)), None);
                None
            }
        }
    }

    fn graders(&mut self, endpoints: &Endpoints) -> Option<Vec<(String, Grader)>> {
        self.read.push("graders");
        let at = join(self.at, "graders");
        match self.object.get("graders") {
            Some(Value::Object(map)) if !map.is_empty() => {
                let before = self.errors.len();
                let graders: Vec<(String, Grader)> = map
                    .iter()
                    .filter_map(|(key, value)| {
                        read(value, &join(&at, key), key, endpoints, self.errors)
                            .map(|g| (key.clone(), g))
                    })
                    .collect();
                (self.errors.len() == before).then_some(graders)
            }
            None => {
                self.push("", "`graders` is missing".into(), None);
                None
            }
            Some(Value::Object(_)) => {
                self.push(
                    "graders",
                    "holds no grader: a multi combines at least one".into(),
                    Some("graders: {name: {type: string_check, ...}, ...}"),
                );
                None
            }
            Some(other) => {
                self.push(
                    "graders",
                    format!(
                        "must be a mapping of names to grader objects, not {}",
                        what(other)
                    ),
                    Some("graders: {name: {type: string_check, ...}, ...}"),
                );
                None
            }
        }
    }

    /// Each key of the object that no reading asked for is a mistake.
    fn finish(&mut self) {
        let unknown: Vec<&String> = (self.object.keys())
            .filter(|k| !self.read.contains(&k.as_str()))
            .collect();
        for key in unknown {
            let hint = closest(key, self.read.iter().copied())
                .map(|c| format!("did you mean `{c}`?"))
                .unwrap_or_else(|| format!("the fields are {}", self.read.join(", ")));
            self.push(key, "unknown field".into(), Some(&hint));
        }
    }
}

fn join(at: &str, key: &str) -> String {
    match (at.is_empty(), key.is_empty()) {
        (true, _) => key.to_string(),
        (false, true) => at.to_string(),
        (false, false) => format!("{at}.{key}"),
    }
}

fn error(field: &str, message: String, hint: Option<&str>) -> GraderError {
    GraderError {
        field: field.to_string(),
        message,
        hint: hint.map(str::to_string),
    }
}

/// What a JSON value is, for messages.
fn what(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "a list",
        Value::Object(_) => "a mapping",
    }
}

#[cfg(test)]
mod tests;
