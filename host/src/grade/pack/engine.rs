//! The process-wide engine, the linker per WIT version, and the state of one sandboxed call.

use std::num::NonZeroUsize;
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, OnceLock};
use std::time::{Duration, Instant};

use wasmtime::component::types::ComponentItem;
use wasmtime::component::{
    Component, Linker, LinkerInstance, Resource, ResourceTable, ResourceType,
};
use wasmtime::{
    Config, Enabled, Engine, InstanceAllocationStrategy, PoolingAllocationConfig, ResourceLimiter,
    StoreContextMut,
};
use wasmtime_wasi::p2::pipe::MemoryInputPipe;
use wasmtime_wasi::p2::{DynPollable, Pollable, subscribe};
use wasmtime_wasi::{
    Deterministic, FsPerms, HostMonotonicClock, HostWallClock, WasiCtx, WasiCtxBuilder,
    WasiCtxView, WasiView,
};

use super::capture::Capture;
use super::process::{self, Processes, Stdio};
use wasmtime_wasi_http::{WasiHttpCtx, WasiHttpCtxView, WasiHttpView};

use super::limits::{CallLimits, TICK};
use super::scratch::{Quota, Scratch, Scratched};
use crate::grade::grants::{Access, Grants};
use crate::grade::net::CallNet;

/// The wall clock every call starts at: 2023-11-14T22:13:20Z, so that graders reading the time
/// grade the same way on every run ([`CallClock`]).
const FIXED_WALL_SECONDS: u64 = 1_700_000_000;

/// Native wasm stack per call; deep recursion beyond it is a `stack overflow` trap.
const MAX_WASM_STACK: usize = 512 << 10;

/// Concurrent sandboxed calls, across every pack of the process: a call waits for one of these
/// slots ([`Slots`]), and the instance pool holds enough of everything for this many calls of
/// the largest shape a component may have (the `*_PER_CALL` bounds), so that no call, whatever
/// its neighbours do, fails for want of room in the pool.
pub(super) const CALL_SLOTS: u32 = 128;

/// Pool slots that warm instances may hold at once in the process; fresh calls have the rest
/// of [`CALL_SLOTS`].
pub(super) const WARM_SLOTS: u32 = CALL_SLOTS / 2;
/// Core instances, linear memories and tables one call's component may have.
pub(super) const CORE_INSTANCES_PER_CALL: u32 = 50;
const MEMORIES_PER_CALL: u32 = 8;
const TABLES_PER_CALL: u32 = 50;

/// The process's two instance pools, created once and shared by every pack. They differ only
/// in how a slot is reset after a call, which suits one way of writing memory and not the
/// other ([`Writes`]).
pub(super) struct Sandbox {
    /// For [`Writes::Few`]: the slot copies back only the pages a call wrote, found by the
    /// kernel's dirty-page scan.
    few: Pool,
    /// For [`Writes::Scattered`]: the slot keeps the memory image resident and copies it back
    /// whole.
    scattered: Pool,
}

/// How a component's calls write its memory, which decides the pool its instances live in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Writes {
    /// A slot's reset finds little to restore, or is rare: packs compiled from Rust or C, and
    /// JavaScript engines, whose calls touch little of their image; and gavel's Python
    /// interpreter when its instances are warm, reset once a batch of calls. The dirty-page
    /// scan restores what it finds and decommits the rest, which the next instance faults in
    /// as it reads it: for a warm batch a sixth less CPU than copying the image back.
    Few,
    /// A fresh instance for every call writes all over a large image: gavel's Python
    /// interpreter in `isolation: sample` (CPython updates the reference counts of every
    /// object it touches). Wasmtime's dirty-page scan reads at most 32 runs of pages and
    /// decommits the rest, so with it every call would fault most of the image in again;
    /// copying the whole image back costs a third less.
    Scattered,
}

/// One engine, its instance pool and its linker.
pub(super) struct Pool {
    pub(super) engine: Engine,
    /// The linker for `gavel:grader@0.1.x` packs.
    linker_v0_1: Linker<CallState>,
}

/// Bytes of a [`Writes::Scattered`] memory a slot keeps resident and copies back after a
/// call: more than CPython's image (19 MiB) and what a call commonly adds to it; anything
/// beyond is decommitted.
const SCATTERED_KEEP_RESIDENT: usize = 32 << 20;

static SANDBOX: OnceLock<Result<Sandbox, SandboxUnavailable>> = OnceLock::new();

/// Why the process's sandbox could not be created: wasmtime's error with its causes, kept for
/// every pack that asks after the first.
#[derive(Debug, Clone, thiserror::Error)]
#[error("{0}")]
pub struct SandboxUnavailable(String);

/// The process's sandbox, created on first use.
pub(super) fn sandbox() -> Result<&'static Sandbox, SandboxUnavailable> {
    SANDBOX
        .get_or_init(|| Sandbox::new().map_err(|e| SandboxUnavailable(format!("{e:#}"))))
        .as_ref()
        .map_err(Clone::clone)
}

/// An engine that compiles exactly as the sandbox's do, without reserving an instance pool:
/// for a process that only compiles (`compile::child_compile`). The pool does not change compiled
/// code (a test checks the engines' compatibility hashes agree), so one artifact serves both.
pub(super) fn compiler() -> wasmtime::Result<Engine> {
    Engine::new(&config(None))
}

impl Sandbox {
    fn new() -> wasmtime::Result<Sandbox> {
        let few = Pool::new(few_pool())?;
        let scattered = Pool::new(scattered_pool())?;
        let engines = [few.engine.weak(), scattered.engine.weak()];
        std::thread::Builder::new()
            .name("gavel-epoch".to_string())
            .spawn(move || {
                loop {
                    let mut live = false;
                    for engine in engines.iter().filter_map(|e| e.upgrade()) {
                        engine.increment_epoch();
                        live = true;
                    }
                    if !live {
                        break;
                    }
                    std::thread::sleep(TICK);
                }
            })?;
        Ok(Sandbox { few, scattered })
    }

    /// The engine components are compiled for (either pool's: both compile alike).
    pub(super) fn engine(&self) -> &Engine {
        &self.few.engine
    }

    /// Loads `artifact`, compiled by [`compiler`] or an engine of this sandbox, into the pool
    /// for components that write as `writes` says.
    ///
    /// # Safety
    ///
    /// As [`Component::deserialize`]: `artifact` must come from wasmtime's own compiler.
    #[allow(unsafe_code)]
    pub(super) unsafe fn deserialize(
        &self,
        artifact: &[u8],
        writes: Writes,
    ) -> wasmtime::Result<Component> {
        // SAFETY: passed on to the caller.
        unsafe { Component::deserialize(&self.writing(writes).engine, artifact) }
    }

    /// [`Sandbox::deserialize`] for an artifact in the file at `path`, which wasmtime maps.
    ///
    /// # Safety
    ///
    /// As [`Component::deserialize_file`]: the file must hold what wasmtime's own compiler
    /// produced, and must not change while the component lives.
    #[allow(unsafe_code)]
    pub(super) unsafe fn deserialize_file(
        &self,
        path: &Path,
        writes: Writes,
    ) -> wasmtime::Result<Component> {
        // SAFETY: passed on to the caller.
        unsafe { Component::deserialize_file(&self.writing(writes).engine, path) }
    }

    fn writing(&self, writes: Writes) -> &Pool {
        match writes {
            Writes::Few => &self.few,
            Writes::Scattered => &self.scattered,
        }
    }

    /// The pool `component` was loaded into by [`Sandbox::deserialize`].
    pub(super) fn pool(&self, component: &Component) -> &Pool {
        if Engine::same(component.engine(), &self.scattered.engine) {
            &self.scattered
        } else {
            &self.few
        }
    }
}

impl Pool {
    fn new(pool: PoolingAllocationConfig) -> wasmtime::Result<Pool> {
        let engine = match Engine::new(&config(Some(pool))) {
            Ok(engine) => engine,
            // The pool reserves a lot of address space up front; where the process may not
            // (an address-space ulimit), instances are allocated on demand instead: slower,
            // equally isolated.
            Err(_) => Engine::new(&config(None))?,
        };
        let linker_v0_1 = linker(&engine)?;
        Ok(Pool {
            engine,
            linker_v0_1,
        })
    }
}

/// The WASI 0.2 interfaces the linker provides (see [`linker`]), by name without version.
const GRANTED_WASI: &[&str] = &[
    "wasi:cli/environment",
    "wasi:cli/exit",
    "wasi:cli/stderr",
    "wasi:cli/stdin",
    "wasi:cli/stdout",
    "wasi:cli/terminal-input",
    "wasi:cli/terminal-output",
    "wasi:cli/terminal-stderr",
    "wasi:cli/terminal-stdin",
    "wasi:cli/terminal-stdout",
    "wasi:clocks/monotonic-clock",
    "wasi:clocks/wall-clock",
    "wasi:filesystem/preopens",
    "wasi:filesystem/types",
    "wasi:http/outgoing-handler",
    "wasi:http/types",
    "wasi:io/error",
    "wasi:io/poll",
    "wasi:io/streams",
    "wasi:random/insecure",
    "wasi:random/insecure-seed",
    "wasi:random/random",
    "wasi:sockets/instance-network",
    "wasi:sockets/ip-name-lookup",
    "wasi:sockets/network",
    "wasi:sockets/tcp",
    "wasi:sockets/tcp-create-socket",
    "wasi:sockets/udp",
    "wasi:sockets/udp-create-socket",
];

impl Pool {
    /// The linker for one `gavel:grader@0.1.x` component: every import the host does not grant
    /// is defined as a function that fails the call with [`NotGranted`], so that toolchains
    /// that import interfaces they never use still load.
    ///
    /// (`Linker::define_unknown_imports_as_traps` would also stub the WASI imports of a
    /// component built against an older WASI 0.2 patch release, which the linker otherwise
    /// satisfies by semver.)
    pub(super) fn pack_linker(&self, component: &Component) -> wasmtime::Result<Linker<CallState>> {
        let mut linker = self.linker_v0_1.clone();
        for (name, item) in component.component_type().imports(&self.engine) {
            let granted = name == process::INTERFACE
                || name.split_once('@').is_some_and(|(interface, version)| {
                    GRANTED_WASI.contains(&interface) && version.starts_with("0.2.")
                });
            if !granted {
                self.stub(&mut linker.root(), name, "", item.ty)?;
            }
        }
        Ok(linker)
    }

    fn stub(
        &self,
        linker: &mut LinkerInstance<'_, CallState>,
        name: &str,
        parent: &str,
        item: ComponentItem,
    ) -> wasmtime::Result<()> {
        match item {
            ComponentItem::ComponentFunc(_) => {
                let import = if parent.is_empty() {
                    name.to_string()
                } else {
                    format!("{parent}#{name}")
                };
                linker.func_new(name, move |_, _, _, _| {
                    Err(wasmtime::Error::new(NotGranted(import.clone())))
                })
            }
            ComponentItem::ComponentInstance(instance) => {
                let mut inner = linker.instance(name)?;
                for (export, item) in instance.exports(&self.engine) {
                    self.stub(&mut inner, export, name, item.ty)?;
                }
                Ok(())
            }
            ComponentItem::Resource(_) => {
                linker.resource(name, ResourceType::host::<NotGranted>(), |_, _| Ok(()))
            }
            // Types need no definition; a module or component import fails to link, and the
            // pack is refused with the linker's reason.
            _ => Ok(()),
        }
    }
}

/// A guest called an import the host does not grant.
#[derive(Debug, thiserror::Error)]
#[error("`{0}` is not granted to packs")]
pub(super) struct NotGranted(pub(super) String);

fn config(pool: Option<PoolingAllocationConfig>) -> Config {
    let mut config = Config::new();
    config
        .wasm_component_model(true)
        .consume_fuel(true)
        .epoch_interruption(true)
        .max_wasm_stack(MAX_WASM_STACK)
        .wasm_backtrace_max_frames(NonZeroUsize::new(20))
        // Scores must be bit-identical from run to run and machine to machine.
        .cranelift_nan_canonicalization(true)
        .relaxed_simd_deterministic(true);
    if let Some(pool) = pool {
        config.allocation_strategy(InstanceAllocationStrategy::Pooling(pool));
    }
    config
}

/// What both pools hold: enough of everything for [`CALL_SLOTS`] calls and
/// [`process::PROCESS_SLOTS`] processes of the largest shape, so that processes never take the
/// room of a call.
fn pool_bounds() -> PoolingAllocationConfig {
    let instances = CALL_SLOTS + process::PROCESS_SLOTS;
    let mut pool = PoolingAllocationConfig::default();
    pool.total_component_instances(instances)
        .total_core_instances(instances * CORE_INSTANCES_PER_CALL)
        .total_memories(instances * MEMORIES_PER_CALL)
        .total_tables(instances * TABLES_PER_CALL)
        // Interpreters compiled to components (Python, JavaScript) need many core instances
        // and large tables.
        .max_core_instances_per_component(CORE_INSTANCES_PER_CALL)
        .max_memories_per_component(MEMORIES_PER_CALL)
        .max_tables_per_component(TABLES_PER_CALL)
        .table_elements(100_000)
        .table_keep_resident(64 << 10)
        // Calls run on the calling thread's stack: the engine is not async, so no call takes a
        // fiber's. A pool of them cost a guard page protected for each of its 1,000 stacks at
        // start.
        .total_stacks(0);
    pool
}

/// Resetting a slot by copying back the pages a call touched, instead of madvise, keeps
/// fresh-instance calls cheap and lets them scale across cores; pagemap_scan narrows the reset
/// to dirty pages where the kernel (6.7+) offers it.
fn few_pool() -> PoolingAllocationConfig {
    let mut pool = pool_bounds();
    pool.linear_memory_keep_resident(2 << 20).pagemap_scan(
        if PoolingAllocationConfig::is_pagemap_scan_available() {
            Enabled::Yes
        } else {
            Enabled::No
        },
    );
    pool
}

/// See [`Writes::Scattered`].
fn scattered_pool() -> PoolingAllocationConfig {
    let mut pool = pool_bounds();
    pool.linear_memory_keep_resident(SCATTERED_KEEP_RESIDENT)
        .pagemap_scan(Enabled::No);
    pool
}

/// WASI as a grader sees it: the CLI, clock, random, I/O and filesystem interfaces (with no
/// directory granted), sockets (every use denied) and HTTP (each request checked against the
/// grader's grant: `grade::net`). Sleeping returns at once and moves the call's clocks on by
/// what it would have waited ([`CallClock`]): a guest must not be able to park the host thread
/// where no deadline reaches it.
fn linker(engine: &Engine) -> wasmtime::Result<Linker<CallState>> {
    let mut linker = Linker::new(engine);
    wasmtime_wasi::p2::add_to_linker_sync(&mut linker)?;
    wasmtime_wasi_http::p2::add_only_http_to_linker_sync(&mut linker)?;
    linker.allow_shadowing(true);
    let mut clock = linker.instance("wasi:clocks/monotonic-clock@0.2.12")?;
    clock.func_wrap(
        "subscribe-duration",
        |store: StoreContextMut<'_, CallState>, (wait,): (u64,)| {
            store.data().clock.wait(wait);
            ready(store).map(|p| (p,))
        },
    )?;
    clock.func_wrap(
        "subscribe-instant",
        |store: StoreContextMut<'_, CallState>, (until,): (u64,)| {
            store.data().clock.wait_until(until);
            ready(store).map(|p| (p,))
        },
    )?;
    super::waits::bound(&mut linker)?;
    super::scratch::bound(&mut linker)?;
    linker.allow_shadowing(false);
    process::add_to_linker(&mut linker)?;
    Ok(linker)
}

struct Ready;

#[wasmtime_wasi::async_trait]
impl Pollable for Ready {
    async fn ready(&mut self) {}
}

fn ready(mut store: StoreContextMut<'_, CallState>) -> wasmtime::Result<Resource<DynPollable>> {
    let table = &mut store.data_mut().table;
    let ready = table.push(Ready)?;
    subscribe(table, ready)
}

/// Where a Python grader's packages (`requirements:`) are mounted, read-only, in its calls.
pub const PACKAGES_MOUNT: &str = "/gavel/packages";

/// What one call may reach beyond its own memory: nothing, by default.
#[derive(Clone, Copy, Default)]
pub(super) struct CallGrants<'a> {
    /// Its variables and folders (`allow:`).
    pub(super) access: Option<&'a Access>,
    /// What its HTTP requests are checked against (`allow:`'s `network` and `secrets`).
    pub(super) network: Option<&'a Arc<Grants>>,
    /// Its program's packages (`requirements:`), mounted read-only at [`PACKAGES_MOUNT`].
    pub(super) packages: Option<&'a std::path::Path>,
    /// Its interpreter, for the processes it starts (see [`process`]); none: it starts none.
    pub(super) processes: Option<&'a Processes<CallState>>,
    /// Its stdin and where its stderr goes, for a process; none: empty, and its own.
    pub(super) stdio: Option<Stdio<'a>>,
}

/// The store data of one call.
pub(super) struct CallState {
    /// Built on the guest's first WASI call: most graders make none, and building a context
    /// (two output pipes, two random streams, clocks) would cost them as much as instantiation.
    /// A context built late is the same as one built up front: nothing in it depends on when.
    wasi: Option<Wasi>,
    /// Built on the guest's first `wasi:http` call, as `wasi` is.
    http: Option<Http>,
    /// The grant the call's requests are checked against (nothing when none), and the call's
    /// deadline.
    network: Option<Arc<Grants>>,
    deadline: Instant,
    /// The time the call's guest sees, which its sleeps move.
    clock: CallClock,
    table: ResourceTable,
    stdout_bytes: usize,
    /// What the processes it starts may reach; none when it may start none.
    processes: Option<process::Reach<CallState>>,
    /// The folder the guest starts in (see `Access::cwd`), when not `/`.
    working_folder: Option<String>,
    pub(super) limiter: Limiter,
}

/// A call's `wasi:http` context and its network.
struct Http {
    ctx: WasiHttpCtx,
    net: CallNet,
}

/// A folder that holds nothing and never will, for an interpreter's `/`: made once per process
/// and removed at once, so that nothing can be added to it (nor is anything left behind), and
/// reached through the descriptor kept open on it. None where that cannot be done (a system
/// without `/proc`): there `/` is not a folder, and `os.chdir("/")` fails.
fn empty_root() -> Option<&'static Path> {
    static ROOT: OnceLock<Option<(std::fs::File, PathBuf)>> = OnceLock::new();
    ROOT.get_or_init(|| {
        let dir = tempfile::Builder::new()
            .prefix("gavel-root-")
            .tempdir()
            .ok()?;
        let kept = std::fs::File::open(dir.path()).ok()?;
        dir.close().ok()?;
        let path = PathBuf::from(format!("/proc/self/fd/{}", kept.as_raw_fd()));
        path.is_dir().then_some((kept, path))
    })
    .as_ref()
    .map(|(_, path)| path.as_path())
}

/// A call's WASI context and the host's ends of its output pipes.
struct Wasi {
    ctx: WasiCtx,
    stdout: Capture,
    stderr: Capture,
    /// The call's writable `/tmp`, removed when the call's store is dropped.
    scratch: Option<Scratch>,
}

impl Wasi {
    fn new(stdout_bytes: usize, clock: &CallClock) -> Wasi {
        let (mut builder, stdout, stderr) = Wasi::builder(stdout_bytes, clock);
        Wasi {
            ctx: builder.build(),
            stdout,
            stderr,
            scratch: None,
        }
    }

    /// A context with what `grants` grants: its variables, its folders read-only at their own
    /// path, a fresh private scratch folder, its program's packages, and an interpreter's
    /// empty `/`.
    fn granted(
        limits: &CallLimits,
        grants: CallGrants<'_>,
        clock: &CallClock,
    ) -> wasmtime::Result<Wasi> {
        let (mut builder, stdout, mut stderr) = Wasi::builder(limits.stdout_bytes, clock);
        if let Some(stdio) = grants.stdio {
            builder.stdin(MemoryInputPipe::new(stdio.stdin.to_vec()));
            if stdio.merge_stderr {
                builder.stderr(stdout.clone());
                stderr = stdout.clone();
            }
        }
        if let Some(packages) = grants.packages {
            builder.preopened_dir(packages, PACKAGES_MOUNT, FsPerms::ReadOnly)?;
        }
        // An interpreter's `/` is a folder, as on any machine, so that `os.chdir("/")` goes
        // back there: the C library changes folder only into a mounted one. It is empty and
        // read-only; what is granted is mounted below it.
        if let (Some(_), Some(root)) = (grants.processes, empty_root()) {
            builder.preopened_dir(root, "/", FsPerms::ReadOnly)?;
        }
        let Some(access) = grants.access else {
            return Ok(Wasi {
                ctx: builder.build(),
                stdout,
                stderr,
                scratch: None,
            });
        };
        for (name, value) in &access.env {
            builder.env(name, value);
        }
        for folder in &access.folders {
            let guest = folder.path.to_str().ok_or_else(|| {
                wasmtime::format_err!("`{}` is not a UTF-8 path", folder.path.display())
            })?;
            builder.preopened_dir(folder.source(), guest, FsPerms::ReadOnly)?;
        }
        let scratch = match access.scratch {
            true => Some(Scratch::mount(
                &mut builder,
                limits.tmp_bytes,
                limits.tmp_files,
            )?),
            false => None,
        };
        Ok(Wasi {
            ctx: builder.build(),
            stdout,
            stderr,
            scratch,
        })
    }

    fn builder(stdout_bytes: usize, clock: &CallClock) -> (WasiCtxBuilder, Capture, Capture) {
        let stdout = Capture::new(stdout_bytes);
        let stderr = Capture::new(stdout_bytes);
        let random = random_stream();
        let mut builder = WasiCtxBuilder::new();
        builder
            .stdout(stdout.clone())
            .stderr(stderr.clone())
            .wall_clock(clock.clone())
            .monotonic_clock(clock.clone())
            .secure_random(Deterministic::new(random.to_vec()))
            .insecure_random(Deterministic::new(random.to_vec()))
            .insecure_random_seed(u128::from_le_bytes(
                random[..16].try_into().unwrap_or_default(),
            ))
            .max_random_size(1 << 20)
            .allow_tcp(false)
            .allow_udp(false)
            .allow_ip_name_lookup(false)
            .allow_blocking_current_thread(true);
        (builder, stdout, stderr)
    }
}

impl CallState {
    /// The state of a call that may reach what `grants` grants; its WASI context is built now
    /// when a variable or folder is granted (opening a folder can fail), else on first use.
    pub(super) fn new(limits: &CallLimits, grants: CallGrants<'_>) -> wasmtime::Result<CallState> {
        let mut table = ResourceTable::new();
        table.set_max_capacity(10_000);
        let clock = CallClock::default();
        let wasi = match grants.access.is_some()
            || grants.packages.is_some()
            || grants.processes.is_some()
        {
            true => Some(Wasi::granted(limits, grants, &clock)?),
            false => None,
        };
        let processes = grants.processes.map(|processes| {
            process::Reach::new(processes, limits, grants.access, grants.packages)
        });
        let working_folder = grants
            .access
            .and_then(|access| access.cwd.as_deref())
            .and_then(|folder| folder.to_str())
            .map(str::to_string);
        Ok(CallState {
            wasi,
            http: None,
            network: grants.network.cloned(),
            deadline: Instant::now() + limits.timeout,
            clock,
            table,
            stdout_bytes: limits.stdout_bytes,
            processes,
            working_folder,
            limiter: Limiter {
                memory_limit: limits.memory_bytes,
                memory: 0,
                last_growth: 0,
                peak_memory: 0,
                table_elements: 0,
            },
        })
    }

    /// The last `keep` bytes of stdout, and of stderr, the host kept, as text (empty if the
    /// guest never touched WASI).
    pub(super) fn output_tail(&self, keep: usize) -> (String, String) {
        self.wasi.as_ref().map_or_else(Default::default, |wasi| {
            (wasi.stdout.tail(keep), wasi.stderr.tail(keep))
        })
    }

    /// Empties stdout and stderr, so that the next call on a warm instance has its own caps.
    pub(super) fn clear_output(&self) {
        if let Some(wasi) = &self.wasi {
            wasi.stdout.clear();
            wasi.stderr.clear();
        }
    }

    /// Whether stdout, and whether stderr, went past its limit and was cut.
    pub(super) fn output_cut(&self) -> (bool, bool) {
        self.wasi.as_ref().map_or((false, false), |wasi| {
            (wasi.stdout.cut(), wasi.stderr.cut())
        })
    }

    /// What the guest wrote to stdout and to stderr, as kept.
    pub(super) fn output(&self) -> (Vec<u8>, Vec<u8>) {
        self.wasi.as_ref().map_or_else(Default::default, |wasi| {
            (wasi.stdout.bytes(), wasi.stderr.bytes())
        })
    }

    /// What the processes the guest starts may reach, when it may start any.
    pub(super) fn processes(&self) -> Option<&process::Reach<CallState>> {
        self.processes.as_ref()
    }

    /// The end of the call in progress.
    pub(super) fn deadline(&self) -> Instant {
        self.deadline
    }

    /// The folder the guest starts in, when not `/`.
    pub(super) fn working_folder(&self) -> Option<String> {
        self.working_folder.clone()
    }
}

impl CallState {
    /// Starts a call on this state (a warm instance makes many): its deadline counted from
    /// now, its clocks at their start, and its network budget (requests, bytes) afresh.
    pub(super) fn start_call(&mut self, limits: &CallLimits) {
        self.deadline = Instant::now() + limits.timeout;
        self.clock.restart();
        self.http = None;
        if let Some(processes) = &self.processes {
            processes.start_call();
        }
    }
}

impl super::waits::Bounded for CallState {
    fn waits(&mut self) -> (Instant, &mut ResourceTable) {
        (self.deadline, &mut self.table)
    }
}

impl WasiView for CallState {
    fn ctx(&mut self) -> WasiCtxView<'_> {
        let (stdout_bytes, clock) = (self.stdout_bytes, &self.clock);
        let wasi = self
            .wasi
            .get_or_insert_with(|| Wasi::new(stdout_bytes, clock));
        WasiCtxView {
            ctx: &mut wasi.ctx,
            table: &mut self.table,
        }
    }
}

impl Scratched for CallState {
    fn quota(&self) -> Option<Arc<Quota>> {
        let scratch = self.wasi.as_ref()?.scratch.as_ref()?;
        Some(Arc::clone(scratch.quota()))
    }
}

impl WasiHttpView for CallState {
    fn http(&mut self) -> WasiHttpCtxView<'_> {
        let (network, deadline) = (&self.network, self.deadline);
        let http = self.http.get_or_insert_with(|| Http {
            ctx: WasiHttpCtx::new(),
            net: CallNet::new(network.clone().unwrap_or_default(), deadline),
        });
        WasiHttpCtxView {
            ctx: &mut http.ctx,
            table: &mut self.table,
            hooks: &mut http.net,
        }
    }
}

/// The bytes a guest's random source yields, cycled: fixed, so runs reproduce.
fn random_stream() -> &'static [u8; 4096] {
    static STREAM: OnceLock<[u8; 4096]> = OnceLock::new();
    STREAM.get_or_init(|| {
        use sha2::{Digest, Sha256};
        let mut stream = [0u8; 4096];
        let mut block = Sha256::digest(b"gavel:grader random source");
        for chunk in stream.chunks_mut(32) {
            chunk.copy_from_slice(&block);
            block = Sha256::digest(block);
        }
        stream
    })
}

/// The time a call's guest sees: it starts at the same instant every call (the wall clock at
/// [`FIXED_WALL_SECONDS`], the monotonic clock at zero) and moves only as the guest waits, by
/// what each wait would have taken, so that a grader polling until a deadline (`time.sleep` in
/// a loop over `time.time()`) reaches it, and grades the same on every run.
#[derive(Clone, Default)]
struct CallClock(Arc<AtomicU64>);

impl CallClock {
    /// Nanoseconds since the call started.
    fn elapsed(&self) -> u64 {
        self.0.load(Ordering::Relaxed)
    }

    /// A wait of `nanos`, over at once.
    fn wait(&self, nanos: u64) {
        self.0
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |now| {
                Some(now.saturating_add(nanos))
            })
            .ok();
    }

    /// A wait until the monotonic clock reads `nanos`, over at once.
    fn wait_until(&self, nanos: u64) {
        self.0.fetch_max(nanos, Ordering::Relaxed);
    }

    /// Back at the call's start, for the next call of a warm instance.
    fn restart(&self) {
        self.0.store(0, Ordering::Relaxed);
    }
}

impl HostWallClock for CallClock {
    fn resolution(&self) -> Duration {
        Duration::from_nanos(1)
    }
    fn now(&self) -> Duration {
        Duration::from_secs(FIXED_WALL_SECONDS) + Duration::from_nanos(self.elapsed())
    }
}

impl HostMonotonicClock for CallClock {
    fn resolution(&self) -> u64 {
        1
    }
    fn now(&self) -> u64 {
        self.elapsed()
    }
}

/// A wasm resource limit a guest ran into, raised as the trap's error so that the host can tell
/// it apart from a guest abort.
#[derive(Debug, thiserror::Error)]
pub(super) enum LimitHit {
    #[error("memory limit of {limit} bytes exceeded: the guest asked for {wanted} bytes")]
    Memory { limit: usize, wanted: usize },
    #[error("table limit of {limit} elements exceeded: the guest asked for {wanted}")]
    Table { limit: usize, wanted: usize },
}

/// Elements all of a call's tables may hold together (each costs the host a pointer).
const TABLE_ELEMENTS: usize = 100_000;

/// Enforces one memory budget per call, over every linear memory of every core instance of the
/// component (and one element budget over its tables), and records the peak of the sum.
pub(super) struct Limiter {
    memory_limit: usize,
    /// Bytes of linear memory the call holds now, all memories together.
    memory: usize,
    /// What the last growth allowed added, taken back if the growth then failed.
    last_growth: usize,
    pub(super) peak_memory: usize,
    table_elements: usize,
}

impl ResourceLimiter for Limiter {
    fn memory_growing(
        &mut self,
        current: usize,
        desired: usize,
        _maximum: Option<usize>,
    ) -> wasmtime::Result<bool> {
        let total = (self.memory - current.min(self.memory)).saturating_add(desired);
        if total > self.memory_limit {
            return Err(wasmtime::Error::new(LimitHit::Memory {
                limit: self.memory_limit,
                wanted: total,
            }));
        }
        self.last_growth = total - self.memory.min(total);
        self.memory = total;
        self.peak_memory = self.peak_memory.max(total);
        Ok(true)
    }

    fn memory_grow_failed(&mut self, _error: wasmtime::Error) -> wasmtime::Result<()> {
        self.memory -= self.last_growth.min(self.memory);
        self.last_growth = 0;
        Ok(())
    }

    fn table_growing(
        &mut self,
        current: usize,
        desired: usize,
        _maximum: Option<usize>,
    ) -> wasmtime::Result<bool> {
        let total =
            (self.table_elements - current.min(self.table_elements)).saturating_add(desired);
        if total > TABLE_ELEMENTS {
            return Err(wasmtime::Error::new(LimitHit::Table {
                limit: TABLE_ELEMENTS,
                wanted: total,
            }));
        }
        self.table_elements = total;
        Ok(true)
    }
}

/// The process's call slots for fresh instances (warm ones have theirs: `warm::WARM_SLOTS`): a
/// call holds one from before it instantiates until its store is gone, and waits while all are
/// taken.
pub(super) struct Slots {
    free: Mutex<u32>,
    freed: Condvar,
}

/// One taken slot, given back on drop.
pub(super) struct Slot(&'static Slots);

impl Slots {
    pub(super) fn take() -> Slot {
        static SLOTS: Slots = Slots {
            free: Mutex::new(CALL_SLOTS - WARM_SLOTS),
            freed: Condvar::new(),
        };
        let mut free = SLOTS.free.lock().unwrap_or_else(|e| e.into_inner());
        while *free == 0 {
            free = SLOTS.freed.wait(free).unwrap_or_else(|e| e.into_inner());
        }
        *free -= 1;
        Slot(&SLOTS)
    }
}

impl Drop for Slot {
    fn drop(&mut self) {
        *self.0.free.lock().unwrap_or_else(|e| e.into_inner()) += 1;
        self.0.freed.notify_one();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_compiling_engine_makes_artifacts_the_sandbox_loads() {
        use std::hash::{BuildHasher, BuildHasherDefault, DefaultHasher};
        let key = |engine: &Engine| {
            BuildHasherDefault::<DefaultHasher>::default()
                .hash_one(engine.precompile_compatibility_hash())
        };
        for pool in [few_pool(), scattered_pool()] {
            let sandbox = Engine::new(&config(Some(pool))).unwrap();
            assert_eq!(key(&compiler().unwrap()), key(&sandbox));
        }
    }

    #[test]
    fn the_memory_budget_is_the_sum_of_every_memory() {
        let mut limiter = Limiter {
            memory_limit: 100,
            memory: 0,
            last_growth: 0,
            peak_memory: 0,
            table_elements: 0,
        };
        // Two memories of 40, then one grows by 10: 90 in all.
        assert!(limiter.memory_growing(0, 40, None).unwrap());
        assert!(limiter.memory_growing(0, 40, None).unwrap());
        assert!(limiter.memory_growing(40, 50, None).unwrap());
        assert_eq!(limiter.peak_memory, 90);
        // A third of 20 would make 110.
        let err = limiter.memory_growing(0, 20, None).unwrap_err();
        assert!(matches!(
            err.downcast_ref::<LimitHit>(),
            Some(LimitHit::Memory {
                limit: 100,
                wanted: 110
            })
        ));
        assert!(limiter.table_growing(0, 60_000, None).unwrap());
        assert!(limiter.table_growing(0, 50_000, None).is_err());
    }
}
