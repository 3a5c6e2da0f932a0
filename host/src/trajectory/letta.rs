use serde_json::value::RawValue;

use super::{ConvertError, Converter, Trajectory};

pub struct LettaConverter;

impl Converter for LettaConverter {
    fn detect(&self, _raw: &RawValue) -> bool {
        false
    }

    fn convert(&self, _raw: &RawValue) -> Result<Trajectory, ConvertError> {
        Err(ConvertError("not yet".into()))
    }
}
