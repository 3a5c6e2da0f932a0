//! Every built-in gavel grades with, by family: letta-evals' functions, evaldeck's checks, the
//! extractors and the grader kinds. Each family's members are registered once, beside their
//! code ([`letta::FUNCTIONS`], [`evaldeck::CHECKS`], [`extract::EXTRACTORS`], [`KINDS`]); the
//! suite reader's names, `gavel list` and the stand-ins' parity test read them from here.

use crate::grade::builtin::{Described, evaldeck, letta};
use crate::grade::extract;

/// Where a built-in applies.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Family {
    /// A `kind: tool` grader's `function:`, grading the extracted submission.
    LettaFunction,
    /// A `kind: tool` grader's `function:`, an `expected:` key and a case turn's grader type,
    /// each reading the whole trajectory.
    EvaldeckCheck,
    /// A `kind: tool` grader's `extractor:`.
    Extractor,
    /// A grader's `kind:` other than `tool`.
    Kind,
}

/// The grader kinds other than `tool`.
pub const KINDS: &[Described] = &[
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

impl Family {
    /// The families a grader is made of, in the order `gavel list graders` lists them.
    pub const GRADERS: [Family; 3] = [Family::LettaFunction, Family::EvaldeckCheck, Family::Kind];

    /// Where the family applies, as `gavel list` heads its section.
    pub fn title(self) -> &'static str {
        match self {
            Family::LettaFunction => {
                "kind: tool, letta-evals functions (grade the extracted submission)"
            }
            Family::EvaldeckCheck => {
                "kind: tool, evaldeck checks (read the whole trajectory; `config:` or the sample's `expected:`)"
            }
            Family::Extractor => "extractors",
            Family::Kind => "other kinds",
        }
    }

    /// The family's built-ins, in their registered order.
    pub fn members(self) -> Vec<Described> {
        match self {
            Family::LettaFunction => letta::FUNCTIONS.iter().map(|f| f.described).collect(),
            Family::EvaldeckCheck => evaldeck::CHECKS.iter().map(|c| c.described).collect(),
            Family::Extractor => extract::EXTRACTORS.iter().map(|e| e.described).collect(),
            Family::Kind => KINDS.to_vec(),
        }
    }

    /// The names of the family's built-ins.
    pub fn names(self) -> impl Iterator<Item = &'static str> {
        self.members().into_iter().map(|d| d.name)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::input::sample::{Expected, serde_fields};

    const LETTA_GRADERS: &str =
        include_str!("../../runtime/python/stubs/letta_evals/graders/builtin.py");
    const LETTA_EXTRACTORS: &str =
        include_str!("../../runtime/python/stubs/letta_evals/extractors/builtin.py");
    const EVALDECK_GRADERS: &str =
        include_str!("../../runtime/python/stubs/evaldeck/graders/code.py");
    const EVALDECK_CASE: &str = include_str!("../../runtime/python/stubs/evaldeck/test_case.py");

    /// The names `source` defines after `before` and up to `after`, in order.
    fn defined<'a>(source: &'a str, before: &str, after: &str) -> Vec<&'a str> {
        source
            .split(before)
            .skip(1)
            .filter_map(|rest| rest.split_once(after).map(|(name, _)| name))
            .collect()
    }

    #[test]
    fn the_python_stand_ins_offer_every_builtin() {
        let functions = defined(LETTA_GRADERS, "@grader\ndef ", "(");
        let names: Vec<&str> = Family::LettaFunction.names().collect();
        assert_eq!(functions, names, "letta_evals.graders.builtin");

        let extractors = defined(LETTA_EXTRACTORS, "@extractor\ndef ", "(");
        let names: Vec<&str> = Family::Extractor.names().collect();
        assert_eq!(extractors, names, "letta_evals.extractors.builtin");

        // evaldeck's graders, as a case turn's `type:` names them.
        let graders = defined(EVALDECK_GRADERS, "    name = ", "\n");
        for kind in evaldeck::CHECKS.iter().filter_map(|c| c.turn) {
            let name = kind.name();
            assert!(
                graders.iter().any(|g| g.ends_with(&format!("\"{name}\""))),
                "evaldeck.graders.code has no grader named {name:?}: {graders:?}"
            );
        }

        // The `expected:` block's keys: the checks' names and `custom`.
        let block = EVALDECK_CASE
            .split("class ExpectedBehavior(")
            .nth(1)
            .and_then(|rest| rest.split("\n\n").next())
            .expect("ExpectedBehavior");
        let fields = defined(block, "Field(\"", "\"");
        assert_eq!(
            fields,
            serde_fields::<Expected>(),
            "evaldeck.test_case.ExpectedBehavior"
        );
        for name in Family::EvaldeckCheck.names() {
            assert!(fields.contains(&name), "{name} is no `expected:` key");
        }
    }
}
