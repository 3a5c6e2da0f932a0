//! `gavel diff BASE_DIR CANDIDATE_DIR`: what changed between two runs, with paired tests, and
//! exit 1 when a metric named by `--fail-on` regressed significantly. Runs that pair no sample,
//! or whose `run.json` name different suites or datasets, are refused (exit 2): a gate against
//! the wrong baseline would pass on nothing. A gate fails too on a metric no sample is graded
//! on in both runs, and on a run whose `run.json` says it is unfinished: it does not pass on
//! part of a run.

use std::path::{Path, PathBuf};

use gavel::output::diff::{self, Diff, Flip, decimals};
use gavel::output::record::RunRecord;
use gavel::output::report::{Options, p_value};
use gavel::terminal::{printable, printable_lines};

use super::progress::paint;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// The earlier run: the folder `gavel run` wrote, or its results.jsonl.
    base: PathBuf,
    /// The later run, compared with the base.
    candidate: PathBuf,
    /// Exit 1 when METRIC regressed significantly (its pass rate by McNemar's test or its mean
    /// by a paired t-test). Repeatable.
    #[arg(long, value_name = "METRIC")]
    fail_on: Vec<String>,
    /// Significance level of the tests; the intervals are at 1 - ALPHA.
    #[arg(long, value_name = "ALPHA", default_value_t = 0.05)]
    alpha: f64,
    /// Also write the candidate's report with this comparison in it to FILE.
    #[arg(long, value_name = "FILE")]
    html: Option<PathBuf>,
    /// Print the comparison as JSON on stdout.
    #[arg(long)]
    json: bool,
    /// Flipped samples listed per metric and direction.
    #[arg(long, value_name = "N", default_value_t = 10)]
    show: usize,
    /// Compare runs that pair no sample, or that ran different suites or datasets, instead of
    /// refusing them.
    #[arg(long)]
    allow_unpaired: bool,
}

/// The results file of a run given as its folder or as the file itself.
fn results_file(path: &Path) -> PathBuf {
    if path.is_dir() {
        path.join(gavel::output::RESULTS_FILE)
    } else {
        path.to_path_buf()
    }
}

/// The folder of a run given as its folder or as its results file (`.` for a results file
/// named without a folder).
fn run_dir(path: &Path) -> PathBuf {
    if path.is_dir() {
        return path.to_path_buf();
    }
    match path.parent() {
        Some(parent) if !parent.as_os_str().is_empty() => parent.to_path_buf(),
        _ => PathBuf::from("."),
    }
}

/// The `run.json` of the base and of the candidate, when they have one; prints why one cannot
/// be read, and returns the exit code.
fn records(args: &Args) -> Result<[Option<RunRecord>; 2], super::Status> {
    let read = |run: &Path| {
        RunRecord::read(&run_dir(run)).map_err(|message| {
            eprintln!("error: {message}");
            super::Status::Invalid
        })
    };
    Ok([read(&args.base)?, read(&args.candidate)?])
}

/// What to say of the base and the candidate that are unfinished runs.
fn unfinished(args: &Args, records: &[Option<RunRecord>; 2]) -> Vec<String> {
    [&args.base, &args.candidate]
        .into_iter()
        .zip(records)
        .filter_map(|(run, record)| record.as_ref()?.unfinished_notice(&run_dir(run)))
        .collect()
}

/// Whether the runs are worth comparing: prints why not, and returns the exit code when they
/// are refused.
fn check_pairing(
    args: &Args,
    diff: &Diff,
    records: &[Option<RunRecord>; 2],
) -> Result<(), super::Status> {
    let reasons = diff::mismatches(diff, records[0].as_ref(), records[1].as_ref());
    if reasons.is_empty() {
        return Ok(());
    }
    let said = format!(
        "{} and {} paired {} of {} base and {} candidate samples: {}",
        args.base.display(),
        args.candidate.display(),
        diff.shared,
        diff.base_rows,
        diff.candidate_rows,
        reasons.join("; ")
    );
    if args.allow_unpaired {
        eprintln!("warning: {said}; compared anyway (--allow-unpaired)");
        return Ok(());
    }
    eprintln!(
        "error: {said}\n  compare two runs of one suite over one dataset, or give \
         --allow-unpaired to compare these anyway"
    );
    Err(super::Status::Invalid)
}

pub fn run(args: Args) -> super::Status {
    if !(args.alpha > 0.0 && args.alpha < 0.5) {
        eprintln!(
            "error: --alpha {}: give a significance level between 0 and 0.5, such as 0.05",
            args.alpha
        );
        return super::Status::Invalid;
    }
    let diff = match diff::compare(
        &results_file(&args.base),
        &results_file(&args.candidate),
        1.0 - args.alpha,
    ) {
        Ok(diff) => diff,
        Err(message) => {
            eprintln!("error: {}", printable_lines(&message.to_string()));
            return super::Status::Invalid;
        }
    };
    let records = match records(&args) {
        Ok(records) => records,
        Err(status) => return status,
    };
    if let Err(status) = check_pairing(&args, &diff, &records) {
        return status;
    }
    for metric in &args.fail_on {
        if diff.metric(metric).is_none() {
            let known: Vec<&str> = diff.metrics.iter().map(|m| m.metric.as_str()).collect();
            eprintln!(
                "error: --fail-on {}: no such metric in both runs; they share: {}",
                printable(metric),
                printable(&known.join(", "))
            );
            return super::Status::Invalid;
        }
    }
    let unfinished = unfinished(&args, &records);
    if args.fail_on.is_empty() {
        for notice in &unfinished {
            eprintln!(
                "warning: {}; until then it is compared on what it graded",
                printable(notice)
            );
        }
    }
    if args.json {
        match serde_json::to_string_pretty(&diff) {
            Ok(text) => println!("{}", gavel::terminal::printable_json(&text)),
            Err(e) => {
                eprintln!("error: cannot render the comparison: {e}");
                return super::Status::Invalid;
            }
        }
    } else {
        print(&diff, args.show);
    }
    if let Some(html) = &args.html {
        let dir = run_dir(&args.candidate);
        let inputs = match super::report::inputs(&dir, None) {
            Ok(inputs) => inputs,
            Err(message) => {
                eprintln!("error: {}", printable_lines(&message.to_string()));
                return super::Status::Invalid;
            }
        };
        let options = Options {
            limit: gavel::output::report::DEFAULT_LIMIT,
            title: None,
        };
        let output = gavel::fsio::Written {
            what: "the report".into(),
            path: html.clone(),
            flag: "--html",
        };
        // The report is of the candidate's folder, whose files it checks itself; the runs
        // compared were read from these.
        let compared = [("base", &args.base), ("candidate", &args.candidate)]
            .map(|(which, run)| (format!("the {which} run's results"), results_file(run)));
        let base = gavel::output::run_files(&run_dir(&args.base))
            .map(|(what, path)| (format!("the base run's {what}"), path));
        let reads = Vec::from_iter(compared.into_iter().chain(base));
        let code = super::report::write(
            &dir,
            inputs.as_ref(),
            Some(&diff),
            &options,
            &output,
            &reads,
            false,
        );
        if code != super::Status::Ok {
            return code;
        }
    }
    gate(&args, &diff, &unfinished)
}

/// The `--fail-on` gate: it fails, saying why, on an unfinished run, on a metric no sample is
/// graded on in both runs, and on a metric that regressed.
fn gate(args: &Args, diff: &Diff, unfinished: &[String]) -> super::Status {
    if args.fail_on.is_empty() {
        return super::Status::Ok;
    }
    let mut failed = false;
    for notice in unfinished {
        eprintln!("gate failed: {}, then compare again", printable(notice));
        failed = true;
    }
    let gated = || args.fail_on.iter().filter_map(|m| diff.metric(m));
    for metric in gated() {
        if let Some(why) = metric.ungraded() {
            eprintln!("gate failed: {}: {why}", printable(&metric.metric));
            failed = true;
        }
    }
    let regressed: Vec<&str> = gated()
        .filter(|m| m.regressed)
        .map(|m| m.metric.as_str())
        .collect();
    if !regressed.is_empty() {
        eprintln!("regressed: {}", printable(&regressed.join(", ")));
        failed = true;
    }
    if failed {
        super::Status::GateFailed
    } else {
        super::Status::Ok
    }
}

fn fmt(value: Option<f64>) -> String {
    value.map_or_else(|| "-".into(), |v| decimals(v, false))
}

fn print(diff: &Diff, show: usize) {
    let level = format!("{:.0}% CI", diff.level * 100.0);
    println!(
        "{} base rows, {} candidate rows, {} paired ({} only in base, {} only in candidate)",
        diff.base_rows, diff.candidate_rows, diff.shared, diff.only_in_base, diff.only_in_candidate
    );
    let names: Vec<String> = diff.metrics.iter().map(|m| printable(&m.metric)).collect();
    let width = names.iter().map(String::len).max().unwrap_or(6).max(6);
    println!(
        "  {:width$}  {:>6}  {:>13}  {:>7}  {:>18}  {:>7}  {:>15}  {:>4}  {:>4}  {:>9}",
        "metric", "pairs", "mean", "change", level, "p", "pass rate", "p>f", "f>p", "McNemar p"
    );
    for (name, m) in names.iter().zip(&diff.metrics) {
        let interval = m.mean_change.interval.map_or_else(
            || "-".into(),
            |[a, b]| format!("[{}, {}]", decimals(a, true), decimals(b, true)),
        );
        let rate = |v: Option<f64>| v.map_or_else(|| "-".into(), |v| format!("{:.1}%", 100.0 * v));
        let verdict = if m.regressed {
            paint("REGRESSED", 31)
        } else if m.improved {
            paint("improved", 32)
        } else {
            String::new()
        };
        println!(
            "  {name:width$}  {:>6}  {:>13}  {:>7}  {interval:>18}  {:>7}  {:>15}  {:>4}  {:>4}  {:>9}  {verdict}",
            m.pairs,
            format!("{} -> {}", fmt(m.base.mean), fmt(m.candidate.mean)),
            decimals(m.mean_change.mean, true),
            m.mean_change.p_value.map_or_else(|| "-".into(), p_value),
            format!(
                "{} -> {}",
                rate(m.base.pass_rate),
                rate(m.candidate.pass_rate)
            ),
            m.pass_to_fail,
            m.fail_to_pass,
            p_value(m.mcnemar_p),
        );
    }
    for (name, m) in names.iter().zip(&diff.metrics) {
        if !m.mean_change.measured() {
            println!(
                "  {name}: the change is not a finite number (scores too large to add up?), \
                 so it counts as regressed"
            );
        }
    }
    for key in &diff.only_base_metrics {
        println!("  {}: only in the base run", printable(key));
    }
    for key in &diff.only_candidate_metrics {
        println!("  {}: only in the candidate run", printable(key));
    }
    for (name, m) in names.iter().zip(&diff.metrics) {
        list(
            name,
            "pass -> fail",
            m.pass_to_fail,
            &m.flipped_to_fail,
            show,
        );
        list(
            name,
            "fail -> pass",
            m.fail_to_pass,
            &m.flipped_to_pass,
            show,
        );
    }
}

fn list(metric: &str, title: &str, total: u64, flips: &[Flip], show: usize) {
    if total == 0 || show == 0 {
        return;
    }
    println!("{metric}: {total} {title}:");
    for flip in flips.iter().take(show) {
        let run = if flip.run > 0 {
            format!(" (run {})", flip.run + 1)
        } else {
            String::new()
        };
        println!(
            "  {}{run}  {}",
            printable(&flip.sample_id.to_string()),
            super::one_line(&flip.rationale, 100)
        );
    }
    if total as usize > show.min(flips.len()) {
        println!("  ... and {} more", total as usize - show.min(flips.len()));
    }
}
