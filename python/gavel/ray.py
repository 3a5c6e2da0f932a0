"""A Ray Data grader: an actor class holding a suite loaded once, for ``map_batches``.

::

    import ray
    from gavel.ray import GavelGrader

    results = ray.data.read_text("data.jsonl").map_batches(
        GavelGrader,
        fn_constructor_args=("suite.yaml",),
        concurrency=4,          # actors, each with the suite loaded once
        batch_size=64,
    )

Each actor loads the suite when it starts (``gavel.Suite``), then grades each batch it is handed
in one pass. Each output row has ``result``, the row's ``results.jsonl`` line as ``gavel run``
writes it, and read from it: ``sample_id`` (as JSON text), ``reward`` (NaN where there is none)
and ``errored`` (whether the result has an ``error``).

Each row is the JSON text in the column ``column`` (``"text"``, what ``read_text`` makes): the
dataset's lines as they are. With ``column=None`` each row is instead made of the batch's columns,
as ``from_items`` of row dicts or ``read_json`` give them; ``map_batches`` must then be given
``batch_format="pyarrow"``, whose values are the rows' own (numpy's and pandas' batches turn the
integers of a column that some row lacks into floats, which a row's integer fields refuse). Ray's
Arrow tables give every row each field some row has, as null where the row had none: those nulls
are left out, so that the row is read as it was written (gavel reads a null field as a missing
one).

A warm Python grader's instance serves the rows of one batch in order, as ``gavel run``'s serves
64: with ``batch_size=64`` the batches are ``gavel run``'s, else a grade's ``fuel_used`` (which
counts what the instance ran before) may differ; scores do not, unless the grader keeps state
between calls.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Mapping
from typing import Any

from . import Suite, json_lines

__all__ = ["GavelGrader"]


class GavelGrader:
    """``map_batches``'s callable class: ``GavelGrader(suite, column="text", cache_dir=None,
    workers=None, timeout=None)``, one suite per actor; ``column`` holds each row's JSON
    text, or is ``None`` for rows made of the batch's columns (with ``batch_format="pyarrow"``)."""

    def __init__(
        self,
        suite: str | os.PathLike[str],
        *,
        column: str | None = "text",
        cache_dir: str | os.PathLike[str] | None = None,
        workers: int | None = None,
        timeout: float | None = None,
    ) -> None:
        self.suite = Suite(suite, cache_dir=cache_dir, workers=workers)
        self.column = column
        self.timeout = timeout

    def __call__(self, batch: Any) -> dict[str, list[Any]]:
        if self.column is None:
            body = json_lines(_columns(batch))
        else:
            body = self._texts(batch)
        lines = self.suite.grade_lines(body, timeout=self.timeout)
        results = [json.loads(line) for line in lines]
        return {
            "result": lines,
            "sample_id": [json.dumps(r.get("sample_id"), ensure_ascii=False) for r in results],
            "errored": ["error" in r for r in results],
            "reward": [_reward(r) for r in results],
        }

    def _texts(self, batch: Mapping[str, Any]) -> bytes:
        """The rows of the batch's column of JSON texts, as JSON Lines."""
        if self.column not in batch:
            raise KeyError(
                f"the batch has no column {self.column!r} (it has {', '.join(batch)}): give "
                "column= the name of the column holding each row's JSON text, or column=None "
                "for rows made of the batch's columns"
            )
        texts = [_text(value) for value in batch[self.column]]
        return "".join(text.rstrip("\n") + "\n" for text in texts).encode("utf-8")


def _columns(batch: Any) -> list[Any]:
    """The rows of a batch of Ray's columns (a pyarrow Table), each without the nulls Arrow gave
    it for the fields it lacked."""
    to_pylist = getattr(batch, "to_pylist", None)
    if not callable(to_pylist):
        raise TypeError(
            f"with column=None the batch must be a pyarrow Table, not a {type(batch).__name__}: "
            'give map_batches batch_format="pyarrow" (numpy\'s and pandas\' batches turn the '
            "integers of a column that some row lacks into floats)"
        )
    return [_without_nulls(row) for row in to_pylist()]


def _without_nulls(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _without_nulls(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [_without_nulls(v) for v in value]
    return value


def _text(value: Any) -> str:
    return value.decode("utf-8") if isinstance(value, bytes) else str(value)


def _reward(result: Mapping[str, Any]) -> float:
    reward = result.get("reward")
    return float(reward) if isinstance(reward, (int, float)) else math.nan
