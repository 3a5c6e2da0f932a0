"""Shared by the tests: the repository's examples, the `gavel` binary the workspace built (what
the package's results are compared with) and the cache folder that holds the Python graders'
interpreter (tests/build-python-interpreter.sh builds it there)."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DATA = Path(__file__).resolve().parent / "data"
EXAMPLES = ROOT / "examples"
GAVEL = Path(os.environ.get("GAVEL_BIN", ROOT / "target" / "debug" / "gavel"))
CACHE = Path(os.environ.get("GAVEL_TEST_CACHE", ROOT / "target" / "tmp" / "python-interpreter"))

#: Suites whose results the package must reproduce: built-ins and a WebAssembly pack
#: (quickstart), users' Python graders of each tool (python-graders), a reward (capitals).
SUITES = {
    "quickstart": EXAMPLES / "quickstart" / "suite.yaml",
    "python-graders": EXAMPLES / "python-graders" / "suite.yaml",
    "capitals": DATA / "capitals" / "suite.yaml",
}


def dataset(suite: Path) -> Path:
    """The dataset file a suite names (each of SUITES names one beside it)."""
    for line in suite.read_text().splitlines():
        if line.startswith("dataset:"):
            return suite.parent / line.split(":", 1)[1].strip()
    raise AssertionError(f"{suite} names no dataset")


def rows_of(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def gavel_run(suite: Path, out: Path, *options: str) -> list[str]:
    """The `results.jsonl` lines `gavel run` writes for `suite`, given `options` besides."""
    assert GAVEL.is_file(), f"{GAVEL} is missing: run `cargo build -p gavel` (or set GAVEL_BIN)"
    done = subprocess.run(
        [str(GAVEL), "run", str(suite), "-o", str(out), "--cache-dir", str(CACHE), "-q", *options],
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
    )
    # 0: passed, 1: the gate failed; both graded every row.
    assert done.returncode in (0, 1), done.stderr
    return (out / "results.jsonl").read_text().splitlines()


@pytest.fixture(scope="session")
def cache() -> str:
    CACHE.mkdir(parents=True, exist_ok=True)
    return str(CACHE)


@pytest.fixture(scope="session")
def expected(tmp_path_factory: pytest.TempPathFactory, cache: str) -> dict[str, list[str]]:
    """Each of SUITES's `results.jsonl` lines, from `gavel run`."""
    out = tmp_path_factory.mktemp("runs")
    return {name: gavel_run(path, out / name) for name, path in SUITES.items()}
