//! Output-format graders: a JSON object with a required field, and a booking confirmation code.

use gavel_guest::prelude::*;
use serde_json::Value;

/// Grades the submission as a JSON object that must have the field the ground truth names.
fn json_field(input: &GradeInput, _: &NoConfig) -> Result<Grade, Error> {
    let field = input.sample.ground_truth_text().ok_or_else(|| {
        Error::new("json_field needs the sample's ground_truth: the name of the required field")
    })?;
    let data: Value = match serde_json::from_str(input.submission) {
        Ok(data) => data,
        Err(e) => return Ok(Grade::fail(format!("Invalid JSON: {e}")).actual(input.submission)),
    };
    let Value::Object(object) = data else {
        return Ok(Grade::fail("Not a JSON object")
            .expected(format!("an object with a '{field}' field"))
            .actual(input.submission));
    };
    Ok(if object.contains_key(field) {
        Grade::pass(format!("Valid JSON with '{field}' field"))
    } else {
        let found: Vec<Value> = object.keys().map(|k| Value::from(k.as_str())).collect();
        Grade::fail(format!("Missing required field: {field}"))
            .expected(field)
            .actual(found)
    })
}

const CONFIRMATION: &str = "Confirmation: ";

/// Checks that the run's final output holds a booking confirmation: `Confirmation: ` then two
/// capital letters and six digits (`Confirmation: [A-Z]{2}\d{6}`, anywhere in the output).
fn confirmation(input: &GradeInput, _: &NoConfig) -> Grade {
    let output = input.trajectory.final_output().unwrap_or_default();
    let found = output
        .match_indices(CONFIRMATION)
        .find_map(|(at, _)| confirmation_code(&output[at + CONFIRMATION.len()..]));
    match found {
        Some(code) => Grade::pass("Booking confirmation format is valid").metadata("code", code),
        None => Grade::fail("Booking confirmation format is invalid")
            .expected("Confirmation: XX000000")
            .actual(output.chars().take(100).collect::<String>()),
    }
}

/// The code at the start of `rest`, if it has the form `[A-Z]{2}[0-9]{6}`. Digits are ASCII
/// only, where Python's `\d` would also take other scripts' digits.
fn confirmation_code(rest: &str) -> Option<&str> {
    let code = rest.get(..8)?;
    let (letters, digits) = code.split_at(2);
    (letters.bytes().all(|b| b.is_ascii_uppercase()) && digits.bytes().all(|b| b.is_ascii_digit()))
        .then_some(code)
}

gavel_guest::pack! {
    graders: {
        /// The submission is a JSON object with the field the ground truth names.
        json_field(needs_ground_truth),
        /// The final output holds `Confirmation: XX000000` (two capitals, six digits).
        confirmation,
    },
}
