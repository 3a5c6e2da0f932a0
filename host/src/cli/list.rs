//! `gavel list graders|extractors [--pack FILE]`.

use std::path::PathBuf;

use gavel::grade::builtin::{Described, OTHER_KINDS, evaldeck, letta::Function};
use gavel::grade::extract::Extractor;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// What to list.
    #[arg(value_enum)]
    what: What,
    /// List the functions of this pack component instead of the built-ins.
    #[arg(long, value_name = "FILE")]
    pack: Option<PathBuf>,
    #[command(flatten)]
    cache: super::CacheArgs,
}

#[derive(Debug, Clone, Copy, clap::ValueEnum)]
enum What {
    Graders,
    Extractors,
}

pub fn run(args: Args) -> super::Status {
    if let Some(path) = args.pack {
        return super::inspect::list_pack(&path, matches!(args.what, What::Graders), &args.cache);
    }
    let sections: Vec<(&str, Vec<Described>)> = match args.what {
        What::Graders => vec![
            (
                "kind: tool, letta-evals functions (grade the extracted submission)",
                Function::BUILTINS.to_vec(),
            ),
            (
                "kind: tool, evaldeck checks (read the whole trajectory; `config:` or the sample's `expected:`)",
                evaldeck::CHECKS.iter().map(|c| c.described).collect(),
            ),
            ("other kinds", OTHER_KINDS.to_vec()),
        ],
        What::Extractors => vec![("extractors", Extractor::BUILTINS.to_vec())],
    };
    for (title, items) in sections {
        println!("{title}:");
        super::table::print_table(items.iter().map(|d| (d.name, d.description)));
    }
    super::Status::Ok
}
