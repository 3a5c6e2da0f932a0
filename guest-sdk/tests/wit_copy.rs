//! The bindings come from `guest-sdk/wit/grader.wit`, a copy kept inside the crate so that the
//! published crate stands alone. It must stay byte-for-byte the repository's WIT.

use std::path::Path;

#[test]
fn the_sdk_wit_is_the_repository_wit() {
    let sdk = Path::new(env!("CARGO_MANIFEST_DIR"));
    let copy = std::fs::read_to_string(sdk.join("wit/grader.wit")).expect("the SDK's WIT");
    let source = std::fs::read_to_string(sdk.join("../wit/gavel-grader-0.1.0/grader.wit"))
        .expect("the repository's WIT");
    assert!(
        copy == source,
        "guest-sdk/wit/grader.wit differs from wit/gavel-grader-0.1.0/grader.wit; copy it over"
    );
}
