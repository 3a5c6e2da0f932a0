//! Arbitrary bytes as a dataset row: whatever the scanner (the fast path) reads, it reads as
//! serde (the authoritative path) does, every field and every error alike.

#![no_main]

use std::path::PathBuf;
use std::sync::LazyLock;

use gavel::input::dataset::RowParser;
use libfuzzer_sys::fuzz_target;

static PARSER: LazyLock<RowParser> =
    LazyLock::new(|| RowParser::new(None, PathBuf::from("/nonexistent/gavel-fuzz")));

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    // A rubric file is read from disk, whose contents are no part of the comparison.
    if text.contains("rubric_path") {
        return;
    }
    if let Some((scanned, serde)) = PARSER.readings(text) {
        assert_eq!(scanned, serde, "{text}");
    }
});
