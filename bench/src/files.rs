//! Writes a workload to disk: datasets, suite files, and the letta-evals results directory that
//! `letta-evals run --cached` re-grades.
//!
//! Layout under the output directory:
//! - `letta/dataset.jsonl`, `letta/suite.yaml` (one suite file that both gavel and letta-evals
//!   load), `letta/cached/{suite.json, summary.json, bench-model.jsonl}`;
//! - `evaldeck/dataset.jsonl`, `evaldeck/suite.yaml`.

use std::fs::{self, File};
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use crate::workload::{MODEL_HANDLE, Run};

/// Which files to write.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Parts {
    pub letta: bool,
    /// The letta-evals results directory (needs `letta`: the suite file lives there).
    pub cached: bool,
    pub evaldeck: bool,
}

impl Parts {
    pub const ALL: Parts = Parts {
        letta: true,
        cached: true,
        evaldeck: true,
    };

    /// Parses a comma-separated list of `letta`, `cached`, `evaldeck`.
    pub fn parse(list: &str) -> Result<Parts, String> {
        let mut parts = Parts {
            letta: false,
            cached: false,
            evaldeck: false,
        };
        for name in list.split(',').map(str::trim).filter(|s| !s.is_empty()) {
            match name {
                "letta" => parts.letta = true,
                "cached" => parts.cached = true,
                "evaldeck" => parts.evaldeck = true,
                other => {
                    return Err(format!(
                        "--parts: unknown part `{other}`; use letta, cached and/or evaldeck"
                    ));
                }
            }
        }
        if parts.cached && !parts.letta {
            return Err("--parts: `cached` needs `letta` (the suite file lives there)".into());
        }
        if !(parts.letta || parts.evaldeck) {
            return Err("--parts: name at least one of letta, evaldeck".into());
        }
        Ok(parts)
    }
}

/// The four letta-evals tool graders, in the order both tools run them.
pub const LETTA_GRADERS: [(&str, &str); 4] = [
    ("contains", "contains"),
    ("exact", "exact_match"),
    ("regex", "regex_match"),
    ("ascii", "ascii_printable_only"),
];

pub const LETTA_SUITE_NAME: &str = "bench-letta";
pub const EVALDECK_SUITE_NAME: &str = "bench-evaldeck";

/// Writes `samples` rows seeded with `seed` under `out`.
pub fn write_workload(out: &Path, samples: u64, seed: u64, parts: Parts) -> io::Result<()> {
    let letta_dir = out.join("letta");
    let cached_dir = letta_dir.join("cached");
    let evaldeck_dir = out.join("evaldeck");
    let mut letta = None;
    let mut cached = None;
    let mut evaldeck = None;
    if parts.letta {
        fs::create_dir_all(&letta_dir)?;
        fs::write(letta_dir.join("suite.yaml"), letta_suite())?;
        letta = Some(create(letta_dir.join("dataset.jsonl"))?);
    }
    if parts.cached {
        fs::create_dir_all(&cached_dir)?;
        cached = Some((
            create(cached_dir.join(format!("{MODEL_HANDLE}.jsonl")))?,
            CachedSuite::create(&cached_dir)?,
        ));
    }
    if parts.evaldeck {
        fs::create_dir_all(&evaldeck_dir)?;
        fs::write(evaldeck_dir.join("suite.yaml"), evaldeck_suite())?;
        evaldeck = Some(create(evaldeck_dir.join("dataset.jsonl"))?);
    }

    for index in 0..samples {
        let run = Run::generate(seed, index);
        if let Some(file) = letta.as_mut() {
            let trajectory = run.letta_trajectory();
            write_line(file, &run.letta_row(&trajectory))?;
            if let Some((results, suite)) = cached.as_mut() {
                write_line(results, &run.letta_cached_result(&trajectory))?;
                suite.sample(&run)?;
            }
        }
        if let Some(file) = evaldeck.as_mut() {
            write_line(file, &run.evaldeck_row())?;
        }
    }

    for file in [letta, evaldeck].into_iter().flatten() {
        finish(file)?;
    }
    if let Some((results, suite)) = cached {
        finish(results)?;
        suite.finish(samples)?;
    }
    Ok(())
}

fn create(path: PathBuf) -> io::Result<BufWriter<File>> {
    Ok(BufWriter::with_capacity(1 << 20, File::create(path)?))
}

fn write_line(out: &mut impl Write, value: &Value) -> io::Result<()> {
    serde_json::to_writer(&mut *out, value)?;
    out.write_all(b"\n")
}

fn finish(mut file: BufWriter<File>) -> io::Result<()> {
    file.flush()?;
    file.into_inner().map_err(|e| e.into_error())?.sync_all()
}

/// The letta suite. letta-evals needs `target` and `reward`; gavel accepts `target` with a
/// notice, so one file serves both tools.
fn letta_suite() -> String {
    let mut yaml = format!(
        "name: {LETTA_SUITE_NAME}\n\
         description: Synthetic one-turn runs graded by the four letta-evals tool graders.\n\
         dataset: dataset.jsonl\n\
         target:\n  kind: letta_code\n  model_handles: [{MODEL_HANDLE}]\n\
         graders:\n"
    );
    for (key, function) in LETTA_GRADERS {
        yaml.push_str(&format!(
            "  {key}:\n    kind: tool\n    function: {function}\n    extractor: last_assistant\n"
        ));
    }
    yaml.push_str(&format!(
        "reward:\n  kind: metric\n  metric_key: {}\n",
        LETTA_GRADERS[0].0
    ));
    yaml
}

fn evaldeck_suite() -> String {
    format!(
        "name: {EVALDECK_SUITE_NAME}\n\
         description: The same runs as evaldeck traces, graded by each case's expected block.\n\
         dataset: dataset.jsonl\n\
         graders:\n  expected:\n    kind: expectations\n"
    )
}

/// `suite.json` of a letta-evals results directory, streamed: its `samples` list has one entry
/// per row.
struct CachedSuite {
    dir: PathBuf,
    file: BufWriter<File>,
    first: bool,
}

impl CachedSuite {
    fn create(dir: &Path) -> io::Result<CachedSuite> {
        let mut file = create(dir.join("suite.json"))?;
        let graders: serde_json::Map<String, Value> = LETTA_GRADERS
            .iter()
            .map(|(key, function)| {
                (
                    key.to_string(),
                    json!({"kind": "tool", "function": function, "extractor": "last_assistant"}),
                )
            })
            .collect();
        let config = json!({
            "name": LETTA_SUITE_NAME,
            "dataset": "dataset.jsonl",
            "target": {"kind": "letta_code", "model_handles": [MODEL_HANDLE]},
            "graders": graders,
            "reward": {"kind": "metric", "metric_key": LETTA_GRADERS[0].0},
        });
        write!(
            file,
            "{{\"suite\": {}, \"config\": {}, \"samples\": [",
            json!(LETTA_SUITE_NAME),
            config
        )?;
        Ok(CachedSuite {
            dir: dir.to_path_buf(),
            file,
            first: true,
        })
    }

    fn sample(&mut self, run: &Run) -> io::Result<()> {
        if !self.first {
            self.file.write_all(b",")?;
        }
        self.first = false;
        let sample = json!({"id": run.id, "input": run.input, "ground_truth": run.ground_truth});
        serde_json::to_writer(&mut self.file, &sample).map_err(io::Error::from)
    }

    /// Closes `suite.json` and writes the `summary.json` letta-evals requires beside it.
    fn finish(mut self, samples: u64) -> io::Result<()> {
        self.file.write_all(b"]}\n")?;
        finish(self.file)?;
        let summary = json!({
            "suite": LETTA_SUITE_NAME,
            "models": [{
                "model": MODEL_HANDLE,
                "n_total": samples,
                "n_attempted": samples,
                "reward": 0.0,
                "per_metric": {},
                "usage": {"prompt_tokens": 0, "completion_tokens": 0},
                "timing": {"mean_total": 0.0, "mean_target": 0.0, "p50_total": 0.0, "p95_total": 0.0},
            }],
        });
        fs::write(
            self.dir.join("summary.json"),
            serde_json::to_string_pretty(&summary)?,
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parts_parse_and_reject_clearly() {
        assert_eq!(Parts::parse("letta,cached,evaldeck"), Ok(Parts::ALL));
        assert_eq!(
            Parts::parse("evaldeck"),
            Ok(Parts {
                letta: false,
                cached: false,
                evaldeck: true
            })
        );
        assert!(
            Parts::parse("cached")
                .unwrap_err()
                .contains("needs `letta`")
        );
        assert!(Parts::parse("letta,bogus").unwrap_err().contains("`bogus`"));
        assert!(Parts::parse("").is_err());
    }

    #[test]
    fn writes_every_file_with_one_line_per_sample() {
        let dir = tempfile::tempdir().unwrap();
        write_workload(dir.path(), 25, 3, Parts::ALL).unwrap();
        let lines = |p: &str| {
            fs::read_to_string(dir.path().join(p))
                .unwrap()
                .lines()
                .map(|l| serde_json::from_str::<Value>(l).unwrap())
                .collect::<Vec<_>>()
        };
        let letta = lines("letta/dataset.jsonl");
        let cached = lines("letta/cached/bench-model.jsonl");
        let evaldeck = lines("evaldeck/dataset.jsonl");
        assert_eq!((letta.len(), cached.len(), evaldeck.len()), (25, 25, 25));
        assert_eq!(letta[7]["trajectory"], cached[7]["trajectory"]);
        assert_eq!(letta[7]["input"], evaldeck[7]["input"]);

        let suite: Value = serde_json::from_str(
            &fs::read_to_string(dir.path().join("letta/cached/suite.json")).unwrap(),
        )
        .unwrap();
        assert_eq!(suite["samples"].as_array().unwrap().len(), 25);
        assert_eq!(
            suite["samples"][7]["ground_truth"],
            letta[7]["ground_truth"]
        );
        let summary: Value = serde_json::from_str(
            &fs::read_to_string(dir.path().join("letta/cached/summary.json")).unwrap(),
        )
        .unwrap();
        assert_eq!(summary["models"][0]["model"], MODEL_HANDLE);

        let yaml = fs::read_to_string(dir.path().join("letta/suite.yaml")).unwrap();
        for (key, function) in LETTA_GRADERS {
            assert!(yaml.contains(&format!(
                "  {key}:\n    kind: tool\n    function: {function}\n"
            )));
        }
    }

    #[test]
    fn rows_parse_as_gavel_dataset_rows() {
        use gavel::input::sample::{RawRow, Texts};
        for index in 0..200 {
            let run = Run::generate(5, index);
            let letta = run.letta_row(&run.letta_trajectory()).to_string();
            let row: RawRow = serde_json::from_str(&letta).unwrap();
            assert_eq!(row.ground_truth, Some(Texts::One(run.ground_truth.clone())));
            assert!(row.trajectory.unwrap().get().starts_with("[["));

            let evaldeck = run.evaldeck_row().to_string();
            let row: RawRow = serde_json::from_str(&evaldeck).unwrap();
            let expected = row.expected.unwrap();
            assert_eq!(
                expected.output_matches.as_deref(),
                Some(run.output_matches.as_str())
            );
            assert_eq!(expected.max_steps, Some(run.max_steps));
            assert_eq!(expected.tools_called.unwrap()[0], run.tool);
        }
    }

    #[test]
    fn same_seed_writes_the_same_bytes() {
        let a = tempfile::tempdir().unwrap();
        let b = tempfile::tempdir().unwrap();
        let only_evaldeck = Parts::parse("evaldeck").unwrap();
        write_workload(a.path(), 10, 9, only_evaldeck).unwrap();
        write_workload(b.path(), 10, 9, only_evaldeck).unwrap();
        let read = |d: &Path| fs::read(d.join("evaldeck/dataset.jsonl")).unwrap();
        assert_eq!(read(a.path()), read(b.path()));
        assert!(!a.path().join("letta").exists());
    }
}
