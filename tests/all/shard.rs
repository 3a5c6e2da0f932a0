//! `gavel run --shard I/N` in N processes, then `gavel merge`: the merged folder is the run one
//! process makes, byte for byte; shards of other runs, overlapping or missing are refused,
//! naming which; a shard resumes like a run.

use std::path::Path;
use std::process::{Command, Output};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use crate::common::{Workspace, gavel_command, stderr};
use crate::openai_server::Server;
use crate::python_graders::{cache, paris_row};
use crate::retry::{fails_first, gavel, judged, judged_run, judged_workspace};
use crate::warm_python::COUNTING;
use gavel::grade::pack::BATCH_ROWS;
use serde_json::{Value, json};

/// The quickstart's four recorded runs, each repeated under new ids.
fn quickstart_rows(ws: &Workspace, name: &str, rows: usize) {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/quickstart/data.jsonl");
    let text = std::fs::read_to_string(root).expect("the quickstart's data");
    let kinds: Vec<Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).expect("a row"))
        .collect();
    let rows: Vec<Value> = (0..rows)
        .map(|i| {
            let mut row = kinds[i % kinds.len()].clone();
            row["id"] = format!("{}-{i}", row["id"].as_str().expect("an id")).into();
            row
        })
        .collect();
    ws.write_rows(name, &rows);
}

/// Built-in graders (letta-evals, evaldeck, `expected:`), a WebAssembly pack's, and a Python
/// grader when `python`; the gate is the whole run's, and fails.
fn suite(python: bool) -> String {
    let pack = gavel_test_artifacts::packs::FORMATS;
    let mut text = format!(
        "name: sharded\ndataset: data.jsonl\npacks:\n  formats:\n    path: {pack}\ngraders:\n  \
         answer:\n    kind: tool\n    function: contains\n  confirmation:\n    kind: tool\n    \
         function: formats.confirmation\n  booked:\n    kind: tool\n    function: tools_called\n    \
         config:\n      required: [book_flight]\n  behaviour:\n    kind: expectations\n"
    );
    if python {
        text.push_str(
            "  said:\n    kind: tool\n    function: graders/said.py:said\n    extractor: \
             last_assistant\n",
        );
    }
    text.push_str(
        "gate:\n  kind: simple\n  metric_key: answer\n  aggregation: avg_score\n  op: gte\n  \
         value: 0.9\n",
    );
    text
}

const SAID: &str = r#"from letta_evals.decorators import grader
from letta_evals.models import GradeResult


@grader
def said(sample, submission):
    booked = "booked" in submission.lower()
    return GradeResult(score=1.0 if booked else 0.0, rationale=f"{len(submission)} characters")
"#;

/// Runs every command at once, each its own process, and waits for them all.
fn all_at_once(commands: Vec<Command>) -> Vec<Output> {
    let children: Vec<_> = commands
        .into_iter()
        .map(|mut c| c.spawn().expect("gavel starts"))
        .collect();
    children
        .into_iter()
        .map(|c| c.wait_with_output().expect("gavel ends"))
        .collect()
}

fn read(ws: &Workspace, path: &str) -> String {
    std::fs::read_to_string(ws.path(path)).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// Grades the workspace's suite whole, and in 3 shards graded at once then merged, and checks
/// that the merged folder is the whole run's. `warm`: a warm Python grader's key, whose
/// sandbox counts depend on the samples that shared its instance, and so on the shards.
fn shards_merge_into_the_whole_run(ws: &Workspace, vars: &[(&str, &str)], warm: Option<&str>) {
    let dir = ws.dir.path();
    let whole = gavel_command(
        dir,
        &[
            "run",
            "suite.yaml",
            "-o",
            "whole",
            "-q",
            "--junit",
            "whole.xml",
            "--report",
        ],
        vars,
    )
    .output()
    .expect("gavel runs");
    assert_eq!(
        whole.status.code(),
        Some(1),
        "the gate fails: {}",
        stderr(&whole)
    );

    let shards: Vec<Command> = (0..3)
        .map(|i| {
            let (shard, out) = (format!("{i}/3"), format!("shard{i}"));
            gavel_command(
                dir,
                &["run", "suite.yaml", "--shard", &shard, "-o", &out, "-q"],
                vars,
            )
        })
        .collect();
    let mut graded = 0;
    for (i, output) in all_at_once(shards).iter().enumerate() {
        // A shard's gate is the merge's to apply.
        assert_eq!(
            output.status.code(),
            Some(0),
            "shard {i}: {}",
            stderr(output)
        );
        let lines = read(ws, &format!("shard{i}/results.jsonl")).lines().count();
        assert!(lines > 0, "shard {i} graded some samples");
        graded += lines;
        let record: Value = serde_json::from_str(&read(ws, &format!("shard{i}/run.json")))
            .expect("run.json is JSON");
        assert_eq!(record["shard"], serde_json::json!({"index": i, "count": 3}));
    }
    assert_eq!(graded, read(ws, "whole/results.jsonl").lines().count());

    let merged = gavel_command(
        dir,
        &[
            "merge",
            "shard2",
            "shard0",
            "shard1",
            "-o",
            "merged",
            "-q",
            "--junit",
            "merged.xml",
            "--report",
        ],
        vars,
    )
    .output()
    .expect("gavel runs");
    assert_eq!(merged.status.code(), Some(1), "{}", stderr(&merged));
    let (one, joined) = (
        read(ws, "whole/results.jsonl"),
        read(ws, "merged/results.jsonl"),
    );
    match warm {
        None => assert!(
            one == joined,
            "results.jsonl differs:\n{one}\n---\n{joined}"
        ),
        Some(key) => {
            let without_counts = |text: &str| -> Vec<Value> {
                text.lines()
                    .map(|line| {
                        let mut result: Value = serde_json::from_str(line).expect("JSON");
                        let metadata = &mut result["grades"][key]["metadata"];
                        assert!(metadata["sandbox"]["fuel_used"].is_u64(), "{metadata}");
                        metadata
                            .as_object_mut()
                            .expect("metadata")
                            .remove("sandbox");
                        result
                    })
                    .collect()
            };
            assert_eq!(without_counts(&one), without_counts(&joined));
        }
    }
    let summary = read(ws, "whole/summary.json");
    assert!(
        summary == read(ws, "merged/summary.json"),
        "summary.json differs"
    );
    assert!(
        read(ws, "whole.xml") == read(ws, "merged.xml"),
        "the JUnit reports differ"
    );
    if warm.is_none() {
        // The report names its results file; all else is the same.
        let report = |out: &str| {
            let results = format!("{out}/results.jsonl");
            read(ws, &format!("{out}/report.html")).replace(&results, "OUT")
        };
        assert!(report("whole") == report("merged"), "the reports differ");
    }
    let record: Value =
        serde_json::from_str(&read(ws, "merged/run.json")).expect("run.json is JSON");
    assert_eq!(record["merged"].as_array().map(Vec::len), Some(3));
    assert!(record.get("shard").is_none(), "{record}");
}

#[test]
fn shards_of_builtin_and_pack_graders_merge_into_the_whole_run() {
    let ws = Workspace::new();
    ws.write("suite.yaml", &suite(false));
    quickstart_rows(&ws, "data.jsonl", 60);
    shards_merge_into_the_whole_run(&ws, &[], None);
}

#[test]
fn shards_with_a_python_grader_merge_into_the_whole_run() {
    let Some(cache) = cache() else { return };
    let ws = Workspace::new();
    ws.write("suite.yaml", &suite(true));
    ws.write("graders/said.py", SAID);
    // More than a warm batch in all, so that batches differ between the whole run and a shard.
    quickstart_rows(&ws, "data.jsonl", BATCH_ROWS + 30);
    let cache = cache.to_string_lossy();
    shards_merge_into_the_whole_run(
        &ws,
        &[("GAVEL_CACHE_DIR", &cache), ("GAVEL_PYTHON_COMPONENT", "")],
        Some("said"),
    );
}

#[test]
fn a_shards_warm_batches_are_made_of_its_own_rows() {
    let Some(cache) = cache() else { return };
    let ws = Workspace::new();
    ws.write("graders/counting.py", COUNTING);
    ws.write(
        "suite.yaml",
        "name: counting\ndataset: data.jsonl\ngraders:\n  counted:\n    kind: tool\n    \
         function: graders/counting.py:counted\n",
    );
    let rows: Vec<Value> = (0..3 * BATCH_ROWS as i64)
        .map(|i| paris_row(i, "Paris"))
        .collect();
    ws.write_rows("data.jsonl", &rows);
    let cache = cache.to_string_lossy();
    let vars = [("GAVEL_CACHE_DIR", &*cache), ("GAVEL_PYTHON_COMPONENT", "")];
    for i in 0..2 {
        let (shard, out) = (format!("{i}/2"), format!("shard{i}"));
        let output = gavel_command(
            ws.dir.path(),
            &[
                "run",
                "suite.yaml",
                "--shard",
                &shard,
                "-o",
                &out,
                "-q",
                "--concurrency",
                "2",
            ],
            &vars,
        )
        .output()
        .expect("gavel runs");
        assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
        let rationales: Vec<String> = ws
            .results(&out)
            .iter()
            .map(|r| {
                r["grades"]["counted"]["rationale"]
                    .as_str()
                    .unwrap()
                    .to_string()
            })
            .collect();
        assert!(rationales.len() > BATCH_ROWS, "shard {i} spans two batches");
        let expected: Vec<String> = (0..rationales.len())
            .map(|k| format!("call {}", k % BATCH_ROWS + 1))
            .collect();
        assert_eq!(rationales, expected, "shard {i}");
    }
}

/// A built-in suite graded in 3 shards, `shard0` to `shard2`.
fn three_shards() -> Workspace {
    let ws = Workspace::new();
    ws.write(
        "suite.yaml",
        "name: capitals\ndataset: data.jsonl\ngraders:\n  answer:\n    kind: tool\n    \
         function: contains\n",
    );
    let rows: Vec<Value> = (0..30).map(|i| paris_row(i, "Paris")).collect();
    ws.write_rows("data.jsonl", &rows);
    for i in 0..3 {
        shard(&ws, "suite.yaml", i, &format!("shard{i}"));
    }
    ws
}

fn shard(ws: &Workspace, suite: &str, i: u32, out: &str) {
    let output = ws.gavel(&["run", suite, "--shard", &format!("{i}/3"), "-o", out, "-q"]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
}

/// `gavel merge` of `dirs`, which must be refused: its error text.
fn refused(ws: &Workspace, dirs: &[&str]) -> String {
    let mut args = vec!["merge"];
    args.extend_from_slice(dirs);
    args.extend_from_slice(&["-o", "merged"]);
    let output = ws.gavel(&args);
    assert_eq!(output.status.code(), Some(2), "{}", stderr(&output));
    assert!(
        !ws.path("merged/results.jsonl").exists(),
        "nothing merged is left"
    );
    stderr(&output)
}

#[test]
fn a_shard_may_hold_no_sample_and_shards_graded_elsewhere_merge() {
    let ws = Workspace::new();
    ws.write(
        "suite.yaml",
        "name: two\ndataset: data.jsonl\ngraders:\n  answer:\n    kind: tool\n    \
         function: contains\n",
    );
    ws.write_rows("data.jsonl", &[paris_row(0, "Paris"), paris_row(1, "Lyon")]);
    let mut dirs = Vec::new();
    for i in 0..5 {
        // Each shard graded from a copy of the suite and dataset of its own, as on another
        // machine.
        let copy = format!("machine{i}");
        for file in ["suite.yaml", "data.jsonl"] {
            ws.write(&format!("{copy}/{file}"), &read(&ws, file));
        }
        let out = ws.path(&format!("shard{i}")).display().to_string();
        let output = crate::common::gavel_in(
            &ws.path(&copy),
            &[
                "run",
                "suite.yaml",
                "--shard",
                &format!("{i}/5"),
                "-o",
                &out,
                "-q",
            ],
        );
        assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
        dirs.push(format!("shard{i}"));
    }
    let empty = (0..5)
        .filter(|i| read(&ws, &format!("shard{i}/results.jsonl")).is_empty())
        .count();
    assert_eq!(empty, 3, "two samples, five shards");
    let mut args = vec!["merge"];
    args.extend(dirs.iter().map(String::as_str));
    args.extend_from_slice(&["-o", "merged", "-q"]);
    let merged = ws.gavel(&args);
    assert_eq!(merged.status.code(), Some(0), "{}", stderr(&merged));
    let whole = ws.gavel(&["run", "suite.yaml", "-o", "whole", "-q"]);
    assert_eq!(whole.status.code(), Some(0), "{}", stderr(&whole));
    assert!(read(&ws, "merged/results.jsonl") == read(&ws, "whole/results.jsonl"));
    assert!(read(&ws, "merged/summary.json") == read(&ws, "whole/summary.json"));
    let into_a_shard = ws.gavel(&[
        "merge", "shard0", "shard1", "shard2", "shard3", "shard4", "-o", "shard0",
    ]);
    assert_eq!(into_a_shard.status.code(), Some(2));
    assert!(stderr(&into_a_shard).contains("shard0 is one of the shards' folders"));
}

/// A shard's `results.jsonl` edited by hand so that a line's grades are not the suite's: a
/// grade of another metric, or a graded sample without its metric's grade, is refused at its
/// line, not merged into a summary it would skew.
#[test]
fn a_line_whose_grades_are_not_the_suites_is_refused_at_its_line() {
    let ws = three_shards();
    let path = ws.path("shard0/results.jsonl");
    let kept = std::fs::read_to_string(&path).unwrap();
    let first: Value = serde_json::from_str(kept.lines().next().unwrap()).unwrap();
    let id = first["sample_id"].clone();
    let grade = first["grades"]["answer"].clone();
    for (grades, what) in [
        (
            json!({"answer": grade, "zzz": grade}),
            "a grade of `zzz`, which is not a metric of the suite",
        ),
        (json!({}), "no grade of the suite's metric `answer`"),
    ] {
        let mut edited = first.clone();
        edited["grades"] = grades;
        let rest: Vec<&str> = kept.lines().skip(1).collect();
        std::fs::write(&path, format!("{edited}\n{}\n", rest.join("\n"))).unwrap();
        let err = refused(&ws, &["shard0", "shard1", "shard2"]);
        assert!(err.contains("shard0/results.jsonl:1"), "{err}");
        assert!(
            err.contains(&format!("sample `{}`: {what}", id.as_i64().unwrap())),
            "{err}"
        );
    }
    std::fs::write(&path, kept).unwrap();
    let output = ws.gavel(&["merge", "shard0", "shard1", "shard2", "-o", "merged"]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
}

#[test]
fn a_missing_shard_is_named_with_how_to_grade_it() {
    let ws = three_shards();
    let err = refused(&ws, &["shard0", "shard2"]);
    assert!(
        err.contains("missing shard 1 of 3: grade it with `gavel run"),
        "{err}"
    );
    assert!(err.contains("--shard 1/3 -o DIR`"), "{err}");
    let err = refused(&ws, &["shard0"]);
    assert!(
        err.contains("missing shards 1, 2 of 3: grade each with `gavel run"),
        "{err}"
    );
    assert!(err.contains("--shard I/3 -o DIR`"), "{err}");
}

/// What `gavel run` would not replace unasked, `gavel merge` does not either: an unfinished
/// run, or results without a run's record; `--overwrite` replaces them.
#[test]
fn merge_replaces_an_unfinished_run_or_someone_elses_results_only_with_overwrite() {
    let ws = three_shards();
    let shards = ["shard0", "shard1", "shard2"];
    let first = read(&ws, "shard0/results.jsonl");
    ws.write("theirs/results.jsonl", &first);
    ws.write("unfinished/results.jsonl", &first);
    ws.write(
        "unfinished/run.json",
        &read(&ws, "shard0/run.json").replace("\"complete\"", "\"running\""),
    );
    for (out, said) in [
        ("theirs", "holds a results.jsonl but no run.json"),
        ("unfinished", "holds an unfinished run"),
    ] {
        let mut args = vec!["merge"];
        args.extend(shards);
        args.extend(["-o", out]);
        let refused = ws.gavel(&args);
        assert_eq!(refused.status.code(), Some(2));
        assert!(stderr(&refused).contains(said), "{}", stderr(&refused));
        assert!(read(&ws, &format!("{out}/results.jsonl")) == first, "kept");
        args.push("--overwrite");
        let merged = ws.gavel(&args);
        assert_eq!(merged.status.code(), Some(0), "{}", stderr(&merged));
        assert_eq!(
            read(&ws, &format!("{out}/results.jsonl")).lines().count(),
            30
        );
    }
}

#[test]
fn a_shard_given_twice_is_refused_naming_both_folders() {
    let ws = three_shards();
    shard(&ws, "suite.yaml", 1, "again1");
    let err = refused(&ws, &["shard0", "shard1", "again1", "shard2"]);
    assert!(
        err.contains("shard1 and again1 are both shard 1/3"),
        "{err}"
    );
}

#[test]
fn shards_of_another_suite_are_refused_naming_the_field() {
    let ws = three_shards();
    ws.write(
        "other.yaml",
        &read(&ws, "suite.yaml").replace("contains", "exact_match"),
    );
    shard(&ws, "other.yaml", 2, "other2");
    let err = refused(&ws, &["shard0", "shard1", "other2"]);
    assert!(
        err.contains("other2/run.json: not a shard of the same run as shard0/run.json"),
        "{err}"
    );
    assert!(err.contains("suite file content (sha256)"), "{err}");
}

#[test]
fn shards_of_another_dataset_are_refused_naming_the_field() {
    let ws = three_shards();
    let rows: Vec<Value> = (0..30).map(|i| paris_row(i, "Lyon")).collect();
    ws.write_rows("data.jsonl", &rows);
    shard(&ws, "suite.yaml", 2, "changed2");
    let err = refused(&ws, &["shard0", "shard1", "changed2"]);
    assert!(
        err.contains("changed2/run.json: not a shard of the same run"),
        "{err}"
    );
    assert!(err.contains("dataset content"), "{err}");
    // Every shard of the dataset as it is now: the dataset read again must be theirs.
    let err = refused(&ws, &["shard0", "shard1", "shard2"]);
    assert!(
        err.contains("the inputs changed since the shards were graded"),
        "{err}"
    );
    assert!(err.contains("dataset content"), "{err}");
}

#[test]
fn a_split_into_another_n_and_a_whole_run_are_refused() {
    let ws = three_shards();
    let output = ws.gavel(&["run", "suite.yaml", "--shard", "0/2", "-o", "half", "-q"]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let err = refused(&ws, &["shard0", "shard1", "shard2", "half"]);
    assert!(
        err.contains("half/run.json: field `shard` is 0/2, a split into 2"),
        "{err}"
    );
    let output = ws.gavel(&["run", "suite.yaml", "-o", "whole", "-q"]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let err = refused(&ws, &["shard0", "shard1", "shard2", "whole"]);
    assert!(
        err.contains("whole/run.json: field `shard` is absent"),
        "{err}"
    );
}

#[test]
fn an_unfinished_shard_resumes_to_its_whole_results_and_only_as_itself() {
    let ws = three_shards();
    let full = read(&ws, "shard1/results.jsonl");
    let lines: Vec<&str> = full.split_inclusive('\n').collect();
    ws.write("part/results.jsonl", &lines[..2].concat());
    ws.write(
        "part/run.json",
        &read(&ws, "shard1/run.json").replace("\"complete\"", "\"running\""),
    );
    let err = refused(&ws, &["shard0", "part", "shard2"]);
    assert!(err.contains("shard 1/3 is unfinished"), "{err}");
    assert!(err.contains("--shard 1/3 --resume -o part"), "{err}");

    refused_as_another_shard(&ws, "--resume", "part", "2/3");
    let resumed = continued(&ws, "--resume", "part", "1/3");
    assert_eq!(resumed.status.code(), Some(0), "{}", stderr(&resumed));
    assert!(
        read(&ws, "part/results.jsonl") == full,
        "the resumed shard is the whole shard"
    );
    let merged = ws.gavel(&["merge", "shard0", "part", "shard2", "-o", "merged", "-q"]);
    assert_eq!(merged.status.code(), Some(0), "{}", stderr(&merged));
}

/// Rows without an id take their line's index, blank lines counted; shards, their merge and a
/// resumed shard place them by that id, as the run that writes it does.
#[test]
fn rows_without_ids_after_blank_lines_shard_merge_and_resume() {
    let ws = Workspace::new();
    ws.write(
        "suite.yaml",
        "name: idless\ndataset: data.jsonl\ngraders:\n  answer:\n    kind: tool\n    \
         function: contains\n",
    );
    let mut text = String::new();
    for i in 0..40 {
        let mut row = paris_row(i, if i % 3 == 0 { "Lyon" } else { "Paris" });
        if i % 2 == 1 {
            row.as_object_mut().unwrap().remove("id");
        }
        text.push_str(&format!("{row}\n"));
        if i % 5 == 0 {
            text.push('\n');
        }
    }
    ws.write("data.jsonl", &text);
    let whole = ws.gavel(&["run", "suite.yaml", "-o", "whole", "-q"]);
    assert_eq!(whole.status.code(), Some(0), "{}", stderr(&whole));
    // The fourth row, after one blank line, is on line 5: its id is 4.
    assert!(read(&ws, "whole/results.jsonl").contains("{\"sample_id\":4,"));
    for i in 0..3 {
        shard(&ws, "suite.yaml", i, &format!("shard{i}"));
    }
    let merged = ws.gavel(&["merge", "shard0", "shard1", "shard2", "-o", "merged", "-q"]);
    assert_eq!(merged.status.code(), Some(0), "{}", stderr(&merged));
    assert!(read(&ws, "merged/results.jsonl") == read(&ws, "whole/results.jsonl"));
    assert!(read(&ws, "merged/summary.json") == read(&ws, "whole/summary.json"));

    let full = read(&ws, "shard1/results.jsonl");
    let lines: Vec<&str> = full.split_inclusive('\n').collect();
    assert!(lines.len() > 3, "{full}");
    ws.write("part/results.jsonl", &lines[..3].concat());
    ws.write(
        "part/run.json",
        &read(&ws, "shard1/run.json").replace("\"complete\"", "\"running\""),
    );
    let resumed = continued(&ws, "--resume", "part", "1/3");
    assert_eq!(resumed.status.code(), Some(0), "{}", stderr(&resumed));
    assert!(read(&ws, "part/results.jsonl") == full);
}

#[test]
fn filters_and_max_samples_select_before_the_shards_part() {
    let ws = three_shards();
    let selecting = ["--filter", "tag:even", "--max-samples", "7"];
    let rows: Vec<Value> = (0..30)
        .map(|i| {
            let mut row = paris_row(i, if i % 4 == 0 { "Lyon" } else { "Paris" });
            row["tags"] = serde_json::json!([if i % 2 == 0 { "even" } else { "odd" }]);
            row
        })
        .collect();
    ws.write_rows("data.jsonl", &rows);
    let mut whole = vec!["run", "suite.yaml", "-o", "whole", "-q"];
    whole.extend_from_slice(&selecting);
    assert_eq!(ws.gavel(&whole).status.code(), Some(0));
    for i in 0..3 {
        let (shard, out) = (format!("{i}/3"), format!("part{i}"));
        let mut args = vec!["run", "suite.yaml", "--shard", &shard, "-o", &out, "-q"];
        args.extend_from_slice(&selecting);
        let output = ws.gavel(&args);
        assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    }
    let merged = ws.gavel(&["merge", "part0", "part1", "part2", "-o", "merged", "-q"]);
    assert_eq!(merged.status.code(), Some(0), "{}", stderr(&merged));
    let results = read(&ws, "merged/results.jsonl");
    assert_eq!(results.lines().count(), 7);
    assert!(results == read(&ws, "whole/results.jsonl"));
    assert!(read(&ws, "merged/summary.json") == read(&ws, "whole/summary.json"));
}

#[test]
fn the_readmes_shell_loop_shards_and_merges() {
    let readme =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("../README.md"))
            .expect("the README");
    let section = readme
        .split_once("## Across machines")
        .expect("the README's section")
        .1;
    let script = section
        .split_once("```sh\n")
        .and_then(|(_, rest)| rest.split_once("```\n"))
        .expect("a shell block")
        .0;
    let ws = three_shards();
    let bin = Path::new(env!("CARGO_BIN_EXE_gavel"))
        .parent()
        .expect("a folder");
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let output = Command::new("sh")
        .args(["-c", script])
        .current_dir(ws.dir.path())
        .env("PATH", &path)
        .env("GAVEL_CACHE_DIR", ws.path(".cache"))
        .output()
        .expect("sh runs");
    assert!(output.status.success(), "{}", stderr(&output));
    let whole = ws.gavel(&["run", "suite.yaml", "-o", "one", "-q"]);
    assert_eq!(whole.status.code(), Some(0), "{}", stderr(&whole));
    assert!(read(&ws, "results/whole/results.jsonl") == read(&ws, "one/results.jsonl"));
}

#[test]
fn a_shards_errors_are_retried_as_that_shard() {
    let ws = three_shards();
    let full = read(&ws, "shard1/results.jsonl");
    // The answer of the shard's second sample, as if its grader had failed.
    let mut lines: Vec<Value> = full
        .lines()
        .map(|l| serde_json::from_str(l).expect("JSON"))
        .collect();
    lines[1]["grades"]["answer"]["status"] = "error".into();
    lines[1]["grades"]["answer"]["score"] = 0.0.into();
    ws.write_rows("shard1/results.jsonl", &lines);
    refused_as_another_shard(&ws, "--retry-errors", "shard1", "0/3");
    let retried = continued(&ws, "--retry-errors", "shard1", "1/3");
    assert_eq!(retried.status.code(), Some(0), "{}", stderr(&retried));
    assert!(
        read(&ws, "shard1/results.jsonl") == full,
        "the error is graded again"
    );
}

/// `gavel run` of shard `shard` with `flag` (`--resume` or `--retry-errors`) into `out`.
fn continued(ws: &Workspace, flag: &str, out: &str, shard: &str) -> Output {
    ws.gavel(&["run", "suite.yaml", "--shard", shard, flag, "-o", out, "-q"])
}

/// `flag` of shard 1/3's folder `out` as shard `now`, refused.
fn refused_as_another_shard(ws: &Workspace, flag: &str, out: &str, now: &str) {
    let output = continued(ws, flag, out, now);
    assert_eq!(output.status.code(), Some(2));
    let err = stderr(&output);
    assert!(
        err.contains(&format!("--shard: was 1/3, now {now}")),
        "{err}"
    );
}

/// A judge that failed some grades, then went down for good while they were retried: the
/// unsharded retry and the shards' retries merged end alike, in their files and exit code.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_retry_whose_judge_went_down_ends_alike_sharded_and_whole() {
    let down = Arc::new(AtomicBool::new(false));
    let seen = Arc::clone(&down);
    let server = Server::start(move |_, request| {
        judged(fails_first(request) || seen.load(Ordering::SeqCst))
    })
    .await;
    let ws = judged_workspace(&server.base_url());
    let runs = [
        ("whole", None),
        ("shard0", Some("0/3")),
        ("shard1", Some("1/3")),
        ("shard2", Some("2/3")),
    ];
    for (out, shard) in runs {
        let first = judged_run(&ws, out, shard, false).await;
        assert_eq!(first.status.code(), Some(0), "{out}: {}", stderr(&first));
    }
    down.store(true, Ordering::SeqCst);
    let mut codes = Vec::new();
    for (out, shard) in runs {
        codes.push(judged_run(&ws, out, shard, true).await.status.code());
    }
    assert_eq!(codes[0], Some(2), "the unsharded retry met the judge down");
    let merged = gavel(
        &ws,
        &["merge", "shard0", "shard1", "shard2", "-o", "merged", "-q"],
    )
    .await;
    assert_eq!(
        merged.status.code(),
        codes[0],
        "the shards' retries exited {codes:?}: {}",
        stderr(&merged)
    );
    for file in ["results.jsonl", "summary.json"] {
        assert!(
            read(&ws, &format!("whole/{file}")) == read(&ws, &format!("merged/{file}")),
            "{file} differs"
        );
    }
}
