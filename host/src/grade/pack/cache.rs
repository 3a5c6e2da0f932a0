//! The on-disk cache of compiled packs, authenticated.
//!
//! A compiled artifact is native code: loading one runs whatever it holds. So an artifact is
//! only loaded when it carries a valid HMAC-SHA256 under a key that only this user can read,
//! kept outside the cache folder, over the artifact, the pack's SHA-256 and the engine's
//! settings. Whoever can write the cache folder (a shared or restored folder, a checkout) can
//! then delete or damage artifacts, making gavel compile again, but not plant code: an artifact
//! whose tag does not check out is compiled again, with a warning.

use std::fs::OpenOptions;
use std::io::{self, Read, Write};
use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

use hmac::{Hmac, Mac};
use sha2::Sha256;

use crate::fsio::read_regular;

/// Length of the key and of the tag that ends every artifact file.
const KEY_BYTES: usize = 32;
const TAG_BYTES: usize = 32;

/// The largest artifact read back: an interpreter compiled to a component (Python,
/// JavaScript) is about 40 MiB.
const MAX_ARTIFACT_BYTES: u64 = 1 << 30;

/// What the tag covers besides the artifact, with the layout's version.
const DOMAIN: &[u8] = b"gavel compiled pack v1\0";

/// A cache folder and the key its artifacts are authenticated with.
pub(super) struct Cache {
    dir: PathBuf,
    key: [u8; KEY_BYTES],
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
    /// The cache in `dir` (created if missing), authenticated with the key in `key_file`
    /// (created with mode 0600, its folder 0700, if missing).
    pub(super) fn open(dir: &Path, key_file: &Path) -> io::Result<Cache> {
        std::fs::create_dir_all(dir)?;
        let folder = key_file.parent().unwrap_or(Path::new("."));
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(folder)?;
        if folder.canonicalize()?.starts_with(dir.canonicalize()?) {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!(
                    "the key file {} is inside the cache folder",
                    key_file.display()
                ),
            ));
        }
        let key = key(key_file)?;
        Ok(Cache {
            dir: dir.to_path_buf(),
            key,
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
        self.mac(sha256, engine_key, &bytes)
            .verify_slice(&tag)
            .map_err(|_| {
                Stale::Rejected("its authentication tag does not match its content".into())
            })?;
        Ok(bytes)
    }

    /// Stores `artifact` at `path` with its tag. The file is written under a fresh, unguessable
    /// name inside the cache folder (created exclusively, mode 0600) and renamed into place, so
    /// a concurrent run never reads half a file and nobody can have it written elsewhere.
    pub(super) fn store(
        &self,
        path: &Path,
        sha256: &str,
        engine_key: &str,
        artifact: &[u8],
    ) -> io::Result<()> {
        let tag = self
            .mac(sha256, engine_key, artifact)
            .finalize()
            .into_bytes();
        let mut temporary = tempfile::Builder::new()
            .prefix(".artifact-")
            .suffix(".tmp")
            .tempfile_in(&self.dir)?;
        temporary.write_all(artifact)?;
        temporary.write_all(&tag)?;
        temporary.as_file().sync_data()?;
        temporary.persist(path).map_err(|e| e.error)?;
        Ok(())
    }

    fn mac(&self, sha256: &str, engine_key: &str, artifact: &[u8]) -> Hmac<Sha256> {
        let mut mac = <Hmac<Sha256> as Mac>::new_from_slice(&self.key)
            .unwrap_or_else(|_| unreachable!("HMAC takes keys of any length"));
        for part in [
            DOMAIN,
            sha256.as_bytes(),
            b"\0",
            engine_key.as_bytes(),
            b"\0",
        ] {
            mac.update(part);
        }
        mac.update(artifact);
        mac
    }
}

/// The per-user key at `path`, created if missing. A key that others may read or write, or that
/// another user owns, is refused: with it, they could plant artifacts.
fn key(path: &Path) -> io::Result<[u8; KEY_BYTES]> {
    match OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(path)
    {
        Ok(mut file) => {
            let mut key = [0u8; KEY_BYTES];
            std::fs::File::open("/dev/urandom")?.read_exact(&mut key)?;
            file.write_all(&key)?;
            file.sync_all()?;
            return Ok(key);
        }
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {}
        Err(e) => return Err(e),
    }
    let bytes = read_regular(path, KEY_BYTES as u64)?;
    let meta = std::fs::metadata(path)?;
    let refused = |why: &str| {
        io::Error::new(
            io::ErrorKind::PermissionDenied,
            format!("the key file {} {why}", path.display()),
        )
    };
    if meta.uid() != rustix::process::geteuid().as_raw() {
        return Err(refused("belongs to another user"));
    }
    if meta.permissions().mode() & 0o077 != 0 {
        return Err(refused("may be read or written by others (chmod 600 it)"));
    }
    bytes
        .try_into()
        .map_err(|_| refused("is not 32 bytes long (delete it; a new one is made)"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn artifacts_load_only_with_their_tag_pack_and_engine() {
        let home = tempfile::tempdir().unwrap();
        let key_file = home.path().join("config/key");
        let cache = Cache::open(&home.path().join("cache"), &key_file).unwrap();
        let mode = std::fs::metadata(&key_file).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
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
        // The same key file gives the same key: a second run reads what the first wrote.
        let again = Cache::open(&home.path().join("cache"), &key_file).unwrap();
        assert_eq!(again.key, cache.key);
        // Nothing is left behind but the artifact.
        let names: Vec<_> = std::fs::read_dir(home.path().join("cache"))
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names, vec![std::ffi::OsString::from("abc-e1.cwasm")]);
    }

    #[test]
    fn a_key_others_can_read_or_one_inside_the_cache_is_refused() {
        let home = tempfile::tempdir().unwrap();
        let key_file = home.path().join("key");
        Cache::open(&home.path().join("cache"), &key_file).unwrap();
        std::fs::set_permissions(&key_file, std::fs::Permissions::from_mode(0o644)).unwrap();
        let err = Cache::open(&home.path().join("cache"), &key_file)
            .err()
            .unwrap();
        assert!(err.to_string().ends_with("(chmod 600 it)"), "{err}");
        let err = Cache::open(home.path(), &home.path().join("inside/key"))
            .err()
            .unwrap();
        assert!(err.to_string().contains("inside the cache folder"), "{err}");
    }
}
