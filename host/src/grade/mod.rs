//! Grading a sample: extractors, built-in graders, judges, packs and the Python semantics they
//! share; here, the outcome of one grader on one sample.

pub mod builtin;
pub mod config;
pub mod extract;
pub mod grants;
pub mod judge;
pub mod net;
pub mod openai;
pub mod pack;
pub mod program;
pub mod python;
pub mod registry;
pub mod reward;

use std::borrow::Cow;

use serde::Serialize;
use serde::ser::{SerializeMap, SerializeStruct, Serializer};
use serde_json::{Map, Value};

/// A grade's metric key: the plan's, borrowed, or one read from a results file.
pub type GradeKey = Cow<'static, str>;

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
#[derive(Debug, Clone, serde::Deserialize)]
#[serde(from = "GradeRecord")]
pub struct Grade {
    pub score: f64,
    pub status: Status,
    /// Most rationales are fixed texts, kept without a copy.
    pub rationale: Cow<'static, str>,
    pub submission: String,
    /// What few graders set, boxed: a grade is moved several times on its way to the results
    /// file, and these fields inline made every grade 300 bytes.
    details: Option<Box<Details>>,
}

/// A grade's `metadata`, typed checks, `expected` and `actual`.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Details {
    pub metadata: Map<String, Value>,
    /// `metadata.checks` of a grader that runs several checks, held typed rather than as JSON
    /// values (a map per check costs more to build than the check itself). Written as the first
    /// key of `metadata`; a grade read back from a results file has them in `metadata`.
    pub checks: Vec<CheckOutcome>,
    pub expected: Option<Value>,
    pub actual: Option<Value>,
}

impl Details {
    fn is_empty(&self) -> bool {
        self.metadata.is_empty()
            && self.checks.is_empty()
            && self.expected.is_none()
            && self.actual.is_none()
    }
}

/// A grade as a results file has it.
#[derive(serde::Deserialize)]
struct GradeRecord {
    score: f64,
    status: Status,
    rationale: String,
    submission: String,
    #[serde(default)]
    metadata: Map<String, Value>,
    #[serde(default, deserialize_with = "present")]
    expected: Option<Value>,
    #[serde(default, deserialize_with = "present")]
    actual: Option<Value>,
}

/// A field that is there, `null` included (a plain `Option` reads `null` as absent).
fn present<'de, D: serde::Deserializer<'de>>(deserializer: D) -> Result<Option<Value>, D::Error> {
    serde::Deserialize::deserialize(deserializer).map(Some)
}

impl From<GradeRecord> for Grade {
    fn from(record: GradeRecord) -> Grade {
        let details = Details {
            metadata: record.metadata,
            checks: Vec::new(),
            expected: record.expected,
            actual: record.actual,
        };
        Grade::new(record.score, record.status, record.rationale)
            .with_submission(record.submission)
            .with_details(details)
    }
}

/// Grades are equal when what they say is: no details and empty ones are the same.
impl PartialEq for Grade {
    fn eq(&self, other: &Grade) -> bool {
        self.score == other.score
            && self.status == other.status
            && self.rationale == other.rationale
            && self.submission == other.submission
            && self.details() == other.details()
    }
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

impl<'a> Metadata<'a> {
    pub fn is_empty(&self) -> bool {
        self.checks.is_empty() && self.rest.is_empty()
    }

    /// The checks, written first under `checks`.
    pub fn checks(&self) -> &'a [CheckOutcome] {
        self.checks
    }

    /// The other keys, in order.
    pub fn rest(&self) -> &'a Map<String, Value> {
        self.rest
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
        let details = self.details();
        for (key, value) in [("expected", &details.expected), ("actual", &details.actual)] {
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
            details: None,
        }
    }

    /// The grade's metadata, checks, `expected` and `actual` (all empty when none was set).
    pub fn details(&self) -> &Details {
        static NONE: std::sync::OnceLock<Details> = std::sync::OnceLock::new();
        self.details
            .as_deref()
            .unwrap_or_else(|| NONE.get_or_init(Details::default))
    }

    fn details_mut(&mut self) -> &mut Details {
        self.details.get_or_insert_default()
    }

    /// The `metadata` object as written.
    pub fn metadata(&self) -> Metadata<'_> {
        let details = self.details();
        Metadata {
            checks: &details.checks,
            rest: &details.metadata,
        }
    }

    pub fn with_submission(mut self, submission: impl Into<String>) -> Grade {
        self.submission = submission.into();
        self
    }

    pub fn with_expected_actual(mut self, expected: Value, actual: Value) -> Grade {
        let details = self.details_mut();
        details.expected = Some(expected);
        details.actual = Some(actual);
        self
    }

    pub fn with_metadata(mut self, key: &str, value: Value) -> Grade {
        self.details_mut().metadata.insert(key.to_string(), value);
        self
    }

    /// The grade with these details in place of any it had.
    pub fn with_details(mut self, details: Details) -> Grade {
        self.details = (!details.is_empty()).then(|| Box::new(details));
        self
    }

    pub fn with_checks(mut self, checks: Vec<CheckOutcome>) -> Grade {
        self.details_mut().checks = checks;
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn details_are_kept_apart_and_read_back_as_written() {
        let bare = Grade::fail("no");
        assert_eq!(bare.details(), &Details::default());
        assert_eq!(bare, Grade::fail("no").with_details(Details::default()));
        assert_ne!(bare, Grade::fail("no").with_metadata("k", json!(1)));

        let full = Grade::fail("no")
            .with_submission("s")
            .with_metadata("k", json!([1]))
            .with_expected_actual(json!("a"), json!(null));
        assert_eq!(full.details().metadata["k"], json!([1]));
        assert_eq!(full.details().expected, Some(json!("a")));
        assert_eq!(full.details().actual, Some(json!(null)));
        let text = serde_json::to_string(&full).unwrap();
        assert_eq!(serde_json::from_str::<Grade>(&text).unwrap(), full);

        let empty =
            r#"{"score":0.0,"status":"fail","rationale":"no","submission":"","metadata":{}}"#;
        assert_eq!(serde_json::from_str::<Grade>(empty).unwrap(), bare);
    }
}
