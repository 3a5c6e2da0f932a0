#!/bin/sh
# Builds build/{{ident}}.wasm, a component of gavel:grader@0.1.0, from app.py and gavel_pack.py:
#   1. runs the unit tests (test_*.py) under plain CPython against the generated bindings;
#   2. componentize-py bundles CPython, compiled to WebAssembly, with the code into a component.
#
# The toolchain is componentize-py from PyPI (one wheel, about 70 MB installed). It is found as:
#   1. $COMPONENTIZE_PY, a componentize-py command you installed yourself;
#   2. else the shared toolchain folder, $GAVEL_TOOLCHAINS (default:
#      ${XDG_DATA_HOME:-~/.local/share}/gavel/toolchains), where the first build of any Python pack
#      installs it into componentize-py-<version>/ and every later build of every pack reuses it.
#      GAVEL_TOOLCHAINS=.toolchains keeps it inside this folder instead.
# Running it again installs nothing and rebuilds only when a source changed.
# Exit codes: 0 built (or up to date), 1 a test or the build failed, 3 the toolchain could not
# be installed or may be changed by others than you (the message says what).
set -eu
cd "$(dirname "$0")"

componentize_py_version=0.25.1
world=pack-v0
out=build/{{ident}}.wasm

toolchain_missing() {
    echo "error: $*" >&2
    exit 3
}

python=${PYTHON:-python3}
command -v "$python" >/dev/null 2>&1 \
    || toolchain_missing "no $python on PATH; install Python 3.11 or newer (Debian: apt-get install python3 python3-venv)"

# Installs componentize-py into the virtual environment $1, which does not exist yet.
install_componentize_py() {
    venv=$1
    echo "Installing componentize-py $componentize_py_version into $venv (once for every Python pack) ..." >&2
    # Debian's python3 lacks ensurepip unless python3-venv is installed: as root, install it;
    # otherwise a venv without pip, filled by the system's pip, works as well.
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
    if "$venv/bin/python" -m pip --version >/dev/null 2>&1; then
        pip="$venv/bin/python -m pip"
    elif "$python" -m pip --version >/dev/null 2>&1; then
        pip="$python -m pip --python $venv/bin/python"
    else
        toolchain_missing "no pip for $python (Debian: apt-get install python3-pip python3-venv)"
    fi
    $pip install --quiet --disable-pip-version-check "componentize-py==$componentize_py_version" >&2 \
        || toolchain_missing "pip could not install componentize-py==$componentize_py_version from PyPI"
    echo "$componentize_py_version" >"$venv/.installed"
}

# Refuses the toolchain folder $1 when it, anything in it or the folder holding it belongs to
# another user or may be written by others: whoever could change it would choose what this
# build runs.
check_private() {
    me=$(id -u)
    changed=$({
        find "$(dirname "$1")" -maxdepth 0 \( ! -user "$me" -o -perm /022 \) -print
        find "$1" \( ! -user "$me" -o \( ! -type l -perm /022 \) \) -print
    } 2>/dev/null | head -n 1)
    [ -z "$changed" ] || toolchain_missing "$changed may be changed by others than you (chmod -R go-w it, or set GAVEL_TOOLCHAINS to a folder of your own)"
}

# Takes the lock $1 (a folder: creating one is atomic), waiting while another build installs;
# a lock left by a build that was killed is taken over.
lock() {
    waited=0
    until mkdir "$1" 2>/dev/null; do
        holder=$(cat "$1/pid" 2>/dev/null || true)
        if [ -n "$holder" ] && ! kill -0 "$holder" 2>/dev/null; then
            rm -rf "$1"
            continue
        fi
        [ "$waited" = 0 ] && echo "Waiting for another build to install the toolchain ($1) ..." >&2
        waited=$((waited + 1))
        [ "$waited" -lt 900 ] || toolchain_missing "$1 is still locked after 15 minutes; remove it if no build is running"
        sleep 1
    done
    echo $$ >"$1/pid"
}

if [ -n "${COMPONENTIZE_PY:-}" ]; then
    componentize_py=$COMPONENTIZE_PY
    found=$("$componentize_py" --version 2>/dev/null) \
        || toolchain_missing "COMPONENTIZE_PY=$componentize_py does not run"
    [ "$found" = "componentize-py $componentize_py_version" ] \
        || echo "warning: COMPONENTIZE_PY is $found; this pack is written for $componentize_py_version" >&2
else
    toolchains=${GAVEL_TOOLCHAINS:-${XDG_DATA_HOME:-${HOME:?}/.local/share}/gavel/toolchains}
    venv=$toolchains/componentize-py-$componentize_py_version
    if [ ! -f "$venv/.installed" ]; then
        (umask 077 && mkdir -p "$toolchains") || toolchain_missing "cannot create $toolchains"
        lock "$venv.lock"
        trap 'rm -rf "$venv.lock"' EXIT
        trap 'exit 130' INT TERM
        # Another build may have installed it while this one waited; a half-made one is redone.
        if [ ! -f "$venv/.installed" ]; then
            rm -rf "$venv"
            install_componentize_py "$venv"
        fi
        rm -rf "$venv.lock"
        trap - EXIT INT TERM
    fi
    check_private "$venv"
    componentize_py=$venv/bin/componentize-py
fi

# Up to date when no source is newer than the component.
if [ -f "$out" ] && [ -z "$(find . \( -name build -o -name .toolchains -o -name __pycache__ \) -prune -o \
        \( -name '*.py' -o -name '*.wit' -o -name build.sh \) -newer "$out" -print)" ]; then
    echo "$out is up to date" >&2
    exit 0
fi

# The bindings are plain Python: the unit tests import them under CPython, no WebAssembly.
mkdir -p build
rm -rf build/bindings
"$componentize_py" -d wit -w "$world" bindings build/bindings >/dev/null || exit 1
if ls test_*.py >/dev/null 2>&1; then
    echo "Testing with $("$python" --version) ..." >&2
    PYTHONPATH="build/bindings:." PYTHONDONTWRITEBYTECODE=1 "$python" -m unittest --quiet test_*.py || exit 1
fi

echo "Building $out ..." >&2
"$componentize_py" -d wit -w "$world" componentize app -o "$out.tmp" >&2 || exit 1
mv "$out.tmp" "$out"
echo "built $out" >&2
