//! Rubric graders (stub).
use std::path::{Path, PathBuf};

use serde_json::{Map, Value};

use crate::grade::Grade;
use crate::sample::Sample;

#[derive(Debug, Clone, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RubricSpec {
    #[serde(default)]
    pub prompt: Option<String>,
    #[serde(default)]
    pub extractor: Option<String>,
    #[serde(default)]
    pub extractor_config: Map<String, Value>,
    #[serde(default)]
    pub display_name: Option<String>,
}

#[derive(Debug, Clone, Default)]
pub struct JudgeOptions {
    pub cache_dir: Option<PathBuf>,
}

#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct JudgeError(String);

pub struct Judge;

impl Judge {
    pub fn new(_spec: RubricSpec, _base: &Path, _o: JudgeOptions) -> Result<Judge, JudgeError> {
        Err(JudgeError("rubric graders are not available yet".into()))
    }
    pub fn check_sample(&self, _sample: &Sample) -> Result<(), String> {
        Ok(())
    }
    pub async fn grade(&self, _sample: &Sample, _submission: &str) -> Grade {
        Grade::error("stub")
    }
}
