//! The per-sample reward: one number in [0, 1] from a sample's grades, for training loops.
//!
//! ```yaml
//! reward: {kind: metric, metric_key: correctness}          # that grade's score
//! reward: {kind: weighted, weights: {correctness: 3, format: 1}}   # normalised weighted sum
//! ```
//!
//! The runner computes a reward only for samples without an error, as letta-evals does.

use std::fmt;

use serde::Deserialize;
use serde::de::{self, Deserializer, MapAccess, Visitor};

use crate::config::{FieldProblem, FieldProblems};

/// Why weights are refused.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum WeightsError {
    #[error("weights must name at least one metric")]
    None,
    #[error("weight of `{key}` must be a non-negative number, got {weight}")]
    Invalid { key: String, weight: f64 },
    #[error("`{0}` is weighted twice")]
    Twice(String),
    #[error("weights must not all be zero")]
    AllZero,
    #[error(
        "the weights add up to more than the largest number gavel can hold ({max:e}), so every \
         reward would be 0; scale them down: only their ratios matter (3 and 1 weigh the same \
         as 3.0e+300 and 1.0e+300)",
        max = f64::MAX
    )]
    Overflow,
}

/// Why a sample has no reward from a reward spec.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum RewardError {
    #[error("reward: the sample has no `{0}` grade")]
    NoGrade(String),
    #[error("reward: the `{0}` grade has no numeric score")]
    NotNumeric(String),
    /// The plan holds the composer; a suite reaches here only through a plan without it.
    #[error("reward: the composer `{0}` was not loaded")]
    NotLoaded(String),
}

/// Metric weights: at least one, each finite and non-negative, with a non-zero sum; kept in the
/// order written and normalised to sum to 1 (letta-evals' `normalize_weights`).
#[derive(Debug, Clone, PartialEq)]
pub struct Weights(Vec<(String, f64)>);

impl Weights {
    pub fn new(weights: Vec<(String, f64)>) -> Result<Weights, WeightsError> {
        if weights.is_empty() {
            return Err(WeightsError::None);
        }
        for (i, (key, weight)) in weights.iter().enumerate() {
            if !weight.is_finite() || *weight < 0.0 {
                return Err(WeightsError::Invalid {
                    key: key.clone(),
                    weight: *weight,
                });
            }
            if weights[..i].iter().any(|(k, _)| k == key) {
                return Err(WeightsError::Twice(key.clone()));
            }
        }
        let total: f64 = weights.iter().map(|(_, w)| w).sum();
        if total == 0.0 {
            return Err(WeightsError::AllZero);
        }
        if !total.is_finite() {
            return Err(WeightsError::Overflow);
        }
        Ok(Weights(
            weights.into_iter().map(|(k, w)| (k, w / total)).collect(),
        ))
    }

    /// The metric keys with their normalised weights, in the order written.
    pub fn iter(&self) -> impl Iterator<Item = (&str, f64)> {
        self.0.iter().map(|(k, w)| (k.as_str(), *w))
    }
}

impl fmt::Display for Weights {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, (key, weight)) in self.iter().enumerate() {
            if i > 0 {
                f.write_str(", ")?;
            }
            write!(f, "{key}={weight}")?;
        }
        Ok(())
    }
}

impl<'de> Deserialize<'de> for Weights {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct WeightsVisitor;

        impl<'de> Visitor<'de> for WeightsVisitor {
            type Value = Weights;

            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a map from metric key to a non-negative weight")
            }

            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Weights, A::Error> {
                let mut weights = Vec::new();
                while let Some(entry) = map.next_entry::<String, f64>()? {
                    weights.push(entry);
                }
                Weights::new(weights).map_err(de::Error::custom)
            }
        }

        deserializer.deserialize_map(WeightsVisitor)
    }
}

/// How a sample's reward follows from its grades.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum RewardSpec {
    /// The score of one grader.
    Metric { metric_key: String },
    /// The weighted mean of several graders' scores.
    Weighted { weights: Weights },
    /// letta-evals' `@reward_composer` in a Python file (`path/file.py:name`), or registered
    /// under a bare name; run by the interpreter (see [`crate::grade::program::reward`]).
    Custom { function: String },
}

impl RewardSpec {
    /// Static check for `gavel validate`: every metric the reward reads is one of the suite's.
    pub fn check(&self, metric_keys: &[String]) -> Result<(), FieldProblems> {
        FieldProblems::into_result(
            self.metric_keys()
                .filter(|key| !metric_keys.iter().any(|k| k == key))
                .map(|key| unknown_metric("reward", key, metric_keys))
                .collect(),
        )
    }

    fn metric_keys(&self) -> Box<dyn Iterator<Item = &str> + '_> {
        match self {
            RewardSpec::Metric { metric_key } => Box::new(std::iter::once(metric_key.as_str())),
            RewardSpec::Weighted { weights } => Box::new(weights.iter().map(|(k, _)| k)),
            RewardSpec::Custom { .. } => Box::new(std::iter::empty()),
        }
    }
}

/// "`where`: `key` is not a metric of this suite" with the closest key, for static checks.
pub(crate) fn unknown_metric(place: &str, key: &str, metric_keys: &[String]) -> FieldProblem {
    let closest = crate::config::error::closest(key, metric_keys.iter().map(String::as_str))
        .map(|k| format!(" (did you mean `{k}`?)"))
        .unwrap_or_default();
    let known = if metric_keys.is_empty() {
        "the suite has no graders".to_string()
    } else {
        format!("graders are: {}", metric_keys.join(", "))
    };
    FieldProblem {
        field: place.to_string(),
        message: format!("`{key}` is not a metric key of this suite{closest}; {known}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::grade::{Grade, GradeKey, Status};

    fn grades(scores: &[(&str, f64)]) -> Vec<(GradeKey, Grade)> {
        scores
            .iter()
            .map(|(k, s)| (k.to_string().into(), Grade::scored(*s, "")))
            .collect()
    }

    fn spec(yaml: &str) -> Result<RewardSpec, String> {
        serde_saphyr::from_str(yaml).map_err(|e| e.to_string())
    }

    fn keys(keys: &[&str]) -> Vec<String> {
        keys.iter().map(|k| k.to_string()).collect()
    }

    /// letta-evals' metric reward, recorded in letta-vectors-extra.json.
    #[test]
    fn metric_reward_is_that_grades_score() {
        let vectors: Vec<serde_json::Value> = serde_json::from_str(include_str!(
            "../../tests/data/conformance/letta-vectors-extra.json"
        ))
        .unwrap();
        let vector = vectors
            .iter()
            .find(|v| v["kind"] == "reward" && v["name"] == "metric")
            .unwrap();
        let reward: RewardSpec = serde_json::from_value(vector["config"].clone()).unwrap();
        let g: Vec<(GradeKey, Grade)> = vector["grades"]
            .as_object()
            .unwrap()
            .iter()
            .map(|(k, s)| (k.clone().into(), Grade::scored(s.as_f64().unwrap(), "")))
            .collect();
        assert_eq!(
            reward.compute(&g).ok(),
            vector["expected"]["score"].as_f64()
        );
    }

    #[test]
    fn weighted_reward_normalises_the_weights() {
        let reward = spec("kind: weighted\nweights: {a: 3, b: 1}\n").unwrap();
        assert_eq!(reward.compute(&grades(&[("a", 1.0), ("b", 0.0)])), Ok(0.75));
        assert_eq!(
            reward.compute(&grades(&[("b", 1.0), ("a", 0.5)])),
            Ok(0.625)
        );
        let thirds = spec("kind: weighted\nweights: {a: 1, b: 1, c: 1}\n").unwrap();
        let all = grades(&[("a", 1.0), ("b", 1.0), ("c", 1.0)]);
        assert!(thirds.compute(&all).unwrap() <= 1.0);
    }

    #[test]
    fn missing_or_broken_grades_are_errors() {
        let reward = spec("kind: weighted\nweights: {a: 1, b: 1}\n").unwrap();
        let err = reward.compute(&grades(&[("a", 1.0)])).unwrap_err();
        assert_eq!(err.to_string(), "reward: the sample has no `b` grade");
        let mut g = grades(&[("a", 1.0), ("b", 1.0)]);
        g[1].1 = Grade::new(f64::NAN, Status::Error, "judge said NaN");
        assert_eq!(
            reward.compute(&g).unwrap_err().to_string(),
            "reward: the `b` grade has no numeric score"
        );
    }

    #[test]
    fn bad_weights_are_refused_when_the_suite_loads() {
        for (yaml, needle) in [
            ("{}", "at least one"),
            ("{a: -1, b: 2}", "non-negative"),
            ("{a: 0, b: 0.0}", "all be zero"),
            ("{a: .nan}", "nan"),
            ("{a: 1.0e+308, b: 1.0e+308}", "add up to more than"),
            ("{a: x}", ""),
        ] {
            let err = spec(&format!("kind: weighted\nweights: {yaml}\n")).unwrap_err();
            assert!(err.contains(needle), "{yaml}: {err}");
        }
        assert!(Weights::new(vec![("a".into(), 1.0), ("a".into(), 2.0)]).is_err());
    }

    #[test]
    fn unknown_fields_and_kinds_are_refused() {
        let err = spec("kind: metric\nmetric_key: a\nweights: {a: 1}\n").unwrap_err();
        assert!(err.contains("weights"), "{err}");
        let err = spec("kind: custom\nfunction: rewards.py:fn\nweights: {a: 1}\n").unwrap_err();
        assert!(err.contains("weights"), "{err}");
        assert!(spec("kind: metric\n").unwrap_err().contains("metric_key"));
    }

    #[test]
    fn check_names_unknown_metric_keys_and_the_closest_one() {
        let suite = keys(&["correctness", "format"]);
        assert_eq!(
            spec("{kind: metric, metric_key: format}")
                .unwrap()
                .check(&suite),
            Ok(())
        );
        let err = spec("{kind: metric, metric_key: corectness}")
            .unwrap()
            .check(&suite)
            .unwrap_err()
            .to_string();
        assert!(err.contains("`corectness`"), "{err}");
        assert!(err.contains("did you mean `correctness`"), "{err}");
        let err = spec("{kind: weighted, weights: {format: 1, style: 1, tone: 2}}")
            .unwrap()
            .check(&suite)
            .unwrap_err()
            .to_string();
        assert_eq!(err.lines().count(), 2, "{err}");
        assert!(err.contains("`style`") && err.contains("`tone`"), "{err}");
    }
}
