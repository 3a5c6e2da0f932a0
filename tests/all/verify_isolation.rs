//! `gavel run --verify-isolation N`: after the run, N samples chosen by a seed are graded again
//! with every Python call in a fresh instance; each grade that differs from the run's is
//! reported in the summary and on stderr, and fails the run.

use crate::common::{Workspace, stderr};
use crate::python_graders::{cache, gavel, paris_row};
use crate::warm_python::COUNTING;
use serde_json::Value;

/// A grader whose grade depends on its sample alone.
const PURE: &str = r#"from letta_evals.decorators import grader
from letta_evals.models import GradeResult


@grader
def counted(sample, submission):
    return GradeResult(score=1.0 if "Paris" in submission else 0.0, rationale=submission)
"#;

const ROWS: i64 = 20;

fn suite(ws: &Workspace, grader: &str) {
    ws.write("graders/g.py", grader);
    ws.write(
        "suite.yaml",
        "name: verify\ndataset: data.jsonl\ngraders:\n  graded:\n    kind: tool\n    \
         function: graders/g.py:counted\n",
    );
    let rows: Vec<Value> = (0..ROWS)
        .map(|i| paris_row(i, if i % 3 == 0 { "Rome" } else { "Paris" }))
        .collect();
    ws.write_rows("data.jsonl", &rows);
}

fn summary(ws: &Workspace, out: &str) -> Value {
    let text = std::fs::read_to_string(ws.path(out).join("summary.json")).expect("summary.json");
    serde_json::from_str(&text).expect("summary.json is JSON")
}

fn results(ws: &Workspace, out: &str) -> String {
    std::fs::read_to_string(ws.path(out).join("results.jsonl")).expect("results.jsonl")
}

#[test]
fn a_grader_that_keeps_state_between_samples_is_reported_and_fails_the_run() {
    let Some(cache) = cache() else { return };
    let ws = Workspace::new();
    suite(&ws, COUNTING);
    let plain = gavel(
        cache,
        ws.dir.path(),
        &["run", "suite.yaml", "-o", "plain", "-q"],
    );
    assert_eq!(plain.status.code(), Some(0), "{}", stderr(&plain));
    let args = [
        "run",
        "suite.yaml",
        "-o",
        "checked",
        "-q",
        "--verify-isolation",
        "5",
    ];
    let checked = gavel(cache, ws.dir.path(), &args);
    let err = stderr(&checked);
    assert_eq!(checked.status.code(), Some(1), "{err}");
    // The run's own results are the same bytes as without the check.
    assert_eq!(results(&ws, "checked"), results(&ws, "plain"));
    let check = &summary(&ws, "checked")["isolation_check"];
    assert_eq!(check["seed"], 1);
    let samples = check["samples"].as_array().expect("samples");
    assert_eq!(samples.len(), 5);
    let differences = check["differences"].as_array().expect("differences");
    // Every sample but a batch's first saw the count of the samples before it.
    let later: Vec<&Value> = samples.iter().filter(|id| **id != 0).collect();
    assert_eq!(differences.len(), later.len(), "{check}");
    assert!(!later.is_empty());
    for (difference, id) in differences.iter().zip(later) {
        let n = id.as_i64().expect("an integer id");
        assert_eq!(difference["grader"], "graded");
        assert_eq!(&difference["sample_id"], id);
        assert_eq!(difference["batch"]["rationale"], format!("call {}", n + 1));
        assert_eq!(difference["fresh"]["rationale"], "call 1");
        assert!(
            err.contains(&format!("grader `graded`, sample {n}: batch ")),
            "{err}"
        );
    }
    assert!(err.contains("isolation differs"), "{err}");
}

#[test]
fn a_pure_grader_passes_the_check_and_the_seed_chooses_the_samples() {
    let Some(cache) = cache() else { return };
    let ws = Workspace::new();
    suite(&ws, PURE);
    let plain = gavel(cache, ws.dir.path(), &["run", "suite.yaml", "-o", "plain"]);
    assert_eq!(plain.status.code(), Some(0), "{}", stderr(&plain));
    let mut chosen = Vec::new();
    for (out, seed) in [("a", "7"), ("b", "7"), ("c", "8")] {
        let args = [
            "run",
            "suite.yaml",
            "-o",
            out,
            "--verify-isolation",
            "4",
            "--verify-seed",
            seed,
        ];
        let checked = gavel(cache, ws.dir.path(), &args);
        let err = stderr(&checked);
        assert_eq!(checked.status.code(), Some(0), "{err}");
        assert!(err.contains("isolation verified: 4 samples"), "{err}");
        assert_eq!(results(&ws, out), results(&ws, "plain"));
        let mut summary = summary(&ws, out);
        let check = summary
            .as_object_mut()
            .and_then(|s| s.remove("isolation_check"))
            .expect("isolation_check");
        assert_eq!(check["differences"], Value::Array(Vec::new()));
        // The rest of the summary is the run's.
        assert_eq!(summary, self::summary(&ws, "plain"));
        chosen.push(check["samples"].clone());
    }
    assert_eq!(chosen[0], chosen[1], "one seed chooses the same samples");
    assert_ne!(chosen[0], chosen[2], "another seed chooses others");
}

/// Shards checked with `--verify-isolation` merge into one check of every sample they graded
/// again, in input order: a difference in any shard fails the merge as it failed the shard.
#[test]
fn the_shards_checks_are_joined_by_merge_and_fail_it() {
    let Some(cache) = cache() else { return };
    let ws = Workspace::new();
    suite(&ws, COUNTING);
    for i in 0..2 {
        let (shard, out) = (format!("{i}/2"), format!("shard{i}"));
        let args = [
            "run",
            "suite.yaml",
            "--shard",
            &shard,
            "-o",
            &out,
            "-q",
            "--verify-isolation",
            "4",
        ];
        let checked = gavel(cache, ws.dir.path(), &args);
        assert_eq!(checked.status.code(), Some(1), "{}", stderr(&checked));
    }
    let args = ["merge", "shard0", "shard1", "-o", "merged", "-q"];
    let merged = gavel(cache, ws.dir.path(), &args);
    let err = stderr(&merged);
    assert_eq!(merged.status.code(), Some(1), "{err}");
    assert!(err.contains("isolation differs"), "{err}");
    let check = &summary(&ws, "merged")["isolation_check"];
    let samples: Vec<i64> = (check["samples"].as_array().expect("samples").iter())
        .map(|id| id.as_i64().expect("an integer id"))
        .collect();
    assert_eq!(samples.len(), 8, "{check}");
    assert!(samples.windows(2).all(|w| w[0] < w[1]), "{samples:?}");
    let mut shards: Vec<i64> = Vec::new();
    for out in ["shard0", "shard1"] {
        let shard = &summary(&ws, out)["isolation_check"];
        shards.extend(
            shard["samples"]
                .as_array()
                .unwrap()
                .iter()
                .map(|id| id.as_i64().unwrap()),
        );
        for difference in shard["differences"].as_array().unwrap() {
            assert!(
                check["differences"]
                    .as_array()
                    .unwrap()
                    .contains(difference),
                "{difference}"
            );
        }
    }
    shards.sort();
    assert_eq!(samples, shards);
    let differing: Vec<i64> = (check["differences"].as_array().unwrap().iter())
        .map(|d| d["sample_id"].as_i64().unwrap())
        .collect();
    assert!(!differing.is_empty());
    assert!(differing.windows(2).all(|w| w[0] <= w[1]), "{differing:?}");
}
