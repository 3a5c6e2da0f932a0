//! Runs a plan over a stream of items: parse and grade in parallel, write results in input
//! order as they finish, aggregate, and stop cleanly on Ctrl-C.
//!
//! Results are written in the order of the input stream (a bounded reorder window keeps memory
//! flat), so a run's `results.jsonl` is the same run after run, and an interrupted run's file is
//! always a prefix of the complete one: `--resume` counts its lines, skips that many items and
//! appends the rest, ending byte for byte where an uninterrupted run ends.

use std::collections::BTreeMap;
use std::fs::{File, OpenOptions};
use std::future::Future;
use std::io::{BufRead, BufReader, BufWriter, Seek, SeekFrom, Write};
use std::panic::AssertUnwindSafe;
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Context, Poll};
use std::thread::ThreadId;
use std::time::{Duration, Instant};

use serde::Deserialize;

use crate::config::reward::RewardSpec;
use crate::input::dataset::{
    Item, ItemError, Items, RowError, RowParser, SourceError, parse_id, peek_id,
};
use crate::input::sample::{RawId, Sample, SampleId};
use crate::output::result::{ErrorCategory, GradeKey, LineWriter, SampleError, SampleResult};
use crate::output::summary::Aggregator;
use crate::plan::Plan;
use crate::run::grading::grade_sample;

/// Which items of the stream to grade.
#[derive(Debug, Clone, Default)]
pub struct Selection {
    /// Grade at most this many (after filtering); letta-evals' `max_samples` (0 = no limit).
    pub max_samples: Option<u64>,
    /// Keep items whose id or tags match any filter (`id:X`, `tag:Y`, or a bare value for
    /// either).
    pub filters: Vec<Filter>,
    /// Skip this many selected items (they are in `results.jsonl` already).
    pub skip: u64,
}

#[derive(Debug, Clone, PartialEq)]
pub enum Filter {
    Id(String),
    Tag(String),
    Either(String),
}

impl Filter {
    pub fn parse(text: &str) -> Filter {
        if let Some(id) = text.strip_prefix("id:") {
            Filter::Id(id.to_string())
        } else if let Some(tag) = text.strip_prefix("tag:") {
            Filter::Tag(tag.to_string())
        } else {
            Filter::Either(text.to_string())
        }
    }

    fn matches(&self, id: &str, tags: &[String]) -> bool {
        match self {
            Filter::Id(want) => want == id,
            Filter::Tag(want) => tags.iter().any(|t| t == want),
            Filter::Either(want) => want == id || tags.iter().any(|t| t == want),
        }
    }
}

#[derive(Deserialize)]
struct IdTags<'a> {
    #[serde(default, borrow)]
    sample_id: Option<RawId<'a>>,
    #[serde(default, borrow)]
    id: Option<RawId<'a>>,
    #[serde(default)]
    tags: Option<Vec<String>>,
}

/// The selected items of a stream, in order.
pub struct Selected {
    items: Items,
    selection: Selection,
    taken: u64,
}

impl Selected {
    pub fn new(items: Items, selection: Selection) -> Selected {
        Selected {
            items,
            selection,
            taken: 0,
        }
    }

    fn limit_reached(&self) -> bool {
        match self.selection.max_samples {
            Some(max) if max > 0 => self.taken >= max,
            _ => false,
        }
    }

    /// The next selected item not to be skipped; `Err` for an item that cannot be read.
    pub fn next_item(&mut self) -> Option<Result<Item, ItemError>> {
        loop {
            if self.limit_reached() {
                return None;
            }
            let item = match self.items.next_item()? {
                Ok(item) => item,
                Err(e) => {
                    self.taken += 1;
                    if self.selection.skip > 0 {
                        self.selection.skip -= 1;
                        continue;
                    }
                    return Some(Err(e));
                }
            };
            if !self.selection.filters.is_empty() && !self.selected(&item) {
                continue;
            }
            self.taken += 1;
            if self.selection.skip > 0 {
                self.selection.skip -= 1;
                continue;
            }
            return Some(Ok(item));
        }
    }

    fn selected(&self, item: &Item) -> bool {
        let source = item.run.as_ref().unwrap_or(&item.row);
        let Ok(fields) = serde_json::from_str::<IdTags>(&source.text) else {
            // An unreadable row is kept so that it is reported, not silently dropped.
            return true;
        };
        // The id as results.jsonl writes it: parsed as the row's sample is, so that `id:café`
        // matches `"caf\u00e9"` and `id:100` matches `100.0`.
        let id = match fields.sample_id.or(fields.id).map(parse_id) {
            Some(Ok(id)) => id.to_string(),
            // A row whose id cannot be read is kept, to be reported.
            Some(Err(_)) => return true,
            None => item.seq.to_string(),
        };
        let row_tags = if item.run.is_some() {
            serde_json::from_str::<IdTags>(&item.row.text)
                .ok()
                .and_then(|f| f.tags)
        } else {
            fields.tags
        };
        let tags = row_tags.unwrap_or_default();
        self.selection.filters.iter().any(|f| f.matches(&id, &tags))
    }
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
    let check = |item: &Item| -> Result<(), RowError> {
        let sample = parser.parse(item)?;
        for (key, judge) in &judges {
            judge.check_sample(&sample).map_err(|message| RowError {
                file: item.row.file.to_path_buf(),
                line: item.row.number,
                column: 0,
                message: format!("graders.{key}: {message}"),
            })?;
        }
        Ok(())
    };
    let (tx, rx) = std::sync::mpsc::sync_channel::<Vec<Item>>(workers * 2);
    let rx = std::sync::Mutex::new(rx);
    let mut validation = Validation::default();
    let mut found: Vec<(u64, RowError)> = Vec::new();
    let mut source_error = None;
    std::thread::scope(|scope| {
        let handles: Vec<_> = (0..workers.max(1))
            .map(|_| {
                scope.spawn(|| {
                    let mut bad: Vec<(u64, RowError)> = Vec::new();
                    let mut invalid = 0u64;
                    loop {
                        let batch = {
                            let guard =
                                rx.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
                            guard.recv()
                        };
                        let Ok(batch) = batch else { break };
                        for item in &batch {
                            if let Err(e) = check(item) {
                                invalid += 1;
                                bad.push((item.seq, e));
                                bad.sort_by_key(|(seq, _)| *seq);
                                bad.truncate(ERRORS_LISTED);
                            }
                        }
                    }
                    (bad, invalid)
                })
            })
            .collect();
        let mut batch = Vec::with_capacity(BATCH);
        while let Some(next) = selected.next_item() {
            validation.total += 1;
            match next {
                Ok(item) => batch.push(item),
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
            if let Ok((bad, invalid)) = handle.join() {
                found.extend(bad);
                validation.invalid += invalid;
            }
        }
    });
    if let Some(e) = source_error {
        return Err(e);
    }
    found.sort_by_key(|(seq, _)| *seq);
    validation.errors = found
        .into_iter()
        .take(ERRORS_LISTED)
        .map(|(_, e)| e)
        .collect();
    Ok(validation)
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
    /// Stops the pass early (Ctrl-C): no new items are started, started ones finish.
    pub stop: Arc<AtomicBool>,
    /// Ends the pass at the first invalid row, which the sink does not receive, nor any
    /// result after it; else an invalid row is an error result like any other.
    pub refuse_invalid: bool,
    pub sink: &'a mut dyn Sink,
}

/// How a pass ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PassEnd {
    Complete,
    Interrupted,
    /// An invalid row was found with `refuse_invalid`: the results before it went to the sink.
    Refused,
}

impl Pass<'_> {
    /// Grades the selected items and hands each result to the sink in stream order.
    pub fn run(self, mut selected: Selected) -> Result<PassEnd, PassError> {
        let has_judge = self.plan.has_judge();
        let batch_size = if has_judge { 1 } else { BATCH };
        // Batches read ahead of the writer. Without a judge, two a worker keep both busy; more
        // only held more rows in memory (four a worker made the steady state 6 MiB larger,
        // the same throughput).
        let in_flight = if has_judge {
            (self.workers * 2).max(256)
        } else {
            self.workers * 2
        };
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(self.workers.max(1))
            .enable_all()
            .build()
            .map_err(|e| PassError::Io(format!("cannot start the worker threads: {e}")))?;
        let stop = self.stop.clone();
        let plan = self.plan.clone();
        let parser = self.parser.clone();
        let reward = self.reward.clone();
        let refuse_invalid = self.refuse_invalid;
        let sink = self.sink;
        runtime.block_on(async move {
            let (batch_tx, mut batch_rx) = tokio::sync::mpsc::channel::<(u64, Vec<Work>)>(2);
            // A batch's permit travels with its results and is released once they are written,
            // so a slow writer holds back grading instead of letting results pile up.
            let (result_tx, mut result_rx) = tokio::sync::mpsc::unbounded_channel::<(
                u64,
                Vec<SampleResult>,
                ResultLines,
                ThreadId,
                tokio::sync::OwnedSemaphorePermit,
            )>();
            let reader_stop = stop.clone();
            let reader = std::thread::spawn(move || -> Result<(), SourceError> {
                let mut index = 0u64;
                let mut batch = Vec::with_capacity(batch_size);
                while !reader_stop.load(Ordering::Relaxed) {
                    let Some(next) = selected.next_item() else {
                        break;
                    };
                    match next {
                        Ok(item) => batch.push(Work::Item(item)),
                        Err(ItemError::Row(e)) => batch.push(Work::Invalid(e)),
                        Err(ItemError::Source(e)) => return Err(e),
                    }
                    if batch.len() == batch_size {
                        if batch_tx
                            .blocking_send((index, std::mem::take(&mut batch)))
                            .is_err()
                        {
                            return Ok(());
                        }
                        index += 1;
                    }
                }
                if !batch.is_empty() {
                    let _ = batch_tx.blocking_send((index, batch));
                }
                Ok(())
            });
            let interrupt = stop.clone();
            tokio::spawn(async move {
                if tokio::signal::ctrl_c().await.is_ok() {
                    interrupt.store(true, Ordering::Relaxed);
                }
            });
            let permits = Arc::new(tokio::sync::Semaphore::new(in_flight));
            let spent = Spent::default();
            let spent_results = spent.clone();
            let dispatcher = tokio::spawn(async move {
                let mut dispatched = 0u64;
                while let Some((index, batch)) = batch_rx.recv().await {
                    dispatched += 1;
                    let Ok(permit) = permits.clone().acquire_owned().await else {
                        break;
                    };
                    let plan = plan.clone();
                    let parser = parser.clone();
                    let reward = reward.clone();
                    let tx = result_tx.clone();
                    let spent = spent_results.clone();
                    tokio::spawn(async move {
                        spent.free();
                        let mut results = Vec::with_capacity(batch.len());
                        for works in batch.chunks(PARSED_AHEAD) {
                            let parsed: Vec<_> =
                                works.iter().map(|work| parse_work(&parser, work)).collect();
                            // Graded where they lie: a sample is some hundreds of bytes, and
                            // moving each out of the list and into the grading cost a copy.
                            for sample in &parsed {
                                results.push(match sample {
                                    Ok(sample) => grade(&plan, reward.as_deref(), sample).await,
                                    Err(invalid) => invalid.clone(),
                                });
                            }
                        }
                        let lines = ResultLines::of(&results);
                        let graded_on = std::thread::current().id();
                        let _ = tx.send((index, results, lines, graded_on, permit));
                    });
                }
                dispatched
            });
            let mut pending = BTreeMap::new();
            let mut next = 0u64;
            let mut write_error = None;
            let mut refused = false;
            while let Some((index, results, lines, graded_on, permit)) = result_rx.recv().await {
                pending.insert(index, (results, lines, graded_on, permit));
                while let Some((results, lines, graded_on, _permit)) = pending.remove(&next) {
                    next += 1;
                    if !refused && write_error.is_none() {
                        // The results before the first that is not written go in one write: a
                        // copy of the whole batch into a buffer cost as much as writing it.
                        let invalid = refuse_invalid
                            .then(|| results.iter().position(SampleResult::is_invalid_row))
                            .flatten();
                        let n = invalid.unwrap_or(results.len()).min(lines.len());
                        if let Err(e) = sink.write(&results[..n], lines.first(n)) {
                            write_error = Some(e.to_string());
                        } else if invalid == Some(n) {
                            refused = true;
                        } else if n < results.len() {
                            write_error = Some(lines.failure());
                        }
                        if refused || write_error.is_some() {
                            stop.store(true, Ordering::Relaxed);
                        }
                    }
                    spent.put(graded_on, results);
                }
            }
            let dispatched = dispatcher.await.unwrap_or(u64::MAX);
            if !refused && next < dispatched {
                // A batch never came back: its samples must not vanish from a finished run.
                return Err(PassError::Io(
                    "grading stopped unexpectedly before every sample was graded; the results \
                     written so far are kept (gavel run --resume continues)"
                        .to_string(),
                ));
            }
            let read = reader
                .join()
                .map_err(|_| PassError::Io("the reader thread failed".to_string()))?;
            read.map_err(PassError::Source)?;
            if let Some(e) = write_error {
                return Err(PassError::Io(e));
            }
            Ok(if refused {
                PassEnd::Refused
            } else if stop.load(Ordering::Relaxed) {
                PassEnd::Interrupted
            } else {
                PassEnd::Complete
            })
        })
    }
}

#[derive(Debug, thiserror::Error)]
pub enum PassError {
    #[error(transparent)]
    Source(SourceError),
    #[error("{0}")]
    Io(String),
}

enum Work {
    Item(Item),
    Invalid(RowError),
}

/// The sample of a row, or the result that says why it has none.
fn parse_work<'w>(parser: &RowParser, work: &'w Work) -> Result<Sample<'w>, SampleResult> {
    let item = match work {
        Work::Item(item) => item,
        Work::Invalid(e) => return Err(invalid(None, e)),
    };
    parser.parse(item).map_err(|e| {
        let id = peek_id(item.run.as_ref().unwrap_or(&item.row))
            .ok()
            .flatten()
            .unwrap_or(SampleId::Int(item.seq as i64));
        invalid(Some(id), &e)
    })
}

async fn grade(plan: &Plan, reward: Option<&RewardSpec>, sample: &Sample<'_>) -> SampleResult {
    // A bug that panics while grading one sample is that sample's error, not the run's end.
    // Pinned in place: boxing it cost an allocation and a copy of the whole grading future
    // for every sample.
    let graded = CatchUnwind(std::pin::pin!(grade_sample(plan, sample))).await;
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
    if result.error.is_none()
        && let Some(reward) = reward
    {
        match reward.compute(&result.grades) {
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

impl<F: Future> Future for CatchUnwind<'_, F> {
    type Output = Result<F::Output, String>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let inner = self.0.as_mut();
        match std::panic::catch_unwind(AssertUnwindSafe(|| inner.poll(cx))) {
            Ok(Poll::Ready(value)) => Poll::Ready(Ok(value)),
            Ok(Poll::Pending) => Poll::Pending,
            Err(payload) => Poll::Ready(Err(payload
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| payload.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "a panic without a message".to_string()))),
        }
    }
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

/// `results.jsonl`, written as results arrive: complete lines, flushed at least every
/// [`FLUSH_EVERY`] and, once the run has gone on for [`SYNC_AFTER`], synced to disk after each
/// flush, in the background ([`Syncer`]). A finished file is flushed whole before
/// [`ResultsFile::finish`] returns; the end of a run does not wait for the disk, which takes the
/// tail as it takes any written file.
pub struct ResultsFile {
    path: PathBuf,
    /// The length of the file when opened: what [`ResultsFile::discard`] goes back to.
    opened_len: u64,
    /// Where an earlier run's file was moved by a fresh run, until this one is finished.
    replaced: Option<PathBuf>,
    out: BufWriter<File>,
    last_flush: Instant,
    syncer: Syncer,
}

pub const FLUSH_EVERY: Duration = Duration::from_millis(200);

/// How long a run goes on before its flushes are synced to disk: what a power cut takes from a
/// younger run costs seconds to grade again, while a sync under way when a run ends holds up its
/// exit until the disk has the file (bench/README.md, eighteenth profile).
pub const SYNC_AFTER: Duration = Duration::from_secs(2);

/// Syncs a file to disk on a thread of its own, so that the thread writing results never waits
/// for the disk: each sync writes back what was flushed so far. Syncs asked for in the first
/// [`SYNC_AFTER`] are not made, and the thread starts with the first that is.
struct Syncer {
    file: File,
    /// When syncs asked for begin to be made.
    from: Instant,
    requests: Option<std::sync::mpsc::SyncSender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
    /// The error of a failed sync, after which the thread stops.
    failed: Arc<std::sync::Mutex<Option<std::io::Error>>>,
}

impl Syncer {
    /// A syncer of `file` whose first sync is made once `after` has passed.
    fn new(file: &File, after: Duration) -> std::io::Result<Syncer> {
        Ok(Syncer {
            file: file.try_clone()?,
            from: Instant::now() + after,
            requests: None,
            thread: None,
            failed: Arc::default(),
        })
    }

    /// Starts the thread that syncs.
    fn start(&mut self) -> std::io::Result<()> {
        let file = self.file.try_clone()?;
        // One request waits at most: a sync asked for while one waits would add nothing.
        let (requests, pending) = std::sync::mpsc::sync_channel::<()>(1);
        let report = self.failed.clone();
        let thread = std::thread::Builder::new()
            .name("gavel-sync".to_string())
            .spawn(move || {
                while pending.recv().is_ok() {
                    if let Err(e) = file.sync_data() {
                        *report
                            .lock()
                            .unwrap_or_else(std::sync::PoisonError::into_inner) = Some(e);
                        return;
                    }
                }
            })?;
        self.requests = Some(requests);
        self.thread = Some(thread);
        Ok(())
    }

    fn take_failure(&self) -> std::io::Result<()> {
        match self
            .failed
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .take()
        {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }

    /// Asks for a sync of what is flushed so far, and reports a failed earlier one.
    fn request(&mut self) -> std::io::Result<()> {
        self.take_failure()?;
        if self.thread.is_none() && Instant::now() >= self.from {
            self.start()?;
        }
        if let Some(requests) = &self.requests {
            let _ = requests.try_send(());
        }
        Ok(())
    }

    /// Stops asking for syncs without waiting for the one under way, if any; a failed earlier
    /// sync's error.
    fn leave(&mut self) -> std::io::Result<()> {
        self.requests = None;
        // Dropped, not joined: the thread ends with the sync it is in, or with the process.
        self.thread = None;
        self.take_failure()
    }

    /// Waits for the sync under way, if any, and stops the thread; a failed sync's error.
    fn stop(&mut self) -> std::io::Result<()> {
        self.requests = None;
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
        self.take_failure()
    }
}

impl Drop for Syncer {
    fn drop(&mut self) {
        let _ = self.stop();
    }
}

impl ResultsFile {
    /// Creates (or, resuming, appends to) `results.jsonl`. A fresh run moves an earlier file
    /// aside rather than truncating it, so that [`ResultsFile::discard`] can put it back.
    pub fn open(path: &Path, append: bool) -> std::io::Result<ResultsFile> {
        let mut replaced = None;
        if !append && path.exists() {
            let aside = path.with_extension("jsonl.replaced");
            std::fs::rename(path, &aside)?;
            replaced = Some(aside);
        }
        let file = OpenOptions::new()
            .create(true)
            .write(true)
            .append(append)
            .truncate(!append)
            .open(path)?;
        Ok(ResultsFile {
            path: path.to_path_buf(),
            opened_len: file.metadata()?.len(),
            replaced,
            syncer: Syncer::new(&file, SYNC_AFTER)?,
            out: BufWriter::with_capacity(1 << 16, file),
            last_flush: Instant::now(),
        })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Appends whole lines (their newlines included). Lines longer together than the buffer
    /// go to the file without a copy into it.
    pub fn append(&mut self, lines: &[u8]) -> std::io::Result<()> {
        self.out.write_all(lines)?;
        if self.last_flush.elapsed() >= FLUSH_EVERY {
            self.flush()?;
        }
        Ok(())
    }

    pub fn flush(&mut self) -> std::io::Result<()> {
        self.out.flush()?;
        self.last_flush = Instant::now();
        self.syncer.request()
    }

    pub fn finish(mut self) -> std::io::Result<()> {
        self.out.flush()?;
        self.syncer.leave()?;
        match &self.replaced {
            Some(aside) => std::fs::remove_file(aside),
            None => Ok(()),
        }
    }

    /// Takes back everything this run wrote: the folder is as it was before [`ResultsFile::open`].
    pub fn discard(self) -> std::io::Result<()> {
        let ResultsFile {
            path,
            opened_len,
            replaced,
            out,
            syncer,
            ..
        } = self;
        // Its sync, if one is under way, is of lines about to be taken back.
        drop(syncer);
        let (file, _unwritten) = out.into_parts();
        match replaced {
            Some(aside) => std::fs::rename(aside, &path),
            None if opened_len == 0 => {
                drop(file);
                std::fs::remove_file(&path)
            }
            None => {
                file.set_len(opened_len)?;
                file.sync_data()
            }
        }
    }
}

/// Hands the results in `path` that [`Aggregator::regroup`] needs to it, when it needs any:
/// only lines whose id may repeat are parsed whole.
pub fn regroup(path: &Path, aggregator: &mut Aggregator) -> Result<(), String> {
    if !aggregator.needs_regroup() {
        return Ok(());
    }
    let file = File::open(path).map_err(|e| format!("{}: cannot open: {e}", path.display()))?;
    for (number, line) in BufReader::with_capacity(1 << 16, file).lines().enumerate() {
        let line = line.map_err(|e| format!("{}: cannot read: {e}", path.display()))?;
        // Result lines begin with their id (`ResultsFile::append`), so most are skipped
        // after reading a few bytes.
        let id = line.strip_prefix(r#"{"sample_id":"#).and_then(leading_id);
        if id.is_some_and(|id| !aggregator.may_repeat(&id)) {
            continue;
        }
        let result = parse_result(&line).map_err(|e| {
            format!(
                "{}:{}: not a gavel result line ({e})",
                path.display(),
                number + 1
            )
        })?;
        aggregator.regroup(&result);
    }
    Ok(())
}

/// The id at the start of `text`, read as its own type (an untagged [`SampleId`] would buffer
/// the value first).
fn leading_id(text: &str) -> Option<SampleId> {
    let mut values = serde_json::Deserializer::from_str(text);
    if text.starts_with('"') {
        String::deserialize(&mut values).ok().map(SampleId::Str)
    } else {
        i64::deserialize(&mut values).ok().map(SampleId::Int)
    }
}

/// Reads the complete results of an earlier run for `--resume`, dropping a final line cut
/// short by a kill. Calls `each` for every complete result, in order.
pub fn read_previous(path: &Path, mut each: impl FnMut(SampleResult)) -> Result<u64, String> {
    let mut file = match OpenOptions::new().read(true).write(true).open(path) {
        Ok(file) => file,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(0),
        Err(e) => return Err(format!("{}: cannot open: {e}", path.display())),
    };
    let mut reader = BufReader::new(&mut file);
    let mut complete_bytes = 0u64;
    let mut count = 0u64;
    let mut line = String::new();
    loop {
        line.clear();
        let n = reader
            .read_line(&mut line)
            .map_err(|e| format!("{}: cannot read: {e}", path.display()))?;
        if n == 0 || !line.ends_with('\n') {
            break;
        }
        let result = parse_result(&line).map_err(|e| {
            format!(
                "{}:{}: not a gavel result line ({e}); remove the file or choose another output folder",
                path.display(),
                count + 1
            )
        })?;
        each(result);
        complete_bytes += n as u64;
        count += 1;
    }
    drop(reader);
    file.set_len(complete_bytes)
        .and_then(|()| file.seek(SeekFrom::End(0)).map(|_| ()))
        .map_err(|e| format!("{}: cannot truncate a partial line: {e}", path.display()))?;
    Ok(count)
}

#[derive(Deserialize)]
struct StoredResult {
    sample_id: SampleId,
    #[serde(default)]
    grades: indexmap::IndexMap<String, crate::grade::Grade>,
    #[serde(default)]
    reward: Option<f64>,
    #[serde(default)]
    error: Option<SampleError>,
}

fn parse_result(line: &str) -> Result<SampleResult, serde_json::Error> {
    let stored: StoredResult = serde_json::from_str(line)?;
    Ok(SampleResult {
        sample_id: stored.sample_id,
        grades: stored
            .grades
            .into_iter()
            .map(|(key, grade)| (GradeKey::Owned(key), grade))
            .collect(),
        reward: stored.reward,
        error: stored.error,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

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
    fn syncs_begin_once_the_run_is_old_enough() {
        let dir = tempfile::tempdir().unwrap();
        let file = File::create(dir.path().join("results.jsonl")).unwrap();
        let mut young = Syncer::new(&file, Duration::from_secs(3600)).unwrap();
        young.request().unwrap();
        young.request().unwrap();
        assert!(
            young.thread.is_none(),
            "a young run's flushes start no sync"
        );
        let mut old = Syncer::new(&file, Duration::ZERO).unwrap();
        old.request().unwrap();
        assert!(old.thread.is_some() && old.requests.is_some());
        old.stop().unwrap();
        assert!(old.thread.is_none());
    }

    #[test]
    fn results_file_keeps_what_was_finished_and_takes_back_what_was_discarded() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("results.jsonl");
        let mut file = ResultsFile::open(&path, false).unwrap();
        file.append(b"{\"a\":1}\n").unwrap();
        // Flushes ask the background syncer for a sync; many in a row are one waiting request.
        for _ in 0..50 {
            file.flush().unwrap();
        }
        file.append(b"{\"a\":2}\n").unwrap();
        file.finish().unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), b"{\"a\":1}\n{\"a\":2}\n");

        // Resumed, then taken back: the file is as the finished run left it.
        let mut resumed = ResultsFile::open(&path, true).unwrap();
        resumed.append(b"{\"a\":3}\n").unwrap();
        resumed.flush().unwrap();
        resumed.discard().unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), b"{\"a\":1}\n{\"a\":2}\n");

        // A fresh run over it, taken back: the earlier file is put back.
        let mut fresh = ResultsFile::open(&path, false).unwrap();
        fresh.append(b"{\"b\":1}\n").unwrap();
        fresh.flush().unwrap();
        fresh.discard().unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), b"{\"a\":1}\n{\"a\":2}\n");
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

    #[test]
    fn leading_ids_read_as_written() {
        for id in [
            SampleId::Int(-42),
            SampleId::Int(7),
            SampleId::Str("a \"b\" é".into()),
            SampleId::Str("12".into()),
        ] {
            let line = serde_json::to_string(&id).unwrap() + r#","grades":{}}"#;
            assert_eq!(leading_id(&line), Some(id));
        }
        assert_eq!(leading_id("1.5,"), None);
        assert_eq!(leading_id("null,"), None);
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
        assert_eq!(formatted, Err("index 3 out of range".to_string()));
        let literal: Result<(), String> =
            CatchUnwind(std::pin::pin!(async { panic!("plain") })).await;
        assert_eq!(literal, Err("plain".to_string()));
    }
}
