//! letta-evals' own example suites, copied unchanged with their licence into
//! `host/tests/data/letta-examples/`, load and grade through the real binary as letta-evals
//! 0.26.0 grades them. `record.py` there wrote each suite's recorded runs (`runs.jsonl`) and
//! graded them with letta-evals itself into `vectors.json`: per sample the grades (score,
//! rationale, submission), the reward and the error, the summary, and every request its judge
//! received with the reply it got. Here `gavel validate` and `gavel run --trajectories` grade the
//! same runs, with a loopback judge that answers each prompt letta-evals sent with the reply
//! letta-evals got (and refuses any other prompt), and every one of those is compared.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde_json::{Value, json};

use crate::common::{Workspace, data, gavel_off_runtime, load_json, stderr, stdout};
use crate::openai_server::{Reply, Server};

const EXAMPLES: &str = "letta-examples";

/// The suites letta-evals loads whose graders need the Python interpreter (custom graders,
/// extractors or reward composers).
const WITH_PYTHON: [&str; 3] = [
    "custom-tool-grader-and-extractor/suite.yaml",
    "reward-composition/suite.logical-and.yaml",
    "reward-composition/suite.weighted-average.yaml",
];

/// Graded with a grader that runs the file the agent edited: a deliberate difference.
const RUNS_THE_AGENTS_FILE: &str = "letta-code-simple-edit/suite.yaml";

/// The suites letta-evals loads whose extractors import packages gavel's sandbox lacks.
const SKILLS: [&str; 3] = [
    "skills-suite/suite_baseline.yaml",
    "skills-suite/suite_skill_select_use.yaml",
    "skills-suite/suite_skill_use.yaml",
];

/// The leaderboard's suites letta-evals 0.26.0 itself refuses to run (`Suite must define
/// 'graders'`, `reward metric_key 'accuracy' not found in graders`).
const REFUSED: [&str; 2] = [
    "core-memory-read-agent/suites/core-memory-read.yaml",
    "core-memory-update-agent/suites/core-memory-update.yaml",
];

fn vectors() -> Vec<Value> {
    let vectors = load_json(&format!("{EXAMPLES}/vectors.json"));
    assert_eq!(vectors["letta_evals"], "0.26.0");
    vectors["suites"].as_array().expect("suites").clone()
}

fn vector(suite: &str) -> Value {
    vectors()
        .into_iter()
        .find(|v| v["suite"] == suite)
        .unwrap_or_else(|| panic!("no vector for {suite}"))
}

/// Every suite file of the copied examples is either graded against a vector or one of the
/// suites refused (the skills suites by gavel, two leaderboard suites by letta-evals too): none
/// is left out unsaid.
#[test]
fn every_copied_example_suite_is_checked() {
    let root = data(EXAMPLES);
    let mut suites: Vec<String> = crate::common::texts_under(&root)
        .into_iter()
        .map(|(path, _)| {
            path.strip_prefix(&root)
                .unwrap()
                .to_string_lossy()
                .into_owned()
        })
        .filter(|path| path.ends_with(".yaml"))
        .collect();
    suites.sort();
    let mut checked: Vec<String> = vectors()
        .iter()
        .map(|v| v["suite"].as_str().unwrap().to_string())
        .chain(SKILLS.iter().chain(&REFUSED).map(|s| s.to_string()))
        .collect();
    checked.sort();
    assert_eq!(suites, checked);
    assert_eq!(checked.len(), 11 + REFUSED.len());
}

/// A copy of the example's folder in a fresh workspace, so that outputs stay out of the test
/// data.
fn copy_example(suite: &str) -> Workspace {
    let ws = Workspace::new();
    let folder = suite.split('/').next().expect("a folder");
    let from = data(EXAMPLES).join(folder);
    for (path, _) in crate::common::texts_under(&from) {
        let to = ws.path(folder).join(path.strip_prefix(&from).unwrap());
        std::fs::create_dir_all(to.parent().unwrap()).expect("folder");
        std::fs::copy(&path, &to).expect("copy the example");
    }
    ws
}

/// The loopback judge: each prompt letta-evals sent gets the reply letta-evals got; any other
/// prompt is refused, so a prompt gavel renders differently cannot pass unseen.
async fn judge_for(vector: &Value) -> Server {
    let replies: HashMap<String, String> = vector["judge"]
        .as_array()
        .expect("judge requests")
        .iter()
        .map(|j| {
            (
                prompt_of(&j["request"]),
                j["reply"].as_str().expect("a reply").to_string(),
            )
        })
        .collect();
    let replies = Arc::new(replies);
    Server::start(
        move |_, request| match replies.get(&prompt_of(&request.json())) {
            Some(content) => Reply::completion(content),
            None => Reply::status(400, r#"{"error": {"message": "prompt not recorded"}}"#),
        },
    )
    .await
}

fn prompt_of(body: &Value) -> String {
    let messages = body["messages"].as_array().expect("messages");
    messages.last().expect("a message")["content"]
        .as_str()
        .expect("text")
        .to_string()
}

/// What `gavel run` made of one example suite.
struct Graded {
    vector: Value,
    results: Vec<Value>,
    summary: Value,
    requests: Vec<Value>,
}

/// Validates and runs the suite of `vector` on its recorded runs (with the interpreter of
/// `python`, when given), checking that both succeed.
async fn grade(vector: Value, python: Option<&Path>) -> Graded {
    let suite = vector["suite"].as_str().unwrap().to_string();
    let runs = vector["runs"].as_str().unwrap();
    let ws = copy_example(&suite);
    let server = judge_for(&vector).await;
    let mut vars = vec![
        ("OPENAI_BASE_URL", server.base_url()),
        ("OPENAI_API_KEY", "sk-test".to_string()),
    ];
    if let Some(cache) = python {
        vars.push(("GAVEL_CACHE_DIR", cache.to_string_lossy().into_owned()));
        // An empty `$GAVEL_PYTHON_COMPONENT` is none: the cached interpreter is the one tested.
        vars.push(("GAVEL_PYTHON_COMPONENT", String::new()));
    }
    let vars: Vec<(&str, &str)> = vars.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let dir = ws.dir.path();
    let validate = ["validate", &suite, "--trajectories", runs];
    let validated = gavel_off_runtime(dir, &validate, &vars).await;
    assert_eq!(
        validated.status.code(),
        Some(0),
        "{suite}: {}",
        stderr(&validated)
    );
    let samples = vector["samples"].as_array().unwrap().len();
    let metrics = vector["summary"]["per_metric"].as_object().unwrap().len();
    let plural = if metrics == 1 { "" } else { "s" };
    assert_eq!(
        stdout(&validated),
        format!("{suite}: valid ({metrics} metric{plural}, {samples} samples)\n")
    );
    let run = [
        "run",
        &suite,
        "--trajectories",
        runs,
        "-o",
        "out",
        "-q",
        "--no-cache",
    ];
    let run = gavel_off_runtime(dir, &run, &vars).await;
    // letta-evals 0.26.0 has no gate: every run that grades passes.
    assert_eq!(run.status.code(), Some(0), "{suite}: {}", stderr(&run));
    Graded {
        results: ws.results("out"),
        summary: ws.summary("out"),
        requests: server.requests().iter().map(|r| r.json()).collect(),
        vector,
    }
}

impl Graded {
    fn suite(&self) -> &str {
        self.vector["suite"].as_str().unwrap()
    }

    fn samples(&self) -> impl Iterator<Item = (&Value, &Value)> {
        let want = self.vector["samples"].as_array().unwrap();
        assert_eq!(want.len(), self.results.len(), "{}", self.suite());
        want.iter().zip(&self.results).inspect(|(want, got)| {
            assert_eq!(want["sample_id"], got["sample_id"], "{}", self.suite());
        })
    }

    /// Everything letta-evals recorded: the samples, the summary, the judge's requests.
    fn check(&self) {
        self.check_samples();
        self.check_summary();
        self.check_judge();
    }

    /// Each sample as letta-evals graded it: every grade's score, rationale, submission and
    /// metadata, the reward, and the error (its category, its message in gavel's).
    fn check_samples(&self) {
        for (want, got) in self.samples() {
            let place = format!("{} sample {}", self.suite(), want["sample_id"]);
            let grades = want["grades"].as_object().unwrap();
            assert_eq!(
                grades.keys().collect::<Vec<_>>(),
                got["grades"]
                    .as_object()
                    .unwrap()
                    .keys()
                    .collect::<Vec<_>>(),
                "{place}"
            );
            for (key, want) in grades {
                let got = &got["grades"][key];
                for field in ["score", "rationale", "submission"] {
                    assert_eq!(got[field], want[field], "{place} {key}.{field}: {got}");
                }
                // What the grader put in its metadata (the judge's model, a custom grader's
                // fields, the per-turn counts) and the per-turn grades.
                for (field, value) in want["metadata"].as_object().unwrap() {
                    assert_eq!(&got["metadata"][field], value, "{place} {key}.{field}");
                }
                if let Some(turns) = want.get("per_turn") {
                    assert_eq!(&got["metadata"]["per_turn_grades"], turns, "{place} {key}");
                }
            }
            self.check_outcome(&place, want, got);
        }
    }

    fn check_outcome(&self, place: &str, want: &Value, got: &Value) {
        assert_eq!(got["reward"], want["reward"]["score"], "{place}: reward");
        match want["error"].as_object() {
            None => assert!(got.get("error").is_none(), "{place}: {got}"),
            Some(error) => {
                assert_eq!(got["error"]["category"], error["category"], "{place}");
                let message = got["error"]["message"].as_str().unwrap();
                let theirs = error["message"].as_str().unwrap();
                assert!(message.contains(theirs), "{place}: {message} / {theirs}");
            }
        }
    }

    /// The summary: samples in all and attempted, each metric's mean and the reward's mean
    /// (exact in gavel, summed left to right in letta-evals: equal within rounding), no gate.
    fn check_summary(&self) {
        let want = &self.vector["summary"];
        let counts = &self.summary["counts"];
        assert_eq!(counts["total"], want["n_total"], "{}", self.suite());
        let attempted = counts["total"].as_u64().unwrap() - counts["errored"].as_u64().unwrap();
        assert_eq!(
            Some(attempted),
            want["n_attempted"].as_u64(),
            "{}",
            self.suite()
        );
        for (key, mean) in want["per_metric"].as_object().unwrap() {
            let ours = &self.summary["metrics"][key]["mean"];
            close(ours, mean, &format!("{} {key}", self.suite()));
        }
        close(
            &self.summary["reward"]["mean"],
            &want["reward"],
            self.suite(),
        );
        assert!(self.summary["gate"].is_null(), "{}", self.suite());
    }

    /// Every request letta-evals sent its judge was sent by gavel, the same JSON, and no
    /// other.
    fn check_judge(&self) {
        let mut want: Vec<Value> = self.vector["judge"]
            .as_array()
            .unwrap()
            .iter()
            .map(|j| j["request"].clone())
            .collect();
        let mut sent = self.requests.clone();
        want.sort_by_key(prompt_of);
        sent.sort_by_key(prompt_of);
        assert_eq!(sent.len(), want.len(), "{}", self.suite());
        for (sent, want) in sent.iter().zip(&want) {
            assert!(
                sent == want,
                "{}: sent {sent}\nrecorded {want}",
                self.suite()
            );
        }
    }
}

/// Means agree to the last bits: gavel's are correctly rounded (Python's `statistics.mean`),
/// letta-evals' a left-to-right sum divided.
fn close(ours: &Value, theirs: &Value, place: &str) {
    let (ours, theirs) = (ours.as_f64(), theirs.as_f64().unwrap());
    let ours = ours.unwrap_or_else(|| panic!("{place}: no mean"));
    assert!(
        (ours - theirs).abs() <= 4.0 * f64::EPSILON * theirs.abs().max(1.0),
        "{place}: {ours} / {theirs}"
    );
}

/// The suites of built-in graders and judges: letta-evals' functions and extractors, the
/// per-turn mode, `regex_match` on a tool's output, rubrics from a file and from the rows.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn suites_of_built_in_graders_grade_as_letta_evals_grades_them() {
    let built_in: Vec<Value> = vectors()
        .into_iter()
        .filter(|v| {
            let suite = v["suite"].as_str().unwrap();
            !WITH_PYTHON.contains(&suite) && suite != RUNS_THE_AGENTS_FILE
        })
        .collect();
    assert_eq!(built_in.len(), 4);
    for vector in built_in {
        let graded = grade(vector, None).await;
        graded.check();
    }
}

/// The suites with Python code (a custom grader and extractor, two reward composers) run it
/// unchanged in the interpreter component and grade as letta-evals does.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn suites_with_python_code_grade_as_letta_evals_grades_them() {
    let Some(cache) = crate::python_graders::cache() else {
        return;
    };
    for suite in WITH_PYTHON {
        let graded = grade(vector(suite), Some(cache)).await;
        graded.check();
    }
}

/// letta-code-simple-edit's grader runs the file the agent fixed with `python3`. In gavel's
/// sandbox, as in letta-evals regrading the recorded run where the file is gone, the file is not
/// there: the grader says so itself (`File not found`) and scores 0. The samples whose submission
/// names no file fail inside the grader in both, with letta-evals' exception.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_grader_that_runs_the_agents_file_finds_it_missing_as_letta_evals_does() {
    let Some(cache) = crate::python_graders::cache() else {
        return;
    };
    let graded = grade(vector(RUNS_THE_AGENTS_FILE), Some(cache)).await;
    let mut samples = graded.samples();
    let (want, got) = samples.next().unwrap();
    let (want, grade) = (
        &want["grades"]["bug_fix_check"],
        &got["grades"]["bug_fix_check"],
    );
    assert_eq!(
        want["rationale"],
        "File not found: /mnt/suite/sandbox/task_1.py"
    );
    for field in ["score", "rationale", "submission"] {
        assert_eq!(grade[field], want[field], "{field}: {grade}");
    }
    assert_eq!(grade["status"], "fail", "{grade}");
    for (want, got) in samples {
        let place = format!("sample {}", want["sample_id"]);
        let theirs = want["error"]["message"].as_str().unwrap();
        let grade = &got["grades"]["bug_fix_check"];
        assert_eq!(grade["status"], "error", "{place}: {grade}");
        let rationale = grade["rationale"].as_str().unwrap();
        assert!(
            rationale.starts_with(&format!("guest returned error: ValueError: {theirs} (at ")),
            "{place}: {rationale}"
        );
        graded.check_outcome(&place, want, got);
    }
    assert_eq!(graded.summary["counts"]["errored"], 2);
}

/// The skills suites' extractors import `anthropic` (gavel's stand-in imports) and `pathspec`,
/// which the suites do not require: gavel refuses them before grading, at each extractor's
/// line, naming the package and where packages come from.
#[test]
fn the_skills_suites_are_refused_naming_the_package_their_extractor_imports() {
    let Some(cache) = crate::python_graders::cache() else {
        return;
    };
    for suite in SKILLS {
        let ws = copy_example(suite);
        let out = crate::python_graders::gavel(cache, ws.dir.path(), &["validate", suite]);
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(2), "{suite}: {err}");
        // Each grader's `extractor:` value, at its line and column.
        let text = std::fs::read_to_string(ws.path(suite)).unwrap();
        let lines = text
            .lines()
            .enumerate()
            .filter(|(_, line)| line.starts_with("    extractor: custom_extractor.py:"))
            .map(|(at, _)| at + 1);
        let keys = ["task_completion", "skill_use"];
        assert_eq!(lines.clone().count(), keys.len(), "{suite}");
        for (line, key) in lines.zip(keys) {
            let want = format!(
                "error: {suite}:{line}:16: graders.{key}.extractor: custom_extractor.py:8: \
                 ModuleNotFoundError: No module named 'pathspec' (gavel's sandbox has the \
                 standard library and the .py files beside your grader, in its folder"
            );
            assert!(err.contains(&want), "{suite}: {err}");
        }
        // `anthropic` (line 7) imports: the stand-in; `pathspec` is the suite's to require.
        assert!(
            err.contains("pure-Python packages such as httpx come from `requirements:`"),
            "{err}"
        );
        assert!(
            err.ends_with("2 problems found; nothing was graded\n"),
            "{err}"
        );
    }
}

/// `--trajectories` names recorded runs for a suite that has none: a file that is not there is
/// refused before grading, naming the flag; given, its runs are graded and `run.json` records
/// them, so that `--resume` without them is refused as a change of inputs.
#[test]
fn recorded_runs_given_on_the_command_line_are_graded_and_recorded() {
    let ws = copy_example("programmatic-agent-creation/suite.yaml");
    let suite = "programmatic-agent-creation/suite.yaml";
    let missing = ws.gavel(&["run", suite, "--trajectories", "nowhere.jsonl", "-o", "out"]);
    let err = stderr(&missing);
    assert_eq!(missing.status.code(), Some(2), "{err}");
    assert!(
        err.contains("suite.yaml: --trajectories: no such file: ") && err.contains("nowhere.jsonl"),
        "{err}"
    );
    let runs = "programmatic-agent-creation/runs.jsonl";
    // The same file twice would grade each run twice: refused, however it is spelled.
    let again = format!("./{runs}");
    let twice = ws.gavel(&[
        "run",
        suite,
        "--trajectories",
        runs,
        "--trajectories",
        &again,
        "-o",
        "out",
    ]);
    let err = stderr(&twice);
    assert_eq!(twice.status.code(), Some(2), "{err}");
    assert!(
        err.contains("--trajectories: ")
            && err.contains("is named twice: name each recorded run once"),
        "{err}"
    );
    let out = ws.gavel(&["run", suite, "--trajectories", runs, "-o", "out", "-q"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let record: Value =
        serde_json::from_str(&std::fs::read_to_string(ws.path("out/run.json")).unwrap()).unwrap();
    let recorded: Vec<PathBuf> = serde_json::from_value(record["trajectories"].clone()).unwrap();
    assert_eq!(recorded.len(), 1);
    assert!(
        recorded[0].is_absolute() && recorded[0].ends_with(runs),
        "{recorded:?}"
    );
    let scores: Vec<Value> = ws
        .results("out")
        .iter()
        .map(|r| r["grades"]["inventory_check"]["score"].clone())
        .collect();
    assert_eq!(
        scores,
        [json!(1.0), json!(1.0), json!(1.0), json!(0.0), json!(0.0)]
    );
    let resumed = ws.gavel(&["run", suite, "-o", "out", "--resume"]);
    let err = stderr(&resumed);
    assert_eq!(resumed.status.code(), Some(2), "{err}");
    assert!(err.contains("trajectories"), "{err}");
}

/// The leaderboard suites letta-evals 0.26.0 refuses are refused by gavel too, at the line of the
/// mistake and saying how to fix it: a single `grader:` (then no `graders:` at all), and a reward
/// naming a metric no grader has.
#[test]
fn suites_letta_evals_refuses_are_refused_at_their_mistake() {
    let ws = copy_example(REFUSED[0]);
    let out = ws.gavel(&["validate", REFUSED[0]]);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    let lines: Vec<&str> = err.lines().collect();
    assert_eq!(
        lines[0],
        format!(
            "error: {}:12:1: grader: unknown field `grader`, expected one of name, description, \
                 dataset, trajectories, format, sample_per, dataset_format, packs, graders, gate, \
                 reward, max_samples, concurrency, limits, isolation, output, allow, requirements, target, \
                 setup_script, num_runs, sandbox, cleanup, max_concurrent, sample_tags",
            REFUSED[0]
        )
    );
    assert_eq!(
        lines[1],
        "  hint: a single `grader:` is read by neither gavel nor letta-evals 0.26.0: put it under \
         `graders:`, keyed by its metric (`graders:` / `  accuracy:` / `    kind: tool`), and \
         name that key in `reward.metric_key`"
    );
    assert!(lines[2].contains("missing field `graders`"), "{err}");
    assert_eq!(lines.len(), 4, "{err}");

    let ws = copy_example(REFUSED[1]);
    let out = ws.gavel(&["validate", REFUSED[1]]);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert_eq!(
        err,
        format!(
            "error: {}:34:3: reward: `accuracy` is not a metric key of this suite; graders are: \
             contains_check\n1 problem found; nothing was graded\n",
            REFUSED[1]
        )
    );
}
