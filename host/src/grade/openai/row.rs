//! The item and the sample an OpenAI grader sees for a dataset row.
//!
//! A row in OpenAI's eval shape, `{"item": {...}, "sample": {...}}` and nothing else, gives its
//! own item and sample. Any other row is the item, and the sample is made from its recorded run
//! as gavel's `python` graders receive theirs (`gavel_runtime/convert.py`, `openai_sample`).

use serde_json::{Map, Value, json};

use crate::input::sample::Sample;
use crate::input::trajectory::{Content, Event, Trajectory};

/// Whether `row` is in OpenAI's eval shape: an `item` mapping, perhaps a `sample`, no more.
pub fn is_eval_shaped(row: &Map<String, Value>) -> bool {
    row.get("item").is_some_and(Value::is_object)
        && row.keys().all(|k| k == "item" || k == "sample")
}

/// The item and the sample of `sample`'s row.
pub fn item_and_sample(sample: &Sample<'_>) -> (Value, Value) {
    let row: Value = serde_json::from_str(sample.row).unwrap_or(Value::Null);
    match row {
        Value::Object(mut row) if is_eval_shaped(&row) => {
            let item = row.remove("item").unwrap_or_default();
            let given = row
                .remove("sample")
                .unwrap_or_else(|| of_run(sample.trajectory()));
            (item, given)
        }
        row => (row, of_run(sample.trajectory())),
    }
}

/// `{output_text, output_json, output_tools, choices}` of a recorded run: the last assistant
/// message's text (else the run's recorded output), that text read as JSON where it is an
/// object, and the tool calls.
pub fn of_run(run: &Trajectory<'_>) -> Value {
    let mut texts = Vec::new();
    let mut tools = Vec::new();
    for event in run.events() {
        match event {
            Event::Assistant { content } => texts.push(match content {
                Content::Text(text) => text.to_string(),
                Content::Parts(parts) => parts.concat(),
            }),
            Event::ToolCall(call) => tools.push(json!({
                "id": call.id,
                "type": "function",
                "function": {"name": call.name, "arguments": call.arguments.text()},
            })),
            _ => {}
        }
    }
    let finish_reason = if !tools.is_empty() && texts.is_empty() {
        "tool_calls"
    } else {
        "stop"
    };
    let output_text = texts
        .pop()
        .or_else(|| run.output.as_ref().map(|o| o.to_string()))
        .unwrap_or_default();
    let output_json = match serde_json::from_str::<Value>(&output_text) {
        Ok(object @ Value::Object(_)) => object,
        _ => Value::Null,
    };
    json!({
        "output_text": output_text,
        "output_json": output_json,
        "output_tools": tools,
        "choices": [{
            "index": 0,
            "message": {"role": "assistant", "content": output_text, "tool_calls": tools},
            "finish_reason": finish_reason,
        }],
    })
}
