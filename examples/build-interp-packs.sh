#!/bin/sh
# Installs the Python and JavaScript pack toolchains (componentize-py from PyPI, componentize-js
# from npm, each into its pack's git-ignored folder) and builds both example packs. Each
# build.sh is idempotent: a second run installs nothing and rebuilds only what changed.
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
for pack in packs-python packs-js; do
    echo "Building examples/$pack ..." >&2
    sh "$root/examples/$pack/build.sh"
done
