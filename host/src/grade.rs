//! The outcome of one grader on one sample.

use std::borrow::Cow;

use serde::Serialize;
use serde::ser::{SerializeMap, SerializeStruct, Serializer};
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
#[derive(Debug, Clone, PartialEq, serde::Deserialize)]
pub struct Grade {
    pub score: f64,
    pub status: Status,
    /// Most rationales are fixed texts, kept without a copy.
    pub rationale: Cow<'static, str>,
    pub submission: String,
    #[serde(default)]
    pub metadata: Map<String, Value>,
    /// `metadata.checks` of a grader that runs several checks, held typed rather than as JSON
    /// values (a map per check costs more to build than the check itself). Written as the first
    /// key of `metadata`; a grade read back from a results file has them in `metadata`.
    #[serde(skip)]
    pub checks: Vec<CheckOutcome>,
    #[serde(default)]
    pub expected: Option<Value>,
    #[serde(default)]
    pub actual: Option<Value>,
}

/// One check of a grader that runs several: an entry of `metadata.checks`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CheckOutcome {
    pub check: &'static str,
    pub status: Status,
    pub message: String,
}

/// A grade's `metadata` as written: its checks, then the other keys.
pub struct Metadata<'a> {
    checks: &'a [CheckOutcome],
    rest: &'a Map<String, Value>,
}

impl Metadata<'_> {
    pub fn is_empty(&self) -> bool {
        self.checks.is_empty() && self.rest.is_empty()
    }
}

impl Serialize for Metadata<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let checks = !self.checks.is_empty();
        let mut map = serializer.serialize_map(Some(self.rest.len() + usize::from(checks)))?;
        if checks {
            map.serialize_entry("checks", self.checks)?;
        }
        for (key, value) in self.rest {
            map.serialize_entry(key, value)?;
        }
        map.end()
    }
}

impl Serialize for Grade {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let metadata = self.metadata();
        let mut grade = serializer.serialize_struct("Grade", 7)?;
        grade.serialize_field("score", &self.score)?;
        grade.serialize_field("status", &self.status)?;
        grade.serialize_field("rationale", &self.rationale)?;
        grade.serialize_field("submission", &self.submission)?;
        if metadata.is_empty() {
            grade.skip_field("metadata")?;
        } else {
            grade.serialize_field("metadata", &metadata)?;
        }
        for (key, value) in [("expected", &self.expected), ("actual", &self.actual)] {
            match value {
                Some(value) => grade.serialize_field(key, value)?,
                None => grade.skip_field(key)?,
            }
        }
        grade.end()
    }
}

impl Grade {
    /// A grade whose status follows from the score: pass at 1.0, fail below.
    pub fn scored(score: f64, rationale: impl Into<Cow<'static, str>>) -> Grade {
        let status = if score >= 1.0 {
            Status::Pass
        } else {
            Status::Fail
        };
        Grade::new(score, status, rationale)
    }

    pub fn pass(rationale: impl Into<Cow<'static, str>>) -> Grade {
        Grade::new(1.0, Status::Pass, rationale)
    }

    pub fn fail(rationale: impl Into<Cow<'static, str>>) -> Grade {
        Grade::new(0.0, Status::Fail, rationale)
    }

    /// A grader could not grade: score 0, status `error`, the reason as rationale.
    pub fn error(reason: impl Into<Cow<'static, str>>) -> Grade {
        Grade::new(0.0, Status::Error, reason)
    }

    pub fn new(score: f64, status: Status, rationale: impl Into<Cow<'static, str>>) -> Grade {
        Grade {
            score,
            status,
            rationale: rationale.into(),
            submission: String::new(),
            metadata: Map::new(),
            checks: Vec::new(),
            expected: None,
            actual: None,
        }
    }

    /// The `metadata` object as written.
    pub fn metadata(&self) -> Metadata<'_> {
        Metadata {
            checks: &self.checks,
            rest: &self.metadata,
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

    pub fn with_checks(mut self, checks: Vec<CheckOutcome>) -> Grade {
        self.checks = checks;
        self
    }
}
