//! Warm instances: a Python grader's calls for a batch of consecutive samples made in one
//! instance of the interpreter, its program imported once, instead of a fresh instance a call.
//!
//! The run grades its input in batches of [`BATCH_ROWS`] consecutive selected rows, each batch
//! in one task ([`scope`]); a batch's first call of a grader starts an instance of the grader's
//! program, and its later calls of that grader use it, in input order. Which samples share an
//! instance therefore depends on the input and the batch size only, never on threads, timing or
//! `--concurrency`. An instance serves one grader (one function of one program) of one batch:
//! nothing crosses graders, batches, runs or suites, except where a pass is given a [`Kept`]
//! store (`gavel serve`'s loaded suites), whose instances its batches take and leave. It is
//! replaced, so that the next call starts afresh, after a call that trapped or hit a limit
//! (fuel, deadline, memory, output), [`MAX_CALLS`] calls, or once its memory has grown by
//! [`MAX_GROWTH`] beyond what it held after its first call. Fuel and the deadline are each
//! call's own; memory is the instance's.
//!
//! Pool slots: a batch reserves, before its first warm call, a slot for each warm grader of
//! the plan at once ([`WARM_SLOTS`] in the process, apart from the slots of fresh calls), so
//! that no batch ever holds slots while waiting for more; a plan with more warm graders than
//! that runs them in fresh instances. The run's bound on calls in flight (its worker count) is
//! taken for each call, after the reservation.

use std::cell::{Cell, RefCell};
use std::collections::{HashMap, HashSet};
use std::convert::Infallible;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, PoisonError, Weak};
use std::time::Instant;

use tokio::sync::{Semaphore, SemaphorePermit};
use wasmtime::Store;
use wasmtime::component::Instance;

use super::call::{self, Outcome};
use super::engine::{CallGrants, CallState, WARM_SLOTS};
use super::wit::Exports;
use super::{Function, Program, ProgramFunction};

/// Consecutive selected rows graded as one batch, whose samples share each Python grader's warm
/// instance: the same for every run, so that a run's grades do not depend on how it was run.
/// Each batch pays its instances' start (the interpreter instantiated, the module imported, the
/// image's pages faulted in again): at 64 rows that was a third of a warm run's CPU
/// (bench/README.md, "Batches of 256 rows").
pub const BATCH_ROWS: usize = 256;

/// Calls a warm instance of a batch makes before it is replaced; a [`Kept`] store sets its own
/// instances' bound.
const MAX_CALLS: u32 = 256;

/// Bytes of linear memory a warm instance may gain over what it held after its first call
/// before it is replaced: a grader that leaks does not carry its leak through a whole batch.
const MAX_GROWTH: usize = 16 << 20;

static RESERVED: Semaphore = Semaphore::const_new(WARM_SLOTS as usize);

/// Tells functions apart: a warm instance belongs to one.
pub(super) fn next_function_id() -> u64 {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    NEXT.fetch_add(1, Ordering::Relaxed)
}

tokio::task_local! {
    static BATCH: Arc<Batch>;
}

/// What the grading of one batch of samples shares: the run's bound on calls in flight and,
/// where its graders are warm, their instances.
pub struct Batch {
    calls: Arc<Semaphore>,
    /// Warm graders of the plan (0: every call is fresh).
    warm_graders: usize,
    /// Each function's instance, by function id. Declared before the reservation, so that
    /// the instances (and their pool slots) go first.
    instances: Mutex<HashMap<u64, Warm>>,
    reserved: Mutex<Option<SemaphorePermit<'static>>>,
    /// Where the batch takes instances from before starting one, and leaves its own.
    kept: Option<Arc<Kept>>,
}

/// Warm instances kept between passes with the same plan (a server's requests to one loaded
/// suite): a batch takes one of a function's before starting a new one, and leaves those it
/// holds when it ends, unless the function already has `per_function` waiting. The instances
/// are replaced as a batch's are (a trap or limit hit, memory growth), but after the store's
/// own bound on calls instead of [`MAX_CALLS`], so a grader's module state crosses the passes
/// until its instance is replaced. An instance
/// waiting here holds no pool slot: at most `per_function` of each warm function wait besides
/// the [`WARM_SLOTS`] in use.
///
/// When a call spends an instance that was kept here, or a quarter of its bound before its
/// last, its replacement is started ahead, on a thread of its own (a new store reaching what
/// the function's calls reach, its program loaded on its load budget), and left waiting for
/// the next pass, so that no pass pays the load: at most one replacement of a function at a
/// time, holding a warm slot while it starts (none free: none is started), none once
/// [`Kept::stop`] is called. One whose load fails is not kept: the next call starts its own and
/// reports why, as without it.
pub struct Kept {
    per_function: usize,
    max_calls: u32,
    idle: Mutex<Idle>,
    /// Told when a replacement's start ends.
    replaced: Condvar,
    stopped: AtomicBool,
    /// Instances started by a pass's call because none was waiting.
    started_in_pass: AtomicU64,
    /// Replacements started ahead and left waiting.
    started_ahead: AtomicU64,
}

/// The instances waiting, by function id, and the functions whose replacement is starting.
#[derive(Default)]
struct Idle {
    waiting: HashMap<u64, Vec<Warm>>,
    replacing: HashSet<u64>,
}

/// How a [`Kept`]'s instances were started so far.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Started {
    /// By a pass's call, in its time, because none was waiting.
    pub in_pass: u64,
    /// Ahead of the passes: before the first ([`Kept::warm_up`]), or replacing a spent one.
    pub ahead: u64,
}

impl Kept {
    /// A store keeping up to `per_function` idle instances of each function, each replaced
    /// after `max_calls` calls (at least 1).
    pub fn new(per_function: usize, max_calls: u32) -> Kept {
        Kept {
            per_function,
            max_calls: max_calls.max(1),
            idle: Mutex::new(Idle::default()),
            replaced: Condvar::new(),
            stopped: AtomicBool::new(false),
            started_in_pass: AtomicU64::new(0),
            started_ahead: AtomicU64::new(0),
        }
    }

    /// Starts no replacement from now on, and keeps none that ends its start later.
    pub fn stop(&self) {
        self.stopped.store(true, Ordering::SeqCst);
    }

    /// How its instances were started so far.
    pub fn started(&self) -> Started {
        Started {
            in_pass: self.started_in_pass.load(Ordering::Relaxed),
            ahead: self.started_ahead.load(Ordering::Relaxed),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Idle> {
        self.idle.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// A waiting instance of function `id`; none: the caller's call starts one. On a thread
    /// for blocking work, a replacement of the function that is starting is waited for: what
    /// is left of its load is less than a whole one in the caller's time.
    fn take(&self, id: u64) -> Option<Warm> {
        let mut idle = self.lock();
        loop {
            if let Some(warm) = idle.waiting.get_mut(&id).and_then(Vec::pop) {
                return Some(warm);
            }
            if !(BLOCKING.get() && idle.replacing.contains(&id)) {
                break;
            }
            idle = (self.replaced.wait(idle)).unwrap_or_else(PoisonError::into_inner);
        }
        self.started_in_pass.fetch_add(1, Ordering::Relaxed);
        None
    }

    /// Leaves `warm`, an instance of function `id`, waiting, unless `per_function` already
    /// are (it is then handed back to be dropped). One not called yet is taken after those
    /// called, so that an instance serves its calls to the end before its replacement does.
    fn leave(self: &Arc<Self>, idle: &mut Idle, id: u64, mut warm: Warm) -> Option<Warm> {
        let waiting = idle.waiting.entry(id).or_default();
        if waiting.len() >= self.per_function {
            return Some(warm);
        }
        warm.kept = Some(Arc::downgrade(self));
        let place = if warm.calls == 0 { 0 } else { waiting.len() };
        waiting.insert(place, warm);
        None
    }

    /// Starts a replacement of `function`'s instance just spent, unless one is starting, the
    /// function has `per_function` waiting, no warm slot is free, or the store is stopped. It
    /// starts on a thread of its own at the lowest priority, so that the calls in flight keep
    /// their cores while it loads (a pass that needs it waits for it, lending it its core).
    fn replace(self: &Arc<Self>, function: &Function) {
        let id = function.id;
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return;
        };
        let slot = {
            let mut idle = self.lock();
            let full = (idle.waiting.get(&id)).is_some_and(|w| w.len() >= self.per_function);
            if self.stopped.load(Ordering::SeqCst) || full || idle.replacing.contains(&id) {
                return;
            }
            let Ok(slot) = RESERVED.try_acquire() else {
                return;
            };
            idle.replacing.insert(id);
            slot
        };
        let replacing = Replacing(Arc::clone(self), id);
        let function = function.clone();
        // Not started (no thread to be had): the replacement is dropped, and the next pass
        // starts its own.
        let _ = std::thread::Builder::new()
            .name("gavel-warm-start".to_string())
            .stack_size(super::GUEST_THREAD_STACK)
            .spawn(move || {
                let _entered = runtime.enter();
                // Only this thread's priority, on Linux (where a priority is a thread's): a
                // failure leaves it at the process's.
                #[cfg(target_os = "linux")]
                let _ = rustix::process::nice(19);
                replacing.0.start_ahead(&function, slot);
                drop(replacing);
            });
    }

    /// Starts an instance of each of `functions` that runs warm (an interpreter's, in batch
    /// isolation, reaching the same for every row) and leaves it waiting, so that the first
    /// passes do not pay the load either; while warm slots are free.
    pub fn warm_up(self: &Arc<Self>, functions: &[ProgramFunction<'_>]) {
        for function in functions {
            if function.0.warm_id().is_none() {
                continue;
            }
            let Ok(slot) = RESERVED.try_acquire() else {
                return;
            };
            self.start_ahead(function.0, slot);
        }
    }

    /// Starts an instance of `function` here, holding `slot`, and leaves it waiting unless it
    /// does not load, the store is stopped or `per_function` wait already.
    fn start_ahead(self: &Arc<Self>, function: &Function, slot: SemaphorePermit<'static>) {
        let started = Warm::started(function);
        let mut idle = self.lock();
        let unkept = match started {
            Some(warm) if !self.stopped.load(Ordering::SeqCst) => {
                let unkept = self.leave(&mut idle, function.id, warm);
                if unkept.is_none() {
                    self.started_ahead.fetch_add(1, Ordering::Relaxed);
                }
                unkept
            }
            unkept => unkept,
        };
        drop(idle);
        // The slot is held until an instance not kept is gone.
        drop(unkept);
        drop(slot);
    }
}

/// A replacement of function `.1` starting for the store `.0`: once it ends, however it ends
/// (started, failed, never run), the function may be replaced again and the passes waiting for
/// it are told.
struct Replacing(Arc<Kept>, u64);

impl Drop for Replacing {
    fn drop(&mut self) {
        self.0.lock().replacing.remove(&self.1);
        self.0.replaced.notify_all();
    }
}

impl Drop for Batch {
    fn drop(&mut self) {
        let Some(kept) = &self.kept else {
            return;
        };
        let instances = std::mem::take(&mut *self.instances());
        let mut idle = kept.lock();
        let unkept: Vec<Warm> = (instances.into_iter())
            .filter_map(|(id, warm)| kept.leave(&mut idle, id, warm))
            .collect();
        drop(idle);
        drop(unkept);
    }
}

impl Batch {
    /// A batch under the run's bound `calls`, for a plan with `warm_graders` warm graders.
    pub fn new(calls: Arc<Semaphore>, warm_graders: usize) -> Batch {
        let warm_graders = if warm_graders > WARM_SLOTS as usize {
            0
        } else {
            warm_graders
        };
        Batch {
            calls,
            warm_graders,
            instances: Mutex::new(HashMap::new()),
            reserved: Mutex::new(None),
            kept: None,
        }
    }

    /// The batch, taking its instances from `kept` and leaving them there, when given: the
    /// instances still fit for calls go back to `kept` when the batch is dropped (`Drop for
    /// Batch`), not when its last call ends.
    pub fn keeping(mut self, kept: Option<Arc<Kept>>) -> Batch {
        self.kept = kept;
        self
    }

    /// Whether this batch's slots are reserved, reserving them if not.
    async fn reserve(&self) -> bool {
        if self.warm_graders == 0 {
            return false;
        }
        if self.lock_reserved().is_some() {
            return true;
        }
        let Ok(permit) = RESERVED.acquire_many(self.warm_graders as u32).await else {
            return false;
        };
        *self.lock_reserved() = Some(permit);
        true
    }

    fn lock_reserved(&self) -> std::sync::MutexGuard<'_, Option<SemaphorePermit<'static>>> {
        self.reserved.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn instances(&self) -> std::sync::MutexGuard<'_, HashMap<u64, Warm>> {
        self.instances
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }
}

/// Grades `batch` (a future grading consecutive samples in order) within `shared`.
///
/// `in_place`: on a thread for blocking work, where its sandboxed calls then run in place
/// rather than each hop to another thread and back: this one when it is such a thread
/// ([`block_on_here`]), else one of the runtime's. Otherwise (a batch that also waits on the
/// network, a judge's answers, which would hold that thread while it waits) on the task that
/// awaits it, each sandboxed call taking a thread for blocking work only while it runs, and
/// the batch's instances dropped on one.
pub async fn scope<F>(shared: Batch, batch: F, in_place: bool) -> F::Output
where
    F: Future + Send + 'static,
    F::Output: Send + 'static,
{
    if !in_place && !BLOCKING.get() {
        let shared = Arc::new(shared);
        let value = BATCH.scope(Arc::clone(&shared), batch).await;
        // The last of the batch: its instances' slots are reset as it goes.
        tokio::task::spawn_blocking(move || drop(shared));
        return value;
    }
    let scoped = BATCH.scope(Arc::new(shared), batch);
    if BLOCKING.get() {
        return scoped.await;
    }
    let runtime = tokio::runtime::Handle::current();
    match tokio::task::spawn_blocking(move || block_on_here(&runtime, scoped)).await {
        Ok(value) => value,
        Err(e) => std::panic::resume_unwind(e.into_panic()),
    }
}

static IN_FLIGHT: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);

/// The most sandboxed calls of graders, extractors and reward composers that have run at once
/// in this process, as the host counted them.
pub fn peak_calls_in_flight() -> usize {
    PEAK.load(Ordering::SeqCst)
}

/// One call counted in flight while it lives.
struct Counted;

impl Counted {
    fn new() -> Counted {
        let now = IN_FLIGHT.fetch_add(1, Ordering::SeqCst) + 1;
        PEAK.fetch_max(now, Ordering::SeqCst);
        Counted
    }
}

impl Drop for Counted {
    fn drop(&mut self) {
        IN_FLIGHT.fetch_sub(1, Ordering::SeqCst);
    }
}

/// How a call runs: `None` in a fresh instance, else in the warm instance the slot holds (none
/// yet: one is started), which the call leaves there to keep.
pub(super) type Place<'a> = Option<&'a mut Option<Warm>>;

thread_local! {
    /// Set on a thread for blocking work that awaits a grading in place ([`block_on_here`]):
    /// its calls run where they are made.
    static BLOCKING: Cell<bool> = const { Cell::new(false) };
    /// Set while a warm call runs on this thread: where [`call`] leaves the instance it
    /// spends, to be dropped once the call's value is handed back.
    static SPENT: RefCell<Option<Option<Warm>>> = const { RefCell::new(None) };
}

/// Awaits `future` on this thread, which must be one for blocking work (a spawned blocking
/// task's, never an async worker's), within `runtime` (its tasks, timers and sockets): the
/// sandboxed calls of `future` then run here rather than each hop to another thread and back.
/// Not tokio's `block_on`, inside which a call's WASI host functions could not wait on the
/// runtime themselves.
pub fn block_on_here<F: Future>(runtime: &tokio::runtime::Handle, future: F) -> F::Output {
    struct Restore(bool);
    impl Drop for Restore {
        fn drop(&mut self) {
            BLOCKING.set(self.0);
        }
    }
    let _entered = runtime.enter();
    let _restore = Restore(BLOCKING.replace(true));
    // Parked with no time to stop at, it never gives up: the future's value is all it returns.
    let Ok(value) = park_until(std::pin::pin!(future), || {
        std::thread::park();
        Ok::<(), Infallible>(())
    });
    value
}

/// What [`wait_here`] gives when its time passes first.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TimedOut;

/// Awaits `future` on this thread, from synchronous code that a future awaited here calls (a
/// pass's sink, written to inside [`block_on_here`]), until `until`: the thread waits, and
/// nothing else it would poll runs meanwhile.
pub fn wait_here<F: Future>(future: F, until: Instant) -> Result<F::Output, TimedOut> {
    park_until(std::pin::pin!(future), || {
        match until.checked_duration_since(Instant::now()) {
            Some(left) if !left.is_zero() => {
                std::thread::park_timeout(left);
                Ok(())
            }
            _ => Err(TimedOut),
        }
    })
}

/// Polls `future` on this thread, parked between polls by `park` until it is woken (or, a
/// spurious wake-up, not: the future is polled again); `park`'s error once it gives up.
fn park_until<F: Future, E>(
    mut future: Pin<&mut F>,
    mut park: impl FnMut() -> Result<(), E>,
) -> Result<F::Output, E> {
    /// Wakes the thread that awaits.
    struct Unpark(std::thread::Thread);
    impl std::task::Wake for Unpark {
        fn wake(self: Arc<Self>) {
            self.0.unpark();
        }
        fn wake_by_ref(self: &Arc<Self>) {
            self.0.unpark();
        }
    }
    let waker = std::task::Waker::from(Arc::new(Unpark(std::thread::current())));
    let mut context = std::task::Context::from_waker(&waker);
    loop {
        if let std::task::Poll::Ready(value) = future.as_mut().poll(&mut context) {
            return Ok(value);
        }
        park()?;
    }
}

/// Runs `call` under the batch's bound on calls in flight, in the batch's warm instance of
/// function `warm` (its id) when it is given and the batch keeps warm instances, in a fresh
/// instance otherwise; in place within a batch (whose [`scope`] is a thread for blocking work),
/// else on a thread for blocking work.
pub(super) async fn off_worker<T: Send + 'static>(
    warm: Option<u64>,
    call: impl FnOnce(Place<'_>) -> T + Send + 'static,
) -> T {
    let Ok(batch) = BATCH.try_with(Arc::clone) else {
        return here_or_off(move || call(None)).await;
    };
    let warm = match warm {
        Some(id) if batch.reserve().await => Some(id),
        _ => None,
    };
    let _permit = batch.calls.acquire().await;
    let _counted = Counted::new();
    let Some(id) = warm else {
        return here_or_off(move || call(None)).await;
    };
    let (instance, room) = {
        let mut instances = batch.instances();
        // A batch grades its samples one after another, so every other instance is in the
        // map: one more than the plan counted would outrun the slots reserved.
        (instances.remove(&id), instances.len() < batch.warm_graders)
    };
    let mut instance = match instance {
        Some(instance) => Some(instance),
        None if !room => return call(None),
        None => batch.kept.as_ref().and_then(|kept| kept.take(id)),
    };
    // The instance a call spends is dropped (its pool slot reset: milliseconds for an
    // interpreter's memory) on another thread for blocking work, so that no sample (no
    // server's request) waits for it.
    let (value, spent, instance) = here_or_off(move || {
        let (value, spent) = spending(|| call(Some(&mut instance)));
        (value, spent, instance)
    })
    .await;
    if let Some(spent) = spent {
        tokio::task::spawn_blocking(move || drop(spent));
    }
    if let Some(kept) = instance {
        batch.instances().insert(id, kept);
    }
    value
}

/// `call`'s value, run here on a thread for blocking work ([`block_on_here`]), else on one of
/// the runtime's.
async fn here_or_off<T: Send + 'static>(call: impl FnOnce() -> T + Send + 'static) -> T {
    match BLOCKING.get() {
        true => call(),
        false => call::off_worker(call).await,
    }
}

/// An instance spent by a call, waiting to be dropped, with the warm slot it holds meanwhile
/// (so that the pool never holds more than its bounds).
type Spent = (Warm, SemaphorePermit<'static>);

/// What the warm call `call` gives, and the instance it spent, unless it spent none or no warm
/// slot is free to hold it (then it is dropped now).
fn spending<T>(call: impl FnOnce() -> T) -> (T, Option<Spent>) {
    struct Clear;
    impl Drop for Clear {
        fn drop(&mut self) {
            SPENT.with(|spent| spent.borrow_mut().take());
        }
    }
    SPENT.with(|spent| *spent.borrow_mut() = Some(None));
    let clear = Clear;
    let value = call();
    let spent = SPENT.with(|spent| spent.borrow_mut().take()).flatten();
    drop(clear);
    let spent = spent.and_then(|spent| Some((spent, RESERVED.try_acquire().ok()?)));
    (value, spent)
}

/// An instance of one function's program, kept between the calls of a batch.
pub(super) struct Warm {
    store: Store<CallState>,
    /// Started, with the program loaded, by the first call, or ahead of it.
    instance: Option<Instance>,
    calls: u32,
    /// Memory held after the first call.
    settled: usize,
    /// The store it was kept in, which replaces it ahead once a call spends it.
    kept: Option<Weak<Kept>>,
}

impl Warm {
    /// A new instance of `function`'s program reaching what `grants` grants, not started.
    fn new(function: &Function, grants: CallGrants<'_>) -> wasmtime::Result<Warm> {
        let pack = &function.pack;
        Ok(Warm {
            store: call::new_store(&pack.engine, &pack.limits, grants)?,
            instance: None,
            calls: 0,
            settled: 0,
            kept: None,
        })
    }

    /// Its instance, started and `program` loaded into it (on its load budget) when it has
    /// none; the store is armed for a call.
    fn loaded(&mut self, function: &Function, program: &Program) -> wasmtime::Result<Instance> {
        if let Some(instance) = self.instance {
            return Ok(instance);
        }
        let pack = &function.pack;
        let store = &mut self.store;
        let instance = pack.pre.instantiate(&mut *store)?;
        if let Err(failed) = program.load(&pack.exports, &instance, store, &pack.limits)? {
            return Err(wasmtime::Error::new(failed));
        }
        self.instance = Some(instance);
        Ok(instance)
    }

    /// A new instance of `function`'s program, reaching what its calls reach, started and
    /// loaded as its first call would, ahead of it; none when it does not load.
    fn started(function: &Function) -> Option<Warm> {
        let program = function.program.as_ref()?;
        let access = function.warm_access();
        function.reaching(access.as_ref(), |grants| {
            let mut warm = Warm::new(function, grants).ok()?;
            call::arm(&mut warm.store, &function.pack.limits).ok()?;
            warm.loaded(function, program).ok()?;
            Some(warm)
        })
    }
}

/// Runs `f` in `slot`'s warm instance of `function`'s `program`, started (and the program
/// loaded, on its load budget) when there is none, reaching what `grants` grants (the same for
/// every call of a warm function: one whose row chooses a folder runs fresh); leaves it in
/// `slot` unless it must be replaced.
pub(super) fn call<T>(
    function: &Function,
    program: &Program,
    slot: &mut Option<Warm>,
    grants: CallGrants<'_>,
    f: impl FnOnce(&Exports, &Instance, &mut Store<CallState>) -> wasmtime::Result<T>,
) -> Outcome<T> {
    let pack = &function.pack;
    let mut warm = match slot.take() {
        Some(warm) => warm,
        None => match Warm::new(function, grants) {
            Ok(warm) => warm,
            Err(e) => return Outcome::host_failure(&e),
        },
    };
    let result = call::arm(&mut warm.store, &pack.limits)
        .and_then(|()| warm.loaded(function, program))
        .and_then(|instance| f(&pack.exports, &instance, &mut warm.store));
    let outcome = call::outcome(&warm.store, &pack.limits, result);
    warm.calls += 1;
    let state = warm.store.data();
    let memory = state.limiter.peak_memory;
    if warm.calls == 1 {
        warm.settled = memory;
    }
    let kept = warm.kept.as_ref().and_then(Weak::upgrade);
    let max_calls = kept.as_ref().map_or(MAX_CALLS, |kept| kept.max_calls);
    let keep = outcome.result.is_ok()
        && warm.calls < max_calls
        && memory <= warm.settled.saturating_add(MAX_GROWTH);
    // Spent, it is replaced unless a replacement is starting or enough wait already (the one
    // started ahead, a quarter of its calls before its last, may not have been: another was
    // starting, or as many as kept were waiting).
    if (!keep || warm.calls == max_calls - max_calls / 4)
        && let Some(kept) = kept
    {
        kept.replace(function);
    }
    if keep {
        // The next call's stdout and stderr start empty, with their whole caps.
        state.clear_output();
        *slot = Some(warm);
    } else {
        SPENT.with(|spent| {
            if let Some(spent) = spent.borrow_mut().as_mut() {
                *spent = Some(warm);
            }
        });
    }
    outcome
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The thread grading a batch, and those its warm and fresh calls ran on, the batch
    /// scoped `in_place` or not.
    fn threads(in_place: bool) -> [std::thread::ThreadId; 3] {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .expect("a runtime");
        let batch = Batch::new(Arc::new(Semaphore::new(1)), 1);
        runtime.block_on(scope(
            batch,
            async {
                let warm = off_worker(Some(next_function_id()), |place| {
                    assert!(place.is_some(), "a warm call has its place");
                    std::thread::current().id()
                })
                .await;
                let fresh = off_worker(None, |_| std::thread::current().id()).await;
                [std::thread::current().id(), warm, fresh]
            },
            in_place,
        ))
    }

    /// A batch scoped in place is graded on a thread for blocking work, where its calls, warm
    /// and fresh, run without hopping to another thread.
    #[test]
    fn a_batchs_calls_run_on_the_thread_that_grades_it() {
        let [grading, warm, fresh] = threads(true);
        assert_eq!(warm, grading);
        assert_eq!(fresh, grading);
    }

    /// A batch not scoped in place (one that waits on a judge) is graded on its task, and each
    /// of its calls, warm or fresh, runs on a thread for blocking work, never the task's.
    #[test]
    fn a_batch_waiting_on_the_network_sends_its_calls_off_its_thread() {
        let [grading, warm, fresh] = threads(false);
        assert_ne!(warm, grading);
        assert_ne!(fresh, grading);
    }
}
