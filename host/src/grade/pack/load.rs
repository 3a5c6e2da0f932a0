//! From a file on disk to a compiled component: the checks a pack passes before any sample runs,
//! and the on-disk cache of compiled artifacts.

use std::hash::{Hash, Hasher};
use std::path::Path;

use sha2::{Digest, Sha256};
use wasmtime::Engine;
use wasmtime::component::{Component, types::ComponentItem};

use super::PackError;
use super::cache::{Artifact, Cache, Stale};
use super::compile;
pub(super) use super::compile::{MAX_PACK_BYTES, PackFile};
use super::describe::printable;
use super::engine::{CORE_INSTANCES_PER_CALL, Sandbox, Writes};
use crate::fsio::read_regular;

/// The interface a pack exports, before its `@version`.
const PACK_INTERFACE: &str = "gavel:grader/pack";

/// The `major.minor` lines of `gavel:grader` this host implements (patch releases of a line are
/// compatible with each other).
pub(super) const SUPPORTED_WIT: &[&str] = &["0.1", "0.2"];

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
    let instances = core_instances(&bytes).map_err(|e| PackError::Compile {
        pack: pack.to_string(),
        path: path.to_path_buf(),
        message: format!("{e:#}"),
    })?;
    if instances > u64::from(CORE_INSTANCES_PER_CALL) {
        return Err(PackError::CompileLimit {
            pack: pack.to_string(),
            path: path.to_path_buf(),
            what: format!(
                "its nested components instantiate {} core instances once inlined; the limit \
                 is {CORE_INSTANCES_PER_CALL} a component",
                if instances == u64::MAX {
                    "more than 2^64".to_string()
                } else {
                    instances.to_string()
                }
            ),
        });
    }
    Ok(PackFile {
        path: path.to_path_buf(),
        bytes,
        sha256,
    })
}

/// How many core instances the component `bytes` makes when instantiated, counted from its
/// structure as wasmtime inlines it before compiling: each component instantiated is copied in
/// whole, so components nested a few levels deep, each instantiating the one inside several
/// times, multiply into millions from a few kilobytes. Saturates at `u64::MAX`.
///
/// Only the component structure is read: nested core modules are skipped, not parsed.
fn core_instances(bytes: &[u8]) -> Result<u64, StructureError> {
    use wasmparser::{
        Chunk, ComponentAlias, ComponentExternalKind, ComponentInstance, ComponentOuterAliasKind,
        ComponentTypeRef, Instance, Parser, Payload,
    };
    /// A component being read: the core instances it makes so far, and what each entry of its
    /// component index space makes when instantiated.
    #[derive(Default)]
    struct Level {
        instances: u64,
        components: Vec<u64>,
    }
    let unknown = |offset: usize, what: &'static str| StructureError::OutOfRange { what, offset };
    let mut parser = Parser::new(0);
    let mut parents: Vec<Parser> = Vec::new();
    let mut levels: Vec<Level> = Vec::new();
    let mut offset = 0usize;
    loop {
        let (payload, consumed) = match parser.parse(&bytes[offset..], true)? {
            Chunk::Parsed { consumed, payload } => (payload, consumed),
            Chunk::NeedMoreData(_) => return Err(unknown(offset, "the end of the file")),
        };
        let here = offset;
        offset += consumed;
        match payload {
            Payload::Version { .. } => levels.push(Level::default()),
            Payload::ModuleSection {
                unchecked_range, ..
            } => {
                offset = usize::try_from(unchecked_range.end)
                    .ok()
                    .filter(|end| *end <= bytes.len())
                    .ok_or_else(|| unknown(here, "a module's end"))?;
            }
            Payload::ComponentSection { parser: inner, .. } => {
                parents.push(std::mem::replace(&mut parser, inner));
            }
            Payload::End(_) => {
                let done = levels.pop().unwrap_or_default();
                match (parents.pop(), levels.last_mut()) {
                    (Some(outer), Some(level)) => {
                        parser = outer;
                        level.components.push(done.instances);
                    }
                    _ => return Ok(done.instances),
                }
            }
            Payload::InstanceSection(section) => {
                let level = levels
                    .last_mut()
                    .ok_or_else(|| unknown(here, "a section"))?;
                for instance in section {
                    if let Instance::Instantiate { .. } = instance? {
                        level.instances = level.instances.saturating_add(1);
                    }
                }
            }
            Payload::ComponentInstanceSection(section) => {
                let level = levels
                    .last_mut()
                    .ok_or_else(|| unknown(here, "a section"))?;
                for instance in section {
                    if let ComponentInstance::Instantiate {
                        component_index, ..
                    } = instance?
                    {
                        let made = level
                            .components
                            .get(component_index as usize)
                            .copied()
                            .ok_or_else(|| unknown(here, "a component index"))?;
                        level.instances = level.instances.saturating_add(made);
                    }
                }
            }
            // Every other way a component enters the index space: imported (the host gives
            // none), aliased from an instance's exports or from an enclosing component, or
            // exported again.
            Payload::ComponentImportSection(section) => {
                let level = levels
                    .last_mut()
                    .ok_or_else(|| unknown(here, "a section"))?;
                for import in section {
                    if let ComponentTypeRef::Component(_) = import?.ty {
                        level.components.push(0);
                    }
                }
            }
            Payload::ComponentAliasSection(section) => {
                for alias in section {
                    let made = match alias? {
                        ComponentAlias::InstanceExport {
                            kind: ComponentExternalKind::Component,
                            ..
                        } => 0,
                        ComponentAlias::Outer {
                            kind: ComponentOuterAliasKind::Component,
                            count,
                            index,
                        } => levels
                            .len()
                            .checked_sub(1 + count as usize)
                            .and_then(|at| levels[at].components.get(index as usize))
                            .copied()
                            .ok_or_else(|| unknown(here, "an outer alias"))?,
                        _ => continue,
                    };
                    let level = levels
                        .last_mut()
                        .ok_or_else(|| unknown(here, "a section"))?;
                    level.components.push(made);
                }
            }
            Payload::ComponentExportSection(section) => {
                let level = levels
                    .last_mut()
                    .ok_or_else(|| unknown(here, "a section"))?;
                for export in section {
                    let export = export?;
                    if export.kind == ComponentExternalKind::Component {
                        let made = level
                            .components
                            .get(export.index as usize)
                            .copied()
                            .ok_or_else(|| unknown(here, "a component index"))?;
                        level.components.push(made);
                    }
                }
            }
            _ => {}
        }
    }
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

/// The component whose file has the SHA-256 `sha256`, loaded from `cache` when a previous
/// run compiled it there, in the pool for components that write as `writes` says; `None` when
/// the cache has no artifact for it whose tag checks out (which [`compiled`] then says).
pub(super) fn cached(
    sandbox: &Sandbox,
    writes: Writes,
    sha256: &str,
    cache: &Cache,
) -> Option<Component> {
    let key = engine_key(sandbox.engine());
    let checked = cache.load(&cache.path(sha256, &key), sha256, &key).ok()?;
    deserialize_cached(sandbox, &checked, writes).ok()
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
            Ok(checked) => match deserialize_cached(sandbox, &checked, writes) {
                Ok(component) => return Ok(component),
                Err(e) => format!("{e:#}"),
            },
            Err(Stale::Missing) => String::new(),
            Err(Stale::Rejected(why)) => why,
        };
        if !why.is_empty() {
            crate::notice::warn(format!(
                "pack `{}`: the compiled artifact {} was not used ({why}); compiling \
                 the pack again",
                printable(pack),
                artifact.display()
            ));
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

/// The cached `artifact`, mapped from its file where wasmtime can map it: no copy of its
/// code in memory, and the memory images of its modules mapped from the file too, where a copy
/// costs a page fault a page (a compiled interpreter is about 50 MiB). Where it cannot (no
/// `/proc`, a cache folder mounted `noexec`, an artifact someone else could change), its checked
/// bytes are copied.
#[allow(unsafe_code)]
fn deserialize_cached(
    sandbox: &Sandbox,
    artifact: &Artifact,
    writes: Writes,
) -> wasmtime::Result<Component> {
    if let Some(path) = artifact.mapped_path() {
        // SAFETY: the file is the one whose tag the cache checked under this user's key, kept
        // open so that its path leads to it; it is this user's, with no other name, and no one
        // else may write it (`Artifact::Mine`), so no one else can change it while it is
        // mapped.
        if let Ok(component) = unsafe { sandbox.deserialize_file(&path, writes) } {
            return Ok(component);
        }
    }
    deserialize(sandbox, &artifact.bytes()?, writes)
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

/// The names of the instances `component` exports (`gavel:grader/pack@0.2.0`, ...).
pub(super) fn exported_instances(engine: &Engine, component: &Component) -> Vec<String> {
    component
        .component_type()
        .exports(engine)
        .filter(|(_, item)| matches!(item.ty, ComponentItem::ComponentInstance(_)))
        .map(|(name, _)| name.to_string())
        .collect()
}

/// The version at which `exported` (see [`exported_instances`]) holds `interface`, if it does.
pub(super) fn export_version<'a>(exported: &'a [String], interface: &str) -> Option<&'a str> {
    exported
        .iter()
        .find_map(|name| name.strip_prefix(interface)?.strip_prefix('@'))
}

/// The `gavel:grader` version the component exports its pack interface for (`exported`, see
/// [`exported_instances`]), if this host supports it.
pub(super) fn wit_version(
    pack: &str,
    path: &Path,
    exported: &[String],
) -> Result<String, PackError> {
    let Some(version) = export_version(exported, PACK_INTERFACE) else {
        return Err(PackError::NotAPack {
            pack: pack.to_string(),
            path: path.to_path_buf(),
            exports: exported.to_vec(),
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

/// Why a component's structure could not be read.
#[derive(Debug, thiserror::Error)]
enum StructureError {
    #[error(transparent)]
    Binary(#[from] wasmparser::BinaryReaderError),
    #[error("{what} is out of range (at offset {offset:#x})")]
    OutOfRange { what: &'static str, offset: usize },
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
