//! One graded sample, as written to `results.jsonl`.

use std::borrow::Cow;
use std::fs::File;
use std::io::{BufRead, BufReader, BufWriter, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use crate::fsio;
use crate::grade::{Grade, GradeKey, Metadata, Status};
use crate::input::dataset::strip_position;
use crate::input::sample::SampleId;

/// Why a sample as a whole is in error. Errored samples are counted apart and left out of the
/// metric means, as letta-evals does.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SampleError {
    pub category: ErrorCategory,
    pub message: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ErrorCategory {
    /// The dataset row itself is invalid (only with `--skip-invalid`).
    Invalid,
    /// The first grader found nothing to grade (empty trajectory or submission).
    Extraction,
    /// A grader could not grade.
    Grading,
    /// The reward could not be computed.
    Reward,
}

/// `{"sample_id", "grades": {key: grade}, "reward"?, "error"?}`; grades keep the suite's order.
#[derive(Debug, Clone, PartialEq)]
pub struct SampleResult {
    pub sample_id: SampleId,
    pub grades: Vec<(GradeKey, Grade)>,
    pub reward: Option<f64>,
    pub error: Option<SampleError>,
}

impl SampleResult {
    /// pass when every grade passes (skips are neutral), error when the sample or any grade is
    /// in error, fail otherwise: evaldeck's combination rule.
    pub fn status(&self) -> Status {
        if self.error.is_some() || self.grades.iter().any(|(_, g)| g.status == Status::Error) {
            Status::Error
        } else if self.grades.iter().any(|(_, g)| g.status == Status::Fail) {
            Status::Fail
        } else {
            Status::Pass
        }
    }

    pub fn grade(&self, key: &str) -> Option<&Grade> {
        self.grades.iter().find(|(k, _)| k == key).map(|(_, g)| g)
    }

    /// [`SampleResult::grade`] for the key that is `index`-th in the suite: grades keep the
    /// suite's order, so it is looked for there first.
    pub fn grade_at(&self, index: usize, key: &str) -> Option<&Grade> {
        match self.grades.get(index) {
            Some((k, grade)) if same_key(k, key) => Some(grade),
            _ => self.grade(key),
        }
    }

    /// What `--retry-errors` grades again of this result: the grades in error (the others are
    /// kept), else the whole sample when it is in error without one (it has no grades, or its
    /// extraction or reward failed), else nothing.
    pub fn retry(&self) -> Retry {
        if self.grades.iter().any(|(_, g)| g.status == Status::Error) {
            Retry::Grades
        } else if self.error.is_some() {
            Retry::Sample
        } else {
            Retry::Nothing
        }
    }

    /// The grade of the metric `key`, `index`-th in the suite, that `--retry-errors` keeps of
    /// this earlier result: one not in error, of a result with a grade in error.
    pub fn kept_grade(&self, index: usize, key: &str) -> Option<&Grade> {
        if self.retry() != Retry::Grades {
            return None;
        }
        self.grade_at(index, key)
            .filter(|grade| grade.status != Status::Error)
    }

    /// What is wrong with this result's grades for a run of the suite's `metrics`: a grade of
    /// a metric the suite does not have, or, for a sample graded without an error, one of its
    /// metrics missing. A run grades every metric of a sample it grades, so a line that does
    /// not is not the run's: `gavel merge`, `--resume` and `--retry-errors` refuse it.
    pub fn foreign_grades(&self, metrics: &[&str]) -> Option<String> {
        if let Some((key, _)) = (self.grades.iter()).find(|(key, _)| !metrics.contains(&&**key)) {
            return Some(format!(
                "a grade of `{key}`, which is not a metric of the suite"
            ));
        }
        let missing = (metrics.iter()).find(|key| self.grade(key).is_none())?;
        self.error
            .is_none()
            .then(|| format!("no grade of the suite's metric `{missing}`"))
    }

    /// Whether this result stands for a dataset row that could not be read as a sample.
    pub fn is_invalid_row(&self) -> bool {
        self.error
            .as_ref()
            .is_some_and(|e| e.category == ErrorCategory::Invalid)
    }

    /// Appends this result's `results.jsonl` line (without its newline) to `out`:
    /// `{"sample_id", "grades": {key: grade}, "reward"?, "error"?}`, byte for byte what
    /// serde_json writes for these fields. [`LineWriter`] writes many lines faster.
    pub fn write_json(&self, out: &mut Vec<u8>) -> serde_json::Result<()> {
        LineWriter::default().write(self, out)
    }
}

/// What `--retry-errors` grades again of a result ([`SampleResult::retry`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Retry {
    Nothing,
    /// The grades whose status is `error`.
    Grades,
    Sample,
}

/// Writes results lines by hand, byte for byte what serde_json writes for their fields: it runs
/// once a sample, and serde_json's string escaping was the larger part of writing results. What
/// repeats from line to line is written once and copied after that: each grade's key with the
/// punctuation around it, and the whole head of a grade with a fixed rationale (most graders
/// give one of a few), from its key to its submission.
#[derive(Default)]
pub struct LineWriter {
    /// The key of the grade at each position of the last line, and `"key":{"score":` escaped.
    keys: Vec<(GradeKey, Vec<u8>)>,
    /// The heads met at each position.
    heads: Vec<Vec<Head>>,
}

/// `"key":{"score":S,"status":"X","rationale":"R","submission":` for a grade whose rationale is
/// fixed, known by its address: a text at one address never changes.
struct Head {
    key: GradeKey,
    score: u64,
    status: Status,
    rationale: &'static str,
    text: Vec<u8>,
}

/// Whether two keys are the same: most are the plan's, where the address settles it.
fn same_key(a: &str, b: &str) -> bool {
    std::ptr::eq(a, b) || a == b
}

impl LineWriter {
    /// Heads remembered at most at one position: a grader has a few fixed rationales.
    const HEADS: usize = 16;

    /// Appends `result`'s line (without its newline) to `out`.
    pub fn write(&mut self, result: &SampleResult, out: &mut Vec<u8>) -> serde_json::Result<()> {
        out.extend_from_slice(b"{\"sample_id\":");
        match &result.sample_id {
            SampleId::Int(i) => out.extend_from_slice(itoa::Buffer::new().format(*i).as_bytes()),
            SampleId::Str(s) => write_str(out, s),
        }
        out.extend_from_slice(b",\"grades\":{");
        // Graders of one extractor grade the same submission: it is escaped once and its
        // escaped text copied for the others.
        let mut submission: Option<(&str, std::ops::Range<usize>)> = None;
        for (i, (key, grade)) in result.grades.iter().enumerate() {
            if i > 0 {
                out.push(b',');
            }
            self.write_head(out, i, key, grade)?;
            write_rest(out, grade, &mut submission)?;
        }
        out.push(b'}');
        if let Some(reward) = result.reward {
            out.extend_from_slice(b",\"reward\":");
            write_f64(out, reward)?;
        }
        if let Some(error) = &result.error {
            out.extend_from_slice(b",\"error\":");
            serde_json::to_writer(&mut *out, error)?;
        }
        out.push(b'}');
        Ok(())
    }

    /// The grade at `index` up to its submission: `"key":{"score":S,...,"submission":`.
    fn write_head(
        &mut self,
        out: &mut Vec<u8>,
        index: usize,
        key: &GradeKey,
        grade: &Grade,
    ) -> serde_json::Result<()> {
        let Cow::Borrowed(fixed) = grade.rationale else {
            out.extend_from_slice(self.key(index, key));
            return write_scored(out, grade, |out| write_str(out, &grade.rationale));
        };
        if self.heads.len() <= index {
            self.heads.resize_with(index + 1, Vec::new);
        }
        let score = grade.score.to_bits();
        let met = self.heads[index].iter().find(|head| {
            head.score == score
                && head.status == grade.status
                && std::ptr::eq(head.rationale, fixed)
                && same_key(&head.key, key)
        });
        if let Some(head) = met {
            out.extend_from_slice(&head.text);
            return Ok(());
        }
        let mut text = self.key(index, key).to_vec();
        write_scored(&mut text, grade, |text| write_str(text, fixed))?;
        out.extend_from_slice(&text);
        if self.heads[index].len() < Self::HEADS {
            self.heads[index].push(Head {
                key: key.clone(),
                score,
                status: grade.status,
                rationale: fixed,
                text,
            });
        }
        Ok(())
    }

    /// `"key":{"score":` escaped, for the grade at `index`.
    fn key(&mut self, index: usize, key: &GradeKey) -> &[u8] {
        if self
            .keys
            .get(index)
            .is_none_or(|(known, _)| !same_key(known, key))
        {
            let mut escaped = Vec::with_capacity(key.len() + 12);
            write_str(&mut escaped, key);
            escaped.extend_from_slice(b":{\"score\":");
            let entry = (key.clone(), escaped);
            match self.keys.get_mut(index) {
                Some(known) => *known = entry,
                None => self.keys.push(entry),
            }
        }
        &self.keys[index].1
    }
}

/// A grade's score, status and rationale (written by `rationale`), after its `{"score":`, and
/// the `"submission":` key.
fn write_scored(
    out: &mut Vec<u8>,
    grade: &Grade,
    rationale: impl FnOnce(&mut Vec<u8>),
) -> serde_json::Result<()> {
    write_f64(out, grade.score)?;
    out.extend_from_slice(b",\"status\":\"");
    out.extend_from_slice(grade.status.as_str().as_bytes());
    out.extend_from_slice(b"\",\"rationale\":");
    rationale(out);
    out.extend_from_slice(b",\"submission\":");
    Ok(())
}

/// A grade after its `"submission":` key, as its derived `Serialize` writes it (a test holds the
/// two together). `written` is the last submission written to `out` and where its escaped text
/// lies; one equal to it is copied from there.
fn write_rest<'g>(
    out: &mut Vec<u8>,
    grade: &'g Grade,
    written: &mut Option<(&'g str, std::ops::Range<usize>)>,
) -> serde_json::Result<()> {
    match written {
        Some((text, at)) if *text == grade.submission => out.extend_from_within(at.clone()),
        _ => {
            let start = out.len();
            write_str(out, &grade.submission);
            *written = Some((&grade.submission, start..out.len()));
        }
    }
    let metadata = grade.metadata();
    if !metadata.is_empty() {
        out.extend_from_slice(b",\"metadata\":");
        write_metadata(out, &metadata)?;
    }
    if let Some(expected) = &grade.details().expected {
        out.extend_from_slice(b",\"expected\":");
        serde_json::to_writer(&mut *out, expected)?;
    }
    if let Some(actual) = &grade.details().actual {
        out.extend_from_slice(b",\"actual\":");
        serde_json::to_writer(&mut *out, actual)?;
    }
    out.push(b'}');
    Ok(())
}

/// A grade's metadata as its `Serialize` writes it; the checks, which most graders of several
/// checks write for every sample, without serde's slower string escaping.
fn write_metadata(out: &mut Vec<u8>, metadata: &Metadata) -> serde_json::Result<()> {
    out.push(b'{');
    let checks = metadata.checks();
    if !checks.is_empty() {
        out.extend_from_slice(b"\"checks\":[");
        for (i, check) in checks.iter().enumerate() {
            if i > 0 {
                out.push(b',');
            }
            out.extend_from_slice(b"{\"check\":");
            write_str(out, check.check);
            out.extend_from_slice(b",\"status\":\"");
            out.extend_from_slice(check.status.as_str().as_bytes());
            out.extend_from_slice(b"\",\"message\":");
            write_str(out, &check.message);
            out.push(b'}');
        }
        out.push(b']');
    }
    for (i, (key, value)) in metadata.rest().iter().enumerate() {
        if i > 0 || !checks.is_empty() {
            out.push(b',');
        }
        write_str(out, key);
        out.push(b':');
        serde_json::to_writer(&mut *out, value)?;
    }
    out.push(b'}');
    Ok(())
}

/// A number as serde_json writes an `f64`; the scores 0 and 1, most of them, without
/// formatting.
fn write_f64(out: &mut Vec<u8>, value: f64) -> serde_json::Result<()> {
    if value.to_bits() == 0f64.to_bits() {
        out.extend_from_slice(b"0.0");
    } else if value == 1.0 {
        out.extend_from_slice(b"1.0");
    } else {
        serde_json::to_writer(&mut *out, &value)?;
    }
    Ok(())
}

/// A JSON string with serde_json's escapes: `\"`, `\\`, the short forms `\b \t \n \f \r`, and
/// `\u00XX` for the other control characters; everything else, non-ASCII included, as is.
/// Runs without an escape are found eight bytes at a time and copied whole; the last bytes of a
/// text of eight or more are looked at as its last eight.
fn write_str(out: &mut Vec<u8>, text: &str) {
    let bytes = text.as_bytes();
    out.reserve(bytes.len() + 2);
    out.push(b'"');
    let mut start = 0;
    let mut at = 0;
    while at < bytes.len() {
        if let Some(chunk) = bytes.get(at..at + 8) {
            let flags = escape_flags(word(chunk));
            if flags == 0 {
                at += 8;
                continue;
            }
            at += flags.trailing_zeros() as usize / 8;
        } else if let Some(last) = bytes.len().checked_sub(8) {
            // Fewer than eight bytes are left: the text's last eight, those before `at` (done
            // with) read as plain letters.
            let done = u64::MAX >> (64 - 8 * (at - last));
            let plain = ONES * u64::from(b'a');
            let flags = escape_flags((word(&bytes[last..]) & !done) | (plain & done));
            if flags == 0 {
                at = bytes.len();
                continue;
            }
            at = last + flags.trailing_zeros() as usize / 8;
        } else if !crate::input::fast::scan::is_special(bytes[at]) {
            at += 1;
            continue;
        }
        let byte = bytes[at];
        out.extend_from_slice(&bytes[start..at]);
        match byte {
            b'"' => out.extend_from_slice(b"\\\""),
            b'\\' => out.extend_from_slice(b"\\\\"),
            b'\x08' => out.extend_from_slice(b"\\b"),
            b'\t' => out.extend_from_slice(b"\\t"),
            b'\n' => out.extend_from_slice(b"\\n"),
            b'\x0c' => out.extend_from_slice(b"\\f"),
            b'\r' => out.extend_from_slice(b"\\r"),
            _ => {
                const HEX: &[u8; 16] = b"0123456789abcdef";
                out.extend_from_slice(b"\\u00");
                out.push(HEX[usize::from(byte >> 4)]);
                out.push(HEX[usize::from(byte & 0xf)]);
            }
        }
        at += 1;
        start = at;
    }
    out.extend_from_slice(&bytes[start..]);
    out.push(b'"');
}

/// A one in every byte of a word.
const ONES: u64 = u64::MAX / 255;

/// Eight bytes as one little-endian word: the first byte lowest.
fn word(chunk: &[u8]) -> u64 {
    u64::from_le_bytes(chunk.try_into().unwrap_or_default())
}

/// The high bit of each byte of `word` that may need an escape: below 0x20, a quote or a
/// backslash. A borrow can also flag bytes past such a byte, so only the lowest flag is sure.
fn escape_flags(word: u64) -> u64 {
    let quote = word ^ (ONES * u64::from(b'"'));
    let backslash = word ^ (ONES * u64::from(b'\\'));
    (word.wrapping_sub(ONES * 0x20) & !word
        | quote.wrapping_sub(ONES) & !quote
        | backslash.wrapping_sub(ONES) & !backslash)
        & (ONES << 7)
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

#[cfg(test)]
impl ResultsFile {
    /// Makes every later write fail as on a full disk (`/dev/full` answers each so).
    pub(crate) fn fail_writes_for_test(&mut self) {
        let full = std::fs::OpenOptions::new().write(true).open("/dev/full");
        self.out = BufWriter::with_capacity(1 << 16, full.expect("/dev/full"));
    }
}

/// A write to a [`ResultsFile`] that failed, naming the file.
#[derive(Debug, thiserror::Error)]
#[error("cannot write {}: {error}", .path.display())]
pub struct WriteFailed {
    path: PathBuf,
    error: std::io::Error,
}

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
        let exists = std::fs::symlink_metadata(path).is_ok();
        let file = if append && exists {
            fsio::append_output(path)?
        } else {
            if exists {
                // Checked before it is moved: a planted link or a FIFO is refused, not kept.
                drop(fsio::update_output(path)?);
                let aside = path.with_extension("jsonl.replaced");
                std::fs::rename(path, &aside)?;
                replaced = Some(aside);
            }
            fsio::create_output(path)?
        };
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
        self.out.write_all(lines).map_err(|e| self.named(e))?;
        if self.last_flush.elapsed() >= FLUSH_EVERY {
            self.flush()?;
        }
        Ok(())
    }

    pub fn flush(&mut self) -> std::io::Result<()> {
        self.out.flush().map_err(|e| self.named(e))?;
        self.last_flush = Instant::now();
        self.syncer.request()
    }

    /// `error` saying the file it happened to (a full disk says only "No space left").
    fn named(&self, error: std::io::Error) -> std::io::Error {
        let kind = error.kind();
        let failed = WriteFailed {
            path: self.path.clone(),
            error,
        };
        std::io::Error::new(kind, failed)
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

/// The id at the start of `text`, read as its own type (an untagged [`SampleId`] would buffer
/// the value first).
pub(crate) fn leading_id(text: &str) -> Option<SampleId> {
    let mut values = serde_json::Deserializer::from_str(text);
    if text.starts_with('"') {
        String::deserialize(&mut values).ok().map(SampleId::Str)
    } else {
        i64::deserialize(&mut values).ok().map(SampleId::Int)
    }
}

/// The complete lines of a results file.
pub fn count_lines(path: &Path) -> std::io::Result<u64> {
    let (file, _) = fsio::open_regular(path, fsio::cap::STREAM)?;
    let mut reader = BufReader::with_capacity(1 << 16, file);
    let mut lines = 0;
    loop {
        let buffer = reader.fill_buf()?;
        if buffer.is_empty() {
            return Ok(lines);
        }
        lines += memchr::memchr_iter(b'\n', buffer).count() as u64;
        let read = buffer.len();
        reader.consume(read);
    }
}

/// Reads every result of a finished run's `results.jsonl`, in order, for a report or a
/// comparison; blank lines are skipped.
pub fn read_results(path: &Path, each: impl FnMut(SampleResult)) -> Result<(), ResultsError> {
    let advice = "; is this a results.jsonl written by `gavel run`?";
    read_results_where(path, advice, |_| true, each)
}

/// [`read_results`] of the lines `wanted` keeps, told by their text before they are parsed;
/// `advice` ends the message of a line that is no result.
pub(crate) fn read_results_where(
    path: &Path,
    advice: &'static str,
    mut wanted: impl FnMut(&str) -> bool,
    mut each: impl FnMut(SampleResult),
) -> Result<(), ResultsError> {
    let (file, _) =
        fsio::open_regular(path, fsio::cap::STREAM).map_err(|source| ResultsError::Open {
            path: path.to_path_buf(),
            source,
        })?;
    let mut reader = BufReader::with_capacity(1 << 16, file);
    let mut bytes = Vec::new();
    for index in 0.. {
        let line = text_line(&mut reader, &mut bytes, path, index + 1)?;
        if line.is_empty() {
            break;
        }
        if line.trim().is_empty() || !wanted(line) {
            continue;
        }
        let result = parse_result(line).map_err(|source| ResultsError::NotAResult {
            path: path.to_path_buf(),
            line: index + 1,
            source,
            advice,
        })?;
        each(result);
    }
    Ok(())
}

/// Reads the complete results of an earlier run for `--resume`, dropping a final line cut
/// short by a kill. Calls `each` for every complete result, in order, until it answers
/// `false`, which leaves the file as it was.
pub fn read_previous(
    path: &Path,
    mut each: impl FnMut(SampleResult) -> bool,
) -> Result<u64, ResultsError> {
    let mut file = match fsio::update_output(path) {
        Ok(file) => file,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(0),
        Err(source) => {
            return Err(ResultsError::Open {
                path: path.to_path_buf(),
                source,
            });
        }
    };
    let mut reader = BufReader::new(&mut file);
    let mut complete_bytes = 0u64;
    let mut count = 0u64;
    let mut bytes = Vec::new();
    loop {
        let line = text_line(&mut reader, &mut bytes, path, count + 1)?;
        let n = line.len();
        if n == 0 || !line.ends_with('\n') {
            break;
        }
        let result = parse_result(line).map_err(|source| ResultsError::NotAResult {
            path: path.to_path_buf(),
            line: count + 1,
            source,
            advice: "; remove the file or choose another output folder",
        })?;
        if !each(result) {
            return Ok(count);
        }
        complete_bytes += n as u64;
        count += 1;
    }
    drop(reader);
    file.set_len(complete_bytes)
        .and_then(|()| file.seek(SeekFrom::End(0)).map(|_| ()))
        .map_err(|source| ResultsError::Truncate {
            path: path.to_path_buf(),
            source,
        })?;
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

pub(crate) fn parse_result(line: &str) -> Result<SampleResult, serde_json::Error> {
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

/// A results file read a line at a time, each line as it was written.
pub struct ResultLines {
    file: BufReader<File>,
    /// The number of the next line (from 0).
    pub line: u64,
    text: Vec<u8>,
}

impl ResultLines {
    pub fn open(path: &Path) -> Result<ResultLines, ResultsError> {
        let (file, _) =
            fsio::open_regular(path, fsio::cap::STREAM).map_err(|source| ResultsError::Open {
                path: path.to_path_buf(),
                source,
            })?;
        Ok(ResultLines {
            file: BufReader::new(file),
            line: 0,
            text: Vec::new(),
        })
    }

    /// The next line, with its newline; `None` at the end.
    pub fn next_line(&mut self) -> std::io::Result<Option<&[u8]>> {
        self.text.clear();
        let read = fsio::read_line(&mut self.file, &mut self.text);
        if read.map_err(|e| line_error(e, self.line + 1))? == 0 {
            return Ok(None);
        }
        self.line += 1;
        Ok(Some(&self.text))
    }
}

/// Line `number` of the results file at `path`, read from `reader` into `bytes` (its newline
/// kept; empty at the end of the file), as text.
fn text_line<'b>(
    reader: &mut impl BufRead,
    bytes: &'b mut Vec<u8>,
    path: &Path,
    number: u64,
) -> Result<&'b str, ResultsError> {
    bytes.clear();
    let read = fsio::read_line(reader, bytes).and_then(|_| {
        std::str::from_utf8(bytes)
            .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidData, e))
    });
    read.map_err(|source| ResultsError::Read {
        path: path.to_path_buf(),
        source: line_error(source, number),
    })
}

/// `error`, met reading line `number`, saying that line.
fn line_error(error: std::io::Error, number: u64) -> std::io::Error {
    std::io::Error::new(error.kind(), format!("line {number}: {error}"))
}

/// The result of a line of `results.jsonl`.
pub fn parse_line(line: &[u8]) -> std::io::Result<SampleResult> {
    let text = std::str::from_utf8(line).map_err(std::io::Error::other)?;
    parse_result(text).map_err(std::io::Error::other)
}

/// Earlier results that cannot be read back.
#[derive(Debug, thiserror::Error)]
pub enum ResultsError {
    #[error("{}: cannot open: {source}", .path.display())]
    Open {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{}: cannot read: {source}", .path.display())]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{}:{line}: not a gavel result line ({}){advice}", .path.display(), within_line(.source))]
    NotAResult {
        path: PathBuf,
        line: u64,
        source: serde_json::Error,
        /// What to do about it, when there is something to do.
        advice: &'static str,
    },
    #[error("{}: cannot truncate a partial line: {source}", .path.display())]
    Truncate {
        path: PathBuf,
        source: std::io::Error,
    },
}

/// serde's message placed in the line (its column): serde counts the line as line 1, where the
/// error names the line of the file.
fn within_line(error: &serde_json::Error) -> String {
    format!(
        "{} at column {}",
        strip_position(&error.to_string()),
        error.column()
    )
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::grade::CheckOutcome;

    fn written(text: &str) -> String {
        let mut out = Vec::new();
        write_str(&mut out, text);
        String::from_utf8(out).unwrap()
    }

    /// A write that fails (a full disk: `/dev/full` answers every write so) names the results
    /// file, where the system's error alone says only "No space left on device".
    #[test]
    fn a_write_that_fails_names_the_results_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("results.jsonl");
        let mut results = ResultsFile::open(&path, false).unwrap();
        results.fail_writes_for_test();
        results.append(b"{}\n").unwrap();
        let error = results.flush().unwrap_err();
        assert_eq!(error.kind(), std::io::ErrorKind::StorageFull);
        let said = error.to_string();
        assert!(
            said.starts_with(&format!("cannot write {}: ", path.display())),
            "{said}"
        );
    }

    #[test]
    fn retry_errors_keeps_the_grades_not_in_error_of_a_sample_with_one() {
        let result = |grades: Vec<(&'static str, Grade)>, error: bool| SampleResult {
            sample_id: SampleId::Int(1),
            grades: grades
                .into_iter()
                .map(|(k, g)| (GradeKey::Borrowed(k), g))
                .collect(),
            reward: None,
            error: error.then(|| SampleError {
                category: ErrorCategory::Grading,
                message: "failed".into(),
            }),
        };
        let graded = result(
            vec![("a", Grade::pass("ok")), ("b", Grade::error("timeout"))],
            true,
        );
        assert_eq!(graded.retry(), Retry::Grades);
        assert!(graded.kept_grade(0, "a").is_some());
        assert!(graded.kept_grade(1, "b").is_none(), "graded again");
        let whole = result(vec![("a", Grade::fail("Empty submission"))], true);
        assert_eq!(whole.retry(), Retry::Sample);
        assert!(whole.kept_grade(0, "a").is_none(), "graded whole");
        assert_eq!(result(Vec::new(), true).retry(), Retry::Sample);
        let clean = result(vec![("a", Grade::fail("no"))], false);
        assert_eq!(clean.retry(), Retry::Nothing);
    }

    #[test]
    fn strings_are_escaped_as_serde_json_escapes_them() {
        // Every ASCII byte, alone and at each offset of an eight-byte word and its tail, and
        // beside non-ASCII text whose bytes have the high bit set.
        for byte in 0u8..0x80 {
            let c = char::from(byte);
            for before in 0..17 {
                for filler in ["a", "é"] {
                    let text = format!("{}{c}{}", filler.repeat(before), filler.repeat(3));
                    assert_eq!(
                        written(&text),
                        serde_json::to_string(&text).unwrap(),
                        "{text:?}"
                    );
                    // Two of it, with what follows shorter than a word: the tail's window
                    // holds bytes already escaped.
                    for (gap, after) in [(0, 0), (0, 2), (1, 1), (3, 0), (6, 1), (2, 7)] {
                        let text = format!(
                            "{}{c}{}{c}{}",
                            filler.repeat(before),
                            filler.repeat(gap),
                            filler.repeat(after)
                        );
                        assert_eq!(
                            written(&text),
                            serde_json::to_string(&text).unwrap(),
                            "{text:?}"
                        );
                    }
                }
            }
        }
        for text in [
            "",
            "plain",
            "\"\"\\\\",
            "\u{7f}\u{80}\u{9f}\u{a0}ÿ",
            "日本語のテキスト\n改行",
            "tab\tend\u{1}\u{1f}",
            "emoji 🙂 and \"quotes\" over more than sixteen bytes\r\n",
        ] {
            assert_eq!(
                written(text),
                serde_json::to_string(text).unwrap(),
                "{text:?}"
            );
        }
    }

    #[test]
    fn grades_are_found_by_key_in_any_order() {
        let result = SampleResult {
            sample_id: SampleId::Int(0),
            grades: vec![
                ("b".into(), Grade::pass("b")),
                ("a".into(), Grade::scored(0.5, "a")),
            ],
            reward: None,
            error: None,
        };
        for (index, key) in [(0, "b"), (1, "a"), (0, "a"), (1, "b"), (5, "a")] {
            assert_eq!(
                result.grade_at(index, key),
                result.grade(key),
                "{key} at {index}"
            );
            assert_eq!(result.grade_at(index, key).unwrap().rationale, key);
        }
        assert_eq!(result.grade_at(0, "c"), None);
    }

    #[test]
    fn a_grade_is_written_as_its_serialize_writes_it() {
        let full = Grade::new(0.25, Status::Error, "why \"not\"")
            .with_submission("line\nbreak")
            .with_metadata("checks", json!([{"a": 1}, null]))
            .with_expected_actual(json!({"x": [1.5, "y"]}), json!(null));
        let mut bare = Grade::scored(1.0, "");
        bare.score = f64::NAN;
        let checked = Grade::fail("1/2 checks passed")
            .with_checks(vec![
                CheckOutcome {
                    check: "output_contains",
                    status: Status::Pass,
                    message: "found \"a\"".into(),
                },
                CheckOutcome {
                    check: "max_steps",
                    status: Status::Fail,
                    message: "7 > 5".into(),
                },
            ])
            .with_metadata("other", json!({"k": [1]}));
        let only_checks = Grade::pass("1/1 checks passed").with_checks(vec![CheckOutcome {
            check: "tools_called",
            status: Status::Pass,
            message: "called \u{1}search\\".into(),
        }]);
        let same_submission = Grade::scored(0.0, "again").with_submission("line\nbreak");
        let grades = [
            full.clone(),
            full,
            same_submission,
            bare,
            checked,
            only_checks,
            Grade::fail("x"),
            Grade::scored(1e-7, "tiny"),
            Grade::scored(-0.0, "negative zero"),
            Grade::scored(0.0, "zero"),
            Grade::scored(1.0, "one"),
            Grade::scored(f64::INFINITY, "infinite"),
            Grade::fail("x"),
            Grade::new(0.5, Status::Fail, String::from("why \"not\"")),
        ];
        // One buffer, as for the grades of a result line: a submission equal to the last one
        // written is copied from it, a fixed rationale met before is copied.
        let (mut writer, mut out, mut written) = (LineWriter::default(), Vec::new(), None);
        let key: GradeKey = "k".into();
        for grade in &grades {
            // The grade's text follows its key, `"k":`.
            let start = out.len() + 4;
            writer.write_head(&mut out, 0, &key, grade).unwrap();
            write_rest(&mut out, grade, &mut written).unwrap();
            assert_eq!(
                std::str::from_utf8(&out[start..]).unwrap(),
                serde_json::to_string(grade).unwrap()
            );
        }
    }

    #[test]
    fn typed_checks_are_written_first_in_metadata_and_read_back_as_written() {
        let grade = Grade::pass("1/1 checks passed")
            .with_checks(vec![CheckOutcome {
                check: "tools_called",
                status: Status::Pass,
                message: "called search".into(),
            }])
            .with_metadata("other", json!(2));
        let mut out = b"{\"score\":".to_vec();
        write_scored(&mut out, &grade, |out| write_str(out, &grade.rationale)).unwrap();
        write_rest(&mut out, &grade, &mut None).unwrap();
        let written = String::from_utf8(out).unwrap();
        assert!(
            written.contains(
                r#""metadata":{"checks":[{"check":"tools_called","status":"pass","message":"called search"}],"other":2}"#
            ),
            "{written}"
        );
        let read: Grade = serde_json::from_str(&written).unwrap();
        assert!(read.details().checks.is_empty());
        assert_eq!(serde_json::to_string(&read).unwrap(), written);
    }

    #[test]
    fn a_result_line_has_its_fields_in_order() {
        let line = |result: &SampleResult| {
            let mut out = Vec::new();
            result.write_json(&mut out).unwrap();
            String::from_utf8(out).unwrap()
        };
        let mut result = SampleResult {
            sample_id: SampleId::Int(-3),
            grades: vec![
                (
                    "b \"key\"".into(),
                    Grade::pass("ok").with_submission("s\t1"),
                ),
                ("a".into(), Grade::fail("no").with_submission("s\t1")),
                ("c".into(), Grade::fail("no")),
            ],
            reward: Some(0.5),
            error: Some(SampleError {
                category: ErrorCategory::Grading,
                message: "boom".into(),
            }),
        };
        assert_eq!(
            line(&result),
            r#"{"sample_id":-3,"grades":{"b \"key\"":{"score":1.0,"status":"pass","rationale":"ok","submission":"s\t1"},"a":{"score":0.0,"status":"fail","rationale":"no","submission":"s\t1"},"c":{"score":0.0,"status":"fail","rationale":"no","submission":""}},"reward":0.5,"error":{"category":"grading","message":"boom"}}"#
        );
        // One writer for many lines, whose keys change from line to line.
        let mut writer = LineWriter::default();
        let mut lines = Vec::new();
        let mut other = result.clone();
        other.grades.swap(0, 2);
        other.grades.truncate(2);
        for result in [&result, &other, &result, &other] {
            let start = lines.len();
            writer.write(result, &mut lines).unwrap();
            assert_eq!(lines[start..], *line(result).as_bytes());
        }
        result.sample_id = SampleId::Str("id\n1".into());
        result.grades.clear();
        result.reward = None;
        result.error = None;
        assert_eq!(line(&result), r#"{"sample_id":"id\n1","grades":{}}"#);
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
}
