//! evaldeck projects: test-case YAML files (one, or a folder of them) and a JSONL file of their
//! recorded traces, made into dataset rows in the `turns:` shape and a suite that grades them
//! with one `kind: expectations` grader.
//!
//! Cases are read as evaldeck 0.1.5 reads them (`EvalCase.from_yaml`, `EvalSuite.from_directory`,
//! the YAML as PyYAML's `safe_load` reads it):
//! a folder's `*.yaml` files in name order, then its `*.yml` files, each skipped when its name
//! starts with `_`; a case in the older form (`input`, `expected`, `graders` beside `name`, no
//! `turns`) is one turn. Each line of the traces file is one evaldeck `Trace` dict, or a list of
//! them (one per turn), and names its case in `metadata.case_name` (a list: its first trace's).
//! The cases' `type: code` entries are listed in the suite, each with the folder its module is
//! found in (the case file's) and where the case file writes it.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use serde_json::{Map, Value};

use crate::config::position::Positions;
use crate::config::pyyaml;
use crate::config::suite::{CaseCodeSpec, SuiteError};
use crate::fsio;
use crate::input::dataset::{self, check_case_turns};

/// The grader that grades each case, as named in the suite and in the results.
pub const GRADER: &str = "case";

/// The dataset and suite files written for a project, in the output folder.
pub const DATASET_FILE: &str = "cases.jsonl";
pub const SUITE_FILE: &str = "suite.yaml";

/// A project read whole: its rows, in the cases' order, the name of its suite and the `type:
/// code` entries of its cases.
pub struct Project {
    pub name: String,
    pub rows: Vec<Value>,
    pub code: Vec<CaseCodeSpec>,
}

/// The case files at `path`: the file itself, or the folder's as evaldeck lists them.
fn case_files(path: &Path) -> Result<Vec<PathBuf>, SuiteError> {
    if !path.is_dir() {
        return Ok(vec![path.to_path_buf()]);
    }
    let entries = std::fs::read_dir(path)
        .map_err(|e| SuiteError::at(path, "", format!("cannot read the folder: {e}")))?;
    let mut names: Vec<String> = entries
        .flatten()
        .filter(|entry| entry.path().is_file())
        .map(|entry| entry.file_name().to_string_lossy().into_owned())
        .filter(|name| !name.starts_with('_'))
        .collect();
    names.sort();
    let files: Vec<PathBuf> = [".yaml", ".yml"]
        .iter()
        .flat_map(|ext| names.iter().filter(move |name| name.ends_with(ext)))
        .map(|name| path.join(name))
        .collect();
    if files.is_empty() {
        return Err(SuiteError::at(
            path,
            "",
            "this folder holds no case file (.yaml or .yml, not starting with `_`)",
        )
        .with_hint("give a folder of evaldeck case files, or a suite file without --traces"));
    }
    Ok(files)
}

/// A case file read: its name, the line of its `name:` key, and its row in the `turns:` shape.
struct Case {
    file: PathBuf,
    name: String,
    line: Option<u64>,
    /// The key that holds what the case asks (`turns`, or `graders` or `expected` in the
    /// single-turn form), and its line.
    asked: (&'static str, Option<u64>),
    row: Map<String, Value>,
    /// Its `type: code` entries, each with where it is written.
    code: Vec<CaseCodeSpec>,
    /// The entries that name no module or no function.
    code_errors: Vec<SuiteError>,
}

impl Case {
    /// Why the case's turns cannot be graded, located at the key that holds them: found here
    /// rather than when the row made of the case is read from the dataset.
    fn turns_error(&self) -> Option<SuiteError> {
        let message = check_case_turns(self.row.get("turns")?).err()?;
        let (key, line) = self.asked;
        Some(SuiteError {
            line,
            ..SuiteError::at(&self.file, key, message.to_string())
        })
    }

    /// An error about this case's name, located at its `name:` line.
    fn error(&self, message: String, hint: String) -> SuiteError {
        SuiteError {
            line: self.line,
            ..SuiteError::at(&self.file, "name", message).with_hint(hint)
        }
    }
}

/// One case file as a row in the `turns:` shape.
fn read_case(file: &Path) -> Result<Case, SuiteError> {
    let text = fsio::read_text(file, fsio::cap::TEXT)
        .map_err(|e| SuiteError::at(file, "", format!("cannot read the case file: {e}")))?;
    let value = pyyaml::load(file, &text)?;
    let Value::Object(mut case) = value else {
        return Err(SuiteError::at(
            file,
            "",
            "a case file holds one mapping: `name`, then `turns` (or `input`, `expected`, `graders`)",
        ));
    };
    let name = match case.get("name") {
        Some(Value::String(name)) => name.clone(),
        Some(_) => return Err(SuiteError::at(file, "name", "must be text")),
        None => {
            return Err(SuiteError::at(file, "name", "missing")
                .with_hint("add `name: ...`: the case's name, which its trace names too"));
        }
    };
    let fields = ["input", "expected", "graders"];
    let asked = if case.contains_key("turns") {
        "turns"
    } else if case.contains_key("graders") {
        "graders"
    } else {
        "expected"
    };
    if case.contains_key("turns") {
        // evaldeck reads none of these beside `turns`.
        for field in fields {
            case.remove(field);
        }
    } else if let Some(input) = case.remove("input") {
        let mut turn = Map::new();
        turn.insert("user".into(), input);
        for field in &fields[1..] {
            if let Some(value) = case.remove(*field) {
                turn.insert((*field).into(), value);
            }
        }
        case.insert("turns".into(), Value::Array(vec![Value::Object(turn)]));
    }
    case.insert("id".into(), Value::String(name.clone()));
    let mut code_errors = Vec::new();
    let code = code_entries(file, &text, asked == "turns", &case, &mut code_errors)?;
    Ok(Case {
        file: file.to_path_buf(),
        name,
        line: key_line(&text, "name"),
        asked: (asked, key_line(&text, asked)),
        row: case,
        code,
        code_errors,
    })
}

/// The `type: code` entries of a case's turns (`row`, in the `turns:` shape), located in the
/// case file's `text`: as `turns[1].graders[0]`, or as `graders[0]` in the single-turn form.
/// `errors` gets each entry that names no module or no function.
fn code_entries(
    file: &Path,
    text: &str,
    has_turns: bool,
    row: &Map<String, Value>,
    errors: &mut Vec<SuiteError>,
) -> Result<Vec<CaseCodeSpec>, SuiteError> {
    let Some(Value::Array(turns)) = row.get("turns") else {
        return Ok(Vec::new());
    };
    let dir = std::path::absolute(file.parent().unwrap_or(Path::new(""))).map_err(|e| {
        SuiteError::at(file, "", format!("cannot find the case file's folder: {e}"))
    })?;
    let positions = Positions::of(text);
    let mut entries = Vec::new();
    for (t, turn) in turns.iter().enumerate() {
        let Some(Value::Array(graders)) = turn.get("graders") else {
            continue;
        };
        for (g, grader) in graders.iter().enumerate() {
            let is_code = grader
                .get("type")
                .and_then(Value::as_str)
                .is_some_and(|kind| kind.eq_ignore_ascii_case("code"));
            if !is_code {
                continue;
            }
            let entry = if has_turns {
                format!("turns[{t}].graders[{g}]")
            } else {
                format!("graders[{g}]")
            };
            let line = positions.key(&entry).map(|(line, _)| line);
            let text_of = |key: &str| grader.get(key).and_then(Value::as_str).map(str::to_string);
            let (Some(module), Some(function)) = (text_of("module"), text_of("function")) else {
                let missing = if text_of("module").is_none() {
                    "module"
                } else {
                    "function"
                };
                errors.push(SuiteError {
                    line,
                    ..SuiteError::at(file, format!("{entry}.{missing}"), "missing").with_hint(
                        "a `type: code` entry names a `module` beside the case file and a \
                             `function` of it, e.g. `module: my_graders` and `function: \
                             check_booking_format`",
                    )
                });
                continue;
            };
            entries.push(CaseCodeSpec {
                module,
                function,
                dir: dir.clone(),
                file: file.to_path_buf(),
                line,
                field: entry,
            });
        }
    }
    Ok(entries)
}

/// The line of the top-level key `key` in a case file's text.
fn key_line(text: &str, key: &str) -> Option<u64> {
    text.lines()
        .position(|line| {
            line.strip_prefix(key)
                .is_some_and(|rest| rest.starts_with(':'))
        })
        .map(|index| index as u64 + 1)
}

/// The case a trace line names: `metadata.case_name` of the trace, or of a list's first trace.
fn case_name(line: &Value) -> Option<&str> {
    let trace = match line {
        Value::Array(traces) => traces.first()?,
        trace => trace,
    };
    trace.get("metadata")?.get("case_name")?.as_str()
}

/// Reads the cases at `cases` and their traces from `traces` into rows, every problem found
/// reported with its file (and line).
pub fn load(cases: &Path, traces: &Path) -> Result<Project, Vec<SuiteError>> {
    let mut errors = Vec::new();
    let files = case_files(cases)?;
    let mut rows: Vec<Case> = Vec::new();
    for file in files {
        match read_case(&file) {
            Ok(case) => match rows.iter().find(|c| c.name == case.name) {
                Some(first) => errors.push(case.error(
                    format!(
                        "the case `{}` is also in {}{}",
                        case.name,
                        first.file.display(),
                        first.line.map_or(String::new(), |l| format!(":{l}"))
                    ),
                    "give each case its own name".into(),
                )),
                None => {
                    errors.extend(case.turns_error());
                    errors.extend(case.code_errors.iter().cloned());
                    rows.push(case);
                }
            },
            Err(e) => errors.push(e),
        }
    }
    if let Some(what) = dataset::recording_kind(traces) {
        errors.push(
            SuiteError::at(
                traces,
                "",
                format!(
                    "this is {what}, but --traces takes evaldeck traces: a JSON Trace a line, \
                     naming its case in `metadata.case_name`"
                ),
            )
            .with_hint(
                "grade a recording of another format with a suite: name it as the suite's \
                 `dataset:`, or as its `trajectories:` (--trajectories FILE) joined to a dataset",
            ),
        );
        return Err(errors);
    }
    let text = fsio::read_text(traces, fsio::cap::DOCUMENT).map_err(|e| {
        errors.push(SuiteError::at(
            traces,
            "",
            format!("cannot read the traces file: {e}"),
        ));
        std::mem::take(&mut errors)
    })?;
    let mut found: HashMap<String, (u64, Value)> = HashMap::new();
    for (index, line) in text.lines().enumerate() {
        let number = index as u64 + 1;
        if line.trim().is_empty() {
            continue;
        }
        let at = |field: &str, message: String| SuiteError {
            line: Some(number),
            ..SuiteError::at(traces, field, message)
        };
        let value: Value = match serde_json::from_str(line) {
            Ok(value) => value,
            Err(e) => {
                errors.push(at("", format!("not JSON: {e}")));
                continue;
            }
        };
        let Some(name) = case_name(&value).map(str::to_string) else {
            errors.push(
                at(
                    "metadata.case_name",
                    "missing: a trace names the case it records".into(),
                )
                .with_hint("add `\"metadata\": {\"case_name\": NAME}` to the trace (a list: to its first trace)"),
            );
            continue;
        };
        if !rows.iter().any(|case| case.name == name) {
            errors.push(
                at(
                    "metadata.case_name",
                    format!("no case is named `{name}` in {}", cases.display()),
                )
                .with_hint("name one of the cases, or add the case file"),
            );
        } else if let Some((first, _)) = found.get(&name) {
            errors.push(
                at(
                    "metadata.case_name",
                    format!("the case `{name}` already has its trace on line {first}"),
                )
                .with_hint("keep one trace (or one list of traces) per case"),
            );
        } else {
            found.insert(name, (number, value));
        }
    }
    for case in &mut rows {
        match found.remove(case.name.as_str()) {
            Some((_, trace)) => {
                case.row.insert("trajectory".into(), trace);
            }
            None => errors.push(case.error(
                format!(
                    "the case `{}` has no trace in {}",
                    case.name,
                    traces.display()
                ),
                format!(
                    "add a line whose trace has `\"metadata\": {{\"case_name\": \"{}\"}}`",
                    case.name
                ),
            )),
        }
    }
    if !errors.is_empty() {
        return Err(errors);
    }
    let name = cases
        .file_stem()
        .map_or("cases".into(), |s| s.to_string_lossy().into_owned());
    let mut code = Vec::new();
    let rows = rows
        .into_iter()
        .map(|case| {
            code.extend(case.code);
            Value::Object(case.row)
        })
        .collect();
    Ok(Project { name, rows, code })
}

impl Project {
    /// Writes the rows (`cases.jsonl`) and the suite that grades them (`suite.yaml`) into
    /// `dir`: the suite's path.
    pub fn write(&self, dir: &Path) -> Result<PathBuf, SuiteError> {
        let failed =
            |what: &Path, e: std::io::Error| SuiteError::at(what, "", format!("cannot write: {e}"));
        std::fs::create_dir_all(dir).map_err(|e| failed(dir, e))?;
        let mut rows = String::new();
        for row in &self.rows {
            rows.push_str(&row.to_string());
            rows.push('\n');
        }
        let dataset = dir.join(DATASET_FILE);
        fsio::write_output(&dataset, rows.as_bytes()).map_err(|e| failed(&dataset, e))?;
        let suite = dir.join(SUITE_FILE);
        let mut text = format!(
            "name: {}\ndataset: {DATASET_FILE}\ngraders:\n  {GRADER}:\n    kind: expectations\n",
            Value::String(self.name.clone())
        );
        if !self.code.is_empty() {
            text.push_str("    code:\n");
            for entry in &self.code {
                // A JSON object is a YAML flow mapping.
                let entry = serde_json::to_string(entry).map_err(|e| {
                    SuiteError::at(&suite, "", format!("cannot write a code entry: {e}"))
                })?;
                text.push_str(&format!("      - {entry}\n"));
            }
        }
        fsio::write_output(&suite, text.as_bytes()).map_err(|e| failed(&suite, e))?;
        Ok(suite)
    }
}
