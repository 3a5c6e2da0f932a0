#!/bin/sh
# Builds build/{{ident}}.wasm, the pack's component, from src/lib.rs.
# Needs a Rust toolchain (rustup) and crates.io; adds the wasm32-wasip2 target when missing.
set -eu
cd "$(dirname "$0")"

target=wasm32-wasip2
if ! rustup target list --installed 2>/dev/null | grep -qx "$target"; then
    echo "Adding the Rust target $target..." >&2
    rustup target add "$target" || {
        echo "error: could not add the Rust target $target (rustup target add $target)" >&2
        exit 1
    }
fi

cargo build --release --target "$target"
# Wherever cargo was told to build (CARGO_TARGET_DIR, a config), the component lands in build/.
target_dir=$(cargo metadata --format-version 1 --no-deps |
    sed -n 's/.*"target_directory":"\([^"]*\)".*/\1/p')
mkdir -p build
cp "$target_dir/$target/release/{{ident}}.wasm" build/{{ident}}.wasm
echo "built build/{{ident}}.wasm" >&2
