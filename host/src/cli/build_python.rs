//! `gavel build-python`: builds the Python interpreter component into the cache now, rather
//! than on the first run of a suite with Python graders (CI and installers run it ahead). The
//! component it writes carries its tag; one already there is kept only when its tag checks out.

use gavel::grade::program::interpreter;

#[derive(Debug, clap::Args)]
pub struct Args {
    #[command(flatten)]
    cache: super::CacheArgs,
}

pub fn run(args: Args) -> super::Status {
    let Some(dir) = args.cache.dir() else {
        return super::Status::Invalid;
    };
    match interpreter::cached(&dir) {
        Ok(component) => {
            println!("{}", component.path.display());
            super::Status::Ok
        }
        Err(e) => {
            eprintln!(
                "error: {}",
                gavel::terminal::printable_lines(&e.to_string())
            );
            super::Status::Invalid
        }
    }
}
