//! The gate: a pass/fail rule over a run's aggregates; a failed gate makes `gavel run` exit 1.
//!
//! The historical letta-evals `gate:` (up to 0.20), in its three kinds:
//!
//! ```yaml
//! gate: {kind: simple, metric_key: correctness, aggregation: accuracy, op: gte, value: 80,
//!        pass_threshold: 0.5}
//! gate: {kind: weighted_average, aggregation: avg_score, weights: {correctness: 2, format: 1},
//!        op: gte, value: 0.75}
//! gate:
//!   kind: logical
//!   operator: and            # or: or
//!   conditions:              # simple conditions (`kind` optional) or nested gates
//!     - {metric_key: correctness, aggregation: avg_score, op: gte, value: 0.8}
//!     - {kind: logical, operator: or, conditions: [...]}
//! ```
//!
//! and the form before kinds existed, recognised by having no `kind`:
//! `{metric: avg_score|accuracy, metric_key?, op, value, pass_op?, pass_value?}` (without
//! `metric_key`, the first grader; a sample passes for `accuracy` when `score pass_op pass_value`,
//! defaulting to `score >= 1`, else to `op`/`value`).
//!
//! Aggregations run over a metric's graded scores (errored samples are not among them):
//! `avg_score` the mean, `min`, `max`, `median`/`p50` as Python's `statistics.median`, `p95`/`p99`
//! as `numpy.percentile` (linear), `accuracy` the **percentage** (0-100) of scores at or above
//! `pass_threshold` (default 1.0). A metric with no graded score aggregates to 0, as in
//! letta-evals. Ops: `gt gte lt lte eq`. Gavel also allows weighted gates inside `conditions`.

use serde::{Deserialize, Serialize};

use crate::config::reward::{Weights, unknown_metric};
use crate::config::{FieldProblem, FieldProblems};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Op {
    Gt,
    Gte,
    Lt,
    Lte,
    Eq,
}

impl Op {
    pub fn holds(self, a: f64, b: f64) -> bool {
        match self {
            Op::Gt => a > b,
            Op::Gte => a >= b,
            Op::Lt => a < b,
            Op::Lte => a <= b,
            Op::Eq => a == b,
        }
    }

    pub(crate) fn symbol(self) -> &'static str {
        match self {
            Op::Gt => ">",
            Op::Gte => ">=",
            Op::Lt => "<",
            Op::Lte => "<=",
            Op::Eq => "==",
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Aggregation {
    AvgScore,
    Accuracy,
    Min,
    Max,
    Median,
    P50,
    P95,
    P99,
}

impl Aggregation {
    pub(crate) fn name(self) -> &'static str {
        match self {
            Aggregation::AvgScore => "avg_score",
            Aggregation::Accuracy => "accuracy",
            Aggregation::Min => "min",
            Aggregation::Max => "max",
            Aggregation::Median => "median",
            Aggregation::P50 => "p50",
            Aggregation::P95 => "p95",
            Aggregation::P99 => "p99",
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LogicalOp {
    And,
    Or,
}

/// One metric, aggregated and compared with a value.
#[derive(Debug, Clone, PartialEq)]
pub struct Condition {
    pub metric_key: String,
    pub aggregation: Aggregation,
    pub op: Op,
    pub value: f64,
    /// The score at which a sample counts for `accuracy`; 1.0 when absent.
    pub pass_threshold: Option<f64>,
}

/// The gate as written before letta-evals had gate kinds.
#[derive(Debug, Clone, PartialEq)]
pub struct LegacyGate {
    /// `avg_score` or `accuracy`.
    pub metric: Aggregation,
    pub metric_key: Option<String>,
    pub op: Op,
    pub value: f64,
    pub pass_op: Option<Op>,
    pub pass_value: Option<f64>,
}

impl LegacyGate {
    /// The per-sample pass rule `accuracy` counts with.
    pub(crate) fn pass_rule(&self) -> (Op, f64) {
        match self.pass_value {
            None if self.metric == Aggregation::Accuracy => (Op::Gte, 1.0),
            _ => (
                self.pass_op.unwrap_or(self.op),
                self.pass_value.unwrap_or(self.value),
            ),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(try_from = "RawGate")]
pub enum GateSpec {
    Simple(Condition),
    WeightedAverage {
        aggregation: Aggregation,
        weights: Weights,
        op: Op,
        value: f64,
    },
    Logical {
        operator: LogicalOp,
        conditions: Vec<GateSpec>,
    },
    Legacy(LegacyGate),
}

impl GateSpec {
    /// Static check for `gavel validate`: every metric the gate reads is one of the suite's.
    pub fn check(&self, metric_keys: &[String]) -> Result<(), FieldProblems> {
        let mut problems = Vec::new();
        self.check_at("gate", metric_keys, &mut problems);
        FieldProblems::into_result(problems)
    }

    fn check_at(&self, path: &str, metric_keys: &[String], problems: &mut Vec<FieldProblem>) {
        let mut known = |place: String, key: &str| {
            if !metric_keys.iter().any(|k| k == key) {
                problems.push(unknown_metric(&place, key, metric_keys));
            }
        };
        match self {
            GateSpec::Simple(c) => known(format!("{path}.metric_key"), &c.metric_key),
            GateSpec::WeightedAverage { weights, .. } => {
                for (key, _) in weights.iter() {
                    known(format!("{path}.weights"), key);
                }
            }
            GateSpec::Legacy(LegacyGate {
                metric_key: Some(key),
                ..
            }) => known(format!("{path}.metric_key"), key),
            GateSpec::Legacy(LegacyGate {
                metric_key: None, ..
            }) => {
                if metric_keys.is_empty() {
                    problems.push(FieldProblem {
                        field: path.to_string(),
                        message: "gates the first grader, but there is none".to_string(),
                    });
                }
            }
            GateSpec::Logical { conditions, .. } => {
                for (i, condition) in conditions.iter().enumerate() {
                    condition.check_at(&format!("{path}.conditions[{i}]"), metric_keys, problems);
                }
            }
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
enum GateKind {
    Simple,
    WeightedAverage,
    Logical,
}

/// Every key any form of gate may have; which ones fit is decided once `kind` is known.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawGate {
    kind: Option<GateKind>,
    metric_key: Option<String>,
    aggregation: Option<Aggregation>,
    op: Option<Op>,
    value: Option<f64>,
    pass_threshold: Option<f64>,
    weights: Option<Weights>,
    operator: Option<LogicalOp>,
    conditions: Option<Vec<RawGate>>,
    metric: Option<Aggregation>,
    pass_op: Option<Op>,
    pass_value: Option<f64>,
}

/// Why a written gate is no gate; its text is what the suite's error says at `gate:`.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum GateError {
    #[error("{form} needs `{field}`")]
    Missing {
        form: &'static str,
        field: &'static str,
    },
    #[error("`{field}` must be a finite number, got {value}")]
    NotFinite { field: &'static str, value: f64 },
    #[error("`{field}` is not a field of {form} (its fields: kind, {}){hint}", allowed.join(", "))]
    NotAField {
        field: &'static str,
        form: &'static str,
        allowed: &'static [&'static str],
        hint: &'static str,
    },
    #[error("`conditions` of a logical gate must not be empty")]
    NoConditions,
    #[error("conditions[{index}]: {error}")]
    Condition { index: usize, error: Box<GateError> },
    #[error(
        "`metric` of a gate without `kind` is avg_score or accuracy, not {metric}; add `kind: \
         simple` and use `aggregation`"
    )]
    LegacyMetric { metric: &'static str },
}

impl TryFrom<RawGate> for GateSpec {
    type Error = GateError;

    fn try_from(raw: RawGate) -> Result<GateSpec, GateError> {
        raw.into_gate(false)
    }
}

fn required<T>(value: Option<T>, field: &'static str, form: &'static str) -> Result<T, GateError> {
    value.ok_or(GateError::Missing { form, field })
}

fn finite(value: Option<f64>, field: &'static str) -> Result<Option<f64>, GateError> {
    match value {
        Some(value) if !value.is_finite() => Err(GateError::NotFinite { field, value }),
        _ => Ok(value),
    }
}

impl RawGate {
    fn present(&self) -> Vec<&'static str> {
        [
            ("metric_key", self.metric_key.is_some()),
            ("aggregation", self.aggregation.is_some()),
            ("op", self.op.is_some()),
            ("value", self.value.is_some()),
            ("pass_threshold", self.pass_threshold.is_some()),
            ("weights", self.weights.is_some()),
            ("operator", self.operator.is_some()),
            ("conditions", self.conditions.is_some()),
            ("metric", self.metric.is_some()),
            ("pass_op", self.pass_op.is_some()),
            ("pass_value", self.pass_value.is_some()),
        ]
        .into_iter()
        .filter_map(|(name, present)| present.then_some(name))
        .collect()
    }

    fn only(
        &self,
        form: &'static str,
        allowed: &'static [&'static str],
        hint: &'static str,
    ) -> Result<(), GateError> {
        match self.present().into_iter().find(|f| !allowed.contains(f)) {
            Some(field) => Err(GateError::NotAField {
                field,
                form,
                allowed,
                hint,
            }),
            None => Ok(()),
        }
    }

    /// `nested`: inside `conditions`, where a gate without `kind` is a simple condition rather
    /// than the pre-kind form.
    fn into_gate(self, nested: bool) -> Result<GateSpec, GateError> {
        let value = finite(self.value, "value")?;
        match (self.kind, nested) {
            (Some(GateKind::Simple), _) | (None, true) => {
                let form = "a simple condition";
                self.only(
                    form,
                    &["metric_key", "aggregation", "op", "value", "pass_threshold"],
                    "",
                )?;
                Ok(GateSpec::Simple(Condition {
                    aggregation: self.aggregation.unwrap_or(Aggregation::AvgScore),
                    pass_threshold: finite(self.pass_threshold, "pass_threshold")?,
                    metric_key: required(self.metric_key, "metric_key", form)?,
                    op: required(self.op, "op", form)?,
                    value: required(value, "value", form)?,
                }))
            }
            (Some(GateKind::WeightedAverage), _) => {
                let form = "a weighted_average gate";
                self.only(form, &["aggregation", "weights", "op", "value"], "")?;
                Ok(GateSpec::WeightedAverage {
                    aggregation: required(self.aggregation, "aggregation", form)?,
                    weights: required(self.weights, "weights", form)?,
                    op: required(self.op, "op", form)?,
                    value: required(value, "value", form)?,
                })
            }
            (Some(GateKind::Logical), _) => {
                let form = "a logical gate";
                self.only(form, &["operator", "conditions"], "")?;
                let operator = required(self.operator, "operator", form)?;
                let raw = required(self.conditions, "conditions", form)?;
                if raw.is_empty() {
                    return Err(GateError::NoConditions);
                }
                let conditions = raw
                    .into_iter()
                    .enumerate()
                    .map(|(i, c)| {
                        c.into_gate(true).map_err(|error| GateError::Condition {
                            index: i,
                            error: Box::new(error),
                        })
                    })
                    .collect::<Result<_, _>>()?;
                Ok(GateSpec::Logical {
                    operator,
                    conditions,
                })
            }
            (None, false) => {
                let form = "a gate without `kind` (the form before gate kinds)";
                self.only(
                    form,
                    &[
                        "metric",
                        "metric_key",
                        "op",
                        "value",
                        "pass_op",
                        "pass_value",
                    ],
                    "; add `kind: simple`, `weighted_average` or `logical`",
                )?;
                let metric = self.metric.unwrap_or(Aggregation::AvgScore);
                if !matches!(metric, Aggregation::AvgScore | Aggregation::Accuracy) {
                    return Err(GateError::LegacyMetric {
                        metric: metric.name(),
                    });
                }
                Ok(GateSpec::Legacy(LegacyGate {
                    metric,
                    metric_key: self.metric_key,
                    op: required(self.op, "op", form)?,
                    value: required(value, "value", form)?,
                    pass_op: self.pass_op,
                    pass_value: finite(self.pass_value, "pass_value")?,
                }))
            }
        }
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    pub(crate) fn gate(yaml: &str) -> GateSpec {
        serde_saphyr::from_str(yaml).unwrap_or_else(|e| panic!("{yaml}: {e}"))
    }

    fn gate_error(yaml: &str) -> String {
        match serde_saphyr::from_str::<GateSpec>(yaml) {
            Ok(g) => panic!("{yaml} parsed as {g:?}"),
            Err(e) => e.to_string(),
        }
    }

    #[test]
    fn malformed_gates_are_refused_with_the_field_named() {
        for (yaml, needle) in [
            ("{kind: simple, metric_key: c, op: gte}", "needs `value`"),
            (
                "{kind: simple, metric_key: c, op: gte, value: 1, weights: {c: 1}}",
                "`weights` is not a field of a simple condition",
            ),
            ("{kind: simple, metric_key: c, op: ge, value: 1}", "ge"),
            (
                "{kind: simple, metric_key: c, op: gte, value: 1, bogus: 2}",
                "bogus",
            ),
            (
                "{kind: simple, metric_key: c, aggregation: mean, op: gte, value: 1}",
                "mean",
            ),
            (
                "{kind: simple, metric_key: c, op: gte, value: .nan}",
                "finite",
            ),
            (
                "{kind: weighted_average, aggregation: avg_score, weights: {c: 0}, op: gte, value: 1}",
                "zero",
            ),
            (
                "{kind: weighted_average, weights: {c: 1}, op: gte, value: 1}",
                "needs `aggregation`",
            ),
            (
                "{kind: logical, operator: and, conditions: []}",
                "must not be empty",
            ),
            (
                "{kind: logical, operator: xor, conditions: [{metric_key: c, op: gt, value: 0}]}",
                "xor",
            ),
            (
                "{kind: logical, operator: and, conditions: [{metric_key: c, op: gt}]}",
                "conditions[0]: a simple condition needs `value`",
            ),
            (
                "{aggregation: p95, metric_key: c, op: gt, value: 0}",
                "add `kind: simple`",
            ),
            ("{metric: p95, op: gt, value: 0}", "avg_score or accuracy"),
            ("{kind: legacy, op: gt, value: 0}", "legacy"),
        ] {
            let err = gate_error(yaml);
            assert!(err.contains(needle), "{yaml}: {err}");
        }
    }

    #[test]
    fn check_finds_unknown_metric_keys_everywhere() {
        let keys = vec!["correctness".to_string(), "format".to_string()];
        let g = gate(
            "kind: logical
operator: and
conditions:
  - {metric_key: correctnes, op: gte, value: 0.5}
  - {kind: weighted_average, aggregation: min, weights: {format: 1, tone: 1}, op: gte, value: 0}
  - {metric_key: format, op: gte, value: 0.5}
",
        );
        let err = g.check(&keys).unwrap_err().to_string();
        let lines: Vec<&str> = err.lines().collect();
        assert_eq!(lines.len(), 2, "{err}");
        assert!(
            lines[0].starts_with("gate.conditions[0].metric_key: `correctnes`"),
            "{err}"
        );
        assert!(lines[0].contains("did you mean `correctness`"), "{err}");
        assert!(
            lines[1].starts_with("gate.conditions[1].weights: `tone`"),
            "{err}"
        );
        assert_eq!(
            gate("{kind: simple, metric_key: format, op: gt, value: 0}").check(&keys),
            Ok(())
        );
        assert_eq!(gate("{op: gt, value: 0}").check(&keys), Ok(()));
        assert!(
            gate("{op: gt, value: 0}")
                .check(&[])
                .unwrap_err()
                .to_string()
                .contains("first grader")
        );
    }
}
