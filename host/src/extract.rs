//! Built-in extractors (stub until the built-ins land).
use serde_json::{Map, Value};

use crate::graders::{ConfigError, Described};
use crate::sample::Sample;
use crate::trajectory::{Content, Trajectory};

pub enum Extractor {
    LastAssistant,
}

impl Extractor {
    pub const BUILTINS: &'static [Described] = &[Described {
        name: "last_assistant",
        description: "the last assistant message",
    }];

    pub fn new(name: &str, _config: &Map<String, Value>) -> Result<Option<Extractor>, ConfigError> {
        Ok((name == "last_assistant").then_some(Extractor::LastAssistant))
    }

    pub fn extract(&self, _sample: &Sample, t: &Trajectory) -> Result<Option<String>, String> {
        Ok(Some(t.assistant_messages().next_back().map(Content::flatten).unwrap_or_default()))
    }
}
