//! Custom extractors: the value of a `FINAL ANSWER:` line, and the last fenced code block.

use gavel_guest::prelude::*;
use serde::Deserialize;

/// Config of `final_answer`; every key is optional.
#[derive(Deserialize)]
#[serde(deny_unknown_fields, default)]
struct FinalAnswer {
    /// The text that introduces the answer.
    marker: String,
}

impl Default for FinalAnswer {
    fn default() -> Self {
        FinalAnswer {
            marker: "FINAL ANSWER:".to_string(),
        }
    }
}

/// The value of the last line holding the marker (default `FINAL ANSWER:`), searching the
/// agent's messages from last to first; nothing when no line has it.
fn final_answer(input: &ExtractInput, config: &FinalAnswer) -> Option<String> {
    input
        .trajectory
        .assistant_messages()
        .rev()
        .find_map(|content| {
            let text = content.flatten();
            text.lines().rev().find_map(|line| {
                line.split_once(config.marker.as_str())
                    .map(|(_, answer)| answer.trim().to_string())
            })
        })
}

/// Config of `last_code_block`.
#[derive(Default, Deserialize)]
#[serde(deny_unknown_fields, default)]
struct CodeBlock {
    /// Only blocks whose info string starts with this language (e.g. `python`).
    language: Option<String>,
}

/// The body of the last fenced code block (```` ``` ````) in the agent's messages, optionally
/// only blocks of one language; nothing when there is none.
fn last_code_block(input: &ExtractInput, config: &CodeBlock) -> Option<String> {
    input
        .trajectory
        .assistant_messages()
        .rev()
        .find_map(|content| {
            fenced_blocks(&content.flatten())
                .into_iter()
                .rev()
                .find(|block| {
                    config
                        .language
                        .as_deref()
                        .is_none_or(|wanted| block.language == wanted)
                })
                .map(|block| block.body)
        })
}

struct Block {
    language: String,
    body: String,
}

/// Fenced code blocks in order. As in CommonMark, a fence may be indented and a block left open
/// runs to the end of the text.
fn fenced_blocks(text: &str) -> Vec<Block> {
    let mut blocks = Vec::new();
    let mut open: Option<(String, Vec<&str>)> = None;
    for line in text.lines() {
        let fence = line.trim_start().strip_prefix("```");
        match (&mut open, fence) {
            (None, Some(info)) => {
                let language = info.split_whitespace().next().unwrap_or("").to_string();
                open = Some((language, Vec::new()));
            }
            (Some(_), Some(rest)) if rest.trim().is_empty() => {
                if let Some((language, lines)) = open.take() {
                    blocks.push(Block {
                        language,
                        body: lines.join("\n"),
                    });
                }
            }
            (Some((_, lines)), _) => lines.push(line),
            (None, None) => {}
        }
    }
    if let Some((language, lines)) = open {
        blocks.push(Block {
            language,
            body: lines.join("\n"),
        });
    }
    blocks
}

gavel_guest::pack! {
    name: "answers",
    extractors: {
        /// The value of the last `FINAL ANSWER:` line (`marker` to change the marker).
        final_answer,
        /// The last fenced code block (`language` to pick blocks of one language).
        last_code_block,
    },
}
