"""gavel from Python: a suite loaded once, rows graded in-process.

>>> import gavel
>>> suite = gavel.Suite("examples/quickstart/suite.yaml")
>>> results = suite.grade([{"id": "a", "input": "...", "ground_truth": "AA123", "trajectory": ...}])
>>> results[0]["status"]

Each result is the dict of one line of the ``results.jsonl`` that ``gavel run`` writes for the
same rows: the same engine, sandbox and limits. The GIL is released while rows grade, so a
``Suite`` can be used from several threads at once; ``await suite.grade_async(rows)`` grades in
the event loop's default executor.

The reward functions RL trainers call are in :mod:`gavel.verl`, :mod:`gavel.trl` and
:mod:`gavel.openrlhf`; a Ray Data grader in :mod:`gavel.ray`.
"""

from __future__ import annotations

import asyncio
import functools
import json
import os
from collections.abc import Iterable, Mapping
from typing import Any, Union

from ._gavel import GradingError, RowsError, SuiteError, __version__
from ._gavel import Suite as _Suite

__all__ = ["Suite", "SuiteError", "RowsError", "GradingError", "Rows", "__version__"]

#: What :meth:`Suite.grade` accepts: row dicts (a list or any iterable), JSON Lines as bytes, or
#: the path of a JSON Lines file.
Rows = Union[Iterable[Mapping[str, Any]], bytes, str, "os.PathLike[str]"]


class Suite:
    """A suite loaded once, with every check ``gavel validate`` makes.

    :param path: the suite file (YAML).
    :param cache_dir: where compiled packs, the Python graders' interpreter and judge replies
        are kept; by default ``$GAVEL_CACHE_DIR``, else ``$XDG_CACHE_HOME/gavel``, else
        ``~/.cache/gavel`` (as the command line).
    :param workers: rows graded at once; by default the suite's ``concurrency``, else one per
        core.
    :raises SuiteError: the suite does not load; the message lists every mistake at its file,
        line and field, as ``gavel validate`` prints them.
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        cache_dir: str | os.PathLike[str] | None = None,
        workers: int | None = None,
    ) -> None:
        self._cache_dir = None if cache_dir is None else os.fspath(cache_dir)
        self._suite = _Suite(os.fspath(path), cache_dir=self._cache_dir, workers=workers)

    @property
    def name(self) -> str:
        """The suite's ``name``."""
        return self._suite.name

    @property
    def path(self) -> str:
        """The suite file's path, as given."""
        return os.fspath(self._suite.path)

    @property
    def has_reward(self) -> bool:
        """Whether the suite has a ``reward:``."""
        return self._suite.has_reward

    @property
    def workers(self) -> int:
        """Rows graded at once."""
        return self._suite.workers

    def grade_lines(
        self,
        rows: Rows,
        *,
        timeout: float | None = None,
        file: str | os.PathLike[str] | None = None,
        row: int = 0,
        line: int = 1,
    ) -> list[str]:
        """The ``results.jsonl`` lines of ``rows``, in row order, each without its newline.

        An invalid row is an error result, as ``gavel run --skip-invalid`` writes it, located in
        its file (``rows`` for rows given in memory) at its line.

        Rows given in memory may be a part of a longer dataset: ``file`` (where invalid rows are
        located), whose row ``row`` (from 0) is their first, at line ``line`` (from 1). A row
        without an id takes its line's index as its id, as in ``gavel run`` of the whole.

        :raises RowsError: the rows cannot be read at all (a file that cannot be opened, a row
            that is not a dict or not JSON).
        :raises GradingError: the pass stopped (a judge stopped answering, ``timeout`` seconds
            passed).
        :raises KeyboardInterrupt: Ctrl-C: no row was started after it, and the rows being
            graded finished first.
        """
        if isinstance(rows, (str, os.PathLike)):
            if (file, row, line) != (None, 0, 1):
                raise RowsError(
                    "file=, row= and line= place rows given in memory; the rows of the file "
                    f"{os.fspath(rows)} are numbered in it: leave them out"
                )
            lines = self._suite.grade_file(os.fspath(rows), timeout=timeout)
        else:
            place = {"file": None if file is None else os.fspath(file), "row": row, "line": line}
            lines = self._suite.grade_jsonl(json_lines(rows), timeout=timeout, **place)
        return lines.decode("utf-8").splitlines()

    def grade(self, rows: Rows, *, timeout: float | None = None) -> list[dict[str, Any]]:
        """The results of ``rows``: each line of :meth:`grade_lines` as a dict."""
        return [json.loads(line) for line in self.grade_lines(rows, timeout=timeout)]

    async def grade_async(
        self, rows: Rows, *, timeout: float | None = None
    ) -> list[dict[str, Any]]:
        """:meth:`grade` in the running loop's default executor (the GIL is released while rows
        grade, so other tasks and threads go on)."""
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(
            None, functools.partial(self.grade, rows, timeout=timeout)
        )

    def reward_request(
        self,
        queries: list[str],
        prompts: list[str] | None = None,
        labels: list[Any] | None = None,
        *,
        timeout: float | None = None,
    ) -> dict[str, Any]:
        """OpenRLHF's reward request graded as ``gavel serve``'s ``/openrlhf`` route grades it.

        One row per query: the prompt is its ``input``, the label its ``ground_truth`` (a label
        that is not text, as its JSON), and the query after its prompt the assistant's message.
        Answers ``{"rewards", "scores", "extra_logs"}`` as lists of floats, one per query:
        ``extra_logs`` holds each grader's scores and ``gavel_error`` (1 where the row has no
        reward, which is then 0).
        """
        request = {"query": list(queries)}
        if prompts is not None:
            request["prompts"] = list(prompts)
        if labels is not None:
            request["labels"] = list(labels)
        try:
            text = json.dumps(request, ensure_ascii=False, allow_nan=False, default=_plain)
        except (TypeError, ValueError) as e:
            raise RowsError(f"the request cannot be written as JSON: {e}") from None
        body = text.encode("utf-8")
        return json.loads(self._suite.reward_request(body, timeout=timeout))

    def __repr__(self) -> str:
        return f"gavel.Suite(name={self.name!r}, path={self.path!r})"

    def __reduce__(self) -> tuple[Any, ...]:
        # Sent to another process (Ray, multiprocessing) as its path: loaded again there.
        return (_load, (self.path, self._cache_dir, self.workers))


def _load(path: str, cache_dir: str | None, workers: int) -> Suite:
    return Suite(path, cache_dir=cache_dir, workers=workers)


def json_lines(rows: Iterable[Mapping[str, Any]] | bytes) -> bytes:
    """``rows`` as JSON Lines; bytes are taken as JSON Lines already."""
    if isinstance(rows, (bytes, bytearray, memoryview)):
        return bytes(rows)
    if isinstance(rows, Mapping):
        raise RowsError(
            "rows is one dict: give a list (or any iterable) of row dicts, JSON Lines as bytes, "
            "or the path of a JSON Lines file"
        )
    out = []
    for index, row in enumerate(rows):
        if not isinstance(row, Mapping):
            raise RowsError(
                f"row {index} is a {type(row).__name__}, not a dict: each row is one JSON "
                "object, as a line of a dataset"
            )
        try:
            out.append(json.dumps(row, ensure_ascii=False, allow_nan=False, default=_plain))
        except (TypeError, ValueError) as e:
            raise RowsError(f"row {index} cannot be written as JSON: {e}") from None
    return "\n".join(out).encode("utf-8") + b"\n" if out else b""


def _plain(value: Any) -> Any:
    """numpy's and torch's scalars and arrays (what trainers' batches hold) as plain values."""
    for method in ("tolist", "item"):
        if callable(getattr(value, method, None)):
            return getattr(value, method)()
    raise TypeError(f"a {type(value).__name__} is not JSON")
