//! `gavel merge DIR... -o OUT`: the folders of a run's shards (`gavel run --shard I/N`) joined
//! into the folder one process grading every sample would have written. The shards' records
//! are checked to be of one run and to cover it once; the dataset is read again, in order, and
//! each sample's line taken from the shard its id hashes to, so `results.jsonl` is the
//! unsharded run's byte for byte; the summary, the gate and the JUnit report are then made from
//! those lines by the code a run makes them with.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};

use super::engine::{Selected, Selection};
use super::session::{Output, Policy};
use super::verify::{Difference, IsolationCheck};
use super::{
    Graded, Observer, Prepared, RESULTS_FILE, RunError, RunFailure, RunOptions, aggregator,
    conclude, finish_junit, inputs_of, judge_down, never_answered, open_junit, outputs, record_of,
    write_error,
};
use crate::fsio;
use crate::input::sample::SampleId;
use crate::input::select::{result_id, shard_of_next};
use crate::input::shard::Shard;
use crate::output::SUMMARY_FILE;
use crate::output::record::{
    JudgeCalls, JudgeDown, Progress, RecordError, RunRecord, State, Tokens,
};
use crate::output::result::{ResultLines, ResultsError, parse_line};
use crate::run::Filter;

/// Why shards cannot be merged; each names the folder (and file and field) at fault and what
/// to do.
#[derive(Debug, thiserror::Error)]
pub enum MergeError {
    #[error(
        "{}: no run.json, so not the folder of a shard; give the folders `gavel run SUITE \
         --shard I/N -o DIR` wrote",
        .dir.display()
    )]
    NoRecord { dir: PathBuf },
    #[error(
        "{}: field `shard` is absent: the folder holds a whole run, not a shard; give only the \
         folders of `gavel run SUITE --shard I/N`",
        .path.display()
    )]
    NotAShard { path: PathBuf },
    #[error(
        "{}: shard {shard} is unfinished; finish it with `gavel run {} --shard {shard} --resume \
         -o {}`, then merge",
        .path.display(), .suite.display(), .dir.display()
    )]
    Unfinished {
        path: PathBuf,
        dir: PathBuf,
        suite: PathBuf,
        shard: Shard,
    },
    #[error(
        "{}: field `shard` is {shard}, a split into {}, where {} is {first}; merge the shards \
         of one split, all graded with the same N",
        .path.display(), .shard.count, .first_path.display()
    )]
    Split {
        path: PathBuf,
        shard: Shard,
        first_path: PathBuf,
        first: Shard,
    },
    #[error(
        "{}: not a shard of the same run as {}:\n  {}\nmerge only the shards of one run: the \
         same suite file, dataset, filters and gavel",
        .path.display(), .first_path.display(), .changes.join("\n  ")
    )]
    OtherRun {
        path: PathBuf,
        first_path: PathBuf,
        changes: Vec<String>,
    },
    #[error(
        "{} and {} are both shard {shard}; give each shard's folder once",
        .first.display(), .second.display()
    )]
    Overlap {
        shard: Shard,
        first: PathBuf,
        second: PathBuf,
    },
    #[error(
        "missing shard{} {} of {count}: grade {} with `gavel run {} --shard {}/{count} -o DIR` \
         and give {} folder{} too",
        if .missing.len() == 1 { "" } else { "s" },
        .missing.iter().map(u32::to_string).collect::<Vec<_>>().join(", "),
        if .missing.len() == 1 { "it" } else { "each" },
        .suite.display(),
        match .missing[..] { [one] => one.to_string(), _ => "I".to_string() },
        if .missing.len() == 1 { "its" } else { "their" },
        if .missing.len() == 1 { "" } else { "s" }
    )]
    Missing {
        missing: Vec<u32>,
        count: u32,
        suite: PathBuf,
    },
    #[error(
        "the inputs changed since the shards were graded ({} records them):\n  {}\nput back \
         what changed, or grade the shards again",
        .path.display(), .changes.join("\n  ")
    )]
    Changed { path: PathBuf, changes: Vec<String> },
    #[error("{}:{line}: {what}; grade shard {shard} again (without --resume)", .path.display())]
    Results {
        path: PathBuf,
        line: u64,
        shard: Shard,
        what: String,
    },
    #[error(
        "{} is one of the shards' folders; write the merged run to a folder of its own",
        .dir.display()
    )]
    IntoAShard { dir: PathBuf },
}

/// The records of a run's shards, checked to be of one run and to cover it once.
pub struct Shards {
    /// Each shard's folder and record, in shard order.
    shards: Vec<(PathBuf, RunRecord)>,
}

impl Shards {
    /// Reads and checks the records in `dirs`; every problem found, in the order of `dirs`.
    pub fn read(dirs: &[PathBuf]) -> Result<Shards, RunFailure> {
        let mut errors = Vec::new();
        let mut found: Vec<(PathBuf, RunRecord, Shard)> = Vec::new();
        for dir in dirs {
            let path = dir.join(crate::output::record::RUN_FILE);
            let record = match RunRecord::read(dir) {
                Ok(Some(record)) => record,
                Ok(None) => {
                    errors.push(MergeError::NoRecord { dir: dir.clone() }.into());
                    continue;
                }
                Err(e) => {
                    errors.push(e.into());
                    continue;
                }
            };
            let Some(shard) = record.shard else {
                errors.push(MergeError::NotAShard { path }.into());
                continue;
            };
            if record.unfinished() {
                errors.push(
                    MergeError::Unfinished {
                        path: path.clone(),
                        dir: dir.clone(),
                        suite: record.suite.clone(),
                        shard,
                    }
                    .into(),
                );
            }
            if let Some((first_dir, first_record, first)) = found.first() {
                let first_path = first_dir.join(crate::output::record::RUN_FILE);
                if first.count != shard.count {
                    errors.push(
                        MergeError::Split {
                            path: path.clone(),
                            shard,
                            first_path: first_path.clone(),
                            first: *first,
                        }
                        .into(),
                    );
                }
                // Machines may hold the suite and dataset at other paths: with fingerprints,
                // their contents are compared.
                let fingerprinted =
                    first_record.fingerprint.is_some() && record.fingerprint.is_some();
                let (suite, dataset) = if fingerprinted {
                    (first_record.suite.clone(), first_record.dataset.clone())
                } else {
                    (record.suite.clone(), record.dataset.clone())
                };
                let changes = first_record.changes(&RunRecord {
                    shard: first_record.shard,
                    suite,
                    dataset,
                    ..record.clone()
                });
                if !changes.is_empty() {
                    errors.push(
                        MergeError::OtherRun {
                            path: path.clone(),
                            first_path,
                            changes,
                        }
                        .into(),
                    );
                }
            }
            if let Some((other, ..)) = found.iter().find(|(.., s)| *s == shard) {
                errors.push(
                    MergeError::Overlap {
                        shard,
                        first: other.clone(),
                        second: dir.clone(),
                    }
                    .into(),
                );
                continue;
            }
            found.push((dir.clone(), record, shard));
        }
        if let Some((_, record, first)) = found.first()
            && errors.is_empty()
        {
            let missing: Vec<u32> = (0..first.count)
                .filter(|index| !found.iter().any(|(.., s)| s.index == *index))
                .collect();
            if !missing.is_empty() {
                errors.push(
                    MergeError::Missing {
                        missing,
                        count: first.count,
                        suite: record.suite.clone(),
                    }
                    .into(),
                );
            }
        }
        if let Some(failure) = RunFailure::of(errors) {
            return Err(failure);
        }
        found.sort_by_key(|(.., shard)| shard.index);
        Ok(Shards {
            shards: found
                .into_iter()
                .map(|(dir, record, _)| (dir, record))
                .collect(),
        })
    }

    /// The record of the first shard, which every other's matches.
    pub fn record(&self) -> &RunRecord {
        &self.shards[0].1
    }
}

/// Joins `shards` into `out_dir` (replacing an unfinished run or someone else's results there
/// only if `overwrite`) and the JUnit report at `junit`, for the suite they graded, prepared
/// again here; `observer` sees each result, as an earlier run's.
pub fn merge(
    prepared: &Prepared,
    shards: &Shards,
    out_dir: &Path,
    overwrite: bool,
    junit_path: Option<&Path>,
    observer: &mut dyn Observer,
) -> Result<Graded, RunFailure> {
    let started = std::time::Instant::now();
    let first = shards.record();
    let fingerprint = first.fingerprint.as_ref();
    let options = RunOptions {
        filters: first.filters.iter().map(|f| Filter::parse(f)).collect(),
        skip_invalid: fingerprint.is_some_and(|f| f.skip_invalid),
        ..RunOptions::default()
    };
    let selection = Selection {
        max_samples: first.max_samples,
        filters: options.filters.clone(),
        skip: 0,
        shard: None,
    };
    let mut record = record_of(prepared, &options, &selection)?;
    let changes = RunRecord {
        shard: None,
        ..first.clone()
    }
    .changes(&record);
    let first_path = shards.shards[0].0.join(crate::output::record::RUN_FILE);
    if !changes.is_empty() {
        return Err(MergeError::Changed {
            path: first_path,
            changes,
        }
        .into());
    }
    // A folder that does not exist yet is no shard's: checked before it is made, so that a
    // refused merge leaves nothing behind.
    let into_shard = shards
        .shards
        .iter()
        .find(|(dir, _)| fsio::same_file(dir, out_dir));
    if let Some((dir, _)) = into_shard {
        return Err(MergeError::IntoAShard { dir: dir.clone() }.into());
    }
    let shard_files = shards.shards.iter().flat_map(|(dir, record)| {
        let shard = shard_of(record);
        crate::output::run_files(dir)
            .map(move |(what, path)| (format!("shard {shard}'s {what}"), path))
    });
    let reads: Vec<_> = inputs_of(prepared).into_iter().chain(shard_files).collect();
    fsio::refuse_overwriting(&outputs(out_dir, junit_path), &reads).map_err(RunError::from)?;
    // What `gavel run` would not replace unasked, a merge does not either.
    super::PreviousRecord::read(out_dir)?.replaceable(
        out_dir,
        &out_dir.join(RESULTS_FILE),
        overwrite,
    )?;
    std::fs::create_dir_all(out_dir).map_err(|source| RunError::OutputDir {
        dir: out_dir.to_path_buf(),
        source,
    })?;
    let total = shards
        .shards
        .iter()
        .filter_map(|(_, r)| r.progress.as_ref()?.results)
        .sum::<u64>();
    let mut aggregator = aggregator(prepared, move || total);
    let mut junit = open_junit(prepared, junit_path)?;
    let results_path = out_dir.join(RESULTS_FILE);
    let mut results = Output::open(Policy::Fresh, &results_path)?;
    let mut lines = Vec::new();
    for (dir, record) in &shards.shards {
        let path = dir.join(RESULTS_FILE);
        let shard = shard_of(record);
        lines.push((ResultLines::open(&path)?, path, shard));
    }
    let count = lines.len() as u32;
    let metrics: Vec<&str> = prepared.plan.metrics.iter().map(|m| m.key).collect();
    let checks = isolation_checks(shards)?;
    // The samples the shards graded again, met in input order as the results are merged.
    let mut rechecked: HashMap<String, usize> = HashMap::new();
    for id in checks.iter().flat_map(|c| &c.samples) {
        *rechecked.entry(id.to_string()).or_default() += 1;
    }
    let mut order: Vec<SampleId> = Vec::new();
    let joined = (|| -> Result<(), RunError> {
        let items = prepared.items()?;
        let mut selected = Selected::new(items, selection);
        let mut junit_error = None;
        while let Some(next) = selected.next_of_any_shard() {
            let (kept, path, shard) = &mut lines[shard_of_next(&next, count) as usize];
            let id = next.as_ref().ok().and_then(result_id);
            let at = |line: u64, what: String| MergeError::Results {
                path: path.clone(),
                line,
                shard: *shard,
                what,
            };
            let line = kept.line + 1;
            let text = kept
                .next_line()
                .map_err(|source| read_error(path, source))?
                .ok_or_else(|| {
                    let sample = id.as_deref().unwrap_or("(unreadable)");
                    at(line, format!("the file ends before sample `{sample}`"))
                })?;
            let result = parse_line(text).map_err(|e| at(line, e.to_string()))?;
            let held = result.sample_id.to_string();
            if let Some(id) = id.filter(|id| *id != held) {
                return Err(at(
                    line,
                    format!("the result of sample `{held}`, where the shard's next is `{id}`"),
                )
                .into());
            }
            if let Some(what) = result.foreign_grades(&metrics) {
                return Err(at(line, format!("sample `{held}`: {what}")).into());
            }
            if let Some(left) = rechecked.get_mut(&held).filter(|left| **left > 0) {
                *left -= 1;
                order.push(result.sample_id.clone());
            }
            results
                .file()
                .append(text)
                .map_err(|source| write_error(&results_path, source))?;
            aggregator.add(&result);
            if let Some(writer) = junit.as_mut()
                && let Err(e) = writer.add(&result)
            {
                junit_error.get_or_insert(e);
            }
            observer.previous(&result);
        }
        if let Some(e) = junit_error {
            return Err(RunError::Junit(e));
        }
        for (kept, path, shard) in &mut lines {
            let line = kept.line + 1;
            if let Some(text) = kept
                .next_line()
                .map_err(|source| read_error(path, source))?
            {
                let what = match parse_line(text) {
                    Ok(r) => format!(
                        "sample `{}`, a result more than the shard's samples (a line written \
                         twice, or one of another run)",
                        r.sample_id
                    ),
                    Err(_) => "a line more than the shard's samples".to_string(),
                };
                return Err(MergeError::Results {
                    path: path.clone(),
                    line,
                    shard: *shard,
                    what,
                }
                .into());
            }
        }
        Ok(())
    })();
    if let Err(e) = joined {
        return Err(RunFailure::from(e).with(results.take_back()));
    }
    results.keep()?;
    let isolation = (!checks.is_empty()).then(|| {
        let mut differences: Vec<Difference> = (checks.iter())
            .flat_map(|c| c.differences.iter().cloned())
            .collect();
        differences.sort_by_key(|d| order.iter().position(|id| *id == d.sample_id));
        IsolationCheck {
            seed: checks[0].seed,
            samples: order,
            differences,
        }
    });
    let concluded = conclude(
        prepared,
        aggregator,
        out_dir,
        false,
        None,
        isolation.as_ref(),
    )?;
    finish_junit(junit, junit_path)?;
    let mut progress = merged_progress(shards, concluded.0.counts.total, started);
    progress.judge_calls = judge_calls_in(shards);
    let judge_failed = match judge_down_in(shards) {
        Some((stopped, error)) => {
            progress.judge_down = Some(stopped);
            Some(error)
        }
        None => JudgeCalls::never_answered(&progress.judge_calls)
            .map(|calls| never_answered(calls.clone(), out_dir)),
    };
    record.progress = Some(progress);
    record.merged = (shards.shards.iter())
        .map(|(dir, _)| std::path::absolute(dir).unwrap_or_else(|_| dir.clone()))
        .collect();
    record.write(out_dir)?;
    Ok(Graded {
        judge_failed,
        isolation,
        ..Graded::whole(concluded, out_dir.to_path_buf(), results_path, record)
    })
}

/// The shard a record of [`Shards`] is of: [`Shards::read`] keeps only records that name one.
fn shard_of(record: &RunRecord) -> Shard {
    record.shard.unwrap_or(Shard { index: 0, count: 1 })
}

/// A shard's results file that could not be read at a line.
fn read_error(path: &Path, source: std::io::Error) -> RunError {
    RunError::from(ResultsError::Read {
        path: path.to_path_buf(),
        source,
    })
}

/// The shards' `--verify-isolation` checks, from their summaries (none from a shard that made
/// none).
fn isolation_checks(shards: &Shards) -> Result<Vec<IsolationCheck>, RunError> {
    #[derive(serde::Deserialize)]
    struct Checked {
        #[serde(default)]
        isolation_check: Option<IsolationCheck>,
    }
    let mut checks = Vec::new();
    for (dir, record) in &shards.shards {
        let path = dir.join(SUMMARY_FILE);
        let text = fsio::read_text(&path, fsio::cap::DOCUMENT).map_err(|source| {
            RunError::from(RecordError::Read {
                path: path.clone(),
                source,
            })
        })?;
        let checked: Checked = serde_json::from_str(&text).map_err(|e| MergeError::Results {
            path: path.clone(),
            line: e.line() as u64,
            shard: shard_of(record),
            what: format!("not a summary gavel wrote: {e}"),
        })?;
        checks.extend(checked.isolation_check);
    }
    Ok(checks)
}

/// The judges' gradings of the shards' last passes added up, judge by judge: a merged run
/// whose judge answered none of them fails as one run whose judge answered none fails.
fn judge_calls_in(shards: &Shards) -> Vec<JudgeCalls> {
    let mut sum: Vec<JudgeCalls> = Vec::new();
    for (_, record) in &shards.shards {
        let Some(progress) = &record.progress else {
            continue;
        };
        if sum.is_empty() {
            sum.clone_from(&progress.judge_calls);
            continue;
        }
        // One suite's plan: the same judges in the same order, or none asked.
        for (total, calls) in sum.iter_mut().zip(&progress.judge_calls) {
            total.absorb(calls);
        }
    }
    sum
}

/// Why the merged run fails as the shard's run did: the judge that could not be used when it
/// stopped a shard's `--retry-errors`, and the error naming how to retry that shard.
fn judge_down_in(shards: &Shards) -> Option<(JudgeDown, RunError)> {
    shards.shards.iter().find_map(|(dir, record)| {
        let progress = record.progress.as_ref()?;
        let stopped = progress.judge_down.clone()?;
        let shard = record.shard?;
        let next = format!(
            "`gavel run {} --shard {shard} --retry-errors -o {}` retries what is still in \
             error, and then merge again",
            record.suite.display(),
            dir.display()
        );
        let error = judge_down(
            stopped.clone(),
            progress.results.unwrap_or(0),
            dir.clone(),
            next,
        );
        Some((stopped, error))
    })
}

/// The merged run's progress: from the first shard's start to the last shard's end (the merge
/// not counted), with the judges' tokens of every shard.
fn merged_progress(shards: &Shards, results: u64, merging: std::time::Instant) -> Progress {
    let mut progress = Progress::running();
    let mut span: Option<(std::time::SystemTime, std::time::SystemTime)> = None;
    let mut tokens: BTreeMap<String, Tokens> = BTreeMap::new();
    for (_, record) in &shards.shards {
        let Some(shard) = &record.progress else {
            continue;
        };
        if let Ok(start) = httpdate::parse_http_date(&shard.started) {
            let end = start + std::time::Duration::from_secs_f64(shard.seconds.unwrap_or(0.0));
            span = Some(span.map_or((start, end), |(s, e)| (s.min(start), e.max(end))));
        }
        for (model, counted) in &shard.judge_tokens {
            tokens.entry(model.clone()).or_default().absorb(counted);
        }
    }
    let seconds = match span {
        Some((start, end)) => {
            progress.started = httpdate::fmt_http_date(start);
            end.duration_since(start).unwrap_or_default()
        }
        None => merging.elapsed(),
    };
    progress.state = State::Complete;
    progress.seconds = Some(seconds.as_secs_f64());
    progress.results = Some(results);
    progress.judge_tokens = tokens;
    progress
}
