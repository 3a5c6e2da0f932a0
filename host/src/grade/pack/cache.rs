//! The on-disk cache of compiled packs, authenticated.
//!
//! A compiled artifact is native code: loading one runs whatever it holds. So an artifact is
//! only loaded when it carries a valid HMAC-SHA256 under a key that only this user can read,
//! kept outside the cache folder, over the artifact, the pack's SHA-256 and the engine's
//! settings. Whoever can write the cache folder (a shared or restored folder, a checkout) can
//! then delete or damage artifacts, making gavel compile again, but not plant code: an artifact
//! whose tag does not check out is compiled again, with a warning.

use std::io::{self, Write};
use std::path::{Path, PathBuf};

use crate::cache::{CacheDir, CacheError, Key, TAG_BYTES};
use crate::fsio::{read_regular, write_atomic_with};

/// The largest artifact read back: an interpreter compiled to a component (Python,
/// JavaScript) is about 40 MiB.
const MAX_ARTIFACT_BYTES: u64 = 1 << 30;

/// What the tag covers besides the artifact, with the layout's version.
const DOMAIN: &[u8] = b"gavel compiled pack v1\0";

/// The cache's folder of compiled packs and the key its artifacts are authenticated with.
pub(super) struct Cache {
    dir: PathBuf,
    key: Key,
}

/// Why an artifact in the cache was not used.
#[derive(Debug)]
pub(super) enum Stale {
    /// There is none.
    Missing,
    /// There is one, but it is not an artifact this user's gavel wrote for this pack and
    /// engine: it is compiled again.
    Rejected(String),
}

impl Cache {
    /// The `packs/` folder of `cache` (created owner-only if missing).
    pub(super) fn open(cache: &CacheDir) -> Result<Cache, CacheError> {
        Ok(Cache {
            dir: cache.folder("packs")?,
            key: cache.key().clone(),
        })
    }

    /// Where the artifact of the pack with `sha256` for the engine with `engine_key` lives.
    pub(super) fn path(&self, sha256: &str, engine_key: &str) -> PathBuf {
        self.dir.join(format!("{sha256}-{engine_key}.cwasm"))
    }

    /// The artifact at `path`, once its tag checks out for the pack and the engine.
    pub(super) fn load(
        &self,
        path: &Path,
        sha256: &str,
        engine_key: &str,
    ) -> Result<Vec<u8>, Stale> {
        let mut bytes = match read_regular(path, MAX_ARTIFACT_BYTES) {
            Ok(bytes) => bytes,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Err(Stale::Missing),
            Err(e) => return Err(Stale::Rejected(e.to_string())),
        };
        let Some(split) = bytes.len().checked_sub(TAG_BYTES) else {
            return Err(Stale::Rejected("it is too short to be an artifact".into()));
        };
        let tag = bytes.split_off(split);
        if !self
            .key
            .verify(DOMAIN, &parts(sha256, engine_key, &bytes), &tag)
        {
            return Err(Stale::Rejected(
                "its authentication tag does not match its content".into(),
            ));
        }
        Ok(bytes)
    }

    /// Stores `artifact` at `path` with its tag, written whole under a new name that nothing
    /// planted can redirect, and renamed into place, so a concurrent run never reads half a
    /// file.
    pub(super) fn store(
        &self,
        path: &Path,
        sha256: &str,
        engine_key: &str,
        artifact: &[u8],
    ) -> io::Result<()> {
        let tag = self.key.tag(DOMAIN, &parts(sha256, engine_key, artifact));
        write_atomic_with(path, |file| {
            file.write_all(artifact)?;
            file.write_all(&tag)
        })
    }
}

/// What an artifact's tag covers after the domain.
fn parts<'a>(sha256: &'a str, engine_key: &'a str, artifact: &'a [u8]) -> [&'a [u8]; 5] {
    [
        sha256.as_bytes(),
        b"\0",
        engine_key.as_bytes(),
        b"\0",
        artifact,
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn artifacts_load_only_with_their_tag_pack_and_engine() {
        let home = tempfile::tempdir().unwrap();
        let key_file = home.path().join("config/key");
        let open =
            || Cache::open(&CacheDir::open_with(&home.path().join("cache"), &key_file).unwrap());
        let cache = open().unwrap();
        let path = cache.path("abc", "e1");
        assert!(matches!(
            cache.load(&path, "abc", "e1"),
            Err(Stale::Missing)
        ));
        cache.store(&path, "abc", "e1", b"native code").unwrap();
        assert_eq!(cache.load(&path, "abc", "e1").unwrap(), b"native code");
        assert!(matches!(
            cache.load(&path, "abd", "e1"),
            Err(Stale::Rejected(_))
        ));
        assert!(matches!(
            cache.load(&path, "abc", "e2"),
            Err(Stale::Rejected(_))
        ));
        let mut planted = std::fs::read(&path).unwrap();
        planted[0] ^= 1;
        std::fs::write(&path, planted).unwrap();
        assert!(matches!(
            cache.load(&path, "abc", "e1"),
            Err(Stale::Rejected(_))
        ));
        // The same key file gives the same key: a second run reads what a first wrote.
        cache.store(&path, "abc", "e1", b"native code").unwrap();
        assert_eq!(
            open().unwrap().load(&path, "abc", "e1").unwrap(),
            b"native code"
        );
        // Nothing is left behind but the artifact.
        let names: Vec<_> = std::fs::read_dir(home.path().join("cache/packs"))
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names, vec![std::ffi::OsString::from("abc-e1.cwasm")]);
    }
}
