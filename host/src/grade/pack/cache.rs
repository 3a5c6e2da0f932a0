//! The on-disk cache of compiled packs, authenticated.
//!
//! A compiled artifact is native code: loading one runs whatever it holds. So an artifact is
//! only loaded when it carries a valid tag (keyed BLAKE3, [`Key::large_mac`]) under a key that
//! only this user can read, kept outside the cache folder, over the artifact, the pack's
//! SHA-256 and the engine's settings. Whoever can write the cache folder (a shared or restored
//! folder, a checkout) can then delete or damage artifacts, making gavel compile again, but not
//! plant code: an artifact whose tag does not check out is compiled again, with a warning.

use std::borrow::Cow;
use std::fs::File;
use std::io::{self, Read, Seek, Write};
use std::os::fd::AsRawFd;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use crate::cache::{CacheDir, CacheError, Key, TAG_BYTES};
use crate::fsio::{open_regular, read_capped, write_atomic_with};

/// The largest artifact read back: an interpreter compiled to a component (Python,
/// JavaScript) is about 40 MiB.
const MAX_ARTIFACT_BYTES: u64 = 1 << 30;

/// What the tag covers besides the artifact, with the layout's version (also in the file's
/// name, so that an artifact of another layout is one this layout does not have, not one
/// whose tag fails).
const DOMAIN: &[u8] = b"gavel compiled pack v2\0";

/// How much of an artifact is read at a time while its tag is checked.
const CHUNK_BYTES: usize = 1 << 20;

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
        self.dir.join(format!("{sha256}-{engine_key}.v2.cwasm"))
    }

    /// The artifact at `path`, once its tag checks out for the pack and the engine.
    ///
    /// A file only this user can change is checked through a buffer of its own, never read
    /// whole, and kept open: a compiled interpreter is about 50 MiB, which wasmtime then maps
    /// from the file ([`Artifact::mapped_path`]) instead of copying it from memory. Any other
    /// file (another's, one others may write, one with a second name) is read once, and those
    /// bytes, checked, are what is loaded: read again, it could say something else by then.
    pub(super) fn load(
        &self,
        path: &Path,
        sha256: &str,
        engine_key: &str,
    ) -> Result<Artifact, Stale> {
        let rejected = |e: io::Error| Stale::Rejected(e.to_string());
        let (mut file, len) = match open_regular(path, MAX_ARTIFACT_BYTES) {
            Ok(opened) => opened,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Err(Stale::Missing),
            Err(e) => return Err(rejected(e)),
        };
        let mut mac = self.mac(sha256, engine_key);
        let mut tag = [0u8; TAG_BYTES];
        let artifact = if only_mine(&file) {
            let body = body_len(len)?;
            let mut chunk = vec![0; CHUNK_BYTES];
            let mut left = body;
            while left > 0 {
                let take = chunk.len().min(usize::try_from(left).unwrap_or(usize::MAX));
                file.read_exact(&mut chunk[..take]).map_err(rejected)?;
                mac.update_rayon(&chunk[..take]);
                left -= take as u64;
            }
            file.read_exact(&mut tag).map_err(rejected)?;
            Artifact::Mine { file, body }
        } else {
            let mut bytes = read_capped(&file, len, MAX_ARTIFACT_BYTES).map_err(rejected)?;
            let body = body_len(bytes.len() as u64)? as usize;
            tag.copy_from_slice(&bytes[body..]);
            bytes.truncate(body);
            mac.update_rayon(&bytes);
            Artifact::Read(bytes)
        };
        // `Hash`'s equality is constant-time.
        if mac.finalize() != blake3::Hash::from_bytes(tag) {
            return Err(Stale::Rejected(
                "its authentication tag does not match its content".into(),
            ));
        }
        Ok(artifact)
    }

    /// Stores `artifact` at `path` with its tag, written whole under a new name that nothing
    /// planted can redirect, and renamed into place, so a concurrent run never reads half a
    /// file. The same pack's artifact for the same engine in the previous layout, which nothing
    /// reads any more, is removed where it can be: a file left there costs room, not a run.
    pub(super) fn store(
        &self,
        path: &Path,
        sha256: &str,
        engine_key: &str,
        artifact: &[u8],
    ) -> io::Result<()> {
        let mut mac = self.mac(sha256, engine_key);
        mac.update_rayon(artifact);
        let tag = mac.finalize();
        write_atomic_with(path, |file| {
            file.write_all(artifact)?;
            file.write_all(tag.as_bytes())
        })?;
        let _ = std::fs::remove_file(self.dir.join(format!("{sha256}-{engine_key}.cwasm")));
        Ok(())
    }

    /// The tag's MAC fed what it covers before the artifact: the pack's SHA-256 and the engine.
    fn mac(&self, sha256: &str, engine_key: &str) -> blake3::Hasher {
        self.key.large_mac(
            DOMAIN,
            &[sha256.as_bytes(), b"\0", engine_key.as_bytes(), b"\0"],
        )
    }
}

/// The length of an artifact file of `len` bytes without its tag.
fn body_len(len: u64) -> Result<u64, Stale> {
    len.checked_sub(TAG_BYTES as u64)
        .ok_or_else(|| Stale::Rejected("it is too short to be an artifact".into()))
}

/// Whether no one but this user can change the open `file`: it is this user's, no one else
/// may write it, and it has no other name (as a link planted while the folder was shared
/// would give it).
fn only_mine(file: &File) -> bool {
    file.metadata().is_ok_and(|meta| {
        meta.uid() == rustix::process::geteuid().as_raw()
            && meta.mode() & 0o022 == 0
            && meta.nlink() == 1
    })
}

/// An artifact in the cache whose tag checked out.
pub(super) enum Artifact {
    /// A file only this user can change ([`only_mine`]), kept open: what is loaded is the file
    /// that was checked, whatever its name leads to by then.
    Mine {
        file: File,
        /// Its length without the tag.
        body: u64,
    },
    /// The bytes that were checked of a file someone else could change.
    Read(Vec<u8>),
}

impl Artifact {
    /// A path that opens the checked file itself (its open handle in `/proc`), for wasmtime to
    /// map; `None` for an artifact that was read, and where the system has no such path.
    pub(super) fn mapped_path(&self) -> Option<PathBuf> {
        let Artifact::Mine { file, .. } = self else {
            return None;
        };
        let path = PathBuf::from(format!("/proc/self/fd/{}", file.as_raw_fd()));
        path.exists().then_some(path)
    }

    /// The artifact's bytes, without the tag: those that were checked, or read from the
    /// checked file that only this user can change.
    pub(super) fn bytes(&self) -> io::Result<Cow<'_, [u8]>> {
        match self {
            Artifact::Mine { file, body } => {
                let mut file = file;
                file.rewind()?;
                read_capped(file.take(*body), *body, *body).map(Cow::Owned)
            }
            Artifact::Read(bytes) => Ok(Cow::Borrowed(bytes)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A checked artifact is mapped only while no one else can change it: one others may write,
    /// or with a second name (a link planted while the folder was shared), is read instead.
    #[test]
    fn an_artifact_others_could_change_is_read_not_mapped() {
        use std::os::unix::fs::PermissionsExt;
        let home = tempfile::tempdir().unwrap();
        let dir = CacheDir::open_with(&home.path().join("cache"), &home.path().join("config/key"));
        let cache = Cache::open(&dir.unwrap()).unwrap();
        let path = cache.path("abc", "e1");
        cache.store(&path, "abc", "e1", b"native code").unwrap();
        let mapped = || cache.load(&path, "abc", "e1").unwrap().mapped_path();
        assert!(mapped().is_some(), "this user's own artifact is mapped");
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o666)).unwrap();
        assert_eq!(mapped(), None, "others may write it");
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).unwrap();
        assert!(mapped().is_some());
        let elsewhere = home.path().join("elsewhere");
        std::fs::hard_link(&path, &elsewhere).unwrap();
        assert_eq!(mapped(), None, "it has a second name");
        // What is loaded is what was checked: the file rewritten in place through its other
        // name once the check is done, as another user could, changes nothing.
        let artifact = cache.load(&path, "abc", "e1").unwrap();
        std::fs::OpenOptions::new()
            .write(true)
            .open(&elsewhere)
            .and_then(|mut file| file.write_all(b"sneaky"))
            .unwrap();
        assert!(std::fs::read(&path).unwrap().starts_with(b"sneaky code"));
        assert_eq!(
            *artifact.bytes().unwrap(),
            *b"native code",
            "read once, checked"
        );
    }

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
        assert_eq!(
            cache.load(&path, "abc", "e1").unwrap().bytes().unwrap(),
            &b"native code"[..]
        );
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
            open()
                .unwrap()
                .load(&path, "abc", "e1")
                .unwrap()
                .bytes()
                .unwrap(),
            &b"native code"[..]
        );
        // The previous layout's artifact of the same pack and engine goes when this one is
        // stored; another pack's stays.
        let previous = home.path().join("cache/packs/abc-e1.cwasm");
        let other = home.path().join("cache/packs/abd-e1.cwasm");
        std::fs::write(&previous, b"old").unwrap();
        std::fs::write(&other, b"old").unwrap();
        cache.store(&path, "abc", "e1", b"native code").unwrap();
        assert!(!previous.exists());
        assert!(other.exists());
        std::fs::remove_file(&other).unwrap();
        // Nothing is left behind but the artifact.
        let names: Vec<_> = std::fs::read_dir(home.path().join("cache/packs"))
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names, vec![std::ffi::OsString::from("abc-e1.v2.cwasm")]);
    }

    #[test]
    fn an_artifact_longer_than_a_chunk_is_checked_whole() {
        let home = tempfile::tempdir().unwrap();
        let cache = Cache::open(
            &CacheDir::open_with(&home.path().join("cache"), &home.path().join("config/key"))
                .unwrap(),
        )
        .unwrap();
        let path = cache.path("abc", "e1");
        let artifact: Vec<u8> = (0..3 * CHUNK_BYTES + 5).map(|i| (i % 251) as u8).collect();
        cache.store(&path, "abc", "e1", &artifact).unwrap();
        assert_eq!(
            cache.load(&path, "abc", "e1").unwrap().bytes().unwrap(),
            artifact
        );
        // A byte changed in any chunk, the last one included, fails the check.
        for at in [0, CHUNK_BYTES + 7, 3 * CHUNK_BYTES + 4] {
            let mut planted = std::fs::read(&path).unwrap();
            planted[at] ^= 1;
            std::fs::write(&path, &planted).unwrap();
            assert!(
                matches!(cache.load(&path, "abc", "e1"), Err(Stale::Rejected(_))),
                "byte {at}"
            );
            planted[at] ^= 1;
            std::fs::write(&path, &planted).unwrap();
        }
        // One byte cut off the end, or one added, fails it too.
        let whole = std::fs::read(&path).unwrap();
        std::fs::write(&path, &whole[..whole.len() - 1]).unwrap();
        assert!(matches!(
            cache.load(&path, "abc", "e1"),
            Err(Stale::Rejected(_))
        ));
        std::fs::write(&path, [whole.as_slice(), b"x"].concat()).unwrap();
        assert!(matches!(
            cache.load(&path, "abc", "e1"),
            Err(Stale::Rejected(_))
        ));
    }
}
