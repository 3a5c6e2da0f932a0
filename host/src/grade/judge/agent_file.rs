//! A Letta agent file (`.af`, JSON) as a judge: its one agent's system prompt, model and
//! temperature, and the tool it grades with, read and checked before any sample is graded.
//!
//! letta-evals' Letta judge (removed in 0.26.0) imported the file into a Letta server and took
//! the agent's `submit_grade(score, rationale)` call as the grade. gavel has no server: it
//! offers that one tool to the model over the chat-completions endpoint and reads the call.

use std::path::{Path, PathBuf};

use serde::Deserialize;
use serde_json::{Value, json};

use crate::config::suite::in_plain_words;

/// The tool a judge agent grades with, unless the grader names another (`judge_tool_name`).
pub const DEFAULT_TOOL: &str = "submit_grade";

/// The Letta tool rules that oblige the agent to call a tool: first (`run_first`) or before it
/// ends its turn (`required_before_exit`). In a one-request conversation both force the call.
const FORCING_RULES: [&str; 2] = ["run_first", "required_before_exit"];

/// What gavel reads of an agent file; every other key (memory blocks, messages, sources,
/// embedding settings) is left alone.
#[derive(Deserialize)]
struct File {
    #[serde(default)]
    agents: Option<Vec<Agent>>,
    #[serde(default)]
    tools: Option<Vec<Tool>>,
}

#[derive(Deserialize)]
struct Agent {
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    system: Option<String>,
    #[serde(default)]
    llm_config: Option<LlmConfig>,
    #[serde(default)]
    tool_rules: Option<Vec<ToolRule>>,
}

#[derive(Deserialize)]
struct LlmConfig {
    #[serde(default)]
    model: Option<String>,
    #[serde(default)]
    temperature: Option<f64>,
}

#[derive(Deserialize)]
struct Tool {
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    json_schema: Option<Value>,
}

#[derive(Deserialize)]
struct ToolRule {
    #[serde(default)]
    tool_name: Option<String>,
    #[serde(rename = "type", default)]
    kind: Option<String>,
}

/// The judge an agent file describes.
#[derive(Debug, Clone, PartialEq)]
pub struct JudgeAgent {
    /// The file as the suite resolved it, for the grade's metadata.
    pub path: PathBuf,
    /// The agent's system prompt; `None` when it has none.
    pub system: Option<String>,
    /// `llm_config.model`, when set.
    pub model: Option<String>,
    /// `llm_config.temperature`, when set.
    pub temperature: Option<f64>,
    /// The grading tool's name.
    pub tool_name: String,
    /// The grading tool as a chat-completions function tool.
    pub tool: Value,
    /// Whether the agent's tool rules oblige it to call the grading tool.
    pub forced: bool,
}

/// Why an agent file cannot judge.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{}: {problem}", path.display())]
pub struct AgentFileError {
    pub path: PathBuf,
    pub problem: AgentFileProblem,
}

/// What is wrong with an agent file.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum AgentFileProblem {
    /// The file could not be read; the reason's text.
    #[error("cannot read the agent file: {0} (agent_file is relative to the suite's folder)")]
    Unreadable(String),
    #[error("the agent file is not valid JSON: {0}")]
    NotJson(String),
    #[error("not a Letta agent file: {place}: {message}")]
    NotAgentFile { place: String, message: String },
    #[error(
        "the agent file holds no agent (`agents` is missing or empty); export the judge agent \
         from Letta as a .af file"
    )]
    NoAgent,
    /// The names of the agents the file holds, more than one.
    #[error("the agent file holds {} agents ({}); a judge file holds one agent", .0.len(), .0.join(", "))]
    Agents(Vec<String>),
    #[error(
        "agent `{agent}` has no `{tool}` tool ({}); the judge grades by calling \
         {tool}(score: float, rationale: str)",
        if tools.is_empty() { "the file has no tools".to_string() } else { format!("its tools: {}", tools.join(", ")) }
    )]
    NoTool {
        agent: String,
        tool: String,
        tools: Vec<String>,
    },
    #[error("tools[{index}] (`{tool}`): {problem}")]
    Tool {
        index: usize,
        tool: String,
        problem: ToolProblem,
    },
    #[error(
        "the agent names no model (agents[0].llm_config.model); set it in the file or give the \
         grader a model"
    )]
    NoModel,
}

/// What is wrong with the grading tool of an agent file.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ToolProblem {
    #[error(
        "has no json_schema object, so gavel cannot offer it to the model; export the agent \
         again from Letta, which writes each tool's schema"
    )]
    NoSchema,
    #[error("json_schema.parameters has no `properties` object")]
    NoProperties,
    #[error(
        "json_schema.parameters lacks {}; expected {name}(score: float, rationale: str)",
        missing.iter().map(|p| format!("`{p}`")).collect::<Vec<_>>().join(" and ")
    )]
    Lacks {
        missing: Vec<&'static str>,
        name: String,
    },
}

/// Reads the agent file at `path` and the tool `tool_name` of its agent.
pub fn load(path: &Path, tool_name: &str) -> Result<JudgeAgent, AgentFileError> {
    let error = |problem: AgentFileProblem| AgentFileError {
        path: path.to_path_buf(),
        problem,
    };
    let text = crate::fsio::read_text(path, crate::fsio::cap::DOCUMENT)
        .map_err(|e| error(AgentFileProblem::Unreadable(e.to_string())))?;
    parse(&text, path, tool_name).map_err(error)
}

fn parse(text: &str, path: &Path, tool_name: &str) -> Result<JudgeAgent, AgentFileProblem> {
    let file = read_json(text)?;
    let mut agents = file.agents.unwrap_or_default();
    let agent = match agents.len() {
        1 => agents.remove(0),
        0 => return Err(AgentFileProblem::NoAgent),
        _ => {
            let names = agents
                .iter()
                .map(|a| a.name.as_deref().unwrap_or("(unnamed)").to_string())
                .collect();
            return Err(AgentFileProblem::Agents(names));
        }
    };
    let agent_name = agent.name.as_deref().unwrap_or("(unnamed)");
    let tools = file.tools.unwrap_or_default();
    let Some((index, tool)) = tools
        .iter()
        .enumerate()
        .find(|(_, t)| t.name.as_deref() == Some(tool_name))
    else {
        return Err(AgentFileProblem::NoTool {
            agent: agent_name.to_string(),
            tool: tool_name.to_string(),
            tools: tools.iter().filter_map(|t| t.name.clone()).collect(),
        });
    };
    let tool = function_tool(tool, tool_name).map_err(|problem| AgentFileProblem::Tool {
        index,
        tool: tool_name.to_string(),
        problem,
    })?;
    let forced = agent.tool_rules.iter().flatten().any(|rule| {
        rule.tool_name.as_deref() == Some(tool_name)
            && rule
                .kind
                .as_deref()
                .is_some_and(|kind| FORCING_RULES.contains(&kind))
    });
    let llm_config = agent.llm_config.as_ref();
    Ok(JudgeAgent {
        path: path.to_path_buf(),
        system: agent.system.filter(|s| !s.is_empty()),
        model: llm_config
            .and_then(|c| c.model.clone())
            .filter(|m| !m.trim().is_empty()),
        temperature: llm_config.and_then(|c| c.temperature),
        tool_name: tool_name.to_string(),
        tool,
        forced,
    })
}

/// The file read as JSON, a mistake named by its place in the file.
fn read_json(text: &str) -> Result<File, AgentFileProblem> {
    let mut deserializer = serde_json::Deserializer::from_str(text);
    let file: File = serde_path_to_error::deserialize(&mut deserializer).map_err(|e| {
        let place = e.path().to_string();
        let inner = e.into_inner();
        if inner.is_data() {
            let message = in_plain_words(&inner.to_string());
            AgentFileProblem::NotAgentFile { place, message }
        } else {
            AgentFileProblem::NotJson(inner.to_string())
        }
    })?;
    deserializer
        .end()
        .map_err(|e| AgentFileProblem::NotJson(e.to_string()))?;
    Ok(file)
}

/// The tool's `json_schema` as a chat-completions function tool, once it is known to take
/// `score` and `rationale`.
fn function_tool(tool: &Tool, name: &str) -> Result<Value, ToolProblem> {
    let Some(Value::Object(schema)) = &tool.json_schema else {
        return Err(ToolProblem::NoSchema);
    };
    let parameters = schema.get("parameters").cloned().unwrap_or(Value::Null);
    let Some(properties) = parameters.get("properties").and_then(Value::as_object) else {
        return Err(ToolProblem::NoProperties);
    };
    let missing: Vec<&'static str> = ["score", "rationale"]
        .into_iter()
        .filter(|p| !properties.contains_key(*p))
        .collect();
    if !missing.is_empty() {
        return Err(ToolProblem::Lacks {
            missing,
            name: name.to_string(),
        });
    }
    let mut function = json!({"name": name, "parameters": parameters});
    if let Some(description) = schema.get("description").filter(|d| d.is_string()) {
        function["description"] = description.clone();
    }
    Ok(json!({"type": "function", "function": function}))
}

#[cfg(test)]
mod tests {
    use super::*;

    const EXAMPLE: &str = include_str!("../../../tests/data/letta-judge/web_search_judge.af");

    fn parsed(text: &str) -> Result<JudgeAgent, String> {
        parse(text, Path::new("judge.af"), DEFAULT_TOOL).map_err(|e| e.to_string())
    }

    /// A minimal agent file around `agent` and `tools`.
    fn file(agent: Value, tools: Value) -> String {
        json!({"agents": [agent], "tools": tools}).to_string()
    }

    fn grade_tool() -> Value {
        json!({
            "id": "tool-0",
            "name": "submit_grade",
            "json_schema": {
                "name": "submit_grade",
                "description": "Submit a grade.",
                "parameters": {
                    "type": "object",
                    "properties": {"score": {"type": "number"}, "rationale": {"type": "string"}},
                    "required": ["score", "rationale"],
                },
            },
        })
    }

    #[test]
    fn letta_example_judge_is_read() {
        let agent = parsed(EXAMPLE).expect("the example judge loads");
        assert!(
            agent
                .system
                .as_deref()
                .is_some_and(|s| s.starts_with("<base_instructions>")),
            "{:?}",
            agent.system
        );
        assert_eq!(agent.model.as_deref(), Some("gpt-4o-mini"));
        assert_eq!(agent.temperature, Some(0.7));
        assert!(!agent.forced);
        assert_eq!(agent.tool["type"], "function");
        assert_eq!(agent.tool["function"]["name"], "submit_grade");
        assert_eq!(
            agent.tool["function"]["description"],
            "Submit a grade with a score and rationale."
        );
        assert_eq!(
            agent.tool["function"]["parameters"]["required"],
            json!(["score", "rationale"])
        );
        assert_eq!(
            agent.tool["function"]["parameters"]["properties"]["score"]["maximum"],
            1
        );
    }

    #[test]
    fn tool_rules_that_oblige_the_call_force_it() {
        for (kind, forced) in [
            ("run_first", true),
            ("required_before_exit", true),
            ("exit_loop", false),
        ] {
            let agent = json!({
                "name": "j",
                "llm_config": {"model": "m"},
                "tool_rules": [{"tool_name": "submit_grade", "type": kind}],
            });
            let read = parsed(&file(agent, json!([grade_tool()]))).expect("loads");
            assert_eq!(read.forced, forced, "{kind}");
        }
        let other = json!({
            "name": "j",
            "tool_rules": [{"tool_name": "send_message", "type": "run_first"}],
        });
        assert!(
            !parsed(&file(other, json!([grade_tool()])))
                .expect("loads")
                .forced
        );
    }

    #[test]
    fn nulls_and_missing_settings_are_absent() {
        let agent = json!({"name": "j", "system": "", "llm_config": {"model": null, "temperature": null}, "tool_rules": null});
        let read = parsed(&file(agent, json!([grade_tool()]))).expect("loads");
        assert_eq!(
            (read.system, read.model, read.temperature),
            (None, None, None)
        );
    }

    #[test]
    fn another_tool_name_is_looked_up() {
        let mut tool = grade_tool();
        tool["name"] = json!("verdict");
        let text = file(json!({"name": "j"}), json!([tool]));
        let read = parse(&text, Path::new("judge.af"), "verdict").expect("loads");
        assert_eq!(read.tool["function"]["name"], "verdict");
        assert!(
            parsed(&text).is_err_and(|e| e.contains("no `submit_grade` tool (its tools: verdict)"))
        );
    }

    #[test]
    fn mistakes_are_named() {
        let err = |text: &str| parsed(text).expect_err("refused");
        assert!(
            err("{\"agents\": [").contains("not valid JSON"),
            "{}",
            err("{")
        );
        assert!(err("{} {}").contains("not valid JSON"));
        let typed = err(r#"{"agents": [{"llm_config": {"temperature": "hot"}}]}"#);
        assert!(
            typed.contains("agents[0].llm_config.temperature: invalid type: string \"hot\", expected a number at line 1"),
            "{typed}"
        );
        assert!(err(r#"{"agents": []}"#).contains("holds no agent"));
        assert!(err("{}").contains("holds no agent"));
        let two = err(&json!({"agents": [{"name": "a"}, {"name": "b"}]}).to_string());
        assert!(two.contains("holds 2 agents (a, b)"), "{two}");
        let bare = err(&file(json!({"name": "j"}), json!([])));
        assert!(
            bare.contains("agent `j` has no `submit_grade` tool (the file has no tools)"),
            "{bare}"
        );
        let mut schemaless = grade_tool();
        schemaless["json_schema"] = Value::Null;
        let text = file(json!({"name": "j"}), json!([{"name": "x"}, schemaless]));
        assert!(
            err(&text).starts_with("tools[1] (`submit_grade`): has no json_schema"),
            "{}",
            err(&text)
        );
        let mut scoreless = grade_tool();
        scoreless["json_schema"]["parameters"]["properties"] = json!({"grade": {}});
        let text = file(json!({"name": "j"}), json!([scoreless]));
        assert!(
            err(&text).contains("lacks `score` and `rationale`"),
            "{}",
            err(&text)
        );
    }

    #[test]
    fn an_unreadable_file_says_where_it_was_looked_for() {
        let error = load(Path::new("/nonexistent/judge.af"), DEFAULT_TOOL).expect_err("refused");
        assert_eq!(error.path, Path::new("/nonexistent/judge.af"));
        assert!(
            error
                .to_string()
                .starts_with("/nonexistent/judge.af: cannot read")
        );
    }
}
