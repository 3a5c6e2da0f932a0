//! The Python packages a suite's graders import (`requirements:`): pure-Python wheels from
//! PyPI, resolved once into a lock file beside the suite, downloaded and unpacked into the
//! cache, and mounted read-only into the interpreter for the graders that asked for them.
//!
//! Resolution runs the host's `python3 -m pip` (`install --dry-run --report`) for CPython
//! [`PYTHON_VERSION`] with only pure-Python wheels (`--platform any --abi none --implementation
//! py --only-binary=:all:`), and writes what it chose, with each wheel's SHA-256, to
//! [`LOCK_FILE`] (PEP 751's format; what it was resolved from under `[tool.gavel]`). Later runs
//! read the lock instead and need neither pip nor the network once the cache holds the tree.
//!
//! The unpacked tree is code every one of those graders runs, so it is kept as the cache keeps
//! everything (see [`crate::cache`]): owner-only, tagged under the per-user key over the digest
//! of all it holds, and a tree whose tag does not check out is unpacked again, never mounted.
//! A wheel is unpacked only after its SHA-256 matched the lock, and only when every member's
//! name stays below the tree, none is a link, and all together stay under [`MAX_UNPACKED`].
//!
//! Each module's bytecode is made once, when the tree is unpacked, by the interpreter itself
//! (so it is for its exact CPython), and kept beside the source in `__pycache__/` as files
//! CPython loads without reading the source again (PEP 552's unchecked hash-based `.pyc`): an
//! import then costs what running the module's top level does, not the compiler's work, which
//! is many times more. The bytecode is code as much as the sources are, and is made before the
//! tree is tagged: the tag covers both, and a tree whose bytecode was altered is not mounted.

use std::collections::BTreeSet;
use std::io::{self, Read, Write};
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use serde::Deserialize;
use sha2::{Digest, Sha256};

use crate::cache::{CacheDir, TAG_BYTES};
use crate::fsio::{self, cap};
use crate::grade::pack::Source;

/// The lock file, beside the suite.
pub const LOCK_FILE: &str = "pylock.gavel.toml";

/// The CPython version of the interpreter component, which wheels are chosen for.
pub const PYTHON_VERSION: &str = "3.14";

/// What an unpacked tree's tag covers besides its name and digest, with the layout's version
/// (v2: with bytecode).
const DOMAIN: &[u8] = b"gavel python packages v2\0";

/// The domains of the layouts older gavels unpacked trees in (v1: sources only). A tree tagged
/// under one of them is intact but out of date: unpacked again with a notice, not the warning
/// of a tree that does not check out.
const OLDER_DOMAINS: &[&[u8]] = &[b"gavel python packages v1\0"];

/// Source bytes compiled in one interpreter call when a tree is unpacked.
const COMPILE_SHARE: usize = 4 << 20;

/// Bytes all the wheels of a lock may unpack to, together.
pub const MAX_UNPACKED: u64 = 512 << 20;

/// Members one wheel may have.
const MAX_MEMBERS: usize = 50_000;

/// Why a suite's requirements cannot be used; each message names the package, file or URL and
/// how to fix it.
#[derive(Debug, thiserror::Error)]
pub enum PackagesError {
    #[error(
        "`{0}` is not a requirement: write a package as PEP 508 does (`pathspec`, \
         `httpx>=0.27`), without pip options"
    )]
    NotARequirement(String),
    #[error(
        "`{0}` names where to get the package (a URL, a path or a version control link): pip \
         would build such a package by running its code on this machine, outside the sandbox; \
         name a package on the index instead (`pathspec`, `pathspec==0.12.1`), or write its \
         wheel into {LOCK_FILE} beside the suite"
    )]
    DirectReference(String),
    #[error(
        "resolving the requirements needs pip, and `{python} -m pip` does not run ({why}): \
         install it (Debian: apt-get install python3-pip), or write {LOCK_FILE} beside the suite"
    )]
    NoPip { python: String, why: String },
    #[error(
        "{0} ships no pure-Python wheel (py3-none-any) for CPython {PYTHON_VERSION}, only \
         native ones or none: the sandbox runs WebAssembly and cannot load native code; remove \
         it from `requirements:`, or use a pure-Python package instead"
    )]
    Native(String),
    #[error("pip could not resolve the requirements:\n{0}")]
    Resolve(String),
    #[error("cannot read {}: {why}", path.display())]
    Lock { path: PathBuf, why: String },
    #[error(
        "{} was locked for other requirements ({locked}) than the suite's ({wanted}): delete \
         it, and the next `gavel validate` or `gavel run` resolves them again",
        path.display()
    )]
    Stale {
        path: PathBuf,
        locked: String,
        wanted: String,
    },
    #[error(
        "{name} ({wheel}) is not a pure-Python wheel: the sandbox runs WebAssembly and cannot \
         load native code; remove it from `requirements:`"
    )]
    NotPure { name: String, wheel: String },
    #[error("cannot download {name} from {url}: {why}")]
    Download {
        name: String,
        url: String,
        why: String,
    },
    #[error("cannot unpack {name} ({wheel}): {why}")]
    Unpack {
        name: String,
        wheel: String,
        #[source]
        why: WheelError,
    },
    #[error(
        "Python packages are unpacked into the cache folder, and there is none that gavel can \
         authenticate (set --cache-dir, GAVEL_CACHE_DIR, XDG_CACHE_HOME or HOME)"
    )]
    NoCache,
    #[error("the package cache: {0}")]
    Cache(String),
}

/// The requirement lines of a suite, checked, each once and in order.
pub fn checked(lines: &BTreeSet<String>) -> Result<(), PackagesError> {
    for line in lines {
        let bad = line.is_empty()
            || line.starts_with('-')
            || line.contains(" -")
            || line.chars().any(|c| c.is_control());
        if bad {
            return Err(PackagesError::NotARequirement(line.clone()));
        }
        // A direct reference (`name @ URL`), a URL or a path: pip prepares what it names by
        // running its build backend natively, whatever `--only-binary` says.
        let direct = line.contains('@')
            || line.contains("://")
            || line.contains(['/', '\\'])
            || line.starts_with(['.', '~']);
        if direct {
            return Err(PackagesError::DirectReference(line.clone()));
        }
    }
    Ok(())
}

/// The requirement lines of a `requirements.txt`: comments and blank lines left out.
pub fn requirements_file(text: &str) -> Vec<String> {
    text.lines()
        .map(|line| line.split(" #").next().unwrap_or("").trim())
        .filter(|line| !line.is_empty() && !line.starts_with('#'))
        .map(str::to_string)
        .collect()
}

/// A lock file as gavel reads it: PEP 751's fields it uses.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub struct Lock {
    pub lock_version: String,
    #[serde(default)]
    pub packages: Vec<Package>,
    #[serde(default)]
    pub tool: Tool,
}

#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
pub struct Tool {
    #[serde(default)]
    pub gavel: Option<Locked>,
}

/// What a lock was resolved from.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct Locked {
    pub python: String,
    pub requirements: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct Package {
    pub name: String,
    pub version: String,
    pub wheels: Vec<Wheel>,
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct Wheel {
    pub name: String,
    pub url: String,
    pub hashes: Hashes,
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct Hashes {
    pub sha256: String,
}

impl Lock {
    /// The lock file's text: PEP 751, packages by name.
    pub fn to_toml(&self) -> String {
        let quote = |s: &str| serde_json::Value::String(s.to_string()).to_string();
        let mut text = String::from(
            "# Written by gavel from the suite's `requirements:`; read instead of resolving them \
             again.\nlock-version = \"1.0\"\ncreated-by = \"gavel\"\n",
        );
        for package in &self.packages {
            text += &format!(
                "\n[[packages]]\nname = {}\nversion = {}\nwheels = [\n",
                quote(&package.name),
                quote(&package.version)
            );
            for wheel in &package.wheels {
                text += &format!(
                    "  {{ name = {}, url = {}, hashes = {{ sha256 = {} }} }},\n",
                    quote(&wheel.name),
                    quote(&wheel.url),
                    quote(&wheel.hashes.sha256)
                );
            }
            text += "]\n";
        }
        if let Some(locked) = &self.tool.gavel {
            let requirements: Vec<String> = locked.requirements.iter().map(|r| quote(r)).collect();
            text += &format!(
                "\n[tool.gavel]\npython = {}\nrequirements = [{}]\n",
                quote(&locked.python),
                requirements.join(", ")
            );
        }
        text
    }
}

/// The lock of `wanted` beside the suite: read from `folder`'s [`LOCK_FILE`] when there is one
/// (an error when it was locked for other requirements), else resolved now with pip and written
/// there, with a notice on stderr.
pub fn lock(folder: &Path, wanted: &BTreeSet<String>) -> Result<Lock, PackagesError> {
    checked(wanted)?;
    let path = folder.join(LOCK_FILE);
    let unreadable = |why: String| PackagesError::Lock {
        path: path.clone(),
        why,
    };
    let locked_for = Locked {
        python: PYTHON_VERSION.to_string(),
        requirements: wanted.iter().cloned().collect(),
    };
    match fsio::read_text(&path, cap::TEXT) {
        Ok(text) => {
            let lock: Lock = toml::from_str(&text).map_err(|e| unreadable(e.to_string()))?;
            if lock.tool.gavel.as_ref() != Some(&locked_for) {
                let locked = lock.tool.gavel.as_ref().map_or_else(
                    || "none recorded".to_string(),
                    |l| format!("{} for CPython {}", l.requirements.join(", "), l.python),
                );
                return Err(PackagesError::Stale {
                    path,
                    locked,
                    wanted: locked_for.requirements.join(", "),
                });
            }
            check_pure(&lock)?;
            Ok(lock)
        }
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            crate::notice::note(format!(
                "resolving the suite's Python requirements with pip into {} (once: later \
                 runs read it)",
                path.display()
            ));
            let mut lock = resolve(wanted)?;
            lock.tool.gavel = Some(locked_for);
            check_pure(&lock)?;
            fsio::write_atomic(&path, lock.to_toml().as_bytes())
                .map_err(|e| unreadable(format!("cannot write it: {e}")))?;
            Ok(lock)
        }
        Err(e) => Err(unreadable(e.to_string())),
    }
}

/// Every wheel of `lock` is pure Python (`*-none-any.whl`), and each package has one.
fn check_pure(lock: &Lock) -> Result<(), PackagesError> {
    for package in &lock.packages {
        let [wheel] = package.wheels.as_slice() else {
            return Err(PackagesError::NotPure {
                name: package.name.clone(),
                wheel: format!("{} wheels where gavel takes one", package.wheels.len()),
            });
        };
        let tags: Vec<&str> = wheel
            .name
            .strip_suffix(".whl")
            .unwrap_or("")
            .rsplitn(4, '-')
            .collect();
        if !matches!(tags.as_slice(), ["any", "none", py, _] if py.starts_with("py")) {
            return Err(PackagesError::NotPure {
                name: package.name.clone(),
                wheel: wheel.name.clone(),
            });
        }
    }
    Ok(())
}

/// `wanted` resolved by the host's pip for CPython [`PYTHON_VERSION`], pure-Python wheels only.
fn resolve(wanted: &BTreeSet<String>) -> Result<Lock, PackagesError> {
    let python = "python3";
    let no_pip = |why: String| PackagesError::NoPip {
        python: python.to_string(),
        why,
    };
    let work = tempfile::tempdir().map_err(|e| PackagesError::Resolve(e.to_string()))?;
    let report = work.path().join("report.json");
    let output = Command::new(python)
        .args([
            "-m",
            "pip",
            "install",
            "--dry-run",
            "--quiet",
            "--ignore-installed",
        ])
        .args(["--only-binary=:all:", "--platform", "any", "--abi", "none"])
        .args(["--implementation", "py", "--python-version", PYTHON_VERSION])
        .arg("--target")
        .arg(work.path().join("target"))
        .arg("--report")
        .arg(&report)
        .arg("--")
        .args(wanted)
        .env("PIP_NO_INPUT", "1")
        .env("PIP_DISABLE_PIP_VERSION_CHECK", "1")
        // `-m` puts the working folder first on the module path: run where gavel runs (a
        // suite's checkout), a `pip` package there would be what runs, natively.
        .current_dir(work.path())
        .stdin(Stdio::null())
        .output()
        .map_err(|e| no_pip(e.to_string()))?;
    let stderr = String::from_utf8_lossy(&output.stderr);
    if !output.status.success() {
        if stderr.contains("No module named pip") {
            return Err(no_pip("No module named pip".to_string()));
        }
        let missing = "No matching distribution found for ";
        if let Some(line) = stderr.lines().find_map(|l| l.split_once(missing)) {
            let name = line
                .1
                .split([' ', '<', '>', '=', '!', '~', '[', ';'])
                .next();
            return Err(PackagesError::Native(name.unwrap_or(line.1).to_string()));
        }
        return Err(PackagesError::Resolve(stderr.trim().to_string()));
    }
    let text = fsio::read_text(&report, cap::DOCUMENT)
        .map_err(|e| PackagesError::Resolve(e.to_string()))?;
    lock_of_report(&text)
}

/// The packages of a pip installation report (`--report`), by name.
fn lock_of_report(text: &str) -> Result<Lock, PackagesError> {
    #[derive(Deserialize)]
    struct Report {
        install: Vec<Install>,
    }
    #[derive(Deserialize)]
    struct Install {
        metadata: Metadata,
        download_info: DownloadInfo,
    }
    #[derive(Deserialize)]
    struct Metadata {
        name: String,
        version: String,
    }
    #[derive(Deserialize)]
    struct DownloadInfo {
        url: String,
        #[serde(default)]
        archive_info: Option<ArchiveInfo>,
    }
    #[derive(Deserialize)]
    struct ArchiveInfo {
        #[serde(default)]
        hashes: Option<Hashes>,
    }
    let report: Report = serde_json::from_str(text)
        .map_err(|e| PackagesError::Resolve(format!("pip's report: {e}")))?;
    let mut packages = Vec::new();
    for install in report.install {
        let DownloadInfo { url, archive_info } = install.download_info;
        let name = install.metadata.name;
        let Some(hashes) = archive_info.and_then(|a| a.hashes) else {
            return Err(PackagesError::Resolve(format!(
                "pip gave no SHA-256 for {name} ({url})"
            )));
        };
        let wheel = url.rsplit('/').next().unwrap_or(&url).to_string();
        packages.push(Package {
            name,
            version: install.metadata.version,
            wheels: vec![Wheel {
                name: wheel,
                url,
                hashes,
            }],
        });
    }
    packages.sort_by(|a, b| a.name.cmp(&b.name));
    Ok(Lock {
        lock_version: "1.0".to_string(),
        packages,
        tool: Tool::default(),
    })
}

/// The folder holding every wheel of `lock` unpacked, in the cache: the one there when its tag
/// checks out, else downloaded, unpacked and compiled to bytecode by `compile` (the
/// interpreter's [`crate::grade::pack::Pack::compile_packages`]) now (a tree that does not check out is removed
/// first, with a warning).
pub fn tree(
    cache: &CacheDir,
    lock: &Lock,
    compile: &dyn Fn(&mut [Source]),
) -> Result<PathBuf, PackagesError> {
    let cache_error = |e: &dyn std::fmt::Display| PackagesError::Cache(e.to_string());
    let folder = cache
        .folder("python/packages")
        .map_err(|e| cache_error(&e))?;
    let id = tree_id(lock);
    let tree = folder.join(format!("env-{id}"));
    let tag_file = folder.join(format!("env-{id}.hmac"));
    match std::fs::symlink_metadata(&tree) {
        Err(e) if e.kind() == io::ErrorKind::NotFound => {}
        _ => {
            match tree_check(cache, &tree, &tag_file, &id) {
                Checked::Current => return Ok(tree),
                Checked::Older => crate::notice::note(format!(
                    "the Python packages {} were unpacked by an older gavel; unpacking them again",
                    tree.display()
                )),
                Checked::Untrusted(why) => crate::notice::warn(format!(
                    "the Python packages {} were not mounted ({why}); unpacking them again",
                    tree.display()
                )),
            }
            // A link planted in its place goes, never what it points to.
            std::fs::remove_dir_all(&tree)
                .or_else(|_| std::fs::remove_file(&tree))
                .map_err(|e| cache_error(&e))?;
        }
    }
    let work = tempfile::Builder::new()
        .prefix(".unpack-")
        .tempdir_in(&folder)
        .map_err(|e| cache_error(&e))?;
    let mut budget = MAX_UNPACKED;
    for package in &lock.packages {
        for wheel in &package.wheels {
            let bytes = download(&package.name, wheel)?;
            unpack(&bytes, work.path(), &mut budget).map_err(|why| PackagesError::Unpack {
                name: package.name.clone(),
                wheel: wheel.name.clone(),
                why,
            })?;
        }
    }
    write_bytecode(work.path(), compile).map_err(|e| cache_error(&e))?;
    let unpacked = work.keep();
    if let Err(e) = std::fs::rename(&unpacked, &tree) {
        let _ = std::fs::remove_dir_all(&unpacked);
        // Another run put the same wheels in place first: theirs serves once it checks out.
        return match tree_check(cache, &tree, &tag_file, &id) {
            Checked::Current => Ok(tree),
            Checked::Older | Checked::Untrusted(_) => Err(cache_error(&e)),
        };
    }
    let digest = fsio::check_private_tree(&tree).map_err(|e| cache_error(&e))?;
    let tag = cache.key().tag(DOMAIN, &[id.as_bytes(), &digest]);
    fsio::write_atomic(&tag_file, &tag).map_err(|e| cache_error(&e))?;
    Ok(tree)
}

/// What an unpacked tree in the cache is found to be.
enum Checked {
    /// Made by this gavel, unchanged: it is mounted.
    Current,
    /// Made by an older gavel in an older layout, unchanged.
    Older,
    /// Not as gavel made it (changed, planted, or its tag unreadable), and why.
    Untrusted(String),
}

/// Whether the unpacked `tree` is one gavel made: owner-only throughout, with the tag in
/// `tag_file` over its name `id` and its content, under this layout's domain or an older one.
fn tree_check(cache: &CacheDir, tree: &Path, tag_file: &Path, id: &str) -> Checked {
    let digest = match fsio::check_private_tree(tree) {
        Ok(digest) => digest,
        Err(e) => return Checked::Untrusted(e.to_string()),
    };
    let tag = match fsio::read_regular(tag_file, TAG_BYTES as u64) {
        Ok(tag) => tag,
        Err(e) => return Checked::Untrusted(format!("its authentication tag: {e}")),
    };
    let tagged = |domain: &[u8]| cache.key().verify(domain, &[id.as_bytes(), &digest], &tag);
    if tagged(DOMAIN) {
        Checked::Current
    } else if OLDER_DOMAINS.iter().any(|domain| tagged(domain)) {
        Checked::Older
    } else {
        Checked::Untrusted("its authentication tag does not match its content".to_string())
    }
}

/// A name for the tree of `lock`'s wheels: a hash of their SHA-256s and the Python version.
fn tree_id(lock: &Lock) -> String {
    let mut hasher = Sha256::new();
    hasher.update(PYTHON_VERSION);
    for wheel in lock.packages.iter().flat_map(|p| &p.wheels) {
        hasher.update(b"\0");
        hasher.update(wheel.hashes.sha256.as_bytes());
    }
    hasher.finalize()[..8]
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// The wheel `wheel` of `name`, downloaded whole and checked against its SHA-256.
fn download(name: &str, wheel: &Wheel) -> Result<Vec<u8>, PackagesError> {
    let failed = |why: String| PackagesError::Download {
        name: name.to_string(),
        url: wheel.url.clone(),
        why,
    };
    let bytes = std::thread::scope(|scope| {
        scope
            .spawn(|| fetch(&wheel.url))
            .join()
            .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
    })
    .map_err(|e| failed(e.to_string()))?;
    let sha256 = format!("{:x}", Sha256::digest(&bytes));
    if !sha256.eq_ignore_ascii_case(&wheel.hashes.sha256) {
        return Err(failed(format!(
            "its SHA-256 is {sha256}, not {} as {LOCK_FILE} says; if the lock is right, the \
             download was altered",
            wheel.hashes.sha256
        )));
    }
    Ok(bytes)
}

/// The body of a GET of `url`, at most [`cap::COMPONENT`] bytes, on a runtime of its own.
fn fetch(url: &str) -> Result<Vec<u8>, FetchError> {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(FetchError::Runtime)?;
    runtime.block_on(async {
        let client = reqwest::Client::builder()
            .user_agent(concat!("gavel/", env!("CARGO_PKG_VERSION")))
            .timeout(std::time::Duration::from_secs(300))
            .build()
            .map_err(FetchError::Client)?;
        let mut response = client
            .get(url)
            .send()
            .await
            .and_then(reqwest::Response::error_for_status)
            .map_err(FetchError::Request)?;
        let mut bytes = Vec::new();
        while let Some(chunk) = response.chunk().await.map_err(FetchError::Body)? {
            bytes.extend_from_slice(&chunk);
            if bytes.len() as u64 > cap::COMPONENT {
                return Err(FetchError::TooLarge);
            }
        }
        Ok(bytes)
    })
}

/// Why a wheel's download has no body.
#[derive(Debug, thiserror::Error)]
enum FetchError {
    #[error("{0}")]
    Runtime(#[source] io::Error),
    #[error("{0}")]
    Client(#[source] reqwest::Error),
    /// The request or the server failed: said with every cause, as a request's error is.
    #[error("{}", crate::grade::judge::http::error_chain(.0))]
    Request(reqwest::Error),
    #[error("{0}")]
    Body(#[source] reqwest::Error),
    #[error("it is larger than the limit of {} MiB", cap::COMPONENT >> 20)]
    TooLarge,
}

/// Unpacks the wheel `bytes` into `dest`, taking what it unpacks to from `budget`. A member
/// whose name leaves `dest` (absolute, `..`, a backslash), a link, a second member of one name,
/// more than [`MAX_MEMBERS`] members, more bytes than the budget, or a wheel that is not
/// `Root-Is-Purelib: true` is refused, naming it.
pub fn unpack(bytes: &[u8], dest: &Path, budget: &mut u64) -> Result<(), WheelError> {
    let mut archive = zip::ZipArchive::new(io::Cursor::new(bytes)).map_err(WheelError::NotZip)?;
    if archive.len() > MAX_MEMBERS {
        return Err(WheelError::TooManyMembers(archive.len()));
    }
    let mut purelib = false;
    for i in 0..archive.len() {
        let mut member = archive.by_index(i).map_err(WheelError::Member)?;
        let name = String::from_utf8_lossy(member.name_raw()).into_owned();
        let relative = member_path(&name)?;
        if member.is_symlink() {
            return Err(WheelError::Link(name));
        }
        let path = dest.join(&relative);
        let written = |error| WheelError::Write {
            name: name.clone(),
            error,
        };
        if member.is_dir() {
            std::fs::DirBuilder::new()
                .recursive(true)
                .mode(0o755)
                .create(&path)
                .map_err(written)?;
            continue;
        }
        if let Some(parent) = path.parent() {
            std::fs::DirBuilder::new()
                .recursive(true)
                .mode(0o755)
                .create(parent)
                .map_err(written)?;
        }
        let mut content = Vec::new();
        (&mut member)
            .take(*budget + 1)
            .read_to_end(&mut content)
            .map_err(written)?;
        if content.len() as u64 > *budget {
            return Err(WheelError::TooLarge);
        }
        *budget -= content.len() as u64;
        if is_wheel_metadata(&relative) {
            purelib = String::from_utf8_lossy(&content).lines().any(|line| {
                line.replace(' ', "")
                    .eq_ignore_ascii_case("Root-Is-Purelib:true")
            });
        }
        write_new(&path, &content).map_err(written)?;
    }
    if !purelib {
        return Err(WheelError::NotPure);
    }
    Ok(())
}

/// Why a wheel is not unpacked.
#[derive(Debug, thiserror::Error)]
pub enum WheelError {
    #[error("not a zip file: {0}")]
    NotZip(#[source] zip::result::ZipError),
    #[error("it has {0} members, more than the limit of {MAX_MEMBERS}")]
    TooManyMembers(usize),
    #[error("{0}")]
    Member(#[source] zip::result::ZipError),
    #[error("member {0:?} would be written outside the package folder; the wheel is refused")]
    Escapes(String),
    #[error("member {0:?} is a symbolic link; wheels hold files only")]
    Link(String),
    #[error("{name}: {error}")]
    Write {
        name: String,
        #[source]
        error: io::Error,
    },
    #[error("its members unpack to more than the limit of {} MiB", MAX_UNPACKED >> 20)]
    TooLarge,
    #[error(
        "its WHEEL file does not say `Root-Is-Purelib: true`: it is not a pure-Python wheel, and \
         the sandbox cannot load native code"
    )]
    NotPure,
}

/// A new file of the tree at `path` holding `content`, readable by all, never through a link.
fn write_new(path: &Path, content: &[u8]) -> io::Result<()> {
    std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o644)
        .custom_flags(rustix::fs::OFlags::NOFOLLOW.bits() as i32)
        .open(path)
        .and_then(|mut file| file.write_all(content))
}

/// Writes the bytecode of each `.py` module of the unpacked `tree` as `compile` makes it, in
/// shares of [`COMPILE_SHARE`] source bytes, where CPython looks for it:
/// `__pycache__/<name>.cpython-314.pyc` beside the source (replacing one a wheel shipped).
/// A module that does not compile, or is not UTF-8, gets none: importing it compiles it, and
/// reports why not where it fails.
fn write_bytecode(tree: &Path, compile: &dyn Fn(&mut [Source])) -> io::Result<()> {
    let cache_tag = format!("cpython-{}", PYTHON_VERSION.replace('.', ""));
    let mut modules = Vec::new();
    let mut folders = vec![PathBuf::new()];
    while let Some(folder) = folders.pop() {
        for entry in std::fs::read_dir(tree.join(&folder))? {
            let entry = entry?;
            let relative = folder.join(entry.file_name());
            let kind = entry.file_type()?;
            if kind.is_dir() {
                folders.push(relative);
            } else if kind.is_file() && relative.extension().is_some_and(|e| e == "py") {
                modules.push(relative);
            }
        }
    }
    modules.sort();
    let mut share: Vec<(PathBuf, Source)> = Vec::new();
    let mut bytes = 0;
    for (i, relative) in modules.iter().enumerate() {
        if let Ok(text) = fsio::read_text(&tree.join(relative), cap::COMPONENT) {
            bytes += text.len();
            let path = Path::new(crate::grade::pack::PACKAGES_MOUNT).join(relative);
            share.push((
                relative.clone(),
                Source {
                    module: String::new(),
                    path: path.to_string_lossy().into_owned(),
                    text,
                    code: None,
                },
            ));
        }
        if bytes < COMPILE_SHARE && i + 1 < modules.len() {
            continue;
        }
        let mut sources: Vec<Source> = share.iter().map(|(_, s)| s.clone()).collect();
        compile(&mut sources);
        for ((relative, _), source) in share.drain(..).zip(sources) {
            let Some(code) = source.code else { continue };
            let (Some(folder), Some(stem)) = (relative.parent(), relative.file_stem()) else {
                continue;
            };
            let cached = tree.join(folder).join("__pycache__");
            std::fs::DirBuilder::new()
                .recursive(true)
                .mode(0o755)
                .create(&cached)?;
            let file = cached.join(format!("{}.{cache_tag}.pyc", stem.to_string_lossy()));
            match std::fs::remove_file(&file) {
                Err(e) if e.kind() != io::ErrorKind::NotFound => return Err(e),
                _ => {}
            }
            write_new(&file, &code)?;
        }
        bytes = 0;
    }
    Ok(())
}

/// The member `name` as a path below the tree: refused when it is absolute, climbs with `..`,
/// or holds a backslash or a NUL.
fn member_path(name: &str) -> Result<PathBuf, WheelError> {
    let trimmed = name.strip_suffix('/').unwrap_or(name);
    let parts: Vec<&str> = trimmed.split('/').collect();
    let escapes = trimmed.is_empty()
        || name.starts_with('/')
        || name.contains(['\\', '\0'])
        || parts.iter().any(|p| matches!(*p, "" | "." | ".."));
    if escapes {
        return Err(WheelError::Escapes(name.to_string()));
    }
    Ok(parts.iter().collect())
}

/// Whether `relative` is a wheel's `<name>.dist-info/WHEEL`.
fn is_wheel_metadata(relative: &Path) -> bool {
    let mut parts = relative.iter().map(|p| p.to_string_lossy());
    matches!(
        (parts.next(), parts.next(), parts.next()),
        (Some(dist), Some(file), None) if dist.ends_with(".dist-info") && file == "WHEEL"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn wheel(members: &[(&str, &[u8])]) -> Vec<u8> {
        let mut writer = zip::ZipWriter::new(io::Cursor::new(Vec::new()));
        let options = zip::write::SimpleFileOptions::default()
            .compression_method(zip::CompressionMethod::Stored);
        for (name, content) in members {
            writer.start_file(*name, options).unwrap();
            writer.write_all(content).unwrap();
        }
        writer.finish().unwrap().into_inner()
    }

    const WHEEL: (&str, &[u8]) = ("pkg-1.0.dist-info/WHEEL", b"Root-Is-Purelib: true\n");

    #[test]
    fn a_pure_wheel_unpacks_and_escaping_members_are_refused() {
        let dest = tempfile::tempdir().unwrap();
        let mut budget = MAX_UNPACKED;
        let bytes = wheel(&[("pkg/__init__.py", b"X = 1\n"), WHEEL]);
        unpack(&bytes, dest.path(), &mut budget).unwrap();
        assert_eq!(
            std::fs::read(dest.path().join("pkg/__init__.py")).unwrap(),
            b"X = 1\n"
        );
        for name in ["../evil.py", "/abs.py", "pkg/../../x.py", "a\\..\\b.py"] {
            let dest = tempfile::tempdir().unwrap();
            let bytes = wheel(&[(name, b"x"), WHEEL]);
            let err = unpack(&bytes, &dest.path().join("t"), &mut budget).unwrap_err();
            assert!(matches!(err, WheelError::Escapes(_)), "{name}: {err}");
        }
        let native = wheel(&[("pkg-1.0.dist-info/WHEEL", b"Root-Is-Purelib: false\n")]);
        let err = unpack(&native, tempfile::tempdir().unwrap().path(), &mut budget).unwrap_err();
        assert!(matches!(err, WheelError::NotPure), "{err}");
        let mut small = 3;
        let big = wheel(&[("pkg/big.py", b"0123456789"), WHEEL]);
        let err = unpack(&big, tempfile::tempdir().unwrap().path(), &mut small).unwrap_err();
        assert!(matches!(err, WheelError::TooLarge), "{err}");
    }

    #[test]
    fn the_lock_reads_back_what_it_wrote_and_refuses_native_wheels() {
        let mut lock = lock_of_report(
            r#"{"install": [{"metadata": {"name": "pathspec", "version": "1.1.1"},
                "download_info": {"url": "https://h/p/pathspec-1.1.1-py3-none-any.whl",
                "archive_info": {"hashes": {"sha256": "ab"}}}}]}"#,
        )
        .unwrap();
        lock.tool.gavel = Some(Locked {
            python: PYTHON_VERSION.to_string(),
            requirements: vec!["pathspec".to_string()],
        });
        let read: Lock = toml::from_str(&lock.to_toml()).unwrap();
        assert_eq!(read, lock);
        check_pure(&lock).unwrap();
        lock.packages[0].wheels[0].name = "x-1-cp314-cp314-manylinux_2_17_x86_64.whl".into();
        let err = check_pure(&lock).unwrap_err().to_string();
        assert!(err.starts_with("pathspec (x-1-cp314"), "{err}");
    }

    #[test]
    fn pip_options_are_not_requirements() {
        for line in ["--index-url=http://x", "-e .", "pkg --hash=sha256:x", ""] {
            let lines = BTreeSet::from([line.to_string()]);
            assert!(matches!(
                checked(&lines),
                Err(PackagesError::NotARequirement(_))
            ));
        }
        for line in [
            "evil @ file:///tmp/evil",
            "evil@https://example.com/evil-1.tar.gz",
            "git+https://example.com/evil.git",
            "./evil",
            "../evil",
            "/abs/evil",
            "~/evil",
        ] {
            let lines = BTreeSet::from([line.to_string()]);
            let refused = checked(&lines);
            assert!(
                matches!(refused, Err(PackagesError::DirectReference(_))),
                "{line}: {refused:?}"
            );
        }
        assert!(
            checked(&BTreeSet::from([
                "httpx[http2]>=0.27; python_version >= \"3.8\"".to_string()
            ]))
            .is_ok()
        );
        assert_eq!(
            requirements_file("# c\npathspec>=0.12  # why\n\nhttpx\n"),
            ["pathspec>=0.12", "httpx"]
        );
    }
}
