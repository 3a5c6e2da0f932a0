//! `gavel validate SUITE`: everything that can be checked without grading.

use std::path::PathBuf;

use gavel::run::engine::Selection;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// The suite file (YAML).
    suite: PathBuf,
    #[command(flatten)]
    cache: super::CacheArgs,
}

pub fn run(args: Args) -> u8 {
    let options = gavel::run::setup::Options {
        cache_dir: args.cache.dir(),
        no_judge_cache: true,
    };
    let prepared = match gavel::run::setup::prepare(&args.suite, &options) {
        Ok(prepared) => prepared,
        Err(errors) => return super::report_suite_errors(&errors),
    };
    for notice in prepared.suite.notices() {
        eprintln!("{notice}");
    }
    match super::run::check_rows(&prepared, Selection::default(), workers()) {
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
        Err(code) => code,
    }
}

fn plural(n: u64) -> &'static str {
    if n == 1 { "" } else { "s" }
}

fn workers() -> usize {
    super::run::default_workers()
}
