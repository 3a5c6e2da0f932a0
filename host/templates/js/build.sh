#!/bin/sh
# Builds build/{{ident}}.wasm, a component of gavel:grader@0.1.0, from app.js and gavel-pack.js:
#   1. runs the unit tests (*.test.js) under Node;
#   2. componentize-js bundles the SpiderMonkey engine, compiled to WebAssembly, with the code
#      into a component.
#
# The toolchain is @bytecodealliance/componentize-js from npm, at the versions package-lock.json
# pins (about 390 MB installed). It is found as:
#   1. $COMPONENTIZE_JS, a componentize-js command you installed yourself;
#   2. else node_modules/.bin/componentize-js here, if you ran `npm install` in this folder;
#   3. else the shared toolchain folder, $GAVEL_TOOLCHAINS (default:
#      ${XDG_DATA_HOME:-~/.local/share}/gavel/toolchains), where the first build of any JavaScript
#      pack installs it into componentize-js-<hash of package-lock.json>/ and every later build
#      of every pack with the same lockfile reuses it. GAVEL_TOOLCHAINS=.toolchains keeps it
#      inside this folder instead.
# Running it again installs nothing and rebuilds only when a source changed.
# Exit codes: 0 built (or up to date), 1 a test or the build failed, 3 the toolchain could not
# be installed or may be changed by others than you (the message says what).
set -eu
cd "$(dirname "$0")"

world=pack-v0
entry=app.js
out=build/{{ident}}.wasm

toolchain_missing() {
    echo "error: $*" >&2
    exit 3
}

command -v node >/dev/null 2>&1 \
    || toolchain_missing "no node on PATH; install Node.js 18 or newer (Debian: apt-get install nodejs npm)"

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

# Installs the packages package-lock.json pins into the folder $1, which does not exist yet.
# `npm install --no-save` installs exactly those and leaves the lockfile as it is; `npm ci`
# would refuse a lockfile that lacks the optional native packages of other platforms, which a
# registry mirror may not carry.
install_componentize_js() {
    command -v npm >/dev/null 2>&1 || toolchain_missing "no npm on PATH (Debian: apt-get install npm)"
    echo "Installing componentize-js into $1 (once for every JavaScript pack) ..." >&2
    mkdir -p "$1"
    cp package.json package-lock.json "$1/"
    (cd "$1" && npm_install) || toolchain_missing "npm could not install the packages package-lock.json pins"
    [ -x "$1/node_modules/.bin/componentize-js" ] \
        || toolchain_missing "package-lock.json does not install @bytecodealliance/componentize-js"
    : >"$1/.installed"
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

if [ -n "${COMPONENTIZE_JS:-}" ]; then
    componentize_js=$COMPONENTIZE_JS
elif [ -x node_modules/.bin/componentize-js ]; then
    componentize_js=node_modules/.bin/componentize-js
else
    toolchains=${GAVEL_TOOLCHAINS:-${XDG_DATA_HOME:-${HOME:?}/.local/share}/gavel/toolchains}
    # Named by what the lockfile pins, the pack's own name left out: packs that pin the same
    # versions share a folder, one that pins others gets its own.
    lockfile_hash=$(node -e '
        const lock = JSON.parse(require("fs").readFileSync("package-lock.json", "utf8"));
        delete lock.name;
        if (lock.packages && lock.packages[""]) delete lock.packages[""].name;
        const hash = require("crypto").createHash("sha256").update(JSON.stringify(lock));
        console.log(hash.digest("hex").slice(0, 16));
    ') || toolchain_missing "cannot read package-lock.json"
    shared=$toolchains/componentize-js-$lockfile_hash
    if [ ! -f "$shared/.installed" ]; then
        (umask 077 && mkdir -p "$toolchains") || toolchain_missing "cannot create $toolchains"
        lock "$shared.lock"
        trap 'rm -rf "$shared.lock"' EXIT
        trap 'exit 130' INT TERM
        # Another build may have installed it while this one waited; a half-made one is redone.
        if [ ! -f "$shared/.installed" ]; then
            rm -rf "$shared"
            install_componentize_js "$shared"
        fi
        rm -rf "$shared.lock"
        trap - EXIT INT TERM
    fi
    check_private "$shared"
    componentize_js=$shared/node_modules/.bin/componentize-js
fi

# Up to date when no source is newer than the component.
if [ -f "$out" ] && [ -z "$(find . \( -name build -o -name .toolchains -o -name node_modules \) -prune -o \
        \( -name '*.js' -o -name '*.wit' -o -name 'package*.json' -o -name build.sh \) -newer "$out" -print)" ]; then
    echo "$out is up to date" >&2
    exit 0
fi

mkdir -p build
if ls ./*.test.js >/dev/null 2>&1; then
    echo "Testing with node $(node --version) ..." >&2
    node --test ./*.test.js >build/test.log 2>&1 || { cat build/test.log >&2; exit 1; }
fi

echo "Building $out ..." >&2
# The HTTP features are off: a pack has no network. stdio stays on so that an exception's stack
# reaches stderr, which gavel keeps in the grade's metadata.
"$componentize_js" "$entry" --wit wit --world-name "$world" --disable http fetch-event \
    -o "$out.tmp" >&2 || exit 1
mv "$out.tmp" "$out"
echo "built $out" >&2
