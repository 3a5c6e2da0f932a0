//! `requirements:`: pure-Python packages resolved once into `pylock.gavel.toml`, unpacked into
//! the cache and importable, read-only, by the graders that asked for them. Resolution uses the
//! host's pip and PyPI; wheels of the tests' own making are served from a server on loopback.

use std::io::{Read, Write};
use std::net::TcpListener;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use serde_json::json;
use sha2::{Digest, Sha256};

use crate::common::{Workspace, stderr};
use crate::python_graders::{cache, gavel, graded};

const LOCK: &str = "pylock.gavel.toml";

/// Limits for graders that import large packages from their files in every call.
const FUEL: &str = "limits: {fuel: 5000000000, timeout_ms: 60000, memory_mb: 256}\n";

/// A suite whose one grader, `g.py` (with `code`), scores the row; `requirements` at the top.
fn suite(requirements: &str, code: &str) -> Workspace {
    let ws = Workspace::new();
    ws.write("g.py", code);
    ws.write(
        "suite.yaml",
        &format!(
            "name: packages\ndataset: data.jsonl\n{requirements}graders:\n  g:\n    kind: python\n    source_path: g.py\n"
        ),
    );
    ws.write_rows("data.jsonl", &[json!({"id": 1, "input": "src/a.py"})]);
    ws
}

/// What `gavel validate` says of the suite in `ws`, which it must refuse.
fn refused(ws: &Workspace, cache: &Path) -> String {
    let out = gavel(cache, ws.dir.path(), &["validate", "suite.yaml"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    stderr(&out)
}

fn scores(ws: &Workspace, cache: &Path) -> Vec<f64> {
    let out = gavel(
        cache,
        ws.dir.path(),
        &["run", "suite.yaml", "-o", "out", "-q"],
    );
    assert!(matches!(out.status.code(), Some(0 | 1)), "{}", stderr(&out));
    ws.results("out")
        .iter()
        .map(|r| {
            let grade = &r["grades"]["g"];
            grade["score"].as_f64().unwrap_or_else(|| panic!("{r}"))
        })
        .collect()
}

#[test]
fn a_grader_importing_pathspec_grades_and_the_lock_is_written_once() {
    let Some(cache) = cache() else { return };
    let ws = suite(
        // Importing pathspec from its files costs about 340 million fuel a call.
        &format!("requirements:\n  - pathspec\n{FUEL}"),
        "import pathspec\n\ndef grade(sample, item):\n    spec = pathspec.PathSpec.from_lines('gitwildmatch', ['src/*.py'])\n    return 1.0 if spec.match_file(item['input']) else 0.0\n",
    );
    let out = gavel(cache, ws.dir.path(), &["validate", "suite.yaml"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(stderr(&out).contains("note: resolving"), "{}", stderr(&out));
    let lock = std::fs::read_to_string(ws.path(LOCK)).expect("the lock is written");
    assert!(lock.contains("name = \"pathspec\""), "{lock}");
    assert!(lock.contains("-py3-none-any.whl"), "{lock}");

    // Later runs read the lock: no resolver runs, and none could (no python3 on PATH).
    let empty = Workspace::new();
    let cache_var = cache.to_string_lossy();
    let out = crate::common::gavel_with_env(
        ws.dir.path(),
        &["run", "suite.yaml", "-o", "out", "-q"],
        &[
            ("GAVEL_CACHE_DIR", &cache_var),
            ("GAVEL_PYTHON_COMPONENT", ""),
            ("PATH", &empty.dir.path().to_string_lossy()),
        ],
    );
    assert!(matches!(out.status.code(), Some(0 | 1)), "{}", stderr(&out));
    assert!(!stderr(&out).contains("resolving"), "{}", stderr(&out));
    assert_eq!(std::fs::read_to_string(ws.path(LOCK)).unwrap(), lock);
    assert_eq!(ws.results("out")[0]["grades"]["g"]["score"], 1.0);

    // A lock for other requirements is an error naming the fix.
    ws.write(
        "suite.yaml",
        &std::fs::read_to_string(ws.path("suite.yaml"))
            .unwrap()
            .replace("  - pathspec\n", "  - pathspec\n  - idna\n"),
    );
    let err = refused(&ws, cache);
    assert!(
        err.contains("was locked for other requirements (pathspec for CPython"),
        "{err}"
    );
    assert!(err.contains("delete it"), "{err}");
}

/// The resolver is the host's pip, run natively: a `pip` package in the folder gavel runs in
/// (a suite's checkout) is never what runs.
#[test]
fn a_pip_planted_where_gavel_runs_is_not_run() {
    let Some(cache) = cache() else { return };
    let ws = suite(
        &format!("requirements:\n  - pathspec\n{FUEL}"),
        "def grade(sample, item):\n    return 1.0\n",
    );
    ws.write("pip/__init__.py", "");
    ws.write(
        "pip/__main__.py",
        "open('planted-pip-ran', 'w').close()\nraise SystemExit(0)\n",
    );
    let out = gavel(cache, ws.dir.path(), &["validate", "suite.yaml"]);
    assert!(
        !ws.path("planted-pip-ran").exists(),
        "the planted pip ran natively"
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let lock = std::fs::read_to_string(ws.path(LOCK)).expect("the real pip wrote the lock");
    assert!(lock.contains("name = \"pathspec\""), "{lock}");
}

/// A requirement that names a source folder (or an archive, or a repository) is refused before
/// pip is asked: pip prepares such a package by running its build backend natively.
#[test]
fn a_requirement_naming_a_source_folder_is_refused_before_pip_builds_it() {
    let Some(cache) = cache() else { return };
    let ws = suite("", "def grade(sample, item):\n    return 1.0\n");
    ws.write(
        "evil/pyproject.toml",
        "[build-system]\nrequires = []\nbuild-backend = \"backend\"\nbackend-path = [\".\"]\n",
    );
    let marker = ws.path("backend-ran");
    ws.write(
        "evil/backend.py",
        &format!("open({:?}, 'w').close()\n", marker.display().to_string()),
    );
    let folder = ws.path("evil");
    ws.write(
        "requirements.txt",
        &format!("evil @ file://{}\n", folder.display()),
    );
    let err = refused(&ws, cache);
    assert!(!marker.exists(), "the package's build backend ran natively");
    assert!(
        err.contains("names where to get the package") && err.contains("evil @ file://"),
        "{err}"
    );
}

#[test]
fn httpx_and_requests_import() {
    let Some(cache) = cache() else { return };
    let ws = suite(
        FUEL,
        "import httpx\nimport requests\n\ndef grade(sample, item):\n    return 1.0 if httpx.URL('https://a/b').host == 'a' and requests.__version__ else 0.0\n",
    );
    ws.write("requirements.txt", "# beside the grader\nhttpx\nrequests\n");
    assert_eq!(scores(&ws, cache), [1.0]);
}

#[test]
fn a_grader_importing_requests_grades_within_the_default_limits() {
    let Some(cache) = cache() else { return };
    // No `limits:`: each call has the default fuel, memory and deadline. Compiling requests
    // and its dependencies from their sources alone costs about 2.2 billion fuel.
    let ws = suite(
        "requirements:\n  - requests\n",
        "import requests\n\ndef grade(sample, item):\n    return 1.0 if requests.Session().headers['Accept'] == '*/*' else 0.0\n",
    );
    ws.write_rows(
        "data.jsonl",
        &(1..=3)
            .map(|id| json!({"id": id, "input": "x"}))
            .collect::<Vec<_>>(),
    );
    assert_eq!(scores(&ws, cache), [1.0, 1.0, 1.0]);
}

#[test]
fn a_native_package_is_refused_by_validate_naming_it() {
    let Some(cache) = cache() else { return };
    let ws = suite(
        "requirements:\n  - numpy\n",
        "def grade(sample, item):\n    return 1.0\n",
    );
    let err = refused(&ws, cache);
    assert!(
        err.contains("requirements: numpy ships no pure-Python wheel"),
        "{err}"
    );
    assert!(err.contains("cannot load native code"), "{err}");
    assert!(!ws.path(LOCK).exists());
}

/// A wheel of `members` (stored), and its SHA-256.
fn wheel(members: &[(&str, &str)]) -> (Vec<u8>, String) {
    let mut writer = zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
    let options =
        zip::write::SimpleFileOptions::default().compression_method(zip::CompressionMethod::Stored);
    for (name, content) in members {
        writer.start_file(*name, options).unwrap();
        writer.write_all(content.as_bytes()).unwrap();
    }
    let bytes = writer.finish().unwrap().into_inner();
    let sha256 = format!("{:x}", Sha256::digest(&bytes));
    (bytes, sha256)
}

/// Serves `body` to every GET on loopback until the test ends; its URL and a request count.
fn serve(body: Vec<u8>) -> (String, Arc<AtomicUsize>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!(
        "http://{}/w/pkg-1.0-py3-none-any.whl",
        listener.local_addr().unwrap()
    );
    let count = Arc::new(AtomicUsize::new(0));
    let counted = count.clone();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { return };
            let mut request = [0u8; 4096];
            let _ = stream.read(&mut request);
            counted.fetch_add(1, Ordering::SeqCst);
            let head = format!(
                "HTTP/1.1 200 OK\r\ncontent-length: {}\r\nconnection: close\r\n\r\n",
                body.len()
            );
            let _ = stream.write_all(head.as_bytes());
            let _ = stream.write_all(&body);
        }
    });
    (url, count)
}

/// A suite requiring `pkg`, locked to the wheel of `members` served on loopback.
fn locked_suite(members: &[(&str, &str)]) -> (Workspace, Arc<AtomicUsize>) {
    locked_suite_grading(
        members,
        "import pkg\n\ndef grade(sample, item):\n    return pkg.VALUE\n",
        "",
    )
}

/// [`locked_suite`] whose grader is `code`, with `top` (YAML lines) at the suite's top level.
fn locked_suite_grading(
    members: &[(&str, &str)],
    code: &str,
    top: &str,
) -> (Workspace, Arc<AtomicUsize>) {
    let (bytes, sha256) = wheel(members);
    let (url, count) = serve(bytes);
    let ws = suite(&format!("requirements:\n  - pkg\n{top}"), code);
    ws.write(
        LOCK,
        &format!(
            "lock-version = \"1.0\"\ncreated-by = \"gavel\"\n\n[[packages]]\nname = \"pkg\"\nversion = \"1.0\"\nwheels = [{{ name = \"pkg-1.0-py3-none-any.whl\", url = \"{url}\", hashes = {{ sha256 = \"{sha256}\" }} }}]\n\n[tool.gavel]\npython = \"3.14\"\nrequirements = [\"pkg\"]\n"
        ),
    );
    (ws, count)
}

const WHEEL_FILE: (&str, &str) = ("pkg-1.0.dist-info/WHEEL", "Root-Is-Purelib: true\n");

/// The unpacked tree in `cache` whose `pkg/__init__.py` is `module`.
fn tree_holding(cache: &Path, module: &str) -> std::path::PathBuf {
    std::fs::read_dir(cache.join("python/packages"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| {
            std::fs::read_to_string(p.join("pkg/__init__.py")).is_ok_and(|text| text == module)
        })
        .expect("the unpacked tree")
}

/// Runs the suite in `ws` after its tree was altered: the tree is not mounted but downloaded
/// (a second time, by `count`) and unpacked again, and the grade is the wheel's `value`.
fn assert_unpacked_again(ws: &Workspace, cache: &Path, value: &str, count: &AtomicUsize) {
    let out = gavel(
        cache,
        ws.dir.path(),
        &["run", "suite.yaml", "-o", "out", "-q"],
    );
    assert!(
        stderr(&out).contains("were not mounted (its authentication tag does not match"),
        "{}",
        stderr(&out)
    );
    assert_eq!(
        ws.results("out")[0]["grades"]["g"]["score"],
        value.parse::<f64>().unwrap()
    );
    assert_eq!(count.load(Ordering::SeqCst), 2);
}

/// A suite whose package is a wheel of the test's own (`VALUE = 0.<process id><suffix>`, so
/// that its tree is its alone in the shared cache), graded once: its wheel downloaded and
/// unpacked once. Its value, and its module's text.
fn unpacked_once(cache: &Path, suffix: &str) -> (Workspace, Arc<AtomicUsize>, String, String) {
    let value = format!("0.{}{suffix}", std::process::id());
    let module = format!("VALUE = {value}\n");
    let (ws, count) = locked_suite(&[("pkg/__init__.py", &module), WHEEL_FILE]);
    assert_eq!(scores(&ws, cache), [value.parse::<f64>().unwrap()]);
    assert_eq!(count.load(Ordering::SeqCst), 1);
    (ws, count, value, module)
}

/// Tries to change the package's folder every way a file system allows, and raises with what
/// each attempt raised.
const CHANGES_THE_PACKAGE: &str = r#"import os

import pkg

def grade(sample, item):
    folder = os.path.dirname(pkg.__file__)
    attempts = {
        "append": lambda: open(pkg.__file__, "a").write("VALUE = 1.0\n"),
        "create": lambda: open(os.path.join(folder, "new.py"), "w").write("x = 1\n"),
        "remove": lambda: os.remove(pkg.__file__),
        "rename": lambda: os.rename(pkg.__file__, os.path.join(folder, "moved.py")),
        "mkdir": lambda: os.mkdir(os.path.join(folder, "sub")),
        "rmtree": lambda: os.rmdir(os.path.join(folder, "__pycache__")),
        # By a name relative to the folder's descriptor, from /tmp: what the interpreter's
        # own guard takes for a path in /tmp, so that the mount alone refuses it.
        "remove_at": lambda: os.remove("__init__.py", dir_fd=at),
        "create_at": lambda: os.open("new.py", os.O_CREAT | os.O_WRONLY, dir_fd=at),
    }
    os.chdir("/tmp")
    at = os.open(folder, os.O_RDONLY)
    said = []
    for name, attempt in attempts.items():
        try:
            attempt()
            said.append(f"{name} done")
        except OSError as e:
            said.append(f"{name} {type(e).__name__} {os.strerror(e.errno)}")
    raise RuntimeError("; ".join(said))
"#;

/// The package tree is mounted read-only: a grader writing, creating, removing or renaming
/// there, by its path or by a name relative to the folder's descriptor, gets the `OSError` of
/// a read-only file system, its error grade says so, and the tree in the cache is as unpacked.
#[test]
fn a_grader_cannot_change_its_packages() {
    let Some(cache) = cache() else { return };
    let module = format!("VALUE = 0.{}7\n", std::process::id());
    let (ws, _) = locked_suite_grading(
        &[("pkg/__init__.py", &module), WHEEL_FILE],
        CHANGES_THE_PACKAGE,
        "allow:\n  files: [granted/]\n",
    );
    ws.write("granted/a.txt", "a");
    let out = gavel(
        cache,
        ws.dir.path(),
        &["run", "suite.yaml", "-o", "out", "-q"],
    );
    assert!(matches!(out.status.code(), Some(0 | 1)), "{}", stderr(&out));
    let grade = ws.results("out")[0]["grades"]["g"].clone();
    let said = grade["rationale"].as_str().unwrap_or_default();
    let refused = |name: &str| format!("{name} OSError Read-only file system");
    let want: Vec<String> = [
        "append",
        "create",
        "remove",
        "rename",
        "mkdir",
        "rmtree",
        "remove_at",
        "create_at",
    ]
    .iter()
    .map(|name| refused(name))
    .collect();
    assert!(
        said.starts_with(&format!(
            "guest returned error: RuntimeError: {}",
            want.join("; ")
        )),
        "{grade}"
    );
    let tree = tree_holding(cache, &module);
    let mut names: Vec<_> = std::fs::read_dir(tree.join("pkg"))
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    names.sort();
    assert_eq!(names, ["__init__.py", "__pycache__"], "{}", tree.display());
}

#[test]
fn a_tampered_package_tree_is_not_mounted() {
    let Some(cache) = cache() else { return };
    let (ws, count, value, module) = unpacked_once(cache, "");
    // A warm cache needs no download.
    assert_eq!(scores(&ws, cache), [value.parse::<f64>().unwrap()]);
    assert_eq!(count.load(Ordering::SeqCst), 1);

    let tree = tree_holding(cache, &module);
    std::fs::write(tree.join("pkg/__init__.py"), "VALUE = 0.5\n").unwrap();
    assert_unpacked_again(&ws, cache, &value, &count);
}

#[test]
fn a_tree_an_older_gavel_unpacked_is_unpacked_again_with_a_notice_not_a_warning() {
    let Some(cache) = cache() else { return };
    let (ws, count, value, module) = unpacked_once(cache, "2");

    // The tree as gavel made it before bytecode was added: the sources alone, tagged under
    // that layout's domain with the user's key.
    let tree = tree_holding(cache, &module);
    std::fs::remove_dir_all(tree.join("pkg/__pycache__")).unwrap();
    let name = tree.file_name().unwrap().to_string_lossy().into_owned();
    let id = name.strip_prefix("env-").expect("a tree's name");
    let digest = gavel::fsio::check_private_tree(&tree).unwrap();
    let dir = gavel::cache::CacheDir::open(cache).unwrap().expect("a key");
    let tag = dir
        .key()
        .tag(b"gavel python packages v1\0", &[id.as_bytes(), &digest]);
    std::fs::write(tree.with_file_name(format!("{name}.hmac")), tag).unwrap();

    let out = gavel(
        cache,
        ws.dir.path(),
        &["run", "suite.yaml", "-o", "out", "-q"],
    );
    let said = stderr(&out);
    assert!(
        said.contains(&format!(
            "note: the Python packages {} were unpacked by an older gavel; unpacking them again",
            tree.display()
        )),
        "{said}"
    );
    assert!(!said.contains("not mounted"), "{said}");
    assert_eq!(
        ws.results("out")[0]["grades"]["g"]["score"],
        value.parse::<f64>().unwrap()
    );
    assert_eq!(count.load(Ordering::SeqCst), 2);
    // Unpacked again in this gavel's layout, with its bytecode.
    assert!(tree.join("pkg/__pycache__").is_dir());
}

#[test]
fn a_program_past_its_load_budget_is_reported_as_such() {
    let Some(cache) = cache() else { return };
    let ws = suite(
        "limits: {load_fuel: 30000000}\n",
        "n = 0\nwhile True:\n    n += 1\n\ndef grade(sample, item):\n    return 1.0\n",
    );
    let err = refused(&ws, cache);
    assert!(
        err.contains("graders.g.source: loading the program went past its limit load_fuel (30000000), apart from the call's own: raise it in the suite's `limits:`"),
        "{err}"
    );
}

#[test]
fn altered_bytecode_in_the_package_tree_is_not_mounted() {
    let Some(cache) = cache() else { return };
    // A value of this test's own, so that its tree is its alone in the shared cache.
    let value = format!("0.{}1", std::process::id());
    let module = format!("VALUE = {value}\n");
    let (ws, count) = locked_suite(&[
        ("pkg/__init__.py", &module),
        ("pkg/evil.py", "VALUE = 0.5\n"),
        WHEEL_FILE,
    ]);
    assert_eq!(scores(&ws, cache), [value.parse::<f64>().unwrap()]);
    let tree = tree_holding(cache, &module);
    // The bytecode was made when the tree was unpacked; CPython runs it without reading the
    // source, so bytecode put in its place would decide the grade if the tree were mounted.
    let cached = tree.join("pkg/__pycache__");
    let evil = std::fs::read(cached.join("evil.cpython-314.pyc")).expect("evil's bytecode");
    std::fs::write(cached.join("__init__.cpython-314.pyc"), evil).unwrap();
    assert_unpacked_again(&ws, cache, &value, &count);
}

#[test]
fn a_wheel_with_a_member_outside_its_folder_is_refused() {
    let Some(cache) = cache() else { return };
    let (ws, _) = locked_suite(&[
        ("pkg/__init__.py", "VALUE = 1.0\n"),
        ("../../escaped.py", "X = 1\n"),
        WHEEL_FILE,
    ]);
    let err = refused(&ws, cache);
    assert!(
        err.contains("cannot unpack pkg (pkg-1.0-py3-none-any.whl): member \"../../escaped.py\" would be written outside the package folder"),
        "{err}"
    );
    let packages = cache.join("python/packages");
    assert!(!packages.join("escaped.py").exists());
    assert!(!cache.join("python/escaped.py").exists());
}

#[test]
fn a_wheel_that_does_not_match_its_lock_is_refused_naming_its_url() {
    let Some(cache) = cache() else { return };
    let (ws, _) = locked_suite(&[("pkg/__init__.py", "VALUE = 1.0\n"), WHEEL_FILE]);
    let lock = std::fs::read_to_string(ws.path(LOCK)).unwrap();
    let sha = lock.split("sha256 = \"").nth(1).unwrap()[..64].to_string();
    ws.write(LOCK, &lock.replace(&sha, &"0".repeat(64)));
    let err = refused(&ws, cache);
    assert!(
        err.contains("cannot download pkg from http://127.0.0.1:"),
        "{err}"
    );
    assert!(err.contains("the download was altered"), "{err}");
}

#[test]
fn only_the_grader_that_requires_a_package_sees_it() {
    let Some(cache) = cache() else { return };
    let (ws, _) = locked_suite(&[("pkg/__init__.py", "VALUE = 1.0\n"), WHEEL_FILE]);
    ws.write(
        "other.py",
        "import pkg\n\ndef grade(sample, item):\n    return 1.0\n",
    );
    ws.write(
        "suite.yaml",
        "name: packages\ndataset: data.jsonl\ngraders:\n  g:\n    kind: python\n    source_path: g.py\n    requirements: [pkg]\n  other:\n    kind: python\n    source_path: other.py\n",
    );
    let err = refused(&ws, cache);
    assert!(
        err.contains(
            "graders.other.source: other.py:1: ModuleNotFoundError: No module named 'pkg'"
        ),
        "{err}"
    );
    assert!(!err.contains("graders.g."), "{err}");
}

/// The external-API grader of evaldeck's documentation, verbatim but for its imports gathered
/// at the top.
const SEED_API_GRADER: &str = r#"import httpx
from evaldeck import Trace, EvalCase
from evaldeck.results import GradeResult


def validate_with_api(trace: Trace, test_case: EvalCase) -> GradeResult:
    """Validate output against external API."""

    try:
        response = httpx.post(
            "https://api.example.com/validate",
            json={"output": trace.output},
            timeout=10
        )
        result = response.json()

        if result["valid"]:
            return GradeResult.passed_result(
                "validate_with_api",
                f"API validation passed: {result['message']}"
            )
        else:
            return GradeResult.failed_result(
                "validate_with_api",
                f"API validation failed: {result['message']}"
            )

    except Exception as e:
        return GradeResult.error_result(
            "validate_with_api",
            f"API call failed: {str(e)}"
        )
"#;

/// Grades the seed's rows with the evaldeck module `code` (with `httpx` required) as grader
/// `api`, the suite's top level ending with `allow` and `graders:` with `more` graders; its
/// results.
fn run_seed_api_grader(
    cache: &Path,
    code: &str,
    allow: &str,
    more: &str,
) -> Vec<serde_json::Value> {
    let ws = Workspace::new();
    ws.write("api_graders.py", code);
    let rows = std::fs::read_to_string(crate::common::data("python/evaldeck-seed/data.jsonl"))
        .expect("the seed's rows");
    ws.write("data.jsonl", &rows);
    ws.write(
        "suite.yaml",
        &format!(
            "name: api\ndataset: data.jsonl\nformat: evaldeck\n{FUEL}requirements: [httpx==0.28.1]\n\
             {allow}graders:\n  api:\n    kind: code\n    module: api_graders\n    function: validate_with_api\n{more}"
        ),
    );
    graded(cache, &ws)
}

/// With `httpx` required and no network granted, the grader runs and reaches its own `except`,
/// as evaldeck grades it on a machine with no network: an `error` result of its own words, for
/// every sample, and the suite's other graders grade beside it.
#[test]
fn the_seeds_api_grader_without_a_grant_grades_its_own_error_result() {
    let Some(cache) = cache() else { return };
    let results = run_seed_api_grader(
        cache,
        SEED_API_GRADER,
        "",
        "  steps:\n    kind: tool\n    function: max_steps\n    config: {max_steps: 10}\n",
    );
    assert_eq!(results.len(), 4);
    for result in &results {
        let grade = &result["grades"]["api"];
        assert_eq!(grade["status"], "error", "{result}");
        let message = grade["rationale"].as_str().unwrap_or_default();
        assert!(message.starts_with("API call failed: "), "{message}");
        assert!(message.contains("api.example.com"), "{message}");
        assert!(result["grades"]["steps"]["status"] != "error", "{result}");
    }
}

/// The same grader, its URL an API standing in on 127.0.0.1 that the suite grants: `httpx`
/// sends over the host's HTTP, and the reply is graded as the API gave it.
#[test]
fn the_seeds_api_grader_granted_its_api_grades_the_reply() {
    let Some(cache) = cache() else { return };
    fn valid(_: &str, stream: &mut std::net::TcpStream) {
        let body = json!({"valid": true, "message": "looks right"}).to_string();
        let _ = write!(
            stream,
            "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\
             connection: close\r\n\r\n{body}",
            body.len()
        );
    }
    let (port, requests) = crate::network::server(valid);
    let url = format!("http://127.0.0.1:{port}/validate");
    let results = run_seed_api_grader(
        cache,
        &SEED_API_GRADER.replace("https://api.example.com/validate", &url),
        &format!("allow:\n  network: [\"127.0.0.1:{port}\"]\n"),
        "",
    );
    for result in results {
        let grade = &result["grades"]["api"];
        assert_eq!(grade["status"], "pass", "{result}");
        assert_eq!(grade["rationale"], "API validation passed: looks right");
    }
    let posted: Vec<String> = requests.try_iter().collect();
    assert_eq!(posted.len(), 4, "{posted:?}");
    assert!(posted[0].starts_with("POST /validate"), "{}", posted[0]);
    assert!(posted[0].contains("\"output\""), "{}", posted[0]);
}
