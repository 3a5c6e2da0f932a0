//! The `gavel` command line.

mod cli;

use std::process::ExitCode;

/// Grading allocates and frees a few small strings per event of every trajectory, from several
/// threads at once: mimalloc's thread-local free lists serve that pattern with markedly fewer
/// instructions than the system allocator (measured in bench/README.md).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> ExitCode {
    cli::main()
}
