#!/bin/sh
# gavel serve against a FastAPI/uvicorn reward server (bench/serve/reward_server.py, OpenRLHF's
# remote reward shape) on loopback: requests a second and p50/p99 latency under wrk, for a
# string_check, a multi and a Python grader, each answering OpenRLHF's reward request.
#   bench/serve.sh [--gavel PATH] [--seconds S] [--connections N] [--cache-dir DIR] [--smoke]
# --gavel: the binary to measure [default: target/release/gavel if built, else
# target/debug/gavel].
# --cache-dir: the cache the servers find the compiled Python interpreter in (a debug build
# compiles it slowly: target/tmp/python-interpreter, which the tests fill, saves that).
# --smoke: one short round of each, for CI; the figures mean nothing then.
# Writes the table to bench/results/serve.md (serve-smoke.md for --smoke).
set -eu
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
gavel="" seconds=10 connections=16 smoke="" cache=""
while [ $# -gt 0 ]; do
    case $1 in
        --gavel) gavel=$2; shift ;;
        --seconds) seconds=$2; shift ;;
        --connections) connections=$2; shift ;;
        --cache-dir) cache=$2; shift ;;
        --smoke) smoke=1 seconds=1 connections=2 ;;
        *) echo "unknown argument $1" >&2; exit 2 ;;
    esac
    shift
done
if [ -z "$gavel" ]; then
    gavel=$root/target/release/gavel
    [ -x "$gavel" ] || gavel=$root/target/debug/gavel
fi
[ -x "$gavel" ] || (cd "$root" && cargo build -p gavel --bin gavel)
command -v wrk >/dev/null || { echo "wrk is missing: apt-get install wrk" >&2; exit 2; }

venv=$root/target/serve-bench-venv
want="fastapi==0.115.14 uvicorn==0.32.1 rapidfuzz==3.14.6"
if ! "$venv/bin/python" -c 'import importlib.metadata as m, sys; sys.exit((m.version("fastapi"), m.version("uvicorn"), m.version("rapidfuzz")) != ("0.115.14", "0.32.1", "3.14.6"))' 2>/dev/null; then
    echo "== creating $venv with $want" >&2
    python3 -m venv "$venv"
    "$venv/bin/pip" install --quiet --disable-pip-version-check $want
fi

work=$(mktemp -d)
pids=""
cleanup() {
    for pid in $pids; do kill "$pid" 2>/dev/null || true; done
    wait 2>/dev/null || true
    rm -rf "$work"
}
trap cleanup EXIT INT TERM

# The suites: each grader reads the query's response as the sample's output_text and its label
# as the item's ground_truth, as the reward server's functions do.
mkdir -p "$work/suites"
printf '{"input": "q", "ground_truth": "Paris"}\n' > "$work/suites/data.jsonl"
check='{type: string_check, name: check, input: "{{sample.output_text}}", reference: "{{item.ground_truth}}", operation: ilike}'
suite() {
    printf 'name: %s\ndataset: data.jsonl\ngraders:\n  check:\n    kind: openai\n    grader:\n%s\nreward:\n  kind: metric\n  metric_key: check\n' "$1" "$2"
}
suite string_check "      $check" > "$work/suites/string_check.yaml"
suite multi "      type: multi
      name: check
      graders:
        exact: $check
        close: {type: text_similarity, name: close, input: \"{{sample.output_text}}\", reference: \"{{item.ground_truth}}\", evaluation_metric: fuzzy_match}
      calculate_output: \"0.5 * exact + 0.5 * close\"" > "$work/suites/multi.yaml"
source=$(sed 's/^/        /' "$here/serve/grader.py")
suite python "      type: python
      name: check
      source: |
$source" > "$work/suites/python.yaml"

# One query per request, as OpenRLHF sends a sample's response for its reward.
prompt="What is the capital of France?"
printf '{"query": ["%s The capital of France is Paris."], "prompts": ["%s"], "labels": ["Paris"]}' \
    "$prompt" "$prompt" > "$work/body.json"

# A free port of 127.0.0.1.
free_port() {
    "$venv/bin/python" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# Starts `gavel serve` on SUITES with BINARY; sets $gavel_url once it answers /healthz.
start_gavel() {
    gavel_url=http://127.0.0.1:$(free_port)
    "$1" serve --listen "${gavel_url#http://}" --suites "$2" --queue 1024 ${cache:+--cache-dir "$cache"} \
        > /dev/null 2>&1 &
    pids="$pids $!"
    for _ in $(seq 3000); do
        curl -sf -o /dev/null "$gavel_url/healthz" && return
        sleep 0.1
    done
    echo "gavel serve did not start" >&2
    exit 2
}

# Starts the reward server grading with GRADER; sets $peer_url.
start_peer() {
    port=$(free_port)
    GRADER=$1 "$venv/bin/python" -m uvicorn reward_server:app --app-dir "$here/serve" \
        --host 127.0.0.1 --port "$port" --log-level warning --no-access-log &
    pids="$pids $!"
    peer_url=http://127.0.0.1:$port
    for _ in $(seq 300); do
        curl -sf -o /dev/null -X POST -H 'Content-Type: application/json' --data-binary @"$work/body.json" "$peer_url/get_reward" && return
        sleep 0.1
    done
    echo "the reward server did not start" >&2
    exit 2
}

# The rewards of one request to URL.
rewards() {
    curl -sf -X POST -H 'Content-Type: application/json' --data-binary @"$work/body.json" "$1" |
        "$venv/bin/python" -c 'import json, sys; print(json.load(sys.stdin)["rewards"])'
}

# wrk against URL: "requests/s p50 p99" (latencies in ms).
load() {
    BODY=$work/body.json wrk -t1 -c"$connections" -d"${seconds}s" --latency -s "$here/serve/post.lua" "$1" > "$work/wrk.txt"
    "$venv/bin/python" - "$work/wrk.txt" <<'EOF'
import re, sys
text = open(sys.argv[1]).read()
def ms(value, unit):
    return float(value) * {"us": 0.001, "ms": 1.0, "s": 1000.0}[unit]
rate = float(re.search(r"Requests/sec:\s+([\d.]+)", text).group(1))
p = {q: ms(*re.search(rf"^\s+{q}%\s+([\d.]+)(us|ms|s)$", text, re.M).groups()) for q in ("50", "99")}
errors = re.search(r"Non-2xx or 3xx responses: (\d+)", text)
if errors or "Socket errors" in text:
    sys.exit(f"wrk saw errors:\n{text}")
print(f"{rate:.0f} {p['50']:.2f} {p['99']:.2f}")
EOF
}

results=$root/bench/results/serve${smoke:+-smoke}.md
mkdir -p "$(dirname "$results")"
start_gavel "$gavel" "$work/suites"
{
    echo "# gavel serve vs a FastAPI reward server"
    echo
    echo "wrk, 1 thread, $connections connections, ${seconds}s per row, loopback; one query per request."
    echo "gavel: \`$("$gavel" --version)\` ($gavel). FastAPI $("$venv/bin/python" -c 'import fastapi; print(fastapi.__version__)'), uvicorn one worker."
    echo
    echo "| grader | server | requests/s | p50 ms | p99 ms |"
    echo "|---|---|---:|---:|---:|"
} > "$results"
for grader in string_check multi python; do
    start_peer "$grader"
    ours=$(rewards "$gavel_url/v1/suites/$grader/openrlhf")
    theirs=$(rewards "$peer_url/get_reward")
    [ "$ours" = "$theirs" ] || { echo "$grader: gavel rewards $ours, the reward server's $theirs" >&2; exit 1; }
    set -- $(load "$gavel_url/v1/suites/$grader/openrlhf")
    echo "| $grader | gavel serve | $1 | $2 | $3 |" >> "$results"
    set -- $(load "$peer_url/get_reward")
    echo "| $grader | FastAPI/uvicorn | $1 | $2 | $3 |" >> "$results"
done
cat "$results"
