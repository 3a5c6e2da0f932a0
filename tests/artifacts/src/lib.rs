//! Paths of the WebAssembly components tests run, built by this crate's `build.rs` for
//! `wasm32-wasip2` in release mode:
//!
//! - [`packs`]: the example packs of `examples/packs/`, one constant per crate
//!   (`packs::TOKEN_BUDGET` is `token-budget.wasm`);
//! - [`guests`]: the test guests of `tests/guests/`, when that workspace exists.
//!
//! Each module also has `ALL`: every `(crate name, path)` pair it holds.

include!(concat!(env!("OUT_DIR"), "/artifacts.rs"));

#[cfg(test)]
mod tests {
    /// `\0asm`, then the component layer's version (a core module has `01 00 00 00`).
    const COMPONENT_HEADER: [u8; 8] = [0x00, 0x61, 0x73, 0x6d, 0x0d, 0x00, 0x01, 0x00];

    #[test]
    fn every_artifact_is_a_component() {
        assert!(!super::packs::ALL.is_empty());
        for (name, path) in super::packs::ALL.iter().chain(super::guests::ALL) {
            let bytes = std::fs::read(path).unwrap_or_else(|e| panic!("{name}: {path}: {e}"));
            assert_eq!(
                bytes.get(..8),
                Some(&COMPONENT_HEADER[..]),
                "{name}: {path}"
            );
        }
    }
}
