//! Judge replies on disk, so that grading the same suite again makes no second request.
//!
//! A reply is stored under `<cache_dir>/judge/<sha256>.json`, the hash taken over the endpoint,
//! the model and the exact request body (never the API key). Files are written to a temporary
//! name and renamed, so a reader never sees half a reply even when runs overlap.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use sha2::{Digest, Sha256};

#[derive(Debug, Clone)]
pub struct Cache {
    dir: PathBuf,
}

impl Cache {
    pub fn new(cache_dir: &Path) -> Cache {
        Cache {
            dir: cache_dir.join("judge"),
        }
    }

    pub fn key(base_url: &str, model: &str, body: &str) -> String {
        let mut hasher = Sha256::new();
        for part in [base_url, model, body] {
            // Length prefixes keep distinct (base_url, model, body) triples from colliding.
            hasher.update((part.len() as u64).to_le_bytes());
            hasher.update(part.as_bytes());
        }
        hasher
            .finalize()
            .iter()
            .map(|byte| format!("{byte:02x}"))
            .collect()
    }

    pub fn path(&self, key: &str) -> PathBuf {
        self.dir.join(format!("{key}.json"))
    }

    /// The stored reply, if there is one that can be read.
    pub fn get(&self, key: &str) -> Option<String> {
        std::fs::read_to_string(self.path(key)).ok()
    }

    pub fn put(&self, key: &str, reply: &str) -> std::io::Result<()> {
        static COUNTER: AtomicU64 = AtomicU64::new(0);
        std::fs::create_dir_all(&self.dir)?;
        let temp = self.dir.join(format!(
            ".{key}.{}.{}.tmp",
            std::process::id(),
            COUNTER.fetch_add(1, Ordering::Relaxed)
        ));
        let written = std::fs::File::create(&temp).and_then(|mut file| {
            file.write_all(reply.as_bytes())?;
            file.sync_all()
        });
        match written.and_then(|()| std::fs::rename(&temp, self.path(key))) {
            Ok(()) => Ok(()),
            Err(e) => {
                let _ = std::fs::remove_file(&temp);
                Err(e)
            }
        }
    }
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

    #[test]
    fn put_then_get_leaves_no_temporary_file() {
        let root = tempfile::tempdir().expect("tempdir");
        let cache = Cache::new(root.path());
        assert_eq!(cache.get("k"), None);
        cache.put("k", "reply one").expect("put");
        cache.put("k", "reply two").expect("overwrite");
        assert_eq!(cache.get("k").as_deref(), Some("reply two"));
        let names: Vec<String> = std::fs::read_dir(root.path().join("judge"))
            .expect("dir")
            .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
            .collect();
        assert_eq!(names, vec!["k.json".to_string()]);
    }
}
