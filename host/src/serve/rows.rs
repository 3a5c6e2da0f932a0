//! A request body's rows as the JSON Lines the engine reads: JSON Lines as they are, a JSON
//! array one element a line.

use serde_json::value::RawValue;

/// Why a body holds no rows the server can read.
#[derive(Debug, thiserror::Error)]
pub enum BodyError {
    #[error("the body is not UTF-8: send the rows as UTF-8 JSON Lines or a JSON array")]
    NotText,
    #[error(
        "the body is a JSON array that cannot be read: {0}; send an array of row objects, or \
         one row object a line"
    )]
    Array(serde_json::Error),
    #[error("the body holds no rows: send one row object a line, or a JSON array of them")]
    Empty,
}

/// The rows of `body` as JSON Lines.
pub fn json_lines(body: Vec<u8>) -> Result<Vec<u8>, BodyError> {
    let text = std::str::from_utf8(&body).map_err(|_| BodyError::NotText)?;
    let Some(first) = text.trim_start().bytes().next() else {
        return Err(BodyError::Empty);
    };
    if first != b'[' {
        return Ok(body);
    }
    let rows: Vec<&RawValue> = serde_json::from_str(text).map_err(BodyError::Array)?;
    if rows.is_empty() {
        return Err(BodyError::Empty);
    }
    let mut lines = Vec::with_capacity(body.len());
    for row in rows {
        one_line(row.get(), &mut lines);
        lines.push(b'\n');
    }
    Ok(lines)
}

/// Appends the JSON `value` to `out` without the whitespace between its tokens (a pretty-printed
/// element spans lines); strings, where whitespace is text, are copied as they are.
fn one_line(value: &str, out: &mut Vec<u8>) {
    let mut in_string = false;
    let mut escaped = false;
    for &b in value.as_bytes() {
        if in_string {
            if escaped {
                escaped = false;
            } else if b == b'\\' {
                escaped = true;
            } else if b == b'"' {
                in_string = false;
            }
        } else if b == b'"' {
            in_string = true;
        } else if b.is_ascii_whitespace() {
            continue;
        }
        out.push(b);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_array_becomes_one_row_a_line_with_its_strings_kept() {
        let body =
            b"[\n  {\"id\": 1,\n   \"input\": \"a \\\"b\\\"\\n c\"},\n  {\"id\": 2}\n]".to_vec();
        let lines = json_lines(body).unwrap();
        assert_eq!(
            String::from_utf8(lines).unwrap(),
            "{\"id\":1,\"input\":\"a \\\"b\\\"\\n c\"}\n{\"id\":2}\n"
        );
    }

    #[test]
    fn json_lines_pass_unchanged() {
        let body = b"{\"id\": 1}\n{\"id\": 2}\n".to_vec();
        assert_eq!(json_lines(body.clone()).unwrap(), body);
    }

    #[test]
    fn empty_bodies_and_broken_arrays_are_refused() {
        assert!(matches!(json_lines(b" \n".to_vec()), Err(BodyError::Empty)));
        assert!(matches!(json_lines(b"[]".to_vec()), Err(BodyError::Empty)));
        assert!(matches!(
            json_lines(b"[{\"id\": 1},".to_vec()),
            Err(BodyError::Array(_))
        ));
        assert!(matches!(
            json_lines(vec![0xff, 0xfe]),
            Err(BodyError::NotText)
        ));
    }
}
