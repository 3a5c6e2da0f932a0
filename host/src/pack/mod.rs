//! WebAssembly grader packs (stub).
use std::path::Path;

use serde_json::Value;

use crate::grade::Grade;
use crate::sample::Sample;
use crate::trajectory::Trajectory;

#[derive(Debug, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PackSpec {
    pub path: String,
    #[serde(default)]
    pub sha256: Option<String>,
}

#[derive(Debug, Default, Clone, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Limits {}

#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct PackError(String);

pub struct PackHost;

impl PackHost {
    pub fn new(_cache: &Path) -> Result<PackHost, PackError> {
        Ok(PackHost)
    }
    pub fn load(&self, _name: &str, _spec: &PackSpec, _base: &Path, _l: &Limits) -> Result<Pack, PackError> {
        Err(PackError("packs are not available yet".into()))
    }
}

pub struct Pack;
pub struct PackGrader;
pub struct PackExtractor;

impl Pack {
    pub fn grader(&self, _name: &str, _config: &Value) -> Result<PackGrader, PackError> {
        Err(PackError("stub".into()))
    }
    pub fn extractor(&self, _name: &str, _config: &Value) -> Result<PackExtractor, PackError> {
        Err(PackError("stub".into()))
    }
}

impl PackGrader {
    pub fn grade(&self, _s: &Sample, _t: &Trajectory, _sub: &str) -> Grade {
        Grade::error("stub")
    }
}

impl PackExtractor {
    pub fn extract(&self, _s: &Sample, _t: &Trajectory) -> Result<Option<String>, String> {
        Err("stub".into())
    }
}

impl PackSpec {
    pub fn from_path(path: &str) -> PackSpec {
        PackSpec { path: path.to_string(), sha256: None }
    }
}
