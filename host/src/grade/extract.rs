//! Built-in extractors with letta-evals' exact semantics.
//!
//! An extractor picks the text a grader judges (the submission) out of a trajectory. Every
//! assistant-based extractor flattens list content by joining its parts with one space, looks at
//! assistant messages across all turns, and trims nothing unless stated.

use serde_json::{Map, Value};

use crate::grade::builtin::Described;
use crate::grade::config::{ConfigError, ConfigKeys};
use crate::grade::python::{self, Findall, Regex, RegexError};
use crate::input::sample::Sample;
use crate::input::trajectory::{Content, Event, Trajectory};

/// One of letta-evals' nine built-in extractors, with its configuration checked. Equal
/// extractors extract the same submission from the same sample.
#[derive(Debug, Clone, PartialEq)]
pub enum Extractor {
    LastAssistant,
    FirstAssistant,
    AllAssistant {
        separator: String,
    },
    LastTurn {
        separator: String,
    },
    Pattern {
        regex: Regex,
        group: Group,
        search_all: bool,
    },
    ToolArguments {
        tool_name: String,
    },
    ToolOutput {
        tool_name: String,
    },
    AfterMarker {
        marker: String,
        include_marker: bool,
    },
    MemoryBlock {
        block_label: String,
    },
}

/// The `group` of the `pattern` extractor: a number, or a `(?P<name>...)` group's name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Group {
    Index(i64),
    Name(String),
}

const DEFAULT_SEPARATOR: &str = "\n";
/// What `tool_arguments` returns when no call matches: non-empty, so a grader still runs.
const NO_ARGUMENTS: &str = "{}";

/// An extractor as the registry holds it: its name and `gavel list` line, the keys its
/// `extractor_config` may hold, and how it is made from them.
pub struct Registered {
    pub described: Described,
    parameters: &'static [&'static str],
    make: fn(&ConfigKeys<'_>) -> Result<Extractor, ConfigError>,
}

/// Every built-in extractor, in the order `gavel list` lists them: adding one is a variant of
/// [`Extractor`], its entry here and its arm in [`Extractor::extract`].
pub const EXTRACTORS: &[Registered] = &[
    Registered {
        described: Described {
            name: "last_assistant",
            description: "the last assistant message anywhere in the trajectory",
        },
        parameters: &[],
        make: |_| Ok(Extractor::LastAssistant),
    },
    Registered {
        described: Described {
            name: "first_assistant",
            description: "the first assistant message",
        },
        parameters: &[],
        make: |_| Ok(Extractor::FirstAssistant),
    },
    Registered {
        described: Described {
            name: "all_assistant",
            description: "every assistant message, joined by `separator` (default newline)",
        },
        parameters: &["separator"],
        make: |keys| {
            Ok(Extractor::AllAssistant {
                separator: separator(keys)?,
            })
        },
    },
    Registered {
        described: Described {
            name: "last_turn",
            description: "the assistant messages of the final turn, joined by `separator`",
        },
        parameters: &["separator"],
        make: |keys| {
            Ok(Extractor::LastTurn {
                separator: separator(keys)?,
            })
        },
    },
    Registered {
        described: Described {
            name: "pattern",
            description: "a regex match (`pattern`, `group`, `search_all`) in the latest assistant message that matches",
        },
        parameters: &["pattern", "group", "search_all"],
        make: pattern,
    },
    Registered {
        described: Described {
            name: "tool_arguments",
            description: "the raw JSON arguments of the first call to `tool_name` (\"{}\" if none)",
        },
        parameters: &["tool_name"],
        make: |keys| {
            Ok(Extractor::ToolArguments {
                tool_name: keys.required_string("tool_name")?,
            })
        },
    },
    Registered {
        described: Described {
            name: "tool_output",
            description: "the return value of the first call to `tool_name`",
        },
        parameters: &["tool_name"],
        make: |keys| {
            Ok(Extractor::ToolOutput {
                tool_name: keys.required_string("tool_name")?,
            })
        },
    },
    Registered {
        described: Described {
            name: "after_marker",
            description: "the text after `marker` in the latest assistant message holding it, stripped",
        },
        parameters: &["marker", "include_marker"],
        make: |keys| {
            Ok(Extractor::AfterMarker {
                marker: keys.required_string("marker")?,
                include_marker: keys.bool("include_marker")?.unwrap_or(false),
            })
        },
    },
    Registered {
        described: Described {
            name: "memory_block",
            description: "the value of the agent memory block labelled `block_label`",
        },
        parameters: &["block_label"],
        make: |keys| {
            let block_label = keys.required_string("block_label")?;
            if block_label.is_empty() {
                return Err(ConfigError::new(
                    "block_label",
                    "must name a memory block (for example `human`)",
                ));
            }
            Ok(Extractor::MemoryBlock { block_label })
        },
    },
];

/// The `separator` of `all_assistant` and `last_turn`.
fn separator(keys: &ConfigKeys<'_>) -> Result<String, ConfigError> {
    Ok(keys
        .string("separator")?
        .unwrap_or_else(|| DEFAULT_SEPARATOR.to_string()))
}

/// The `pattern` extractor, its regex compiled and its group read.
fn pattern(keys: &ConfigKeys<'_>) -> Result<Extractor, ConfigError> {
    let pattern = keys.required_string("pattern")?;
    let regex = Regex::new(&pattern, 0)
        .map_err(|e| ConfigError::new("pattern", format!("invalid regex: {e}")))?;
    let group = match keys.get("group") {
        None => Group::Index(0),
        Some(Value::Number(n)) if let Some(i) = n.as_i64() => Group::Index(i),
        Some(Value::String(name)) => Group::Name(name.clone()),
        Some(_) => {
            return Err(ConfigError::new(
                "group",
                "must be a group number (0 = the whole match) or a group name",
            ));
        }
    };
    Ok(Extractor::Pattern {
        regex,
        group,
        search_all: keys.bool("search_all")?.unwrap_or(false),
    })
}

impl Extractor {
    /// The built-in extractor `name` with its `extractor_config`; `Ok(None)` when `name` is not
    /// a built-in.
    pub fn new(name: &str, config: &Map<String, Value>) -> Result<Option<Extractor>, ConfigError> {
        let Some(registered) = EXTRACTORS.iter().find(|e| e.described.name == name) else {
            return Ok(None);
        };
        let keys = ConfigKeys::new(config, registered.parameters)?;
        (registered.make)(&keys).map(Some)
    }

    /// Whether the extractor reads the agent's memory (`agent_state`) rather than messages.
    pub fn needs_agent_state(&self) -> bool {
        matches!(self, Extractor::MemoryBlock { .. })
    }

    /// The submission. `Ok(None)` where letta-evals returns `None` (an optional regex group that
    /// did not take part), which graders treat as an empty submission; `Err` where letta-evals
    /// raises while extracting.
    pub fn extract(
        &self,
        sample: &Sample<'_>,
        trajectory: &Trajectory<'_>,
    ) -> Result<Option<String>, ExtractError> {
        let assistant = || trajectory.assistant_messages().map(Content::flatten);
        Ok(Some(match self {
            Extractor::LastAssistant => assistant().next_back().unwrap_or_default().into_owned(),
            Extractor::FirstAssistant => assistant().next().unwrap_or_default().into_owned(),
            Extractor::AllAssistant { separator } => {
                assistant().collect::<Vec<_>>().join(separator)
            }
            Extractor::LastTurn { separator } => trajectory
                .turns
                .last()
                .into_iter()
                .flatten()
                .filter_map(|event| match event {
                    Event::Assistant { content } => Some(content.flatten()),
                    _ => None,
                })
                .collect::<Vec<_>>()
                .join(separator),
            Extractor::Pattern {
                regex,
                group,
                search_all,
            } => {
                for content in assistant().rev() {
                    let found = if *search_all {
                        find_all(regex, group, &content)
                    } else {
                        search(regex, group, &content).map_err(PatternError::from)
                    };
                    match found.map_err(ExtractError::Pattern)? {
                        Found::Nothing => continue,
                        Found::Text(text) => return Ok(text),
                    }
                }
                String::new()
            }
            Extractor::ToolArguments { tool_name } => trajectory
                .tool_calls()
                .find(|call| call.name == *tool_name)
                .map_or_else(
                    || NO_ARGUMENTS.to_string(),
                    |call| call.arguments.to_string(),
                ),
            Extractor::ToolOutput { tool_name } => {
                // An empty call id counts as "not found", and the search goes on.
                let id = trajectory
                    .tool_calls()
                    .find(|call| call.name == *tool_name && !call.id.is_empty())
                    .map(|call| &*call.id);
                id.and_then(|id| {
                    trajectory.events().find_map(|event| match event {
                        Event::ToolReturn(ret) if ret.call_id == id => {
                            Some(ret.content.to_string())
                        }
                        _ => None,
                    })
                })
                .unwrap_or_default()
            }
            Extractor::AfterMarker {
                marker,
                include_marker,
            } => assistant()
                .rev()
                .find_map(|content| {
                    let at = content.find(marker.as_str())?;
                    let from = if *include_marker {
                        at
                    } else {
                        at + marker.len()
                    };
                    Some(python::strip(&content[from..]).to_string())
                })
                .unwrap_or_default(),
            Extractor::MemoryBlock { block_label } => {
                let state = sample
                    .agent_state
                    .as_ref()
                    .ok_or(ExtractError::NoAgentState)?;
                state
                    .blocks
                    .iter()
                    .find(|block| block.label == *block_label)
                    .map(|block| block.value.clone())
                    .unwrap_or_default()
            }
        }))
    }
}

/// Why an extractor raised where letta-evals' raises.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ExtractError {
    #[error("pattern extractor: {0}")]
    Pattern(PatternError),
    #[error("memory_block extractor needs the agent's memory, but the sample has no `agent_state`")]
    NoAgentState,
}

/// Why the `pattern` extractor could not take its group from a match.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum PatternError {
    #[error(transparent)]
    Regex(#[from] RegexError),
    #[error(
        "group {0:?}: with search_all and several groups, `group` must be a position in each \
         match's tuple of groups"
    )]
    NamedGroupInTuples(String),
    #[error(
        "group {index} is out of range for a match with {len} groups (search_all counts groups \
         from 0)"
    )]
    OutOfRange { index: i64, len: i64 },
}

/// What one assistant message gave the `pattern` extractor.
enum Found {
    /// No match: try the previous message.
    Nothing,
    /// The extractor's result (`None` for a group that did not take part).
    Text(Option<String>),
}

/// `re.search(...).group(group)`.
fn search(regex: &Regex, group: &Group, content: &str) -> Result<Found, RegexError> {
    let Some(m) = regex.search(content)? else {
        return Ok(Found::Nothing);
    };
    let text = match group {
        Group::Index(i) => match usize::try_from(*i) {
            Ok(i) => m.group(i)?,
            Err(_) => return Err(RegexError::NoSuchGroup(i.to_string())),
        },
        Group::Name(name) => m.named_group(name)?,
    };
    Ok(Found::Text(text.map(str::to_string)))
}

/// `re.findall`, joined with spaces; with two or more groups, element `group` of each tuple.
fn find_all(regex: &Regex, group: &Group, content: &str) -> Result<Found, PatternError> {
    let found = regex.findall(content)?;
    if found.is_empty() {
        return Ok(Found::Nothing);
    }
    let joined = match found {
        Findall::Texts(texts) => texts.join(" "),
        Findall::Tuples(tuples) => {
            let index = match group {
                Group::Index(i) => *i,
                Group::Name(name) => return Err(PatternError::NamedGroupInTuples(name.clone())),
            };
            tuples
                .iter()
                .map(|tuple| tuple_item(tuple, index))
                .collect::<Result<Vec<_>, _>>()?
                .join(" ")
        }
    };
    Ok(Found::Text(Some(joined)))
}

/// Python tuple indexing (`tuple[index]`, negative counting from the end).
fn tuple_item<'t>(tuple: &[&'t str], index: i64) -> Result<&'t str, PatternError> {
    let len = tuple.len() as i64;
    let at = if index < 0 { index + len } else { index };
    usize::try_from(at)
        .ok()
        .and_then(|at| tuple.get(at).copied())
        .ok_or(PatternError::OutOfRange { index, len })
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::input::sample::{AgentState, MemoryBlock};
    use crate::input::trajectory::{ToolCall, ToolReturn, ToolStatus};
    use serde_json::json;

    fn config(value: Value) -> Map<String, Value> {
        match value {
            Value::Object(map) => map,
            other => panic!("not an object: {other}"),
        }
    }

    fn extractor(name: &str, value: Value) -> Extractor {
        Extractor::new(name, &config(value))
            .expect("valid config")
            .expect("a built-in")
    }

    fn assistant<'a>(text: &'a str) -> Event<'a> {
        Event::Assistant {
            content: Content::Text(text.into()),
        }
    }

    fn call<'a>(id: &'a str, name: &'a str, arguments: &'a str) -> Event<'a> {
        Event::ToolCall(ToolCall {
            id: id.into(),
            name: name.into(),
            arguments: arguments.into(),
            failed: false,
        })
    }

    fn ret<'a>(id: &'a str, content: &'a str) -> Event<'a> {
        Event::ToolReturn(ToolReturn {
            call_id: id.into(),
            json: false,
            content: content.into(),
            status: ToolStatus::Success,
        })
    }

    fn run(e: &Extractor, turns: Vec<Vec<Event>>) -> Result<Option<String>, String> {
        let trajectory = Trajectory {
            turns,
            ..Trajectory::default()
        };
        e.extract(&Sample::default(), &trajectory)
            .map_err(|e| e.to_string())
    }

    #[test]
    fn not_a_builtin_is_none() {
        assert!(Extractor::new("json", &Map::new()).unwrap().is_none());
        assert_eq!(EXTRACTORS.len(), 9);
        for d in EXTRACTORS.iter().map(|e| e.described) {
            let needs = match d.name {
                "pattern" => json!({"pattern": "x"}),
                "tool_arguments" | "tool_output" => json!({"tool_name": "t"}),
                "after_marker" => json!({"marker": "m"}),
                "memory_block" => json!({"block_label": "human"}),
                _ => json!({}),
            };
            assert!(
                Extractor::new(d.name, &config(needs)).unwrap().is_some(),
                "{}",
                d.name
            );
        }
    }

    #[test]
    fn config_errors_name_the_field() {
        let err = |name: &str, value: Value| Extractor::new(name, &config(value)).unwrap_err();
        let e = err("pattern", json!({}));
        assert_eq!(e.field, "pattern");
        assert!(e.message.contains("missing"));
        let e = err("pattern", json!({"pattern": "[x"}));
        assert_eq!(e.field, "pattern");
        assert!(e.message.contains("unterminated character set"), "{e}");
        let e = err("pattern", json!({"pattern": "x", "serch_all": true}));
        assert_eq!(e.field, "serch_all");
        assert!(e.message.contains("`search_all`"), "{e}");
        let e = err("pattern", json!({"pattern": "x", "group": 1.5}));
        assert_eq!(e.field, "group");
        let e = err(
            "after_marker",
            json!({"marker": "m", "include_marker": "yes"}),
        );
        assert_eq!(e.field, "include_marker");
        let e = err("memory_block", json!({"block_label": ""}));
        assert_eq!(e.field, "block_label");
        let e = err("last_assistant", json!({"separator": "x"}));
        assert!(e.message.contains("no configuration"), "{e}");
        let e = err("tool_output", json!({"tool_name": 3}));
        assert!(e.message.contains("must be a string"), "{e}");
    }

    #[test]
    fn null_config_values_take_the_default() {
        let e = extractor("all_assistant", json!({"separator": null}));
        let out = run(&e, vec![vec![assistant("a"), assistant("b")]]);
        assert_eq!(out, Ok(Some("a\nb".into())));
    }

    #[test]
    fn pattern_named_and_negative_groups() {
        let e = extractor("pattern", json!({"pattern": r"(?P<n>\d+)", "group": "n"}));
        assert_eq!(
            run(&e, vec![vec![assistant("x 42")]]),
            Ok(Some("42".into()))
        );
        let e = extractor("pattern", json!({"pattern": r"(\d)", "group": -1}));
        assert!(
            run(&e, vec![vec![assistant("4")]])
                .unwrap_err()
                .contains("no such group")
        );
        let e = extractor(
            "pattern",
            json!({"pattern": r"(\w)=(\d)", "group": -1, "search_all": true}),
        );
        assert_eq!(
            run(&e, vec![vec![assistant("a=1 b=2")]]),
            Ok(Some("1 2".into()))
        );
        let e = extractor(
            "pattern",
            json!({"pattern": r"(\w)=(\d)", "group": 2, "search_all": true}),
        );
        assert!(
            run(&e, vec![vec![assistant("a=1")]])
                .unwrap_err()
                .contains("out of range")
        );
    }

    #[test]
    fn pattern_walks_messages_from_last_to_first() {
        let e = extractor("pattern", json!({"pattern": r"\d+"}));
        let turns = vec![
            vec![assistant("7"), assistant("none")],
            vec![assistant("no")],
        ];
        assert_eq!(run(&e, turns), Ok(Some("7".into())));
        let e = extractor("pattern", json!({"pattern": r"\d+", "search_all": true}));
        let turns = vec![vec![assistant("1 2"), assistant("3")]];
        assert_eq!(run(&e, turns), Ok(Some("3".into())));
    }

    #[test]
    fn tool_output_skips_calls_without_an_id() {
        let e = extractor("tool_output", json!({"tool_name": "search"}));
        let turns = vec![vec![
            call("", "search", "{}"),
            ret("", "never"),
            call("c2", "search", "{}"),
            ret("c2", "second"),
        ]];
        assert_eq!(run(&e, turns), Ok(Some("second".into())));
    }

    #[test]
    fn memory_block_needs_agent_state() {
        let e = extractor("memory_block", json!({"block_label": "human"}));
        assert!(e.needs_agent_state());
        assert!(
            run(&e, vec![vec![assistant("x")]])
                .unwrap_err()
                .contains("agent_state")
        );
        let sample = Sample {
            agent_state: Some(AgentState {
                blocks: vec![MemoryBlock {
                    label: "human".into(),
                    value: " v ".into(),
                }],
            }),
            ..Sample::default()
        };
        assert_eq!(
            e.extract(&sample, &Trajectory::default()),
            Ok(Some(" v ".into()))
        );
        assert!(!extractor("last_assistant", json!({})).needs_agent_state());
    }

    #[test]
    fn after_marker_works_on_multibyte_text() {
        let e = extractor("after_marker", json!({"marker": "→"}));
        assert_eq!(
            run(&e, vec![vec![assistant("é → ü ")]]),
            Ok(Some("ü".into()))
        );
    }
}
