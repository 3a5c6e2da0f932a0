//! A stand-in interpreter (world `interpreter-v1`) that runs no Python: it records what the
//! host loads and reports it back, so that the host's side of the contract (which files and
//! modules a suite hands over, the function names of each suite form, where load errors point)
//! is tested apart from the real interpreter.
//!
//! - `compile` gives each source the code `compiled <module>`; `load` fails on a source whose
//!   code is another, on a line `import numpy` in any source, and on an entry that is no source;
//! - `check-config("<form>:<module>:<attr>")` fails unless the module (any entry when the module
//!   is empty) has a line `def <attr>(` or `class <attr>`;
//! - `grade` (and `grading.grade`, its flat form) answers score 0.5 with a rationale naming the
//!   function, the entries, the modules, how many of them came compiled, and the submission;
//!   `extract` answers `<attr> extracted`; `reward` answers 0.25.

use std::cell::RefCell;

// The Python interpreter's own world: gavel names it by `GAVEL_PYTHON_COMPONENT` only when it
// speaks the host's `gavel:interpreter`.
wit_bindgen::generate!({
    path: "../../../host/runtime/python/wit",
    world: "interpreter-v1",
    generate_all,
});

use exports::gavel::grader::pack::Guest as Pack;
use exports::gavel::interpreter::child::Guest as Child;
use exports::gavel::interpreter::grading::{self, Guest as Grading};
use exports::gavel::grader::program::{Guest as Program, LoadError, Source};
use gavel::grader::types::{Grade, PackInfo, Sample, Trajectory};

thread_local! {
    static LOADED: RefCell<(Vec<Source>, Vec<String>)> = const { RefCell::new((Vec::new(), Vec::new())) };
}

struct Fake;

fn attribute(name: &str) -> (&str, &str) {
    let mut parts = name.splitn(3, ':');
    let _form = parts.next();
    (parts.next().unwrap_or(""), parts.next().unwrap_or(""))
}

fn code(source: &Source) -> Vec<u8> {
    format!("compiled {}", source.module).into_bytes()
}

impl Program for Fake {
    fn compile(sources: Vec<Source>) -> Result<Vec<Option<Vec<u8>>>, LoadError> {
        Ok(sources.iter().map(|s| Some(code(s))).collect())
    }

    fn load(sources: Vec<Source>, entries: Vec<String>) -> Result<(), LoadError> {
        for source in &sources {
            if source.code.as_ref().is_some_and(|c| *c != code(source)) {
                return Err(LoadError {
                    path: Some(source.path.clone()),
                    line: None,
                    message: "the code handed back is not what compile gave".to_string(),
                });
            }
            for (i, line) in source.text.lines().enumerate() {
                if line.trim_start().starts_with("import numpy") {
                    return Err(LoadError {
                        path: Some(source.path.clone()),
                        line: Some(i as u32 + 1),
                        message: "ModuleNotFoundError: No module named 'numpy'".to_string(),
                    });
                }
            }
        }
        if let Some(missing) = entries.iter().find(|e| !sources.iter().any(|s| &s.module == *e)) {
            return Err(LoadError {
                path: None,
                line: None,
                message: format!("ModuleNotFoundError: No module named '{missing}'"),
            });
        }
        LOADED.with(|loaded| *loaded.borrow_mut() = (sources, entries));
        Ok(())
    }

    fn reward(_name: String, _context: String) -> Result<String, String> {
        Ok("{\"reward\": 0.25}".to_string())
    }
}

impl Pack for Fake {
    fn describe() -> PackInfo {
        PackInfo {
            name: "fake-python".to_string(),
            version: "0.0.0".to_string(),
            functions: Vec::new(),
        }
    }

    fn check_config(name: String, _config: String) -> Result<(), String> {
        let (module, attr) = attribute(&name);
        LOADED.with(|loaded| {
            let (sources, entries) = &*loaded.borrow();
            let defines = |s: &Source| {
                s.text.lines().any(|l| {
                    l.starts_with(&format!("def {attr}(")) || l.starts_with(&format!("class {attr}"))
                })
            };
            let found = sources.iter().any(|s| {
                let named = if module.is_empty() {
                    entries.contains(&s.module)
                } else {
                    s.module == module
                };
                named && defines(s)
            });
            if found {
                Ok(())
            } else {
                Err(format!("module '{module}' has no attribute '{attr}'"))
            }
        })
    }

    fn grade(
        name: String,
        _sample: Sample,
        _trajectory: Trajectory,
        submission: String,
        config: String,
    ) -> Result<Grade, String> {
        let (score, rationale, metadata) = graded(&name, &submission, &config);
        Ok(Grade {
            score,
            status: None,
            rationale,
            metadata: Some(metadata),
            expected: None,
            actual: None,
        })
    }

    fn extract(
        name: String,
        _sample: Sample,
        _trajectory: Trajectory,
        _config: String,
    ) -> Result<Option<String>, String> {
        Ok(Some(format!("{} extracted", attribute(&name).1)))
    }
}

/// The grade of every call: its score, rationale and metadata.
fn graded(name: &str, submission: &str, config: &str) -> (f64, String, String) {
    let rationale = LOADED.with(|loaded| {
        let (sources, entries) = &*loaded.borrow();
        let modules: Vec<&str> = sources.iter().map(|s| s.module.as_str()).collect();
        let compiled = sources.iter().filter(|s| s.code.is_some()).count();
        format!(
            "{name} entries={} modules={} compiled={compiled} submission={submission}",
            entries.join(","),
            modules.join(",")
        )
    });
    (0.5, rationale, format!("{{\"config\": {config}}}"))
}

impl Grading for Fake {
    #[allow(clippy::too_many_arguments)]
    fn grade(
        name: String,
        _id: i64,
        _key: Option<String>,
        _row: String,
        _run: Option<grading::Run>,
        _recorded_format: Option<String>,
        _recorded_value: Option<String>,
        _digest: Option<Vec<u8>>,
        submission: String,
        config: String,
    ) -> Result<grading::Outcome, String> {
        let (score, rationale, metadata) = graded(&name, &submission, &config);
        Ok((score, None, rationale, Some(metadata), None, None))
    }
}

/// Runs no process: its programs end at once, successfully.
impl Child for Fake {
    fn main(_argv: Vec<String>, _cwd: String) -> i32 {
        0
    }
}

export!(Fake);
