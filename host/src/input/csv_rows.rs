//! CSV datasets, read as letta-evals 0.26.0 reads them (pandas' `read_csv` with its defaults,
//! then its own reading of each cell), each record turned into the JSON row letta-evals would
//! build, so that the rest of gavel reads a CSV dataset as it reads a JSONL one.
//!
//! The rules: a header line names the columns and `input` must be one of them; a file without
//! rows is refused. A cell that is empty or one of pandas' missing-value words (`NA`, `null`,
//! `None`, ...) is missing, and a missing `input` is an error. `input` and `ground_truth` are
//! trimmed, and read as a JSON list when they start with `[` and end with `]`. `rubric_vars`,
//! `agent_args` and `extra_vars` hold JSON objects. `sample_id`, else `id`, is the id: numbers
//! when every cell of its column is one, else text; a row without one gets its position.
//! Other columns are not read.

use std::io::Read;
use std::path::Path;

use serde_json::{Map, Value};

use crate::fsio;
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
        .from_reader(file.take(fsio::cap::TABLE));
    let header = reader.headers().map_err(|e| error(csv_error(&e)))?.clone();
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
    let mut records = Vec::new();
    for record in reader.records() {
        let record = record.map_err(|e| error(csv_error(&e)))?;
        let line = record.position().map_or(0, |p| p.line() as usize);
        if record.len() > header.len() {
            return Err(error(format!(
                "line {line}: {} cells where the header line names {} columns: quote a cell \
                 that holds a comma (\"a, b\"), or name the extra columns in the header",
                record.len(),
                header.len()
            )));
        }
        records.push((line, record));
    }
    if records.is_empty() {
        return Err(error(
            "the CSV file has no rows, only its header line: add a line per sample".to_string(),
        ));
    }
    let ids = ["sample_id", "id"].map(|name| column(name).map(|at| Ids::of(&records, at)));
    let ground_truth = column("ground_truth");
    let (rubric, rubric_path) = (column("rubric"), column("rubric_path"));
    let objects = OBJECT_COLUMNS.map(column);

    let mut converted = Converted {
        text: String::new(),
        lines: Vec::with_capacity(records.len()),
    };
    for (position, (line, record)) in records.iter().enumerate() {
        let line = *line;
        let at = |name: &str, message: &dyn std::fmt::Display| {
            error(format!("line {line}, {name}: {message}"))
        };
        // A short record's missing cells are missing values, as pandas reads them.
        let cell = |column: Option<usize>| {
            column
                .and_then(|i| record.get(i))
                .filter(|cell| !is_missing(cell))
        };
        let mut row = Map::new();
        let id = ids
            .iter()
            .flatten()
            .find_map(|ids| ids.id(cell(Some(ids.column))?));
        row.insert(
            "id".to_string(),
            id.unwrap_or_else(|| Value::from(position)),
        );
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

/// An id column, read as pandas types a column: numbers when every cell that is not missing is
/// one, else text.
struct Ids {
    column: usize,
    numbers: bool,
}

impl Ids {
    fn of(records: &[(usize, csv::StringRecord)], column: usize) -> Ids {
        let numbers = records
            .iter()
            .filter_map(|(_, record)| record.get(column))
            .filter(|cell| !is_missing(cell))
            .all(|cell| cell.trim().parse::<f64>().is_ok());
        Ids { column, numbers }
    }

    /// The id of a cell that is not missing; a whole number becomes an integer.
    fn id(&self, cell: &str) -> Option<Value> {
        if !self.numbers {
            return Some(Value::from(cell));
        }
        let text = cell.trim();
        if let Ok(int) = text.parse::<i64>() {
            return Some(Value::from(int));
        }
        let number: f64 = text.parse().ok()?;
        Some(if number.fract() == 0.0 && number.abs() < 9.0e15 {
            Value::from(number as i64)
        } else {
            Value::from(number)
        })
    }
}
