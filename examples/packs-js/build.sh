#!/bin/sh
# Builds this JavaScript pack into target/pack.wasm, a WebAssembly component for gavel.
#
# The first run installs componentize-js (from npm, the versions package-lock.json pins) into
# node_modules/ here; later runs reuse it and rebuild only when a source changed. Exit codes:
# 0 built (or already up to date), 1 the build failed, 3 the toolchain could not be installed
# (the message says what is missing).
set -eu

here=$(cd "$(dirname "$0")" && pwd)
cd "$here"

world=pack-v0
out=target/pack.wasm
entry=app.js

toolchain_missing() {
    echo "error: $*" >&2
    exit 3
}

command -v node >/dev/null 2>&1 \
    || toolchain_missing "no node on PATH; install Node.js 18 or newer (Debian: apt-get install nodejs npm)"
command -v npm >/dev/null 2>&1 \
    || toolchain_missing "no npm on PATH (Debian: apt-get install npm)"

# node_modules/.package-lock.json is npm's record of what it installed: reinstall when the
# lockfile changed since. `npm install --no-save` installs the versions package-lock.json pins
# and leaves it as it is; `npm ci` would refuse a lockfile that lacks the optional
# native packages of other platforms, which a registry mirror may not carry.
# npm's registry drops a connection now and then: three tries, a pause between them, and at the
# end the errors of npm's own log, which says which package and why.
npm_install() {
    for pause in 5 20 0; do
        npm install --no-save --no-audit --no-fund --loglevel=error >&2 && return 0
        [ "$pause" = 0 ] && break
        echo "npm install failed; trying again in $pause s ..." >&2
        sleep "$pause"
    done
    log=$(ls -t "${npm_config_cache:-$HOME/.npm}"/_logs/*-debug-*.log 2>/dev/null | head -n 1)
    [ -n "$log" ] && grep -E ' (error|verbose stack) ' "$log" | tail -n 20 >&2
    return 1
}

componentize_js=node_modules/.bin/componentize-js
if [ ! -x "$componentize_js" ] || [ package-lock.json -nt node_modules/.package-lock.json ]; then
    echo "Installing componentize-js into $here/node_modules ..." >&2
    npm_install || toolchain_missing "npm could not install the packages package-lock.json pins"
fi

# Up to date when no source is newer than the component.
if [ -f "$out" ] && [ -z "$(find . -path ./node_modules -prune -o -path ./target -prune -o \
        \( -name '*.js' -o -name '*.wit' -o -name package-lock.json -o -name build.sh \) -newer "$out" -print)" ]; then
    echo "$here/$out is up to date" >&2
    exit 0
fi

mkdir -p target
if ls ./*.test.js >/dev/null 2>&1; then
    echo "Testing with node $(node --version) ..." >&2
    node --test ./*.test.js >target/test.log 2>&1 || { cat target/test.log >&2; exit 1; }
fi

echo "Building $out ..." >&2
# The HTTP features are off: a pack has no network. stdio stays on so that an exception's
# stack reaches stderr, which gavel keeps in the grade's metadata; the clock and randomness
# are gavel's fixed ones.
"$componentize_js" "$entry" --wit wit --world-name "$world" --disable http fetch-event \
    -o "$out.tmp" >&2 || exit 1
mv "$out.tmp" "$out"
ls -l "$out" >&2
