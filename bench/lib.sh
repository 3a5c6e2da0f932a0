# Shared steps of the benchmark scripts, sourced with `here` (bench/), `root` and `seed` set.

# build_bins PROFILE: builds gavel and the bench tools; sets `bin` to their folder.
build_bins() {
    local profile=$1 flags=()
    [ "$profile" = release ] && flags=(--release)
    echo "== building gavel and the bench tools ($profile)" >&2
    # The whole workspace, so that features unify as in `cargo test --workspace` and nothing
    # rebuilds.
    cargo build --quiet "${flags[@]}" --manifest-path "$root/Cargo.toml" --workspace --bins
    local target_dir
    target_dir=$(cargo metadata --format-version 1 --no-deps --manifest-path "$root/Cargo.toml" \
        | python3 -c 'import json, sys; print(json.load(sys.stdin)["target_directory"])')
    bin="$target_dir/$profile"
}

# ensure_venv: bench/.venv with the peers at the measured versions; sets `venv`.
ensure_venv() {
    venv="$here/.venv"
    local want="letta-evals==0.26.0 evaldeck==0.1.5"
    if ! "$venv/bin/python" - <<'PY' 2>/dev/null
import importlib.metadata as m, sys
sys.exit(0 if (m.version("letta-evals"), m.version("evaldeck")) == ("0.26.0", "0.1.5") else 1)
PY
    then
        echo "== creating $venv with $want" >&2
        python3 -m venv "$venv"
        "$venv/bin/pip" install --quiet $want
    fi
}

# generate DIR SAMPLES PARTS: the workload, reused while its parameters match; rows depend only
# on (seed, index), so the first P rows of every workload with the same seed are the same runs.
generate() {
    local dir=$1 n=$2 parts=$3 stamp
    stamp="$n $seed $parts $(sha256sum "$bin/bench-gen" | cut -c1-16)"
    if [ "$(cat "$dir/.params" 2>/dev/null)" != "$stamp" ]; then
        echo "== generating $n samples ($parts) in $dir" >&2
        rm -rf "$dir"
        "$bin/bench-gen" "$dir" "$n" --seed "$seed" --parts "$parts"
        echo "$stamp" > "$dir/.params"
    fi
}
