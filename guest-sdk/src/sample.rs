//! The dataset row a grader sees.

use serde_json::{Map, Value};

use crate::Error;

/// One dataset row: a letta-evals sample, an evaldeck case, or both.
///
/// ```
/// use gavel_guest::{Sample, Texts};
///
/// let sample = Sample { ground_truth: Some(Texts::One("Paris".into())), ..Sample::default() };
/// assert_eq!(sample.ground_truth_text(), Some("Paris"));
/// ```
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Sample {
    /// The row's id (its 0-based line index when the row has none).
    pub id: SampleId,
    /// The task given to the agent.
    pub input: Option<Texts>,
    /// The reference answer.
    pub ground_truth: Option<Texts>,
    /// Values for the rubric's placeholders.
    pub rubric_vars: Map<String, Value>,
    /// evaldeck's case name.
    pub name: Option<String>,
    /// evaldeck's case description.
    pub description: Option<String>,
    /// evaldeck's `expected:` block as JSON, if the row has one (`tools_called`, `max_steps`,
    /// ..., and free-form data under `custom`); keys the row did not set are absent.
    pub expected: Option<Map<String, Value>>,
    /// evaldeck's reference output.
    pub reference_output: Option<String>,
    /// evaldeck's reference tools.
    pub reference_tools: Vec<String>,
    /// The row's tags.
    pub tags: Vec<String>,
    /// The row's free-form metadata.
    pub metadata: Map<String, Value>,
    /// The agent's memory blocks, if the row recorded its state (`agent_state`).
    pub memory: Option<Vec<MemoryBlock>>,
}

/// A sample's id: an integer or a string, as the dataset wrote it.
///
/// ```
/// use gavel_guest::SampleId;
///
/// assert_eq!(SampleId::Int(3).to_string(), "3");
/// assert_eq!(SampleId::Str("case-a".into()).to_string(), "case-a");
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum SampleId {
    /// An integer id.
    Int(i64),
    /// A string id.
    Str(String),
}

/// A text, or one text per turn (letta-evals' multi-turn samples).
///
/// ```
/// use gavel_guest::Texts;
///
/// let turns = Texts::PerTurn(vec!["hi".into(), "bye".into()]);
/// assert_eq!(turns.as_one(), None);
/// assert_eq!(Texts::One("hi".into()).as_one(), Some("hi"));
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Texts {
    /// One text.
    One(String),
    /// One text per turn.
    PerTurn(Vec<String>),
}

/// One block of a Letta agent's memory.
///
/// ```
/// use gavel_guest::MemoryBlock;
///
/// let block = MemoryBlock { label: "human".into(), value: "Name: Ada".into() };
/// assert_eq!(block.label, "human");
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct MemoryBlock {
    /// The block's label, e.g. `human` or `persona`.
    pub label: String,
    /// The block's content.
    pub value: String,
}

impl Default for SampleId {
    fn default() -> Self {
        SampleId::Int(0)
    }
}

impl std::fmt::Display for SampleId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SampleId::Int(id) => write!(f, "{id}"),
            SampleId::Str(id) => f.write_str(id),
        }
    }
}

impl Texts {
    /// The text, when there is exactly one (not per turn).
    ///
    /// ```
    /// use gavel_guest::Texts;
    ///
    /// assert_eq!(Texts::One("4".into()).as_one(), Some("4"));
    /// ```
    pub fn as_one(&self) -> Option<&str> {
        match self {
            Texts::One(text) => Some(text),
            Texts::PerTurn(_) => None,
        }
    }
}

impl Sample {
    /// The ground truth when it is one text; `None` when missing or per turn.
    ///
    /// ```
    /// use gavel_guest::{Sample, Texts};
    ///
    /// let sample = Sample { ground_truth: Some(Texts::One("4".into())), ..Sample::default() };
    /// assert_eq!(sample.ground_truth_text(), Some("4"));
    /// assert_eq!(Sample::default().ground_truth_text(), None);
    /// ```
    pub fn ground_truth_text(&self) -> Option<&str> {
        self.ground_truth.as_ref().and_then(Texts::as_one)
    }

    /// The input when it is one text; `None` when missing or per turn.
    ///
    /// ```
    /// use gavel_guest::{Sample, Texts};
    ///
    /// let sample = Sample { input: Some(Texts::One("2+2?".into())), ..Sample::default() };
    /// assert_eq!(sample.input_text(), Some("2+2?"));
    /// ```
    pub fn input_text(&self) -> Option<&str> {
        self.input.as_ref().and_then(Texts::as_one)
    }

    /// The built-in extractor `memory_block`: the value of the first memory block labelled
    /// `label`, verbatim; `""` when no block has that label. An error when the label is empty
    /// or the row recorded no agent state.
    ///
    /// ```
    /// use gavel_guest::{MemoryBlock, Sample};
    ///
    /// let sample = Sample {
    ///     memory: Some(vec![MemoryBlock { label: "human".into(), value: "Name: Ada ".into() }]),
    ///     ..Sample::default()
    /// };
    /// assert_eq!(sample.memory_block("human")?, "Name: Ada ");
    /// assert_eq!(sample.memory_block("persona")?, "");
    /// assert!(Sample::default().memory_block("human").is_err());
    /// # Ok::<(), gavel_guest::Error>(())
    /// ```
    pub fn memory_block(&self, label: &str) -> Result<&str, Error> {
        if label.is_empty() {
            return Err(Error::new("memory_block: the block label is empty"));
        }
        let blocks = self.memory.as_deref().ok_or_else(|| {
            Error::new("memory_block: the sample has no agent_state, so no memory blocks")
        })?;
        Ok(blocks
            .iter()
            .find(|block| block.label == label)
            .map_or("", |block| block.value.as_str()))
    }
}
