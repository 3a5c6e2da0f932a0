//! The Python interpreter component: CPython compiled to WebAssembly with the stand-ins of
//! `letta_evals`, `letta_client` and `evaldeck`, exporting `gavel:grader@0.2.0`'s
//! `interpreter-v1` world. It holds no user code, so it is built once and serves every suite.
//!
//! Its sources (`host/runtime/python/`) are compiled into gavel, so a gavel binary needs nothing
//! beside it: on first need the component is built from them with componentize-py (the one
//! `$COMPONENTIZE_PY` names or `gavel new pack --lang python` installed, else installed from
//! PyPI into the cache folder, 72 MB) into `<cache>/python/interpreter-<hash of the
//! sources>.wasm`, which every later run loads. The build takes about 30 s on two cores;
//! compiling the 24 MB component to native code takes 20 to 40 s more, once, in the pack cache.
//! `$GAVEL_PYTHON_COMPONENT` names a component built ahead of time instead.

use std::path::{Path, PathBuf};
use std::process::Command;

use sha2::{Digest, Sha256};

include!(concat!(env!("OUT_DIR"), "/runtime_python.rs"));

/// How a build that could not install its toolchain (componentize-py, from PyPI) starts its error.
pub const TOOLCHAIN_MISSING: &str = "no toolchain to build the Python interpreter component";

/// Names a prebuilt interpreter component, used instead of the cached one.
pub const COMPONENT_ENV: &str = "GAVEL_PYTHON_COMPONENT";

/// A short hash of the embedded runtime sources: a gavel with other sources builds another
/// component.
fn sources_hash() -> String {
    let mut hasher = Sha256::new();
    for (path, bytes) in RUNTIME_PYTHON {
        hasher.update((path.len() as u64).to_le_bytes());
        hasher.update(path.as_bytes());
        hasher.update((bytes.len() as u64).to_le_bytes());
        hasher.update(bytes);
    }
    hasher.finalize()[..8]
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// Where the component of these sources is cached under `cache_dir`.
fn cached_path(cache_dir: &Path) -> PathBuf {
    cache_dir
        .join("python")
        .join(format!("interpreter-{}.wasm", sources_hash()))
}

/// Why the interpreter component is not there to run.
#[derive(Debug, thiserror::Error)]
pub enum InterpreterError {
    #[error("${COMPONENT_ENV} names {}, which does not exist", .0.display())]
    NamedMissing(PathBuf),
    #[error(
        "the Python interpreter component is built into the cache folder, and there is none \
         (set --cache-dir, GAVEL_CACHE_DIR, XDG_CACHE_HOME or HOME, or ${COMPONENT_ENV})"
    )]
    NoCacheFolder,
    #[error("cannot resolve the cache folder {}: {source}", path.display())]
    CacheFolder {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("this gavel was built without the Python runtime sources")]
    NoSources,
    #[error("cannot write the runtime sources into {}: {source}", path.display())]
    WriteSources {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("cannot run sh {}/build.sh: {source}", path.display())]
    RunBuild {
        path: PathBuf,
        source: std::io::Error,
    },
    /// The build failed; `what` says whether for want of its toolchain.
    #[error("{what} ({status}):\n{output}")]
    Build {
        what: &'static str,
        status: std::process::ExitStatus,
        output: String,
    },
    #[error("cannot write {}: {source}", path.display())]
    Write {
        path: PathBuf,
        source: std::io::Error,
    },
}

/// The interpreter component: `$GAVEL_PYTHON_COMPONENT` (when not empty), else the cached one
/// (see [`cached`]).
pub fn component(cache_dir: Option<&Path>) -> Result<PathBuf, InterpreterError> {
    if let Some(path) = std::env::var_os(COMPONENT_ENV).filter(|path| !path.is_empty()) {
        let path = PathBuf::from(path);
        return if path.is_file() {
            Ok(path)
        } else {
            Err(InterpreterError::NamedMissing(path))
        };
    }
    let Some(cache_dir) = cache_dir else {
        return Err(InterpreterError::NoCacheFolder);
    };
    cached(cache_dir)
}

/// The component of these sources in `cache_dir`, built now when it is not there yet (with a
/// one-line notice on stderr).
pub fn cached(cache_dir: &Path) -> Result<PathBuf, InterpreterError> {
    // The build runs inside the cache folder, so every path it is given must be absolute.
    let cache_dir =
        &std::path::absolute(cache_dir).map_err(|source| InterpreterError::CacheFolder {
            path: cache_dir.to_path_buf(),
            source,
        })?;
    let path = cached_path(cache_dir);
    if path.is_file() {
        return Ok(path);
    }
    eprintln!(
        "note: building the Python interpreter component into {} (once per gavel version; about a minute)",
        path.display()
    );
    build(cache_dir, &path)?;
    Ok(path)
}

/// Builds the component into `out` from the embedded sources, in a folder of `cache_dir` that
/// keeps the build's toolchain for the next version.
fn build(cache_dir: &Path, out: &Path) -> Result<(), InterpreterError> {
    if !RUNTIME_PYTHON.iter().any(|(path, _)| *path == "build.sh") {
        return Err(InterpreterError::NoSources);
    }
    let work = cache_dir.join("python").join("runtime");
    // The sources of an earlier version go; the toolchain it installed (`.venv`) stays.
    if let Ok(entries) = std::fs::read_dir(&work) {
        for entry in entries.flatten() {
            if entry.file_name() != ".venv" {
                let path = entry.path();
                let _ = std::fs::remove_dir_all(&path).or_else(|_| std::fs::remove_file(&path));
            }
        }
    }
    let write = |relative: &str, bytes: &[u8]| -> std::io::Result<()> {
        let path = work.join(relative);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent)?;
        }
        std::fs::write(path, bytes)
    };
    for (relative, bytes) in RUNTIME_PYTHON {
        write(relative, bytes).map_err(|source| InterpreterError::WriteSources {
            path: work.clone(),
            source,
        })?;
    }
    let temporary = out.with_extension(format!("{}.tmp", std::process::id()));
    let mut command = Command::new("sh");
    command.arg("build.sh").arg(&temporary).current_dir(&work);
    if let Some(componentize_py) = shared_componentize_py() {
        command.env("GAVEL_COMPONENTIZE_PY", componentize_py);
    }
    let output = command
        .output()
        .map_err(|source| InterpreterError::RunBuild {
            path: work.clone(),
            source,
        })?;
    if !output.status.success() || !temporary.is_file() {
        let _ = std::fs::remove_file(&temporary);
        // build.sh's exit code 3: componentize-py is missing and could not be installed.
        let what = if output.status.code() == Some(3) {
            TOOLCHAIN_MISSING
        } else {
            "building the Python interpreter component failed"
        };
        return Err(InterpreterError::Build {
            what,
            status: output.status,
            output: format!(
                "{}{}",
                String::from_utf8_lossy(&output.stdout),
                String::from_utf8_lossy(&output.stderr)
            ),
        });
    }
    std::fs::rename(&temporary, out).map_err(|source| InterpreterError::Write {
        path: out.to_path_buf(),
        source,
    })
}

/// The componentize-py that `gavel new pack --lang python` packs install once per user
/// (`$COMPONENTIZE_PY`, else `componentize-py-0.25.1/` of the shared toolchain folder), if it is
/// there: the build then installs nothing.
fn shared_componentize_py() -> Option<PathBuf> {
    if let Some(command) = std::env::var_os("COMPONENTIZE_PY") {
        return Some(PathBuf::from(command));
    }
    let toolchains = match std::env::var_os("GAVEL_TOOLCHAINS") {
        Some(dir) => PathBuf::from(dir),
        None => std::env::var_os("XDG_CACHE_HOME")
            .map(PathBuf::from)
            .or_else(|| std::env::var_os("HOME").map(|home| Path::new(&home).join(".cache")))?
            .join("gavel")
            .join("toolchains"),
    };
    let command = toolchains.join("componentize-py-0.25.1/bin/componentize-py");
    command.is_file().then_some(command)
}
