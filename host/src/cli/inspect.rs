//! `gavel inspect PACK`: what a component provides and which WIT version it implements.

use std::path::{Path, PathBuf};

use gavel::grade::pack::{FunctionKind, PackError, PackHost, PackInfo};
use gavel::terminal::printable_lines;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// The pack component (.wasm).
    pack: PathBuf,
    #[command(flatten)]
    cache: super::CacheArgs,
}

pub fn run(args: Args) -> super::Status {
    match inspect(&args.pack, &args.cache) {
        Ok(info) => {
            print!("{}", printable_lines(&info.to_string()));
            super::Status::Ok
        }
        Err(e) => {
            eprintln!("error: {}", printable_lines(&e.to_string()));
            super::Status::Invalid
        }
    }
}

/// `gavel list graders|extractors --pack FILE`: the pack's functions of that kind.
pub fn list_pack(path: &Path, graders: bool, cache: &super::CacheArgs) -> super::Status {
    let info = match inspect(path, cache) {
        Ok(info) => info,
        Err(e) => {
            eprintln!("error: {}", printable_lines(&e.to_string()));
            return super::Status::Invalid;
        }
    };
    let wanted = if graders {
        FunctionKind::Grader
    } else {
        FunctionKind::Extractor
    };
    println!(
        "{} {} (gavel:grader@{}), used as `{}.<name>` under `packs:`:",
        info.name, info.version, info.wit_version, info.name
    );
    let rows: Vec<(&str, &str)> = info
        .functions
        .iter()
        .filter(|f| f.kind == wanted)
        .map(|f| (f.name.as_str(), f.description.as_str()))
        .collect();
    super::table::print_table(rows.into_iter());
    super::Status::Ok
}

/// Through the compiled-pack cache when its folder can be used, else compiled in memory (with
/// a warning saying why).
fn inspect(path: &Path, cache: &super::CacheArgs) -> Result<PackInfo, PackError> {
    let host = match cache.dir() {
        Some(dir) => PackHost::new(&dir),
        None => Ok(PackHost::uncached()),
    };
    match host {
        Ok(host) => host.inspect(path),
        Err(PackError::CacheDir(e)) => {
            eprintln!("warning: {e}; the pack is compiled without the cache");
            PackHost::uncached().inspect(path)
        }
        Err(e) => Err(e),
    }
}
