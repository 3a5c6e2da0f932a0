from letta_evals.decorators import reward_composer
from letta_evals.models import RewardOutput


@reward_composer
def combine(ctx):
    """The ticket's fields count three times as much as the reply's length."""
    score = 0.75 * ctx.grades["ticket"].score + 0.25 * ctx.grades["concise"].score
    return RewardOutput(score=score)
