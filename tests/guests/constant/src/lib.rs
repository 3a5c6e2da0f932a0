//! The cheapest possible pack: one grader that returns a constant. It measures what a fresh
//! sandboxed call costs before any grading work.

wit_bindgen::generate!({
    path: "../../../wit/gavel-grader-0.1.0",
    world: "pack-v0",
});

use exports::gavel::grader::pack::Guest;
use gavel::grader::types::{FunctionInfo, FunctionKind, Grade, PackInfo, Sample, Trajectory};

struct Constant;

impl Guest for Constant {
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

export!(Constant);
