//! Python graders against one another and against the files around them, through the real
//! interpreter component: a grader whose module-level code patches another grader's function,
//! the stand-in packages or the decorator registry, or burns fuel, changes no other grader's
//! grade (each grader's program runs in its own instance); and a grader's folder brings into
//! the sandbox neither a file a link leads to outside it, nor a FIFO, nor, for a grader file
//! outside the suite's folder, the files beside it.

use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;

use crate::common::{Workspace, stderr, stdout, texts_under};
use crate::evaldeck_project::RUN_CASES;
use crate::python_graders::{cache, gavel, graded, paris_row};
use serde_json::{Value, json};

/// The victims, one of each suite form: a letta-evals `@grader` and `@extractor` by file, a
/// `@grader` by the name it registered and a `@reward_composer` (`victim/victim.py`), an evaldeck
/// function and `BaseGrader` class (`evaldeck_victim.py`, beside the suite), and OpenAI graders
/// inline and by file (`victim/openai_victim.py`).
const VICTIM: &str = r#"from letta_evals.decorators import extractor, grader, reward_composer
from letta_evals.extractors.utils import get_assistant_messages
from letta_evals.models import GradeResult, RewardOutput, Sample


def verdict(sample, submission):
    return submission == sample.ground_truth


@grader
def check(sample: Sample, submission: str) -> GradeResult:
    ok = verdict(sample, submission)
    return GradeResult(score=1.0 if ok else 0.0, rationale="honest: " + ("match" if ok else "differs"))


@grader
def check_by_name(sample: Sample, submission: str) -> GradeResult:
    return check(sample, submission)


@extractor
def last_words(trajectory, config):
    messages = get_assistant_messages(trajectory)
    return messages[-1].content if messages else ""


@reward_composer
def combine(ctx):
    return RewardOutput(score=0.5 * ctx.grades["letta_file"].score + 0.25)
"#;

const EVALDECK_VICTIM: &str = r#"from evaldeck.graders import BaseGrader
from evaldeck.results import GradeResult


def booked(trace, test_case):
    if "Paris" in (trace.output or ""):
        return GradeResult.passed_result("booked", "honest: said Paris")
    return GradeResult.failed_result("booked", "honest: no Paris", expected="Paris", actual=trace.output)


class Said(BaseGrader):
    name = "said"

    def __init__(self, word):
        self.word = word

    def grade(self, trace, test_case):
        if self.word in (trace.output or ""):
            return GradeResult.passed_result(self.name, f"honest: said {self.word}")
        return GradeResult.failed_result(self.name, f"honest: no {self.word}")
"#;

const OPENAI_VICTIM: &str = r#"def grade(sample, item):
    return 1.0 if sample["output_text"] == item["ground_truth"] else 0.0
"#;

const VICTIM_GRADERS: &str = r#"name: victims
dataset: data.jsonl
graders:
  letta_file:
    kind: tool
    function: victim/victim.py:check
    extractor: victim/victim.py:last_words
  letta_name:
    kind: tool
    function: check_by_name
  evaldeck_function:
    kind: code
    module: evaldeck_victim
    function: booked
  evaldeck_class:
    kind: code
    module: evaldeck_victim
    class: Said
    params: {word: Paris}
  openai_inline:
    kind: python
    source: |
      def grade(sample, item):
          return 1.0 if "Paris" in sample["output_text"] else 0.0
  openai_file:
    kind: python
    source_path: victim/openai_victim.py
"#;

const VICTIM_KEYS: [&str; 6] = [
    "letta_file",
    "letta_name",
    "evaldeck_function",
    "evaldeck_class",
    "openai_inline",
    "openai_file",
];

const REWARD: &str = "reward:\n  kind: custom\n  function: victim/victim.py:combine\n";

/// The start of every attacker (`attack/attacker.py`): an honest grader of its own, which the
/// suite names after the victims.
const ATTACKER: &str = r#"import sys

from letta_evals.decorators import grader
from letta_evals.models import GradeResult


@grader
def noop(sample, submission):
    return GradeResult(score=0.5, rationale="attacker")


def forged(sample, submission):
    return GradeResult(score=1.0, rationale="FORGED by attacker")
"#;

/// The victims' grades (without the sandbox's usage, which depends on the files beside them)
/// and rewards, graded alone or beside `attacker` (the rest of `attack/attacker.py`).
fn victims_graded(cache: &Path, attacker: Option<&str>) -> Vec<Value> {
    let ws = Workspace::new();
    ws.write("victim/victim.py", VICTIM);
    ws.write("evaldeck_victim.py", EVALDECK_VICTIM);
    ws.write("victim/openai_victim.py", OPENAI_VICTIM);
    let mut suite = VICTIM_GRADERS.to_string();
    if let Some(attacker) = attacker {
        ws.write("attack/attacker.py", &format!("{ATTACKER}\n{attacker}"));
        suite.push_str("  attacker:\n    kind: tool\n    function: attack/attacker.py:noop\n");
    }
    suite.push_str(REWARD);
    ws.write("suite.yaml", &suite);
    ws.write_rows("data.jsonl", &[paris_row(1, "Paris"), paris_row(2, "Lyon")]);
    graded(cache, &ws)
        .iter()
        .map(|result| {
            let mut grades = serde_json::Map::new();
            for key in VICTIM_KEYS {
                grades.insert(
                    key.to_string(),
                    without_usage(result["grades"][key].clone()),
                );
            }
            json!({"grades": grades, "reward": result["reward"]})
        })
        .collect()
}

/// The victims grade beside `attacker` exactly as they grade alone.
fn victims_unchanged_beside(attacker: &str) {
    let Some(cache) = cache() else { return };
    let alone = victims_graded(cache, None);
    assert_eq!(alone[0]["grades"]["letta_file"]["score"], 1.0, "{alone:?}");
    assert_eq!(alone[1]["grades"]["letta_file"]["score"], 0.0, "{alone:?}");
    let beside = victims_graded(cache, Some(attacker));
    for (alone, beside) in alone.iter().zip(&beside) {
        assert_eq!(alone, beside);
    }
}

#[test]
fn a_grader_cannot_patch_another_graders_functions() {
    victims_unchanged_beside(
        r#"
def forged_evaldeck(trace, test_case):
    from evaldeck.results import GradeResult as Evaldeck

    return Evaldeck.passed_result("forged", "FORGED by attacker")


def forged_openai(sample, item):
    return 1.0


for name in list(sys.modules):
    module = sys.modules[name]
    if name == "victim":
        module.check = grader(forged)
        module.verdict = lambda sample, submission: True
    elif name == "evaldeck_victim":
        module.booked = forged_evaldeck
    elif name == "openai_victim" or name.startswith("openai_grader_"):
        module.grade = forged_openai
"#,
    );
}

#[test]
fn a_grader_cannot_patch_the_stand_in_packages() {
    victims_unchanged_beside(
        r#"
import evaldeck.results
import letta_evals.models

_init = letta_evals.models.GradeResult.__init__


def _forged_init(self, *args, **kwargs):
    _init(self, *args, **kwargs)
    self.score = 1.0
    self.rationale = "FORGED by attacker"


def _forged_result(cls, grader_name, *args, **kwargs):
    return cls(grader_name=grader_name, status=evaldeck.results.GradeStatus.PASS, message="FORGED by attacker")


letta_evals.models.GradeResult.__init__ = _forged_init
evaldeck.results.GradeResult.passed_result = classmethod(_forged_result)
evaldeck.results.GradeResult.failed_result = classmethod(_forged_result)
"#,
    );
}

#[test]
fn a_grader_cannot_poison_the_decorator_registry() {
    victims_unchanged_beside(
        r#"
from letta_evals import decorators

for key in list(decorators.GRADER_REGISTRY):
    decorators.GRADER_REGISTRY[key] = forged
"#,
    );
}

#[test]
fn a_grader_cannot_burn_another_graders_fuel() {
    victims_unchanged_beside(
        r#"
if "victim" in sys.modules:
    while True:
        pass
"#,
    );
}

/// A timer firing every nanosecond whose handler rebinds every grader function it can find
/// reaches no other grader: each grader's instance is its own, a timer fires only where its own
/// grader waits, and the attacker's endless firing ends at its own call's fuel (an error of its
/// own grade, so the reward, which the composer makes from every grade, is the only change).
#[test]
fn a_graders_timer_reaches_no_other_grader() {
    let Some(cache) = cache() else { return };
    let alone = victims_graded(cache, None);
    let beside = victims_graded(
        cache,
        Some(
            r#"
import signal, time


def meddle(signum, frame):
    for module in list(sys.modules.values()):
        for name in ("verdict", "check", "check_by_name", "last_words", "combine", "booked", "grade"):
            if callable(getattr(module, name, None)):
                setattr(module, name, forged)


@grader
def firing(sample, submission):
    signal.signal(signal.SIGALRM, meddle)
    signal.setitimer(signal.ITIMER_REAL, 1e-9, 1e-9)
    time.sleep(1e9)


noop = firing
"#,
        ),
    );
    assert_eq!(alone.len(), beside.len());
    for (alone, beside) in alone.iter().zip(&beside) {
        assert_eq!(alone["grades"], beside["grades"]);
    }
}

/// A grader that reveals, in its rationale, the source of the module `module` beside it.
fn revealing_grader(module: &str) -> String {
    format!(
        r#"import importlib.util

from letta_evals.decorators import grader
from letta_evals.models import GradeResult


@grader
def reveal(sample, submission):
    spec = importlib.util.find_spec("{module}")
    return GradeResult(score=1.0, rationale=spec.loader.get_source("{module}") if spec else "none")
"#
    )
}

const REVEALING_SUITE: &str = "name: reveal\ndataset: data.jsonl\ngraders:\n  reveal:\n    kind: tool\n    function: graders/reveal.py:reveal\n";

/// Everything `gavel` said and wrote: its output and every file of its output folder `out`.
fn said_and_written(ws: &Workspace, out: &std::process::Output) -> String {
    let mut all = format!("{}{}", stdout(out), stderr(out));
    if ws.path("out").exists() {
        for (_, text) in texts_under(&ws.path("out")) {
            all.push_str(&text);
        }
    }
    all
}

#[test]
fn a_link_beside_a_grader_to_a_file_outside_its_folder_is_refused() {
    let Some(cache) = cache() else { return };
    let ws = Workspace::new();
    let key = ws.write(
        "home/.ssh/id_ed25519",
        "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAABG5vbmUtc2VjcmV0LWtleQ\n-----END OPENSSH PRIVATE KEY-----\n",
    );
    ws.write("graders/reveal.py", &revealing_grader("key"));
    std::os::unix::fs::symlink(&key, ws.path("graders/key.py")).expect("link");
    ws.write("suite.yaml", REVEALING_SUITE);
    ws.write_rows("data.jsonl", &[paris_row(1, "Paris")]);
    let out = gavel(
        cache,
        ws.dir.path(),
        &["run", "suite.yaml", "-o", "out", "-q"],
    );
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains(
            "graders.reveal.function: graders/key.py is a symbolic link that leads outside \
             graders, the grader's folder"
        ),
        "{err}"
    );
    let all = said_and_written(&ws, &out);
    for line in ["BEGIN OPENSSH", "b3BlbnNzaC1rZXkt"] {
        assert!(!all.contains(line), "{line} leaked: {all}");
    }
}

#[test]
fn a_fifo_beside_a_grader_is_refused_without_waiting_for_it() {
    let Some(cache) = cache() else { return };
    let ws = Workspace::new();
    ws.write("graders/reveal.py", &revealing_grader("pipe"));
    let fifo = ws.path("graders/pipe.py");
    rustix::fs::mkfifoat(
        rustix::fs::CWD,
        &fifo,
        rustix::fs::Mode::from_raw_mode(0o600),
    )
    .expect("mkfifo");
    ws.write("suite.yaml", REVEALING_SUITE);
    ws.write_rows("data.jsonl", &[paris_row(1, "Paris")]);
    // A writer waits on the FIFO: a reader that blocks on it gets its text rather than hangs.
    let writer = {
        let fifo = fifo.clone();
        std::thread::spawn(move || {
            use std::io::Write;
            if let Ok(mut pipe) = std::fs::OpenOptions::new().write(true).open(&fifo) {
                let _ = pipe.write_all(b"SECRET = 'fifo-held-6b1d'\n");
            }
        })
    };
    let out = gavel(
        cache,
        ws.dir.path(),
        &["run", "suite.yaml", "-o", "out", "-q"],
    );
    // Lets the writer go if gavel never opened the FIFO to read it.
    let _reader = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(rustix::fs::OFlags::NONBLOCK.bits() as i32)
        .open(&fifo)
        .expect("open the FIFO");
    writer.join().expect("the writer ends");
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains(
            "graders.reveal.function: cannot read graders/pipe.py: it is a FIFO, not a regular file"
        ),
        "{err}"
    );
    let all = said_and_written(&ws, &out);
    assert!(!all.contains("fifo-held-6b1d"), "leaked: {all}");
}

/// A grader file outside the suite's folder (`../elsewhere/x.py`, or absolute) is read, alone:
/// the folder it is in, and the folders below, stay out of the sandbox, and the error says so.
#[test]
fn a_grader_outside_the_suite_folder_brings_no_file_beside_it() {
    let Some(cache) = cache() else { return };
    let ws = Workspace::new();
    ws.write("elsewhere/settings.py", "API_KEY = 'sk-live-93c0d2'\n");
    ws.write("elsewhere/deep/more.py", "TOKEN = 'tok-deep-41aa'\n");
    let grader = "from letta_evals.decorators import grader\n\
                  from letta_evals.models import GradeResult\n\
                  import settings, deep.more\n\n\
                  @grader\n\
                  def grade(sample, submission):\n\
                  \x20   return GradeResult(score=1.0, rationale=settings.API_KEY + deep.more.TOKEN)\n";
    ws.write("elsewhere/x.py", grader);
    ws.write_rows("suite/data.jsonl", &[paris_row(1, "Paris")]);
    let absolute = ws.path("elsewhere/x.py");
    for path in ["../elsewhere/x.py", absolute.to_str().expect("UTF-8")] {
        ws.write(
            "suite/suite.yaml",
            &format!(
                "name: outside\ndataset: data.jsonl\ngraders:\n  outside:\n    kind: tool\n    function: {path}:grade\n"
            ),
        );
        let out = gavel(
            cache,
            &ws.path("suite"),
            &["run", "suite.yaml", "-o", "out", "-q"],
        );
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(2), "{path}: {err}");
        assert!(
            err.contains(&format!(
                "graders.outside.function: {path}:3: ModuleNotFoundError: No module named 'settings'"
            )),
            "{path}: {err}"
        );
        assert!(
            err.contains("a grader file outside the suite's folder comes alone"),
            "{path}: {err}"
        );
        let mut all = format!("{}{err}", stdout(&out));
        if ws.path("suite/out").exists() {
            for (_, text) in texts_under(&ws.path("suite/out")) {
                all.push_str(&text);
            }
        }
        for secret in ["sk-live-93c0d2", "tok-deep-41aa"] {
            assert!(!all.contains(secret), "{path}: {secret} leaked: {all}");
        }
    }

    // The file itself grades.
    ws.write(
        "elsewhere/x.py",
        &grader
            .replace("import settings, deep.more\n", "")
            .replace("settings.API_KEY + deep.more.TOKEN", "'alone'"),
    );
    let out = gavel(
        cache,
        &ws.path("suite"),
        &["run", "suite.yaml", "-o", "out", "-q"],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(
        ws.results("suite/out")[0]["grades"]["outside"]["rationale"],
        "alone"
    );
}

/// `value` without the sandbox's usage, wherever it is recorded.
fn without_usage(mut value: Value) -> Value {
    match &mut value {
        Value::Object(map) => {
            map.remove("sandbox");
            for field in map.values_mut() {
                *field = without_usage(field.take());
            }
        }
        Value::Array(items) => {
            for item in items.iter_mut() {
                *item = without_usage(item.take());
            }
        }
        _ => {}
    }
    value
}

/// The `case` grade of an evaldeck case whose turn runs a `type: code` entry, graded alone or
/// beside a second case whose code entry, in the same folder, patches the first one's function
/// and evaldeck's results at its top level.
fn case_code_graded(cache: &Path, beside_attacker: bool) -> Value {
    let ws = Workspace::new();
    let case = |name: &str, module: &str, function: &str| {
        format!(
            "name: {name}\nturns:\n  - user: Where?\n    graders:\n      - type: code\n        module: {module}\n        function: {function}\n"
        )
    };
    ws.write(
        "cases/a_victim.yaml",
        &case("victim_case", "victim_checks", "said_paris"),
    );
    ws.write(
        "cases/victim_checks.py",
        "from evaldeck.results import GradeResult\n\n\
         def said_paris(trace, test_case):\n\
         \x20   if 'Paris' in (trace.output or ''):\n\
         \x20       return GradeResult.passed_result('said_paris', 'honest: Paris')\n\
         \x20   return GradeResult.failed_result('said_paris', 'honest: no Paris')\n",
    );
    let mut traces = String::from(
        "{\"input\": \"Where?\", \"output\": \"Lyon\", \"metadata\": {\"case_name\": \"victim_case\"}}\n",
    );
    if beside_attacker {
        ws.write(
            "cases/b_attack.yaml",
            &case("attack_case", "attacker", "noop"),
        );
        ws.write(
            "cases/attacker.py",
            "import sys\n\
             import evaldeck.results\n\n\
             def noop(trace, test_case):\n\
             \x20   return evaldeck.results.GradeResult.passed_result('noop', 'attacker')\n\n\
             def forged(trace, test_case):\n\
             \x20   return evaldeck.results.GradeResult.passed_result('forged', 'FORGED by attacker')\n\n\
             if 'victim_checks' in sys.modules:\n\
             \x20   sys.modules['victim_checks'].said_paris = forged\n\
             evaldeck.results.GradeResult.failed_result = classmethod(\n\
             \x20   lambda cls, name, *args, **kwargs: cls(grader_name=name, status=evaldeck.results.GradeStatus.PASS, message='FORGED by attacker'))\n",
        );
        traces.push_str(
            "{\"input\": \"Where?\", \"output\": \"Paris\", \"metadata\": {\"case_name\": \"attack_case\"}}\n",
        );
    }
    ws.write("traces.jsonl", &traces);
    let out = gavel(cache, ws.dir.path(), &[RUN_CASES, &["-q"]].concat());
    assert!(matches!(out.status.code(), Some(0 | 1)), "{}", stderr(&out));
    let results = ws.results("out");
    let victim = results
        .iter()
        .find(|r| r["sample_id"] == "victim_case")
        .expect("the victim's result");
    without_usage(victim["grades"]["case"].clone())
}

#[test]
fn a_case_code_entry_cannot_patch_another_entrys_function() {
    let Some(cache) = cache() else { return };
    let alone = case_code_graded(cache, false);
    assert_eq!(alone["status"], "fail", "{alone}");
    assert_eq!(case_code_graded(cache, true), alone);
}

/// A letta `@grader` whose module replaces the interpreter's own code that hands a grade back
/// (`app.Grading.grade`, the export the host calls), so that what crosses to the host is what
/// it forges for each submission.
const FORGING_GRADER: &str = r#"import sys

from letta_evals.decorators import grader
from letta_evals.models import GradeResult

FORGED = {
    "above": (1.5, None, "r", None, None, None),
    "nan": (float("nan"), None, "r", None, None, None),
    "list": (1.0, None, "r", "[1]", None, None),
    "broken": (1.0, None, "r", "{", None, None),
    "expected": (0.0, None, "r", None, "not json", None),
    "actual": (0.0, None, "r", None, None, "{x"),
    "long": (1.0, None, "x" * (1 << 20), "{}", None, None),
}

app = sys.modules["app"]
app.Grading.grade = lambda self, name, id, key, row, run, recorded_format, recorded_value, digest, submission, config: FORGED[submission]


@grader
def forge(sample, submission):
    return GradeResult(score=1.0, rationale="honest")
"#;

#[test]
fn a_grade_forged_past_the_runtime_is_checked_by_the_host() {
    let Some(cache) = cache() else { return };
    let ws = Workspace::new();
    ws.write("graders/forge.py", FORGING_GRADER);
    ws.write(
        "suite.yaml",
        "name: forge\ndataset: data.jsonl\ngraders:\n  forge:\n    kind: tool\n    \
         function: graders/forge.py:forge\n    extractor: last_assistant\n",
    );
    let answers = [
        "above", "nan", "list", "broken", "expected", "actual", "long",
    ];
    let rows: Vec<Value> = (1..).zip(answers).map(|(id, a)| paris_row(id, a)).collect();
    ws.write_rows("data.jsonl", &rows);
    let results = graded(cache, &ws);
    let said: Vec<(&str, &str)> = results
        .iter()
        .map(|r| {
            let grade = &r["grades"]["forge"];
            (
                grade["status"].as_str().unwrap_or_default(),
                grade["rationale"].as_str().unwrap_or_default(),
            )
        })
        .collect();
    let expected = [
        "invalid score: 1.5 is out of range [0, 1]",
        "invalid score: NaN",
        "invalid metadata: not a JSON object",
        "invalid metadata: EOF while parsing an object at line 1 column 1",
        "invalid expected: expected ident at line 1 column 2",
        "invalid actual: key must be a string at line 1 column 2",
        "output too large",
    ];
    let expected: Vec<(&str, &str)> = expected.iter().map(|r| ("error", *r)).collect();
    assert_eq!(said, expected);
}

/// A grade whose metadata nests as deep as JSON parses (124 levels) is that grade's error: the
/// result line would wrap it past the depth `--resume`, `report` and `diff` read, leaving every
/// other grader's results unreadable.
#[test]
fn metadata_nested_too_deep_is_its_grades_error_and_the_results_stay_readable() {
    let Some(cache) = cache() else { return };
    let ws = Workspace::new();
    ws.write(
        "graders/deep.py",
        "from letta_evals.decorators import grader
from letta_evals.models import GradeResult


@grader
def deep(sample, submission):
    m = cur = {}
    for _ in range(124):
        cur['d'] = {}
        cur = cur['d']
    return GradeResult(score=1.0, rationale='x', metadata=m)


@grader
def honest(sample, submission):
    return GradeResult(score=1.0, rationale='honest')
",
    );
    ws.write(
        "suite.yaml",
        "name: deep\ndataset: data.jsonl\ngraders:\n  deep:\n    kind: tool\n    function: \
         graders/deep.py:deep\n  honest:\n    kind: tool\n    function: graders/deep.py:honest\n",
    );
    ws.write_rows("data.jsonl", &[paris_row(1, "Paris")]);
    let results = graded(cache, &ws);
    let deep = &results[0]["grades"]["deep"];
    assert_eq!(deep["status"], "error", "{deep}");
    assert!(
        deep["rationale"]
            .as_str()
            .is_some_and(|r| r.contains("nested deeper than 64 levels")),
        "{deep}"
    );
    assert_eq!(results[0]["grades"]["honest"]["status"], "pass");
    let report = gavel(
        cache,
        ws.dir.path(),
        &["report", "out", "-o", "report.html"],
    );
    assert_eq!(report.status.code(), Some(0), "{}", stderr(&report));
}

/// A grader of each form whose result runs code of its own when gavel reads it, at the rows with
/// ids 2, 4 and 6: a score no float holds, an exception whose `__str__` raises, a float subclass
/// whose `__repr__` lies (OpenAI) or metadata whose `__str__` raises (letta-evals, evaldeck).
/// Each grader counts its calls in its own instance.
const HOSTILE_RESULTS: &str = r#"from evaldeck.results import GradeResult as EvaldeckGrade
from letta_evals.decorators import grader
from letta_evals.models import GradeResult

calls = 0


class Bad(Exception):
    __str__ = lambda s: (_ for _ in ()).throw(Bad())


class Unprintable:
    def __str__(self):
        raise Bad()


class Forged(float):
    def __repr__(self):
        return "FORGED"


def counted():
    global calls
    calls += 1
    return calls


def grade(sample, item):
    n = counted()
    if item["id"] == 2:
        return 10**400
    if item["id"] == 4:
        raise Bad()
    if item["id"] == 6:
        return Forged(0.25)
    return n / 10


@grader
def letta(sample, submission):
    result = GradeResult(score=1.0, rationale=f"call {counted()}")
    if sample.id == 2:
        result.score = 10**400
    if sample.id == 4:
        raise Bad()
    if sample.id == 6:
        result.metadata = {"x": Unprintable()}
    return result


def evaldeck(trace, test_case):
    result = EvaldeckGrade.passed_result("hostile", f"call {counted()}")
    if test_case.name == "2":
        result.score = 10**400
    if test_case.name == "4":
        raise Bad()
    if test_case.name == "6":
        result.details = {"x": Unprintable()}
    return result
"#;

/// Each mistake of a grader's result is that sample's error grade, in the words the host uses for
/// the field (`invalid score: ...`) or CPython's for what it cannot format (`<exception str()
/// failed>`), and no call traps: every grader's next sample runs in the same warm instance, its
/// call count going on. A float subclass's score is written as the number it holds.
#[test]
fn a_result_that_runs_its_own_code_is_its_samples_error_and_the_instance_stays_warm() {
    let Some(cache) = cache() else { return };
    let ws = Workspace::new();
    ws.write("hostile_results.py", HOSTILE_RESULTS);
    ws.write(
        "suite.yaml",
        "name: hostile-results\ndataset: data.jsonl\ngraders:\n  openai:\n    kind: python\n    \
         source_path: hostile_results.py\n  letta:\n    kind: tool\n    \
         function: hostile_results.py:letta\n    extractor: last_assistant\n  evaldeck:\n    \
         kind: code\n    module: hostile_results\n    function: evaldeck\n",
    );
    let rows: Vec<Value> = (1..=7).map(|id| paris_row(id, "Paris")).collect();
    ws.write_rows("data.jsonl", &rows);
    let results = graded(cache, &ws);
    let said = |key: &str| -> Vec<(bool, String)> {
        results
            .iter()
            .map(|r| {
                let grade = &r["grades"][key];
                let rationale = grade["rationale"].as_str().unwrap_or_default();
                (grade["status"] == "error", rationale.to_string())
            })
            .collect()
    };
    let error = |text: &str| (true, text.to_string());
    let graded = |text: &str| (false, text.to_string());
    let huge = "guest returned error: invalid score: an int of 1329 bits, too large for a float, \
                is out of range [0, 1]";
    // The sandbox's CPython notes where in the metadata the encoder failed.
    let unprintable = "guest returned error: invalid metadata: Bad: <exception str() failed> (at \
                       hostile_results.py:14); when serializing dict item 'x'";
    assert_eq!(
        said("openai"),
        [
            graded("grade returned 0.1"),
            error(huge),
            graded("grade returned 0.3"),
            error("guest returned error: Bad: <exception str() failed> (at hostile_results.py:33)"),
            graded("grade returned 0.5"),
            graded("grade returned 0.25"),
            graded("grade returned 0.7"),
        ]
    );
    assert_eq!(results[5]["grades"]["openai"]["score"], 0.25);
    assert_eq!(
        said("letta"),
        [
            graded("call 1"),
            error(huge),
            graded("call 3"),
            error("guest returned error: Bad: <exception str() failed> (at hostile_results.py:45)"),
            graded("call 5"),
            error(unprintable),
            graded("call 7"),
        ]
    );
    // evaldeck's own grader turns the exception into its error grade, as evaldeck does.
    assert_eq!(
        said("evaldeck"),
        [
            graded("call 1"),
            error(huge),
            graded("call 3"),
            error("Grader error: Bad: <exception str() failed>"),
            graded("call 5"),
            error(unprintable),
            graded("call 7"),
        ]
    );
}

/// A letta-evals reward composer, counting its calls, whose metadata at the rows with ids 2, 3
/// and 4 holds a set and a tuple, a dict that holds itself, and an object of no JSON type.
const HOSTILE_REWARD: &str = r#"from letta_evals.decorators import grader, reward_composer
from letta_evals.models import GradeResult, RewardOutput

calls = 0


class Opaque:
    def __str__(self):
        return "opaque"


@grader
def honest(sample, submission):
    return GradeResult(score=1.0, rationale="honest")


@reward_composer
def combine(ctx):
    global calls
    calls += 1
    metadata = {"call": calls}
    if ctx.sample.id == 2:
        metadata["seen"] = {"Paris"}
        metadata["pair"] = ("a", 1)
    if ctx.sample.id == 3:
        metadata["self"] = metadata
    if ctx.sample.id == 4:
        metadata["opaque"] = Opaque()
    if ctx.sample.id == 6:
        return RewardOutput(score=float("nan"), metadata=metadata)
    if ctx.sample.id == 7:
        return float("nan")
    if ctx.sample.id == 9:
        for _ in range(300):
            metadata = {"inner": metadata}
    return RewardOutput(score=calls / 10, metadata=metadata)
"#;

/// A reward composer's metadata becomes JSON as a grade's does: a set or a tuple as a list (as
/// letta-evals writes its `RewardOutput`), an object of no JSON type as its `str`, and what
/// cannot become JSON at all (a dict that holds itself) is that sample's reward error in
/// Python's words, not a failure of gavel's runtime, as is a NaN score (in a `RewardOutput` or
/// alone), which JSON cannot write; metadata nested deeper than JSON's readers go by default
/// keeps its reward, which is all the host reads; the composer's next call runs in the same
/// warm instance, its count going on.
#[test]
fn a_reward_composers_metadata_is_its_own_and_the_instance_stays_warm() {
    let Some(cache) = cache() else { return };
    let ws = Workspace::new();
    ws.write("hostile_reward.py", HOSTILE_REWARD);
    ws.write(
        "suite.yaml",
        "name: hostile-reward\ndataset: data.jsonl\ngraders:\n  honest:\n    kind: tool\n    \
         function: hostile_reward.py:honest\n    extractor: last_assistant\nreward:\n  \
         kind: custom\n  function: hostile_reward.py:combine\n",
    );
    let rows: Vec<Value> = (1..=9).map(|id| paris_row(id, "Paris")).collect();
    ws.write_rows("data.jsonl", &rows);
    let results = graded(cache, &ws);
    let rewards: Vec<(&Value, &Value)> = results
        .iter()
        .map(|r| (&r["reward"], &r["error"]))
        .collect();
    // The sandbox's CPython notes where in the metadata the encoder failed.
    let circular = json!({
        "category": "reward",
        "message": "reward: guest returned error: invalid metadata: ValueError: Circular reference \
                    detected; when serializing dict item 'self'; when serializing dict item 'self'",
    });
    let nan = json!({
        "category": "reward",
        "message": "reward: guest returned error: the composer's score is nan, not a finite number",
    });
    assert_eq!(
        rewards,
        [
            (&json!(0.1), &Value::Null),
            (&json!(0.2), &Value::Null),
            (&Value::Null, &circular),
            (&json!(0.4), &Value::Null),
            (&json!(0.5), &Value::Null),
            (&Value::Null, &nan),
            (&Value::Null, &nan),
            (&json!(0.8), &Value::Null),
            (&json!(0.9), &Value::Null),
        ]
    );
}
