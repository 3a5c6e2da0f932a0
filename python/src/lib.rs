//! `gavel._gavel`: a suite loaded once, with every check `gavel validate` makes, and rows graded
//! by the pass `gavel serve` grades posted rows with (`serve::grading`), in the sandbox and with
//! the limits of `gavel run`. The GIL is released while a suite loads and while rows grade.
//! The pure-Python package around it (`python/gavel/`) turns Python rows into JSON Lines and
//! the `results.jsonl` lines back into dicts.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use gavel::grade::pack::BATCH_ROWS;
use gavel::input::dataset::{Items, Lines};
use gavel::run::engine::unwound;
use gavel::run::{Options, Prepared, default_cache_dir, prepare, workers};
use gavel::serve::grading::{Graded, GradingError as PassError, grade_items_blocking};
use gavel::serve::openrlhf::{RewardRequest, answer};
use gavel::terminal::printable_lines;
use pyo3::create_exception;
use pyo3::exceptions::{PyKeyboardInterrupt, PyRuntimeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyBytes;

create_exception!(
    _gavel,
    SuiteError,
    PyValueError,
    "A suite that does not load: the message lists each mistake at its file, line and field, as \
     `gavel validate` prints them."
);
create_exception!(
    _gavel,
    RowsError,
    PyValueError,
    "Rows that cannot be read at all (a JSON Lines file that cannot be opened); a row that is \
     not valid is an error result instead, as `gavel run --skip-invalid` writes it."
);
create_exception!(
    _gavel,
    GradingError,
    PyRuntimeError,
    "A pass that stopped before every row was graded: a judge stopped answering, the timeout \
     passed, or the results could not be collected."
);

/// What the file of rows given in memory is called in row errors.
const ROWS_NAME: &str = "rows";

/// How long a pass may take when the caller sets no timeout: longer than any pass.
const NO_TIMEOUT: Duration = Duration::from_secs(365 * 24 * 3600);

/// A suite loaded once, graded many times, from any number of threads.
#[pyclass(frozen, module = "gavel._gavel")]
struct Suite {
    prepared: Prepared,
    workers: usize,
    path: PathBuf,
}

#[pymethods]
impl Suite {
    /// Loads the suite at `path` as `gavel validate` checks it: packs compiled (or read from
    /// `cache_dir`), Python graders' programs read, every mistake reported at once.
    #[new]
    #[pyo3(signature = (path, *, cache_dir = None, workers = None))]
    fn new(
        py: Python<'_>,
        path: PathBuf,
        cache_dir: Option<PathBuf>,
        workers: Option<usize>,
    ) -> PyResult<Suite> {
        if workers == Some(0) {
            return Err(PyValueError::new_err(
                "workers must be at least 1 (or None: the suite's `concurrency`, else one per core)",
            ));
        }
        let options = Options {
            cache_dir: cache_dir.or_else(default_cache_dir),
            no_judge_cache: false,
            trajectories: Vec::new(),
            serving: false,
        };
        let prepared = py
            .detach(|| prepare(&path, &options))
            .map_err(|errors| SuiteError::new_err(suite_errors(&path, &errors)))?;
        let workers = self::workers(&prepared, workers);
        Ok(Suite {
            prepared,
            workers,
            path,
        })
    }

    /// The suite's `name`.
    #[getter]
    fn name(&self) -> &str {
        &self.prepared.suite.file.name
    }

    /// The suite file's path, as given.
    #[getter]
    fn path(&self) -> &Path {
        &self.path
    }

    /// Whether the suite has a `reward:`.
    #[getter]
    fn has_reward(&self) -> bool {
        self.prepared.suite.file.reward.is_some()
    }

    /// Rows graded at once.
    #[getter]
    fn workers(&self) -> usize {
        self.workers
    }

    /// Grades rows given as JSON Lines; answers the `results.jsonl` lines, in row order. The
    /// rows may be a part of a longer dataset, `file` (`rows` when not given): the first is
    /// its row `row` (from 0), at line `line` (from 1), so that rows without an id and invalid
    /// rows are reported as grading the whole reports them.
    #[pyo3(signature = (rows, *, timeout = None, file = None, row = 0, line = 1))]
    fn grade_jsonl<'py>(
        &self,
        py: Python<'py>,
        rows: Vec<u8>,
        timeout: Option<f64>,
        file: Option<PathBuf>,
        row: u64,
        line: usize,
    ) -> PyResult<Bound<'py, PyBytes>> {
        let deadline = deadline(timeout)?;
        if line == 0 {
            return Err(PyValueError::new_err(
                "line is the first row's line in its file, counted from 1",
            ));
        }
        let file = file.unwrap_or_else(|| PathBuf::from(ROWS_NAME));
        let items = Items::in_memory_at(&file, rows, row, line);
        self.grade(py, items, deadline)
    }

    /// Grades the rows of the JSON Lines file at `path`, read as `gavel run` reads a dataset;
    /// answers the `results.jsonl` lines, in row order.
    #[pyo3(signature = (path, *, timeout = None))]
    fn grade_file<'py>(
        &self,
        py: Python<'py>,
        path: PathBuf,
        timeout: Option<f64>,
    ) -> PyResult<Bound<'py, PyBytes>> {
        let deadline = deadline(timeout)?;
        let items = Items::open(&path, &[], self.prepared.reading())
            .map_err(|e| RowsError::new_err(e.to_string()))?;
        self.grade(py, items, deadline)
    }

    /// OpenRLHF's reward request (`{"query", "prompts", "labels"}`, JSON) graded as `gavel
    /// serve`'s `/openrlhf` route grades it: one row per query; answers `{"rewards", "scores",
    /// "extra_logs"}` (JSON), each grader's scores and `gavel_error` in `extra_logs`.
    #[pyo3(signature = (request, *, timeout = None))]
    fn reward_request<'py>(
        &self,
        py: Python<'py>,
        request: Vec<u8>,
        timeout: Option<f64>,
    ) -> PyResult<Bound<'py, PyBytes>> {
        let deadline = deadline(timeout)?;
        let request =
            RewardRequest::parse(&request).map_err(|e| RowsError::new_err(e.to_string()))?;
        let items = Items::in_memory(Path::new(ROWS_NAME), request.rows());
        let graded = self.pass(py, items, deadline)?;
        // A JSON value always serializes.
        let body = serde_json::to_vec(&answer(&graded.scored)).unwrap_or_default();
        Ok(PyBytes::new(py, &body))
    }

    fn __repr__(&self) -> String {
        format!(
            "Suite(name={:?}, path={:?})",
            self.prepared.suite.file.name, self.path
        )
    }
}

impl Suite {
    fn grade<'py>(
        &self,
        py: Python<'py>,
        items: Items,
        deadline: Instant,
    ) -> PyResult<Bound<'py, PyBytes>> {
        let graded = self.pass(py, items, deadline)?;
        Ok(PyBytes::new(py, &graded.lines))
    }

    /// The pass, with the GIL released. Ctrl-C stops it as it stops `gavel run` (no row is
    /// started after it, the rows being graded finish) and raises `KeyboardInterrupt`.
    fn pass(&self, py: Python<'_>, items: Items, deadline: Instant) -> PyResult<Graded> {
        let graded = py.detach(|| {
            unwound(|| grade_items_blocking(&self.prepared, self.workers, items, deadline))
        });
        // A defect in gavel is the call's error, not a `PanicException` (which `except
        // Exception` does not catch).
        let graded = graded.map_err(|panicked| {
            GradingError::new_err(format!(
                "gavel failed grading these rows ({panicked}); please report it"
            ))
        })?;
        // The signal reached Python's handler as well: its KeyboardInterrupt (or whatever the
        // program's handler raises) is raised here, once, rather than at some later line.
        py.check_signals()?;
        graded.map_err(|e| match e {
            PassError::Deadline => {
                GradingError::new_err("the timeout passed before the rows were graded")
            }
            PassError::Stopped => PyKeyboardInterrupt::new_err(
                "grading stopped at Ctrl-C: the rows not yet started were not graded",
            ),
            other => GradingError::new_err(other.to_string()),
        })
    }
}

/// A window of a dataset: its first row's position (from 0) and line (from 1), and its rows'
/// text, one a line, with the blank lines between them.
type Window<'py> = (u64, usize, Bound<'py, PyBytes>);

/// The rows of the JSON Lines file at `path`, read as `gavel run` reads a dataset, in windows
/// of [`BATCH_ROWS`] consecutive rows (the last may hold fewer): graded apart, at the position
/// and line each window gives, each window's rows grade as they do in a run of the whole file.
#[pyfunction]
fn file_windows(py: Python<'_>, path: PathBuf) -> PyResult<Vec<Window<'_>>> {
    let windows = py.detach(|| unwound(|| read_windows(&path)));
    let windows = windows.map_err(|panicked| {
        RowsError::new_err(format!(
            "gavel failed reading {} ({panicked}); please report it",
            path.display()
        ))
    })?;
    let windows = windows.map_err(|e| RowsError::new_err(e.to_string()))?;
    Ok(windows
        .into_iter()
        .map(|(row, line, text)| (row, line, PyBytes::new(py, &text)))
        .collect())
}

fn read_windows(
    path: &Path,
) -> Result<Vec<(u64, usize, Vec<u8>)>, gavel::input::source::SourceError> {
    let mut lines = Lines::open(path)?;
    let mut windows: Vec<(u64, usize, Vec<u8>)> = Vec::new();
    let mut rows = 0u64;
    let mut last_line = 0;
    while let Some((_, line)) = lines.next_line()? {
        match windows.last_mut() {
            Some((_, _, text)) if !rows.is_multiple_of(BATCH_ROWS as u64) => {
                // The blank lines between two rows, kept so that the later row keeps its line.
                text.resize(text.len() + (line.number - last_line - 1), b'\n');
                text.extend_from_slice(line.text.as_bytes());
            }
            _ => windows.push((rows, line.number, line.text.as_bytes().to_vec())),
        }
        if let Some((_, _, text)) = windows.last_mut() {
            text.push(b'\n');
        }
        rows += 1;
        last_line = line.number;
    }
    Ok(windows)
}

/// The moment a pass given `timeout` seconds must end by.
fn deadline(timeout: Option<f64>) -> PyResult<Instant> {
    let span = match timeout {
        None => NO_TIMEOUT,
        Some(seconds) if seconds.is_finite() && seconds > 0.0 => {
            Duration::from_secs_f64(seconds.min(NO_TIMEOUT.as_secs_f64()))
        }
        Some(seconds) => {
            return Err(PyValueError::new_err(format!(
                "timeout {seconds} is not a positive number of seconds: give one, or None for no \
                 timeout"
            )));
        }
    };
    Ok(Instant::now() + span)
}

/// A suite's mistakes as `gavel validate` prints them, one `error:` line each.
fn suite_errors(path: &Path, errors: &[gavel::config::suite::SuiteError]) -> String {
    let mut message = format!("suite {} does not load:", path.display());
    for error in errors {
        message.push_str("\nerror: ");
        message.push_str(&printable_lines(&error.to_string()));
    }
    let n = errors.len();
    let plural = if n == 1 { "" } else { "s" };
    message.push_str(&format!("\n{n} problem{plural} found"));
    message
}

/// What the library has to say while it works (a pack compiled, the Python interpreter
/// built), on stderr as the command line prints it.
fn print_notice(notice: &gavel::notice::Notice) {
    eprintln!("{notice}");
}

#[pymodule]
fn _gavel(m: &Bound<'_, PyModule>) -> PyResult<()> {
    gavel::notice::set_receiver(print_notice);
    m.add_class::<Suite>()?;
    m.add_function(wrap_pyfunction!(file_windows, m)?)?;
    m.add("SuiteError", m.py().get_type::<SuiteError>())?;
    m.add("RowsError", m.py().get_type::<RowsError>())?;
    m.add("GradingError", m.py().get_type::<GradingError>())?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    m.add("WINDOW_ROWS", BATCH_ROWS)?;
    Ok(())
}
