//! Compiling a pack under a deadline and a memory cap.
//!
//! Some small components take minutes and gigabytes to compile (components nested to instantiate
//! their children twice over, a function with thousands of locals round a loop), and a
//! compilation cannot be interrupted from the outside. So the `gavel` binary compiles each pack
//! in a child process of itself (`gavel __compile-pack`): the child caps its own address space
//! before it reads the pack, and the parent kills it at the deadline. The child hands back the
//! compiled artifact, which the parent deserializes as it would one from the cache.
//!
//! A library user that does not call [`compile_in_child_processes`] compiles in its own
//! process, without these bounds.

use std::io::{Read, Write};
use std::os::unix::process::ExitStatusExt;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use wasmtime::Engine;

use super::PackError;

/// The largest pack file read: an interpreter compiled to a component (Python, JavaScript) is
/// about 20 MiB.
pub(super) const MAX_PACK_BYTES: u64 = 256 << 20;

/// A pack file that passed the checks that need no compilation.
pub(super) struct PackFile {
    pub(super) path: PathBuf,
    pub(super) bytes: Vec<u8>,
    /// Lowercase hex SHA-256 of the file.
    pub(super) sha256: String,
}

/// The hidden subcommand that runs [`child_compile`].
pub const COMPILE_SUBCOMMAND: &str = "__compile-pack";

/// Wall-clock limit of one compilation, in seconds, unless `GAVEL_COMPILE_TIMEOUT_S` sets it:
/// a Python or JavaScript interpreter takes 10 to 40 s on two idle cores, and several times that
/// on a loaded machine compiling several at once; a compile bomb ran on without end.
pub const DEFAULT_COMPILE_TIMEOUT_S: u64 = 600;
/// Address space of the compiling process, in MiB, unless `GAVEL_COMPILE_MEMORY_MB` sets it.
pub const DEFAULT_COMPILE_MEMORY_MB: u64 = 4_096;

/// The largest compiled artifact a child may hand back.
const MAX_ARTIFACT_BYTES: u64 = 1 << 30;
/// How much of a failed child's stderr a message keeps.
const STDERR_KEPT: u64 = 4 << 10;

static COMPILER: OnceLock<PathBuf> = OnceLock::new();

/// From now on, packs are compiled by `executable __compile-pack` (the `gavel` binary: its
/// `main` must call [`child_compile`] for that subcommand).
pub fn compile_in_child_processes(executable: PathBuf) {
    let _ = COMPILER.set(executable);
}

/// The bounds of one compilation.
#[derive(Debug, Clone, Copy)]
struct Bounds {
    timeout_s: u64,
    memory_mb: u64,
}

impl Bounds {
    fn from_env() -> Bounds {
        let read = |name: &str, default: u64| {
            std::env::var(name)
                .ok()
                .and_then(|v| v.trim().parse::<u64>().ok())
                .filter(|v| *v > 0)
                .unwrap_or(default)
        };
        Bounds {
            timeout_s: read("GAVEL_COMPILE_TIMEOUT_S", DEFAULT_COMPILE_TIMEOUT_S),
            memory_mb: read("GAVEL_COMPILE_MEMORY_MB", DEFAULT_COMPILE_MEMORY_MB),
        }
    }
}

/// Compiles `file` into an artifact for `engine`: in a bounded child process when one was set
/// up, else here.
pub(super) fn compile(engine: &Engine, pack: &str, file: &PackFile) -> Result<Vec<u8>, PackError> {
    let failed = |message: String| PackError::Compile {
        pack: pack.to_string(),
        path: file.path.clone(),
        message,
    };
    let Some(executable) = COMPILER.get() else {
        return engine
            .precompile_component(&file.bytes)
            .map_err(|e| failed(format!("{e:#}")));
    };
    let bounds = Bounds::from_env();
    let limit = |what: String| PackError::CompileLimit {
        pack: pack.to_string(),
        path: file.path.clone(),
        what,
    };
    let mut child = Command::new(executable)
        .arg(COMPILE_SUBCOMMAND)
        .arg(bounds.memory_mb.to_string())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| failed(format!("cannot start the compiler process: {e}")))?;
    let (Some(mut stdin), Some(stdout), Some(stderr)) =
        (child.stdin.take(), child.stdout.take(), child.stderr.take())
    else {
        unreachable!("every stream of the child is piped");
    };
    let started = Instant::now();
    let deadline = started + Duration::from_secs(bounds.timeout_s);
    let status = std::thread::scope(|scope| {
        // A child that dies early closes its stdin: the write fails, and its status says why.
        scope.spawn(move || {
            let _ = stdin.write_all(&file.bytes);
        });
        let artifact = scope.spawn(move || read_capped(stdout, MAX_ARTIFACT_BYTES));
        let messages = scope.spawn(move || read_capped(stderr, STDERR_KEPT));
        let mut pause = Duration::from_millis(1);
        let status = loop {
            match child.try_wait() {
                Ok(Some(status)) => break Some(status),
                Ok(None) if Instant::now() >= deadline => {
                    let _ = child.kill();
                    let _ = child.wait();
                    break None;
                }
                Ok(None) => {
                    std::thread::sleep(pause);
                    pause = (pause * 2).min(Duration::from_millis(20));
                }
                Err(_) => {
                    let _ = child.kill();
                    break child.wait().ok();
                }
            }
        };
        let artifact = artifact.join().unwrap_or_default();
        let messages = messages.join().unwrap_or_default();
        (status, artifact, messages)
    });
    let (status, artifact, messages) = status;
    let messages = String::from_utf8_lossy(&messages).trim().to_string();
    match status {
        None => Err(limit(format!(
            "it took longer than the limit of {} s (GAVEL_COMPILE_TIMEOUT_S)",
            bounds.timeout_s
        ))),
        Some(status) if status.success() => Ok(artifact),
        Some(status) if status.code() == Some(CHILD_INVALID) => Err(failed(messages)),
        // Out of address space: Rust aborts on a failed allocation, and an allocation failure
        // in the compiler's own code or a thread that cannot get a stack ends the same way.
        Some(status) if status.signal().is_some() || status.code() == Some(CHILD_NO_MEMORY) => {
            Err(limit(format!(
                "it needed more memory than the limit of {} MiB (GAVEL_COMPILE_MEMORY_MB)",
                bounds.memory_mb
            )))
        }
        Some(status) => Err(failed(format!(
            "the compiler process failed ({status}): {messages}"
        ))),
    }
}

fn read_capped(stream: impl Read, cap: u64) -> Vec<u8> {
    let mut bytes = Vec::new();
    let _ = stream.take(cap).read_to_end(&mut bytes);
    bytes
}

/// The child's exit code when the component is invalid (its reason is on stderr).
const CHILD_INVALID: i32 = 2;
/// The child's exit code when it could not set its memory cap or ran out of memory.
const CHILD_NO_MEMORY: i32 = 3;

/// Why the compiling child failed: its exit code, which the parent reads, and what it says on
/// stderr.
#[derive(Debug)]
pub struct ChildFailure {
    pub code: u8,
    pub message: Option<String>,
}

impl ChildFailure {
    fn new(code: i32, message: String) -> Self {
        ChildFailure {
            code: code as u8,
            message: Some(message),
        }
    }
}

/// `gavel __compile-pack MEMORY_MB`: caps this process's address space, reads a component from
/// `input` and writes the compiled artifact to `output` (the binary's stdin and stdout).
pub fn child_compile(
    memory_mb: &str,
    input: impl Read,
    mut output: impl Write,
) -> Result<(), ChildFailure> {
    use rustix::process::{Resource, Rlimit, setrlimit};
    let Ok(memory_mb) = memory_mb.parse::<u64>() else {
        return Err(ChildFailure::new(
            CHILD_INVALID,
            format!("usage: gavel {COMPILE_SUBCOMMAND} MEMORY_MB"),
        ));
    };
    let bytes = memory_mb.saturating_mul(1 << 20);
    let cap = Rlimit {
        current: Some(bytes),
        maximum: Some(bytes),
    };
    if let Err(e) = setrlimit(Resource::As, cap) {
        return Err(ChildFailure::new(
            CHILD_NO_MEMORY,
            format!("cannot cap the compiler's memory: {e}"),
        ));
    }
    let mut wasm = Vec::new();
    if let Err(e) = input.take(MAX_PACK_BYTES + 1).read_to_end(&mut wasm) {
        return Err(ChildFailure::new(
            CHILD_INVALID,
            format!("cannot read the component: {e}"),
        ));
    }
    let engine = super::engine::compiler()
        .map_err(|e| ChildFailure::new(CHILD_NO_MEMORY, format!("{e:#}")))?;
    let artifact = engine
        .precompile_component(&wasm)
        .map_err(|e| ChildFailure::new(CHILD_INVALID, format!("{e:#}")))?;
    output.write_all(&artifact).map_err(|_| ChildFailure {
        code: CHILD_INVALID as u8,
        message: None,
    })
}
