//! The `gavel` command line.

mod cli;

use std::process::ExitCode;

/// Grading allocates and frees a few small strings per event of every trajectory, from several
/// threads at once: mimalloc's thread-local free lists serve that pattern with markedly fewer
/// instructions than the system allocator (measured in bench/README.md).
#[global_allocator]
static ALLOCATOR: gavel::alloc::MiMalloc = gavel::alloc::MiMalloc;

/// `mi_option_purge_delay` in mimalloc's `mimalloc.h` (libmimalloc-sys names no constant for
/// it); the test below checks it is the option whose default is 1000 ms.
const PURGE_DELAY: libmimalloc_sys::mi_option_t = 15;

/// How long mimalloc keeps freed memory before returning it to the system, in milliseconds. At
/// its default, a second, a long run's footprint creeps up: pages freed in one place stay
/// resident while fresh ones are taken elsewhere. A tenth of that holds a long run near a short
/// one's peak at no cost in throughput (bench/README.md, tenth profile). The `no_thp` build
/// feature keeps the heap out of 2 MiB huge pages, in which every touched region counts whole.
const PURGE_DELAY_MS: std::ffi::c_long = 100;

fn main() -> ExitCode {
    // SAFETY: sets an integer option, which mimalloc reads whenever it purges; nothing else
    // runs yet.
    #[allow(unsafe_code)]
    unsafe {
        libmimalloc_sys::mi_option_set(PURGE_DELAY, PURGE_DELAY_MS);
    }
    // The hidden subcommand that compiles one pack under a memory cap (gavel::grade::pack::compile).
    let mut args = std::env::args_os().skip(1);
    if args.next().as_deref() == Some(std::ffi::OsStr::new(gavel::grade::pack::COMPILE_SUBCOMMAND))
    {
        let memory_mb = args.next().unwrap_or_default();
        return compile_pack(&memory_mb.to_string_lossy());
    }
    if let Ok(executable) = std::env::current_exe() {
        gavel::grade::pack::compile_in_child_processes(executable);
    }
    cli::main()
}

/// `gavel __compile-pack MEMORY_MB`: a component on stdin compiled to stdout, its failure said on
/// stderr and in the exit code its parent reads.
fn compile_pack(memory_mb: &str) -> ExitCode {
    match gavel::grade::pack::child_compile(memory_mb, std::io::stdin(), std::io::stdout().lock()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(failure) => {
            if let Some(message) = failure.message {
                eprintln!("{message}");
            }
            ExitCode::from(failure.code)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Reads an option of the allocator; the tests run under it too.
    #[allow(unsafe_code)]
    fn option(option: libmimalloc_sys::mi_option_t) -> std::ffi::c_long {
        // SAFETY: reads an integer option.
        unsafe { libmimalloc_sys::mi_option_get(option) }
    }

    #[test]
    fn the_purge_delay_is_the_option_it_is_said_to_be() {
        // purge_delay defaults to 1000 ms, and its neighbours differ: eager_commit_delay (14) is
        // deprecated at 1 and use_numa_nodes (16) is 0.
        assert_eq!(option(PURGE_DELAY), 1000);
        assert_ne!(option(PURGE_DELAY - 1), 1000);
        assert_ne!(option(PURGE_DELAY + 1), 1000);
    }

    #[test]
    fn transparent_huge_pages_are_off() {
        /// `mi_option_allow_thp`.
        const ALLOW_THP: libmimalloc_sys::mi_option_t = 44;
        assert_eq!(option(ALLOW_THP), 0);
    }
}
