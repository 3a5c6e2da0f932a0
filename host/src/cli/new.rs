//! `gavel new pack NAME --lang LANG`: a pack folder that builds and passes its suite at once.

use std::path::PathBuf;

use clap::builder::PossibleValuesParser;
use gavel::scaffold::{self, NewPack};

#[derive(Debug, clap::Args)]
pub struct Args {
    #[command(subcommand)]
    what: What,
}

#[derive(Debug, clap::Subcommand)]
enum What {
    /// A grader pack: source, build script, suite, dataset. `./build.sh && gavel run
    /// suite.yaml` in the new folder builds it and passes the suite's gate.
    Pack(PackArgs),
}

#[derive(Debug, clap::Args)]
struct PackArgs {
    /// The pack's name: the folder's name and the name suites use (`function: NAME.<fn>`).
    /// Lowercase letters, digits, `-` and `_`, starting with a letter.
    name: String,
    /// The language of the pack's source. Each pack's build.sh installs what it lacks: rust the
    /// wasm32-wasip2 target (rustup), c clang and wasi-libc (apt) and wasm-tools (PyPI),
    /// python componentize-py (PyPI), js componentize-js (npm); the last two once per user, in
    /// a toolchain folder all packs share (README.md in the new pack says where).
    #[arg(long, default_value = "rust", value_parser = PossibleValuesParser::new(scaffold::languages()))]
    lang: String,
    /// The folder to create the pack folder in.
    #[arg(long, value_name = "DIR", default_value = ".")]
    dir: PathBuf,
    /// For `--lang rust`: a Rust guest SDK folder (`guest-sdk/` of a gavel checkout) for the
    /// pack to depend on, by path [default: a copy of the SDK that comes with gavel, written
    /// into the pack as gavel-guest/].
    #[arg(long, value_name = "DIR")]
    sdk: Option<PathBuf>,
}

pub fn run(args: Args) -> super::Status {
    let What::Pack(args) = args.what;
    let request = NewPack {
        name: &args.name,
        language: &args.lang,
        parent: &args.dir,
        sdk: args.sdk.as_deref(),
    };
    let created = match scaffold::create(&request) {
        Ok(created) => created,
        Err(e) => {
            eprintln!("error: {e}");
            return super::Status::Invalid;
        }
    };
    let ident = args.name.replace('-', "_");
    println!(
        "Created the {} pack `{}` in {}:",
        args.lang,
        args.name,
        created.dir.display()
    );
    for file in &created.files {
        println!("  {file}");
    }
    println!();
    println!("Next:");
    println!("  cd {}", created.dir.display());
    println!("  ./build.sh              # builds build/{ident}.wasm (README.md: what it needs)");
    println!("  gavel run suite.yaml    # grades dataset.jsonl; exits 0 when the gate passes");
    println!("Then change the graders, the dataset and the suite: README.md walks through it.");
    super::Status::Ok
}
