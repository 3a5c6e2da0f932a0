#!/bin/sh
# The README's sample outputs, made again: `docs/outputs/readme.sh NAME`, run in an empty
# folder with `gavel` on the PATH, prints what the README shows after `<!-- output: NAME -->`.
# tests/all/readme.rs runs each and compares; when a change alters one, paste its new output
# into the README.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
exec 2>&1
# gavel, without the progress lines it prints when piped (elapsed time and rate, different on
# every run, which a terminal clears).
gavel() {
    command gavel "$@" 2>&1 | sed '/^[0-9]*:[0-9][0-9] graded /d'
}
# A command as typed, then what it prints (its exit code is said in the README's words).
show() {
    printf '$ %s\n' "$*"
    "$@"
}
case "${1:-}" in
quickstart)
    gavel run "$repo/examples/quickstart/suite.yaml"
    ;;
suite-errors)
    cp "$here/suite-errors/suite.yaml" "$here/suite-errors/data.jsonl" .
    gavel run suite.yaml
    ;;
filter)
    cp "$here/capitals/suite.yaml" "$here/capitals/data.jsonl" .
    show gavel run suite.yaml --filter tag:geo --max-samples 10 --junit report.xml
    ;;
diff)
    cp "$here/diff/suite.yaml" .
    cp "$here/diff/before.jsonl" data.jsonl
    gavel run suite.yaml -o results/before --quiet
    cp "$here/diff/after.jsonl" data.jsonl
    gavel run suite.yaml -o results/after --quiet
    show gavel diff results/before results/after --fail-on answer --show 3
    ;;
python-graders)
    gavel run "$repo/examples/python-graders/suite.yaml"
    ;;
*)
    echo "usage: $0 quickstart|suite-errors|filter|diff|python-graders"
    exit 2
    ;;
esac
