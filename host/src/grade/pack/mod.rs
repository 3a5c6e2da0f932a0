//! Grader packs: WebAssembly components that provide graders and extractors, run in a sandbox.
//!
//! A pack exports `gavel:grader/pack@0.1.x` (`wit/gavel-grader-0.1.0`). [`PackHost::load`]
//! checks it before any sample runs (the file is a regular file of at most 256 MiB and matches
//! its pinned SHA-256, it is a component and not a core module, it targets a supported WIT
//! version), compiles it once under a deadline and a memory cap (`compile`) into an on-disk cache
//! keyed by its content and the engine's settings and authenticated by a per-user key (`cache`),
//! and asks it what it provides, within bounds (`describe`).
//! [`Pack::grader`] and [`Pack::extractor`] check a function's name, kind and config up front.
//!
//! Every call of a pack then runs in a fresh instance: nothing a call leaves behind is visible
//! to the next. An interpreter's functions (users' Python graders) run by default in a warm
//! instance per function and batch of consecutive samples (see `warm`), or fresh per call with
//! [`Isolation::Sample`]. It sees deterministic WASI only: no files, environment or HTTP unless
//! its grader's `allow:` grants them (`crate::grade::grants`), no arguments, no sockets, a wall
//! clock fixed at 2023-11-14T22:13:20Z, a monotonic clock that does not move (sleeping returns
//! at once), and a fixed random stream, so the same pack on the same data grades the same way on
//! every run.
//!
//! Each call is bounded by [`Limits`], set per suite and per pack:
//!
//! | key | default | when hit |
//! |---|---|---|
//! | `fuel` | 100,000,000 instructions ([`DEFAULT_FUEL`]) | `fuel exhausted` |
//! | `memory_mb` | 64 MiB of linear memory, all memories of the instance together ([`DEFAULT_MEMORY_MB`]) | `memory limit exceeded` |
//! | `timeout_ms` | 2,000 ms wall clock ([`DEFAULT_TIMEOUT_MS`]) | `deadline exceeded` |
//! | `output_kb` | 1,024 KiB returned ([`DEFAULT_OUTPUT_KB`]) | `output too large` |
//! | `stdout_kb` | 16 KiB each of stdout and stderr ([`DEFAULT_STDOUT_KB`]) | the rest is cut, unseen by the guest; the grade stands |
//! | `load_fuel` | 1,000,000,000 instructions to load an interpreter's program into an instance, apart from the call's `fuel` ([`DEFAULT_LOAD_FUEL`]) | `loading the program went past its limit load_fuel ...` |
//! | `load_timeout_ms` | 10,000 ms wall clock to load a program, apart from the call's `timeout_ms` ([`DEFAULT_LOAD_TIMEOUT_MS`]) | `loading the program went past its limit load_timeout_ms ...` |
//! | `tmp_mb` | 16 MiB in the writable `/tmp` of an instance granted files ([`DEFAULT_TMP_MB`]) | the guest's write fails with `ENOSPC`, as on a full disk |
//! | `tmp_files` | 1,000 files and folders in that `/tmp` ([`DEFAULT_TMP_FILES`]) | the guest's creation fails with `ENOSPC` |
//!
//! Any other failure is an `error` grade with a stable reason as well: `guest trapped: <kind>`
//! (`unreachable` for a Rust panic, `stack overflow`, `out-of-bounds memory access` for a stack
//! kept in linear memory that overflowed, ...), `guest returned error: <message>`,
//! `guest exited`, `not granted: <import>` (the guest called an import the host does not
//! grant), `invalid score: NaN`, `invalid score: 1.5 is out of range [0, 1]`,
//! `invalid metadata: ...`. The grade's metadata `sandbox` holds the fuel used, the peak memory,
//! the end (1 KiB) of what the guest wrote to stdout and to stderr, and `stdout_cut`/`stderr_cut` when a stream went
//! past its limit. A call never panics the host and never
//! disturbs another call.
//!
//! At most `engine::CALL_SLOTS` calls run at once in the process; a call waits for a slot, and
//! the instance pool has room for that many calls of the largest shape a component may have, so
//! no pack can make another's calls fail. Calls are synchronous (every type here is
//! `Send + Sync`); from async code use the `*_off_worker` methods, which run the call on a thread
//! for blocking work.

mod cache;
mod call;
mod capture;
mod child;
mod compile;
mod describe;
mod digest;
mod engine;
mod limits;
mod load;
mod process;
mod scratch;
mod waits;
mod warm;
mod wit;

use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde_json::{Map, Value};

use crate::grade::grants::{Access, Grants, RowFolderError};
use crate::grade::{Details, Grade, Status};
use crate::input::sample::Sample;
use crate::input::trajectory::{Format, Trajectory};

use crate::cache::CacheDir;
pub use crate::config::spec::{Isolation, Limits, PackSpec};
use cache::Cache;
pub use call::CallFailure;
use call::{Outcome, ProgramFailed};
pub use compile::{
    COMPILE_SUBCOMMAND, ChildFailure, DEFAULT_COMPILE_MEMORY_MB, DEFAULT_COMPILE_TIMEOUT_S,
    child_compile, compile_in_child_processes,
};
use describe::pack_info;
pub use describe::{MAX_DESCRIPTION_BYTES, MAX_FUNCTIONS, MAX_NAME_BYTES, printable};
use engine::{CallGrants, CallState};
pub use engine::{PACKAGES_MOUNT, Writes};
use limits::CallLimits;
pub use limits::{
    COMPILE_FUEL, COMPILE_TIMEOUT, DEFAULT_FUEL, DEFAULT_LOAD_FUEL, DEFAULT_LOAD_TIMEOUT_MS,
    DEFAULT_MEMORY_MB, DEFAULT_OUTPUT_KB, DEFAULT_STDOUT_KB, DEFAULT_TIMEOUT_MS, DEFAULT_TMP_FILES,
    DEFAULT_TMP_MB,
};
pub use process::{GUEST_THREAD_STACK, PROTOCOL as INTERPRETER_PROTOCOL};
use warm::Place;
pub use warm::{
    BATCH_ROWS, Batch, Kept, Started, TimedOut, block_on_here, peak_calls_in_flight, scope,
    wait_here,
};
pub use wit::Source;
use wit::{Events, Exports, PackV0Pre, Recording, v0};

/// What a pack provides, as it describes itself.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PackInfo {
    pub name: String,
    pub version: String,
    /// The `gavel:grader` version the pack was built against, e.g. `0.1.0`.
    pub wit_version: String,
    pub functions: Vec<FunctionInfo>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FunctionInfo {
    pub name: String,
    pub kind: FunctionKind,
    /// One line for `gavel list`.
    pub description: String,
    pub needs_ground_truth: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FunctionKind {
    Grader,
    Extractor,
}

impl FunctionKind {
    pub fn as_str(self) -> &'static str {
        match self {
            FunctionKind::Grader => "grader",
            FunctionKind::Extractor => "extractor",
        }
    }
}

impl fmt::Display for PackInfo {
    /// `name version (gavel:grader@X.Y.Z)`, then one line per function.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "{} {} (gavel:grader@{})",
            self.name, self.version, self.wit_version
        )?;
        let width = self
            .functions
            .iter()
            .map(|x| x.name.len())
            .max()
            .unwrap_or(0);
        for function in &self.functions {
            let ground_truth = if function.needs_ground_truth {
                " (needs ground truth)"
            } else {
                ""
            };
            writeln!(
                f,
                "  {:<9}  {:<width$}  {}{ground_truth}",
                function.kind.as_str(),
                function.name,
                function.description,
            )?;
        }
        Ok(())
    }
}

/// Why a pack, or one of its functions, cannot be used. Every message names the pack.
#[derive(Debug, thiserror::Error)]
pub enum PackError {
    #[error("pack `{pack}`: cannot read {}: {source}", path.display())]
    Read {
        pack: String,
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("pack `{pack}`: sha256 `{value}` is not 64 hexadecimal digits")]
    BadSha256 { pack: String, value: String },
    #[error(
        "pack `{pack}`: {} does not match its pinned sha256: expected {expected}, the file has \
         {actual}",
        path.display()
    )]
    Sha256Mismatch {
        pack: String,
        path: PathBuf,
        expected: String,
        actual: String,
    },
    #[error("pack `{pack}`: {} is {what}", path.display())]
    NotAComponent {
        pack: String,
        path: PathBuf,
        what: &'static str,
    },
    #[error(
        "pack `{pack}`: {} does not export gavel:grader/pack (it exports: {})",
        path.display(),
        if exports.is_empty() { "nothing".to_string() } else { exports.join(", ") }
    )]
    NotAPack {
        pack: String,
        path: PathBuf,
        exports: Vec<String>,
    },
    #[error(
        "pack `{pack}`: {} targets gavel:grader@{found}, which this gavel does not support \
         (supported: {})",
        path.display(),
        load::SUPPORTED_WIT.iter().map(|v| format!("gavel:grader@{v}.x")).collect::<Vec<_>>().join(", ")
    )]
    UnsupportedWit {
        pack: String,
        path: PathBuf,
        found: String,
    },
    #[error("pack `{pack}`: cannot compile {}: {}", path.display(), printable(message))]
    Compile {
        pack: String,
        path: PathBuf,
        message: String,
    },
    #[error("pack `{pack}`: cannot compile {}: {what}", path.display())]
    CompileLimit {
        pack: String,
        path: PathBuf,
        what: String,
    },
    #[error("pack `{pack}`: cannot write the compiled artifact {}: {source}", path.display())]
    Cache {
        pack: String,
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("pack `{pack}`: cannot link {}: {}", path.display(), printable(message))]
    Link {
        pack: String,
        path: PathBuf,
        message: String,
    },
    #[error("pack `{pack}`: limits.{field}: {message}")]
    InvalidLimit {
        pack: String,
        field: &'static str,
        message: String,
    },
    #[error("pack `{pack}`: describe failed: {}", printable(reason))]
    Describe { pack: String, reason: String },
    #[error("pack `{pack}` has no function `{function}`; it has: {}", available.join(", "))]
    UnknownFunction {
        pack: String,
        function: String,
        available: Vec<String>,
    },
    #[error("pack `{pack}`: `{function}` is {} {}, not {} {}", article(*actual), actual.as_str(), article(*wanted), wanted.as_str())]
    WrongKind {
        pack: String,
        function: String,
        actual: FunctionKind,
        wanted: FunctionKind,
    },
    #[error("pack `{pack}`: config of `{function}` rejected: {message}")]
    ConfigRejected {
        pack: String,
        function: String,
        message: String,
    },
    /// The user's program rejected the function: the message says where (`path:line: `) when
    /// the interpreter knows.
    #[error("{message}")]
    Program { message: String },
    /// The user's program could not be loaded (the message is located as for `Program`).
    #[error("{message}")]
    ProgramNotLoaded { message: String },
    #[error("cannot create the WebAssembly sandbox: {0}")]
    Sandbox(engine::SandboxUnavailable),
    #[error(transparent)]
    CacheDir(#[from] crate::cache::CacheError),
}

fn article(kind: FunctionKind) -> &'static str {
    match kind {
        FunctionKind::Grader => "a",
        FunctionKind::Extractor => "an",
    }
}

/// Loads packs. Holds the cache of compiled components, if any; the engine behind it is shared
/// by the whole process.
pub struct PackHost {
    cache: Option<Cache>,
}

impl PackHost {
    /// A host that keeps compiled components in the `packs/` folder of the cache folder
    /// `cache_dir`, authenticated with the per-user key of [`crate::cache::key_file`]. Without
    /// a key file (no `$XDG_CONFIG_HOME` nor `$HOME`) packs are compiled on every load.
    pub fn new(cache_dir: &Path) -> Result<PackHost, PackError> {
        engine::sandbox().map_err(PackError::Sandbox)?;
        let Some(cache) = CacheDir::open(cache_dir)? else {
            return Ok(PackHost::uncached());
        };
        Ok(PackHost {
            cache: Some(Cache::open(&cache)?),
        })
    }

    /// A host that compiles every pack it loads and keeps nothing on disk.
    pub fn uncached() -> PackHost {
        PackHost { cache: None }
    }

    /// Checks, compiles (or loads from the cache) and describes the pack `name`; `spec.path` is
    /// relative to `base_dir`, and `spec.limits` apply over `suite_limits`.
    pub fn load(
        &self,
        name: &str,
        spec: &PackSpec,
        base_dir: &Path,
        suite_limits: &Limits,
    ) -> Result<Pack, PackError> {
        self.load_writing(Writes::Few, name, spec, base_dir, suite_limits)
    }

    /// As [`PackHost::load`], for a component whose calls write as `writes` says.
    pub fn load_writing(
        &self,
        writes: Writes,
        name: &str,
        spec: &PackSpec,
        base_dir: &Path,
        suite_limits: &Limits,
    ) -> Result<Pack, PackError> {
        let limits = CallLimits::resolve(
            name,
            spec.limits.as_ref().unwrap_or(&Limits::default()),
            suite_limits,
        )?;
        let file = load::read(name, &base_dir.join(&spec.path), spec.sha256.as_deref())?;
        let sandbox = engine::sandbox().map_err(PackError::Sandbox)?;
        let component = load::compiled(sandbox, writes, name, &file, self.cache.as_ref())?;
        Pack::new(name, &file.path, &file.sha256, &component, limits)
    }

    /// As [`PackHost::load_writing`], for the component at `path` whose SHA-256 is known to be
    /// `sha256` (checked under this user's key, as the cached interpreter's is), loaded from its
    /// compiled artifact without reading the component; `None` when the cache holds no artifact
    /// for it, so that the caller reads the file and checks it.
    pub fn load_compiled(
        &self,
        writes: Writes,
        name: &str,
        path: &Path,
        sha256: &str,
        suite_limits: &Limits,
    ) -> Result<Option<Pack>, PackError> {
        let Some(cache) = &self.cache else {
            return Ok(None);
        };
        let sandbox = engine::sandbox().map_err(PackError::Sandbox)?;
        let Some(component) = load::cached(sandbox, writes, sha256, cache) else {
            return Ok(None);
        };
        let limits = CallLimits::resolve(name, &Limits::default(), suite_limits)?;
        Pack::new(name, path, sha256, &component, limits).map(Some)
    }

    /// Checks and describes the component at `path`, for `gavel inspect` and `gavel list
    /// --pack`, through the cache: an interpreter compiled to a component (Python, JavaScript)
    /// takes seconds to compile, and the artifact serves `gavel run` later too.
    pub fn inspect(&self, path: &Path) -> Result<PackInfo, PackError> {
        let name = path.display().to_string();
        let file = load::read(&name, path, None)?;
        let sandbox = engine::sandbox().map_err(PackError::Sandbox)?;
        let component = load::compiled(sandbox, Writes::Few, &name, &file, self.cache.as_ref())?;
        let limits = CallLimits::resolve(&name, &Limits::default(), &Limits::default())?;
        Ok(
            Pack::new(&name, &file.path, &file.sha256, &component, limits)?
                .info()
                .clone(),
        )
    }
}

/// A loaded pack, ready to run calls from many threads at once.
#[derive(Clone)]
pub struct Pack {
    inner: Arc<PackInner>,
}

struct PackInner {
    name: String,
    /// Lowercase hex SHA-256 of the pack file.
    sha256: String,
    info: PackInfo,
    engine: wasmtime::Engine,
    pre: wasmtime::component::InstancePre<CallState>,
    exports: Exports,
    /// The version of `gavel:interpreter` it speaks, for gavel's Python interpreter.
    protocol: Option<String>,
    limits: CallLimits,
}

impl Pack {
    fn new(
        name: &str,
        path: &Path,
        sha256: &str,
        component: &wasmtime::component::Component,
        limits: CallLimits,
    ) -> Result<Pack, PackError> {
        let pool = engine::sandbox()
            .map_err(PackError::Sandbox)?
            .pool(component);
        let engine = pool.engine.clone();
        let exported = load::exported_instances(&engine, component);
        let wit_version = load::wit_version(name, path, &exported)?;
        let protocol =
            load::export_version(&exported, process::CHILD_INTERFACE).map(str::to_string);
        let link_error = |e: wasmtime::Error| PackError::Link {
            pack: name.to_string(),
            path: path.to_path_buf(),
            message: format!("{e:#}"),
        };
        let pre = pool
            .pack_linker(component)
            .and_then(|linker| linker.instantiate_pre(component))
            .map_err(link_error)?;
        // 0.1 packs are checked by bindgen's bindings here, 0.2 ones export by export when
        // described.
        if !wit_version.starts_with("0.2.") {
            PackV0Pre::new(pre.clone()).map_err(link_error)?;
        }
        let Outcome { result, .. } = call::run(
            &engine,
            &pre,
            &limits,
            CallGrants::default(),
            |instance, store| Exports::describe(instance, store, &wit_version),
        );
        let (exports, described) = result.map_err(|reason| PackError::Describe {
            pack: name.to_string(),
            reason: reason.to_string(),
        })?;
        let info = pack_info(name, described, wit_version)?;
        Ok(Pack {
            inner: Arc::new(PackInner {
                name: name.to_string(),
                sha256: sha256.to_string(),
                info,
                engine,
                pre,
                exports,
                protocol,
                limits,
            }),
        })
    }

    pub fn info(&self) -> &PackInfo {
        &self.inner.info
    }

    /// Lowercase hex SHA-256 of the pack file.
    pub fn sha256(&self) -> &str {
        &self.inner.sha256
    }

    /// The grader `name` with `config` (a JSON object, or null for none), checked by the pack.
    pub fn grader(&self, name: &str, config: &Value) -> Result<PackGrader, PackError> {
        let function = self.function(None, name, FunctionKind::Grader, config, None)?;
        Ok(PackGrader { function })
    }

    /// The extractor `name` with `config` (a JSON object, or null for none), checked by the pack.
    pub fn extractor(&self, name: &str, config: &Value) -> Result<PackExtractor, PackError> {
        let function = self.function(None, name, FunctionKind::Extractor, config, None)?;
        Ok(PackExtractor { function })
    }

    /// The version of `gavel:interpreter` the pack speaks (that of the `child` interface it
    /// exports), if any: gavel's Python interpreter speaks [`INTERPRETER_PROTOCOL`].
    pub fn interpreter_protocol(&self) -> Option<&str> {
        self.inner.protocol.as_deref()
    }

    /// Whether the pack is an interpreter: it runs a [`Program`] handed to it as data.
    pub fn is_interpreter(&self) -> bool {
        self.inner.exports.is_interpreter()
    }

    /// Sets each of `sources`' code as this interpreter compiles it, so that no call compiles
    /// it again. Sources that do not compile are left as they are: loading them then reports
    /// why, at their place, as it would have. When the compile fails as a whole (its budget,
    /// a trap), no source gets its code, and the error says why.
    ///
    /// The compiler runs once, on every source of the suite together, on a budget that grows
    /// with their size ([`CallLimits::compiling`]) rather than a grading call's: a folder of a
    /// few hundred kB of Python outgrows a call's fuel, and then no source would have its code
    /// and every load would compile its program again.
    pub fn compile(&self, sources: &mut [Source]) -> Result<(), CallFailure> {
        let bytes = sources.iter().map(|s| s.text.len() as u64).sum();
        self.compile_within(sources, &self.inner.limits.compiling(bytes))
    }

    /// [`Pack::compile`] for the files of Python packages, once when they are unpacked: within
    /// bounds of their own ([`COMPILE_FUEL`], [`COMPILE_TIMEOUT`]), since packages hold far
    /// more source than a grader.
    pub fn compile_packages(&self, sources: &mut [Source]) -> Result<(), CallFailure> {
        let limits = self.inner.limits.widened(COMPILE_FUEL, COMPILE_TIMEOUT);
        self.compile_within(sources, &limits)
    }

    fn compile_within(
        &self,
        sources: &mut [Source],
        limits: &CallLimits,
    ) -> Result<(), CallFailure> {
        let pack = &self.inner;
        let Outcome { result, .. } = call::run(
            &pack.engine,
            &pack.pre,
            limits,
            CallGrants::default(),
            |instance, store| pack.exports.compile(instance, store, sources),
        );
        let codes = result?.map_err(CallFailure::Program)?;
        if codes.len() != sources.len() {
            return Err(CallFailure::Host(format!(
                "{} compiled sources for {}",
                codes.len(),
                sources.len()
            )));
        }
        for (source, code) in sources.iter_mut().zip(codes) {
            source.code = code;
        }
        Ok(())
    }

    /// The grader `name` of `program`, run by this interpreter; the program is loaded and the
    /// function checked by the interpreter now, as before every call.
    pub fn program_grader(
        &self,
        program: &Arc<Program>,
        name: &str,
        config: &Value,
        grants: Option<&Arc<Grants>>,
    ) -> Result<PackGrader, PackError> {
        let function = self.function(Some(program), name, FunctionKind::Grader, config, grants)?;
        Ok(PackGrader { function })
    }

    /// The extractor `name` of `program` (see [`Pack::program_grader`]).
    pub fn program_extractor(
        &self,
        program: &Arc<Program>,
        name: &str,
        config: &Value,
        grants: Option<&Arc<Grants>>,
    ) -> Result<PackExtractor, PackError> {
        let function =
            self.function(Some(program), name, FunctionKind::Extractor, config, grants)?;
        Ok(PackExtractor { function })
    }

    /// The reward composer `name` of `program`, checked by the interpreter now.
    pub fn program_reward(
        &self,
        program: &Arc<Program>,
        name: &str,
    ) -> Result<PackReward, PackError> {
        let function = self.function(
            Some(program),
            name,
            FunctionKind::Grader,
            &Value::Null,
            None,
        )?;
        Ok(PackReward { function })
    }

    fn function(
        &self,
        program: Option<&Arc<Program>>,
        name: &str,
        kind: FunctionKind,
        config: &Value,
        grants: Option<&Arc<Grants>>,
    ) -> Result<Function, PackError> {
        let config = self.checked(program, name, kind, config, grants)?;
        Ok(Function {
            pack: self.inner.clone(),
            id: warm::next_function_id(),
            name: name.to_string(),
            config,
            program: program.cloned(),
            grants: grants.cloned(),
            isolation: Isolation::Batch,
        })
    }

    /// The config as JSON text, once the function exists, has the kind and accepts it. An
    /// interpreter's functions are the program's: the interpreter alone can tell.
    fn checked(
        &self,
        program: Option<&Arc<Program>>,
        name: &str,
        wanted: FunctionKind,
        config: &Value,
        grants: Option<&Arc<Grants>>,
    ) -> Result<String, PackError> {
        let pack = &self.inner;
        if let Some(program) = program {
            return self.checked_program(program, name, config, grants);
        }
        let function = pack
            .info
            .functions
            .iter()
            .find(|f| f.name == name)
            .ok_or_else(|| PackError::UnknownFunction {
                pack: pack.name.clone(),
                function: name.to_string(),
                available: pack.info.functions.iter().map(|f| f.name.clone()).collect(),
            })?;
        if function.kind != wanted {
            return Err(PackError::WrongKind {
                pack: pack.name.clone(),
                function: name.to_string(),
                actual: function.kind,
                wanted,
            });
        }
        let rejected = |message: String| PackError::ConfigRejected {
            pack: pack.name.clone(),
            function: name.to_string(),
            message: printable(&message),
        };
        let config = match config {
            Value::Null => "{}".to_string(),
            Value::Object(_) => config.to_string(),
            _ => return Err(rejected("the config must be a mapping".to_string())),
        };
        let Outcome { result, .. } = call::run(
            &pack.engine,
            &pack.pre,
            &pack.limits,
            CallGrants::default(),
            |instance, store| pack.exports.check_config(instance, store, name, &config),
        );
        match result {
            Ok(Ok(())) => Ok(config),
            Ok(Err(message)) => Err(rejected(message)),
            Err(reason) => Err(rejected(format!("check-config failed: {reason}"))),
        }
    }

    fn checked_program(
        &self,
        program: &Program,
        name: &str,
        config: &Value,
        grants: Option<&Arc<Grants>>,
    ) -> Result<String, PackError> {
        let pack = &self.inner;
        let config = match config {
            Value::Null => "{}".to_string(),
            _ => config.to_string(),
        };
        // The program's top level runs here as before each call: with what its calls reach.
        let access = grants.map(|grants| grants.access());
        let reach = CallGrants {
            access: access.as_ref(),
            network: grants,
            packages: program.packages.as_deref(),
            ..CallGrants::default()
        };
        let Outcome { result, .. } = call::run(
            &pack.engine,
            &pack.pre,
            &pack.limits,
            reach,
            |instance, store| match program.load(&pack.exports, instance, store, &pack.limits)? {
                Ok(()) => Ok(pack
                    .exports
                    .check_config(instance, store, name, &config)?
                    .map_err(|message| PackError::Program { message })),
                Err(ProgramFailed(message)) => Ok(Err(PackError::ProgramNotLoaded { message })),
            },
        );
        match result {
            Ok(Ok(())) => Ok(config),
            Ok(Err(e)) => Err(e),
            Err(reason) => Err(PackError::ProgramNotLoaded {
                message: format!("loading the program failed: {reason}"),
            }),
        }
    }
}

/// User code an interpreter pack loads before each call: the files it may import, and the one
/// module whose top level runs. Each grader's program is loaded alone into its call's fresh
/// instance, so nothing another program's code does reaches it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Program {
    /// Shared by the programs whose entries are in one folder.
    pub sources: Arc<[Source]>,
    pub entry: String,
    /// The folder of the program's Python packages (`requirements:`), mounted read-only in
    /// its calls; none for a program without requirements, whose calls see no files.
    pub packages: Option<std::path::PathBuf>,
}

impl Program {
    /// Loads the program into `instance` on a budget of its own (`load_fuel`,
    /// `load_timeout_ms`: importing packages costs far more than most calls), then gives the
    /// store the call's own fuel and deadline under `limits`. A load that runs out of its
    /// budget fails as a program that does not load, saying which limit to raise.
    fn load(
        &self,
        exports: &Exports,
        instance: &wasmtime::component::Instance,
        store: &mut wasmtime::Store<CallState>,
        limits: &CallLimits,
    ) -> wasmtime::Result<Result<(), ProgramFailed>> {
        call::arm(store, &limits.loading())?;
        let loaded = match exports.load(
            instance,
            store,
            &self.sources,
            std::slice::from_ref(&self.entry),
        ) {
            Ok(loaded) => loaded,
            Err(error) => {
                let limit = match call::classify(&error) {
                    CallFailure::Fuel => format!("load_fuel ({})", limits.load_fuel),
                    CallFailure::Deadline => {
                        format!("load_timeout_ms ({})", limits.load_timeout_ms)
                    }
                    _ => return Err(error),
                };
                return Ok(Err(ProgramFailed(format!(
                    "loading the program went past its limit {limit}, apart from the call's own: raise \
                     it in the suite's `limits:`"
                ))));
            }
        };
        call::arm(store, limits)?;
        Ok(loaded.map_err(ProgramFailed))
    }
}

/// An interpreter's function of a plan: a grader, extractor or reward composer of a program.
#[derive(Clone, Copy)]
pub struct ProgramFunction<'a>(&'a Function);

impl ProgramFunction<'_> {
    /// Its id and where its calls run.
    pub fn isolation(&self) -> (u64, Isolation) {
        (self.0.id, self.0.isolation)
    }
}

/// One function of a pack with its checked config.
#[derive(Clone)]
struct Function {
    pack: Arc<PackInner>,
    /// Its own: a warm instance serves one function.
    id: u64,
    name: String,
    config: String,
    /// Loaded into the instance before the function runs, for an interpreter.
    program: Option<Arc<Program>>,
    /// What its calls may reach; nothing when `None`.
    grants: Option<Arc<Grants>>,
    /// Where an interpreter's function runs (see [`warm`]).
    isolation: Isolation,
}

impl Function {
    /// What a call grading `sample` may reach, or why the row may not have it.
    fn access(&self, sample: &Sample<'_>) -> Result<Option<Access>, RowFolderError> {
        self.grants
            .as_ref()
            .map(|grants| grants.access_for(sample.row))
            .transpose()
    }

    /// Runs `f` where `place` says, in a fresh instance or in a warm one of the program, with
    /// what `access` grants.
    fn run<T: Send>(
        &self,
        place: Place<'_>,
        access: Option<&Access>,
        f: impl FnOnce(
            &Exports,
            &wasmtime::component::Instance,
            &mut wasmtime::Store<CallState>,
        ) -> wasmtime::Result<T>
        + Send,
    ) -> Outcome<T> {
        let exports = &self.pack.exports;
        self.reaching(access, |reach| {
            if let (Some(slot), Some(program)) = (place, &self.program) {
                return warm::call(self, program, slot, reach, f);
            }
            call::run(
                &self.pack.engine,
                &self.pack.pre,
                &self.pack.limits,
                reach,
                |instance, store| {
                    if let Some(program) = &self.program
                        && let Err(failed) =
                            program.load(exports, instance, store, &self.pack.limits)?
                    {
                        return Err(wasmtime::Error::new(failed));
                    }
                    f(exports, instance, store)
                },
            )
        })
    }

    /// `f` given what a call of this function reaching `access` may reach: its grants, its
    /// program's packages and, for a program, its interpreter for the processes it starts.
    fn reaching<T>(&self, access: Option<&Access>, f: impl FnOnce(CallGrants<'_>) -> T) -> T {
        // A program's processes are new instances of its interpreter.
        let processes = self
            .program
            .as_ref()
            .map(|_| process::Processes::new(&self.pack.pre));
        f(CallGrants {
            access,
            network: self.grants.as_ref(),
            packages: self.program.as_ref().and_then(|p| p.packages.as_deref()),
            processes: processes.as_ref(),
            stdio: None,
        })
    }

    /// What each call of a warm function reaches, whatever its row ([`Function::warm_id`]).
    fn warm_access(&self) -> Option<Access> {
        self.grants.as_ref().map(|grants| grants.access())
    }

    /// Its id when its calls run in a batch's warm instance: an interpreter's function in
    /// batch isolation. A function whose grants depend on the row (a folder the row chooses)
    /// runs fresh.
    fn warm_id(&self) -> Option<u64> {
        let per_row = self
            .grants
            .as_ref()
            .is_some_and(|grants| grants.varies_by_row());
        let program = self.program_function()?;
        (program.isolation() == (self.id, Isolation::Batch) && !per_row).then_some(self.id)
    }

    fn program_function(&self) -> Option<ProgramFunction<'_>> {
        self.program.as_ref().map(|_| ProgramFunction(self))
    }

    /// Which of its grading calls read the run's events, as the interpreter's forms (the first
    /// part of its name, see `host/runtime/python/gavel_runtime`) read them: a letta `@grader`
    /// reads the row and the submission only, an evaldeck function or class the run's evaldeck
    /// recording when it has one (what crosses of the recording itself: [`Function::recording`]);
    /// a pack's functions receive everything.
    fn events(&self) -> Events {
        let form = self.name.split(':').next();
        match (&self.program, form) {
            (Some(_), Some("letta-grader")) => Events::Never,
            (Some(_), Some("evaldeck-function" | "evaldeck-class")) => {
                Events::Unless(Format::Evaldeck)
            }
            _ => Events::Always,
        }
    }

    /// What its calls read of the row's `trajectory` member, the run as the row recorded it, as
    /// the interpreter's forms read it: OpenAI's graders the row whole (their item), an
    /// evaldeck function or class an evaldeck recording, a letta extractor a letta one, and
    /// nothing of it otherwise; a pack's functions receive everything.
    fn recording(&self) -> Recording {
        let form = self.name.split(':').next();
        match (&self.program, form) {
            (None, _) => Recording::Sent,
            (Some(_), Some("openai")) => Recording::RowOnly,
            (Some(_), Some("evaldeck-function" | "evaldeck-class")) => {
                Recording::Reads(Format::Evaldeck)
            }
            (Some(_), Some("letta-extractor")) => Recording::Reads(Format::Letta),
            (Some(_), Some("letta-grader" | "letta-reward")) => Recording::Unread,
            (Some(_), _) => Recording::Sent,
        }
    }

    fn output_limit(&self) -> usize {
        self.pack.limits.output_bytes
    }
}

/// A pack's grader, ready to grade from many threads at once.
#[derive(Clone)]
pub struct PackGrader {
    function: Function,
}

impl PackGrader {
    /// This grader, its calls reaching what `grants` grants (a pack's functions reach
    /// nothing before they grade).
    pub fn granted(mut self, grants: Option<Arc<Grants>>) -> PackGrader {
        self.function.grants = grants;
        self
    }

    /// Grades one sample in a fresh sandbox. Every failure is an `error` grade with a stable
    /// reason (see the module documentation).
    pub fn grade(
        &self,
        sample: &Sample<'_>,
        trajectory: &Trajectory<'_>,
        submission: &str,
    ) -> Grade {
        let access = match self.function.access(sample) {
            Ok(access) => access,
            Err(why) => return Grade::error(why.to_string()).with_submission(submission),
        };
        let args = (self.function.pack.exports).grade_args(
            sample,
            trajectory,
            self.function.events(),
            self.function.recording(),
        );
        self.grade_wit(&args, submission, None, access.as_ref())
    }

    /// [`PackGrader::grade`] for an async caller: the call runs on a thread made for blocking
    /// work, never on the caller's async worker.
    pub async fn grade_off_worker(
        &self,
        sample: &Sample<'_>,
        trajectory: &Trajectory<'_>,
        submission: &str,
    ) -> Grade {
        let access = match self.function.access(sample) {
            Ok(access) => access,
            Err(why) => return Grade::error(why.to_string()).with_submission(submission),
        };
        let grader = self.clone();
        let args = (self.function.pack.exports).grade_args(
            sample,
            trajectory,
            self.function.events(),
            self.function.recording(),
        );
        let submission = submission.to_string();
        warm::off_worker(self.function.warm_id(), move |place| {
            grader.grade_wit(&args, &submission, place, access.as_ref())
        })
        .await
    }

    /// Runs its calls as `isolation` says (an interpreter's; a pack's calls are always fresh).
    pub fn set_isolation(&mut self, isolation: Isolation) {
        self.function.isolation = isolation;
    }

    /// An interpreter's function (`None` for a pack's).
    pub fn program_function(&self) -> Option<ProgramFunction<'_>> {
        self.function.program_function()
    }

    fn grade_wit(
        &self,
        args: &wit::Args,
        submission: &str,
        place: Place<'_>,
        access: Option<&Access>,
    ) -> Grade {
        let f = &self.function;
        let Outcome { result, usage } = f.run(place, access, |exports, instance, store| {
            exports.grade(instance, store, (&f.name, args, submission, &f.config))
        });
        let grade = match result {
            Ok(Ok(grade)) => accept_grade(grade, f.output_limit()),
            Ok(Err(message)) if message.len() > f.output_limit() => {
                Grade::error(GuestError::OutputTooLarge.to_string())
            }
            Ok(Err(message)) => Grade::error(GuestError::Returned(message).to_string()),
            Err(reason) => Grade::error(reason.to_string()),
        };
        grade
            .with_submission(submission)
            .with_metadata("sandbox", usage.metadata())
    }
}

/// How deep a grade's JSON values may nest: a result line wraps them a few levels deeper, and
/// is read back (by `--resume`, `report`, `diff`) within serde's limit of 128.
const MAX_NESTING: usize = 64;

/// How many arrays and objects deep `value` nests (0 for a scalar).
fn nesting(value: &Value) -> usize {
    let inner = match value {
        Value::Array(items) => items.iter().map(nesting).max(),
        Value::Object(map) => map.values().map(nesting).max(),
        _ => return 0,
    };
    1 + inner.unwrap_or(0)
}

/// The guest's grade, once its score, sizes and JSON texts are valid.
fn accept_grade(grade: v0::Grade, output_limit: usize) -> Grade {
    let texts = [
        Some(&grade.rationale),
        grade.metadata.as_ref(),
        grade.expected.as_ref(),
        grade.actual.as_ref(),
    ];
    if texts.iter().flatten().map(|t| t.len()).sum::<usize>() > output_limit {
        return Grade::error("output too large");
    }
    let score = grade.score;
    if score.is_nan() {
        return Grade::error("invalid score: NaN");
    }
    if !(0.0..=1.0).contains(&score) {
        return Grade::error(format!("invalid score: {score} is out of range [0, 1]"));
    }
    let too_deep = |field: &str| {
        format!(
            "invalid {field}: nested deeper than {MAX_NESTING} levels, which results.jsonl \
             could not be read back with"
        )
    };
    let json = |field: &str, text: Option<String>| match text.as_deref().map(serde_json::from_str) {
        None => Ok(None),
        Some(Ok(value)) if nesting(&value) > MAX_NESTING => Err(too_deep(field)),
        Some(Ok(value)) => Ok(Some(value)),
        // Deeper still, the parser stops first.
        Some(Err(e)) if e.to_string().starts_with("recursion limit exceeded") => {
            Err(too_deep(field))
        }
        Some(Err(e)) => Err(format!("invalid {field}: {e}")),
    };
    let metadata = match json("metadata", grade.metadata) {
        Ok(None) => Map::new(),
        Ok(Some(Value::Object(map))) => map,
        Ok(Some(_)) => return Grade::error("invalid metadata: not a JSON object"),
        Err(reason) => return Grade::error(reason),
    };
    let (expected, actual) = match (
        json("expected", grade.expected),
        json("actual", grade.actual),
    ) {
        (Ok(expected), Ok(actual)) => (expected, actual),
        (Err(reason), _) | (_, Err(reason)) => return Grade::error(reason),
    };
    let status = match grade.status {
        Some(v0::Status::Pass) => Status::Pass,
        Some(v0::Status::Fail) => Status::Fail,
        Some(v0::Status::Error) => Status::Error,
        Some(v0::Status::Skip) => Status::Skip,
        None if score >= 1.0 => Status::Pass,
        None => Status::Fail,
    };
    Grade::new(score, status, grade.rationale).with_details(Details {
        metadata,
        checks: Vec::new(),
        expected,
        actual,
    })
}

/// Why a pack function gave no answer: the call failed, or the guest's answer is refused.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum GuestError {
    #[error(transparent)]
    Call(#[from] CallFailure),
    #[error("output too large")]
    OutputTooLarge,
    #[error("guest returned error: {0}")]
    Returned(String),
    /// The row chose what its grants do not allow.
    #[error("{0}")]
    Refused(String),
}

/// A pack's extractor, ready to extract from many threads at once.
#[derive(Clone)]
pub struct PackExtractor {
    function: Function,
}

impl PackExtractor {
    /// This extractor, its calls reaching what `grants` grants.
    pub fn granted(mut self, grants: Option<Arc<Grants>>) -> PackExtractor {
        self.function.grants = grants;
        self
    }

    /// Extracts a submission in a fresh sandbox: `Ok(None)` when there is nothing to extract,
    /// `Err` with a stable reason (see the module documentation) when the call failed.
    pub fn extract(
        &self,
        sample: &Sample<'_>,
        trajectory: &Trajectory<'_>,
    ) -> Result<Option<String>, GuestError> {
        let access = self
            .function
            .access(sample)
            .map_err(|why| GuestError::Refused(why.to_string()))?;
        let args = (self.function.pack.exports).args(
            sample,
            trajectory,
            Events::Always,
            self.function.recording(),
        );
        self.extract_wit(&args, None, access.as_ref())
    }

    /// [`PackExtractor::extract`] for an async caller: the call runs on a thread made for
    /// blocking work, never on the caller's async worker.
    pub async fn extract_off_worker(
        &self,
        sample: &Sample<'_>,
        trajectory: &Trajectory<'_>,
    ) -> Result<Option<String>, GuestError> {
        let access = self
            .function
            .access(sample)
            .map_err(|why| GuestError::Refused(why.to_string()))?;
        let extractor = self.clone();
        let args = (self.function.pack.exports).args(
            sample,
            trajectory,
            Events::Always,
            self.function.recording(),
        );
        warm::off_worker(self.function.warm_id(), move |place| {
            extractor.extract_wit(&args, place, access.as_ref())
        })
        .await
    }

    /// Runs its calls as `isolation` says (see [`PackGrader::set_isolation`]).
    pub fn set_isolation(&mut self, isolation: Isolation) {
        self.function.isolation = isolation;
    }

    /// An interpreter's function (`None` for a pack's).
    pub fn program_function(&self) -> Option<ProgramFunction<'_>> {
        self.function.program_function()
    }

    fn extract_wit(
        &self,
        args: &wit::Args,
        place: Place<'_>,
        access: Option<&Access>,
    ) -> Result<Option<String>, GuestError> {
        let f = &self.function;
        let Outcome { result, .. } = f.run(place, access, |exports, instance, store| {
            exports.extract(instance, store, (&f.name, args, &f.config))
        });
        match result? {
            Ok(Some(text)) | Err(text) if text.len() > f.output_limit() => {
                Err(GuestError::OutputTooLarge)
            }
            Ok(extracted) => Ok(extracted),
            Err(message) => Err(GuestError::Returned(message)),
        }
    }
}

/// An interpreter's reward composer, ready to run from many threads at once.
#[derive(Clone)]
pub struct PackReward {
    function: Function,
}

impl PackReward {
    /// The reward of `context` (a JSON object) in a fresh sandbox: the composer's JSON result
    /// (a number, or an object with a `reward`), or a stable reason. The call runs on a thread
    /// made for blocking work, as graders' do.
    pub async fn reward_off_worker(&self, context: String) -> Result<String, GuestError> {
        let reward = self.clone();
        warm::off_worker(self.function.warm_id(), move |place| {
            reward.reward(&context, place)
        })
        .await
    }

    /// Runs its calls as `isolation` says (see [`PackGrader::set_isolation`]).
    pub fn set_isolation(&mut self, isolation: Isolation) {
        self.function.isolation = isolation;
    }

    /// An interpreter's function (`None` for a pack's).
    pub fn program_function(&self) -> Option<ProgramFunction<'_>> {
        self.function.program_function()
    }

    fn reward(&self, context: &str, place: Place<'_>) -> Result<String, GuestError> {
        let f = &self.function;
        let Outcome { result, .. } = f.run(place, None, |exports, instance, store| {
            exports.reward(instance, store, &f.name, context)
        });
        match result? {
            Ok(text) | Err(text) if text.len() > f.output_limit() => {
                Err(GuestError::OutputTooLarge)
            }
            Ok(json) => Ok(json),
            Err(message) => Err(GuestError::Returned(message)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn grade(score: f64) -> v0::Grade {
        v0::Grade {
            score,
            status: None,
            rationale: "r".to_string(),
            metadata: None,
            expected: None,
            actual: None,
        }
    }

    fn loaded(path: &str, function: &str) -> PackGrader {
        let cache = std::env::temp_dir().join("gavel-pack-unit-cache");
        let spec = PackSpec {
            path: path.into(),
            sha256: None,
            limits: None,
            allow: None,
        };
        PackHost::new(&cache)
            .and_then(|host| host.load(function, &spec, Path::new("/"), &Limits::default()))
            .and_then(|pack| pack.grader(function, &Value::Null))
            .unwrap_or_else(|e| panic!("{e}"))
    }

    #[test]
    fn every_call_on_a_reused_pool_slot_starts_from_the_same_fresh_state() {
        let grader = loaded(gavel_test_artifacts::guests::CONSTANT, "one");
        let sample = Sample::default();
        let trajectory = Trajectory::default();
        let grades: Vec<Grade> = (0..4)
            .map(|_| grader.grade(&sample, &trajectory, "x"))
            .collect();
        assert_eq!(grades[0].status, Status::Pass, "{:?}", grades[0]);
        let sandbox = &grades[0].details().metadata["sandbox"];
        assert!(sandbox["fuel_used"].as_u64().unwrap() > 0, "{sandbox}");
        // A guest that never touches WASI leaves no stderr behind.
        assert!(sandbox.get("stderr").is_none(), "{sandbox}");
        // The same fuel on every call: each one ran from the same initial memory and globals.
        for grade in &grades[1..] {
            assert_eq!(grade, &grades[0]);
        }
    }

    #[test]
    fn scores_outside_zero_to_one_are_error_grades() {
        assert_eq!(
            accept_grade(grade(f64::NAN), 1024).rationale,
            "invalid score: NaN"
        );
        assert_eq!(
            accept_grade(grade(1.5), 1024).rationale,
            "invalid score: 1.5 is out of range [0, 1]"
        );
        assert_eq!(
            accept_grade(grade(f64::NEG_INFINITY), 1024).rationale,
            "invalid score: -inf is out of range [0, 1]"
        );
        let g = accept_grade(grade(0.5), 1024);
        assert_eq!((g.score, g.status), (0.5, Status::Fail));
        assert_eq!(accept_grade(grade(1.0), 1024).status, Status::Pass);
    }

    #[test]
    fn guest_status_json_and_sizes_are_checked() {
        let g = accept_grade(
            v0::Grade {
                status: Some(v0::Status::Skip),
                metadata: Some(r#"{"k": 1}"#.to_string()),
                expected: Some("\"a\"".to_string()),
                actual: Some("[1]".to_string()),
                ..grade(0.0)
            },
            1024,
        );
        assert_eq!(g.status, Status::Skip);
        assert_eq!(g.details().metadata.get("k"), Some(&Value::from(1)));
        assert_eq!(g.details().expected, Some(Value::from("a")));
        assert_eq!(g.details().actual, Some(serde_json::json!([1])));

        let bad = |g: v0::Grade| accept_grade(g, 1024).rationale;
        assert_eq!(
            bad(v0::Grade {
                metadata: Some("[]".to_string()),
                ..grade(1.0)
            }),
            "invalid metadata: not a JSON object"
        );
        assert!(
            bad(v0::Grade {
                actual: Some("{".to_string()),
                ..grade(1.0)
            })
            .starts_with("invalid actual: ")
        );
        let deep = |depth: usize| format!("{}1{}", "{\"d\": ".repeat(depth), "}".repeat(depth));
        assert!(
            bad(v0::Grade {
                metadata: Some(deep(65)),
                ..grade(1.0)
            })
            .starts_with("invalid metadata: nested deeper than 64 levels")
        );
        assert!(
            bad(v0::Grade {
                expected: Some(format!("[{}]", deep(64))),
                ..grade(1.0)
            })
            .starts_with("invalid expected: nested deeper than 64 levels")
        );
        // Past the parser's own limit (128) the same words, not the parser's.
        assert!(
            bad(v0::Grade {
                metadata: Some(deep(130)),
                ..grade(1.0)
            })
            .starts_with("invalid metadata: nested deeper than 64 levels")
        );
        let kept = accept_grade(
            v0::Grade {
                metadata: Some(deep(64)),
                ..grade(1.0)
            },
            1 << 20,
        );
        assert_eq!(kept.status, Status::Pass, "{}", kept.rationale);
        let big = v0::Grade {
            rationale: "x".repeat(2000),
            ..grade(1.0)
        };
        let g = accept_grade(big, 1024);
        assert_eq!(
            (g.status, &*g.rationale),
            (Status::Error, "output too large")
        );
    }

    #[test]
    fn pack_info_lists_functions_one_per_line() {
        let info = PackInfo {
            name: "demo".to_string(),
            version: "1.2.0".to_string(),
            wit_version: "0.1.0".to_string(),
            functions: vec![
                FunctionInfo {
                    name: "exact".to_string(),
                    kind: FunctionKind::Grader,
                    description: "exact match".to_string(),
                    needs_ground_truth: true,
                },
                FunctionInfo {
                    name: "answer".to_string(),
                    kind: FunctionKind::Extractor,
                    description: "the final answer".to_string(),
                    needs_ground_truth: false,
                },
            ],
        };
        assert_eq!(
            info.to_string(),
            "demo 1.2.0 (gavel:grader@0.1.0)\n  grader     exact   exact match (needs ground truth)\n  extractor  answer  the final answer\n"
        );
    }
}
