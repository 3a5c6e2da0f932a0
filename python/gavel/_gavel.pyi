"""The extension module: see ``gavel.Suite`` for the documented interface."""

from os import PathLike
from pathlib import Path

__version__: str
#: Consecutive rows graded as one window (a warm Python grader's instance serves them in order).
WINDOW_ROWS: int

def file_windows(path: str | PathLike[str]) -> list[tuple[int, int, bytes]]: ...

class SuiteError(ValueError):
    """A suite that does not load: every mistake at its file, line and field."""

class RowsError(ValueError):
    """Rows that cannot be read at all."""

class GradingError(RuntimeError):
    """A pass that stopped before every row was graded."""

class Suite:
    def __init__(
        self,
        path: str | PathLike[str],
        *,
        cache_dir: str | PathLike[str] | None = None,
        workers: int | None = None,
    ) -> None: ...
    @property
    def name(self) -> str: ...
    @property
    def path(self) -> Path: ...
    @property
    def has_reward(self) -> bool: ...
    @property
    def workers(self) -> int: ...
    def grade_jsonl(
        self,
        rows: bytes,
        *,
        timeout: float | None = None,
        file: str | PathLike[str] | None = None,
        row: int = 0,
        line: int = 1,
    ) -> bytes: ...
    def grade_file(self, path: str | PathLike[str], *, timeout: float | None = None) -> bytes: ...
    def reward_request(self, request: bytes, *, timeout: float | None = None) -> bytes: ...
