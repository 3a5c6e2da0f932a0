//! `gavel serve`: suites loaded once and graded over HTTP until SIGTERM or Ctrl-C.

use std::collections::BTreeMap;
use std::io::Write;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use gavel::fsio;
use gavel::grade::judge::{Judge, JudgeError, JudgeOptions};
use gavel::grade::openai::Endpoints;
use gavel::grade::pack::GUEST_THREAD_STACK;
use gavel::run::{Options, default_workers, prepare, workers};
use gavel::serve::graders::Requested;
use gavel::serve::{Limits, ServedSuite, Service};

use super::{Status, report_suite_errors};

/// The variable the bearer token may be read from (never a flag: command lines are visible
/// to every user of the machine).
const TOKEN_VARIABLE: &str = "GAVEL_SERVE_TOKEN";

#[derive(Debug, clap::Args)]
pub struct Args {
    /// Address and port to listen on (port 0: any free one; the address is printed on stdout).
    #[arg(long, value_name = "ADDR:PORT", default_value = "127.0.0.1:8080")]
    listen: SocketAddr,
    /// A suite to serve as NAME, at /v1/suites/NAME/...: `NAME=PATH`. Repeatable.
    #[arg(long = "suite", value_name = "NAME=PATH")]
    suite: Vec<String>,
    /// Serve every suite file (`.yaml`, `.yml`) of this folder, each named by its file stem.
    #[arg(long, value_name = "DIR")]
    suites: Option<PathBuf>,
    /// Requests graded at once [default: the number of cores].
    #[arg(long, value_name = "N")]
    concurrency: Option<usize>,
    /// Calls a loaded suite's warm Python instance serves before it is replaced by a new one
    /// (started ahead, off the requests' path); it is replaced sooner after a call that failed
    /// in the sandbox or 16 MiB of memory growth.
    #[arg(long, value_name = "N", default_value_t = 16384, value_parser = clap::value_parser!(u32).range(1..))]
    warm_calls: u32,
    /// Requests that may wait for a place; past them, 429 with Retry-After.
    #[arg(long, value_name = "N", default_value_t = 64)]
    queue: usize,
    /// The largest request body accepted, in bytes; past it, 413.
    #[arg(long, value_name = "BYTES", default_value_t = 16 << 20)]
    max_body: usize,
    /// Seconds from a request's arrival to its answer: its body read, its wait and its grading.
    #[arg(long, value_name = "SECONDS", default_value_t = 60.0)]
    deadline: f64,
    /// Seconds a connection may take to send a request's headers, or go without taking in any
    /// of its answer; past them it is closed.
    #[arg(long, value_name = "SECONDS", default_value_t = 10.0)]
    header_timeout: f64,
    /// When the Python interpreter that python graders posted to graders/run need is built and
    /// loaded: at `start` (the server listens once it is ready), or at the first such request.
    #[arg(long, value_name = "WHEN", value_enum, default_value_t = LoadPython::Start)]
    load_python: LoadPython,
    /// Connections open at once; past them, a new connection's request is answered 503 with
    /// Retry-After and the connection closed. Keep it below the open-file limit (ulimit -n).
    #[arg(long, value_name = "N", default_value_t = 512)]
    max_connections: usize,
    /// A file holding the bearer token every request but /healthz and /readyz must send
    /// [default: $GAVEL_SERVE_TOKEN; none: no token is asked for].
    #[arg(long, value_name = "FILE")]
    token_file: Option<PathBuf>,
    /// The OpenAI-compatible endpoint (`.../v1`) that score_model, label_model and cosine
    /// graders posted to /v1/fine_tuning/alpha/graders/ ask [default: none: they are refused].
    #[arg(long, value_name = "URL")]
    judge_base_url: Option<String>,
    /// The variable holding that endpoint's API key.
    #[arg(long, value_name = "VAR", requires = "judge_base_url")]
    judge_api_key_env: Option<String>,
    #[command(flatten)]
    cache: super::CacheArgs,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum LoadPython {
    Start,
    FirstUse,
}

pub fn run(args: Args) -> Status {
    match serve(args) {
        Ok(code) => code,
        Err(message) => {
            eprintln!("error: {message}");
            Status::Invalid
        }
    }
}

fn serve(args: Args) -> Result<Status, ServeError> {
    for (flag, seconds) in [
        ("--deadline", args.deadline),
        ("--header-timeout", args.header_timeout),
    ] {
        if !(seconds.is_finite() && seconds > 0.0 && seconds < 1e9) {
            return Err(ServeError::Seconds { flag, seconds });
        }
    }
    let token = token(args.token_file.as_deref())?;
    let paths = suite_paths(&args.suite, args.suites.as_deref())?;
    let endpoints = endpoints(args.judge_base_url, args.judge_api_key_env)?;
    let options = Options {
        cache_dir: args.cache.dir(),
        no_judge_cache: false,
        trajectories: Vec::new(),
        serving: true,
    };
    let concurrency = (args.concurrency)
        .unwrap_or_else(default_workers)
        .clamp(1, gavel::run::MAX_WORKERS);
    let mut suites = BTreeMap::new();
    for (name, path) in paths {
        let prepared = match prepare(&path, &options) {
            Ok(prepared) => prepared,
            Err(errors) => {
                eprintln!(
                    "error: suite `{name}` ({}) cannot be served:",
                    path.display()
                );
                return Ok(report_suite_errors(&errors));
            }
        };
        let workers = workers(&prepared, None);
        suites.insert(
            name,
            ServedSuite::new(prepared, workers, concurrency, args.warm_calls),
        );
    }
    let limits = Limits {
        concurrency,
        queue: args.queue,
        max_body: args.max_body,
        deadline: Duration::from_secs_f64(args.deadline),
        header_timeout: Duration::from_secs_f64(args.header_timeout),
        max_connections: args.max_connections,
    };
    let requested = Requested::new(endpoints, options.cache_dir);
    // Loaded now rather than by the first `python` grader posted to graders/run; a server
    // whose interpreter cannot load still grades everything else.
    if args.load_python == LoadPython::Start
        && let Err(why) = requested.warm()
    {
        eprintln!("warning: python graders posted to graders/run will be refused: {why}");
    }
    // Its blocking threads make the sandboxed calls of posted graders and suites.
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .thread_stack_size(GUEST_THREAD_STACK)
        .enable_all()
        .build()
        .map_err(ServeError::Threads)?;
    runtime.block_on(async move {
        let listener = tokio::net::TcpListener::bind(args.listen)
            .await
            .map_err(|error| ServeError::Listen {
                address: args.listen,
                error,
            })?;
        let bound = listener.local_addr().map_err(ServeError::Address)?;
        let names: Vec<&str> = suites.keys().map(String::as_str).collect();
        println!("listening on http://{bound} (suites: {})", names.join(", "));
        let _ = std::io::stdout().flush();
        let service = Arc::new(Service::new(suites, requested, limits, token, |line| {
            eprintln!("{line}")
        }));
        gavel::serve::serve(listener, service, stop_signal())
            .await
            .map_err(ServeError::Stopped)
    })?;
    eprintln!("stopped: every request in flight was answered");
    Ok(Status::Ok)
}

/// Where the model graders of requests ask: the endpoint given, or none.
fn endpoints(
    base_url: Option<String>,
    api_key_env: Option<String>,
) -> Result<Endpoints, ServeError> {
    let Some(base_url) = base_url else {
        return Ok(Endpoints::default());
    };
    let judge = || {
        let spec = serde_json::from_value(serde_json::json!({
            "base_url": base_url,
            "api_key_env": api_key_env,
        }))
        .map_err(ServeError::JudgeSpec)?;
        let options = JudgeOptions {
            serving: true,
            ..JudgeOptions::default()
        };
        Judge::new(spec, Path::new("."), options).map_err(|error| ServeError::Judge {
            base_url: base_url.clone(),
            error: Box::new(error),
        })
    };
    Ok(Endpoints {
        chat: Some(Arc::new(judge()?)),
        embeddings: Some(Arc::new(judge()?.for_embeddings())),
    })
}

/// Resolves on SIGTERM (how Kubernetes and systemd stop a process) or Ctrl-C.
async fn stop_signal() {
    use tokio::signal::unix::{SignalKind, signal};
    let mut terminate = signal(SignalKind::terminate()).ok();
    let terminated = async {
        match terminate.as_mut() {
            Some(terminate) => {
                terminate.recv().await;
            }
            None => std::future::pending().await,
        }
    };
    tokio::select! {
        () = terminated => {}
        _ = tokio::signal::ctrl_c() => {}
    }
}

/// The bearer token, from `--token-file` or the environment; none when neither has one.
fn token(file: Option<&Path>) -> Result<Option<String>, ServeError> {
    let (text, source) = match file {
        Some(path) => (
            fsio::read_text(path, 64 << 10).map_err(|error| ServeError::TokenFile {
                path: path.to_path_buf(),
                error,
            })?,
            format!("the token file {}", path.display()),
        ),
        None => match std::env::var(TOKEN_VARIABLE) {
            Ok(text) => (text, format!("${TOKEN_VARIABLE}")),
            Err(_) => return Ok(None),
        },
    };
    let token = text.trim();
    if token.is_empty() || !token.bytes().all(|b| b.is_ascii_graphic()) {
        return Err(ServeError::Token { from: source });
    }
    Ok(Some(token.to_string()))
}

/// The suites to serve, by name: `--suite NAME=PATH`s and the suite files of `--suites`.
fn suite_paths(
    given: &[String],
    folder: Option<&Path>,
) -> Result<BTreeMap<String, PathBuf>, ServeError> {
    let mut paths = BTreeMap::new();
    let mut add = |name: String, path: PathBuf, from: &str| {
        if name.is_empty()
            || !(name.bytes()).all(|b| b.is_ascii_alphanumeric() || b"-_.".contains(&b))
        {
            return Err(ServeError::SuiteName {
                from: from.to_string(),
                name,
            });
        }
        match paths.insert(name.clone(), path) {
            Some(_) => Err(ServeError::SuiteTwice {
                from: from.to_string(),
                name,
            }),
            None => Ok(()),
        }
    };
    for spec in given {
        let Some((name, path)) = spec.split_once('=') else {
            return Err(ServeError::SuiteSpec(spec.clone()));
        };
        add(
            name.to_string(),
            PathBuf::from(path),
            &format!("--suite {spec}"),
        )?;
    }
    if let Some(folder) = folder {
        let entries = std::fs::read_dir(folder).map_err(|error| ServeError::Folder {
            folder: folder.to_path_buf(),
            error,
        })?;
        let mut files: Vec<PathBuf> = entries
            .filter_map(|entry| Some(entry.ok()?.path()))
            .filter(|path| {
                path.is_file()
                    && matches!(
                        path.extension().and_then(|e| e.to_str()),
                        Some("yaml" | "yml")
                    )
            })
            .collect();
        files.sort();
        for path in files {
            let name = (path.file_stem())
                .map(|s| s.to_string_lossy().into_owned())
                .unwrap_or_default();
            add(
                name,
                path.clone(),
                &format!("--suites {}", folder.display()),
            )?;
        }
    }
    if paths.is_empty() {
        return Err(ServeError::NoSuite);
    }
    Ok(paths)
}

/// Why `gavel serve` cannot start, or why it stopped.
#[derive(Debug, thiserror::Error)]
enum ServeError {
    #[error("{flag} {seconds} is not a positive number of seconds")]
    Seconds { flag: &'static str, seconds: f64 },
    #[error("cannot read the token file {}: {error}", path.display())]
    TokenFile {
        path: PathBuf,
        #[source]
        error: std::io::Error,
    },
    #[error("{from} holds no usable token: write one line of printable characters without spaces")]
    Token { from: String },
    #[error("--suite {0}: write it as NAME=PATH, e.g. --suite math=suites/math.yaml")]
    SuiteSpec(String),
    #[error("{from}: `{name}` cannot name a suite in a URL: use letters, digits, `-`, `_` and `.`")]
    SuiteName { from: String, name: String },
    #[error("{from}: a suite is already served as `{name}`")]
    SuiteTwice { from: String, name: String },
    #[error("--suites {}: {error}", folder.display())]
    Folder {
        folder: PathBuf,
        #[source]
        error: std::io::Error,
    },
    #[error(
        "no suite to serve: name one with --suite NAME=PATH, or a folder of them with --suites DIR"
    )]
    NoSuite,
    #[error("--judge-base-url: {0}")]
    JudgeSpec(#[source] serde_json::Error),
    #[error("--judge-base-url {base_url}: {error}")]
    Judge {
        base_url: String,
        #[source]
        error: Box<JudgeError>,
    },
    #[error("cannot start the server's threads: {0}")]
    Threads(#[source] std::io::Error),
    #[error("cannot listen on {address}: {error}")]
    Listen {
        address: SocketAddr,
        #[source]
        error: std::io::Error,
    },
    #[error("cannot read the address listened on: {0}")]
    Address(#[source] std::io::Error),
    #[error("the server stopped: {0}")]
    Stopped(#[source] std::io::Error),
}
