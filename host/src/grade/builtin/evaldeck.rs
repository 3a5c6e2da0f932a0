//! evaldeck's code checks over the whole trajectory (final output, tool calls, steps, status),
//! with its fallback to the sample's `expected:` block and its messages.
//!
//! evaldeck's graders have no score: a pass scores 1.0, a fail or an error 0.0.

use std::borrow::Cow;
use std::collections::BTreeSet;

use serde_json::{Map, Value, json};

use crate::grade::builtin::Described;
use crate::grade::config::{ConfigError, ConfigKeys};
use crate::grade::python::{self, Regex, RegexError};
use crate::grade::{Grade, Status};
use crate::input::sample::{Expected, Sample, TurnGraderKind};
use crate::input::trajectory::{RunStatus, Trajectory};

/// One evaldeck check: its parameters, read from a grader's `config:` with evaldeck's names or,
/// left `None`, from the sample's `expected:` block when grading, as evaldeck's graders fall back
/// to the test case. A check is registered once, in [`CHECKS`]: suite names, `expected:` blocks,
/// turn graders and `gavel list` all read that list.
trait EvaldeckCheck: Grades + Sized + 'static {
    /// The name (the `expected:` key it reads) and the line `gavel list` prints.
    const DESCRIBED: Described;
    /// The type of a case turn's `graders:` entry that runs this check, if any.
    const TURN: Option<TurnGraderKind> = None;
    /// The check a grader's `config:` asks for.
    fn configured(config: &Map<String, Value>) -> Result<Self, ConfigError>;
    /// The check an `expected:` block asks for, reading its values from the block.
    fn asked(expected: &Expected) -> Option<Self>;
}

/// A check's grade of a sample: in full as a grader of its own, brief inside an `expected:`
/// block.
trait Grades: std::fmt::Debug + Send + Sync {
    fn grade(&self, sample: &Sample<'_>, detail: Detail) -> Grade;
}

/// A check as the registry holds it.
pub struct Registered {
    pub described: Described,
    /// The type of a case turn's `graders:` entry that runs the check, if any.
    pub turn: Option<TurnGraderKind>,
    configured: fn(&Map<String, Value>) -> Result<Check, ConfigError>,
    asked: fn(&Sample<'_>, &Expected) -> Option<Grade>,
}

impl Registered {
    const fn of<C: EvaldeckCheck>() -> Registered {
        Registered {
            described: C::DESCRIBED,
            turn: C::TURN,
            configured: configured::<C>,
            asked: asked::<C>,
        }
    }
}

fn configured<C: EvaldeckCheck>(config: &Map<String, Value>) -> Result<Check, ConfigError> {
    Ok(Check {
        name: C::DESCRIBED.name,
        check: Box::new(C::configured(config)?),
    })
}

fn asked<C: EvaldeckCheck>(sample: &Sample<'_>, expected: &Expected) -> Option<Grade> {
    C::asked(expected).map(|check| check.grade(sample, Detail::Brief))
}

/// Every evaldeck check, in evaldeck's order (`_build_graders_for_turn`, with the keys evaldeck
/// leaves unchecked after their nearest kin): the order an `expected:` block is checked in and
/// `gavel list` lists them in.
pub const CHECKS: &[Registered] = &[
    Registered::of::<OutputContains>(),
    Registered::of::<OutputNotContains>(),
    Registered::of::<OutputEquals>(),
    Registered::of::<OutputMatches>(),
    Registered::of::<ToolsCalled>(),
    Registered::of::<ToolsNotCalled>(),
    Registered::of::<ToolCallOrder>(),
    Registered::of::<MaxSteps>(),
    Registered::of::<MinSteps>(),
    Registered::of::<MaxToolCalls>(),
    Registered::of::<MaxLlmCalls>(),
    Registered::of::<TaskCompleted>(),
];

/// A configured evaldeck check.
#[derive(Debug)]
pub struct Check {
    name: &'static str,
    check: Box<dyn Grades>,
}

impl Check {
    /// The check `name` (an `expected:` key) configured with evaldeck's constructor parameter
    /// names; `Ok(None)` when `name` is not an evaldeck check.
    pub fn new(name: &str, config: &Map<String, Value>) -> Result<Option<Check>, ConfigError> {
        CHECKS
            .iter()
            .find(|c| c.described.name == name)
            .map(|c| (c.configured)(config))
            .transpose()
    }

    /// The check's name, as the `expected:` key it reads.
    pub fn name(&self) -> &'static str {
        self.name
    }

    /// Grades the sample's trajectory.
    pub fn grade(&self, sample: &Sample<'_>) -> Grade {
        self.check.grade(sample, Detail::Full)
    }
}

/// The check a turn's `graders:` entry of `kind` runs, configured by its `params` (left empty,
/// the check reads the turn's `expected:` block, as evaldeck's graders do); `Ok(None)` for the
/// kinds that are no check (`llm`, `llm_rubric`, `code`).
pub fn turn_check(
    kind: TurnGraderKind,
    params: &Map<String, Value>,
) -> Result<Option<Check>, ConfigError> {
    CHECKS
        .iter()
        .find(|c| c.turn == Some(kind))
        .map(|c| (c.configured)(params))
        .transpose()
}

/// The checks `expected` asks for, each with the status and rationale of its grade alone, in
/// the order of [`CHECKS`].
pub fn outcomes(sample: &Sample<'_>, expected: &Expected) -> Vec<(&'static str, Grade)> {
    CHECKS
        .iter()
        .filter_map(|c| (c.asked)(sample, expected).map(|grade| (c.described.name, grade)))
        .collect()
}

fn listed(list: &Option<Vec<String>>) -> bool {
    list.as_ref().is_some_and(|l| !l.is_empty())
}

/// The values of `output_contains` or `output_not_contains`, from the config or the block.
fn values_config(config: &Map<String, Value>) -> Result<(Option<Vec<String>>, bool), ConfigError> {
    let keys = ConfigKeys::new(config, &["values", "case_sensitive", "field"])?;
    // evaldeck accepts `field` and always checks the output; so does gavel.
    keys.string("field")?;
    let values = keys.strings("values")?;
    Ok((values, keys.bool("case_sensitive")?.unwrap_or(false)))
}

fn from_case(
    expected: Option<&Expected>,
    pick: fn(&Expected) -> Option<&Vec<String>>,
) -> &[String] {
    expected.and_then(pick).map_or(&[][..], Vec::as_slice)
}

#[derive(Debug)]
struct OutputContains {
    values: Option<Vec<String>>,
    case_sensitive: bool,
}

impl EvaldeckCheck for OutputContains {
    const DESCRIBED: Described = Described {
        name: "output_contains",
        description: "the final output contains every one of `values` (case-insensitive by default)",
    };
    const TURN: Option<TurnGraderKind> = Some(TurnGraderKind::Contains);

    fn configured(config: &Map<String, Value>) -> Result<Self, ConfigError> {
        let (values, case_sensitive) = values_config(config)?;
        Ok(OutputContains {
            values,
            case_sensitive,
        })
    }

    fn asked(expected: &Expected) -> Option<Self> {
        listed(&expected.output_contains).then_some(OutputContains {
            values: None,
            case_sensitive: false,
        })
    }
}

impl Grades for OutputContains {
    fn grade(&self, sample: &Sample<'_>, detail: Detail) -> Grade {
        let values = self.values.as_deref().unwrap_or_else(|| {
            from_case(sample.expected.as_deref(), |e| e.output_contains.as_ref())
        });
        let output = sample.trajectory().final_output();
        output_contains(true, values, self.case_sensitive, output, detail)
    }
}

#[derive(Debug)]
struct OutputNotContains {
    values: Option<Vec<String>>,
    case_sensitive: bool,
}

impl EvaldeckCheck for OutputNotContains {
    const DESCRIBED: Described = Described {
        name: "output_not_contains",
        description: "the final output contains none of `values`",
    };
    const TURN: Option<TurnGraderKind> = Some(TurnGraderKind::NotContains);

    fn configured(config: &Map<String, Value>) -> Result<Self, ConfigError> {
        let (values, case_sensitive) = values_config(config)?;
        Ok(OutputNotContains {
            values,
            case_sensitive,
        })
    }

    fn asked(expected: &Expected) -> Option<Self> {
        listed(&expected.output_not_contains).then_some(OutputNotContains {
            values: None,
            case_sensitive: false,
        })
    }
}

impl Grades for OutputNotContains {
    fn grade(&self, sample: &Sample<'_>, detail: Detail) -> Grade {
        let values = self.values.as_deref().unwrap_or_else(|| {
            from_case(sample.expected.as_deref(), |e| {
                e.output_not_contains.as_ref()
            })
        });
        let output = sample.trajectory().final_output();
        output_contains(false, values, self.case_sensitive, output, detail)
    }
}

#[derive(Debug)]
struct OutputEquals {
    expected: Option<String>,
    normalize_whitespace: bool,
}

impl EvaldeckCheck for OutputEquals {
    const DESCRIBED: Described = Described {
        name: "output_equals",
        description: "the final output equals `expected` (whitespace normalised by default)",
    };
    const TURN: Option<TurnGraderKind> = Some(TurnGraderKind::Equals);

    fn configured(config: &Map<String, Value>) -> Result<Self, ConfigError> {
        // `strip_whitespace` is the name gavel's documentation gives the same switch.
        let keys = ConfigKeys::new(
            config,
            &[
                "expected",
                "field",
                "normalize_whitespace",
                "strip_whitespace",
            ],
        )?;
        keys.string("field")?;
        let normalize = match keys.bool("normalize_whitespace")? {
            Some(normalize) => Some(normalize),
            None => keys.bool("strip_whitespace")?,
        };
        Ok(OutputEquals {
            // An empty `expected` falls back to the sample, as evaldeck's `or` does.
            expected: keys.string("expected")?.filter(|e| !e.is_empty()),
            normalize_whitespace: normalize.unwrap_or(true),
        })
    }

    fn asked(expected: &Expected) -> Option<Self> {
        expected.output_equals.is_some().then_some(OutputEquals {
            expected: None,
            normalize_whitespace: true,
        })
    }
}

impl Grades for OutputEquals {
    fn grade(&self, sample: &Sample<'_>, detail: Detail) -> Grade {
        let Some(want) = self.expected.as_deref().or_else(|| {
            sample
                .expected
                .as_deref()
                .and_then(|e| e.output_equals.as_deref())
        }) else {
            return Grade::pass("No expected value to check");
        };
        let output = sample.trajectory().final_output().unwrap_or_default();
        let normal = |s: &str| {
            if self.normalize_whitespace {
                python::split_whitespace(s).collect::<Vec<_>>().join(" ")
            } else {
                s.to_string()
            }
        };
        let (want, got) = (normal(want), normal(&output));
        let grade = if got == want {
            Grade::pass("Output matches expected")
        } else {
            detail.add(Grade::fail("Output does not match expected"), |g| {
                g.with_expected_actual(json!(want), json!(got))
            })
        };
        detail.add(grade, |g| g.with_submission(output))
    }
}

#[derive(Debug)]
struct OutputMatches {
    pattern: Option<Regex>,
    flags: u32,
}

impl EvaldeckCheck for OutputMatches {
    const DESCRIBED: Described = Described {
        name: "output_matches",
        description: "the Python regex `pattern` (with `flags`) is found in the final output",
    };
    const TURN: Option<TurnGraderKind> = Some(TurnGraderKind::Regex);

    fn configured(config: &Map<String, Value>) -> Result<Self, ConfigError> {
        let keys = ConfigKeys::new(config, &["pattern", "field", "flags"])?;
        keys.string("field")?;
        let flags = match keys.count("flags")? {
            None => 0,
            Some(bits) => u32::try_from(bits).unwrap_or(u32::MAX),
        };
        Regex::new("", flags).map_err(|e| ConfigError::new("flags", e.to_string()))?;
        let pattern = match keys.string("pattern")?.filter(|p| !p.is_empty()) {
            None => None,
            Some(p) => Some(
                Regex::new(&p, flags)
                    .map_err(|e| ConfigError::new("pattern", format!("invalid regex: {e}")))?,
            ),
        };
        Ok(OutputMatches { pattern, flags })
    }

    fn asked(expected: &Expected) -> Option<Self> {
        expected.output_matches.is_some().then_some(OutputMatches {
            pattern: None,
            flags: 0,
        })
    }
}

impl Grades for OutputMatches {
    fn grade(&self, sample: &Sample<'_>, detail: Detail) -> Grade {
        let output = sample.trajectory().final_output().unwrap_or_default();
        let from_case = sample
            .expected
            .as_deref()
            .and_then(|e| e.output_matches.as_deref());
        let (source, matched) = match (&self.pattern, from_case) {
            (Some(regex), _) => (regex.as_str(), regex.is_match(&output)),
            (None, Some(source)) => match Regex::search_once(source, self.flags, &output) {
                Err(e @ RegexError::TooCostly) => (source, Err(e)),
                Err(e) => return Grade::error(format!("Invalid regex: {e}")),
                found => (source, found),
            },
            (None, None) => return Grade::pass("No pattern to check"),
        };
        let grade = match matched {
            Ok(true) => Grade::pass(["Output matches pattern: ", source].concat()),
            Ok(false) => detail.add(
                Grade::fail(["Output does not match pattern: ", source].concat()),
                |g| g.with_expected_actual(json!(source), json!(output)),
            ),
            Err(e) => Grade::error(format!("Regex search could not finish: {e}")),
        };
        detail.add(grade, |g| g.with_submission(output))
    }
}

#[derive(Debug)]
struct ToolsCalled {
    required: Option<Vec<String>>,
}

impl EvaldeckCheck for ToolsCalled {
    const DESCRIBED: Described = Described {
        name: "tools_called",
        description: "every tool in `required` was called",
    };
    const TURN: Option<TurnGraderKind> = Some(TurnGraderKind::ToolCalled);

    fn configured(config: &Map<String, Value>) -> Result<Self, ConfigError> {
        Ok(ToolsCalled {
            required: ConfigKeys::new(config, &["required"])?.strings("required")?,
        })
    }

    fn asked(expected: &Expected) -> Option<Self> {
        listed(&expected.tools_called).then_some(ToolsCalled { required: None })
    }
}

impl Grades for ToolsCalled {
    fn grade(&self, sample: &Sample<'_>, detail: Detail) -> Grade {
        let required = self
            .required
            .as_deref()
            .unwrap_or_else(|| from_case(sample.expected.as_deref(), |e| e.tools_called.as_ref()));
        if required.is_empty() {
            return Grade::pass("No required tools to check");
        }
        let called = sample.trajectory().tools_called();
        if required.iter().all(|t| called.contains(&t.as_str())) {
            return Grade::pass(
                [
                    "All ",
                    itoa::Buffer::new().format(required.len()),
                    " required tools were called",
                ]
                .concat(),
            );
        }
        let called: BTreeSet<&str> = called.into_iter().collect();
        let missing: BTreeSet<&str> = required
            .iter()
            .map(String::as_str)
            .filter(|t| !called.contains(t))
            .collect();
        let missing: Vec<&str> = missing.into_iter().collect();
        let grade = Grade::fail(format!(
            "Required tools not called: {}",
            python::repr_str_list(&missing)
        ));
        detail.add(grade, |g| {
            g.with_expected_actual(json!(sorted(required)), json!(called))
        })
    }
}

#[derive(Debug)]
struct ToolsNotCalled {
    forbidden: Option<Vec<String>>,
}

impl EvaldeckCheck for ToolsNotCalled {
    const DESCRIBED: Described = Described {
        name: "tools_not_called",
        description: "no tool in `forbidden` was called",
    };
    const TURN: Option<TurnGraderKind> = Some(TurnGraderKind::ToolNotCalled);

    fn configured(config: &Map<String, Value>) -> Result<Self, ConfigError> {
        Ok(ToolsNotCalled {
            forbidden: ConfigKeys::new(config, &["forbidden"])?.strings("forbidden")?,
        })
    }

    fn asked(expected: &Expected) -> Option<Self> {
        listed(&expected.tools_not_called).then_some(ToolsNotCalled { forbidden: None })
    }
}

impl Grades for ToolsNotCalled {
    fn grade(&self, sample: &Sample<'_>, detail: Detail) -> Grade {
        let forbidden = self.forbidden.as_deref().unwrap_or_else(|| {
            from_case(sample.expected.as_deref(), |e| e.tools_not_called.as_ref())
        });
        if forbidden.is_empty() {
            return Grade::pass("No forbidden tools to check");
        }
        let called: BTreeSet<&str> = sample.trajectory().tools_called().into_iter().collect();
        let violated: Vec<&str> = called
            .iter()
            .copied()
            .filter(|t| forbidden.iter().any(|f| f == t))
            .collect();
        if violated.is_empty() {
            return Grade::pass("No forbidden tools were called");
        }
        let grade = Grade::fail(format!(
            "Forbidden tools were called: {}",
            python::repr_str_list(&violated)
        ));
        detail.add(grade, |g| {
            g.with_expected_actual(
                json!(format!(
                    "None of: {}",
                    python::repr_str_list(&sorted(forbidden))
                )),
                json!(called),
            )
        })
    }
}

#[derive(Debug)]
struct ToolCallOrder {
    expected_order: Option<Vec<String>>,
}

impl EvaldeckCheck for ToolCallOrder {
    const DESCRIBED: Described = Described {
        name: "tool_call_order",
        description: "the tools in `expected_order` were called in that order (others may interleave)",
    };
    const TURN: Option<TurnGraderKind> = Some(TurnGraderKind::ToolOrder);

    fn configured(config: &Map<String, Value>) -> Result<Self, ConfigError> {
        Ok(ToolCallOrder {
            expected_order: ConfigKeys::new(config, &["expected_order"])?
                .strings("expected_order")?,
        })
    }

    fn asked(expected: &Expected) -> Option<Self> {
        listed(&expected.tool_call_order).then_some(ToolCallOrder {
            expected_order: None,
        })
    }
}

impl Grades for ToolCallOrder {
    fn grade(&self, sample: &Sample<'_>, detail: Detail) -> Grade {
        let order = self.expected_order.as_deref().unwrap_or_else(|| {
            from_case(sample.expected.as_deref(), |e| e.tool_call_order.as_ref())
        });
        if order.is_empty() {
            return Grade::pass("No expected order to check");
        }
        let called = sample.trajectory().tools_called();
        // Greedy subsequence: other calls may come in between.
        let mut next = order.iter().peekable();
        for tool in &called {
            if next.peek().is_some_and(|want| want.as_str() == *tool) {
                next.next();
            }
        }
        if next.peek().is_none() {
            Grade::pass("Tools called in correct order")
        } else {
            detail.add(Grade::fail("Tools not called in expected order"), |g| {
                g.with_expected_actual(json!(order), json!(called))
            })
        }
    }
}

/// The four bounds on a count: the count a trajectory has, the bound a config or a block sets,
/// and evaldeck's messages.
macro_rules! bound_check {
    ($type:ident, $field:ident, $turn:expr, $limit:expr, $count:expr, $description:literal) => {
        #[derive(Debug)]
        struct $type {
            $field: Option<u64>,
        }

        impl EvaldeckCheck for $type {
            const DESCRIBED: Described = Described {
                name: stringify!($field),
                description: $description,
            };
            const TURN: Option<TurnGraderKind> = $turn;

            fn configured(config: &Map<String, Value>) -> Result<Self, ConfigError> {
                let field = stringify!($field);
                Ok($type {
                    $field: ConfigKeys::new(config, &[field])?.count(field)?,
                })
            }

            fn asked(expected: &Expected) -> Option<Self> {
                expected.$field.is_some().then_some($type { $field: None })
            }
        }

        impl Grades for $type {
            fn grade(&self, sample: &Sample<'_>, detail: Detail) -> Grade {
                let count: fn(&Trajectory<'_>) -> usize = $count;
                $limit.grade(
                    count(sample.trajectory()),
                    self.$field
                        .or_else(|| sample.expected.as_deref().and_then(|e| e.$field)),
                    detail,
                )
            }
        }
    };
}

bound_check!(
    MaxSteps,
    max_steps,
    Some(TurnGraderKind::MaxSteps),
    Limit::MAX_STEPS,
    |t| t.step_count(),
    "at most `max_steps` steps (LLM calls, tool calls, reasoning, human input)"
);
bound_check!(
    MinSteps,
    min_steps,
    None,
    Limit::MIN_STEPS,
    |t| t.step_count(),
    "at least `min_steps` steps"
);
bound_check!(
    MaxToolCalls,
    max_tool_calls,
    Some(TurnGraderKind::MaxToolCalls),
    Limit::MAX_TOOL_CALLS,
    |t| t.tool_calls().count(),
    "at most `max_tool_calls` tool calls"
);
bound_check!(
    MaxLlmCalls,
    max_llm_calls,
    Some(TurnGraderKind::MaxLlmCalls),
    Limit::MAX_LLM_CALLS,
    |t| t.llm_calls().count(),
    "at most `max_llm_calls` LLM calls"
);

#[derive(Debug)]
struct TaskCompleted {
    require_success: bool,
}

impl EvaldeckCheck for TaskCompleted {
    const DESCRIBED: Described = Described {
        name: "task_completed",
        description: "the run succeeded with a non-empty output (or, with `require_success: false`, did not)",
    };
    const TURN: Option<TurnGraderKind> = Some(TurnGraderKind::TaskCompleted);

    fn configured(config: &Map<String, Value>) -> Result<Self, ConfigError> {
        Ok(TaskCompleted {
            require_success: ConfigKeys::new(config, &["require_success"])?
                .bool("require_success")?
                .unwrap_or(true),
        })
    }

    fn asked(expected: &Expected) -> Option<Self> {
        // The block's own `task_completed` overrides this default when grading.
        expected.task_completed.is_some().then_some(TaskCompleted {
            require_success: true,
        })
    }
}

impl Grades for TaskCompleted {
    fn grade(&self, sample: &Sample<'_>, detail: Detail) -> Grade {
        let trajectory = sample.trajectory();
        // The sample's expectation overrides the configured one, as in evaldeck.
        let want = sample
            .expected
            .as_deref()
            .and_then(|e| e.task_completed)
            .unwrap_or(self.require_success);
        let has_output = trajectory.final_output().is_some_and(|o| !o.is_empty());
        let status = trajectory.status;
        let completed = status == RunStatus::Success && has_output;
        match (want, completed) {
            (true, true) => Grade::pass("Task completed successfully"),
            (false, false) => Grade::pass("Task correctly did not complete (as expected)"),
            (true, false) => detail.add(
                Grade::fail(format!(
                    "Task not completed. Status: {}, Output: {}",
                    trace_status(status),
                    if has_output { "True" } else { "False" }
                )),
                |g| {
                    g.with_expected_actual(
                        json!("completed"),
                        json!(format!("status={}", trace_status(status))),
                    )
                },
            ),
            (false, true) => detail.add(
                Grade::fail("Task completed but was expected to fail"),
                |g| g.with_expected_actual(json!("not completed"), json!("completed")),
            ),
        }
    }
}

/// A run status as evaldeck formats its `TraceStatus` member in a message under CPython 3.11:
/// `TraceStatus.FAILURE`.
fn trace_status(status: RunStatus) -> String {
    ["TraceStatus.", &status.as_str().to_ascii_uppercase()].concat()
}

/// What a check's grade carries besides its status and rationale.
#[derive(Clone, Copy)]
enum Detail {
    /// Its submission, expected and actual values, as a grader of its own.
    Full,
    /// Nothing more.
    Brief,
}

impl Detail {
    /// `grade` with what `details` adds to it, when this detail keeps it.
    fn add(self, grade: Grade, details: impl FnOnce(Grade) -> Grade) -> Grade {
        match self {
            Detail::Full => details(grade),
            Detail::Brief => grade,
        }
    }
}

fn output_contains(
    contains: bool,
    values: &[String],
    case_sensitive: bool,
    output: Option<Cow<'_, str>>,
    detail: Detail,
) -> Grade {
    if values.is_empty() {
        return Grade::pass("No values to check");
    }
    let text = output.as_deref().unwrap_or_default();
    let lowered = python::Lowered::new(text);
    let present = |value: &String| {
        if case_sensitive {
            text.contains(value.as_str())
        } else {
            lowered.contains(value)
        }
    };
    let grade = if contains {
        let missing: Vec<&String> = values.iter().filter(|v| !present(v)).collect();
        if missing.is_empty() {
            Grade::pass(
                [
                    "All ",
                    itoa::Buffer::new().format(values.len()),
                    " values found in output",
                ]
                .concat(),
            )
        } else {
            let grade = Grade::fail(format!(
                "Missing values in output: {}",
                python::repr_str_list(&missing)
            ));
            detail.add(grade, |g| {
                g.with_expected_actual(json!(values), json!(output))
            })
        }
    } else {
        let found: Vec<&String> = values.iter().filter(|v| present(v)).collect();
        if found.is_empty() {
            Grade::pass("No forbidden values found")
        } else {
            let grade = Grade::fail(format!(
                "Forbidden values found in output: {}",
                python::repr_str_list(&found)
            ));
            detail.add(grade, |g| {
                g.with_expected_actual(
                    json!(format!("None of: {}", python::repr_str_list(values))),
                    json!(output),
                )
            })
        }
    };
    detail.add(grade, |g| g.with_submission(text))
}

fn sorted(items: &[String]) -> Vec<&str> {
    let mut items: Vec<&str> = items.iter().map(String::as_str).collect();
    items.sort_unstable();
    items
}

/// A bound on a count, with evaldeck's messages.
struct Limit {
    at_least: bool,
    /// The count goes between the first two pieces, the bound between the last two.
    within: [&'static str; 3],
    beyond: [&'static str; 3],
    unset: &'static str,
}

impl Limit {
    const MAX_STEPS: Limit = Limit {
        at_least: false,
        within: ["Completed in ", " steps (max: ", ")"],
        beyond: ["Too many steps: ", " > ", ""],
        unset: "No max steps defined",
    };
    const MIN_STEPS: Limit = Limit {
        at_least: true,
        within: ["Completed in ", " steps (min: ", ")"],
        beyond: ["Too few steps: ", " < ", ""],
        unset: "No min steps defined",
    };
    const MAX_TOOL_CALLS: Limit = Limit {
        at_least: false,
        within: ["Made ", " tool calls (max: ", ")"],
        beyond: ["Too many tool calls: ", " > ", ""],
        unset: "No max tool calls defined",
    };
    const MAX_LLM_CALLS: Limit = Limit {
        at_least: false,
        within: ["Made ", " LLM calls (max: ", ")"],
        beyond: ["Too many LLM calls: ", " > ", ""],
        unset: "No max LLM calls defined",
    };

    fn grade(&self, count: usize, bound: Option<u64>, detail: Detail) -> Grade {
        let Some(bound) = bound else {
            return Grade::pass(self.unset);
        };
        let count = count as u64;
        let (mut count_text, mut bound_text) = (itoa::Buffer::new(), itoa::Buffer::new());
        let (count_text, bound_text) = (count_text.format(count), bound_text.format(bound));
        let fill = |[before, between, after]: [&str; 3]| {
            [before, count_text, between, bound_text, after].concat()
        };
        let ok = if self.at_least {
            count >= bound
        } else {
            count <= bound
        };
        if ok {
            Grade::pass(fill(self.within))
        } else {
            detail.add(Grade::fail(fill(self.beyond)), |g| {
                g.with_expected_actual(json!(bound), json!(count))
            })
        }
    }
}

/// evaldeck's CompositeGrader: with `all`, pass when every sub-grade passes; otherwise when
/// at least one does. Sub-grades in error count as not passed; the composite itself is never in
/// error. The sub-grades are listed in `metadata.results`.
pub fn combine(all: bool, sub: Vec<(String, Grade)>) -> Grade {
    let total = sub.len();
    let passed = sub.iter().filter(|(_, g)| g.status == Status::Pass).count();
    let ok = if all { passed == total } else { passed > 0 };
    let mut rationale = format!("{passed}/{total} graders passed");
    if !all {
        rationale.push_str(" (require any)");
    }
    let results: Vec<Value> = sub
        .into_iter()
        .map(|(name, grade)| {
            let mut entry = json!({ "name": name });
            if let (Value::Object(entry), Ok(Value::Object(fields))) =
                (&mut entry, serde_json::to_value(grade))
            {
                entry.extend(fields);
            }
            entry
        })
        .collect();
    let grade = if ok {
        Grade::pass(rationale)
    } else {
        Grade::fail(rationale)
    };
    grade.with_metadata("results", Value::Array(results))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::grade::builtin::expectations;
    use crate::input::trajectory::{
        Content, Event, LlmCall, Tokens, ToolCall, ToolReturn, ToolStatus, Trajectory,
    };

    fn object(v: &Value) -> Map<String, Value> {
        v.as_object().cloned().unwrap_or_default()
    }

    /// The text evaldeck 0.1.5 gives under CPython 3.11 for a failed run with output:
    /// `Task not completed. Status: TraceStatus.FAILURE, Output: True`, actual
    /// `status=TraceStatus.FAILURE`.
    #[test]
    fn task_completed_says_what_evaldeck_says() {
        let sample = Sample {
            trajectory: Some(Trajectory {
                turns: vec![vec![Event::Assistant {
                    content: Content::Text("x".into()),
                }]],
                status: RunStatus::Failure,
                ..Trajectory::default()
            }),
            ..Sample::default()
        };
        let check = Check::new("task_completed", &Map::new()).unwrap().unwrap();
        let grade = check.grade(&sample);
        assert_eq!(grade.status, Status::Fail);
        assert_eq!(
            grade.rationale,
            "Task not completed. Status: TraceStatus.FAILURE, Output: True"
        );
        let json = serde_json::to_value(&grade).unwrap();
        assert_eq!(json["actual"], "status=TraceStatus.FAILURE");
    }

    #[test]
    fn config_is_strict_and_names_the_key() {
        let err = |name: &str, v: Value| Check::new(name, &object(&v)).unwrap_err();
        let e = err("output_contains", json!({"value": ["a"]}));
        assert_eq!(e.field, "value");
        assert!(e.message.contains("`values`"), "{e}");
        let e = err("output_equals", json!({"strip_whitespaces": false}));
        assert_eq!(e.field, "strip_whitespaces");
        // gavel's documented name for evaldeck's `normalize_whitespace`.
        let check = Check::new(
            "output_equals",
            &object(&json!({"strip_whitespace": false})),
        );
        let sample = Sample {
            trajectory: Some(Trajectory {
                turns: vec![vec![Event::Assistant {
                    content: Content::Text("a  b".into()),
                }]],
                ..Trajectory::default()
            }),
            ..Sample::default()
        };
        let strict = |config: Value| {
            let check = Check::new("output_equals", &object(&config))
                .unwrap()
                .unwrap();
            check.grade(&sample).status
        };
        // Unnormalised, "a  b" is not "a b".
        assert_eq!(
            strict(json!({"expected": "a b", "strip_whitespace": false})),
            Status::Fail
        );
        assert_eq!(strict(json!({"expected": "a b"})), Status::Pass);
        assert!(check.is_ok());
        let e = err("max_steps", json!({"max_steps": -1}));
        assert_eq!(e.field, "max_steps");
        let e = err("tools_called", json!({"required": "search"}));
        assert!(e.message.contains("list of strings"), "{e}");
        let e = err("output_matches", json!({"pattern": "("}));
        assert_eq!(e.field, "pattern");
        let e = err("output_matches", json!({"pattern": "a", "flags": 4}));
        assert_eq!(e.field, "flags");
        assert!(Check::new("contains", &Map::new()).unwrap().is_none());
        for c in CHECKS {
            let check = Check::new(c.described.name, &Map::new())
                .unwrap()
                .expect("built-in");
            assert_eq!(check.name(), c.described.name);
        }
    }

    #[test]
    fn min_steps_mirrors_max_steps() {
        let sample = Sample {
            trajectory: Some(Trajectory {
                turns: vec![vec![Event::Reasoning { text: "t".into() }]],
                ..Trajectory::default()
            }),
            ..Sample::default()
        };
        let check = |v: Value| Check::new("min_steps", &object(&v)).unwrap().unwrap();
        let g = check(json!({"min_steps": 2})).grade(&sample);
        assert_eq!(
            (g.status, &*g.rationale),
            (Status::Fail, "Too few steps: 1 < 2")
        );
        let g = check(json!({"min_steps": 1})).grade(&sample);
        assert_eq!(g.status, Status::Pass);
    }

    #[test]
    fn combine_lists_sub_results() {
        let g = combine(
            true,
            vec![
                ("a".into(), Grade::pass("ok")),
                ("b".into(), Grade::error("bad")),
            ],
        );
        assert_eq!(
            (g.status, &*g.rationale),
            (Status::Fail, "1/2 graders passed")
        );
        let results = g.details().metadata["results"].as_array().unwrap();
        assert_eq!(results[1]["name"], "b");
        assert_eq!(results[1]["status"], "error");
        assert_eq!(combine(true, vec![]).status, Status::Pass);
        assert_eq!(combine(false, vec![]).status, Status::Fail);
    }

    #[test]
    fn each_turn_grader_type_runs_the_check_of_its_evaldeck_grader() {
        for name in TurnGraderKind::names() {
            let kind = TurnGraderKind::of(name).expect("a known type");
            let runs: Vec<&str> = CHECKS
                .iter()
                .filter(|c| c.turn == Some(kind))
                .map(|c| c.described.name)
                .collect();
            assert_eq!(runs, Vec::from_iter(check_name(name)), "type `{name}`");
            let check = turn_check(kind, &Map::new()).expect("no params");
            assert_eq!(check.map(|c| c.name()), check_name(name), "type `{name}`");
        }
    }

    // ---- conformance: every evaldeck vector of the required kinds ----

    const VECTORS: &str = include_str!("../../../tests/data/conformance/evaldeck-vectors.json");

    /// evaldeck class names -> gavel check names.
    fn check_name(evaldeck: &str) -> Option<&'static str> {
        Some(match evaldeck {
            "contains" => "output_contains",
            "not_contains" => "output_not_contains",
            "equals" => "output_equals",
            "regex" => "output_matches",
            "tool_called" => "tools_called",
            "tool_not_called" => "tools_not_called",
            "tool_order" => "tool_call_order",
            "max_steps" => "max_steps",
            "max_tool_calls" => "max_tool_calls",
            "max_llm_calls" => "max_llm_calls",
            "task_completed" => "task_completed",
            _ => return None,
        })
    }

    /// Maps an evaldeck trace to the canonical model as the evaldeck converter does: one turn,
    /// an event per step (a tool call followed by its return when it has a result), then the
    /// output as a final assistant message.
    fn evaldeck_trajectory(trace: &Value) -> Trajectory<'_> {
        let text = |v| Value::as_str(v).map(std::borrow::Cow::Borrowed);
        let mut events = Vec::new();
        for step in trace["steps"].as_array().into_iter().flatten() {
            match step["type"].as_str().expect("step type") {
                "llm_call" => events.push(Event::LlmCall(LlmCall {
                    model: text(&step["model"]),
                    input: text(&step["input"]),
                    output: text(&step["output"]),
                    tokens: serde_json::from_value::<Option<TokenCounts>>(step["tokens"].clone())
                        .ok()
                        .flatten()
                        .map(|t| Tokens {
                            prompt_tokens: t.prompt_tokens,
                            completion_tokens: t.completion_tokens,
                            total_tokens: t.total_tokens,
                        }),
                })),
                "tool_call" => {
                    let id = text(&step["id"]).unwrap_or_default();
                    events.push(Event::ToolCall(ToolCall {
                        id: id.clone(),
                        name: text(&step["tool_name"]).unwrap_or_default(),
                        arguments: step
                            .get("tool_args")
                            .map_or("{}".into(), |args| args.to_string().into()),
                        failed: step["status"] == "failure",
                    }));
                    if !step["tool_result"].is_null() {
                        events.push(Event::ToolReturn(ToolReturn {
                            call_id: id,
                            json: false,
                            content: step["tool_result"].to_string().into(),
                            status: ToolStatus::Success,
                        }));
                    }
                }
                "reasoning" => events.push(Event::Reasoning {
                    text: text(&step["reasoning_text"]).unwrap_or_default(),
                }),
                "human_input" => events.push(Event::HumanInput {
                    text: text(&step["input"]),
                }),
                other => panic!("unknown step type {other}"),
            }
        }
        let output = text(&trace["output"]);
        if let Some(output) = &output {
            events.push(Event::Assistant {
                content: Content::Text(output.clone()),
            });
        }
        Trajectory {
            format: crate::input::trajectory::Format::Evaldeck,
            turns: vec![events],
            output,
            status: match trace["status"].as_str() {
                Some("failure") => RunStatus::Failure,
                Some("timeout") => RunStatus::Timeout,
                Some("error") => RunStatus::Error,
                _ => RunStatus::Success,
            },
            input: text(&trace["input"]),
            ..Trajectory::default()
        }
    }

    #[derive(serde::Deserialize)]
    struct TokenCounts {
        #[serde(default)]
        prompt_tokens: u64,
        #[serde(default)]
        completion_tokens: u64,
        #[serde(default)]
        total_tokens: u64,
    }

    fn vector_sample<'a>(trace: &'a Value, expected: &Value) -> Sample<'a> {
        Sample {
            trajectory: Some(evaldeck_trajectory(trace)),
            expected: serde_json::from_value(expected.clone()).expect("expected block"),
            ..Sample::default()
        }
    }

    /// A configured check graded on the sample; a static config error (evaldeck finds it only
    /// when grading) becomes an error grade, as evaldeck reports it.
    fn run_check(grader: &str, params: &Value, sample: &Sample<'_>) -> (String, Grade) {
        let name = check_name(grader).expect("a code check");
        let grade = match Check::new(name, &object(params)) {
            Ok(check) => check.expect("built-in").grade(sample),
            Err(e) => Grade::error(e.to_string()),
        };
        (name.to_string(), grade)
    }

    fn check_vector(v: &Value) -> Result<(), String> {
        let grader = v["grader"].as_str().expect("grader");
        let want_status = v["expected_status"].as_str().expect("status");
        let status_of = |g: &Grade| g.status.as_str().to_string();
        match grader {
            "composite" => {
                let sample = vector_sample(&v["trace"], &Value::Null);
                let subs = v["params"]["graders"]
                    .as_array()
                    .expect("graders")
                    .iter()
                    .map(|s| run_check(s["grader"].as_str().unwrap(), &s["params"], &sample))
                    .collect::<Vec<_>>();
                let sub_statuses: Vec<String> = subs.iter().map(|(_, g)| status_of(g)).collect();
                let all = v["params"]["require_all"].as_bool().unwrap_or(true);
                let g = combine(all, subs);
                let want_subs: Vec<String> =
                    serde_json::from_value(v["expected_sub_statuses"].clone()).unwrap();
                if status_of(&g) == want_status
                    && v["expected_message"] == *g.rationale
                    && sub_statuses == want_subs
                {
                    Ok(())
                } else {
                    Err(format!("got {g:?} with subs {sub_statuses:?}"))
                }
            }
            "evaluator" => {
                let case = &v["params"]["case"];
                let sample = vector_sample(&v["trace"], &case["expected"]);
                let g = expectations::grade(&sample);
                let checks: Vec<(String, String)> =
                    serde_json::to_value(&g).unwrap()["metadata"]["checks"]
                        .as_array()
                        .map(|checks| {
                            checks
                                .iter()
                                .map(|c| {
                                    (
                                        c["check"].as_str().unwrap().into(),
                                        c["status"].as_str().unwrap().into(),
                                    )
                                })
                                .collect()
                        })
                        .unwrap_or_default();
                let got = (status_of(&g), g.score, checks);
                let want = if case["name"] == "unwired" {
                    // SPEC section 12: gavel checks output_equals, output_matches and min_steps.
                    let fail = |c: &str| (c.to_string(), "fail".to_string());
                    (
                        "fail".to_string(),
                        0.0,
                        vec![
                            fail("output_equals"),
                            fail("output_matches"),
                            fail("min_steps"),
                        ],
                    )
                } else {
                    let grades: Vec<(String, String)> = v["expected_grades"]
                        .as_array()
                        .unwrap()
                        .iter()
                        .filter_map(|pair| {
                            let name = check_name(pair[0].as_str().unwrap())?;
                            Some((name.to_string(), pair[1].as_str().unwrap().to_string()))
                        })
                        .collect();
                    if case.get("graders").is_some() {
                        // Per-case `graders:` lists are informative only; the `expected:`
                        // sub-checks must still agree.
                        let fails = grades.iter().any(|(_, s)| s == "fail");
                        let score = got.1;
                        let status = if fails { "fail" } else { "pass" }.to_string();
                        (status, score, grades)
                    } else {
                        let score = v["expected_score"].as_f64().expect("score");
                        (want_status.to_string(), score, grades)
                    }
                };
                if got == want {
                    Ok(())
                } else {
                    Err(format!("got {got:?}, want {want:?}"))
                }
            }
            _ => {
                let sample =
                    vector_sample(&v["trace"], v.get("case_expected").unwrap_or(&Value::Null));
                let (_, g) = run_check(grader, &v["params"], &sample);
                let mut mismatches = Vec::new();
                if status_of(&g) != want_status {
                    mismatches.push(format!("status {}", g.status.as_str()));
                }
                let want_score = if g.status == Status::Pass { 1.0 } else { 0.0 };
                if g.score != want_score {
                    mismatches.push(format!("score {}", g.score));
                }
                if g.rationale != v["expected_message"].as_str().unwrap() {
                    mismatches.push(format!("message {:?}", g.rationale));
                }
                if g.status == Status::Fail {
                    let want = (v["expected_expected"].clone(), v["expected_actual"].clone());
                    let got = (
                        g.details().expected.clone().unwrap_or_default(),
                        g.details().actual.clone().unwrap_or_default(),
                    );
                    if got != want {
                        mismatches.push(format!("expected/actual {got:?}, want {want:?}"));
                    }
                }
                if mismatches.is_empty() {
                    Ok(())
                } else {
                    Err(mismatches.join("; "))
                }
            }
        }
    }

    #[test]
    fn evaldeck_conformance_vectors() {
        let vectors: Vec<Value> = serde_json::from_str(VECTORS).expect("vector file");
        let mut ran = 0;
        let mut failures = Vec::new();
        for (i, v) in vectors.iter().enumerate() {
            let grader = v["grader"].as_str().unwrap_or_default();
            // Python custom graders and free-text judge replies are not built-in checks.
            if matches!(grader, "custom" | "llm_response" | "llm_rubric_response") {
                continue;
            }
            ran += 1;
            if let Err(e) = check_vector(v) {
                failures.push(format!("vector {i} ({grader}, {}): {e}", v["note"]));
            }
        }
        assert!(ran >= 65, "only {ran} vectors ran");
        assert!(
            failures.is_empty(),
            "{} failures:\n{}",
            failures.len(),
            failures.join("\n")
        );
    }
}
