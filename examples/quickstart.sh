#!/bin/sh
# Builds gavel and the example grader packs, then grades the quickstart suite.
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
"$root/examples/build-packs.sh" >/dev/null
cargo build --release --quiet -p gavel --manifest-path "$root/Cargo.toml"
target_dir=$(cargo metadata --format-version 1 --no-deps --manifest-path "$root/Cargo.toml" \
    | sed -n 's/.*"target_directory":"\([^"]*\)".*/\1/p')
# From the clone's root, so that the results folder prints as the README shows it.
cd "$root"
exec "$target_dir/release/gavel" run examples/quickstart/suite.yaml "$@"
