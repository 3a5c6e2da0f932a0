#!/usr/bin/env bash
# The Python package: a venv (python/.venv, made when missing), the wheel built by maturin in the
# dev profile into the workspace's target folder (the host and wasmtime `cargo test --workspace`
# compiled are reused, not rebuilt in release), installed with one pip install, then pytest.
# Run after `cargo test --workspace` and tests/build-python-interpreter.sh: the tests compare
# with target/debug/gavel's results and find the Python graders' interpreter in
# target/tmp/python-interpreter. With GAVEL_WHEELS=DIR the wheel in DIR is tested instead of
# one built here (python/build-wheels.sh tests the wheels it builds so).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(dirname "$here")
venv=${GAVEL_PYTHON_VENV:-$here/.venv}
target_dir=$(cd "$root" && cargo metadata --format-version 1 --no-deps \
    | sed -n 's/.*"target_directory":"\([^"]*\)".*/\1/p')
wheels="$target_dir/python-wheels"

if [ ! -x "$venv/bin/python" ]; then
    python3 -m venv "$venv"
fi
"$venv/bin/pip" install --quiet --disable-pip-version-check \
    maturin==1.16.0 pytest==9.2.0 'ray[data]==2.60.0'

if [ -n "${GAVEL_WHEELS:-}" ]; then
    wheels=$GAVEL_WHEELS
else
    rm -rf "$wheels"
    (cd "$here" && "$venv/bin/maturin" build --profile dev --quiet --out "$wheels")
fi
"$venv/bin/pip" install --quiet --disable-pip-version-check --force-reinstall --no-deps \
    "$wheels"/gavel-*.whl

# From tests/: Ray's workers put the driver's folder on their path, where python/gavel/ (without
# the compiled module) would shadow the installed package.
cd "$here/tests"
GAVEL_BIN="$target_dir/debug/gavel" \
GAVEL_TEST_CACHE="$target_dir/tmp/python-interpreter" \
    "$venv/bin/pytest" -p no:cacheprovider "$@"
