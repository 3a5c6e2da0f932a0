//! A `gavel:grader@0.2.0` pack (world `pack-v1`) that hands back what 0.2.0 added: the row as
//! written and the recorded run, so tests can compare them byte for byte with the dataset.

wit_bindgen::generate!({
    path: "../../../wit/gavel-grader-0.2.0",
    world: "pack-v1",
});

use exports::gavel::grader::pack::Guest;
use gavel::grader::types::{FunctionInfo, FunctionKind, Grade, PackInfo, Sample, Trajectory};

struct Row;

impl Guest for Row {
    fn describe() -> PackInfo {
        let function = |name: &str, kind, description: &str| FunctionInfo {
            name: name.to_string(),
            kind,
            description: description.to_string(),
            needs_ground_truth: false,
        };
        PackInfo {
            name: "row".to_string(),
            version: "0.2.0".to_string(),
            functions: vec![
                function("row", FunctionKind::Grader, "the row as written, as rationale"),
                function("recorded", FunctionKind::Extractor, "the recorded run's value"),
            ],
        }
    }

    fn check_config(_name: String, _config: String) -> Result<(), String> {
        Ok(())
    }

    fn grade(
        _name: String,
        sample: Sample,
        trajectory: Trajectory,
        submission: String,
        _config: String,
    ) -> Result<Grade, String> {
        let format = match &trajectory.recorded {
            Some(recorded) => format!("\"{}\"", recorded.format),
            None => "null".to_string(),
        };
        Ok(Grade {
            score: 1.0,
            status: None,
            rationale: sample.row,
            metadata: Some(format!(
                "{{\"format\": {format}, \"submission_bytes\": {}}}",
                submission.len()
            )),
            expected: None,
            actual: None,
        })
    }

    fn extract(
        _name: String,
        _sample: Sample,
        trajectory: Trajectory,
        _config: String,
    ) -> Result<Option<String>, String> {
        Ok(trajectory.recorded.map(|recorded| recorded.value))
    }
}

export!(Row);
