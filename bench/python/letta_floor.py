"""The floor of a letta-evals `@grader` in the Python-graders benchmark: it reads nothing of the
sample or the submission and returns the same result every call, so that its cost is gavel's
alone (the sample handed in, the call, the result read back)."""

from letta_evals.decorators import grader
from letta_evals.models import GradeResult

CONSTANT = GradeResult(score=1.0, rationale="constant")


@grader
def constant(sample, submission):
    return CONSTANT
