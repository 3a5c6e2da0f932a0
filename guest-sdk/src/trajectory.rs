//! The recorded run a grader sees, in gavel's canonical shape, and the extractor helpers.
//!
//! Every recorded format (letta, evaldeck, openai) reaches a pack as the same [`Trajectory`].
//! The helpers on it behave exactly like gavel's built-in extractors of the same name, so a pack
//! that calls `trajectory.last_assistant()` sees what `extractor: last_assistant` would give.

/// A recorded agent run: turns of events, plus what the recording says about the run as a whole.
///
/// ```
/// use gavel_guest::{Content, Event, Trajectory};
///
/// let run = Trajectory {
///     turns: vec![vec![
///         Event::User { content: Content::Text("2+2?".into()) },
///         Event::Assistant { content: Content::Text("4".into()) },
///     ]],
///     ..Trajectory::default()
/// };
/// assert_eq!(run.last_assistant(), "4");
/// assert_eq!(run.final_output().as_deref(), Some("4"));
/// ```
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Trajectory {
    /// Turns in order, each a list of events in order. Formats without turns have one turn.
    pub turns: Vec<Vec<Event>>,
    /// The final output the recording states (evaldeck's `output`), if any.
    pub output: Option<String>,
    /// How the run ended; `Success` for formats that do not record it.
    pub status: RunStatus,
    /// The task given to the agent, where the recording has it.
    pub input: Option<String>,
    /// Wall-clock duration of the run in milliseconds, where recorded.
    pub duration_ms: Option<f64>,
    /// Token usage recorded for the run as a whole, where recorded.
    pub usage: Option<Tokens>,
}

/// One event of a recorded run.
///
/// ```
/// use gavel_guest::{Content, Event};
///
/// let event = Event::Assistant { content: Content::Parts(vec!["a".into(), "b".into()]) };
/// if let Event::Assistant { content } = &event {
///     assert_eq!(content.flatten(), "a b");
/// }
/// ```
#[derive(Debug, Clone, PartialEq)]
pub enum Event {
    /// A system prompt.
    System {
        /// The prompt text.
        text: String,
    },
    /// A user message.
    User {
        /// What the user said.
        content: Content,
    },
    /// An assistant message: what the agent said.
    Assistant {
        /// What the agent said.
        content: Content,
    },
    /// The model's reasoning, where the recording keeps it.
    Reasoning {
        /// The reasoning text.
        text: String,
    },
    /// One tool call. A message carrying several calls arrives as several events.
    ToolCall(ToolCall),
    /// What a tool returned.
    ToolReturn(ToolReturn),
    /// One call of the model (evaldeck records these; letta and openai imply them).
    LlmCall(LlmCall),
    /// Input from a human in the middle of the run.
    HumanInput {
        /// The input, where recorded.
        text: Option<String>,
    },
    /// A message type no built-in reads, kept by name.
    Other {
        /// The recorded type name, e.g. `approval_request_message`.
        kind: String,
    },
}

/// Message content: plain text, or the text of each part of a multi-part message.
///
/// ```
/// use gavel_guest::Content;
///
/// assert_eq!(Content::Text("hi".into()).flatten(), "hi");
/// assert_eq!(Content::Parts(vec!["a".into(), "".into(), "b".into()]).flatten(), "a  b");
/// ```
#[derive(Debug, Clone, PartialEq)]
pub enum Content {
    /// A plain string.
    Text(String),
    /// The text of each part; parts without text (images) are empty strings.
    Parts(Vec<String>),
}

/// One tool call.
///
/// ```
/// use gavel_guest::ToolCall;
///
/// let call = ToolCall { id: "c1".into(), name: "search".into(), arguments: r#"{"q":"x"}"#.into(), failed: false };
/// let args: serde_json::Value = serde_json::from_str(&call.arguments).unwrap();
/// assert_eq!(args["q"], "x");
/// ```
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ToolCall {
    /// The call id; empty when the recording has none.
    pub id: String,
    /// The tool's name, exactly as recorded.
    pub name: String,
    /// The arguments exactly as recorded (JSON text, byte for byte).
    pub arguments: String,
    /// The step itself failed (evaldeck `status: failure`).
    pub failed: bool,
}

/// What a tool returned.
///
/// ```
/// use gavel_guest::{ToolReturn, ToolStatus};
///
/// let ret = ToolReturn { call_id: "c1".into(), content: "42".into(), status: ToolStatus::Success };
/// assert_eq!(ret.status, ToolStatus::Success);
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct ToolReturn {
    /// The id of the call this answers.
    pub call_id: String,
    /// The output as text; a JSON value that is not a string arrives as its JSON text.
    pub content: String,
    /// Whether the tool succeeded.
    pub status: ToolStatus,
}

/// Whether a tool call succeeded.
///
/// ```
/// use gavel_guest::ToolStatus;
///
/// assert_ne!(ToolStatus::Success, ToolStatus::Error);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ToolStatus {
    /// The tool returned normally.
    Success,
    /// The tool reported an error.
    Error,
}

/// One call of the model.
///
/// ```
/// use gavel_guest::{LlmCall, Tokens};
///
/// let call = LlmCall { model: Some("gpt-4o".into()), tokens: Some(Tokens { prompt_tokens: 3, completion_tokens: 2, total_tokens: 5 }), ..LlmCall::default() };
/// assert_eq!(call.tokens.map(|t| t.total_tokens), Some(5));
/// ```
#[derive(Debug, Clone, Default, PartialEq)]
pub struct LlmCall {
    /// The model's name, where recorded.
    pub model: Option<String>,
    /// The prompt, where recorded.
    pub input: Option<String>,
    /// The reply, where recorded.
    pub output: Option<String>,
    /// Token counts, where recorded.
    pub tokens: Option<Tokens>,
}

/// Token counts.
///
/// ```
/// use gavel_guest::Tokens;
///
/// let t = Tokens { prompt_tokens: 10, completion_tokens: 5, total_tokens: 15 };
/// assert_eq!(t.prompt_tokens + t.completion_tokens, t.total_tokens);
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Tokens {
    /// Tokens in the prompt.
    pub prompt_tokens: u64,
    /// Tokens in the completion.
    pub completion_tokens: u64,
    /// Both together, as recorded.
    pub total_tokens: u64,
}

/// How a run ended.
///
/// ```
/// use gavel_guest::RunStatus;
///
/// assert_eq!(RunStatus::default(), RunStatus::Success);
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum RunStatus {
    /// The run finished.
    #[default]
    Success,
    /// The run failed.
    Failure,
    /// The run ran out of time.
    Timeout,
    /// The run hit an error.
    Error,
}

impl Content {
    /// The content as one string: text as is, parts joined with a single space (an empty part
    /// still adds its separator), as letta-evals flattens content.
    ///
    /// ```
    /// use gavel_guest::Content;
    ///
    /// assert_eq!(Content::Parts(vec!["x".into(), "y".into()]).flatten(), "x y");
    /// assert_eq!(Content::Parts(vec![]).flatten(), "");
    /// ```
    pub fn flatten(&self) -> String {
        match self {
            Content::Text(text) => text.clone(),
            Content::Parts(parts) => parts.join(" "),
        }
    }
}

impl Trajectory {
    /// Every event, across turns, in order.
    ///
    /// ```
    /// use gavel_guest::{Event, Trajectory};
    ///
    /// let run = Trajectory { turns: vec![vec![Event::Other { kind: "a".into() }], vec![Event::Other { kind: "b".into() }]], ..Trajectory::default() };
    /// assert_eq!(run.events().count(), 2);
    /// ```
    pub fn events(&self) -> impl DoubleEndedIterator<Item = &Event> + Clone {
        self.turns.iter().flatten()
    }

    /// True when there is no event at all (no turns, or only empty turns). gavel grades an empty
    /// trajectory 0 without calling a letta-style grader.
    ///
    /// ```
    /// use gavel_guest::Trajectory;
    ///
    /// let run = Trajectory { turns: vec![vec![], vec![]], ..Trajectory::default() };
    /// assert!(run.is_empty());
    /// ```
    pub fn is_empty(&self) -> bool {
        self.turns.iter().all(Vec::is_empty)
    }

    /// The contents of the assistant messages, across turns, in order.
    ///
    /// ```
    /// use gavel_guest::{Content, Event, Trajectory};
    ///
    /// let run = Trajectory { turns: vec![vec![
    ///     Event::Assistant { content: Content::Text("a".into()) },
    ///     Event::Reasoning { text: "hmm".into() },
    ///     Event::Assistant { content: Content::Text("b".into()) },
    /// ]], ..Trajectory::default() };
    /// let texts: Vec<String> = run.assistant_messages().map(Content::flatten).collect();
    /// assert_eq!(texts, ["a", "b"]);
    /// ```
    pub fn assistant_messages(&self) -> impl DoubleEndedIterator<Item = &Content> + Clone {
        self.events().filter_map(|event| match event {
            Event::Assistant { content } => Some(content),
            _ => None,
        })
    }

    /// The tool calls, in order.
    ///
    /// ```
    /// use gavel_guest::{Event, ToolCall, Trajectory};
    ///
    /// let call = ToolCall { name: "search".into(), ..ToolCall::default() };
    /// let run = Trajectory { turns: vec![vec![Event::ToolCall(call)]], ..Trajectory::default() };
    /// assert_eq!(run.tool_calls().next().map(|c| c.name.as_str()), Some("search"));
    /// ```
    pub fn tool_calls(&self) -> impl DoubleEndedIterator<Item = &ToolCall> + Clone {
        self.events().filter_map(|event| match event {
            Event::ToolCall(call) => Some(call),
            _ => None,
        })
    }

    /// The model calls, in order.
    ///
    /// ```
    /// use gavel_guest::{Event, LlmCall, Trajectory};
    ///
    /// let run = Trajectory { turns: vec![vec![Event::LlmCall(LlmCall::default())]], ..Trajectory::default() };
    /// assert_eq!(run.llm_calls().count(), 1);
    /// ```
    pub fn llm_calls(&self) -> impl DoubleEndedIterator<Item = &LlmCall> + Clone {
        self.events().filter_map(|event| match event {
            Event::LlmCall(call) => Some(call),
            _ => None,
        })
    }

    /// The built-in extractor `last_assistant`: the last assistant message anywhere in the run
    /// (not only in the last turn), flattened; `""` when there is none.
    ///
    /// ```
    /// use gavel_guest::{Content, Event, Trajectory};
    ///
    /// let run = Trajectory { turns: vec![
    ///     vec![Event::Assistant { content: Content::Text("earlier".into()) }],
    ///     vec![Event::User { content: Content::Text("and?".into()) }],
    /// ], ..Trajectory::default() };
    /// assert_eq!(run.last_assistant(), "earlier");
    /// ```
    pub fn last_assistant(&self) -> String {
        self.assistant_messages()
            .next_back()
            .map(Content::flatten)
            .unwrap_or_default()
    }

    /// The built-in extractor `first_assistant`: the first assistant message, flattened; `""`
    /// when there is none.
    ///
    /// ```
    /// use gavel_guest::{Content, Event, Trajectory};
    ///
    /// let run = Trajectory { turns: vec![vec![
    ///     Event::Assistant { content: Content::Text("first".into()) },
    ///     Event::Assistant { content: Content::Text("second".into()) },
    /// ]], ..Trajectory::default() };
    /// assert_eq!(run.first_assistant(), "first");
    /// ```
    pub fn first_assistant(&self) -> String {
        self.assistant_messages()
            .next()
            .map(Content::flatten)
            .unwrap_or_default()
    }

    /// The built-in extractor `all_assistant`: every assistant message, flattened, joined with
    /// `separator` (the built-in's default is `"\n"`). Empty messages still add a separator.
    ///
    /// ```
    /// use gavel_guest::{Content, Event, Trajectory};
    ///
    /// let run = Trajectory { turns: vec![
    ///     vec![Event::Assistant { content: Content::Text("".into()) }],
    ///     vec![Event::Assistant { content: Content::Text("x".into()) }],
    /// ], ..Trajectory::default() };
    /// assert_eq!(run.all_assistant("\n"), "\nx");
    /// ```
    pub fn all_assistant(&self, separator: &str) -> String {
        join_assistant(self.assistant_messages(), separator)
    }

    /// The built-in extractor `last_turn`: the assistant messages of the final turn only,
    /// joined with `separator`; `""` when the final turn has none (no fallback to earlier turns).
    ///
    /// ```
    /// use gavel_guest::{Content, Event, Trajectory};
    ///
    /// let run = Trajectory { turns: vec![
    ///     vec![Event::Assistant { content: Content::Text("old".into()) }],
    ///     vec![Event::Assistant { content: Content::Text("a".into()) },
    ///          Event::Assistant { content: Content::Text("b".into()) }],
    /// ], ..Trajectory::default() };
    /// assert_eq!(run.last_turn(" | "), "a | b");
    /// ```
    pub fn last_turn(&self, separator: &str) -> String {
        let Some(turn) = self.turns.last() else {
            return String::new();
        };
        let messages = turn.iter().filter_map(|event| match event {
            Event::Assistant { content } => Some(content),
            _ => None,
        });
        join_assistant(messages, separator)
    }

    /// The built-in extractor `tool_arguments`: the raw argument text of the first call to
    /// `tool_name` (exact, case-sensitive name), byte for byte; the literal `"{}"` when the tool
    /// was never called.
    ///
    /// ```
    /// use gavel_guest::{Event, ToolCall, Trajectory};
    ///
    /// let call = ToolCall { name: "search".into(), arguments: r#"{ "q": "pandas" }"#.into(), ..ToolCall::default() };
    /// let run = Trajectory { turns: vec![vec![Event::ToolCall(call)]], ..Trajectory::default() };
    /// assert_eq!(run.tool_arguments("search"), r#"{ "q": "pandas" }"#);
    /// assert_eq!(run.tool_arguments("Search"), "{}");
    /// ```
    pub fn tool_arguments(&self, tool_name: &str) -> String {
        self.first_call(tool_name)
            .map_or_else(|| "{}".to_string(), |call| call.arguments.clone())
    }

    /// The built-in extractor `tool_output`: what the first call to `tool_name` returned. The
    /// return is found by the call's id anywhere in the run; `""` when the tool was never
    /// called, the call has no id, or nothing answered it.
    ///
    /// ```
    /// use gavel_guest::{Event, ToolCall, ToolReturn, ToolStatus, Trajectory};
    ///
    /// let run = Trajectory { turns: vec![vec![
    ///     Event::ToolCall(ToolCall { id: "c1".into(), name: "calc".into(), ..ToolCall::default() }),
    ///     Event::ToolReturn(ToolReturn { call_id: "c1".into(), content: "42".into(), status: ToolStatus::Success }),
    /// ]], ..Trajectory::default() };
    /// assert_eq!(run.tool_output("calc"), "42");
    /// assert_eq!(run.tool_output("search"), "");
    /// ```
    pub fn tool_output(&self, tool_name: &str) -> String {
        let Some(call) = self
            .first_call(tool_name)
            .filter(|call| !call.id.is_empty())
        else {
            return String::new();
        };
        self.events()
            .find_map(|event| match event {
                Event::ToolReturn(ret) if ret.call_id == call.id => Some(ret.content.clone()),
                _ => None,
            })
            .unwrap_or_default()
    }

    /// The built-in extractor `after_marker`: walking the assistant messages from last to first,
    /// the text after the first occurrence of `marker` in the first message that has it (from
    /// the marker on when `include_marker`), with surrounding whitespace removed as Python's
    /// `str.strip()` does; `""` when no message has the marker.
    ///
    /// ```
    /// use gavel_guest::{Content, Event, Trajectory};
    ///
    /// let run = Trajectory { turns: vec![vec![
    ///     Event::Assistant { content: Content::Text("Thinking...\nANSWER:  Paris \n".into()) },
    /// ]], ..Trajectory::default() };
    /// assert_eq!(run.after_marker("ANSWER:", false), "Paris");
    /// assert_eq!(run.after_marker("ANSWER:", true), "ANSWER:  Paris");
    /// ```
    pub fn after_marker(&self, marker: &str, include_marker: bool) -> String {
        self.assistant_messages()
            .rev()
            .find_map(|content| {
                let text = content.flatten();
                let at = text.find(marker)?;
                let start = if include_marker {
                    at
                } else {
                    at + marker.len()
                };
                Some(python_strip(&text[start..]).to_string())
            })
            .unwrap_or_default()
    }

    /// evaldeck's `tools_called`: the names of the tool calls in order, duplicates kept, calls
    /// without a name left out.
    ///
    /// ```
    /// use gavel_guest::{Event, ToolCall, Trajectory};
    ///
    /// let call = |name: &str| Event::ToolCall(ToolCall { name: name.into(), ..ToolCall::default() });
    /// let run = Trajectory { turns: vec![vec![call("search"), call(""), call("search")]], ..Trajectory::default() };
    /// assert_eq!(run.tools_called(), ["search", "search"]);
    /// ```
    pub fn tools_called(&self) -> Vec<&str> {
        self.tool_calls()
            .map(|call| call.name.as_str())
            .filter(|name| !name.is_empty())
            .collect()
    }

    /// The run's final output: the recorded one, else the last assistant message, flattened.
    ///
    /// ```
    /// use gavel_guest::Trajectory;
    ///
    /// let run = Trajectory { output: Some("done".into()), ..Trajectory::default() };
    /// assert_eq!(run.final_output().as_deref(), Some("done"));
    /// assert_eq!(Trajectory::default().final_output(), None);
    /// ```
    pub fn final_output(&self) -> Option<String> {
        self.output
            .clone()
            .or_else(|| self.assistant_messages().next_back().map(Content::flatten))
    }

    /// evaldeck's `step_count`: model calls, tool calls, reasoning and human input.
    ///
    /// ```
    /// use gavel_guest::{Content, Event, LlmCall, Trajectory};
    ///
    /// let run = Trajectory { turns: vec![vec![
    ///     Event::LlmCall(LlmCall::default()),
    ///     Event::Reasoning { text: "plan".into() },
    ///     Event::Assistant { content: Content::Text("hi".into()) },
    /// ]], ..Trajectory::default() };
    /// assert_eq!(run.step_count(), 2);
    /// ```
    pub fn step_count(&self) -> usize {
        self.events()
            .filter(|event| {
                matches!(
                    event,
                    Event::LlmCall(_)
                        | Event::ToolCall(_)
                        | Event::Reasoning { .. }
                        | Event::HumanInput { .. }
                )
            })
            .count()
    }

    /// evaldeck's `total_tokens`: the sum of `total_tokens` over the model calls, or the
    /// run-level usage when no call records any.
    ///
    /// ```
    /// use gavel_guest::{Event, LlmCall, Tokens, Trajectory};
    ///
    /// let used = |n| Event::LlmCall(LlmCall { tokens: Some(Tokens { total_tokens: n, ..Tokens::default() }), ..LlmCall::default() });
    /// let run = Trajectory { turns: vec![vec![used(120), used(80)]], ..Trajectory::default() };
    /// assert_eq!(run.total_tokens(), 200);
    ///
    /// let run = Trajectory { usage: Some(Tokens { total_tokens: 7, ..Tokens::default() }), ..Trajectory::default() };
    /// assert_eq!(run.total_tokens(), 7);
    /// ```
    pub fn total_tokens(&self) -> u64 {
        let from_calls: u64 = self
            .llm_calls()
            .filter_map(|call| call.tokens.map(|t| t.total_tokens))
            .sum();
        if from_calls == 0 {
            self.usage.map_or(0, |usage| usage.total_tokens)
        } else {
            from_calls
        }
    }

    fn first_call(&self, tool_name: &str) -> Option<&ToolCall> {
        self.tool_calls().find(|call| call.name == tool_name)
    }
}

fn join_assistant<'a>(messages: impl Iterator<Item = &'a Content>, separator: &str) -> String {
    messages
        .map(Content::flatten)
        .collect::<Vec<_>>()
        .join(separator)
}

/// Python's `str.strip()`: Rust's whitespace plus the separators U+001C..U+001F, which Python's
/// `isspace()` counts and Rust does not.
pub(crate) fn python_strip(text: &str) -> &str {
    text.trim_matches(|c: char| c.is_whitespace() || ('\u{1c}'..='\u{1f}').contains(&c))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn say(text: &str) -> Event {
        Event::Assistant {
            content: Content::Text(text.to_string()),
        }
    }

    fn call(id: &str, name: &str, arguments: &str) -> Event {
        Event::ToolCall(ToolCall {
            id: id.to_string(),
            name: name.to_string(),
            arguments: arguments.to_string(),
            failed: false,
        })
    }

    fn ret(call_id: &str, content: &str) -> Event {
        Event::ToolReturn(ToolReturn {
            call_id: call_id.to_string(),
            content: content.to_string(),
            status: ToolStatus::Error,
        })
    }

    fn run(turns: Vec<Vec<Event>>) -> Trajectory {
        Trajectory {
            turns,
            ..Trajectory::default()
        }
    }

    #[test]
    fn assistant_extractors_on_an_empty_run_give_empty_text() {
        let empty = run(vec![vec![], vec![]]);
        assert!(empty.is_empty());
        assert_eq!(empty.last_assistant(), "");
        assert_eq!(empty.first_assistant(), "");
        assert_eq!(empty.all_assistant("\n"), "");
        assert_eq!(empty.last_turn("\n"), "");
        assert_eq!(run(vec![]).last_turn("\n"), "");
        assert_eq!(empty.after_marker("", false), "");
    }

    #[test]
    fn last_turn_does_not_fall_back_to_earlier_turns() {
        let t = run(vec![
            vec![say("a")],
            vec![Event::Reasoning { text: "r".into() }],
        ]);
        assert_eq!(t.last_turn("\n"), "");
        assert_eq!(t.last_assistant(), "a");
    }

    #[test]
    fn parts_are_flattened_with_single_spaces_before_joining() {
        let t = run(vec![vec![
            Event::Assistant {
                content: Content::Parts(vec!["a".into(), "".into(), "b".into()]),
            },
            say("c"),
        ]]);
        assert_eq!(t.all_assistant("|"), "a  b|c");
        assert_eq!(t.first_assistant(), "a  b");
    }

    #[test]
    fn tool_arguments_take_the_first_matching_call_verbatim() {
        let t = run(vec![
            vec![call("1", "other", "{\"x\":1}")],
            vec![
                call("2", "calc", "{ \"b\":2,  \"a\":1 }"),
                call("3", "calc", "{}"),
            ],
        ]);
        assert_eq!(t.tool_arguments("calc"), "{ \"b\":2,  \"a\":1 }");
        assert_eq!(t.tool_arguments("CALC"), "{}");
    }

    #[test]
    fn tool_output_follows_the_first_call_id_anywhere_in_the_run() {
        // The return may come before the call, and its error status does not matter.
        let t = run(vec![
            vec![ret("2", "early")],
            vec![
                call("2", "calc", "{}"),
                call("3", "calc", "{}"),
                ret("3", "late"),
            ],
        ]);
        assert_eq!(t.tool_output("calc"), "early");

        // Only the first call counts, even if a later one has a return.
        let t = run(vec![vec![
            call("1", "calc", "{}"),
            call("2", "calc", "{}"),
            ret("2", "second"),
        ]]);
        assert_eq!(t.tool_output("calc"), "");

        // A call without an id has no output.
        let t = run(vec![vec![call("", "calc", "{}"), ret("", "x")]]);
        assert_eq!(t.tool_output("calc"), "");
    }

    #[test]
    fn after_marker_walks_back_and_strips_like_python() {
        let t = run(vec![vec![
            say("ANSWER: old"),
            say("no marker here"),
            say("x ANSWER:\u{1f} new\u{a0}\n ANSWER: again"),
        ]]);
        assert_eq!(
            t.after_marker("ANSWER:", false),
            "new\u{a0}\n ANSWER: again"
        );
        assert_eq!(
            t.after_marker("ANSWER:", true),
            "ANSWER:\u{1f} new\u{a0}\n ANSWER: again"
        );
        assert_eq!(
            t.after_marker("", false),
            "x ANSWER:\u{1f} new\u{a0}\n ANSWER: again"
        );
        assert_eq!(t.after_marker("answer:", false), "");
        // U+200B is not whitespace for Python either.
        assert_eq!(python_strip("\u{200b} a \u{3000}"), "\u{200b} a");
    }

    #[test]
    fn evaldeck_counters() {
        let tokens = |n| Tokens {
            total_tokens: n,
            ..Tokens::default()
        };
        let t = Trajectory {
            turns: vec![vec![
                Event::LlmCall(LlmCall {
                    tokens: Some(tokens(0)),
                    ..LlmCall::default()
                }),
                call("1", "search", "{}"),
                Event::HumanInput { text: None },
                say("done"),
                Event::Other {
                    kind: "system_alert".into(),
                },
            ]],
            usage: Some(tokens(99)),
            ..Trajectory::default()
        };
        assert_eq!(t.step_count(), 3);
        // Calls that record zero tokens fall back to the run-level usage.
        assert_eq!(t.total_tokens(), 99);
        assert_eq!(t.tools_called(), ["search"]);
        assert_eq!(t.final_output().as_deref(), Some("done"));
    }
}
