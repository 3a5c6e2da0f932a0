//! Subcommands, one file each; `main` maps outcomes to the documented exit codes.

mod build_python;
mod diff;
mod inspect;
mod list;
mod merge;
mod new;
mod progress;
mod report;
mod run;
mod serve;
mod table;
mod validate;

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};
use gavel::terminal::{printable, printable_lines};

/// How a command ended, and the one place each ending gets its exit code (SPEC section 8).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Status {
    /// Done, and the gate (if any) passed.
    Ok,
    /// The run finished and the gate failed.
    GateFailed,
    /// Nothing could be done as asked: an invalid suite, dataset or argument, a failed write.
    Invalid,
    /// Stopped by Ctrl-C; what finished is written and `--resume` continues.
    Interrupted,
}

impl Status {
    pub fn code(self) -> u8 {
        match self {
            Status::Ok => 0,
            Status::GateFailed => 1,
            Status::Invalid => 2,
            // 128 + SIGINT, as shells report it.
            Status::Interrupted => 130,
        }
    }
}

#[derive(Debug, Parser)]
#[command(
    name = "gavel",
    version = concat!(env!("CARGO_PKG_VERSION"), " (", env!("GAVEL_COMMIT"), ")"),
    about = "Grade recorded AI-agent runs with built-in and sandboxed WebAssembly graders",
    propagate_version = true
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Grade a suite's dataset and write results.jsonl and summary.json.
    Run(run::Args),
    /// Join the folders of a run's shards (`gavel run --shard I/N`) into the run's folder.
    Merge(merge::Args),
    /// Check a suite without grading: schema, files, names, configs, packs, regexes, rows.
    Validate(validate::Args),
    /// List the built-in graders or extractors, or those of a pack.
    List(list::Args),
    /// Show what a pack component provides and which WIT version it implements.
    Inspect(inspect::Args),
    /// Create a grader pack from a template: `gavel new pack NAME --lang rust|c|python|js`.
    New(new::Args),
    /// Write a run's results as one self-contained HTML report (summary, samples, trajectories).
    Report(report::Args),
    /// Compare two runs: per-metric changes with paired tests, and the samples that flipped.
    Diff(diff::Args),
    /// Grade over HTTP: suites loaded once, rows posted, results answered (see README, "Serve
    /// grades").
    Serve(serve::Args),
    /// Build the Python graders' interpreter into the cache now, not on first need; print its path.
    BuildPython(build_python::Args),
}

/// How a command that grades shows its run, and the reports it also writes.
#[derive(Debug, clap::Args)]
pub struct OutputArgs {
    /// Print the summary as JSON on stdout.
    #[arg(long)]
    pub json: bool,
    /// Print nothing but errors.
    #[arg(short, long)]
    pub quiet: bool,
    /// Also write a JUnit XML report (one testcase per sample) to FILE.
    #[arg(long, value_name = "FILE")]
    pub junit: Option<PathBuf>,
    /// Also write OUTPUT_DIR/report.html: the run as one self-contained HTML file.
    #[arg(long)]
    pub report: bool,
}

/// Flags shared by commands that load a suite.
#[derive(Debug, clap::Args)]
pub struct CacheArgs {
    /// Folder for compiled packs and cached judge replies [default: $GAVEL_CACHE_DIR,
    /// $XDG_CACHE_HOME/gavel or ~/.cache/gavel].
    #[arg(long, value_name = "DIR")]
    pub cache_dir: Option<PathBuf>,
}

impl CacheArgs {
    /// The cache folder, or none (with a notice) when neither the flag nor the environment
    /// names one.
    pub fn dir(&self) -> Option<PathBuf> {
        let dir = self
            .cache_dir
            .clone()
            .or_else(gavel::run::default_cache_dir);
        if dir.is_none() {
            eprintln!(
                "notice: no cache folder (set --cache-dir, GAVEL_CACHE_DIR, XDG_CACHE_HOME or \
                 HOME): packs are compiled on every run and judge replies are not cached"
            );
        }
        dir
    }
}

pub fn main() -> ExitCode {
    let cli = Cli::parse();
    gavel::notice::set_receiver(|notice| eprintln!("{notice}"));
    // A second Ctrl-C ends the run at once, once what finished is written.
    gavel::run::on_second_ctrl_c(|| std::process::exit(Status::Interrupted.code().into()));
    let status = match cli.command {
        Command::Run(args) => run::run(args),
        Command::Merge(args) => merge::run(args),
        Command::Validate(args) => validate::run(args),
        Command::List(args) => list::run(args),
        Command::Inspect(args) => inspect::run(args),
        Command::New(args) => new::run(args),
        Command::Report(args) => report::run(args),
        Command::Diff(args) => diff::run(args),
        Command::BuildPython(args) => build_python::run(args),
        Command::Serve(args) => serve::run(args),
    };
    ExitCode::from(status.code())
}

/// The `s` of a plural count.
fn plural(n: u64) -> &'static str {
    if n == 1 { "" } else { "s" }
}

/// `text` on one line of at most `width` characters (then `...`): line breaks and tabs as
/// spaces, other characters that steer a terminal [`printable`].
pub fn one_line(text: &str, width: usize) -> String {
    let flat: String = text
        .chars()
        .map(|c| {
            if c.is_control() && c.is_whitespace() {
                ' '
            } else {
                c
            }
        })
        .collect();
    let flat = printable(&flat);
    if flat.chars().count() <= width {
        flat
    } else {
        let cut: String = flat.chars().take(width).collect();
        format!("{cut}...")
    }
}

/// Prints what stopped a run, in the order it happened, and returns the exit code for it.
pub fn report_run_errors<'e>(errors: impl IntoIterator<Item = &'e gavel::run::RunError>) -> Status {
    for error in errors {
        eprintln!("error: {}", printable_lines(&error.to_string()));
    }
    Status::Invalid
}

/// Prints every suite error and returns the exit code for an invalid suite.
pub fn report_suite_errors(errors: &[gavel::config::suite::SuiteError]) -> Status {
    for error in errors {
        eprintln!("error: {}", printable_lines(&error.to_string()));
    }
    let n = errors.len();
    eprintln!("{n} problem{} found; nothing was graded", plural(n as u64));
    Status::Invalid
}

#[cfg(test)]
mod tests {
    use clap::CommandFactory;

    #[test]
    fn cli_definition_is_consistent() {
        super::Cli::command().debug_assert();
    }
}
