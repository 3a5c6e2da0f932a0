//! Built-in graders and the shared tool-grader pipeline.
//!
//! - [`letta`]: letta-evals' tool functions over `(sample, submission)`.
//! - [`evaldeck`]: evaldeck's code checks over the whole trajectory.
//! - [`expectations`]: a sample's `expected:` block, AND-combined as evaldeck does.

pub mod evaldeck;
pub mod expectations;
pub mod letta;

/// A name and its one-line description, as `gavel list` prints them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Described {
    pub name: &'static str,
    pub description: &'static str,
}

/// The grader kinds other than `tool`, as `gavel list graders` describes them.
pub const OTHER_KINDS: &[Described] = &[
    Described {
        name: "expectations",
        description: "the sample's `expected:` block, every key AND-combined as evaldeck does",
    },
    Described {
        name: "rubric",
        description: "LLM as judge over an OpenAI-compatible endpoint or Anthropic, or a Letta agent file's judge (`agent_file`) calling its grading tool (alias: model_judge)",
    },
    Described {
        name: "all",
        description: "passes when every sub-grader passes",
    },
    Described {
        name: "any",
        description: "passes when at least one sub-grader passes",
    },
];
