#!/bin/sh
# Builds gavel's Python interpreter component: build.sh OUT.wasm
#
# componentize-py (pinned below) compiles app.py, the runtime (gavel_runtime/) and the stand-in
# packages (stubs/) into one component of world `interpreter-v1` (wit/grader.wit), importing
# them at build time so they are in its pre-initialised snapshot. The toolchain is
# $GAVEL_COMPONENTIZE_PY when set, else a venv here (.venv/, made on first use). Idempotent: an
# OUT newer than every source is kept. Writes nothing outside this folder and OUT; prints OUT.
# Exit codes: 0 built or up to date, 1 the build failed, 2 usage, 3 no toolchain.
# What it makes (the venv, OUT) is its user's alone: gavel checks the venv before each use.
set -eu
umask 077

if [ $# -ne 1 ]; then
    echo "usage: $0 OUT.wasm" >&2
    exit 2
fi
here=$(cd "$(dirname "$0")" && pwd)
case $1 in
    /*) out=$1 ;;
    *) out=$(pwd)/$1 ;;
esac
cd "$here"

version=0.25.1
world=interpreter-v1

toolchain_missing() {
    echo "error: $*" >&2
    exit 3
}

if [ -n "${GAVEL_COMPONENTIZE_PY:-}" ]; then
    componentize_py=$GAVEL_COMPONENTIZE_PY
    [ -x "$componentize_py" ] || toolchain_missing "GAVEL_COMPONENTIZE_PY=$componentize_py is not executable"
else
    venv=.venv
    installed=$("$venv/bin/python" -m pip show componentize-py 2>/dev/null | sed -n 's/^Version: //p' || true)
    if [ "$installed" != "$version" ]; then
        python=${PYTHON:-python3}
        command -v "$python" >/dev/null 2>&1 || toolchain_missing "no $python on PATH (Debian: apt-get install python3 python3-venv)"
        echo "Installing componentize-py $version into $here/$venv ..." >&2
        [ -x "$venv/bin/python" ] || "$python" -m venv "$venv" \
            || toolchain_missing "cannot create a virtual environment with $python (Debian: apt-get install python3-venv)"
        "$venv/bin/python" -m pip install --quiet --disable-pip-version-check "componentize-py==$version" \
            || toolchain_missing "pip could not install componentize-py==$version"
    fi
    componentize_py=$venv/bin/componentize-py
fi

if [ -f "$out" ] && [ -z "$(find . -path ./.venv -prune -o -path ./tests -prune -o \
        \( -name '*.py' -o -name '*.wit' -o -name build.sh \) -newer "$out" -print)" ]; then
    echo "$out"
    exit 0
fi

mkdir -p "$(dirname "$out")"
"$componentize_py" -d wit -w "$world" componentize -p . -p stubs app -o "$out.tmp" >&2 || {
    rm -f "$out.tmp"
    exit 1
}
mv "$out.tmp" "$out"
echo "$out"
