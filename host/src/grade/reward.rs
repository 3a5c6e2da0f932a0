//! The sample's reward from its grades, as the suite's `reward:` (config/reward.rs) says.

use crate::config::reward::{RewardError, RewardSpec};
use crate::grade::{Grade, GradeKey};

impl RewardSpec {
    pub fn compute(&self, grades: &[(GradeKey, Grade)]) -> Result<f64, RewardError> {
        let score = |key: &str| -> Result<f64, RewardError> {
            let grade = grades
                .iter()
                .find(|(k, _)| k == key)
                .map(|(_, g)| g)
                .ok_or_else(|| RewardError::NoGrade(key.to_string()))?;
            if grade.score.is_finite() {
                Ok(grade.score)
            } else {
                Err(RewardError::NotNumeric(key.to_string()))
            }
        };
        match self {
            RewardSpec::Metric { metric_key } => score(metric_key),
            RewardSpec::Weighted { weights } => {
                let mut sum = 0.0;
                for (key, weight) in weights.iter() {
                    sum += weight * score(key)?;
                }
                // Normalised weights over scores in [0, 1] can overshoot 1 by a rounding step.
                Ok(sum.min(1.0))
            }
            RewardSpec::Custom { function } => Err(RewardError::NotLoaded(function.clone())),
        }
    }
}
