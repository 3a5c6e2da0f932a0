//! The blocks of a suite that the later stages put to use, as written: the recorded runs'
//! format, a pack and its limits, a Python grader's isolation, a judge's rubric.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// The shape of a dataset's recorded runs: the suite's `format:`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Format {
    #[default]
    Letta,
    Evaldeck,
    #[serde(rename = "openai")]
    OpenAi,
    #[serde(rename = "openai_responses")]
    OpenAiResponses,
    Anthropic,
    ClaudeCode,
    Otel,
    Inspect,
}

/// What a sample of a collector file is: the suite's `sample_per:`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SamplePer {
    /// A trace: every span of one `traceId`.
    #[default]
    Trace,
    /// A root span (a span with no parent in the file) with the spans below it.
    RootSpan,
}

impl SamplePer {
    /// Whether a sample is a trace, as it is unless the suite says otherwise.
    pub fn is_trace(&self) -> bool {
        *self == SamplePer::Trace
    }
}

/// A suite's `packs:` entry.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PackSpec {
    /// The component file, relative to the suite file.
    pub path: PathBuf,
    /// The file's SHA-256 in hex; a file that does not match is refused.
    #[serde(default)]
    pub sha256: Option<String>,
    /// Limits for this pack's calls, over the suite's.
    #[serde(default)]
    pub limits: Option<Limits>,
    /// What its functions may reach, over the suite's `allow:`; a grader's own `allow:` is
    /// over this.
    #[serde(default)]
    pub allow: Option<crate::config::allow::AllowSpec>,
}

/// Limits of a sandboxed call, as a suite's `limits:` or a pack's `limits:` sets them. Every key
/// is optional: a pack's value wins over the suite's, which wins over the default.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Limits {
    /// Instruction budget per call ([`crate::grade::pack::DEFAULT_FUEL`]).
    pub fuel: Option<u64>,
    /// Linear memory per call in MiB ([`crate::grade::pack::DEFAULT_MEMORY_MB`]).
    pub memory_mb: Option<u64>,
    /// Wall-clock deadline per call in milliseconds ([`crate::grade::pack::DEFAULT_TIMEOUT_MS`]).
    pub timeout_ms: Option<u64>,
    /// Largest returned grade or extraction in KiB ([`crate::grade::pack::DEFAULT_OUTPUT_KB`]).
    pub output_kb: Option<u64>,
    /// Captured stdout, and stderr, per call in KiB ([`crate::grade::pack::DEFAULT_STDOUT_KB`]).
    pub stdout_kb: Option<u64>,
    /// Instruction budget for loading an interpreter's program into an instance
    /// ([`crate::grade::pack::DEFAULT_LOAD_FUEL`]).
    pub load_fuel: Option<u64>,
    /// Wall-clock deadline for loading a program, in milliseconds
    /// ([`crate::grade::pack::DEFAULT_LOAD_TIMEOUT_MS`]).
    pub load_timeout_ms: Option<u64>,
    /// What a grader's writable `/tmp` may hold per instance, in MiB
    /// ([`crate::grade::pack::DEFAULT_TMP_MB`]).
    pub tmp_mb: Option<u64>,
    /// Files and folders a grader's writable `/tmp` may hold per instance
    /// ([`crate::grade::pack::DEFAULT_TMP_FILES`]).
    pub tmp_files: Option<u64>,
}

/// Where a Python grader's calls run.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Isolation {
    /// One instance per grader and batch of consecutive samples (`BATCH_ROWS`).
    #[default]
    Batch,
    /// A fresh instance for every call.
    Sample,
}

/// The grader spec of `kind: rubric` / `kind: model_judge`, without `kind`.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RubricSpec {
    /// The rubric, inline. At most one of `prompt` and `prompt_path`; neither when every sample
    /// brings its own `rubric`.
    #[serde(default)]
    pub prompt: Option<String>,
    /// A file holding the rubric, relative to the suite file.
    #[serde(default)]
    pub prompt_path: Option<PathBuf>,
    /// The judge model: `gpt-4o-mini` by default, or the `agent_file` agent's model.
    #[serde(default)]
    pub model: Option<String>,
    /// 0 by default, or the `agent_file` agent's temperature.
    #[serde(default)]
    pub temperature: Option<f64>,
    /// A Letta agent file (`.af`), relative to the suite file, whose agent judges: its system
    /// prompt, model and grading tool, the grade read from the model's call of that tool.
    #[serde(default)]
    pub agent_file: Option<PathBuf>,
    /// A judge agent on a Letta server, which letta-evals' Letta judge could name: refused,
    /// since gavel grades without one (`agent_file` takes the agent exported).
    #[serde(default)]
    pub agent_id: Option<String>,
    /// The `agent_file` agent's grading tool (default `submit_grade`).
    #[serde(default)]
    pub judge_tool_name: Option<String>,
    #[serde(default)]
    pub system_prompt: Option<String>,
    /// Defaults to `OPENAI_BASE_URL` (`ANTHROPIC_BASE_URL` for `anthropic`), else the
    /// provider's API.
    #[serde(default)]
    pub base_url: Option<String>,
    /// The environment variable that holds the API key: by default `OPENAI_API_KEY`, or
    /// `ANTHROPIC_API_KEY` for `anthropic`.
    #[serde(default)]
    pub api_key_env: Option<String>,
    #[serde(default = "default_max_retries")]
    pub max_retries: u32,
    /// Seconds per attempt.
    #[serde(default = "default_timeout")]
    pub timeout: f64,
    /// Requests this grader keeps in flight at most, within the run's bound.
    #[serde(default = "default_concurrency")]
    pub concurrency: usize,
    /// `openai` (any OpenAI-compatible endpoint) or `anthropic` (the Messages API).
    #[serde(default = "default_provider")]
    pub provider: String,
    /// The score at or above which the grade passes.
    #[serde(default = "default_pass_threshold")]
    pub pass_threshold: f64,
    #[serde(default = "default_extractor")]
    pub extractor: String,
    #[serde(default)]
    pub extractor_config: Map<String, Value>,
    #[serde(default)]
    pub display_name: Option<String>,
}

fn default_max_retries() -> u32 {
    5
}
fn default_timeout() -> f64 {
    120.0
}
fn default_concurrency() -> usize {
    16
}
fn default_provider() -> String {
    "openai".into()
}
fn default_pass_threshold() -> f64 {
    1.0
}
fn default_extractor() -> String {
    "last_assistant".into()
}

/// OpenAI's `python` grader, as `kind: python` writes it.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PythonSpec {
    /// The grader's code, defining `grade(sample, item)`.
    #[serde(default)]
    pub source: Option<String>,
    /// A file holding that code, relative to the suite.
    #[serde(default)]
    pub source_path: Option<String>,
    /// The score at or above which the grade passes (OpenAI's default: 1.0).
    #[serde(default)]
    pub pass_threshold: Option<f64>,
    /// OpenAI's grader name; the metric key names the grade in gavel.
    #[serde(default)]
    pub name: Option<String>,
    /// OpenAI's container image: the code runs in gavel's sandbox instead.
    #[serde(default)]
    pub image_tag: Option<serde::de::IgnoredAny>,
    /// Python packages this grader's code imports, besides the suite's `requirements:`.
    #[serde(default)]
    pub requirements: Vec<String>,
    #[serde(default)]
    pub display_name: Option<String>,
    /// What this grader may reach, over the suite's `allow:`.
    #[serde(default)]
    pub allow: Option<crate::config::allow::AllowSpec>,
    /// Where its Python calls run (`batch` or `sample`), over the suite's `isolation`.
    #[serde(default)]
    pub isolation: Option<Isolation>,
}
