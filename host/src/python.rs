//! Python semantics that graders must reproduce: `str.strip`, `str.lower`, `repr`, `re`.

/// Python's `repr()` of a string.
pub fn repr_str(s: &str) -> String {
    format!("'{s}'")
}
