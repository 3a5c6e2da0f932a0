#!/bin/sh
# Builds app.js into the component OUT (the first argument) with the componentize-js of
# examples/packs-js, which that pack's build.sh installs: with wasi:http on (the example packs
# turn it off), so that `fetch` sends its requests through gavel. Rebuilds only when a source
# changed. Exit codes as examples/packs-js/build.sh's: 0 built, 1 failed, 3 no toolchain.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
out=$1
example="$here/../../examples/packs-js"
componentize_js="$example/node_modules/.bin/componentize-js"
[ -x "$componentize_js" ] || { echo "error: build examples/packs-js first" >&2; exit 3; }
if [ -f "$out" ] && [ -z "$(find "$here" -newer "$out" -print)" ]; then
    exit 0
fi
mkdir -p "$(dirname "$out")"
"$componentize_js" "$here/app.js" --wit "$example/wit" --world-name pack-v0 \
    --disable fetch-event -o "$out.tmp" >&2 || exit 1
mv "$out.tmp" "$out"
