//! The suite file (YAML): strict parsing with errors that name the file, line, column and field.

use std::path::{Path, PathBuf};

use indexmap::IndexMap;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::config::position::Positions;
use crate::config::pyyaml::join;
use serde::de::IgnoredAny;
use serde_json::{Map, Value};

use crate::config::allow::AllowSpec;
pub use crate::config::error::{SuiteError, closest};
use crate::config::gate::GateSpec;
use crate::config::openai::{self, OpenAiSpec};
use crate::config::reward::RewardSpec;
pub use crate::config::spec::PythonSpec;
use crate::config::spec::{Format, Isolation, Limits, PackSpec, RubricSpec, SamplePer};
use crate::fsio;

/// A suite file as written.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SuiteFile {
    pub name: String,
    #[serde(default)]
    pub description: Option<String>,
    /// JSONL file of samples, relative to the suite file.
    pub dataset: String,
    /// Recorded runs joined to samples by id (letta-evals `<model>.jsonl` result files work as
    /// they are); one file or a list of files (e.g. `run_1.jsonl` ... `run_N.jsonl`).
    #[serde(default)]
    pub trajectories: Option<OneOrMany>,
    /// Forces one trajectory format instead of detecting it per row.
    #[serde(default)]
    pub format: Option<Format>,
    /// What a sample of a collector file is: a trace (the default) or a root span.
    #[serde(default)]
    pub sample_per: Option<SamplePer>,
    /// The shape every dataset row must have (`openai_eval`), checked as each row is read.
    #[serde(default)]
    pub dataset_format: Option<openai::DatasetFormat>,
    #[serde(default)]
    pub packs: IndexMap<String, PackSpec>,
    pub graders: IndexMap<String, GraderSpec>,
    #[serde(default)]
    pub gate: Option<GateSpec>,
    #[serde(default)]
    pub reward: Option<RewardSpec>,
    #[serde(default)]
    pub max_samples: Option<u64>,
    #[serde(default)]
    pub concurrency: Option<usize>,
    #[serde(default)]
    pub limits: Option<Limits>,
    /// Where users' Python graders run: a warm instance per grader and batch of samples
    /// (`batch`, the default) or a fresh one per call (`sample`); a grader's own wins.
    #[serde(default)]
    pub isolation: Option<Isolation>,
    #[serde(default)]
    pub output: Option<String>,
    /// What every Python and pack grader may reach, unless its own `allow:` says otherwise.
    #[serde(default)]
    pub allow: Option<AllowSpec>,
    /// Python packages every Python grader of the suite imports (PEP 508 lines), resolved into
    /// `pylock.gavel.toml` beside the suite.
    #[serde(default)]
    pub requirements: Vec<String>,
    // letta-evals keys about running the agent rather than grading it: accepted so that a
    // letta-evals suite loads unchanged, each with a notice of what gavel does with it.
    #[serde(default)]
    pub target: Option<IgnoredAny>,
    #[serde(default)]
    pub setup_script: Option<IgnoredAny>,
    #[serde(default)]
    pub num_runs: Option<IgnoredAny>,
    #[serde(default)]
    pub sandbox: Option<IgnoredAny>,
    #[serde(default)]
    pub cleanup: Option<IgnoredAny>,
    #[serde(default)]
    pub max_concurrent: Option<usize>,
    #[serde(default)]
    pub sample_tags: Option<IgnoredAny>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(untagged)]
pub enum OneOrMany {
    One(String),
    Many(Vec<String>),
}

impl OneOrMany {
    pub fn paths(&self) -> Vec<&str> {
        match self {
            OneOrMany::One(p) => vec![p.as_str()],
            OneOrMany::Many(ps) => ps.iter().map(String::as_str).collect(),
        }
    }
}

/// One entry of `graders:`, by `kind`.
#[derive(Debug, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum GraderSpec {
    /// A function over the submission (letta-evals functions, pack graders) or over the whole
    /// trajectory (evaldeck checks).
    Tool(ToolSpec),
    /// The sample's `expected:` block, AND-combined as evaldeck does.
    Expectations(ExpectationsSpec),
    /// LLM as judge (letta-evals' current name: `model_judge`).
    #[serde(alias = "model_judge")]
    Rubric(Box<RubricSpec>),
    /// Passes when every sub-grader passes.
    All(CompositeSpec),
    /// Passes when at least one sub-grader passes.
    Any(CompositeSpec),
    /// evaldeck's `type: code`: a function or a `BaseGrader` class of a Python module beside
    /// the suite, over the whole trajectory.
    Code(CodeSpec),
    /// OpenAI's `python` grader: `grade(sample, item) -> float`.
    Python(PythonSpec),
    /// One of OpenAI's grader objects (`string_check`, `text_similarity`, `multi`, `python`).
    Openai(OpenAiSpec),
}

impl GraderSpec {
    /// What its calls may reach, as its own `allow:` says (composites and built-ins say
    /// nothing).
    pub fn allow(&self) -> Option<&AllowSpec> {
        match self {
            GraderSpec::Tool(spec) => spec.allow.as_ref(),
            GraderSpec::Code(spec) => spec.allow.as_ref(),
            GraderSpec::Python(spec) => spec.allow.as_ref(),
            GraderSpec::Openai(spec) => spec.allow.as_ref(),
            GraderSpec::Expectations(_)
            | GraderSpec::Rubric(_)
            | GraderSpec::All(_)
            | GraderSpec::Any(_) => None,
        }
    }

    /// Where its Python calls run, as its own `isolation` says (composites say nothing).
    pub fn isolation(&self) -> Option<Isolation> {
        match self {
            GraderSpec::Tool(spec) => spec.isolation,
            GraderSpec::Expectations(spec) => spec.isolation,
            GraderSpec::Code(spec) => spec.isolation,
            GraderSpec::Python(spec) => spec.isolation,
            GraderSpec::Openai(spec) => spec.isolation,
            GraderSpec::Rubric(_) | GraderSpec::All(_) | GraderSpec::Any(_) => None,
        }
    }
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CodeSpec {
    /// `my_graders` (`my_graders.py` beside the suite) or `graders.tools`.
    pub module: String,
    /// A `(trace, test_case) -> GradeResult` function of the module.
    #[serde(default)]
    pub function: Option<String>,
    /// A `BaseGrader` subclass of the module, built with `params`.
    #[serde(default)]
    pub class: Option<String>,
    /// Keyword arguments of the class's constructor.
    #[serde(default)]
    pub params: Map<String, Value>,
    /// Python packages this grader's code imports, besides the suite's `requirements:`.
    #[serde(default)]
    pub requirements: Vec<String>,
    #[serde(default)]
    pub display_name: Option<String>,
    /// What this grader may reach, over the suite's `allow:`.
    #[serde(default)]
    pub allow: Option<AllowSpec>,
    /// Where its Python calls run (`batch` or `sample`), over the suite's `isolation`.
    #[serde(default)]
    pub isolation: Option<Isolation>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ToolSpec {
    pub function: String,
    #[serde(default)]
    pub extractor: Option<String>,
    #[serde(default)]
    pub extractor_config: Map<String, Value>,
    /// Parameters of an evaldeck check or a pack function.
    #[serde(default)]
    pub config: Map<String, Value>,
    #[serde(default)]
    pub display_name: Option<String>,
    /// What this grader may reach, over the suite's `allow:`.
    #[serde(default)]
    pub allow: Option<AllowSpec>,
    /// Where its Python calls run (`batch` or `sample`), over the suite's `isolation`.
    #[serde(default)]
    pub isolation: Option<Isolation>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ExpectationsSpec {
    #[serde(default)]
    pub display_name: Option<String>,
    /// The `type: code` entries of evaldeck cases' turns, written by `gavel run CASES --traces`:
    /// each function is run, in the sandbox, where an entry of the dataset's turns names it.
    #[serde(default)]
    pub code: Vec<CaseCodeSpec>,
    /// Where its Python calls run (`batch` or `sample`), over the suite's `isolation`.
    #[serde(default)]
    pub isolation: Option<Isolation>,
}

/// A `type: code` entry of an evaldeck case file, and where it is written.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CaseCodeSpec {
    /// `my_graders` or `graders.tools`, found in `dir`.
    pub module: String,
    /// A `(trace, test_case) -> GradeResult` function of the module.
    pub function: String,
    /// The case file's folder, where the module is.
    pub dir: PathBuf,
    /// The case file, the line and the field of the entry, where its mistakes are reported.
    pub file: PathBuf,
    #[serde(default)]
    pub line: Option<u64>,
    pub field: String,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CompositeSpec {
    pub graders: IndexMap<String, GraderSpec>,
    #[serde(default)]
    pub display_name: Option<String>,
}

/// A suite file loaded from disk.
#[derive(Debug)]
pub struct Suite {
    pub file: SuiteFile,
    /// Where each field is written, to locate mistakes found after parsing.
    pub positions: Positions,
    /// The suite file's path as given.
    pub path: PathBuf,
    /// The folder relative paths are resolved against.
    pub base_dir: PathBuf,
    /// SHA-256 of the file as read, in lowercase hex.
    pub sha256: String,
}

/// A suite file read as far as its mistakes allow (see [`Suite::load_partly`]).
#[derive(Debug)]
pub struct Partial {
    /// The suite without the fields and graders its mistakes are in.
    pub suite: Suite,
    /// Its mistakes of shape, located, sorted by line.
    pub errors: Vec<SuiteError>,
    /// The metric keys of the graders left out for a mistake of their own.
    pub skipped: Vec<String>,
}

impl Suite {
    /// `error` at the line and column of its field's value in this suite, when it has none.
    pub fn locate(&self, mut error: SuiteError) -> SuiteError {
        if error.line.is_none()
            && error.file == self.path
            && let Some((line, column)) = self.positions.value(&error.field)
        {
            error.line = Some(line);
            error.column = Some(column);
        }
        error
    }

    /// Reads and parses a suite file; every mistake of its shape is reported, not only the first.
    pub fn load(path: &Path) -> Result<Suite, Vec<SuiteError>> {
        let read = Suite::load_partly(path)?;
        if read.errors.is_empty() {
            Ok(read.suite)
        } else {
            Err(read.errors)
        }
    }

    /// Reads a suite file as far as its mistakes allow: what is well written, with every
    /// mistake of shape found (each at its field, sorted by line) and the graders left out for
    /// them, so that the checks after the shape look at the rest. `Err` when no suite can be
    /// made of it (a syntax error, a required field wrong).
    pub fn load_partly(path: &Path) -> Result<Partial, Vec<SuiteError>> {
        if let Some(refused) = evaldeck_config(path) {
            return Err(vec![refused]);
        }
        if path.is_dir() {
            return Err(vec![
                SuiteError::at(path, "", folder_given(path)).with_hint(
                    "for a folder of evaldeck case files, give their traces: --traces FILE",
                ),
            ]);
        }
        let text = fsio::read_text(path, fsio::cap::TEXT).map_err(|e| {
            vec![SuiteError::at(
                path,
                "",
                format!("cannot read the suite file: {e}"),
            )]
        })?;
        let (mut file, mut errors, mut skipped) = match parse_all(&text, path) {
            Ok(()) => {
                let file = as_pyyaml_reads(&text, path)?;
                (file, Vec::new(), Vec::new())
            }
            Err(strict) => match gather(&text, path, &strict) {
                Some(Gathered {
                    file: Some(file),
                    errors,
                    skipped,
                }) => (file, errors, skipped),
                Some(Gathered { errors, .. }) => return Err(evaldeck_case_given(errors)),
                None => {
                    let mut strict = strict;
                    continued(&mut strict, &text);
                    return Err(evaldeck_case_given(strict));
                }
            },
        };
        let base_dir = path.parent().map(Path::to_path_buf).unwrap_or_default();
        resolve_openai(
            &mut file.graders,
            "graders",
            path,
            &base_dir,
            &mut errors,
            &mut skipped,
        );
        SuiteError::sort(&mut errors);
        Ok(Partial {
            suite: Suite {
                sha256: format!("{:x}", Sha256::digest(text.as_bytes())),
                positions: Positions::of(&text),
                file,
                path: path.to_path_buf(),
                base_dir,
            },
            errors: evaldeck_case_given(errors),
            skipped,
        })
    }

    /// Grades `runs` (paths as given on the command line, relative to the working folder) in
    /// place of the suite's own `trajectories:`.
    pub fn replace_trajectories(&mut self, runs: &[PathBuf]) {
        let absolute = |p: &PathBuf| std::path::absolute(p).unwrap_or_else(|_| p.clone());
        self.file.trajectories = Some(OneOrMany::Many(
            runs.iter()
                .map(|p| absolute(p).to_string_lossy().into_owned())
                .collect(),
        ));
    }

    /// A path from the suite, resolved against the suite's folder.
    pub fn resolve(&self, relative: &str) -> PathBuf {
        self.base_dir.join(relative)
    }

    /// One line per letta-evals key that gavel accepts but does not act on as letta-evals does.
    pub fn notices(&self) -> Vec<String> {
        let f = &self.file;
        let mut notices = Vec::new();
        let mut note = |present: bool, key: &str, what: &str| {
            if present {
                notices.push(format!("notice: `{key}`: {what}"));
            }
        };
        note(
            f.target.is_some(),
            "target",
            "gavel grades recorded runs and does not run agents; `--trajectories`, `trajectories:` or the rows' `trajectory` supply them",
        );
        note(
            f.setup_script.is_some(),
            "setup_script",
            "not run (no agent is started)",
        );
        note(
            f.num_runs.is_some(),
            "num_runs",
            "recorded runs that share a sample id are graded as repeated runs (pass@k)",
        );
        note(
            f.sandbox.is_some(),
            "sandbox",
            "ignored; custom graders run in gavel's WebAssembly sandbox",
        );
        note(
            f.cleanup.is_some(),
            "cleanup",
            "ignored (no agent is created)",
        );
        note(
            f.max_concurrent.is_some() && f.concurrency.is_none(),
            "max_concurrent",
            "used as `concurrency`",
        );
        note(
            f.sample_tags.is_some(),
            "sample_tags",
            "ignored, as letta-evals does; use `gavel run --filter tag:NAME`",
        );
        notices
    }

    /// The suite's concurrency setting (`concurrency`, else letta-evals' `max_concurrent`).
    pub fn concurrency(&self) -> Option<usize> {
        self.file.concurrency.or(self.file.max_concurrent)
    }
}

/// A suite's mistakes; when its unknown keys are an evaldeck case's, the first says so.
fn evaldeck_case_given(mut errors: Vec<SuiteError>) -> Vec<SuiteError> {
    let case_key = errors.iter_mut().find(|e| {
        ["input", "turns"].contains(&e.field.as_str()) && e.message.starts_with("unknown field")
    });
    if let Some(error) = case_key {
        error.hint = Some(
            "this looks like an evaldeck case file: grade it with its recorded traces, \
             --traces FILE"
                .into(),
        );
    }
    errors
}

/// What to say when the suite path is a folder: which suite files it holds.
/// The names evaldeck gives its project's configuration.
const EVALDECK_CONFIGS: [&str; 2] = ["evaldeck.yaml", "evaldeck.yml"];

/// Why `path`, evaldeck's project configuration or a folder holding it, is not what gavel
/// reads, and what to give instead: its cases' folder (`test_dir`) with their traces.
pub fn evaldeck_config(path: &Path) -> Option<SuiteError> {
    let config = match path.is_dir() {
        true => EVALDECK_CONFIGS
            .iter()
            .map(|name| path.join(name))
            .find(|config| config.is_file())?,
        false => path
            .file_name()
            .is_some_and(|name| EVALDECK_CONFIGS.iter().any(|c| name == *c))
            .then(|| path.to_path_buf())?,
    };
    let text = fsio::read_text(&config, fsio::cap::TEXT).unwrap_or_default();
    let named = super::pyyaml::load(&config, &text)
        .ok()
        .and_then(|value| value.get("test_dir")?.as_str().map(str::to_string));
    let cases = config
        .parent()
        .unwrap_or(Path::new(""))
        .join(named.as_deref().unwrap_or("tests/evals"));
    Some(
        SuiteError::at(
            &config,
            "",
            "this is evaldeck's project configuration, which gavel does not read: it grades \
             evaldeck's case files with their recorded traces",
        )
        .with_hint(format!(
            "give the folder of case files it names (`test_dir`), or one of its suites' \
             subfolders: gavel run {} --traces TRACES.jsonl",
            cases.display()
        )),
    )
}

fn folder_given(dir: &Path) -> String {
    let mut suites: Vec<String> = std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .map(|entry| entry.file_name().to_string_lossy().into_owned())
        .filter(|name| name.ends_with(".yaml") || name.ends_with(".yml"))
        .collect();
    suites.sort();
    match suites.as_slice() {
        [] => "this is a folder, and it holds no suite file (.yaml); give the suite file".into(),
        [one] => format!(
            "this is a folder; give the suite file in it: {}",
            dir.join(one).display()
        ),
        _ => format!(
            "this is a folder; give one of the suite files in it: {}",
            suites.join(", ")
        ),
    }
}

/// Unknown keys (and mistakes of one mapping, read again) reported at most in one pass.
const MAX_UNKNOWN_KEYS: usize = 50;

/// Checks suite YAML strictly, reporting every unknown key: each found is blanked out of the
/// text (its lines emptied, so the lines after keep their numbers) and the text parsed again,
/// until it parses or the mistake is of another kind, which ends the list.
fn parse_all(text: &str, file: &Path) -> Result<(), Vec<SuiteError>> {
    let mut text = text.to_string();
    let mut errors = Vec::new();
    loop {
        match parse(&text, file) {
            Ok(_) if errors.is_empty() => return Ok(()),
            Ok(_) => return Err(errors),
            Err(mut error) => {
                // serde names the mapping that holds the unknown key; the key is where to look.
                if let Some(key) = unknown_key(&error.message) {
                    let path = if error.field.is_empty() {
                        key.to_string()
                    } else {
                        format!("{}.{key}", error.field)
                    };
                    if let Some((line, column)) = Positions::of(&text).key(&path) {
                        (error.line, error.column, error.field) = (Some(line), Some(column), path);
                    }
                    if error.field == "grader" {
                        error.hint = Some(SINGLE_GRADER.to_string());
                    }
                }
                let next = (errors.len() < MAX_UNKNOWN_KEYS)
                    .then(|| without_unknown_key(&text, &error))
                    .flatten();
                errors.push(error);
                match next {
                    Some(next) => text = next,
                    None => return Err(errors),
                }
            }
        }
    }
}

/// What the second reading of a suite with mistakes found.
struct Gathered {
    file: Option<SuiteFile>,
    errors: Vec<SuiteError>,
    skipped: Vec<String>,
}

/// A suite with mistakes read again, as PyYAML reads it, to find each mistake at its own field
/// in one pass: each grader on its own (one with a mistake is left out, the others kept), then
/// the rest, each field with a mistake taken out and the suite read again. `None` when the
/// text does not load, or this reading finds nothing the strict one found (its mistakes are
/// then said as it says them). The duplicate keys the strict reading found, which PyYAML
/// allows, are kept among the mistakes.
fn gather(text: &str, file: &Path, strict: &[SuiteError]) -> Option<Gathered> {
    let Ok((Value::Object(mut top), refused)) = super::pyyaml::load_all(file, text) else {
        return None;
    };
    let mut found = Vec::new();
    let mut skipped = Vec::new();
    if let Some(Value::Object(graders)) = top.get_mut("graders") {
        graders.retain(|key, spec| {
            let reads = grader_reads(spec, &format!("graders.{key}"), &mut found);
            if !reads {
                skipped.push(key.clone());
            }
            reads
        });
    }
    let read = read_pruned::<SuiteFile>(Value::Object(top), "", &mut found);
    if found.is_empty() && refused.is_empty() {
        return None;
    }
    let positions = Positions::of(text);
    let mut errors: Vec<SuiteError> = found
        .into_iter()
        .map(|(field, message)| located(file, &positions, field, &message))
        .chain(refused)
        .chain(
            (strict.iter())
                .filter(|e| e.message.contains("appears twice"))
                .cloned(),
        )
        .collect();
    misindented(&mut errors, &positions);
    continued(&mut errors, text);
    SuiteError::sort(&mut errors);
    Some(Gathered {
        file: read,
        errors,
        skipped,
    })
}

/// A mistake found by reading a value, at the line of its key (an unknown key) or its value.
fn located(file: &Path, positions: &Positions, field: String, message: &str) -> SuiteError {
    let at = match unknown_key(message) {
        Some(_) => positions.key(&field),
        None => positions.value(&field),
    };
    // serde quotes the names it expects (`a`, `b`); the strict reading lists them bare.
    let message = match message.split_once(", expected one of ") {
        Some((given, expected)) => {
            format!("{given}, expected one of {}", expected.replace('`', ""))
        }
        None => in_plain_words(message),
    };
    let hint = hint_for(&field, &message);
    SuiteError {
        file: file.to_path_buf(),
        line: at.map(|(line, _)| line),
        column: at.map(|(_, column)| column),
        field,
        message,
        hint,
    }
}

/// A key a grader lacks, written where it is itself a mistake at a shallower indentation (a
/// grader of its own, or a key of the suite): both mistakes say where the key belongs.
fn misindented(errors: &mut [SuiteError], positions: &Positions) {
    for lacking in 0..errors.len() {
        let Some(key) = missing_field(&errors[lacking].message) else {
            continue;
        };
        let field = errors[lacking].field.clone();
        let grader = field.rsplit('.').next().unwrap_or(&field).to_string();
        // The mappings above the grader, nearest first: `graders`, ..., the suite (``).
        let mut parents: Vec<&str> = Vec::new();
        let mut at = field.as_str();
        while let Some((parent, _)) = at.rsplit_once('.') {
            parents.push(parent);
            at = parent;
        }
        parents.push("");
        let placed = parents.into_iter().find_map(|parent| {
            let at = match parent {
                "" => key.to_string(),
                parent => super::pyyaml::join(parent, key),
            };
            let found = errors.iter().position(|e| e.field == at)?;
            Some((found, parent.to_string()))
        });
        let Some((written, parent)) = placed else {
            continue;
        };
        let indented_as = match parent.as_str() {
            "" => "a key of the suite".to_string(),
            p if p.ends_with("graders") => "a grader of its own".to_string(),
            p => format!("a key of `{p}`"),
        };
        let line = |at: Option<u64>| at.map_or(String::new(), |line| format!(" (line {line})"));
        let key_line = line(errors[written].line);
        let grader_line = line(positions.key(&field).map(|(line, _)| line));
        errors[lacking].hint = Some(format!(
            "`{key}:`{key_line} is indented as {indented_as}: indent it under `{grader}:`, with \
             its other keys"
        ));
        errors[written].hint = Some(format!(
            "this `{key}:` belongs to the grader `{grader}:`{grader_line}, which lacks it: indent \
             it under that grader, with its other keys"
        ));
    }
}

/// A value not known whose first word is known and stands alone on the value's line: the line
/// after it was indented deeper than its key, and YAML read it as more of the value.
fn continued(errors: &mut [SuiteError], text: &str) {
    for error in errors {
        let Some(given) = unknown_variant(&error.message) else {
            continue;
        };
        let (Some(line), Some(column)) = (error.line, error.column) else {
            continue;
        };
        let key = error.field.rsplit('.').next().unwrap_or(&error.field);
        // The error is at the value, or at its key when the value could not be placed.
        let Some(written) = text
            .lines()
            .nth(line.saturating_sub(1) as usize)
            .and_then(|l| l.get(column.saturating_sub(1) as usize..))
            .map(|at| {
                at.strip_prefix(key)
                    .and_then(|v| v.strip_prefix(':'))
                    .unwrap_or(at)
            })
            .map(str::trim)
        else {
            continue;
        };
        let Some(next) = given
            .strip_prefix(written)
            .and_then(|rest| rest.strip_prefix(' '))
            .and_then(|rest| rest.split([' ', ':']).next())
        else {
            continue;
        };
        if !expected_values(&error.message).contains(&written) {
            continue;
        }
        error.hint = Some(format!(
            "the line after `{key}: {written}` is indented deeper than `{key}:`, so YAML reads \
             it as more of the value (`{given}`): indent `{next}` as `{key}:` is"
        ));
    }
}

/// How to fix the mistake `message` at `field`, where gavel can tell.
fn hint_for(field: &str, message: &str) -> Option<String> {
    if field == "grader" {
        Some(SINGLE_GRADER.to_string())
    } else if message.contains("tabs disallowed") {
        Some("YAML indents with spaces only: replace the tabs with spaces".to_string())
    } else if (field == "graders" || field.ends_with(".graders"))
        && message.contains("invalid type: sequence")
    {
        Some(
            "name each grader: `graders:` holds a `NAME:` line for each, its keys indented under \
             it, not a list of `- kind: ...` items"
                .to_string(),
        )
    } else if let Some(given) = unknown_variant(message)
        .filter(|_| field.starts_with("gate.") && field.ends_with(".metric"))
    {
        let values = message
            .split_once("expected one of ")
            .map_or("", |(_, v)| v);
        suggestion(message)
            .filter(|hint| hint.starts_with("did you mean"))
            .or_else(|| {
                Some(format!(
                    "`metric` is how the scores are summed up ({values}); to name the grader \
                     `{given}`, write `metric_key: {given}`"
                ))
            })
    } else if message.starts_with("unexpected end of input") {
        Some(
            "the suite is empty or ends early: a suite holds at least `dataset` and `graders`"
                .to_string(),
        )
    } else {
        suggestion(message)
    }
}

/// Whether the grader `spec` at `field` reads without a mistake; each mistake found is added
/// to `found`. Its fields are read by its `kind`, so that each mistake names its own field
/// (serde reads an internally tagged enum's fields without their paths); a composite's
/// sub-graders are each read the same way first.
fn grader_reads(spec: &Value, field: &str, found: &mut Vec<(String, String)>) -> bool {
    let before = found.len();
    let mut rest = spec.clone();
    let kind = rest
        .as_object_mut()
        .and_then(|map| map.shift_remove("kind"));
    match kind.as_ref().and_then(Value::as_str) {
        Some("tool") => drop(read_pruned::<ToolSpec>(rest, field, found)),
        Some("expectations") => drop(read_pruned::<ExpectationsSpec>(rest, field, found)),
        Some("rubric" | "model_judge") => drop(read_pruned::<RubricSpec>(rest, field, found)),
        Some("code") => drop(read_pruned::<CodeSpec>(rest, field, found)),
        Some("python") => drop(read_pruned::<PythonSpec>(rest, field, found)),
        Some("openai") => drop(read_pruned::<OpenAiSpec>(rest, field, found)),
        Some("all" | "any") => {
            match rest.get("graders") {
                Some(Value::Object(graders)) => {
                    for (key, sub) in graders {
                        grader_reads(sub, &format!("{field}.graders.{key}"), found);
                    }
                }
                Some(Value::Array(_)) => found.push((
                    format!("{field}.graders"),
                    "invalid type: sequence, expected a map".to_string(),
                )),
                _ => {}
            }
            if found.len() == before {
                drop(read_pruned::<GraderSpec>(spec.clone(), field, found));
            }
        }
        // A missing or unknown `kind`: serde's own word on it.
        _ => {
            drop(read_pruned::<GraderSpec>(spec.clone(), field, found));
            if let Some((at, message)) = found.last_mut()
                && at == field
                && unknown_variant(message).is_some()
            {
                at.push_str(".kind");
            }
        }
    }
    found.len() == before
}

/// `T` read from `value`, every mistake added to `found` (at its path below `base`): each
/// field with a mistake is taken out and the value read again, and a mapping that then lacks
/// a required field it had goes too. `None` when what is left does not read.
fn read_pruned<T: serde::de::DeserializeOwned>(
    mut value: Value,
    base: &str,
    found: &mut Vec<(String, String)>,
) -> Option<T> {
    let mut broken: Vec<String> = Vec::new();
    // Misspelt keys read as their likely meaning: (the path read, the path written).
    let mut renamed: Vec<(String, String)> = Vec::new();
    while broken.len() <= MAX_UNKNOWN_KEYS {
        let error = match serde_path_to_error::deserialize::<_, T>(&value) {
            Ok(read) => return Some(read),
            Err(error) => error,
        };
        let path = normalise_path(&error.path().to_string());
        let message = error.into_inner().to_string();
        // What a mapping says of a field taken out of it (it is missing, the mapping cannot be
        // made without it) follows from that field's own mistake, said already.
        let taken_out = match missing_field(&message) {
            Some(key) => broken.contains(&join(&path, key)),
            None => {
                !path.is_empty()
                    && unknown_key(&message).is_none()
                    && unknown_variant(&message).is_none()
                    && broken.iter().any(|b| b.starts_with(&format!("{path}.")))
            }
        };
        // A value's reader names the unknown key in the path already; a mapping's does not.
        let field = match unknown_key(&message) {
            Some(key) if path.rsplit('.').next() != Some(key) => join(&path, key),
            _ => path,
        };
        if !taken_out {
            // A mistake in a renamed key's value is where that key is written.
            let written = renamed.iter().find_map(|(read, written)| {
                let rest = field.strip_prefix(read.as_str())?;
                (rest.is_empty() || rest.starts_with(['.', '[']))
                    .then(|| format!("{written}{rest}"))
            });
            let written = written.unwrap_or_else(|| field.clone());
            let at = if written.is_empty() {
                base.to_string()
            } else {
                join(base, &written)
            };
            found.push((at, message.clone()));
        }
        let (map, key, removed) = take_out(&mut value, &field)?;
        // A misspelt key or value is read as its likely meaning, to find the mistakes after it.
        let meant = hint_for(&join(base, &field), &message);
        let meant = meant
            .as_deref()
            .and_then(|hint| hint.strip_prefix("did you mean `")?.strip_suffix("`?"));
        if let Some(meant) = meant {
            if unknown_variant(&message).is_some() {
                map.insert(key, Value::String(meant.to_string()));
            } else if !map.contains_key(meant) {
                map.insert(meant.to_string(), removed);
                let parent = field.rsplit_once('.').map_or("", |(parent, _)| parent);
                renamed.push((join(parent, meant), field.clone()));
            }
        }
        broken.push(field);
    }
    None
}

/// The key serde's "missing field `x`" names.
fn missing_field(message: &str) -> Option<&str> {
    message
        .strip_prefix("missing field `")?
        .split_once('`')
        .map(|(key, _)| key)
}

/// Takes the entry at the dotted `path` (`a.b[2].c`) out of its mapping: the mapping, the key
/// and the value taken; `None` when there is none, or it is an item of a list (taking it out
/// would renumber the items after it).
fn take_out<'v>(
    value: &'v mut Value,
    path: &str,
) -> Option<(&'v mut Map<String, Value>, String, Value)> {
    let mut node = value;
    let mut parts = path.split('.').peekable();
    while let Some(part) = parts.next() {
        let (key, items) = part.split_once('[').unwrap_or((part, ""));
        let Value::Object(map) = node else {
            return None;
        };
        if parts.peek().is_none() && items.is_empty() {
            let removed = map.shift_remove(key)?;
            return Some((map, key.to_string(), removed));
        }
        node = map.get_mut(key)?;
        for index in items.split('[').filter(|i| !i.is_empty()) {
            node = node.get_mut(index.trim_end_matches(']').parse::<usize>().ok()?)?;
        }
    }
    None
}

/// How to fix a top-level `grader:`, the single grader of letta-evals' early suites, which
/// letta-evals 0.26.0 no longer reads either. The key is then set aside (not read as
/// `graders:`, whose entries it does not hold), so the next mistake is the missing `graders:`.
const SINGLE_GRADER: &str = "a single `grader:` is read by neither gavel nor letta-evals 0.26.0: \
     put it under `graders:`, keyed by its metric (`graders:` / `  accuracy:` / `    kind: tool`), \
     and name that key in `reward.metric_key`";

/// `text` with the unknown key of `error` taken out of the way of the next parse: renamed to
/// the key its hint suggests (so that what depends on that key is checked too), else blanked.
/// `None` when `error` is not an unknown key, or the key cannot be found or moved.
fn without_unknown_key(text: &str, error: &SuiteError) -> Option<String> {
    let (line, column) = (error.line?, error.column?);
    let meant = error
        .hint
        .as_deref()
        .and_then(|hint| hint.strip_prefix("did you mean `")?.strip_suffix("`?"));
    if let Some(value) = unknown_variant(&error.message) {
        // A misspelt value: read as the one it was likely meant to be, or the list ends here.
        return rename_key(text, line, column, value, meant?);
    }
    let key = unknown_key(&error.message)?;
    let parent = error
        .field
        .rsplit_once('.')
        .map_or("", |(parent, _)| parent);
    let taken = |meant: &str| {
        let path = if parent.is_empty() {
            meant.to_string()
        } else {
            format!("{parent}.{meant}")
        };
        Positions::of(text).key(&path).is_some()
    };
    match meant {
        Some(meant) if !taken(meant) => rename_key(text, line, column, key, meant),
        _ => blank_key(text, line, column),
    }
}

/// `text` with the key `from` at `line`:`column` written `to`.
fn rename_key(text: &str, line: u64, column: u64, from: &str, to: &str) -> Option<String> {
    let mut lines: Vec<String> = text.split('\n').map(String::from).collect();
    let at = usize::try_from(line).ok()?.checked_sub(1)?;
    let start = usize::try_from(column).ok()?.checked_sub(1)?;
    let written = lines.get_mut(at)?;
    if written.get(start..start + from.len())? != from {
        return None;
    }
    written.replace_range(start..start + from.len(), to);
    Some(lines.join("\n"))
}

/// The value serde's "unknown variant `x`, expected ..." names.
fn unknown_variant(message: &str) -> Option<&str> {
    message
        .strip_prefix("unknown variant `")?
        .split_once('`')
        .map(|(value, _)| value)
}

/// The key serde's "unknown field `x`, expected ..." names.
fn unknown_key(message: &str) -> Option<&str> {
    message
        .strip_prefix("unknown field `")?
        .split_once('`')
        .map(|(key, _)| key)
}

/// `text` without the block-style key at `line`:`column` and the lines of its value (those
/// indented deeper), each left empty; `None` for a key in flow style (`{a: 1, b: 2}`) or that
/// starts a list item.
fn blank_key(text: &str, line: u64, column: u64) -> Option<String> {
    let lines: Vec<&str> = text.split('\n').collect();
    let at = usize::try_from(line).ok()?.checked_sub(1)?;
    let indent = usize::try_from(column).ok()?.checked_sub(1)?;
    let key_line = lines.get(at)?;
    let before = key_line.get(..indent)?;
    if !before.chars().all(|c| c == ' ') {
        return None;
    }
    let deeper = |l: &str| l.trim().is_empty() || l.len() - l.trim_start().len() > indent;
    let end = at + 1 + lines[at + 1..].iter().take_while(|l| deeper(l)).count();
    let mut out: Vec<&str> = lines.clone();
    for line in &mut out[at..end] {
        *line = "";
    }
    // A list item's dash stays, so that the item is still one.
    let dash = before
        .trim_end()
        .ends_with('-')
        .then(|| format!("{before}{{}}"));
    if let Some(dash) = &dash {
        out[at] = dash;
    }
    Some(out.join("\n"))
}

/// Parses suite YAML strictly.
fn parse(text: &str, file: &Path) -> Result<SuiteFile, SuiteError> {
    let mut field = String::new();
    let mut options = serde_saphyr::Options::default();
    let mut budget = serde_saphyr::Budget::default();
    budget.max_nodes = super::pyyaml::MAX_NODES;
    options.budget = Some(budget);
    serde_saphyr::with_deserializer_from_str_with_options(text, options, |de| {
        serde_path_to_error::deserialize::<_, SuiteFile>(de).map_err(|e| {
            field = normalise_path(&e.path().to_string());
            e.into_inner()
        })
    })
    .map_err(|error| locate(file, field, &error))
}

/// The suite read again, its values as PyYAML reads them (YAML 1.1, as letta-evals reads a
/// suite), once the strict reading found no mistake: `yes`, `on` and `off` are booleans and
/// `y`, `n` text in a config map too. A value PyYAML reads as another type than its field takes
/// (`name: yes`, a boolean) is refused at its place, as letta-evals refuses it.
fn as_pyyaml_reads(text: &str, file: &Path) -> Result<SuiteFile, SuiteError> {
    let value = super::pyyaml::load(file, text)?;
    serde_path_to_error::deserialize::<_, SuiteFile>(value).map_err(|e| {
        let field = normalise_path(&e.path().to_string());
        let (line, column) = Positions::of(text)
            .key(&field)
            .map_or((None, None), |(line, column)| (Some(line), Some(column)));
        let message = e.into_inner().to_string();
        let hint = match message.starts_with("invalid type: string") {
            true => {
                "PyYAML, which letta-evals reads suites with, reads a quoted value as text; \
                     write it without quotes"
            }
            false => {
                "PyYAML, which letta-evals reads suites with, reads this value as written here \
                 (`yes`, `on` and `off` are booleans, `010` is 8); quote it to make it text"
            }
        };
        SuiteError {
            file: file.to_path_buf(),
            line,
            column,
            message,
            hint: Some(hint.to_string()),
            field,
        }
    })
}

/// serde_path_to_error renders the root as `.`; gavel says nothing for it.
pub(crate) fn normalise_path(path: &str) -> String {
    if path == "." || path == "?" {
        String::new()
    } else {
        path.to_string()
    }
}

pub(crate) fn locate(file: &Path, field: String, error: &serde_saphyr::Error) -> SuiteError {
    let (line, column) = error
        .location()
        .map_or((None, None), |l| (Some(l.line()), Some(l.column())));
    let message = bare_message(error);
    let hint = hint_for(&field, &message);
    SuiteError {
        file: file.to_path_buf(),
        line,
        column,
        field,
        message,
        hint,
    }
}

/// The error's message without serde-saphyr's location prefix and source snippet.
fn bare_message(error: &serde_saphyr::Error) -> String {
    let text = error.to_string();
    let first = text.lines().next().unwrap_or_default();
    let first = first.strip_prefix("error: ").unwrap_or(first);
    // "line 6 column 3: message"
    let message = match first.split_once(": ") {
        Some((prefix, rest)) if prefix.starts_with("line ") => rest,
        _ => first,
    };
    in_plain_words(message)
}

/// A parser's message in the words of a suite's author: no Rust type names, no parser options.
pub(crate) fn in_plain_words(message: &str) -> String {
    if let Some(rest) = message.strip_prefix("duplicate mapping key") {
        let key = rest
            .strip_prefix(": ")
            .and_then(|rest| rest.split(',').next())
            .map_or(String::new(), |key| format!(" `{key}`"));
        return format!("the key{key} appears twice in the same mapping; keep one");
    }
    if message.starts_with("budget breached") {
        return format!(
            "the file expands to more than {} values, far more than a suite holds: an alias \
             (`*name`) repeats all that its anchor (`&name`) names, so aliases of aliases \
             multiply; write the values out, or check the anchors",
            super::pyyaml::MAX_NODES
        );
    }
    if message.starts_with("multiple YAML documents detected") {
        return "the file holds more than one YAML document (a line `---` starts another): a \
                suite file is one document; remove the `---` and what follows, or move it to a \
                file of its own"
            .to_string();
    }
    const WORDS: &[(&str, &str)] = &[
        ("invalid u64", "expected a whole number, 0 or more"),
        ("invalid u32", "expected a whole number, 0 or more"),
        ("invalid usize", "expected a whole number, 0 or more"),
        ("invalid i64", "expected a whole number"),
        ("invalid f64", "expected a number"),
        ("invalid bool", "expected true or false"),
        (
            "expected mapping start",
            "expected a mapping (`key: value` lines), not a single value or a list",
        ),
        (
            "expected sequence start",
            "expected a list (`- item` lines or `[a, b]`)",
        ),
        ("expected u64", "expected a whole number, 0 or more"),
        ("expected u32", "expected a whole number, 0 or more"),
        ("expected usize", "expected a whole number, 0 or more"),
        ("expected i64", "expected a whole number"),
        ("expected f64", "expected a number"),
        ("expected a boolean", "expected true or false"),
    ];
    // serde's words for a map and a list the value is not, at the end of its message.
    let mut plain = if let Some(before) = message.strip_suffix("expected a map") {
        format!("{before}expected a mapping (`key: value` lines)")
    } else if let Some(before) = message.strip_suffix("expected a sequence") {
        format!("{before}expected a list (`- item` lines or `[a, b]`)")
    } else {
        message.to_string()
    };
    for (said, meant) in WORDS {
        plain = plain.replace(said, meant);
    }
    if let Some((before, _)) = plain.split_once("expected internally tagged enum ") {
        plain = format!("{before}expected a mapping (`key: value` lines) with its `kind:`");
    }
    if let Some((before, after)) = plain.split_once("expected struct ") {
        let rest = after.split_once(' ').map_or("", |(_, rest)| rest);
        plain = format!("{before}expected a mapping (`key: value` lines) {rest}")
            .trim_end()
            .to_string();
    }
    plain
}

/// The names serde's "unknown field `x`, expected one of `a`, `b`" (or "expected `a`", and
/// the variant forms) lists, quoted or bare.
fn expected_values(message: &str) -> Vec<&str> {
    let Some((_, expected)) = message.split_once("`, expected ") else {
        return Vec::new();
    };
    expected
        .trim_start_matches("one of ")
        .split(", ")
        .map(|c| c.trim_matches('`'))
        .collect()
}

/// For serde's "unknown field `x`, expected one of `a`, `b`" (and the variant form), the
/// closest valid name.
fn suggestion(message: &str) -> Option<String> {
    let (what, rest) = if let Some(rest) = message.strip_prefix("unknown field `") {
        ("key", rest)
    } else if let Some(rest) = message.strip_prefix("unknown variant `") {
        ("value", rest)
    } else {
        return None;
    };
    let (given, _) = rest.split_once('`')?;
    let candidates = expected_values(message);
    if candidates.is_empty() {
        return None;
    }
    // Words people use for a value gavel spells otherwise, which no spelling distance finds.
    const SYNONYMS: &[(&str, &str)] = &[
        ("mean", "avg_score"),
        ("average", "avg_score"),
        ("avg", "avg_score"),
        ("pass_rate", "accuracy"),
        ("minimum", "min"),
        ("maximum", "max"),
        // letta-evals' Letta judge before 0.26.0; gavel's is `kind: rubric` with `agent_file`.
        ("letta_judge", "rubric"),
    ];
    let synonym = SYNONYMS
        .iter()
        .find(|(word, meant)| *word == given && candidates.contains(meant))
        .map(|(_, meant)| *meant);
    match synonym.or_else(|| closest(given, candidates.iter().copied())) {
        Some(best) => Some(format!("did you mean `{best}`?")),
        None => Some(format!("valid {what}s: {}", candidates.join(", "))),
    }
}

/// Reads each `kind: openai` grader's `grader_path`, and makes each whose object is a `python`
/// grader a `kind: python` one (and each `python` grader inside a `multi`, kept beside it). A grader with a mistake is taken out, its key added to
/// `skipped` and its mistakes to `errors`.
fn resolve_openai(
    graders: &mut IndexMap<String, GraderSpec>,
    prefix: &str,
    suite: &Path,
    base_dir: &Path,
    errors: &mut Vec<SuiteError>,
    skipped: &mut Vec<String>,
) {
    let keys: Vec<String> = graders.keys().cloned().collect();
    for key in keys {
        let field = format!("{prefix}.{key}");
        let Some(spec) = graders.get_mut(&key) else {
            continue;
        };
        let outcome = match spec {
            GraderSpec::Openai(spec) => openai::read_object(spec, &field, suite, base_dir)
                .and_then(|()| openai::as_python(spec, &field, suite))
                .and_then(|python| {
                    if python.is_none() {
                        spec.python = openai::inner_python(spec, &field, suite)?;
                    }
                    Ok(python)
                }),
            GraderSpec::All(c) | GraderSpec::Any(c) => {
                resolve_openai(
                    &mut c.graders,
                    &format!("{field}.graders"),
                    suite,
                    base_dir,
                    errors,
                    skipped,
                );
                Ok(None)
            }
            _ => Ok(None),
        };
        match outcome {
            Ok(Some(python)) => {
                graders.insert(key, GraderSpec::Python(python));
            }
            Ok(None) => {}
            Err(mut found) => {
                errors.append(&mut found);
                graders.shift_remove(&key);
                skipped.push(key);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_mistake_names_its_own_field_and_a_broken_grader_is_left_out() {
        let text = "name: s\ndataset: d.jsonl\ngraders:\n  y:\n    kind: rubric\n    \
                    prompt: p\n    model: m\n    max_retries: many\n    temperature: hot\n  \
                    on:\n    kind: tool\n    function: contains\n  \
                    ok:\n    kind: tool\n    function: contains\ngate:\n  kind: simple\n  \
                    metric_key: y\n  op: greater\n  value: 1\nlimits:\n  timeout: -5\n";
        let file = Path::new("s.yaml");
        let strict = parse_all(text, file).expect_err("mistakes");
        let found = gather(text, file, &strict).expect("read again");
        let located: Vec<(Option<u64>, &str)> = (found.errors.iter())
            .map(|e| (e.line, e.field.as_str()))
            .collect();
        assert_eq!(
            located,
            [
                (Some(8), "graders.y.max_retries"),
                (Some(9), "graders.y.temperature"),
                (Some(10), "graders.on"),
                (Some(19), "gate.op"),
                (Some(22), "limits.timeout"),
                (Some(22), "limits.timeout"),
            ]
        );
        assert_eq!(found.skipped, ["y"]);
        let file = found.file.expect("the rest reads");
        assert_eq!(file.graders.keys().collect::<Vec<_>>(), ["ok"]);
        // The gate needs its `op`: it goes with it, without a second error.
        assert!(file.gate.is_none());
    }

    #[test]
    fn an_alias_bomb_and_a_second_document_are_said_in_plain_words() {
        let file = Path::new("s.yaml");
        let mut bomb = String::from(
            "name: s\ndataset: d.jsonl\ngraders:\n  g:\n    kind: tool\n    function: contains\n    \
             extractor_config:\n      a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n",
        );
        for level in 1..8 {
            let prior = format!("*a{}", level - 1);
            let row = [prior.as_str(); 10].join(", ");
            bomb.push_str(&format!("      a{level}: &a{level} [{row}]\n"));
        }
        let said = |text: &str| -> String {
            let errors = parse_all(text, file).expect_err("refused");
            errors.iter().map(|e| e.message.clone()).collect()
        };
        let message = said(&bomb);
        assert!(
            message.starts_with("the file expands to more than 250000 values"),
            "{message}"
        );
        let message = said("name: s\ndataset: d.jsonl\ngraders: {}\n---\nname: t\n");
        assert!(
            message.starts_with("the file holds more than one YAML document"),
            "{message}"
        );
    }
}
