//! `gavel validate SUITE`: everything that can be checked without grading, as text for people
//! or as JSON (`--format json`) for tools.

use std::path::{Path, PathBuf};

use gavel::config::suite::SuiteError;
use gavel::grade::grants::Reach;
use gavel::input::dataset::RowError;
use gavel::run::engine::Selection;
use gavel::run::{Filter, Options, check_rows, default_workers, prepare};
use gavel::terminal::{printable, printable_lines};
use indexmap::IndexMap;
use serde::Serialize;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// The suite file (YAML); with --traces, an evaldeck case file or a folder of them.
    suite: PathBuf,
    /// Check evaldeck cases with their recorded runs, as `gavel run SUITE --traces FILE`
    /// grades them.
    #[arg(long, value_name = "FILE", conflicts_with = "trajectories")]
    traces: Option<PathBuf>,
    /// Check these recorded runs in place of the suite's `trajectories:`, as `gavel run
    /// --trajectories` grades them. Repeatable.
    #[arg(long, value_name = "FILE")]
    trajectories: Vec<PathBuf>,
    /// Check only the samples `gavel run --filter` would grade, and say how many that is.
    #[arg(long, value_name = "FILTER")]
    filter: Vec<String>,
    /// `text` for people, `json` for tools (one object on stdout: valid, problems, warnings).
    #[arg(long, value_name = "FORMAT", default_value = "text", value_parser = ["text", "json"])]
    format: String,
    #[command(flatten)]
    cache: super::CacheArgs,
}

/// What validation found, as `--format json` prints it.
#[derive(Debug, Default, Serialize)]
struct Found {
    valid: bool,
    /// Mistakes that stop a run, each located.
    problems: Vec<Problem>,
    /// Rows that will grade, though likely not as meant.
    warnings: Vec<Problem>,
    /// Problems and warnings in all, when more were found than are listed.
    problems_in_all: u64,
    warnings_in_all: u64,
    /// Metrics of the suite, and samples selected (of all, with `--filter`).
    metrics: usize,
    samples: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    samples_in_all: Option<u64>,
    notices: Vec<String>,
    /// What each sandboxed grader may reach, by its field; absent when the suite grants nothing.
    #[serde(skip_serializing_if = "IndexMap::is_empty")]
    grants: IndexMap<String, Reach>,
}

#[derive(Debug, Serialize)]
struct Problem {
    file: PathBuf,
    line: Option<u64>,
    column: Option<u64>,
    field: Option<String>,
    message: String,
    hint: Option<String>,
    /// The line as the text output shows it.
    text: String,
}

impl From<&SuiteError> for Problem {
    fn from(e: &SuiteError) -> Problem {
        Problem {
            file: e.file.clone(),
            line: e.line,
            column: e.column,
            field: (!e.field.is_empty()).then(|| e.field.clone()),
            message: e.message.clone(),
            hint: e.hint.clone(),
            text: e.to_string(),
        }
    }
}

impl From<&RowError> for Problem {
    fn from(e: &RowError) -> Problem {
        Problem {
            file: e.file.clone(),
            line: Some(e.line as u64),
            column: (e.column > 0).then_some(e.column as u64),
            field: None,
            message: e.message.clone(),
            hint: None,
            text: e.to_string(),
        }
    }
}

impl Problem {
    fn about(file: &Path, message: String) -> Problem {
        Problem {
            file: file.to_path_buf(),
            line: None,
            column: None,
            field: None,
            text: format!("{}: {message}", file.display()),
            message,
            hint: None,
        }
    }
}

pub fn run(args: Args) -> super::Status {
    let found = match &args.traces {
        Some(traces) => validate_cases(&args, traces),
        None => validate(&args, &args.suite),
    };
    if args.format == "json" {
        match serde_json::to_string_pretty(&found) {
            Ok(json) => println!("{}", gavel::terminal::printable_json(&json)),
            Err(e) => eprintln!(
                "error: cannot render the result: {}",
                printable_lines(&e.to_string())
            ),
        }
    } else {
        print_text(&args, &found);
    }
    if found.valid {
        super::Status::Ok
    } else {
        super::Status::Invalid
    }
}

/// Validation of the suite as `gavel run SUITE --traces` writes it for evaldeck cases: written
/// into a folder of its own, removed after. The case files' mistakes are found in the case files.
fn validate_cases(args: &Args, traces: &Path) -> Found {
    let written = gavel::input::evaldeck_cases::load(&args.suite, traces).and_then(|project| {
        let dir = tempfile::tempdir().map_err(|e| {
            vec![SuiteError::at(
                &args.suite,
                "",
                format!("cannot make a folder to check the cases in: {e}"),
            )]
        })?;
        let suite = project.write(dir.path())?;
        Ok((dir, suite))
    });
    match written {
        Ok((_dir, suite)) => validate(args, &suite),
        Err(errors) => refused(&errors),
    }
}

/// What validation found when the suite could not be prepared.
fn refused(errors: &[SuiteError]) -> Found {
    Found {
        problems_in_all: errors.len() as u64,
        problems: errors.iter().map(Problem::from).collect(),
        ..Found::default()
    }
}

fn validate(args: &Args, suite: &Path) -> Found {
    let options = Options {
        cache_dir: args.cache.dir(),
        no_judge_cache: true,
        trajectories: args.trajectories.clone(),
        serving: false,
    };
    let prepared = match prepare(suite, &options) {
        Ok(prepared) => prepared,
        Err(errors) => return refused(&errors),
    };
    let mut found = Found {
        metrics: prepared.plan.metrics.len(),
        notices: prepared.notices(),
        grants: (prepared.plan.grants.iter())
            .map(|(field, grants)| (field.clone(), Reach::from(&**grants)))
            .collect(),
        ..Found::default()
    };
    let selection = Selection {
        filters: args.filter.iter().map(|f| Filter::parse(f)).collect(),
        ..Selection::default()
    };
    let filtered = !selection.filters.is_empty();
    let validation = match check_rows(&prepared, selection, default_workers()) {
        Ok(validation) => validation,
        Err(e) => {
            // A file that cannot be read says its own path.
            let problem = match &e {
                gavel::run::RunError::Source(source) => {
                    Problem::about(&source.path, source.message.clone())
                }
                _ => Problem::about(&prepared.dataset, e.to_string()),
            };
            found.problems = vec![problem];
            found.problems_in_all = 1;
            return found;
        }
    };
    found.samples = validation.total;
    found.problems = validation.errors.iter().map(Problem::from).collect();
    found.problems_in_all = validation.invalid;
    found.warnings = validation.warnings.iter().map(Problem::from).collect();
    found.warnings_in_all = validation.warned;
    if filtered {
        found.samples_in_all = check_rows(&prepared, Selection::default(), default_workers())
            .ok()
            .map(|all| all.total);
    }
    if validation.total == 0 && validation.invalid == 0 {
        found.problems.push(Problem::about(
            &prepared.dataset,
            "nothing to grade: no sample is selected".to_string(),
        ));
        found.problems_in_all = 1;
    }
    found.valid = found.problems.is_empty();
    found
}

fn print_text(args: &Args, found: &Found) {
    for notice in &found.notices {
        eprintln!("{}", printable_lines(notice));
    }
    for problem in &found.problems {
        eprintln!("error: {}", printable_lines(&problem.text));
    }
    for warning in &found.warnings {
        eprintln!("warning: {}", printable_lines(&warning.text));
    }
    let more = |listed: usize, all: u64| all.saturating_sub(listed as u64);
    if more(found.warnings.len(), found.warnings_in_all) > 0 {
        eprintln!(
            "warning: ... and {} more rows like these",
            more(found.warnings.len(), found.warnings_in_all)
        );
    }
    if !found.valid {
        if more(found.problems.len(), found.problems_in_all) > 0 {
            eprintln!(
                "... and {} more invalid rows",
                more(found.problems.len(), found.problems_in_all)
            );
        }
        let n = found.problems_in_all;
        if found.samples > 0 {
            eprintln!(
                "{n} of {} rows are invalid; nothing was graded (fix them, or grade the valid \
                 rows with --skip-invalid)",
                found.samples
            );
        } else {
            eprintln!("{n} problem{} found; nothing was graded", super::plural(n));
        }
        return;
    }
    let selected = found.samples_in_all.map_or(String::new(), |all| {
        format!(
            " of {all} selected by --filter {}",
            printable(&args.filter.join(" --filter "))
        )
    });
    println!(
        "{}: valid ({} metric{}, {} sample{}{selected})",
        super::run::shown_path(&args.suite),
        found.metrics,
        super::plural(found.metrics as u64),
        found.samples,
        super::plural(found.samples),
    );
    for (field, reach) in &found.grants {
        println!("  {field} may reach: {}", printable(&reach.to_string()));
    }
}
