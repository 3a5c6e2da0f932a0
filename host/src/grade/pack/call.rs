//! One sandboxed call: a fresh store and instance, the limits applied, and every way it can fail
//! turned into one short, stable reason.

use serde_json::{Map, Value, json};
use wasmtime::component::{Instance, InstancePre};
use wasmtime::{Store, Trap};
use wasmtime_wasi::I32Exit;

use super::engine::{CallGrants, CallState, LimitHit, NotGranted, Slots};
use super::limits::CallLimits;

/// How much of the end of a guest's stdout and of its stderr a grade keeps.
const OUTPUT_TAIL: usize = 1_024;

/// An interpreter's `load` refused the user's program (the message is located).
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub(super) struct ProgramFailed(pub(super) String);

/// What a call cost, for the grade's metadata.
#[derive(Debug, Clone, Default)]
pub(super) struct Usage {
    /// Fuel the call burned; absent when it was stopped by the wall-clock deadline, where the
    /// amount depends on the machine.
    pub(super) fuel_used: Option<u64>,
    pub(super) peak_memory: usize,
    /// The end of what the guest wrote to stdout (`print`).
    pub(super) stdout_tail: String,
    /// The end of what the guest wrote to stderr.
    pub(super) stderr_tail: String,
    /// `exit` was called with this code.
    pub(super) exit_code: Option<i32>,
    /// Whether stdout, and whether stderr, went past its limit and was cut.
    pub(super) output_cut: (bool, bool),
}

impl Usage {
    pub(super) fn metadata(&self) -> Value {
        let mut map = Map::new();
        if let Some(fuel) = self.fuel_used {
            map.insert("fuel_used".to_string(), json!(fuel));
        }
        map.insert("peak_memory_bytes".to_string(), json!(self.peak_memory));
        for (stream, tail) in [("stdout", &self.stdout_tail), ("stderr", &self.stderr_tail)] {
            if !tail.is_empty() {
                map.insert(stream.to_string(), json!(tail));
            }
        }
        if let Some(code) = self.exit_code {
            map.insert("exit_code".to_string(), json!(code));
        }
        for (stream, cut) in [
            ("stdout_cut", self.output_cut.0),
            ("stderr_cut", self.output_cut.1),
        ] {
            if cut {
                map.insert(stream.to_string(), json!(true));
            }
        }
        Value::Object(map)
    }
}

/// The outcome of one call: the guest's answer, or the reason there is none.
pub(super) struct Outcome<T> {
    pub(super) result: Result<T, CallFailure>,
    pub(super) usage: Usage,
}

impl<T> Outcome<T> {
    /// A call that never started: the host could not make its store (`error` says why).
    pub(super) fn host_failure(error: &wasmtime::Error) -> Outcome<T> {
        Outcome {
            result: Err(CallFailure::Host(format!("{error:#}"))),
            usage: Usage::default(),
        }
    }
}

/// Instantiates `pre` in a fresh store with `limits` and runs `f` against the instance.
pub(super) fn run<T: Send>(
    engine: &wasmtime::Engine,
    pre: &InstancePre<CallState>,
    limits: &CallLimits,
    grants: CallGrants<'_>,
    f: impl FnOnce(&Instance, &mut Store<CallState>) -> wasmtime::Result<T> + Send,
) -> Outcome<T> {
    outside_async(|| run_here(engine, pre, limits, grants, f))
}

/// Runs `call` on a thread where WASI's blocking host functions work. They (a write to stdout
/// or stderr, a poll, a socket call) drive a future with tokio's `block_on`, which panics on a
/// thread that is running async tasks; a call made from an async task would otherwise take the
/// process down as soon as a guest prints. On a multi-threaded runtime `block_in_place` hands
/// the worker's other tasks to another thread for the call's duration (a blocking call should
/// anyway); elsewhere in a runtime the call runs on a thread of its own.
fn outside_async<T: Send>(call: impl FnOnce() -> T + Send) -> T {
    use tokio::runtime::{Handle, RuntimeFlavor};
    match Handle::try_current().map(|handle| handle.runtime_flavor()) {
        Err(_) => call(),
        Ok(RuntimeFlavor::MultiThread) => tokio::task::block_in_place(call),
        Ok(_) => std::thread::scope(|scope| {
            scope
                .spawn(call)
                .join()
                .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
        }),
    }
}

/// Runs `call` on one of tokio's threads for blocking work when called from an async task, so
/// that a call spinning to its deadline holds no async worker (the judge's requests and timers
/// run there); runs it here otherwise.
pub(super) async fn off_worker<T: Send + 'static>(call: impl FnOnce() -> T + Send + 'static) -> T {
    if tokio::runtime::Handle::try_current().is_err() {
        return call();
    }
    match tokio::task::spawn_blocking(call).await {
        Ok(value) => value,
        Err(e) => std::panic::resume_unwind(e.into_panic()),
    }
}

fn run_here<T>(
    engine: &wasmtime::Engine,
    pre: &InstancePre<CallState>,
    limits: &CallLimits,
    grants: CallGrants<'_>,
    f: impl FnOnce(&Instance, &mut Store<CallState>) -> wasmtime::Result<T>,
) -> Outcome<T> {
    // Taken before the store and so given back after it is dropped, with its pool slot.
    let _slot = Slots::take();
    let mut store = match new_store(engine, limits, grants) {
        Ok(store) => store,
        Err(e) => return Outcome::host_failure(&e),
    };
    let result = arm(&mut store, limits).and_then(|()| {
        let instance = pre.instantiate(&mut store)?;
        f(&instance, &mut store)
    });
    outcome(&store, limits, result)
}

/// A store for calls under `limits` that may reach what `grants` grants, with its memory
/// limiter, no instance yet; why not when a granted folder cannot be opened.
pub(super) fn new_store(
    engine: &wasmtime::Engine,
    limits: &CallLimits,
    grants: CallGrants<'_>,
) -> wasmtime::Result<Store<CallState>> {
    let mut store = Store::new(engine, CallState::new(limits, grants)?);
    store.limiter(|state| &mut state.limiter);
    store.epoch_deadline_trap();
    // A grade holds at most four texts, each at most the whole memory: lifting a result never
    // runs out of hostcall fuel, so an oversized result is reported as such by the size check.
    store.set_hostcall_fuel(limits.memory_bytes.saturating_mul(4));
    Ok(store)
}

/// Gives the next call on `store` its own fuel and deadline.
pub(super) fn arm(store: &mut Store<CallState>, limits: &CallLimits) -> wasmtime::Result<()> {
    store.data_mut().start_call(limits);
    store.set_epoch_deadline(limits.deadline_ticks);
    store.set_fuel(limits.fuel)
}

/// The outcome of the call just made on `store` (armed by [`arm`]).
pub(super) fn outcome<T>(
    store: &Store<CallState>,
    limits: &CallLimits,
    result: wasmtime::Result<T>,
) -> Outcome<T> {
    let remaining = store.get_fuel().unwrap_or(0);
    let state = store.data();
    let (stdout_tail, stderr_tail) = state.output_tail(OUTPUT_TAIL);
    let mut usage = Usage {
        fuel_used: Some(limits.fuel - remaining.min(limits.fuel)),
        peak_memory: state.limiter.peak_memory,
        stdout_tail,
        stderr_tail,
        exit_code: None,
        output_cut: state.output_cut(),
    };
    let result = result.map_err(|error| {
        let failure = classify(&error);
        match failure {
            CallFailure::Deadline => usage.fuel_used = None,
            CallFailure::Exited(code) => usage.exit_code = Some(code),
            _ => {}
        }
        failure
    });
    Outcome { result, usage }
}

/// Why a sandboxed call produced no answer, in a short reason that stays the same across
/// wasmtime versions: what an error grade's rationale shows.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum CallFailure {
    #[error("fuel exhausted")]
    Fuel,
    #[error("deadline exceeded")]
    Deadline,
    #[error("memory limit exceeded")]
    Memory,
    #[error("table limit exceeded")]
    Table,
    #[error("guest trapped: {0}")]
    Trap(&'static str),
    #[error("guest exited")]
    Exited(i32),
    /// The guest called an import the host does not grant.
    #[error("not granted: {0}")]
    NotGranted(String),
    /// An interpreter could not load the user's program.
    #[error("cannot load the program: {0}")]
    Program(String),
    /// Anything else the host refused: a malformed result.
    #[error("host refused the call: {0}")]
    Host(String),
}

pub(super) fn classify(error: &wasmtime::Error) -> CallFailure {
    if let Some(hit) = error.downcast_ref::<LimitHit>() {
        return match hit {
            LimitHit::Memory { .. } => CallFailure::Memory,
            LimitHit::Table { .. } => CallFailure::Table,
        };
    }
    if let Some(exit) = error.downcast_ref::<I32Exit>() {
        return CallFailure::Exited(exit.0);
    }
    if let Some(NotGranted(import)) = error.downcast_ref::<NotGranted>() {
        return CallFailure::NotGranted(import.clone());
    }
    if let Some(ProgramFailed(message)) = error.downcast_ref::<ProgramFailed>() {
        return CallFailure::Program(message.clone());
    }
    match error.downcast_ref::<Trap>() {
        Some(Trap::OutOfFuel) => CallFailure::Fuel,
        Some(Trap::Interrupt) => CallFailure::Deadline,
        Some(trap) => CallFailure::Trap(trap_kind(trap)),
        None => CallFailure::Host(error.root_cause().to_string()),
    }
}

/// Short names of traps, stable across wasmtime versions (their `Display` is not).
fn trap_kind(trap: &Trap) -> &'static str {
    match trap {
        Trap::StackOverflow => "stack overflow",
        Trap::MemoryOutOfBounds => "out-of-bounds memory access",
        Trap::HeapMisaligned => "misaligned memory access",
        Trap::TableOutOfBounds => "out-of-bounds table access",
        Trap::IndirectCallToNull => "indirect call to null",
        Trap::BadSignature => "indirect call type mismatch",
        Trap::IntegerOverflow => "integer overflow",
        Trap::IntegerDivisionByZero => "integer divide by zero",
        Trap::BadConversionToInteger => "invalid conversion to integer",
        Trap::UnreachableCodeReached => "unreachable",
        Trap::NullReference => "null reference",
        Trap::CannotEnterComponent => "cannot enter component",
        _ => "other",
    }
}
