//! Letta recordings, as letta-evals writes them in a results file's `trajectory`: a list of
//! turns, each a list of Letta messages tagged by `message_type`.
//!
//! Every message becomes one event, except a `tool_call_message`, which becomes one
//! [`Event::ToolCall`] per call (its `tool_calls` when non-empty, else its `tool_call`, as
//! letta-evals reads it). Message types no built-in reads (`approval_request_message`,
//! `approval_response_message`, `summary_message`, `event_message`, ...) become
//! [`Event::Other`]; an approval request is not a tool call. `hidden_reasoning_message` is
//! reasoning whose text may be withheld.
//!
//! Letta records no model calls, but each LLM step produced the messages after it, so the
//! converter emits an [`Event::LlmCall`] (no model, no tokens) before the first message of each
//! step:
//! - messages that carry a `step_id` belong to that step: one call per distinct `step_id` among
//!   the reasoning, assistant and tool-call messages of the whole trajectory (the tool return of
//!   a step shares its id and starts nothing);
//! - without a `step_id`, each assistant message and each tool-call message is a step of its own,
//!   and the reasoning messages directly before one belong to the same step. A step never spans
//!   a turn boundary.

use std::borrow::Cow;
use std::collections::HashSet;

use serde::Deserialize;
use serde_json::value::RawValue;

use super::json::{self, Expecting, Field, Object, RawContent, RawJson, Text, Typed, missing};
use super::{
    ConvertError, Converter, Event, Format, LlmCall, ToolCall, ToolReturn, ToolStatus, ToolText,
    Trajectory,
};
use crate::input::fast::scan::{Scanner, Seen};

pub struct LettaConverter;

/// A Letta message with every field any message type carries. Fields whose shape depends on the
/// type are held as `R` says: raw until the type is known on the general path, so that a message
/// no built-in reads never fails on them, or read typed in the one pass over a row.
#[derive(Deserialize)]
#[serde(bound(
    deserialize = "R::Content: Deserialize<'de>, R::Text: Deserialize<'de>, \
                   R::Tool: Deserialize<'de>, R::Calls: Deserialize<'de>"
))]
pub(crate) struct Message<'a, R: Recorded<'a>> {
    #[serde(borrow, default)]
    message_type: Option<Text<'a>>,
    #[serde(borrow, default)]
    step_id: Option<Text<'a>>,
    #[serde(default)]
    content: Option<R::Content>,
    #[serde(default)]
    reasoning: Option<R::Text>,
    #[serde(default)]
    hidden_reasoning: Option<R::Text>,
    /// Read only when `tool_calls` is empty, so raw on both paths, which also keeps a message
    /// small.
    #[serde(borrow, default)]
    tool_call: Option<RawJson<'a>>,
    #[serde(default)]
    tool_calls: Option<R::Calls>,
    #[serde(default)]
    tool_call_id: Option<R::Text>,
    #[serde(default)]
    tool_return: Option<R::Tool>,
    #[serde(default)]
    status: Option<R::Text>,
}

impl<'a, R: Recorded<'a>> Expecting for Message<'a, R> {
    const WHAT: &'static str = "a Letta message object";
}

/// How a [`Message`] holds the fields whose shape depends on its type.
pub(crate) trait Recorded<'a> {
    type Content: Field<'a, RawContent<'a>>;
    type Text: Field<'a, Text<'a>>;
    type Tool: Field<'a, ToolText<'a>>;
    type Calls: Field<'a, Vec<Object<RawToolCall<'a>>>>;
}

/// Raw JSON, parsed when the message type needs it: the general path.
pub(crate) enum Raw {}

impl<'a> Recorded<'a> for Raw {
    type Content = &'a RawValue;
    type Text = &'a RawValue;
    type Tool = &'a RawValue;
    type Calls = &'a RawValue;
}

/// Read typed in the pass over the row (see `input::trajectory::inline`).
pub(crate) enum InPlace {}

impl<'a> Recorded<'a> for InPlace {
    type Content = Typed<RawContent<'a>>;
    type Text = Typed<Text<'a>>;
    type Tool = Typed<ToolText<'a>>;
    type Calls = Typed<Vec<Object<RawToolCall<'a>>>>;
}

impl<'a> Message<'a, InPlace> {
    fn empty() -> Self {
        Message {
            message_type: None,
            step_id: None,
            content: None,
            reasoning: None,
            hidden_reasoning: None,
            tool_call: None,
            tool_calls: None,
            tool_call_id: None,
            tool_return: None,
            status: None,
        }
    }

    /// Read by the [`Scanner`] into `self`, as serde reads it; what a message that does not
    /// read leaves in `self` is of no use.
    fn scan(&mut self, scanner: &mut Scanner<'a>) -> Option<()> {
        *self = Message::empty();
        let mut seen = Seen::default();
        scanner.object(|s, key| {
            let typed = |s: &mut Scanner<'a>| s.nullable(|s| s.text().map(|t| Typed(Text(t))));
            let raw = |s: &mut Scanner<'a>| s.nullable(|s| s.raw().map(RawJson));
            let m = &mut *self;
            match key {
                "message_type" => seen.set(0, &mut m.message_type, Text::scan_nullable(s)),
                "step_id" => seen.set(1, &mut m.step_id, Text::scan_nullable(s)),
                "content" => seen.set(
                    2,
                    &mut m.content,
                    s.nullable(RawContent::scan).map(|c| c.map(Typed)),
                ),
                "reasoning" => seen.set(3, &mut m.reasoning, typed(s)),
                "hidden_reasoning" => seen.set(4, &mut m.hidden_reasoning, typed(s)),
                "tool_call" => seen.set(5, &mut m.tool_call, raw(s)),
                "tool_calls" => {
                    let calls = s.nullable(|s| s.items(|s| RawToolCall::scan(s).map(Object)));
                    seen.set(6, &mut m.tool_calls, calls.map(|c| c.map(Typed)))
                }
                "tool_call_id" => seen.set(7, &mut m.tool_call_id, typed(s)),
                "tool_return" => seen.set(
                    8,
                    &mut m.tool_return,
                    ToolText::scan_nullable(s).map(|t| t.map(Typed)),
                ),
                "status" => seen.set(9, &mut m.status, typed(s)),
                _ => s.skip(),
            }
        })
    }
}

/// A Letta trajectory (a list of turns) read by the [`Scanner`] and converted message by message
/// as it is read, with no list of messages in between: what [`from_turns`] gives for the turns
/// serde reads, its first error included.
pub(crate) fn scan_trajectory<'a>(
    scanner: &mut Scanner<'a>,
) -> Option<Result<Trajectory<'a>, ConvertError>> {
    let mut conversion = Conversion::default();
    let mut failed = None;
    // One message read in place after another: returning each moved it on its way to the
    // conversion.
    let mut message = Message::empty();
    scanner.list(|s| {
        if s.peek()? != b'[' {
            return None;
        }
        conversion.start_turn(8);
        let mut index = 0;
        s.list(|s| {
            message.scan(s)?;
            if failed.is_none() {
                failed = conversion.message(index, &mut message).err();
            }
            index += 1;
            Some(())
        })
    })?;
    Some(match failed {
        Some(error) => Err(error),
        None => Ok(conversion.finish()),
    })
}

/// A `ToolCall`, or a `ToolCallDelta` whose fields may all be missing.
#[derive(Default, Deserialize)]
pub(crate) struct RawToolCall<'a> {
    #[serde(borrow, default)]
    name: Option<Text<'a>>,
    #[serde(borrow, default)]
    arguments: Option<ToolText<'a>>,
    #[serde(borrow, default)]
    tool_call_id: Option<Text<'a>>,
}

impl<'a> RawToolCall<'a> {
    /// Read by the [`Scanner`], as serde reads it.
    fn scan(scanner: &mut Scanner<'a>) -> Option<Self> {
        let mut call = RawToolCall::default();
        let mut seen = Seen::default();
        scanner.object(|s, key| match key {
            "name" => seen.set(0, &mut call.name, Text::scan_nullable(s)),
            "arguments" => seen.set(1, &mut call.arguments, ToolText::scan_nullable(s)),
            "tool_call_id" => seen.set(2, &mut call.tool_call_id, Text::scan_nullable(s)),
            _ => s.skip(),
        })?;
        Some(call)
    }
}

impl Expecting for RawToolCall<'_> {
    const WHAT: &'static str = "a tool call object {name, arguments, tool_call_id}";
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    System,
    User,
    Assistant,
    Reasoning,
    HiddenReasoning,
    ToolCall,
    ToolReturn,
    Other,
}

impl Kind {
    fn of(message_type: &str) -> Kind {
        match message_type {
            "system_message" => Kind::System,
            "user_message" => Kind::User,
            "assistant_message" => Kind::Assistant,
            "reasoning_message" => Kind::Reasoning,
            "hidden_reasoning_message" => Kind::HiddenReasoning,
            "tool_call_message" => Kind::ToolCall,
            "tool_return_message" => Kind::ToolReturn,
            _ => Kind::Other,
        }
    }

    fn is_reasoning(self) -> bool {
        matches!(self, Kind::Reasoning | Kind::HiddenReasoning)
    }
}

/// Where LLM steps begin (the rule in the module doc).
#[derive(Default)]
struct Steps<'a> {
    seen: StepIds<'a>,
    /// A step without `step_id` began with reasoning and is still open to the assistant or
    /// tool-call message that follows it.
    open: bool,
}

/// The step ids met so far. A trajectory has a few, which a list finds faster than hashing
/// does; past [`StepIds::LISTED`] of them they move to a set, so a long run stays linear.
#[derive(Default)]
struct StepIds<'a> {
    listed: Vec<Cow<'a, str>>,
    hashed: HashSet<Cow<'a, str>>,
}

impl<'a> StepIds<'a> {
    const LISTED: usize = 16;

    /// Adds `id`; whether it was new.
    fn insert(&mut self, id: Cow<'a, str>) -> bool {
        if self.hashed.is_empty() {
            if self.listed.contains(&id) {
                return false;
            }
            if self.listed.len() < Self::LISTED {
                self.listed.push(id);
                return true;
            }
            self.hashed.extend(self.listed.drain(..));
        }
        self.hashed.insert(id)
    }
}

impl<'a> Steps<'a> {
    fn starts_step(&mut self, kind: Kind, step_id: Option<Text<'a>>) -> bool {
        if !(kind.is_reasoning() || matches!(kind, Kind::Assistant | Kind::ToolCall)) {
            self.open = false;
            return false;
        }
        if let Some(Text(id)) = step_id {
            self.open = false;
            return self.seen.insert(id);
        }
        let starts = !self.open;
        self.open = kind.is_reasoning();
        starts
    }
}

/// Where a message sits: `trajectory[turn][index]`.
#[derive(Clone, Copy)]
struct At {
    turn: usize,
    index: usize,
}

impl At {
    fn path(self) -> String {
        format!("trajectory[{}][{}]", self.turn, self.index)
    }

    fn field(self, name: &str) -> String {
        format!("{}.{name}", self.path())
    }
}

impl Converter for LettaConverter {
    fn detect(&self, raw: &RawValue) -> bool {
        // An empty list, or a list whose first element is a list (a turn).
        let mut bytes = raw.get().bytes().filter(|b| !b.is_ascii_whitespace());
        bytes.next() == Some(b'[') && matches!(bytes.next(), Some(b'[' | b']'))
    }

    fn convert<'a>(&self, raw: &'a RawValue) -> Result<Trajectory<'a>, ConvertError> {
        from_turns::<Raw>(json::parse(raw.get(), || "trajectory".to_string())?)
    }
}

/// The messages of one turn, as recorded.
pub(crate) type Turn<'a, R> = Vec<Object<Message<'a, R>>>;

/// Converts the recorded turns.
pub(crate) fn from_turns<'a, R: Recorded<'a>>(
    turns: Vec<Turn<'a, R>>,
) -> Result<Trajectory<'a>, ConvertError> {
    let mut conversion = Conversion::default();
    for messages in turns {
        conversion.start_turn(messages.len() * 3 / 2 + 1);
        for (index, Object(mut message)) in messages.into_iter().enumerate() {
            conversion.message(index, &mut message)?;
        }
    }
    Ok(conversion.finish())
}

/// A trajectory being converted, turn by turn and message by message in recorded order.
#[derive(Default)]
struct Conversion<'a> {
    steps: Steps<'a>,
    turns: Vec<Vec<Event<'a>>>,
}

impl<'a> Conversion<'a> {
    /// Starts the next turn, with room for `events`.
    fn start_turn(&mut self, events: usize) {
        // A step never spans a turn boundary.
        self.steps.open = false;
        self.turns.push(Vec::with_capacity(events));
    }

    /// Converts message `index` of the turn started last, taking what it keeps from it.
    fn message<R: Recorded<'a>>(
        &mut self,
        index: usize,
        message: &mut Message<'a, R>,
    ) -> Result<(), ConvertError> {
        let turn = self.turns.len() - 1;
        let at = At { turn, index };
        convert_message(message, at, &mut self.steps, &mut self.turns[turn])
    }

    fn finish(self) -> Trajectory<'a> {
        Trajectory {
            format: Format::Letta,
            turns: self.turns,
            ..Trajectory::default()
        }
    }
}

/// A field the message type needs, or the error that it is missing.
fn required<F>(
    field: Option<F>,
    at: At,
    name: &str,
    message_type: &str,
) -> Result<F, ConvertError> {
    field.ok_or_else(|| missing(&at.path(), name, message_type))
}

fn convert_message<'a, R: Recorded<'a>>(
    message: &mut Message<'a, R>,
    at: At,
    steps: &mut Steps<'a>,
    events: &mut Vec<Event<'a>>,
) -> Result<(), ConvertError> {
    let Some(Text(message_type)) = message.message_type.take() else {
        return Err(ConvertError(format!(
            "{}: message has no `message_type` (system_message, user_message, \
             assistant_message, reasoning_message, tool_call_message, tool_return_message, ...); \
             letta-evals would misread it as a system message",
            at.path()
        )));
    };
    let kind = Kind::of(&message_type);
    if steps.starts_step(kind, message.step_id.take()) {
        events.push(Event::LlmCall(LlmCall::default()));
    }
    let content = |field: Option<R::Content>| {
        let raw: RawContent =
            required(field, at, "content", &message_type)?.read(|| at.field("content"))?;
        raw.into_content(|| at.field("content"))
    };
    let text = |field: Option<R::Text>, name: &str| -> Result<Cow<'a, str>, ConvertError> {
        let Text(text) = required(field, at, name, &message_type)?.read(|| at.field(name))?;
        Ok(text)
    };

    let event = match kind {
        Kind::System => Event::System {
            text: content(message.content.take())?.into_flat(),
        },
        Kind::User => Event::User {
            content: content(message.content.take())?,
        },
        Kind::Assistant => Event::Assistant {
            content: content(message.content.take())?,
        },
        Kind::Reasoning => Event::Reasoning {
            text: text(message.reasoning.take(), "reasoning")?,
        },
        // Its text is withheld when the state is `redacted` or `omitted`.
        Kind::HiddenReasoning => Event::Reasoning {
            text: match message.hidden_reasoning.take() {
                Some(field) => text(Some(field), "hidden_reasoning")?,
                None => Cow::Borrowed(""),
            },
        },
        Kind::ToolCall => {
            return tool_calls::<R>(
                message.tool_calls.take(),
                message.tool_call.take(),
                at,
                &message_type,
                events,
            );
        }
        Kind::ToolReturn => Event::ToolReturn(ToolReturn {
            call_id: text(message.tool_call_id.take(), "tool_call_id")?,
            json: false,
            content: required(message.tool_return.take(), at, "tool_return", &message_type)?
                .read(|| at.field("tool_return"))?,
            status: match &*text(message.status.take(), "status")? {
                "success" => ToolStatus::Success,
                "error" => ToolStatus::Error,
                other => {
                    return Err(ConvertError(format!(
                        "{}: unknown tool status `{other}` (expected success or error)",
                        at.field("status")
                    )));
                }
            },
        }),
        Kind::Other => Event::Other { kind: message_type },
    };
    events.push(event);
    Ok(())
}

/// The calls of a `tool_call_message`: `tool_calls` when non-empty, else `tool_call`.
fn tool_calls<'a, R: Recorded<'a>>(
    many: Option<R::Calls>,
    one: Option<RawJson<'a>>,
    at: At,
    message_type: &str,
    events: &mut Vec<Event<'a>>,
) -> Result<(), ConvertError> {
    let many: Vec<Object<RawToolCall<'a>>> = match many {
        Some(field) => field.read(|| at.field("tool_calls"))?,
        None => Vec::new(),
    };
    let calls = if many.is_empty() {
        let Some(field) = one else {
            return Err(ConvertError(format!(
                "{}: a {message_type} needs `tool_call` or a non-empty `tool_calls`",
                at.path()
            )));
        };
        vec![field.read(|| at.field("tool_call"))?]
    } else {
        many
    };
    events.extend(calls.into_iter().map(|Object(call)| {
        Event::ToolCall(ToolCall {
            id: call.tool_call_id.map(|t| t.0).unwrap_or_default(),
            name: call.name.map(|t| t.0).unwrap_or_default(),
            arguments: call.arguments.unwrap_or_default(),
            failed: false,
        })
    }));
    Ok(())
}

#[cfg(test)]
mod tests {
    use serde_json::Value;

    use super::*;
    use crate::input::trajectory::{Content, convert, detect};

    fn letta(text: &str) -> Result<Trajectory<'_>, ConvertError> {
        let raw: &RawValue = serde_json::from_str(text).unwrap();
        convert(raw, Some(Format::Letta))
    }

    #[test]
    fn step_ids_are_new_once_before_and_after_they_move_to_a_set() {
        let mut ids = StepIds::default();
        let mut set = HashSet::new();
        // Ids 0..40, each met twice in a row and again later: new the first time only.
        let order = (0..40).flat_map(|i| [i, i, i / 2]);
        for i in order {
            let id = format!("step-{i}");
            assert_eq!(
                ids.insert(Cow::Owned(id.clone())),
                set.insert(id),
                "step-{i}"
            );
        }
        assert_eq!(ids.hashed.len(), 40);
        assert!(ids.listed.is_empty());
    }

    fn events(text: &str) -> Vec<Vec<Event<'_>>> {
        letta(text).unwrap().turns
    }

    fn error(text: &str) -> String {
        letta(text).unwrap_err().0
    }

    fn call<'a>(id: &'a str, name: &'a str, arguments: &'a str) -> Event<'a> {
        Event::ToolCall(ToolCall {
            id: id.into(),
            name: name.into(),
            arguments: arguments.into(),
            failed: false,
        })
    }

    fn llm() -> Event<'static> {
        Event::LlmCall(LlmCall::default())
    }

    fn reasoning<'a>(text: &'a str) -> Event<'a> {
        Event::Reasoning { text: text.into() }
    }

    /// The trajectory of the example results line in letta-evals' reference notes.
    const RESULTS_LINE_TRAJECTORY: &str = r#"[[
      {"id":"message-1","content":"What is the capital of France? Use the lookup tool.","date":"2026-01-01T00:00:00Z","message_type":"user_message","otid":"o1","run_id":"run-1"},
      {"id":"message-2","date":"2026-01-01T00:00:01Z","reasoning":"I should call lookup.","message_type":"reasoning_message","run_id":"run-1","source":"reasoner_model","step_id":"step-1"},
      {"id":"message-3","date":"2026-01-01T00:00:02Z","tool_call":{"arguments":"{\"country\": \"France\"}","name":"lookup","tool_call_id":"call_abc"},"message_type":"tool_call_message","run_id":"run-1","step_id":"step-1","tool_calls":[{"arguments":"{\"country\": \"France\"}","name":"lookup","tool_call_id":"call_abc"}]},
      {"id":"message-4","date":"2026-01-01T00:00:03Z","status":"success","tool_call_id":"call_abc","tool_return":"{\"capital\": \"Paris\"}","message_type":"tool_return_message","run_id":"run-1","stderr":[],"stdout":[],"step_id":"step-1"},
      {"id":"message-5","content":[{"text":"The capital of France is","type":"text"},{"text":"Paris.","type":"text"}],"date":"2026-01-01T00:00:04Z","message_type":"assistant_message","run_id":"run-1","step_id":"step-2"}]]"#;

    #[test]
    fn converts_a_letta_evals_results_trajectory() {
        let trajectory = letta(RESULTS_LINE_TRAJECTORY).unwrap();
        assert_eq!(trajectory.format, Format::Letta);
        assert_eq!(trajectory.output, None);
        assert_eq!(
            trajectory.status,
            crate::input::trajectory::RunStatus::Success
        );
        assert_eq!(
            trajectory.turns,
            vec![vec![
                Event::User {
                    content: Content::Text(
                        "What is the capital of France? Use the lookup tool.".into()
                    )
                },
                llm(),
                reasoning("I should call lookup."),
                call("call_abc", "lookup", r#"{"country": "France"}"#),
                Event::ToolReturn(ToolReturn {
                    call_id: "call_abc".into(),
                    json: false,
                    content: r#"{"capital": "Paris"}"#.into(),
                    status: ToolStatus::Success,
                }),
                llm(),
                Event::Assistant {
                    content: Content::Parts(vec![
                        "The capital of France is".into(),
                        "Paris.".into()
                    ])
                },
            ]]
        );
        assert_eq!(
            trajectory.final_output().as_deref(),
            Some("The capital of France is Paris.")
        );
    }

    #[test]
    fn converts_every_message_type() {
        let turns = events(
            r#"[[
              {"message_type":"system_message","content":"be brief"},
              {"message_type":"user_message","content":[{"type":"text","text":"look"},{"type":"image","source":{"type":"url","url":"u"}}]},
              {"message_type":"hidden_reasoning_message","state":"redacted","hidden_reasoning":null},
              {"message_type":"hidden_reasoning_message","state":"omitted","hidden_reasoning":"secret"},
              {"message_type":"tool_call_message","tool_call":{"name":"a","arguments":"{}","tool_call_id":"c1"},
               "tool_calls":[{"name":"a","arguments":"{}","tool_call_id":"c1"},{"name":"b","arguments":"{\"x\":1}","tool_call_id":"c2"}]},
              {"message_type":"tool_return_message","tool_call_id":"c1","tool_return":"boom","status":"error"},
              {"message_type":"approval_request_message","tool_call":{"name":"rm","arguments":"{}","tool_call_id":"c3"}},
              {"message_type":"approval_response_message","approve":false,"reason":"no"},
              {"message_type":"summary_message","summary":"so far"},
              {"message_type":"event_message","event_type":"compaction","event_data":{}},
              {"message_type":"stop_reason","stop_reason":"end_turn","content":{"not":"content"}},
              {"message_type":"reasoning_message","reasoning":"done"},
              {"message_type":"assistant_message","content":[{"type":"text","text":"ok","signature":"sig"}]}
            ]]"#,
        );
        let other = |kind: &'static str| Event::Other { kind: kind.into() };
        assert_eq!(
            turns,
            vec![vec![
                Event::System {
                    text: "be brief".into()
                },
                Event::User {
                    content: Content::Parts(vec!["look".into(), "".into()])
                },
                llm(),
                reasoning(""),
                reasoning("secret"),
                call("c1", "a", "{}"),
                call("c2", "b", r#"{"x":1}"#),
                Event::ToolReturn(ToolReturn {
                    call_id: "c1".into(),
                    json: false,
                    content: "boom".into(),
                    status: ToolStatus::Error,
                }),
                other("approval_request_message"),
                other("approval_response_message"),
                other("summary_message"),
                other("event_message"),
                other("stop_reason"),
                llm(),
                reasoning("done"),
                Event::Assistant {
                    content: Content::Parts(vec!["ok".into()])
                },
            ]]
        );
    }

    #[test]
    fn steps_without_step_id_follow_assistant_and_tool_call_messages() {
        let turns = events(
            r#"[[
              {"message_type":"user_message","content":"go"},
              {"message_type":"reasoning_message","reasoning":"r1"},
              {"message_type":"tool_call_message","tool_call":{"name":"t","arguments":"{}","tool_call_id":"c"}},
              {"message_type":"tool_return_message","tool_call_id":"c","tool_return":"x","status":"success"},
              {"message_type":"tool_call_message","tool_call":{"name":"t","arguments":"{}","tool_call_id":"d"}},
              {"message_type":"assistant_message","content":"a1"},
              {"message_type":"reasoning_message","reasoning":"r2"}
             ],[
              {"message_type":"assistant_message","content":"a2"}
            ]]"#,
        );
        let kinds: Vec<Vec<&str>> = turns
            .iter()
            .map(|turn| {
                turn.iter()
                    .map(|e| match e {
                        Event::LlmCall(_) => "llm",
                        Event::User { .. } => "user",
                        Event::Reasoning { .. } => "reasoning",
                        Event::ToolCall(_) => "call",
                        Event::ToolReturn(_) => "return",
                        Event::Assistant { .. } => "assistant",
                        _ => "other",
                    })
                    .collect()
            })
            .collect();
        assert_eq!(
            kinds,
            vec![
                vec![
                    "user",
                    "llm",
                    "reasoning",
                    "call",
                    "return",
                    "llm",
                    "call",
                    "llm",
                    "assistant",
                    // A reasoning message that ends a turn is a step of its own ...
                    "llm",
                    "reasoning"
                ],
                // ... and the next turn starts a new one.
                vec!["llm", "assistant"],
            ]
        );
    }

    #[test]
    fn steps_with_step_id_count_each_id_once() {
        let turns = events(
            r#"[[
              {"message_type":"reasoning_message","reasoning":"r","step_id":"s1"},
              {"message_type":"tool_call_message","step_id":"s1","tool_calls":[
                {"name":"a","arguments":"{}","tool_call_id":"c1"},{"name":"b","arguments":"{}","tool_call_id":"c2"}]},
              {"message_type":"tool_return_message","tool_call_id":"c1","tool_return":"x","status":"success","step_id":"s1"},
              {"message_type":"tool_return_message","tool_call_id":"c2","tool_return":"y","status":"success","step_id":"s1"},
              {"message_type":"assistant_message","content":"part one","step_id":"s2"},
              {"message_type":"assistant_message","content":"part two","step_id":"s2"}
             ],[
              {"message_type":"assistant_message","content":"again","step_id":"s2"},
              {"message_type":"assistant_message","content":"new","step_id":"s3"}
            ]]"#,
        );
        let llm_positions: Vec<(usize, usize)> = turns
            .iter()
            .enumerate()
            .flat_map(|(t, turn)| {
                turn.iter()
                    .enumerate()
                    .filter(|(_, e)| matches!(e, Event::LlmCall(_)))
                    .map(move |(i, _)| (t, i))
            })
            .collect();
        assert_eq!(llm_positions, vec![(0, 0), (0, 6), (1, 1)]);
    }

    #[test]
    fn tool_call_deltas_and_the_singular_fallback() {
        let turns = events(
            r#"[[
              {"message_type":"tool_call_message","tool_call":{"name":"only"},"tool_calls":[]},
              {"message_type":"tool_call_message","tool_call":{"arguments":"{\"p\"","tool_call_id":null}},
              {"message_type":"tool_call_message","tool_call":{},"tool_calls":null}
            ]]"#,
        );
        let calls: Vec<&Event<'_>> = turns[0]
            .iter()
            .filter(|e| matches!(e, Event::ToolCall(_)))
            .collect();
        assert_eq!(
            calls,
            vec![
                &call("", "only", ""),
                &call("", "", r#"{"p""#),
                &call("", "", "")
            ]
        );
    }

    #[test]
    fn arguments_are_kept_byte_for_byte() {
        let trajectory = letta(
            r#"[[{"message_type":"tool_call_message","tool_call":{"name":"f",
                "arguments":"{ \"b\":2,  \"a\":1,\n \"s\": \"caf\\u00e9 \u00e9\" }","tool_call_id":"c"}}]]"#,
        )
        .unwrap();
        let arguments = trajectory.tool_calls().next().unwrap().arguments.text();
        assert_eq!(
            arguments,
            "{ \"b\":2,  \"a\":1,\n \"s\": \"caf\\u00e9 é\" }"
        );
    }

    #[test]
    fn empty_trajectories() {
        assert!(letta("[]").unwrap().is_empty());
        let two_empty = letta("[[], []]").unwrap();
        assert_eq!(two_empty.turns, vec![Vec::new(), Vec::new()]);
        assert!(two_empty.is_empty());
    }

    #[test]
    fn malformed_trajectories_name_the_path() {
        let cases = [
            (
                r#"[[{"message_type":"user_message","content":"hi"},{"id":"m","content":"x"}]]"#,
                "trajectory[0][1]: message has no `message_type` (system_message, user_message, \
                 assistant_message, reasoning_message, tool_call_message, tool_return_message, \
                 ...); letta-evals would misread it as a system message",
            ),
            (
                r#"[[],[{"message_type":"user_message","content":"a"},
                    {"message_type":"tool_call_message","tool_call":{"name":"f","arguments":3}}]]"#,
                "trajectory[1][1].tool_call.arguments: invalid type: integer `3`, expected a string",
            ),
            (
                r#"[[{"message_type":"tool_call_message","tool_calls":[{"name":"f"},"g"]}]]"#,
                "trajectory[0][0].tool_calls[1]: invalid type: string \"g\", expected a tool call \
                 object {name, arguments, tool_call_id}",
            ),
            (
                r#"[[{"message_type":"tool_call_message","tool_calls":[]}]]"#,
                "trajectory[0][0]: a tool_call_message needs `tool_call` or a non-empty \
                 `tool_calls`",
            ),
            (
                r#"[[{"message_type":"assistant_message","content":null}]]"#,
                "trajectory[0][0].content: missing; assistant_message requires it",
            ),
            (
                r#"[[{"message_type":"assistant_message","content":[{"type":"text"}]}]]"#,
                "trajectory[0][0].content[0].text: missing; a text part requires it",
            ),
            (
                r#"[[{"message_type":"user_message","content":{"text":"x"}}]]"#,
                "trajectory[0][0].content: invalid type: map, expected a string or a list of \
                 content parts",
            ),
            (
                r#"[[{"message_type":"reasoning_message","reasoning":["x"]}]]"#,
                "trajectory[0][0].reasoning: invalid type: sequence, expected a string",
            ),
            (
                r#"[[{"message_type":"tool_return_message","tool_call_id":"c","tool_return":"x","status":"ok"}]]"#,
                "trajectory[0][0].status: unknown tool status `ok` (expected success or error)",
            ),
            (
                r#"[[{"message_type":"tool_return_message","tool_call_id":"c","status":"success"}]]"#,
                "trajectory[0][0].tool_return: missing; tool_return_message requires it",
            ),
            (
                r#"[[{"message_type":7}]]"#,
                "trajectory[0][0].message_type: invalid type: integer `7`, expected a string",
            ),
            (
                r#"[[], {"message_type":"user_message"}]"#,
                "trajectory[1]: invalid type: map, expected a sequence",
            ),
            (
                r#"[["user_message"]]"#,
                "trajectory[0][0]: invalid type: string \"user_message\", expected a Letta \
                 message object",
            ),
            (
                r#"{"steps": []}"#,
                "trajectory: invalid type: map, expected a sequence",
            ),
        ];
        for (input, expected) in cases {
            assert_eq!(error(input), expected, "for {input}");
        }
    }

    #[test]
    fn detects_lists_of_turns() {
        let detect_text = |text: &str| detect(serde_json::from_str(text).unwrap());
        assert_eq!(detect_text("[]"), Some(Format::Letta));
        assert_eq!(detect_text(" [ [ ] ] "), Some(Format::Letta));
        assert_eq!(detect_text(RESULTS_LINE_TRAJECTORY), Some(Format::Letta));
        assert!(!LettaConverter.detect(serde_json::from_str(r#"[{"role":"user"}]"#).unwrap()));
        assert!(!LettaConverter.detect(serde_json::from_str(r#"{"input":"x"}"#).unwrap()));
        assert!(!LettaConverter.detect(serde_json::from_str(r#""[[""#).unwrap()));
    }

    fn vectors() -> Vec<Value> {
        let path = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/data/conformance/letta-vectors.json"
        );
        serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
    }

    /// Every trajectory letta-evals graded converts, and what its extractors read survives:
    /// the assistant texts flattened, and tool-call arguments byte for byte.
    #[test]
    fn converts_every_conformance_trajectory() {
        let mut converted = 0;
        for vector in vectors() {
            let Some(raw) = vector.get("trajectory") else {
                continue;
            };
            let text = serde_json::to_string(raw).unwrap();
            let trajectory = letta(&text).unwrap_or_else(|e| panic!("{e} in {vector}"));
            converted += 1;

            let messages: Vec<&Value> = raw
                .as_array()
                .unwrap()
                .iter()
                .flat_map(|turn| turn.as_array().unwrap())
                .collect();
            let expected_events: usize = messages
                .iter()
                .map(|m| match m["message_type"].as_str().unwrap() {
                    "tool_call_message" => match m.get("tool_calls").and_then(Value::as_array) {
                        Some(calls) if !calls.is_empty() => calls.len(),
                        _ => 1,
                    },
                    _ => 1,
                })
                .sum();
            let non_llm = trajectory
                .events()
                .filter(|e| !matches!(e, Event::LlmCall(_)))
                .count();
            assert_eq!(non_llm, expected_events, "{vector}");

            let expected = &vector["expected"];
            let config = &vector["config"];
            match (vector["name"].as_str().unwrap(), expected.as_str()) {
                ("last_assistant", Some(expected)) => assert_eq!(
                    trajectory
                        .assistant_messages()
                        .next_back()
                        .map(Content::flatten)
                        .unwrap_or_default(),
                    expected,
                    "{vector}"
                ),
                ("first_assistant", Some(expected)) => assert_eq!(
                    trajectory
                        .assistant_messages()
                        .next()
                        .map(Content::flatten)
                        .unwrap_or_default(),
                    expected,
                    "{vector}"
                ),
                ("tool_arguments", expected_args) => {
                    let name = config["tool_name"].as_str();
                    let found = trajectory
                        .tool_calls()
                        .find(|c| Some(&*c.name) == name)
                        .map(|c| c.arguments.text());
                    match expected_args {
                        Some("{}") if found.is_none() => {}
                        Some(args) => assert_eq!(found.as_deref(), Some(args), "{vector}"),
                        // Python returned a delta's missing arguments as None.
                        None if expected.is_null() => {
                            assert_eq!(found.as_deref(), Some(""), "{vector}")
                        }
                        None => {}
                    }
                }
                _ => {}
            }
        }
        assert!(converted >= 60, "only {converted} trajectories");
    }
}
