//! `gavel inspect PACK`: what a component provides and which WIT version it implements.

use std::path::{Path, PathBuf};

#[derive(Debug, clap::Args)]
pub struct Args {
    /// The pack component (.wasm).
    pack: PathBuf,
}

pub fn run(args: Args) -> u8 {
    list_pack(&args.pack, true)
}

pub fn list_pack(path: &Path, _graders: bool) -> u8 {
    eprintln!("error: {}: packs are not available yet", path.display());
    super::EXIT_INVALID
}
