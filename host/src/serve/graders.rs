//! OpenAI's grader endpoints: `POST /v1/fine_tuning/alpha/graders/run` (a grader object, a
//! `model_sample` and an `item` in; the reward, sub-rewards and metadata out) and
//! `.../graders/validate` (a grader object in, the same object out once it is checked).
//!
//! A grader object of a request is granted nothing: a `python` grader runs in gavel's sandbox
//! with the default limits, through a suite of its own made for it without `allow:` (no
//! network, no variables, no files), as is each `python` sub-grader of a `multi`, before the
//! `multi` is graded; and the model graders and `cosine` ask only the endpoint
//! the server was started with (`Requested::endpoints`), never one the request names.
//!
//! A `python` grader's suite is prepared once and kept, by the SHA-256 of its object, for the
//! requests that post the same object again ([`PREPARED_KEPT`] of them, the least recently
//! used dropped first); the interpreter is loaded when the server starts ([`Requested::warm`]).

use std::collections::VecDeque;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use serde::Deserialize;
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

use super::grading::{self, GradingError};
use crate::config::openai::python_inside;
use crate::grade::openai::{self, Endpoints, Grader, GraderError, Outcome, PythonResult};
use crate::grade::pack;
use crate::run::{Options, Prepared, prepare};

/// What a request's grader object may use, set when the server starts.
pub struct Requested {
    /// Where model graders and `cosine` ask; none: they are refused.
    pub endpoints: Endpoints,
    /// The cache holding the compiled Python interpreter.
    pub cache_dir: Option<PathBuf>,
    /// The `python` graders prepared, most recently used last.
    prepared: Mutex<VecDeque<([u8; 32], Arc<PreparedPython>)>>,
}

/// `python` graders whose prepared suites are kept: each holds some 17 MiB (measured: 30
/// distinct graders posted to a debug build grew it by 510 MiB), so a server posted many
/// distinct graders holds about 270 MiB of them at most.
pub const PREPARED_KEPT: usize = 16;

/// The `python` sub-graders one grader object may hold: each is prepared (its code compiled,
/// its suite's instances reserved, some 17 MiB as above) before the object is graded.
pub const MAX_PYTHON_GRADERS: usize = 8;

/// A `python` grader object's suite, prepared.
struct PreparedPython {
    name: String,
    prepared: Prepared,
    /// The folder of the suite made for it, removed when it is dropped.
    folder: tempfile::TempDir,
}

impl Requested {
    pub fn new(endpoints: Endpoints, cache_dir: Option<PathBuf>) -> Requested {
        Requested {
            endpoints,
            cache_dir,
            prepared: Mutex::default(),
        }
    }

    /// Loads the Python interpreter now, as the first `python` grader posted would; the error
    /// says why those graders will be refused.
    pub fn warm(&self) -> Result<(), Failure> {
        let probe =
            json!({"type": "python", "source": "def grade(sample, item):\n    return 0.0\n"});
        check(&probe, self).map(|_| ())
    }

    /// The prepared suite of the object whose digest is `key`, marked as just used.
    fn kept(&self, key: &[u8; 32]) -> Option<Arc<PreparedPython>> {
        let mut kept = self.prepared.lock().unwrap_or_else(|e| e.into_inner());
        let at = kept.iter().position(|(k, _)| k == key)?;
        let entry = kept.remove(at)?;
        let prepared = entry.1.clone();
        kept.push_back(entry);
        Some(prepared)
    }

    fn keep(&self, key: [u8; 32], prepared: Arc<PreparedPython>) {
        let mut kept = self.prepared.lock().unwrap_or_else(|e| e.into_inner());
        kept.retain(|(k, _)| *k != key);
        if kept.len() >= PREPARED_KEPT {
            kept.pop_front();
        }
        kept.push_back((key, prepared));
    }
}

/// The body of `graders/run`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RunBody {
    grader: Value,
    model_sample: String,
    #[serde(default)]
    item: Option<Value>,
}

/// The body of `graders/validate`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ValidateBody {
    grader: Value,
}

/// Why a request has no answer.
#[derive(Debug, thiserror::Error)]
pub enum Failure {
    /// The request's mistake, at its field (`grader.calculate_output`): `400`.
    #[error("{message}")]
    Invalid {
        message: String,
        param: Option<String>,
    },
    /// The server's: the Python interpreter cannot be loaded, say.
    #[error("{0}")]
    Server(String),
    #[error("{0}")]
    Grading(GradingError),
}

impl Failure {
    fn invalid(message: impl Into<String>, param: Option<String>) -> Failure {
        Failure::Invalid {
            message: message.into(),
            param,
        }
    }
}

/// The name a grader object without `name` is known by.
const UNNAMED: &str = "grader";

/// Reads a request body of `T`'s shape.
pub fn read<'a, T: Deserialize<'a>>(body: &'a [u8], endpoint: &str) -> Result<T, Failure> {
    // serde reads a struct from a list too, field by field: a request is an object.
    if body.trim_ascii_start().first() != Some(&b'{') {
        return Err(Failure::invalid(
            format!("the body is not a {endpoint} request: a request is a JSON object"),
            None,
        ));
    }
    let mut read = serde_json::Deserializer::from_slice(body);
    serde_path_to_error::deserialize(&mut read).map_err(|e| {
        let inner = e.inner().to_string();
        // The field at fault: where serde stopped, or the one it found missing.
        let param = match e.path().to_string() {
            path if path != "." && path != "?" => Some(path),
            _ => (inner.split('`').nth(1))
                .filter(|_| inner.starts_with("missing field"))
                .map(str::to_string),
        };
        Failure::invalid(
            format!("the body is not a {endpoint} request: {inner}"),
            param,
        )
    })
}

/// A grader object, checked: one gavel runs in place, with the suites of the `python`
/// sub-graders of its `multi`s by their place in the object, or a `python` one's suite.
enum Checked {
    Object(Box<Grader>, Vec<(String, Arc<PreparedPython>)>),
    Python(Arc<PreparedPython>),
}

/// Checks `object`; blocks while a `python` grader's code is compiled, unless its suite was
/// prepared for an earlier request.
fn check(object: &Value, requested: &Requested) -> Result<Checked, Failure> {
    if object.get("type").and_then(Value::as_str) != Some("python") {
        let grader = Grader::parse(object, UNNAMED, &requested.endpoints).map_err(mistakes)?;
        let inside = python_inside(object);
        if inside.len() > MAX_PYTHON_GRADERS {
            return Err(Failure::invalid(
                format!(
                    "a grader object may hold at most {MAX_PYTHON_GRADERS} `python` graders, \
                     each compiled and run in a sandbox of its own; this one holds {}: join \
                     their code into fewer",
                    inside.len()
                ),
                Some("grader.graders".to_string()),
            ));
        }
        let python = (inside.into_iter())
            .map(|(at, inner)| {
                let inner = Value::Object(inner.clone());
                python_suite(&inner, &at, requested).map(|prepared| (at, prepared))
            })
            .collect::<Result<_, _>>()?;
        return Ok(Checked::Object(Box::new(grader), python));
    }
    python_suite(object, "", requested).map(Checked::Python)
}

/// The suite of the `python` grader object `object`, at `at` in the object posted: the one
/// prepared for an earlier request, or one prepared now.
fn python_suite(
    object: &Value,
    at: &str,
    requested: &Requested,
) -> Result<Arc<PreparedPython>, Failure> {
    let key: [u8; 32] = Sha256::digest(object.to_string().as_bytes()).into();
    if let Some(prepared) = requested.kept(&key) {
        return Ok(prepared);
    }
    let prepared = Arc::new(prepare_python(object, at, requested)?);
    requested.keep(key, prepared.clone());
    Ok(prepared)
}

/// A `python` grader object's suite, written to a folder of its own and prepared; its
/// mistakes are located at `at`, its place in the object posted.
fn prepare_python(
    object: &Value,
    at: &str,
    requested: &Requested,
) -> Result<PreparedPython, Failure> {
    let server =
        |e: std::io::Error| Failure::Server(format!("cannot write the grader's suite: {e}"));
    let folder = tempfile::tempdir().map_err(server)?;
    let write = |name: &str, text: String| std::fs::write(folder.path().join(name), text);
    write("grader.json", object.to_string()).map_err(server)?;
    write("data.jsonl", String::new()).map_err(server)?;
    write(
        "suite.yaml",
        format!(
            "name: request\ndataset: data.jsonl\ngraders:\n  {UNNAMED}:\n    kind: openai\n    \
             grader_path: grader.json\n"
        ),
    )
    .map_err(server)?;
    let options = Options {
        cache_dir: requested.cache_dir.clone(),
        no_judge_cache: true,
        trajectories: Vec::new(),
        serving: true,
    };
    let prepared = prepare(&folder.path().join("suite.yaml"), &options).map_err(|errors| {
        // The suite's own field `graders` is where a Python interpreter that cannot be loaded
        // is reported; every other mistake is the object's.
        match errors.iter().find(|e| e.field == "graders") {
            Some(e) => Failure::Server(e.message.clone()),
            None => mistakes(
                errors
                    .into_iter()
                    .map(|e| GraderError {
                        field: [
                            at,
                            (e.field.strip_prefix("graders.grader"))
                                .map(|f| f.trim_start_matches('.'))
                                .unwrap_or(&e.field),
                        ]
                        .iter()
                        .filter(|part| !part.is_empty())
                        .copied()
                        .collect::<Vec<_>>()
                        .join("."),
                        message: unlocated(&e.message),
                        hint: e.hint,
                    })
                    .collect(),
            ),
        }
    })?;
    let name = (object.get("name").and_then(Value::as_str))
        .unwrap_or(UNNAMED)
        .to_string();
    Ok(PreparedPython {
        name,
        prepared,
        folder,
    })
}

/// `message` of the suite made for a posted `python` grader, located at the line of the source
/// posted: `suite.yaml#graders.grader:2: SyntaxError` is `line 2: SyntaxError`.
fn unlocated(message: &str) -> String {
    let source = format!("suite.yaml#graders.{UNNAMED}");
    (message.replace(&format!("{source}: "), "")).replace(&format!("{source}:"), "line ")
}

/// The mistakes of a grader object as one `400`: each at `grader.FIELD`, the first's field as
/// the error's `param`.
fn mistakes(errors: Vec<GraderError>) -> Failure {
    let at = |e: &GraderError| match e.field.as_str() {
        "" => "grader".to_string(),
        field => format!("grader.{field}"),
    };
    let message = (errors.iter())
        .map(|e| match &e.hint {
            Some(hint) => format!("{}: {} ({hint})", at(e), e.message),
            None => format!("{}: {}", at(e), e.message),
        })
        .collect::<Vec<_>>()
        .join("; ");
    Failure::invalid(message, errors.first().map(at))
}

/// `graders/validate`'s answer: the grader object as given, once checked; `hold` is kept until
/// the check ends (a `python` grader's code is compiled), whether or not the answer still waits.
pub async fn validate(
    requested: Arc<Requested>,
    body: ValidateBody,
    hold: impl Send + 'static,
) -> Result<Value, Failure> {
    let grader = body.grader;
    tokio::task::spawn_blocking(move || {
        let _hold = hold;
        check(&grader, &requested)?;
        Ok(json!({"grader": grader}))
    })
    .await
    .map_err(|e| Failure::Server(e.to_string()))?
}

/// `graders/run`'s answer: the grader object run on the item and the model's sample, within
/// `deadline`, and what went wrong where the grade failed (which OpenAI's answer only flags, for
/// the server's log); `hold` is kept until the grading ends, whether or not the answer still
/// waits for it, and the grading stops at the deadline (each `python` call at its own, a
/// `multi` before its next sub-grader).
pub async fn run(
    requested: Arc<Requested>,
    body: RunBody,
    deadline: Instant,
    hold: impl Send + 'static,
) -> Result<(Value, Option<String>), Failure> {
    let item = match body.item {
        None | Some(Value::Null) => json!({}),
        Some(item @ Value::Object(_)) => item,
        Some(_) => {
            return Err(Failure::invalid(
                "`item` must be a JSON object, the dataset row the grader reads as {{item.NAME}}",
                Some("item".to_string()),
            ));
        }
    };
    let sample = openai::row::of_text(&body.model_sample);
    let grader = body.grader;
    let runtime = tokio::runtime::Handle::current();
    // The check (a `python` grader's code compiled), the `python` calls and the local metrics
    // (a long text's `fuzzy_match` for up to about a second) run on a thread for blocking
    // work, so that the runtime's workers go on serving other requests, with model graders'
    // requests driven from it.
    tokio::task::spawn_blocking(move || {
        let _hold = hold;
        let outcome = match check(&grader, &requested)? {
            Checked::Object(grader, python) => {
                let results = (python.iter())
                    .map(|(at, prepared)| {
                        let (item, sample) = (item.clone(), sample.clone());
                        let ran = python_result(prepared, item, sample, deadline, &runtime);
                        ran.map(|result| (at.clone(), result))
                    })
                    .collect::<Result<_, _>>()?;
                let graded = grader.run(&item, &sample, &results, Some(deadline));
                pack::block_on_here(&runtime, graded)
            }
            Checked::Python(python_grader) => {
                let result = python_result(&python_grader, item, sample, deadline, &runtime)?;
                Outcome::python(&python_grader.name, &result)
            }
        };
        let answer = serde_json::to_value(&outcome).expect("an outcome is JSON");
        Ok((answer, outcome.error))
    })
    .await
    .map_err(|e| Failure::Server(e.to_string()))?
}

/// What a `python` grader gives on `item` and `sample`: the pass of its suite over the one
/// row, on `runtime`, in instances of its own (a posted grader is untrusted: it never meets
/// another request's samples).
fn python_result(
    python: &PreparedPython,
    item: Value,
    sample: Value,
    deadline: Instant,
    runtime: &tokio::runtime::Handle,
) -> Result<PythonResult, Failure> {
    let started = Instant::now();
    let row = json!({"item": item, "sample": sample}).to_string() + "\n";
    let grading = grading::grade(&python.prepared, 1, row.into_bytes(), deadline, None, None);
    let graded = pack::block_on_here(runtime, grading);
    let graded = graded.map_err(Failure::Grading)?;
    let seconds = started.elapsed().as_secs_f64();
    let result: Value = serde_json::from_slice(&graded.lines).unwrap_or_default();
    let grade = &result["grades"][UNNAMED];
    let score = grade["score"].as_f64().unwrap_or(0.0);
    let error = match grade["status"].as_str() {
        Some("error") => Some(grade["rationale"].as_str().unwrap_or_default().to_string()),
        Some(_) => None,
        None => Some(
            (result["error"]["message"].as_str())
                .unwrap_or("the grader gave no grade")
                .to_string(),
        ),
    };
    // A traceback names the source by the suite made for the request: said without its folder,
    // which is the server's, and at the line of the source posted; the sandbox's word for a
    // failed call is the suite's, not the request's.
    let folder = format!("{}/", python.folder.path().display());
    let error = error.map(|e| {
        let e = e.replace(&folder, "");
        unlocated(e.strip_prefix("guest returned error: ").unwrap_or(&e))
    });
    let passed = grade["status"] == "pass";
    Ok(PythonResult {
        score,
        passed,
        error,
        seconds,
    })
}
