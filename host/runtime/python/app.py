"""gavel's Python interpreter component (world `interpreter-v1` of wit/grader.wit).

componentize-py imports this module, and with it the runtime and the stand-in packages, at
build time, so they are part of the pre-initialised snapshot; each call then only runs the
user's code. The glue here converts WIT records to the plain data `gavel_runtime` works on.
"""

import errno
import gc
from array import array

from componentize_py_types import Err
from wit_world import exports
from wit_world.exports import program as wit_program
from wit_world.exports import grading as wit_grading
from wit_world.imports import gavel_grader_types as types
from wit_world.imports import process as wit_process

import gavel_runtime
from gavel_runtime import Run, Runtime

# Imported now so that they are in the snapshot, not read on every call.
import gavel_runtime.stdlib  # noqa: F401
import anthropic  # noqa: F401
import gavel_runtime.convert
import gavel_runtime.http
import gavel_runtime.process
import evaldeck  # noqa: F401
import evaldeck.graders  # noqa: F401
from evaldeck.trace import Trace
import letta_client.types  # noqa: F401
import letta_evals.decorators  # noqa: F401
import letta_evals.extractors  # noqa: F401
import letta_evals.graders  # noqa: F401
import letta_evals.rewards  # noqa: F401
import openai  # noqa: F401

# urllib's requests go to the host over wasi:http, checked against the grader's grant.
gavel_runtime.http.install()


class _Processes:
    """The host's side of `gavel_runtime.process`: a process is a new instance of this
    component, run by the host."""

    def run(self, argv, stdin, cwd, env, merge_stderr, timeout_ms):
        request = wit_process.Request(argv, bytes(stdin), cwd, env, merge_stderr, timeout_ms)
        try:
            done = wit_process.run(request)
        except Err as e:
            if isinstance(e.value, wit_process.Failure_TimedOut):
                t = e.value.value
                raise gavel_runtime.process.TimedOut(t.exit_code, bytes(t.stdout), bytes(t.stderr)) from None
            raise OSError(errno.EAGAIN, e.value.value) from None
        return done.exit_code, bytes(done.stdout), bytes(done.stderr)

    def working_folder(self):
        return wit_process.working_folder()


# One runtime per instance: an instance serves one grader, for one call or a batch of them.
_runtime = Runtime()

_STATUS = {
    "pass": types.Status.PASS,
    "fail": types.Status.FAIL,
    "error": types.Status.ERROR,
    "skip": types.Status.SKIP,
}
_FLAT_STATUS = {
    "pass": wit_grading.Status.PASS,
    "fail": wit_grading.Status.FAIL,
    "error": wit_grading.Status.ERROR,
    "skip": wit_grading.Status.SKIP,
}


def _content(content):
    if isinstance(content, types.Content_Text):
        return content.value
    return list(content.value)


def _tokens(tokens):
    if tokens is None:
        return None
    return {
        "prompt_tokens": tokens.prompt_tokens,
        "completion_tokens": tokens.completion_tokens,
        "total_tokens": tokens.total_tokens,
    }


def _event(event):
    if isinstance(event, types.Event_Assistant):
        return ("assistant", _content(event.value))
    if isinstance(event, types.Event_ToolCall):
        call = event.value
        return ("tool_call", call.id, call.name, call.arguments, call.failed)
    if isinstance(event, types.Event_ToolReturn):
        ret = event.value
        status = "error" if ret.status == types.ToolStatus.ERROR else "success"
        return ("tool_return", ret.call_id, ret.content, status)
    if isinstance(event, types.Event_User):
        return ("user", _content(event.value))
    if isinstance(event, types.Event_System):
        return ("system", event.value)
    if isinstance(event, types.Event_Reasoning):
        return ("reasoning", event.value)
    if isinstance(event, types.Event_LlmCall):
        call = event.value
        return ("llm_call", call.model, call.input, call.output, _tokens(call.tokens))
    if isinstance(event, types.Event_HumanInput):
        return ("human_input", event.value)
    return ("other", event.value)


def _run(trajectory, parsed):
    recorded = trajectory.recorded
    return Run(
        turns=lambda: [[_event(e) for e in turn] for turn in trajectory.turns],
        output=trajectory.output,
        status=trajectory.status.name.lower(),
        input=trajectory.input,
        duration_ms=trajectory.duration_ms,
        usage=_tokens(trajectory.usage),
        recorded_format=recorded.format if recorded else None,
        recorded_value=recorded.value if recorded else None,
        recorded_parsed=parsed,
    )


def _row_and_run(name, sample, trajectory):
    recorded = trajectory.recorded
    row, parsed = _runtime.row(
        name,
        sample.row,
        recorded.value if recorded else None,
        recorded.format if recorded else None,
    )
    if name.partition(":")[0] == gavel_runtime.READS_NO_RUN:
        return row, None
    return row, _run(trajectory, parsed)


def _grade(name, row, id, run, submission, config, statuses):
    """The user's grade: score, status (from `statuses`), rationale, metadata, expected and
    actual, in the order of `gavel:grader`'s `grade` record."""
    # `_call`, inline: this is every grade call's way back.
    try:
        outcome = _runtime.outcome(name, row, id, run, submission, config)
    except Exception as e:
        raise _failed(e)
    score, status, rationale, metadata, expected, actual = outcome
    return score, None if status is None else statuses[status], rationale, metadata, expected, actual


class Grading(exports.Grading):
    """`pack.grade` in flat values, for a call that sends no events (see the WIT)."""

    def grade(self, name, id, key, row, run, recorded_format, recorded_value, digest, submission, config):
        # Every warm call without events comes here: the run made inline, a frame less each.
        row, parsed = _runtime.row(name, row, recorded_value, recorded_format, digest)
        if run is not None:
            # The run but its events, as `_run` makes a trajectory's: its usage made a dict when
            # read (`Run.usage`), the arguments by position (keywords cost more).
            output, run_status, task, duration_ms, usage = run
            run = Run((), output, run_status, task, duration_ms, usage, recorded_format, recorded_value, parsed)
        return _grade(name, row, id if key is None else key, run, submission, config, _FLAT_STATUS)


def _call(fn, *args):
    try:
        return fn(*args)
    except Exception as e:
        raise _failed(e)


def _failed(error):
    """The `Err` a call reports for `error`: the user-visible failure's text, or a fault of the
    runtime itself, reported rather than trapped."""
    if isinstance(error, gavel_runtime.CallError):
        return Err(str(error))
    return Err(f"gavel's Python runtime failed: {gavel_runtime.loader.exception_text(error)}")


class Pack(exports.Pack):
    def describe(self) -> types.PackInfo:
        return types.PackInfo(name="python", version="0.2.0", functions=[])

    def check_config(self, name: str, config: str) -> None:
        _call(_runtime.check_config, name, config)

    def grade(self, name, sample, trajectory, submission, config) -> types.Grade:
        row, run = _row_and_run(name, sample, trajectory)
        return types.Grade(*_grade(name, row, sample.id.value, run, submission, config, _STATUS))

    def extract(self, name, sample, trajectory, config):
        row, run = _row_and_run(name, sample, trajectory)
        return _call(_runtime.extract, name, row, sample.id.value, run, config)


def _load_error(e):
    return Err(wit_program.LoadError(path=e.path, line=e.line, message=e.message))


class Child(exports.Child):
    def main(self, argv, cwd) -> int:
        return gavel_runtime.process.main(argv, cwd)


class Program(exports.Program):
    def compile(self, sources):
        try:
            return _runtime.compile([(s.module, s.path, s.text) for s in sources])
        except gavel_runtime.LoadFailure as e:
            raise _load_error(e)

    def load(self, sources, entries) -> None:
        try:
            _runtime.load([(s.module, s.path, s.text, s.code) for s in sources], entries)
        except gavel_runtime.LoadFailure as e:
            raise _load_error(e)

    def reward(self, name: str, context: str) -> str:
        return _call(_runtime.reward, name, context)


_WARM_UP_SOURCE = """
from evaldeck.results import GradeResult as EvaldeckGrade
from letta_evals.decorators import extractor, grader
from letta_evals.models import GradeResult as LettaGrade


def openai(sample, item):
    return 1.0 if sample["output_text"] and item else 0.0


def evaldeck_function(trace, test_case):
    return EvaldeckGrade.passed_result("warm", "warm")


def evaldeck_reads(trace, test_case):
    called = [(step.tool_name, step.tool_args) for step in trace.tool_calls]
    if trace.output and called and test_case.expected.tools_called:
        return EvaldeckGrade.passed_result("warm", "warm")
    return EvaldeckGrade.failed_result("warm", "warm", expected=called, actual=trace.output)


@grader
def letta_grader(sample, submission):
    return LettaGrade(score=1.0, rationale="warm")


@extractor
def letta_extractor(trajectory, config):
    return "warm"
"""


def _warm_up(rounds=8):
    """Runs every form's call path a few times so that the snapshot holds the interpreter's
    specialised code for it: each fresh instance then starts warm, running fewer instructions
    and writing fewer pages. Nothing of the warm-up program stays loaded."""
    module = "_gavel_warm_up"
    path = "<gavel warm-up>"
    run = Run(
        turns=[
            [
                ("user", "Book NYC"),
                ("tool_call", "c1", "search", '{"to": "NYC"}', False),
                ("tool_return", "c1", "[1]", "success"),
                ("assistant", "Booked."),
            ]
        ],
        output="Booked.",
        input="Book NYC",
    )
    row = {"input": "Book NYC", "expected": {"tools_called": ["search"]}, "ground_truth": "Booked"}
    # A row with its run recorded as evaldeck's, the usual way: the forms that read it parse the
    # two at once and build the trace on first read; the others receive the row without it.
    recording = (
        '{"id":"t","input":"Book NYC","output":"Booked.","status":"success","started_at":"2026-01-01T00:00:00",'
        '"steps":[{"id":"s1","type":"llm_call","timestamp":"2026-01-01T00:00:01","model":"m","input":"Book NYC",'
        '"output":"search","tokens":{"prompt_tokens":3,"completion_tokens":4,"total_tokens":7},"duration_ms":1.5},'
        '{"id":"s2","type":"tool_call","timestamp":"2026-01-01T00:00:02","status":"success","tool_name":"search",'
        '"tool_args":{"to":"NYC"},"tool_result":[1],"duration_ms":2.5}],"metadata":{}}'
    )
    apart = '{"id":0,"name":"warm","input":"Book NYC","expected":{"tools_called":["search"]}}'
    text = '%s,"trajectory":%s}' % (apart[:-1], recording)
    # The host's digest of `text` (host `grade/pack/digest.rs`): its recording and case are
    # usual, and where each value starts. Checked here against the row parsed whole, so that
    # the build fails if it ever says otherwise.
    digest = array("I", [
        1, 4, 1, 6, 8, 15, 22, 30, 41, 52, 99, 111, 131, 150, 203, 173, 0, 0, 581, 0, 0, 210, 222, 245, 0, 275,
        287, 307, 325, 0, 0, 0, 0, 0, 0, 398, 0, 409, 421, 445, 476, 0, 0, 0, 0, 498, 519, 546, 0, 0, 0, 564, 0,
    ]).tobytes()
    reads = "evaldeck-function:_gavel_warm_up:evaldeck_reads"
    whole, parsed = Runtime().row(reads, text, "", "evaldeck")
    row, located = Runtime().row(reads, text, "", "evaldeck", digest)
    vouched = Run(recorded_format="evaldeck", recorded_value="", recorded_parsed=located)
    if dict(row.items()) != whole or gavel_runtime.convert.evaldeck_trace(vouched) != Trace.from_dict(parsed) or not vouched.case_vouched:
        raise AssertionError("the warm-up's digest does not locate its row's values")
    # The flat call (`Grading.grade`) as the host makes it: the run but its events, none for a
    # letta `@grader`. It grades with the instance's own runtime, which loads nothing here.
    flat = Grading()
    flat_run = ("Booked.", "success", "Book NYC", 1.5, (3, 4, 7))
    warm = Runtime()
    for _ in range(rounds):
        code = warm.compile([(module, path, _WARM_UP_SOURCE)])[0]
        warm = Runtime()
        warm.load([(module, path, _WARM_UP_SOURCE, code)], [module])
        warm.grade(f"openai:{module}:openai", row, 0, run, "Booked.", "{}")
        warm.grade(f"evaldeck-function:{module}:evaldeck_function", row, 0, run, "Booked.", "{}")
        warm.grade(f"letta-grader:{module}:letta_grader", row, 0, run, "Booked.", "{}")
        warm.extract(f"letta-extractor:{module}:letta_extractor", row, 0, run, "{}")
        # The host sends the row with the recording as its member to the forms that read it,
        # with its digest when it has one, and without it to the others (`Runtime.row`).
        for name, sent, recorded, vouched in (
            (reads, text, "", digest),
            (reads, text, "", None),
            (f"letta-grader:{module}:letta_grader", apart, None, None),
        ):
            recorded_row, parsed = warm.row(name, sent, recorded, "evaldeck", vouched)
            recorded_run = Run(
                output="Booked.", input="Book NYC", recorded_format="evaldeck", recorded_value=recorded,
                recorded_parsed=parsed,
            )
            warm.grade(name, recorded_row, 0, recorded_run, "Booked.", "{}")
        for name in (reads, f"evaldeck-function:{module}:evaldeck_function"):
            flat.grade(name, 0, None, text, flat_run, "evaldeck", "", digest, "Booked.", "{}")
        flat.grade(f"letta-grader:{module}:letta_grader", 0, None, apart, None, None, None, None, "Booked.", "{}")
    warm.load([], [])


_warm_up()

# A program started as a process (`python3 FILE`) runs in a fresh instance of this component.
# Installed after the warm-up, which runs where the host is not there to ask.
gavel_runtime.process.install(_Processes())

# The objects made so far are the snapshot every call's fresh instance starts from. Frozen, the
# collector never visits them, so a call writes (and the host copies) only the pages of what
# the call itself makes.
gc.freeze()
