//! Helpers shared by the integration tests: run the real `gavel` binary on suites written to a
//! temporary folder.

#![allow(dead_code)]

pub mod c;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::Value;

/// A temporary folder holding a suite, its dataset and its outputs.
pub struct Workspace {
    pub dir: tempfile::TempDir,
}

impl Workspace {
    pub fn new() -> Workspace {
        Workspace {
            dir: tempfile::tempdir().expect("temporary folder"),
        }
    }

    pub fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    pub fn write(&self, name: &str, text: &str) -> PathBuf {
        let path = self.path(name);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).expect("create folder");
        }
        std::fs::write(&path, text).expect("write file");
        path
    }

    /// Writes `rows` as JSONL.
    pub fn write_rows(&self, name: &str, rows: &[Value]) -> PathBuf {
        let text: String = rows.iter().map(|r| format!("{r}\n")).collect();
        self.write(name, &text)
    }

    /// Runs `gavel` with `args` in this folder, with its own cache folder.
    pub fn gavel(&self, args: &[&str]) -> Output {
        gavel_in(self.dir.path(), args)
    }

    /// The lines of `<out>/results.jsonl` as JSON.
    pub fn results(&self, out: &str) -> Vec<Value> {
        let text = std::fs::read_to_string(self.path(out).join("results.jsonl"))
            .expect("results.jsonl exists");
        text.lines()
            .map(|l| serde_json::from_str(l).expect("each result line is JSON"))
            .collect()
    }

    pub fn summary(&self, out: &str) -> Value {
        let text = std::fs::read_to_string(self.path(out).join("summary.json"))
            .expect("summary.json exists");
        serde_json::from_str(&text).expect("summary.json is JSON")
    }
}

pub fn gavel_in(dir: &Path, args: &[&str]) -> Output {
    gavel_with_env(dir, args, &[])
}

pub fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

pub fn stdout(output: &Output) -> String {
    String::from_utf8_lossy(&output.stdout).into_owned()
}

/// The folder of the repository's test data.
pub fn data(path: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data")
        .join(path)
}

pub fn load_json(path: &str) -> Value {
    let text = std::fs::read_to_string(data(path)).expect("test data exists");
    serde_json::from_str(&text).expect("test data is JSON")
}

/// Runs `gavel` in `dir` like [`gavel_in`], with extra environment variables.
pub fn gavel_with_env(dir: &Path, args: &[&str], vars: &[(&str, &str)]) -> Output {
    gavel_command(dir, args, vars).output().expect("gavel runs")
}

/// The command [`gavel_with_env`] runs, not started yet.
pub fn gavel_command(dir: &Path, args: &[&str], vars: &[(&str, &str)]) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_gavel"));
    command
        .args(args)
        .current_dir(dir)
        .env("GAVEL_CACHE_DIR", dir.join(".cache"))
        .env_remove("NO_COLOR")
        .env_remove("OPENAI_API_KEY")
        .env_remove("OPENAI_BASE_URL")
        .envs(vars.iter().copied());
    command
}

/// Runs `gavel` like [`gavel_with_env`] from an async test, off the runtime's threads, so that
/// a server the test runs on them (a judge) keeps answering.
pub async fn gavel_off_runtime(dir: &Path, args: &[&str], vars: &[(&str, &str)]) -> Output {
    let dir = dir.to_path_buf();
    let args: Vec<String> = args.iter().map(|a| a.to_string()).collect();
    let vars: Vec<(String, String)> = vars
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    tokio::task::spawn_blocking(move || {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let vars: Vec<(&str, &str)> = vars.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
        gavel_with_env(&dir, &args, &vars)
    })
    .await
    .expect("gavel finishes")
}

/// Every file under `dir`, read as text where it is text.
pub fn texts_under(dir: &Path) -> Vec<(PathBuf, String)> {
    let mut found = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).expect("readable folder") {
            let path = entry.expect("folder entry").path();
            if path.is_dir() {
                stack.push(path);
            } else {
                let bytes = std::fs::read(&path).expect("readable file");
                found.push((path, String::from_utf8_lossy(&bytes).into_owned()));
            }
        }
    }
    found
}

/// The Python of the peers' venv, which has letta-evals, evaldeck and the API clients:
/// `$GAVEL_PEER_VENV`'s, else bench/.venv's (which host/runtime/python/tests/run.sh makes,
/// before `cargo test` in CI); `None` where there is none, which fails the test in CI. `what`
/// names what the test needs of it.
pub fn peer_python(what: &str) -> Option<PathBuf> {
    let venv = std::env::var_os("GAVEL_PEER_VENV")
        .map(PathBuf::from)
        .unwrap_or_else(|| c::repo_root().join("bench/.venv"));
    let python = venv.join("bin/python");
    if python.is_file() {
        return Some(python);
    }
    assert!(
        !c::in_ci(),
        "no {}: run host/runtime/python/tests/run.sh first, which makes it",
        python.display()
    );
    eprintln!("SKIPPED: no {} with {what}", python.display());
    None
}

/// Watches a file for opens (inotify): [`Opens::count`] says how many there were since.
pub struct Opens(std::os::fd::OwnedFd);

impl Opens {
    pub fn watch(path: &Path) -> Opens {
        use rustix::fs::inotify;
        let fd = inotify::init(inotify::CreateFlags::NONBLOCK | inotify::CreateFlags::CLOEXEC)
            .expect("inotify starts");
        // Closes and reads are watched too, so that two opens in a row are never one event.
        let flags = inotify::WatchFlags::OPEN
            | inotify::WatchFlags::CLOSE_NOWRITE
            | inotify::WatchFlags::ACCESS;
        inotify::add_watch(&fd, path, flags).expect("the file is watched");
        Opens(fd)
    }

    /// The opens since the watch began, or since the last count.
    pub fn count(&self) -> usize {
        use rustix::fs::inotify;
        let mut buf = [std::mem::MaybeUninit::uninit(); 4096];
        let mut events = inotify::Reader::new(&self.0, &mut buf);
        let mut opens = 0;
        loop {
            match events.next() {
                Ok(event) => {
                    opens += usize::from(event.events().contains(inotify::ReadFlags::OPEN));
                }
                Err(rustix::io::Errno::AGAIN) => return opens,
                Err(e) => panic!("inotify: {e}"),
            }
        }
    }
}

/// What a child process writes on a pipe (its stderr, say), read as it comes on a thread of its
/// own, so that the child never blocks on a full pipe, and kept for the test to look at or print.
pub struct Drained {
    text: std::sync::Arc<std::sync::Mutex<Vec<u8>>>,
    reader: Option<std::thread::JoinHandle<()>>,
}

impl Drained {
    pub fn new(mut pipe: impl std::io::Read + Send + 'static) -> Drained {
        let text = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        let kept = std::sync::Arc::clone(&text);
        let reader = std::thread::spawn(move || {
            let mut chunk = [0; 8192];
            while let Ok(read @ 1..) = pipe.read(&mut chunk) {
                kept.lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner)
                    .extend_from_slice(&chunk[..read]);
            }
        });
        Drained {
            text,
            reader: Some(reader),
        }
    }

    /// What was read so far.
    pub fn text(&self) -> String {
        let text = self
            .text
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        String::from_utf8_lossy(&text).into_owned()
    }

    /// Everything written on the pipe, once every end of it that writes is closed (the child
    /// exited).
    pub fn finish(mut self) -> String {
        if let Some(reader) = self.reader.take() {
            reader.join().expect("the pipe's reader ends");
        }
        self.text()
    }
}
