//! The cache folder, and the key that proves gavel made what it holds.
//!
//! The cache folder keeps compiled packs (`packs/`), the Python interpreter component and the
//! toolchain that builds it (`python/`) and judge replies (`judge/`). Whoever else can write
//! that folder (a shared machine, a folder restored in CI from a shared store, a checkout)
//! could otherwise plant native code, a component that forges every Python grade, or verdicts.
//! So nothing in it is used unless it carries an HMAC-SHA256 tag (a keyed BLAKE3 one for
//! compiled packs, the largest) under a per-user key kept outside it, over a domain string
//! naming what the entry is and over its content: whoever can write the folder can delete or
//! damage entries, making gavel do the work again, but not plant one. The folder itself and
//! each of its subfolders must be owner-only, and the key's folder too; others' folders are
//! refused, never repaired.

use std::io::{self, Read};
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};

use hmac::{Hmac, Mac};
use sha2::Sha256;

use crate::fsio;

/// Length of the key and of a tag.
const KEY_BYTES: usize = 32;
pub const TAG_BYTES: usize = 32;

/// Why the cache folder or its key cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum CacheError {
    #[error("{source}, or choose another cache folder (--cache-dir)")]
    Folder { path: PathBuf, source: io::Error },
    #[error("the key file {}: {source}", path.display())]
    Key { path: PathBuf, source: io::Error },
    #[error("the key file {} is inside the cache folder {}", key.display(), cache.display())]
    KeyInside { key: PathBuf, cache: PathBuf },
}

/// The per-user key that authenticates what gavel keeps in a cache folder:
/// `$XDG_CONFIG_HOME/gavel/pack-cache.key`, else `~/.config/gavel/pack-cache.key`. It lives
/// outside any cache folder, so that a folder shared with others, or restored from elsewhere,
/// cannot bring its own.
pub fn key_file() -> Option<PathBuf> {
    let config = std::env::var_os("XDG_CONFIG_HOME")
        .filter(|dir| Path::new(dir).is_absolute())
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|home| PathBuf::from(home).join(".config")))?;
    Some(config.join("gavel").join("pack-cache.key"))
}

/// A cache folder that passed its checks, and the key its entries are tagged with.
#[derive(Debug, Clone)]
pub struct CacheDir {
    root: PathBuf,
    key: Key,
}

impl CacheDir {
    /// The cache folder `root` (made owner-only if missing), with the key of [`key_file`];
    /// `None` when there is no key file (neither `$XDG_CONFIG_HOME` nor `$HOME`): nothing can
    /// be authenticated, so nothing is cached.
    pub fn open(root: &Path) -> Result<Option<CacheDir>, CacheError> {
        key_file()
            .map(|key_file| CacheDir::open_with(root, &key_file))
            .transpose()
    }

    /// The cache folder `root` with the key in `key_file` (created if missing).
    pub fn open_with(root: &Path, key_file: &Path) -> Result<CacheDir, CacheError> {
        let folder = |source| CacheError::Folder {
            path: root.to_path_buf(),
            source,
        };
        // The folder the user named may be a symbolic link, or lie below one. What it leads to
        // is checked and used from then on by that real path, with no link in it: a link
        // someone else owns (in a folder all may write, such as `/tmp`) could be turned
        // elsewhere at any time after the check.
        let created = fsio::private_dir(root);
        let real = root
            .canonicalize()
            .map_err(|e| folder(created.err().unwrap_or(e)))?;
        fsio::check_private(&real).map_err(folder)?;
        let root = &real;
        let key = Key::load(key_file)?;
        let key_folder = key_file.parent().unwrap_or(Path::new("."));
        if key_folder
            .canonicalize()
            .map(|k| k.starts_with(root))
            .map_err(folder)?
        {
            return Err(CacheError::KeyInside {
                key: key_file.to_path_buf(),
                cache: root.to_path_buf(),
            });
        }
        Ok(CacheDir {
            root: root.to_path_buf(),
            key,
        })
    }

    /// The subfolder `name` of the cache, made owner-only if missing and checked: a symbolic
    /// link or a folder others may write is refused.
    pub fn folder(&self, name: &str) -> Result<PathBuf, CacheError> {
        let path = self.root.join(name);
        fsio::private_dir(&path).map_err(|source| CacheError::Folder {
            path: path.clone(),
            source,
        })?;
        Ok(path)
    }

    pub fn key(&self) -> &Key {
        &self.key
    }
}

/// A per-user secret key.
#[derive(Clone)]
pub struct Key([u8; KEY_BYTES]);

impl std::fmt::Debug for Key {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The key itself is never printed.
        f.write_str("Key(..)")
    }
}

impl Key {
    /// The key in `path`, created if missing. Its folder must be owner-only (it is made so when
    /// missing); a key that another user owns or that others may read or write is refused:
    /// with it, they could tag what they plant.
    pub fn load(path: &Path) -> Result<Key, CacheError> {
        let failed = |source| CacheError::Key {
            path: path.to_path_buf(),
            source,
        };
        let folder = path.parent().unwrap_or(Path::new("."));
        fsio::private_dir(folder).map_err(|e| {
            failed(io::Error::new(
                e.kind(),
                format!("{e}, or set XDG_CONFIG_HOME to a folder of your own"),
            ))
        })?;
        loop {
            match read_key(path) {
                Err(e) if e.kind() == io::ErrorKind::NotFound => {}
                read => return read.map(Key).map_err(failed),
            }
            let mut key = [0u8; KEY_BYTES];
            std::fs::File::open("/dev/urandom")
                .and_then(|mut random| random.read_exact(&mut key))
                .map_err(failed)?;
            // Of two runs creating it at once, one key wins whole; the other run reads it.
            match fsio::create_atomic(path, &key, 0o600) {
                Ok(()) => return Ok(Key(key)),
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {}
                Err(e) => return Err(failed(e)),
            }
        }
    }

    /// An HMAC-SHA256 under this key, fed `domain` (what is tagged, with its layout's
    /// version) and then `parts` in order.
    pub fn mac(&self, domain: &[u8], parts: &[&[u8]]) -> Hmac<Sha256> {
        let mut mac = <Hmac<Sha256> as Mac>::new_from_slice(&self.0)
            .unwrap_or_else(|_| unreachable!("HMAC takes keys of any length"));
        mac.update(domain);
        for part in parts {
            mac.update(part);
        }
        mac
    }

    /// A keyed BLAKE3 hash under a key derived from this one, fed `domain` and then `parts`:
    /// the MAC of what is large and checked on every run (a compiled pack, about 50 MiB for an
    /// interpreter), which it checks on every core, four to six times as fast as
    /// [`Key::mac`]. Its tags are [`TAG_BYTES`] long too.
    pub fn large_mac(&self, domain: &[u8], parts: &[&[u8]]) -> blake3::Hasher {
        let key = blake3::derive_key("gavel cache key: large entries", &self.0);
        let mut mac = blake3::Hasher::new_keyed(&key);
        mac.update(domain);
        for part in parts {
            mac.update(part);
        }
        mac
    }

    /// The tag of `parts` for `domain` (see [`Key::mac`]).
    pub fn tag(&self, domain: &[u8], parts: &[&[u8]]) -> [u8; TAG_BYTES] {
        self.mac(domain, parts).finalize().into_bytes().into()
    }

    /// Whether `tag` is the tag of `parts` for `domain`, compared in constant time.
    pub fn verify(&self, domain: &[u8], parts: &[&[u8]], tag: &[u8]) -> bool {
        self.mac(domain, parts).verify_slice(tag).is_ok()
    }
}

/// The key in `path`, read through its open handle, which must belong to this user and be
/// readable by no one else.
fn read_key(path: &Path) -> io::Result<[u8; KEY_BYTES]> {
    let (mut file, _) = fsio::open_regular(path, KEY_BYTES as u64)?;
    let meta = file.metadata()?;
    let refused = |why: &str| io::Error::new(io::ErrorKind::PermissionDenied, why.to_string());
    if meta.uid() != rustix::process::geteuid().as_raw() {
        return Err(refused("it belongs to another user"));
    }
    if meta.permissions().mode() & 0o077 != 0 {
        return Err(refused("others may read or write it (chmod 600 it)"));
    }
    let mut bytes = Vec::with_capacity(KEY_BYTES);
    file.read_to_end(&mut bytes)?;
    bytes
        .try_into()
        .map_err(|_| refused("it is not 32 bytes long (delete it; a new one is made)"))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A cache named through a symbolic link is checked and used where the link led when it
    /// was opened: turned elsewhere later (as its owner, someone else, could), it leads
    /// nothing gavel reads or writes there.
    #[test]
    fn a_cache_named_through_a_link_is_used_by_its_real_path() {
        let home = tempfile::tempdir().unwrap();
        let (real, other) = (home.path().join("real"), home.path().join("other"));
        for dir in [&real, &other] {
            fsio::private_dir(dir).unwrap();
        }
        let link = home.path().join("link");
        std::os::unix::fs::symlink(&real, &link).unwrap();
        let cache = CacheDir::open_with(&link.join("cache"), &home.path().join("config/key"));
        let cache = cache.unwrap();
        std::fs::remove_file(&link).unwrap();
        std::os::unix::fs::symlink(&other, &link).unwrap();
        let packs = cache.folder("packs").unwrap();
        assert_eq!(packs, real.canonicalize().unwrap().join("cache/packs"));
        assert!(packs.is_dir());
        assert!(
            !other.join("cache").exists(),
            "nothing lands where the link leads now"
        );
    }

    #[test]
    fn the_key_is_made_once_owner_only_and_refused_when_others_can_touch_it() {
        let home = tempfile::tempdir().unwrap();
        let key_file = home.path().join("config/gavel/key");
        let first = Key::load(&key_file).unwrap();
        let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode(&key_file), 0o600);
        assert_eq!(mode(key_file.parent().unwrap()), 0o700);
        assert_eq!(Key::load(&key_file).unwrap().0, first.0);
        assert!(first.verify(b"d", &[b"a", b"b"], &first.tag(b"d", &[b"ab"])));
        assert!(!first.verify(b"e", &[b"ab"], &first.tag(b"d", &[b"ab"])));

        std::fs::set_permissions(&key_file, std::fs::Permissions::from_mode(0o644)).unwrap();
        let err = Key::load(&key_file).err().unwrap().to_string();
        assert!(err.ends_with("(chmod 600 it)"), "{err}");
        std::fs::set_permissions(&key_file, std::fs::Permissions::from_mode(0o600)).unwrap();

        let folder = key_file.parent().unwrap();
        std::fs::set_permissions(folder, std::fs::Permissions::from_mode(0o777)).unwrap();
        let err = Key::load(&key_file).err().unwrap().to_string();
        assert!(err.contains("others may write it (mode 777)"), "{err}");
        assert!(
            err.ends_with("or set XDG_CONFIG_HOME to a folder of your own"),
            "{err}"
        );
    }

    #[test]
    fn a_cache_folder_others_may_write_or_holding_the_key_is_refused() {
        let home = tempfile::tempdir().unwrap();
        let key_file = home.path().join("config/key");
        let root = home.path().join("cache");
        let cache = CacheDir::open_with(&root, &key_file).unwrap();
        assert!(cache.folder("judge").unwrap().is_dir());
        std::fs::set_permissions(&root, std::fs::Permissions::from_mode(0o777)).unwrap();
        let err = CacheDir::open_with(&root, &key_file).err().unwrap();
        assert_eq!(
            err.to_string(),
            format!(
                "{0} cannot hold what gavel trusts: others may write it (mode 777): chmod go-w \
                 {0}, or choose another cache folder (--cache-dir)",
                root.display()
            )
        );
        std::fs::set_permissions(&root, std::fs::Permissions::from_mode(0o700)).unwrap();
        // A subfolder planted as a link to another folder is refused, not followed.
        std::os::unix::fs::symlink(home.path(), root.join("packs")).unwrap();
        let err = cache.folder("packs").err().unwrap().to_string();
        assert!(err.contains("not a folder"), "{err}");
        let err = CacheDir::open_with(home.path(), &home.path().join("inside/key"))
            .err()
            .unwrap();
        assert!(err.to_string().contains("inside the cache folder"), "{err}");
    }
}
