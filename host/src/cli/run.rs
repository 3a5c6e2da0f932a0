//! `gavel run SUITE`: grade, write results.jsonl and summary.json, apply the gate.

use std::path::PathBuf;

use gavel::grade::Status;
use gavel::input::dataset::RowCount;
use gavel::input::shard::Shard;
use gavel::output::result::SampleResult;
use gavel::output::summary::Summary;
use gavel::run::{
    Filter, Graded, IsolationCheck, Observer, Outcome, Prepared, RunOptions, Validation,
    VerifyIsolation,
};
use gavel::terminal::{printable, printable_lines};

use super::progress::{Progress, paint};

#[derive(Debug, clap::Args)]
pub struct Args {
    /// The suite file (YAML); with --traces, an evaldeck case file or a folder of them.
    suite: PathBuf,
    /// Grade evaldeck cases with their recorded runs: a JSONL file of a recording a line (an
    /// evaldeck Trace, or a list of them, one per turn; any other format), or a collector file,
    /// Inspect log or Claude Code session file or folder. Each run is its case's by
    /// `metadata.case_name`, else by its sample id, else by its first input.
    #[arg(long, value_name = "FILE")]
    traces: Option<PathBuf>,
    /// Grade these recorded runs in place of the suite's `trajectories:` (a letta-evals
    /// `<model>.jsonl` result file, or any JSONL of `{sample_id, trajectory}` lines), joined to
    /// the dataset by sample id. Repeatable: several files are repeated runs (pass@k).
    #[arg(long, value_name = "FILE", conflicts_with = "traces")]
    trajectories: Vec<PathBuf>,
    /// Output folder [default: the suite's `output`, else results/<suite name>].
    #[arg(short = 'o', long = "output-dir", value_name = "DIR")]
    output_dir: Option<PathBuf>,
    /// Samples graded at once, and judge requests in flight at once across all judges (a
    /// grader's own `concurrency:` may lower it), 1 to 1024 [default: the suite's
    /// `concurrency`, else the number of cores, and each judge's own `concurrency:`].
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u16).range(1..=1024))]
    concurrency: Option<u16>,
    /// Grade at most N samples (after --filter), N at least 1 [default: the suite's
    /// `max_samples`].
    #[arg(long, value_name = "N", value_parser = at_least_one)]
    max_samples: Option<u64>,
    /// Grade only samples whose id or tag matches: `id:X`, `tag:Y`, or a bare value for either.
    /// Repeatable; a sample matching any filter is graded.
    #[arg(long, value_name = "FILTER")]
    filter: Vec<String>,
    /// Grade only shard I of N (I from 0): the samples whose id hashes to it. `gavel merge`
    /// joins the N shards' folders into the run one process would have made.
    #[arg(long, value_name = "I/N", value_parser = Shard::parse)]
    shard: Option<Shard>,
    /// Continue an interrupted run: keep results.jsonl and grade only what is missing.
    #[arg(long, conflicts_with = "overwrite")]
    resume: bool,
    /// Grade again only the errored grades (and samples) of the finished run in the output
    /// folder, keeping every other result. --filter and --max-samples must be the run's.
    #[arg(long, conflicts_with_all = ["resume", "overwrite"])]
    retry_errors: bool,
    /// Replace an unfinished run in the output folder (a finished one is always replaced).
    #[arg(long)]
    overwrite: bool,
    /// Grade the valid rows of a dataset with bad rows; each bad row becomes an error result.
    #[arg(long)]
    skip_invalid: bool,
    /// Do not read or write cached judge replies.
    #[arg(long)]
    no_cache: bool,
    #[command(flatten)]
    output: super::OutputArgs,
    /// After the run, grade N of its samples (chosen by --verify-seed) again with every Python
    /// call in a fresh instance, and report each grade that differs from the run's; any
    /// difference makes the run fail (exit code 1).
    #[arg(long, value_name = "N", value_parser = samples_to_verify, conflicts_with = "retry_errors")]
    verify_isolation: Option<u64>,
    /// The seed that chooses --verify-isolation's samples.
    #[arg(long, value_name = "SEED", default_value_t = gavel::run::DEFAULT_SEED, requires = "verify_isolation")]
    verify_seed: u64,
    #[command(flatten)]
    cache: super::CacheArgs,
}

/// `--max-samples`: a count of samples; 0 would grade nothing, which is not what anyone asks.
fn at_least_one(text: &str) -> Result<u64, CountError> {
    count(text, CountError::Zero)
}

/// `--verify-isolation`: a count of samples; 0 would check none.
fn samples_to_verify(text: &str) -> Result<u64, CountError> {
    count(text, CountError::NoneVerified)
}

/// A count of samples, `zero` the mistake of 0.
fn count(text: &str, zero: CountError) -> Result<u64, CountError> {
    match text.parse::<u64>() {
        Ok(0) => Err(zero),
        Ok(n) => Ok(n),
        Err(e) => Err(CountError::NotWhole(e)),
    }
}

/// Why a value is not a count of samples.
#[derive(Debug, thiserror::Error)]
enum CountError {
    #[error("must be at least 1; leave it out to grade every sample")]
    Zero,
    #[error("must be at least 1; leave it out to check no sample")]
    NoneVerified,
    #[error("not a whole number ({0})")]
    NotWhole(std::num::ParseIntError),
}

pub fn run(mut args: Args) -> super::Status {
    if let Some(traces) = &args.traces {
        let project = match gavel::input::evaldeck_cases::load(&args.suite, traces) {
            Ok(project) => project,
            Err(errors) => return super::report_suite_errors(&errors),
        };
        let named = || gavel::run::default_output_dir(&project.name);
        let Some(out_dir) = args.output_dir.take().or_else(named) else {
            eprintln!(
                "error: {}: the run's folder would be results/{}, named for it, which is no \
                 folder of its own; give the run a folder with -o DIR",
                shown_path(&args.suite),
                printable(&project.name)
            );
            return super::Status::Invalid;
        };
        let run_writes = gavel::run::outputs(&out_dir, args.output.junit.as_deref());
        if let Err(e) = project.refuse_overwriting(&out_dir, run_writes) {
            eprintln!("error: {}", printable_lines(&e.to_string()));
            return super::Status::Invalid;
        }
        match project.write(&out_dir) {
            Ok(suite) => args.suite = suite,
            Err(error) => return super::report_suite_errors(&[error]),
        }
        args.output_dir = Some(out_dir);
    }
    let options = gavel::run::Options {
        cache_dir: args.cache.dir(),
        no_judge_cache: args.no_cache,
        trajectories: args.trajectories.clone(),
        serving: false,
    };
    let prepared = match gavel::run::prepare(&args.suite, &options) {
        Ok(prepared) => prepared,
        Err(errors) => return super::report_suite_errors(&errors),
    };
    // The process ends once the run is written and synced: the suite's packs (their compiled
    // code, and the pool slots whose memory holds their images, each of which dropping them
    // would clear) are given back by its exit, not torn down first.
    let prepared = std::mem::ManuallyDrop::new(prepared);
    if !args.output.quiet {
        for notice in prepared.notices() {
            eprintln!("{}", printable_lines(&notice));
        }
    }
    let options = RunOptions {
        output_dir: args.output_dir.clone(),
        concurrency: args.concurrency.map(usize::from),
        max_samples: args.max_samples,
        filters: args.filter.iter().map(|f| Filter::parse(f)).collect(),
        resume: args.resume,
        overwrite: args.overwrite,
        retry_errors: args.retry_errors,
        skip_invalid: args.skip_invalid,
        junit: args.output.junit.clone(),
        shard: args.shard,
        verify_isolation: args.verify_isolation.map(|samples| VerifyIsolation {
            samples,
            seed: args.verify_seed,
        }),
    };
    let mut shown = Shown {
        failing: Failing::default(),
        progress: None,
        plan: prepared.plan.clone(),
        quiet: args.output.quiet || args.output.json,
    };
    let graded = match gavel::run::run(&prepared, &options, &mut shown) {
        Ok(Outcome::Graded(graded)) => graded,
        Ok(Outcome::Invalid {
            validation,
            not_restored,
        }) => {
            if let Some(e) = not_restored {
                eprintln!("error: {}", printable_lines(&e.to_string()));
            }
            return report_invalid_rows(&validation);
        }
        Err(failure) => return super::report_run_errors(failure.errors()),
    };
    let code = show(&prepared, &graded, &shown.failing, &args.output);
    if code != super::Status::Ok {
        return code;
    }
    if let (Some(shard), Some(_), false) = (args.shard, &prepared.suite.file.gate, shown.quiet) {
        println!("shard {shard}: the gate is applied to the whole run by gavel merge");
    }
    if graded.interrupted && args.retry_errors {
        eprintln!(
            "interrupted: what was not retried keeps its earlier result in {}; retry it with: {}",
            shown_path(&graded.results_path),
            again(&args, &graded.out_dir, "--retry-errors")
        );
    } else if graded.interrupted {
        eprintln!(
            "interrupted: what finished is in {}; resume with: {}",
            shown_path(&graded.results_path),
            again(&args, &graded.out_dir, "--resume")
        );
    }
    status(&graded, args.output.quiet)
}

/// How a run that graded ends, `gavel run`'s and `gavel merge`'s alike: a judge that failed
/// it is an error, Ctrl-C interrupted it, else its gate and isolation check say.
pub(super) fn status(graded: &Graded, quiet: bool) -> super::Status {
    if let Some(failed) = &graded.judge_failed {
        return super::report_run_errors([failed]);
    }
    let isolation_passed = graded
        .isolation
        .as_ref()
        .is_none_or(|check| report_isolation(check, quiet));
    if graded.interrupted {
        super::Status::Interrupted
    } else if graded.gate_passed && isolation_passed {
        super::Status::Ok
    } else {
        super::Status::GateFailed
    }
}

/// Prints a run's summary (or its JSON) and writes its HTML report, as `output` asks; the exit
/// code of a report that could not be written, else [`super::Status::Ok`].
pub(super) fn show(
    prepared: &Prepared,
    graded: &Graded,
    failing: &Failing,
    output: &super::OutputArgs,
) -> super::Status {
    if output.json {
        println!("{}", gavel::terminal::printable_json(&graded.summary_json));
    } else if !output.quiet {
        print_summary(prepared, &graded.summary, failing);
        println!("results: {}", shown_path(&graded.results_path));
    }
    if output.report {
        return super::report::write_run(graded, output.quiet || output.json);
    }
    super::Status::Ok
}

/// Prints what `--verify-isolation` found on stderr (each difference even when `quiet`);
/// whether no grade differed.
fn report_isolation(check: &IsolationCheck, quiet: bool) -> bool {
    let samples = check.samples.len();
    if check.passed() {
        if !quiet {
            eprintln!(
                "isolation verified: {samples} samples (seed {}) graded again in fresh instances \
                 gave the run's grades",
                check.seed
            );
        }
        return true;
    }
    eprintln!(
        "isolation differs: {} grades of {samples} samples (seed {}) graded again in fresh \
         instances differ from the run's (a grader keeps state from sample to sample; \
         `isolation: sample` grades each sample alone):",
        check.differences.len(),
        check.seed
    );
    for difference in &check.differences {
        eprintln!(
            "  grader `{}`, sample {}: batch {}, fresh {}",
            printable(&difference.grader),
            printable(&difference.sample_id.to_string()),
            printable(&difference.batch.to_string()),
            printable(&difference.fresh.to_string())
        );
    }
    false
}

/// What the command line shows while a run grades: progress, and the failing samples it lists
/// at the end.
struct Shown {
    failing: Failing,
    progress: Option<Progress>,
    plan: std::sync::Arc<gavel::plan::Plan>,
    quiet: bool,
}

impl Observer for Shown {
    fn previous(&mut self, result: &SampleResult) {
        self.failing.note(result);
    }

    fn retrying(&mut self, grades: u64, samples: u64) {
        if self.quiet {
            return;
        }
        if samples == 0 {
            eprintln!("nothing to retry: no grade is in error");
        } else {
            eprintln!(
                "retrying {grades} errored grade{} of {samples} sample{}",
                super::plural(grades),
                super::plural(samples)
            );
        }
    }

    fn start(&mut self, total: RowCount, already: u64) {
        self.progress = Some(Progress::new(total, already, self.plan.clone(), self.quiet));
    }

    fn graded(&mut self, result: &SampleResult) {
        self.failing.note(result);
        if let Some(progress) = self.progress.as_mut() {
            progress.record(result);
        }
    }

    fn stopping(&mut self) {
        if let Some(progress) = self.progress.as_mut() {
            progress.stopping();
        }
    }

    fn finish(&mut self, complete: bool) {
        if let Some(progress) = self.progress.as_mut() {
            progress.finish(complete);
        }
    }
}

/// How many failing samples the end-of-run report lists.
const FAILING_LISTED: usize = 5;

/// The first failing or errored samples, for the end-of-run report.
#[derive(Default)]
pub(super) struct Failing {
    samples: Vec<String>,
    more: u64,
}

impl Failing {
    pub(super) fn note(&mut self, result: &SampleResult) {
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
        self.samples.push(format!(
            "{}  {}",
            printable(&result.sample_id.to_string()),
            super::one_line(&why, 100)
        ));
    }
}

/// The command that grades the run in `out_dir` again with `flag` (`--resume`,
/// `--retry-errors`): this one's suite, recorded runs and selection, which it must repeat.
fn again(args: &Args, out_dir: &std::path::Path, flag: &str) -> String {
    let mut command = format!("gavel run {}", shown_path(&args.suite));
    if let Some(traces) = &args.traces {
        command.push_str(&format!(" --traces {}", shown_path(traces)));
    }
    for file in &args.trajectories {
        command.push_str(&format!(" --trajectories {}", shown_path(file)));
    }
    command.push_str(&format!(" {flag} -o {}", shown_path(out_dir)));
    if let Some(shard) = args.shard {
        command.push_str(&format!(" --shard {shard}"));
    }
    for filter in &args.filter {
        command.push_str(&format!(" --filter {}", printable(filter)));
    }
    if let Some(max) = args.max_samples {
        command.push_str(&format!(" --max-samples {max}"));
    }
    command
}

/// A path as it may be shown: a suite's name or a folder's can hold anything.
pub fn shown_path(path: &std::path::Path) -> String {
    printable(&path.display().to_string())
}

pub(super) fn print_summary(prepared: &Prepared, summary: &Summary, failing: &Failing) {
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
        printable(&prepared.suite.file.name),
        c.total,
        c.passed,
        red_if_any(c.failed),
        red_if_any(c.errored)
    );
    let fmt = |v: Option<f64>| v.map_or_else(|| "-".to_string(), |v| format!("{v:.3}"));
    let keys: Vec<String> = summary
        .metrics
        .iter()
        .map(|(key, _)| printable(key))
        .collect();
    let width = keys.iter().map(String::len).max().unwrap_or(6).max(6);
    println!(
        "  {:width$}  {:>7}  {:>9}  {:>17}  {:>8}",
        "metric", "mean", "pass rate", "95% CI (mean)", "n"
    );
    for (key, (_, metric)) in keys.iter().zip(&summary.metrics) {
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
    if summary.interrupted {
        println!(
            "{}: interrupted; these figures are of the samples graded before it, and the gate \
             was not applied",
            paint("partial run", 33)
        );
    }
    if let Some(gate) = &summary.gate {
        println!(
            "gate: {} ({})",
            if gate.passed {
                paint("passed", 32)
            } else {
                paint("FAILED", 31)
            },
            // The message opens with the verdict this line says already.
            printable(gavel::output::gate::reason(&gate.message))
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

pub fn report_invalid_rows(validation: &Validation) -> super::Status {
    for error in &validation.errors {
        eprintln!("error: {}", printable_lines(&error.to_string()));
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
    super::Status::Invalid
}
