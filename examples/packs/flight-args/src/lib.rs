//! Tool-argument validation: every `search_flights` call names its airports in capitals.

use gavel_guest::prelude::*;
use serde_json::{Map, Value};

const TOOL: &str = "search_flights";

/// Every `search_flights` call has `from` and `to` arguments, both uppercase airport codes.
fn search_args(input: &GradeInput, _: &NoConfig) -> Grade {
    let calls: Vec<&ToolCall> = input
        .trajectory
        .tool_calls()
        .filter(|call| call.name == TOOL)
        .collect();
    if let Some((call, failure)) = calls
        .iter()
        .find_map(|call| Some((call, check_call(call)?)))
    {
        return failure.metadata("call_id", call.id.as_str());
    }
    Grade::pass("Search arguments are valid").metadata("calls_checked", calls.len())
}

/// The failing grade for a call with bad arguments; `None` when they are valid.
fn check_call(call: &ToolCall) -> Option<Grade> {
    let Ok(args) = serde_json::from_str::<Map<String, Value>>(&call.arguments) else {
        return Some(
            Grade::fail("Search arguments are not a JSON object")
                .expected("a JSON object with from and to fields")
                .actual(call.arguments.as_str()),
        );
    };
    let (Some(from), Some(to)) = (args.get("from"), args.get("to")) else {
        return Some(
            Grade::fail("Search missing required from/to arguments")
                .expected("from and to fields")
                .actual(call.arguments.as_str()),
        );
    };
    for (key, value) in [("from", from), ("to", to)] {
        if !value.as_str().is_some_and(is_upper) {
            return Some(
                Grade::fail("Airport code should be uppercase")
                    .expected("NYC")
                    .actual(value.clone())
                    .metadata("argument", key),
            );
        }
    }
    None
}

/// Python's `str.isupper()`: at least one cased character, and no lowercase one.
fn is_upper(text: &str) -> bool {
    text.chars().any(char::is_uppercase) && !text.chars().any(char::is_lowercase)
}

gavel_guest::pack! {
    graders: {
        /// Every search_flights call has uppercase `from` and `to` airport codes.
        search_args,
    },
}
