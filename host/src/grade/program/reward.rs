//! letta-evals' `reward: {kind: custom, function: path/file.py:name}`: a `@reward_composer`
//! that turns a sample's grades into its reward, run by the interpreter.

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
    NotANumber(Value),
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
        let value: Value =
            serde_json::from_str(&answer).map_err(|e| ComposerError::NotJson(e.to_string()))?;
        let reward = match &value {
            // letta-evals' `RewardOutput` holds `score`; `reward` is accepted as well.
            Value::Object(fields) => fields
                .get("reward")
                .or_else(|| fields.get("score"))
                .and_then(Value::as_f64),
            other => other.as_f64(),
        };
        match reward {
            Some(reward) if reward.is_finite() => Ok(reward),
            _ => Err(ComposerError::NotANumber(value)),
        }
    }
}
