//! CSV datasets, read as letta-evals 0.26.0 reads them (pandas' `read_csv` with its defaults,
//! then its own reading of each cell), each record turned into the JSON row letta-evals would
//! build, so that the rest of gavel reads a CSV dataset as it reads a JSONL one.
//!
//! The rules: a header line names the columns and `input` must be one of them; a file without
//! rows, or with a quote that opens a cell and is never closed, is refused. A cell that is
//! empty or one of pandas' missing-value words (`NA`, `null`, `None`, ...) is missing, and a
//! missing `input` is an error. `input` and `ground_truth` are trimmed, and read as a JSON list
//! when they start with `[` and end with `]`. `rubric_vars`, `agent_args` and `extra_vars` hold
//! JSON objects. `sample_id`, else `id`, is the id: numbers
//! when every cell of its column is one, else text; an infinite number, or a whole one too
//! large to keep, is refused. A row without one gets its position, unless another row has that
//! id. Other columns are not read.

use std::io::Read;
use std::path::Path;

use serde_json::{Map, Value};

use crate::fsio;
use crate::input::id_clash::{self, RowId};
use crate::input::source::SourceError;

/// Whether `path` is read as a CSV dataset: its name ends in `.csv`, in any case.
pub fn is_csv(path: &Path) -> bool {
    path.extension()
        .is_some_and(|extension| extension.eq_ignore_ascii_case("csv"))
}

/// A CSV dataset's rows as JSONL text, one row per line, and the line of the CSV file each row
/// starts on (or the rows of another file made into lines: an Inspect log, a collector file).
#[derive(Default)]
pub struct Converted {
    pub text: String,
    pub lines: Vec<usize>,
}

impl Converted {
    /// The rows `make` finds in the whole text of the file at `path` (at most
    /// [`fsio::cap::TABLE`] bytes); its error is said of that file.
    pub fn from_text<E: std::fmt::Display>(
        path: &Path,
        make: impl FnOnce(&str) -> Result<Converted, E>,
    ) -> Result<Converted, SourceError> {
        let error = |message: String| SourceError {
            path: path.to_path_buf(),
            message,
        };
        let text = fsio::read_text(path, fsio::cap::TABLE)
            .map_err(|e| error(format!("cannot read: {e}")))?;
        make(&text).map_err(|e| error(e.to_string()))
    }
}

/// What pandas reads as a missing value (its default `na_values`), compared with the whole cell.
const MISSING: &[&str] = &[
    "", "#N/A", "#N/A N/A", "#NA", "-1.#IND", "-1.#QNAN", "-NaN", "-nan", "1.#IND", "1.#QNAN",
    "<NA>", "N/A", "NA", "NULL", "NaN", "None", "n/a", "nan", "null",
];

fn is_missing(cell: &str) -> bool {
    MISSING.contains(&cell)
}

/// The JSON object columns: read (and so checked) as letta-evals reads them; only
/// `rubric_vars` is used by gavel's graders.
const OBJECT_COLUMNS: [&str; 3] = ["rubric_vars", "agent_args", "extra_vars"];

/// Reads the CSV dataset at `path` into rows; the first problem found fails it, as it fails
/// letta-evals' loading, with the line and the column it is in.
pub fn convert(path: &Path) -> Result<Converted, SourceError> {
    let error = |message: String| SourceError {
        path: path.to_path_buf(),
        message,
    };
    let (file, _) = fsio::open_regular(path, fsio::cap::TABLE)
        .map_err(|e| error(format!("cannot open: {e}")))?;
    let mut reader = csv::ReaderBuilder::new()
        .flexible(true)
        .from_reader(Quotes::new(file.take(fsio::cap::TABLE)));
    let header = reader.headers().map_err(|e| error(csv_error(&e)))?.clone();
    let mut records = Vec::new();
    for record in reader.records() {
        let record = record.map_err(|e| error(csv_error(&e)))?;
        let line = record.position().map_or(0, |p| p.line() as usize);
        records.push((line, record));
    }
    // Before anything is said of the header or the rows: the cell may have taken in both.
    if let Some(line) = reader.get_ref().unclosed() {
        return Err(error(format!(
            "line {line}: a cell starts with a quote that is never closed, so the rest of the \
             file would be that one cell (pandas refuses the file): end the cell with a quote, \
             and write a quote inside a quoted cell as two (\"\")"
        )));
    }
    if header.is_empty() {
        return Err(error(
            "the CSV file is empty: it needs a header line naming its columns (`input` among \
             them), then a line per sample"
                .to_string(),
        ));
    }
    let column = |name: &str| header.iter().position(|h| h == name);
    let Some(input) = column("input") else {
        let found: Vec<String> = header.iter().map(|h| format!("`{h}`")).collect();
        return Err(error(format!(
            "no `input` column (the header line names {}): name the column of the samples' \
             inputs `input`",
            found.join(", ")
        )));
    };
    if let Some((line, record)) = records.iter().find(|(_, r)| r.len() > header.len()) {
        return Err(error(format!(
            "line {line}: {} cells where the header line names {} columns: quote a cell \
             that holds a comma (\"a, b\"), or name the extra columns in the header",
            record.len(),
            header.len()
        )));
    }
    if records.is_empty() {
        return Err(error(
            "the CSV file has no rows, only its header line: add a line per sample".to_string(),
        ));
    }
    let ids = row_ids(&header, &records).map_err(|e| error(e.to_string()))?;
    let ground_truth = column("ground_truth");
    let (rubric, rubric_path) = (column("rubric"), column("rubric_path"));
    let objects = OBJECT_COLUMNS.map(column);

    let mut converted = Converted {
        text: String::new(),
        lines: Vec::with_capacity(records.len()),
    };
    for ((line, record), id) in records.iter().zip(ids) {
        let line = *line;
        let at = |name: &str, message: &dyn std::fmt::Display| {
            error(format!("line {line}, {name}: {message}"))
        };
        let cell = |column: Option<usize>| present(record, column?);
        let mut row = Map::new();
        row.insert("id".to_string(), id);
        let input = cell(Some(input)).ok_or_else(|| {
            at(
                "input",
                &"the cell is empty (or a word pandas reads as missing, such as `NA` or `None`): \
                  every sample needs an input",
            )
        })?;
        row.insert(
            "input".to_string(),
            text_or_list(input).map_err(|m| at("input", &m))?,
        );
        if let Some(truth) = cell(ground_truth) {
            let truth = text_or_list(truth).map_err(|m| at("ground_truth", &m))?;
            row.insert("ground_truth".to_string(), truth);
        }
        for (name, column) in OBJECT_COLUMNS.iter().zip(objects) {
            if let Some(text) = cell(column) {
                let object = json_object(text).map_err(|m| at(name, &m))?;
                if *name == "rubric_vars" {
                    row.insert((*name).to_string(), object);
                }
            }
        }
        if let Some(text) = cell(rubric) {
            row.insert("rubric".to_string(), Value::from(text));
        }
        if let Some(text) = cell(rubric_path) {
            row.insert("rubric_path".to_string(), Value::from(text.trim()));
        }
        converted.text.push_str(&Value::Object(row).to_string());
        converted.text.push('\n');
        converted.lines.push(line);
    }
    Ok(converted)
}

/// A CSV reading error in gavel's words, with the line it is on.
fn csv_error(e: &csv::Error) -> String {
    match e.kind() {
        csv::ErrorKind::Utf8 { pos, .. } => format!(
            "line {}: the CSV file is not UTF-8 text: save it as UTF-8",
            pos.as_ref().map_or(0, csv::Position::line)
        ),
        csv::ErrorKind::Io(e) => format!("cannot read: {e}"),
        _ => format!("cannot read the CSV file: {e}"),
    }
}

/// An `input` or `ground_truth` cell: trimmed, and a JSON list when it looks like one.
fn text_or_list(cell: &str) -> Result<Value, CellError> {
    let text = cell.trim();
    if !(text.starts_with('[') && text.ends_with(']')) {
        return Ok(Value::from(text));
    }
    serde_json::from_str::<Value>(text).map_err(CellError::List)
}

/// A JSON object cell.
fn json_object(cell: &str) -> Result<Value, CellError> {
    match serde_json::from_str::<Value>(cell.trim()) {
        Ok(object @ Value::Object(_)) => Ok(object),
        Ok(_) => Err(CellError::NotObject),
        Err(e) => Err(CellError::Object(e)),
    }
}

/// Why a cell holding JSON cannot be read.
#[derive(Debug, thiserror::Error)]
enum CellError {
    #[error(
        "the cell starts with `[` and ends with `]`, so it is read as a JSON list, but it is not \
         valid JSON ({0}): write a JSON list of strings such as [\"first turn\", \"second turn\"]"
    )]
    List(serde_json::Error),
    #[error(
        "the cell is JSON but not an object: write a JSON object such as {{\"tone\": \"formal\"}}, \
         or leave the cell empty"
    )]
    NotObject,
    #[error(
        "the cell is not valid JSON ({0}): write a JSON object such as {{\"tone\": \"formal\"}}, \
         or leave the cell empty"
    )]
    Object(serde_json::Error),
}

/// The cell of `record` in `column` unless it is missing: a short record's missing cells are
/// missing values, as pandas reads them.
fn present(record: &csv::StringRecord, column: usize) -> Option<&str> {
    record.get(column).filter(|cell| !is_missing(cell))
}

/// The CSV text read through, its quotes followed as the csv crate and pandas read them: the
/// csv crate ends a cell whose opening quote is never closed at the end of the file, with every
/// line after it in the cell, where pandas refuses the file.
struct Quotes<R> {
    inner: R,
    /// How much of a UTF-8 byte order mark the text has started with, which the csv crate
    /// skips; `None` once the text is past it or does not start with one.
    mark: Option<usize>,
    at: Place,
    /// The line being read, from 1.
    line: usize,
    /// The line the last quoted cell opened on.
    opened: usize,
}

const BOM: &[u8] = b"\xEF\xBB\xBF";

/// Where in the CSV text a byte is.
#[derive(Clone, Copy)]
enum Place {
    CellStart,
    Cell,
    Quoted,
    /// A quote in a quoted cell: its end, or the first of two that stand for one.
    QuoteInQuoted,
}

impl<R> Quotes<R> {
    fn new(inner: R) -> Quotes<R> {
        Quotes {
            inner,
            mark: Some(0),
            at: Place::CellStart,
            line: 1,
            opened: 0,
        }
    }

    fn follow(&mut self, byte: u8) {
        if let Some(read) = self.mark.take()
            && BOM.get(read) == Some(&byte)
        {
            self.mark = Some(read + 1);
            return;
        }
        self.at = match (self.at, byte) {
            (Place::Quoted, b'"') => Place::QuoteInQuoted,
            (Place::Quoted, _) | (Place::QuoteInQuoted, b'"') => Place::Quoted,
            (Place::CellStart, b'"') => {
                self.opened = self.line;
                Place::Quoted
            }
            (_, b',' | b'\n' | b'\r') => Place::CellStart,
            // A quote inside a cell that does not start with one is text, and so is text
            // after a quoted cell's closing quote.
            _ => Place::Cell,
        };
        if byte == b'\n' {
            self.line += 1;
        }
    }

    /// The line of the quote that opened the cell the text ended in, if it never closed.
    fn unclosed(&self) -> Option<usize> {
        matches!(self.at, Place::Quoted).then_some(self.opened)
    }
}

impl<R: Read> Read for Quotes<R> {
    fn read(&mut self, buffer: &mut [u8]) -> std::io::Result<usize> {
        let read = self.inner.read(buffer)?;
        for &byte in &buffer[..read] {
            self.follow(byte);
        }
        Ok(read)
    }
}

/// Each row's id, as letta-evals gives it: its `sample_id` cell, else its `id` cell, else its
/// position. A position that is another row's id is refused: letta-evals would grade the two
/// rows as one sample, which no one writing the file means.
fn row_ids(
    header: &csv::StringRecord,
    records: &[(usize, csv::StringRecord)],
) -> Result<Vec<Value>, RowIdError> {
    let columns: Vec<Ids> = ["sample_id", "id"]
        .into_iter()
        .filter_map(|name| {
            let column = header.iter().position(|h| h == name)?;
            Some(Ids::of(records, name, column))
        })
        .collect();
    let mut ids = Vec::with_capacity(records.len());
    let mut clashes = id_clash::Clashes::default();
    let mut found = Vec::new();
    for (position, (line, record)) in records.iter().enumerate() {
        let cell = columns
            .iter()
            .find_map(|ids| Some((ids, present(record, ids.column)?)));
        let id = match cell {
            Some((ids, cell)) => ids.id(cell).map_err(|source| RowIdError::Cell {
                line: *line,
                name: ids.name,
                source,
            })?,
            None => Value::from(position),
        };
        let row_id = match (cell, id.as_i64()) {
            (None, _) => RowId::Missing,
            (Some(_), Some(int)) => RowId::Whole(int),
            (Some(_), None) => RowId::Other,
        };
        found.extend(clashes.note(position as i64, *line, row_id));
        ids.push(id);
    }
    // Each clash is found when the second of its rows is read: a row without an id is paired
    // with the first earlier row giving its position and with each later one. So the first pair
    // by lines is the first row without an id that clashes, with the first row giving its
    // position.
    if let Some(clash) = found
        .into_iter()
        .min_by_key(|clash| (clash.unnamed, clash.named))
    {
        return Err(RowIdError::Shared {
            line: clash.unnamed,
            position: clash.index,
            other: clash.named,
        });
    }
    Ok(ids)
}

/// An id column, read as pandas types a column: numbers when every cell that is not missing is
/// one, else text.
struct Ids {
    name: &'static str,
    column: usize,
    numbers: bool,
}

impl Ids {
    fn of(records: &[(usize, csv::StringRecord)], name: &'static str, column: usize) -> Ids {
        // Rust reads `NAN` or `+nan` as a number where pandas reads text (the words it reads
        // as missing are missing already).
        let numbers = records
            .iter()
            .filter_map(|(_, record)| present(record, column))
            .all(|cell| cell.trim().parse::<f64>().is_ok_and(|n| !n.is_nan()));
        Ids {
            name,
            column,
            numbers,
        }
    }

    /// The id of a cell that is not missing: its text, or in a column of numbers its number, a
    /// whole one as an integer. A number that cannot be an id is refused, saying why.
    fn id(&self, cell: &str) -> Result<Value, IdError> {
        let text = cell.trim();
        let number = match text.parse::<f64>() {
            Ok(number) if self.numbers => number,
            _ => return Ok(Value::from(cell)),
        };
        if let Ok(int) = text.parse::<i64>() {
            return Ok(Value::from(int));
        }
        if number.is_infinite() {
            return Err(IdError::Infinite(text.to_string()));
        }
        if number.fract() != 0.0 {
            // Refused when the row is read, as a JSONL row's is.
            return Ok(Value::from(number));
        }
        if number.abs() < 9.0e15 {
            return Ok(Value::from(number as i64));
        }
        Err(IdError::TooLarge(text.to_string()))
    }
}

/// Why a row has no id of its own.
#[derive(Debug, thiserror::Error)]
enum RowIdError {
    #[error("line {line}, {name}: {source}")]
    Cell {
        line: usize,
        name: &'static str,
        source: IdError,
    },
    #[error(
        "line {line}: the row has no id (its id cell is empty, or a word pandas reads as \
         missing, such as `NaN`), so it takes its position, {position}, which is the id of the \
         row on line {other}: the two rows would be one sample; give this row an id of its own"
    )]
    Shared {
        line: usize,
        position: i64,
        other: usize,
    },
}

/// Why a number in an id column cannot be an id.
#[derive(Debug, thiserror::Error)]
enum IdError {
    #[error(
        "pandas reads `{0}` as an infinite number, which cannot be an id: write a whole number, \
         or make the ids text ({TEXT_IDS})"
    )]
    Infinite(String),
    #[error(
        "`{0}` is too large for a number id: write a smaller number, or make the ids text \
         ({TEXT_IDS}), such as `s{0}`"
    )]
    TooLarge(String),
}

/// How ids that look like numbers are made text.
const TEXT_IDS: &str = "pandas reads an id column as numbers when every cell is one, quoted \
                        or not, so start the ids with a letter";

#[cfg(test)]
mod tests {
    use super::*;

    /// The ids of the rows of the CSV `text`, or the message of its error.
    fn ids(text: &str) -> Result<Vec<Value>, String> {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("data.csv");
        std::fs::write(&path, text).unwrap();
        let converted = convert(&path).map_err(|e| e.message)?;
        Ok(converted
            .text
            .lines()
            .map(|row| serde_json::from_str::<Value>(row).unwrap()["id"].clone())
            .collect())
    }

    #[test]
    fn a_quote_never_closed_is_refused_at_its_line_as_pandas_refuses_it() {
        // What pandas 3.1 says of each: an error ("EOF inside string"), or the cells it reads.
        for (text, unclosed) in [
            ("id,input\n1,\"hello,Paris\n2,x\n", Some(2)),
            ("id,input\n1,x\n2,\"ab\n", Some(3)),
            ("id,\"inp\nut\n1,x\n", Some(1)),
            ("id,input\n1,\"ab\"\"\n2,x\n", Some(2)),
            ("id,input\n1,x\r2,\"y\n", Some(2)),
            ("id,input\n1,ab\"c\n2,x\n", None),
            ("id,input\n1,\"ab\"c\"d\n2,x\n", None),
            ("id,input\n1, \"x\n2,y\n", None),
            ("id,input\n1,\"a\nb\"\n2,\"\"\n", None),
            ("\u{feff}\"id,input\n1,x\n", Some(1)),
            ("\u{feff}\"id\",input\n1,x\n", None),
        ] {
            let mut quotes = Quotes::new(text.as_bytes());
            std::io::copy(&mut quotes, &mut std::io::sink()).unwrap();
            assert_eq!(quotes.unclosed(), unclosed, "{text:?}");
        }
        let error = ids("id,input,ground_truth\n1,\"hello,Paris\n2,x,y\n").unwrap_err();
        assert!(
            error.starts_with("line 2: a cell starts with a quote that is never closed"),
            "{error}"
        );
        // Before the header is read for its columns: the cell took in the whole file.
        // A byte order mark, which the csv crate skips, is not the start of a cell.
        for text in ["id,\"input\n1,x\n", "\u{feff}\"id,input\n1,x\n"] {
            let error = ids(text).unwrap_err();
            assert!(
                error.starts_with("line 1: a cell starts with a quote"),
                "{error}"
            );
        }
        assert_eq!(
            ids("\u{feff}\"id\",input\n1,x\n").unwrap(),
            [Value::from(1)]
        );
    }

    #[test]
    fn ids_are_read_as_letta_evals_reads_them_through_pandas() {
        let read = |text: &str| ids(text).unwrap();
        assert_eq!(
            read("id,input\n1,a\n3.0,b\n,c\n"),
            [1, 3, 2].map(Value::from)
        );
        assert_eq!(
            read("id,input\n1,a\n5,b\nNaN,c\n"),
            [1, 5, 2].map(Value::from)
        );
        assert_eq!(read("id,input\n 7 ,a\n+8,b\n"), [7, 8].map(Value::from));
        // pandas reads `NAN` (not one of its missing words) as text, and so the column.
        assert_eq!(
            read("id,input\n1,a\nNAN,b\n"),
            ["1", "NAN"].map(Value::from)
        );
        assert_eq!(
            read("sample_id,id,input\n,3,a\ns,4,b\n"),
            [Value::from(3), Value::from("s")]
        );
    }

    #[test]
    fn an_id_that_would_be_another_rows_or_cannot_be_one_is_refused_at_its_line() {
        for (text, expected) in [
            (
                "id,input\n1,a\n2,b\ninf,c\nNaN,d\n",
                "line 4, id: pandas reads `inf` as an infinite number, which cannot be an id",
            ),
            (
                "id,input\n-Infinity,a\n",
                "line 2, id: pandas reads `-Infinity`",
            ),
            (
                "id,input\n1,a\n5e400,b\n",
                "line 3, id: pandas reads `5e400`",
            ),
            (
                "id,input\n1,a\n2,b\nNaN,c\n",
                "line 4: the row has no id (its id cell is empty, or a word pandas reads as \
                 missing, such as `NaN`), so it takes its position, 2, which is the id of the \
                 row on line 3",
            ),
            ("id,input\n,a\n0,b\n", "line 2: the row has no id"),
            (
                "sample_id,input\n1,a\n12345678901234567890123456,b\n",
                "line 3, sample_id: `12345678901234567890123456` is too large for a number \
                 id: write a smaller number, or make the ids text",
            ),
            ("id,input\n1e16,a\n", "line 2, id: `1e16` is too large"),
        ] {
            let error = ids(text).unwrap_err();
            assert!(error.starts_with(expected), "{text:?}: {error}");
        }
    }

    #[test]
    fn of_rows_sharing_ids_the_first_without_one_is_named_with_the_first_giving_its_position() {
        for (text, expected) in [
            // The row on line 3 clashes with line 4 before the row on line 2 with line 5.
            ("id,input\n,a\n,b\n1,c\n0,d\n", (2, 0, 5)),
            ("id,input\n2,a\n,b\n,c\n2,d\n", (4, 2, 2)),
            ("id,input\n,a\n0,b\n0,c\n", (2, 0, 3)),
            // A cell over two lines: each row is named by the line it starts on.
            ("id,input\n,\"a\nb\"\n,c\n1,d\n", (4, 1, 5)),
        ] {
            let (line, position, other) = expected;
            let error = ids(text).unwrap_err();
            assert!(
                error.starts_with(&format!("line {line}: the row has no id"))
                    && error.contains(&format!(
                        "takes its position, {position}, which is the id of the row on line \
                         {other}:"
                    )),
                "{text:?}: {error}"
            );
        }
    }
}
