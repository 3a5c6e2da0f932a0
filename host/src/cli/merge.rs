//! `gavel merge DIR... -o OUT`: the folders of a run's shards joined into the run one process
//! would have made; printed, gated and exited as `gavel run` does.

use std::path::PathBuf;

use gavel::run::{Observer, Shards};

use super::run::{Failing, show, status};

#[derive(Debug, clap::Args)]
pub struct Args {
    /// The output folders of `gavel run SUITE --shard I/N`, one for each I from 0 to N - 1, in
    /// any order.
    #[arg(required = true, value_name = "DIR")]
    shards: Vec<PathBuf>,
    /// The folder to write the merged run to.
    #[arg(short = 'o', long = "output-dir", value_name = "DIR")]
    output_dir: PathBuf,
    /// Replace an unfinished run, or results without a run's record, in the output folder (a
    /// finished run is always replaced).
    #[arg(long)]
    overwrite: bool,
    #[command(flatten)]
    output: super::OutputArgs,
    #[command(flatten)]
    cache: super::CacheArgs,
}

pub fn run(args: Args) -> super::Status {
    let shards = match Shards::read(&args.shards) {
        Ok(shards) => shards,
        Err(failure) => return super::report_run_errors(failure.errors()),
    };
    let record = shards.record();
    let options = gavel::run::Options {
        cache_dir: args.cache.dir(),
        no_judge_cache: false,
        trajectories: record.trajectories.clone(),
        serving: false,
    };
    let prepared = match gavel::run::prepare(&record.suite, &options) {
        Ok(prepared) => prepared,
        Err(errors) => return super::report_suite_errors(&errors),
    };
    let mut failing = Noted(Failing::default());
    let graded = match gavel::run::merge(
        &prepared,
        &shards,
        &args.output_dir,
        args.overwrite,
        args.output.junit.as_deref(),
        &mut failing,
    ) {
        Ok(graded) => graded,
        Err(failure) => return super::report_run_errors(failure.errors()),
    };
    let code = show(&prepared, &graded, &failing.0, &args.output);
    if code != super::Status::Ok {
        return code;
    }
    status(&graded, args.output.quiet)
}

/// The failing samples of the merged results, for the summary.
struct Noted(Failing);

impl Observer for Noted {
    fn previous(&mut self, result: &gavel::output::result::SampleResult) {
        self.0.note(result);
    }
    fn retrying(&mut self, _: u64, _: u64) {}
    fn start(&mut self, _: gavel::input::dataset::RowCount, _: u64) {}
    fn graded(&mut self, result: &gavel::output::result::SampleResult) {
        self.0.note(result);
    }
    fn stopping(&mut self) {}
    fn finish(&mut self, _: bool) {}
}
