//! `kind: rubric` with `agent_file:` through the real binary: the Letta agent file's system
//! prompt, model and `submit_grade` tool sent to a loopback chat-completions endpoint, the grade
//! read from the tool call, and every mistake in the file refused before any request.

use serde_json::{Value, json};

use crate::common::{Workspace, data, stderr};
use crate::judge::{KEY, four_answers, gavel, judged_row};
use crate::openai_server::{Reply, Server};

const SUITE: &str = "name: agent-judged
dataset: data.jsonl
graders:
  agent_judge:
    kind: rubric
    agent_file: judge.af
    prompt_path: rubric.txt
    extractor: last_assistant
    base_url: BASE_URL
    max_retries: 0
    pass_threshold: 0.7
";

/// letta-evals' example judge agent and rubric, written into `ws`; the agent file as JSON.
fn letta_example(ws: &Workspace) -> Value {
    let agent_file = std::fs::read_to_string(data("letta-judge/web_search_judge.af"))
        .expect("example judge agent");
    ws.write("judge.af", &agent_file);
    let rubric =
        std::fs::read_to_string(data("letta-judge/rubric.txt")).expect("example judge rubric");
    ws.write("rubric.txt", &rubric);
    serde_json::from_str(&agent_file).expect("the example is JSON")
}

/// A server whose every reply calls the tool `name` with `arguments`, and a workspace holding
/// letta-evals' example judge (returned as JSON).
async fn always_calling(name: &str, arguments: &str) -> (Server, Workspace, Value) {
    let server = Server::always(Reply::tool_call(name, arguments)).await;
    let ws = Workspace::new();
    let agent_file = letta_example(&ws);
    (server, ws, agent_file)
}

/// The submission the rubric shows the judge, as letta-evals' example rubric frames it.
fn submitted(prompt: &str, answer: &str) -> bool {
    prompt.contains(&format!("Agent's Submission:\n{answer}\n"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_letta_agent_file_judges_through_gavel() {
    let server = Server::start(|_, request| {
        let prompt = request.prompt();
        if submitted(&prompt, "It is Paris.") {
            Reply::tool_call(
                "submit_grade",
                r#"{"score": 0.9, "rationale": "names the capital"}"#,
            )
        } else if submitted(&prompt, "Lyon, I believe.") {
            Reply::completion("The answer is wrong, I would give it 0.1.")
        } else if submitted(&prompt, "Berlin.") {
            Reply::tool_call("submit_grade", r#"{"score": "high", "rationale": "?"}"#)
        } else {
            Reply::tool_call("submit_grade", r#"{"score": 7, "rationale": "beyond"}"#)
        }
    })
    .await;
    let ws = Workspace::new();
    let agent_file = letta_example(&ws);
    ws.write("suite.yaml", &SUITE.replace("BASE_URL", &server.base_url()));
    four_answers(&ws);
    let key = [("OPENAI_API_KEY", KEY)];

    let run = gavel(&ws, &["run", "suite.yaml", "-o", "out"], &key).await;
    assert_eq!(run.status.code(), Some(0), "stderr: {}", stderr(&run));

    // Each request is the agent's conversation: its system prompt, the rubric formatted as
    // letta-evals formats it, its model and temperature, and its grading tool as the one tool.
    let agent = &agent_file["agents"][0];
    let schema = &agent_file["tools"]
        .as_array()
        .expect("tools")
        .iter()
        .find(|tool| tool["name"] == "submit_grade")
        .expect("the example has submit_grade")["json_schema"];
    let requests = server.requests();
    assert_eq!(requests.len(), 4);
    for request in &requests {
        assert_eq!(request.path, "/v1/chat/completions");
        assert_eq!(
            request.header("authorization"),
            Some(format!("Bearer {KEY}").as_str())
        );
        let body = request.json();
        assert_eq!(body["model"], "gpt-4o-mini", "the agent's llm_config.model");
        assert_eq!(
            body["temperature"], 0.7,
            "the agent's llm_config.temperature"
        );
        let messages = body["messages"].as_array().expect("messages");
        assert_eq!(messages.len(), 2);
        assert_eq!(messages[0]["role"], "system");
        assert_eq!(messages[0]["content"], agent["system"]);
        assert_eq!(messages[1]["role"], "user");
        let prompt = request.prompt();
        assert!(
            prompt.starts_with("You are evaluating an AI agent's response")
                && prompt.contains("Original Question:\nWhat is the capital of France?\n")
                && prompt.contains("(e.g., in brackets like {Answer})"),
            "{prompt}"
        );
        assert_eq!(
            body["tools"],
            json!([{
                "type": "function",
                "function": {
                    "name": "submit_grade",
                    "description": schema["description"],
                    "parameters": schema["parameters"],
                },
            }]),
            "only the grading tool is offered, with the agent file's schema"
        );
        assert!(body.get("tool_choice").is_none(), "no tool rule forces it");
        assert!(body.get("response_format").is_none());
    }

    let results = ws.results("out");
    let grade = |i: usize| results[i]["grades"]["agent_judge"].clone();
    assert_eq!(results[0]["sample_id"], "paris");
    assert_eq!(
        (grade(0)["score"].as_f64(), grade(0)["status"].as_str()),
        (Some(0.9), Some("pass"))
    );
    assert_eq!(grade(0)["rationale"], "names the capital");
    assert_eq!(grade(0)["metadata"]["model"], "gpt-4o-mini");
    assert_eq!(grade(0)["metadata"]["agent_file"], "judge.af");
    assert_eq!(grade(0)["metadata"]["usage"]["prompt_tokens"], 10);

    assert_eq!(grade(1)["status"], "error");
    assert_eq!(
        grade(1)["rationale"],
        "Error during agent judge grading: No submit_grade tool call found in judge agent \
         response; it answered: The answer is wrong, I would give it 0.1."
    );
    assert_eq!(grade(2)["status"], "error");
    assert_eq!(
        grade(2)["rationale"],
        "Error during agent judge grading: Failed to parse submit_grade tool call arguments: \
         could not convert string to float: 'high'"
    );
    assert_eq!(
        (grade(3)["score"].as_f64(), grade(3)["status"].as_str()),
        (Some(1.0), Some("pass")),
        "a score above 1 is clamped, as letta-evals' Letta judge clamped it"
    );

    // Replies that gave a grade come from the cache on a second run; the two without one are
    // asked again.
    let again = gavel(&ws, &["run", "suite.yaml", "-o", "again"], &key).await;
    assert_eq!(again.status.code(), Some(0), "stderr: {}", stderr(&again));
    assert_eq!(server.request_count(), 6);
}

/// The suite's `model:` and `temperature:` override the agent's, and a tool rule that obliges
/// the agent to call its grading tool forces the call; a tool named by `judge_tool_name` is the
/// one offered.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn suite_settings_and_tool_rules_shape_the_request() {
    let (server, ws, mut agent_file) =
        always_calling("verdict", r#"{"score": 0.25, "rationale": "thin"}"#).await;
    agent_file["agents"][0]["llm_config"]["model"] = Value::Null;
    agent_file["agents"][0]["tool_rules"] =
        json!([{"tool_name": "verdict", "type": "required_before_exit"}]);
    let tools = agent_file["tools"].as_array_mut().expect("tools");
    for tool in tools {
        if tool["name"] == "submit_grade" {
            tool["name"] = json!("verdict");
        }
    }
    ws.write("judge.af", &agent_file.to_string());
    let suite = SUITE.replace("BASE_URL", &server.base_url()).replace(
        "    extractor: last_assistant\n",
        "    extractor: last_assistant\n    judge_tool_name: verdict\n    model: judge-x\n    temperature: 0.2\n",
    );
    ws.write("suite.yaml", &suite);
    ws.write_rows("data.jsonl", &[judged_row("paris", "It is Paris.")]);

    let run = gavel(
        &ws,
        &["run", "suite.yaml", "-o", "out"],
        &[("OPENAI_API_KEY", KEY)],
    )
    .await;
    assert_eq!(run.status.code(), Some(0), "stderr: {}", stderr(&run));
    let body = server.requests()[0].json();
    assert_eq!(body["model"], "judge-x");
    assert_eq!(body["temperature"], 0.2);
    assert_eq!(body["tools"][0]["function"]["name"], "verdict");
    assert_eq!(
        body["tool_choice"],
        json!({"type": "function", "function": {"name": "verdict"}})
    );
    let grade = &ws.results("out")[0]["grades"]["agent_judge"];
    assert_eq!(
        (grade["score"].as_f64(), grade["status"].as_str()),
        (Some(0.25), Some("fail"))
    );
    assert_eq!(grade["metadata"]["model"], "judge-x");
}

/// Every mistake in an agent file, and a judge agent named by `agent_id`, stops `gavel
/// validate` (which needs no API key) and `gavel run` at the suite's line, before any request.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn agent_file_mistakes_stop_the_binary_before_any_request() {
    let (server, ws, example) =
        always_calling("submit_grade", r#"{"score": 1, "rationale": "ok"}"#).await;
    let suite = SUITE.replace("BASE_URL", &server.base_url());
    ws.write("suite.yaml", &suite);
    ws.write_rows("data.jsonl", &[judged_row("paris", "It is Paris.")]);

    let validated = gavel(&ws, &["validate", "suite.yaml"], &[]).await;
    assert!(
        validated.status.success(),
        "a good agent file validates without a key: {}",
        stderr(&validated)
    );

    let at_agent_file = "suite.yaml:6:17: graders.agent_judge.agent_file: judge.af: ";

    let mut no_model = example.clone();
    no_model["agents"][0]["llm_config"]
        .as_object_mut()
        .expect("llm_config")
        .remove("model");
    let mut no_tool = example.clone();
    no_tool["tools"]
        .as_array_mut()
        .expect("tools")
        .retain(|tool| tool["name"] != "submit_grade");
    let mut two_agents = example.clone();
    let agent = two_agents["agents"][0].clone();
    two_agents["agents"]
        .as_array_mut()
        .expect("agents")
        .push(agent);
    let files: [(String, &str); 5] = [
        (
            "{\"agents\": [".into(),
            "the agent file is not valid JSON: EOF while parsing",
        ),
        (
            json!({"agents": [], "tools": []}).to_string(),
            "holds no agent",
        ),
        (
            two_agents.to_string(),
            "holds 2 agents (fetch-webpage-judge-agent, fetch-webpage-judge-agent)",
        ),
        (
            no_tool.to_string(),
            "agent `fetch-webpage-judge-agent` has no `submit_grade` tool (its tools: \
             fetch_webpage)",
        ),
        (
            no_model.to_string(),
            "the agent names no model (agents[0].llm_config.model)",
        ),
    ];
    for (text, wanted) in files {
        ws.write("judge.af", &text);
        refused(&ws, &[at_agent_file, wanted]).await;
    }
    ws.write("judge.af", &example.to_string());

    let cases: [(&str, &str, &[&str]); 4] = [
        (
            "judge.af",
            "judges/missing.af",
            &[
                "suite.yaml:6:17: graders.agent_judge.agent_file: judges/missing.af: cannot read \
                 the agent file",
                "relative to the suite's folder",
            ],
        ),
        (
            "agent_file: judge.af",
            "agent_id: agent-1234",
            &[
                "suite.yaml:6:15: graders.agent_judge.agent_id: gavel grades offline",
                "'agent-1234'",
                "export the judge agent from Letta as an agent file (.af) and give its path as \
                 agent_file",
            ],
        ),
        (
            "    base_url:",
            "    provider: anthropic\n    base_url:",
            &["graders.agent_judge.provider: an agent_file judge calls its grading tool"],
        ),
        // letta-evals' old kind is pointed at gavel's.
        (
            "kind: rubric",
            "kind: letta_judge",
            &[
                "suite.yaml:5:11: graders.agent_judge.kind: unknown variant `letta_judge`",
                "did you mean `rubric`?",
            ],
        ),
    ];
    for (from, to, wanted) in cases {
        ws.write("suite.yaml", &suite.replace(from, to));
        refused(&ws, wanted).await;
    }

    // `gavel run` refuses as `validate` does.
    ws.write(
        "suite.yaml",
        &suite.replace("judge.af", "judges/missing.af"),
    );
    let run = gavel(
        &ws,
        &["run", "suite.yaml", "-o", "out"],
        &[("OPENAI_API_KEY", KEY)],
    )
    .await;
    assert_eq!(run.status.code(), Some(2));
    assert!(
        stderr(&run).contains("judges/missing.af: cannot read the agent file"),
        "{}",
        stderr(&run)
    );

    assert_eq!(
        server.request_count(),
        0,
        "no request before the checks pass"
    );
}

/// `gavel validate suite.yaml`, without an API key, exits 2 with every part of `wanted` said.
async fn refused(ws: &Workspace, wanted: &[&str]) {
    let output = gavel(ws, &["validate", "suite.yaml"], &[]).await;
    assert_eq!(output.status.code(), Some(2), "{}", stderr(&output));
    let message = stderr(&output);
    for part in wanted {
        assert!(message.contains(part), "{part:?} not in: {message}");
    }
}
