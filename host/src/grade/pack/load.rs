//! From a file on disk to a compiled component: the checks a pack passes before any sample runs,
//! and the on-disk cache of compiled artifacts.

use std::hash::{Hash, Hasher};
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};
use wasmtime::Engine;
use wasmtime::component::{Component, types::ComponentItem};

use super::PackError;
use super::cache::{Cache, Stale};
use super::compile;
use super::describe::printable;
use super::engine::{Sandbox, Writes};
use crate::fsio::read_regular;

/// The largest pack file read: an interpreter compiled to a component (Python, JavaScript) is
/// about 20 MiB.
pub(super) const MAX_PACK_BYTES: u64 = 256 << 20;

/// The interface a pack exports, before its `@version`.
const PACK_INTERFACE: &str = "gavel:grader/pack";

/// The `major.minor` lines of `gavel:grader` this host implements (patch releases of a line are
/// compatible with each other).
pub(super) const SUPPORTED_WIT: &[&str] = &["0.1", "0.2"];

/// A pack file that passed the checks that need no compilation.
pub(super) struct PackFile {
    pub(super) path: PathBuf,
    pub(super) bytes: Vec<u8>,
    /// Lowercase hex SHA-256 of the file.
    pub(super) sha256: String,
}

/// Reads `path`, checks it against the pinned `sha256` and checks it is a component.
pub(super) fn read(pack: &str, path: &Path, pinned: Option<&str>) -> Result<PackFile, PackError> {
    let bytes = read_regular(path, MAX_PACK_BYTES).map_err(|source| PackError::Read {
        pack: pack.to_string(),
        path: path.to_path_buf(),
        source,
    })?;
    let sha256 = hex(&Sha256::digest(&bytes));
    if let Some(pinned) = pinned {
        let normalized = pinned.trim().to_ascii_lowercase();
        if normalized.len() != 64 || !normalized.bytes().all(|b| b.is_ascii_hexdigit()) {
            return Err(PackError::BadSha256 {
                pack: pack.to_string(),
                value: pinned.to_string(),
            });
        }
        if normalized != sha256 {
            return Err(PackError::Sha256Mismatch {
                pack: pack.to_string(),
                path: path.to_path_buf(),
                expected: normalized,
                actual: sha256,
            });
        }
    }
    if let Some(what) = not_a_component(&bytes) {
        return Err(PackError::NotAComponent {
            pack: pack.to_string(),
            path: path.to_path_buf(),
            what,
        });
    }
    Ok(PackFile {
        path: path.to_path_buf(),
        bytes,
        sha256,
    })
}

/// What the file is instead of a component, judged by its preamble.
fn not_a_component(bytes: &[u8]) -> Option<&'static str> {
    const MAGIC: &[u8] = b"\0asm";
    const CORE_MODULE: [u8; 4] = [1, 0, 0, 0];
    const COMPONENT: [u8; 4] = [0x0d, 0, 1, 0];
    if bytes.len() < 8 || &bytes[..4] != MAGIC {
        return Some("not a WebAssembly binary");
    }
    match <[u8; 4]>::try_from(&bytes[4..8]) {
        Ok(CORE_MODULE) => Some(
            "a core WebAssembly module, not a component (build for wasm32-wasip2, or wrap it \
             with `wasm-tools component new`)",
        ),
        Ok(COMPONENT) => None,
        _ => Some("a WebAssembly binary of an unknown version"),
    }
}

/// The component `file`, compiled, or loaded from `cache` when a previous run compiled it there,
/// in the pool for components that write as `writes` says.
pub(super) fn compiled(
    sandbox: &Sandbox,
    writes: Writes,
    pack: &str,
    file: &PackFile,
    cache: Option<&Cache>,
) -> Result<Component, PackError> {
    let engine = sandbox.engine();
    let key = engine_key(engine);
    if let Some(cache) = cache {
        let artifact = cache.path(&file.sha256, &key);
        let why = match cache.load(&artifact, &file.sha256, &key) {
            Ok(bytes) => match deserialize(sandbox, &bytes, writes) {
                Ok(component) => return Ok(component),
                Err(e) => format!("{e:#}"),
            },
            Err(Stale::Missing) => String::new(),
            Err(Stale::Rejected(why)) => why,
        };
        if !why.is_empty() {
            eprintln!(
                "warning: pack `{}`: the compiled artifact {} was not used ({why}); compiling \
                 the pack again",
                printable(pack),
                artifact.display()
            );
        }
    }
    let compiled = compile::compile(engine, pack, file)?;
    if let Some(cache) = cache {
        let artifact = cache.path(&file.sha256, &key);
        cache
            .store(&artifact, &file.sha256, &key, &compiled)
            .map_err(|source| PackError::Cache {
                pack: pack.to_string(),
                path: artifact,
                source,
            })?;
    }
    deserialize(sandbox, &compiled, writes).map_err(|e| PackError::Compile {
        pack: pack.to_string(),
        path: file.path.clone(),
        message: format!("{e:#}"),
    })
}

#[allow(unsafe_code)]
fn deserialize(sandbox: &Sandbox, artifact: &[u8], writes: Writes) -> wasmtime::Result<Component> {
    // SAFETY: `artifact` is what gavel's own compiler produced for this engine, either just now
    // or in an earlier run, in which case the cache checked its tag under this user's key
    // before handing it over; wasmtime checks the version and settings recorded in it.
    unsafe { sandbox.deserialize(artifact, writes) }
}

/// A short key for the engine settings that compiled code depends on.
fn engine_key(engine: &Engine) -> String {
    struct ShaHasher(Sha256);
    impl Hasher for ShaHasher {
        fn finish(&self) -> u64 {
            let digest = self.0.clone().finalize();
            u64::from_le_bytes(digest[..8].try_into().unwrap_or_default())
        }
        fn write(&mut self, bytes: &[u8]) {
            self.0.update(bytes);
        }
    }
    let mut hasher = ShaHasher(Sha256::new());
    engine.precompile_compatibility_hash().hash(&mut hasher);
    format!("{:016x}", hasher.finish())
}

/// The `gavel:grader` version the component exports its pack interface for, if this host
/// supports it.
pub(super) fn wit_version(
    engine: &Engine,
    pack: &str,
    path: &Path,
    component: &Component,
) -> Result<String, PackError> {
    let ty = component.component_type();
    let exported: Vec<&str> = ty
        .exports(engine)
        .filter(|(_, item)| matches!(item.ty, ComponentItem::ComponentInstance(_)))
        .map(|(name, _)| name)
        .collect();
    let Some(version) = exported.iter().find_map(|name| {
        name.strip_prefix(PACK_INTERFACE)
            .and_then(|rest| rest.strip_prefix('@'))
    }) else {
        return Err(PackError::NotAPack {
            pack: pack.to_string(),
            path: path.to_path_buf(),
            exports: exported.iter().map(|s| s.to_string()).collect(),
        });
    };
    let line = version.rsplit_once('.').map_or(version, |(line, _)| line);
    if !SUPPORTED_WIT.contains(&line) {
        return Err(PackError::UnsupportedWit {
            pack: pack.to_string(),
            path: path.to_path_buf(),
            found: version.to_string(),
        });
    }
    Ok(version.to_string())
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn preamble_tells_modules_components_and_other_files_apart() {
        assert_eq!(not_a_component(b"\0asm\x0d\0\x01\0rest"), None);
        assert!(
            not_a_component(b"\0asm\x01\0\0\0")
                .unwrap()
                .starts_with("a core")
        );
        assert_eq!(
            not_a_component(b"\x7fELF\x02\x01\x01\0"),
            Some("not a WebAssembly binary")
        );
        assert_eq!(not_a_component(b"\0asm"), Some("not a WebAssembly binary"));
        assert_eq!(
            not_a_component(b"\0asm\x0e\0\x01\0"),
            Some("a WebAssembly binary of an unknown version")
        );
    }
}
