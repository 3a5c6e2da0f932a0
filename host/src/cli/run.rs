//! `gavel run SUITE`: grade, write results.jsonl and summary.json, apply the gate.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::AtomicBool;

use gavel::grade::Status;
use gavel::input::dataset::{Items, RowCount};
use gavel::output::junit::JunitWriter;
use gavel::output::result::{GradeKey, SampleResult};
use gavel::output::summary::{Aggregator, Summary};
use gavel::run::engine::{
    self, Filter, Pass, PassEnd, PassError, ResultsFile, Selected, Selection, Sink, Validation,
};
use gavel::run::setup::Prepared;
use std::io::Write;

use super::progress::{Progress, paint};

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
    /// Also write a JUnit XML report (one testcase per sample) to FILE.
    #[arg(long, value_name = "FILE")]
    junit: Option<PathBuf>,
    #[command(flatten)]
    cache: super::CacheArgs,
}

pub fn default_workers() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

pub fn run(args: Args) -> u8 {
    let options = gavel::run::setup::Options {
        cache_dir: args.cache.dir(),
        no_judge_cache: args.no_cache,
    };
    let mut prepared = match gavel::run::setup::prepare(&args.suite, &options) {
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
    let metric_keys: Vec<String> = prepared
        .plan
        .metrics
        .iter()
        .map(|m| m.key.to_string())
        .collect();
    // No row is graded while the dataset has an invalid one. Judge requests cost money, so a
    // suite with a judge checks every row first; any other suite checks rows as it grades them
    // and takes back what it wrote when it meets a bad one.
    let checked_first = !args.skip_invalid && prepared.plan.has_judge();
    let total = if checked_first {
        match check_rows(&prepared, selection.clone(), workers) {
            Ok(v) if v.invalid == 0 => RowCount::known(v.total),
            Ok(v) => return report_invalid_rows(&v),
            Err(code) => return code,
        }
    } else {
        match count(&prepared, selection.clone()) {
            Ok(n) => n,
            Err(code) => return code,
        }
    };
    let expected = total.clone();
    let mut aggregator = Aggregator::streaming(
        prepared
            .plan
            .metrics
            .iter()
            .map(|m| GradeKey::Borrowed(m.key))
            .collect(),
        move || expected.wait().unwrap_or(0),
    );

    let mut junit = match &args.junit {
        Some(path) => match std::fs::File::create(path).and_then(|file| {
            JunitWriter::new(std::io::BufWriter::new(file), &prepared.suite.file.name)
        }) {
            Ok(writer) => Some(writer),
            Err(e) => {
                eprintln!("error: cannot write {}: {e}", path.display());
                return super::EXIT_INVALID;
            }
        },
        None => None,
    };
    let mut failing = Failing::default();
    let already = if args.resume {
        let mut junit_error = None;
        let read = runner::read_previous(&results_path, |r| {
            aggregator.add(&r);
            failing.note(&r);
            if let Some(writer) = junit.as_mut()
                && let Err(e) = writer.add(&r)
            {
                junit_error.get_or_insert(e);
            }
        });
        if let Some(e) = junit_error {
            eprintln!("error: cannot write the JUnit report: {e}");
            return super::EXIT_INVALID;
        }
        match read {
            Ok(n) => n,
            Err(message) => {
                eprintln!("error: {message}");
                return super::EXIT_INVALID;
            }
        }
    } else {
        0
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
    let selection_for_report = selection.clone();
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
        junit: junit.as_mut(),
        failing: &mut failing,
        progress: Progress::new(total, already, &metric_keys, args.quiet || args.json),
    };
    let pass = Pass {
        plan: prepared.plan.clone(),
        parser: prepared.parser.clone(),
        reward,
        workers,
        stop,
        refuse_invalid: !args.skip_invalid,
        sink: &mut sink,
    };
    let end = pass.run(selected);
    sink.progress.finish(matches!(end, Ok(PassEnd::Complete)));
    let end = match end {
        Ok(end) => end,
        // A file that cannot be read is refused like an invalid row: nothing of this run is kept.
        Err(e @ PassError::Source(_)) if !args.skip_invalid => {
            eprintln!("error: {e}");
            take_back(results, junit, &results_path, args.junit.as_deref());
            return super::EXIT_INVALID;
        }
        Err(e) => {
            eprintln!("error: {e}");
            let _ = results.finish();
            return super::EXIT_INVALID;
        }
    };
    if end == PassEnd::Refused {
        // Nothing of this run is kept: the rows are reported as if checked before grading.
        take_back(results, junit, &results_path, args.junit.as_deref());
        return match check_rows(&prepared, selection_for_report, workers) {
            Ok(v) => report_invalid_rows(&v),
            Err(code) => code,
        };
    }
    if let Err(e) = results.finish() {
        eprintln!("error: cannot write {}: {e}", results_path.display());
        return super::EXIT_INVALID;
    }
    if let Err(message) = runner::regroup(&results_path, &mut aggregator) {
        eprintln!("error: {message}");
        return super::EXIT_INVALID;
    }
    let mut summary = aggregator.finish();
    let gate_passed = match &prepared.suite.file.gate {
        Some(gate) => gate.apply(&mut summary),
        None => true,
    };
    let summary_path = out_dir.join("summary.json");
    let text = match serde_json::to_string_pretty(&summary) {
        Ok(text) => text,
        Err(e) => {
            eprintln!("error: cannot render the summary: {e}");
            return super::EXIT_INVALID;
        }
    };
    if let Err(e) = std::fs::write(&summary_path, format!("{text}\n")) {
        eprintln!("error: cannot write {}: {e}", summary_path.display());
        return super::EXIT_INVALID;
    }
    if let (Some(writer), Some(path)) = (junit, &args.junit)
        && let Err(e) = writer.finish().and_then(|mut out| out.flush())
    {
        eprintln!("error: cannot write {}: {e}", path.display());
        return super::EXIT_INVALID;
    }
    if args.json {
        println!("{text}");
    } else if !args.quiet {
        print_summary(&prepared, &summary, &failing);
        println!("results: {}", results_path.display());
    }
    match end {
        PassEnd::Interrupted => {
            eprintln!(
                "interrupted: what finished is in {}; resume with: gavel run {} --resume -o {}",
                results_path.display(),
                args.suite.display(),
                out_dir.display()
            );
            super::EXIT_INTERRUPTED
        }
        PassEnd::Complete if gate_passed => super::EXIT_OK,
        PassEnd::Complete => super::EXIT_GATE_FAILED,
        PassEnd::Refused => super::EXIT_INVALID,
    }
}

/// How many failing samples the end-of-run report lists.
const FAILING_LISTED: usize = 5;

/// The first failing or errored samples, for the end-of-run report.
#[derive(Default)]
struct Failing {
    samples: Vec<String>,
    more: u64,
}

impl Failing {
    fn note(&mut self, result: &SampleResult) {
        if self.samples.len() >= FAILING_LISTED {
            self.more += u64::from(result.status() != Status::Pass);
            return;
        }
        let why = if let Some(error) = &result.error {
            format!("error: {}", error.message)
        } else if let Some((key, grade)) = result
            .grades
            .iter()
            .find(|(_, g)| g.status == Status::Fail || g.status == Status::Error)
        {
            format!("{key}: {}", grade.rationale)
        } else {
            return;
        };
        self.samples
            .push(format!("{}  {}", result.sample_id, one_line(&why, 100)));
    }
}

fn one_line(text: &str, width: usize) -> String {
    let flat: String = text
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect();
    if flat.chars().count() <= width {
        flat
    } else {
        let cut: String = flat.chars().take(width).collect();
        format!("{cut}...")
    }
}

fn print_summary(prepared: &Prepared, summary: &Summary, failing: &Failing) {
    let c = &summary.counts;
    let red_if_any = |n: u64| {
        if n > 0 {
            paint(&n.to_string(), 31)
        } else {
            n.to_string()
        }
    };
    println!(
        "{}: {} samples: {} passed, {} failed, {} errored",
        prepared.suite.file.name,
        c.total,
        c.passed,
        red_if_any(c.failed),
        red_if_any(c.errored)
    );
    let fmt = |v: Option<f64>| v.map_or_else(|| "-".to_string(), |v| format!("{v:.3}"));
    let width = summary
        .metrics
        .iter()
        .map(|(k, _)| k.len())
        .max()
        .unwrap_or(6)
        .max(6);
    println!(
        "  {:width$}  {:>7}  {:>9}  {:>17}  {:>8}",
        "metric", "mean", "pass rate", "95% CI (mean)", "n"
    );
    for (key, metric) in &summary.metrics {
        let ci = metric
            .stats
            .ci95
            .map_or_else(|| "-".to_string(), |[lo, hi]| format!("[{lo:.3}, {hi:.3}]"));
        let pass_rate = metric
            .pass_rate
            .map_or_else(|| "-".to_string(), |p| format!("{:.1}%", 100.0 * p));
        println!(
            "  {key:width$}  {:>7}  {pass_rate:>9}  {ci:>17}  {:>8}",
            fmt(metric.stats.mean),
            metric.stats.n
        );
    }
    if let Some(reward) = &summary.reward {
        println!("  reward mean {} (n {})", fmt(reward.mean), reward.n);
    }
    if let Some(gate) = &summary.gate {
        println!(
            "gate: {} ({})",
            if gate.passed {
                paint("passed", 32)
            } else {
                paint("FAILED", 31)
            },
            gate.message
        );
    }
    if !failing.samples.is_empty() {
        println!("failing samples:");
        for line in &failing.samples {
            println!("  {line}");
        }
        if failing.more > 0 {
            println!("  ... and {} more", failing.more);
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
        .map(|c| {
            if c.is_alphanumeric() || "-_.".contains(c) {
                c
            } else {
                '-'
            }
        })
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

/// Takes back what a refused run wrote: its results and its JUnit report.
fn take_back<W: Write>(
    results: ResultsFile,
    junit: Option<JunitWriter<W>>,
    results_path: &Path,
    junit_path: Option<&Path>,
) {
    if let Err(e) = results.discard() {
        eprintln!("error: cannot restore {}: {e}", results_path.display());
    }
    drop(junit);
    if let Some(path) = junit_path {
        let _ = std::fs::remove_file(path);
    }
}

/// How many items the run will grade. With every row an item, the lines are counted only if
/// something asks (see [`RowCount`]); a file that cannot be counted fails when the pass reads it.
fn count(prepared: &Prepared, selection: Selection) -> Result<RowCount, u8> {
    if selection.filters.is_empty() && prepared.runs.is_empty() {
        let max = selection.max_samples.filter(|max| *max > 0);
        return Ok(RowCount::of(&prepared.dataset, max));
    }
    let items = Items::open(&prepared.dataset, &prepared.runs).map_err(|e| {
        eprintln!("error: {e}");
        super::EXIT_INVALID
    })?;
    let mut selected = Selected::new(items, selection);
    let mut n = 0;
    while selected.next_item().is_some() {
        n += 1;
    }
    Ok(RowCount::known(n))
}

pub fn report_invalid_rows(validation: &Validation) -> u8 {
    for error in &validation.errors {
        eprintln!("error: {error}");
    }
    let more = validation
        .invalid
        .saturating_sub(validation.errors.len() as u64);
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
    junit: Option<&'a mut JunitWriter<std::io::BufWriter<std::fs::File>>>,
    failing: &'a mut Failing,
    progress: Progress,
}

impl Sink for RunSink<'_> {
    fn write(&mut self, results: &[SampleResult], lines: &[u8]) -> std::io::Result<()> {
        self.results.append(lines)?;
        for result in results {
            self.aggregator.add(result);
            if let Some(junit) = self.junit.as_mut() {
                junit.add(result)?;
            }
            self.failing.note(result);
            self.progress.record(result);
        }
        Ok(())
    }
}
