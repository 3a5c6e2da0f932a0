//! Gate (stub).
#[derive(Debug, serde::Deserialize)]
pub struct GateSpec {}

impl GateSpec {
    pub fn check(&self, _keys: &[String]) -> Result<(), String> {
        Ok(())
    }
}
