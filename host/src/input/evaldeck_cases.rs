//! evaldeck projects: test-case YAML files (one, or a folder of them) and a JSONL file of their
//! recorded traces, made into dataset rows in the `turns:` shape and a suite that grades them
//! with one `kind: expectations` grader.
//!
//! Cases are read as evaldeck 0.1.5 reads them (`EvalCase.from_yaml`, `EvalSuite.from_directory`,
//! the YAML as PyYAML's `safe_load` reads it):
//! a folder's `*.yaml` files in name order, then its `*.yml` files, each skipped when its name
//! starts with `_`; a case in the older form (`input`, `expected`, `graders` beside `name`, no
//! `turns`) is one turn. The traces file holds recorded runs: a JSON recording a line (an
//! evaldeck `Trace` dict or a list of them, one per turn, or a recording of another format), or a
//! recording gavel makes into samples (a collector file, an Inspect log, a Claude Code session
//! file or folder), a run per sample. Each run is its case's: the case it names
//! (`metadata.case_name`, or OpenInference's `metadata` span attribute), else the case whose name
//! is its sample's id, else the case whose first input it was given.
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
use crate::input::trajectory::{self, ConvertError, Event};

/// The grader that grades each case, as named in the suite and in the results.
pub const GRADER: &str = "case";

/// The dataset and suite files written for a project, in the output folder.
pub const DATASET_FILE: &str = "cases.jsonl";
pub const SUITE_FILE: &str = "suite.yaml";
/// The first line of the suite a run of cases writes, which tells it from a suite of the
/// user's own in the same folder.
const WRITTEN: &str = "# Written by `gavel run --traces` for the evaldeck cases it grades: each such run writes it again.\n";

/// A project read whole: its rows, in the cases' order, the name of its suite and the `type:
/// code` entries of its cases.
pub struct Project {
    pub name: String,
    pub rows: Vec<Value>,
    pub code: Vec<CaseCodeSpec>,
    /// The case files read, and the traces.
    pub read: Vec<(String, PathBuf)>,
}

/// The endings of case files' names, in the order evaldeck lists them.
const CASE_EXTENSIONS: [&str; 2] = [".yaml", ".yml"];

/// Whether a folder's entry named `name` is a case file by its name.
fn is_case_name(name: &str) -> bool {
    CASE_EXTENSIONS.iter().any(|ext| name.ends_with(ext))
}

/// The case files at `path`: the file itself, or the folder's as evaldeck lists them.
fn case_files(path: &Path) -> Result<Vec<PathBuf>, SuiteError> {
    if let Some(refused) = crate::config::suite::evaldeck_config(path) {
        return Err(refused);
    }
    if !path.is_dir() {
        return Ok(vec![path.to_path_buf()]);
    }
    let entries = std::fs::read_dir(path)
        .map_err(|e| SuiteError::at(path, "", format!("cannot read the folder: {e}")))?;
    let mut names = Vec::new();
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        if name.starts_with('_') || !is_case_name(&name) {
            continue;
        }
        // Told from its type, never opened: a FIFO would wait for a writer. Folders are not
        // cases; an entry whose type cannot be read (a link to nothing) is refused, as evaldeck,
        // opening it, fails: a case left out silently would be graded by no one.
        let refused = match fsio::not_regular_at(&entry.path()) {
            Ok(None) => {
                names.push(name);
                continue;
            }
            Ok(Some(e)) if e.kind() == std::io::ErrorKind::IsADirectory => continue,
            Ok(Some(e)) => format!("{e}: a case file is a regular YAML file"),
            Err(e) => format!("cannot tell what it is ({e}): a case file is a regular YAML file"),
        };
        return Err(SuiteError::at(&entry.path(), "", refused)
            .with_hint("replace it with the case file, or move it out of the folder"));
    }
    names.sort();
    let files: Vec<PathBuf> = CASE_EXTENSIONS
        .iter()
        .flat_map(|ext| names.iter().filter(move |name| name.ends_with(ext)))
        .map(|name| path.join(name))
        .collect();
    if files.is_empty() {
        let mut suites: Vec<String> = (std::fs::read_dir(path).into_iter().flatten().flatten())
            .filter(|entry| entry.path().is_dir())
            .map(|entry| entry.file_name().to_string_lossy().into_owned())
            .collect();
        suites.sort();
        let hint = match suites.is_empty() {
            true => {
                "give a folder of evaldeck case files, or a suite file without --traces".to_string()
            }
            false => format!(
                "its subfolders ({}) may each be a suite of cases, as evaldeck runs them: give \
                 one of them",
                suites.join(", ")
            ),
        };
        return Err(SuiteError::at(
            path,
            "",
            "this folder holds no case file (.yaml or .yml, not starting with `_`)",
        )
        .with_hint(hint));
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
    code_errors.extend(row_mistake(file, &text, &case));
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

/// What a row made of the case would be refused for (a field of another type: `metadata: [1]`,
/// `tags: nope`), said at the case file's key rather than at the row written for it. The turns
/// are checked apart ([`Case::turns_error`]).
fn row_mistake(file: &Path, text: &str, case: &Map<String, Value>) -> Option<SuiteError> {
    let row = serde_json::to_string(case).ok()? + "\n";
    let mut items = dataset::Items::in_memory(file, row.into_bytes());
    let item = items.next_item()?.ok()?;
    let folder = file.parent().unwrap_or(Path::new("")).to_path_buf();
    let refused = dataset::RowParser::new(None, folder).parse(&item).err()?;
    let (field, message) = refused.message.split_once(": ")?;
    let key = field.split(['.', '[']).next().unwrap_or(field);
    (key != "turns").then(|| SuiteError {
        line: key_line(text, key),
        ..SuiteError::at(file, field, message)
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

/// A recorded run of the traces file, before it is paired with its case.
struct Recorded {
    /// The line of the traces file it is on; in a recording made into samples, the line (or
    /// place) its sample starts at.
    line: u64,
    /// Its sample's id, in a recording made into samples: a trace id, an Inspect sample's id, a
    /// session's id.
    id: Option<String>,
    /// Its Inspect epoch: the epochs of one sample are runs of one case.
    epoch: Option<u64>,
    trajectory: Value,
}

impl Recorded {
    /// How the run is named in an error: by its sample's id (and epoch), when it has one.
    fn who(&self) -> String {
        let epoch = self
            .epoch
            .map_or(String::new(), |e| format!(" (epoch {e})"));
        self.id
            .as_ref()
            .map_or(String::new(), |id| format!("sample `{id}`{epoch}: "))
    }
}

/// The recorded runs of the traces file at `traces`: a recording gavel makes into samples (a
/// collector file, an Inspect log, a Claude Code session file or folder) a run per sample, else
/// a JSON value per line. `errors` gets each line that is not JSON.
fn recorded_runs(traces: &Path, errors: &mut Vec<SuiteError>) -> Result<Vec<Recorded>, SuiteError> {
    let failed = |message: String| SuiteError::at(traces, "", message);
    let runs = match dataset::recording_rows(traces).map_err(|e| failed(e.message))? {
        Some(made) => made
            .text
            .lines()
            .zip(made.lines)
            .map(|(row, line)| {
                let mut row: Map<String, Value> = serde_json::from_str(row)
                    .map_err(|e| failed(format!("cannot read a sample made of it: {e}")))?;
                let id = row.get("id").map(|id| match id {
                    Value::String(id) => id.clone(),
                    id => id.to_string(),
                });
                let epoch = row.get("metadata").and_then(|m| m.get("epoch")?.as_u64());
                Ok(Recorded {
                    line: line as u64,
                    id,
                    epoch,
                    trajectory: row.remove("trajectory").unwrap_or_default(),
                })
            })
            .collect::<Result<_, SuiteError>>()?,
        None => {
            let text = fsio::read_text(traces, fsio::cap::DOCUMENT)
                .map_err(|e| failed(format!("cannot read the traces file: {e}")))?;
            if text.starts_with('\u{feff}') {
                return Err(SuiteError {
                    line: Some(1),
                    ..failed(dataset::BOM_REFUSED.to_owned())
                });
            }
            let mut runs = Vec::new();
            for (index, line) in text.lines().enumerate() {
                let number = index as u64 + 1;
                if line.trim().is_empty() {
                    continue;
                }
                match serde_json::from_str(line) {
                    Ok(trajectory) => runs.push(Recorded {
                        line: number,
                        id: None,
                        epoch: None,
                        trajectory,
                    }),
                    Err(e) => errors.push(SuiteError {
                        line: Some(number),
                        ..failed(format!("not JSON: {e}"))
                    }),
                }
            }
            runs
        }
    };
    Ok(runs)
}

/// The case a recorded run names: `metadata.case_name` of the run (an evaldeck Trace, an
/// OpenAI Responses object, an Inspect sample) or of a list's first item, else the `case_name`
/// of the `metadata` span attribute (JSON text) that OpenInference's `using_metadata` sets on
/// the spans of an OTLP trace.
fn named_case(run: &Value) -> Option<String> {
    let items = match run {
        Value::Array(items) => items.as_slice(),
        run => std::slice::from_ref(run),
    };
    if let Some(name) = items
        .first()?
        .get("metadata")
        .and_then(|m| m.get("case_name"))
    {
        return name.as_str().map(str::to_string);
    }
    fn list<'v>(value: &'v Value, key: &str) -> &'v [Value] {
        value
            .get(key)
            .and_then(Value::as_array)
            .map_or(&[], Vec::as_slice)
    }
    items
        .iter()
        .flat_map(|export| list(export, "resourceSpans"))
        .flat_map(|resource| list(resource, "scopeSpans"))
        .flat_map(|scope| list(scope, "spans"))
        .flat_map(|span| list(span, "attributes"))
        .filter(|attribute| attribute.get("key").and_then(Value::as_str) == Some("metadata"))
        .find_map(|attribute| {
            let text = attribute.get("value")?.get("stringValue")?.as_str()?;
            let metadata: Value = serde_json::from_str(text).ok()?;
            metadata.get("case_name")?.as_str().map(str::to_string)
        })
}

/// The task a recorded run was given: its input, else its first user message, read as its
/// format is read (of a list of evaldeck traces, the first trace's).
fn recorded_input(run: &Value) -> Result<Option<String>, ConvertError> {
    let raw =
        serde_json::value::to_raw_value(run).map_err(|e| ConvertError(format!("not JSON: {e}")))?;
    let first = dataset::per_turn_traces(&raw)
        .and_then(|traces| traces.first().copied())
        .unwrap_or(&raw);
    let run = trajectory::convert(first, None)?;
    Ok(run.input.as_deref().map(str::to_string).or_else(|| {
        run.events().find_map(|event| match event {
            Event::User { content } => Some(content.flatten().into_owned()),
            _ => None,
        })
    }))
}

/// The text a case gives its agent first: its first turn's `user`.
fn case_input(case: &Case) -> Option<&str> {
    case.row.get("turns")?.get(0)?.get("user")?.as_str()
}

/// Pairs the recorded runs with the cases (`rows`, of the project at `cases`): each run with the
/// case it names (`metadata.case_name`), else the case its sample's id is the name of, else the
/// case whose first input it was given, as evaldeck's runner gives a case's input to the agent.
/// The runs of each case, in the file's order; `errors` gets each run paired with no case, or
/// with one that already has a run (the epochs of an Inspect sample are runs of one case).
fn pair(
    cases: &Path,
    traces: &Path,
    rows: &[Case],
    runs: Vec<Recorded>,
    unread: bool,
    errors: &mut Vec<SuiteError>,
) -> HashMap<String, Vec<Value>> {
    let mut paired: HashMap<String, Vec<Value>> = HashMap::new();
    let mut first_on: HashMap<(String, Option<u64>), u64> = HashMap::new();
    for run in runs {
        let at = |field: &str, message: String| SuiteError {
            line: Some(run.line),
            ..SuiteError::at(traces, field, format!("{}{message}", run.who()))
        };
        let (name, field, how) = if let Some(name) = named_case(&run.trajectory) {
            if !rows.iter().any(|case| case.name == name) {
                // With a case file that could not be read, its case may be the one named:
                // that file's error says what to mend.
                if unread {
                    continue;
                }
                errors.push(
                    at(
                        "metadata.case_name",
                        format!("no case is named `{name}` in {}", cases.display()),
                    )
                    .with_hint("name one of the cases, or add the case file"),
                );
                continue;
            }
            (name, "metadata.case_name", "")
        } else if let Some(id) = run
            .id
            .as_ref()
            .filter(|id| rows.iter().any(|case| &case.name == *id))
        {
            (id.clone(), "", ", named by the sample's id,")
        } else {
            let input = match recorded_input(&run.trajectory) {
                Ok(input) => input,
                Err(e) => {
                    errors.push(at("", format!("not a recording gavel reads: {e}")));
                    continue;
                }
            };
            let given = input.as_deref().map(str::trim);
            let matching: Vec<&str> = rows
                .iter()
                .filter(|case| given.is_some() && case_input(case).map(str::trim) == given)
                .map(|case| case.name.as_str())
                .collect();
            match matching.as_slice() {
                [name] => ((*name).to_string(), "", ", whose input it was given,"),
                [] => {
                    let id = if run.id.is_some() {
                        "its id is no case's name, and "
                    } else {
                        ""
                    };
                    let input = given.map_or("it records no input".into(), |input| {
                        format!("its input {input:?} is no case's input")
                    });
                    errors.push(
                        at(
                            "metadata.case_name",
                            format!(
                                "missing: a trace names the case it records, or was given a \
                                 case's input; {id}{input}"
                            ),
                        )
                        .with_hint(
                            "add `\"metadata\": {\"case_name\": NAME}` to the trace (a list: to its \
                             first trace; OpenInference: `using_metadata({\"case_name\": NAME})`), \
                             or record the run of a case's input",
                        ),
                    );
                    continue;
                }
                names => {
                    errors.push(
                        at(
                            "metadata.case_name",
                            format!(
                                "missing, and its input is the input of several cases: `{}`",
                                names.join("`, `")
                            ),
                        )
                        .with_hint("add `\"metadata\": {\"case_name\": NAME}` to the trace"),
                    );
                    continue;
                }
            }
        };
        match first_on.get(&(name.clone(), run.epoch)) {
            Some(first) => errors.push(
                at(
                    field,
                    format!("the case `{name}`{how} already has its trace on line {first}"),
                )
                .with_hint("keep one trace (or one list of traces) per case"),
            ),
            None => {
                first_on.insert((name.clone(), run.epoch), run.line);
                paired.entry(name).or_default().push(run.trajectory);
            }
        }
    }
    paired
}

/// Reads the cases at `cases` and their traces from `traces` into rows, every problem found
/// reported with its file (and line).
pub fn load(cases: &Path, traces: &Path) -> Result<Project, Vec<SuiteError>> {
    let mut errors = Vec::new();
    let files = case_files(cases)?;
    let read = (files.iter())
        .map(|file| ("a case file".to_string(), file.clone()))
        .chain([("the traces".to_string(), traces.to_path_buf())])
        .collect();
    let mut rows: Vec<Case> = Vec::new();
    let mut unread = false;
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
            Err(e) => {
                unread = true;
                errors.push(e);
            }
        }
    }
    let mut traces_errors = Vec::new();
    let runs = recorded_runs(traces, &mut traces_errors).map_err(|e| {
        errors.push(e);
        std::mem::take(&mut errors)
    })?;
    let mut paired = pair(cases, traces, &rows, runs, unread, &mut traces_errors);
    // In the order of the lines they are found at.
    traces_errors.sort_by_key(|e| e.line);
    errors.append(&mut traces_errors);
    let mut made = Vec::with_capacity(rows.len());
    let mut code = Vec::new();
    for case in rows {
        match paired.remove(case.name.as_str()) {
            Some(runs) => made.extend(runs.into_iter().map(|run| {
                let mut row = case.row.clone();
                row.insert("trajectory".into(), run);
                Value::Object(row)
            })),
            None => errors.push(case.error(
                format!(
                    "the case `{}` has no trace in {}",
                    case.name,
                    traces.display()
                ),
                format!(
                    "add a line whose trace has `\"metadata\": {{\"case_name\": \"{}\"}}`, or \
                     the run of the case's input",
                    case.name
                ),
            )),
        }
        code.extend(case.code);
    }
    if !errors.is_empty() {
        return Err(errors);
    }
    let name = cases
        .file_stem()
        .map_or("cases".into(), |s| s.to_string_lossy().into_owned());
    Ok(Project {
        name,
        rows: made,
        code,
        read,
    })
}

impl Project {
    /// Refuses, before anything is written, to write the rows and the suite into `dir`, or
    /// `also` (what the run of them writes), over a file the project was read from.
    pub fn refuse_overwriting(
        &self,
        dir: &Path,
        also: Vec<fsio::Written>,
    ) -> Result<(), fsio::Overwrites> {
        let made =
            [("rows", DATASET_FILE), ("suite", SUITE_FILE)].map(|(what, name)| fsio::Written {
                what: format!("the cases' {what}"),
                path: dir.join(name),
                flag: "-o",
            });
        let writes: Vec<_> = made.into_iter().chain(also).collect();
        fsio::refuse_overwriting(&writes, &self.read)
    }

    /// Writes the rows (`cases.jsonl`) and the suite that grades them (`suite.yaml`) into
    /// `dir`: the suite's path.
    pub fn write(&self, dir: &Path) -> Result<PathBuf, SuiteError> {
        let failed =
            |what: &Path, e: std::io::Error| SuiteError::at(what, "", format!("cannot write: {e}"));
        std::fs::create_dir_all(dir).map_err(|e| failed(dir, e))?;
        let suite = dir.join(SUITE_FILE);
        let dataset = dir.join(DATASET_FILE);
        // What an earlier run of cases wrote is written again; a file of the same name that no
        // such run wrote (a suite of the user's own) is not replaced.
        let ours = fsio::read_text(&suite, fsio::cap::TEXT).is_ok_and(|t| t.starts_with(WRITTEN));
        for file in [&suite, &dataset] {
            // A link planted there is refused as one when it is written.
            let there = std::fs::symlink_metadata(file).is_ok_and(|m| m.is_file());
            if !ours && there {
                return Err(SuiteError::at(
                    file,
                    "",
                    format!(
                        "{} is there already, and no run of evaldeck cases wrote it: give the \
                         run a folder of its own with -o",
                        file.display()
                    ),
                ));
            }
        }
        let mut rows = String::new();
        for row in &self.rows {
            rows.push_str(&row.to_string());
            rows.push('\n');
        }
        fsio::write_output(&dataset, rows.as_bytes()).map_err(|e| failed(&dataset, e))?;
        let mut text = format!(
            "{WRITTEN}name: {}\ndataset: {DATASET_FILE}\ngraders:\n  {GRADER}:\n    kind: \
             expectations\n",
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
