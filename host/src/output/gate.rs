//! The gate applied: a suite's gate ([`crate::config::gate`]) evaluated over a run's aggregates.
//! The outcome is recorded in the summary; a failed gate makes `gavel run` exit 1.

use crate::config::gate::{Aggregation, GateSpec, LogicalOp};
use crate::output::summary::{GateCheck, GateOutcome, Histogram, Summary};

/// The verdicts a gate's message opens with, passed first.
const VERDICTS: [&str; 2] = ["gate passed: ", "gate failed: "];

/// A gate's message without the verdict it opens with, for a line or a page that says the
/// verdict already (`gate: passed (<reason>)`).
pub fn reason(message: &str) -> &str {
    VERDICTS
        .iter()
        .find_map(|verdict| message.strip_prefix(verdict))
        .unwrap_or(message)
}

impl GateSpec {
    /// Evaluates the gate on `summary` and records the outcome there; returns whether it passed.
    pub fn apply(&self, summary: &mut Summary) -> bool {
        let outcome = self.evaluate(summary);
        let passed = outcome.passed;
        summary.gate = Some(outcome);
        passed
    }

    pub fn evaluate(&self, summary: &Summary) -> GateOutcome {
        let mut checks = Vec::new();
        let (passed, explanation) = self.evaluate_into(summary, &mut checks);
        let verdict = VERDICTS[usize::from(!passed)];
        GateOutcome {
            passed,
            checks,
            message: format!("{verdict}{explanation}"),
        }
    }

    /// Every condition is evaluated, so the outcome lists them all, not only the deciding one.
    fn evaluate_into(&self, summary: &Summary, checks: &mut Vec<GateCheck>) -> (bool, String) {
        let scores = |key: &str| summary.metric(key).map(|m| m.gate_scores());
        let mut record = |check: GateCheck| {
            let outcome = (check.passed, check.to_string());
            checks.push(check);
            outcome
        };
        match self {
            GateSpec::Simple(c) => {
                let threshold = c.pass_threshold.unwrap_or(1.0);
                let value = c
                    .aggregation
                    .apply(scores(&c.metric_key).as_deref(), |s| s >= threshold);
                record(GateCheck {
                    metric: c.metric_key.clone(),
                    aggregation: c.aggregation,
                    pass_rule: (c.aggregation == Aggregation::Accuracy)
                        .then(|| format!("score >= {threshold}")),
                    value,
                    op: c.op,
                    threshold: c.value,
                    passed: c.op.holds(value, c.value),
                })
            }
            GateSpec::WeightedAverage {
                aggregation,
                weights,
                op,
                value: threshold,
            } => {
                let mut value = 0.0;
                for (key, weight) in weights.iter() {
                    value += weight * aggregation.apply(scores(key).as_deref(), |s| s >= 1.0);
                }
                record(GateCheck {
                    metric: format!("weighted_average({weights})"),
                    aggregation: *aggregation,
                    pass_rule: (*aggregation == Aggregation::Accuracy)
                        .then(|| "score >= 1".to_string()),
                    value,
                    op: *op,
                    threshold: *threshold,
                    passed: op.holds(value, *threshold),
                })
            }
            GateSpec::Legacy(legacy) => {
                let key = match &legacy.metric_key {
                    Some(key) => key.clone(),
                    None => summary
                        .metrics
                        .first()
                        .map(|(k, _)| k.clone())
                        .unwrap_or_default(),
                };
                let (pass_op, pass_value) = legacy.pass_rule();
                let value = legacy
                    .metric
                    .apply(scores(&key).as_deref(), |s| pass_op.holds(s, pass_value));
                record(GateCheck {
                    metric: key,
                    aggregation: legacy.metric,
                    pass_rule: (legacy.metric == Aggregation::Accuracy)
                        .then(|| format!("score {} {pass_value}", pass_op.symbol())),
                    value,
                    op: legacy.op,
                    threshold: legacy.value,
                    passed: legacy.op.holds(value, legacy.value),
                })
            }
            GateSpec::Logical {
                operator,
                conditions,
            } => {
                let results: Vec<(bool, String)> = conditions
                    .iter()
                    .map(|c| c.evaluate_into(summary, checks))
                    .collect();
                let passed = match operator {
                    LogicalOp::And => results.iter().all(|(p, _)| *p),
                    LogicalOp::Or => results.iter().any(|(p, _)| *p),
                };
                let parts: Vec<String> = results.into_iter().map(|(_, text)| text).collect();
                let word = match operator {
                    LogicalOp::And => "all of",
                    LogicalOp::Or => "any of",
                };
                (passed, format!("{word} [{}]", parts.join("; ")))
            }
        }
    }
}

impl Aggregation {
    /// The aggregate of `scores`; `passes` decides which samples `accuracy` counts. Like
    /// letta-evals, a metric without scores aggregates to 0.
    fn apply(self, scores: Option<&Histogram>, passes: impl Fn(f64) -> bool) -> f64 {
        let Some(scores) = scores else {
            return 0.0;
        };
        let value = match self {
            Aggregation::AvgScore => scores.mean(),
            Aggregation::Min => scores.min(),
            Aggregation::Max => scores.max(),
            Aggregation::Median | Aggregation::P50 => scores.median(),
            Aggregation::P95 => scores.percentile(95.0),
            Aggregation::P99 => scores.percentile(99.0),
            Aggregation::Accuracy => (!scores.is_empty())
                .then(|| (scores.count_where(passes) as f64 / scores.len() as f64) * 100.0),
        };
        value.unwrap_or(0.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::gate::tests::gate;
    use crate::grade::Grade;
    use crate::input::sample::SampleId;
    use crate::output::result::{ErrorCategory, SampleError, SampleResult};
    use crate::output::summary::Aggregator;

    /// A summary of metric `c` with the given scores and metric `q` with `q_scores`.
    fn summary(c: &[f64], q: &[f64]) -> Summary {
        let mut a = Aggregator::new(vec!["c".into(), "q".into()]);
        for i in 0..c.len().max(q.len()) {
            let mut grades = Vec::new();
            if let Some(s) = c.get(i) {
                grades.push(("c".into(), Grade::scored(*s, "")));
            }
            if let Some(s) = q.get(i) {
                grades.push(("q".into(), Grade::scored(*s, "")));
            }
            a.add(&SampleResult {
                sample_id: SampleId::Int(i as i64),
                grades,
                reward: None,
                error: None,
            });
        }
        a.finish()
    }

    fn value(g: &GateSpec, s: &Summary) -> f64 {
        g.evaluate(s).checks[0].value
    }

    #[test]
    fn aggregations_follow_letta_evals() {
        let s = summary(&[1.0, 0.5, 0.0, 1.0, 0.75], &[]);
        let agg = |a: &str| {
            value(
                &gate(&format!(
                    "{{kind: simple, metric_key: c, aggregation: {a}, op: gte, value: 0}}"
                )),
                &s,
            )
        };
        assert_eq!(agg("avg_score"), 0.65);
        assert_eq!(agg("min"), 0.0);
        assert_eq!(agg("max"), 1.0);
        assert_eq!(agg("median"), 0.75);
        assert_eq!(agg("p50"), 0.75);
        // numpy.percentile([0, .5, .75, 1, 1], 95) == 1.0
        assert_eq!(agg("p95"), 1.0);
        assert_eq!(agg("accuracy"), 40.0);
        let s4 = summary(&[0.0, 0.25, 0.5, 1.0], &[]);
        let p = |a: &str| {
            value(
                &gate(&format!(
                    "{{kind: simple, metric_key: c, aggregation: {a}, op: gte, value: 0}}"
                )),
                &s4,
            )
        };
        // numpy.percentile([0, .25, .5, 1], [95, 99])
        assert_eq!(p("p95"), 0.9249999999999998);
        assert_eq!(p("p99"), 0.9849999999999999);
        assert_eq!(p("median"), 0.375);
    }

    #[test]
    fn a_sample_whose_extraction_found_nothing_counts_in_the_gate_only() {
        let mut a = Aggregator::new(vec!["c".into()]);
        for (i, (score, error)) in [
            (1.0, None),
            (1.0, None),
            (0.0, Some(ErrorCategory::Extraction)),
        ]
        .into_iter()
        .enumerate()
        {
            a.add(&SampleResult {
                sample_id: SampleId::Int(i as i64),
                grades: vec![("c".into(), Grade::scored(score, ""))],
                reward: None,
                error: error.map(|category| SampleError {
                    category,
                    message: "Empty submission - extractor found no content".into(),
                }),
            });
        }
        let s = a.finish();
        assert_eq!(s.metric("c").unwrap().stats.mean, Some(1.0));
        let g = |a: &str| {
            value(
                &gate(&format!(
                    "{{kind: simple, metric_key: c, aggregation: {a}, op: gte, value: 0}}"
                )),
                &s,
            )
        };
        assert_eq!(g("avg_score"), 2.0 / 3.0);
        assert_eq!(g("min"), 0.0);
        assert_eq!(g("accuracy"), 2.0 / 3.0 * 100.0);
    }

    #[test]
    fn accuracy_is_a_percentage_with_a_pass_threshold() {
        let s = summary(&[1.0, 0.5, 0.0, 1.0, 0.75], &[]);
        let g = gate(
            "{kind: simple, metric_key: c, aggregation: accuracy, pass_threshold: 0.5, op: gte, value: 80}",
        );
        let outcome = g.evaluate(&s);
        assert!(outcome.passed, "{}", outcome.message);
        assert_eq!(outcome.checks[0].value, 80.0);
        assert_eq!(outcome.checks[0].pass_rule.as_deref(), Some("score >= 0.5"));
        let strict =
            gate("{kind: simple, metric_key: c, aggregation: accuracy, op: gt, value: 40}");
        assert!(!strict.evaluate(&s).passed);
    }

    #[test]
    fn ops_compare_as_written() {
        let s = summary(&[0.5, 0.5], &[]);
        for (op, expected) in [
            ("gt", false),
            ("gte", true),
            ("lt", false),
            ("lte", true),
            ("eq", true),
        ] {
            let g = gate(&format!(
                "{{kind: simple, metric_key: c, op: {op}, value: 0.5}}"
            ));
            assert_eq!(g.evaluate(&s).passed, expected, "{op}");
        }
    }

    #[test]
    fn weighted_average_normalises_weights() {
        let s = summary(&[1.0, 1.0], &[0.0, 0.5]);
        let g = gate(
            "{kind: weighted_average, aggregation: avg_score, weights: {c: 3, q: 1}, op: gte, value: 0.8}",
        );
        let outcome = g.evaluate(&s);
        assert_eq!(outcome.checks[0].value, 0.8125);
        assert!(outcome.passed);
        assert_eq!(outcome.checks[0].metric, "weighted_average(c=0.75, q=0.25)");
    }

    #[test]
    fn logical_gates_nest_and_report_every_condition() {
        let s = summary(&[1.0, 0.0], &[0.2, 0.4]);
        let g = gate(
            "kind: logical
operator: or
conditions:
  - {metric_key: c, aggregation: min, op: gte, value: 0.5}
  - kind: logical
    operator: and
    conditions:
      - {kind: simple, metric_key: c, aggregation: max, op: eq, value: 1}
      - {metric_key: q, op: lt, value: 0.5}
",
        );
        let outcome = g.evaluate(&s);
        assert!(outcome.passed, "{}", outcome.message);
        assert_eq!(outcome.checks.len(), 3);
        assert_eq!(
            outcome.checks.iter().map(|c| c.passed).collect::<Vec<_>>(),
            [false, true, true]
        );
        assert!(
            outcome
                .message
                .starts_with("gate passed: any of [c min = 0 >= 0.5: failed; all of ["),
            "{}",
            outcome.message
        );
        let and = gate(
            "{kind: logical, operator: and, conditions: [{metric_key: c, op: gte, value: 0.5}, {metric_key: q, op: gte, value: 0.5}]}",
        );
        let outcome = and.evaluate(&s);
        assert!(!outcome.passed);
        assert!(
            outcome.message.starts_with("gate failed: all of ["),
            "{}",
            outcome.message
        );
    }

    #[test]
    fn gate_without_kind_is_the_early_letta_evals_form() {
        let s = summary(&[1.0, 0.6, 0.2, 0.9], &[1.0]);
        // No metric_key: the first grader. Accuracy without pass_value counts score >= 1.
        let outcome = gate("{metric: accuracy, op: gte, value: 25}").evaluate(&s);
        assert_eq!(outcome.checks[0].metric, "c");
        assert_eq!(outcome.checks[0].value, 25.0);
        assert!(outcome.passed);
        // pass_value with op falling back to the gate's op.
        let g = gate("{metric: accuracy, metric_key: c, op: gte, value: 50, pass_value: 0.6}");
        assert_eq!(value(&g, &s), 75.0);
        let g = gate("{metric: accuracy, op: gte, value: 50, pass_op: lt, pass_value: 0.6}");
        assert_eq!(value(&g, &s), 25.0);
        let g = gate("{op: gt, value: 0.6}");
        assert_eq!(value(&g, &s), 0.675);
        assert!(g.evaluate(&s).passed);
    }

    #[test]
    fn a_metric_without_grades_aggregates_to_zero() {
        let s = summary(&[], &[]);
        let outcome = gate("{kind: simple, metric_key: c, op: gte, value: 0.5}").evaluate(&s);
        assert_eq!(outcome.checks[0].value, 0.0);
        assert!(!outcome.passed);
    }

    #[test]
    fn outcome_is_recorded_in_the_summary() {
        let mut s = summary(&[1.0, 0.0], &[]);
        assert!(!gate("{kind: simple, metric_key: c, op: gte, value: 0.9}").apply(&mut s));
        let json = serde_json::to_value(&s).unwrap();
        assert_eq!(json["gate"]["passed"], false);
        assert_eq!(json["gate"]["checks"][0]["aggregation"], "avg_score");
        assert_eq!(json["gate"]["checks"][0]["op"], "gte");
        assert_eq!(
            json["gate"]["message"],
            "gate failed: c avg_score = 0.5 >= 0.9: failed"
        );
    }
}
