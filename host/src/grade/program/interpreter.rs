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
//! `$GAVEL_PYTHON_COMPONENT` names a component built ahead of time instead, trusted as named
//! once it speaks this host's `gavel:interpreter` (checked when it is loaded).
//!
//! The component decides every Python grade, and the toolchain that builds it is native code,
//! so neither is trusted for being in the cache folder (see [`crate::cache`]). The cached
//! component ends with a custom section holding its tag under the per-user key (a custom
//! section leaves it a valid component, which `$GAVEL_PYTHON_COMPONENT` can name): one whose
//! tag does not check out is built again, never loaded. The toolchain installed into the cache
//! runs only from the owner-only folder gavel made for it, checked with everything in it before
//! each use and tagged over its whole content: one that does not check out is installed again,
//! never run. The shared toolchain folder runs only when it and everything in it are this
//! user's alone.

use std::path::{Path, PathBuf};
use std::process::Command;

use sha2::{Digest, Sha256};

use crate::cache::{CacheDir, CacheError, Key, TAG_BYTES};
use crate::fsio::{self, cap, read_regular, write_atomic};

include!(concat!(env!("OUT_DIR"), "/runtime_python.rs"));

/// How a build that could not install its toolchain (componentize-py, from PyPI) starts its error.
pub const TOOLCHAIN_MISSING: &str = "no toolchain to build the Python interpreter component";

/// Names a prebuilt interpreter component, used instead of the cached one.
pub const COMPONENT_ENV: &str = "GAVEL_PYTHON_COMPONENT";

/// A short hash of the embedded runtime sources: a gavel with other sources builds another
/// component.
fn sources_hash() -> String {
    files_hash(RUNTIME_PYTHON.iter())[..8]
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// SHA-256 of `files` (path, content), each path and content preceded by its length.
fn files_hash<'a>(files: impl Iterator<Item = &'a (&'a str, &'a [u8])>) -> [u8; 32] {
    let mut hasher = Sha256::new();
    for (path, bytes) in files {
        hasher.update((path.len() as u64).to_le_bytes());
        hasher.update(path.as_bytes());
        hasher.update((bytes.len() as u64).to_le_bytes());
        hasher.update(bytes);
    }
    hasher.finalize().into()
}

/// What the component's tag covers besides the sources' hash and the component, with the
/// layout's version.
const DOMAIN: &[u8] = b"gavel python interpreter v1\0";

/// What a component's stamp's tag covers besides the sources' hash and the component's SHA-256.
const STAMP_DOMAIN: &[u8] = b"gavel python interpreter digest v1\0";

/// What the cache's toolchain's tag covers besides the digest of its folder.
const TOOLCHAIN_DOMAIN: &[u8] = b"gavel python toolchain v1\0";

/// The name of the custom section that ends a cached component and holds its tag.
const TAG_SECTION: &[u8] = b"gavel-hmac";

/// What the build folder keeps between builds: the toolchain it installed, and its tag.
const VENV: &str = ".venv";
const VENV_TAG: &str = ".venv.hmac";

/// The interpreter component to load.
#[derive(Debug, Clone)]
pub struct Component {
    pub path: PathBuf,
    /// The SHA-256 the file must still have when it is loaded: that of the cached component
    /// whose tag was checked, or none for the one `$GAVEL_PYTHON_COMPONENT` names.
    pub sha256: Option<String>,
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
    #[error(transparent)]
    Cache(#[from] CacheError),
    #[error(
        "the cached Python interpreter component cannot be authenticated without a key file \
         (set XDG_CONFIG_HOME or HOME, or ${COMPONENT_ENV})"
    )]
    NoKey,
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
    #[error("cannot read or write {}: {source}", path.display())]
    Write {
        path: PathBuf,
        source: std::io::Error,
    },
}

/// The interpreter component: `$GAVEL_PYTHON_COMPONENT` (when not empty), else the cached one
/// (see [`cached`]).
pub fn component(cache_dir: Option<&Path>) -> Result<Component, InterpreterError> {
    if let Some(path) = std::env::var_os(COMPONENT_ENV).filter(|path| !path.is_empty()) {
        let path = PathBuf::from(path);
        return if path.is_file() {
            Ok(Component { path, sha256: None })
        } else {
            Err(InterpreterError::NamedMissing(path))
        };
    }
    let Some(cache_dir) = cache_dir else {
        return Err(InterpreterError::NoCacheFolder);
    };
    cached(cache_dir)
}

/// The cached component of these sources as its stamp records it, without reading it: the
/// SHA-256 that [`cached`] found the component to have when its tag checked out, kept beside it
/// (`interpreter-<hash>.sha256`) under the per-user key, so that a run whose compiled
/// interpreter is in the cache finds it by that digest without reading and hashing the 25 MiB
/// component twice. `None` when `$GAVEL_PYTHON_COMPONENT` names one, or no stamp checks out:
/// then [`component`] reads the component.
pub fn stamped(cache_dir: Option<&Path>) -> Option<Component> {
    if std::env::var_os(COMPONENT_ENV).is_some_and(|path| !path.is_empty()) {
        return None;
    }
    let cache_dir = std::path::absolute(cache_dir?).ok()?;
    let cache = CacheDir::open(&cache_dir).ok()??;
    let folder = cache.folder("python").ok()?;
    let hash = sources_hash();
    let stamp = read_regular(&stamp_path(&folder, &hash), (64 + TAG_BYTES) as u64).ok()?;
    let (digest, tag) = stamp.split_at_checked(64)?;
    if !cache
        .key()
        .verify(STAMP_DOMAIN, &[hash.as_bytes(), b"\0", digest], tag)
    {
        return None;
    }
    Some(Component {
        path: component_path(&folder, &hash),
        sha256: Some(String::from_utf8(digest.to_vec()).ok()?),
    })
}

fn component_path(folder: &Path, hash: &str) -> PathBuf {
    folder.join(format!("interpreter-{hash}.wasm"))
}

fn stamp_path(folder: &Path, hash: &str) -> PathBuf {
    folder.join(format!("interpreter-{hash}.sha256"))
}

/// The component of these sources in `cache_dir`, once its tag checks out; built now when it
/// is not there yet (with a one-line notice on stderr), or when it is there but its tag does
/// not check out (with a one-line warning).
pub fn cached(cache_dir: &Path) -> Result<Component, InterpreterError> {
    // The build runs inside the cache folder, so every path it is given must be absolute.
    let cache_dir =
        &std::path::absolute(cache_dir).map_err(|source| InterpreterError::CacheFolder {
            path: cache_dir.to_path_buf(),
            source,
        })?;
    let cache = CacheDir::open(cache_dir)?.ok_or(InterpreterError::NoKey)?;
    let folder = cache.folder("python")?;
    let hash = sources_hash();
    let path = component_path(&folder, &hash);
    match read_regular(&path, cap::COMPONENT) {
        Ok(bytes) => match check_tag(cache.key(), &hash, &bytes) {
            Ok(()) => return Ok(loaded(&cache, &folder, &hash, path, &bytes)),
            Err(why) => stale(&path, why),
        },
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => stale(&path, &e.to_string()),
    }
    crate::notice::note(format!(
        "building the Python interpreter component into {} (once per gavel version; about a minute)",
        path.display()
    ));
    let mut bytes = build(&cache, &folder)?;
    let tag = cache.key().tag(DOMAIN, &tagged(&hash, &bytes));
    bytes.extend_from_slice(&trailer_head());
    bytes.extend_from_slice(&tag);
    write_atomic(&path, &bytes).map_err(|source| InterpreterError::Write {
        path: path.clone(),
        source,
    })?;
    Ok(loaded(&cache, &folder, &hash, path, &bytes))
}

fn stale(path: &Path, why: &str) {
    crate::notice::warn(format!(
        "the cached Python interpreter component {} was not used ({why}); building it \
         again",
        path.display()
    ));
}

/// The component at `path` (in `folder`, of the sources of `hash`) whose tag checked out,
/// with its SHA-256, which its stamp now records (see [`stamped`]). A stamp that cannot be
/// written only leaves the next run to read the component again.
fn loaded(cache: &CacheDir, folder: &Path, hash: &str, path: PathBuf, bytes: &[u8]) -> Component {
    let sha256 = format!("{:x}", Sha256::digest(bytes));
    let tag = cache
        .key()
        .tag(STAMP_DOMAIN, &[hash.as_bytes(), b"\0", sha256.as_bytes()]);
    let _ = write_atomic(
        &stamp_path(folder, hash),
        &[sha256.as_bytes(), &tag].concat(),
    );
    Component {
        path,
        sha256: Some(sha256),
    }
}

/// What a component's tag covers after the domain: the sources' hash, then the component.
fn tagged<'a>(hash: &'a str, component: &'a [u8]) -> [&'a [u8]; 3] {
    [hash.as_bytes(), b"\0", component]
}

/// The start of the custom section that ends a tagged component: its id (0), its size, and its
/// name; the tag follows.
fn trailer_head() -> Vec<u8> {
    let size = 1 + TAG_SECTION.len() + TAG_BYTES;
    let mut head = vec![0, size as u8, TAG_SECTION.len() as u8];
    head.extend_from_slice(TAG_SECTION);
    head
}

/// Whether `bytes` end with a tag under `key` for the sources of `hash` over all that precedes
/// it.
fn check_tag(key: &Key, hash: &str, bytes: &[u8]) -> Result<(), &'static str> {
    let head = trailer_head();
    let untagged = "it carries no authentication tag";
    let body = bytes
        .len()
        .checked_sub(head.len() + TAG_BYTES)
        .ok_or(untagged)?;
    let (component, trailer) = bytes.split_at(body);
    let tag = trailer.strip_prefix(head.as_slice()).ok_or(untagged)?;
    if key.verify(DOMAIN, &tagged(hash, component), tag) {
        Ok(())
    } else {
        Err("its authentication tag does not match its content")
    }
}

/// Builds the component from the embedded sources in the cache's `python/runtime/` folder,
/// which keeps the build's toolchain for the next version, and returns it (untagged).
fn build(cache: &CacheDir, python: &Path) -> Result<Vec<u8>, InterpreterError> {
    if !RUNTIME_PYTHON.iter().any(|(path, _)| *path == "build.sh") {
        return Err(InterpreterError::NoSources);
    }
    let work = cache.folder("python/runtime")?;
    let write_error = |source| InterpreterError::WriteSources {
        path: work.clone(),
        source,
    };
    clear_sources(&work).map_err(write_error)?;
    for (relative, bytes) in RUNTIME_PYTHON {
        let path = work.join(relative);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).map_err(write_error)?;
        }
        write_atomic(&path, bytes).map_err(write_error)?;
    }
    let componentize_py = toolchain(cache.key(), &work);
    // A folder of its own, made now and private, for the build to write the component into:
    // no name in it can have been planted.
    let out_dir = tempfile::Builder::new()
        .prefix(".build-")
        .tempdir_in(python)
        .map_err(write_error)?;
    let out = out_dir.path().join("interpreter.wasm");
    let mut command = Command::new("sh");
    command
        .arg("build.sh")
        .arg(&out)
        .current_dir(&work)
        .env("PYTHONDONTWRITEBYTECODE", "1");
    if let Some(componentize_py) = &componentize_py {
        command.env("GAVEL_COMPONENTIZE_PY", componentize_py);
    }
    let output = command
        .output()
        .map_err(|source| InterpreterError::RunBuild {
            path: work.clone(),
            source,
        })?;
    if !output.status.success() || !out.is_file() {
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
    if componentize_py.is_none() {
        tag_toolchain(cache.key(), &work);
    }
    read_regular(&out, cap::COMPONENT)
        .map_err(|source| InterpreterError::Write { path: out, source })
}

/// Removes the sources of an earlier version from the build folder `work`; the toolchain it
/// installed stays. `work` was checked to be a real folder, and removing an entry never
/// follows a symbolic link: a link planted there goes, never what it points to.
fn clear_sources(work: &Path) -> std::io::Result<()> {
    for entry in std::fs::read_dir(work)? {
        let entry = entry?;
        if entry.file_name() == VENV || entry.file_name() == VENV_TAG {
            continue;
        }
        let path = entry.path();
        if entry.file_type()?.is_dir() {
            std::fs::remove_dir_all(&path)?;
        } else {
            std::fs::remove_file(&path)?;
        }
    }
    Ok(())
}

/// The componentize-py the build is given: `$COMPONENTIZE_PY`, else the shared one when it is
/// this user's alone; `None` when the build uses the toolchain of the build folder `work`,
/// which is then removed first unless its tag checks out (build.sh installs it again).
fn toolchain(key: &Key, work: &Path) -> Option<PathBuf> {
    if let Some(command) = std::env::var_os("COMPONENTIZE_PY").filter(|c| !c.is_empty()) {
        return Some(PathBuf::from(command));
    }
    if let Some(shared) = shared_toolchain() {
        match checked_toolchain(&shared) {
            Ok(command) => return Some(command),
            Err(e) => crate::notice::warn(format!(
                "the shared toolchain {} is not used ({e}); the build installs its own",
                shared.display()
            )),
        }
    }
    let venv = work.join(VENV);
    let why = match std::fs::symlink_metadata(&venv) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return None,
        _ => match fsio::check_private_tree(&venv) {
            Ok(digest) => match read_regular(&work.join(VENV_TAG), TAG_BYTES as u64) {
                Ok(tag) if key.verify(TOOLCHAIN_DOMAIN, &[&digest], &tag) => return None,
                Ok(_) => "its authentication tag does not match its content".to_string(),
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                    "it carries no authentication tag".to_string()
                }
                Err(e) => e.to_string(),
            },
            Err(e) => e.to_string(),
        },
    };
    crate::notice::warn(format!(
        "the toolchain {} was not made by this gavel or has changed since ({why}); it \
         is installed again",
        venv.display()
    ));
    // A link planted in its place goes, never what it points to.
    let _ = std::fs::remove_dir_all(&venv).or_else(|_| std::fs::remove_file(&venv));
    let _ = std::fs::remove_file(work.join(VENV_TAG));
    None
}

/// The command of the toolchain in `folder`, by the real path of the folder that was checked
/// (it and all it holds this user's alone): a symbolic link on the way, which its owner could
/// turn elsewhere once the check is done, is not followed again.
fn checked_toolchain(folder: &Path) -> std::io::Result<PathBuf> {
    let real = folder.canonicalize()?;
    fsio::check_private_tree(&real)?;
    Ok(real.join("bin/componentize-py"))
}

/// Tags the toolchain the build installed (or found with its tag) in `work`, over all it holds
/// now. A toolchain that cannot be tagged is installed again by the next build.
fn tag_toolchain(key: &Key, work: &Path) {
    let tagged = fsio::check_private_tree(&work.join(VENV)).and_then(|digest| {
        write_atomic(&work.join(VENV_TAG), &key.tag(TOOLCHAIN_DOMAIN, &[&digest]))
    });
    if let Err(e) = tagged {
        crate::notice::warn(format!(
            "the toolchain {} cannot be kept for the next build: {e}",
            work.join(VENV).display()
        ));
    }
}

/// The folder of the componentize-py that `gavel new pack --lang python` packs install once per
/// user (`componentize-py-0.25.1/` of the shared toolchain folder, `$GAVEL_TOOLCHAINS`, else
/// `${XDG_DATA_HOME:-~/.local/share}/gavel/toolchains`), if it is there: the build then
/// installs nothing.
fn shared_toolchain() -> Option<PathBuf> {
    let toolchains = match std::env::var_os("GAVEL_TOOLCHAINS") {
        Some(dir) => PathBuf::from(dir),
        // Outside the cache folder (`~/.cache/gavel`), which may be restored from a store
        // others write: a toolchain is code gavel runs.
        None => std::env::var_os("XDG_DATA_HOME")
            .filter(|dir| Path::new(dir).is_absolute())
            .map(PathBuf::from)
            .or_else(|| std::env::var_os("HOME").map(|home| Path::new(&home).join(".local/share")))?
            .join("gavel")
            .join("toolchains"),
    };
    let folder = toolchains.join("componentize-py-0.25.1");
    folder
        .join("bin/componentize-py")
        .is_file()
        .then_some(folder)
}

#[cfg(test)]
mod tests {
    use super::{RUNTIME_PYTHON, checked_toolchain, files_hash};
    use std::path::Path;

    use crate::grade::pack::INTERPRETER_PROTOCOL;

    /// A shared toolchain named through a symbolic link runs from the folder that was checked.
    #[test]
    fn a_toolchain_named_through_a_link_runs_from_the_folder_checked() {
        let home = tempfile::tempdir().unwrap();
        let real = home.path().join("toolchain");
        crate::fsio::private_dir(&real.join("bin")).unwrap();
        std::fs::write(real.join("bin/componentize-py"), "").unwrap();
        let link = home.path().join("link");
        std::os::unix::fs::symlink(&real, &link).unwrap();
        let command = checked_toolchain(&link).unwrap();
        assert_eq!(
            command,
            real.canonicalize().unwrap().join("bin/componentize-py")
        );
        assert!(checked_toolchain(Path::new("/nonexistent/toolchain")).is_err());
    }

    /// Each version of `gavel:interpreter`, oldest first, with the SHA-256 ([`files_hash`]) of
    /// what the host and its interpreter declare of each other at that version: the
    /// interpreter's WIT (`wit/grader.wit`, `wit/deps/interpreter.wit`). A change to either is
    /// a change of what crosses, which needs a new version (`process.rs`'s `protocol!`, the
    /// package line of `interpreter.wit`, the world's imports and exports in `grader.wit`):
    /// add a line for it; a line is never edited.
    const CROSSINGS: &[(&str, &str)] = &[
        (
            "0.3.0",
            "97ffe5376965dd0e57f59a7b6429715d153ebca35dc3ef2462f0f2eb3dcf84d1",
        ),
        (
            "0.4.0",
            "29d259d84814e83ef3898ef49d604625f8d910c0253628f1395f839dc59fdc13",
        ),
    ];

    /// What crosses changes only with the protocol's version: an interpreter built from other
    /// sources is refused by its version alone (`grade::program`, where it is loaded), so a change of
    /// the WIT that kept the version would let a host and an interpreter that disagree on it
    /// meet.
    #[test]
    fn what_crosses_changes_only_with_the_protocols_version() {
        const WIT: [&str; 2] = ["wit/grader.wit", "wit/deps/interpreter.wit"];
        let files: Vec<_> = WIT
            .iter()
            .map(|name| {
                *RUNTIME_PYTHON
                    .iter()
                    .find(|(path, _)| path == name)
                    .unwrap_or_else(|| panic!("{name} is embedded"))
            })
            .collect();
        let hash: String = files_hash(files.iter())
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect();
        let version = |v: &str| -> Vec<u32> { v.split('.').map(|n| n.parse().unwrap()).collect() };
        for pair in CROSSINGS.windows(2) {
            assert!(
                version(pair[0].0) < version(pair[1].0),
                "versions must rise line by line"
            );
            assert_ne!(
                pair[0].1, pair[1].1,
                "a new version must cross something new"
            );
        }
        let (last, recorded) = CROSSINGS.last().expect("a line");
        assert_eq!(
            *last, INTERPRETER_PROTOCOL,
            "the last line of CROSSINGS must be the host's protocol"
        );
        assert_eq!(
            hash, *recorded,
            "the interpreter's WIT changed while gavel:interpreter stayed at {last}: raise the \
             version and add a line for it to CROSSINGS (its fingerprint: {hash})"
        );
    }

    /// The host's protocol is the version of the interpreter's own WIT package, which the
    /// component it builds exports.
    #[test]
    fn the_protocol_is_the_version_of_the_interpreters_wit_package() {
        let (_, wit) = RUNTIME_PYTHON
            .iter()
            .find(|(path, _)| *path == "wit/deps/interpreter.wit")
            .expect("the interpreter's WIT is embedded");
        let wit = String::from_utf8_lossy(wit);
        let package = wit
            .lines()
            .find_map(|line| line.strip_prefix("package gavel:interpreter@"))
            .expect("a package line");
        assert_eq!(package, format!("{INTERPRETER_PROTOCOL};"));
    }
}
