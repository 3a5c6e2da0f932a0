//! What a pack says about itself, checked and bounded before the host keeps or prints any of it.

use std::collections::HashSet;

use super::wit::v0;
use super::{FunctionInfo, FunctionKind, PackError, PackInfo};

/// Functions one pack may provide.
pub const MAX_FUNCTIONS: usize = 1_000;
/// Bytes of a pack's name, its version, or a function's name.
pub const MAX_NAME_BYTES: usize = 128;
/// Bytes of a function's description.
pub const MAX_DESCRIPTION_BYTES: usize = 1_024;

pub use crate::terminal::printable;

/// The host's view of `described`, once its sizes are within bounds and its function names are
/// unique and plain. Texts shown to a user are made [`printable`].
pub(super) fn pack_info(
    name: &str,
    described: v0::PackInfo,
    wit_version: String,
) -> Result<PackInfo, PackError> {
    let invalid = |reason: String| PackError::Describe {
        pack: name.to_string(),
        reason,
    };
    let too_long = |what: &str, text: &str, max: usize| {
        invalid(format!(
            "{what} is {} bytes long; the limit is {max}",
            text.len()
        ))
    };
    if described.functions.len() > MAX_FUNCTIONS {
        return Err(invalid(format!(
            "it lists {} functions; the limit is {MAX_FUNCTIONS}",
            described.functions.len()
        )));
    }
    for (what, text) in [
        ("its name", &described.name),
        ("its version", &described.version),
    ] {
        if text.len() > MAX_NAME_BYTES {
            return Err(too_long(what, text, MAX_NAME_BYTES));
        }
    }
    let mut seen = HashSet::with_capacity(described.functions.len());
    let mut functions = Vec::with_capacity(described.functions.len());
    for f in described.functions {
        if f.name.is_empty() {
            return Err(invalid("a function has an empty name".to_string()));
        }
        if f.name.len() > MAX_NAME_BYTES {
            return Err(too_long("a function name", &f.name, MAX_NAME_BYTES));
        }
        if f.name
            .chars()
            .any(|c| crate::terminal::steers(c) || c.is_whitespace())
        {
            return Err(invalid(format!(
                "the function name `{}` holds a control or blank character",
                printable(&f.name)
            )));
        }
        if f.description.len() > MAX_DESCRIPTION_BYTES {
            return Err(too_long(
                &format!("the description of `{}`", f.name),
                &f.description,
                MAX_DESCRIPTION_BYTES,
            ));
        }
        if !seen.insert(f.name.clone()) {
            return Err(invalid(format!(
                "the function `{}` is listed twice",
                f.name
            )));
        }
        functions.push(FunctionInfo {
            name: f.name,
            kind: match f.kind {
                v0::FunctionKind::Grader => FunctionKind::Grader,
                v0::FunctionKind::Extractor => FunctionKind::Extractor,
            },
            description: printable(&f.description),
            needs_ground_truth: f.needs_ground_truth,
        });
    }
    Ok(PackInfo {
        name: printable(&described.name),
        version: printable(&described.version),
        wit_version,
        functions,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn function(name: &str, description: &str) -> v0::FunctionInfo {
        v0::FunctionInfo {
            name: name.to_string(),
            kind: v0::FunctionKind::Grader,
            description: description.to_string(),
            needs_ground_truth: false,
        }
    }

    fn described(functions: Vec<v0::FunctionInfo>) -> v0::PackInfo {
        v0::PackInfo {
            name: "p\x1b]0;owned\x07".to_string(),
            version: "1".to_string(),
            functions,
        }
    }

    fn reason(functions: Vec<v0::FunctionInfo>) -> String {
        pack_info("p", described(functions), "0.1.0".to_string())
            .unwrap_err()
            .to_string()
    }

    #[test]
    fn escape_sequences_are_shown_not_obeyed() {
        let info = pack_info(
            "p",
            described(vec![function("f", "x\x1b[1;1H")]),
            "0.1.0".to_string(),
        )
        .unwrap();
        assert_eq!(info.name, "p\\u{1b}]0;owned\\u{7}");
        assert_eq!(info.functions[0].description, "x\\u{1b}[1;1H");
    }

    #[test]
    fn sizes_names_and_duplicates_are_bounded() {
        let many = (0..=MAX_FUNCTIONS)
            .map(|i| function(&format!("f{i}"), ""))
            .collect();
        assert_eq!(
            reason(many),
            "pack `p`: describe failed: it lists 1001 functions; the limit is 1000"
        );
        let long = "d".repeat(MAX_DESCRIPTION_BYTES + 1);
        assert_eq!(
            reason(vec![function("f", &long)]),
            "pack `p`: describe failed: the description of `f` is 1025 bytes long; the limit is 1024"
        );
        assert_eq!(
            reason(vec![function("a\x1bb", "")]),
            "pack `p`: describe failed: the function name `a\\u{1b}b` holds a control or blank character"
        );
        assert_eq!(
            reason(vec![
                function("f", ""),
                function("g", ""),
                function("f", "")
            ]),
            "pack `p`: describe failed: the function `f` is listed twice"
        );
    }
}
