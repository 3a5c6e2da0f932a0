//! `gavel validate SUITE`: everything that can be checked without grading.

use std::path::PathBuf;

use gavel::run::engine::Selection;
use gavel::run::{Options, check_rows, default_workers, prepare};

#[derive(Debug, clap::Args)]
pub struct Args {
    /// The suite file (YAML).
    suite: PathBuf,
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
    match check_rows(&prepared, Selection::default(), default_workers()) {
        Ok(validation) if validation.invalid == 0 => {
            println!(
                "{}: valid ({} metric{}, {} sample{})",
                args.suite.display(),
                prepared.plan.metrics.len(),
                plural(prepared.plan.metrics.len() as u64),
                validation.total,
                plural(validation.total),
            );
            super::EXIT_OK
        }
        Ok(validation) => super::run::report_invalid_rows(&validation),
        Err(e) => super::report_run_errors(&[e]),
    }
}

fn plural(n: u64) -> &'static str {
    if n == 1 { "" } else { "s" }
}
