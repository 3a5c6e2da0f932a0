//! Processes for gavel's Python interpreter (`gavel:interpreter/process`, an import of its own
//! world, not of packs' `gavel:grader`): a program a grader starts as a process is the
//! interpreter itself, run here in a new instance of the caller's component, a fresh sandbox
//! of its own, never in the caller's instance, where the started file (an agent's) could
//! rewrite the grader's state and forge its grade.
//!
//! The process reaches the caller's folders, read-only, and a `/tmp` of its own, with no
//! network and no environment but what the caller passes; its stdout and stderr are captured,
//! cut at the caller's `stdout_kb`. It spends the caller's own fuel and ends by the caller's
//! deadline: running out of either stops the caller too, as its own instructions would. A
//! grader's call may start [`MAX_PROCESSES`] processes in all, nested [`MAX_DEPTH`] deep, and
//! [`SLOTS_PER_DEPTH`] run at once in gavel at each depth (one waits for room, within the
//! caller's deadline); each holds its own memory, up to the caller's `memory_mb`, while it runs.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Condvar, Mutex, PoisonError};
use std::time::{Duration, Instant};

use wasmtime::component::{ComponentType, InstancePre, Lift, Linker, Lower};
use wasmtime::{Engine, StoreContextMut, Trap};

use super::limits::CallLimits;
use crate::grade::grants::{Access, Folder};

/// The version of `gavel:interpreter` (`host/runtime/python/wit/deps/interpreter.wit`), as a
/// literal for the names below.
macro_rules! protocol {
    () => {
        "0.4.0"
    };
}

/// The version of `gavel:interpreter` this host speaks with its Python interpreter component:
/// what crosses between them, the interfaces of that package and the JSON the runtime is handed
/// (`host/runtime/python/`), changes only with it. An interpreter that exports its `child`
/// interface at another version was built from other sources and is refused before any call.
pub const PROTOCOL: &str = protocol!();

/// The interface, as the interpreter's world imports it.
pub(super) const INTERFACE: &str = concat!("gavel:interpreter/process@", protocol!());

/// The interface whose `main` a process runs, before its `@version`.
pub(super) const CHILD_INTERFACE: &str = "gavel:interpreter/child";

/// That interface at this host's version.
pub(super) const CHILD: &str = concat!("gavel:interpreter/child@", protocol!());

/// The interface of the interpreter's flat `grade` calls (`wit::Args::Flat`), at this host's
/// version.
pub(super) const GRADING: &str = concat!("gavel:interpreter/grading@", protocol!());

/// How deep processes may nest below a grader: its process's process's process.
pub const MAX_DEPTH: u32 = 3;

/// Processes one grader's call may start, at every depth together.
pub const MAX_PROCESSES: u32 = 16;

/// Processes that may run at once in gavel at each depth, every grader's together.
pub const SLOTS_PER_DEPTH: u32 = 16;

/// Processes that may run at once in gavel, every depth together: the instance pool holds room
/// for them beside the calls' (`engine::pool_bounds`).
pub const PROCESS_SLOTS: u32 = SLOTS_PER_DEPTH * MAX_DEPTH;

/// Processes running now at each depth (see [`SLOTS_PER_DEPTH`]), and the wait for room.
static RUNNING: [(Mutex<u32>, Condvar); MAX_DEPTH as usize] =
    [const { (Mutex::new(0), Condvar::new()) }; MAX_DEPTH as usize];

/// One of [`SLOTS_PER_DEPTH`] at its depth, given back on drop.
struct Running(usize);

impl Running {
    /// Room for a process started at `depth` (0 for a grader's own), waited for until
    /// `deadline`: a process never fails for want of room, so a grade does not depend on how
    /// many other graders start processes at once. Each depth has room of its own, so the wait
    /// cannot go round in a circle: a process holding room at depth `d` waits only on room at
    /// `d + 1`, and those at the deepest start none.
    fn take(depth: u32, deadline: Instant) -> Option<Running> {
        let (count, room) = &RUNNING[depth as usize];
        let mut running = count.lock().unwrap_or_else(PoisonError::into_inner);
        while *running >= SLOTS_PER_DEPTH {
            let left = deadline.checked_duration_since(Instant::now())?;
            running = room
                .wait_timeout(running, left)
                .unwrap_or_else(PoisonError::into_inner)
                .0;
        }
        *running += 1;
        Some(Running(depth as usize))
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        let (count, room) = &RUNNING[self.0];
        *count.lock().unwrap_or_else(PoisonError::into_inner) -= 1;
        room.notify_one();
    }
}

/// The native stack of every thread that may make a sandboxed call (a runtime's workers and
/// blocking threads, a process's, a warm instance's start): the call's wasm stack, up to its
/// limit (512 KiB), runs on it above the host's frames that made the call, and a debug build's
/// frames are large. Only what a call touches is ever committed.
pub const GUEST_THREAD_STACK: usize = 8 << 20;

/// The exit code of a process the host stopped (a limit of its own it ran into), as a process
/// killed by SIGKILL shows it.
const KILLED: i32 = -9;

/// What a call needs to start processes: its own component, and where it is in the tree.
pub(super) struct Processes<T: 'static> {
    pub(super) pre: InstancePre<T>,
    depth: u32,
    /// Processes started so far by the grader's call, shared by every process below it.
    started: Arc<AtomicU32>,
}

impl<T> Clone for Processes<T> {
    fn clone(&self) -> Self {
        Processes {
            pre: self.pre.clone(),
            depth: self.depth,
            started: self.started.clone(),
        }
    }
}

impl<T> Processes<T> {
    /// For a grader's call on an instance of `pre`.
    pub(super) fn new(pre: &InstancePre<T>) -> Processes<T> {
        Processes {
            pre: pre.clone(),
            depth: 0,
            started: Arc::default(),
        }
    }

    /// Starts a grader's next call (a warm instance makes many) with its whole count.
    pub(super) fn start_call(&self) {
        if self.depth == 0 {
            self.started.store(0, Ordering::Relaxed);
        }
    }
}

/// What a call may give the processes it starts: a copy of its folders and its packages.
pub(super) struct Reach<T: 'static> {
    processes: Processes<T>,
    folders: Vec<Folder>,
    scratch: bool,
    packages: Option<PathBuf>,
    limits: CallLimits,
}

impl<T> Reach<T> {
    pub(super) fn new(
        processes: &Processes<T>,
        limits: &CallLimits,
        access: Option<&Access>,
        packages: Option<&Path>,
    ) -> Reach<T> {
        Reach {
            processes: processes.clone(),
            folders: access.map(|a| a.folders.clone()).unwrap_or_default(),
            scratch: access.is_some_and(|a| a.scratch),
            packages: packages.map(Path::to_path_buf),
            limits: *limits,
        }
    }

    pub(super) fn start_call(&self) {
        self.processes.start_call();
    }
}

/// The input and output of a process's instance.
#[derive(Clone, Copy)]
pub(super) struct Stdio<'a> {
    pub(super) stdin: &'a [u8],
    pub(super) merge_stderr: bool,
}

#[derive(ComponentType, Lift)]
#[component(record)]
struct Request {
    argv: Vec<String>,
    stdin: Vec<u8>,
    cwd: String,
    env: Vec<(String, String)>,
    #[component(name = "merge-stderr")]
    merge_stderr: bool,
    #[component(name = "timeout-ms")]
    timeout_ms: Option<u64>,
}

#[derive(ComponentType, Lower)]
#[component(record)]
struct Finished {
    #[component(name = "exit-code")]
    exit_code: i32,
    stdout: Vec<u8>,
    stderr: Vec<u8>,
}

#[derive(ComponentType, Lower)]
#[component(variant)]
enum Failure {
    #[component(name = "timed-out")]
    TimedOut(Finished),
    #[component(name = "refused")]
    Refused(String),
}

/// A call's state, as the processes it starts need it.
pub(super) trait Spawn: Sized + Send + 'static {
    /// What the processes the guest starts may reach, when it may start any.
    fn reach(&self) -> Option<&Reach<Self>>;
    /// When the call must end.
    fn deadline(&self) -> Instant;
    /// The folder the guest starts in, when it has one.
    fn working_folder(&self) -> Option<String>;
    /// Runs `main(argv, cwd)` of [`CHILD`] in a new instance of `child`'s component, under
    /// `limits`, reaching `access` and `packages`, with `stdio`.
    fn run_child(engine: &Engine, child: &Processes<Self>, start: Start<'_>) -> Ended;
}

/// What a process starts with.
pub(super) struct Start<'a> {
    pub(super) limits: &'a CallLimits,
    pub(super) access: &'a Access,
    pub(super) packages: Option<&'a Path>,
    pub(super) stdio: Stdio<'a>,
    pub(super) argv: &'a [String],
    pub(super) cwd: &'a str,
}

/// Defines the interface in `linker`; a call without [`Reach`] (every pack's, and an
/// interpreter's outside a grader's call) is refused every process.
pub(super) fn add_to_linker<T: Spawn>(linker: &mut Linker<T>) -> wasmtime::Result<()> {
    let mut process = linker.instance(INTERFACE)?;
    process.func_wrap(
        "run",
        |store: StoreContextMut<'_, T>, (request,): (Request,)| run(store, request).map(|r| (r,)),
    )?;
    process.func_wrap("working-folder", |store: StoreContextMut<'_, T>, (): ()| {
        Ok((store.data().working_folder(),))
    })?;
    Ok(())
}

fn refused(why: impl Into<String>) -> wasmtime::Result<Result<Finished, Failure>> {
    Ok(Err(Failure::Refused(why.into())))
}

/// Runs `request` to its end in a new instance, on the caller's fuel and deadline.
fn run<T: Spawn>(
    mut store: StoreContextMut<'_, T>,
    request: Request,
) -> wasmtime::Result<Result<Finished, Failure>> {
    let state = store.data();
    let Some(reach) = state.reach() else {
        return refused(
            "Resource temporarily unavailable (gavel starts processes only while a grader \
             grades, not while its program loads)",
        );
    };
    let processes = &reach.processes;
    if processes.depth >= MAX_DEPTH {
        return refused(format!(
            "Resource temporarily unavailable (gavel starts processes at most {MAX_DEPTH} deep)"
        ));
    }
    if processes.started.fetch_add(1, Ordering::Relaxed) >= MAX_PROCESSES {
        return refused(format!(
            "Resource temporarily unavailable (a grader's call starts at most {MAX_PROCESSES} processes)"
        ));
    }
    let Some(_running) = Running::take(processes.depth, state.deadline()) else {
        return refused(
            "Resource temporarily unavailable (the call's deadline passed while its process \
             waited for room)",
        );
    };
    let left = state.deadline().saturating_duration_since(Instant::now());
    // The process's own timeout, when it ends before the caller's deadline.
    let timeout = (request.timeout_ms.map(Duration::from_millis)).filter(|t| *t < left);
    let fuel = store.get_fuel()?;
    let limits = reach.limits.with_budget(fuel, timeout.unwrap_or(left));
    let child = Processes {
        pre: processes.pre.clone(),
        depth: processes.depth + 1,
        started: processes.started.clone(),
    };
    let access = Access {
        env: request.env,
        folders: reach.folders.clone(),
        scratch: reach.scratch,
        cwd: None,
    };
    let packages = reach.packages.clone();
    let engine = store.engine().clone();
    let start = Start {
        limits: &limits,
        access: &access,
        packages: packages.as_deref(),
        stdio: Stdio {
            stdin: &request.stdin,
            merge_stderr: request.merge_stderr,
        },
        argv: &request.argv,
        cwd: request.cwd.as_str(),
    };
    let ended = std::thread::scope(|scope| {
        std::thread::Builder::new()
            .name("gavel-process".to_string())
            .stack_size(GUEST_THREAD_STACK)
            .spawn_scoped(scope, || T::run_child(&engine, &child, start))
            .map(|thread| thread.join())
    });
    let ended = match ended {
        Ok(Ok(ended)) => ended,
        Ok(Err(panic)) => std::panic::resume_unwind(panic),
        Err(e) => return refused(format!("Resource temporarily unavailable ({e})")),
    };
    store.set_fuel(fuel - ended.fuel_used.min(fuel))?;
    let Ended {
        result,
        stdout,
        mut stderr,
        ..
    } = ended;
    let finished = |exit_code, stderr| Finished {
        exit_code,
        stdout,
        stderr,
    };
    match result {
        Exit::Code(code) => Ok(Ok(finished(code, stderr))),
        Exit::Deadline if timeout.is_some() => Ok(Err(Failure::TimedOut(finished(KILLED, stderr)))),
        // The caller's own deadline or fuel ran out in the process: the caller stops as if it
        // had run out itself.
        Exit::Deadline => Err(wasmtime::Error::new(Trap::Interrupt)),
        Exit::Fuel => Err(wasmtime::Error::new(Trap::OutOfFuel)),
        Exit::NotStarted(why) => refused(format!(
            "Resource temporarily unavailable (gavel could not start the process: {why})"
        )),
        Exit::Stopped(why) => {
            stderr.extend_from_slice(format!("gavel stopped the process: {why}\n").as_bytes());
            Ok(Ok(finished(KILLED, stderr)))
        }
    }
}

/// How a process's instance ended.
pub(super) struct Ended {
    pub(super) result: Exit,
    pub(super) fuel_used: u64,
    pub(super) stdout: Vec<u8>,
    pub(super) stderr: Vec<u8>,
}

/// What a process's instance ended with.
pub(super) enum Exit {
    /// Its exit code: `main`'s, or the one `SystemExit` carried.
    Code(i32),
    /// The deadline it ran under passed.
    Deadline,
    /// The fuel it ran under ran out.
    Fuel,
    /// Its instance could not be made, and why.
    NotStarted(String),
    /// The host stopped it (a limit of its own it ran into), and why.
    Stopped(String),
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The deepest room a grader's process's process takes; no library test starts processes,
    /// so the room is this test's alone.
    const DEPTH: u32 = MAX_DEPTH - 1;

    #[test]
    fn a_process_past_the_room_waits_for_room_and_gets_it_when_one_ends() {
        let soon = || Instant::now() + Duration::from_millis(50);
        let held: Vec<Running> = (0..SLOTS_PER_DEPTH)
            .map(|_| Running::take(DEPTH, soon()).expect("room"))
            .collect();
        assert!(
            Running::take(DEPTH, soon()).is_none(),
            "no room past the deadline"
        );
        assert!(
            Running::take(0, soon()).is_some(),
            "another depth has room of its own"
        );
        let waiting = std::thread::spawn(|| {
            Running::take(DEPTH, Instant::now() + Duration::from_secs(600)).is_some()
        });
        drop(held);
        assert!(waiting.join().unwrap(), "the waiting process got room");
    }
}
