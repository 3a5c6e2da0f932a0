//! A grader's or extractor's `config:` map, read strictly, and the error that names the key at
//! fault.

use serde_json::{Map, Value};

/// A grader or extractor configuration that cannot work: which field, and why.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{field}: {message}")]
pub struct ConfigError {
    /// The key inside the grader's `config:` / `extractor_config:` (empty for the whole map).
    pub field: String,
    pub message: String,
}

impl ConfigError {
    pub fn new(field: impl Into<String>, message: impl Into<String>) -> ConfigError {
        ConfigError {
            field: field.into(),
            message: message.into(),
        }
    }
}

/// A grader's or extractor's configuration map, read strictly: unknown keys and values of the
/// wrong type are errors that name the key.
pub(crate) struct ConfigKeys<'a> {
    config: &'a Map<String, Value>,
}

impl<'a> ConfigKeys<'a> {
    /// Checks that every key of `config` is one of `allowed`, suggesting the closest one.
    pub(crate) fn new(
        config: &'a Map<String, Value>,
        allowed: &[&str],
    ) -> Result<ConfigKeys<'a>, ConfigError> {
        if let Some(key) = config.keys().find(|k| !allowed.contains(&k.as_str())) {
            let message = match closest(key, allowed) {
                Some(close) => format!("unknown key; did you mean `{close}`?"),
                None if allowed.is_empty() => "unknown key; this takes no configuration".into(),
                None => format!("unknown key; valid keys: {}", allowed.join(", ")),
            };
            return Err(ConfigError::new(key.as_str(), message));
        }
        Ok(ConfigKeys { config })
    }

    /// The value of `key`; an explicit `null` counts as absent.
    pub(crate) fn get(&self, key: &str) -> Option<&'a Value> {
        self.config.get(key).filter(|v| !v.is_null())
    }

    pub(crate) fn string(&self, key: &str) -> Result<Option<String>, ConfigError> {
        match self.get(key) {
            None => Ok(None),
            Some(Value::String(s)) => Ok(Some(s.clone())),
            Some(other) => Err(wrong_type(key, "a string", other)),
        }
    }

    pub(crate) fn required_string(&self, key: &str) -> Result<String, ConfigError> {
        self.string(key)?
            .ok_or_else(|| ConfigError::new(key, "missing required key (a string)"))
    }

    pub(crate) fn bool(&self, key: &str) -> Result<Option<bool>, ConfigError> {
        match self.get(key) {
            None => Ok(None),
            Some(Value::Bool(b)) => Ok(Some(*b)),
            Some(other) => Err(wrong_type(key, "true or false", other)),
        }
    }

    pub(crate) fn count(&self, key: &str) -> Result<Option<u64>, ConfigError> {
        match self.get(key) {
            None => Ok(None),
            Some(Value::Number(n)) if n.as_u64().is_some() => Ok(n.as_u64()),
            Some(other) => Err(wrong_type(key, "a whole number >= 0", other)),
        }
    }

    pub(crate) fn strings(&self, key: &str) -> Result<Option<Vec<String>>, ConfigError> {
        match self.get(key) {
            None => Ok(None),
            Some(Value::Array(items)) => items
                .iter()
                .map(|item| match item {
                    Value::String(s) => Ok(s.clone()),
                    other => Err(wrong_type(key, "a list of strings", other)),
                })
                .collect::<Result<Vec<_>, _>>()
                .map(Some),
            Some(other) => Err(wrong_type(key, "a list of strings", other)),
        }
    }
}

fn wrong_type(key: &str, expected: &str, found: &Value) -> ConfigError {
    ConfigError::new(key, format!("must be {expected}, found {found}"))
}

/// The allowed key most like `key`, if any is close enough to be a likely typo.
fn closest<'k>(key: &str, allowed: &[&'k str]) -> Option<&'k str> {
    allowed
        .iter()
        .map(|candidate| (strsim::jaro_winkler(key, candidate), *candidate))
        .filter(|(similarity, _)| *similarity >= 0.8)
        .max_by(|a, b| a.0.total_cmp(&b.0))
        .map(|(_, candidate)| candidate)
}
