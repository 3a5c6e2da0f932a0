"""gavel.ray.GavelGrader on a real local Ray cluster the test starts (a head that runs nothing and
two worker nodes of two CPUs each, one for an actor and one for the tasks that read): its results
are `gavel run`'s for the same rows, byte for byte, whatever the batch size and the blocks when
it grades gavel.ray.windows."""

from __future__ import annotations

import json
import math
import os
import shutil
from pathlib import Path

import pytest

# Ray resolves 127.0.0.1 to the machine's address unless told that this is a single-host
# cluster: every node and the driver then stay on the loopback address.
os.environ["RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"] = "0"
import ray  # noqa: E402
from ray.cluster_utils import Cluster  # noqa: E402

from conftest import SUITES, dataset, gavel_run, rows_of  # noqa: E402
from gavel import RowsError  # noqa: E402
from gavel.ray import WINDOW_ROWS, GavelGrader, windows  # noqa: E402


LOOPBACK = "127.0.0.1"


@pytest.fixture(scope="module")
def cluster():
    node = {"node_ip_address": LOOPBACK, "object_store_memory": 80 * 2**20}
    cluster = Cluster(initialize_head=True, head_node_args={**node, "num_cpus": 0})
    for _ in range(2):
        cluster.add_node(**node, num_cpus=2)
    ray.init(address=cluster.address, _node_ip_address=LOOPBACK, log_to_driver=False)
    context = ray.data.DataContext.get_current()
    context.execution_options.preserve_order = True
    yield cluster
    ray.shutdown()
    cluster.shutdown()


# A warm Python grader's instance serves a batch of rows in order, as in `gavel run` (a window of
# WINDOW_ROWS rows): its calls' fuel (in each grade's metadata) depends on the calls before them,
# so the suite with Python graders (three rows) is graded in one Ray batch of a window's size; the
# other in batches of two, across both workers.
@pytest.mark.parametrize("name,batch_size", [("python-graders", WINDOW_ROWS), ("quickstart", 2)])
def test_map_batches_grades_as_gavel_run(cluster, cache, expected, name, batch_size):
    rows = rows_of(dataset(SUITES[name]))
    graded = (
        ray.data.from_items([{"row": json.dumps(row)} for row in rows])
        .map_batches(
            GavelGrader,
            fn_constructor_args=(str(SUITES[name]),),
            fn_constructor_kwargs={"column": "row", "cache_dir": cache},
            concurrency=2,
            batch_size=batch_size,
        )
        .take_all()
    )
    assert [r["result"] for r in graded] == expected[name]
    assert [r["errored"] for r in graded] == ["error" in json.loads(line) for line in expected[name]]
    nodes = {node["NodeID"] for node in ray.nodes() if node["Resources"].get("CPU")}
    assert len(nodes) == 2


# Rows as Ray's columns: Arrow gives each row every field some row has (the quickstart's rows
# differ in their `expected` keys) and its trajectories as nested lists of structs.
@pytest.mark.parametrize("name,batch_size", [("python-graders", 64), ("quickstart", 2)])
def test_plain_columns_grade_as_gavel_run(cluster, cache, expected, name, batch_size):
    rows = rows_of(dataset(SUITES[name]))
    graded = (
        ray.data.from_items(rows)
        .map_batches(
            GavelGrader,
            fn_constructor_args=(str(SUITES[name]),),
            fn_constructor_kwargs={"column": None, "cache_dir": cache},
            concurrency=2,
            batch_size=batch_size,
            batch_format="pyarrow",
        )
        .take_all()
    )
    assert [r["result"] for r in graded] == expected[name]


def test_plain_columns_refuse_numpy_batches(cache):
    grader = GavelGrader(str(SUITES["capitals"]), column=None, cache_dir=cache)
    with pytest.raises(TypeError, match='batch_format="pyarrow"'):
        grader({"id": [1, 2]})


def test_read_text_lines_grade_as_gavel_run(cluster, cache, expected):
    path = dataset(SUITES["capitals"])
    from_text = (
        ray.data.read_text(str(path))
        .map_batches(
            GavelGrader,
            fn_constructor_args=(str(SUITES["capitals"]),),
            fn_constructor_kwargs={"cache_dir": cache},
            concurrency=2,
            batch_size=3,
        )
        .take_all()
    )
    assert [r["result"] for r in from_text] == expected["capitals"]
    rewards = [json.loads(line).get("reward") for line in expected["capitals"]]
    assert [None if math.isnan(r["reward"]) else r["reward"] for r in from_text] == rewards


# Five whole windows and a part, so that batches of windows of any size but one cut the dataset
# between windows, and a batch may end in the part.
LONG_ROWS = 5 * WINDOW_ROWS + 10


@pytest.fixture(scope="module")
def long(tmp_path_factory, cache):
    """The Python graders' suite over LONG_ROWS of its rows, every seventh without an id (it
    takes its line's index as its id): `plain.jsonl` holds one row a line, `spaced.jsonl` the
    same with blank lines among them (which move the ids of rows without one) and an invalid
    row, `uniform.jsonl` the rows each with an id. Each dataset with its `gavel run` results
    (invalid rows skipped)."""
    folder = tmp_path_factory.mktemp("long")
    source = SUITES["python-graders"].parent
    for program in source.glob("*.py"):
        shutil.copy(program, folder)
    examples = rows_of(dataset(SUITES["python-graders"]))
    lines = []
    uniform = []
    for i in range(LONG_ROWS):
        row = {"id": f"r{i}", **examples[i % len(examples)]}
        uniform.append(json.dumps(row))
        if i % 7 == 3:
            del row["id"]
        lines.append(json.dumps(row))
    spaced = [""]
    for i, line in enumerate(lines):
        spaced.append(line)
        if i % 40 == 5:
            spaced.append("  \t")
        if i == 70:
            spaced.append('{"id": "bad", "trajectory": 5}')
    suite = (source / "suite.yaml").read_text()
    runs = {}
    for name, text in [("plain", lines), ("spaced", spaced), ("uniform", uniform)]:
        (folder / f"{name}.jsonl").write_text("\n".join(text) + "\n")
        (folder / f"{name}.yaml").write_text(suite.replace("dataset.jsonl", f"{name}.jsonl"))
        runs[name] = gavel_run(folder / f"{name}.yaml", folder / f"out-{name}", "--skip-invalid")
    return folder, runs


def grade_windows(made, suite: Path, cache: str, batch_size: int) -> list[dict]:
    return made.map_batches(
        GavelGrader,
        fn_constructor_args=(str(suite),),
        fn_constructor_kwargs={"cache_dir": cache},
        concurrency=2,
        batch_size=batch_size,
    ).take_all()


# Batch sizes of windows: each window apart, batches cut between them, all in one batch.
@pytest.mark.parametrize("batch_size", [1, 4, 100])
def test_windows_of_a_file_grade_as_gavel_run(cluster, cache, long, batch_size):
    folder, runs = long
    made = windows(folder / "spaced.jsonl")
    graded = grade_windows(made, folder / "plain.yaml", cache, batch_size)
    assert [r["result"] for r in graded] == runs["spaced"]
    assert [r["position"] for r in graded] == list(range(len(runs["spaced"])))
    assert any('"error"' in line for line in runs["spaced"])


# A Ray dataset cut into blocks that do not line up with the windows, of JSON text or columns.
# Columns are written again as JSON in the order of Arrow's schema, which Ray makes the same
# for every block only where the rows have the same keys: their rows all have an id.
@pytest.mark.parametrize("column,name", [("text", "plain"), (None, "uniform")])
@pytest.mark.parametrize("batch_size", [10, 3])
def test_windows_of_a_ray_dataset_grade_as_gavel_run(
    cluster, cache, long, column, name, batch_size
):
    folder, runs = long
    rows = rows_of(folder / f"{name}.jsonl")
    items = [{"text": json.dumps(row)} for row in rows] if column else rows
    blocks = ray.data.from_items(items, override_num_blocks=7).materialize()
    assert blocks.num_blocks() == 7
    made = windows(blocks, column=column)
    assert made.count() == math.ceil(LONG_ROWS / WINDOW_ROWS)
    graded = grade_windows(made, folder / "plain.yaml", cache, batch_size)
    assert [r["result"] for r in graded] == runs[name]


def test_windows_of_row_dicts_grade_as_gavel_run(cluster, cache, long):
    folder, runs = long
    rows = rows_of(folder / "plain.jsonl")
    graded = grade_windows(windows(rows), folder / "plain.yaml", cache, 2)
    assert [r["result"] for r in graded] == runs["plain"]
    assert [json.loads(r["sample_id"]) for r in graded][3] == 3


# Windows handed to an actor out of order, or with a gap, are each graded at their place.
def test_windows_apart_grade_at_their_positions(cluster, cache, long):
    folder, runs = long
    made = windows(folder / "spaced.jsonl").take_all()
    batch = {name: [made[i][name] for i in (3, 0, 1)] for name in made[0]}
    graded = GavelGrader(str(folder / "plain.yaml"), cache_dir=cache)(batch)
    positions = [*range(3 * WINDOW_ROWS, 4 * WINDOW_ROWS), *range(2 * WINDOW_ROWS)]
    assert graded["position"] == positions
    assert graded["result"] == [runs["spaced"][p] for p in positions]


@pytest.mark.parametrize(
    "text,fault",
    [("", "row 1 is blank"), ('{"id":\n 1}', "row 1 holds a line break")],
)
def test_windows_refuse_a_text_that_is_not_one_row(cluster, text, fault):
    made = ray.data.from_items([{"text": '{"id": 0}'}, {"text": text}])
    with pytest.raises(RowsError, match=fault):
        windows(made)


def test_windows_refuse_what_is_not_rows():
    with pytest.raises(RowsError, match="not a dict"):
        windows({"id": 1})
