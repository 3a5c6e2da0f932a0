//! A pack built against a gavel:grader version this host does not support (9.0.0).

wit_bindgen::generate!({
    path: "wit",
    world: "pack-v0",
});

use exports::gavel::grader::pack::Guest;
use gavel::grader::types::{FunctionInfo, FunctionKind, Grade, PackInfo, Sample, Trajectory};

struct Future;

impl Guest for Future {
    fn describe() -> PackInfo {
        PackInfo {
            name: "constant".to_string(),
            version: "0.0.0".to_string(),
            functions: vec![FunctionInfo {
                name: "one".to_string(),
                kind: FunctionKind::Grader,
                description: "always 1.0".to_string(),
                needs_ground_truth: false,
            }],
        }
    }

    fn check_config(_name: String, _config: String) -> Result<(), String> {
        Ok(())
    }

    fn grade(
        _name: String,
        _sample: Sample,
        _trajectory: Trajectory,
        _submission: String,
        _config: String,
    ) -> Result<Grade, String> {
        Ok(Grade {
            score: 1.0,
            status: None,
            rationale: String::new(),
            metadata: None,
            expected: None,
            actual: None,
        })
    }

    fn extract(
        _name: String,
        _sample: Sample,
        _trajectory: Trajectory,
        _config: String,
    ) -> Result<Option<String>, String> {
        Ok(None)
    }
}

export!(Future);
