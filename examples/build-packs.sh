#!/bin/sh
# Builds the example packs (and the sandbox test guests, when present) for wasm32-wasip2 in
# release mode: what `cargo test` does through tests/artifacts, from the shell. Each workspace
# builds into its own target/, where the example suites look for their packs.
set -eu

target=wasm32-wasip2
root=$(cd "$(dirname "$0")/.." && pwd)

sysroot=$(rustc --print sysroot)
if [ ! -d "$sysroot/lib/rustlib/$target" ]; then
    echo "Adding the Rust target $target (rustup target add $target)..." >&2
    if ! rustup target add "$target"; then
        echo "error: the Rust target $target is not installed and rustup could not add it." >&2
        echo "Install it for the toolchain in use (rustup target add $target), then run $0 again." >&2
        exit 1
    fi
fi

for workspace in examples/packs tests/guests; do
    manifest="$root/$workspace/Cargo.toml"
    [ -f "$manifest" ] || continue
    echo "Building $workspace for $target..." >&2
    # Into the workspace's own target/ whatever a cargo config says: the suites look there.
    cargo build --release --target "$target" --manifest-path "$manifest" \
        --target-dir "$root/$workspace/target"
    ls -1 "$root/$workspace/target/$target/release/"*.wasm
done
