"""Plain Python functions as a gavel grader pack.

This module is the glue between your functions and the WIT interface `gavel:grader/pack@0.1.0`
(`wit/grader.wit`). Copy it next to your `app.py` unchanged; `app.py` registers its functions
with a `PackBuilder` and exposes `Pack = builder.component()`, the class componentize-py exports.

The records your functions receive are the classes componentize-py generates from the WIT
(`wit_world.imports.types`): `Sample`, `Trajectory`, the `Event_*` cases and so on. The helpers
below read them the way gavel's built-in extractors do.
"""

import json
import sys
import traceback
from typing import Any, Callable, Iterator, List, Optional

from componentize_py_types import Err
from wit_world import exports
from wit_world.imports import types

__all__ = [
    "PackBuilder",
    "GradeError",
    "passed",
    "failed",
    "scored",
    "skipped",
    "text",
    "events",
    "assistant_texts",
    "last_assistant",
    "final_output",
    "tool_calls",
    "tool_returns",
    "step_count",
    "total_tokens",
    "ground_truth",
    "sample_id",
    "expected_block",
    "metadata",
]


class GradeError(Exception):
    """Raise it to fail the call with a message: the grade becomes `error` with the reason
    `guest returned error: <message>`."""


# ---------------------------------------------------------------------------------------------
# Grades

def scored(
    score: float,
    rationale: str,
    *,
    status: Optional[str] = None,
    metadata: Optional[dict] = None,
    expected: Any = None,
    actual: Any = None,
) -> types.Grade:
    """A grade with `score` in [0, 1]. `status` is "pass", "fail", "error" or "skip"; without it
    gavel derives it (pass at 1.0, fail below). `metadata` is a dict; `expected` and `actual` are
    any JSON values (None leaves them out)."""
    return types.Grade(
        score=float(score),
        status=None if status is None else types.Status[status.upper()],
        rationale=rationale,
        metadata=None if metadata is None else json.dumps(metadata),
        expected=None if expected is None else json.dumps(expected),
        actual=None if actual is None else json.dumps(actual),
    )


def passed(rationale: str, **extra: Any) -> types.Grade:
    return scored(1.0, rationale, status="pass", **extra)


def failed(rationale: str, **extra: Any) -> types.Grade:
    return scored(0.0, rationale, status="fail", **extra)


def skipped(rationale: str, **extra: Any) -> types.Grade:
    return scored(0.0, rationale, status="skip", **extra)


# ---------------------------------------------------------------------------------------------
# Reading a sample and its trajectory

def text(content: types.Content) -> str:
    """A message's text: its parts joined by a space, as gavel flattens content parts."""
    if isinstance(content, types.Content_Text):
        return content.value
    return " ".join(content.value)


def events(trajectory: types.Trajectory) -> Iterator[types.Event]:
    """Every event of the run, across turns, in order."""
    for turn in trajectory.turns:
        yield from turn


def assistant_texts(trajectory: types.Trajectory) -> List[str]:
    """The assistant messages, flattened, in order."""
    return [text(e.value) for e in events(trajectory) if isinstance(e, types.Event_Assistant)]


def last_assistant(trajectory: types.Trajectory) -> str:
    """The built-in extractor `last_assistant`: the last assistant message, or ""."""
    messages = assistant_texts(trajectory)
    return messages[-1] if messages else ""


def final_output(trajectory: types.Trajectory) -> Optional[str]:
    """The recorded final output, else the last assistant message, else None (evaldeck's
    `trace.output`)."""
    if trajectory.output is not None:
        return trajectory.output
    messages = assistant_texts(trajectory)
    return messages[-1] if messages else None


def tool_calls(trajectory: types.Trajectory, name: Optional[str] = None) -> List[types.ToolCall]:
    """The tool calls in order (`.id`, `.name`, `.arguments` as recorded JSON text, `.failed`),
    only those of the tool `name` when given."""
    return [
        e.value
        for e in events(trajectory)
        if isinstance(e, types.Event_ToolCall) and (name is None or e.value.name == name)
    ]


def tool_returns(trajectory: types.Trajectory) -> List[types.ToolReturn]:
    """The tool returns in order (`.call_id`, `.content`, `.status`: `types.ToolStatus`)."""
    return [e.value for e in events(trajectory) if isinstance(e, types.Event_ToolReturn)]


def step_count(trajectory: types.Trajectory) -> int:
    """evaldeck's step count: model calls, tool calls, reasoning and human input."""
    steps = (types.Event_LlmCall, types.Event_ToolCall, types.Event_Reasoning, types.Event_HumanInput)
    return sum(1 for e in events(trajectory) if isinstance(e, steps))


def total_tokens(trajectory: types.Trajectory) -> int:
    """evaldeck's `total_tokens`: the model calls' totals, or the run's usage when no call
    records any."""
    used = sum(
        e.value.tokens.total_tokens
        for e in events(trajectory)
        if isinstance(e, types.Event_LlmCall) and e.value.tokens is not None
    )
    if used == 0 and trajectory.usage is not None:
        return trajectory.usage.total_tokens
    return used


def ground_truth(sample: types.Sample) -> Optional[str]:
    """The ground truth when it is one text; None when missing or given per turn."""
    if isinstance(sample.ground_truth, types.Texts_One):
        return sample.ground_truth.value
    return None


def sample_id(sample: types.Sample) -> Any:
    """The row's id: an int or a str."""
    return sample.id.value


def expected_block(sample: types.Sample) -> dict:
    """The evaldeck `expected:` block as a dict ({} when the row has none)."""
    return json.loads(sample.expected) if sample.expected is not None else {}


def metadata(sample: types.Sample) -> dict:
    """The row's `metadata` as a dict."""
    return json.loads(sample.metadata)


# ---------------------------------------------------------------------------------------------
# Registration

def _no_config(config: dict) -> None:
    if config:
        raise ValueError(f"takes no config, got: {', '.join(sorted(config))}")
    return None


class _Function:
    def __init__(self, fn: Callable, kind: types.FunctionKind, needs_ground_truth: bool,
                 config: Optional[Callable[[dict], Any]]):
        self.fn = fn
        self.kind = kind
        self.needs_ground_truth = needs_ground_truth
        self.parse_config = config or _no_config
        doc = (fn.__doc__ or "").strip().split("\n\n")[0]
        self.description = " ".join(line.strip() for line in doc.splitlines())

    def config(self, text: str) -> Any:
        value = json.loads(text)
        if not isinstance(value, dict):
            raise ValueError("the config must be a mapping")
        return self.parse_config(value)


class PackBuilder:
    """Collects a pack's graders and extractors.

        pack = PackBuilder("my-pack", "0.1.0")

        @pack.grader(needs_ground_truth=True)
        def exact(sample, trajectory, submission, config):
            '''The submission equals the ground truth.'''
            ...

        Pack = pack.component()

    A grader is `fn(sample, trajectory, submission, config) -> types.Grade` (build it with
    `passed`, `failed`, `scored`, `skipped`). An extractor is
    `fn(sample, trajectory, config) -> str | None` (None: nothing to extract). The function's
    name is the name suites use, the first paragraph of its docstring is its description.

    `config` is a function from the suite's `config:` (a dict) to whatever your function
    receives; it raises ValueError, KeyError or TypeError to refuse the config, and gavel stops
    before grading with its message. Without it, the function takes no config.

    An exception raised by your function becomes an `error` grade for that sample (other
    samples are graded): `guest returned error: ZeroDivisionError: division by zero`, with the
    traceback at the end of the grade's `metadata.sandbox.stderr`.
    """

    def __init__(self, name: str, version: str):
        self.name = name
        self.version = version
        self.functions: dict = {}

    def grader(self, fn: Optional[Callable] = None, *, needs_ground_truth: bool = False,
               config: Optional[Callable[[dict], Any]] = None):
        return self._register(fn, types.FunctionKind.GRADER, needs_ground_truth, config)

    def extractor(self, fn: Optional[Callable] = None, *, needs_ground_truth: bool = False,
                  config: Optional[Callable[[dict], Any]] = None):
        return self._register(fn, types.FunctionKind.EXTRACTOR, needs_ground_truth, config)

    def _register(self, fn, kind, needs_ground_truth, config):
        def register(fn: Callable) -> Callable:
            if fn.__name__ in self.functions:
                raise ValueError(f"`{fn.__name__}` is registered twice")
            self.functions[fn.__name__] = _Function(fn, kind, needs_ground_truth, config)
            return fn
        return register(fn) if fn is not None else register

    def _function(self, name: str, kind: types.FunctionKind) -> _Function:
        function = self.functions.get(name)
        if function is None or function.kind != kind:
            names = ", ".join(n for n, f in self.functions.items() if f.kind == kind) or "none"
            what = "grader" if kind == types.FunctionKind.GRADER else "extractor"
            raise Err(f"no {what} named `{name}`; this pack's {what}s: {names}")
        return function

    def component(self) -> type:
        """The class componentize-py exports for `gavel:grader/pack`."""
        builder = self

        class Pack(exports.Pack):
            def describe(self) -> types.PackInfo:
                return types.PackInfo(
                    name=builder.name,
                    version=builder.version,
                    functions=[
                        types.FunctionInfo(
                            name=name,
                            kind=f.kind,
                            description=f.description,
                            needs_ground_truth=f.needs_ground_truth,
                        )
                        for name, f in builder.functions.items()
                    ],
                )

            def check_config(self, name: str, config: str) -> None:
                function = builder.functions.get(name)
                if function is None:
                    raise Err(f"no function named `{name}`")
                try:
                    function.config(config)
                except (ValueError, KeyError, TypeError) as e:
                    raise Err(_message(e))

            def grade(self, name, sample, trajectory, submission, config) -> types.Grade:
                function = builder._function(name, types.FunctionKind.GRADER)
                return _guarded(lambda: function.fn(
                    sample, trajectory, submission, function.config(config)))

            def extract(self, name, sample, trajectory, config) -> Optional[str]:
                function = builder._function(name, types.FunctionKind.EXTRACTOR)
                return _guarded(lambda: function.fn(sample, trajectory, function.config(config)))

        return Pack


def _message(error: BaseException) -> str:
    # A KeyError's str() is the key's repr, which reads badly alone.
    if isinstance(error, KeyError):
        return f"missing key {error}"
    return str(error)


def _guarded(call: Callable[[], Any]) -> Any:
    try:
        return call()
    except Err:
        raise
    except GradeError as e:
        raise Err(str(e))
    except Exception as e:
        # The traceback goes to stderr, which gavel keeps in the grade's metadata.
        traceback.print_exc(file=sys.stderr)
        raise Err(f"{type(e).__name__}: {e}")
