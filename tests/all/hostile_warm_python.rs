//! Hostile Python graders under the default, warm instances: what a grader does to its instance
//! (poisoning `builtins` or a stand-in module, leaking memory, spinning to its deadline) reaches
//! at most its own later samples of the same batch; another grader and the next batch start
//! clean.

use crate::common::Workspace;
use crate::python_graders::{cache, graded as run_graded, paris_row};
use gavel::grade::pack::BATCH_ROWS;
use serde_json::Value;

/// Poisons `builtins` and the `letta_evals` stand-in at the sample with id 3; every call says
/// whether it finds them poisoned.
const POISONER: &str = r#"import builtins

import letta_evals
from letta_evals.decorators import grader
from letta_evals.models import GradeResult


def seen():
    poisoned = hasattr(builtins, "POISON") or hasattr(letta_evals, "POISON")
    return "poisoned" if poisoned else "clean"


@grader
def poison(sample, submission):
    if sample.id == 3:
        builtins.POISON = True
        letta_evals.POISON = True
    return GradeResult(score=1.0, rationale=seen())
"#;

/// Another grader, which looks for the same poison.
const VICTIM: &str = r#"import builtins

import letta_evals
from letta_evals.decorators import grader
from letta_evals.models import GradeResult


@grader
def look(sample, submission):
    poisoned = hasattr(builtins, "POISON") or hasattr(letta_evals, "POISON")
    return GradeResult(score=1.0, rationale="poisoned" if poisoned else "clean")
"#;

/// Counts its calls; at the sample with id 3 it does `attack` first.
fn attacker(attack: &str) -> String {
    format!(
        r#"from letta_evals.decorators import grader
from letta_evals.models import GradeResult

calls = 0
kept = []


@grader
def attack(sample, submission):
    global calls
    calls += 1
    if sample.id == 3:
{attack}
    return GradeResult(score=1.0, rationale=f"call {{calls}}")
"#
    )
}

fn rationales(results: &[Value], key: &str) -> Vec<String> {
    results
        .iter()
        .map(|r| {
            r["grades"][key]["rationale"]
                .as_str()
                .unwrap_or_else(|| panic!("a rationale: {r}"))
                .to_string()
        })
        .collect()
}

fn graded(ws: &Workspace, rows: i64) -> Vec<Value> {
    let Some(cache) = cache() else {
        return Vec::new();
    };
    let data: Vec<Value> = (0..rows).map(|i| paris_row(i, "Paris")).collect();
    ws.write_rows("data.jsonl", &data);
    run_graded(cache, ws)
}

#[test]
fn poison_reaches_only_the_same_graders_later_samples_in_the_batch() {
    if cache().is_none() {
        return;
    }
    let ws = Workspace::new();
    ws.write("poison/poisoner.py", POISONER);
    ws.write("victim/victim.py", VICTIM);
    ws.write(
        "suite.yaml",
        "name: poison\ndataset: data.jsonl\ngraders:\n  poisoner:\n    kind: tool\n    \
         function: poison/poisoner.py:poison\n  victim:\n    kind: tool\n    \
         function: victim/victim.py:look\n",
    );
    let rows = BATCH_ROWS as i64 + 8;
    let results = graded(&ws, rows);
    let poisoner: Vec<String> = (0..rows as usize)
        .map(|i| {
            let poisoned = (3..BATCH_ROWS).contains(&i);
            (if poisoned { "poisoned" } else { "clean" }).to_string()
        })
        .collect();
    assert_eq!(rationales(&results, "poisoner"), poisoner);
    assert_eq!(rationales(&results, "victim"), vec!["clean"; rows as usize]);
}

/// The calls' rationales of an attacker that does `attack` at id 3 (of rows 0 to 7), which
/// must end that sample in `reason`.
fn after_attack(attack: &str, limits: &str, reason: &str) {
    if cache().is_none() {
        return;
    }
    let ws = Workspace::new();
    ws.write("attack/attacker.py", &attacker(attack));
    ws.write(
        "suite.yaml",
        &format!(
            "name: attack\ndataset: data.jsonl\n{limits}graders:\n  attacker:\n    kind: tool\n    \
             function: attack/attacker.py:attack\n"
        ),
    );
    let results = graded(&ws, 8);
    let got = rationales(&results, "attacker");
    // The instance that ran the attack is replaced: the next sample's call is its first.
    let expected = [
        "call 1", "call 2", "call 3", reason, "call 1", "call 2", "call 3", "call 4",
    ];
    assert_eq!(got, expected);
}

#[test]
fn a_grader_spinning_in_one_sample_leaves_the_next_a_fresh_instance() {
    after_attack(
        "        while True:\n            pass",
        "limits:\n  timeout_ms: 300\n  fuel: 1000000000000\n",
        "deadline exceeded",
    );
}

#[test]
fn a_grader_burning_its_fuel_leaves_the_next_a_fresh_instance() {
    after_attack(
        "        while True:\n            pass",
        "",
        "fuel exhausted",
    );
}

#[test]
fn a_grader_leaking_memory_is_replaced_before_its_next_sample() {
    // 24 MiB kept in a global: more than an instance may grow by and stay warm, less than the
    // memory limit, so the sample itself passes.
    after_attack("        kept.append(bytearray(24 << 20))", "", "call 4");
}

#[test]
fn a_grader_over_its_memory_limit_fails_that_sample_only() {
    after_attack(
        "        kept.append(bytearray(200 << 20))",
        "",
        "memory limit exceeded",
    );
}
