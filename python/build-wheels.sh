#!/usr/bin/env bash
# The wheel people install: the extension built by maturin in the workspace's `wheel` profile
# (release's optimisations without its thin LTO and single-unit crates; about 33 minutes on two
# busy cores, too long for CI, which tests a dev-profile wheel), one abi3 wheel for every
# CPython from 3.10 on, for this machine's platform, into DIR (target/wheels by default). The
# wheel is then installed and tested as CI tests its own (python/ci.sh, with GAVEL_WHEELS):
# run after `cargo build -p gavel` and tests/build-python-interpreter.sh. Extra arguments go
# to maturin, e.g. `--compatibility manylinux_2_28` inside a manylinux container.
#
#   python/build-wheels.sh [DIR] [MATURIN ARGS...]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(dirname "$here")
venv=${GAVEL_PYTHON_VENV:-$here/.venv}
out=$(mkdir -p "${1:-$root/target/wheels}" && cd "${1:-$root/target/wheels}" && pwd)
shift || true

if [ ! -x "$venv/bin/python" ]; then
    python3 -m venv "$venv"
fi
"$venv/bin/pip" install --quiet --disable-pip-version-check maturin==1.16.0

rm -f "$out"/gavel-*.whl
start=$(date +%s)
(cd "$here" && "$venv/bin/maturin" build --profile wheel --out "$out" "$@")
echo "built $(ls "$out"/gavel-*.whl) in $(( ($(date +%s) - start) / 60 )) min"

GAVEL_WHEELS=$out "$here/ci.sh"
