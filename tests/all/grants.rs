//! `allow:` through the `gavel` binary: what a sandboxed grader may reach (variables, secrets as
//! placeholders, folders read-only at their own path, a row's folder inside a grant), what
//! stays closed (writes, symlinks out, a row widening a grant, a secret's value anywhere in the
//! outputs), and the located mistakes of the block itself.

use std::path::Path;

use crate::common::{Workspace, gavel_with_env, stderr, stdout, texts_under};
use serde_json::{Value, json};

const SECRET_VALUE: &str = "sk-live-7f3a9c1e5b2d4f6a8c0e";

/// A row whose submission (its last assistant message) is `path`.
fn row(id: i64, path: &str, extra: Value) -> Value {
    json!({
        "id": id,
        "input": "Which file?",
        "extra_vars": extra,
        "trajectory": [[
            {"id": "m1", "date": "2026-01-01T00:00:00Z", "message_type": "user_message", "content": "Which file?"},
            {"id": "m2", "date": "2026-01-01T00:00:01Z", "message_type": "assistant_message", "content": path}
        ]]
    })
}

/// A suite grading with the adversary pack's `reach`, which reports everything it can reach.
fn suite(allow: &str, grader_allow: &str) -> String {
    let adversary = gavel_test_artifacts::guests::ADVERSARY;
    format!(
        "name: grants\ndataset: data.jsonl\n{allow}packs:\n  adv:\n    path: {adversary}\n\
         graders:\n  reach:\n    kind: tool\n    function: adv.reach\n{grader_allow}"
    )
}

fn run(ws: &Workspace, vars: &[(&str, &str)]) -> std::process::Output {
    gavel_with_env(ws.dir.path(), &["run", "suite.yaml", "-o", "out"], vars)
}

/// What `reach` reported for each row, in order.
fn reached(ws: &Workspace) -> Vec<Value> {
    ws.results("out")
        .iter()
        .map(|r| {
            let grade = &r["grades"]["reach"];
            assert_eq!(grade["status"], "pass", "{r}");
            serde_json::from_str(grade["rationale"].as_str().unwrap()).unwrap()
        })
        .collect()
}

fn canonical(path: &Path) -> String {
    path.canonicalize().unwrap().to_string_lossy().into_owned()
}

#[test]
fn granted_variables_are_passed_in_and_a_secret_is_only_its_placeholder_everywhere() {
    let ws = Workspace::new();
    ws.write(
        "suite.yaml",
        &suite(
            "allow:\n  env: [GRANTED_PLAIN, GRANTED_UNSET]\n  secrets:\n    GRANTED_KEY: [api.example.com]\n",
            "",
        ),
    );
    ws.write_rows("data.jsonl", &[row(1, "/nowhere", json!({}))]);
    let vars = [
        ("GRANTED_PLAIN", "plain-value"),
        ("GRANTED_KEY", SECRET_VALUE),
        ("NOT_GRANTED", "other-value"),
    ];
    let out = run(&ws, &vars);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    // This machine granted by name is refused at every request (a name reaches public
    // addresses only): said before grading.
    ws.write(
        "suite.yaml",
        &suite("allow:\n  network: [localhost:8080]\n", ""),
    );
    let validate = gavel_with_env(ws.dir.path(), &["validate", "suite.yaml"], &[]);
    assert_eq!(validate.status.code(), Some(0), "{}", stderr(&validate));
    assert!(
        stderr(&validate).contains(
            "notice: `graders.reach`: `network:` grants `localhost:8080` by name, and a name \
             reaches public addresses only: grant this machine by its address (`127.0.0.1:PORT`)"
        ),
        "{}",
        stderr(&validate)
    );
    ws.write(
        "suite.yaml",
        &suite(
            "allow:\n  env: [GRANTED_PLAIN, GRANTED_UNSET]\n  secrets:\n    GRANTED_KEY: [api.example.com]\n",
            "",
        ),
    );
    // No `network:` grants the secret's host: its value is never sent, and the run says so.
    assert!(
        stderr(&out).contains(
            "notice: `graders.reach`: the secret `GRANTED_KEY` is never sent to \
             `api.example.com`: `network:` does not grant it"
        ),
        "{}",
        stderr(&out)
    );
    let env: Vec<String> = reached(&ws)[0]["env"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap().to_string())
        .collect();
    assert_eq!(env.len(), 2, "{env:?}");
    assert_eq!(env[0], "GRANTED_PLAIN=plain-value");
    let placeholder = env[1].strip_prefix("GRANTED_KEY=").expect("the secret");
    let random = placeholder
        .strip_prefix("gavel-secret-GRANTED_KEY-")
        .expect("a placeholder");
    assert_eq!(random.len(), 32, "{placeholder}");
    assert!(
        random.bytes().all(|b| b.is_ascii_hexdigit()),
        "{placeholder}"
    );

    // The value reaches no output, log or message; the record names the grants.
    let validated = gavel_with_env(ws.dir.path(), &["validate", "suite.yaml"], &vars);
    let shown = stdout(&validated);
    assert!(
        shown.contains(
            "graders.reach may reach: env GRANTED_PLAIN; secrets GRANTED_KEY (sent to api.example.com)"
        ),
        "{shown}"
    );
    for text in [stdout(&out), stderr(&out), shown, stderr(&validated)] {
        assert!(!text.contains(SECRET_VALUE), "{text}");
    }
    for (path, text) in texts_under(&ws.path("out")) {
        assert!(!text.contains(SECRET_VALUE), "{}", path.display());
    }
    let record: Value =
        serde_json::from_str(&std::fs::read_to_string(ws.path("out/run.json")).unwrap()).unwrap();
    assert_eq!(
        record["grants"],
        json!({"graders.reach": {"env": ["GRANTED_PLAIN"], "secrets": {"GRANTED_KEY": ["api.example.com"]}}})
    );
}

#[test]
fn a_granted_folder_is_read_only_at_its_own_path_with_an_empty_scratch_tmp_per_call() {
    let ws = Workspace::new();
    ws.write("work/notes.txt", "granted text");
    ws.write("outside.txt", "not granted");
    std::os::unix::fs::symlink(ws.path("outside.txt"), ws.path("work/link-out")).unwrap();
    ws.write("suite.yaml", &suite("allow:\n  files: [work/]\n", ""));
    let work = canonical(&ws.path("work"));
    ws.write_rows(
        "data.jsonl",
        &[
            row(1, &format!("{work}/notes.txt"), json!({})),
            row(2, &format!("{work}/link-out"), json!({})),
            row(3, &canonical(&ws.path("outside.txt")), json!({})),
            row(4, &format!("{work}/../outside.txt"), json!({})),
        ],
    );
    let out = run(&ws, &[]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let reached = reached(&ws);
    assert_eq!(reached[0]["read"], "granted text");
    assert!(reached[0]["write"].as_str().unwrap().starts_with("error"));
    // A symlink out of the folder, and a path beside it, are closed.
    assert!(
        reached[1]["read"].as_str().unwrap().starts_with("error"),
        "{}",
        reached[1]
    );
    assert!(
        reached[2]["read"].as_str().unwrap().starts_with("error"),
        "{}",
        reached[2]
    );
    // So is `..` out of it.
    assert!(
        reached[3]["read"].as_str().unwrap().starts_with("error"),
        "{}",
        reached[3]
    );
    for call in &reached {
        // Every call's /tmp starts empty (the last call's file is gone) and takes writes.
        assert_eq!(call["tmp_before"], "0", "{call}");
        assert_eq!(call["tmp"], "scratch", "{call}");
    }
    assert!(!ws.path("work/notes.txt.written").exists());
    let validated = gavel_with_env(ws.dir.path(), &["validate", "suite.yaml"], &[]);
    assert!(
        stdout(&validated).contains(&format!(
            "graders.reach may reach: files (read-only) {work}"
        )),
        "{}",
        stdout(&validated)
    );
}

#[test]
fn a_row_chooses_its_folder_only_inside_the_grant() {
    let ws = Workspace::new();
    ws.write("runs/r1/out.txt", "run one");
    ws.write("elsewhere/out.txt", "not granted");
    std::os::unix::fs::symlink(ws.path("elsewhere"), ws.path("runs/sneaky")).unwrap();
    // The suite grants the other grader nothing; this one names its own folders.
    ws.write(
        "suite.yaml",
        &suite(
            "",
            "    allow:\n      files:\n        - {under: runs, row: extra_vars.workspace}\n",
        ),
    );
    let r1 = canonical(&ws.path("runs/r1"));
    let elsewhere = canonical(&ws.path("elsewhere"));
    let sneaky = ws.path("runs/sneaky").to_string_lossy().into_owned();
    ws.write_rows(
        "data.jsonl",
        &[
            row(1, &format!("{r1}/out.txt"), json!({"workspace": r1})),
            row(
                2,
                &format!("{elsewhere}/out.txt"),
                json!({"workspace": elsewhere}),
            ),
            row(
                3,
                &format!("{sneaky}/out.txt"),
                json!({"workspace": sneaky}),
            ),
            row(4, &format!("{r1}/out.txt"), json!({})),
            row(
                5,
                &format!("{r1}/out.txt"),
                json!({"workspace": canonical(&ws.path("runs"))}),
            ),
        ],
    );
    let out = run(&ws, &[]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let results = ws.results("out");
    let grade = |i: usize| &results[i]["grades"]["reach"];
    let reached: Value = serde_json::from_str(grade(0)["rationale"].as_str().unwrap()).unwrap();
    assert_eq!(reached["read"], "run one");
    // Outside the grant, through a link out of it, and the granted folder itself (every
    // row's folder at once).
    for i in [1, 2, 4] {
        assert_eq!(grade(i)["status"], "error", "{}", grade(i));
        let why = grade(i)["rationale"].as_str().unwrap();
        assert!(
            why.contains("`extra_vars.workspace`") && why.contains("a row cannot widen a grant"),
            "{why}"
        );
    }
    assert_eq!(grade(3)["status"], "error");
    assert!(
        grade(3)["rationale"]
            .as_str()
            .unwrap()
            .contains("the row has no `extra_vars.workspace`"),
        "{}",
        grade(3)
    );
}

#[test]
fn mistakes_in_allow_are_located_with_how_to_fix_them() {
    let ws = Workspace::new();
    ws.write_rows("data.jsonl", &[row(1, "/x", json!({}))]);
    for (allow, want) in [
        (
            "allow:\n  network: [api.example.com, \"bad host!\"]\n",
            "suite.yaml:4:30: allow.network[1]: `bad host!` is not a host pattern",
        ),
        (
            "allow:\n  network: [\"https://api.example.com/v1\"]\n",
            "allow.network[0]: `https://api.example.com/v1` is not a host pattern: a host \
             pattern is a host and its port, not a URL (no scheme, no path)",
        ),
        (
            "allow:\n  env: [HOME, 1BAD]\n",
            "suite.yaml:4:15: allow.env[1]: `1BAD` is not a variable name",
        ),
        (
            "allow:\n  secret: {}\n",
            "suite.yaml:4:3: allow.secret: unknown field `secret`",
        ),
        (
            "allow:\n  files: [{under: x, rows: a}]\n",
            "suite.yaml:4:22: allow.files[0].rows: unknown field `rows`",
        ),
    ] {
        ws.write("suite.yaml", &suite(allow, ""));
        let out = gavel_with_env(ws.dir.path(), &["validate", "suite.yaml"], &[]);
        assert_eq!(out.status.code(), Some(2));
        let err = stderr(&out);
        assert!(err.contains(want), "{want}\n{err}");
    }

    // A folder that is not one, in the grader's own block (which replaces the suite's), and one
    // that does not exist, in the suite's.
    ws.write("a-file.txt", "x");
    for (allow, grader_allow, want) in [
        (
            "allow:\n  files: [missing/]\n",
            "    allow:\n      files: [a-file.txt]\n",
            "suite.yaml:13:15: graders.reach.allow.files[0]: `a-file.txt` is not a folder",
        ),
        (
            "allow:\n  files: [missing/]\n",
            "",
            "suite.yaml:4:11: allow.files[0]: cannot use folder `missing/`",
        ),
        // The grader's scratch folder is mounted at /tmp: a grant of it, or of `/`, would
        // show an empty /tmp where the grant promised the host's.
        (
            "allow:\n  files: [/tmp]\n",
            "",
            "suite.yaml:4:11: allow.files[0]: `/tmp` would hide, or be hidden by, the grader's \
             own scratch folder, mounted at `/tmp`: grant a folder inside `/tmp` instead",
        ),
        (
            "allow:\n  files: [/]\n",
            "",
            "suite.yaml:4:11: allow.files[0]: `/` would hide",
        ),
    ] {
        ws.write("suite.yaml", &suite(allow, grader_allow));
        let out = gavel_with_env(ws.dir.path(), &["validate", "suite.yaml"], &[]);
        assert_eq!(out.status.code(), Some(2));
        let err = stderr(&out);
        assert!(err.contains(want), "{want}\n{err}");
        assert!(err.contains("hint: write an existing folder"), "{err}");
    }

    // A variable shown under the suite's `env:` and kept secret by the grader's block would be
    // shown: refused where the secret is written, with the value nowhere.
    ws.write(
        "suite.yaml",
        &suite(
            "allow:\n  env: [MYKEY]\n",
            "    allow:\n      secrets: {MYKEY: [api.example.com]}\n",
        ),
    );
    let vars = [("MYKEY", SECRET_VALUE)];
    for command in [
        &["validate", "suite.yaml"][..],
        &["run", "suite.yaml", "-o", "out"],
    ] {
        let out = gavel_with_env(ws.dir.path(), command, &vars);
        assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
        let err = stderr(&out);
        assert!(
            err.contains(
                "suite.yaml:13:24: graders.reach.allow.secrets.MYKEY: `MYKEY` is granted both \
                 as a secret and under `env:`"
            ),
            "{err}"
        );
        assert!(
            err.contains("hint: grant a variable under one key"),
            "{err}"
        );
        assert!(!err.contains(SECRET_VALUE) && !stdout(&out).contains(SECRET_VALUE));
    }
    assert!(!ws.path("out").exists(), "nothing was graded");
}

#[test]
fn a_built_in_grader_refuses_an_allow_of_its_own() {
    let ws = Workspace::new();
    ws.write_rows("data.jsonl", &[row(1, "/x", json!({}))]);
    ws.write(
        "suite.yaml",
        "name: s\ndataset: data.jsonl\ngraders:\n  c:\n    kind: tool\n    function: contains\n    \
         allow:\n      env: [HOME]\n",
    );
    let out = gavel_with_env(ws.dir.path(), &["validate", "suite.yaml"], &[]);
    assert_eq!(out.status.code(), Some(2));
    let err = stderr(&out);
    assert!(
        err.contains("graders.c.allow: `contains` is built into gavel and reaches nothing"),
        "{err}"
    );
}

/// A Python grader sees its granted variables and a secret's placeholder in `os.environ`, and
/// the secret's value reaches none of the run's outputs.
#[test]
fn a_python_grader_sees_granted_variables_and_only_a_secrets_placeholder() {
    let Some(cache) = crate::python_graders::cache() else {
        return;
    };
    let ws = Workspace::new();
    ws.write(
        "g.py",
        "import os\nfrom letta_evals.decorators import grader\n\
         from letta_evals.models import GradeResult\n\n\
         def seen(name):\n    try:\n        return os.environ[name]\n    except KeyError:\n        \
         return None\n\n\
         @grader\ndef dump(sample, submission):\n    \
         env = {name: seen(name) for name in ('GRANTED_PLAIN', 'GRANTED_KEY', 'NOT_GRANTED')}\n    \
         print(env)\n    return GradeResult(score=1.0, rationale=repr(env), metadata={'env': env})\n",
    );
    ws.write(
        "suite.yaml",
        "name: py\ndataset: data.jsonl\nallow:\n  env: [GRANTED_PLAIN]\n  secrets:\n    \
         GRANTED_KEY: [api.example.com]\ngraders:\n  dump:\n    kind: tool\n    \
         function: g.py:dump\n",
    );
    ws.write_rows("data.jsonl", &[row(1, "anything", json!({}))]);
    let cache = cache.to_string_lossy();
    let out = gavel_with_env(
        ws.dir.path(),
        &["run", "suite.yaml", "-o", "out"],
        &[
            ("GAVEL_CACHE_DIR", &cache),
            ("GAVEL_PYTHON_COMPONENT", ""),
            ("GRANTED_PLAIN", "plain-value"),
            ("GRANTED_KEY", SECRET_VALUE),
            ("NOT_GRANTED", "other-value"),
        ],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let results = ws.results("out");
    let env = &results[0]["grades"]["dump"]["metadata"]["env"];
    assert_eq!(env["GRANTED_PLAIN"], "plain-value", "{env}");
    assert_eq!(env["NOT_GRANTED"], Value::Null, "{env}");
    let placeholder = env["GRANTED_KEY"].as_str().expect("the secret is set");
    assert!(
        placeholder.starts_with("gavel-secret-GRANTED_KEY-"),
        "{placeholder}"
    );
    for text in [stdout(&out), stderr(&out)] {
        assert!(!text.contains(SECRET_VALUE), "{text}");
    }
    for (path, text) in texts_under(&ws.path("out")) {
        assert!(!text.contains(SECRET_VALUE), "{}", path.display());
    }
}

#[test]
fn reading_a_huge_granted_file_ends_at_the_graders_memory_limit() {
    let Some(cache) = crate::python_graders::cache() else {
        return;
    };
    let ws = Workspace::new();
    // 8 GiB as its size says, and no disk: reading it whole would need 8 GiB of memory.
    ws.write("work/huge.bin", "");
    let huge = std::fs::File::options()
        .write(true)
        .open(ws.path("work/huge.bin"))
        .unwrap();
    huge.set_len(8 << 30).unwrap();
    let path = canonical(&ws.path("work/huge.bin"));
    ws.write(
        "g.py",
        &format!(
            "from letta_evals.decorators import grader\n\
             from letta_evals.models import GradeResult\n\n\
             @grader\ndef reads(sample, submission):\n    \
             with open({path:?}, 'rb') as f:\n        \
             return GradeResult(score=1.0, rationale=f'read {{len(f.read())}} bytes')\n"
        ),
    );
    ws.write(
        "suite.yaml",
        // Time and fuel to spare: the memory is the limit the read meets.
        "name: py\ndataset: data.jsonl\nlimits: {timeout_ms: 600000, fuel: 100000000000}\n\
         allow:\n  files: [work/]\ngraders:\n  reads:\n    \
         kind: tool\n    function: g.py:reads\n",
    );
    ws.write_rows("data.jsonl", &[row(1, "anything", json!({}))]);
    let cache = cache.to_string_lossy();
    let out = gavel_with_env(
        ws.dir.path(),
        &["run", "suite.yaml", "-o", "out"],
        &[("GAVEL_CACHE_DIR", &cache), ("GAVEL_PYTHON_COMPONENT", "")],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    // The read stops where the call's memory does (64 MiB by default); the run goes on.
    let grade = &ws.results("out")[0]["grades"]["reads"];
    assert_eq!(grade["status"], "error", "{grade}");
    assert_eq!(grade["rationale"], "memory limit exceeded", "{grade}");
    let peak = grade["metadata"]["sandbox"]["peak_memory_bytes"]
        .as_u64()
        .unwrap();
    assert!(peak <= 64 << 20, "{grade}");
}
