//! A grader in the shape of letta-evals' skills suites, which needs every grant at once: it
//! imports `pathspec` (from `requirements:`), walks the folder its row says the agent wrote in
//! (a row-chosen `files:` grant), and counts tokens with the `anthropic` client against an API
//! standing in on 127.0.0.1 (granted by address), its key a `secrets:` grant that the grader
//! never sees. Its scores and what it counted are compared with letta-evals 0.26.0's, running
//! the same grader under CPython against the same stand-in.

use std::io::Write;
use std::net::TcpStream;

use serde_json::{Value, json};

use crate::common::{Workspace, gavel_with_env, stderr, texts_under};
use crate::network::server;
use crate::processes::letta_evals_grades;
use crate::python_graders::{cache, paris_row};

/// The grader, in the skills suites' shape (this file's own code): the agent's files that the
/// ignore patterns leave, their tokens as the Messages API counts them.
const GRADER: &str = r#"
import os

import anthropic
import pathspec
from letta_evals.decorators import grader
from letta_evals.models import GradeResult

IGNORED = pathspec.PathSpec.from_lines("gitwildmatch", ["*.log", "build/"])


@grader
def skill_use(sample, submission):
    root = sample.extra_vars["workspace"]
    files = []
    for folder, _, names in os.walk(root):
        for name in names:
            relative = os.path.relpath(os.path.join(folder, name), root)
            if not IGNORED.match_file(relative):
                files.append(relative)
    files.sort()
    text = "\n".join(open(os.path.join(root, f)).read() for f in files)
    client = anthropic.Anthropic()  # its key and base URL from the environment
    count = client.messages.count_tokens(
        model="claude-sonnet-4-5", messages=[{"role": "user", "content": text}]
    )
    key = os.environ["ANTHROPIC_API_KEY"]
    return GradeResult(
        score=1.0 if count.input_tokens <= 10 else 0.0,
        rationale=f"{files}: {count.input_tokens} tokens; key seen as {key[:13]}",
    )
"#;

const SECRET: &str = "sk-ant-test-0123456789abcdef";

/// A stand-in of the Messages API's token counting: the words of the first message, as
/// `input_tokens`.
fn count_tokens(request: &str, stream: &mut TcpStream) {
    let body = request.split_once("\r\n\r\n").map_or("", |(_, body)| body);
    let request: Value = serde_json::from_str(body).unwrap_or(Value::Null);
    let words = request["messages"][0]["content"]
        .as_str()
        .map_or(0, |text| text.split_whitespace().count());
    let reply = json!({"input_tokens": words}).to_string();
    let _ = write!(
        stream,
        "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\
         connection: close\r\n\r\n{reply}",
        reply.len()
    );
}

#[test]
fn a_skills_shaped_grader_reaches_its_packages_folder_and_api_and_nothing_else() {
    let Some(cache) = cache() else { return };
    let (port, heads) = server(count_tokens);
    let ws = Workspace::new();
    // Two agents' folders: one wrote a short file (and a log and a build the patterns ignore),
    // the other two files of many words.
    let agents = ws.path("agents");
    ws.write("agents/a/main.py", "print('hello')\n");
    ws.write("agents/a/debug.log", &"noise ".repeat(100));
    ws.write("agents/a/build/out.txt", &"built ".repeat(100));
    ws.write("agents/b/one.py", &"word ".repeat(8));
    ws.write("agents/b/two.py", &"word ".repeat(8));
    ws.write("skills.py", GRADER);
    let agents = agents.canonicalize().expect("the agents' folder");
    let row = |id: i64, agent: &str| {
        let mut row = paris_row(id, "done");
        row["extra_vars"] = json!({"workspace": agents.join(agent)});
        row
    };
    ws.write_rows("data.jsonl", &[row(1, "a"), row(2, "b")]);
    ws.write(
        "suite.yaml",
        &format!(
            "name: skills\ndataset: data.jsonl\n\
             limits: {{fuel: 5000000000, timeout_ms: 60000, memory_mb: 256}}\n\
             requirements: [pathspec==1.1.1]\n\
             graders:\n  skill_use:\n    kind: tool\n    function: skills.py:skill_use\n\
             \x20   allow:\n\
             \x20     network: [\"127.0.0.1:{port}\"]\n\
             \x20     env: [ANTHROPIC_BASE_URL]\n\
             \x20     secrets: {{ANTHROPIC_API_KEY: [\"127.0.0.1:{port}\"]}}\n\
             \x20     files: [{{under: {}, row: extra_vars.workspace}}]\n",
            agents.display()
        ),
    );
    let cache = cache.to_string_lossy();
    let base = format!("http://127.0.0.1:{port}");
    let vars = [
        ("GAVEL_CACHE_DIR", &*cache),
        ("GAVEL_PYTHON_COMPONENT", ""),
        ("ANTHROPIC_API_KEY", SECRET),
        ("ANTHROPIC_BASE_URL", &*base),
    ];

    let validated = gavel_with_env(ws.dir.path(), &["validate", "suite.yaml"], &vars);
    let said = stderr(&validated) + &crate::common::stdout(&validated);
    assert_eq!(validated.status.code(), Some(0), "{said}");
    assert!(said.contains("graders.skill_use may reach: "), "{said}");
    assert!(!said.contains(SECRET), "{said}");

    let out = gavel_with_env(
        ws.dir.path(),
        &["run", "suite.yaml", "-o", "out", "-q"],
        &vars,
    );
    assert!(matches!(out.status.code(), Some(0 | 1)), "{}", stderr(&out));
    let results = ws.results("out");
    let grade = |i: usize| results[i]["grades"]["skill_use"].clone();
    let rationale = |i: usize| {
        grade(i)["rationale"]
            .as_str()
            .unwrap_or_default()
            .to_string()
    };
    // The patterns left main.py alone, of 1 word; agent b wrote 16.
    assert_eq!(grade(0)["score"], 1.0, "{}", grade(0));
    assert!(
        rationale(0).starts_with("['main.py']: 1 tokens; key seen as gavel-secret-"),
        "{}",
        rationale(0)
    );
    assert_eq!(grade(1)["score"], 0.0, "{}", grade(1));
    assert!(
        rationale(1).starts_with("['one.py', 'two.py']: 16 tokens"),
        "{}",
        rationale(1)
    );

    // The API got the key itself, in each request; nothing gavel wrote holds it.
    let heads: Vec<String> = heads.try_iter().collect();
    assert_eq!(heads.len(), 2, "{heads:?}");
    for head in &heads {
        assert!(head.starts_with("POST /v1/messages/count_tokens"), "{head}");
        assert!(head.contains(SECRET), "{head}");
    }
    for (path, text) in texts_under(&ws.path("out")) {
        assert!(
            !text.contains(SECRET),
            "{} holds the secret",
            path.display()
        );
    }
    assert!(!stderr(&out).contains(SECRET));

    // letta-evals, given the key itself, grades the same rows the same way.
    let Some(native) = letta_evals_grades(&ws, "skills:skill_use", &vars[2..]) else {
        return;
    };
    let gavel: Vec<(f64, String)> = (0..2)
        .map(|i| (grade(i)["score"].as_f64().unwrap(), rationale(i)))
        .collect();
    let counted = |grades: &[(f64, String)]| -> Vec<(f64, String)> {
        grades
            .iter()
            .map(|(score, said)| (*score, said.split("; key seen as").next().unwrap().into()))
            .collect()
    };
    assert_eq!(counted(&gavel), counted(&native));
    assert!(
        native[0].1.ends_with("key seen as sk-ant-test-0"),
        "{native:?}"
    );
}
