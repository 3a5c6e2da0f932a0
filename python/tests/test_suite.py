"""gavel.Suite: loaded once with `gavel validate`'s checks, rows graded as `gavel run` grades
them, from several threads, in an event loop, with the GIL released."""

from __future__ import annotations

import asyncio
import json
import pickle
import subprocess
import sys
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy
import pytest

import gavel
from conftest import CACHE, GAVEL, SUITES, dataset, rows_of


@pytest.fixture(scope="module")
def suites(cache: str) -> dict[str, gavel.Suite]:
    return {name: gavel.Suite(path, cache_dir=cache) for name, path in SUITES.items()}


@pytest.mark.parametrize("name", sorted(SUITES))
def test_a_list_of_rows_grades_to_gavel_runs_lines(name, suites, expected):
    rows = rows_of(dataset(SUITES[name]))
    assert suites[name].grade_lines(rows) == expected[name]
    assert suites[name].grade(rows) == [json.loads(line) for line in expected[name]]


@pytest.mark.parametrize("name", sorted(SUITES))
def test_a_jsonl_path_grades_to_gavel_runs_lines(name, suites, expected):
    path = dataset(SUITES[name])
    assert suites[name].grade_lines(path) == expected[name]
    assert suites[name].grade_lines(str(path)) == expected[name]


def test_an_iterable_of_rows_grades_as_the_list(suites, expected):
    rows = rows_of(dataset(SUITES["quickstart"]))
    assert suites["quickstart"].grade_lines(row for row in rows) == expected["quickstart"]
    assert suites["quickstart"].grade_lines(iter(rows)) == expected["quickstart"]


def test_no_rows_grade_to_no_results(suites):
    assert suites["capitals"].grade([]) == []


def suite_file(tmp_path: Path, text: str) -> Path:
    (tmp_path / "data.jsonl").write_text('{"id": 1, "input": "x"}\n')
    path = tmp_path / "suite.yaml"
    path.write_text(text)
    return path


BROKEN = """name: broken
dataset: data.jsonl
graders:
  answer:
    kind: tool
    function: contians
  other:
    kind: tool
    function: exact_match
    extractor: nowhere
"""


def test_a_suite_that_does_not_load_raises_gavel_validates_located_errors(tmp_path):
    path = suite_file(tmp_path, BROKEN)
    with pytest.raises(gavel.SuiteError) as raised:
        gavel.Suite(path, cache_dir=str(CACHE))
    message = str(raised.value)
    validated = subprocess.run(
        [str(GAVEL), "validate", str(path)], capture_output=True, text=True
    )
    assert validated.returncode == 2, validated.stderr
    errors = [line for line in validated.stderr.splitlines() if line.startswith("error: ")]
    assert len(errors) == 2, validated.stderr
    for line in errors:
        assert line in message.splitlines(), (line, message)
    # Located at the file and the line of each mistake.
    assert f"{path}:6" in message and f"{path}:10" in message, message
    assert "2 problems found" in message
    assert isinstance(raised.value, ValueError)


def test_a_missing_suite_names_its_file(tmp_path):
    missing = tmp_path / "nowhere.yaml"
    with pytest.raises(gavel.SuiteError, match=str(missing)):
        gavel.Suite(missing)


def test_rows_that_are_not_dicts_name_the_row(suites):
    with pytest.raises(gavel.RowsError, match="row 1 is a str, not a dict"):
        suites["capitals"].grade([{"id": 1}, "oops"])
    with pytest.raises(gavel.RowsError, match="rows is one dict"):
        suites["capitals"].grade({"id": 1})
    with pytest.raises(gavel.RowsError, match="row 0 cannot be written as JSON"):
        suites["capitals"].grade([{"id": 1, "score": float("nan")}])


def test_an_invalid_row_is_an_error_result_located_in_the_rows(suites):
    results = suites["capitals"].grade_lines(b'{"id": "ok", "input": "x"}\nnot json\n')
    assert len(results) == 2
    error = json.loads(results[1])["error"]
    assert error["message"].startswith("rows:2"), error


def test_rows_placed_in_a_longer_dataset_are_numbered_there(suites):
    # The second row, after a blank line, has no id: its line's index is its id.
    rows = b'not json\n\n{"input": "x"}\n'
    results = [json.loads(r) for r in suites["capitals"].grade_lines(
        rows, file="data.jsonl", row=128, line=131
    )]
    assert results[0]["error"]["message"].startswith("data.jsonl:131:"), results[0]
    assert results[1]["sample_id"] == 132
    with pytest.raises(gavel.RowsError, match="leave them out"):
        suites["capitals"].grade_lines(dataset(SUITES["capitals"]), row=3)


def test_a_jsonl_file_that_cannot_be_read_raises_naming_it(suites, tmp_path):
    missing = tmp_path / "missing.jsonl"
    with pytest.raises(gavel.RowsError, match=str(missing)):
        suites["capitals"].grade(missing)


def test_several_threads_grade_one_suite(suites, expected):
    suite = suites["python-graders"]
    rows = rows_of(dataset(SUITES["python-graders"]))
    with ThreadPoolExecutor(max_workers=4) as pool:
        answers = list(pool.map(lambda _: suite.grade_lines(rows), range(8)))
    assert answers == [expected["python-graders"]] * 8


def test_the_async_form_grades_concurrently(suites, expected):
    async def both():
        return await asyncio.gather(
            suites["quickstart"].grade_async(rows_of(dataset(SUITES["quickstart"]))),
            suites["capitals"].grade_async(dataset(SUITES["capitals"])),
        )

    quickstart, capitals = asyncio.run(both())
    assert quickstart == [json.loads(line) for line in expected["quickstart"]]
    assert capitals == [json.loads(line) for line in expected["capitals"]]


def test_other_python_threads_run_while_rows_grade(suites):
    # With a switch interval longer than the test, a thread holding the GIL keeps it until it
    # blocks: the counter moves during the grade only if the grade releases the GIL.
    rows = rows_of(dataset(SUITES["python-graders"])) * 4
    counter = [0]
    seen: dict[str, int] = {}
    done = threading.Event()

    def grade():
        seen["before"] = counter[0]
        suites["python-graders"].grade(rows)
        seen["after"] = counter[0]
        done.set()

    interval = sys.getswitchinterval()
    sys.setswitchinterval(1000.0)
    try:
        thread = threading.Thread(target=grade)
        thread.start()
        while not done.is_set():
            counter[0] += 1
            done.wait(0.001)
        thread.join()
    finally:
        sys.setswitchinterval(interval)
    assert seen["after"] > seen["before"], seen


def test_a_timeout_that_passes_stops_the_pass(suites):
    rows = rows_of(dataset(SUITES["python-graders"])) * 50
    with pytest.raises(gavel.GradingError, match="timeout"):
        suites["python-graders"].grade(rows, timeout=1e-9)
    with pytest.raises(ValueError, match="not a positive number of seconds"):
        suites["capitals"].grade([], timeout=-1)


def test_the_suite_tells_what_it_is(suites):
    capitals = suites["capitals"]
    assert capitals.name == "capitals"
    assert capitals.has_reward and not suites["quickstart"].has_reward
    assert capitals.path == str(SUITES["capitals"])
    assert capitals.workers >= 1
    assert "capitals" in repr(capitals)


def test_a_suite_pickles_as_its_path_and_grades_the_same(suites, expected):
    # Ray and multiprocessing send a Suite to other processes: it is loaded again there.
    copy = pickle.loads(pickle.dumps(suites["capitals"]))
    assert copy.path == suites["capitals"].path and copy.workers == suites["capitals"].workers
    assert copy.grade_lines(dataset(SUITES["capitals"])) == expected["capitals"]


def test_numpy_values_in_rows_are_written_as_json(suites):
    # Trainers' batches hold numpy scalars and arrays.
    row = {
        "id": numpy.int64(7),
        "input": "Q",
        "ground_truth": "Paris",
        "tags": numpy.array(["a", "b"]),
        "trajectory": [
            {"role": "user", "content": "Q"},
            {"role": "assistant", "content": "Paris"},
        ],
    }
    graded = suites["capitals"].grade([row])
    assert graded[0]["sample_id"] == 7 and graded[0]["reward"] == 1.0
