#!/bin/sh
# Writes the recorded runs again with tests/traces/make.py and compares them with the committed
# ones (host/tests/data/traces/): any difference fails. make.py runs in a venv of its own,
# tests/traces/.venv (git-ignored), made here when missing or when its pins changed: inspect_ai
# needs a newer anyio than letta-evals pins, so the venv of the differential tests
# (bench/.venv) cannot hold both.
#   tests/traces/run.sh
set -eu
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
venv=${GAVEL_TRACES_VENV:-$here/.venv}
want="openai==3.57.0 anthropic==2.14.0 inspect_ai==0.3.285 \
opentelemetry-api==1.45.2 opentelemetry-sdk==1.45.2 opentelemetry-proto==1.45.2 \
opentelemetry-exporter-otlp-proto-common==1.45.2 opentelemetry-semantic-conventions==0.66b2 \
opentelemetry-instrumentation==0.66b2 opentelemetry-instrumentation-openai-v2==2.4b0 \
opentelemetry-util-genai==1.1b0 openinference-instrumentation-openai==0.1.66 \
openinference-instrumentation==0.1.72 openinference-semantic-conventions==0.1.42 \
protobuf==7.36.2"

# The pins the venv was made with are kept in it; other pins make it again.
if [ "$(cat "$venv/gavel-pins" 2>/dev/null)" != "$want" ]; then
    echo "== creating $venv with $want" >&2
    rm -rf "$venv"
    python3 -m venv "$venv"
    "$venv/bin/pip" install --quiet --disable-pip-version-check $want
    printf '%s\n' "$want" >"$venv/gavel-pins"
fi

out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
"$venv/bin/python" -W ignore "$here/make.py" "$out"
diff -r "$out" "$root/host/tests/data/traces"
