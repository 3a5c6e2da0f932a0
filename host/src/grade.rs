//! The outcome of one grader on one sample.

use serde::Serialize;
use serde_json::{Map, Value};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    Pass,
    Fail,
    Error,
    Skip,
}

impl Status {
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Pass => "pass",
            Status::Fail => "fail",
            Status::Error => "error",
            Status::Skip => "skip",
        }
    }
}

/// `{score in [0,1], status, rationale, submission, metadata}`, with `expected`/`actual` for
/// failures where the grader has them.
#[derive(Debug, Clone, PartialEq, Serialize, serde::Deserialize)]
pub struct Grade {
    pub score: f64,
    pub status: Status,
    pub rationale: String,
    pub submission: String,
    #[serde(default, skip_serializing_if = "Map::is_empty")]
    pub metadata: Map<String, Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expected: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub actual: Option<Value>,
}

impl Grade {
    /// A grade whose status follows from the score: pass at 1.0, fail below.
    pub fn scored(score: f64, rationale: impl Into<String>) -> Grade {
        let status = if score >= 1.0 {
            Status::Pass
        } else {
            Status::Fail
        };
        Grade::new(score, status, rationale)
    }

    pub fn pass(rationale: impl Into<String>) -> Grade {
        Grade::new(1.0, Status::Pass, rationale)
    }

    pub fn fail(rationale: impl Into<String>) -> Grade {
        Grade::new(0.0, Status::Fail, rationale)
    }

    /// A grader could not grade: score 0, status `error`, the reason as rationale.
    pub fn error(reason: impl Into<String>) -> Grade {
        Grade::new(0.0, Status::Error, reason)
    }

    pub fn new(score: f64, status: Status, rationale: impl Into<String>) -> Grade {
        Grade {
            score,
            status,
            rationale: rationale.into(),
            submission: String::new(),
            metadata: Map::new(),
            expected: None,
            actual: None,
        }
    }

    pub fn with_submission(mut self, submission: impl Into<String>) -> Grade {
        self.submission = submission.into();
        self
    }

    pub fn with_expected_actual(mut self, expected: Value, actual: Value) -> Grade {
        self.expected = Some(expected);
        self.actual = Some(actual);
        self
    }

    pub fn with_metadata(mut self, key: &str, value: Value) -> Grade {
        self.metadata.insert(key.to_string(), value);
        self
    }
}
