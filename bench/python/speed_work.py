"""Pieces of Python a grader runs, timed by `interpreter_speed.py` natively (CPython on this
machine) and in gavel's interpreter (CPython compiled to WebAssembly, run by wasmtime with fuel
and epoch checks): the same source both ways, so their ratio is the interpreter's own speed.

Each piece is one iteration; `run_NAME` is an evaldeck `kind: code` function running it
`REPEAT` times a call, and `run_none` runs nothing (the call's own cost, subtracted).
`TRAJECTORY` is filled in by the driver with one row's recorded trace."""

import json
import re
import sys
from collections import Counter

from evaldeck import Trace
from evaldeck.results import GradeResult, GradeStatus

REPEAT = 20
TRAJECTORY = {}

_PUNCTUATION = re.compile(r"[^\w\s]")
_CONFIRMATION = re.compile(r"Confirmation: [A-Z]{2}\d{6}")
_ANSWER = (
    "The flight from NYC to SFO departs at 9:40 on Tuesday; the agent booked seat 14C and sent "
    "the confirmation to the traveller, who asked for a window seat, an aisle if none was free, "
    "and a refund of the change fee charged twice on the earlier booking."
) * 2
_TRUTH = (
    "Seat 14C on Tuesday's 9:40 flight from NYC to SFO, confirmation sent; the change fee "
    "charged twice is refunded."
) * 2
_DOCUMENT = {
    "id": "case-0001",
    "messages": [
        {"role": "user" if i % 2 == 0 else "assistant", "content": f"message {i} " * 8, "tokens": i * 17}
        for i in range(12)
    ],
    "scores": [0.25 * i for i in range(16)],
    "tags": {"suite": "speed", "split": "test", "ok": True, "none": None},
}


class _Step:
    __slots__ = ("name", "args", "cost")

    def __init__(self, name, args, cost):
        self.name, self.args, self.cost = name, args, cost


def loop():
    """Bytecode dispatch: arithmetic in a loop."""
    total = 0
    for i in range(2000):
        total += i * i % 7
    return total


def text():
    """A token F1 of two texts, as answer-matching graders compute it."""

    def tokens(s):
        return _PUNCTUATION.sub(" ", s.lower()).split()

    given, truth = Counter(tokens(_ANSWER)), Counter(tokens(_TRUTH))
    common = sum((given & truth).values())
    if not common:
        return 0.0
    precision, recall = common / sum(given.values()), common / sum(truth.values())
    return 2 * precision * recall / (precision + recall)


def json_round_trip():
    """A 1.4 kB document written and read back by `json` (its C accelerator both ways)."""
    return json.loads(json.dumps(_DOCUMENT))["tags"]["split"]


def objects():
    """Objects made, sorted and summed up, as a grader walks the steps of a trajectory."""
    steps = [_Step(f"tool_{i % 5}", {"i": i, "q": f"q{i}"}, (i * 37) % 11) for i in range(40)]
    steps.sort(key=lambda s: (s.cost, s.name))
    by_name = {}
    for step in steps:
        by_name.setdefault(step.name, []).append(step.args["i"])
    return sum(len(v) for v in by_name.values()), max(s.cost for s in steps)


def trace():
    """evaldeck's `Trace` built from one row's recording (gavel's stand-in, which the sandbox
    runs) and read as the Custom Graders page's two functions read it."""
    t = Trace.from_dict(TRAJECTORY)
    valid = bool(_CONFIRMATION.search(t.output or ""))
    for step in t.tool_calls:
        if step.tool_name == "search_flights":
            args = step.tool_args or {}
            valid = valid and "from" in args and args.get("from", "").isupper()
    return valid


PIECES = {"loop": loop, "text": text, "json": json_round_trip, "objects": objects, "trace": trace}


def _runner(piece):
    def run(trace, test_case):
        for _ in range(REPEAT):
            piece()
        return GradeResult(grader_name=piece.__name__, status=GradeStatus.PASS, score=1.0)

    return run


def run_none(trace, test_case):
    return GradeResult(grader_name="none", status=GradeStatus.PASS, score=1.0, message=sys.version)


run_loop, run_text, run_json, run_objects, run_trace = (_runner(p) for p in PIECES.values())
