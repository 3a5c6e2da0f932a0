import letta_evals
from letta_evals.decorators import reward_composer
from letta_evals.models import RewardOutput


@reward_composer
def weighted(ctx):
    score = ctx.grades["a"].score * 0.75 + ctx.grades["b"].score * 0.25
    return RewardOutput(score=score, metadata={"submissions": len(ctx.submissions), "id": ctx.sample.id})


@reward_composer
async def gated(ctx):
    if ctx.grades["a"].score < 1.0:
        return 0
    return {"score": ctx.grades["b"].score, "metadata": {"why": ctx.grades["b"].rationale}}


@reward_composer
def out_of_range(ctx):
    return 1.5


@reward_composer
def wrong_type(ctx):
    return "high"


def undecorated(ctx):
    return 1.0


@letta_evals.reward_composer
def top_level(ctx):
    # The package's top-level names, as letta-evals' own examples import them.
    return letta_evals.RewardOutput(score=ctx.grades["b"].score, metadata={"via": "letta_evals"})


@reward_composer
def collections(ctx):
    # What pydantic writes as a list: a set, a frozenset, a tuple.
    return {"score": 1.0, "metadata": {"seen": {3}, "frozen": frozenset({"a"}), "pair": ("a", 1)}}
