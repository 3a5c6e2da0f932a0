//! Everything checked before any sample is graded: the suite, its files, its packs, its grader
//! names and configs, its gate and reward.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::config::reward::RewardSpec;
use crate::config::suite::{Suite, SuiteError};
use crate::fsio;
use crate::grade::judge::JudgeOptions;
use crate::grade::pack::{Limits, Pack, PackError, PackHost, PackSpec};
use crate::grade::program;
use crate::input::dataset::{Items, Reading, RowParser, SourceError};
use crate::plan::{Plan, Resolver};

/// A suite ready to run.
pub struct Prepared {
    pub suite: Suite,
    pub plan: Arc<Plan>,
    pub parser: Arc<RowParser>,
    pub dataset: PathBuf,
    pub runs: Vec<PathBuf>,
    pub packs: HashMap<String, Arc<Pack>>,
    /// SHA-256 over the suite's Python graders' sources, when it has any.
    pub python_sha256: Option<String>,
}

impl Prepared {
    /// What the suite says that gavel reads otherwise than its author may expect, and grants
    /// that cannot take effect, one notice each.
    pub fn notices(&self) -> Vec<String> {
        let mut notices = self.suite.notices();
        for (field, grants) in &self.plan.grants {
            for idle in grants.idle() {
                notices.push(format!("notice: `{field}`: {idle}"));
            }
        }
        notices
    }

    /// What the suite says about reading its dataset and recorded runs.
    pub fn reading(&self) -> Reading {
        Reading {
            format: self.suite.file.format,
            sample_per: self.suite.file.sample_per.unwrap_or_default(),
        }
    }

    /// The suite's samples: its dataset and recorded runs, read as the suite says.
    pub fn items(&self) -> Result<Items, SourceError> {
        Items::open(&self.dataset, &self.runs, self.reading())
    }
}

pub struct Options {
    /// Where compiled packs and judge replies are cached; `None` caches nothing.
    pub cache_dir: Option<PathBuf>,
    /// `--no-cache`: judge replies are neither read from nor written to the cache.
    pub no_judge_cache: bool,
    /// `--trajectories`: recorded runs named on the command line, graded in place of the
    /// suite's `trajectories:`, so that a suite written for letta-evals grades its recorded
    /// runs unchanged (as `letta-evals run --cached` regrades them).
    pub trajectories: Vec<PathBuf>,
    /// The suite serves many clients' requests (`gavel serve`): see [`JudgeOptions::serving`].
    pub serving: bool,
}

/// The default cache folder: `$GAVEL_CACHE_DIR`, else `$XDG_CACHE_HOME/gavel`, else
/// `~/.cache/gavel`; none without any of them. Never the working directory: a checkout could
/// ship a cache of its own.
pub fn default_cache_dir() -> Option<PathBuf> {
    if let Some(dir) = std::env::var_os("GAVEL_CACHE_DIR") {
        return Some(PathBuf::from(dir));
    }
    if let Some(dir) = std::env::var_os("XDG_CACHE_HOME").filter(|d| Path::new(d).is_absolute()) {
        return Some(PathBuf::from(dir).join("gavel"));
    }
    std::env::var_os("HOME").map(|home| PathBuf::from(home).join(".cache").join("gavel"))
}

/// Loads a suite and checks everything that can be checked without grading. Every mistake
/// found is returned, not just the first.
pub fn prepare(suite_path: &Path, options: &Options) -> Result<Prepared, Vec<SuiteError>> {
    let read = Suite::load_partly(suite_path)?;
    let (mut suite, mut errors) = (read.suite, read.errors);
    let runs_field = if options.trajectories.is_empty() {
        "trajectories"
    } else {
        suite.replace_trajectories(&options.trajectories);
        "--trajectories"
    };
    let file = &suite.file;

    let dataset = suite.resolve(&file.dataset);
    if let Some(why) = unreadable(&dataset) {
        errors.push(SuiteError::at(suite_path, "dataset", why));
    }
    let runs: Vec<PathBuf> = file
        .trajectories
        .as_ref()
        .map(|t| t.paths().into_iter().map(|p| suite.resolve(p)).collect())
        .unwrap_or_default();
    for (index, run) in runs.iter().enumerate() {
        if let Some(why) = unreadable(run) {
            errors.push(SuiteError::at(suite_path, runs_field, why));
        }
        // The same file twice would grade each of its runs twice, counted twice.
        let same = |other: &PathBuf| match (other.canonicalize(), run.canonicalize()) {
            (Ok(a), Ok(b)) => a == b,
            _ => other == run,
        };
        if runs[..index].iter().any(same) {
            errors.push(SuiteError::at(
                suite_path,
                runs_field,
                format!(
                    "{} is named twice: name each recorded run once",
                    run.display()
                ),
            ));
        }
    }

    let packs = load_packs(&suite, options, &mut errors);
    let (python, mut python_errors) =
        program::prepare(&suite, || pack_host(options), options.cache_dir.as_deref());
    errors.append(&mut python_errors);
    // A grader left out for a mistake of its own is still a metric the gate and reward name.
    let metric_keys: Vec<String> = (file.graders.keys().chain(&read.skipped))
        .cloned()
        .collect();
    let resolver = Resolver {
        suite_file: suite_path,
        base_dir: &suite.base_dir,
        packs: &packs,
        python: python.as_ref(),
        isolation: file.isolation.unwrap_or_default(),
        judge_options: JudgeOptions {
            cache_dir: options
                .cache_dir
                .clone()
                .filter(|_| !options.no_judge_cache),
            serving: options.serving,
            ..JudgeOptions::default()
        },
        allow: file.allow.as_ref(),
        pack_allow: file
            .packs
            .iter()
            .filter_map(|(name, spec)| Some((name.clone(), spec.allow.clone()?)))
            .collect(),
        granted: Default::default(),
    };
    let plan = match resolver.plan(&file.graders) {
        // Every grader was left out for its own mistakes, said already.
        Err(_) if file.graders.is_empty() && !read.skipped.is_empty() => None,
        Ok(mut plan) => {
            if let Some(RewardSpec::Custom { function }) = &file.reward {
                match python.as_ref().map(|python| python.reward(function)) {
                    Some(Ok(mut reward)) => {
                        reward.set_isolation(file.isolation.unwrap_or_default());
                        plan.reward = Some(reward);
                    }
                    // A file that could not be read has said why at this field already.
                    Some(Err(e)) if e.to_string() == program::PYTHON_NOT_LOADED => {}
                    Some(Err(e)) => {
                        errors.push(SuiteError::at(suite_path, "reward.function", e.to_string()))
                    }
                    None => errors.push(
                        SuiteError::at(
                            suite_path,
                            "reward.function",
                            format!("`{function}` names no Python file the suite loads"),
                        )
                        .with_hint("write it as `path/file.py:name`, relative to the suite"),
                    ),
                }
            }
            Some(plan)
        }
        Err(e) => {
            // A pack or the Python code that did not load has said why once; its functions are
            // not unknown.
            let unloaded = |e: &SuiteError| {
                let by_path = Plan::wasm_paths(&file.graders)
                    .into_iter()
                    .map(|(path, _)| path);
                e.message == program::PYTHON_NOT_LOADED
                    || (file.packs.keys().cloned().chain(by_path)).any(|name| {
                        !packs.contains_key(&name)
                            && e.message.starts_with(&format!("unknown pack `{name}`"))
                    })
            };
            errors.extend(e.into_iter().filter(|e| !unloaded(e)));
            None
        }
    };
    if let Some(gate) = &file.gate
        && let Err(problems) = gate.check(&metric_keys)
    {
        errors.extend(problems.0.into_iter().map(|p| p.in_file(suite_path)));
    }
    if let Some(reward) = &file.reward
        && let Err(problems) = reward.check(&metric_keys)
    {
        errors.extend(problems.0.into_iter().map(|p| p.in_file(suite_path)));
    }
    match plan {
        Some(plan) if errors.is_empty() => {
            let mut parser = RowParser::new(file.format, suite.base_dir.clone());
            parser.eval_rows = file.dataset_format.is_some();
            Ok(Prepared {
                plan: Arc::new(plan),
                parser: Arc::new(parser),
                dataset,
                runs,
                packs,
                python_sha256: python.as_ref().map(program::Python::sources_sha256),
                suite,
            })
        }
        _ => {
            let mut errors: Vec<SuiteError> = errors.into_iter().map(|e| suite.locate(e)).collect();
            SuiteError::sort(&mut errors);
            Err(errors)
        }
    }
}

/// Why the data file at `path` cannot be read (missing, or not a regular file), if it cannot. A
/// folder is one of session files, listed when it is read.
fn unreadable(path: &Path) -> Option<String> {
    if path.is_dir() {
        return None;
    }
    match fsio::open_regular(path, fsio::cap::STREAM) {
        Ok(_) => None,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            let shown = path.to_string_lossy();
            Some(
                match shown.find("https:/").or_else(|| shown.find("http:/")) {
                    // letta-evals downloads a dataset named by URL (Hugging Face's among them).
                    Some(at) => format!(
                        "{} is a URL: gavel reads datasets from local files only; download it \
                     (`curl -LO URL`) and name the file",
                        &shown[at..]
                    ),
                    None => format!("no such file: {shown}"),
                },
            )
        }
        Err(e) => Some(format!("cannot read {}: {e}", path.display())),
    }
}

/// For a pack file that does not exist, the `build.sh` that likely makes it: in the pack
/// path's folders, from the nearest up to the suite's folder.
fn build_script_for(suite: &Suite, pack: &Path) -> Option<PathBuf> {
    let path = suite.base_dir.join(pack);
    if path.exists() {
        return None;
    }
    path.ancestors()
        .skip(1)
        .take_while(|dir| dir.starts_with(&suite.base_dir))
        .map(|dir| Path::new(".").join(dir).join("build.sh"))
        .find(|script| script.is_file())
}

fn load_packs(
    suite: &Suite,
    options: &Options,
    errors: &mut Vec<SuiteError>,
) -> HashMap<String, Arc<Pack>> {
    let file = &suite.file;
    let mut packs = HashMap::new();
    let by_path = Plan::wasm_paths(&file.graders);
    if file.packs.is_empty() && by_path.is_empty() {
        return packs;
    }
    let host = match pack_host(options) {
        Ok(host) => host,
        Err(e) => {
            errors.push(SuiteError::at(&suite.path, "packs", e.to_string()));
            return packs;
        }
    };
    let limits = file.limits.clone().unwrap_or_default();
    let mut load = |name: &str, spec: &PackSpec, field: String, limits: &Limits| match host.load(
        name,
        spec,
        &suite.base_dir,
        limits,
    ) {
        Ok(pack) => {
            packs.insert(name.to_string(), Arc::new(pack));
        }
        Err(e) => {
            let error = SuiteError::at(&suite.path, field, e.to_string());
            errors.push(match build_script_for(suite, &spec.path) {
                Some(script) => error.with_hint(format!(
                    "the pack is not built yet: run {} first",
                    script.display()
                )),
                None => error,
            });
        }
    };
    for (name, spec) in &file.packs {
        load(name, spec, format!("packs.{name}"), &limits);
    }
    for (path, field) in by_path {
        let spec = PackSpec {
            path: PathBuf::from(&path),
            sha256: None,
            limits: None,
            allow: None,
        };
        load(&path, &spec, field, &limits);
    }
    packs
}

/// Where packs are compiled to: the cache's `packs/` folder, or nowhere without a cache.
fn pack_host(options: &Options) -> Result<PackHost, PackError> {
    match &options.cache_dir {
        Some(dir) => PackHost::new(dir),
        None => Ok(PackHost::uncached()),
    }
}
