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
            let given = match row.remove("sample") {
                Some(given) => completed(given),
                None => of_run(sample.trajectory()),
            };
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
    answered(output_text, tools, finish_reason)
}

/// The sample of a model's answer `text` alone, as OpenAI's `graders/run` makes it of its
/// `model_sample`.
pub fn of_text(text: &str) -> Value {
    answered(text.to_string(), Vec::new(), "stop")
}

/// A row's own `sample` with what OpenAI derives from its `output_text` filled in where the row
/// leaves it out (`output_json`, `output_tools`, `choices`), as for a posted `model_sample`.
fn completed(given: Value) -> Value {
    let Value::Object(mut given) = given else {
        return given;
    };
    let Some(text) = given.get("output_text").and_then(Value::as_str) else {
        return Value::Object(given);
    };
    let tools = given
        .get("output_tools")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let finish_reason = match tools.is_empty() || !text.is_empty() {
        true => "stop",
        false => "tool_calls",
    };
    if let Value::Object(derived) = answered(text.to_string(), tools, finish_reason) {
        for (key, value) in derived {
            given.entry(key).or_insert(value);
        }
    }
    Value::Object(given)
}

fn answered(output_text: String, tools: Vec<Value>, finish_reason: &str) -> Value {
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::input::trajectory::convert;
    use serde_json::value::RawValue;

    fn run_of(json: &str) -> Value {
        let raw: Box<RawValue> = serde_json::from_str(json).expect("JSON");
        of_run(&convert(&raw, None).expect("a recorded run"))
    }

    #[test]
    fn a_recorded_runs_sample_is_the_one_pythons_graders_receive() {
        let booked = run_of(
            r#"[{"role": "user", "content": "Book"},
                {"role": "assistant", "content": null, "tool_calls": [{"id": "c1", "type": "function",
                 "function": {"name": "book", "arguments": "{\"to\": \"LAX\"}"}}]},
                {"role": "tool", "tool_call_id": "c1", "content": "ok"},
                {"role": "assistant", "content": "{\"booked\": true}"}]"#,
        );
        let tools = json!([{"id": "c1", "type": "function",
            "function": {"name": "book", "arguments": "{\"to\": \"LAX\"}"}}]);
        assert_eq!(
            booked,
            json!({
                "output_text": "{\"booked\": true}",
                "output_json": {"booked": true},
                "output_tools": tools,
                "choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant",
                    "content": "{\"booked\": true}", "tool_calls": tools}}],
            })
        );
        let calling = run_of(
            r#"[{"role": "assistant", "content": null, "tool_calls": [{"id": "c1",
                 "type": "function", "function": {"name": "book", "arguments": "[1]"}}]}]"#,
        );
        assert_eq!(calling["output_text"], json!(""));
        assert_eq!(calling["output_json"], Value::Null);
        assert_eq!(calling["choices"][0]["finish_reason"], json!("tool_calls"));
        let row = |text: &str| serde_json::from_str::<Map<String, Value>>(text).unwrap();
        assert!(is_eval_shaped(&row(r#"{"item": {"a": 1}, "sample": {}}"#)));
        assert!(is_eval_shaped(&row(r#"{"item": {}}"#)));
        assert!(!is_eval_shaped(&row(r#"{"item": {}, "id": 1}"#)));
        assert!(!is_eval_shaped(&row(r#"{"item": "x"}"#)));
    }
}
