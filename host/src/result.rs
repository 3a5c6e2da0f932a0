//! One graded sample, as written to `results.jsonl`.

use serde::ser::{SerializeMap, Serializer};
use serde::{Deserialize, Serialize};

use crate::grade::{Grade, Status};
use crate::sample::SampleId;

/// Why a sample as a whole is in error. Errored samples are counted apart and left out of the
/// metric means, as letta-evals does.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SampleError {
    pub category: ErrorCategory,
    pub message: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ErrorCategory {
    /// The dataset row itself is invalid (only with `--skip-invalid`).
    Invalid,
    /// The first grader found nothing to grade (empty trajectory or submission).
    Extraction,
    /// A grader could not grade.
    Grading,
    /// The reward could not be computed.
    Reward,
}

/// `{"sample_id", "grades": {key: grade}, "reward"?, "error"?}`; grades keep the suite's order.
#[derive(Debug, Clone, PartialEq)]
pub struct SampleResult {
    pub sample_id: SampleId,
    pub grades: Vec<(String, Grade)>,
    pub reward: Option<f64>,
    pub error: Option<SampleError>,
}

impl SampleResult {
    /// pass when every grade passes (skips are neutral), error when the sample or any grade is
    /// in error, fail otherwise: evaldeck's combination rule.
    pub fn status(&self) -> Status {
        if self.error.is_some() || self.grades.iter().any(|(_, g)| g.status == Status::Error) {
            Status::Error
        } else if self.grades.iter().any(|(_, g)| g.status == Status::Fail) {
            Status::Fail
        } else {
            Status::Pass
        }
    }

    pub fn grade(&self, key: &str) -> Option<&Grade> {
        self.grades.iter().find(|(k, _)| k == key).map(|(_, g)| g)
    }

    /// Whether this result stands for a dataset row that could not be read as a sample.
    pub fn is_invalid_row(&self) -> bool {
        self.error
            .as_ref()
            .is_some_and(|e| e.category == ErrorCategory::Invalid)
    }
}

struct Grades<'a>(&'a [(String, Grade)]);

impl Serialize for Grades<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(Some(self.0.len()))?;
        for (key, grade) in self.0 {
            map.serialize_entry(key, grade)?;
        }
        map.end()
    }
}

impl Serialize for SampleResult {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(None)?;
        map.serialize_entry("sample_id", &self.sample_id)?;
        map.serialize_entry("grades", &Grades(&self.grades))?;
        if let Some(reward) = self.reward {
            map.serialize_entry("reward", &reward)?;
        }
        if let Some(error) = &self.error {
            map.serialize_entry("error", error)?;
        }
        map.end()
    }
}
