"""letta_evals.rewards (stand-in for letta-evals 0.26.0): what a `@reward_composer` receives."""

from dataclasses import dataclass
from typing import Any, Mapping, Optional

from letta_evals.models import RewardOutput


@dataclass(frozen=True)
class RewardContext:
    sample: Any
    grades: Mapping[str, Any]
    submissions: Mapping[str, str]
    trajectory: list
    agent_id: Optional[str]
    model_handle: Optional[str]
    agent_state: Any
    usage: Any
    timing: Any


def coerce_reward_output(value):
    """A composer's return value as `RewardOutput` (a float, an int or bool, a dict)."""
    if isinstance(value, RewardOutput):
        return value
    if isinstance(value, (float, int)):
        return RewardOutput(score=float(value))
    if isinstance(value, dict):
        return RewardOutput(**value)
    raise TypeError(f"Reward composer must return RewardOutput, float, or dict; got {type(value).__name__}")
