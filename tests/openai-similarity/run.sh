#!/bin/sh
# gavel's text_similarity metrics against rapidfuzz, nltk and rouge-score (check.py), in a venv
# of those pinned versions made at target/openai-similarity-venv when missing; `meteor` over the
# WordNet folder of GAVEL_WORDNET, else Debian's (apt-get install wordnet-base).
#   tests/openai-similarity/run.sh [PATH/TO/gavel]
set -eu
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
venv=$root/target/openai-similarity-venv
want="rapidfuzz==3.14.6 nltk==3.10.4 rouge-score==0.1.2"
if ! "$venv/bin/python" -c 'import importlib.metadata as m, sys; sys.exit((m.version("rapidfuzz"), m.version("nltk"), m.version("rouge-score")) != ("3.14.6", "3.10.4", "0.1.2"))' 2>/dev/null; then
    echo "== creating $venv with $want" >&2
    python3 -m venv "$venv"
    "$venv/bin/pip" install --quiet --disable-pip-version-check $want
fi
gavel=${1:-$root/target/debug/gavel}
[ -x "$gavel" ] || (cd "$root" && cargo build -p gavel --bin gavel)
wordnet=${GAVEL_WORDNET:-/usr/share/wordnet}
[ -f "$wordnet/index.noun" ] || { echo "no WordNet at $wordnet: apt-get install wordnet-base, or set GAVEL_WORDNET" >&2; exit 2; }
"$venv/bin/python" "$here/check.py" "$gavel" "$wordnet"
