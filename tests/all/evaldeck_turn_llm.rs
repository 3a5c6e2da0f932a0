//! `llm` and `llm_rubric` entries of an evaldeck case's turns through `gavel run`, against a
//! loopback endpoint (chat completions, and the Messages API for `claude*` models) replaying the
//! replies evaldeck 0.1.5 was given
//! (`conformance/record_evaldeck_turn_llm.py`): the requests gavel sends equal evaldeck's, and
//! each turn's status and each judge entry's status, message, score and details equal what
//! evaldeck made of them.

use serde_json::{Value, json};

use crate::common::{Workspace, gavel_off_runtime, load_json, stderr};
use crate::openai_server::{Reply, Server};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn turn_llm_entries_ask_and_grade_as_evaldeck_does() {
    let recorded = load_json("conformance/evaldeck-turn-llm-vectors.json");
    let replies: Vec<(String, String)> =
        serde_json::from_value(recorded["replies"].clone()).expect("replies are [key, text] pairs");
    let vectors = recorded["vectors"].as_array().expect("vectors");
    let server = Server::start(move |_, request| {
        let prompt = request.prompt();
        let (_, text) = replies
            .iter()
            .find(|(key, _)| prompt.contains(key.as_str()))
            .expect("a scripted reply for every prompt");
        if request.path.ends_with("/messages") {
            Reply::message(json!({"type": "text", "text": text}))
        } else {
            Reply::completion(text)
        }
    })
    .await;

    let ws = Workspace::new();
    ws.write(
        "suite.yaml",
        "name: turns\ndataset: data.jsonl\ngraders:\n  case:\n    kind: expectations\n",
    );
    let rows: Vec<Value> = vectors
        .iter()
        .enumerate()
        .map(|(id, v)| {
            let mut row = v["case"].clone();
            row["id"] = json!(id);
            row["trajectory"] = v["traces"].clone();
            row
        })
        .collect();
    ws.write_rows("data.jsonl", &rows);
    let base_url = server.base_url();
    // The Messages API's base URL has no `/v1`: the path adds it.
    let anthropic_url = base_url.trim_end_matches("/v1");
    let vars = [
        ("OPENAI_BASE_URL", base_url.as_str()),
        ("OPENAI_API_KEY", "sk-test"),
        ("ANTHROPIC_BASE_URL", anthropic_url),
        ("ANTHROPIC_API_KEY", "sk-ant-test"),
    ];
    let args = ["run", "suite.yaml", "-o", "out", "--quiet", "--no-cache"];
    let output = gavel_off_runtime(ws.dir.path(), &args, &vars).await;
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));

    // evaldeck's choice of API by model name: `claude*` models on the Messages API with its key.
    let requests = server.requests();
    for request in &requests {
        let claude = request.json()["model"]
            .as_str()
            .is_some_and(|m| m.starts_with("claude"));
        let (path, key) = match claude {
            true => ("/v1/messages", request.header("x-api-key")),
            false => ("/v1/chat/completions", request.header("authorization")),
        };
        assert_eq!(request.path, path, "{}", request.body);
        let want = if claude {
            "sk-ant-test"
        } else {
            "Bearer sk-test"
        };
        assert_eq!(key, Some(want), "{}", request.body);
    }
    assert!(
        requests.iter().any(|r| r.path == "/v1/messages"),
        "the vectors ask a claude model"
    );

    // The requests, whatever order they were sent in (and their keys written in): model,
    // temperature and prompt alike, each prompt to the byte.
    let sorted = |mut bodies: Vec<Value>| {
        bodies.sort_by_key(|b| {
            let prompt = b["messages"].as_array().and_then(|m| m.last());
            (
                prompt.map(|p| p["content"].to_string()),
                b["model"].to_string(),
            )
        });
        bodies
    };
    let sent = sorted(requests.iter().map(|r| r.json()).collect());
    let asked = sorted(
        vectors
            .iter()
            .flat_map(|v| v["requests"].as_array().unwrap().clone())
            .collect(),
    );
    assert_eq!(sent, asked);

    let results = ws.results("out");
    assert_eq!(results.len(), vectors.len());
    for (result, v) in results.iter().zip(vectors) {
        let note = &v["note"];
        let grade = &result["grades"]["case"];
        let turns = grade["metadata"]["turns"]
            .as_array()
            .expect("metadata.turns");
        let want = v["turns"].as_array().unwrap();
        assert_eq!(turns.len(), want.len(), "{note}: {grade}");
        for (turn, want) in turns.iter().zip(want) {
            assert_eq!(
                (&turn["status"], &turn["skipped"]),
                (&want["status"], &want["skipped"]),
                "{note}: {grade}"
            );
            let judged: Vec<Value> = turn["checks"]
                .as_array()
                .unwrap()
                .iter()
                .filter(|c| matches!(c["check"].as_str(), Some("llm" | "llm_rubric")))
                .map(|c| {
                    let details = &c["details"];
                    json!([
                        c["check"],
                        c["status"],
                        c["message"],
                        details["score"],
                        {"model": details["model"], "raw_response": details["raw_response"]},
                    ])
                })
                .collect();
            let expected: Vec<Value> = want["grades"]
                .as_array()
                .unwrap()
                .iter()
                .filter(|g| matches!(g[0].as_str(), Some("llm" | "llm_rubric")))
                .cloned()
                .collect();
            assert_eq!(judged, expected, "{note}");
        }
    }
}

/// A case's `llm` endpoint that refuses the key stops the run as a dead rubric judge does: exit
/// 2 naming the grader, the endpoint and the cause, a request or two rather than one a case,
/// and no case graded with the refusal kept.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refused_key_for_a_turns_llm_entry_stops_the_run() {
    const CASES: usize = 40;
    let server = Server::start(|_, _| {
        Reply::status(
            401,
            r#"{"error": {"message": "Incorrect API key provided"}}"#,
        )
    })
    .await;
    let ws = Workspace::new();
    ws.write(
        "suite.yaml",
        "name: turns\ndataset: data.jsonl\ngraders:\n  case:\n    kind: expectations\n",
    );
    let rows: Vec<Value> = (0..CASES)
        .map(|id| {
            json!({
                "id": id,
                "name": format!("case-{id}"),
                "turns": [{"user": "Book a flight", "graders": [{"type": "llm"}]}],
                "trajectory": [{"input": "Book a flight", "output": "Booked UA12", "steps": []}],
            })
        })
        .collect();
    ws.write_rows("data.jsonl", &rows);
    let base_url = server.base_url();
    let vars = [
        ("OPENAI_BASE_URL", base_url.as_str()),
        ("OPENAI_API_KEY", "sk-refused"),
    ];
    let args = ["run", "suite.yaml", "-o", "out", "--quiet", "--no-cache"];
    let output = gavel_off_runtime(ws.dir.path(), &args, &vars).await;
    let err = stderr(&output);
    assert_eq!(output.status.code(), Some(2), "{err}");
    assert!(
        err.contains("judge `case` cannot be used, and no more requests were sent to it"),
        "{err}"
    );
    assert!(err.contains(&base_url), "{err}");
    assert!(err.contains("HTTP 401 Unauthorized"), "{err}");
    assert!(!err.contains("sk-refused"), "{err}");
    let sent = server.request_count();
    assert!(sent < 8, "{sent} requests for {CASES} cases");
    assert!(ws.results("out").is_empty());
}
