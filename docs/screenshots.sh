#!/bin/sh
# The README's screenshots of a report, taken by headless Chromium: the report of the run of
# docs/outputs/report/ is written, with the run's folder taken out of its paths, to
# OUT/report.html, and OUT/report-summary.png and OUT/report-sample.png are taken of it.
# OUT is docs/ (and the page docs/outputs/report.html) unless given; tests/all/report.rs runs
# this into a folder of its own and compares the page with docs/outputs/report.html, which
# changes whenever the screenshots would.
#
#   docs/screenshots.sh [OUT]      GAVEL: the gavel binary (default: gavel on the PATH)
#                                  CHROMIUM: the browser (default: chromium on the PATH)
set -eu
docs=$(cd "$(dirname "$0")" && pwd)
gavel=${GAVEL:-gavel}
chromium=${CHROMIUM:-chromium}
case "${1:-}" in
"") out=$docs page=$docs/outputs/report.html ;;
*) mkdir -p "$1"; out=$(cd "$1" && pwd); page=$out/report.html ;;
esac
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cp "$docs/outputs/report/suite.yaml" "$docs/outputs/report/data.jsonl" "$work/"
(cd "$work" && "$gavel" run suite.yaml -o out --report --quiet)
# The run's folder is a temporary one: the page says the paths from it.
sed "s|$work/||g" "$work/out/report.html" > "$page"
for shot in "report-summary.png::1100,900" "report-sample.png:sample=0:1100,1500"; do
    name=${shot%%:*}
    rest=${shot#*:}
    fragment=${rest%%:*}
    size=${rest#*:}
    "$chromium" --headless --no-sandbox --disable-gpu --no-first-run \
        --disable-background-networking --disable-component-update --disable-sync \
        --hide-scrollbars --user-data-dir="$work/profile" --virtual-time-budget=10000 \
        --window-size="$size" --screenshot="$out/$name" "file://$page#$fragment" 2>/dev/null
done
