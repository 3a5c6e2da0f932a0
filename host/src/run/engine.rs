//! Runs a plan over a stream of items: parse and grade in parallel, write results in input
//! order as they finish, aggregate, and stop cleanly on Ctrl-C.
//!
//! Results are written in the order of the input stream (a bounded reorder window keeps memory
//! flat), so a run's `results.jsonl` is the same run after run, and an interrupted run's file is
//! always a prefix of the complete one: `--resume` counts its lines, skips that many items and
//! appends the rest, ending byte for byte where an uninterrupted run ends.

use std::collections::BTreeMap;
use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Context, Poll};
use std::thread::ThreadId;

use crate::config::reward::RewardSpec;
use crate::grade::pack::{self, GUEST_THREAD_STACK, Isolation};
use crate::input::dataset::{
    IdClashes, Item, ItemError, RowError, RowParser, SourceError, peek_id,
};
use crate::input::sample::{Sample, SampleId};
pub use crate::input::select::{Filter, Selected, Selection};
use crate::output::result::{ErrorCategory, LineWriter, SampleError, SampleResult};
use crate::plan::Plan;
use crate::run::grading::grade_sample;

static ON_SECOND_CTRL_C: std::sync::OnceLock<fn()> = std::sync::OnceLock::new();

/// What a second Ctrl-C does once what finished is flushed (the command line exits): the first
/// stops starting samples, and without this hook the second does no more.
pub fn on_second_ctrl_c(hook: fn()) {
    let _ = ON_SECOND_CTRL_C.set(hook);
}

/// What the validation pass found.
#[derive(Debug, Default)]
pub struct Validation {
    /// Selected items.
    pub total: u64,
    /// The first invalid rows, in stream order.
    pub errors: Vec<RowError>,
    /// How many rows are invalid in all.
    pub invalid: u64,
    /// The first rows that are valid but will likely not grade as meant (a ground truth that
    /// `regex_match` cannot compile grades 0), in stream order, each with why.
    pub warnings: Vec<RowError>,
    /// How many such rows in all.
    pub warned: u64,
}

/// How many invalid rows a report lists.
pub const ERRORS_LISTED: usize = 10;

/// Parses every selected item (in parallel) without grading, and checks each sample against
/// the plan's judges, so that a bad row stops the run before any grading.
pub fn validate(
    mut selected: Selected,
    parser: &RowParser,
    plan: &Plan,
    workers: usize,
) -> Result<Validation, SourceError> {
    let judges = plan.judges();
    let at_row = |item: &Item, message: String| RowError {
        file: item.row.file.to_path_buf(),
        line: item.row.number,
        column: 0,
        message,
    };
    // The row's warnings, or why it is invalid.
    let check = |item: &Item| -> Result<Vec<String>, RowError> {
        let sample = parser.parse(item)?;
        for (key, judge) in &judges {
            judge
                .check_sample(&sample)
                .map_err(|message| at_row(item, format!("graders.{key}: {message}")))?;
        }
        Ok(plan.sample_warnings(&sample))
    };
    // A defect met reading one row is that row's error, not a worker lost with its rows and a
    // run said to be valid.
    let check = |item: &Item| {
        unwound(|| check(item)).unwrap_or_else(|panicked| {
            Err(at_row(
                item,
                format!("gavel failed reading this row ({panicked}); please report it"),
            ))
        })
    };
    // Each item with the warning of its id clashing with an earlier row's, found in order.
    let (tx, rx) = std::sync::mpsc::sync_channel::<Vec<(Item, Option<String>)>>(workers * 2);
    let rx = std::sync::Mutex::new(rx);
    let mut validation = Validation::default();
    let mut found: Vec<(u64, RowError)> = Vec::new();
    let mut warned_rows: Vec<(u64, RowError)> = Vec::new();
    let mut source_error = None;
    std::thread::scope(|scope| {
        let handles: Vec<_> = (0..workers.max(1))
            .map(|_| {
                scope.spawn(|| {
                    let mut bad: Vec<(u64, RowError)> = Vec::new();
                    let mut invalid = 0u64;
                    let mut warnings: Vec<(u64, RowError)> = Vec::new();
                    let mut warned = 0u64;
                    loop {
                        let batch = {
                            let guard =
                                rx.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
                            guard.recv()
                        };
                        let Ok(batch) = batch else { break };
                        for (item, clash) in &batch {
                            match check(item) {
                                Err(e) => {
                                    invalid += 1;
                                    keep_first(&mut bad, item.seq, e);
                                }
                                Ok(mut found) if !found.is_empty() || clash.is_some() => {
                                    found.splice(0..0, clash.clone());
                                    warned += 1;
                                    keep_first(
                                        &mut warnings,
                                        item.seq,
                                        at_row(item, found.join("; ")),
                                    );
                                }
                                Ok(_) => {}
                            }
                        }
                    }
                    (bad, invalid, warnings, warned)
                })
            })
            .collect();
        let mut batch = Vec::with_capacity(BATCH);
        let mut clashes = IdClashes::default();
        while let Some(next) = selected.next_item() {
            validation.total += 1;
            match next {
                Ok(item) => {
                    let clash = clashes.check(&item.row);
                    batch.push((item, clash));
                }
                Err(ItemError::Row(e)) => {
                    validation.invalid += 1;
                    found.push((validation.total, e));
                }
                Err(ItemError::Source(e)) => {
                    source_error = Some(e);
                    break;
                }
            }
            if batch.len() == BATCH && tx.send(std::mem::take(&mut batch)).is_err() {
                break;
            }
        }
        if !batch.is_empty() {
            let _ = tx.send(batch);
        }
        drop(tx);
        for handle in handles {
            if let Ok((bad, invalid, warnings, warned)) = handle.join() {
                found.extend(bad);
                validation.invalid += invalid;
                warned_rows.extend(warnings);
                validation.warned += warned;
            }
        }
    });
    if let Some(e) = source_error {
        return Err(e);
    }
    // A row no recorded run names is not graded: said after the items' own warnings.
    if let Some((dataset, rows)) = selected.rows_without_run() {
        for (line, id) in rows {
            validation.warned += 1;
            let said = RowError {
                file: dataset.to_path_buf(),
                line,
                column: 0,
                message: format!(
                    "no recorded run of the suite's trajectories names this row's id ({id}): \
                     the row is not graded"
                ),
            };
            keep_first(&mut warned_rows, validation.total + line as u64, said);
        }
    }
    let first = |mut rows: Vec<(u64, RowError)>| {
        rows.sort_by_key(|(seq, _)| *seq);
        rows.into_iter()
            .take(ERRORS_LISTED)
            .map(|(_, e)| e)
            .collect()
    };
    validation.errors = first(found);
    validation.warnings = first(warned_rows);
    Ok(validation)
}

/// Adds `row` at `seq` to `rows`, which keeps the first [`ERRORS_LISTED`] by `seq`.
fn keep_first(rows: &mut Vec<(u64, RowError)>, seq: u64, row: RowError) {
    rows.push((seq, row));
    rows.sort_by_key(|(seq, _)| *seq);
    rows.truncate(ERRORS_LISTED);
}

/// Items per unit of parallel work when no grader waits on the network: enough to pay for
/// handing work between threads, few enough that a batch's rows are still in the cache when they
/// are parsed (the measurements: bench/README.md, twentieth profile).
const BATCH: usize = 128;

/// Rows of a batch parsed before any of them is graded, so that the parser's code and the
/// graders' each stay in the instruction cache for a run of rows rather than evicting each other
/// at every row (bench/README.md, nineteenth profile).
const PARSED_AHEAD: usize = 32;

/// Receives results in stream order, a batch at a time, with their lines of `results.jsonl`
/// (one a result, in the same order, each with its newline).
pub trait Sink: Send {
    fn write(&mut self, results: &[SampleResult], lines: &[u8]) -> std::io::Result<()>;
    /// Ctrl-C: grading stops; what is written so far must reach the disk now, and each write
    /// after this as it is made.
    fn stopping(&mut self) -> std::io::Result<()>;
    /// When the pass must stop, if ever (a served request's deadline): no sample starts after
    /// it, and those started finish, each sandboxed call within its own limits.
    fn deadline(&self) -> Option<std::time::Instant> {
        None
    }
    /// What each item read is shown to, in order, before it is graded or passed over: the
    /// reader then reads the whole selection, and stops at the first item it refuses.
    fn check(&self) -> Option<Arc<Mutex<dyn Check>>> {
        None
    }
}

/// The `results.jsonl` lines of a batch of results, serialized on the worker that graded them so
/// that the one thread writing in stream order only copies bytes.
struct ResultLines {
    text: Vec<u8>,
    /// Where each result's line ends in `text`.
    ends: Vec<usize>,
    /// Why the result after the last line could not be serialized (none after it was tried).
    failed: Option<String>,
}

impl ResultLines {
    fn of(results: &[SampleResult]) -> ResultLines {
        let mut lines = ResultLines {
            text: Vec::new(),
            ends: Vec::with_capacity(results.len()),
            failed: None,
        };
        let mut writer = LineWriter::default();
        for (i, result) in results.iter().enumerate() {
            if let Err(e) = writer.write(result, &mut lines.text) {
                lines.failed = Some(format!("cannot write a result: {e}"));
                break;
            }
            lines.text.push(b'\n');
            lines.ends.push(lines.text.len());
            if i == 0 {
                // The lines of a batch are about as long as its first: room for them all, and a
                // quarter more, saves growing (and copying) the buffer as it fills.
                let rest = results.len() - 1;
                lines.text.reserve(lines.text.len() * (rest + rest / 4));
            }
        }
        lines
    }

    /// How many results have lines.
    fn len(&self) -> usize {
        self.ends.len()
    }

    /// The lines of the first `n` results, which must have them.
    fn first(&self, n: usize) -> &[u8] {
        &self.text[..n.checked_sub(1).map_or(0, |last| self.ends[last])]
    }

    /// Why the results past [`ResultLines::len`] have no line.
    fn failure(&self) -> String {
        self.failed
            .clone()
            .unwrap_or_else(|| "a result has no line".to_string())
    }
}

/// Results the writer is done with, each batch freed by the worker thread that graded it when it
/// starts its next batch: mimalloc frees a block on the thread that took it at a fraction of the
/// cost of a free from another thread.
#[derive(Clone, Default)]
struct Spent(Arc<Mutex<Vec<GradedBatch>>>);

/// A batch's results with the thread that graded them.
type GradedBatch = (ThreadId, Vec<SampleResult>);

impl Spent {
    fn put(&self, graded_on: ThreadId, results: Vec<SampleResult>) {
        self.0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push((graded_on, results));
    }

    /// Frees the batches this thread graded.
    fn free(&self) {
        let here = std::thread::current().id();
        let mine: Vec<_> = {
            let mut spent = self.0.lock().unwrap_or_else(PoisonError::into_inner);
            spent
                .extract_if(.., |(thread, _)| *thread == here)
                .collect()
        };
        drop(mine);
    }
}

/// Everything a grading pass needs.
pub struct Pass<'a> {
    pub plan: Arc<Plan>,
    pub parser: Arc<RowParser>,
    pub reward: Option<Arc<RewardSpec>>,
    pub workers: usize,
    /// Ends the pass at the first invalid row, which the sink does not receive, nor any
    /// result after it; else an invalid row is an error result like any other.
    pub refuse_invalid: bool,
    /// `--retry-errors`: only the items at these positions of the selection are graded, each
    /// keeping the grades of its earlier result that are not in error.
    pub retry: Option<BTreeMap<u64, SampleResult>>,
    /// `--resume` of a plan with warm Python graders: the first items of the selection (after
    /// its skip, which is then a whole number of batches) are graded again, so that the batch
    /// the earlier run left unfinished starts from its first sample as it did, and not written.
    pub replay: u64,
    pub sink: &'a mut dyn Sink,
}

/// Checks the items a pass reads against what an earlier run wrote at their places.
pub trait Check: Send {
    /// Whether `next`, the next item of the selection, is the earlier run's at its place.
    fn item(&mut self, next: &Result<Item, ItemError>) -> bool;
}

/// How a pass grades in batches: the engine's own unit of work for a plan without Python, one
/// sample at a time for a plan whose Python calls are each fresh (so that they run in
/// parallel), and the warm instances' batch ([`pack::BATCH_ROWS`]) for a plan with warm ones.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Batching {
    pub size: usize,
    /// Warm Python graders: a batch holds an instance of each.
    pub warm_graders: usize,
    /// Whether the plan makes sandboxed calls: each batch is then graded on a thread for
    /// blocking work, where they run in place, or, with a judge, each call on one while it
    /// runs ([`pack::scope`]).
    pub sandboxed: bool,
}

impl Batching {
    /// How `plan` is graded; `retrying` (`--retry-errors`) grades each retried sample's Python
    /// calls in fresh instances, whichever samples are retried beside it.
    pub fn of(plan: &Plan, retrying: bool) -> Batching {
        let python = plan.python_functions();
        let warm_graders = if retrying {
            0
        } else {
            (python.iter())
                .filter(|(_, isolation)| *isolation == Isolation::Batch)
                .count()
        };
        let size = if warm_graders > 0 {
            pack::BATCH_ROWS
        } else if plan.has_judge() || !python.is_empty() {
            1
        } else {
            BATCH
        };
        Batching {
            size,
            warm_graders,
            sandboxed: plan.has_sandboxed(),
        }
    }
}

/// How a pass ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PassEnd {
    Complete,
    Interrupted,
    /// An invalid row was found with `refuse_invalid`: the results before it went to the sink.
    Refused,
    /// A judge's endpoint refused for good: the results graded before went to the sink.
    JudgeDown,
}

impl Pass<'_> {
    /// Grades the selected items and hands each result to the sink in stream order: a
    /// [`Reader`] thread reads them into batches, a [`Dispatcher`] starts a [`BatchGrader`]
    /// task for each batch as the writer makes room, and a [`Writer`] hands their results to
    /// the sink in order.
    pub fn run(self, selected: Selected) -> Result<PassEnd, PassError> {
        workers_runtime(self.workers)?.block_on(self.run_within(selected, None))
    }

    /// [`Pass::run`] on the runtime it is awaited on, which may outlive it (a server's, shared
    /// by its requests); the pass's batches take their warm Python instances from `kept` and
    /// leave them there when it is given.
    pub async fn run_within(
        self,
        selected: Selected,
        kept: Option<Arc<pack::Kept>>,
    ) -> Result<PassEnd, PassError> {
        let has_judge = self.plan.has_judge();
        let batching = Batching::of(&self.plan, self.retry.is_some());
        // Batches read ahead of the writer. Without a judge, two a worker keep both busy; more
        // only held more rows in memory (four a worker made the steady state 6 MiB larger,
        // the same throughput).
        let in_flight = if has_judge {
            (self.workers * 2).max(256)
        } else {
            self.workers * 2
        };
        let halt = Arc::new(Halt::default());
        let spent = Spent::default();
        let deadline = self.sink.deadline();
        let check = self.sink.check();
        let mut writer = Writer {
            sink: self.sink,
            refuse_invalid: self.refuse_invalid,
            pending: BTreeMap::new(),
            next: 0,
            write_error: None,
            refused: false,
            cut: false,
            stopping: false,
            spent: spent.clone(),
            halt: halt.clone(),
        };
        // One watcher of the deadline and Ctrl-C (a task each cost a served request two more
        // wake-ups), which ends with the pass (the set aborts it when dropped), not with the
        // runtime, which may outlive it.
        let mut watchers = tokio::task::JoinSet::new();
        let watching = halt.clone();
        watchers.spawn(async move {
            let at_deadline = async {
                if let Some(deadline) = deadline {
                    tokio::time::sleep_until(deadline.into()).await;
                    watching.raise();
                }
            };
            tokio::join!(at_deadline, on_ctrl_c(watching.clone()));
        });
        let (result_tx, mut result_rx) = tokio::sync::mpsc::unbounded_channel();
        let held = selected.held();
        let reader = Reader {
            selected,
            retry: self.retry,
            check,
            batch_size: batching.size,
            halt: halt.clone(),
        };
        // Rows in memory already (a served request's) are read here, before any is graded:
        // the thread a file's reader needs cost a request two wake-ups. A single batch of
        // them is graded here too, beside the writer, rather than in tasks of its own.
        let mut here = false;
        let (batch_rx, reader) = if held {
            let mut batches = Vec::new();
            let read = reader.run(|batch| {
                batches.push(batch);
                true
            });
            here = batches.len() == 1;
            let (batch_tx, batch_rx) = tokio::sync::mpsc::channel(batches.len().max(1));
            for batch in batches {
                // The channel has room for them all.
                let _ = batch_tx.try_send(batch);
            }
            (batch_rx, ReaderEnd::Read(read))
        } else {
            let (batch_tx, batch_rx) = tokio::sync::mpsc::channel(2);
            let reading = tokio::task::spawn_blocking(move || {
                reader.run(|batch| batch_tx.blocking_send(batch).is_ok())
            });
            (batch_rx, ReaderEnd::Reading(reading))
        };
        let dispatcher = Dispatcher {
            batches: batch_rx,
            permits: Arc::new(tokio::sync::Semaphore::new(in_flight)),
            warm_graders: batching.warm_graders,
            sandboxed: batching.sandboxed,
            // Without a judge, one a worker.
            grading: (batching.sandboxed && !has_judge)
                .then(|| Arc::new(tokio::sync::Semaphore::new(self.workers.max(1)))),
            kept,
            here,
            grader: BatchGrader {
                plan: self.plan,
                parser: self.parser,
                reward: self.reward,
                has_judge,
                replay: self.replay,
                // Sandboxed calls in flight, across the pass: one a worker.
                calls: Arc::new(tokio::sync::Semaphore::new(self.workers.max(1))),
                halt: halt.clone(),
                spent,
                results: result_tx,
            },
        };
        let dispatched = if here {
            tokio::join!(dispatcher.run(), writer.run(&mut result_rx)).0
        } else {
            let dispatcher = tokio::spawn(dispatcher.run());
            writer.run(&mut result_rx).await;
            dispatcher.await.unwrap_or(u64::MAX)
        };
        if !writer.refused && writer.next < dispatched {
            // A batch never came back: its samples must not vanish from a finished run.
            return Err(PassError::Io(
                "grading stopped unexpectedly before every sample was graded; the results \
                 written so far are kept (gavel run --resume continues)"
                    .to_string(),
            ));
        }
        let read = match reader {
            ReaderEnd::Read(read) => read,
            ReaderEnd::Reading(reading) => reading
                .await
                .map_err(|_| PassError::Io("the reader thread failed".to_string()))?,
        };
        read.map_err(PassError::Source)?;
        if let Some(e) = writer.write_error {
            return Err(PassError::Io(e));
        }
        Ok(if writer.refused {
            PassEnd::Refused
        } else if halt.judge_down.load(Ordering::SeqCst) {
            PassEnd::JudgeDown
        } else if halt.interrupted.load(Ordering::SeqCst) {
            PassEnd::Interrupted
        } else {
            PassEnd::Complete
        })
    }
}

/// The runtime a pass of its own runs on: `workers` threads (at least one), each (and each
/// of its blocking threads) with the stack a sandboxed call needs.
pub fn workers_runtime(workers: usize) -> Result<tokio::runtime::Runtime, PassError> {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(workers.max(1))
        .thread_stack_size(GUEST_THREAD_STACK)
        .enable_all()
        .build()
        .map_err(|e| PassError::Io(format!("cannot start the worker threads: {e}")))
}

/// Raises `halt` at Ctrl-C; a second one calls the hook of [`on_second_ctrl_c`].
async fn on_ctrl_c(halt: Arc<Halt>) {
    if tokio::signal::ctrl_c().await.is_ok() {
        halt.interrupted.store(true, Ordering::SeqCst);
        halt.raise();
        // Whoever presses it twice means now. The writer flushes what finished as soon as it
        // sees the first; the second waits for that, briefly, so that no finished line is lost.
        if let Some(hook) = ON_SECOND_CTRL_C.get()
            && tokio::signal::ctrl_c().await.is_ok()
        {
            for _ in 0..50 {
                if halt.flushed.load(Ordering::SeqCst) {
                    break;
                }
                tokio::time::sleep(std::time::Duration::from_millis(10)).await;
            }
            hook();
        }
    }
}

/// Items read from the stream, numbered in stream order.
struct Batch {
    index: u64,
    works: Vec<Work>,
}

/// Reads the selected items into batches, on a thread of its own (or, for items held in
/// memory, on the pass's task), until the stream ends or the pass is halted.
struct Reader {
    selected: Selected,
    /// `--retry-errors`: the positions graded again, with their earlier results.
    retry: Option<BTreeMap<u64, SampleResult>>,
    check: Option<Arc<Mutex<dyn Check>>>,
    batch_size: usize,
    halt: Arc<Halt>,
}

/// How the reader's end is known: read already, or from its thread.
enum ReaderEnd {
    Read(Result<(), SourceError>),
    Reading(tokio::task::JoinHandle<Result<(), SourceError>>),
}

impl Reader {
    /// Reads until done, handing each batch to `send` (`false`: no more are wanted); `Err`
    /// when the stream cannot be read.
    fn run(mut self, mut send: impl FnMut(Batch) -> bool) -> Result<(), SourceError> {
        let mut index = 0u64;
        let mut works = Vec::with_capacity(self.batch_size);
        // Retrying, the rows after the last to retry are not read, unless they are checked.
        while !self.halt.is_raised()
            && (self.check.is_some() || self.retry.as_ref().is_none_or(|r| !r.is_empty()))
        {
            let Some(next) = self.selected.next_item() else {
                break;
            };
            if let Some(check) = &self.check
                && !check
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .item(&next)
            {
                break;
            }
            let mut previous = None;
            if let Some(retry) = self.retry.as_mut()
                && !matches!(next, Err(ItemError::Source(_)))
            {
                match retry.remove(&self.selected.position()) {
                    Some(result) => previous = Some(Box::new(result)),
                    None => continue,
                }
            }
            match next {
                Ok(item) => works.push(Work::Item(item, previous)),
                Err(ItemError::Row(e)) => works.push(Work::Invalid(e)),
                Err(ItemError::Source(e)) => return Err(e),
            }
            if works.len() == self.batch_size {
                let batch = Batch {
                    index,
                    works: std::mem::take(&mut works),
                };
                if !send(batch) {
                    return Ok(());
                }
                index += 1;
            }
        }
        if !works.is_empty() {
            send(Batch { index, works });
        }
        Ok(())
    }
}

/// Starts a grading task for each batch read, once the writer has room for its results: a
/// batch's permit travels with its results and is released once they are written, so a slow
/// writer holds back grading instead of letting results pile up.
struct Dispatcher {
    batches: tokio::sync::mpsc::Receiver<Batch>,
    permits: Arc<tokio::sync::Semaphore>,
    /// Warm Python graders: each batch holds an instance of each.
    warm_graders: usize,
    /// Whether the plan makes sandboxed calls (see [`Batching::sandboxed`]).
    sandboxed: bool,
    /// Batches of sandboxed calls graded at once, when bounded: each holds its place until its
    /// warm instances are dropped, so that its calls never wait for another batch's, and a
    /// batch takes the pool slot a finished one gave back rather than another (a slot's first
    /// reset writes its whole memory image over pages still shared with the image, a fault
    /// each).
    grading: Option<Arc<tokio::sync::Semaphore>>,
    /// Where batches find warm instances left by earlier passes, and leave theirs.
    kept: Option<Arc<pack::Kept>>,
    /// Each batch is graded on the dispatcher's task, one after another, not in a task of
    /// its own.
    here: bool,
    grader: BatchGrader,
}

impl Dispatcher {
    /// Dispatches until the reader ends or the pass is halted, and waits for the batches to
    /// end (their warm instances left in the pass's store, where it has one); how many batches
    /// it dispatched.
    async fn run(mut self) -> u64 {
        let mut dispatched = 0u64;
        let mut grading = tokio::task::JoinSet::new();
        while let Some(batch) = self.batches.recv().await {
            while grading.try_join_next().is_some() {}
            let Ok(permit) = self.permits.clone().acquire_owned().await else {
                break;
            };
            let place = match &self.grading {
                Some(bound) => match bound.clone().acquire_owned().await {
                    Ok(place) => Some(place),
                    Err(_) => break,
                },
                None => None,
            };
            if self.grader.halt.is_raised() {
                break;
            }
            dispatched += 1;
            let graded = self.grader.clone().grade(batch, permit);
            if self.sandboxed {
                let shared = pack::Batch::new(self.grader.calls.clone(), self.warm_graders)
                    .keeping(self.kept.clone());
                // With a judge, a batch waits on its answers: on the task, not a thread.
                let graded = pack::scope(shared, graded, !self.grader.has_judge);
                let graded = async move {
                    graded.await;
                    drop(place);
                };
                self.start(&mut grading, graded).await;
            } else {
                self.start(&mut grading, graded).await;
            }
        }
        while grading.join_next().await.is_some() {}
        dispatched
    }

    /// Grades a batch here, or starts it in a task of its own.
    async fn start(
        &self,
        grading: &mut tokio::task::JoinSet<()>,
        graded: impl Future<Output = ()> + Send + 'static,
    ) {
        if self.here {
            graded.await;
        } else {
            grading.spawn(graded);
        }
    }
}

/// A batch's results on their way to the writer.
struct Finished {
    index: u64,
    graded: Graded,
    lines: ResultLines,
    graded_on: ThreadId,
    /// Released once the results are written.
    permit: tokio::sync::OwnedSemaphorePermit,
}

/// Grades a batch: parses its rows, grades each sample, and sends the results on.
#[derive(Clone)]
struct BatchGrader {
    plan: Arc<Plan>,
    parser: Arc<RowParser>,
    reward: Option<Arc<RewardSpec>>,
    has_judge: bool,
    /// Results of the first batch graded again and not written (see [`Pass::replay`]).
    replay: u64,
    calls: Arc<tokio::sync::Semaphore>,
    halt: Arc<Halt>,
    spent: Spent,
    results: tokio::sync::mpsc::UnboundedSender<Finished>,
}

impl BatchGrader {
    async fn grade(self, batch: Batch, permit: tokio::sync::OwnedSemaphorePermit) {
        let BatchGrader {
            plan,
            parser,
            reward,
            has_judge,
            halt,
            ..
        } = &self;
        self.spent.free();
        let mut graded = Graded {
            results: Vec::with_capacity(batch.works.len()),
            cut: false,
        };
        'batch: for works in batch.works.chunks(PARSED_AHEAD) {
            let parsed: Vec<_> = works.iter().map(|work| parse_work(parser, work)).collect();
            // Graded where they lie: a sample is some hundreds of bytes, and moving each out of
            // the list and into the grading cost a copy.
            for (work, sample) in works.iter().zip(&parsed) {
                let kept = work.kept();
                let result = match sample {
                    Ok(_) if halt.is_raised() => None,
                    // Built-ins take microseconds and a pack call is bounded by its deadline: a
                    // started sample finishes, graded as before.
                    Ok(sample) if !has_judge && !plan.asks_model(sample) => {
                        Some(grade(plan, reward.as_deref(), sample, kept).await)
                    }
                    Ok(sample) => {
                        let grading = grade(plan, reward.as_deref(), sample, kept);
                        let result = halt.unless_raised(grading).await;
                        // Graded while a judge's endpoint failed for good: its grade says so,
                        // and no such result is kept.
                        if plan.judge_down().is_some() {
                            halt.judge_down.store(true, Ordering::SeqCst);
                            halt.raise();
                            None
                        } else {
                            result
                        }
                    }
                    Err(invalid) => Some(invalid.clone()),
                };
                let Some(result) = result else {
                    graded.cut = true;
                    break 'batch;
                };
                graded.results.push(result);
            }
        }
        if batch.index == 0 {
            let replayed = graded.results.len().min(self.replay as usize);
            graded.results.drain(..replayed);
        }
        let lines = ResultLines::of(&graded.results);
        let _ = self.results.send(Finished {
            index: batch.index,
            graded,
            lines,
            graded_on: std::thread::current().id(),
            permit,
        });
    }
}

/// Hands the batches' results to the sink in stream order, as the batches before each are in.
struct Writer<'s> {
    sink: &'s mut dyn Sink,
    refuse_invalid: bool,
    /// Batches in before one ahead of them.
    pending: BTreeMap<u64, Finished>,
    /// The index of the next batch to write.
    next: u64,
    write_error: Option<String>,
    /// An invalid row was met with `refuse_invalid`: nothing after it is written.
    refused: bool,
    /// A batch that stopped short ends what is written: the file stays a prefix.
    cut: bool,
    /// The pass is halted.
    stopping: bool,
    spent: Spent,
    halt: Arc<Halt>,
}

impl Writer<'_> {
    /// Writes the batches' results as they come in, until every grading task is done.
    async fn run(&mut self, results: &mut tokio::sync::mpsc::UnboundedReceiver<Finished>) {
        loop {
            let received = tokio::select! {
                received = results.recv() => received,
                () = self.halt.raised(), if !self.stopping => {
                    self.stop();
                    continue;
                }
            };
            let Some(finished) = received else {
                break;
            };
            self.pending.insert(finished.index, finished);
            while let Some(finished) = self.pending.remove(&self.next) {
                self.next += 1;
                self.write(finished);
            }
        }
    }

    /// The pass is halted: after Ctrl-C, what is written reaches the disk now.
    fn stop(&mut self) {
        self.stopping = true;
        if self.halt.interrupted.load(Ordering::SeqCst) {
            if let Err(e) = self.sink.stopping() {
                self.write_error.get_or_insert(e.to_string());
            }
            self.halt.flushed.store(true, Ordering::SeqCst);
        }
    }

    /// Writes the results of the next batch, unless what is written ended before it.
    fn write(&mut self, finished: Finished) {
        let Finished {
            graded,
            lines,
            graded_on,
            permit,
            ..
        } = finished;
        let results = graded.results;
        if !self.refused && self.write_error.is_none() && !self.cut {
            // The results before the first that is not written go in one write: a copy of the
            // whole batch into a buffer cost as much as writing it.
            let invalid = (self.refuse_invalid)
                .then(|| results.iter().position(SampleResult::is_invalid_row))
                .flatten();
            let n = invalid.unwrap_or(results.len()).min(lines.len());
            if let Err(e) = self.sink.write(&results[..n], lines.first(n)) {
                self.write_error = Some(e.to_string());
            } else if invalid == Some(n) {
                self.refused = true;
            } else if n < results.len() {
                self.write_error = Some(lines.failure());
            }
            if self.refused || self.write_error.is_some() {
                self.halt.raise();
            }
            self.cut = graded.cut;
        }
        self.spent.put(graded_on, results);
        drop(permit);
    }
}

#[derive(Debug, thiserror::Error)]
pub enum PassError {
    #[error(transparent)]
    Source(SourceError),
    #[error("{0}")]
    Io(String),
}

/// A batch's results, and whether it stopped short of its end because the pass was halted.
struct Graded {
    results: Vec<SampleResult>,
    cut: bool,
}

/// Ends a pass early, seen by the reader, the dispatcher and every grading task: raised by
/// Ctrl-C (`interrupted`), by a judge whose endpoint cannot be used (`judge_down`), or by the
/// writer when nothing more will be written.
#[derive(Default)]
struct Halt {
    raised: AtomicBool,
    interrupted: AtomicBool,
    /// A judge's endpoint refused for good (see [`Plan::judge_down`]).
    judge_down: AtomicBool,
    /// After Ctrl-C: what finished is on disk, and every later write goes straight there.
    flushed: AtomicBool,
    waiters: tokio::sync::Notify,
}

impl Halt {
    fn raise(&self) {
        self.raised.store(true, Ordering::SeqCst);
        self.waiters.notify_waiters();
    }

    fn is_raised(&self) -> bool {
        self.raised.load(Ordering::SeqCst)
    }

    /// Returns once the pass is halted.
    async fn raised(&self) {
        let raised = self.waiters.notified();
        let mut raised = std::pin::pin!(raised);
        // Registered before the flag is read, so a raise in between is not missed.
        raised.as_mut().enable();
        if !self.is_raised() {
            raised.await;
        }
    }

    /// What `grading` comes to, or `None` if the pass was halted first: a judge's reply can
    /// take seconds, so a halt drops the grading mid-call, its request with it.
    async fn unless_raised<T>(&self, grading: impl Future<Output = T>) -> Option<T> {
        tokio::select! {
            biased;
            () = self.raised() => None,
            result = grading => Some(result),
        }
    }
}

enum Work {
    /// An item, with its earlier result when `--retry-errors` grades it again.
    Item(Item, Option<Box<SampleResult>>),
    Invalid(RowError),
}

impl Work {
    /// The earlier result whose kept grades are not graded again.
    fn kept(&self) -> Option<&SampleResult> {
        match self {
            Work::Item(_, previous) => previous.as_deref(),
            Work::Invalid(_) => None,
        }
    }
}

/// The sample of a row, or the result that says why it has none.
fn parse_work<'w>(parser: &RowParser, work: &'w Work) -> Result<Sample<'w>, SampleResult> {
    let item = match work {
        Work::Item(item, _) => item,
        Work::Invalid(e) => return Err(invalid(None, e)),
    };
    parser.parse(item).map_err(|e| {
        let id = peek_id(item.run.as_ref().unwrap_or(&item.row))
            .ok()
            .flatten()
            .unwrap_or(SampleId::Int(item.line_id()));
        invalid(Some(id), &e)
    })
}

async fn grade(
    plan: &Plan,
    reward: Option<&RewardSpec>,
    sample: &Sample<'_>,
    kept: Option<&SampleResult>,
) -> SampleResult {
    // A bug that panics while grading one sample is that sample's error, not the run's end.
    // Pinned in place: boxing it cost an allocation and a copy of the whole grading future
    // for every sample.
    let graded = CatchUnwind(std::pin::pin!(grade_sample(plan, sample, kept))).await;
    let mut result = match graded {
        Ok(result) => result,
        Err(message) => SampleResult {
            sample_id: sample.id(),
            grades: Vec::new(),
            reward: None,
            error: Some(SampleError {
                category: ErrorCategory::Grading,
                message: format!("internal error while grading (please report it): {message}"),
            }),
        },
    };
    let computed = match (&plan.reward, reward) {
        _ if result.error.is_some() => None,
        (Some(custom), _) => Some(
            custom
                .compute(sample, &result.grades)
                .await
                .map_err(|e| e.to_string()),
        ),
        (None, Some(reward)) => Some(reward.compute(&result.grades).map_err(|e| e.to_string())),
        (None, None) => None,
    };
    if let Some(computed) = computed {
        match computed {
            Ok(value) => result.reward = Some(value),
            Err(message) => {
                result.error = Some(SampleError {
                    category: ErrorCategory::Reward,
                    message,
                })
            }
        }
    }
    result
}

/// A future whose panic becomes an `Err` with the panic's message.
struct CatchUnwind<'f, F>(Pin<&'f mut F>);

/// A panic caught while grading: its message.
#[derive(Debug, PartialEq, thiserror::Error)]
#[error("{0}")]
pub struct Panicked(String);

impl<F: Future> Future for CatchUnwind<'_, F> {
    type Output = Result<F::Output, Panicked>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let inner = self.0.as_mut();
        match std::panic::catch_unwind(AssertUnwindSafe(|| inner.poll(cx))) {
            Ok(Poll::Ready(value)) => Poll::Ready(Ok(value)),
            Ok(Poll::Pending) => Poll::Pending,
            Err(payload) => Poll::Ready(Err(Panicked(panic_message(payload.as_ref())))),
        }
    }
}

/// `work`'s value, or what it said if it panicked: a defect in gavel met by one caller (a row
/// checked, a pass run for Python) is that caller's error rather than the process's end.
pub fn unwound<T>(work: impl FnOnce() -> T) -> Result<T, Panicked> {
    std::panic::catch_unwind(AssertUnwindSafe(work))
        .map_err(|payload| Panicked(panic_message(&*payload)))
}

/// What a panic said.
fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    payload
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "a panic without a message".to_string())
}

fn invalid(id: Option<SampleId>, e: &RowError) -> SampleResult {
    SampleResult {
        sample_id: id.unwrap_or(SampleId::Int(-1)),
        grades: Vec::new(),
        reward: None,
        error: Some(SampleError {
            category: ErrorCategory::Invalid,
            message: e.to_string(),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_panic_unwound_is_its_message() {
        assert_eq!(unwound(|| 7), Ok(7));
        let n = 3;
        assert_eq!(
            unwound(|| -> u8 { panic!("{n} too many") }),
            Err(Panicked("3 too many".to_string()))
        );
        assert_eq!(
            unwound(|| std::panic::panic_any(5u8)),
            Err(Panicked("a panic without a message".to_string()))
        );
    }

    #[test]
    fn spent_results_are_freed_only_by_the_thread_that_graded_them() {
        let spent = Spent::default();
        let result = || SampleResult {
            sample_id: SampleId::Int(1),
            grades: Vec::new(),
            reward: None,
            error: None,
        };
        let here = std::thread::current().id();
        let there = std::thread::spawn(|| std::thread::current().id())
            .join()
            .unwrap();
        spent.put(here, vec![result()]);
        spent.put(there, vec![result(), result()]);
        spent.put(here, vec![result()]);
        let other = spent.clone();
        std::thread::spawn(move || other.free()).join().unwrap();
        assert_eq!(
            spent.0.lock().unwrap().len(),
            3,
            "another thread freed none"
        );
        spent.free();
        let left = spent.0.lock().unwrap();
        assert_eq!(left.len(), 1);
        assert_eq!((left[0].0, left[0].1.len()), (there, 2));
    }

    #[test]
    fn each_result_has_its_own_line() {
        let results: Vec<SampleResult> = [SampleId::Int(3), SampleId::Str("a\nb".into())]
            .into_iter()
            .map(|id| SampleResult {
                sample_id: id,
                grades: vec![("c".into(), crate::grade::Grade::pass("ok"))],
                reward: Some(0.5),
                error: None,
            })
            .collect();
        let lines = ResultLines::of(&results);
        assert_eq!(lines.len(), 2);
        let mut own = Vec::new();
        for (i, result) in results.iter().enumerate() {
            result.write_json(&mut own).unwrap();
            own.push(b'\n');
            assert_eq!(lines.first(i + 1), own, "the lines of the first {}", i + 1);
        }
        assert!(lines.first(0).is_empty());
    }

    #[tokio::test]
    async fn a_panic_while_grading_becomes_an_error_value() {
        let fine = CatchUnwind(std::pin::pin!(async { 7 })).await;
        assert_eq!(fine, Ok(7));
        let formatted = CatchUnwind(std::pin::pin!(async {
            let n: usize = "3".parse().unwrap_or(0);
            if n == 3 {
                panic!("index {n} out of range");
            }
            n
        }))
        .await;
        assert_eq!(formatted, Err(Panicked("index 3 out of range".to_string())));
        let literal: Result<(), Panicked> =
            CatchUnwind(std::pin::pin!(async { panic!("plain") })).await;
        assert_eq!(literal, Err(Panicked("plain".to_string())));
    }
}
