//! evaldeck traces (`Trace.to_dict()`): `{input, output, status, steps: [...], duration_ms, ...}`,
//! one turn.
//!
//! Each step becomes an event: `llm_call` an [`Event::LlmCall`] with its model, input, output and
//! `tokens`; `tool_call` an [`Event::ToolCall`] (id: the step's `id`, else `step-N` with N its
//! index; arguments: the recorded JSON text of `tool_args`, `{}` when there is none), followed by
//! an [`Event::ToolReturn`] when `tool_result` is recorded (a JSON string as its value, anything
//! else as its recorded JSON text); `reasoning` an [`Event::Reasoning`]; `human_input` an
//! [`Event::HumanInput`]. A non-null `output` ends the turn as an assistant message, so the
//! assistant extractors read it as they read the last message of a Letta run.

use std::borrow::Cow;

use serde::Deserialize;
use serde_json::value::RawValue;

use super::json::{self, Expecting, Object, RawJson, Text, first_byte, first_key_among};
use super::{
    Content, ConvertError, Converter, Event, Format, LlmCall, RunStatus, Tokens, ToolCall,
    ToolReturn, ToolStatus, Trajectory,
};
use crate::input::fast::scan::{Scanner, Seen};

pub struct EvaldeckConverter;

#[derive(Default, Deserialize)]
pub(crate) struct Trace<'a> {
    #[serde(borrow, default)]
    input: Option<Text<'a>>,
    #[serde(borrow, default)]
    output: Option<Text<'a>>,
    #[serde(borrow, default)]
    status: Option<Text<'a>>,
    #[serde(borrow, default)]
    steps: Option<Vec<Object<Step<'a>>>>,
    #[serde(default)]
    duration_ms: Option<f64>,
}

impl Expecting for Trace<'_> {
    const WHAT: &'static str = "an evaldeck trace object";
}

#[derive(Default, Deserialize)]
struct Step<'a> {
    #[serde(borrow, default)]
    id: Option<Text<'a>>,
    #[serde(rename = "type", borrow, default)]
    kind: Option<Text<'a>>,
    #[serde(borrow, default)]
    status: Option<Text<'a>>,
    #[serde(borrow, default)]
    model: Option<Text<'a>>,
    #[serde(borrow, default)]
    input: Option<Text<'a>>,
    #[serde(borrow, default)]
    output: Option<Text<'a>>,
    #[serde(default)]
    tokens: Option<Object<TokenUsage>>,
    #[serde(borrow, default)]
    tool_name: Option<Text<'a>>,
    #[serde(borrow, default)]
    tool_args: Option<RawJson<'a>>,
    #[serde(borrow, default)]
    tool_result: Option<RawJson<'a>>,
    #[serde(borrow, default)]
    reasoning_text: Option<Text<'a>>,
    #[serde(borrow, default)]
    error: Option<Text<'a>>,
}

impl Expecting for Step<'_> {
    const WHAT: &'static str = "an evaldeck step object";
}

/// evaldeck's `TokenUsage`: every count defaults to 0.
#[derive(Default, Deserialize)]
struct TokenUsage {
    #[serde(default)]
    prompt_tokens: u64,
    #[serde(default)]
    completion_tokens: u64,
    #[serde(default)]
    total_tokens: u64,
}

impl Expecting for TokenUsage {
    const WHAT: &'static str =
        "a token usage object {prompt_tokens, completion_tokens, total_tokens}";
}

/// The key that tells an Inspect sample from the objects of other formats: it comes before
/// `input` and `messages` in every sample Inspect writes.
pub(crate) const EPOCH: &str = "epoch";

/// The keys whose first one in an object tells an evaldeck trace from an OpenAI chat log or an
/// Inspect sample.
pub(crate) const DECISIVE_KEYS: [&str; 5] = ["steps", "output", "input", "messages", EPOCH];

/// Whether an object whose first decisive key ([`DECISIVE_KEYS`]) is `first` is a trace: a chat
/// log has `messages`, an Inspect sample `epoch` before its `input`, and an object with none of
/// the keys is neither.
pub(crate) fn is_trace(first: Option<&str>) -> bool {
    first.is_some_and(|key| key != "messages" && key != EPOCH)
}

impl<'a> Trace<'a> {
    /// A trace read by the [`Scanner`] and converted step by step as it is read, with no list
    /// of steps in between: what [`from_trace`] gives for the trace serde reads, its first error
    /// included; `None` for an object that is no trace by the decisive keys, which serde's path
    /// settles.
    pub(crate) fn scan(scanner: &mut Scanner<'a>) -> Option<Result<Trajectory<'a>, ConvertError>> {
        let mut trace = Trace::default();
        let mut seen = Seen::default();
        let mut decisive = None;
        // Room for a short trace's steps and its output without growing the list.
        let (mut events, mut failed, mut listed) = (Vec::with_capacity(8), None, None);
        scanner.object(|s, key| {
            if decisive.is_none() {
                decisive = DECISIVE_KEYS.into_iter().find(|decisive| *decisive == key);
            }
            let t = &mut trace;
            match key {
                "input" => seen.set(0, &mut t.input, Text::scan_nullable(s)),
                "output" => seen.set(1, &mut t.output, Text::scan_nullable(s)),
                "status" => seen.set(2, &mut t.status, Text::scan_nullable(s)),
                "steps" => {
                    let mut index = 0;
                    // One step read in place after another: a step is some three hundred bytes,
                    // and returning it moved it twice on its way to the conversion.
                    let mut step = Step::default();
                    let steps = s.nullable(|s| {
                        s.list(|s| {
                            step.scan(s)?;
                            if failed.is_none() {
                                failed = convert_step(&mut step, index, &mut events).err();
                            }
                            index += 1;
                            Some(())
                        })
                    });
                    seen.set(3, &mut listed, steps)
                }
                "duration_ms" => seen.set(4, &mut t.duration_ms, s.nullable(Scanner::float)),
                _ => s.skip(),
            }
        })?;
        if !is_trace(decisive) {
            return None;
        }
        Some(run_status(&trace).and_then(|status| match failed {
            Some(error) => Err(error),
            None => Ok(trace.finish(events, status)),
        }))
    }

    /// The trajectory of the trace's steps converted to `events`.
    fn finish(self, mut events: Vec<Event<'a>>, status: RunStatus) -> Trajectory<'a> {
        let output = self.output.map(|t| t.0);
        if let Some(output) = &output {
            events.push(Event::Assistant {
                content: Content::Text(output.clone()),
            });
        }
        Trajectory {
            format: Format::Evaldeck,
            turns: vec![events],
            output,
            status,
            input: self.input.map(|t| t.0),
            duration_ms: self.duration_ms,
            usage: None,
        }
    }
}

impl<'a> Step<'a> {
    /// Read by the [`Scanner`] into `self`, as serde reads it; what a step that does not read
    /// leaves in `self` is of no use.
    fn scan(&mut self, scanner: &mut Scanner<'a>) -> Option<()> {
        *self = Step::default();
        let mut seen = Seen::default();
        scanner.object(|s, key| {
            let raw = |s: &mut Scanner<'a>| s.nullable(|s| s.raw().map(RawJson));
            let t = &mut *self;
            match key {
                "id" => seen.set(0, &mut t.id, Text::scan_nullable(s)),
                "type" => seen.set(1, &mut t.kind, Text::scan_nullable(s)),
                "status" => seen.set(2, &mut t.status, Text::scan_nullable(s)),
                "model" => seen.set(3, &mut t.model, Text::scan_nullable(s)),
                "input" => seen.set(4, &mut t.input, Text::scan_nullable(s)),
                "output" => seen.set(5, &mut t.output, Text::scan_nullable(s)),
                "tokens" => {
                    let tokens = s.nullable(|s| TokenUsage::scan(s).map(Object));
                    seen.set(6, &mut t.tokens, tokens)
                }
                "tool_name" => seen.set(7, &mut t.tool_name, Text::scan_nullable(s)),
                "tool_args" => seen.set(8, &mut t.tool_args, raw(s)),
                "tool_result" => seen.set(9, &mut t.tool_result, raw(s)),
                "reasoning_text" => seen.set(10, &mut t.reasoning_text, Text::scan_nullable(s)),
                "error" => seen.set(11, &mut t.error, Text::scan_nullable(s)),
                _ => s.skip(),
            }
        })
    }
}

impl TokenUsage {
    /// Read by the [`Scanner`], as serde reads it.
    fn scan(scanner: &mut Scanner) -> Option<Self> {
        let mut usage = TokenUsage::default();
        let mut seen = Seen::default();
        scanner.object(|s, key| {
            let u = &mut usage;
            match key {
                "prompt_tokens" => seen.set(0, &mut u.prompt_tokens, s.unsigned()),
                "completion_tokens" => seen.set(1, &mut u.completion_tokens, s.unsigned()),
                "total_tokens" => seen.set(2, &mut u.total_tokens, s.unsigned()),
                _ => s.skip(),
            }
        })?;
        Some(usage)
    }
}

const STEP_TYPES: &str = "llm_call, tool_call, reasoning or human_input";

impl Converter for EvaldeckConverter {
    fn detect(&self, raw: &RawValue) -> bool {
        // A chat log object (`messages`) is OpenAI's; a trace has no such key.
        first_byte(raw) == Some(b'{') && is_trace(first_key_among(raw, &DECISIVE_KEYS))
    }

    fn convert<'a>(&self, raw: &'a RawValue) -> Result<Trajectory<'a>, ConvertError> {
        let Object(trace): Object<Trace> = json::parse(raw.get(), || "trajectory".to_string())?;
        // evaldeck's `Trace` requires `input`; one with neither that nor what a run adds is
        // another recording read as a trace, which would grade as an empty run.
        if trace.input.is_none() && trace.output.is_none() && trace.steps.is_none() {
            return Err(super::not_of(
                Format::Evaldeck,
                raw,
                "no `input`, `output` or `steps`",
            ));
        }
        from_trace(trace)
    }
}

/// Converts a recorded trace.
pub(crate) fn from_trace(mut trace: Trace<'_>) -> Result<Trajectory<'_>, ConvertError> {
    let status = run_status(&trace)?;
    let steps = trace.steps.take().unwrap_or_default();
    let mut events = Vec::with_capacity(steps.len() + 1);
    for (index, Object(mut step)) in steps.into_iter().enumerate() {
        convert_step(&mut step, index, &mut events)?;
    }
    Ok(trace.finish(events, status))
}

/// The trace's `status`; a run status evaldeck does not know is the trace's first error.
fn run_status(trace: &Trace) -> Result<RunStatus, ConvertError> {
    match trace.status.as_ref().map(|s| &*s.0) {
        None | Some("success") => Ok(RunStatus::Success),
        Some("failure") => Ok(RunStatus::Failure),
        Some("timeout") => Ok(RunStatus::Timeout),
        Some("error") => Ok(RunStatus::Error),
        Some(other) => Err(ConvertError(format!(
            "trajectory.status: unknown run status `{other}` (expected success, failure, \
             timeout or error)"
        ))),
    }
}

/// Converts `step`, taking what it keeps from it.
fn convert_step<'a>(
    step: &mut Step<'a>,
    index: usize,
    events: &mut Vec<Event<'a>>,
) -> Result<(), ConvertError> {
    let failed = match step.status.as_ref().map(|s| &*s.0) {
        None | Some("success") | Some("pending") => false,
        Some("failure") => true,
        Some(other) => {
            return Err(ConvertError(format!(
                "trajectory.steps[{index}].status: unknown step status `{other}` (expected \
                 success, failure or pending)"
            )));
        }
    };
    let text = |field: Option<Text<'a>>| field.map(|t| t.0);
    let Some(Text(kind)) = step.kind.take() else {
        return Err(ConvertError(format!(
            "trajectory.steps[{index}].type: missing (expected {STEP_TYPES})"
        )));
    };
    match &*kind {
        "llm_call" => events.push(Event::LlmCall(LlmCall {
            model: text(step.model.take()),
            input: text(step.input.take()),
            output: text(step.output.take()),
            tokens: step.tokens.take().map(|Object(t)| Tokens {
                prompt_tokens: t.prompt_tokens,
                completion_tokens: t.completion_tokens,
                total_tokens: t.total_tokens,
            }),
        })),
        "tool_call" => {
            let id = match step.id.take() {
                Some(Text(id)) => id,
                None => format!("step-{index}").into(),
            };
            let arguments = match step.tool_args.take() {
                None => Cow::Borrowed("{}"),
                Some(RawJson(args)) if args.trim_start().starts_with('{') => Cow::Borrowed(args),
                Some(_) => {
                    return Err(ConvertError(format!(
                        "trajectory.steps[{index}].tool_args: expected an object or null"
                    )));
                }
            };
            let result = match step.tool_result.take() {
                Some(result) => {
                    let json = !result.0.trim_start().starts_with('"');
                    Some((result_text(result, index)?, json))
                }
                None => None,
            };
            events.push(Event::ToolCall(ToolCall {
                id: id.clone(),
                name: text(step.tool_name.take()).unwrap_or_default(),
                arguments: arguments.into(),
                failed,
            }));
            if let Some((content, json)) = result {
                events.push(Event::ToolReturn(ToolReturn {
                    call_id: id,
                    json,
                    content: content.into(),
                    status: if failed || step.error.is_some() {
                        ToolStatus::Error
                    } else {
                        ToolStatus::Success
                    },
                }));
            }
        }
        "reasoning" => events.push(Event::Reasoning {
            text: text(step.reasoning_text.take()).unwrap_or_default(),
        }),
        "human_input" => events.push(Event::HumanInput {
            text: text(step.input.take()),
        }),
        other => {
            return Err(ConvertError(format!(
                "trajectory.steps[{index}].type: unknown step type `{other}` (expected \
                 {STEP_TYPES})"
            )));
        }
    }
    Ok(())
}

/// A tool result as text: a JSON string's value, any other value's recorded JSON text.
fn result_text(RawJson(result): RawJson<'_>, index: usize) -> Result<Cow<'_, str>, ConvertError> {
    let result = result.trim_start();
    if !result.starts_with('"') {
        return Ok(Cow::Borrowed(result));
    }
    // A checked string without escapes is the text between its quotes.
    match result[1..].strip_suffix('"') {
        Some(plain) if !plain.contains('\\') => Ok(Cow::Borrowed(plain)),
        _ => {
            let Text(text) =
                json::parse(result, || format!("trajectory.steps[{index}].tool_result"))?;
            Ok(text)
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::Value;

    use super::*;
    use crate::input::trajectory::{convert, detect};

    fn evaldeck(text: &str) -> Result<Trajectory<'_>, ConvertError> {
        let raw: &RawValue = serde_json::from_str(text).unwrap();
        convert(raw, Some(Format::Evaldeck))
    }

    /// The trace evaldeck's `to_dict()` produced for its booking example, all five steps.
    const BOOKING_TRACE: &str = r#"{
      "id": "tr-0001",
      "input": "Book a flight from NYC to LA on March 15",
      "output": "Your flight AA123 is booked. Confirmation: ABC123",
      "status": "success",
      "steps": [
        {"id": "s1", "type": "llm_call", "timestamp": "2026-03-01T12:00:00.100000", "status": "success",
         "model": "gpt-4o-mini", "input": "Parse: Book a flight...", "output": "{\"from\":\"NYC\",\"to\":\"LA\"}",
         "tokens": {"prompt_tokens": 50, "completion_tokens": 20, "total_tokens": 70},
         "tool_name": null, "tool_args": null, "tool_result": null, "reasoning_text": null,
         "parent_id": null, "error": null, "duration_ms": 412.5, "metadata": {}},
        {"id": "s2", "type": "tool_call", "timestamp": "2026-03-01T12:00:01", "status": "success",
         "model": null, "input": null, "output": null, "tokens": null,
         "tool_name": "search_flights", "tool_args": {"from": "NYC", "to": "LA", "date": "2026-03-15"},
         "tool_result": [{"id": "AA123", "price": 299}], "reasoning_text": null,
         "parent_id": "s1", "error": null, "duration_ms": 150.0, "metadata": {}},
        {"id": "s3", "type": "reasoning", "timestamp": "2026-03-01T12:00:02", "status": "success",
         "model": null, "input": null, "output": null, "tokens": null,
         "tool_name": null, "tool_args": null, "tool_result": null, "reasoning_text": "AA123 is cheapest",
         "parent_id": null, "error": null, "duration_ms": null, "metadata": {}},
        {"id": "s4", "type": "tool_call", "timestamp": "2026-03-01T12:00:03", "status": "failure",
         "model": null, "input": null, "output": null, "tokens": null,
         "tool_name": "book_flight", "tool_args": {"flight_id":"AA123"},
         "tool_result": "Booked: ABC123", "reasoning_text": null,
         "parent_id": null, "error": "retried once", "duration_ms": 90.0, "metadata": {}},
        {"id": "s5", "type": "human_input", "timestamp": "2026-03-01T12:00:03.500000", "status": "success",
         "model": null, "input": "Yes, book it", "output": null, "tokens": null,
         "tool_name": null, "tool_args": null, "tool_result": null, "reasoning_text": null,
         "parent_id": null, "error": null, "duration_ms": null, "metadata": {}}
      ],
      "started_at": "2026-03-01T12:00:00",
      "completed_at": "2026-03-01T12:00:04",
      "duration_ms": 4000.0,
      "metadata": {"user_id": "u-42"},
      "framework": "custom",
      "agent_name": "BookingAgent"
    }"#;

    #[test]
    fn converts_a_full_trace() {
        let trajectory = evaldeck(BOOKING_TRACE).unwrap();
        let output = "Your flight AA123 is booked. Confirmation: ABC123";
        assert_eq!(
            trajectory,
            Trajectory {
                format: Format::Evaldeck,
                turns: vec![vec![
                    Event::LlmCall(LlmCall {
                        model: Some("gpt-4o-mini".into()),
                        input: Some("Parse: Book a flight...".into()),
                        output: Some(r#"{"from":"NYC","to":"LA"}"#.into()),
                        tokens: Some(Tokens {
                            prompt_tokens: 50,
                            completion_tokens: 20,
                            total_tokens: 70
                        }),
                    }),
                    Event::ToolCall(ToolCall {
                        id: "s2".into(),
                        name: "search_flights".into(),
                        arguments: r#"{"from": "NYC", "to": "LA", "date": "2026-03-15"}"#.into(),
                        failed: false,
                    }),
                    Event::ToolReturn(ToolReturn {
                        call_id: "s2".into(),
                        json: true,
                        content: r#"[{"id": "AA123", "price": 299}]"#.into(),
                        status: ToolStatus::Success,
                    }),
                    Event::Reasoning {
                        text: "AA123 is cheapest".into()
                    },
                    Event::ToolCall(ToolCall {
                        id: "s4".into(),
                        name: "book_flight".into(),
                        arguments: r#"{"flight_id":"AA123"}"#.into(),
                        failed: true,
                    }),
                    Event::ToolReturn(ToolReturn {
                        call_id: "s4".into(),
                        json: false,
                        content: "Booked: ABC123".into(),
                        status: ToolStatus::Error,
                    }),
                    Event::HumanInput {
                        text: Some("Yes, book it".into())
                    },
                    Event::Assistant {
                        content: Content::Text(output.into())
                    },
                ]],
                output: Some(output.into()),
                status: RunStatus::Success,
                input: Some("Book a flight from NYC to LA on March 15".into()),
                duration_ms: Some(4000.0),
                usage: None,
            }
        );
        assert_eq!(trajectory.step_count(), 5);
        assert_eq!(trajectory.total_tokens(), 70);
        assert_eq!(trajectory.tools_called(), ["search_flights", "book_flight"]);
    }

    #[test]
    fn minimal_steps_get_defaults() {
        let trajectory = evaldeck(
            r#"{"input": "x", "status": "timeout", "steps": [
                {"type": "tool_call"},
                {"type": "tool_call", "tool_name": "t", "tool_args": null, "tool_result": 3, "error": "late"},
                {"type": "llm_call", "tokens": {"total_tokens": 9}},
                {"type": "reasoning"},
                {"type": "human_input"}
            ]}"#,
        )
        .unwrap();
        assert_eq!(trajectory.status, RunStatus::Timeout);
        assert_eq!(trajectory.output, None);
        assert_eq!(
            trajectory.turns[0],
            vec![
                Event::ToolCall(ToolCall {
                    id: "step-0".into(),
                    name: "".into(),
                    arguments: "{}".into(),
                    failed: false,
                }),
                Event::ToolCall(ToolCall {
                    id: "step-1".into(),
                    name: "t".into(),
                    arguments: "{}".into(),
                    failed: false,
                }),
                Event::ToolReturn(ToolReturn {
                    call_id: "step-1".into(),
                    json: true,
                    content: "3".into(),
                    status: ToolStatus::Error,
                }),
                Event::LlmCall(LlmCall {
                    tokens: Some(Tokens {
                        prompt_tokens: 0,
                        completion_tokens: 0,
                        total_tokens: 9
                    }),
                    ..LlmCall::default()
                }),
                Event::Reasoning { text: "".into() },
                Event::HumanInput { text: None },
            ]
        );
    }

    #[test]
    fn run_statuses_and_an_empty_trace() {
        for (status, expected) in [
            ("success", RunStatus::Success),
            ("failure", RunStatus::Failure),
            ("timeout", RunStatus::Timeout),
            ("error", RunStatus::Error),
        ] {
            let text = format!(r#"{{"input": "x", "status": "{status}"}}"#);
            assert_eq!(evaldeck(&text).unwrap().status, expected);
        }
        let empty = evaldeck(r#"{"input": "x", "output": null, "steps": null}"#).unwrap();
        assert_eq!(empty.turns, vec![Vec::new()]);
        assert!(empty.is_empty());
        assert_eq!(empty.input.as_deref(), Some("x"));
    }

    #[test]
    fn tool_args_are_kept_byte_for_byte() {
        let trajectory = evaldeck(
            r#"{"steps": [{"type": "tool_call", "tool_args": { "b" : 2,"a":[1, 2.50],"s":"caf\u00e9" }}]}"#,
        )
        .unwrap();
        assert_eq!(
            trajectory.tool_calls().next().unwrap().arguments.text(),
            r#"{ "b" : 2,"a":[1, 2.50],"s":"caf\u00e9" }"#
        );
    }

    #[test]
    fn malformed_traces_name_the_field() {
        let cases = [
            (
                r#"{"input": "x", "status": "done"}"#,
                "trajectory.status: unknown run status `done` (expected success, failure, \
                 timeout or error)",
            ),
            (
                r#"{"steps": [{"type": "llm_call"}, {"type": "tool"}]}"#,
                "trajectory.steps[1].type: unknown step type `tool` (expected llm_call, \
                 tool_call, reasoning or human_input)",
            ),
            (
                r#"{"steps": [{"tool_name": "t"}]}"#,
                "trajectory.steps[0].type: missing (expected llm_call, tool_call, reasoning or \
                 human_input)",
            ),
            (
                r#"{"steps": [{"type": "tool_call", "status": "ok"}]}"#,
                "trajectory.steps[0].status: unknown step status `ok` (expected success, \
                 failure or pending)",
            ),
            (
                r#"{"steps": [{"type": "tool_call", "tool_args": "{\"a\": 1}"}]}"#,
                "trajectory.steps[0].tool_args: expected an object or null",
            ),
            (
                r#"{"input": "x", "output": 5}"#,
                "trajectory.output: invalid type: integer `5`, expected a string",
            ),
            (
                r#"{"steps": [{"type": "llm_call", "tokens": {"total_tokens": -1}}]}"#,
                "trajectory.steps[0].tokens.total_tokens: invalid value: integer `-1`, expected \
                 u64",
            ),
            (
                r#"{"steps": {"type": "llm_call"}}"#,
                "trajectory.steps: invalid type: map, expected a sequence",
            ),
            (
                r#"[{"input": "x"}]"#,
                "trajectory: invalid type: sequence, expected an evaldeck trace object",
            ),
        ];
        for (input, expected) in cases {
            assert_eq!(evaldeck(input).unwrap_err().0, expected, "for {input}");
        }
    }

    #[test]
    fn detects_trace_objects() {
        let detect_text = |text: &str| detect(serde_json::from_str(text).unwrap());
        assert_eq!(detect_text(BOOKING_TRACE), Some(Format::Evaldeck));
        assert_eq!(detect_text(r#"{"input": "x"}"#), Some(Format::Evaldeck));
        assert_eq!(
            detect_text(r#"{"id": "t", "steps": []}"#),
            Some(Format::Evaldeck)
        );
        assert_eq!(detect_text(r#"{"output": null}"#), Some(Format::Evaldeck));
        assert!(
            !EvaldeckConverter
                .detect(serde_json::from_str(r#"{"messages": [], "input": "x"}"#).unwrap())
        );
        assert!(!EvaldeckConverter.detect(serde_json::from_str(r#"{"id": "t"}"#).unwrap()));
        assert!(!EvaldeckConverter.detect(serde_json::from_str("[[]]").unwrap()));
    }

    /// Every trace evaldeck graded converts, and what its graders read survives: output, status,
    /// step count, tool names and LLM-call count.
    #[test]
    fn converts_every_conformance_trace() {
        let path = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/data/conformance/evaldeck-vectors.json"
        );
        let vectors: Vec<Value> =
            serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
        let mut converted = 0;
        for vector in &vectors {
            let trace = &vector["trace"];
            if trace.is_null() {
                continue;
            }
            let text = serde_json::to_string(trace).unwrap();
            let trajectory = evaldeck(&text).unwrap_or_else(|e| panic!("{e} in {vector}"));
            converted += 1;
            let steps = trace["steps"].as_array().unwrap();
            let count_of = |t: &str| steps.iter().filter(|s| s["type"] == t).count();
            assert_eq!(trajectory.output.as_deref(), trace["output"].as_str());
            assert_eq!(
                trajectory.status.as_str(),
                trace["status"].as_str().unwrap()
            );
            assert_eq!(trajectory.step_count(), steps.len(), "{vector}");
            assert_eq!(trajectory.llm_calls().count(), count_of("llm_call"));
            let names: Vec<&str> = steps
                .iter()
                .filter(|s| s["type"] == "tool_call")
                .filter_map(|s| s["tool_name"].as_str())
                .filter(|n| !n.is_empty())
                .collect();
            assert_eq!(trajectory.tools_called(), names, "{vector}");
        }
        assert!(converted > 60, "only {converted} traces");
    }
}
