//! `gavel list graders|extractors [--pack FILE]`.

use std::path::PathBuf;

use gavel::grade::registry::Family;

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
    let families: &[Family] = match args.what {
        What::Graders => &Family::GRADERS,
        What::Extractors => &[Family::Extractor],
    };
    for family in families {
        println!("{}:", family.title());
        let members = family.members();
        super::table::print_table(members.iter().map(|d| (d.name, d.description)));
    }
    super::Status::Ok
}
