#!/bin/sh
# Builds this Python pack into target/pack.wasm, a WebAssembly component for gavel.
#
# The first run installs componentize-py (from PyPI) into .venv/ here; later runs reuse it and
# rebuild only when a source changed. Exit codes: 0 built (or already up to date), 1 the build
# failed, 3 the toolchain could not be installed (the message says what is missing).
set -eu

here=$(cd "$(dirname "$0")" && pwd)
cd "$here"

componentize_py_version=0.25.1
world=pack-v0
out=target/pack.wasm
venv=.venv

toolchain_missing() {
    echo "error: $*" >&2
    exit 3
}

python=${PYTHON:-python3}
command -v "$python" >/dev/null 2>&1 \
    || toolchain_missing "no $python on PATH; install Python 3.11 or newer (Debian: apt-get install python3 python3-venv)"

# The toolchain: componentize-py bundles CPython compiled to WebAssembly and the component
# tooling in one wheel; nothing else is needed.
installed=$("$venv/bin/python" -m pip show componentize-py 2>/dev/null | sed -n 's/^Version: //p' || true)
if [ "$installed" != "$componentize_py_version" ]; then
    echo "Installing componentize-py $componentize_py_version into $here/$venv ..." >&2
    if [ ! -x "$venv/bin/python" ]; then
        # Debian's python3 lacks ensurepip unless python3-venv is installed: as root, install
        # it; otherwise a venv without pip, filled by the system's pip, works as well.
        if ! "$python" -m venv "$venv" 2>/dev/null; then
            rm -rf "$venv"
            if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
                echo "Installing python3-venv (apt-get) ..." >&2
                { apt-get update -qq && apt-get install -y -qq python3-venv; } >/dev/null 2>&1 || true
            fi
            "$python" -m venv "$venv" 2>/dev/null \
                || { rm -rf "$venv" && "$python" -m venv --without-pip "$venv"; } \
                || toolchain_missing "cannot create a virtual environment with $python (Debian: apt-get install python3-venv)"
        fi
    fi
    if "$venv/bin/python" -m pip --version >/dev/null 2>&1; then
        pip="$venv/bin/python -m pip"
    elif "$python" -m pip --version >/dev/null 2>&1; then
        pip="$python -m pip --python $venv/bin/python"
    else
        toolchain_missing "no pip for $python (Debian: apt-get install python3-pip python3-venv)"
    fi
    $pip install --quiet --disable-pip-version-check "componentize-py==$componentize_py_version" \
        || toolchain_missing "pip could not install componentize-py==$componentize_py_version from PyPI"
fi
componentize_py="$venv/bin/componentize-py"

# Up to date when no source is newer than the component.
if [ -f "$out" ] && [ -z "$(find . -path ./.venv -prune -o -path ./target -prune -o \
        \( -name '*.py' -o -name '*.wit' -o -name build.sh \) -newer "$out" -print)" ]; then
    echo "$here/$out is up to date" >&2
    exit 0
fi

# The bindings are plain Python: the unit tests import them under CPython, no WebAssembly.
mkdir -p target
rm -rf target/bindings
"$componentize_py" -d wit -w "$world" bindings target/bindings >/dev/null
if ls test_*.py >/dev/null 2>&1; then
    echo "Testing with $("$venv/bin/python" --version) ..." >&2
    PYTHONPATH="target/bindings:." "$venv/bin/python" -m unittest --quiet test_*.py || exit 1
fi

echo "Building $out ..." >&2
"$componentize_py" -d wit -w "$world" componentize app -o "$out.tmp" || exit 1
mv "$out.tmp" "$out"
ls -l "$out" >&2
