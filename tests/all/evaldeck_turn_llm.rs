//! `llm` and `llm_rubric` entries of an evaldeck case's turns through `gavel run`, against a
//! loopback endpoint replaying the replies evaldeck 0.1.5 was given
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
        Reply::completion(text)
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
    let vars = [
        ("OPENAI_BASE_URL", base_url.as_str()),
        ("OPENAI_API_KEY", "sk-test"),
    ];
    let args = ["run", "suite.yaml", "-o", "out", "--quiet", "--no-cache"];
    let output = gavel_off_runtime(ws.dir.path(), &args, &vars).await;
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));

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
    let sent = sorted(server.requests().iter().map(|r| r.json()).collect());
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
