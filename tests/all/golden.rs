//! Golden files: what the `gavel` binary prints and writes, compared byte for byte with the
//! files under `tests/all/golden/`. After a deliberate change of output, rerun the tests with
//! `GAVEL_BLESS=1` to rewrite the files, and review their diff.

use std::path::PathBuf;

fn path(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../tests/all/golden")
        .join(name)
}

/// Checks `actual` against the golden file `name`, or writes it under `GAVEL_BLESS=1`.
pub fn check(name: &str, actual: &str) {
    let path = path(name);
    if std::env::var_os("GAVEL_BLESS").is_some_and(|v| !v.is_empty()) {
        std::fs::create_dir_all(path.parent().expect("a parent")).expect("golden folder");
        std::fs::write(&path, actual).expect("golden file written");
        return;
    }
    let expected = std::fs::read_to_string(&path).unwrap_or_else(|e| {
        panic!(
            "{}: {e}; write it with GAVEL_BLESS=1 and review it",
            path.display()
        )
    });
    if actual != expected {
        let at = actual
            .lines()
            .zip(expected.lines())
            .position(|(a, e)| a != e)
            .unwrap_or_else(|| actual.lines().count().min(expected.lines().count()));
        panic!(
            "output differs from {} from line {}:\n--- expected\n{expected}\n--- actual\n{actual}",
            path.display(),
            at + 1
        );
    }
}
