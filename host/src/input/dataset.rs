//! Datasets (JSONL, or CSV read as JSON lines: [`crate::input::csv_rows`]) and recorded runs,
//! streamed: rows are read, parsed and graded as they go.
//!
//! With `trajectories:` the recorded runs drive the stream: each run record (a letta-evals
//! `<model>.jsonl` line, or any `{sample_id, trajectory, agent_state?}` line) is joined to its
//! dataset row through an index of row offsets built in one pass (about 40 bytes per row).

use std::collections::{HashMap, HashSet, VecDeque};
use std::fmt;
use std::fs::File;
use std::io::{BufRead, BufReader, Cursor, Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use serde::Deserialize;
use serde_json::value::RawValue;

use crate::config::spec::SamplePer;
use crate::config::suite::normalise_path;
use crate::fsio;
use crate::input::csv_rows::Converted;
use crate::input::id_clash::{self, Clash, RowId};
use crate::input::sample::{
    AgentState, Case, CaseTurn, RawId, RawRow, Sample, SampleId, Texts, TurnGraderKind,
};
pub use crate::input::source::SourceError;
use crate::input::trajectory::inline::Inline;
use crate::input::trajectory::{self, Format};
use crate::input::{csv_rows, inspect_log, otlp_file, session_files};

/// A row that cannot be graded: where it is and what is wrong.
#[derive(Debug, Clone, PartialEq)]
pub struct RowError {
    pub file: PathBuf,
    pub line: usize,
    pub column: usize,
    pub message: String,
}

impl fmt::Display for RowError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.file.display(), self.line)?;
        if self.column > 0 {
            write!(f, ":{}", self.column)?;
        }
        write!(f, ": {}", self.message)
    }
}

impl std::error::Error for RowError {}

/// The regular file at `path`, opened to be read a block at a time (never whole): a FIFO, a
/// device or a folder is refused, with what it is.
pub fn open_stream(path: &Path) -> Result<File, SourceError> {
    fsio::open_regular(path, fsio::cap::STREAM)
        .map(|(file, _)| file)
        .map_err(|e| SourceError::io(path, "open", e))
}

/// One unit of work: a dataset row, and with `trajectories:` the run record joined to it.
#[derive(Debug, Clone)]
pub struct Item {
    /// Position in the stream, from 0.
    pub seq: u64,
    pub row: Line,
    pub run: Option<Line>,
}

impl Item {
    /// The id of a row without one, as its sample takes it: its 0-based line index, blank
    /// lines counted.
    pub fn line_id(&self) -> i64 {
        Sample::line_index(self.row.number)
    }
}

/// A line of a file, with where it came from.
#[derive(Debug, Clone)]
pub struct Line {
    pub file: Arc<Path>,
    /// 1-based.
    pub number: usize,
    pub text: LineText,
}

/// A line's text, without its line ending. [`Lines`] reads a file in blocks of whole lines, and
/// each line is a part of its block, shared: a row costs no allocation or copy of its own, and
/// the block is freed with the last of its lines.
#[derive(Clone)]
pub struct LineText {
    block: Arc<String>,
    start: usize,
    end: usize,
}

impl std::ops::Deref for LineText {
    type Target = str;

    fn deref(&self) -> &str {
        &self.block[self.start..self.end]
    }
}

impl fmt::Debug for LineText {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&**self, f)
    }
}

impl From<String> for LineText {
    fn from(text: String) -> LineText {
        LineText {
            end: text.len(),
            block: Arc::new(text),
            start: 0,
        }
    }
}

/// How rows become samples.
#[derive(Debug)]
pub struct RowParser {
    pub format: Option<Format>,
    pub base_dir: PathBuf,
    rubric_files: Mutex<HashMap<PathBuf, Result<String, RubricError>>>,
    /// Whether rows are tried with the [`crate::input::fast::scan::Scanner`], which reads Letta and evaldeck
    /// trajectories only: not while the rows read last had trajectories of another format.
    scanning: AtomicBool,
    /// Whether every row must be in OpenAI's eval shape (`dataset_format: openai_eval`).
    pub eval_rows: bool,
}

impl RowParser {
    pub fn new(format: Option<Format>, base_dir: PathBuf) -> RowParser {
        RowParser {
            format,
            base_dir,
            rubric_files: Mutex::new(HashMap::new()),
            scanning: AtomicBool::new(scans(format)),
            eval_rows: false,
        }
    }

    /// Parses an item into a sample.
    pub fn parse<'i>(&self, item: &'i Item) -> Result<Sample<'i>, RowError> {
        if self.eval_rows
            && let Some(error) = eval_shape_error(&item.row.text)
        {
            return Err(row_error(&item.row, 0, error));
        }
        let mut sample = self.parse_row(&item.row)?;
        sample.row = &item.row.text;
        if let Some(run) = &item.run {
            sample.run = Some(&run.text);
            sample.trajectory = None;
            if let Some(case) = &mut sample.case {
                case.traces = Vec::new();
            }
            let agent_state = self.parse_run(run, &mut sample)?;
            if agent_state.is_some() {
                sample.agent_state = agent_state;
            }
        }
        Ok(sample)
    }

    /// A run record's trajectory, into `sample`, and its memory, read in one pass where it can
    /// be (as rows are).
    fn parse_run<'l>(
        &self,
        run: &'l Line,
        sample: &mut Sample<'l>,
    ) -> Result<Option<AgentState>, RowError> {
        an_object(run)?;
        if sample.case.is_none()
            && let Ok(record) = serde_json::from_str::<RunRecord<Inline>>(&run.text)
            && let Some(trajectory) = self.convert_inline(record.trajectory, run)
        {
            sample.trajectory = trajectory?;
            return Ok(record.agent_state);
        }
        let record: RunRecord<&RawValue> = parsed(run)?;
        if let Some(raw) = record.trajectory {
            self.recorded(sample, raw, run)?;
        }
        Ok(record.agent_state)
    }

    /// Parses a row in one pass, its trajectory read in place: by the [`crate::input::fast::scan::Scanner`]
    /// when the row has the common shape, else by serde. A row that pass cannot settle (a parse
    /// error anywhere, a trajectory whose shape is not the suite's format or that detection
    /// alone cannot place) is parsed again the general way, whose result and errors are the
    /// authoritative ones.
    fn parse_row<'l>(&self, line: &'l Line) -> Result<Sample<'l>, RowError> {
        let scanning = self.scanning.load(Ordering::Relaxed);
        let sample = self.read_row(line, scanning)?;
        let scanned = sample
            .trajectory
            .as_ref()
            .is_none_or(|trajectory| scans(Some(trajectory.format)));
        if scanned != scanning {
            self.scanning.store(scanned, Ordering::Relaxed);
        }
        Ok(sample)
    }

    /// [`RowParser::parse_row`]'s reading, the scanner tried first if `scan`.
    fn read_row<'l>(&self, line: &'l Line, scan: bool) -> Result<Sample<'l>, RowError> {
        an_object(line)?;
        // Read in place: a row is 600 bytes, and each move of it was a copy.
        let mut raw = RawRow::default();
        let read = (scan && RawRow::scan(&line.text, &mut raw).is_some())
            || serde_json::from_str::<RawRow<Inline>>(&line.text).is_ok_and(|read| {
                raw = read;
                true
            });
        // A case's turns may be recorded as a list of traces, a shape of its own.
        if read && raw.turns.is_none() {
            let mut sample = self.fields(&mut raw, line)?;
            if let Some(trajectory) = self.convert_inline(raw.trajectory.take(), line) {
                sample.trajectory = trajectory?;
                return Ok(sample);
            }
        }
        let mut raw: RawRow = parsed(line)?;
        let mut sample = self.fields(&mut raw, line)?;
        if let Some(recorded) = raw.trajectory.take() {
            self.recorded(&mut sample, recorded, line)?;
        }
        Ok(sample)
    }

    /// Converts the recorded run into `sample`: for an evaldeck case with `turns`, a list of
    /// evaldeck traces is one trace per turn; anything else is one recording.
    fn recorded<'a>(
        &self,
        sample: &mut Sample<'a>,
        raw: &'a RawValue,
        line: &Line,
    ) -> Result<(), RowError> {
        if let Some(case) = &mut sample.case
            && let Some(traces) = per_turn_traces(raw)
        {
            let traces = traces
                .into_iter()
                .enumerate()
                .map(|(i, trace)| {
                    trajectory::convert(trace, Some(Format::Evaldeck))
                        .map_err(|e| row_error(line, 0, format!("trajectory[{i}]: {}", e.0)))
                })
                .collect::<Result<Vec<_>, _>>()?;
            sample.trajectory = Some(trajectory::Trajectory::joined(&traces));
            case.traces = traces;
        } else {
            sample.trajectory = Some(self.convert(raw, line)?);
        }
        Ok(())
    }

    /// `text`, as line 1 of `rows.jsonl`, read by the scanner and by serde, each reading as text
    /// to compare; `None` when the scanner leaves the row to serde. The two must be equal: the
    /// tests and the `rows` fuzz target (`fuzz/`) hold them to it.
    pub fn readings(&self, text: &str) -> Option<(String, String)> {
        let line = line_one(text);
        let mut scanned = RawRow::default();
        RawRow::scan(&line.text, &mut scanned)?;
        let serde = match serde_json::from_str::<RawRow<Inline>>(&line.text) {
            Ok(read) => self.read_as(&line, read),
            Err(e) => format!("serde refuses the row: {e}"),
        };
        Some((self.read_as(&line, scanned), serde))
    }

    /// A row read on the one-pass path from `raw`, as text to compare.
    fn read_as(&self, line: &Line, mut raw: RawRow<Inline>) -> String {
        let read = self.fields(&mut raw, line).map(|mut sample| {
            self.convert_inline(raw.trajectory.take(), line)
                .map(|trajectory| {
                    sample.trajectory = trajectory?;
                    Ok::<_, RowError>(sample)
                })
        });
        format!("{read:?}")
    }

    /// The inline trajectory converted, or `None` when its shape is not the suite's format.
    fn convert_inline<'a>(
        &self,
        trajectory: Option<Inline<'a>>,
        line: &Line,
    ) -> Option<Result<Option<trajectory::Trajectory<'a>>, RowError>> {
        match trajectory {
            None => Some(Ok(None)),
            Some(inline) => Some(
                inline
                    .convert(self.format)?
                    .map(Some)
                    .map_err(|e| row_error(line, 0, e.0)),
            ),
        }
    }

    /// The sample of a parsed row, its fields taken from `raw`, but for its trajectory, which
    /// is left there unconverted.
    fn fields<'s, T>(&self, raw: &mut RawRow<T>, line: &Line) -> Result<Sample<'s>, RowError> {
        let error = |message: String| row_error(line, 0, message);
        let id = match raw.sample_id.or(raw.id) {
            Some(value) => Some(parse_id(value).map_err(|m| error(m.to_string()))?),
            None => None,
        };
        let turns = raw.turns.take();
        let input = match raw.input.take() {
            Some(input) if !is_empty_texts(&input) => Some(input),
            other => raw.prompt.take().or(other),
        };
        // evaldeck's `input` of a case is its first turn's.
        let input = input.or_else(|| {
            let first = turns.as_ref()?.first()?;
            Some(Texts::One(first.user.clone()))
        });
        if let Some(turns) = &turns {
            check_turn_graders(turns).map_err(|e| error(e.to_string()))?;
        }
        if let Some(Texts::PerTurn(truths)) = &raw.ground_truth {
            match &input {
                Some(Texts::PerTurn(inputs)) if inputs.len() == truths.len() => {}
                _ => {
                    return Err(error(
                        "ground_truth: a list of ground truths needs `input` to be a list of the \
                         same length (per-turn mode)"
                            .to_string(),
                    ));
                }
            }
        }
        let rubric = match (raw.rubric.take(), raw.rubric_path.take()) {
            (Some(_), Some(_)) => {
                return Err(error(
                    "rubric, rubric_path: give one or the other, not both".to_string(),
                ));
            }
            (Some(rubric), None) => Some(rubric),
            (None, Some(path)) => Some(self.read_rubric(&path).map_err(|e| error(e.to_string()))?),
            (None, None) => None,
        };
        let sample = Sample {
            id,
            line: line.number,
            input,
            ground_truth: raw.ground_truth.take(),
            rubric_vars: raw.rubric_vars.take().unwrap_or_default(),
            rubric,
            name: raw.name.take(),
            description: raw.description.take(),
            expected: match &turns {
                // evaldeck's `EvalCase.expected`: the first turn's, what a check reads that has
                // no `config:` of its own.
                Some(turns) => turns.first().and_then(|turn| turn.expected.clone()),
                None => raw.expected.take(),
            },
            case: turns.map(|turns| {
                Box::new(Case {
                    turns,
                    traces: Vec::new(),
                })
            }),
            reference_output: raw.reference_output.take(),
            reference_tools: raw.reference_tools.take().unwrap_or_default(),
            tags: raw.tags.take().unwrap_or_default(),
            metadata: raw.metadata.take().unwrap_or_default(),
            trajectory: None,
            agent_state: raw.agent_state.take(),
            row: "",
            run: None,
            row_memo: Default::default(),
        };
        Ok(sample)
    }

    fn convert<'a>(
        &self,
        raw: &'a RawValue,
        line: &Line,
    ) -> Result<trajectory::Trajectory<'a>, RowError> {
        trajectory::convert(raw, self.format).map_err(|e| row_error(line, 0, e.0))
    }

    /// A row's rubric file, which must lie inside the suite's folder: a row may come from
    /// anyone, and the rubric is sent to the judge.
    fn read_rubric(&self, relative: &str) -> Result<String, RubricError> {
        let path = self.base_dir.join(relative);
        let mut cache = self
            .rubric_files
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        cache
            .entry(path.clone())
            .or_insert_with(|| {
                fsio::read_text_within(&self.base_dir, Path::new(relative), fsio::cap::TEXT)
                    .map_err(|e| RubricError {
                        relative: relative.to_string(),
                        source: Arc::new(e),
                    })
            })
            .clone()
    }
}

/// Why a row's `rubric_path` file cannot be read; kept for the rows that name it again.
#[derive(Debug, Clone, thiserror::Error)]
#[error(
    "rubric_path: cannot read {relative}: {source} (a row's rubric_path names a file inside the \
     suite's folder, relative to it)"
)]
struct RubricError {
    relative: String,
    source: Arc<std::io::Error>,
}

/// The items of `raw` when it is a non-empty list of evaldeck traces (a Letta trajectory is a list
/// of lists, an OpenAI one a list of messages).
pub fn per_turn_traces(raw: &RawValue) -> Option<Vec<&RawValue>> {
    let items: Vec<&RawValue> = serde_json::from_str(raw.get()).ok()?;
    let traces = !items.is_empty()
        && items
            .iter()
            .all(|item| trajectory::detect(item) == Some(Format::Evaldeck));
    traces.then_some(items)
}

/// Why a case's `turns` cannot be graded.
#[derive(Debug, thiserror::Error)]
pub enum TurnsError {
    /// The turns' shape is wrong at `path` (`[1].user`; empty: the turns themselves).
    #[error("{}{error}", if path.is_empty() { String::new() } else { format!("turns{path}: ") })]
    Shape {
        path: String,
        error: serde_json::Error,
    },
    #[error(
        "turns[{turn}].graders[{grader}].type: unknown grader type `{kind}` (known: {})",
        TurnGraderKind::names().collect::<Vec<_>>().join(", ")
    )]
    UnknownGrader {
        turn: usize,
        grader: usize,
        kind: String,
    },
}

/// A case's `turns` as the row reader reads them: their shape, then their graders' types.
pub(crate) fn check_case_turns(turns: &serde_json::Value) -> Result<(), TurnsError> {
    let turns: Vec<CaseTurn> =
        serde_path_to_error::deserialize(turns.clone()).map_err(|e| TurnsError::Shape {
            path: normalise_path(&e.path().to_string()),
            error: e.into_inner(),
        })?;
    check_turn_graders(&turns)
}

/// Refuses a turn's grader entry of a type gavel does not grade, which evaldeck drops unsaid.
fn check_turn_graders(turns: &[CaseTurn]) -> Result<(), TurnsError> {
    for (t, turn) in turns.iter().enumerate() {
        for (g, grader) in turn.graders.iter().enumerate() {
            if TurnGraderKind::of(&grader.kind).is_none() {
                return Err(TurnsError::UnknownGrader {
                    turn: t,
                    grader: g,
                    kind: grader.kind.clone(),
                });
            }
        }
    }
    Ok(())
}

/// Whether the [`crate::input::fast::scan::Scanner`] reads trajectories of `format` (any, when `None`).
fn scans(format: Option<Format>) -> bool {
    matches!(format, None | Some(Format::Letta | Format::Evaldeck))
}

fn is_empty_texts(texts: &Texts) -> bool {
    matches!(texts, Texts::One(s) if s.is_empty())
}

fn row_error(line: &Line, column: usize, message: String) -> RowError {
    RowError {
        file: line.file.to_path_buf(),
        line: line.number,
        column,
        message,
    }
}

/// Refuses a line whose JSON is not an object. serde reads a struct from a list too, field by
/// field in order, so a row `["a", "b"]` would be a sample whose id is `"a"`.
fn an_object(line: &Line) -> Result<(), RowError> {
    let text = line.text.trim_start();
    if text.starts_with('\u{feff}') {
        return Err(row_error(
            line,
            line.text.len() - text.len() + 1,
            BOM_INSIDE.to_string(),
        ));
    }
    match text.starts_with('{') {
        true => Ok(()),
        false => Err(match json_kind(text) {
            Some(kind) => row_error(line, line.text.len() - text.len() + 1, not_an_object(kind)),
            // Not JSON at all: serde says where.
            None => match parsed::<serde::de::IgnoredAny>(line) {
                Err(e) => e,
                Ok(_) => row_error(line, 1, not_an_object("another value")),
            },
        }),
    }
}

fn not_an_object(kind: &str) -> String {
    format!("a row is a JSON object ({{\"input\": ..., \"ground_truth\": ...}}), not {kind}")
}

/// Parses a JSON line that holds an object; on failure parses again to name the field that is
/// wrong.
fn parse_json<'a, T: Deserialize<'a>>(line: &'a Line) -> Result<T, RowError> {
    an_object(line)?;
    parsed(line)
}

/// [`parse_json`] without the check that the line holds an object.
fn parsed<'a, T: Deserialize<'a>>(line: &'a Line) -> Result<T, RowError> {
    serde_json::from_str(&line.text).map_err(|first| {
        let mut de = serde_json::Deserializer::from_str(&line.text);
        let message = match serde_path_to_error::deserialize::<_, T>(&mut de) {
            Err(e) if !matches!(&*e.path().to_string(), "." | "?") => {
                format!("{}: {}", e.path(), strip_position(&e.inner().to_string()))
            }
            // JSON, but not an object.
            _ => match json_kind(&line.text).filter(|_| first.is_data()) {
                Some(kind) => not_an_object(kind),
                None => strip_position(&first.to_string()),
            },
        };
        // The line stops inside its JSON, or holds Python's non-JSON numbers: say how that
        // comes about.
        let message = if first.is_eof() {
            format!(
                "{message}: the line ends before its JSON does (was the file cut off while it \
                 was written?)"
            )
        } else if non_json_number(&line.text, first.column()) {
            format!(
                "{message}: NaN and Infinity are not JSON (Python's json.dumps writes them \
                 unless given allow_nan=False); write null, or the number as text"
            )
        } else {
            message
        };
        row_error(line, first.column(), message)
    })
}

/// Whether `text` holds `NaN`, `Infinity` or `-Infinity` where serde stopped, at `column`
/// (1-based, on the character it could not read or just past it).
fn non_json_number(text: &str, column: usize) -> bool {
    (column.saturating_sub(2)..column).any(|at| {
        text.get(at..).is_some_and(|rest| {
            ["NaN", "Infinity", "-Infinity"]
                .iter()
                .any(|word| rest.starts_with(word))
        })
    })
}

/// What the JSON value `text` starts with is, as a row error says it, when not an object.
fn json_kind(text: &str) -> Option<&'static str> {
    match text.trim_start().as_bytes().first()? {
        b'"' => Some("a string"),
        b'[' => Some("a list"),
        b'n' => Some("null"),
        b't' | b'f' => Some("a boolean"),
        b'-' | b'0'..=b'9' => Some("a number"),
        _ => None,
    }
}

/// serde_json appends " at line L column C"; gavel reports the position itself.
pub(crate) fn strip_position(message: &str) -> String {
    match message.rfind(" at line ") {
        Some(at) => message[..at].to_string(),
        None => message.to_string(),
    }
}

/// A recorded id as the sample's [`SampleId`]: the one reading of ids, for rows, recorded runs
/// and `--filter id:`.
pub fn parse_id(RawId(raw): RawId) -> Result<SampleId, &'static str> {
    match whole_number(raw) {
        Some(id) => Ok(SampleId::Int(id)),
        None => id_by_serde(raw),
    }
}

/// [`parse_id`] for any id, through serde.
fn id_by_serde(raw: &str) -> Result<SampleId, &'static str> {
    match serde_json::from_str::<serde_json::Value>(raw) {
        Ok(serde_json::Value::String(s)) => Ok(SampleId::Str(s)),
        Ok(serde_json::Value::Number(n)) => {
            if let Some(i) = n.as_i64() {
                Ok(SampleId::Int(i))
            } else {
                match n.as_f64() {
                    Some(f) if f.fract() == 0.0 && f.abs() < 9.0e15 => Ok(SampleId::Int(f as i64)),
                    Some(f) if f.fract() == 0.0 => Err(
                        "sample_id: the number is too large for a number id: write the id as \
                         text, in quotes",
                    ),
                    _ => Err("sample_id: a number id must be a whole number"),
                }
            }
        }
        _ => Err("sample_id: expected an integer or a string"),
    }
}

/// The JSON number `text` (valid JSON) when it is an integer that fits an `i64`, as serde reads
/// it, without serde: most ids are. `None` for anything else, which serde reads.
fn whole_number(text: &str) -> Option<i64> {
    let (negative, digits) = match text.strip_prefix('-') {
        Some(digits) => (true, digits),
        None => (false, text),
    };
    if digits.is_empty() {
        return None;
    }
    // Counted down from zero, so that i64::MIN fits.
    let mut below = 0i64;
    for byte in digits.bytes() {
        let digit = byte.is_ascii_digit().then(|| i64::from(byte - b'0'))?;
        below = below.checked_mul(10)?.checked_sub(digit)?;
    }
    if negative {
        Some(below)
    } else {
        below.checked_neg()
    }
}

/// A recorded run: the fields gavel reads from a letta-evals result line (others are ignored).
#[derive(Deserialize)]
#[serde(bound(deserialize = "T: Deserialize<'de>"))]
struct RunRecord<T> {
    #[serde(default)]
    trajectory: Option<T>,
    #[serde(default)]
    agent_state: Option<AgentState>,
}

/// Just the id of a row or run record.
#[derive(Debug, Deserialize)]
struct IdOnly<'a> {
    #[serde(default, borrow)]
    sample_id: Option<RawId<'a>>,
    #[serde(default, borrow)]
    id: Option<RawId<'a>>,
}

/// The id of a row or run record without parsing the rest (`None`: the row has no id).
pub fn peek_id(line: &Line) -> Result<Option<SampleId>, RowError> {
    let ids: IdOnly = parse_json(line)?;
    match ids.sample_id.or(ids.id) {
        Some(raw) => parse_id(raw)
            .map(Some)
            .map_err(|m| row_error(line, 0, m.to_string())),
        None => Ok(None),
    }
}

/// `text` as line 1 of `rows.jsonl`.
fn line_one(text: &str) -> Line {
    Line {
        file: Path::new("rows.jsonl").into(),
        number: 1,
        text: LineText::from(text.to_string()),
    }
}

/// Reads a file line by line, skipping blank lines, counting line numbers.
pub struct Lines {
    file: Arc<Path>,
    source: Box<dyn Read + Send>,
    /// How many bytes a read asks for.
    block_size: usize,
    /// Whole lines read and checked as text; the lines handed out share it.
    block: Arc<String>,
    /// Blocks handed out before, kept to be read into again once no line holds them: a run
    /// then reads into the same few buffers from start to end instead of taking fresh memory
    /// for every block, which the allocator would return to the system and take back again.
    used: VecDeque<Arc<String>>,
    /// Where the next line starts in `block`.
    at: usize,
    /// The start of a line that runs past the end of `block`.
    carried: Vec<u8>,
    /// Why the file cannot be read past `block`, reported once `block` is used up.
    failed: Option<std::io::Error>,
    number: usize,
    /// The line each line read stands for, in order, when it is not its own (a CSV file's rows).
    numbers: Option<Arc<[usize]>>,
    /// The byte offset of the next line, counted rather than asked of the file.
    offset: u64,
    /// The longest line read ([`fsio::cap::LINE`]): past it, reading fails rather than hold
    /// a file with no newline whole.
    max_line: u64,
}

/// What [`Lines::open`] reads ahead to recognise a file that is not JSON Lines.
const HEAD_BYTES: usize = 4096;

/// Why a JSON Lines file that starts with a UTF-8 byte order mark is refused, and its mend.
pub(crate) const BOM_REFUSED: &str = "the file starts with a UTF-8 byte order mark (BOM), which \
     JSON Lines does not allow (letta-evals cannot read it either); save it as UTF-8 without one, \
     e.g. `sed -i '1s/^\\xEF\\xBB\\xBF//' FILE`";

/// Why a line after the first that starts with a byte order mark is refused, and its mend.
const BOM_INSIDE: &str = "the line starts with a UTF-8 byte order mark (BOM), as where a file \
     saved with one was joined to another; JSON Lines does not allow it (letta-evals cannot read \
     it either): remove it, e.g. `sed -i 's/^\\xEF\\xBB\\xBF//' FILE`";

/// Why a file that starts with `head` is not JSON Lines, when its start already says so.
fn not_json_lines(head: &[u8]) -> Option<&'static str> {
    if head.starts_with(b"\xEF\xBB\xBF") {
        return Some(BOM_REFUSED);
    }
    let first = head.iter().find(|b| !b.is_ascii_whitespace())?;
    (*first == b'[').then_some(
        "the file holds a JSON array, but a dataset is JSON Lines: one JSON object on each \
         line; convert it, e.g. `jq -c '.[]' FILE > data.jsonl`",
    )
}

/// What [`Lines`] reads at once: about a hundred rows of a recorded run.
const BLOCK_SIZE: usize = 1 << 18;

impl Lines {
    pub fn open(path: &Path) -> Result<Lines, SourceError> {
        let mut file = open_stream(path)?;
        // The start of the file, read ahead to tell a file that is not JSON Lines at all in
        // one sentence rather than an error on every line.
        let mut head = Vec::with_capacity(HEAD_BYTES);
        (&mut file)
            .take(HEAD_BYTES as u64)
            .read_to_end(&mut head)
            .map_err(|e| SourceError::io(path, "read", e))?;
        if let Some(message) = not_json_lines(&head) {
            return Err(SourceError {
                path: path.to_path_buf(),
                message: message.to_string(),
            });
        }
        let source = std::io::Cursor::new(head).chain(file);
        Ok(Lines::new(path.into(), Box::new(source), BLOCK_SIZE))
    }

    fn new(file: Arc<Path>, source: Box<dyn Read + Send>, block_size: usize) -> Lines {
        Lines {
            file,
            source,
            block_size,
            block: Arc::default(),
            used: VecDeque::new(),
            at: 0,
            carried: Vec::new(),
            failed: None,
            number: 0,
            numbers: None,
            offset: 0,
            max_line: fsio::cap::LINE,
        }
    }

    /// The next non-blank line with its byte offset.
    pub fn next_line(&mut self) -> Result<Option<(u64, Line)>, SourceError> {
        loop {
            if self.at == self.block.len() {
                if let Some(e) = self.failed.take() {
                    return Err(read_failure(&self.file, e));
                }
                if !self.refill() {
                    return Ok(None);
                }
                continue;
            }
            let rest = &self.block.as_bytes()[self.at..];
            let len = memchr::memchr(b'\n', rest).map_or(rest.len(), |newline| newline + 1);
            let (start, offset) = (self.at, self.offset);
            self.at += len;
            self.offset += len as u64;
            self.number += 1;
            let text = &self.block[start..self.at];
            if text.trim().is_empty() {
                continue;
            }
            let end = start + text.trim_end_matches(['\n', '\r']).len();
            return Ok(Some((
                offset,
                Line {
                    file: self.file.clone(),
                    number: self
                        .numbers
                        .as_ref()
                        .map_or(self.number, |n| n[self.number - 1]),
                    text: LineText {
                        block: self.block.clone(),
                        start,
                        end,
                    },
                },
            )));
        }
    }

    /// Reads the next block of whole lines (the file's last line may have no newline). `false`
    /// at the end of the file with nothing more to report.
    fn refill(&mut self) -> bool {
        // Read into in place, rather than with `read_to_end`, which starts at 8 KiB and takes five
        // reads to reach a block. A used block keeps its length, so only the part of the buffer
        // it never had is zeroed (zeroing a whole block each time was 1.3% of a run).
        let mut bytes = self.free_buffer();
        let mut filled = self.carried.len();
        if bytes.capacity() < filled + self.block_size {
            // Nothing in it is kept: growing it would copy the old bytes. Room for a carried
            // line or two more saves growing it again at the next refill.
            bytes.clear();
            bytes.reserve(filled + self.block_size + self.block_size / 8);
        }
        if bytes.len() < filled {
            bytes.resize(filled, 0);
        }
        bytes[..filled].copy_from_slice(&self.carried);
        let mut at_end = false;
        // Until a line ends in what was read: a line may be longer than a block.
        loop {
            if bytes.len() < filled + self.block_size {
                bytes.resize(filled + self.block_size, 0);
            }
            let before = filled;
            let (read, result) = fill(
                &mut self.source,
                &mut bytes[before..before + self.block_size],
            );
            filled += read;
            match result {
                Ok(()) if read < self.block_size => {
                    at_end = true;
                    break;
                }
                Ok(()) if memchr::memchr(b'\n', &bytes[before..filled]).is_some() => break,
                // Everything read so far is one line, not yet ended.
                Ok(()) if filled as u64 > self.max_line => {
                    self.failed = Some(std::io::Error::new(
                        std::io::ErrorKind::InvalidData,
                        format!(
                            "line {} is longer than {} MiB, more than a row can be: is this \
                             file JSON Lines (one JSON object on each line)?",
                            self.number + 1,
                            self.max_line >> 20
                        ),
                    ));
                    break;
                }
                Ok(()) => {}
                Err(e) => {
                    self.failed = Some(e);
                    break;
                }
            }
        }
        bytes.truncate(filled);
        // After a failed read, the line it cut short is not a line.
        let whole = if at_end {
            bytes.len()
        } else {
            memchr::memrchr(b'\n', &bytes).map_or(0, |newline| newline + 1)
        };
        self.carried = bytes.split_off(whole);
        let (text, not_text) = whole_lines_as_text(bytes, self.number + 1);
        self.failed = self.failed.take().or(not_text);
        if self.failed.is_some() {
            // Nothing past a failure is read.
            self.carried = Vec::new();
            self.source = Box::new(std::io::empty());
        }
        let block = std::mem::replace(&mut self.block, Arc::new(text));
        if self.used.len() == USED_BLOCKS {
            self.used.pop_front();
        }
        self.used.push_back(block);
        self.at = 0;
        !self.block.is_empty() || self.failed.is_some()
    }

    /// A buffer to read into, its old bytes left in place: a used block no line holds any more,
    /// or a new one.
    fn free_buffer(&mut self) -> Vec<u8> {
        let free = (0..self.used.len())
            .find(|&i| Arc::strong_count(&self.used[i]) == 1)
            .and_then(|i| self.used.remove(i))
            .and_then(Arc::into_inner);
        free.map(String::into_bytes).unwrap_or_default()
    }
}

/// A dataset's rows as JSON lines, to be read in order ([`DatasetText::lines`]) or each at its
/// offset ([`DatasetText::reader`]): a JSONL file itself, or the rows of a CSV file, an Inspect
/// log, a collector file or a session file made into lines.
enum DatasetText {
    Jsonl,
    Made {
        text: Arc<[u8]>,
        lines: Arc<[usize]>,
    },
}

/// What a dataset row at an offset is read from.
trait ReadSeek: Read + Seek + Send {}

impl<T: Read + Seek + Send> ReadSeek for T {}

/// What kind of file a dataset or runs file is, which decides how it is made into rows.
#[derive(Debug, Clone, Copy, PartialEq)]
enum FileKind {
    /// JSON Lines: a row or run record a line.
    Rows,
    Csv,
    InspectLog,
    CollectorFile,
    Session,
    /// A folder of Claude Code session files.
    Sessions,
}

impl FileKind {
    /// The kind of the file at `path`, told from its name and start.
    fn detect(path: &Path) -> Result<FileKind, SourceError> {
        Ok(if path.is_dir() {
            FileKind::Sessions
        } else if csv_rows::is_csv(path) {
            FileKind::Csv
        } else if inspect_log::is_inspect_log(path) {
            FileKind::InspectLog
        } else if otlp_file::is_collector_file(path) {
            FileKind::CollectorFile
        } else if session_files::is_session(path)? {
            FileKind::Session
        } else {
            FileKind::Rows
        })
    }

    /// The kind of the file at `path` when the suite names the trajectory format `format`: the
    /// file form of that format, unless the file starts with a dataset row (whose trajectory is
    /// then read as `format`); a file of another format's form is refused, saying what the suite
    /// expected.
    fn forced(path: &Path, format: Format) -> Result<FileKind, SourceError> {
        let detected = FileKind::detect(path)?;
        let own = match format {
            Format::Inspect => Some(FileKind::InspectLog),
            Format::Otel => Some(FileKind::CollectorFile),
            Format::ClaudeCode if detected == FileKind::Sessions => Some(FileKind::Sessions),
            Format::ClaudeCode => Some(FileKind::Session),
            _ => None,
        };
        match (detected, own) {
            (FileKind::Csv, _) => Ok(FileKind::Csv),
            (detected, Some(own)) if detected == own => Ok(own),
            (FileKind::Rows, Some(own)) if !session_files::starts_with_row(path) => Ok(own),
            (FileKind::Rows, _) => Ok(FileKind::Rows),
            (detected, own) => Err(SourceError {
                path: path.to_path_buf(),
                message: format!(
                    "this is {}, but the suite's `format: {}` expects {}; name the format \
                     of this file in `format:`, or remove `format:` to have it detected",
                    detected.what(),
                    format.name(),
                    own.unwrap_or(FileKind::Rows).what()
                ),
            }),
        }
    }

    fn what(self) -> &'static str {
        match self {
            FileKind::Rows => "JSON Lines of dataset rows or run records",
            FileKind::Csv => "a CSV dataset",
            FileKind::InspectLog => "an Inspect log",
            FileKind::CollectorFile => "an OpenTelemetry collector file (OTLP JSON)",
            FileKind::Session => "a Claude Code session file",
            FileKind::Sessions => "a folder of Claude Code session files",
        }
    }

    /// The rows a file of this kind at `path` is made into; `None` for JSON Lines, which are
    /// rows as they are.
    fn convert(self, path: &Path, reading: Reading) -> Result<Option<Converted>, SourceError> {
        Ok(Some(match self {
            FileKind::Rows => return Ok(None),
            FileKind::Csv => csv_rows::convert(path)?,
            FileKind::InspectLog => inspect_log::convert(path)?,
            FileKind::CollectorFile => otlp_file::convert(path, reading.sample_per)?,
            FileKind::Session => session_files::convert(path)?,
            // Each file of the folder is read as a lone file is: under `format:`, as a
            // session even where detection misses it.
            FileKind::Sessions => {
                session_files::convert_folder(path, |file| match reading.format {
                    Some(format) => Ok(FileKind::forced(file, format)? == FileKind::Session),
                    None => session_files::is_session(file),
                })?
            }
        }))
    }
}

/// The rows of the file at `path` when detection tells a recording made into rows (an Inspect
/// log, a collector file, a Claude Code session file or a folder of them), read with the
/// default settings, each numbered by its line (or place) in the recording; `None` for JSON
/// Lines and CSV files.
pub fn recording_rows(path: &Path) -> Result<Option<Converted>, SourceError> {
    match FileKind::detect(path)? {
        FileKind::Rows | FileKind::Csv => Ok(None),
        kind => kind.convert(path, Reading::default()),
    }
}

impl DatasetText {
    /// The dataset at `path`; a CSV file, an Inspect log, a collector file of OTLP traces, a
    /// Claude Code session file or a folder of them is read whole and made into lines here.
    /// With a trajectory format named, the file is read as that format's file
    /// ([`FileKind::forced`]).
    fn open(path: &Path, reading: Reading) -> Result<DatasetText, SourceError> {
        let kind = match reading.format {
            Some(format) => FileKind::forced(path, format)?,
            None => FileKind::detect(path)?,
        };
        let Some(converted) = kind.convert(path, reading)? else {
            return Ok(DatasetText::Jsonl);
        };
        Ok(DatasetText::Made {
            text: converted.text.into_bytes().into(),
            lines: converted.lines.into(),
        })
    }

    /// The rows in order, each numbered by its line in the file at `path`.
    fn lines(&self, path: &Path) -> Result<Lines, SourceError> {
        match self {
            DatasetText::Jsonl => Lines::open(path),
            DatasetText::Made { text, lines } => {
                let source = Box::new(Cursor::new(text.clone()));
                let mut rows = Lines::new(path.into(), source, BLOCK_SIZE);
                rows.numbers = Some(lines.clone());
                Ok(rows)
            }
        }
    }

    /// The rows to read at the offsets [`DatasetText::lines`] gave.
    fn reader(&self, path: &Path) -> Result<Box<dyn ReadSeek>, SourceError> {
        Ok(match self {
            DatasetText::Jsonl => Box::new(open_stream(path)?),
            DatasetText::Made { text, .. } => Box::new(Cursor::new(text.clone())),
        })
    }
}

/// How many used blocks [`Lines`] keeps: enough for every block the batches in flight hold.
const USED_BLOCKS: usize = 32;

/// Reads into `buffer` until it is full or the source ends: how much was read, and the error
/// that stopped the reading, if one did.
fn fill(source: &mut impl Read, buffer: &mut [u8]) -> (usize, std::io::Result<()>) {
    let mut filled = 0;
    while filled < buffer.len() {
        match source.read(&mut buffer[filled..]) {
            Ok(0) => break,
            Ok(n) => filled += n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return (filled, Err(e)),
        }
    }
    (filled, Ok(()))
}

/// How many rows [`Lines`] reads from `path` (its non-blank lines), counted in place without
/// copying each line out; a file [`Lines`] cannot read fails the same way here.
pub fn count_rows(path: &Path) -> Result<u64, SourceError> {
    let mut reader = BufReader::with_capacity(1 << 20, open_stream(path)?);
    let read_error = |e| read_failure(path, e);
    let (mut rows, mut number) = (0u64, 0usize);
    // The start of a line that runs over the end of the buffer.
    let mut carried: Vec<u8> = Vec::new();
    loop {
        let buffer = reader.fill_buf().map_err(read_error)?;
        if buffer.is_empty() {
            break;
        }
        let mut start = 0;
        for end in memchr::memchr_iter(b'\n', buffer) {
            number += 1;
            let is_row = if carried.is_empty() {
                is_row(&buffer[start..end], number)
            } else {
                carried.extend_from_slice(&buffer[start..end]);
                let is_row = is_row(&carried, number);
                carried.clear();
                is_row
            };
            rows += u64::from(is_row.map_err(read_error)?);
            start = end + 1;
        }
        carried.extend_from_slice(&buffer[start..]);
        let consumed = buffer.len();
        reader.consume(consumed);
    }
    if !carried.is_empty() {
        rows += u64::from(is_row(&carried, number + 1).map_err(read_error)?);
    }
    Ok(rows)
}

/// The number of rows a pass will grade. Counting reads the whole file a second time, so it is
/// taken only for what asks for it: in the background for a display that can go on without it
/// ([`RowCount::begin`], after which [`RowCount::now`] tells whether it is in), or at once for
/// what needs the number ([`RowCount::wait`], a Bloom filter's size).
#[derive(Clone)]
pub struct RowCount(std::sync::Arc<Counting>);

struct Counting {
    value: std::sync::OnceLock<Option<u64>>,
    source: Mutex<Source>,
}

/// How a count not yet asked for is taken; `None` when it cannot be.
type Count = Box<dyn FnOnce() -> Option<u64> + Send>;

/// Where a count not yet in stands.
enum Source {
    /// Not asked for yet.
    Idle(Count),
    Counting(std::thread::JoinHandle<Option<u64>>),
    /// Taken, or it could not be.
    Over,
}

impl RowCount {
    /// A count already known.
    pub fn known(rows: u64) -> RowCount {
        let value = std::sync::OnceLock::new();
        let _ = value.set(Some(rows));
        RowCount(std::sync::Arc::new(Counting {
            value,
            source: Mutex::new(Source::Over),
        }))
    }

    /// The rows of the dataset `path` read as `reading` says (its non-blank lines
    /// ([`count_rows`]), or the rows a CSV file, an Inspect log, a collector file or session
    /// files are made into), at most `max` of them, counted once [`RowCount::begin`] or
    /// [`RowCount::wait`] asks. A file that cannot be counted has no count: reading it for
    /// grading fails the same way and says why.
    pub fn of(path: &Path, reading: Reading, max: Option<u64>) -> RowCount {
        let path = path.to_path_buf();
        RowCount::later(move || counted(&path, reading, max))
    }

    /// A count `count` takes once [`RowCount::begin`] or [`RowCount::wait`] asks.
    pub fn later(count: impl FnOnce() -> Option<u64> + Send + 'static) -> RowCount {
        RowCount(std::sync::Arc::new(Counting {
            value: std::sync::OnceLock::new(),
            source: Mutex::new(Source::Idle(Box::new(count))),
        }))
    }

    /// Sets the count to `rows` unless it is already in: what the pass that read every item
    /// found spares counting them again. A count under way is left to finish.
    pub fn settle(&self, rows: u64) {
        let mut source = self.source();
        if matches!(*source, Source::Idle(_)) {
            *source = Source::Over;
            let _ = self.0.value.set(Some(rows));
        }
    }

    fn source(&self) -> std::sync::MutexGuard<'_, Source> {
        self.0
            .source
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Starts counting on a thread of its own, if no count is in or under way.
    pub fn begin(&self) {
        let mut source = self.source();
        *source = match std::mem::replace(&mut *source, Source::Over) {
            // A thread that cannot start leaves the count unknown.
            Source::Idle(count) => std::thread::Builder::new()
                .name("gavel-count".to_string())
                .spawn(count)
                .map_or(Source::Over, Source::Counting),
            other => other,
        };
    }

    /// The count, if it is in; never waits, and asks for none.
    pub fn now(&self) -> Option<u64> {
        if let Some(value) = self.0.value.get() {
            return *value;
        }
        let finished = match &*self.source() {
            Source::Idle(_) => false,
            Source::Counting(thread) => thread.is_finished(),
            Source::Over => true,
        };
        if finished { self.wait() } else { None }
    }

    /// The count: taken on this thread if nothing began it, else waited for.
    pub fn wait(&self) -> Option<u64> {
        *self.0.value.get_or_init(
            || match std::mem::replace(&mut *self.source(), Source::Over) {
                Source::Idle(count) => count(),
                Source::Counting(thread) => thread.join().ok().flatten(),
                Source::Over => None,
            },
        )
    }
}

/// The rows of the dataset `path`, at most `max` of them; `None` for a file that cannot be
/// counted.
fn counted(path: &Path, reading: Reading, max: Option<u64>) -> Option<u64> {
    let rows = match DatasetText::open(path, reading).ok()? {
        DatasetText::Jsonl => count_rows(path).ok()?,
        DatasetText::Made { lines, .. } => lines.len() as u64,
    };
    Some(max.map_or(rows, |max| rows.min(max)))
}

/// Whether line `number` (without its newline) is a row, as [`Lines`] decides: valid UTF-8 and
/// not blank.
fn is_row(line: &[u8], number: usize) -> std::io::Result<bool> {
    let text = simdutf8::basic::from_utf8(line).map_err(|_| not_utf8(number))?;
    Ok(!text.trim().is_empty())
}

/// Whole lines read as bytes, the first of them line `first`, as text: all of them, or those
/// before the first line that is not UTF-8, with the error that names it. The check is
/// simdutf8's, which finds the same text invalid as std's and reads non-ASCII text several
/// times faster.
fn whole_lines_as_text(mut bytes: Vec<u8>, first: usize) -> (String, Option<std::io::Error>) {
    let failed = simdutf8::compat::from_utf8(&bytes).err().map(|e| {
        let good =
            memchr::memrchr(b'\n', &bytes[..e.valid_up_to()]).map_or(0, |newline| newline + 1);
        bytes.truncate(good);
        not_utf8(first + memchr::memchr_iter(b'\n', &bytes).count())
    });
    // SAFETY: simdutf8 found `bytes` valid UTF-8, or valid up to a byte that `bytes`, cut back to
    // the newline before it, no longer holds.
    #[allow(unsafe_code)]
    let text = unsafe { String::from_utf8_unchecked(bytes) };
    (text, failed)
}

/// Line `line` of a file is not UTF-8 text.
#[derive(Debug, thiserror::Error)]
#[error("line {0}: the file is not UTF-8 text: save it as UTF-8")]
struct NotUtf8(usize);

fn not_utf8(line: usize) -> std::io::Error {
    std::io::Error::new(std::io::ErrorKind::InvalidData, NotUtf8(line))
}

/// A failed read of the file at `path`, in words: a line that is not UTF-8 text names itself.
fn read_failure(path: &Path, e: std::io::Error) -> SourceError {
    if e.get_ref().is_some_and(|inner| inner.is::<NotUtf8>()) {
        return SourceError {
            path: path.to_path_buf(),
            message: e.to_string(),
        };
    }
    SourceError::io(path, "read", e)
}

/// What a suite says about reading its dataset and recorded runs.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Reading {
    /// `format:`: the trajectory format named, which the files holding the trajectories are
    /// read as (the run files, else the dataset); detected per file and row when `None`.
    pub format: Option<Format>,
    /// `sample_per:`: what a sample of a collector file is.
    pub sample_per: SamplePer,
}

/// The stream of items of a suite: dataset rows, or run records joined to their rows.
pub enum Items {
    /// Rows of a dataset, or `held` in memory already (reading them never waits on a file).
    Inline {
        rows: Lines,
        seq: u64,
        held: bool,
    },
    Joined(Box<Joined>),
}

pub struct Joined {
    dataset: Box<dyn ReadSeek>,
    dataset_path: Arc<Path>,
    index: HashMap<SampleId, (u64, usize)>,
    /// The ids of the rows a run was joined to so far.
    joined: HashSet<SampleId>,
    runs: std::vec::IntoIter<PathBuf>,
    all_runs: Vec<PathBuf>,
    /// How the run files are read.
    reading: Reading,
    current: Option<Lines>,
    seq: u64,
}

/// Rows in memory up to this many bytes are read whole before any is graded: a reader on a
/// thread of its own cost a small request two wake-ups. More are read as they are graded, a few
/// batches ahead, like a file's: a body of many tiny rows read whole held about 130 bytes a row.
const READ_WHOLE: usize = 1 << 20;

impl Items {
    /// The files the stream reads its items from: the dataset, or the run files.
    pub fn paths(&self) -> Vec<&Path> {
        match self {
            Items::Inline { rows, .. } => vec![&*rows.file],
            Items::Joined(joined) => joined.all_runs.iter().map(PathBuf::as_path).collect(),
        }
    }

    /// Whether every item is in memory already, so that reading them never waits, and they are
    /// few enough to be read whole before any is graded ([`READ_WHOLE`]).
    pub fn held(&self) -> bool {
        matches!(self, Items::Inline { held: true, .. })
    }

    /// Rows held in memory (JSON Lines), each item's file named `name`: rows sent to
    /// `gavel serve`, which carry their own trajectories.
    pub fn in_memory(name: &Path, text: Vec<u8>) -> Items {
        Items::in_memory_at(name, text, 0, 1)
    }

    /// Rows held in memory that stand at a place in a longer stream: the first is its row
    /// `seq` (from 0) at line `line` (from 1) of `name`. A part of a dataset graded apart from
    /// the rest is numbered as in the whole, so that its rows without an id get the ids, and
    /// its invalid rows the lines, that grading the whole gives them.
    pub fn in_memory_at(name: &Path, text: Vec<u8>, seq: u64, line: usize) -> Items {
        // Read in one block of the text's size: a request of a row or two does not zero a
        // whole file's block (that was most of the CPU a small request took).
        let block_size = text.len().clamp(1, BLOCK_SIZE);
        let held = text.len() <= READ_WHOLE;
        let source = Box::new(std::io::Cursor::new(text));
        let mut rows = Lines::new(name.into(), source, block_size);
        rows.number = line.saturating_sub(1);
        Items::Inline { rows, seq, held }
    }

    /// Opens the dataset, and the run files when the suite has `trajectories:`, read as
    /// `reading` says: the one way a suite's samples are read.
    pub fn open(dataset: &Path, runs: &[PathBuf], reading: Reading) -> Result<Items, SourceError> {
        // The trajectories are in the run files when there are any, else in the dataset.
        let dataset_reading = Reading {
            format: reading.format.filter(|_| runs.is_empty()),
            ..reading
        };
        let text = DatasetText::open(dataset, dataset_reading)?;
        let mut rows = text.lines(dataset)?;
        if runs.is_empty() {
            return Ok(Items::Inline {
                rows,
                seq: 0,
                held: false,
            });
        }
        let mut index = HashMap::new();
        while let Some((offset, line)) = rows.next_line()? {
            // A row the index cannot read is reported when a run refers to it or by validation.
            // A row without an id is found by the id its sample has: its line index, blank
            // lines counted, as letta-evals counts them.
            let id = peek_id(&line)
                .ok()
                .flatten()
                .unwrap_or(SampleId::Int(Sample::line_index(line.number)));
            index.entry(id).or_insert((offset, line.number));
        }
        for run in runs.iter().filter(|run| !run.is_dir()) {
            open_stream(run)?;
        }
        let file = text.reader(dataset)?;
        let all_runs = runs.to_vec();
        Ok(Items::Joined(Box::new(Joined {
            dataset: file,
            dataset_path: dataset.into(),
            index,
            joined: HashSet::new(),
            runs: all_runs.clone().into_iter(),
            all_runs,
            reading,
            current: None,
            seq: 0,
        })))
    }

    /// Once every item is read, the dataset's rows that no recorded run was joined to (its
    /// file, and each row's line and id, in the file's order): none when the rows carry their
    /// own runs.
    pub fn rows_without_run(&self) -> Option<(&Path, Vec<(usize, &SampleId)>)> {
        let Items::Joined(joined) = self else {
            return None;
        };
        let mut rows: Vec<(usize, &SampleId)> = (joined.index.iter())
            .filter(|(id, _)| !joined.joined.contains(*id))
            .map(|(id, &(_, line))| (line, id))
            .collect();
        rows.sort_unstable_by_key(|&(line, _)| line);
        Some((&joined.dataset_path, rows))
    }

    /// The next item; `Err` for a run record that names no dataset row, or an I/O failure.
    pub fn next_item(&mut self) -> Option<Result<Item, ItemError>> {
        match self {
            Items::Inline { rows, seq, .. } => match rows.next_line() {
                Ok(Some((_, row))) => {
                    let item = Item {
                        seq: *seq,
                        row,
                        run: None,
                    };
                    *seq += 1;
                    Some(Ok(item))
                }
                Ok(None) => None,
                Err(e) => Some(Err(ItemError::Source(e))),
            },
            Items::Joined(joined) => joined.next_item(),
        }
    }
}

/// Ids rows share without meaning to: a row without an id takes its 0-based line index
/// ([`Sample::id`]), as letta-evals gives it, and when that is another row's id the two rows
/// count as runs of one sample, as rows given one id on purpose do. letta-evals says nothing;
/// `gavel validate` warns of the row read second, naming both lines. Only what a later row
/// could clash with is kept. The rows' ids are read again for it, so a run, which grades rows
/// as they are read, does not look.
#[derive(Debug, Default)]
pub struct IdClashes(id_clash::Clashes);

impl IdClashes {
    /// Notes the id of `row` (read after every row noted before): the warning of a clash with
    /// an earlier row's. A row whose id cannot be read is left to be refused when parsed.
    pub fn check(&mut self, row: &Line) -> Option<String> {
        let id = match peek_id(row).ok()? {
            None => RowId::Missing,
            Some(SampleId::Int(id)) => RowId::Whole(id),
            Some(SampleId::Str(_)) => RowId::Other,
        };
        let Clash {
            index,
            unnamed,
            named,
            named_second,
        } = self
            .0
            .note(Sample::line_index(row.number), row.number, id)?;
        Some(if named_second {
            format!(
                "id: {index} is the id the row on line {unnamed} takes, having none, from its \
                 0-based line index: the two rows count as runs of one sample; give the row on \
                 line {unnamed} an `id` of its own, or this one another"
            )
        } else {
            format!(
                "the row has no id, so it takes its 0-based line index, {index}, which is the id \
                 of the row on line {named}: the two rows count as runs of one sample; give this \
                 row an `id` of its own"
            )
        })
    }
}

/// Why the stream could not produce an item.
#[derive(Debug, thiserror::Error)]
pub enum ItemError {
    #[error(transparent)]
    Source(#[from] SourceError),
    #[error(transparent)]
    Row(#[from] RowError),
}

impl Joined {
    fn next_item(&mut self) -> Option<Result<Item, ItemError>> {
        loop {
            if self.current.is_none() {
                // Run files are read as datasets are: session files and the other formats
                // made into rows, each a run joined by its id.
                let path = self.runs.next()?;
                match DatasetText::open(&path, self.reading).and_then(|text| text.lines(&path)) {
                    Ok(lines) => self.current = Some(lines),
                    Err(e) => return Some(Err(e.into())),
                }
            }
            let lines = self.current.as_mut()?;
            match lines.next_line() {
                Ok(Some((_, run))) => return Some(self.join(run)),
                Ok(None) => self.current = None,
                Err(e) => return Some(Err(e.into())),
            }
        }
    }

    fn join(&mut self, run: Line) -> Result<Item, ItemError> {
        let id = peek_id(&run)?.ok_or_else(|| {
            row_error(
                &run,
                0,
                "sample_id: a recorded run needs the id of its sample".into(),
            )
        })?;
        let &(offset, number) = self.index.get(&id).ok_or_else(|| {
            row_error(
                &run,
                0,
                format!(
                    "sample_id: {id} is not in the dataset {}",
                    self.dataset_path.display()
                ),
            )
        })?;
        let text = read_line_at(&mut *self.dataset, offset)
            .map_err(|e| SourceError::io(&self.dataset_path, "read", e))?;
        self.joined.insert(id);
        let item = Item {
            seq: self.seq,
            row: Line {
                file: self.dataset_path.clone(),
                number,
                text: text.into(),
            },
            run: Some(run),
        };
        self.seq += 1;
        Ok(item)
    }
}

fn read_line_at(file: &mut dyn ReadSeek, offset: u64) -> std::io::Result<String> {
    file.seek(SeekFrom::Start(offset))?;
    let mut reader = BufReader::new(file.take(u64::MAX));
    let mut text = String::new();
    reader.read_line(&mut text)?;
    while text.ends_with('\n') || text.ends_with('\r') {
        text.pop();
    }
    Ok(text)
}

/// Why the row `text` is not in OpenAI's eval shape, at its field, if it is not: what a
/// dataset of `dataset_format: openai_eval` refuses.
fn eval_shape_error(text: &str) -> Option<String> {
    const SHAPE: &str = "a row of `dataset_format: openai_eval` is {\"item\": {...}, \"sample\": \
                         {...}}; remove `dataset_format` for rows of other shapes";
    let row = match serde_json::from_str::<serde_json::Value>(text) {
        Ok(serde_json::Value::Object(row)) => row,
        _ => return Some(format!("the row is not a JSON object; {SHAPE}")),
    };
    if let Some(key) = row.keys().find(|k| *k != "item" && *k != "sample") {
        return Some(format!("{key}: unknown field; {SHAPE}"));
    }
    match (row.get("item"), row.get("sample")) {
        (None, _) => Some(format!("item: missing; {SHAPE}")),
        (Some(item), _) if !item.is_object() => {
            Some(format!("item: must be a JSON object; {SHAPE}"))
        }
        (_, Some(sample)) if !sample.is_object() => {
            Some(format!("sample: must be a JSON object; {SHAPE}"))
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::input::sample::serde_fields;

    /// Rows of the shapes the scanner reads: Letta trajectories with every field a message
    /// carries, escapes, nulls and whitespace, and every row field.
    const SCANNED_ROWS: &[&str] = &[
        r#"{"id":0,"input":"What's the weather in Quito?","ground_truth":"(?<![\\d-])-1°C","trajectory":[[{"id":"m-1","content":"What's the weather in Quito?","otid":"o","date":"2026-01-01T00:00:01Z","message_type":"user_message"},{"id":"m-2","reasoning":"Check it.","message_type":"reasoning_message","step_id":"s-1"},{"id":"m-3","tool_call":{"arguments":"{\"city\":\"Quito\"}","name":"get_weather","tool_call_id":"c-0"},"tool_calls":[{"arguments":"{\"city\":\"Quito\"}","name":"get_weather","tool_call_id":"c-0"}],"message_type":"tool_call_message","step_id":"s-1"},{"id":"m-4","status":"success","tool_call_id":"c-0","tool_return":"{\"temp_c\":-1}","stderr":[],"stdout":null,"message_type":"tool_return_message","step_id":"s-1"},{"id":"m-5","content":"It is -1°C.","message_type":"assistant_message","step_id":"s-2"}]]}"#,
        " { \"sample_id\" : \"s\\u00e9-1\" , \"input\" : [\"a\", \"b\\n\"] , \"ground_truth\" : [\"x\", \"y\"] , \"trajectory\" : [ [ { \"message_type\" : \"user_message\" , \"content\" : [ {\"type\": \"text\", \"text\": \"hi \\ud83d\\ude00\"}, {\"type\": \"image\", \"url\": \"u\"} ] } ] , [ {\"message_type\": \"hidden_reasoning_message\", \"hidden_reasoning\": null, \"state\": \"redacted\"}, {\"message_type\": \"tool_call_message\", \"tool_calls\": [], \"tool_call\": {\"name\": \"t\", \"arguments\": \"{}\", \"tool_call_id\": null}}, {\"message_type\": \"approval_request_message\", \"tool_call\": {\"name\": \"rm\"}}, {\"m\\u0065ssage_type\": \"assistant_message\", \"content\": \"done\\\"\\\\\\/\\b\\f\\r\\t\"} ] ] } ",
        r#"{"id": 7.0, "prompt": "p", "input": "", "tags": ["a", "b"], "reference_tools": [], "name": "n", "description": null, "rubric": "r", "reference_output": "o", "rubric_vars": {"k": [1, 2.5e3, true, null]}, "metadata": {"nested": {"deep": [[[]]]}}, "expected": {"tools_called": ["x"], "max_steps": 3}, "agent_state": {"blocks": [{"label": "human", "value": "v"}]}, "extra": [-0.5E-2, false, "s", {}], "trajectory": []}"#,
        r#"{"id": "only-id", "trajectory": null, "input": null, "ground_truth": "g"}"#,
        r#"{"id":1,"input":"q","ground_truth":"a","trajectory":[[{"message_type":"tool_return_message","tool_call_id":"c","tool_return":"r","status":"weird"}]]}"#,
        r#"{"id":0,"name":"case-0","input":"What's the weather in Quito?","expected":{"output_contains":["-1°C","now"],"tools_called":["get_weather"],"output_matches":"(?<![\\d-])-1°C","max_steps":5,"min_steps":null,"task_completed":true,"custom":{"k":[1]}},"trajectory":{"id":"tr-0","input":"What's the weather in Quito?","output":"It is -1°C.\n-1°C","status":"success","steps":[{"id":"s0-1","timestamp":"2026-01-01T00:00:01","status":"success","type":"llm_call","model":"gpt-4o-mini","input":"What's the weather?","output":"call get_weather","tokens":{"prompt_tokens":320,"completion_tokens":24,"total_tokens":344},"duration_ms":112.5},{"id":"s0-2","status":"success","type":"reasoning","reasoning_text":"Check it.","duration_ms":125},{"id":"s0-3","type":"tool_call","tool_name":"get_weather","tool_args":{"city":"Quito"},"tool_result":{"temp_c":-1},"duration_ms":1.5e2},{"id":"s0-4","type":"tool_call","status":"failure","tool_name":"send_message","tool_args":null,"tool_result":"sent \"x\"","error":"e"},{"type":"human_input","input":"ok","tokens":null}],"duration_ms":9000.0,"metadata":{},"agent_name":"BenchAgent"}}"#,
        r#"{"trajectory": {"output": null, "steps": [{"type": "tool_call", "tool_result": "plain"}], "messages": []}, "expected": {}}"#,
    ];

    /// Checks the scanner against serde on `text`: whether the scanner read it.
    fn scanned_as_serde_reads(parser: &RowParser, text: &str) -> bool {
        match parser.readings(text) {
            Some((scanned, serde)) => {
                assert_eq!(scanned, serde, "{text}");
                true
            }
            None => false,
        }
    }

    /// Every field serde reads from a row (the field list its derived reader was generated
    /// with), each alone in a row: the scanner reads it as serde does, and it changes what the
    /// row reads as, so a field the scanner skipped would show.
    #[test]
    fn the_scanner_reads_every_field_serde_reads() {
        const VALUES: &[(&str, &str)] = &[
            ("sample_id", r#""s-1""#),
            ("id", "7"),
            ("input", r#"["a", "b"]"#),
            ("prompt", r#""p""#),
            ("ground_truth", r#""g""#),
            ("rubric_vars", r#"{"tone": "plain"}"#),
            ("rubric", r#""Is {input} right?""#),
            ("rubric_path", r#""no-such-rubric.txt""#),
            ("name", r#""case""#),
            ("description", r#""what it checks""#),
            ("expected", r#"{"max_steps": 3}"#),
            (
                "turns",
                r#"[{"user": "u", "expected": {"max_steps": 3}, "graders": [{"type": "contains"}]}]"#,
            ),
            ("reference_output", r#""o""#),
            ("reference_tools", r#"["t"]"#),
            ("tags", r#"["x"]"#),
            ("metadata", r#"{"k": 1}"#),
            (
                "trajectory",
                r#"[[{"message_type": "assistant_message", "content": "hi"}]]"#,
            ),
            (
                "agent_state",
                r#"{"blocks": [{"label": "l", "value": "v"}]}"#,
            ),
        ];
        let parser = RowParser::new(None, PathBuf::from("."));
        let (_, empty) = parser.readings("{}").expect("an empty row is scanned");
        let fields = serde_fields::<RawRow<Inline>>();
        assert!(fields.contains(&"trajectory"), "{fields:?}");
        for field in fields {
            let value = VALUES
                .iter()
                .find(|(name, _)| name == field)
                .map(|(_, value)| value)
                .unwrap_or_else(|| {
                    panic!("RawRow has a field `{field}`: read it in RawRow::scan and add it here")
                });
            assert_read_alike(&parser, &format!(r#"{{"{field}": {value}}}"#), &empty);
        }
        // The fields of an `expected:` block, read by a scanner of their own.
        const EXPECTED: &[(&str, &str)] = &[
            ("tools_called", r#"["a"]"#),
            ("tools_not_called", r#"["b"]"#),
            ("tool_call_order", r#"["a", "b"]"#),
            ("output_contains", r#"["x"]"#),
            ("output_not_contains", r#"["y"]"#),
            ("output_equals", r#""z""#),
            ("output_matches", r#""z+""#),
            ("max_steps", "5"),
            ("min_steps", "1"),
            ("max_tool_calls", "2"),
            ("max_llm_calls", "3"),
            ("task_completed", "false"),
            ("custom", r#"{"k": [1]}"#),
        ];
        let (_, empty) = parser.readings(r#"{"expected": {}}"#).expect("scanned");
        for field in serde_fields::<crate::input::sample::Expected>() {
            let value = EXPECTED
                .iter()
                .find(|(name, _)| name == field)
                .map(|(_, value)| value)
                .unwrap_or_else(|| {
                    panic!(
                        "Expected has a field `{field}`: read it in Expected::scan and add it here"
                    )
                });
            assert_read_alike(
                &parser,
                &format!(r#"{{"expected": {{"{field}": {value}}}}}"#),
                &empty,
            );
        }
    }

    /// `text` is scanned, read by the scanner as by serde, and reads otherwise than `empty`.
    fn assert_read_alike(parser: &RowParser, text: &str, empty: &str) {
        let (scanned, serde) = parser
            .readings(text)
            .unwrap_or_else(|| panic!("not scanned: {text}"));
        assert_eq!(scanned, serde, "{text}");
        assert_ne!(serde, empty, "{text} reads as the row without the field");
    }

    #[test]
    fn whole_number_ids_are_read_as_serde_reads_them() {
        for text in [
            "0",
            "-0",
            "7",
            "-12",
            "9223372036854775807",
            "-9223372036854775808",
            "9223372036854775808",
            "-9223372036854775809",
            "18446744073709551615",
            "123456789012345678901234",
            "1.0",
            "-2.5",
            "1e3",
            "\"7\"",
            "\"a\"",
            "null",
            "[1]",
        ] {
            assert_eq!(parse_id(RawId(text)), id_by_serde(text), "{text}");
        }
        assert_eq!(whole_number("1.0"), None);
        assert_eq!(whole_number("-"), None);
        assert_eq!(whole_number("-9223372036854775808"), Some(i64::MIN));
    }

    #[test]
    fn a_whole_number_id_too_large_to_keep_is_told_apart_from_a_fraction() {
        let too_large = Err(
            "sample_id: the number is too large for a number id: write the id as text, in quotes",
        );
        for text in ["18446744073709551616", "-9223372036854775809", "1e16"] {
            assert_eq!(parse_id(RawId(text)), too_large, "{text}");
        }
        let fraction = Err("sample_id: a number id must be a whole number");
        assert_eq!(parse_id(RawId("2.5")), fraction);
        assert_eq!(
            parse_id(RawId("\"18446744073709551616\"")),
            Ok(SampleId::Str("18446744073709551616".to_string()))
        );
    }

    #[test]
    fn a_line_that_is_not_utf8_is_named_by_its_number() {
        let (text, failed) = whole_lines_as_text(b"{}\n\n{\"a\": \"\xff\"}\n{}\n".to_vec(), 5);
        assert_eq!(text, "{}\n\n");
        let failed = failed.expect("a line that is not UTF-8").to_string();
        assert_eq!(
            failed,
            "line 7: the file is not UTF-8 text: save it as UTF-8"
        );
    }

    #[test]
    fn the_scanner_reads_rows_of_the_common_shape_as_serde_does() {
        let parser = RowParser::new(None, PathBuf::from("."));
        for text in SCANNED_ROWS {
            assert!(scanned_as_serde_reads(&parser, text), "not scanned: {text}");
        }
        // Left to serde: a field twice (even after a null), another trajectory shape, a value
        // of another type, trailing text.
        for text in [
            r#"{"input": null, "input": "x"}"#,
            r#"{"trajectory": [[{"message_type": "a", "message_type": "b"}]]}"#,
            r#"{"trajectory": [{"role": "user", "content": "hi"}]}"#,
            r#"{"trajectory": {"messages": [], "steps": []}}"#,
            r#"{"trajectory": {"id": "no decisive key"}}"#,
            r#"{"trajectory": {"steps": [{"tokens": {"total_tokens": 1.0}}]}}"#,
            r#"{"expected": {"unknown": 1}}"#,
            r#"{"expected": {"max_steps": -1}}"#,
            r#"{"trajectory": [[{"content": 5}]]}"#,
            r#"{"input": 5}"#,
            r#"{"id": 1} x"#,
            r#"[1]"#,
        ] {
            assert!(!scanned_as_serde_reads(&parser, text), "scanned: {text}");
        }
    }

    #[test]
    fn rows_are_not_tried_with_the_scanner_while_their_trajectories_are_openai_ones() {
        let scanning = |parser: &RowParser| parser.scanning.load(Ordering::Relaxed);
        let parser = RowParser::new(None, PathBuf::from("."));
        assert!(scanning(&parser));
        let openai = r#"{"id": 1, "trajectory": [{"role": "user", "content": "hi"}]}"#;
        let line = line_one(openai);
        let sample = parser.parse_row(&line).unwrap();
        assert_eq!(sample.trajectory().format, Format::OpenAi);
        assert!(!scanning(&parser));
        parser.parse_row(&line_one(r#"{"id": 2}"#)).unwrap();
        assert!(scanning(&parser));
        parser.parse_row(&line_one(openai)).unwrap();
        let evaldeck = r#"{"id": 3, "trajectory": {"input": "i", "steps": [], "output": "o"}}"#;
        let line = line_one(evaldeck);
        let sample = parser.parse_row(&line).unwrap();
        assert_eq!(sample.trajectory().format, Format::Evaldeck);
        assert!(scanning(&parser));
        parser.parse_row(&line_one(openai)).unwrap();
        let line = line_one(SCANNED_ROWS[0]);
        let sample = parser.parse_row(&line).unwrap();
        assert_eq!(sample.trajectory().format, Format::Letta);
        assert!(scanning(&parser));
        assert!(!scanning(&RowParser::new(
            Some(Format::OpenAi),
            PathBuf::from(".")
        )));
    }

    /// Mutated rows (bytes deleted, inserted, copied): whatever the scanner accepts, serde
    /// accepts and reads the same way.
    #[test]
    fn what_the_scanner_accepts_of_mutated_rows_serde_reads_the_same() {
        const TOKENS: &[&str] = &[
            "\"",
            "\\",
            "{",
            "}",
            "[",
            "]",
            ",",
            ":",
            "null",
            "0",
            "-",
            "e",
            ".",
            " ",
            "\u{1}",
            "\\u00",
            "\\ud800",
            "\"x\":1,",
            "é",
            "\"id\":2,",
            "\"input\":\"i\",",
            "[[]]",
        ];
        let parser = RowParser::new(None, PathBuf::from("."));
        let mut state = 0x9e37_79b9_7f4a_7c15_u64;
        let mut random = |below: usize| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            (state % below as u64) as usize
        };
        let (mut accepted, mut refused) = (0, 0);
        for seed in SCANNED_ROWS {
            for _ in 0..1500 {
                let mut bytes = seed.as_bytes().to_vec();
                for _ in 0..1 + random(2) {
                    let at = random(bytes.len() + 1);
                    match random(3) {
                        0 if at < bytes.len() => {
                            bytes.remove(at);
                        }
                        1 => {
                            let token = TOKENS[random(TOKENS.len())].as_bytes();
                            bytes.splice(at..at, token.iter().copied());
                        }
                        _ => {
                            let from = random(bytes.len());
                            let to = (from + 1 + random(20)).min(bytes.len());
                            let copied = bytes[from..to].to_vec();
                            bytes.splice(at..at, copied);
                        }
                    }
                }
                let Ok(text) = String::from_utf8(bytes) else {
                    continue;
                };
                if scanned_as_serde_reads(&parser, &text) {
                    accepted += 1;
                } else {
                    refused += 1;
                }
            }
        }
        // Both kinds are common, so both sides of the check were exercised.
        assert!(accepted > 1000 && refused > 1000, "{accepted} {refused}");
    }

    fn rows_read(path: &Path) -> Result<u64, String> {
        let mut lines = Lines::open(path).map_err(|e| e.to_string())?;
        let mut rows = 0;
        while lines.next_line().map_err(|e| e.to_string())?.is_some() {
            rows += 1;
        }
        Ok(rows)
    }

    #[test]
    fn counted_rows_are_the_rows_read() {
        let dir = tempfile::tempdir().unwrap();
        let long = format!("{{\"id\": \"{}\"}}", "x".repeat(3 << 20));
        let cases: Vec<(&str, Vec<u8>)> = vec![
            ("empty", Vec::new()),
            ("plain", b"{}\n{}\n".to_vec()),
            ("no final newline", b"{}\n{}".to_vec()),
            ("blank lines", b"\n  \n{}\r\n\t\r\n{}\n\n".to_vec()),
            // A line of Unicode spaces is blank too (NBSP, ideographic space).
            ("unicode blanks", "\u{a0}\u{3000}\n{}\n".as_bytes().to_vec()),
            // Lines longer than the counting buffer, and one ending the file.
            ("long lines", format!("{long}\n{{}}\n{long}").into_bytes()),
        ];
        for (name, bytes) in cases {
            let path = dir.path().join(name);
            std::fs::write(&path, &bytes).unwrap();
            let counted = count_rows(&path).map_err(|e| e.to_string());
            assert_eq!(counted, rows_read(&path), "{name}");
        }
        assert_eq!(count_rows(&dir.path().join("long lines")).unwrap(), 3);
    }

    #[test]
    fn a_row_count_taken_aside_is_the_count_or_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("rows.jsonl");
        std::fs::write(&path, b"{}\n\n{}\n{}\n").unwrap();
        let count = RowCount::of(&path, Reading::default(), None);
        assert_eq!(count.wait(), Some(3));
        assert_eq!(count.clone().now(), Some(3));
        assert_eq!(
            RowCount::of(&path, Reading::default(), Some(2)).wait(),
            Some(2)
        );
        assert_eq!(
            RowCount::of(&dir.path().join("missing"), Reading::default(), None).wait(),
            None
        );
        assert_eq!(RowCount::known(7).now(), Some(7));
        // Not asked for, nothing is counted: `now` neither waits nor starts a count.
        let idle = RowCount::of(&path, Reading::default(), None);
        assert_eq!(idle.now(), None);
        std::thread::sleep(std::time::Duration::from_millis(20));
        assert_eq!(idle.now(), None);
        // Asked before it is in, the count is not made up.
        let pending = RowCount::of(&path, Reading::default(), None);
        pending.begin();
        assert!(matches!(pending.now(), None | Some(3)));
        assert_eq!(pending.wait(), Some(3));
    }

    #[test]
    fn a_recording_made_into_rows_counts_its_rows_not_its_lines() {
        let traces = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/traces");
        let rows = |path: &Path, format: Option<Format>| {
            let reading = Reading {
                format,
                ..Reading::default()
            };
            RowCount::of(path, reading, None).wait()
        };
        // Three export lines holding the spans of two traces.
        assert_eq!(rows(&traces.join("otel-genai.jsonl"), None), Some(2));
        // One sample in two epochs, in a zip archive and in a JSON log.
        assert_eq!(rows(&traces.join("inspect-weather.eval"), None), Some(2));
        assert_eq!(rows(&traces.join("inspect-weather.json"), None), Some(2));
        let dir = tempfile::tempdir().unwrap();
        let log = std::fs::read_to_string(traces.join("inspect-weather.json")).unwrap();
        let compact = serde_json::from_str::<serde_json::Value>(&log).unwrap();
        std::fs::write(dir.path().join("compact.json"), compact.to_string()).unwrap();
        assert_eq!(
            rows(&dir.path().join("compact.json"), Some(Format::Inspect)),
            Some(2)
        );
        // A folder of two sessions of two records each.
        let sessions = dir.path().join("sessions");
        std::fs::create_dir(&sessions).unwrap();
        for id in ["a", "b"] {
            let record = format!(
                "{{\"sessionId\": \"{id}\", \"type\": \"user\", \
                 \"message\": {{\"role\": \"user\", \"content\": \"hi\"}}}}\n"
            );
            std::fs::write(sessions.join(format!("{id}.jsonl")), record.repeat(2)).unwrap();
        }
        assert_eq!(rows(&sessions, None), Some(2));
        // A file that is not of the format named has no count: reading it says why.
        assert_eq!(
            rows(&traces.join("otel-genai.jsonl"), Some(Format::Inspect)),
            None
        );
    }

    #[test]
    fn a_settled_count_is_not_taken_again() {
        let settled = RowCount::later(|| panic!("counted again"));
        settled.settle(5);
        assert_eq!(settled.now(), Some(5));
        assert_eq!(settled.wait(), Some(5));
        // A count already in, or under way, keeps its own number.
        let known = RowCount::known(2);
        known.settle(5);
        assert_eq!(known.wait(), Some(2));
        let begun = RowCount::later(|| Some(3));
        begun.begin();
        begun.settle(5);
        assert_eq!(begun.wait(), Some(3));
    }

    /// What [`Lines`] reads from `input` in `block_size`-byte reads: each row with its offset
    /// and line number, then the error that ended the reading, if any.
    fn read_in_blocks(
        input: impl Read + Send + 'static,
        block_size: usize,
    ) -> Vec<Result<(u64, usize, String), String>> {
        let mut lines = Lines::new(Path::new("rows.jsonl").into(), Box::new(input), block_size);
        let mut read = Vec::new();
        loop {
            match lines.next_line() {
                Ok(Some((offset, line))) => {
                    read.push(Ok((offset, line.number, line.text.to_string())))
                }
                Ok(None) => return read,
                Err(e) => {
                    read.push(Err(e.message));
                    assert!(
                        matches!(lines.next_line(), Ok(None)),
                        "nothing is read past a failure"
                    );
                    return read;
                }
            }
        }
    }

    /// The same, as std reads lines (`read_until` and a UTF-8 check of each line).
    fn read_by_std(mut input: &[u8]) -> Vec<Result<(u64, usize, String), String>> {
        let (mut read, mut offset, mut number) = (Vec::new(), 0, 0);
        loop {
            let mut line = Vec::new();
            let n = input.read_until(b'\n', &mut line).unwrap();
            if n == 0 {
                return read;
            }
            number += 1;
            match String::from_utf8(line) {
                Ok(text) if text.trim().is_empty() => {}
                Ok(text) => read.push(Ok((
                    offset,
                    number,
                    text.trim_end_matches(['\n', '\r']).to_string(),
                ))),
                Err(_) => {
                    read.push(Err(format!(
                        "line {number}: the file is not UTF-8 text: save it as UTF-8"
                    )));
                    return read;
                }
            }
            offset += n as u64;
        }
    }

    #[test]
    fn lines_are_read_as_std_reads_them() {
        let long = "é".repeat(100);
        let inputs: Vec<Vec<u8>> = vec![
            Vec::new(),
            b"\n".to_vec(),
            b"a".to_vec(),
            b"a\nb".to_vec(),
            b"a\r\nb\r\n".to_vec(),
            b"\n\n{}\n\n".to_vec(),
            "\u{a0}\u{3000}\n{}\n \t\r\n".as_bytes().to_vec(),
            format!("{long}\n{long}").into_bytes(),
            format!("{long}\n{long}\n").into_bytes(),
            // A line that is not UTF-8, after lines that are and before more.
            b"{}\n{\"a\": \"\xff\"}\n{}\n".to_vec(),
            [format!("{long}\n{long}\n").as_bytes(), b"\xe2\x82\n{}"].concat(),
            b"\xc0\xaf".to_vec(),
        ];
        for input in &inputs {
            for block_size in [1, 2, 3, 7, 64, 1 << 16] {
                assert_eq!(
                    read_in_blocks(std::io::Cursor::new(input.clone()), block_size),
                    read_by_std(input),
                    "{:?} in {block_size}-byte reads",
                    String::from_utf8_lossy(input)
                );
            }
        }
    }

    #[test]
    fn a_failed_read_ends_the_lines_after_those_read_whole() {
        struct FailsAfter(std::io::Cursor<Vec<u8>>);
        impl Read for FailsAfter {
            fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
                match self.0.read(buf)? {
                    0 => Err(std::io::Error::other("the disk went away")),
                    n => Ok(n),
                }
            }
        }
        for block_size in [1, 4, 1 << 16] {
            let input = FailsAfter(std::io::Cursor::new(b"a\nb\ncut sh".to_vec()));
            assert_eq!(
                read_in_blocks(input, block_size),
                vec![
                    Ok((0, 1, "a".to_string())),
                    Ok((2, 2, "b".to_string())),
                    Err("cannot read: the disk went away".to_string()),
                ],
                "{block_size}-byte reads"
            );
        }
    }

    #[test]
    fn a_line_past_the_longest_is_an_error_not_held_whole() {
        let mut text = b"{}\n".to_vec();
        text.extend(std::iter::repeat_n(b'0', 3 << 20));
        let mut lines = Lines::new(
            Path::new("zeros.jsonl").into(),
            Box::new(std::io::Cursor::new(text)),
            1 << 16,
        );
        lines.max_line = 1 << 20;
        assert!(matches!(lines.next_line(), Ok(Some((0, _)))));
        let err = lines.next_line().expect_err("refused").to_string();
        assert!(err.contains("line 2 is longer than 1 MiB"), "{err}");
        // What was read of it went with the error.
        assert!(lines.carried.capacity() < 1 << 20);
        assert!(matches!(lines.next_line(), Ok(None)));
    }

    #[test]
    fn rows_in_memory_at_a_place_are_numbered_from_it() {
        let text = b"{\"id\": \"a\"}\n\n{}\n".to_vec();
        let mut items = Items::in_memory_at(Path::new("data.jsonl"), text, 128, 131);
        let mut numbered = Vec::new();
        while let Some(item) = items.next_item() {
            let item = item.unwrap();
            numbered.push((item.seq, item.row.number, item.row.text.to_string()));
        }
        assert_eq!(
            numbered,
            [
                (128, 131, "{\"id\": \"a\"}".to_string()),
                (129, 133, "{}".to_string())
            ]
        );
    }

    #[test]
    fn a_row_without_an_id_that_takes_another_rows_id_is_warned_of() {
        // Each row read: its line, and the warning of a clash.
        let read = |text: &str| {
            let mut items = Items::in_memory(Path::new("d.jsonl"), text.as_bytes().to_vec());
            let mut clashes = IdClashes::default();
            let mut read = Vec::new();
            while let Some(item) = items.next_item() {
                let row = item.unwrap().row;
                read.push(match clashes.check(&row) {
                    Some(warning) => format!("{}: {warning}", row.number),
                    None => row.number.to_string(),
                });
            }
            read
        };
        assert_eq!(
            read("{\"id\": 1}\n{\"input\": \"x\"}\n"),
            [
                "1",
                "2: the row has no id, so it takes its 0-based line index, 1, which is the id of \
                 the row on line 1: the two rows count as runs of one sample; give this row an \
                 `id` of its own"
            ]
        );
        assert_eq!(
            read("{}\n{\"sample_id\": \"s\"}\n{\"id\": 0}\n"),
            [
                "1",
                "2",
                "3: id: 0 is the id the row on line 1 takes, having none, from its 0-based line \
                 index: the two rows count as runs of one sample; give the row on line 1 an `id` \
                 of its own, or this one another"
            ]
        );
        // A blank line is counted; ids a row without one cannot take, and repeated ids
        // (runs of one sample), are not warned of.
        assert_eq!(
            read(
                "{\"id\": 3}\n\n{}\n{\"id\": 3}\n{\"id\": \"1\"}\n{}\n{\"id\": 9}\n{}\n{\"id\": 1}\n"
            ),
            ["1", "3", "4", "5", "6", "7", "8", "9"]
        );
        // An id above the rows read so far clashes with the row that reaches it.
        let far = read("{}\n{\"id\": 4}\n{}\n{}\n{}\n");
        assert_eq!(far[..4], ["1", "2", "3", "4"]);
        assert!(
            far[4].starts_with("5: the row has no id, so it takes its 0-based line index, 4, which is the id of the row on line 2"),
            "{far:?}"
        );
    }

    #[test]
    fn lines_share_their_block() {
        let input = std::io::Cursor::new(b"{\"id\": 1}\n{\"id\": 2}\n".to_vec());
        let mut lines = Lines::new(Path::new("rows.jsonl").into(), Box::new(input), 1 << 16);
        let (_, first) = lines.next_line().unwrap().unwrap();
        let (_, second) = lines.next_line().unwrap().unwrap();
        assert!(Arc::ptr_eq(&first.text.block, &second.text.block));
        assert_eq!(
            (&*first.text, &*second.text),
            ("{\"id\": 1}", "{\"id\": 2}")
        );
    }

    #[test]
    fn a_block_is_read_into_again_only_when_no_line_holds_it() {
        let rows: Vec<String> = (0..400).map(|i| format!("{{\"id\": {i}}}")).collect();
        let input = || std::io::Cursor::new(rows.join("\n").into_bytes());
        // Every seventh line is kept to the end, so some blocks stay held while others are
        // read into again: the kept lines still read as they were read.
        let mut lines = Lines::new(Path::new("rows.jsonl").into(), Box::new(input()), 64);
        let mut held = Vec::new();
        while let Some((_, line)) = lines.next_line().unwrap() {
            if line.number % 7 == 0 {
                held.push(line);
            }
        }
        assert_eq!(held.len(), 400 / 7);
        for line in &held {
            assert_eq!(&*line.text, rows[line.number - 1], "line {}", line.number);
        }
        // With no line held, two buffers take turns: the block being read and the one before.
        let mut lines = Lines::new(Path::new("rows.jsonl").into(), Box::new(input()), 64);
        let mut read = 0;
        while let Some((_, line)) = lines.next_line().unwrap() {
            assert_eq!(&*line.text, rows[read]);
            read += 1;
            assert!(
                lines.used.len() <= 1,
                "{} used blocks kept",
                lines.used.len()
            );
        }
        assert_eq!(read, 400);
    }

    #[test]
    fn text_is_checked_as_std_checks_it() {
        let cases: [&[u8]; 9] = [
            b"plain",
            "caf\u{e9} \u{1f600} \u{10ffff}".as_bytes(),
            b"\xc0\xaf",
            b"\xed\xa0\x80",
            b"\xe2\x82",
            b"\xf4\x8f\xbf\xbf",
            b"\xf4\x90\x80\x80",
            b"\xff",
            b"{\"a\": \"\x80\"}",
        ];
        for bytes in cases {
            let (text, failed) = whole_lines_as_text(bytes.to_vec(), 1);
            let ours = match failed {
                Some(_) => Err(()),
                None => Ok(text),
            };
            let std = String::from_utf8(bytes.to_vec()).map_err(|_| ());
            assert_eq!(ours, std, "{bytes:?}");
        }
    }

    #[test]
    fn a_file_that_cannot_be_read_fails_as_reading_it_does() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("bad.jsonl");
        std::fs::write(&path, b"{}\n{\"a\": \"\xff\"}\n").unwrap();
        let counted = count_rows(&path).unwrap_err().to_string();
        assert_eq!(counted, rows_read(&path).unwrap_err());
        assert!(
            counted.ends_with("bad.jsonl: line 2: the file is not UTF-8 text: save it as UTF-8"),
            "{counted}"
        );
        let missing = dir.path().join("missing.jsonl");
        assert_eq!(
            count_rows(&missing).unwrap_err().to_string(),
            rows_read(&missing).unwrap_err()
        );
    }
}
