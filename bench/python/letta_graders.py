"""The letta-evals @grader the Python-graders benchmark runs: what a user writes, in the shape
of letta-evals' own custom-grader example."""

from letta_evals.decorators import grader
from letta_evals.models import GradeResult


@grader
def mentions_answer(sample, submission):
    """1.0 when the submission mentions the ground truth, ignoring case."""
    truth = (sample.ground_truth or "").strip().lower()
    found = bool(truth) and truth in submission.lower()
    return GradeResult(
        score=1.0 if found else 0.0,
        rationale="mentions the answer" if found else f"does not mention {sample.ground_truth!r}",
        metadata={"length": len(submission)},
    )
