//! `gavel report RESULTS_DIR`: the run as one self-contained HTML file.

use std::path::{Path, PathBuf};

use gavel::config::suite::SuiteError;
use gavel::fsio::Written;
use gavel::output::record::{RecordError, RunRecord};
use gavel::output::report::{self, Options};
use gavel::terminal::printable_lines;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// The folder `gavel run` wrote (its results.jsonl, summary.json and run.json).
    results_dir: PathBuf,
    /// Where to write the report [default: RESULTS_DIR/report.html].
    #[arg(short = 'o', long = "output", value_name = "FILE")]
    output: Option<PathBuf>,
    /// The suite whose dataset holds the samples, for a results folder without run.json (or
    /// whose run.json names files that moved).
    #[arg(long, value_name = "SUITE")]
    suite: Option<PathBuf>,
    /// Samples shown in detail at most, the failing and errored first; every statistic counts
    /// all of them.
    #[arg(long, value_name = "N", default_value_t = report::DEFAULT_LIMIT)]
    limit: usize,
}

pub fn run(args: Args) -> super::Status {
    let inputs = match inputs(&args.results_dir, args.suite.as_deref()) {
        Ok(inputs) => inputs,
        Err(message) => {
            eprintln!("error: {}", printable_lines(&message.to_string()));
            return super::Status::Invalid;
        }
    };
    let output = Written {
        what: "the report".into(),
        path: (args.output).unwrap_or_else(|| args.results_dir.join("report.html")),
        flag: "-o",
    };
    let options = Options {
        limit: args.limit,
        title: None,
    };
    write(
        &args.results_dir,
        inputs.as_ref(),
        None,
        &options,
        &output,
        &[],
        false,
    )
}

/// Why the samples of a results folder cannot be found.
#[derive(Debug, thiserror::Error)]
pub enum InputsError {
    /// The suite given does not load; each problem on a line of its own.
    #[error("{}", .0.iter().map(ToString::to_string).collect::<Vec<_>>().join("\nerror: "))]
    Suite(Vec<SuiteError>),
    #[error(transparent)]
    Record(#[from] RecordError),
}

/// Where the samples of a results folder are: the suite given, else its run.json.
pub fn inputs(results_dir: &Path, suite: Option<&Path>) -> Result<Option<RunRecord>, InputsError> {
    match suite {
        Some(path) => {
            let suite = gavel::config::suite::Suite::load(path).map_err(InputsError::Suite)?;
            let mut inputs = RunRecord::of_suite(&suite);
            // The run's own selection, and how far it went, still apply when its run.json
            // has them.
            if let Ok(Some(recorded)) = RunRecord::read(results_dir) {
                inputs.filters = recorded.filters;
                inputs.max_samples = recorded.max_samples;
                inputs.progress = recorded.progress;
            }
            Ok(Some(inputs))
        }
        None => Ok(RunRecord::read(results_dir)?),
    }
}

/// Writes the report of a run just graded (or merged) to its folder's `report.html`.
pub fn write_run(graded: &gavel::run::Graded, quiet: bool) -> super::Status {
    let options = gavel::output::report::Options {
        limit: gavel::output::report::DEFAULT_LIMIT,
        title: None,
    };
    let output = Written {
        what: "the report".into(),
        path: graded.out_dir.join("report.html"),
        flag: "-o",
    };
    write(
        &graded.out_dir,
        Some(&graded.record),
        None,
        &options,
        &output,
        &[],
        quiet,
    )
}

/// Builds the report of the run in `results_dir` and writes it to `output`, unless that is a
/// file the report is made from: the folder's own files, the suite, dataset and recorded runs of
/// `inputs`, and `reads` (what else the command read). Prints where, and any notice, unless
/// `quiet`.
pub fn write(
    results_dir: &Path,
    inputs: Option<&RunRecord>,
    diff: Option<&gavel::output::diff::Diff>,
    options: &Options,
    output: &Written,
    reads: &[(String, PathBuf)],
    quiet: bool,
) -> super::Status {
    let folder = gavel::output::run_files(results_dir)
        .map(|(what, path)| (format!("the run's {what}"), path));
    let recorded = inputs.into_iter().flat_map(|record| {
        gavel::run::inputs(&record.suite, &record.dataset, &record.trajectories)
    });
    let reads: Vec<_> = folder
        .into_iter()
        .chain(recorded)
        .chain(reads.iter().cloned())
        .collect();
    if let Err(e) = gavel::fsio::refuse_overwriting(std::slice::from_ref(output), &reads) {
        eprintln!("error: {}", printable_lines(&e.to_string()));
        return super::Status::Invalid;
    }
    let report = match report::build(results_dir, inputs, diff, options) {
        Ok(report) => report,
        Err(message) => {
            eprintln!("error: {}", printable_lines(&message.to_string()));
            return super::Status::Invalid;
        }
    };
    let output = &output.path;
    if let Err(e) = gavel::fsio::write_output(output, report.html.as_bytes()) {
        eprintln!("error: cannot write {}: {e}", output.display());
        return super::Status::Invalid;
    }
    if quiet {
        return super::Status::Ok;
    }
    for notice in &report.notices {
        eprintln!("notice: {}", printable_lines(notice));
    }
    eprintln!(
        "report: {} ({} samples, {} in detail, {} KiB)",
        output.display(),
        report.rows,
        report.shown,
        report.html.len().div_ceil(1024)
    );
    super::Status::Ok
}
