//! letta-evals' built-in tool functions over `(sample, submission)`, with its exact scores and
//! rationales.

use crate::grade::Grade;
use crate::grade::builtin::Described;
use crate::grade::python::{self, Regex, RegexError};
use crate::input::sample::Sample;

/// One of letta-evals' tool functions: a type implementing this, registered once in
/// [`FUNCTIONS`], which suite names and `gavel list` read.
trait LettaFunction {
    /// The name a grader's `function:` gives and the line `gavel list` prints.
    const DESCRIBED: Described;
    /// letta-evals' rationale of the 0 a row without a ground truth (or an empty one) scores;
    /// `None` for a function that reads no ground truth.
    const NO_GROUND_TRUTH: Option<&'static str> = Some("No ground_truth answer provided");

    /// The grade of `submission` against `ground_truth`, which is present and non-empty (and
    /// empty for a function that reads none). The grade's `submission` is left to the caller,
    /// which owns the text.
    fn grade(ground_truth: &str, submission: &str) -> Grade;

    /// What is wrong with a row's ground truth for this function, found before grading.
    fn ground_truth_problem(_ground_truth: &str) -> Option<String> {
        None
    }
}

/// A function as the registry holds it.
pub struct Registered {
    pub described: Described,
    no_ground_truth: Option<&'static str>,
    grade: fn(&str, &str) -> Grade,
    ground_truth_problem: fn(&str) -> Option<String>,
}

impl Registered {
    const fn of<F: LettaFunction>() -> Registered {
        Registered {
            described: F::DESCRIBED,
            no_ground_truth: F::NO_GROUND_TRUTH,
            grade: F::grade,
            ground_truth_problem: F::ground_truth_problem,
        }
    }
}

/// Every letta-evals function, in the order `gavel list` lists them.
pub const FUNCTIONS: &[Registered] = &[
    Registered::of::<ExactMatch>(),
    Registered::of::<Contains>(),
    Registered::of::<RegexMatch>(),
    Registered::of::<AsciiPrintableOnly>(),
];

/// A letta-evals function a grader names.
#[derive(Clone, Copy)]
pub struct Function(&'static Registered);

impl PartialEq for Function {
    fn eq(&self, other: &Function) -> bool {
        std::ptr::eq(self.0, other.0)
    }
}

impl Eq for Function {}

impl std::fmt::Debug for Function {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// How many offending characters `ascii_printable_only` lists before `(+N more)`.
const SHOWN_CHARACTERS: usize = 5;

impl Function {
    pub fn from_name(name: &str) -> Option<Function> {
        FUNCTIONS
            .iter()
            .find(|f| f.described.name == name)
            .map(Function)
    }

    pub fn name(self) -> &'static str {
        self.0.described.name
    }

    /// What is wrong with a row's ground truth for this function, found before grading:
    /// `regex_match` reads it as a Python regex, and a pattern that does not compile grades 0.
    pub fn ground_truth_problem(self, ground_truth: &str) -> Option<String> {
        (self.0.ground_truth_problem)(ground_truth)
    }

    /// Grades `submission`. A missing or empty ground truth scores 0, as in letta-evals, and so
    /// does an invalid ground-truth regex, with the reason. The grade's
    /// `submission` is left to the caller, which owns the text.
    pub fn grade(self, sample: &Sample<'_>, submission: &str) -> Grade {
        let ground_truth = sample.ground_truth_text().filter(|gt| !gt.is_empty());
        match (ground_truth, self.0.no_ground_truth) {
            (None, Some(rationale)) => Grade::scored(0.0, rationale),
            (ground_truth, _) => (self.0.grade)(ground_truth.unwrap_or_default(), submission),
        }
    }
}

struct ExactMatch;

impl LettaFunction for ExactMatch {
    const DESCRIBED: Described = Described {
        name: "exact_match",
        description: "submission equals the ground truth, both stripped of surrounding whitespace",
    };

    fn grade(ground_truth: &str, submission: &str) -> Grade {
        let matched = python::strip(submission) == python::strip(ground_truth);
        verdict(matched, ["Exact match: True", "Exact match: False"])
    }
}

struct Contains;

impl LettaFunction for Contains {
    const DESCRIBED: Described = Described {
        name: "contains",
        description: "submission contains the ground truth, ignoring case",
    };

    fn grade(ground_truth: &str, submission: &str) -> Grade {
        let found = python::Lowered::new(submission).contains(ground_truth);
        verdict(
            found,
            [
                "Contains ground_truth: True",
                "Contains ground_truth: False",
            ],
        )
    }
}

struct RegexMatch;

impl LettaFunction for RegexMatch {
    const DESCRIBED: Described = Described {
        name: "regex_match",
        description: "the ground truth, a Python regex, is found in the submission",
    };
    const NO_GROUND_TRUTH: Option<&'static str> = Some("No ground_truth regex pattern provided");

    fn grade(ground_truth: &str, submission: &str) -> Grade {
        match Regex::search_once(ground_truth, 0, submission) {
            Ok(matched) => verdict(matched, ["Regex match: True", "Regex match: False"]),
            Err(e @ RegexError::TooCostly) => {
                Grade::error(format!("Regex search could not finish: {e}"))
            }
            // letta-evals' own verdict: a 0 like any other, counted in the metric.
            Err(e) => Grade::scored(0.0, format!("Invalid regex pattern: {e}")),
        }
    }

    fn ground_truth_problem(ground_truth: &str) -> Option<String> {
        if ground_truth.is_empty() {
            return None;
        }
        Regex::cached(ground_truth, 0)
            .err()
            .filter(|e| !matches!(e, RegexError::TooCostly))
            .map(|e| format!("ground_truth is not a valid Python regex ({e}); it grades 0"))
    }
}

struct AsciiPrintableOnly;

impl LettaFunction for AsciiPrintableOnly {
    const DESCRIBED: Described = Described {
        name: "ascii_printable_only",
        description: "every character is printable ASCII (newlines allowed)",
    };
    const NO_GROUND_TRUTH: Option<&'static str> = None;

    fn grade(_ground_truth: &str, submission: &str) -> Grade {
        let mut bad: Vec<char> = submission
            .chars()
            .filter(|c| !matches!(c, '\n' | '\r' | ' '..='~'))
            .collect();
        if bad.is_empty() {
            return Grade::scored(1.0, "All characters printable ASCII (ignoring newlines)");
        }
        bad.sort_unstable();
        bad.dedup();
        let shown: Vec<String> = bad
            .iter()
            .take(SHOWN_CHARACTERS)
            .map(|&c| python::repr_char(c))
            .collect();
        let mut rationale = format!("Found non-printable ASCII characters: {}", shown.join(", "));
        if bad.len() > SHOWN_CHARACTERS {
            rationale.push_str(&format!(" (+{} more)", bad.len() - SHOWN_CHARACTERS));
        }
        Grade::scored(0.0, rationale)
    }
}

/// Score 1 or 0 with letta-evals' `"<label>: True"` / `"<label>: False"` rationale.
fn verdict(ok: bool, [yes, no]: [&'static str; 2]) -> Grade {
    if ok {
        Grade::scored(1.0, yes)
    } else {
        Grade::scored(0.0, no)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::grade::Status;
    use crate::grade::extract::Extractor;
    use crate::input::sample::{AgentState, Texts};
    use crate::input::trajectory::{Content, Event, ToolCall, ToolReturn, ToolStatus, Trajectory};
    use serde_json::{Map, Value};

    fn sample(ground_truth: Option<&str>) -> Sample<'_> {
        Sample {
            ground_truth: ground_truth.map(|gt| Texts::One(gt.to_string())),
            ..Sample::default()
        }
    }

    /// The function `name`, which must be registered.
    fn function(name: &str) -> Function {
        Function::from_name(name).expect("a registered function")
    }

    #[test]
    fn names_round_trip() {
        assert_eq!(FUNCTIONS.len(), 4);
        for f in FUNCTIONS {
            let name = f.described.name;
            assert_eq!(Function::from_name(name).map(Function::name), Some(name));
        }
        assert_eq!(Function::from_name("fuzzy"), None);
        assert_eq!(format!("{:?}", function("contains")), "contains");
    }

    #[test]
    fn empty_ground_truth_counts_as_missing() {
        let g = function("exact_match").grade(&sample(Some("")), "");
        assert_eq!((g.score, g.status), (0.0, Status::Fail));
        assert_eq!(g.rationale, "No ground_truth answer provided");
        let per_turn = Sample {
            ground_truth: Some(Texts::PerTurn(vec!["a".into()])),
            ..Sample::default()
        };
        let g = function("contains").grade(&per_turn, "a");
        assert_eq!(g.rationale, "No ground_truth answer provided");
    }

    #[test]
    fn invalid_regex_grades_0_with_the_reason() {
        let g = function("regex_match").grade(&sample(Some("(a")), "a");
        assert_eq!((g.score, g.status), (0.0, Status::Fail));
        assert!(
            g.rationale.starts_with("Invalid regex pattern: missing )"),
            "{}",
            g.rationale
        );
    }

    #[test]
    fn costly_regex_is_an_error_grade_not_a_hang() {
        let text = format!("{}b", "a".repeat(40));
        let g = function("regex_match").grade(&sample(Some(r"^(a|aa)+\1$")), &text);
        assert_eq!((g.score, g.status), (0.0, Status::Error));
        assert!(
            g.rationale
                .starts_with("Regex search could not finish: pattern is too costly")
        );
    }

    #[test]
    fn ascii_printable_lists_five_then_counts() {
        let g = function("ascii_printable_only")
            .grade(&sample(None), "\tabc\u{1}\u{2}\u{3}\u{4}\u{5}\r\n");
        assert_eq!(
            g.rationale,
            "Found non-printable ASCII characters: '\\x01', '\\x02', '\\x03', '\\x04', '\\x05' (+1 more)"
        );
        let g = function("ascii_printable_only").grade(&sample(None), "");
        assert_eq!((g.score, g.status), (1.0, Status::Pass));
    }

    // ---- conformance: every letta-evals vector, through these functions directly ----

    const VECTORS: &str = include_str!("../../../tests/data/conformance/letta-vectors.json");

    /// Maps letta-evals message dicts to the canonical model as the letta converter does: one
    /// event per message, one `ToolCall` per call of `tool_calls` (else the singular
    /// `tool_call`).
    fn letta_trajectory(turns: &Value) -> Trajectory<'static> {
        let text = |v: &Value| -> std::borrow::Cow<'static, str> {
            v.as_str().unwrap_or_default().to_string().into()
        };
        let content = |v: &Value| match v {
            Value::Array(parts) => Content::Parts(parts.iter().map(|p| text(&p["text"])).collect()),
            other => Content::Text(text(other)),
        };
        let to_call = |c: &Value| {
            Event::ToolCall(ToolCall {
                id: text(&c["tool_call_id"]),
                name: text(&c["name"]),
                arguments: text(&c["arguments"]).into(),
                failed: false,
            })
        };
        let turns = turns
            .as_array()
            .expect("turns")
            .iter()
            .map(|turn| {
                let mut events = Vec::new();
                for m in turn.as_array().expect("messages") {
                    match m["message_type"].as_str().expect("message_type") {
                        "assistant_message" => events.push(Event::Assistant {
                            content: content(&m["content"]),
                        }),
                        "user_message" => events.push(Event::User {
                            content: content(&m["content"]),
                        }),
                        "system_message" => events.push(Event::System {
                            text: text(&m["content"]),
                        }),
                        "reasoning_message" => events.push(Event::Reasoning {
                            text: text(&m["reasoning"]),
                        }),
                        "tool_call_message" => match m["tool_calls"].as_array() {
                            Some(calls) if !calls.is_empty() => {
                                events.extend(calls.iter().map(to_call));
                            }
                            _ => events.push(to_call(&m["tool_call"])),
                        },
                        "tool_return_message" => events.push(Event::ToolReturn(ToolReturn {
                            call_id: text(&m["tool_call_id"]),
                            json: false,
                            content: text(&m["tool_return"]).into(),
                            status: if m["status"] == "error" {
                                ToolStatus::Error
                            } else {
                                ToolStatus::Success
                            },
                        })),
                        other => events.push(Event::Other {
                            kind: other.to_string().into(),
                        }),
                    }
                }
                events
            })
            .collect();
        Trajectory {
            turns,
            ..Trajectory::default()
        }
    }

    fn vector_sample(v: &Value) -> Sample<'static> {
        let s = &v["sample"];
        Sample {
            ground_truth: s["ground_truth"].as_str().map(|gt| Texts::One(gt.into())),
            agent_state: serde_json::from_value::<Option<AgentState>>(v["agent_state"].clone())
                .unwrap_or_default(),
            ..Sample::default()
        }
    }

    fn object(v: &Value) -> Map<String, Value> {
        v.as_object().cloned().unwrap_or_default()
    }

    /// Runs one vector; returns a description of the mismatch, if any.
    fn check(v: &Value) -> Result<(), String> {
        let name = v["name"].as_str().expect("name");
        let sample = vector_sample(v);
        let expected = &v["expected"];
        match v["kind"].as_str() {
            Some("extractor") => {
                let trajectory = letta_trajectory(&v["trajectory"]);
                let extractor = Extractor::new(name, &object(&v["config"]));
                let got = match (extractor, expected.get("error")) {
                    // A static cause (a bad regex) is a config error before any sample runs.
                    (Err(e), Some(error)) => {
                        let want = error["message"].as_str().unwrap_or_default();
                        return if e.message.contains(want) {
                            Ok(())
                        } else {
                            Err(format!("config error {e}, want {error}"))
                        };
                    }
                    (Err(e), None) => return Err(format!("config error {e}")),
                    (Ok(None), _) => return Err("not a built-in".into()),
                    (Ok(Some(x)), _) => x.extract(&sample, &trajectory),
                };
                match (got, expected) {
                    (Err(_), e) if e.get("error").is_some() => Ok(()),
                    (Ok(None), Value::Null) => Ok(()),
                    (Ok(Some(text)), Value::String(want)) if text == *want => Ok(()),
                    (got, want) => Err(format!("got {got:?}, want {want}")),
                }
            }
            Some("grader") => {
                let function = Function::from_name(name).expect("a letta function");
                let config = &v["config"];
                let (grade, submission) = if config["mode"] == "direct" {
                    let submission = v["submission"].as_str().expect("submission");
                    (function.grade(&sample, submission), submission.to_string())
                } else {
                    // The extractor and function parts of letta-evals' tool-grader guard.
                    let trajectory = letta_trajectory(&v["trajectory"]);
                    let extractor_name = config["extractor"].as_str().unwrap_or("last_assistant");
                    let extractor =
                        Extractor::new(extractor_name, &object(&config["extractor_config"]))
                            .map_err(|e| e.to_string())?
                            .expect("built-in extractor");
                    if trajectory.is_empty() {
                        let g = Grade::scored(0.0, "Empty trajectory - agent produced no messages");
                        (g, String::new())
                    } else {
                        match extractor
                            .extract(&sample, &trajectory)
                            .map_err(|e| e.to_string())?
                            .filter(|s| !s.is_empty())
                        {
                            None => (
                                Grade::scored(0.0, "Empty submission - extractor found no content"),
                                String::new(),
                            ),
                            Some(s) => (function.grade(&sample, &s), s),
                        }
                    }
                };
                let want_score = expected["score"].as_f64().expect("score");
                let want_rationale = expected["rationale"].as_str().expect("rationale");
                let rationale_ok = grade.rationale == want_rationale;
                let status_ok = grade.status == Grade::scored(want_score, "").status;
                let submission_ok = expected
                    .get("submission")
                    .is_none_or(|want| want.as_str() == Some(submission.as_str()));
                if grade.score == want_score && rationale_ok && status_ok && submission_ok {
                    Ok(())
                } else {
                    Err(format!(
                        "got {grade:?} (submission {submission:?}), want {expected}"
                    ))
                }
            }
            other => Err(format!("unknown kind {other:?}")),
        }
    }

    #[test]
    fn letta_conformance_vectors() {
        let vectors: Vec<Value> = serde_json::from_str(VECTORS).expect("vector file");
        assert!(vectors.len() >= 84);
        let failures: Vec<String> = vectors
            .iter()
            .enumerate()
            .filter_map(|(i, v)| {
                check(v)
                    .err()
                    .map(|e| format!("vector {i} ({} {}): {e}", v["kind"], v["name"]))
            })
            .collect();
        assert!(
            failures.is_empty(),
            "{} failures:\n{}",
            failures.len(),
            failures.join("\n")
        );
    }
}
