//! A suite's graders resolved into something that can grade: names looked up among the
//! built-ins and the packs, configs checked, before any sample runs.

use std::cell::RefCell;
use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;

use indexmap::IndexMap;
use serde_json::{Map, Value};

use crate::config::suite::{
    CaseCodeSpec, CodeSpec, GraderSpec, PythonSpec, SuiteError, ToolSpec, closest,
};
use crate::grade::builtin::evaldeck::Check;
use crate::grade::builtin::expectations::{CaseCode, TurnGraders};
use crate::grade::builtin::letta;
use crate::grade::config::ConfigError;
use crate::grade::extract::Extractor;
use crate::grade::grants::{AllowSpec, Grants};
use crate::grade::judge::{Judge, JudgeCalls, JudgeError, JudgeOptions, RequestBound, TurnJudges};
use crate::grade::openai;
use crate::grade::pack::{Isolation, Pack, PackExtractor, PackGrader, ProgramFunction};
use crate::grade::program::reward::CustomReward;
use crate::grade::program::{self, Python};
use crate::grade::registry::Family;

/// Every metric of a suite, in YAML order.
pub struct Plan {
    pub metrics: Vec<Metric>,
    /// The suite's `reward: {kind: custom}` composer, once resolved.
    pub reward: Option<CustomReward>,
    /// The bound on requests in flight that every judge of the plan shares.
    pub requests: Arc<RequestBound>,
    /// What each sandboxed grader may reach, by its field (`graders.KEY`), in YAML order;
    /// empty when the suite writes no `allow:`.
    pub grants: Vec<(String, Arc<Grants>)>,
}

pub struct Metric {
    /// Kept for the life of the process: every result names its grades by it, and a borrowed
    /// key costs a result nothing where an owned one cost an allocation and a copy a grade.
    pub key: &'static str,
    pub display_name: Option<String>,
    pub node: Node,
}

/// A grader ready to grade.
/// Letta message types that exist but no built-in reads: not worth a warning.
const LETTA_UNREAD_TYPES: &[&str] = &[
    "approval_request_message",
    "approval_response_message",
    "summary_message",
    "event_message",
    "stop_reason",
    "usage_statistics",
    "ping",
];

pub enum Node {
    /// letta-evals' tool-grader path: guard, extractor, function.
    Tool {
        extraction: Extraction,
        function: Function,
    },
    /// An evaldeck check over the whole trajectory.
    Check(Check),
    /// The sample's `expected:` block, or its case's turns with the endpoints of their `llm`
    /// entries and the functions of their `code` entries.
    Expectations(Arc<TurnGraders>),
    /// All (or any) of the sub-graders.
    Composite {
        all: bool,
        children: Vec<(String, Node)>,
    },
    /// LLM as judge over the extracted submission.
    Judge {
        extraction: Extraction,
        judge: Arc<Judge>,
    },
    /// A Python grader over the whole trajectory (evaldeck `code`, OpenAI `python`); the
    /// threshold, where set, decides pass and fail from the score.
    Program {
        grader: PackGrader,
        pass_threshold: Option<f64>,
    },
    /// One of OpenAI's grader objects, over the row's item and sample, with the Python graders
    /// of its `python` sub-graders by their place in the object.
    OpenAi {
        grader: Arc<openai::Grader>,
        python: Vec<(String, Node)>,
    },
}

pub enum Extraction {
    Builtin(Extractor),
    Pack(PackExtractor),
}

pub enum Function {
    Letta(letta::Function),
    Pack(PackGrader),
}

/// What resolving a suite needs from its surroundings.
pub struct Resolver<'a> {
    pub suite_file: &'a Path,
    pub base_dir: &'a Path,
    /// Packs by name, loaded already (suite `packs:` and packs named by path in `function:`).
    pub packs: &'a HashMap<String, Arc<Pack>>,
    /// The suite's Python code and its interpreter, when the suite names any.
    pub python: Option<&'a Python>,
    /// Where Python graders run when their spec does not say: the suite's `isolation`.
    pub isolation: Isolation,
    pub judge_options: JudgeOptions,
    /// The suite's `allow:`, whose keys a pack's and a grader's own replace.
    pub allow: Option<&'a AllowSpec>,
    /// Each pack's `allow:` (its `packs:` entry's), whose keys replace the suite's for the
    /// graders whose function (or else extractor) is that pack's.
    pub pack_allow: HashMap<String, AllowSpec>,
    /// What each sandboxed grader was given, recorded as the plan is made.
    pub granted: RefCell<Vec<(String, Arc<Grants>)>>,
}

const DEFAULT_EXTRACTOR: &str = "last_assistant";

impl Resolver<'_> {
    pub fn plan(&self, graders: &IndexMap<String, GraderSpec>) -> Result<Plan, Vec<SuiteError>> {
        let mut errors = Vec::new();
        let mut metrics = Vec::new();
        if graders.is_empty() {
            errors.push(SuiteError::at(
                self.suite_file,
                "graders",
                "a suite needs at least one grader",
            ));
        }
        for (key, spec) in graders {
            let field = format!("graders.{key}");
            match self.node(&field, spec) {
                Ok(node) => metrics.push(Metric {
                    key: Box::leak(key.clone().into_boxed_str()),
                    display_name: display_name(spec),
                    node,
                }),
                Err(mut e) => errors.append(&mut e),
            }
        }
        if errors.is_empty() {
            Ok(Plan {
                metrics,
                reward: None,
                requests: self.judge_options.requests.clone(),
                grants: self.granted.take(),
            })
        } else {
            // A mistake in the suite's `allow:` is found once per grader it reaches: said once.
            let mut said: Vec<SuiteError> = Vec::with_capacity(errors.len());
            for error in errors {
                if !said.contains(&error) {
                    said.push(error);
                }
            }
            Err(said)
        }
    }

    /// What the grader at `field` may reach: its `allow:` over the suite's; `None` when
    /// neither writes one.
    fn grants(
        &self,
        field: &str,
        allow: Option<&AllowSpec>,
    ) -> Result<Option<Arc<Grants>>, Vec<SuiteError>> {
        self.pack_grants(field, allow, None)
    }

    /// [`Resolver::grants`] of a grader whose function (or else extractor) is the pack
    /// `pack`'s: its `allow:` over the pack's over the suite's.
    fn pack_grants(
        &self,
        field: &str,
        allow: Option<&AllowSpec>,
        pack: Option<&str>,
    ) -> Result<Option<Arc<Grants>>, Vec<SuiteError>> {
        let pack = pack.and_then(|name| Some((name, self.pack_allow.get(name)?)));
        if allow.is_none() && pack.is_none() && self.allow.is_none() {
            return Ok(None);
        }
        let under = AllowSpec::over(pack.map(|(_, allow)| allow), self.allow);
        let merged = AllowSpec::over(allow, Some(&under));
        match merged.resolve(self.base_dir) {
            Ok(grants) => Ok(Some(Arc::new(grants))),
            Err(errors) => Err(errors
                .into_iter()
                .map(|e| {
                    // Located where the key is written: the grader's, the pack's, else the
                    // suite's.
                    let at = match pack {
                        _ if allow.is_some_and(|a| a.writes(&e.field)) => {
                            format!("{field}.allow.{}", e.field)
                        }
                        Some((name, allow)) if allow.writes(&e.field) => {
                            format!("packs.{name}.allow.{}", e.field)
                        }
                        _ => format!("allow.{}", e.field),
                    };
                    SuiteError::at(self.suite_file, at, e.message).with_hint(e.hint)
                })
                .collect()),
        }
    }

    /// `grants`, recorded as given to the grader at `field`.
    fn give(&self, field: &str, grants: Option<&Arc<Grants>>) -> Option<Arc<Grants>> {
        let grants = grants?;
        let mut granted = self.granted.borrow_mut();
        if !granted.iter().any(|(f, _)| f == field) {
            granted.push((field.to_string(), grants.clone()));
        }
        Some(grants.clone())
    }

    /// A grader that runs nothing in the sandbox, which an `allow:` of its own cannot reach.
    fn nothing_to_allow(&self, field: &str, name: &str) -> SuiteError {
        SuiteError::at(
            self.suite_file,
            format!("{field}.allow"),
            format!("`{name}` is built into gavel and reaches nothing; `allow:` grants Python and pack graders"),
        )
        .with_hint("remove `allow:` from this grader")
    }

    fn node(&self, field: &str, spec: &GraderSpec) -> Result<Node, Vec<SuiteError>> {
        let isolation = spec.isolation().unwrap_or(self.isolation);
        match spec {
            GraderSpec::Tool(tool) => self.tool(field, tool).map(|mut node| {
                if let Node::Tool {
                    extraction,
                    function,
                } = &mut node
                {
                    if let Extraction::Pack(e) = extraction {
                        e.set_isolation(isolation);
                    }
                    if let Function::Pack(g) = function {
                        g.set_isolation(isolation);
                    }
                }
                node
            }),
            GraderSpec::Code(code) => {
                let grants = self.grants(field, code.allow.as_ref())?;
                Ok(self.code(field, code, grants.as_ref())?)
            }
            GraderSpec::Python(python) => {
                let grants = self.grants(field, python.allow.as_ref())?;
                let module = program::inline_module(field.rsplit('.').next().unwrap_or(field));
                Ok(self.python(field, &module, python, grants.as_ref())?)
            }
            GraderSpec::Openai(spec) => {
                let object = spec.grader.as_ref().unwrap_or(&Value::Null);
                let name = field.rsplit('.').next().unwrap_or(field);
                let endpoint = |asked: bool| -> Result<Option<Judge>, Vec<SuiteError>> {
                    if !asked {
                        return Ok(None);
                    }
                    let options = self.judge_options.clone();
                    Judge::new(spec.transport(), self.base_dir, options)
                        .map(Some)
                        .map_err(|e| {
                            vec![match e {
                                JudgeError::Config(e) => SuiteError::at(
                                    self.suite_file,
                                    format!("{field}.{}", e.field),
                                    e.message,
                                ),
                                e => SuiteError::at(self.suite_file, field, e.to_string()),
                            }]
                        })
                };
                let endpoints = openai::Endpoints {
                    chat: endpoint(openai::asks_model(object))?.map(Arc::new),
                    embeddings: (endpoint(openai::asks_embeddings(object))?)
                        .map(|judge| Arc::new(judge.for_embeddings())),
                };
                let grader = openai::Grader::parse(object, name, &endpoints).map_err(|errors| {
                    (errors.into_iter())
                        .map(|e| spec.mistake(self.suite_file, field, e))
                        .collect::<Vec<_>>()
                })?;
                let grants = if spec.python.is_empty() {
                    None
                } else {
                    self.grants(field, spec.allow.as_ref())?
                };
                let python = (spec.python.iter())
                    .map(|(at, python)| {
                        let module = program::inner_module(name, at);
                        let inner = format!("{field}.grader.{at}");
                        let node = self.python(&inner, &module, python, grants.as_ref());
                        node.map(|node| (at.clone(), node))
                    })
                    .collect::<Result<_, _>>()?;
                Ok(Node::OpenAi {
                    grader: Arc::new(grader),
                    python,
                })
            }
            GraderSpec::Expectations(spec) => {
                let judges = TurnJudges::new(self.base_dir, self.judge_options.clone());
                let mut code = self.case_code(field, &spec.code)?;
                for entry in &mut code {
                    entry.grader.set_isolation(isolation);
                }
                Ok(Node::Expectations(Arc::new(TurnGraders { judges, code })))
            }
            GraderSpec::All(c) | GraderSpec::Any(c) => {
                let all = matches!(spec, GraderSpec::All(_));
                let mut children = Vec::new();
                let mut errors = Vec::new();
                for (key, sub) in &c.graders {
                    match self.node(&format!("{field}.graders.{key}"), sub) {
                        Ok(node) => children.push((key.clone(), node)),
                        Err(mut e) => errors.append(&mut e),
                    }
                }
                if errors.is_empty() {
                    Ok(Node::Composite { all, children })
                } else {
                    Err(errors)
                }
            }
            GraderSpec::Rubric(rubric) => {
                // A judge's extractor in the sandbox reaches what the suite's `allow:` grants.
                let grants = self.grants(field, None)?;
                let extraction = self.extraction(
                    field,
                    Some(&rubric.extractor),
                    &rubric.extractor_config,
                    grants.as_ref(),
                )?;
                let judge = Judge::new(
                    (**rubric).clone(),
                    self.base_dir,
                    self.judge_options.clone(),
                )
                .map_err(|e| {
                    vec![match e {
                        // A template's problem is located at the field holding the text.
                        JudgeError::Template { field: key, source } => SuiteError::at(
                            self.suite_file,
                            format!("{field}.{key}"),
                            source.to_string(),
                        ),
                        JudgeError::Config(e) => SuiteError::at(
                            self.suite_file,
                            format!("{field}.{}", e.field),
                            e.message,
                        ),
                        // A mistake in the agent file is located at `agent_file`.
                        JudgeError::AgentFile(source) => SuiteError::at(
                            self.suite_file,
                            format!("{field}.agent_file"),
                            source.to_string(),
                        ),
                        e => SuiteError::at(self.suite_file, field, e.to_string()),
                    }]
                })?;
                Ok(Node::Judge {
                    extraction,
                    judge: Arc::new(judge),
                })
            }
        }
    }

    fn tool(&self, field: &str, spec: &ToolSpec) -> Result<Node, Vec<SuiteError>> {
        let name = spec.function.as_str();
        if let Some(check) = Check::new(name, &spec.config)
            .map_err(|e| vec![self.config_error(&format!("{field}.config"), e)])?
        {
            if spec.allow.is_some() {
                return Err(vec![self.nothing_to_allow(field, name)]);
            }
            if spec.extractor.is_some() || !spec.extractor_config.is_empty() {
                return Err(vec![
                    SuiteError::at(
                        self.suite_file,
                        format!("{field}.extractor"),
                        format!("`{name}` reads the whole trajectory and takes no extractor"),
                    )
                    .with_hint("remove `extractor` and `extractor_config`"),
                ]);
            }
            return Ok(Node::Check(check));
        }
        let pack = [Some(name), spec.extractor.as_deref()]
            .into_iter()
            .flatten()
            .filter_map(|name| pack_reference(name).map(|(pack, _)| pack))
            .find(|pack| self.packs.contains_key(*pack));
        let grants = self.pack_grants(field, spec.allow.as_ref(), pack)?;
        let grants = grants.as_ref();
        // Both halves are resolved so that one run of `gavel validate` reports both mistakes.
        let extraction = self.extraction(
            field,
            spec.extractor.as_deref(),
            &spec.extractor_config,
            grants,
        );
        let function = self.function(field, spec, grants);
        match (extraction, function) {
            (Ok(Extraction::Builtin(_)), Ok(Function::Letta(_))) if spec.allow.is_some() => {
                Err(vec![self.nothing_to_allow(field, name)])
            }
            (Ok(extraction), Ok(function)) => Ok(Node::Tool {
                extraction,
                function,
            }),
            (extraction, function) => {
                Err(extraction.err().into_iter().chain(function.err()).collect())
            }
        }
    }

    fn function(
        &self,
        field: &str,
        spec: &ToolSpec,
        grants: Option<&Arc<Grants>>,
    ) -> Result<Function, SuiteError> {
        let name = spec.function.as_str();
        let config = Value::Object(spec.config.clone());
        if let Some(function) = self.python_function(field, "function", name, &config, grants)? {
            return Ok(Function::Pack(function));
        }
        if let Some(function) = letta::Function::from_name(name) {
            if !spec.config.is_empty() {
                return Err(SuiteError::at(
                    self.suite_file,
                    format!("{field}.config"),
                    format!("`{name}` takes no config"),
                ));
            }
            return Ok(Function::Letta(function));
        }
        if let Some(python) = self.bare_python(name) {
            return python
                .grader(
                    &format!("letta-grader::{name}"),
                    &config,
                    self.give(field, grants).as_ref(),
                )
                .map(Function::Pack)
                .map_err(|e| self.program_error(field, "function", e));
        }
        let (pack, function) = self.pack_function(field, "function", name)?;
        pack.grader(function, &config)
            .map(|grader| Function::Pack(grader.granted(self.give(field, grants))))
            .map_err(|e| {
                SuiteError::at(self.suite_file, format!("{field}.function"), e.to_string())
            })
    }

    fn extraction(
        &self,
        field: &str,
        name: Option<&str>,
        config: &Map<String, Value>,
        grants: Option<&Arc<Grants>>,
    ) -> Result<Extraction, SuiteError> {
        let name = name.unwrap_or(DEFAULT_EXTRACTOR);
        if let Some(extractor) = Extractor::new(name, config)
            .map_err(|e| self.config_error(&format!("{field}.extractor_config"), e))?
        {
            return Ok(Extraction::Builtin(extractor));
        }
        let config = Value::Object(config.clone());
        if let Some(path) = program::file_reference(name) {
            let python = self.python_for(field, "extractor")?;
            let module = program::file_module(path.0);
            return python
                .extractor(
                    &format!("letta-extractor:{module}:{}", path.1),
                    &config,
                    self.give(field, grants).as_ref(),
                )
                .map(Extraction::Pack)
                .map_err(|e| self.program_error(field, "extractor", e));
        }
        if let Some(python) = self.bare_python(name) {
            return python
                .extractor(
                    &format!("letta-extractor::{name}"),
                    &config,
                    self.give(field, grants).as_ref(),
                )
                .map(Extraction::Pack)
                .map_err(|e| self.program_error(field, "extractor", e));
        }
        let (pack, function) = self.pack_function(field, "extractor", name)?;
        let extractor = pack.extractor(function, &config).map_err(|e| {
            SuiteError::at(self.suite_file, format!("{field}.extractor"), e.to_string())
        })?;
        Ok(Extraction::Pack(
            extractor.granted(self.give(field, grants)),
        ))
    }

    /// `pack.name`, or letta-evals' `path/to/pack.wasm:name`.
    fn pack_function<'n>(
        &self,
        field: &str,
        key: &str,
        name: &'n str,
    ) -> Result<(&Arc<Pack>, &'n str), SuiteError> {
        let split = pack_reference(name);
        if let Some((pack, function)) = split
            && let Some(loaded) = self.packs.get(pack)
        {
            return Ok((loaded, function));
        }
        if name.ends_with(".py") {
            return Err(SuiteError::at(
                self.suite_file,
                format!("{field}.{key}"),
                format!("`{name}` names a Python file but not the function in it"),
            )
            .with_hint(format!("write `{name}:NAME`, NAME the function's")));
        }
        let builtins = builtin_names(key);
        let mut error = SuiteError::at(
            self.suite_file,
            format!("{field}.{key}"),
            match split {
                Some((pack, _)) => format!("unknown pack `{pack}` in `{name}`"),
                None => format!(
                    "unknown {} `{name}`",
                    if key == "function" {
                        "grader function"
                    } else {
                        "extractor"
                    }
                ),
            },
        );
        let candidates = builtins
            .iter()
            .copied()
            .chain(self.packs.keys().map(String::as_str));
        error = match closest(name, candidates) {
            Some(best) => error.with_hint(format!("did you mean `{best}`?")),
            None => error.with_hint(format!(
                "built-ins: {}; pack functions are written `<pack>.<name>` with the pack declared under `packs:`",
                builtins.join(", ")
            )),
        };
        Err(error)
    }

    /// A letta-evals `@grader` named `path/file.py:name`, checked by the interpreter.
    fn python_function(
        &self,
        field: &str,
        key: &str,
        name: &str,
        config: &Value,
        grants: Option<&Arc<Grants>>,
    ) -> Result<Option<PackGrader>, SuiteError> {
        let Some((path, function)) = program::file_reference(name) else {
            return Ok(None);
        };
        let python = self.python_for(field, key)?;
        let module = program::file_module(path);
        python
            .grader(
                &format!("letta-grader:{module}:{function}"),
                config,
                self.give(field, grants).as_ref(),
            )
            .map(Some)
            .map_err(|e| self.program_error(field, key, e))
    }

    /// evaldeck's `kind: code`.
    fn code(
        &self,
        field: &str,
        spec: &CodeSpec,
        grants: Option<&Arc<Grants>>,
    ) -> Result<Node, SuiteError> {
        let (name, config) = match (&spec.function, &spec.class) {
            (Some(function), None) if spec.params.is_empty() => (
                format!("evaldeck-function:{}:{function}", spec.module),
                Value::Null,
            ),
            (Some(_), None) => {
                return Err(SuiteError::at(
                    self.suite_file,
                    format!("{field}.params"),
                    "`params` are the arguments of a `class`; a `function` takes none",
                ));
            }
            (None, Some(class)) => (
                format!("evaldeck-class:{}:{class}", spec.module),
                Value::Object(spec.params.clone()),
            ),
            _ => {
                return Err(SuiteError::at(
                    self.suite_file,
                    format!("{field}.function"),
                    "a `code` grader names either a `function` or a `class` of its module",
                )
                .with_hint("e.g. `module: my_graders` and `function: check_booking_format`"));
            }
        };
        let python = self.python_for(field, "module")?;
        let mut grader = python
            .grader(&name, &config, self.give(field, grants).as_ref())
            .map_err(|e| self.program_error(field, "module", e))?;
        grader.set_isolation(spec.isolation.unwrap_or(self.isolation));
        Ok(Node::Program {
            grader,
            pass_threshold: None,
        })
    }

    /// The functions of evaldeck cases' `type: code` entries, each checked by the interpreter;
    /// a mistake is reported where its case file writes the entry.
    fn case_code(
        &self,
        field: &str,
        entries: &[CaseCodeSpec],
    ) -> Result<Vec<CaseCode>, Vec<SuiteError>> {
        if entries.is_empty() {
            return Ok(Vec::new());
        }
        let python = self.python_for(field, "code")?;
        // The functions a case names run with what the suite's `allow:` grants.
        let grants = self.grants(field, None)?;
        let mut code: Vec<CaseCode> = Vec::new();
        let mut errors = Vec::new();
        for entry in entries {
            // A function several entries name is checked (a sandbox call) once.
            if code.iter().any(|c| c.named(&entry.module, &entry.function)) {
                continue;
            }
            let name = format!("evaldeck-function:{}:{}", entry.module, entry.function);
            match python.grader(
                &name,
                &Value::Null,
                self.give(field, grants.as_ref()).as_ref(),
            ) {
                Ok(grader) => code.push(CaseCode {
                    module: entry.module.clone(),
                    function: entry.function.clone(),
                    grader,
                }),
                Err(e) => program::case_code_error(&mut errors, entries, entry, e.to_string()),
            }
        }
        if errors.is_empty() {
            Ok(code)
        } else {
            Err(errors)
        }
    }

    /// OpenAI's `kind: python`, at `field`; `module` is what its inline `source` is imported as.
    fn python(
        &self,
        field: &str,
        module: &str,
        spec: &PythonSpec,
        grants: Option<&Arc<Grants>>,
    ) -> Result<Node, SuiteError> {
        let module = match (&spec.source, &spec.source_path) {
            (Some(_), None) => module.to_string(),
            (None, Some(path)) => program::file_module(path),
            _ => {
                return Err(SuiteError::at(
                    self.suite_file,
                    format!("{field}.source"),
                    "a `python` grader has either `source` (the code) or `source_path` (a file)",
                ));
            }
        };
        if let Some(threshold) = spec.pass_threshold
            && !threshold.is_finite()
        {
            return Err(SuiteError::at(
                self.suite_file,
                format!("{field}.pass_threshold"),
                "must be a number",
            ));
        }
        let python = self.python_for(field, "source")?;
        let mut grader = python
            .grader(
                &format!("openai:{module}:grade"),
                &Value::Null,
                self.give(field, grants).as_ref(),
            )
            .map_err(|e| self.program_error(field, "source", e))?;
        grader.set_isolation(spec.isolation.unwrap_or(self.isolation));
        Ok(Node::Program {
            grader,
            pass_threshold: Some(spec.pass_threshold.unwrap_or(1.0)),
        })
    }

    fn python_for(&self, field: &str, key: &str) -> Result<&Python, SuiteError> {
        // Every Python reference was gathered into the program before planning; a suite whose
        // program could not be built was reported then.
        self.python.ok_or_else(|| {
            SuiteError::at(
                self.suite_file,
                format!("{field}.{key}"),
                program::PYTHON_NOT_LOADED,
            )
        })
    }

    /// The interpreter, for a name that is no built-in and no pack function: letta-evals finds
    /// such names among those its decorators registered in the suite's Python files.
    fn bare_python(&self, name: &str) -> Option<&Python> {
        self.python
            .filter(|_| program::is_identifier(name) && !self.packs.contains_key(name))
    }

    fn program_error(
        &self,
        field: &str,
        key: &str,
        e: crate::grade::pack::PackError,
    ) -> SuiteError {
        SuiteError::at(self.suite_file, format!("{field}.{key}"), e.to_string())
    }

    fn config_error(&self, field: &str, e: ConfigError) -> SuiteError {
        let field = if e.field.is_empty() {
            field.to_string()
        } else {
            format!("{field}.{}", e.field)
        };
        SuiteError::at(self.suite_file, field, e.message)
    }
}

/// Splits a pack reference into pack and function: `pack.name` or `path/to/pack.wasm:name`.
pub fn pack_reference(name: &str) -> Option<(&str, &str)> {
    const WASM: &str = ".wasm:";
    if let Some(at) = name.rfind(WASM) {
        let split = at + WASM.len() - 1;
        return Some((&name[..split], &name[split + 1..]));
    }
    name.split_once('.')
}

fn builtin_names(key: &str) -> Vec<&'static str> {
    let families: &[Family] = if key == "function" {
        &[Family::LettaFunction, Family::EvaldeckCheck]
    } else {
        &[Family::Extractor]
    };
    families.iter().flat_map(|f| f.names()).collect()
}

fn display_name(spec: &GraderSpec) -> Option<String> {
    match spec {
        GraderSpec::Tool(t) => t.display_name.clone(),
        GraderSpec::Expectations(e) => e.display_name.clone(),
        GraderSpec::Rubric(r) => r.display_name.clone(),
        GraderSpec::All(c) | GraderSpec::Any(c) => c.display_name.clone(),
        GraderSpec::Code(c) => c.display_name.clone(),
        GraderSpec::Python(p) => p.display_name.clone(),
        GraderSpec::Openai(o) => o.display_name.clone(),
    }
}

impl Plan {
    /// Pack paths named directly in `function:`/`extractor:` (letta-evals' `file.wasm:name`),
    /// each once, with the field that names it first.
    pub fn wasm_paths(graders: &IndexMap<String, GraderSpec>) -> Vec<(String, String)> {
        let mut paths = Vec::new();
        for (key, spec) in graders {
            collect_wasm_paths(&format!("graders.{key}"), spec, &mut paths);
        }
        let mut seen = std::collections::HashSet::new();
        paths.retain(|(path, _)| seen.insert(path.clone()));
        paths
    }

    /// The interpreter's functions the plan calls (graders, extractors, case code entries and
    /// the reward composer), each once, with where its calls run; empty without Python.
    pub fn python_functions(&self) -> Vec<(u64, Isolation)> {
        (self.program_functions().iter())
            .map(ProgramFunction::isolation)
            .collect()
    }

    /// The interpreter's functions the plan calls, each once, in the order of their ids.
    pub fn program_functions(&self) -> Vec<ProgramFunction<'_>> {
        let mut found: Vec<_> = self.sandboxed().into_iter().flatten().collect();
        found.sort_unstable_by_key(|f| f.isolation().0);
        found.dedup_by_key(|f| f.isolation().0);
        found
    }

    /// Whether any grader, extractor or the reward composer runs in the sandbox (a pack's
    /// function or the interpreter's).
    pub fn has_sandboxed(&self) -> bool {
        !self.sandboxed().is_empty()
    }

    /// Each sandboxed function the plan calls, as often as it is named: an interpreter's as
    /// itself, a pack's as `None`.
    fn sandboxed(&self) -> Vec<Option<ProgramFunction<'_>>> {
        let mut found = Vec::new();
        for (_, node) in self.nodes() {
            match node {
                Node::Tool {
                    extraction,
                    function,
                } => {
                    if let Extraction::Pack(e) = extraction {
                        found.push(e.program_function());
                    }
                    if let Function::Pack(g) = function {
                        found.push(g.program_function());
                    }
                }
                Node::Judge {
                    extraction: Extraction::Pack(e),
                    ..
                } => found.push(e.program_function()),
                Node::Program { grader, .. } => found.push(grader.program_function()),
                Node::Expectations(turns) => {
                    found.extend(turns.code.iter().map(|c| c.grader.program_function()));
                }
                _ => {}
            }
        }
        if let Some(reward) = &self.reward {
            found.push(reward.program_function());
        }
        found
    }

    /// Whether any grader awaits the network (rubric graders).
    pub fn has_judge(&self) -> bool {
        (self.nodes().iter()).any(|(_, node)| matches!(node, Node::Judge { .. }))
    }

    /// The plan's judges' requests in flight and attempts repeated, summed; `None` without a
    /// rubric grader (the endpoints of a case's `llm` turn entries alone are not shown).
    pub fn judge_activity(&self) -> Option<(usize, u64)> {
        self.has_judge().then(|| {
            self.judges()
                .iter()
                .fold((0, 0), |(live, retried), (_, judge)| {
                    let (l, r) = judge.activity();
                    (live + l, retried + r)
                })
        })
    }

    /// What grading this sample will meet that is likely a mistake in the data, though not an
    /// error (a warning for `gavel validate`): each with the grader's key.
    pub fn sample_warnings(&self, sample: &crate::input::sample::Sample<'_>) -> Vec<String> {
        let mut warnings = Vec::new();
        let trajectory = sample.trajectory();
        if trajectory.format == crate::input::trajectory::Format::Letta {
            let mut unknown: Vec<&str> = trajectory
                .events()
                .filter_map(|event| match event {
                    crate::input::trajectory::Event::Other { kind }
                        if !LETTA_UNREAD_TYPES.contains(&kind.as_ref()) =>
                    {
                        Some(kind.as_ref())
                    }
                    _ => None,
                })
                .collect();
            unknown.dedup();
            if !unknown.is_empty() {
                warnings.push(format!(
                    "trajectory: message_type {} is no Letta message type; no extractor reads \
                     such a message (an assistant's reply is `assistant_message`)",
                    unknown
                        .iter()
                        .map(|k| format!("`{k}`"))
                        .collect::<Vec<_>>()
                        .join(", ")
                ));
            }
        }
        if let Some(pattern) = sample
            .expected
            .as_deref()
            .and_then(|e| e.output_matches.as_deref())
            && let Err(e) = crate::grade::python::Regex::cached(pattern, 0)
        {
            for metric in &self.metrics {
                if let Node::Expectations(_) = metric.node {
                    warnings.push(format!(
                        "graders.{}: expected.output_matches is no valid regex ({e}); that check \
                         is an error and the block fails, as evaldeck grades it",
                        metric.key
                    ));
                }
            }
        }
        let Some(ground_truth) = sample.ground_truth_text() else {
            return warnings;
        };
        for metric in &self.metrics {
            if let Node::Tool {
                function: Function::Letta(function),
                ..
            } = &metric.node
                && let Some(problem) = function.ground_truth_problem(ground_truth)
            {
                warnings.push(format!("graders.{}: {problem}", metric.key));
            }
        }
        warnings
    }

    /// Every grader with its key, a composite's sub-graders included, in suite order.
    fn nodes(&self) -> Vec<(&str, &Node)> {
        let mut out = Vec::new();
        for m in &self.metrics {
            m.node.collect(m.key, &mut out);
        }
        out
    }

    /// The first judge whose endpoint cannot be used, by grader key, and why: a rubric
    /// grader's, or one a case's `llm` entry has asked.
    pub fn judge_down(&self) -> Option<(&str, String)> {
        self.first_judge(Judge::down)
    }

    /// The first judge that failed every grading it was asked for, by grader key, with how
    /// many and the first one's reason.
    pub fn judge_never_answered(&self) -> Option<JudgeCalls> {
        JudgeCalls::never_answered(&self.judge_calls()).cloned()
    }

    /// Every judge's gradings so far, in the order [`Plan::judge_down`] looks; empty when none
    /// was asked anything.
    pub fn judge_calls(&self) -> Vec<JudgeCalls> {
        let calls: Vec<JudgeCalls> = (self.all_judges().into_iter())
            .map(|(key, judge)| judge.calls(key))
            .collect();
        if calls.iter().all(|c| c.answered == 0 && c.failed == 0) {
            return Vec::new();
        }
        calls
    }

    /// What `found` finds of the first judge, rubric graders' then those a case's `llm`
    /// entries asked, where it finds anything, with the grader's key.
    fn first_judge<T>(&self, found: impl Fn(&Judge) -> Option<T>) -> Option<(&str, T)> {
        (self.all_judges().into_iter())
            .find_map(|(key, judge)| found(judge).map(|value| (key, value)))
    }

    /// Every judge, rubric graders' then those a case's `llm` entries asked, with the grader's
    /// key.
    fn all_judges(&self) -> Vec<(&str, &Judge)> {
        let nodes = self.nodes();
        let turn_judges = nodes.iter().flat_map(|(key, node)| match node {
            Node::Expectations(graders) => graders.judges.asked().map(|j| (*key, j)).collect(),
            _ => Vec::new(),
        });
        self.judges().into_iter().chain(turn_judges).collect()
    }

    /// Whether grading `sample` may ask a model though the plan has no rubric grader: a case
    /// whose turns have `llm` entries, graded by an `expectations` grader.
    pub fn asks_model(&self, sample: &crate::input::sample::Sample<'_>) -> bool {
        sample.case.as_deref().is_some_and(|case| case.asks_model())
            && (self.nodes().iter()).any(|(_, node)| matches!(node, Node::Expectations(_)))
    }

    /// The rubric graders' judges, to check every sample against before grading.
    pub fn judges(&self) -> Vec<(&str, &Judge)> {
        (self.nodes().into_iter())
            .filter_map(|(key, node)| match node {
                Node::Judge { judge, .. } => Some((key, &**judge)),
                _ => None,
            })
            .collect()
    }
}

impl Node {
    /// This grader and, for a composite, each of its sub-graders (by their own keys), in order.
    fn collect<'a>(&'a self, key: &'a str, out: &mut Vec<(&'a str, &'a Node)>) {
        out.push((key, self));
        let children = match self {
            Node::Composite { children, .. } => children,
            Node::OpenAi { python, .. } => python,
            _ => return,
        };
        for (k, c) in children {
            c.collect(k, out);
        }
    }
}

fn collect_wasm_paths(field: &str, spec: &GraderSpec, out: &mut Vec<(String, String)>) {
    let mut add = |key: &str, name: Option<&str>| {
        if let Some(name) = name
            && name.contains(".wasm:")
            && let Some((path, _)) = pack_reference(name)
        {
            out.push((path.to_string(), format!("{field}.{key}")));
        }
    };
    match spec {
        GraderSpec::Tool(t) => {
            add("function", Some(&t.function));
            add("extractor", t.extractor.as_deref());
        }
        GraderSpec::Rubric(r) => add("extractor", Some(&r.extractor)),
        GraderSpec::Expectations(_)
        | GraderSpec::Code(_)
        | GraderSpec::Python(_)
        | GraderSpec::Openai(_) => {}
        GraderSpec::All(c) | GraderSpec::Any(c) => {
            for (key, sub) in &c.graders {
                collect_wasm_paths(&format!("{field}.graders.{key}"), sub, out);
            }
        }
    }
}
