//! What a grader returns.

use serde_json::{Map, Value};

/// The outcome of grading one sample.
///
/// Build one with [`Grade::pass`], [`Grade::fail`], [`Grade::score`] or [`Grade::skip`], then add
/// what helps a reader of the results:
///
/// ```
/// use gavel_guest::{Grade, Status};
///
/// let grade = Grade::fail("Airport code should be uppercase")
///     .expected("NYC")
///     .actual("nyc")
///     .metadata("tool", "search_flights");
/// assert_eq!(grade.score, 0.0);
/// assert_eq!(grade.status, Some(Status::Fail));
/// assert_eq!(grade.metadata["tool"], "search_flights");
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct Grade {
    /// In [0, 1]. gavel turns anything else, NaN included, into an `error` grade.
    pub score: f64,
    /// The status; when `None`, gavel derives it: pass at a score of 1.0, fail below.
    pub status: Option<Status>,
    /// Why the sample got this grade, for people reading the results.
    pub rationale: String,
    /// Extra data, kept in the grade's `metadata` in the results.
    pub metadata: Map<String, Value>,
    /// What was expected, for failures.
    pub expected: Option<Value>,
    /// What was found instead, for failures.
    pub actual: Option<Value>,
}

/// A grade's status.
///
/// ```
/// use gavel_guest::{Grade, Status};
///
/// assert_eq!(Grade::skip("no flights searched").status, Some(Status::Skip));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Status {
    /// The criteria are met.
    Pass,
    /// The criteria are not met.
    Fail,
    /// The grader could not grade.
    Error,
    /// The grader does not apply to this sample.
    Skip,
}

impl Grade {
    /// Score 1, status pass.
    ///
    /// ```
    /// use gavel_guest::Grade;
    ///
    /// assert_eq!(Grade::pass("Valid JSON").score, 1.0);
    /// ```
    pub fn pass(rationale: impl Into<String>) -> Grade {
        Grade::new(1.0, Some(Status::Pass), rationale)
    }

    /// Score 0, status fail.
    ///
    /// ```
    /// use gavel_guest::Grade;
    ///
    /// assert_eq!(Grade::fail("Missing required field: name").score, 0.0);
    /// ```
    pub fn fail(rationale: impl Into<String>) -> Grade {
        Grade::new(0.0, Some(Status::Fail), rationale)
    }

    /// A partial score in [0, 1]; gavel derives the status (pass at 1.0, fail below) unless
    /// [`Grade::status`] sets one.
    ///
    /// ```
    /// use gavel_guest::{Grade, Status};
    ///
    /// let grade = Grade::score(0.75, "3 of 4 checks passed");
    /// assert_eq!(grade.status, None);
    /// let lenient = Grade::score(0.75, "3 of 4 checks passed").status(Status::Pass);
    /// assert_eq!(lenient.status, Some(Status::Pass));
    /// ```
    pub fn score(score: f64, rationale: impl Into<String>) -> Grade {
        Grade::new(score, None, rationale)
    }

    /// Score 0, status skip: the grader does not apply to this sample.
    ///
    /// ```
    /// use gavel_guest::Grade;
    ///
    /// assert_eq!(Grade::skip("no booking in this sample").score, 0.0);
    /// ```
    pub fn skip(rationale: impl Into<String>) -> Grade {
        Grade::new(0.0, Some(Status::Skip), rationale)
    }

    /// Sets the status, e.g. to pass a partial score above a threshold of your own.
    ///
    /// ```
    /// use gavel_guest::{Grade, Status};
    ///
    /// let score = 0.8;
    /// let status = if score >= 0.7 { Status::Pass } else { Status::Fail };
    /// assert_eq!(Grade::score(score, "quality").status(status).status, Some(Status::Pass));
    /// ```
    pub fn status(mut self, status: Status) -> Grade {
        self.status = Some(status);
        self
    }

    /// What was expected (any JSON value: a string, a number, `serde_json::json!({...})`).
    ///
    /// ```
    /// use gavel_guest::Grade;
    ///
    /// let grade = Grade::fail("over budget").expected("<= 1000");
    /// assert_eq!(grade.expected, Some("<= 1000".into()));
    /// ```
    pub fn expected(mut self, expected: impl Into<Value>) -> Grade {
        self.expected = Some(expected.into());
        self
    }

    /// What was found instead.
    ///
    /// ```
    /// use gavel_guest::Grade;
    ///
    /// let grade = Grade::fail("over budget").actual(1500);
    /// assert_eq!(grade.actual, Some(1500.into()));
    /// ```
    pub fn actual(mut self, actual: impl Into<Value>) -> Grade {
        self.actual = Some(actual.into());
        self
    }

    /// Adds one metadata entry (replacing an earlier one of the same key).
    ///
    /// ```
    /// use gavel_guest::Grade;
    ///
    /// let grade = Grade::pass("ok").metadata("tokens", 420).metadata("budget", 1000);
    /// assert_eq!(grade.metadata["tokens"], 420);
    /// ```
    pub fn metadata(mut self, key: impl Into<String>, value: impl Into<Value>) -> Grade {
        self.metadata.insert(key.into(), value.into());
        self
    }

    fn new(score: f64, status: Option<Status>, rationale: impl Into<String>) -> Grade {
        Grade {
            score,
            status,
            rationale: rationale.into(),
            metadata: Map::new(),
            expected: None,
            actual: None,
        }
    }
}
