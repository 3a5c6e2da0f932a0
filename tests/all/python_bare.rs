//! Python graders, through the real interpreter component and the `gavel` binary, on a sandbox
//! that grants nothing: it behaves as Python on a bare machine (an empty environment, files that
//! are not there, a closed network, no processes, no native code), so the graders' own error
//! handling works; output past its limit is cut, not an error; and a module that does not load
//! is reported at the graders that use it alone.

use crate::common::{Workspace, stderr};
use crate::python_graders::{cache, gavel, graded, paris_row};
use serde_json::Value;

/// The start of every grader file here.
const HEAD: &str = "import os\n\nfrom letta_evals.decorators import grader\nfrom letta_evals.models import GradeResult\n\n";

/// The grades of `grader`, one per row, of a suite naming `file.py:name` for each of `names`,
/// graded over a row that answers Paris and one that answers Lyon.
fn graded_names(file: &str, body: &str, names: &[&str], limits: &str) -> (Workspace, Vec<Value>) {
    let Some(cache) = cache() else {
        return (Workspace::new(), Vec::new());
    };
    let ws = Workspace::new();
    ws.write(file, &format!("{HEAD}{body}"));
    let mut suite = format!("name: bare\ndataset: data.jsonl\n{limits}graders:\n");
    for name in names {
        suite.push_str(&format!(
            "  {name}:\n    kind: tool\n    function: {file}:{name}\n"
        ));
    }
    ws.write("suite.yaml", &suite);
    ws.write_rows("data.jsonl", &[paris_row(1, "Paris"), paris_row(2, "Lyon")]);
    let results = graded(cache, &ws);
    (ws, results)
}

/// The rationale of `name`'s grade in every result, which must have passed.
fn passed_saying(results: &[Value], name: &str) -> Vec<String> {
    results
        .iter()
        .map(|result| {
            let grade = &result["grades"][name];
            assert_eq!(grade["status"], "pass", "{name}: {grade}");
            grade["rationale"].as_str().unwrap().to_string()
        })
        .collect()
}

#[test]
fn the_environment_is_empty_and_reads_as_an_empty_one() {
    let (_ws, results) = graded_names(
        "env_grader.py",
        r#"KEY = os.environ.get("OPENAI_API_KEY", "none")


@grader
def reads(sample, submission):
    seen = [KEY, os.getenv("HOME", "no home"), repr(dict(os.environ)), str(len(os.environ))]
    seen += [repr(list(os.environ)), str("PATH" in os.environ)]
    seen += [os.path.expanduser("~"), os.path.expanduser("~/notes.txt")]
    try:
        os.environ["OPENAI_API_KEY"]
    except KeyError as e:
        seen.append(f"KeyError {e.args[0]}")
    return GradeResult(score=1.0, rationale=" | ".join(seen))


@grader
def requires(sample, submission):
    return GradeResult(score=1.0, rationale=os.environ["OPENAI_API_KEY"])
"#,
        &["reads", "requires"],
        "",
    );
    if results.is_empty() {
        return;
    }
    for said in passed_saying(&results, "reads") {
        assert_eq!(
            said,
            "none | no home | {} | 0 | [] | False | ~ | ~/notes.txt | KeyError OPENAI_API_KEY"
        );
    }
    for result in &results {
        let grade = &result["grades"]["requires"];
        assert_eq!(grade["status"], "error", "{grade}");
        let rationale = grade["rationale"].as_str().unwrap();
        assert!(
            rationale.starts_with(
                "guest returned error: KeyError: 'OPENAI_API_KEY' (at env_grader.py:23); "
            ),
            "{rationale}"
        );
        assert!(
            rationale.ends_with(
                "(`allow: {env: [OPENAI_API_KEY]}`, or `allow: {secrets: {OPENAI_API_KEY: \
                 [HOST]}}` for a key sent only to its hosts) that are set where gavel runs"
            ),
            "{rationale}"
        );
    }
}

#[test]
fn files_out_of_reach_are_not_there_and_nothing_is_written() {
    let (ws, results) = graded_names(
        "files.py",
        r#"import pathlib, tempfile


@grader
def probes(sample, submission):
    seen = []
    for label, attempt in [
        ("open", lambda: open("/etc/passwd").read()),
        ("open beside", lambda: open("data.jsonl").read()),
        ("stat", lambda: os.stat("/etc/passwd")),
        ("listdir", lambda: os.listdir("/")),
        ("scandir", lambda: list(os.scandir("/etc"))),
        ("read_text", lambda: pathlib.Path("/etc/passwd").read_text()),
    ]:
        try:
            seen.append(f"{label}: read {attempt()!r}")
        except FileNotFoundError as e:
            seen.append(f"{label}: FileNotFoundError {e.filename}")
    seen.append(f"walk: {list(os.walk('/'))}")
    seen.append(f"exists: {pathlib.Path('/etc/passwd').exists()} {os.path.isfile('suite.yaml')}")
    for label, path in [("write", "out.txt"), ("write absolute", "/tmp/out.txt")]:
        try:
            with open(path, "w") as f:
                f.write("x")
            seen.append(f"{label}: written")
        except OSError as e:
            seen.append(f"{label}: OSError {e.filename}")
    try:
        tempfile.mkdtemp()
    except FileNotFoundError as e:
        seen.append(f"mkdtemp: {e.strerror}; {e.__notes__}")
    return GradeResult(score=1.0, rationale="\n".join(seen))
"#,
        &["probes"],
        "",
    );
    if results.is_empty() {
        return;
    }
    for said in passed_saying(&results, "probes") {
        assert_eq!(
            said,
            "open: FileNotFoundError /etc/passwd\n\
             open beside: FileNotFoundError data.jsonl\n\
             stat: FileNotFoundError /etc/passwd\n\
             listdir: read []\n\
             scandir: FileNotFoundError /etc\n\
             read_text: FileNotFoundError /etc/passwd\n\
             walk: [('/', [], [])]\n\
             exists: False False\n\
             write: OSError out.txt\n\
             write absolute: OSError /tmp/out.txt\n\
             mkdtemp: No usable temporary directory found in ['/tmp', '/var/tmp', '/usr/tmp', \
             '/']; [\"gavel's sandbox gives a grader a writable /tmp of its own only where the \
             suite grants it a folder (`allow: {files: [FOLDER]}`)\"]"
        );
    }
    assert!(!ws.path("out.txt").exists());
}

#[test]
fn a_closed_network_raises_what_each_library_raises() {
    let (_ws, results) = graded_names(
        "network.py",
        r#"import http.client
import socket
import urllib.error
import urllib.request


@grader
def connects(sample, submission):
    seen = []
    try:
        socket.create_connection(("127.0.0.1", 80), timeout=1)
    except OSError:
        seen.append("socket: OSError")
    try:
        socket.getaddrinfo("example.com", 443)
    except socket.gaierror:
        seen.append("getaddrinfo: gaierror")
    try:
        urllib.request.urlopen("http://example.com/", timeout=1)
    except urllib.error.URLError:
        seen.append("urlopen: URLError")
    try:
        http.client.HTTPConnection("example.com", timeout=1).request("GET", "/")
    except OSError:
        seen.append("http.client: OSError")
    return GradeResult(score=1.0, rationale=", ".join(seen))
"#,
        &["connects"],
        "",
    );
    for said in passed_saying(&results, "connects") {
        assert_eq!(
            said,
            "socket: OSError, getaddrinfo: gaierror, urlopen: URLError, http.client: OSError"
        );
    }
}

#[test]
fn processes_and_native_code_fail_as_on_a_system_without_them() {
    let (_ws, results) = graded_names(
        "processes.py",
        r#"import subprocess


@grader
def spawns(sample, submission):
    seen = []
    for label, attempt in [
        ("run", lambda: subprocess.run(["id"], capture_output=True)),
        ("Popen", lambda: subprocess.Popen(["id"])),
        ("system", lambda: os.system("id")),
        ("fork", lambda: os.fork()),
    ]:
        try:
            attempt()
            seen.append(f"{label}: ran")
        except OSError:
            seen.append(f"{label}: OSError")
    try:
        import ctypes

        ctypes.CDLL(None)
        seen.append("ctypes: loaded")
    except (ImportError, OSError):
        seen.append("ctypes: refused")
    return GradeResult(score=1.0, rationale=", ".join(seen))
"#,
        &["spawns"],
        "",
    );
    for said in passed_saying(&results, "spawns") {
        assert_eq!(
            said,
            "run: OSError, Popen: OSError, system: OSError, fork: OSError, ctypes: refused"
        );
    }
}

#[test]
fn output_past_its_limit_is_cut_and_the_grade_stands() {
    let (_ws, results) = graded_names(
        "prints.py",
        r#"import sys


def verdict(sample, submission):
    ok = submission == sample.ground_truth
    return GradeResult(score=1.0 if ok else 0.0, rationale="match" if ok else "differs")


@grader
def quiet(sample, submission):
    return verdict(sample, submission)


@grader
def chatty(sample, submission):
    for i in range(200_000):
        print("line", i)
    for i in range(2_000):
        print("warning", i, file=sys.stderr)
    return verdict(sample, submission)
"#,
        &["quiet", "chatty"],
        "limits: {fuel: 20000000000, timeout_ms: 600000}\n",
    );
    for result in &results {
        let [quiet, chatty] = ["quiet", "chatty"].map(|name| &result["grades"][name]);
        for field in ["score", "status", "rationale", "submission"] {
            assert_eq!(chatty[field], quiet[field], "{field}: {chatty}");
        }
        let sandbox = &chatty["metadata"]["sandbox"];
        assert_eq!(sandbox["stdout_cut"], true, "{chatty}");
        assert_eq!(sandbox["stderr_cut"], true, "{chatty}");
        assert!(
            sandbox["stderr"]
                .as_str()
                .is_some_and(|tail| tail.contains("warning")),
            "{chatty}"
        );
        // The end of what it printed is kept, as far as the limit let it through.
        let printed = sandbox["stdout"].as_str().unwrap_or_default();
        assert!(
            printed.len() <= 1024 && printed.contains("line "),
            "{chatty}"
        );
        let quiet = &quiet["metadata"]["sandbox"];
        assert!(quiet.get("stdout").is_none(), "{quiet}");
        assert!(quiet.get("stdout_cut").is_none(), "{quiet}");
        assert!(quiet.get("stderr_cut").is_none(), "{quiet}");
    }
}

/// Every form a suite can name Python code in, each reading the environment at its top level and
/// looking for a file as graders do, grades: letta-evals' `@grader` and `@extractor` by file, a
/// `@grader` by the name it registered (the README's `same_ticket`), and a `@reward_composer`;
/// evaldeck's function and `BaseGrader` class; OpenAI's inline `source` and `source_path`.
/// The standard library a grader reaches for does what CPython's does: dates parsed by
/// `strptime`, argparse's program name, TOML and INI, the common codecs, XML and mail.
#[test]
fn the_standard_library_graders_reach_for_is_cpythons() {
    let (_ws, results) = graded_names(
        "stdlib_grader.py",
        r#"import argparse, configparser, datetime, email, sys, time, tomllib, zoneinfo
from concurrent.futures import ThreadPoolExecutor
from xml.dom import minidom
from xml.sax.saxutils import escape
import unittest


@grader
def reaches(sample, submission):
    seen = [str(datetime.datetime.strptime("2024-03-05 12:30", "%Y-%m-%d %H:%M"))]
    seen.append(str(time.strptime("7", "%H").tm_hour))
    seen.append(repr(sys.argv) + " " + repr(argparse.ArgumentParser().prog))
    seen.append(str(tomllib.loads("a = 1")["a"]))
    ini = configparser.ConfigParser()
    ini.read_string("[s]\nk = v\n")
    seen.append(ini["s"]["k"])
    seen.append("привет".encode("cp1251").hex() + " " + "é".encode("iso8859_2").hex())
    seen.append(minidom.parseString("<a><b/></a>").documentElement.firstChild.tagName)
    seen.append(email.message_from_string("Subject: hi\n\nbody").as_string().splitlines()[0])
    seen.append(escape("<&>"))
    try:
        zoneinfo.ZoneInfo("Europe/Paris")
    except zoneinfo.ZoneInfoNotFoundError:
        seen.append("no time zone data")
    return GradeResult(score=1.0, rationale=" | ".join(seen))
"#,
        &["reaches"],
        "",
    );
    if results.is_empty() {
        return;
    }
    for said in passed_saying(&results, "reaches") {
        assert_eq!(
            said,
            "2024-03-05 12:30:00 | 7 | [''] '' | 1 | v | eff0e8e2e5f2 e9 | b | Subject: hi | \
             &lt;&amp;&gt; | no time zone data"
        );
    }
}

/// The CPU clocks read the call's clock, as `time.monotonic` does (the C library's stand-in
/// counted from before it and gave negative times), and `hashlib.pbkdf2_hmac`, which CPython
/// takes from OpenSSL, derives RFC 6070's key.
#[test]
fn cpu_clocks_and_key_derivation_are_cpythons() {
    let (_ws, results) = graded_names(
        "cpu_grader.py",
        r#"import hashlib, time


@grader
def cpu(sample, submission):
    seen = [time.process_time(), time.thread_time(), os.times().user]
    time.sleep(2)
    seen += [time.process_time(), time.process_time_ns(), time.thread_time_ns()]
    key = hashlib.pbkdf2_hmac("sha1", b"password", b"salt", 2, 20).hex()
    return GradeResult(score=1.0, rationale=f"{seen} {key}")
"#,
        &["cpu"],
        "",
    );
    if results.is_empty() {
        return;
    }
    for said in passed_saying(&results, "cpu") {
        assert_eq!(
            said,
            "[0.0, 0.0, 0.0, 2.0, 2000000000, 2000000000] ea6c014dc72d6f8ccd1ed92ace1d41f0d8de8957"
        );
    }
}

/// A timeout guard made of `signal.setitimer` and a `SIGALRM` handler (HumanEval's
/// `time_limit`) works: the timer fires where a sleep passes it, on the call's clock; `alarm`
/// says what was left; a timer one call leaves set is gone in the next call of the instance.
#[test]
fn timers_fire_on_the_calls_clock_where_the_grader_waits() {
    let (_ws, results) = graded_names(
        "timed_grader.py",
        r#"import contextlib, signal, time


class TimeoutException(Exception):
    pass


@contextlib.contextmanager
def time_limit(seconds):
    def handler(signum, frame):
        raise TimeoutException("Timed out!")

    signal.setitimer(signal.ITIMER_REAL, seconds)
    signal.signal(signal.SIGALRM, handler)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)


@grader
def timed(sample, submission):
    said = [str(signal.getitimer(signal.ITIMER_REAL))]
    for wait in (0.5, 5):
        try:
            with time_limit(3.0):
                time.sleep(wait)
            said.append(f"{wait}: done")
        except TimeoutException:
            said.append(f"{wait}: timed out at {time.monotonic()}")
    left = signal.alarm(10)
    time.sleep(2)
    said.append(f"{left} {signal.alarm(0)}")
    signal.alarm(1)
    return GradeResult(score=1.0, rationale=" | ".join(said))
"#,
        &["timed"],
        "",
    );
    if results.is_empty() {
        return;
    }
    for said in passed_saying(&results, "timed") {
        assert_eq!(said, "(0.0, 0.0) | 0.5: done | 5: timed out at 3.5 | 0 8");
    }
}

/// An async grader runs in an event loop, as the peers await it in theirs: sleeps, `gather`,
/// `timeout` and `get_running_loop()` work (a sleep takes no time, as `time.sleep` takes none
/// in the sandbox, and moves the call's clock as `time.sleep` does), and so does
/// `asyncio.run` in a plain grader, where a `SIGALRM` timer fires in the loop's sleep and its
/// handler's exception leaves `asyncio.run`, as in CPython.
#[test]
fn async_graders_run_in_an_event_loop() {
    let (_ws, results) = graded_names(
        "async_grader.py",
        r#"import asyncio
import signal
import time


@grader
async def awaits(sample, submission):
    loop = asyncio.get_running_loop()
    started, clock = loop.time(), time.monotonic()
    said = await asyncio.gather(asyncio.sleep(0.2, "slow"), asyncio.sleep(0.1, "fast"))
    try:
        async with asyncio.timeout(1):
            await asyncio.sleep(3)
    except TimeoutError:
        said.append(f"timed out after {loop.time() - started:.1f} s")
    said.append(f"clock {time.monotonic() - clock:.1f}")
    return GradeResult(score=1.0, rationale=" ".join(said))


@grader
def alarmed(sample, submission):
    def expire(signum, frame):
        raise TimeoutError("alarm")

    signal.signal(signal.SIGALRM, expire)
    signal.alarm(2)
    started = time.monotonic()
    try:
        asyncio.run(asyncio.sleep(5))
        said = "slept"
    except TimeoutError as e:
        said = f"{e} at {time.monotonic() - started:.1f}"
    return GradeResult(score=1.0, rationale=said)


@grader
def runs(sample, submission):
    async def inner():
        await asyncio.sleep(0.1)
        return "ran"

    return GradeResult(score=1.0, rationale=asyncio.run(inner()))
"#,
        &["awaits", "runs", "alarmed"],
        "",
    );
    if results.is_empty() {
        return;
    }
    for said in passed_saying(&results, "awaits") {
        assert_eq!(said, "slow fast timed out after 1.2 s clock 1.2");
    }
    for said in passed_saying(&results, "alarmed") {
        assert_eq!(said, "alarm at 2.0");
    }
    for said in passed_saying(&results, "runs") {
        assert_eq!(said, "ran");
    }
}

/// The sandbox's clocks move as a grader waits, by what it waits, so a loop polling until a
/// deadline ends; threads run, one at a time, when the program waits for them (a join, a
/// queue, a future, `to_thread`), and a wait no thread can end raises instead of hanging. A
/// thread one call left waiting does not run in the next.
#[test]
fn threads_run_when_waited_for_and_the_clock_moves_as_the_grader_waits() {
    let (_ws, results) = graded_names(
        "threaded.py",
        r#"import asyncio
import concurrent.futures
import queue
import threading
import time

LEFT = []


@grader
def clock(sample, submission):
    started, wall = time.monotonic(), time.time()
    time.sleep(1.5)
    slept = (time.monotonic() - started, time.time() - wall)
    deadline, polls = time.time() + 10, 0
    while time.time() < deadline:
        polls += 1
        time.sleep(1)
    try:
        queue.Queue().get(timeout=0.5)
    except queue.Empty:
        polls += 100
    return GradeResult(score=1.0, rationale=f"{slept} {polls} {time.monotonic() - started}")


@grader
def pools(sample, submission):
    with concurrent.futures.ThreadPoolExecutor(4) as pool:
        doubled = list(pool.map(lambda x: 2 * x, [1, 2, 3]))
        nested = pool.submit(lambda: pool.submit(lambda: 7).result()).result()
        failed = pool.submit(lambda: 1 / 0).exception()

    async def both():
        loop = asyncio.get_running_loop()
        return await asyncio.gather(loop.run_in_executor(None, lambda: 1), asyncio.to_thread(lambda: 2))

    return GradeResult(
        score=1.0, rationale=f"{doubled} {nested} {type(failed).__name__} {asyncio.run(both())}"
    )


@grader
def workers(sample, submission):
    jobs, done = queue.Queue(), []

    def work():
        while (job := jobs.get()) is not None:
            done.append(job * job)

    started = [threading.Thread(target=work) for _ in range(3)]
    for thread in started:
        thread.start()
    alive = [thread.is_alive() for thread in started]
    for job in range(5):
        jobs.put(job)
    for _ in started:
        jobs.put(None)
    for thread in started:
        thread.join()
    try:
        threading.Event().wait()
        stuck = "waited"
    except RuntimeError as e:
        stuck = str(e).split(":")[0]
    # Ran by the waits above had the last call's been kept waiting.
    left = list(LEFT)
    threading.Thread(target=LEFT.append, args=("left",)).start()
    return GradeResult(
        score=1.0,
        rationale=f"{left} {alive} {[t.is_alive() for t in started]} {done} "
        f"{threading.current_thread().name} {stuck}",
    )
"#,
        &["clock", "pools", "workers"],
        "",
    );
    if results.is_empty() {
        return;
    }
    for said in passed_saying(&results, "clock") {
        assert_eq!(said, "(1.5, 1.5) 110 12.0");
    }
    for said in passed_saying(&results, "pools") {
        assert_eq!(said, "[2, 4, 6] 7 ZeroDivisionError [1, 2]");
    }
    // The second row's call runs in the instance the first's ran in, which left a thread
    // waiting: it never ran.
    for said in passed_saying(&results, "workers") {
        assert_eq!(
            said,
            "[] [True, True, True] [False, False, False] [0, 1, 4, 9, 16] MainThread \
             the program waits for what no thread can do any more"
        );
    }
}

/// A module's `__file__` is absolute, as CPython's, and under `/`, where nothing granted is
/// mounted: a data file the grader opens beside it is not found, never one of the same name
/// an agent left in the folder the grader starts in.
#[test]
fn a_file_beside_the_grader_is_never_the_workspaces() {
    let Some(cache) = cache() else { return };
    let ws = Workspace::new();
    ws.write(
        "beside.py",
        &format!(
            "{HEAD}{}",
            r#"import json


@grader
def beside(sample, submission):
    here = os.path.dirname(os.path.abspath(__file__))
    try:
        with open(os.path.join(here, "answer.json")) as f:
            said = "read " + json.load(f)["answer"]
    except FileNotFoundError as e:
        said = f"not found: {e.filename}"
    return GradeResult(score=1.0, rationale=f"{__file__} | {os.getcwd() != here} | {said}")
"#
        ),
    );
    // An agent's workspace, where the grader starts, holding a file of the same name.
    ws.write("work/answer.json", r#"{"answer": "planted"}"#);
    ws.write(
        "suite.yaml",
        "name: beside\ndataset: data.jsonl\nallow:\n  files: [work/]\ngraders:\n  beside:\n    \
         kind: tool\n    function: beside.py:beside\n",
    );
    ws.write_rows("data.jsonl", &[paris_row(1, "Paris")]);
    let results = graded(cache, &ws);
    for said in passed_saying(&results, "beside") {
        assert_eq!(said, "/beside.py | True | not found: /answer.json");
    }
}

#[test]
fn every_python_form_grades_on_a_bare_machine() {
    let Some(cache) = cache() else { return };
    let ws = Workspace::new();
    ws.write(
        "graders/custom_evaluators.py",
        r#"import os

from letta_evals.decorators import extractor, grader, reward_composer
from letta_evals.extractors.utils import get_assistant_messages
from letta_evals.models import GradeResult, RewardOutput

HOME = os.environ.get("HOME", "nowhere")


def config():
    try:
        with open(os.path.expanduser("~/.config/tickets.json")) as f:
            return f.read()
    except FileNotFoundError:
        return "defaults"


@grader
def ticket_classification_grader(sample, submission):
    ok = submission == sample.ground_truth
    return GradeResult(score=1.0 if ok else 0.0, rationale=f"{HOME}, {config()}")


@extractor
def last_words(trajectory, config):
    messages = get_assistant_messages(trajectory)
    return messages[-1].content if messages else ""


@reward_composer
def combine(ctx):
    return RewardOutput(score=0.5 * ctx.grades["ticket"].score + 0.25)
"#,
    );
    ws.write(
        "my_graders.py",
        r#"import os

from evaldeck.graders import BaseGrader
from evaldeck.results import GradeResult

TOKEN = os.getenv("EVALDECK_TOKEN")


def booked(trace, test_case):
    if TOKEN is None:
        return GradeResult.passed_result("booked", "no token")
    return GradeResult.failed_result("booked", TOKEN)


class Said(BaseGrader):
    name = "said"

    def __init__(self, word):
        self.word = word
        self.seen = sorted(os.environ)

    def grade(self, trace, test_case):
        if not self.seen:
            return GradeResult.passed_result(self.name, f"{self.word}: no variables")
        return GradeResult.failed_result(self.name, f"{self.word}: {self.seen}")
"#,
    );
    ws.write(
        "graders/openai_said.py",
        "import os\n\nPREFIX = os.environ.get('PREFIX', '')\n\n\
         def grade(sample, item):\n\
         \x20   return 1.0 if sample['output_text'] == PREFIX + item['ground_truth'] else 0.0\n",
    );
    ws.write(
        "suite.yaml",
        r#"name: forms
dataset: data.jsonl
graders:
  ticket:
    kind: tool
    function: graders/custom_evaluators.py:ticket_classification_grader
    extractor: graders/custom_evaluators.py:last_words
  same_ticket:
    kind: tool
    function: ticket_classification_grader
  booking:
    kind: code
    module: my_graders
    function: booked
  said:
    kind: code
    module: my_graders
    class: Said
    params: {word: Paris}
  length:
    kind: python
    source: |
      import os
      LIMIT = int(os.environ.get("LIMIT", "80"))
      def grade(sample, item) -> float:
          return 1.0 if len(sample["output_text"]) <= LIMIT else 0.0
  by_file:
    kind: python
    source_path: graders/openai_said.py
reward:
  kind: custom
  function: graders/custom_evaluators.py:combine
"#,
    );
    ws.write_rows("data.jsonl", &[paris_row(1, "Paris"), paris_row(2, "Lyon")]);
    let results = graded(cache, &ws);
    let summary: Vec<Vec<String>> = results
        .iter()
        .map(|result| {
            let mut row: Vec<String> = [
                "ticket",
                "same_ticket",
                "booking",
                "said",
                "length",
                "by_file",
            ]
            .iter()
            .map(|key| {
                let grade = &result["grades"][key];
                format!(
                    "{key} {} {} {}",
                    grade["status"], grade["score"], grade["rationale"]
                )
            })
            .collect();
            row.push(format!("reward {}", result["reward"]));
            row
        })
        .collect();
    assert_eq!(
        summary,
        [
            [
                r#"ticket "pass" 1.0 "nowhere, defaults""#,
                r#"same_ticket "pass" 1.0 "nowhere, defaults""#,
                r#"booking "pass" 1.0 "no token""#,
                r#"said "pass" 1.0 "Paris: no variables""#,
                r#"length "pass" 1.0 "grade returned 1.0""#,
                r#"by_file "pass" 1.0 "grade returned 1.0""#,
                "reward 0.75",
            ],
            [
                r#"ticket "fail" 0.0 "nowhere, defaults""#,
                r#"same_ticket "fail" 0.0 "nowhere, defaults""#,
                r#"booking "pass" 1.0 "no token""#,
                r#"said "pass" 1.0 "Paris: no variables""#,
                r#"length "pass" 1.0 "grade returned 1.0""#,
                r#"by_file "fail" 0.0 "grade returned 0.0""#,
                "reward 0.25",
            ],
        ]
    );
}

/// A module that does not load, a file that is not there and a name no file registers are each
/// reported at the grader that names them, and the other graders are still checked: `validate`
/// finds the mistake of a grader whose file loads, and `run` refuses the suite naming the same.
#[test]
fn a_module_that_does_not_load_is_reported_at_its_graders_alone() {
    let Some(cache) = cache() else { return };
    let ws = Workspace::new();
    ws.write(
        "broken.py",
        &format!("{HEAD}import numpy\n\n\n@grader\ndef check(sample, submission):\n    return GradeResult(score=1.0, rationale='broken')\n"),
    );
    ws.write(
        "good.py",
        &format!("{HEAD}@grader\ndef check(sample, submission):\n    return GradeResult(score=1.0, rationale='good')\n"),
    );
    ws.write(
        "suite.yaml",
        "name: partial\ndataset: data.jsonl\ngraders:\n\
         \x20 broken:\n    kind: tool\n    function: broken.py:check\n\
         \x20 registered:\n    kind: tool\n    function: same_ticket\n\
         \x20 missing:\n    kind: tool\n    function: missing.py:check\n\
         \x20 typo:\n    kind: tool\n    function: good.py:chekc\n\
         \x20 good:\n    kind: tool\n    function: good.py:check\n",
    );
    ws.write_rows("data.jsonl", &[paris_row(1, "Paris")]);
    for command in [
        &["validate", "suite.yaml"][..],
        &["run", "suite.yaml", "-o", "out"],
    ] {
        let out = gavel(cache, ws.dir.path(), command);
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(2), "{err}");
        let problems: Vec<&str> = err.lines().filter(|l| l.starts_with("error: ")).collect();
        let at = |key: &str| {
            problems
                .iter()
                .find(|l| l.contains(&format!(" graders.{key}.function: ")))
                .unwrap_or_else(|| panic!("nothing said at graders.{key}: {err}"))
        };
        assert!(
            at("broken").contains("broken.py:6: ModuleNotFoundError: No module named 'numpy'"),
            "{err}"
        );
        let registered = at("registered");
        assert!(
            registered.contains("no Python file of the suite registers `same_ticket`"),
            "{err}"
        );
        assert!(!registered.contains("numpy"), "{err}");
        assert!(at("missing").contains("no such file: "), "{err}");
        assert!(
            at("typo").contains("module 'good' has no attribute 'chekc'"),
            "{err}"
        );
        assert_eq!(problems.len(), 4, "{err}");
        assert!(err.contains("4 problems found"), "{err}");
        assert!(!ws.path("out").exists());
    }
}
