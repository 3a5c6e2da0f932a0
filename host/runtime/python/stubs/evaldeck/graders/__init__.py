"""evaldeck.graders (stand-in for evaldeck 0.1.5; the LLM graders need a network and are absent)."""

from evaldeck.graders.base import BaseGrader, CompositeGrader
from evaldeck.graders.code import (
    ContainsGrader,
    CustomGrader,
    EqualsGrader,
    MaxLLMCallsGrader,
    MaxStepsGrader,
    MaxToolCallsGrader,
    NotContainsGrader,
    RegexGrader,
    TaskCompletedGrader,
    ToolCalledGrader,
    ToolNotCalledGrader,
    ToolOrderGrader,
)

__all__ = [
    "BaseGrader",
    "CompositeGrader",
    "ContainsGrader",
    "NotContainsGrader",
    "EqualsGrader",
    "RegexGrader",
    "ToolCalledGrader",
    "ToolNotCalledGrader",
    "ToolOrderGrader",
    "MaxStepsGrader",
    "MaxToolCallsGrader",
    "MaxLLMCallsGrader",
    "TaskCompletedGrader",
    "CustomGrader",
]
