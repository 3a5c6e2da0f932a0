//! LLM-as-judge rubric graders (`kind: rubric`, alias `model_judge`) over any OpenAI-compatible
//! chat-completions endpoint or Anthropic's Messages API, with letta-evals' prompt, request and
//! reply semantics.
//!
//! - [`template`]: the rubric's `{placeholder}` language.
//! - [`agent_file`]: a Letta agent file (`agent_file:`) as the judge: its system prompt, model
//!   and grading tool, the grade read from the tool's call.
//! - [`reply`]: reading the endpoint's answer.
//! - `http`: the call, with retries; `cache`: replies on disk.
//!
//! Differences from letta-evals, on purpose: a NaN score is an `error` grade, not 1.0; rubric
//! templates refuse attribute access; a grade passes when its score reaches `pass_threshold`
//! (default 1.0, the level at which letta-evals counts a turn as passed).

pub mod agent_file;
mod cache;
mod format;
pub(crate) mod http;
pub mod reply;
pub mod template;
pub mod turn;

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use reqwest::Url;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use tokio::sync::Semaphore;

pub use crate::config::spec::RubricSpec;
use crate::grade::config::ConfigError;
use crate::grade::{Grade, Status};
use crate::input::sample::Sample;
use agent_file::{AgentFileError, AgentFileProblem, JudgeAgent};
use cache::Cache;
pub use http::REPLY_LIMIT;
use http::{ApiKey, Auth, Fuse, RequestError, Transport};
use reply::ReplyError;
use template::{RenderError, Template, TemplateError};

/// A judge API letta-evals speaks, and what differs between them on the wire.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Provider {
    OpenAi,
    Anthropic,
}

/// What a provider's SDK reads and sends.
struct Wire {
    /// The variable holding the API key, when the suite names none.
    key_env: &'static str,
    /// The variable that overrides the base URL.
    base_url_env: &'static str,
    default_base_url: &'static str,
    /// Appended to the base URL.
    path: &'static str,
    auth: Auth,
}

impl Provider {
    fn named(name: &str) -> Option<Provider> {
        match name {
            "openai" => Some(Provider::OpenAi),
            "anthropic" => Some(Provider::Anthropic),
            _ => None,
        }
    }

    fn wire(self) -> Wire {
        match self {
            Provider::OpenAi => Wire {
                key_env: "OPENAI_API_KEY",
                base_url_env: "OPENAI_BASE_URL",
                default_base_url: "https://api.openai.com/v1",
                path: "/chat/completions",
                auth: Auth::Bearer,
            },
            Provider::Anthropic => Wire {
                key_env: "ANTHROPIC_API_KEY",
                base_url_env: "ANTHROPIC_BASE_URL",
                default_base_url: "https://api.anthropic.com",
                path: "/v1/messages",
                auth: Auth::AnthropicKey,
            },
        }
    }

    /// The endpoint's reply as the judge reads it.
    fn completion(self, body: &str, key: &ApiKey) -> Result<reply::Completion, ReplyError> {
        match self {
            Provider::OpenAi => reply::completion(body, key),
            Provider::Anthropic => reply::message(body, key),
        }
    }
}
const MISSING_RUBRIC: &str = "No rubric available: neither the grader (prompt/prompt_path) nor the sample (rubric/rubric_path) provided one.";

/// The judge model when none is named: letta-evals' rubric grader's default, and evaldeck's
/// `llm` grader's.
const DEFAULT_MODEL: &str = "gpt-4o-mini";
/// Run-level settings for every judge.
#[derive(Debug, Clone, Default)]
pub struct JudgeOptions {
    /// Where replies are cached; `None` (`--no-cache`) asks the endpoint every time.
    pub cache_dir: Option<PathBuf>,
    /// The run's bound on requests in flight, shared by every judge made with these options.
    pub requests: Arc<RequestBound>,
    /// Whether the judges serve many clients' requests (`gavel serve`) rather than one run: an
    /// endpoint found down is asked again after [`SERVICE_DOWN_HOLD`] instead of never, and a
    /// 404 fails only the request whose model it names.
    pub serving: bool,
}

/// How long a service takes a judge's endpoint as down before asking it again.
const SERVICE_DOWN_HOLD: Duration = Duration::from_secs(30);

/// The run's bound on requests in flight to every judge at once (the run's concurrency), on top
/// of each grader's own; none until [`RequestBound::set`].
#[derive(Debug, Default)]
pub struct RequestBound(OnceLock<Semaphore>);

impl RequestBound {
    /// Allows `n` requests in flight at once from now on; a bound set already stays.
    pub fn set(&self, n: usize) {
        let _ = self.0.set(Semaphore::new(n.max(1)));
    }
}

/// Why a judge cannot be built.
#[derive(Debug, thiserror::Error)]
pub enum JudgeError {
    #[error(transparent)]
    Config(#[from] ConfigError),
    #[error("prompt_path: cannot read {}: {source}", path.display())]
    PromptFile {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{field}: {source}")]
    Template {
        field: &'static str,
        source: TemplateError,
    },
    #[error("agent_file: {0}")]
    AgentFile(#[from] AgentFileError),
    #[error("cannot set up the HTTP client: {0}")]
    Client(String),
    #[error(transparent)]
    Cache(#[from] crate::cache::CacheError),
}

/// A rubric grader, ready to grade samples from many tasks at once.
#[derive(Debug)]
pub struct Judge {
    provider: Provider,
    model: String,
    temperature: f64,
    system_prompt: Option<String>,
    pass_threshold: f64,
    prompt: Option<Template>,
    /// The agent whose grading tool the model calls, for an `agent_file` judge.
    agent: Option<JudgeAgent>,
    base_url: String,
    transport: Transport,
    permits: Semaphore,
    /// The run's bound, which this judge's requests share with every other judge's.
    requests: Arc<RequestBound>,
    cache: Option<Cache>,
    /// Verdicts (or texts) read, and failures, with the first failure's reason.
    answered: AtomicU64,
    failed: AtomicU64,
    first_failure: OnceLock<String>,
}

impl Judge {
    /// Builds the judge from the process environment (`OPENAI_BASE_URL`, the API key variable).
    pub fn new(
        spec: RubricSpec,
        base_dir: &Path,
        options: JudgeOptions,
    ) -> Result<Judge, JudgeError> {
        Judge::with_env(spec, base_dir, options, |name| std::env::var(name).ok())
    }

    /// Builds the judge reading variables through `env`, so that a caller can layer a `.env`
    /// file over the process environment.
    pub fn with_env(
        spec: RubricSpec,
        base_dir: &Path,
        options: JudgeOptions,
        env: impl Fn(&str) -> Option<String>,
    ) -> Result<Judge, JudgeError> {
        let Some(provider) = Provider::named(&spec.provider) else {
            return Err(ConfigError::new(
                "provider",
                format!(
                    "'{}' is not supported: gavel's rubric grader speaks openai (any OpenAI-compatible chat-completions endpoint, set by base_url) and anthropic (the Messages API)",
                    spec.provider
                ),
            )
            .into());
        };
        let positive = |field: &str, value: f64| {
            if value.is_finite() && value > 0.0 {
                Ok(())
            } else {
                Err(ConfigError::new(
                    field,
                    format!("must be a positive number, got {value}"),
                ))
            }
        };
        positive("timeout", spec.timeout)?;
        if spec.concurrency == 0 {
            return Err(ConfigError::new("concurrency", "must be at least 1").into());
        }
        let agent = load_agent(&spec, provider, base_dir)?;
        let model = (spec.model.clone())
            .or_else(|| agent.as_ref().and_then(|a| a.model.clone()))
            .unwrap_or_else(|| DEFAULT_MODEL.to_string());
        let temperature = (spec.temperature)
            .or_else(|| agent.as_ref().and_then(|a| a.temperature))
            .unwrap_or(0.0);
        if !(temperature.is_finite() && temperature >= 0.0) {
            return Err(ConfigError::new(
                "temperature",
                format!("must be a number >= 0, got {temperature}"),
            )
            .into());
        }
        if !(0.0..=1.0).contains(&spec.pass_threshold) {
            return Err(ConfigError::new(
                "pass_threshold",
                format!("must be between 0 and 1, got {}", spec.pass_threshold),
            )
            .into());
        }
        let prompt = load_prompt(&spec, base_dir)?;
        let wire = provider.wire();

        let base_url = spec
            .base_url
            .clone()
            .or_else(|| env(wire.base_url_env).filter(|url| !url.trim().is_empty()))
            .unwrap_or_else(|| wire.default_base_url.to_string());
        let base_url = base_url.trim().trim_end_matches('/').to_string();
        let endpoint = Url::parse(&format!("{base_url}{}", wire.path))
            .ok()
            .filter(|url| matches!(url.scheme(), "http" | "https"))
            .ok_or_else(|| {
                ConfigError::new(
                    "base_url",
                    format!(
                        "'{base_url}' is not an http(s) URL such as {}",
                        wire.default_base_url
                    ),
                )
            })?;
        let var = spec.api_key_env.as_deref().unwrap_or(wire.key_env);
        let api_key = env(var).filter(|key| !key.is_empty());
        let missing_key = api_key.is_none().then(|| {
            format!(
                "api_key_env: the environment variable {var} is not set; export {var} with the \
                 API key for {base_url}, or name another variable in api_key_env"
            )
        });

        // The TLS stack needs a process-wide crypto provider; another part of the process may
        // already have installed one, which is as good.
        let _ = rustls::crypto::ring::default_provider().install_default();
        let client = http::client().map_err(|e| JudgeError::Client(e.to_string()))?;

        Ok(Judge {
            temperature: match provider {
                Provider::OpenAi => effective_temperature(&model, temperature),
                Provider::Anthropic => temperature,
            },
            provider,
            model,
            system_prompt: match &agent {
                Some(agent) => agent.system.clone(),
                None => spec.system_prompt,
            },
            pass_threshold: spec.pass_threshold,
            prompt,
            agent,
            transport: Transport {
                client,
                endpoint,
                api_key: ApiKey::new(api_key.unwrap_or_default()),
                auth: wire.auth,
                missing_key,
                max_retries: spec.max_retries,
                timeout: Duration::from_secs_f64(spec.timeout),
                down: Fuse::holding(options.serving.then_some(SERVICE_DOWN_HOLD)),
                missing_is_down: !options.serving,
                streak: Mutex::default(),
                sent: AtomicU64::new(0),
                in_flight: AtomicUsize::new(0),
                retries: AtomicU64::new(0),
            },
            base_url,
            permits: Semaphore::new(spec.concurrency),
            requests: options.requests,
            cache: match options.cache_dir.as_deref() {
                Some(dir) => Cache::open(dir)?,
                None => None,
            },
            answered: AtomicU64::new(0),
            failed: AtomicU64::new(0),
            first_failure: OnceLock::new(),
        })
    }

    /// letta-evals' check before any sample runs: every placeholder of the grader's rubric is
    /// provided (unless the sample has its own rubric, which is checked instead), and no
    /// `rubric_vars` key shadows a reserved variable.
    pub fn check_sample(&self, sample: &Sample<'_>) -> Result<(), RenderError> {
        template::check_reserved(&sample.rubric_vars)?;
        match (&sample.rubric, &self.prompt) {
            (Some(rubric), _) => Template::parse(rubric)
                .map_err(RenderError::Rubric)?
                .check_vars(&sample.rubric_vars),
            (None, Some(prompt)) => prompt.check_vars(&sample.rubric_vars),
            (None, None) => Ok(()),
        }
    }

    /// Why this judge's endpoint cannot be used (every request would fail alike), once known:
    /// the run stops rather than spend the dataset on it.
    pub fn down(&self) -> Option<String> {
        let endpoint = &self.transport.endpoint;
        self.transport
            .down
            .get()
            .map(|reason| format!("{endpoint}: {reason}"))
    }

    /// Its gradings so far, as the grader `key`'s: answered, failed, the first failure's
    /// reason.
    pub fn calls(&self, key: &str) -> JudgeCalls {
        JudgeCalls {
            key: key.to_string(),
            answered: self.answered.load(Ordering::Relaxed),
            failed: self.failed.load(Ordering::Relaxed),
            first_failure: self.first_failure.get().cloned(),
        }
    }

    /// Counts how a grading came out: `Err` with why it had no answer, the API key redacted.
    fn count<T>(&self, outcome: Result<T, Failure>) -> Result<T, Unanswered> {
        let outcome = outcome.map_err(|failure| Unanswered {
            reason: self.transport.api_key.redact(failure.to_string()),
        });
        match &outcome {
            Ok(_) => {
                self.answered.fetch_add(1, Ordering::Relaxed);
            }
            Err(unanswered) => {
                self.failed.fetch_add(1, Ordering::Relaxed);
                let _ = self.first_failure.set(unanswered.reason.clone());
            }
        }
        outcome
    }

    /// Requests to the endpoint now in flight, and attempts repeated so far.
    pub fn activity(&self) -> (usize, u64) {
        (
            self.transport.in_flight.load(Ordering::Relaxed),
            self.transport.retries.load(Ordering::Relaxed),
        )
    }

    /// Grades one submission. Every failure is an `error` grade that says why; the run goes on.
    pub async fn grade(&self, sample: &Sample<'_>, submission: &str) -> Grade {
        let rubric = match (&sample.rubric, &self.prompt) {
            (Some(rubric), _) => match Template::parse(rubric) {
                Ok(template) => template.render(sample, submission),
                Err(e) => Err(RenderError::Rubric(e)),
            },
            (None, Some(prompt)) => prompt.render(sample, submission),
            (None, None) => {
                return Grade::error(MISSING_RUBRIC)
                    .with_submission(submission)
                    .with_metadata("error", json!("missing_rubric"));
            }
        };
        let outcome = match rubric {
            Ok(prompt) => self.ask(&prompt).await,
            Err(reason) => Err(Failure::Rubric(reason)),
        };
        let outcome = self.count(outcome);
        match outcome {
            Ok((verdict, usage)) => {
                let status = if verdict.score >= self.pass_threshold {
                    Status::Pass
                } else {
                    Status::Fail
                };
                let mut grade = Grade::new(verdict.score, status, verdict.rationale)
                    .with_submission(submission)
                    .with_metadata("model", json!(self.model));
                if let Some(usage) = usage {
                    grade = grade.with_metadata("usage", usage);
                }
                self.with_agent_file(grade)
            }
            Err(Unanswered { reason }) => {
                let during = match self.agent {
                    Some(_) => "agent judge grading",
                    None => "grading",
                };
                let grade = Grade::error(format!("Error during {during}: {reason}"))
                    .with_submission(submission)
                    .with_metadata("error", json!(reason));
                self.with_agent_file(grade)
            }
        }
    }

    /// `grade` with the agent file that judged it, for an `agent_file` judge.
    fn with_agent_file(&self, grade: Grade) -> Grade {
        match &self.agent {
            Some(agent) => {
                grade.with_metadata("agent_file", json!(agent.path.display().to_string()))
            }
            None => grade,
        }
    }

    /// The request body letta-evals sends through the provider's SDK.
    fn request_body(&self, prompt: &str) -> String {
        if self.provider == Provider::Anthropic {
            let mut body = json!({
                "model": self.model,
                "max_tokens": 4096,
                "temperature": self.temperature,
                "messages": [{"role": "user", "content": prompt}],
                "output_config": {
                    "format": {"type": "json_schema", "schema": anthropic_schema()},
                },
            });
            if let Some(system) = &self.system_prompt {
                body["system"] = json!([
                    {"type": "text", "text": system, "cache_control": {"type": "ephemeral"}}
                ]);
            }
            return body.to_string();
        }
        let mut messages = Vec::new();
        if let Some(system) = &self.system_prompt {
            messages.push(json!({"role": "system", "content": system}));
        }
        messages.push(json!({"role": "user", "content": prompt}));
        let mut body = json!({
            "model": self.model,
            "messages": messages,
            "temperature": self.temperature,
        });
        match &self.agent {
            // The agent's grading tool is the one tool offered: the others would be run by a
            // Letta server, which gavel is not.
            Some(agent) => {
                body["tools"] = json!([agent.tool]);
                if agent.forced {
                    body["tool_choice"] =
                        json!({"type": "function", "function": {"name": agent.tool_name}});
                }
            }
            None => {
                body["response_format"] = json!({
                    "type": "json_schema",
                    "json_schema": {"name": "JudgeResponse", "schema": response_schema()},
                });
            }
        }
        body.to_string()
    }

    /// The verdict in the endpoint's reply `text`: the JSON answer, or the arguments of the
    /// agent's grading tool call.
    fn verdict(&self, text: &str) -> Result<(reply::Verdict, Option<Value>), Failure> {
        let key = &self.transport.api_key;
        let Some(agent) = &self.agent else {
            let completion = self.provider.completion(text, key)?;
            let verdict = reply::verdict(&completion.content, key)?;
            return Ok((verdict, completion.usage));
        };
        let name = &agent.tool_name;
        let call = reply::tool_call(text, name, key)?;
        let verdict =
            reply::verdict(&call.content, key).map_err(|source| Failure::ToolArguments {
                name: name.clone(),
                source,
            })?;
        Ok((verdict, call.usage))
    }

    async fn ask(&self, prompt: &str) -> Result<(reply::Verdict, Option<Value>), Failure> {
        let body = self.request_body(prompt);
        self.exchange(&self.model, &body, |text| self.verdict(text))
            .await
    }

    /// Sends `body` (for `model`) and reads the reply with `read`, through the cache.
    async fn exchange<T>(
        &self,
        model: &str,
        body: &str,
        read: impl Fn(&str) -> Result<T, Failure>,
    ) -> Result<T, Failure> {
        let key = Cache::key(&self.base_url, model, body);
        let cached = (self.cache.as_ref())
            .and_then(|cache| cache.get(&key))
            .and_then(|text| read(&text).ok());
        if let Some(cached) = cached {
            return Ok(cached);
        }
        let text = {
            let _permit = self
                .permits
                .acquire()
                .await
                .map_err(|_| Failure::ShuttingDown)?;
            let _run_permit = match self.requests.0.get() {
                Some(run) => Some(run.acquire().await.map_err(|_| Failure::ShuttingDown)?),
                None => None,
            };
            self.transport.post(body).await?
        };
        let read = read(&text)?;
        if let Some(cache) = &self.cache {
            // Only a reply that was read is kept: a malformed one is asked again next run. A
            // reply that cannot be stored is still a good reply.
            let _ = cache.put(&key, &text);
        }
        Ok(read)
    }

    /// The text evaldeck's LLM grader reads from a reply to one user `prompt` for `model`: the
    /// OpenAI client's request with `temperature`, or the Anthropic client's with `max_tokens`
    /// 1024 and no temperature.
    pub async fn complete(
        &self,
        model: &str,
        temperature: f64,
        prompt: &str,
    ) -> Result<String, Unanswered> {
        let messages = json!([{"role": "user", "content": prompt}]);
        let body = match self.provider {
            Provider::OpenAi => {
                json!({"messages": messages, "model": model, "temperature": temperature})
            }
            Provider::Anthropic => {
                json!({"max_tokens": 1024, "messages": messages, "model": model})
            }
        };
        let key = &self.transport.api_key;
        let read = |text: &str| match self.provider {
            // The client reads a missing content as no text.
            Provider::OpenAi => match reply::completion(text, key) {
                Err(ReplyError::NoContent) => Ok(String::new()),
                completion => Ok(completion?.content),
            },
            Provider::Anthropic => Ok(reply::message(text, key)?.content),
        };
        self.count(self.exchange(model, &body.to_string(), read).await)
    }
}

impl Judge {
    /// This judge asking OpenAI's embeddings endpoint (`{base_url}/embeddings`) instead of
    /// chat completions, with the same settings.
    pub fn for_embeddings(mut self) -> Judge {
        let path = self.transport.endpoint.path();
        let path = format!("{}/embeddings", path.trim_end_matches("/chat/completions"));
        self.transport.endpoint.set_path(&path);
        self
    }

    /// The embedding of each of `texts` by `model`, sent as every request of this judge is.
    pub async fn embed(&self, model: &str, texts: &[&str]) -> Result<Vec<Vec<f64>>, Unanswered> {
        let body = json!({"model": model, "input": texts}).to_string();
        let key = &self.transport.api_key;
        let read = |text: &str| Ok(reply::embeddings(text, texts.len(), key)?);
        self.count(self.exchange(model, &body, read).await)
    }

    /// The reply's text and token usage for the chat-completions request `body` (which names
    /// its `model`), sent as this judge sends its own: bounded, retried, cached.
    pub async fn chat(&self, body: &Value) -> Result<(String, Option<Value>), Unanswered> {
        let model = body["model"].as_str().unwrap_or(&self.model).to_string();
        let read = |text: &str| {
            let completion = self.provider.completion(text, &self.transport.api_key)?;
            Ok((completion.content, completion.usage))
        };
        self.count(self.exchange(&model, &body.to_string(), read).await)
    }
}

/// Why [`Judge::complete`] has no text: the request, the endpoint or the reply failed. The
/// reason is the failure's message with the API key redacted, fit to show.
#[derive(Debug, thiserror::Error)]
#[error("{reason}")]
pub struct Unanswered {
    reason: String,
}

/// The endpoints of evaldeck's `llm` and `llm_rubric` graders in a case's turns, one per
/// provider (the model is each entry's), set as a rubric grader's defaults set them. Each is
/// made when the first entry asks it, so a suite whose cases ask no model opens no client.
#[derive(Debug)]
pub struct TurnJudges {
    base_dir: PathBuf,
    options: JudgeOptions,
    openai: OnceLock<Result<Judge, JudgeError>>,
    anthropic: OnceLock<Result<Judge, JudgeError>>,
}

impl TurnJudges {
    pub fn new(base_dir: &Path, options: JudgeOptions) -> TurnJudges {
        TurnJudges {
            base_dir: base_dir.to_path_buf(),
            options,
            openai: OnceLock::new(),
            anthropic: OnceLock::new(),
        }
    }

    /// The endpoint for `model`, by evaldeck's choice of API by model name (`claude*` is
    /// Anthropic's), or why it cannot be set up (an unusable `OPENAI_BASE_URL`).
    pub fn for_model(&self, model: &str) -> Result<&Judge, &JudgeError> {
        let (cell, provider) = if model.starts_with("claude") {
            (&self.anthropic, "anthropic")
        } else {
            (&self.openai, "openai")
        };
        cell.get_or_init(|| {
            let spec: RubricSpec = serde_json::from_value(json!({"provider": provider}))
                .map_err(|e| JudgeError::Client(e.to_string()))?;
            Judge::new(spec, &self.base_dir, self.options.clone())
        })
        .as_ref()
    }

    /// The endpoints asked so far.
    pub fn asked(&self) -> impl Iterator<Item = &Judge> {
        [&self.openai, &self.anthropic]
            .into_iter()
            .filter_map(|cell| cell.get()?.as_ref().ok())
    }
}

/// Why a submission got no verdict: the grade's error says it.
#[derive(Debug, thiserror::Error)]
enum Failure {
    #[error(transparent)]
    Rubric(#[from] RenderError),
    #[error(transparent)]
    Request(#[from] RequestError),
    #[error(transparent)]
    Reply(#[from] ReplyError),
    #[error("Failed to parse {name} tool call arguments: {source}")]
    ToolArguments { name: String, source: ReplyError },
    #[error("the judge is shutting down")]
    ShuttingDown,
}

/// The judge agent of an `agent_file` grader, read and checked; `None` for a plain rubric.
fn load_agent(
    spec: &RubricSpec,
    provider: Provider,
    base_dir: &Path,
) -> Result<Option<JudgeAgent>, JudgeError> {
    if let Some(id) = &spec.agent_id {
        return Err(ConfigError::new(
            "agent_id",
            format!(
                "gavel grades offline and cannot ask a Letta server for the agent '{id}'; export \
                 the judge agent from Letta as an agent file (.af) and give its path as \
                 agent_file instead"
            ),
        )
        .into());
    }
    let Some(path) = &spec.agent_file else {
        if spec.judge_tool_name.is_some() {
            return Err(ConfigError::new(
                "judge_tool_name",
                "names the grading tool of an agent_file judge; give agent_file, or remove \
                 judge_tool_name",
            )
            .into());
        }
        return Ok(None);
    };
    if provider != Provider::OpenAi {
        return Err(ConfigError::new(
            "provider",
            "an agent_file judge calls its grading tool over the OpenAI-compatible \
             chat-completions endpoint; remove provider or set it to openai",
        )
        .into());
    }
    if spec.system_prompt.is_some() {
        return Err(ConfigError::new(
            "system_prompt",
            "an agent_file judge's system prompt is its agent's `system`; remove system_prompt",
        )
        .into());
    }
    let tool = spec
        .judge_tool_name
        .as_deref()
        .unwrap_or(agent_file::DEFAULT_TOOL);
    let path = base_dir.join(path);
    let agent = agent_file::load(&path, tool)?;
    if spec.model.is_none() && agent.model.is_none() {
        return Err(AgentFileError {
            path,
            problem: AgentFileProblem::NoModel,
        }
        .into());
    }
    Ok(Some(agent))
}

fn load_prompt(spec: &RubricSpec, base_dir: &Path) -> Result<Option<Template>, JudgeError> {
    let parse = |field, text: &str| {
        Template::parse(text).map_err(|source| JudgeError::Template { field, source })
    };
    match (&spec.prompt, &spec.prompt_path) {
        (Some(_), Some(_)) => {
            Err(ConfigError::new("prompt", "give either prompt or prompt_path, not both").into())
        }
        (Some(prompt), None) => parse("prompt", prompt).map(Some),
        (None, Some(path)) => {
            let path = base_dir.join(path);
            let text = crate::fsio::read_text(&path, crate::fsio::cap::TEXT)
                .map_err(|source| JudgeError::PromptFile { path, source })?;
            parse("prompt_path", &text).map(Some)
        }
        (None, None) => Ok(None),
    }
}

/// Reasoning models accept only the default temperature: letta-evals sends 1.0 instead of 0.0
/// to o1/o3 (by prefix) and gpt-5 (anywhere in the name, any case).
fn effective_temperature(model: &str, temperature: f64) -> f64 {
    let reasoning = model.starts_with("o1")
        || model.starts_with("o3")
        || model.to_lowercase().contains("gpt-5");
    if reasoning && temperature == 0.0 {
        1.0
    } else {
        temperature
    }
}

/// The response schema as the Anthropic SDK's `transform_schema` sends it: no extra keys, and
/// the score's bounds moved into its description.
fn anthropic_schema() -> Value {
    let mut schema = response_schema();
    schema["additionalProperties"] = json!(false);
    let score = &mut schema["properties"]["score"];
    if let Some(score) = score.as_object_mut() {
        score.remove("maximum");
        score.remove("minimum");
    }
    score["description"] = json!("Score between 0.0 and 1.0\n\n{maximum: 1.0, minimum: 0.0}");
    schema
}

/// The description letta-evals 0.26.0 gives its response schema (its response model's
/// docstring): the judge reads it, so it is sent word for word.
const SCHEMA_DESCRIPTION: &str = "Shared schema for judge responses across all providers.\n\n\
    Sent verbatim to all three providers (OpenAI, Anthropic, Google) as a\n\
    JSON schema response format. The schema acts as guidance \u{2014} bounds on\n\
    ``score`` are re-applied Python-side via a post-parse clamp because\n\
    not every provider honors numeric bound keywords (``minimum`` /\n\
    ``maximum``) consistently.";

/// `{score: number in [0, 1], rationale: string}`, both required; not `strict`, as
/// letta-evals 0.26.0 sends it (title and description included), so endpoints that cannot
/// enforce bounds still accept it.
fn response_schema() -> Value {
    json!({
        "description": SCHEMA_DESCRIPTION,
        "properties": {
            "score": {
                "description": "Score between 0.0 and 1.0",
                "maximum": 1.0,
                "minimum": 0.0,
                "title": "Score",
                "type": "number",
            },
            "rationale": {
                "description": "Explanation of the grading decision",
                "title": "Rationale",
                "type": "string",
            },
        },
        "required": ["score", "rationale"],
        "title": "_JudgeResponse",
        "type": "object",
    })
}

/// One judge's gradings in a pass: answered, failed, and the first failure's reason.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct JudgeCalls {
    /// The judge's grader.
    pub key: String,
    pub answered: u64,
    pub failed: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub first_failure: Option<String>,
}

impl JudgeCalls {
    /// Adds `other`, the same judge's gradings in another part of the run.
    pub fn absorb(&mut self, other: &JudgeCalls) {
        self.answered += other.answered;
        self.failed += other.failed;
        if self.first_failure.is_none() {
            self.first_failure.clone_from(&other.first_failure);
        }
    }

    /// The first of `calls` that failed every grading it was asked for.
    pub fn never_answered(calls: &[JudgeCalls]) -> Option<&JudgeCalls> {
        calls.iter().find(|c| c.failed > 0 && c.answered == 0)
    }
}

/// The judge that stopped a run, and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct JudgeDown {
    /// The judge's grader.
    pub key: String,
    pub reason: String,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn temperature_rule() {
        let cases = [
            ("gpt-4o-mini", 0.0, 0.0),
            ("gpt-5-mini", 0.0, 1.0),
            ("GPT-5", 0.0, 1.0),
            ("azure/gpt-5-nano", 0.0, 1.0),
            ("o1-mini", 0.0, 1.0),
            ("o3", 0.0, 1.0),
            ("O3", 0.0, 0.0),
            ("o4-mini", 0.0, 0.0),
            ("gpt-5", 0.3, 0.3),
        ];
        for (model, given, sent) in cases {
            assert_eq!(effective_temperature(model, given), sent, "{model}");
        }
    }
}
