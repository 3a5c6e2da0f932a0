"""evaldeck.trace: the recorded run a grader reads (stand-in for evaldeck 0.1.5)."""

import datetime as _dt
import uuid as _uuid
from enum import Enum

from _gavel_model import (
    REQUIRED,
    DeferredModel,
    Field,
    Model,
    any_value,
    datetime,
    enum,
    floating,
    integer,
    list_of,
    mapping,
    model,
    optional,
    string,
)


class StepType(str, Enum):
    LLM_CALL = "llm_call"
    TOOL_CALL = "tool_call"
    REASONING = "reasoning"
    HUMAN_INPUT = "human_input"


class StepStatus(str, Enum):
    SUCCESS = "success"
    FAILURE = "failure"
    PENDING = "pending"


class TraceStatus(str, Enum):
    SUCCESS = "success"
    FAILURE = "failure"
    TIMEOUT = "timeout"
    ERROR = "error"


class Message(Model):
    _fields = (Field("role", string, REQUIRED), Field("content", string, REQUIRED))


class TokenUsage(DeferredModel):
    _fields = (
        Field("prompt_tokens", integer, 0),
        Field("completion_tokens", integer, 0),
        Field("total_tokens", integer, 0),
    )
    _defer = ()

    @property
    def cost_estimate(self):
        return None


def _short_id():
    return str(_uuid.uuid4())[:8]


class Step(DeferredModel):
    _fields = (
        Field("id", string, ""),
        Field("type", enum(StepType), REQUIRED),
        Field("timestamp", datetime, factory=_dt.datetime.now),
        Field("status", enum(StepStatus), StepStatus.SUCCESS),
        Field("model", optional(string)),
        Field("input", optional(string)),
        Field("output", optional(string)),
        Field("tokens", optional(model(TokenUsage))),
        Field("tool_name", optional(string)),
        Field("tool_args", optional(mapping)),
        Field("tool_result", any_value),
        Field("reasoning_text", optional(string)),
        Field("parent_id", optional(string)),
        Field("error", optional(string)),
        Field("duration_ms", optional(floating)),
        Field("metadata", mapping, factory=dict),
    )
    # Built on first read when its id is set (`_validate` then does nothing).
    _defer = ("id",)

    def _validate(self):
        if not self.id:
            self.id = _short_id()

    @classmethod
    def llm_call(cls, model, input, output, tokens=None, **kwargs):
        return cls(type=StepType.LLM_CALL, model=model, input=input, output=output, tokens=tokens, **kwargs)

    @classmethod
    def tool_call(cls, tool_name, tool_args=None, tool_result=None, **kwargs):
        return cls(
            type=StepType.TOOL_CALL,
            tool_name=tool_name,
            tool_args=tool_args or {},
            tool_result=tool_result,
            **kwargs,
        )

    @classmethod
    def reasoning(cls, text, **kwargs):
        return cls(type=StepType.REASONING, reasoning_text=text, **kwargs)


class Trace(DeferredModel):
    _fields = (
        Field("id", string, ""),
        Field("input", string, REQUIRED),
        Field("output", optional(string)),
        Field("status", enum(TraceStatus), TraceStatus.SUCCESS),
        Field("steps", list_of(model(Step)), factory=list),
        Field("started_at", datetime, factory=_dt.datetime.now),
        Field("completed_at", optional(datetime)),
        Field("duration_ms", optional(floating)),
        Field("metadata", mapping, factory=dict),
        Field("framework", optional(string)),
        Field("agent_name", optional(string)),
    )
    # Built on first read when its id is set (`_validate` then does nothing).
    _defer = ("id",)

    def _validate(self):
        if not self.id:
            self.id = _short_id()

    @property
    def tool_calls(self):
        return [step for step in self.steps if step.type == StepType.TOOL_CALL]

    @property
    def llm_calls(self):
        return [step for step in self.steps if step.type == StepType.LLM_CALL]

    @property
    def tools_called(self):
        return [step.tool_name for step in self.tool_calls if step.tool_name]

    @property
    def total_tokens(self):
        return sum(step.tokens.total_tokens for step in self.llm_calls if step.tokens)

    @property
    def step_count(self):
        return len(self.steps)

    def add_step(self, step):
        self.steps.append(step)

    def complete(self, output, status=TraceStatus.SUCCESS):
        self.output = output
        self.status = status
        self.completed_at = _dt.datetime.now()
        if self.started_at:
            self.duration_ms = (self.completed_at - self.started_at).total_seconds() * 1000

    def to_dict(self):
        return self.model_dump(mode="json")

    @classmethod
    def from_dict(cls, data):
        return cls.model_validate(data)
