//! `gavel validate SUITE`: everything that can be checked without grading.

use std::path::PathBuf;

use gavel::run::engine::Selection;
use gavel::run::{Filter, Options, check_rows, default_workers, prepare};

#[derive(Debug, clap::Args)]
pub struct Args {
    /// The suite file (YAML).
    suite: PathBuf,
    /// Check only the samples `gavel run --filter` would grade, and say how many that is.
    #[arg(long, value_name = "FILTER")]
    filter: Vec<String>,
    #[command(flatten)]
    cache: super::CacheArgs,
}

pub fn run(args: Args) -> u8 {
    let options = Options {
        cache_dir: args.cache.dir(),
        no_judge_cache: true,
    };
    let prepared = match prepare(&args.suite, &options) {
        Ok(prepared) => prepared,
        Err(errors) => return super::report_suite_errors(&errors),
    };
    for notice in prepared.suite.notices() {
        eprintln!("{notice}");
    }
    let selection = Selection {
        filters: args.filter.iter().map(|f| Filter::parse(f)).collect(),
        ..Selection::default()
    };
    let filtered = !selection.filters.is_empty();
    match check_rows(&prepared, selection, default_workers()) {
        Ok(validation) if validation.invalid == 0 => {
            for warning in &validation.warnings {
                eprintln!("warning: {warning}");
            }
            if validation.warned > validation.warnings.len() as u64 {
                eprintln!(
                    "warning: ... and {} more rows like these",
                    validation.warned - validation.warnings.len() as u64
                );
            }
            let selected = if filtered {
                let all = check_rows(&prepared, Selection::default(), default_workers())
                    .map_or(0, |v| v.total);
                format!(
                    " of {all} selected by --filter {}",
                    args.filter.join(" --filter ")
                )
            } else {
                String::new()
            };
            println!(
                "{}: valid ({} metric{}, {} sample{}{selected})",
                args.suite.display(),
                prepared.plan.metrics.len(),
                plural(prepared.plan.metrics.len() as u64),
                validation.total,
                plural(validation.total),
            );
            if validation.total == 0 {
                eprintln!("error: nothing to grade: no sample is selected");
                return super::EXIT_INVALID;
            }
            super::EXIT_OK
        }
        Ok(validation) => super::run::report_invalid_rows(&validation),
        Err(e) => super::report_run_errors(&[e]),
    }
}

fn plural(n: u64) -> &'static str {
    if n == 1 { "" } else { "s" }
}
