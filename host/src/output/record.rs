//! `run.json`: the record a run keeps beside its results. It says what the run read (paths,
//! and fingerprints of the suite, the data and the packs), the options that change its grades,
//! the gavel that graded, when it started and how it ended.
//!
//! `gavel report` finds the samples through it; `gavel run --resume` refuses to continue a run
//! whose fingerprint no longer matches (its old grades would be mixed with new ones); and a new
//! run will not replace an unfinished one unless asked to. A run writes it as `running` before
//! it grades, so a run that was killed is known as unfinished too.

use std::collections::{BTreeMap, BTreeSet};
use std::io::{Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};

use indexmap::IndexMap;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::config::spec::SamplePer;
use crate::fsio;
use crate::grade::grants::Reach;
pub use crate::grade::judge::{JudgeCalls, JudgeDown};
use crate::input::shard::Shard;
use crate::input::trajectory::Format;

/// The file `gavel run` writes beside `results.jsonl`.
pub const RUN_FILE: &str = "run.json";

/// What a run read and how it went: `run.json`. Paths are absolute, as resolved when the run
/// started.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunRecord {
    pub suite: PathBuf,
    pub name: String,
    pub dataset: PathBuf,
    #[serde(default)]
    pub trajectories: Vec<PathBuf>,
    #[serde(default)]
    pub format: Option<Format>,
    /// `sample_per:`, written when it is not the default.
    #[serde(default, skip_serializing_if = "SamplePer::is_trace")]
    pub sample_per: SamplePer,
    /// `--filter` values, as given.
    #[serde(default)]
    pub filters: Vec<String>,
    #[serde(default)]
    pub max_samples: Option<u64>,
    /// `--shard`: this folder holds the results of one shard of the run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shard: Option<Shard>,
    /// `gavel merge`: the shards' folders this run was joined from, in shard order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub merged: Vec<PathBuf>,
    /// What each sandboxed grader may reach (names and hosts, never a secret's value), by its
    /// field; absent when the suite grants nothing.
    #[serde(default, skip_serializing_if = "IndexMap::is_empty")]
    pub grants: IndexMap<String, Reach>,
    /// What the grades depend on; `--resume` compares it. Absent when the record was made for
    /// a report from a suite alone.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fingerprint: Option<Fingerprint>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub progress: Option<Progress>,
}

/// What a run's grades depend on besides the paths and the selection.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Fingerprint {
    /// The gavel version that graded.
    pub gavel: String,
    /// SHA-256 of the suite file.
    pub suite_sha256: String,
    pub dataset: FileStamp,
    /// The files of the suite's `trajectories:`, in its order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub trajectories: Vec<FileStamp>,
    /// SHA-256 of each pack file, by pack name.
    pub packs: BTreeMap<String, String>,
    /// `--skip-invalid`: invalid rows are error results instead of stopping the run.
    pub skip_invalid: bool,
}

/// A data file as it can be recognised without reading it all (a dataset can be gigabytes,
/// read once to grade): its length and the SHA-256 of its first and last MiB, which is the
/// whole file up to 2 MiB. Rows appended, removed or edited near either end change it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FileStamp {
    pub bytes: u64,
    pub ends_sha256: String,
}

/// How far the run went.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Progress {
    pub state: State,
    /// When this run (or its last `--resume`) started, as an HTTP date (UTC).
    pub started: String,
    /// Seconds this run took, once it ended.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seconds: Option<f64>,
    /// Results in `results.jsonl` when it ended.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub results: Option<u64>,
    /// Tokens the judges' endpoints reported for this run's requests, by model.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub judge_tokens: BTreeMap<String, Tokens>,
    /// A judge that could not be used stopped this run's `--retry-errors`: the run is whole,
    /// what the judge left in error is kept, and the run fails (merged too) until a retry
    /// grades it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub judge_down: Option<JudgeDown>,
    /// How this run's pass fared with each judge, in the plan's order, when it asked any: what
    /// a merge adds up to fail as one run fails when a judge answered none of its gradings.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub judge_calls: Vec<JudgeCalls>,
}

impl Progress {
    /// A run starting now.
    pub fn running() -> Progress {
        Progress {
            state: State::Running,
            started: httpdate::fmt_http_date(std::time::SystemTime::now()),
            seconds: None,
            results: None,
            judge_tokens: BTreeMap::new(),
            judge_down: None,
            judge_calls: Vec::new(),
        }
    }
}

/// Token counts as an OpenAI-compatible endpoint reports them (`usage`), summed over the
/// grades that carry them (a reply from the cache carries its first request's). Anthropic's
/// `input_tokens` and `output_tokens` count as prompt and completion tokens, their sum as the
/// total.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Tokens {
    pub grades: u64,
    pub prompt_tokens: u64,
    pub completion_tokens: u64,
    pub total_tokens: u64,
}

impl Tokens {
    /// Adds the counts of `other` (another part of the same run).
    pub fn absorb(&mut self, other: &Tokens) {
        self.grades += other.grades;
        self.prompt_tokens += other.prompt_tokens;
        self.completion_tokens += other.completion_tokens;
        self.total_tokens += other.total_tokens;
    }

    /// Adds a grade's `metadata.usage`.
    pub fn add(&mut self, usage: &serde_json::Value) {
        let count = |key: &str| {
            usage
                .get(key)
                .and_then(serde_json::Value::as_u64)
                .unwrap_or(0)
        };
        self.grades += 1;
        // An endpoint's counts past what 64 bits hold stay at the largest.
        let (prompt, completion, total) = if usage.get("input_tokens").is_some() {
            let (input, output) = (count("input_tokens"), count("output_tokens"));
            (input, output, input.saturating_add(output))
        } else {
            let total = count("total_tokens");
            (count("prompt_tokens"), count("completion_tokens"), total)
        };
        self.prompt_tokens = self.prompt_tokens.saturating_add(prompt);
        self.completion_tokens = self.completion_tokens.saturating_add(completion);
        self.total_tokens = self.total_tokens.saturating_add(total);
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum State {
    /// Grading, or the process ended without saying how (killed, out of memory, power loss).
    Running,
    /// Stopped by Ctrl-C: `--resume` continues.
    Interrupted,
    Complete,
}

/// Why a `run.json` cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum RecordError {
    #[error("{}: cannot read: {source}", .path.display())]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{}:{line}:{column}: {message}; delete it and give the suite with --suite", .path.display())]
    Parse {
        path: PathBuf,
        line: usize,
        column: usize,
        message: String,
    },
    #[error("cannot write {}: {source}", .path.display())]
    Write {
        path: PathBuf,
        source: std::io::Error,
    },
}

impl RunRecord {
    pub fn write(&self, dir: &Path) -> Result<(), RecordError> {
        let path = dir.join(RUN_FILE);
        let mut text = serde_json::to_string_pretty(self).map_err(|e| RecordError::Write {
            path: path.clone(),
            source: std::io::Error::other(e),
        })?;
        text.push('\n');
        fsio::write_output(&path, text.as_bytes())
            .map_err(|source| RecordError::Write { path, source })
    }

    /// The `run.json` of a results folder; `Ok(None)` when there is none.
    pub fn read(dir: &Path) -> Result<Option<RunRecord>, RecordError> {
        let path = dir.join(RUN_FILE);
        match RunRecord::read_text(&path)? {
            Some(text) => RunRecord::parse(&text, path).map(Some),
            None => Ok(None),
        }
    }

    /// The bytes of the `run.json` at `path`; `Ok(None)` when there is none.
    pub fn read_text(path: &Path) -> Result<Option<Vec<u8>>, RecordError> {
        match fsio::read_regular(path, fsio::cap::DOCUMENT) {
            Ok(text) => Ok(Some(text)),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(source) => Err(RecordError::Read {
                path: path.to_path_buf(),
                source,
            }),
        }
    }

    /// The record in `text`, read from `path`.
    pub fn parse(text: &[u8], path: PathBuf) -> Result<RunRecord, RecordError> {
        serde_json::from_slice(text).map_err(|e| RecordError::Parse {
            line: e.line(),
            column: e.column(),
            message: e.to_string(),
            path,
        })
    }

    /// The inputs of a suite file as `gavel run` resolves them (no filters, no fingerprint).
    pub fn of_suite(suite: &crate::config::suite::Suite) -> RunRecord {
        let absolute = |p: PathBuf| std::path::absolute(&p).unwrap_or(p);
        RunRecord {
            suite: absolute(suite.path.clone()),
            name: suite.file.name.clone(),
            dataset: absolute(suite.resolve(&suite.file.dataset)),
            trajectories: suite
                .file
                .trajectories
                .as_ref()
                .map(|t| {
                    t.paths()
                        .into_iter()
                        .map(|p| absolute(suite.resolve(p)))
                        .collect()
                })
                .unwrap_or_default(),
            format: suite.file.format,
            sample_per: suite.file.sample_per.unwrap_or_default(),
            filters: Vec::new(),
            max_samples: suite.file.max_samples,
            shard: None,
            merged: Vec::new(),
            grants: IndexMap::new(),
            fingerprint: None,
            progress: None,
        }
    }

    /// This record with its run ended in `state` after `took`, with `results` results in all.
    pub fn ended(
        &mut self,
        state: State,
        took: std::time::Duration,
        results: u64,
        judge_tokens: BTreeMap<String, Tokens>,
    ) -> &Self {
        if let Some(progress) = self.progress.as_mut() {
            progress.state = state;
            progress.seconds = Some(took.as_secs_f64());
            progress.results = Some(results);
            progress.judge_tokens = judge_tokens;
        }
        self
    }

    /// Whether this record's run ended unfinished (interrupted, or never said how it ended).
    pub fn unfinished(&self) -> bool {
        self.progress
            .as_ref()
            .is_some_and(|p| p.state != State::Complete)
    }

    /// What to say of this run, kept in `dir`, when it is unfinished: how its record says it
    /// ended, and the command that finishes it; `None` when it finished (or the record does
    /// not say, as a record made for a report does not).
    pub fn unfinished_notice(&self, dir: &Path) -> Option<String> {
        let how = match self.progress.as_ref()?.state {
            State::Complete => return None,
            State::Running => "`running`: it was killed, or is still grading",
            State::Interrupted => "`interrupted`: it was stopped before its end",
        };
        let mut command = format!("gavel run {} -o {}", self.suite.display(), dir.display());
        if let Some(shard) = self.shard {
            command.push_str(&format!(" --shard {shard}"));
        }
        for filter in &self.filters {
            command.push_str(&format!(" --filter {filter}"));
        }
        if let Some(max) = self.max_samples {
            command.push_str(&format!(" --max-samples {max}"));
        }
        Some(format!(
            "{} holds an unfinished run ({} says {how}), so its results are only part of the \
             run; finish it with `{command} --resume`",
            dir.display(),
            dir.join(RUN_FILE).display()
        ))
    }

    /// What differs between the run recorded here and `now`, in words, for a refused
    /// `--resume`; empty when they grade alike. A record without a fingerprint (from a report)
    /// is not compared.
    pub fn changes(&self, now: &RunRecord) -> Vec<String> {
        let mut changes = Vec::new();
        let mut differs = |what: &str, was: String, is: String| {
            if was != is {
                changes.push(format!("{what}: was {was}, now {is}"));
            }
        };
        let path = |p: &Path| p.display().to_string();
        differs("suite file", path(&self.suite), path(&now.suite));
        differs("dataset", path(&self.dataset), path(&now.dataset));
        differs(
            "trajectories",
            listed(self.trajectories.iter().map(|p| p.display())),
            listed(now.trajectories.iter().map(|p| p.display())),
        );
        differs(
            "--filter",
            listed(self.filters.iter()),
            listed(now.filters.iter()),
        );
        differs(
            "max samples",
            listed(self.max_samples.iter()),
            listed(now.max_samples.iter()),
        );
        let shard = |s: &Option<Shard>| s.map_or_else(|| "none".to_string(), |s| s.to_string());
        differs("--shard", shard(&self.shard), shard(&now.shard));
        if let (Some(was), Some(is)) = (&self.fingerprint, &now.fingerprint) {
            differs("gavel version", was.gavel.clone(), is.gavel.clone());
            differs(
                "suite file content (sha256)",
                was.suite_sha256.clone(),
                is.suite_sha256.clone(),
            );
            differs(
                "dataset content",
                was.dataset.to_string(),
                is.dataset.to_string(),
            );
            differs(
                "trajectories content",
                listed(was.trajectories.iter()),
                listed(is.trajectories.iter()),
            );
            let names: BTreeSet<&String> = was.packs.keys().chain(is.packs.keys()).collect();
            let sha = |packs: &BTreeMap<String, String>, name: &String| {
                packs
                    .get(name)
                    .cloned()
                    .unwrap_or_else(|| "absent".to_string())
            };
            for name in names {
                differs(
                    &format!("pack `{name}` (sha256)"),
                    sha(&was.packs, name),
                    sha(&is.packs, name),
                );
            }
            differs(
                "--skip-invalid",
                was.skip_invalid.to_string(),
                is.skip_invalid.to_string(),
            );
        }
        changes
    }
}

/// Values as a list in words: `none`, or each one's text, by commas.
fn listed<T: std::fmt::Display>(values: impl Iterator<Item = T>) -> String {
    let texts: Vec<String> = values.map(|v| v.to_string()).collect();
    match texts.is_empty() {
        true => "none".to_string(),
        false => texts.join(", "),
    }
}

impl FileStamp {
    /// The stamp of the file at `path`; of a folder of session files, their bytes together and
    /// the SHA-256 of each one's name and stamp, in the order they are read.
    pub fn of(path: &Path) -> std::io::Result<FileStamp> {
        if path.is_dir() {
            // An error about one of the files names it.
            let files = crate::input::session_files::session_paths(path).map_err(|e| {
                if *e.path == *path {
                    std::io::Error::other(e.message)
                } else {
                    std::io::Error::other(e.to_string())
                }
            })?;
            let (mut bytes, mut hasher) = (0, Sha256::new());
            for file in files {
                let stamp = FileStamp::of(&file)?;
                bytes += stamp.bytes;
                hasher.update(file.file_name().unwrap_or_default().as_encoded_bytes());
                hasher.update([0]);
                hasher.update(stamp.ends_sha256.as_bytes());
            }
            return Ok(FileStamp {
                bytes,
                ends_sha256: format!("{:x}", hasher.finalize()),
            });
        }
        const END: u64 = 1 << 20;
        let (mut file, bytes) = fsio::open_regular(path, fsio::cap::STREAM)?;
        let mut hasher = Sha256::new();
        let mut buffer = Vec::with_capacity(END.min(bytes) as usize);
        (&mut file).take(END).read_to_end(&mut buffer)?;
        hasher.update(&buffer);
        if bytes > END {
            file.seek(SeekFrom::Start(bytes.saturating_sub(END).max(END)))?;
            buffer.clear();
            file.take(END).read_to_end(&mut buffer)?;
            hasher.update(&buffer);
        }
        Ok(FileStamp {
            bytes,
            ends_sha256: format!("{:x}", hasher.finalize()),
        })
    }
}

impl std::fmt::Display for FileStamp {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let short = self.ends_sha256.get(..12).unwrap_or(&self.ends_sha256);
        write!(f, "{} bytes, ends {short}", self.bytes)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stamp(text: &[u8]) -> FileStamp {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("data.jsonl");
        std::fs::write(&path, text).unwrap();
        FileStamp::of(&path).unwrap()
    }

    #[test]
    fn a_stamp_changes_with_either_end_of_a_large_file() {
        let large = vec![b'a'; 3 << 20];
        let base = stamp(&large);
        assert_eq!(base, stamp(&large), "the same bytes stamp alike");
        let mut head = large.clone();
        head[10] = b'b';
        let mut tail = large.clone();
        *tail.last_mut().unwrap() = b'b';
        assert_ne!(base, stamp(&head));
        assert_ne!(base, stamp(&tail));
        assert_eq!(base.bytes, 3 << 20);
    }

    #[test]
    fn a_small_file_is_stamped_whole() {
        assert_ne!(stamp(b"{\"a\": 1}\n"), stamp(b"{\"a\": 2}\n"));
    }

    #[test]
    fn a_folder_of_sessions_is_stamped_by_its_session_files() {
        let dir = tempfile::tempdir().unwrap();
        let write = |name: &str, text: &str| std::fs::write(dir.path().join(name), text).unwrap();
        let now = || FileStamp::of(dir.path()).unwrap();
        write("a.jsonl", "{\"sessionId\": \"a\"}\n");
        let one = now();
        assert_eq!(one.bytes, 19);
        // Files other than session files are not read, so not stamped.
        write("notes.txt", "x");
        assert_eq!(now(), one);
        write("b.jsonl", "{\"sessionId\": \"b\"}\n");
        let two = now();
        assert_ne!(two, one);
        write("b.jsonl", "{\"sessionId\": \"c\"}\n");
        let changed = now();
        assert_ne!(changed, two);
        // The same content under another name is another folder.
        std::fs::rename(dir.path().join("b.jsonl"), dir.path().join("c.jsonl")).unwrap();
        assert_ne!(now(), changed);
    }
}
