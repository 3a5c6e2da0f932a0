"""letta_evals.graders.builtin (stand-in for letta-evals 0.26.0): the four built-in tool graders,
for user graders that build on them."""

import re

from letta_evals.decorators import grader
from letta_evals.models import GradeResult

_PRINTABLE = frozenset(chr(code) for code in range(32, 127))


@grader
def exact_match(sample, submission):
    if not sample.ground_truth:
        return GradeResult(score=0.0, rationale="No ground_truth answer provided")
    same = submission.strip() == sample.ground_truth.strip()
    return GradeResult(score=float(same), rationale=f"Exact match: {same}")


@grader
def contains(sample, submission):
    if not sample.ground_truth:
        return GradeResult(score=0.0, rationale="No ground_truth answer provided")
    found = sample.ground_truth.lower() in submission.lower()
    return GradeResult(score=float(found), rationale=f"Contains ground_truth: {found}")


@grader
def regex_match(sample, submission):
    if not sample.ground_truth:
        return GradeResult(score=0.0, rationale="No ground_truth regex pattern provided")
    try:
        found = bool(re.compile(sample.ground_truth).search(submission))
    except re.error as e:
        return GradeResult(score=0.0, rationale=f"Invalid regex pattern: {e}")
    return GradeResult(score=float(found), rationale=f"Regex match: {found}")


@grader
def ascii_printable_only(sample, submission):
    """Every character is printable ASCII (32..126); newlines and carriage returns are ignored."""
    bad = sorted({c for c in submission.replace("\n", "").replace("\r", "") if c not in _PRINTABLE})
    if not bad:
        return GradeResult(score=1.0, rationale="All characters printable ASCII (ignoring newlines)")
    shown = ", ".join(repr(c) for c in bad[:5])
    more = f" (+{len(bad) - 5} more)" if len(bad) > 5 else ""
    return GradeResult(score=0.0, rationale=f"Found non-printable ASCII characters: {shown}{more}")
