//! `gavel run SUITE`: grade, write results.jsonl and summary.json, apply the gate.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::AtomicBool;

use gavel::dataset::Items;
use gavel::result::SampleResult;
use gavel::runner::{
    self, Filter, Pass, PassEnd, ResultsFile, Selected, Selection, Sink, Validation,
};
use gavel::setup::Prepared;
use gavel::summary::Aggregator;

use super::progress::Progress;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// The suite file (YAML).
    suite: PathBuf,
    /// Output folder [default: the suite's `output`, else results/<suite name>].
    #[arg(short = 'o', long = "output-dir", value_name = "DIR")]
    output_dir: Option<PathBuf>,
    /// Samples graded at once [default: the suite's `concurrency`, else the number of cores].
    #[arg(long, value_name = "N")]
    concurrency: Option<usize>,
    /// Grade at most N samples (after --filter) [default: the suite's `max_samples`].
    #[arg(long, value_name = "N")]
    max_samples: Option<u64>,
    /// Grade only samples whose id or tag matches: `id:X`, `tag:Y`, or a bare value for either.
    /// Repeatable; a sample matching any filter is graded.
    #[arg(long, value_name = "FILTER")]
    filter: Vec<String>,
    /// Continue an interrupted run: keep results.jsonl and grade only what is missing.
    #[arg(long)]
    resume: bool,
    /// Grade the valid rows of a dataset with bad rows; each bad row becomes an error result.
    #[arg(long)]
    skip_invalid: bool,
    /// Do not read or write cached judge replies.
    #[arg(long)]
    no_cache: bool,
    /// Print the summary as JSON on stdout.
    #[arg(long)]
    json: bool,
    /// Print nothing but errors.
    #[arg(short, long)]
    quiet: bool,
    #[command(flatten)]
    cache: super::CacheArgs,
}

pub fn default_workers() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

pub fn run(args: Args) -> u8 {
    let options = gavel::setup::Options {
        cache_dir: args.cache.dir(),
        no_judge_cache: args.no_cache,
    };
    let mut prepared = match gavel::setup::prepare(&args.suite, &options) {
        Ok(prepared) => prepared,
        Err(errors) => return super::report_suite_errors(&errors),
    };
    let reward = prepared.suite.file.reward.take().map(Arc::new);
    if !args.quiet {
        for notice in prepared.suite.notices() {
            eprintln!("{notice}");
        }
    }
    let workers = args
        .concurrency
        .or(prepared.suite.concurrency())
        .unwrap_or_else(default_workers)
        .max(1);
    let selection = Selection {
        max_samples: args.max_samples.or(prepared.suite.file.max_samples),
        filters: args.filter.iter().map(|f| Filter::parse(f)).collect(),
        skip: 0,
    };
    let out_dir = output_dir(&args, &prepared);
    if let Err(e) = std::fs::create_dir_all(&out_dir) {
        eprintln!(
            "error: cannot create the output folder {}: {e}",
            out_dir.display()
        );
        return super::EXIT_INVALID;
    }
    let results_path = out_dir.join("results.jsonl");
    let metric_keys: Vec<String> = prepared.plan.metrics.iter().map(|m| m.key.clone()).collect();
    let mut aggregator = Aggregator::new(metric_keys.clone());

    let already = if args.resume {
        match runner::read_previous(&results_path, |r| aggregator.add(&r)) {
            Ok(n) => n,
            Err(message) => {
                eprintln!("error: {message}");
                return super::EXIT_INVALID;
            }
        }
    } else {
        0
    };

    let total = if args.skip_invalid {
        match count(&prepared, selection.clone()) {
            Ok(n) => n,
            Err(code) => return code,
        }
    } else {
        match check_rows(&prepared, selection.clone(), workers) {
            Ok(v) if v.invalid == 0 => v.total,
            Ok(v) => return report_invalid_rows(&v),
            Err(code) => return code,
        }
    };

    let mut results = match ResultsFile::open(&results_path, args.resume) {
        Ok(file) => file,
        Err(e) => {
            eprintln!("error: cannot write {}: {e}", results_path.display());
            return super::EXIT_INVALID;
        }
    };
    let items = match Items::open(&prepared.dataset, &prepared.runs) {
        Ok(items) => items,
        Err(e) => {
            eprintln!("error: {e}");
            return super::EXIT_INVALID;
        }
    };
    let selected = Selected::new(
        items,
        Selection {
            skip: already,
            ..selection
        },
    );
    let stop = Arc::new(AtomicBool::new(false));
    let mut sink = RunSink {
        results: &mut results,
        aggregator: &mut aggregator,
        progress: Progress::new(total + already, already, &metric_keys, args.quiet || args.json),
    };
    let pass = Pass {
        plan: prepared.plan.clone(),
        parser: prepared.parser.clone(),
        reward,
        workers,
        stop,
        sink: &mut sink,
    };
    let end = pass.run(selected);
    sink.progress.finish();
    let end = match end {
        Ok(end) => end,
        Err(e) => {
            eprintln!("error: {e}");
            let _ = results.finish();
            return super::EXIT_INVALID;
        }
    };
    if let Err(e) = results.finish() {
        eprintln!("error: cannot write {}: {e}", results_path.display());
        return super::EXIT_INVALID;
    }
    let summary = aggregator.finish();
    let summary_path = out_dir.join("summary.json");
    let text = serde_json::to_string_pretty(&summary).unwrap_or_default();
    if let Err(e) = std::fs::write(&summary_path, format!("{text}\n")) {
        eprintln!("error: cannot write {}: {e}", summary_path.display());
        return super::EXIT_INVALID;
    }
    if args.json {
        println!("{text}");
    } else if !args.quiet {
        eprintln!("wrote {} and {}", results_path.display(), summary_path.display());
    }
    match end {
        PassEnd::Complete => super::EXIT_OK,
        PassEnd::Interrupted => {
            eprintln!(
                "interrupted; resume with: gavel run {} --resume -o {}",
                args.suite.display(),
                out_dir.display()
            );
            super::EXIT_INTERRUPTED
        }
    }
}

fn output_dir(args: &Args, prepared: &Prepared) -> PathBuf {
    if let Some(dir) = &args.output_dir {
        return dir.clone();
    }
    if let Some(dir) = &prepared.suite.file.output {
        return prepared.suite.resolve(dir);
    }
    Path::new("results").join(sanitise(&prepared.suite.file.name))
}

/// A suite name as a folder name.
fn sanitise(name: &str) -> String {
    name.chars()
        .map(|c| if c.is_alphanumeric() || "-_.".contains(c) { c } else { '-' })
        .collect()
}

/// Parses every selected row without grading (the run refuses bad rows before grading).
pub fn check_rows(
    prepared: &Prepared,
    selection: Selection,
    workers: usize,
) -> Result<Validation, u8> {
    let items = Items::open(&prepared.dataset, &prepared.runs).map_err(|e| {
        eprintln!("error: {e}");
        super::EXIT_INVALID
    })?;
    runner::validate(
        Selected::new(items, selection),
        &prepared.parser,
        &prepared.plan,
        workers,
    )
    .map_err(|e| {
        eprintln!("error: {e}");
        super::EXIT_INVALID
    })
}

fn count(prepared: &Prepared, selection: Selection) -> Result<u64, u8> {
    let items = Items::open(&prepared.dataset, &prepared.runs).map_err(|e| {
        eprintln!("error: {e}");
        super::EXIT_INVALID
    })?;
    let mut selected = Selected::new(items, selection);
    let mut n = 0;
    while selected.next_item().is_some() {
        n += 1;
    }
    Ok(n)
}

pub fn report_invalid_rows(validation: &Validation) -> u8 {
    for error in &validation.errors {
        eprintln!("error: {error}");
    }
    let more = validation.invalid.saturating_sub(validation.errors.len() as u64);
    if more > 0 {
        eprintln!("... and {more} more invalid rows");
    }
    eprintln!(
        "{} of {} rows are invalid; nothing was graded (fix them, or grade the valid rows with --skip-invalid)",
        validation.invalid, validation.total
    );
    super::EXIT_INVALID
}

struct RunSink<'a> {
    results: &'a mut ResultsFile,
    aggregator: &'a mut Aggregator,
    progress: Progress,
}

impl Sink for RunSink<'_> {
    fn write(&mut self, result: &SampleResult) -> std::io::Result<()> {
        self.results.append(result)?;
        self.aggregator.add(result);
        self.progress.record(result);
        Ok(())
    }
}
