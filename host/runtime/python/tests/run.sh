#!/bin/sh
# Tests the Python interpreter runtime under CPython (no WebAssembly): the runtime's own tests,
# the differential tests against letta-evals 0.26.0, evaldeck 0.1.5, anthropic 2.14.0 and
# openai 3.57.0, and the HTTP adapters against httpx and requests (run by the venv's Python);
# pathspec for the integration tests that grade with it under letta-evals too.
# The packages live in a venv at bench/.venv of the repository (git-ignored), made here when
# missing.
#   host/runtime/python/tests/run.sh
set -eu
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../../../.." && pwd)
venv=${GAVEL_PEER_VENV:-$root/bench/.venv}
want="letta-evals==0.26.0 evaldeck==0.1.5 anthropic==2.14.0 openai==3.57.0 httpx==0.28.1 requests==2.34.2 pathspec==1.1.1"

if ! "$venv/bin/python" - <<'PY' 2>/dev/null
import importlib.metadata as m, sys
names = ("letta-evals", "evaldeck", "anthropic", "openai", "httpx", "requests", "pathspec")
want = ("0.26.0", "0.1.5", "2.14.0", "3.57.0", "0.28.1", "2.34.2", "1.1.1")
sys.exit(0 if tuple(m.version(n) for n in names) == want else 1)
PY
then
    echo "== creating $venv with $want" >&2
    python3 -m venv "$venv"
    "$venv/bin/pip" install --quiet --disable-pip-version-check $want
fi

cd "$here"
"$venv/bin/python" -m unittest -v test_http
PEER_PYTHON="$venv/bin/python" python3 -m unittest -v test_runtime test_differential test_clients test_process
