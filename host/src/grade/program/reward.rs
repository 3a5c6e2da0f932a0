//! letta-evals' `reward: {kind: custom, function: path/file.py:name}`: a `@reward_composer`
//! that turns a sample's grades into its reward, run by the interpreter.

use std::fmt;

use serde::de::{self, Deserializer as _, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Value, json};

use crate::grade::Grade;
use crate::grade::GradeKey;
use crate::grade::pack::{GuestError, Isolation, PackReward, ProgramFunction};
use crate::input::sample::Sample;

/// Why a reward composer gave no reward.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ComposerError {
    #[error("reward: {0}")]
    Call(GuestError),
    #[error("reward: the composer's answer is not JSON: {0}")]
    NotJson(String),
    #[error("reward: the composer returned {0}, not a number or an object with a numeric `score`")]
    NotANumber(String),
}

/// A suite's reward composer, ready to run from many threads at once.
#[derive(Clone)]
pub struct CustomReward(pub(super) PackReward);

impl CustomReward {
    /// Runs its calls as `isolation` says.
    pub fn set_isolation(&mut self, isolation: Isolation) {
        self.0.set_isolation(isolation);
    }

    /// The composer, an interpreter's function.
    pub fn program_function(&self) -> Option<ProgramFunction<'_>> {
        self.0.program_function()
    }

    /// The sample's reward: the composer gets `{"sample": <row>, "grades": {key: {score,
    /// rationale, metadata}}, "submissions": {key: text}}` and answers a number or an object
    /// with a numeric `score` (letta-evals' `RewardOutput`) or `reward`.
    pub async fn compute(
        &self,
        sample: &Sample<'_>,
        grades: &[(GradeKey, Grade)],
    ) -> Result<f64, ComposerError> {
        let row: Value = serde_json::from_str(sample.row).unwrap_or_else(|_| json!({}));
        let mut by_key = Map::new();
        let mut submissions = Map::new();
        for (key, grade) in grades {
            by_key.insert(
                key.to_string(),
                json!({
                    "score": grade.score,
                    "rationale": grade.rationale,
                    "metadata": grade.details().metadata,
                }),
            );
            submissions.insert(key.to_string(), Value::from(grade.submission.clone()));
        }
        let context = json!({"sample": row, "grades": by_key, "submissions": submissions});
        let answer = self
            .0
            .reward_off_worker(context.to_string())
            .await
            .map_err(ComposerError::Call)?;
        match reward_in(&answer).map_err(|e| ComposerError::NotJson(e.to_string()))? {
            Some(reward) if reward.is_finite() => Ok(reward),
            _ => Err(ComposerError::NotANumber(shown(&answer))),
        }
    }
}

/// The reward an answer holds: the answer itself when it is a number, else the object's `reward`
/// or, without one, its `score` (letta-evals' `RewardOutput`), a later duplicate key winning;
/// `None` when that is not a number. Only the number is read: the rest of the answer (a
/// `RewardOutput`'s metadata, nested however deep) is skipped without being built.
fn reward_in(answer: &str) -> serde_json::Result<Option<f64>> {
    let mut reader = serde_json::Deserializer::from_str(answer);
    let reward = reader.deserialize_any(Number { top: true })?;
    reader.end()?;
    Ok(reward)
}

/// A value read for the number it may be: at the top of the answer an object is searched for
/// its `reward` or `score`; anywhere else an object or an array is only skipped.
struct Number {
    top: bool,
}

impl<'de> de::DeserializeSeed<'de> for Number {
    type Value = Option<f64>;

    fn deserialize<D: de::Deserializer<'de>>(self, value: D) -> Result<Option<f64>, D::Error> {
        value.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Number {
    type Value = Option<f64>;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_f64<E>(self, v: f64) -> Result<Option<f64>, E> {
        Ok(Some(v))
    }

    fn visit_i64<E>(self, v: i64) -> Result<Option<f64>, E> {
        Ok(Some(v as f64))
    }

    fn visit_u64<E>(self, v: u64) -> Result<Option<f64>, E> {
        Ok(Some(v as f64))
    }

    fn visit_bool<E>(self, _: bool) -> Result<Option<f64>, E> {
        Ok(None)
    }

    fn visit_str<E>(self, _: &str) -> Result<Option<f64>, E> {
        Ok(None)
    }

    fn visit_unit<E>(self) -> Result<Option<f64>, E> {
        Ok(None)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut items: A) -> Result<Option<f64>, A::Error> {
        while items.next_element::<IgnoredAny>()?.is_some() {}
        Ok(None)
    }

    fn visit_map<A: MapAccess<'de>>(self, mut fields: A) -> Result<Option<f64>, A::Error> {
        let (mut reward, mut score) = (None, None);
        while let Some(key) = fields.next_key::<String>()? {
            match key.as_str() {
                "reward" if self.top => {
                    reward = Some(fields.next_value_seed(Number { top: false })?)
                }
                "score" if self.top => score = Some(fields.next_value_seed(Number { top: false })?),
                _ => {
                    fields.next_value::<IgnoredAny>()?;
                }
            }
        }
        Ok(reward.or(score).flatten())
    }
}

/// An answer that held no number, as the error shows it: its JSON written compactly, or, where
/// it nests too deep to build, its text cut to 200 characters.
fn shown(answer: &str) -> String {
    match serde_json::from_str::<Value>(answer) {
        Ok(value) => value.to_string(),
        Err(_) => {
            let cut: String = answer.chars().take(200).collect();
            if cut.len() < answer.len() {
                format!("{cut}…")
            } else {
                cut
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_reward_is_the_number_or_the_objects_reward_else_its_score() {
        let read = |answer: &str| reward_in(answer).unwrap();
        assert_eq!(read("0.5"), Some(0.5));
        assert_eq!(read("-3"), Some(-3.0));
        assert_eq!(
            read(r#"{"score": 0.25, "metadata": {"a": [1, {"b": null}]}}"#),
            Some(0.25)
        );
        assert_eq!(read(r#"{"score": 0.25, "reward": 0.75}"#), Some(0.75));
        // A `reward` that is not a number is not made up for by a `score`.
        assert_eq!(read(r#"{"reward": "high", "score": 0.75}"#), None);
        assert_eq!(read(r#"{"score": 0.1, "score": 0.2}"#), Some(0.2));
        // Only the answer's own members count, not those of its metadata or of a member.
        assert_eq!(read(r#"{"metadata": {"score": 1}}"#), None);
        assert_eq!(read(r#"{"score": {"score": 1}}"#), None);
        for answer in ["[1]", "null", "true", r#""0.5""#, "{}"] {
            assert_eq!(read(answer), None, "{answer}");
        }
    }

    #[test]
    fn metadata_of_any_depth_is_skipped_and_a_broken_answer_is_not_json() {
        let depth = 100_000;
        let deep = format!(
            r#"{{"metadata": {}1{}, "score": 0.5}}"#,
            "[".repeat(depth),
            "]".repeat(depth)
        );
        assert_eq!(reward_in(&deep).unwrap(), Some(0.5));
        // Without a number, the error shows the start of what could not be built.
        let unscored = deep.replace(r#""score": 0.5"#, r#""score": "high""#);
        assert_eq!(reward_in(&unscored).unwrap(), None);
        let error = ComposerError::NotANumber(shown(&unscored)).to_string();
        assert!(
            error.starts_with(r#"reward: the composer returned {"metadata": [[["#),
            "{error}"
        );
        assert!(error.contains("[…, not a number"), "{error}");
        assert_eq!(
            ComposerError::NotANumber(shown(r#"{"score": "high", "n": 1}"#)).to_string(),
            r#"reward: the composer returned {"score":"high","n":1}, not a number or an object with a numeric `score`"#
        );
        for broken in [r#"{"score": 0.5"#, "0.5 0.6", "", "NaN"] {
            assert!(reward_in(broken).is_err(), "{broken}");
        }
    }
}
