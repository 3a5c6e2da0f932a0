use serde_json::value::RawValue;

use super::{ConvertError, Converter, Trajectory};

pub struct EvaldeckConverter;

impl Converter for EvaldeckConverter {
    fn detect(&self, _raw: &RawValue) -> bool {
        false
    }

    fn convert(&self, _raw: &RawValue) -> Result<Trajectory, ConvertError> {
        Err(ConvertError("not yet".into()))
    }
}
