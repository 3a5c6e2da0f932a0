"""letta_evals.models (stand-in for letta-evals 0.26.0): what graders receive and return."""

import sys
import types
import typing
from pathlib import Path

from _gavel_model import (
    REQUIRED,
    DeferredModel,
    Field,
    Model,
    _Invalid,
    _value_error,
    any_value,
    floating,
    integer,
    list_of,
    mapping,
    model,
    optional,
    string,
    submodules,
    union,
)
from letta_client.types import AgentState, ToolReturnMessage
from letta_client.types.agents import (
    ApprovalRequestMessage,
    ApprovalResponseMessage,
    AssistantMessage,
    EventMessage,
    HiddenReasoningMessage,
    ReasoningMessage,
    SummaryMessage,
    SystemMessage,
    ToolCallMessage,
    UserMessage,
)

SampleId = typing.Union[int, str]

LettaMessageUnion = typing.Union[
    SystemMessage,
    UserMessage,
    ReasoningMessage,
    HiddenReasoningMessage,
    ToolCallMessage,
    ToolReturnMessage,
    AssistantMessage,
    ApprovalRequestMessage,
    ApprovalResponseMessage,
    SummaryMessage,
    EventMessage,
]


def _path(value):
    if isinstance(value, (str, Path)):
        return Path(value)
    raise _Invalid("path_type", "Input is not a valid path")


_text_or_texts = union(string, list_of(string))


class Sample(DeferredModel):
    _fields = (
        Field("id", union(integer, string), REQUIRED),
        Field("input", _text_or_texts, REQUIRED),
        Field("ground_truth", optional(_text_or_texts)),
        Field("agent_args", optional(mapping)),
        Field("rubric_vars", optional(mapping)),
        Field("extra_vars", optional(mapping)),
        Field("rubric", optional(string)),
        Field("rubric_path", optional(_path)),
    )
    # Built on first read from data of the usual form (`_gavel_model._usual_form`): an int or str id,
    # a str input, a str or no ground truth, no rubric path. `_validate` finds nothing wrong in
    # such data (its checks are of lists and of a rubric path).
    _defer = ()

    def _validate(self):
        if isinstance(self.ground_truth, list) and not isinstance(self.input, list):
            raise self._invalid("", "ground_truth cannot be a list when input is a string", self._raw())
        if isinstance(self.input, list) and isinstance(self.ground_truth, list):
            if len(self.input) != len(self.ground_truth):
                raise self._invalid(
                    "",
                    f"input has {len(self.input)} items but ground_truth has {len(self.ground_truth)} items. "
                    "For per-turn evaluation, each input must have a corresponding ground_truth.",
                    self._raw(),
                )
        if self.rubric is not None and self.rubric_path is not None:
            raise self._invalid(
                "",
                "Sample cannot have both 'rubric' and 'rubric_path' set. "
                "Use one or the other (the loader resolves rubric_path into rubric).",
                self._raw(),
            )

    def _raw(self):
        return {name: value for name, value in self._items() if value is not None}


class PerTurnGrade(Model):
    _fields = (
        Field("turn", integer, REQUIRED),
        Field("score", floating, REQUIRED),
        Field("rationale", optional(string)),
        Field("submission", string, REQUIRED),
    )


def _score_in_range(score):
    if score < 0.0 or score > 1.0:
        return _value_error(f"Score must be between 0.0 and 1.0, got {score}")
    return None


class GradeResult(Model):
    _fields = (
        Field("score", floating, REQUIRED),
        Field("rationale", optional(string)),
        Field("metadata", mapping, factory=dict),
        Field("per_turn_grades", optional(list_of(model(PerTurnGrade)))),
    )
    # letta-evals' `field_validator("score")`.
    _after = (("score", _score_in_range),)


def _unit_interval(score):
    """`Field(ge=0.0, le=1.0)`'s constraints."""
    if score < 0:
        return _Invalid("greater_than_equal", "Input should be greater than or equal to 0", {"ge": 0.0})
    if score > 1:
        return _Invalid("less_than_equal", "Input should be less than or equal to 1", {"le": 1.0})
    return None


class RewardOutput(Model):
    _fields = (Field("score", floating, REQUIRED), Field("metadata", optional(mapping)))
    _after = (("score", _unit_interval),)


class Usage(Model):
    _fields = (
        Field("prompt_tokens", integer, 0),
        Field("completion_tokens", integer, 0),
        Field("cached_input_tokens", integer, 0),
        Field("cache_write_tokens", integer, 0),
        Field("reasoning_tokens", integer, 0),
        Field("cost", optional(floating)),
    )


class Timing(Model):
    _fields = (
        Field("total", floating, REQUIRED),
        Field("target", floating, REQUIRED),
        Field("extraction", optional(floating)),
        Field("per_grader", optional(mapping)),
    )


# letta-evals defines these in `letta_evals.models.sample` and `.results`.
submodules(__name__, (("sample", Sample),))
sys.modules[f"{__name__}.results"] = results = types.ModuleType(f"{__name__}.results")
for _cls in (GradeResult, PerTurnGrade, RewardOutput, Timing, Usage):
    setattr(results, _cls.__name__, _cls)
results.LettaMessageUnion = LettaMessageUnion

__all__ = [
    "AgentState",
    "GradeResult",
    "LettaMessageUnion",
    "PerTurnGrade",
    "RewardOutput",
    "Sample",
    "SampleId",
    "Timing",
    "Usage",
]
