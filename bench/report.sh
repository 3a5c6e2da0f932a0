#!/usr/bin/env bash
# The size of `gavel report`'s page and how long headless Chromium takes to open it, for a
# synthetic letta workload of N samples (default 10000; README "See a run").
#
#   bench/report.sh [N]
#
# Prints the report's size, the time `gavel report` took, and the page's own measure of its
# opening (navigation start to a rendered table, `data-render-ms`), median of five loads.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(dirname "$here")
samples=${1:-10000}
case "$samples" in ''|*[!0-9]*) echo "report.sh: N must be a number" >&2; exit 2 ;; esac

chromium=${CHROMIUM:-$(command -v chromium || true)}
[ -n "$chromium" ] || { echo "report.sh: needs chromium (apt-get install -y chromium)" >&2; exit 2; }

cargo build --quiet --release --manifest-path "$root/Cargo.toml" -p gavel -p gavel-bench --bins
bin="$root/target/release"
work="$here/work/report-$samples"
if [ ! -f "$work/.done" ]; then
    rm -rf "$work"
    "$bin/bench-gen" "$work" "$samples" --parts letta
    touch "$work/.done"
fi
suite="$work/letta/suite.yaml"
"$bin/gavel" run "$suite" -o "$work/out" --quiet || true
start=$(date +%s%N)
"$bin/gavel" report "$work/out" -o "$work/report.html"
end=$(date +%s%N)
echo "gavel report: $(( (end - start) / 1000000 )) ms"
echo "size: $(du -h "$work/report.html" | cut -f1)"

times=()
for _ in 1 2 3 4 5; do
    profile=$(mktemp -d)
    ms=$("$chromium" --headless --no-sandbox --disable-gpu --no-first-run \
        --disable-background-networking --disable-component-update --disable-sync --disable-quic \
        --user-data-dir="$profile" --dump-dom "file://$work/report.html" 2>/dev/null \
        | grep -o 'data-render-ms="[0-9]*"' | grep -o '[0-9]*')
    rm -rf "$profile"
    times+=("$ms")
done
sorted=$(printf '%s\n' "${times[@]}" | sort -n)
echo "opened in (ms, five loads): $(echo $sorted)"
echo "median: $(echo "$sorted" | sed -n 3p) ms"
