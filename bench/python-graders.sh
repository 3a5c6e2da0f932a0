#!/usr/bin/env bash
# Users' own Python graders: gavel running them sandboxed (by default a warm WebAssembly
# instance per grader and batch of 256 rows) against evaldeck 0.1.5 and letta-evals 0.26.0 calling the same functions natively in
# CPython, and against gavel's floor (functions of the same forms returning a constant), on the
# same rows, in one run. See bench/README.md ("Python graders").
#
#   bench/python-graders.sh [N]   N samples of the peer workload (default 2000), release build
#
# Options: --repeat R (rounds, the entries taking turns, median reported; default 3).
# Writes bench/results/python-graders.md; exits 1 when gavel is slower than a peer, 2 when an
# entry could not run.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(dirname "$here")
samples=2000
seed=1234
repeat=3
while [ $# -gt 0 ]; do
    case "$1" in
        --repeat) repeat=$2; shift ;;
        -h|--help) sed -n '2,12p' "$0"; exit 0 ;;
        ''|*[!0-9]*) echo "python-graders.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
        *) samples=$1 ;;
    esac
    shift
done

# shellcheck source=bench/lib.sh
. "$here/lib.sh"
build_bins release
ensure_venv
work="$here/work/python-$samples"
generate "$work" "$samples" letta,evaldeck
rm -rf "$work/logs"
sync
echo "== measuring" >&2
"$venv/bin/python" "$here/python_graders.py" \
    --work "$work" --samples "$samples" --venv "$venv" --gavel "$bin/gavel" \
    --cache-dir "$here/work/cache" --repeat "$repeat" \
    --graders "$root/host/tests/data/python/evaldeck-seed/my_graders.py" \
    --out "$here/results/python-graders.md"
