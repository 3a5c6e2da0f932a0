"""Ray Data: a dataset graded on a cluster, each row's result the line ``gavel run`` writes.

::

    import ray
    from gavel.ray import GavelGrader, windows

    graded = windows("data.jsonl").map_batches(
        GavelGrader,
        fn_constructor_args=("suite.yaml",),
        concurrency=4,          # actors, each with the suite loaded once
    )

``gavel run`` grades its rows in windows of 256 consecutive rows (``WINDOW_ROWS``): a warm Python
grader's instance serves the rows of one window in order, so a grade's ``fuel_used`` (and the
memory it reports) depends on which rows of its window ran before it, and a row without an id
takes its line's index as its id. :func:`windows` makes a dataset of one Ray row per window,
which Ray never splits: whatever ``batch_size`` and however Ray cuts its blocks, each window is
graded whole, numbered as in the whole dataset, and each output row is then a row's result as
``gavel run`` writes it for the same rows, byte for byte.

Each output row has ``position`` (the row's position in the dataset, from 0), ``result`` (the
row's ``results.jsonl`` line), and read from it: ``sample_id`` (as JSON text), ``reward`` (NaN
where there is none) and ``errored`` (whether the result has an ``error``). With
``DataContext.execution_options.preserve_order`` the rows come out in order; else sort them by
``position``.

:class:`GavelGrader` also grades a dataset of rows rather than windows, each batch as a run of
its own: see its documentation for when that equals ``gavel run``.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

from . import RowsError, Suite, json_lines
from ._gavel import WINDOW_ROWS, file_windows

__all__ = ["GavelGrader", "WINDOW_ROWS", "windows"]

#: The columns of :func:`windows`'s rows: the window's first row's position and line, the file
#: its rows are located in, and its rows' text (JSON Lines, with the blank lines between them).
WINDOW_COLUMNS = ("first_row", "first_line", "file", "rows")

#: What rows given in memory are located in, as :meth:`gavel.Suite.grade` names them.
ROWS_FILE = "rows"


def windows(rows: Any, *, column: str | None = "text") -> Any:
    """A Ray dataset of one row per window of ``rows`` (:data:`WINDOW_COLUMNS`), for
    :class:`GavelGrader`.

    ``rows`` is one of:

    - the path of a JSON Lines file, read here, by the driver, as ``gavel run`` reads a dataset
      (blank lines skipped but counted, invalid rows located at the path as given and their
      line);
    - an iterable of row dicts (a list), each as a line of a file of those rows;
    - a Ray dataset, read here in the order Ray's iteration gives its rows (set
      ``preserve_order`` for the dataset's own), each row the JSON text of its column
      ``column`` (``"text"``, what ``read_text`` makes), or with ``column=None`` made of its
      columns, as :class:`GavelGrader` reads them. Each is one line of a file of those rows:
      ``read_text`` has dropped the file's blank lines, so a row without an id takes its
      position among the rows as its id, where ``gavel run`` on a file with blank lines would
      take its line's index. A row of columns is written again as JSON, its keys in the order
      of Arrow's columns, which Ray makes the same for every block only when the rows have the
      same keys: where that order is not the file's, a grade's ``fuel_used`` (which counts the
      reading of the row) may differ from ``gavel run``'s of the file.

    The driver reads the rows once and holds their text until Ray has stored the windows.
    """
    import ray

    if isinstance(rows, (str, os.PathLike)):
        path = os.fspath(rows)
        made = [
            {"first_row": row, "first_line": line, "file": path, "rows": text}
            for row, line, text in file_windows(path)
        ]
    elif isinstance(rows, ray.data.Dataset):
        made = list(_group(_dataset_lines(rows, column)))
    elif isinstance(rows, (Mapping, bytes, bytearray, memoryview)) or not isinstance(
        rows, Iterable
    ):
        raise RowsError(
            f"windows() takes the path of a JSON Lines file, a list (or any iterable) of row "
            f"dicts or a Ray dataset, not a {type(rows).__name__}"
        )
    else:
        made = list(_group(_split(json_lines(rows))))
    return ray.data.from_items(made)


def _dataset_lines(dataset: Any, column: str | None) -> Iterator[bytes]:
    """Each row of a Ray dataset as a line of JSON Lines, in the order of Ray's iteration."""
    position = 0
    for batch in dataset.iter_batches(batch_size=WINDOW_ROWS, batch_format="pyarrow"):
        if column is None:
            texts = _split(json_lines(_columns(batch)))
        else:
            texts = [_line(value, position + i) for i, value in enumerate(_texts(batch, column))]
        position += len(texts)
        yield from texts


def _split(body: bytes) -> list[bytes]:
    """JSON Lines (as :func:`gavel.json_lines` writes them, each row on one line) as its lines."""
    return [line + b"\n" for line in body.split(b"\n")[:-1]]


def _group(lines: Iterable[bytes]) -> Iterator[dict[str, Any]]:
    """Rows, one line each (none blank), in windows numbered as a file of them, from line 1."""
    window: list[bytes] = []
    first = 0
    for line in lines:
        window.append(line)
        if len(window) == WINDOW_ROWS:
            yield _window(first, window)
            first += len(window)
            window = []
    if window:
        yield _window(first, window)


def _window(first: int, lines: list[bytes]) -> dict[str, Any]:
    return {"first_row": first, "first_line": first + 1, "file": ROWS_FILE, "rows": b"".join(lines)}


def _line(value: Any, position: int) -> bytes:
    """A row's JSON text as one line of JSON Lines: refused when it would be none, or several."""
    text = _text(value).rstrip("\r\n")
    if not text.strip():
        raise RowsError(
            f"row {position} is blank: each row is one JSON object (drop blank rows, e.g. with "
            "Dataset.filter, or read the file with read_text, which drops them)"
        )
    if "\n" in text:
        raise RowsError(
            f"row {position} holds a line break: each row is one JSON object on one line, as in "
            "JSON Lines (write it with json.dumps, without indent)"
        )
    return text.encode("utf-8") + b"\n"


class GavelGrader:
    """``map_batches``'s callable class: ``GavelGrader(suite, column="text", cache_dir=None,
    workers=None, timeout=None)``, one suite per actor.

    Given :func:`windows`'s rows, each window is graded whole and gives one output row per row
    of the dataset, equal to ``gavel run``'s for any ``batch_size``: consecutive windows of a
    batch are graded in one pass, as ``gavel run`` grades them.

    Given a dataset of rows instead, each row is the JSON text in the column ``column``
    (``"text"``, what ``read_text`` makes), or with ``column=None`` made of the batch's
    columns, as ``from_items`` of row dicts or ``read_json`` give them; ``map_batches`` must
    then be given ``batch_format="pyarrow"``, whose values are the rows' own (numpy's and
    pandas' batches turn the integers of a column that some row lacks into floats, which a
    row's integer fields refuse). Arrow gives every row each field some row has, as null where
    the row had none: those nulls are left out, so that the row is read as it was written.
    Each batch is then graded as a run of its own rows: a row without an id takes its index in
    the batch as its id, and a warm Python grader's instance serves the batch's rows, so
    ``fuel_used`` equals ``gavel run``'s only where every batch is one of its windows (Ray's
    blocks lining up with them and ``batch_size=256``). Scores are equal unless the grader
    keeps state between calls; the output rows have no ``position``.
    """

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
        if set(_names(batch)) == set(WINDOW_COLUMNS):
            return self._windows(batch)
        if self.column is None:
            body = json_lines(_columns(batch))
        else:
            body = b"".join(
                text.rstrip("\n").encode("utf-8") + b"\n" for text in _texts(batch, self.column)
            )
        return _outputs(self.suite.grade_lines(body, timeout=self.timeout))

    def _windows(self, batch: Any) -> dict[str, list[Any]]:
        """The results of a batch of windows, one output row per row, each at its position."""
        found = zip(*(_values(batch, name) for name in WINDOW_COLUMNS))
        lines: list[str] = []
        positions: list[int] = []
        for first_row, first_line, file, text in _passes(found):
            graded_lines = self.suite.grade_lines(
                text, timeout=self.timeout, file=file, row=first_row, line=first_line
            )
            lines.extend(graded_lines)
            positions.extend(range(first_row, first_row + len(graded_lines)))
        return {"position": positions, **_outputs(lines)}


def _passes(found: Iterable[tuple[Any, ...]]) -> Iterator[tuple[int, int, str, bytes]]:
    """Windows joined into passes: each window that follows the one before it in its file (a
    whole window before it) is graded in the same pass, with the blank lines between them,
    as ``gavel run``'s pass grades them; any other starts a pass."""
    start: tuple[int, int, str] | None = None
    text = bytearray()
    next_row = next_line = 0
    for first_row, first_line, file, rows in found:
        first_row, first_line, file, rows = int(first_row), int(first_line), str(file), bytes(rows)
        follows = start is not None and (file, first_row) == (start[2], next_row)
        if follows and first_line >= next_line:
            text += b"\n" * (first_line - next_line)
        else:
            if start is not None:
                yield (*start, bytes(text))
            start, text = (first_row, first_line, file), bytearray()
        text += rows
        next_row, next_line = first_row + WINDOW_ROWS, first_line + rows.count(b"\n")
    if start is not None:
        yield (*start, bytes(text))


def _outputs(lines: list[str]) -> dict[str, list[Any]]:
    results = [json.loads(line) for line in lines]
    return {
        "result": lines,
        "sample_id": [json.dumps(r.get("sample_id"), ensure_ascii=False) for r in results],
        "errored": ["error" in r for r in results],
        "reward": [_reward(r) for r in results],
    }


def _names(batch: Any) -> list[str]:
    """The column names of a batch of any of Ray's formats (a dict, an Arrow table, pandas)."""
    names = getattr(batch, "column_names", None)
    return list(batch) if names is None else list(names)


def _values(batch: Any, name: str) -> list[Any]:
    values = batch[name]
    to_pylist = getattr(values, "to_pylist", None)
    return to_pylist() if callable(to_pylist) else list(values)


def _texts(batch: Any, column: str) -> list[str]:
    """The JSON texts of a batch's column."""
    if column not in _names(batch):
        raise KeyError(
            f"the batch has no column {column!r} (it has {', '.join(_names(batch))}): give "
            "column= the name of the column holding each row's JSON text, or column=None "
            "for rows made of the batch's columns"
        )
    return [_text(value) for value in _values(batch, column)]


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
