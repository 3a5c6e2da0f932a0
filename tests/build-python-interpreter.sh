#!/bin/sh
# Builds the Python graders' interpreter component into target/tmp/python-interpreter/, where
# the integration tests (tests/all/python_graders.rs) look for it; they build it themselves when
# it is missing, so this only moves the minute it takes ahead of `cargo test`. Works on a clean
# clone: adds the wasm32-wasip2 target the test guests need, builds the test binaries and
# `gavel` exactly as `cargo test --workspace` does (nothing is compiled twice), and reuses the
# componentize-py of examples/packs-python/ when its build.sh installed one.
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"

if command -v rustup >/dev/null 2>&1 && ! rustup target list --installed | grep -qx wasm32-wasip2; then
    rustup target add wasm32-wasip2
fi
cargo test --workspace --no-run --quiet
target_dir=$(cargo metadata --format-version 1 --no-deps \
    | sed -n 's/.*"target_directory":"\([^"]*\)".*/\1/p')
shared=examples/packs-python/.venv/bin/componentize-py
if [ -z "${COMPONENTIZE_PY:-}" ] && [ -x "$shared" ]; then
    COMPONENTIZE_PY="$root/$shared"
    export COMPONENTIZE_PY
fi
"$target_dir/debug/gavel" build-python \
    --cache-dir "$target_dir/tmp/python-interpreter"
