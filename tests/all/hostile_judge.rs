//! Attacks through the judge and through what gavel prints: replies too large to hold, redirects
//! that would carry the key elsewhere, rubric files outside the suite's folder or that never end,
//! texts that would steer the terminal, and reward weights that would zero every reward.

use std::os::unix::fs::symlink;
use std::path::Path;
use std::process::{Output, Stdio};
use std::time::{Duration, Instant};

use crate::common::{Workspace, gavel_command, stderr, stdout, texts_under};
use crate::judge::KEY;
use crate::openai_server::{Reply, Server};
use gavel::grade::Status;
use gavel::grade::judge::{Judge, JudgeOptions, REPLY_LIMIT};
use gavel::input::sample::{Sample, Texts};
use serde_json::{Value, json};

/// Long enough for any check here, short enough that a hang fails the test.
const BOUND: Duration = Duration::from_secs(30);

/// `gavel` with `args` in `dir`, killed after [`BOUND`] (a hang is a failure, not a stuck test).
fn gavel_bounded(dir: &Path, args: &[&str], vars: &[(&str, &str)]) -> Output {
    let mut child = gavel_command(dir, args, vars)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("gavel starts");
    let started = Instant::now();
    while child.try_wait().expect("gavel's status").is_none() {
        if started.elapsed() > BOUND {
            let _ = child.kill();
            let out = child.wait_with_output().expect("gavel's output");
            panic!(
                "gavel {args:?} did not finish within {BOUND:?}; stderr:\n{}",
                stderr(&out)
            );
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    child.wait_with_output().expect("gavel's output")
}

fn judge(provider: &str, base_url: &str) -> Judge {
    let spec = serde_json::from_value(json!({
        "prompt": "Q: {input}\nA: {submission}",
        "base_url": base_url,
        "provider": provider,
        "max_retries": 0,
        "timeout": 20.0,
    }))
    .expect("valid rubric spec");
    Judge::with_env(spec, Path::new("."), JudgeOptions::default(), |name| {
        matches!(name, "OPENAI_API_KEY" | "ANTHROPIC_API_KEY").then(|| KEY.to_string())
    })
    .expect("judge builds")
}

fn sample() -> Sample<'static> {
    Sample {
        input: Some(Texts::One("q".into())),
        ..Sample::default()
    }
}

/// A reply larger than the limit, announced or not, is cut off at the limit: the grade says so,
/// and the client stopped taking the body soon after the limit (memory stays bounded).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_judge_reply_larger_than_the_limit_is_cut_off() {
    let budget = 256 << 20;
    for declared in [None, Some(700u64 << 20)] {
        let server = Server::always(Reply::Flood { declared, budget }).await;
        let grade = judge("openai", &server.base_url())
            .grade(&sample(), "x")
            .await;
        assert_eq!(grade.status, Status::Error, "{declared:?}");
        let limit = format!("larger than {} MiB", REPLY_LIMIT >> 20);
        assert!(
            grade.rationale.contains(&limit),
            "{declared:?}: {}",
            grade.rationale
        );
        // What the socket buffers may hold besides what was read.
        let slack = 32 << 20;
        assert!(
            server.flooded() < REPLY_LIMIT as usize + slack,
            "{declared:?}: the client took {} bytes",
            server.flooded()
        );
    }
}

/// A redirect to another host is not followed, whichever way the key is sent: the other host
/// gets no request at all, and the grade's error names both hosts. A redirect within the
/// endpoint's own host is followed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_redirect_to_another_host_never_carries_the_key() {
    for provider in ["openai", "anthropic"] {
        let elsewhere = Server::always(Reply::verdict(1.0, "elsewhere")).await;
        let target = format!("{}/chat/completions", elsewhere.base_url());
        let endpoint =
            Server::always(Reply::status(307, "").with_header("location", &target)).await;
        let grade = judge(provider, &endpoint.base_url())
            .grade(&sample(), "x")
            .await;
        assert_eq!(grade.status, Status::Error, "{provider}");
        let host = |base_url: String| {
            base_url
                .trim_start_matches("http://")
                .trim_end_matches("/v1")
                .to_string()
        };
        for named in [host(endpoint.base_url()), host(elsewhere.base_url())] {
            assert!(
                grade.rationale.contains(&named),
                "{provider}: {named} not in {}",
                grade.rationale
            );
        }
        assert_eq!(endpoint.request_count(), 1, "{provider}");
        let carried: Vec<_> = elsewhere.requests();
        assert!(
            carried.is_empty(),
            "{provider}: the other host got {carried:?}"
        );
    }
    let same = Server::start(|i, request| {
        if i == 0 {
            Reply::status(307, "").with_header("location", "/v2/chat/completions")
        } else {
            assert_eq!(request.path, "/v2/chat/completions");
            Reply::verdict(1.0, "moved")
        }
    })
    .await;
    let grade = judge("openai", &same.base_url())
        .grade(&sample(), "x")
        .await;
    assert_eq!(grade.status, Status::Pass);
    assert_eq!(grade.rationale, "moved");
}

/// A chat completion of the verdict `content` whose usage is `usage`.
fn reply_with_usage(content: &str, usage: Value) -> Reply {
    let body = json!({
        "choices": [{"index": 0, "message": {"role": "assistant", "content": content}}],
        "usage": usage,
    });
    Reply::status(200, &body.to_string())
}

/// An endpoint that echoes the API key in its verdict and its usage has it redacted before the
/// reply is read: results.jsonl, the cache and the terminal never hold it, a run from the
/// cache included, and the rest of the reply reads as sent.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reply_echoing_the_key_is_stored_without_it() {
    let verdict = json!({"score": 1.0, "rationale": format!("the key was {KEY}")}).to_string();
    let usage = json!({"prompt_tokens": 10, "completion_tokens": 5, KEY: 1});
    let server = Server::always(reply_with_usage(&verdict, usage)).await;
    let ws = Workspace::new();
    ws.write(
        "suite.yaml",
        &crate::judge::JUDGED_SUITE.replace("BASE_URL", &server.base_url()),
    );
    ws.write_rows("data.jsonl", &[crate::judge::judged_row("paris", "Paris")]);
    let vars = [("OPENAI_API_KEY", KEY)];
    let mut outputs = Vec::new();
    for out in ["out", "again"] {
        let args = ["run", "suite.yaml", "-o", out];
        let run = crate::common::gavel_off_runtime(ws.dir.path(), &args, &vars).await;
        assert_eq!(run.status.code(), Some(0), "{}", stderr(&run));
        let grade = ws.results(out)[0]["grades"]["quality"].clone();
        assert_eq!(grade["rationale"], "the key was [redacted]", "{out}");
        assert_eq!(
            grade["metadata"]["usage"],
            json!({"prompt_tokens": 10, "completion_tokens": 5, "[redacted]": 1}),
            "{out}"
        );
        outputs.push(run);
    }
    assert_eq!(server.request_count(), 1, "the second run reads the cache");
    for output in &outputs {
        assert!(!stdout(output).contains(KEY) && !stderr(output).contains(KEY));
    }
    for (path, text) in texts_under(ws.dir.path()) {
        assert!(!text.contains(KEY), "the key is in {}", path.display());
    }
}

/// The key written with JSON escapes (`\u0067` for `g`) is the key once the reply is read: its
/// verdict, its usage and the text an evaldeck grader reads have it redacted all the same, at
/// either depth of the verdict's JSON (the reply's string, or the answer inside it).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reply_echoing_the_key_in_escapes_is_stored_without_it() {
    let outer = KEY.replacen('g', "\\u0067", 1);
    let inner = KEY.replacen('g', "\\\\u0067", 1);
    assert!(outer != KEY && inner != KEY);
    for (rationale, name) in [(&outer, &outer), (&inner, &outer)] {
        let body = format!(
            r#"{{"choices": [{{"index": 0, "message": {{"role": "assistant", "content": "{{\"score\": 1.0, \"rationale\": \"the key was {rationale}\"}}"}}}}], "usage": {{"prompt_tokens": 10, "{name}": 1}}}}"#
        );
        let server = Server::always(Reply::status(200, &body)).await;
        let judge = judge("openai", &server.base_url());
        let grade = judge.grade(&sample(), "sub").await;
        assert_eq!(grade.status, Status::Pass, "{grade:?}");
        assert_eq!(grade.rationale, "the key was [redacted]", "{body}");
        assert_eq!(
            grade.details().metadata.get("usage"),
            Some(&json!({"prompt_tokens": 10, "[redacted]": 1})),
            "{body}"
        );
        let text = judge.complete("m", 0.0, "p").await.expect("a text");
        assert!(!text.contains(KEY), "{text}");
        assert!(text.contains("the key was "), "{text}");
    }
}

/// A reply that cannot be read shows an excerpt of itself as written; the key written there
/// with JSON escapes, once or twice over, is redacted all the same: results.jsonl and the
/// terminal hold neither the key nor a spelling of it that reading the escapes turns into the
/// key.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unreadable_reply_shows_no_escaped_key() {
    let once = KEY.replacen('g', "\\u0067", 1);
    let twice = KEY.replacen('g', "\\\\u0067", 1);
    let content = |text: &str| {
        format!(r#"{{"choices": [{{"index": 0, "message": {{"content": "{text}"}}}}]}}"#)
    };
    let replies = [
        // The verdict inside the reply is no JSON.
        content(&format!("the key is {once}")),
        content(&format!("the key is {twice}")),
        // The reply is no JSON, or no chat completion.
        format!("<html>the key is {once}</html>"),
        format!(r#"{{"error": "the key is {twice}"}}"#),
    ];
    let kinds = [
        "judge reply is not valid JSON",
        "endpoint reply is not JSON",
        "endpoint reply has no choices[0].message",
    ];
    let shown = replies.clone();
    let server = Server::start(move |i, _| Reply::status(200, &shown[i % shown.len()])).await;
    let ws = Workspace::new();
    ws.write(
        "suite.yaml",
        &crate::judge::JUDGED_SUITE.replace("BASE_URL", &server.base_url()),
    );
    let rows: Vec<Value> = (0..replies.len())
        .map(|i| crate::judge::judged_row(&i.to_string(), "Paris"))
        .collect();
    ws.write_rows("data.jsonl", &rows);
    let run = crate::common::gavel_off_runtime(
        ws.dir.path(),
        &["run", "suite.yaml", "-o", "out"],
        &[("OPENAI_API_KEY", KEY)],
    )
    .await;
    assert_eq!(run.status.code(), Some(2), "{}", stderr(&run));
    let rationales: Vec<String> = ws
        .results("out")
        .iter()
        .map(|row| {
            let grade = &row["grades"]["quality"];
            assert_eq!(grade["status"], "error", "{grade}");
            grade["rationale"]
                .as_str()
                .expect("a rationale")
                .to_string()
        })
        .collect();
    assert_eq!(rationales.len(), replies.len());
    for kind in kinds {
        assert!(
            rationales.iter().any(|r| r.contains(kind)),
            "{kind}: {rationales:?}"
        );
    }
    for rationale in &rationales {
        assert!(rationale.contains("the key is "), "{rationale}");
    }
    no_spelling_of_the_key(ws.dir.path(), &[run]);
}

/// The key written with escapes once or twice over, in a reply that reads: the cache holds it
/// redacted as results.jsonl does, and a run from the cache reads it so.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reply_echoing_the_key_in_escapes_is_cached_without_it() {
    let once = KEY.replacen('g', "\\u0067", 1);
    let twice = KEY.replacen('g', "\\\\u0067", 1);
    let body = format!(
        r#"{{"choices": [{{"index": 0, "message": {{"role": "assistant", "content": "{{\"score\": 1.0, \"rationale\": \"{once} {twice}\"}}"}}}}], "usage": {{"{once}": 1}}}}"#
    );
    let server = Server::always(Reply::status(200, &body)).await;
    let ws = Workspace::new();
    ws.write(
        "suite.yaml",
        &crate::judge::JUDGED_SUITE.replace("BASE_URL", &server.base_url()),
    );
    ws.write_rows("data.jsonl", &[crate::judge::judged_row("paris", "Paris")]);
    let mut outputs = Vec::new();
    for out in ["out", "again"] {
        let args = ["run", "suite.yaml", "-o", out];
        let run =
            crate::common::gavel_off_runtime(ws.dir.path(), &args, &[("OPENAI_API_KEY", KEY)])
                .await;
        assert_eq!(run.status.code(), Some(0), "{}", stderr(&run));
        let grade = ws.results(out)[0]["grades"]["quality"].clone();
        assert_eq!(grade["rationale"], "[redacted] [redacted]", "{out}");
        assert_eq!(
            grade["metadata"]["usage"],
            json!({"[redacted]": 1}),
            "{out}"
        );
        outputs.push(run);
    }
    assert_eq!(server.request_count(), 1, "the second run reads the cache");
    no_spelling_of_the_key(ws.dir.path(), &outputs);
}

/// Neither the files under `dir` nor the terminal output of `runs` hold the key, or a spelling
/// of it with escapes once or twice over, as it is shown or as results.jsonl writes it.
fn no_spelling_of_the_key(dir: &Path, runs: &[Output]) {
    let once = KEY.replacen('g', "\\u0067", 1);
    let twice = KEY.replacen('g', "\\\\u0067", 1);
    let written = twice.replace('\\', "\\\\");
    let mut texts = texts_under(dir);
    for run in runs {
        texts.push(("stdout".into(), stdout(run)));
        texts.push(("stderr".into(), stderr(run)));
    }
    for (path, text) in texts {
        for spelling in [KEY, &once, &twice, &written] {
            assert!(
                !text.contains(spelling),
                "{spelling} is in {}: {text}",
                path.display()
            );
        }
    }
}

/// A usage nested as deep as serde_json reads a reply, or holding more than token counts,
/// keeps only the counts, so that results.jsonl reads back (`gavel report`, `gavel diff`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_usage_that_is_no_token_count_is_dropped() {
    // The reply nests 127 deep, within serde_json's limit of 128; a result line holding it
    // would nest 130 deep.
    let mut deep = json!(1);
    for _ in 0..125 {
        deep = json!({"d": deep});
    }
    let usage = json!({"prompt_tokens": 10, "deep": deep, "padding": "x".repeat(1 << 20)});
    let reply = reply_with_usage(&json!({"score": 1.0, "rationale": "ok"}).to_string(), usage);
    let server = Server::always(reply).await;
    let ws = Workspace::new();
    ws.write(
        "suite.yaml",
        &crate::judge::JUDGED_SUITE.replace("BASE_URL", &server.base_url()),
    );
    crate::judge::four_answers(&ws);
    let vars = [("OPENAI_API_KEY", KEY)];
    for args in [
        &["run", "suite.yaml", "-o", "out"][..],
        &["report", "out"],
        &["diff", "out", "out"],
    ] {
        let output = crate::common::gavel_off_runtime(ws.dir.path(), args, &vars).await;
        assert_eq!(
            output.status.code(),
            Some(0),
            "{args:?}: {}",
            stderr(&output)
        );
    }
    for result in ws.results("out") {
        let usage = &result["grades"]["quality"]["metadata"]["usage"];
        assert_eq!(usage, &json!({"prompt_tokens": 10, "deep": {"d": {}}}));
    }
}

const SECRET: &str = "TOP-SECRET-do-not-send-7d41";

/// A row of the Paris question whose rubric is the file `rubric_path`.
fn rubric_row(id: &str, rubric_path: &str) -> Value {
    json!({"id": id, "input": "q", "rubric_path": rubric_path, "trajectory": [[
        {"id": "m1", "date": "2026-01-01T00:00:00Z", "message_type": "assistant_message", "content": "Paris"}
    ]]})
}

/// Rows that name a file outside the suite's folder as their rubric (absolute, `..`, a link
/// leading out) are refused at their line, naming the path; the file's text reaches neither the
/// judge nor any output. A rubric inside the folder, through a link that stays inside, grades.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rubric_paths_of_rows_stay_inside_the_suite_folder() {
    let server = Server::always(Reply::verdict(1.0, "fine")).await;
    let ws = Workspace::new();
    let secret = ws.write("secret.txt", &format!("{SECRET} {{submission}}"));
    let suite = ws.path("suite");
    ws.write("suite/rubrics/ok.txt", "Grade {submission}");
    symlink("rubrics/ok.txt", suite.join("inside.txt")).expect("link");
    symlink("../secret.txt", suite.join("leaves.txt")).expect("link");
    ws.write(
        "suite/suite.yaml",
        &format!(
            "name: rows\ndataset: data.jsonl\ngraders:\n  judged:\n    kind: rubric\n    base_url: {}\n",
            server.base_url()
        ),
    );
    let absolute = secret.to_string_lossy().into_owned();
    let escapes = [absolute.as_str(), "../secret.txt", "leaves.txt"];
    let mut rows: Vec<Value> = escapes
        .iter()
        .enumerate()
        .map(|(i, path)| rubric_row(&format!("out{i}"), path))
        .collect();
    rows.push(rubric_row("in", "inside.txt"));
    ws.write_rows("suite/data.jsonl", &rows);
    let vars = [("OPENAI_API_KEY", KEY)];

    let refused =
        crate::common::gavel_off_runtime(&suite, &["validate", "suite.yaml"], &vars).await;
    assert_eq!(refused.status.code(), Some(2), "{}", stderr(&refused));
    let err = stderr(&refused);
    for (i, path) in escapes.iter().enumerate() {
        let at = format!("data.jsonl:{}:", i + 1);
        let line = err.lines().find(|l| l.contains(&at)).unwrap_or_else(|| {
            panic!("no error at {at}:\n{err}");
        });
        assert!(
            line.contains("rubric_path") && line.contains(path),
            "{line}"
        );
    }

    let args = ["run", "suite.yaml", "-o", "out", "--skip-invalid"];
    let run = crate::common::gavel_off_runtime(&suite, &args, &vars).await;
    assert!(matches!(run.status.code(), Some(0 | 1)), "{}", stderr(&run));
    let requests = server.requests();
    assert_eq!(
        requests.len(),
        1,
        "only the rubric inside the folder is sent"
    );
    assert_eq!(requests[0].prompt(), "Grade Paris");
    for request in &requests {
        assert!(!request.body.contains(SECRET), "{}", request.body);
    }
    for (path, text) in texts_under(&suite.join("out")) {
        assert!(!text.contains(SECRET), "{}", path.display());
    }
    for output in [&refused, &run] {
        assert!(!stdout(output).contains(SECRET) && !stderr(output).contains(SECRET));
    }
    let results: Vec<Value> = std::fs::read_to_string(suite.join("out/results.jsonl"))
        .expect("results")
        .lines()
        .map(|l| serde_json::from_str(l).expect("JSON"))
        .collect();
    for (i, path) in escapes.iter().enumerate() {
        let message = results[i]["error"]["message"].as_str().unwrap_or_default();
        assert!(message.contains(path), "{}: {message}", results[i]);
    }
    assert_eq!(results[3]["grades"]["judged"]["score"], 1.0);
}

/// A FIFO as the suite's `prompt_path` or `agent_file`, or as a row's rubric, is refused at
/// once, naming the field and the file; a prompt file over the cap is refused before it is read.
#[test]
fn prompt_files_that_never_end_are_refused() {
    let ws = Workspace::new();
    let fifo = |name: &str| {
        rustix::fs::mkfifoat(
            rustix::fs::CWD,
            ws.path(name),
            rustix::fs::Mode::from_raw_mode(0o600),
        )
        .expect("mkfifo");
    };
    fifo("prompt.fifo");
    fifo("judge.af");
    fifo("rubric.fifo");
    std::fs::File::create(ws.path("huge.txt"))
        .and_then(|f| f.set_len(64 << 20))
        .expect("sparse file");
    ws.write_rows(
        "data.jsonl",
        &[json!({"id": 1, "input": "q", "ground_truth": "a"})],
    );
    ws.write_rows(
        "rows.jsonl",
        &[json!({"id": 1, "input": "q", "rubric_path": "rubric.fifo"})],
    );
    let suite = |field: &str, dataset: &str| {
        format!(
            "name: fifo\ndataset: {dataset}\ngraders:\n  judged:\n    kind: rubric\n    base_url: http://127.0.0.1:9/v1\n    {field}\n"
        )
    };
    for (field, file, why) in [
        ("prompt_path: prompt.fifo", "prompt.fifo", "a FIFO"),
        ("agent_file: judge.af", "judge.af", "a FIFO"),
        ("prompt_path: huge.txt", "huge.txt", "larger than"),
    ] {
        ws.write("suite.yaml", &suite(field, "data.jsonl"));
        let out = gavel_bounded(ws.dir.path(), &["validate", "suite.yaml"], &[]);
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(2), "{field}: {err}");
        let name = field.split(':').next().expect("field name");
        assert!(
            err.contains(name) && err.contains(file) && err.contains(why),
            "{field}: {err}"
        );
    }
    ws.write("suite.yaml", &suite("model: judge-model", "rows.jsonl"));
    let out = gavel_bounded(ws.dir.path(), &["validate", "suite.yaml"], &[]);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("rows.jsonl:1:") && err.contains("rubric.fifo") && err.contains("a FIFO"),
        "{err}"
    );
}

/// The raw bytes of an escape sequence or a bidi override in `output`'s streams, if any.
fn steering(output: &Output) -> Option<String> {
    let both = [stdout(output), stderr(output)].concat();
    (both.contains('\u{1b}') || both.contains('\u{202e}') || both.contains('\u{7}')).then_some(both)
}

const HOSTILE_ID: &str = "\u{1b}]0;pwned\u{7}\u{1b}[2J\u{202e}id";
/// [`HOSTILE_ID`] as a terminal should show it.
const SHOWN_ID: &str = "\\u{1b}]0;pwned\\u{7}\\u{1b}[2J\\u{202e}id";

/// A sample id and a grader's error that hold escape sequences and bidi overrides reach stdout
/// and stderr as visible escapes (`gavel run`, `gavel validate`, `gavel diff`, its JSON too),
/// never raw; the results keep them as they are.
#[test]
fn escapes_in_ids_and_grader_errors_are_shown_not_obeyed() {
    let Some(cache) = crate::python_graders::cache() else {
        panic!("the Python interpreter is needed here");
    };
    let ws = Workspace::new();
    let passing = "def grade(sample, item):\n    return 1.0\n";
    ws.write("g.py", passing);
    ws.write(
        "suite.yaml",
        "name: hostile\ndataset: data.jsonl\ngraders:\n  g:\n    kind: python\n    source_path: g.py\n",
    );
    ws.write_rows(
        "data.jsonl",
        &[json!({"id": HOSTILE_ID, "input": "q", "trajectory": [[
            {"id": "m1", "date": "2026-01-01T00:00:00Z", "message_type": "assistant_message", "content": "Paris"}
        ]]})],
    );
    let gavel = |args: &[&str]| crate::python_graders::gavel(cache, ws.dir.path(), args);

    let passed = gavel(&["run", "suite.yaml", "-o", "before"]);
    assert_eq!(passed.status.code(), Some(0), "{}", stderr(&passed));
    ws.write(
        "g.py",
        r"def grade(sample, item):
    raise ValueError('\x1b[2J\u202eboom')
",
    );
    let failed = gavel(&["run", "suite.yaml", "-o", "errored"]);
    assert_eq!(failed.status.code(), Some(0), "{}", stderr(&failed));
    ws.write("g.py", "def grade(sample, item):\n    return 0.0\n");
    let after = gavel(&["run", "suite.yaml", "-o", "after"]);
    assert_eq!(after.status.code(), Some(0), "{}", stderr(&after));
    let diff = gavel(&["diff", "before", "after"]);
    let diff_json = gavel(&["diff", "before", "after", "--json"]);
    ws.write(
        "g.py",
        r"raise ImportError('\x1b[2J\u202egone')
",
    );
    let import = gavel(&["validate", "suite.yaml"]);
    assert_eq!(import.status.code(), Some(2), "{}", stderr(&import));
    ws.write("g.py", passing);
    ws.write_rows(
        "data.jsonl",
        &[json!({"id": 1, "input": "q", "rubric_path": HOSTILE_ID})],
    );
    let invalid = gavel(&["validate", "suite.yaml"]);
    assert_eq!(invalid.status.code(), Some(2), "{}", stderr(&invalid));

    for (what, output, visible) in [
        ("run", &failed, "\\u{1b}[2J\\u{202e}boom"),
        ("run", &failed, SHOWN_ID),
        ("run", &after, SHOWN_ID),
        ("diff", &diff, SHOWN_ID),
        (
            "diff --json",
            &diff_json,
            "\\u001b]0;pwned\\u0007\\u001b[2J\\u202eid",
        ),
        ("invalid row", &invalid, SHOWN_ID),
        ("import", &import, "\\u{1b}[2J\\u{202e}gone"),
    ] {
        if let Some(raw) = steering(output) {
            panic!("{what}: raw escapes reached the terminal: {raw:?}");
        }
        let shown = [stdout(output), stderr(output)].concat();
        assert!(shown.contains(visible), "{what}: {visible} not in {shown}");
    }
    for out in ["errored", "after"] {
        assert_eq!(ws.results(out)[0]["sample_id"], HOSTILE_ID, "{out}");
    }
}

/// Weights whose sum overflows would make every normalised weight 0 and every reward 0.0: the
/// suite is refused at the field instead, with how to fix it.
#[test]
fn overflowing_reward_weights_are_refused_at_their_field() {
    let ws = Workspace::new();
    ws.write_rows(
        "data.jsonl",
        &[json!({"id": 1, "input": "q", "ground_truth": "a"})],
    );
    ws.write(
        "suite.yaml",
        "name: big\ndataset: data.jsonl\ngraders:\n  a:\n    kind: tool\n    function: contains\n  b:\n    kind: tool\n    function: contains\nreward:\n  kind: weighted\n  weights: {a: 1.0e+308, b: 1.0e+308}\n",
    );
    let out = gavel_bounded(ws.dir.path(), &["validate", "suite.yaml"], &[]);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    let line = err
        .lines()
        .find(|l| l.contains("suite.yaml:") && l.contains("reward"))
        .unwrap_or_else(|| panic!("no error at the reward: {err}"));
    assert!(line.contains("add up to more than"), "{line}");
    assert!(err.contains("scale"), "{err}");
}
