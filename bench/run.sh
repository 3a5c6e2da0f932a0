#!/usr/bin/env bash
# The peer benchmark: gavel against letta-evals 0.26.0 and evaldeck 0.1.5 on one synthetic
# workload, plus the parse-only floor and a memory check. See bench/README.md.
#
#   bench/run.sh [N]        N samples (default 300000), release build, memory check at 10k/1M
#   bench/run.sh --smoke    200 samples, debug build: checks that the harness works end to end
#
# Options: --seed S (default 1234), --cli-samples P (letta-evals CLI subset, default 20000),
#          --no-memory (skip the memory check), --only a,b (run only these entries),
#          --repeat R (rounds of runs, the entries taking turns, median reported; default 3;
#          an entry whose run takes under 2 s runs five times a round),
#          --baseline PATH (another gavel binary, run on both suites in turns with this one).
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(dirname "$here")

samples=300000
seed=1234
cli_samples=20000
smoke=0
memory=1
only=""
repeat=3
baseline=()
while [ $# -gt 0 ]; do
    case "$1" in
        --smoke) smoke=1 ;;
        --seed) seed=$2; shift ;;
        --cli-samples) cli_samples=$2; shift ;;
        --no-memory) memory=0 ;;
        --only) only=$2; shift ;;
        --repeat) repeat=$2; shift ;;
        --baseline) [ -x "$2" ] || { echo "run.sh: --baseline $2 is not an executable" >&2; exit 2; }
                    baseline=(--baseline "$(realpath "$2")"); shift ;;
        -h|--help) sed -n '2,12p' "$0"; exit 0 ;;
        ''|*[!0-9]*) echo "run.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
        *) samples=$1 ;;
    esac
    shift
done

if [ "$smoke" = 1 ]; then
    samples=200
    cli_samples=200
    repeat=1
    memory_sizes=(200 2000)
    profile=debug
else
    memory_sizes=(10000 1000000)
    profile=release
fi
[ "$cli_samples" -gt "$samples" ] && cli_samples=$samples

# shellcheck source=bench/lib.sh
. "$here/lib.sh"
build_bins "$profile"
ensure_venv
work="$here/work"
generate "$work/main-$samples" "$samples" letta,evaldeck
generate "$work/cli-$cli_samples" "$cli_samples" letta,cached
memory_dirs=()
if [ "$memory" = 1 ]; then
    for n in "${memory_sizes[@]}"; do
        generate "$work/memory-$n" "$n" letta
        memory_dirs+=("$work/memory-$n")
    done
fi
rm -rf "$work/main-$samples/out" "$work/main-$samples/logs"

# Freshly generated workloads (the largest is over a gigabyte) are still being written back to
# disk; flushing them first keeps that I/O out of the timings.
sync
echo "== measuring" >&2
status=0
"$venv/bin/python" "$here/harness.py" \
    --work "$work/main-$samples" --cli-work "$work/cli-$cli_samples" \
    --samples "$samples" --cli-samples "$cli_samples" --seed "$seed" \
    --venv "$venv" --gavel "$bin/gavel" --floor "$bin/bench-floor" "${baseline[@]}" \
    --memory "${memory_dirs[@]}" --profile "$profile" --only "$only" --repeat "$repeat" \
    $([ "$smoke" = 1 ] && echo --smoke) \
    --out "$here/results/$([ "$smoke" = 1 ] && echo smoke || echo latest).md" || status=$?

# The sandbox's fresh-instance throughput, measured by its own criterion bench where present.
if [ "$smoke" = 0 ] && [ -f "$root/host/benches/pack_calls.rs" ] && [ -z "$only" ]; then
    echo "== cargo bench --bench pack_calls" >&2
    cargo bench --quiet --manifest-path "$root/Cargo.toml" -p gavel --bench pack_calls \
        > "$work/pack_calls.txt" 2>&1 || status=$?
    {
        echo
        echo "WASM grader calls (\`cargo bench -p gavel --bench pack_calls\`):"
        echo
        echo '```'
        grep -E 'time:|thrpt:|^[a-z_/ ]+$' "$work/pack_calls.txt" || tail -20 "$work/pack_calls.txt"
        echo '```'
    } >> "$here/results/latest.md"
fi
exit $status
