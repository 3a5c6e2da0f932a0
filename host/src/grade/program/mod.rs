//! Python graders as their users wrote them: the suite forms that name Python code, the files
//! handed to the interpreter, and the interpreter's function names.
//!
//! | suite form | interpreter function |
//! |---|---|
//! | `kind: tool`, `function: path/file.py:name` (letta-evals `@grader`) | `letta-grader:file:name` |
//! | `extractor: path/file.py:name` (letta-evals `@extractor`) | `letta-extractor:file:name` |
//! | `function: name`, registered by a decorator in a referenced file | `letta-grader::name` |
//! | `kind: code`, `module` + `function` (evaldeck) | `evaldeck-function:module:function` |
//! | `kind: code`, `module` + `class` + `params` (evaldeck `BaseGrader`) | `evaldeck-class:module:class` |
//! | `kind: expectations`, `code:` (a case turn's evaldeck `type: code` entry) | `evaldeck-function:module:function` |
//! | `kind: python`, `source: \|` or `source_path:` (OpenAI) | `openai:module:grade` |
//!
//! The user's code is data: one interpreter component (see [`interpreter`]) runs every suite.
//! Each entry module the suite names (a referenced file, an evaldeck module, an inline source)
//! is a [`Program`] of its own: the entry, whose top level runs, and the `.py` files beside it
//! (its folder and subfolders), so that its own imports work. An instance loads only its
//! grader's program (a fresh one per call, or a warm one per batch of samples: see
//! [`crate::grade::pack::Isolation`]): one grader's code never runs in another's call. A grader file
//! outside the suite's folder comes alone, without the files beside it, and the files beside a
//! grader are read only from inside its folder ([`fsio::read_text_within`]).

pub mod interpreter;
pub mod packages;
pub mod reward;

use std::collections::{BTreeSet, HashSet};
use std::path::{Component, Path, PathBuf};
use std::sync::Arc;

use indexmap::IndexMap;
use serde_json::Value;

use crate::cache::CacheDir;
use crate::config::allow::AllowSpec;
use crate::config::reward::RewardSpec;
use crate::config::spec::Isolation;
use crate::config::suite::{CaseCodeSpec, GraderSpec, Suite, SuiteError};
use crate::fsio;
use crate::grade::grants::Grants;
use crate::grade::pack::{
    CallFailure, INTERPRETER_PROTOCOL, Pack, PackError, PackExtractor, PackGrader, PackHost,
    PackSpec, Program, Source, Writes,
};
use crate::terminal::printable;
use reward::CustomReward;

/// A suite's Python code and the interpreter that runs it.
pub struct Python {
    pack: Pack,
    /// Each entry module's program.
    programs: IndexMap<String, Arc<Program>>,
    sources_sha256: String,
}

impl Python {
    /// The programs of `gathered`, compiled once by `pack`; the programs of `packages`' entries
    /// see its folder.
    fn new(pack: Pack, gathered: Gathered, packages: Option<Packages>) -> Python {
        let Gathered {
            mut sources,
            entries,
        } = gathered;
        let mut sources_sha256 = sha256(&sources);
        if let Some(packages) = &packages {
            // The packages decide grades as much as the sources do; the tree's name is a hash
            // of their wheels, the same in every cache folder.
            let name = packages.tree.file_name().unwrap_or_default();
            sources_sha256 = sha256(&[Source {
                module: sources_sha256,
                path: String::new(),
                text: name.to_string_lossy().into_owned(),
                code: None,
            }]);
        }
        compile_importable(&pack, &mut sources, entries.keys());
        // Programs whose entries share a folder share its files.
        let mut shared: Vec<(Vec<usize>, Arc<[Source]>)> = Vec::new();
        let mut programs = IndexMap::new();
        for (entry, places) in entries {
            let files = match shared.iter().find(|(shared, _)| *shared == places) {
                Some((_, files)) => files.clone(),
                None => {
                    let files: Arc<[Source]> = places.iter().map(|&i| sources[i].clone()).collect();
                    shared.push((places, files.clone()));
                    files
                }
            };
            let program = Program {
                sources: files,
                packages: packages
                    .as_ref()
                    .filter(|p| p.all || p.entries.contains(&entry))
                    .map(|p| p.tree.clone()),
                entry: entry.clone(),
            };
            programs.insert(entry, Arc::new(program));
        }
        Python {
            pack,
            programs,
            sources_sha256,
        }
    }

    /// SHA-256 over the user's Python sources (each module's name, path and text, in order),
    /// which a run's grades depend on as much as on a pack's file.
    pub fn sources_sha256(&self) -> String {
        self.sources_sha256.clone()
    }

    /// The interpreter's grader `name` (see the table above), checked in its program, its
    /// calls reaching what `grants` grants.
    pub fn grader(
        &self,
        name: &str,
        config: &Value,
        grants: Option<&Arc<Grants>>,
    ) -> Result<PackGrader, PackError> {
        self.in_program(name, |program| {
            self.pack.program_grader(program, name, config, grants)
        })
    }

    /// The interpreter's extractor `name`, checked in its program.
    pub fn extractor(
        &self,
        name: &str,
        config: &Value,
        grants: Option<&Arc<Grants>>,
    ) -> Result<PackExtractor, PackError> {
        self.in_program(name, |program| {
            self.pack.program_extractor(program, name, config, grants)
        })
    }

    /// The reward composer of `reward: {kind: custom, function}`: `path/file.py:name` or a
    /// name a decorator registered.
    pub fn reward(&self, function: &str) -> Result<CustomReward, PackError> {
        let name = match file_reference(function) {
            Some((path, name)) => format!("letta-reward:{}:{name}", file_module(path)),
            None => format!("letta-reward::{function}"),
        };
        self.in_program(&name, |program| self.pack.program_reward(program, &name))
            .map(CustomReward)
    }

    /// `function` of the program of the interpreter function `name`
    /// (`<form>:<module>:<attribute>`): the program of its module, or, for a name a decorator
    /// registered (no module), of the one referenced file that registers it.
    fn in_program<T>(
        &self,
        name: &str,
        function: impl Fn(&Arc<Program>) -> Result<T, PackError>,
    ) -> Result<T, PackError> {
        let mut parts = name.splitn(3, ':').skip(1);
        let (module, attribute) = (parts.next().unwrap_or(""), parts.next().unwrap_or(""));
        if !module.is_empty() {
            // A module not gathered was reported where the suite names it.
            return match self.programs.get(module) {
                Some(program) => function(program),
                None => Err(PackError::ProgramNotLoaded {
                    message: PYTHON_NOT_LOADED.to_string(),
                }),
            };
        }
        // A program that does not load is reported at the graders that name its file; here it
        // is one that cannot say whether it registers the name.
        let mut registers = Vec::new();
        let mut unloaded = Vec::new();
        for program in self.programs.values() {
            match function(program) {
                Ok(found) => registers.push((program, found)),
                Err(PackError::ProgramNotLoaded { .. }) => unloaded.push(entry_path(program)),
                Err(_) => {}
            }
        }
        match (registers.pop(), registers.pop()) {
            (Some((_, found)), None) => Ok(found),
            (Some((second, _)), Some((first, _))) => Err(PackError::Program {
                message: format!(
                    "`{attribute}` is registered by two files, {} and {}: each file's graders \
                     run apart, so the suite must say which; rename one, or name it by its file \
                     (`{}:{attribute}`)",
                    entry_path(first),
                    entry_path(second),
                    entry_path(first)
                ),
            }),
            (None, _) => {
                let mut message = format!("no Python file of the suite registers `{attribute}`");
                if !unloaded.is_empty() {
                    message.push_str(&format!(
                        " ({} could not be loaded: see the errors of the graders that name it)",
                        unloaded.join(", ")
                    ));
                }
                Err(PackError::Program { message })
            }
        }
    }
}

/// The file of `program`'s entry, as the suite names it.
fn entry_path(program: &Program) -> &str {
    program
        .sources
        .iter()
        .find(|s| s.module == program.entry)
        .map_or(program.entry.as_str(), |s| s.path.as_str())
}

/// SHA-256 over `sources` (each module's name, path and text, in order).
fn sha256(sources: &[Source]) -> String {
    use sha2::{Digest, Sha256};
    let mut hasher = Sha256::new();
    for source in sources {
        for part in [&source.module, &source.path, &source.text] {
            hasher.update((part.len() as u64).to_le_bytes());
            hasher.update(part.as_bytes());
        }
    }
    format!("{:x}", hasher.finalize())
}

/// What a grader of Python code says when its code did not load, which an error of its own
/// (at the grader, or at the suite's `graders` when the interpreter is missing) has said already.
pub const PYTHON_NOT_LOADED: &str =
    "the grader's Python code could not be loaded (see the error above)";

/// The suite's Python code and its interpreter (`None` when the suite names no Python file or
/// module that can be read, or the interpreter cannot be loaded), with an error for every
/// reference that cannot be used, at its field. A file or module that cannot be read leaves
/// out only the graders that name it: the others are still loaded, so that their own mistakes
/// are found too.
pub fn prepare(
    suite: &Suite,
    host: impl FnOnce() -> Result<PackHost, PackError>,
    cache_dir: Option<&Path>,
) -> (Option<Python>, Vec<SuiteError>) {
    let mut builder = ProgramBuilder::new(&suite.path, &suite.base_dir);
    let mut errors = Vec::new();
    let mut wants = Wants::default();
    gather(
        &suite.file.graders,
        "graders",
        &mut builder,
        &mut wants,
        &suite.path,
        &mut errors,
    );
    if let Some(RewardSpec::Custom { function }) = &suite.file.reward
        && let Err(e) = add_file(&mut builder, Some(function))
    {
        errors.push(SuiteError::at(
            &suite.path,
            "reward.function",
            e.to_string(),
        ));
    }
    if builder.is_empty() {
        return (None, errors);
    }
    wants.all = !suite.file.requirements.is_empty();
    wants.lines.extend(suite.file.requirements.iter().cloned());
    let lock = if wants.lines.is_empty() {
        None
    } else {
        match packages_lock(&suite.base_dir, &wants.lines, cache_dir) {
            Ok(lock) => Some(lock),
            Err(e) => {
                errors.push(SuiteError::at(&suite.path, "requirements", e.to_string()));
                return (None, errors);
            }
        }
    };
    let pack = match load(suite, host, cache_dir) {
        Ok(pack) => pack,
        Err(e) => {
            errors.push(SuiteError::at(&suite.path, "graders", e.to_string()));
            return (None, errors);
        }
    };
    let packages = match lock {
        None => None,
        Some((cache, lock)) => {
            let compile = |sources: &mut [Source]| {
                if let Err(why) = pack.compile_packages(sources) {
                    not_compiled(sources, &why);
                }
            };
            match packages::tree(&cache, &lock, &compile) {
                Ok(tree) => Some(Packages {
                    tree,
                    entries: wants.entries,
                    all: wants.all,
                }),
                Err(e) => {
                    errors.push(SuiteError::at(&suite.path, "requirements", e.to_string()));
                    return (None, errors);
                }
            }
        }
    };
    (Some(Python::new(pack, builder.build(), packages)), errors)
}

/// Compiles, in one call of `pack`, the sources a program can import by name: its entry and,
/// transitively, every module an `import` or `from` statement of one of them names, with
/// their parent packages. The other files of a grader's folder (scratch files, a copy of some
/// code) are still loaded, and a module imported only by a name made at run time is compiled
/// by the import that wants it; compiling them up front would cost every run their whole
/// compile, and every load their code.
fn compile_importable<'a>(
    pack: &Pack,
    sources: &mut [Source],
    entries: impl Iterator<Item = &'a String>,
) {
    let wanted = importable(sources, entries);
    let mut chosen: Vec<Source> = (sources.iter().zip(&wanted))
        .filter(|(_, wanted)| **wanted)
        .map(|(source, _)| source.clone())
        .collect();
    match pack.compile(&mut chosen) {
        Err(why) => not_compiled(&chosen, &why),
        Ok(()) => {
            for source in chosen.iter().filter(|source| source.code.is_none()) {
                crate::notice::warn(format!(
                    "{}: the Python file does not compile; a grader that imports it fails \
                     there, with Python's reason",
                    printable(&source.path)
                ));
            }
        }
    }
    let mut codes = chosen.into_iter().map(|source| source.code);
    for (source, _) in sources
        .iter_mut()
        .zip(&wanted)
        .filter(|(_, wanted)| **wanted)
    {
        source.code = codes.next().flatten();
    }
}

/// Says that `sources` were not compiled ahead of the run, and `why`: the run goes on, each
/// load compiling the files it imports, which costs every instance that compile.
fn not_compiled(sources: &[Source], why: &CallFailure) {
    let Some(first) = sources.first() else {
        return;
    };
    let others = match sources.len() {
        1 => String::new(),
        n => format!(" and {} other Python files", n - 1),
    };
    crate::notice::warn(format!(
        "{}{others}: not compiled ahead of the run ({why}); each load compiles them, which is \
         slower",
        printable(&first.path)
    ));
}

/// Which of `sources` the `entries` reach through their import statements (see
/// [`compile_importable`]), with the parent packages of each.
fn importable<'a>(sources: &[Source], entries: impl Iterator<Item = &'a String>) -> Vec<bool> {
    let by_name: std::collections::HashMap<&str, usize> = (sources.iter().enumerate())
        .map(|(i, source)| (source.module.as_str(), i))
        .collect();
    let mut wanted = vec![false; sources.len()];
    let mut pending: Vec<String> = entries.cloned().collect();
    while let Some(name) = pending.pop() {
        let parents = name
            .match_indices('.')
            .map(|(end, _)| name[..end].to_string());
        let mut found: Vec<String> = parents.collect();
        if let Some(&i) = by_name.get(name.as_str())
            && !std::mem::replace(&mut wanted[i], true)
        {
            let source = &sources[i];
            let package = source.path.ends_with("__init__.py");
            for statement in import_statements(&source.text) {
                found.extend(imported(&statement, &source.module, package));
            }
        }
        pending.extend(
            found
                .into_iter()
                .filter(|n| by_name.get(n.as_str()).is_some_and(|&j| !wanted[j])),
        );
    }
    wanted
}

/// The `import` and `from` statements of Python source `text`, wherever they stand (in a
/// function, under an `if`), each read whole over its parenthesised or continued lines,
/// without comments.
fn import_statements(text: &str) -> Vec<String> {
    let mut statements = Vec::new();
    let mut open: Option<String> = None;
    for line in text.lines() {
        let code = line.split('#').next().unwrap_or(line);
        let start = code.trim_start();
        let mut statement = match open.take() {
            Some(statement) => statement,
            None if start.starts_with("import ") || start.starts_with("from ") => String::new(),
            None => continue,
        };
        statement.push(' ');
        statement.push_str(code);
        let continued = code.trim_end().ends_with('\\');
        let unclosed = statement.matches('(').count() > statement.matches(')').count();
        if continued || unclosed {
            open = Some(statement);
        } else {
            statements.push(statement);
        }
    }
    statements.extend(open);
    statements
}

/// The modules `statement` imports, as it stands in `module` (a package when `package`):
/// `import a.b` names `a.b`; `from a import b, c` names `a`, `a.b` and `a.c` (either may be a
/// module); a relative `from` is resolved against the module's package.
fn imported(statement: &str, module: &str, package: bool) -> Vec<String> {
    let text = statement.replace(['(', ')', '\\'], " ");
    let mut words = text.split_whitespace();
    let first_words = |rest: &str| -> Vec<String> {
        (rest.split(','))
            .filter_map(|part| part.split_whitespace().next())
            .filter(|name| *name != "*")
            .map(str::to_string)
            .collect()
    };
    match words.next() {
        Some("import") => first_words(&words.collect::<Vec<_>>().join(" ")),
        Some("from") => {
            let (Some(from), Some("import")) = (words.next(), words.next()) else {
                return Vec::new();
            };
            let dots = from.len() - from.trim_start_matches('.').len();
            let name = &from[dots..];
            let base = if dots == 0 {
                name.to_string()
            } else {
                let mut parts: Vec<&str> = module.split('.').collect();
                if !package {
                    parts.pop();
                }
                for _ in 1..dots {
                    parts.pop();
                }
                parts.extend((!name.is_empty()).then_some(name));
                parts.join(".")
            };
            let names = first_words(&words.collect::<Vec<_>>().join(" "));
            let mut modules: Vec<String> = names.iter().map(|n| format!("{base}.{n}")).collect();
            modules.push(base);
            modules
        }
        _ => Vec::new(),
    }
}

/// The interpreter component, loaded: from its compiled artifact alone when its stamp and the
/// artifact check out, else read, checked, and compiled or loaded from the cache.
fn load(
    suite: &Suite,
    host: impl FnOnce() -> Result<PackHost, PackError>,
    cache_dir: Option<&Path>,
) -> Result<Pack, LoadError> {
    let limits = suite.file.limits.clone().unwrap_or_default();
    let host = host().map_err(|e| LoadError::Pack(Box::new(e)))?;
    let writes = if fresh_calls(suite) {
        Writes::Scattered
    } else {
        Writes::Few
    };
    let stamped = interpreter::stamped(cache_dir).and_then(|stamped| {
        let sha256 = stamped.sha256?;
        let pack = host.load_compiled(writes, "python", &stamped.path, &sha256, &limits);
        pack.transpose().map(|pack| (pack, stamped.path))
    });
    let (pack, path) = match stamped {
        Some((pack, path)) => (pack, path),
        None => {
            let component = interpreter::component(cache_dir)?;
            // The cached component is loaded only as the file whose tag was checked.
            let spec = PackSpec {
                path: component.path,
                sha256: component.sha256,
                limits: None,
                allow: None,
            };
            let pack = host.load_writing(writes, "python", &spec, Path::new(""), &limits);
            (pack, spec.path)
        }
    };
    let pack = pack.map_err(|e| LoadError::Pack(Box::new(e)))?;
    if !pack.is_interpreter() {
        return Err(LoadError::NotInterpreter(path));
    }
    // A component built from other sources (named by hand) would misread what the host hands
    // it: refused before any call, by what its type says.
    if pack.interpreter_protocol() != Some(INTERPRETER_PROTOCOL) {
        let found = pack.interpreter_protocol().map(str::to_string);
        return Err(LoadError::Protocol { path, found });
    }
    Ok(pack)
}

/// Whether the suite's Python calls run in a fresh instance each, as `isolation: sample` and a
/// folder the row chooses (`allow: files: [{under, row}]`) have them, so that the instance's
/// slot is reset after every call ([`Writes::Scattered`]). Otherwise a warm instance's slot is
/// reset once a batch ([`Writes::Few`]).
fn fresh_calls(suite: &Suite) -> bool {
    fn any_fresh(graders: &IndexMap<String, GraderSpec>) -> bool {
        graders.values().any(|spec| {
            spec.isolation() == Some(Isolation::Sample)
                || spec.allow().is_some_and(AllowSpec::chooses_by_row)
                || matches!(spec, GraderSpec::All(c) | GraderSpec::Any(c) if any_fresh(&c.graders))
        })
    }
    suite.file.isolation == Some(Isolation::Sample)
        || (suite.file.allow.as_ref()).is_some_and(AllowSpec::chooses_by_row)
        || any_fresh(&suite.file.graders)
}

/// Why the Python interpreter component cannot be loaded.
#[derive(Debug, thiserror::Error)]
enum LoadError {
    #[error(transparent)]
    Interpreter(#[from] interpreter::InterpreterError),
    #[error(transparent)]
    Pack(Box<PackError>),
    #[error(
        "{} is not a Python interpreter component (it exports no gavel:grader/program)",
        .0.display()
    )]
    NotInterpreter(PathBuf),
    #[error(
        "{} is a Python interpreter component of other sources than this gavel's: this gavel \
         speaks gavel:interpreter@{INTERPRETER_PROTOCOL} with it, and it {}; build one with \
         this gavel (`gavel build-python` prints its path) and name that, or unset \
         ${} to use the one gavel builds into its cache",
        path.display(),
        found.as_ref().map_or("exports no gavel:interpreter/child".to_string(), |v| format!("speaks gavel:interpreter@{v}")),
        interpreter::COMPONENT_ENV
    )]
    Protocol {
        path: PathBuf,
        found: Option<String>,
    },
}

/// The packages of a suite's `requirements:` (see [`packages`]), unpacked and mounted for the
/// programs that want them.
struct Packages {
    tree: PathBuf,
    /// The entry modules of the graders whose own requirements (or `requirements.txt`) name
    /// packages.
    entries: HashSet<String>,
    /// Whether every program sees them (the suite's own `requirements:`).
    all: bool,
}

/// What the graders of a suite want installed, gathered with their code.
#[derive(Default)]
struct Wants {
    lines: BTreeSet<String>,
    entries: HashSet<String>,
    all: bool,
}

impl Wants {
    /// The requirements of the grader whose entry modules are `entries`: its own `lines` and
    /// those of a `requirements.txt` in one of `folders` (its files' folders).
    fn add(
        &mut self,
        entries: Vec<String>,
        folders: Vec<PathBuf>,
        lines: &[String],
    ) -> Result<(), RequirementsFileError> {
        let mut wanted: Vec<String> = lines.to_vec();
        for folder in folders {
            let file = folder.join("requirements.txt");
            match fsio::read_text(&file, fsio::cap::TEXT) {
                Ok(text) => wanted.extend(packages::requirements_file(&text)),
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(error) => return Err(RequirementsFileError { file, error }),
            }
        }
        if !wanted.is_empty() {
            self.lines.extend(wanted);
            self.entries.extend(entries);
        }
        Ok(())
    }
}

/// Why a grader's `requirements.txt` cannot be read.
#[derive(Debug, thiserror::Error)]
#[error("cannot read {}: {error}", file.display())]
struct RequirementsFileError {
    file: PathBuf,
    #[source]
    error: std::io::Error,
}

/// The lock of `lines`' packages, beside the suite (in `folder`), and the cache they are
/// unpacked into.
fn packages_lock(
    folder: &Path,
    lines: &BTreeSet<String>,
    cache_dir: Option<&Path>,
) -> Result<(CacheDir, packages::Lock), packages::PackagesError> {
    let lock = packages::lock(folder, lines)?;
    let cache = cache_dir
        .map(CacheDir::open)
        .transpose()
        .map_err(|e| packages::PackagesError::Cache(e.to_string()))?
        .flatten()
        .ok_or(packages::PackagesError::NoCache)?;
    Ok((cache, lock))
}

/// Adds to `errors` a mistake in the module or function of `entry`, one of the `type: code`
/// entries of evaldeck cases (`entries`), located where the case file writes it. A module that
/// does not load fails every entry alike: it is said once, at the first entry naming the module
/// whose file the message names.
pub fn case_code_error(
    errors: &mut Vec<SuiteError>,
    entries: &[CaseCodeSpec],
    entry: &CaseCodeSpec,
    message: String,
) {
    if errors.iter().any(|e| e.message == message) {
        return;
    }
    let names_file = |e: &&CaseCodeSpec| {
        let base = e.module.replace('.', "/");
        [format!("{base}.py:"), format!("{base}/__init__.py:")]
            .iter()
            .any(|file| message.starts_with(file.as_str()) || message.contains(&format!("/{file}")))
    };
    let at = entries.iter().find(names_file).unwrap_or(entry);
    errors.push(SuiteError {
        line: at.line,
        ..SuiteError::at(&at.file, at.field.clone(), message)
    });
}

/// Adds every Python file and module `graders` (of the suite file `suite`) name to `builder`;
/// `errors` gets each that cannot be, located at its field (or, for an evaldeck case's `type:
/// code` entry, where the case file writes it).
fn gather(
    graders: &IndexMap<String, GraderSpec>,
    prefix: &str,
    builder: &mut ProgramBuilder,
    wants: &mut Wants,
    suite: &Path,
    errors: &mut Vec<SuiteError>,
) {
    for (key, spec) in graders {
        let field = format!("{prefix}.{key}");
        let (entries, files, lines) = python_of(spec, key);
        let mut folders: Vec<PathBuf> = files
            .iter()
            .filter_map(|file| builder.suite_dir.join(file).parent().map(Path::to_path_buf))
            .collect();
        if let GraderSpec::Code(_) = spec {
            folders.push(builder.suite_dir.clone());
        }
        if let Err(e) = wants.add(entries, folders, lines) {
            errors.push(SuiteError::at(suite, field.clone(), e.to_string()));
        }
        let added: Vec<(String, Result<(), ProgramError>)> = match spec {
            GraderSpec::Tool(tool) => vec![
                ("function".into(), add_file(builder, Some(&tool.function))),
                (
                    "extractor".into(),
                    add_file(builder, tool.extractor.as_deref()),
                ),
            ],
            GraderSpec::Rubric(rubric) => {
                vec![(
                    "extractor".into(),
                    add_file(builder, Some(&rubric.extractor)),
                )]
            }
            GraderSpec::Code(code) => vec![("module".into(), builder.module(&code.module))],
            GraderSpec::Python(python) => {
                let added = match (&python.source, &python.source_path) {
                    (Some(source), None) => builder.inline(inline_module(key), &field, source),
                    (None, Some(path)) if path.ends_with(".py") => builder.file(path),
                    (None, Some(_)) => Err(ProgramError::NotPython),
                    // Both or neither: the plan says which.
                    _ => Ok(()),
                };
                vec![("source".into(), added)]
            }
            GraderSpec::All(c) | GraderSpec::Any(c) => {
                gather(
                    &c.graders,
                    &format!("{field}.graders"),
                    builder,
                    wants,
                    suite,
                    errors,
                );
                Vec::new()
            }
            // A `python` object was made a `kind: python` grader when the suite was read; those
            // inside its `multi`s are kept beside it, each a module of its own.
            GraderSpec::Openai(openai) => (openai.python.iter())
                .map(|(at, python)| {
                    let source = python.source.as_deref().unwrap_or_default();
                    let module = inner_module(key, at);
                    let added = builder.inline(module, &format!("{field}.grader.{at}"), source);
                    (format!("grader.{at}.source"), added)
                })
                .collect(),
            GraderSpec::Expectations(spec) => {
                for entry in &spec.code {
                    if let Err(e) = builder.module_in(&entry.dir, &entry.module, "the case file") {
                        case_code_error(errors, &spec.code, entry, e.to_string());
                    }
                }
                Vec::new()
            }
        };
        for (what, result) in added {
            if let Err(e) = result {
                errors.push(SuiteError::at(
                    suite,
                    format!("{field}.{what}"),
                    e.to_string(),
                ));
            }
        }
    }
}

/// The Python code of the grader `spec` (of key `key`): its entry modules, the files it names
/// (relative to the suite) and its own `requirements:`.
fn python_of<'a>(spec: &'a GraderSpec, key: &str) -> (Vec<String>, Vec<&'a str>, &'a [String]) {
    let files = |names: &[Option<&'a str>]| -> Vec<&'a str> {
        names
            .iter()
            .filter_map(|name| name.and_then(file_reference))
            .map(|(file, _)| file)
            .collect()
    };
    let (entries, files, lines) = match spec {
        GraderSpec::Tool(tool) => (
            Vec::new(),
            files(&[Some(&tool.function), tool.extractor.as_deref()]),
            &[][..],
        ),
        GraderSpec::Rubric(rubric) => (Vec::new(), files(&[Some(&rubric.extractor)]), &[][..]),
        GraderSpec::Code(code) => (
            vec![code.module.clone()],
            Vec::new(),
            code.requirements.as_slice(),
        ),
        GraderSpec::Openai(openai) => (
            (openai.python.iter())
                .map(|(at, _)| inner_module(key, at))
                .collect(),
            Vec::new(),
            openai.requirements.as_slice(),
        ),
        GraderSpec::Python(python) => match &python.source_path {
            Some(path) => (
                Vec::new(),
                vec![path.as_str()],
                python.requirements.as_slice(),
            ),
            None => (
                vec![inline_module(key)],
                Vec::new(),
                python.requirements.as_slice(),
            ),
        },
        _ => (Vec::new(), Vec::new(), &[][..]),
    };
    let entries = entries
        .into_iter()
        .chain(files.iter().map(|file| file_module(file)))
        .collect();
    (entries, files, lines)
}

/// Adds the file of a `path/file.py:name` reference; any other name adds nothing.
fn add_file(builder: &mut ProgramBuilder, name: Option<&str>) -> Result<(), ProgramError> {
    match name.and_then(file_reference) {
        Some((path, _)) => builder.file(path),
        None => Ok(()),
    }
}

/// Why a Python file or module cannot join a program.
#[derive(Debug, thiserror::Error)]
pub enum ProgramError {
    #[error("`source_path` names a `.py` file")]
    NotPython,
    #[error("no such file: {}", .0.display())]
    NoSuchFile(PathBuf),
    #[error(
        "`{0}` is not a Python module name (write it as `my_graders` or `graders.tools`, without `.py`)"
    )]
    NotAModuleName(String),
    #[error(
        "no module `{dotted}` beside {beside}: neither {} nor {} exists",
        file.display(),
        package.display()
    )]
    NoModule {
        dotted: String,
        beside: &'static str,
        file: PathBuf,
        package: PathBuf,
    },
    #[error(
        "cannot read {path}: {source}; every .py file in a grader's folder is part of its \
         program: make it a regular UTF-8 file, or move it out of the folder"
    )]
    Unreadable {
        path: String,
        source: std::io::Error,
    },
    #[error(
        "{path} is a symbolic link that leads outside {folder}, the grader's folder: the .py \
         files beside a grader are read only from inside its folder; put the file itself there, \
         or remove the link"
    )]
    LeadsOutside { path: String, folder: String },
    #[error("two Python modules are named `{module}`: {first} and {second}; rename one")]
    SameName {
        module: String,
        first: String,
        second: String,
    },
    #[error(
        "more than {MAX_FILES} Python files or {} MiB of them beside the graders (at {at}); \
         keep the graders in a folder of their own",
        MAX_BYTES >> 20
    )]
    TooMany { at: String },
}

/// Files of a program, at most.
const MAX_FILES: usize = 256;
/// Bytes of all the files of a program, at most.
const MAX_BYTES: usize = 8 << 20;
/// Folders below a grader's folder searched for modules.
const MAX_DEPTH: usize = 4;

/// `path/file.py:name` as the file and the name, when `reference` has that shape.
pub fn file_reference(reference: &str) -> Option<(&str, &str)> {
    let (file, name) = reference.rsplit_once(':')?;
    (file.ends_with(".py") && file.len() > 3 && is_identifier(name)).then_some((file, name))
}

/// A Python identifier (ASCII, as the files gavel names are).
pub fn is_identifier(name: &str) -> bool {
    let mut chars = name.chars();
    chars
        .next()
        .is_some_and(|c| c == '_' || c.is_ascii_alphabetic())
        && chars.all(|c| c == '_' || c.is_ascii_alphanumeric())
}

/// The module a referenced file is imported as: its name without `.py`.
pub fn file_module(file: &str) -> String {
    Path::new(file)
        .file_stem()
        .map(|stem| stem.to_string_lossy().into_owned())
        .unwrap_or_default()
}

/// The module an inline OpenAI `source:` becomes, for the grader `key`.
pub fn inline_module(key: &str) -> String {
    let key: String = key
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
        .collect();
    format!("openai_grader_{key}")
}

/// The module of the `python` grader at `at` inside the `multi` of the `kind: openai` grader
/// `key`.
pub fn inner_module(key: &str, at: &str) -> String {
    inline_module(&format!("{key}.{at}"))
}

/// A suite's Python sources, and each entry module's program as places among them.
pub struct Gathered {
    pub sources: Vec<Source>,
    pub entries: IndexMap<String, Vec<usize>>,
}

/// Gathers a suite's programs. Every method returns the reason a reference cannot be used.
pub struct ProgramBuilder {
    /// The suite file, for the paths sources are named by.
    suite_file: PathBuf,
    suite_dir: PathBuf,
    /// `suite_dir` with its links resolved: a grader's folder below it brings its files along.
    suite_real: Option<PathBuf>,
    /// Folders whose `.py` files were gathered already, with their places in `sources`.
    roots: Vec<(PathBuf, Vec<usize>)>,
    sources: Vec<Source>,
    /// Where each source came from, to tell two files of one module name apart.
    origins: Vec<PathBuf>,
    /// Each entry module with the places of its program's files in `sources`.
    entries: IndexMap<String, Vec<usize>>,
    bytes: usize,
}

impl ProgramBuilder {
    pub fn new(suite_file: &Path, suite_dir: &Path) -> ProgramBuilder {
        // `suite.yaml` has the folder `` (the current one), which cannot be listed.
        let suite_dir = if suite_dir.as_os_str().is_empty() {
            PathBuf::from(".")
        } else {
            suite_dir.to_path_buf()
        };
        ProgramBuilder {
            suite_file: suite_file.to_path_buf(),
            suite_real: std::fs::canonicalize(&suite_dir).ok(),
            suite_dir,
            roots: Vec::new(),
            sources: Vec::new(),
            origins: Vec::new(),
            entries: IndexMap::new(),
            bytes: 0,
        }
    }

    /// Whether nothing was gathered: the suite names no Python code.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The file `relative` (to the suite), imported as its stem. The files beside it come
    /// along when its folder is in the suite's folder; a file outside comes alone, so that a
    /// grader path cannot bring a foreign folder into the sandbox.
    pub fn file(&mut self, relative: &str) -> Result<(), ProgramError> {
        let path = self.suite_dir.join(relative);
        if !path.is_file() {
            return Err(ProgramError::NoSuchFile(path));
        }
        let folder = path.parent().map(Path::to_path_buf).unwrap_or_default();
        let module = file_module(relative);
        let places = if self.in_suite(&folder) {
            self.root(&folder)?
        } else {
            let name = path.file_name().map(PathBuf::from).unwrap_or_default();
            vec![self.read(&folder, &name, module.clone())?]
        };
        self.entry(module, places);
        Ok(())
    }

    /// The module `dotted` (`my_graders`, `graders.tools`), found beside the suite as
    /// `my_graders.py` or `my_graders/__init__.py`.
    pub fn module(&mut self, dotted: &str) -> Result<(), ProgramError> {
        let dir = self.suite_dir.clone();
        self.module_in(&dir, dotted, "the suite")
    }

    /// The module `dotted` found in `dir`, which is `beside` (named in errors); every `.py`
    /// file of `dir` comes along, named by its place below it.
    pub fn module_in(
        &mut self,
        dir: &Path,
        dotted: &str,
        beside: &'static str,
    ) -> Result<(), ProgramError> {
        if !dotted.split('.').all(is_identifier) {
            return Err(ProgramError::NotAModuleName(dotted.to_string()));
        }
        let base = dir.join(dotted.replace('.', "/"));
        let [file, package] = [base.with_extension("py"), base.join("__init__.py")];
        if !file.is_file() && !package.is_file() {
            return Err(ProgramError::NoModule {
                dotted: dotted.to_string(),
                beside,
                file,
                package,
            });
        }
        let places = self.root(dir)?;
        self.entry(dotted.to_string(), places);
        Ok(())
    }

    /// Python source written in the suite itself (OpenAI's `source: |`) as `module`, named
    /// `<suite file's name>#<field>` in errors and tracebacks (as the other sources are named
    /// from the suite's folder, so that the path the suite was given by changes no name and no
    /// fingerprint); it comes alone.
    pub fn inline(&mut self, module: String, field: &str, text: &str) -> Result<(), ProgramError> {
        let path = format!("{}#{field}", self.display_path(&self.suite_file));
        let place = self.add(
            module.clone(),
            path,
            text.to_string(),
            self.suite_file.clone(),
        )?;
        self.entry(module, vec![place]);
        Ok(())
    }

    pub fn build(self) -> Gathered {
        Gathered {
            sources: self.sources,
            entries: self.entries,
        }
    }

    fn entry(&mut self, module: String, places: Vec<usize>) {
        self.entries.entry(module).or_insert(places);
    }

    /// Whether `folder` is the suite's folder or below it, links resolved.
    fn in_suite(&self, folder: &Path) -> bool {
        let real = std::fs::canonicalize(folder);
        matches!((&self.suite_real, real), (Some(suite), Ok(real)) if real.starts_with(suite))
    }

    /// Every `.py` file under `root`, as modules named by their place below it; their places.
    fn root(&mut self, root: &Path) -> Result<Vec<usize>, ProgramError> {
        if let Some((_, places)) = self.roots.iter().find(|(r, _)| r == root) {
            return Ok(places.clone());
        }
        let mut files = Vec::new();
        walk(root, 0, &mut files);
        files.sort();
        let mut places = Vec::new();
        for file in files {
            let Some(module) = module_name(root, &file) else {
                continue;
            };
            let relative = file.strip_prefix(root).unwrap_or(&file).to_path_buf();
            places.push(self.read(root, &relative, module)?);
        }
        self.roots.push((root.to_path_buf(), places.clone()));
        Ok(places)
    }

    /// The file `relative` below `folder` as `module`, read without leaving `folder`; its place.
    fn read(
        &mut self,
        folder: &Path,
        relative: &Path,
        module: String,
    ) -> Result<usize, ProgramError> {
        let file = folder.join(relative);
        let path = self.display_path(&file);
        let text = match fsio::read_text_within(folder, relative, fsio::cap::TEXT) {
            Ok(text) => text,
            Err(_) if leads_outside(folder, &file) => {
                return Err(ProgramError::LeadsOutside {
                    path,
                    folder: self.display_path(folder),
                });
            }
            Err(source) => return Err(ProgramError::Unreadable { path, source }),
        };
        self.add(module, path, text, file)
    }

    /// Adds a source unless it is there already; its place.
    fn add(
        &mut self,
        module: String,
        path: String,
        text: String,
        origin: PathBuf,
    ) -> Result<usize, ProgramError> {
        if let Some(i) = self.sources.iter().position(|s| s.module == module) {
            if self.origins[i] == origin {
                return Ok(i);
            }
            return Err(ProgramError::SameName {
                module,
                first: self.sources[i].path.clone(),
                second: path,
            });
        }
        self.bytes += text.len();
        if self.sources.len() >= MAX_FILES || self.bytes > MAX_BYTES {
            return Err(ProgramError::TooMany { at: path });
        }
        self.sources.push(Source {
            module,
            path,
            text,
            code: None,
        });
        self.origins.push(origin);
        Ok(self.sources.len() - 1)
    }

    /// `file` relative to the suite's folder where it is below it, else as found.
    fn display_path(&self, file: &Path) -> String {
        file.strip_prefix(&self.suite_dir)
            .unwrap_or(file)
            .to_string_lossy()
            .into_owned()
    }
}

/// Whether `file` is a symbolic link to something that exists outside `folder`.
fn leads_outside(folder: &Path, file: &Path) -> bool {
    let is_link = std::fs::symlink_metadata(file).is_ok_and(|m| m.file_type().is_symlink());
    match (std::fs::canonicalize(folder), std::fs::canonicalize(file)) {
        (Ok(folder), Ok(target)) => is_link && !target.starts_with(folder),
        _ => false,
    }
}

/// The `.py` files below `dir`, skipping hidden folders, caches and virtual environments.
fn walk(dir: &Path, depth: usize, files: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        let name = entry.file_name().to_string_lossy().into_owned();
        let Ok(kind) = entry.file_type() else {
            continue;
        };
        if kind.is_dir() {
            let skipped = name.starts_with('.')
                || matches!(
                    name.as_str(),
                    "__pycache__" | "node_modules" | "venv" | "target"
                )
                || depth >= MAX_DEPTH;
            if !skipped {
                walk(&path, depth + 1, files);
            }
        } else if name.ends_with(".py") {
            files.push(path);
        }
    }
}

/// `helpers/text.py` below `root` is `helpers.text`, `pkg/__init__.py` is `pkg`; a path that is
/// not made of identifiers is no module.
fn module_name(root: &Path, file: &Path) -> Option<String> {
    let relative = file.strip_prefix(root).ok()?.with_extension("");
    let mut parts: Vec<String> = Vec::new();
    for component in relative.components() {
        let Component::Normal(part) = component else {
            return None;
        };
        parts.push(part.to_str()?.to_string());
    }
    if parts.last().is_some_and(|p| p == "__init__") {
        parts.pop();
    }
    (!parts.is_empty() && parts.iter().all(|p| is_identifier(p))).then(|| parts.join("."))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn suite(text: &str) -> Suite {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("suite.yaml");
        std::fs::write(&path, text).unwrap();
        Suite::load(&path).unwrap()
    }

    #[test]
    fn the_interpreter_resets_after_every_call_only_where_a_call_runs_fresh() {
        let head = "name: s\ndataset: d.jsonl\n";
        let code = "    kind: code\n    module: m\n    function: f\n";
        let warm = format!("{head}graders:\n  a:\n{code}");
        assert!(!fresh_calls(&suite(&warm)));
        let batch = format!("{head}isolation: batch\ngraders:\n  a:\n{code}    isolation: batch\n");
        assert!(!fresh_calls(&suite(&batch)));
        let by_suite = format!("{head}isolation: sample\ngraders:\n  a:\n{code}");
        assert!(fresh_calls(&suite(&by_suite)));
        let nested = format!(
            "{head}graders:\n  all:\n    kind: all\n    graders:\n      a:\n    {}        isolation: sample\n",
            code.replace("\n    ", "\n        ")
        );
        assert!(fresh_calls(&suite(&nested)));
        let row_folder = "allow:\n  files:\n    - {under: ., row: workdir}\n";
        assert!(fresh_calls(&suite(&format!(
            "{head}{row_folder}graders:\n  a:\n{code}"
        ))));
        let folder = "allow:\n  files: [.]\n";
        assert!(!fresh_calls(&suite(&format!(
            "{head}{folder}graders:\n  a:\n{code}"
        ))));
        let own = format!(
            "{head}graders:\n  a:\n{code}    allow:\n      files:\n        - {{under: ., row: w}}\n"
        );
        assert!(fresh_calls(&suite(&own)));
    }

    fn source(module: &str, path: &str, text: &str) -> Source {
        Source {
            module: module.to_string(),
            path: path.to_string(),
            text: text.to_string(),
            code: None,
        }
    }

    #[test]
    fn import_statements_are_read_whole_wherever_they_stand() {
        let text = "import os, helpers.text as t  # a comment (\nfrom pkg import (\n    a,\n    b,  # b\n)\n\
                    def f():\n    from .sub import c\nx = 'import nothing'\nfrom q \\\n    import d\n";
        let statements: Vec<String> = import_statements(text)
            .iter()
            .map(|s| s.split_whitespace().collect::<Vec<_>>().join(" "))
            .collect();
        assert_eq!(
            statements,
            [
                "import os, helpers.text as t",
                "from pkg import ( a, b, )",
                "from .sub import c",
                "from q \\ import d"
            ]
        );
        assert_eq!(imported(&statements[0], "m", false), ["os", "helpers.text"]);
        assert_eq!(
            imported(&statements[1], "m", false),
            ["pkg.a", "pkg.b", "pkg"]
        );
        assert_eq!(
            imported(&statements[2], "pkg.mod", false),
            ["pkg.sub.c", "pkg.sub"]
        );
        assert_eq!(
            imported(&statements[2], "pkg", true),
            ["pkg.sub.c", "pkg.sub"]
        );
        assert_eq!(imported("from .. import e", "a.b.c", false), ["a.e", "a"]);
        assert_eq!(imported(&statements[3], "m", false), ["q.d", "q"]);
    }

    #[test]
    fn what_an_entry_imports_is_compiled_and_files_nobody_imports_are_not() {
        let sources = [
            source(
                "grading",
                "g/grading.py",
                "def f():\n    import helpers.text\n",
            ),
            source("helpers", "g/helpers/__init__.py", "import util\n"),
            source(
                "helpers.text",
                "g/helpers/text.py",
                "from . import shared\n",
            ),
            source("helpers.shared", "g/helpers/shared.py", ""),
            source("util", "g/util.py", "import json\n"),
            source("scratch", "g/scratch.py", "import grading\n"),
            source("copy.helpers", "g/copy/helpers.py", ""),
        ];
        let entries = ["grading".to_string()];
        assert_eq!(
            importable(&sources, entries.iter()),
            [true, true, true, true, true, false, false]
        );
    }

    #[test]
    fn file_references_need_a_py_file_and_an_identifier() {
        assert_eq!(
            file_reference("graders/custom_evaluators.py:grade_it"),
            Some(("graders/custom_evaluators.py", "grade_it"))
        );
        assert_eq!(file_reference("pack.wasm:grade"), None);
        assert_eq!(file_reference("custom.py:not-a-name"), None);
        assert_eq!(file_reference("contains"), None);
        assert_eq!(file_reference(".py:x"), None);
    }

    #[test]
    fn modules_are_named_by_their_place_below_the_grader() {
        let root = Path::new("/s");
        let name = |p: &str| module_name(root, Path::new(p));
        assert_eq!(name("/s/graders.py").as_deref(), Some("graders"));
        assert_eq!(name("/s/helpers/text.py").as_deref(), Some("helpers.text"));
        assert_eq!(name("/s/pkg/__init__.py").as_deref(), Some("pkg"));
        assert_eq!(name("/s/my-file.py"), None);
        assert_eq!(inline_module("exact match"), "openai_grader_exact_match");
    }

    #[test]
    fn a_program_holds_the_named_files_and_their_neighbours() {
        let dir = tempfile::tempdir().unwrap();
        let suite = dir.path().join("suite.yaml");
        std::fs::create_dir_all(dir.path().join("graders/helpers")).unwrap();
        std::fs::create_dir_all(dir.path().join("graders/.venv")).unwrap();
        std::fs::write(
            dir.path().join("graders/custom.py"),
            "import helpers.text\n",
        )
        .unwrap();
        std::fs::write(dir.path().join("graders/helpers/text.py"), "X = 1\n").unwrap();
        std::fs::write(dir.path().join("graders/.venv/site.py"), "").unwrap();
        let mut builder = ProgramBuilder::new(&suite, dir.path());
        builder.file("graders/custom.py").unwrap();
        builder.file("graders/custom.py").unwrap();
        builder
            .inline(
                "openai_grader_a".into(),
                "graders.a",
                "def grade(s, i): return 1",
            )
            .unwrap();
        let err = builder.module("missing").unwrap_err();
        assert!(matches!(&err, ProgramError::NoModule { dotted, .. } if dotted == "missing"));
        assert!(
            err.to_string()
                .starts_with("no module `missing` beside the suite: neither ")
        );
        let err = builder.file("nope.py").unwrap_err();
        assert!(matches!(&err, ProgramError::NoSuchFile(path) if path.ends_with("nope.py")));
        assert!(err.to_string().starts_with("no such file: "), "{err}");
        let gathered = builder.build();
        let modules: Vec<(&str, &str)> = gathered
            .sources
            .iter()
            .map(|s| (s.module.as_str(), s.path.as_str()))
            .collect();
        assert_eq!(
            modules,
            [
                ("custom", "graders/custom.py"),
                ("helpers.text", "graders/helpers/text.py"),
                ("openai_grader_a", "suite.yaml#graders.a"),
            ]
        );
        // Each entry's program: its folder's files, or the inline source alone.
        let programs: Vec<(&str, &[usize])> = gathered
            .entries
            .iter()
            .map(|(entry, places)| (entry.as_str(), places.as_slice()))
            .collect();
        assert_eq!(
            programs,
            [("custom", &[0, 1][..]), ("openai_grader_a", &[2][..])]
        );
    }

    /// A suite in `outer/suite`, with `outer/elsewhere` beside it.
    fn suite_beside_elsewhere() -> (tempfile::TempDir, ProgramBuilder) {
        let outer = tempfile::tempdir().unwrap();
        let suite = outer.path().join("suite");
        std::fs::create_dir_all(suite.join("graders")).unwrap();
        std::fs::create_dir_all(outer.path().join("elsewhere/deep")).unwrap();
        std::fs::write(suite.join("graders/g.py"), "X = 1\n").unwrap();
        std::fs::write(outer.path().join("elsewhere/x.py"), "Y = 1\n").unwrap();
        std::fs::write(outer.path().join("elsewhere/secret.py"), "KEY = 1\n").unwrap();
        std::fs::write(outer.path().join("elsewhere/deep/more.py"), "").unwrap();
        let builder = ProgramBuilder::new(&suite.join("suite.yaml"), &suite);
        (outer, builder)
    }

    #[test]
    fn a_grader_file_outside_the_suite_folder_comes_alone() {
        let (outer, mut builder) = suite_beside_elsewhere();
        builder.file("../elsewhere/x.py").unwrap();
        let absolute = outer.path().join("elsewhere/secret.py");
        builder.file(absolute.to_str().unwrap()).unwrap();
        let gathered = builder.build();
        let modules: Vec<&str> = gathered.sources.iter().map(|s| s.module.as_str()).collect();
        assert_eq!(modules, ["x", "secret"]);
        let programs: Vec<(&str, &[usize])> = gathered
            .entries
            .iter()
            .map(|(entry, places)| (entry.as_str(), places.as_slice()))
            .collect();
        assert_eq!(programs, [("x", &[0][..]), ("secret", &[1][..])]);
    }

    #[test]
    fn a_neighbour_linked_outside_the_grader_folder_is_refused_naming_it() {
        let (outer, mut builder) = suite_beside_elsewhere();
        let graders = outer.path().join("suite/graders");
        std::os::unix::fs::symlink(
            outer.path().join("elsewhere/secret.py"),
            graders.join("key.py"),
        )
        .unwrap();
        let err = builder.file("graders/g.py").unwrap_err();
        assert!(
            matches!(&err, ProgramError::LeadsOutside { path, .. } if path == "graders/key.py")
        );
        assert!(
            err.to_string().starts_with(
                "graders/key.py is a symbolic link that leads outside graders, the grader's folder"
            ),
            "{err}"
        );
        // A link that stays in the folder is read.
        std::fs::remove_file(graders.join("key.py")).unwrap();
        std::os::unix::fs::symlink("g.py", graders.join("same.py")).unwrap();
        builder.file("graders/g.py").unwrap();
    }

    #[test]
    fn a_fifo_beside_a_grader_is_refused_naming_it() {
        let (outer, mut builder) = suite_beside_elsewhere();
        let fifo = outer.path().join("suite/graders/pipe.py");
        rustix::fs::mkfifoat(
            rustix::fs::CWD,
            &fifo,
            rustix::fs::Mode::from_raw_mode(0o600),
        )
        .unwrap();
        let err = builder.file("graders/g.py").unwrap_err();
        assert!(
            err.to_string()
                .starts_with("cannot read graders/pipe.py: it is a FIFO, not a regular file; "),
            "{err}"
        );
    }

    #[test]
    fn two_files_of_one_module_name_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        for sub in ["a", "b"] {
            std::fs::create_dir_all(dir.path().join(sub)).unwrap();
            std::fs::write(dir.path().join(sub).join("util.py"), "").unwrap();
        }
        let mut builder = ProgramBuilder::new(&dir.path().join("s.yaml"), dir.path());
        builder.file("a/util.py").unwrap();
        let err = builder.file("b/util.py").unwrap_err();
        assert!(
            err.to_string()
                .starts_with("two Python modules are named `util`: "),
            "{err}"
        );
    }
}
