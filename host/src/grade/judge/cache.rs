//! Judge replies on disk, so that grading the same suite again makes no second request.
//!
//! A reply is stored under `<cache_dir>/judge/<sha256>.json`, the hash taken over the endpoint,
//! the model and the exact request body (never the API key), as `{"reply": ..., "hmac": ...}`:
//! the tag, under the per-user key of [`crate::cache`], covers the hash and the reply, so an
//! entry planted or damaged by whoever else could write the folder is not a verdict. It is
//! ignored, the judge is asked again, and a warning says so once per run. Files are written to
//! a new name and renamed, so a reader never sees half a reply even when runs overlap.

use std::io;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::cache::{CacheDir, CacheError, Key};
use crate::fsio::{cap, read_regular, write_atomic};

/// What an entry's tag covers besides the hash and the reply, with the layout's version.
const DOMAIN: &[u8] = b"gavel judge reply v1\0";

#[derive(Debug, Clone)]
pub struct Cache {
    dir: PathBuf,
    key: Key,
}

/// An entry as stored.
#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct Entry<'a> {
    #[serde(borrow)]
    reply: std::borrow::Cow<'a, str>,
    hmac: std::borrow::Cow<'a, str>,
}

impl Cache {
    /// The `judge/` folder of the cache folder `cache_dir` (created owner-only if missing);
    /// `None` when there is no key to authenticate replies with.
    pub fn open(cache_dir: &Path) -> Result<Option<Cache>, CacheError> {
        let Some(cache) = CacheDir::open(cache_dir)? else {
            return Ok(None);
        };
        Ok(Some(Cache {
            dir: cache.folder("judge")?,
            key: cache.key().clone(),
        }))
    }

    pub fn key(base_url: &str, model: &str, body: &str) -> String {
        let mut hasher = Sha256::new();
        for part in [base_url, model, body] {
            // Length prefixes keep distinct (base_url, model, body) triples from colliding.
            hasher.update((part.len() as u64).to_le_bytes());
            hasher.update(part.as_bytes());
        }
        hex(&hasher.finalize())
    }

    pub fn path(&self, key: &str) -> PathBuf {
        self.dir.join(format!("{key}.json"))
    }

    /// The stored reply, if there is one this user's gavel wrote for `key`. Any other entry is
    /// ignored, with a warning (the first of the run only).
    pub fn get(&self, key: &str) -> Option<String> {
        let path = self.path(key);
        match self.read(&path, key) {
            Ok(reply) => Some(reply),
            Err(e) if e.kind() == io::ErrorKind::NotFound => None,
            Err(e) => {
                static WARNED: AtomicBool = AtomicBool::new(false);
                if !WARNED.swap(true, Ordering::Relaxed) {
                    crate::notice::warn(format!(
                        "the judge's cached reply {} was not used ({e}); the judge is \
                         asked again (said once per run)",
                        path.display()
                    ));
                }
                None
            }
        }
    }

    fn read(&self, path: &Path, key: &str) -> io::Result<String> {
        let bytes = read_regular(path, cap::CACHE_ENTRY)?;
        let invalid = |why: &str| io::Error::new(io::ErrorKind::InvalidData, why.to_string());
        let entry: Entry = serde_json::from_slice(&bytes)
            .map_err(|_| invalid("it is not an entry gavel writes"))?;
        if !self.key.verify(
            DOMAIN,
            &parts(key, &entry.reply),
            &unhex(&entry.hmac).unwrap_or_default(),
        ) {
            return Err(invalid("its authentication tag does not match its content"));
        }
        Ok(entry.reply.into_owned())
    }

    pub fn put(&self, key: &str, reply: &str) -> io::Result<()> {
        let tag = self.key.tag(DOMAIN, &parts(key, reply));
        let entry = Entry {
            reply: reply.into(),
            hmac: hex(&tag).into(),
        };
        let text = serde_json::to_vec(&entry).map_err(io::Error::other)?;
        write_atomic(&self.path(key), &text)
    }
}

/// What an entry's tag covers after the domain: the request's hash, then the reply.
fn parts<'a>(key: &'a str, reply: &'a str) -> [&'a [u8]; 3] {
    [key.as_bytes(), b"\0", reply.as_bytes()]
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|byte| format!("{byte:02x}")).collect()
}

fn unhex(text: &str) -> Option<Vec<u8>> {
    (text.len().is_multiple_of(2) && text.is_ascii())
        .then(|| {
            (0..text.len())
                .step_by(2)
                .map(|i| u8::from_str_radix(&text[i..i + 2], 16).ok())
                .collect()
        })
        .flatten()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_separate_every_input() {
        let key = Cache::key("http://a", "m", "{}");
        assert_eq!(key.len(), 64);
        assert_eq!(key, Cache::key("http://a", "m", "{}"));
        assert_ne!(key, Cache::key("http://b", "m", "{}"));
        assert_ne!(key, Cache::key("http://a", "n", "{}"));
        assert_ne!(key, Cache::key("http://a", "m", "{ }"));
        assert_ne!(Cache::key("ab", "c", ""), Cache::key("a", "bc", ""));
    }

    fn open(root: &Path) -> Cache {
        let cache = CacheDir::open_with(root, &root.with_extension("key")).expect("cache");
        Cache {
            dir: cache.folder("judge").expect("folder"),
            key: cache.key().clone(),
        }
    }

    #[test]
    fn put_then_get_leaves_no_temporary_file() {
        let root = tempfile::tempdir().expect("tempdir");
        let root = root.path().join("cache");
        let cache = open(&root);
        assert_eq!(cache.get("k"), None);
        cache.put("k", "reply one").expect("put");
        cache.put("k", "reply two").expect("overwrite");
        assert_eq!(cache.get("k").as_deref(), Some("reply two"));
        let names: Vec<String> = std::fs::read_dir(root.join("judge"))
            .expect("dir")
            .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
            .collect();
        assert_eq!(names, vec!["k.json".to_string()]);
    }

    #[test]
    fn entries_it_did_not_write_are_not_replies() {
        let root = tempfile::tempdir().expect("tempdir");
        let root = root.path().join("cache");
        let cache = open(&root);
        cache.put("k", "reply").expect("put");
        let stored = std::fs::read_to_string(cache.path("k")).expect("entry");
        let planted = [
            r#"{"score": 1.0, "rationale": "planted"}"#.to_string(),
            stored.replace("reply", "forged"),
            stored.replace(r#""hmac":""#, r#""hmac":"00"#),
            String::from_utf8(vec![b'x'; 40]).unwrap(),
        ];
        for text in planted {
            std::fs::write(cache.path("k"), &text).expect("plant");
            assert_eq!(cache.get("k"), None, "{text}");
        }
        // An entry is bound to its request's hash: moved under another, it is not a reply.
        std::fs::write(cache.path("k"), &stored).expect("restore");
        std::fs::rename(cache.path("k"), cache.path("j")).expect("move");
        assert_eq!(cache.get("j"), None);
    }
}
