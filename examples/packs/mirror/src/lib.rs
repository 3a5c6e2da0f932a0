//! gavel's built-in extractors rebuilt from the SDK's trajectory helpers, with the built-ins'
//! config keys. Tests grade letta-evals' recorded extractor vectors through both and expect the
//! same text, which is what lets a pack author rely on the helpers.

use gavel_guest::prelude::*;
use serde::Deserialize;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Separator {
    #[serde(default = "newline")]
    separator: String,
}

fn newline() -> String {
    "\n".to_string()
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ToolName {
    tool_name: String,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Marker {
    marker: String,
    #[serde(default)]
    include_marker: bool,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct BlockLabel {
    block_label: String,
}

/// The last assistant message.
fn last_assistant(input: &ExtractInput, _: &NoConfig) -> String {
    input.trajectory.last_assistant()
}

/// The first assistant message.
fn first_assistant(input: &ExtractInput, _: &NoConfig) -> String {
    input.trajectory.first_assistant()
}

/// Every assistant message, joined with `separator`.
fn all_assistant(input: &ExtractInput, config: &Separator) -> String {
    input.trajectory.all_assistant(&config.separator)
}

/// The assistant messages of the last turn, joined with `separator`.
fn last_turn(input: &ExtractInput, config: &Separator) -> String {
    input.trajectory.last_turn(&config.separator)
}

/// The arguments of the first call to `tool_name`.
fn tool_arguments(input: &ExtractInput, config: &ToolName) -> String {
    input.trajectory.tool_arguments(&config.tool_name)
}

/// What the first call to `tool_name` returned.
fn tool_output(input: &ExtractInput, config: &ToolName) -> String {
    input.trajectory.tool_output(&config.tool_name)
}

/// The text after `marker` in the last assistant message that has it.
fn after_marker(input: &ExtractInput, config: &Marker) -> String {
    input
        .trajectory
        .after_marker(&config.marker, config.include_marker)
}

/// The value of the memory block labelled `block_label`.
fn memory_block(input: &ExtractInput, config: &BlockLabel) -> Result<String, Error> {
    input
        .sample
        .memory_block(&config.block_label)
        .map(str::to_string)
}

gavel_guest::pack! {
    extractors: {
        /// Built-in `last_assistant`, from the SDK helper.
        last_assistant,
        /// Built-in `first_assistant`, from the SDK helper.
        first_assistant,
        /// Built-in `all_assistant`, from the SDK helper.
        all_assistant,
        /// Built-in `last_turn`, from the SDK helper.
        last_turn,
        /// Built-in `tool_arguments`, from the SDK helper.
        tool_arguments,
        /// Built-in `tool_output`, from the SDK helper.
        tool_output,
        /// Built-in `after_marker`, from the SDK helper.
        after_marker,
        /// Built-in `memory_block`, from the SDK helper.
        memory_block,
    },
}
