"""letta_evals, as gavel's sandbox provides it: the decorators, models and extractor helpers of
letta-evals 0.26.0 that grader, extractor and reward code uses, without pydantic or a network.
The package's top-level names are those letta-evals exports that this subset has, so that
`from letta_evals import RewardOutput, reward_composer` works as it does there."""

from letta_evals.decorators import agent_factory, extractor, grader, reward_composer, suite_setup
from letta_evals.models import (
    AgentState,
    GradeResult,
    LettaMessageUnion,
    PerTurnGrade,
    RewardOutput,
    Sample,
    Timing,
    Usage,
)
from letta_evals.rewards import RewardContext

__version__ = "0.26.0"

__all__ = [
    "AgentState",
    "GradeResult",
    "LettaMessageUnion",
    "PerTurnGrade",
    "RewardContext",
    "RewardOutput",
    "Sample",
    "Timing",
    "Usage",
    "agent_factory",
    "extractor",
    "grader",
    "reward_composer",
    "suite_setup",
]
