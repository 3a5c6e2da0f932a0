"""Building what each tool's user code receives from the row and the run, as that tool builds it.

A run arrives as `Run`: the recorded value (format and JSON text) when the row had one, and the
canonical events every format converts to. Each builder prefers the recording in its own format
and otherwise converts the canonical events.
"""

import copy
import datetime
import json
import math
from typing import Any

from _gavel_model import TzInfo, own_constructors_check
from evaldeck.test_case import EvalCase
from evaldeck.trace import Step, StepStatus, StepType, TokenUsage, Trace
from letta_evals.models import Sample

# Message dates the canonical events do not carry; fixed so that a run grades the same twice.
EPOCH = datetime.datetime(1970, 1, 1, tzinfo=TzInfo(0))


class Run:
    """A recorded run. `turns` holds events as tuples:
    ("system", text), ("user", content), ("assistant", content), ("reasoning", text),
    ("tool_call", id, name, arguments, failed), ("tool_return", call_id, content, status),
    ("llm_call", model, input, output, tokens), ("human_input", text), ("other", name);
    content is a str or a list of str, tokens a dict or None, status "success" or "error".

    `recorded_parsed`, when given, is `recorded_value` already parsed; an empty
    `recorded_value` says the recording was the row's own `trajectory` member, parsed with the
    row (`row_and_recording`), and is then given.

    `turns` may be given as a function returning them: it is called on first use, so that a
    call whose builder reads only the recording (or nothing of the run) never converts the
    events. Converting them cannot fail, so when it happens changes no outcome.

    `usage` (the run's tokens) is a dict or None, and may be given as the tuple of its three
    counts (`prompt_tokens`, `completion_tokens`, `total_tokens`), made the dict on first read:
    no builder reads it now. Slots, so that the one made every call is made without a dict."""

    __slots__ = (
        "_turns",
        "output",
        "status",
        "input",
        "duration_ms",
        "_usage",
        "recorded_format",
        "recorded_value",
        "recorded_parsed",
        "case_vouched",
        "_handed",
    )

    def __init__(
        self,
        turns=(),
        output=None,
        status="success",
        input=None,
        duration_ms=None,
        usage=None,
        recorded_format=None,
        recorded_value=None,
        recorded_parsed=None,
    ):
        self._turns = turns
        self.output = output
        self.status = status
        self.input = input
        self.duration_ms = duration_ms
        self._usage = usage
        self.recorded_format = recorded_format
        self.recorded_value = recorded_value
        self.recorded_parsed = recorded_parsed
        # A recording the host vouched for comes with its word on the row's case.
        self.case_vouched = type(recorded_parsed) is Located and recorded_parsed.case
        self._handed = None

    @property
    def usage(self):
        usage = self._usage
        if type(usage) is tuple:
            usage = self._usage = dict(zip(_USAGE, usage))
        return usage

    @property
    def turns(self):
        if callable(self._turns):
            self._turns = self._turns()
        return self._turns

    def recorded(self, fmt):
        if self.recorded_format == fmt and self.recorded_value is not None:
            # Parsed with the row once, handed out once: a later reader gets its own, parsed
            # from the text or, when the recording was the row's member (its text empty), a
            # copy (a builder reads what it is handed and changes nothing of it).
            parsed, self.recorded_parsed = self.recorded_parsed, None
            if parsed is not None:
                self._handed = parsed
                return parsed
            if self.recorded_value:
                return json.loads(self.recorded_value)
            return copy.deepcopy(self._handed)
        return None

    def events(self):
        for turn in self.turns:
            yield from turn


_USAGE = ("prompt_tokens", "completion_tokens", "total_tokens")


def row_and_recording(text):
    """The row (`text`, JSON) without its `trajectory` member, and that member's value: for a
    row whose own `trajectory` member is the run's recording (the host sends the recording's
    value empty then, see `Runtime.row`), one parse gives both."""
    row = row_whole(text)
    return row, row.pop("trajectory", None)


def row_and_vouched(text, digest):
    """`row_and_recording(text)` for a row whose evaldeck recording the host vouched for
    (`digest`, host `grade/pack/digest.rs`): the row's other members as a `LocatedRow`, each
    parsed at its start when read, and the recording as a `Located` whose `Trace` reads each
    field's value on first read. None when a model's constructor is not its own (the recording
    must then be checked as always)."""
    if not _own_trace_constructors():
        return None
    # Its numbers, four bytes each (little-endian, as this interpreter's `unsigned int`), read
    # in place: a view costs a call less than an array copied out of it.
    numbers = memoryview(digest).cast("I")
    fields = 2 * numbers[1] + 2
    located = Located(text, _TRACE_AT, numbers, fields, fields + _TRACE_FIELDS, numbers[0] == 1)
    return LocatedRow(text, numbers), located


class LocatedRow:
    """A row's members (its recording left out) as the case's builder reads them: each parsed
    from `text` where it starts when read, so that a grader that never reads the case never
    parses them. `digest` holds each member's key and value starts, from its third number
    (their count in its second); the keys are read on the row's first use."""

    __slots__ = ("text", "digest", "_starts")

    def __init__(self, text, digest):
        self.text = text
        self.digest = digest
        self._starts = None

    @property
    def starts(self):
        """Each member's value start, by key."""
        starts = self._starts
        if starts is None:
            text, digest = self.text, self.digest
            starts = self._starts = {}
            for i in range(2, 2 * digest[1] + 2, 2):
                starts[_scan(text, digest[i])[0]] = digest[i + 1]
        return starts

    def __reduce__(self):
        # Copied or pickled with its numbers as a list: the view they are read from cannot be.
        return LocatedRow, (self.text, list(self.digest))

    def __contains__(self, key):
        return key in self.starts

    def __getitem__(self, key):
        return _scan(self.text, self.starts[key])[0]

    def get(self, key, default=None):
        start = self.starts.get(key)
        return default if start is None else _scan(self.text, start)[0]

    def items(self):
        return [(key, _scan(self.text, start)[0]) for key, start in self.starts.items()]


class Located:
    """A recorded model's data as its deferred model reads it (`get`): each field's value parsed
    from `text` where it starts when read. `digest` holds the starts, each a number (0: the
    field is left out), the model's from `base` in the order of `at`'s places; a trace's steps
    follow from `steps`, each its fields' starts. A trace's `case` is the host's word on the
    row's case."""

    __slots__ = ("text", "at", "digest", "base", "steps", "case")

    def __init__(self, text, at, digest, base, steps=None, case=False):
        self.text = text
        self.at = at
        self.digest = digest
        self.base = base
        self.steps = steps
        # The host's word that the row's case, as `evaldeck_case` makes it, is usual too.
        self.case = case

    def __reduce__(self):
        # As `LocatedRow`'s.
        return Located, (self.text, self.at, list(self.digest), self.base, self.steps, self.case)

    def get(self, name, default=None):
        start = self.digest[self.base + self.at[name]]
        if not start:
            return default
        if name == "steps" and self.steps is not None:
            text, digest = self.text, self.digest
            return [Located(text, _STEP_AT, digest, i) for i in range(self.steps, len(digest), _STEP_FIELDS)]
        return _scan(self.text, start)[0]


_TRACE_MODELS = (Trace, Step, TokenUsage)
_own_trace_constructors = own_constructors_check(_TRACE_MODELS)
_TRACE_AT = {field.name: i for i, field in enumerate(Trace._fields)}
_STEP_AT = {field.name: i for i, field in enumerate(Step._fields)}
_TRACE_FIELDS = len(_TRACE_AT)
_STEP_FIELDS = len(_STEP_AT)


def row_whole(text):
    """The row (`text`, JSON) as a dict; a row that is not an object is an empty one."""
    row = _parsed(text) if text else {}
    return row if isinstance(row, dict) else {}


def _parsed(text):
    """`json.loads(text)`: the scanner called directly when the text is one JSON value from
    its first character to its last (a row as the host sends it), so that the call skips the
    decoder's two searches for surrounding whitespace; `json.loads` itself otherwise, for
    whatever it gives or raises."""
    try:
        value, end = _scan(text, 0)
    except (StopIteration, ValueError):
        end = -1
    return value if end == len(text) else json.loads(text)


_scan = json.JSONDecoder().scan_once


# ------------------------------------------------------------------------------------------
# letta-evals


def letta_sample(row, fallback_id):
    """`letta_evals.models.Sample` as letta-evals' JSONL loader builds it from a row."""
    # Every letta `@grader` call makes one: the row's `get` taken once, and the metadata asked
    # only when the row has some (an empty one holds none of the three).
    get = row.get
    metadata = get("metadata") or None
    sample_id = get("sample_id")
    if sample_id is None:
        sample_id = get("id")
    if sample_id is None:
        sample_id = fallback_id
    elif isinstance(sample_id, float) and sample_id.is_integer():
        sample_id = int(sample_id)
    data = {
        "id": sample_id,
        "input": get("input") or row["prompt"],
        "ground_truth": get("ground_truth"),
        "agent_args": get("agent_args") or (None if metadata is None else metadata.get("agent_args")),
        "rubric_vars": get("rubric_vars") or (None if metadata is None else metadata.get("rubric_vars")),
        "extra_vars": get("extra_vars") or (None if metadata is None else metadata.get("extra_vars")),
        "rubric": get("rubric"),
    }
    # Built on first read when the data has the usual form; validated now otherwise, so that
    # every error comes where letta-evals raises it.
    sample = Sample._deferred_if_usual(data)
    return Sample(**data) if sample is None else sample


def letta_message(data):
    """One recorded Letta message (a dict with `message_type`) as its letta_client class."""
    from letta_client.types.agents import MESSAGE_TYPES

    cls = MESSAGE_TYPES.get(data.get("message_type"))
    if cls is None:
        raise ValueError(f"unknown Letta message_type {data.get('message_type')!r}")
    return cls(**data)


def letta_trajectory(run):
    """The trajectory letta-evals hands extractors: a list of turns of letta_client messages."""
    recorded = run.recorded("letta")
    if recorded is not None:
        turns = recorded.get("trajectory") if isinstance(recorded, dict) else recorded
        turns = turns or []
        if turns and all(isinstance(m, dict) for m in turns):
            turns = [turns]
        return [[letta_message(m) for m in turn] for turn in turns]
    return [_letta_turn(turn, t) for t, turn in enumerate(run.turns)]


def _letta_turn(events, turn_index):
    from letta_client.types import ToolReturnMessage
    from letta_client.types.agents import (
        AssistantMessage,
        LettaAssistantMessageContentUnion,
        ReasoningMessage,
        SystemMessage,
        TextContent,
        ToolCall,
        ToolCallMessage,
        UserMessage,
    )

    def content(value, part=TextContent):
        if isinstance(value, str):
            return value
        return [part(text=text, type="text") for text in value]

    messages = []
    for event in events:
        kind = event[0]
        mid = f"message-{turn_index}-{len(messages)}"
        if kind == "system":
            messages.append(SystemMessage(id=mid, date=EPOCH, content=event[1], message_type="system_message"))
        elif kind == "user":
            messages.append(UserMessage(id=mid, date=EPOCH, content=content(event[1]), message_type="user_message"))
        elif kind == "assistant":
            messages.append(
                AssistantMessage(
                    id=mid,
                    date=EPOCH,
                    content=content(event[1], LettaAssistantMessageContentUnion),
                    message_type="assistant_message",
                )
            )
        elif kind == "reasoning":
            messages.append(
                ReasoningMessage(id=mid, date=EPOCH, reasoning=event[1], message_type="reasoning_message")
            )
        elif kind == "tool_call":
            call = ToolCall(tool_call_id=event[1], name=event[2], arguments=event[3])
            messages.append(
                ToolCallMessage(
                    id=mid, date=EPOCH, tool_call=call, tool_calls=[call], message_type="tool_call_message"
                )
            )
        elif kind == "tool_return":
            messages.append(
                ToolReturnMessage(
                    id=mid,
                    date=EPOCH,
                    tool_call_id=event[1],
                    tool_return=event[2],
                    status=event[3],
                    message_type="tool_return_message",
                )
            )
    return messages


def letta_agent_state(row, run):
    """The agent's state recorded with the row (`agent_state`), or with a letta recording."""
    from letta_client.types import AgentState

    state = row.get("agent_state")
    recorded = run.recorded("letta")
    if state is None and isinstance(recorded, dict):
        state = recorded.get("agent_state")
    return None if state is None else AgentState(**state)


def letta_reward_context(context, fallback_id, run=None):
    from letta_evals.models import GradeResult
    from letta_evals.rewards import RewardContext

    row = context.get("sample") or {}
    grades = {
        key: GradeResult(
            score=g.get("score"),
            rationale=g.get("rationale"),
            metadata=g.get("metadata") or {},
        )
        for key, g in (context.get("grades") or {}).items()
    }
    run = run or Run()
    return RewardContext(
        sample=letta_sample(row, 0 if fallback_id is None else fallback_id),
        grades=grades,
        submissions=dict(context.get("submissions") or {}),
        trajectory=letta_trajectory(run) if run.turns or run.recorded_value else [],
        agent_id=context.get("agent_id"),
        model_handle=context.get("model_handle"),
        agent_state=None,
        usage=None,
        timing=_timing(),
    )


def _timing():
    from letta_evals.models import Timing

    return Timing(total=0.0, target=0.0)


# ------------------------------------------------------------------------------------------
# evaldeck

_CASE_KEYS = (
    "name",
    "description",
    "turns",
    "timeout",
    "retries",
    "tags",
    "metadata",
    "reference_output",
    "reference_tools",
    "input",
    "expected",
    "graders",
)


def evaldeck_case(row, fallback_name, vouched=False):
    """`evaldeck.EvalCase` from a row written as an evaldeck case (`name`, `input`, `expected`,
    ...), through evaldeck's loader rule for single-turn cases; `vouched`: the host's word that
    the case made of it is of the usual form (`Run.case_vouched`)."""
    if vouched and type(row) is LocatedRow:
        case = EvalCase._vouched(LocatedCase(row, fallback_name))
        if case is not None:
            return case
    data = {key: row[key] for key in _CASE_KEYS if key in row}
    data.setdefault("name", str(fallback_name))
    if "input" in data:
        data["input"] = _case_input(data["input"])
    elif "turns" not in data:
        data["input"] = ""
    return EvalCase._from_dict_deferred(data, vouched)


def _case_input(value):
    """A case's `input` as evaldeck's loader takes it: a list's items one a line."""
    if isinstance(value, str):
        return value
    return "\n".join(str(x) for x in value) if isinstance(value, list) else str(value)


class LocatedCase:
    """The data `evaldeck_case` makes of a `LocatedRow`, as a deferred `EvalCase` reads it
    (`get`): each member parsed from the row on first read, the one turn made of `input`,
    `expected` and `graders` as `_one_turn` makes it."""

    __slots__ = ("row", "fallback_name")

    def __init__(self, row, fallback_name):
        self.row = row
        self.fallback_name = fallback_name

    def get(self, name, default=None):
        row = self.row
        if name == "name" and name not in row:
            return str(self.fallback_name)
        if name == "turns" and name not in row:
            turn = {"user": _case_input(row.get("input", ""))}
            for key in ("expected", "graders"):
                if key in row:
                    turn[key] = row[key]
            return [turn]
        return row.get(name, default)


_STEP_STATUS = {"success": "success", "failure": "failure", "timeout": "timeout", "error": "error"}


def evaldeck_trace(run):
    """`evaldeck.Trace`: the recording when it is evaldeck's, else built from the events."""
    recorded = run.recorded("evaldeck")
    if type(recorded) is Located:
        return Trace._deferred(recorded)
    if recorded is not None:
        trace = Trace._deferred_if_usual(recorded)
        return Trace.from_dict(recorded) if trace is None else trace
    returns = {}
    for event in run.events():
        if event[0] == "tool_return" and event[1] and event[1] not in returns:
            returns[event[1]] = event[2]
    steps = []

    def step(kind, **fields):
        steps.append(Step(id=f"s{len(steps) + 1}", type=kind, timestamp=EPOCH, **fields))

    for event in run.events():
        kind = event[0]
        if kind == "tool_call":
            _, call_id, name, arguments, failed = event
            step(
                StepType.TOOL_CALL,
                status=StepStatus.FAILURE if failed else StepStatus.SUCCESS,
                tool_name=name,
                tool_args=_tool_args(arguments),
                tool_result=_json_or_text(returns.get(call_id)) if call_id else None,
            )
        elif kind == "llm_call":
            _, model, text_in, text_out, tokens = event
            step(
                StepType.LLM_CALL,
                model=model,
                input=text_in,
                output=text_out,
                tokens=TokenUsage(**tokens) if tokens else None,
            )
        elif kind == "reasoning":
            step(StepType.REASONING, reasoning_text=event[1])
        elif kind == "human_input":
            step(StepType.HUMAN_INPUT, input=event[1])
    return Trace(
        id="trace",
        input=run.input or "",
        output=run.output,
        status=_STEP_STATUS.get(run.status, "success"),
        steps=steps,
        started_at=EPOCH,
        duration_ms=run.duration_ms,
    )


def _tool_args(arguments):
    try:
        value = json.loads(arguments) if arguments else {}
    except ValueError:
        return {"input": arguments}
    return value if isinstance(value, dict) else {"input": value}


def _json_or_text(text):
    if text is None:
        return None
    try:
        return json.loads(text)
    except ValueError:
        return text


# ------------------------------------------------------------------------------------------
# OpenAI python graders


def openai_item_and_sample(row, run):
    """The item and the sample of a row: a row in OpenAI's eval shape (an `item` mapping, perhaps
    a `sample`, nothing else) gives its own; any other row is the item, its run the sample."""
    if isinstance(row, dict) and isinstance(row.get("item"), dict) and set(row) <= {"item", "sample"}:
        return row["item"], row["sample"] if "sample" in row else openai_sample(run)
    return row, openai_sample(run)


def openai_sample(run):
    """`{output_text, output_json, output_tools, choices}` from the run, as OpenAI's python
    grader receives its `sample`."""
    texts = []
    tools = []
    for event in run.events():
        if event[0] == "assistant":
            texts.append(event[1] if isinstance(event[1], str) else "".join(event[1]))
        elif event[0] == "tool_call":
            _, call_id, name, arguments, _ = event
            tools.append({"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}})
    output_text = texts[-1] if texts else (run.output or "")
    try:
        parsed = json.loads(output_text)
    except ValueError:
        parsed = None
    return {
        "output_text": output_text,
        "output_json": parsed if isinstance(parsed, dict) else None,
        "output_tools": tools,
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": output_text, "tool_calls": tools},
                "finish_reason": "tool_calls" if tools and not texts else "stop",
            }
        ],
    }


def evaldeck_metadata(details, grader_name):
    """A grade's metadata from an evaldeck result: JSON of its `details` with `grader_name`
    added unless they have one. Most results have no details: their text is written at once,
    as `to_json` writes `{"grader_name": grader_name}`, without the dict made and walked."""
    if not details and type(details) is dict and type(grader_name) is str:
        return '{"grader_name": ' + _escaped(grader_name) + "}"
    details = dict(details)
    details.setdefault("grader_name", grader_name)
    return to_json(details)


def to_json(value: Any) -> str:
    """JSON for grade metadata and expected/actual values; what JSON cannot hold is its `str`."""
    if type(value) is dict:
        text = _flat_json(value)
        if text is not None:
            return text
    return _ENCODER.encode(value)


def _flat_json(value):
    """The encoder's text of `value`, a dict, when its keys are `str` and its values `str`,
    `int`, finite `float`, `bool` or None (a grade's usual metadata), written as the encoder
    writes them; None for any other dict. The encoder sets up its C writer anew for every value
    it encodes, which costs a small dict's grade more than writing it."""
    items = []
    for key, item in value.items():
        kind = type(item)
        if type(key) is not str:
            return None
        if kind is str:
            text = _escaped(item)
        elif kind is int:
            text = int.__repr__(item)
        elif kind is float and _isfinite(item):
            text = float.__repr__(item)
        elif item is None:
            text = "null"
        elif kind is bool:
            text = "true" if item else "false"
        else:
            return None
        items.append(f"{_escaped(key)}: {text}")
    return "{" + ", ".join(items) + "}"


_escaped = json.encoder.encode_basestring
_isfinite = math.isfinite


def _fallback(value):
    if hasattr(value, "model_dump"):
        return value.model_dump(mode="json")
    if isinstance(value, (set, frozenset, tuple)):
        return list(value)
    if hasattr(value, "value") and hasattr(value, "name"):
        return value.value
    if isinstance(value, (datetime.datetime, datetime.date)):
        return value.isoformat()
    return str(value)


# `json.dumps(value, ensure_ascii=False, default=_fallback)` makes this encoder anew on every
# call; it keeps nothing between calls, so one serves them all.
_ENCODER = json.JSONEncoder(ensure_ascii=False, default=_fallback)
