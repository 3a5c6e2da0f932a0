"""gavel.ray.GavelGrader on a real local Ray cluster the test starts (a head that runs nothing and
two worker nodes of two CPUs each, one for an actor and one for the tasks that read): its results
are `gavel run`'s for the same rows."""

from __future__ import annotations

import json
import math
import os

import pytest

# Ray resolves 127.0.0.1 to the machine's address unless told that this is a single-host
# cluster: every node and the driver then stay on the loopback address.
os.environ["RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"] = "0"
import ray  # noqa: E402
from ray.cluster_utils import Cluster  # noqa: E402

from conftest import SUITES, dataset, rows_of  # noqa: E402
from gavel.ray import GavelGrader  # noqa: E402


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


# A warm Python grader's instance serves a batch of rows in order, as in `gavel run` (64 rows):
# its calls' fuel (in each grade's metadata) depends on the calls before them, so the suite with
# Python graders is graded in one batch; the other in batches of two, across both workers.
@pytest.mark.parametrize("name,batch_size", [("python-graders", 64), ("quickstart", 2)])
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
