# my_graders.py: the graders of evaldeck 0.1.5's "Custom Graders" page, verbatim (the page's
# imports gathered at the top).
from evaldeck import Trace, EvalCase
from evaldeck.results import GradeResult, GradeStatus
from evaldeck.graders import BaseGrader


def check_booking_format(trace: Trace, test_case: EvalCase) -> GradeResult:
    """Check that booking confirmation follows expected format."""

    output = trace.output or ""

    # Check for confirmation number pattern
    import re
    pattern = r"Confirmation: [A-Z]{2}\d{6}"

    if re.search(pattern, output):
        return GradeResult(
            grader_name="check_booking_format",
            status=GradeStatus.PASS,
            message="Booking confirmation format is valid",
            score=1.0,
        )
    else:
        return GradeResult(
            grader_name="check_booking_format",
            status=GradeStatus.FAIL,
            message="Booking confirmation format is invalid",
            expected="Confirmation: XX000000",
            actual=output[:100],  # First 100 chars
            score=0.0,
        )


def validate_search_args(trace: Trace, test_case: EvalCase) -> GradeResult:
    """Ensure search tool was called with valid arguments."""

    for step in trace.tool_calls:
        if step.tool_name == "search_flights":
            args = step.tool_args or {}

            # Validate required fields
            if "from" not in args or "to" not in args:
                return GradeResult.failed_result(
                    "validate_search_args",
                    "Search missing required from/to arguments",
                    expected="from and to fields",
                    actual=str(args)
                )

            # Validate format
            if not args.get("from", "").isupper():
                return GradeResult.failed_result(
                    "validate_search_args",
                    "Airport code should be uppercase",
                    expected="NYC",
                    actual=args.get("from")
                )

    return GradeResult.passed_result(
        "validate_search_args",
        "Search arguments are valid"
    )


def quality_score(trace: Trace, test_case: EvalCase) -> GradeResult:
    """Calculate a quality score based on multiple factors."""

    score = 0.0
    details = {}

    # Factor 1: Efficiency (fewer steps = better)
    max_steps = test_case.expected.max_steps or 10
    step_ratio = len(trace.steps) / max_steps
    efficiency = max(0, 1 - step_ratio)
    score += efficiency * 0.3
    details["efficiency"] = efficiency

    # Factor 2: Tool selection
    expected_tools = set(test_case.expected.tools_called or [])
    actual_tools = trace.tools_called
    tool_overlap = len(expected_tools & actual_tools) / len(expected_tools) if expected_tools else 1
    score += tool_overlap * 0.4
    details["tool_selection"] = tool_overlap

    # Factor 3: Output quality (length heuristic)
    output_len = len(trace.output or "")
    length_score = min(1.0, output_len / 100)  # Up to 100 chars
    score += length_score * 0.3
    details["output_quality"] = length_score

    # Determine pass/fail
    threshold = 0.7
    status = GradeStatus.PASS if score >= threshold else GradeStatus.FAIL

    return GradeResult(
        grader_name="quality_score",
        status=status,
        message=f"Quality score: {score:.2f} (threshold: {threshold})",
        score=score,
        details=details,
    )


class TokenBudgetGrader(BaseGrader):
    """Ensure agent stays within token budget."""

    def __init__(self, max_tokens: int):
        self.max_tokens = max_tokens

    def grade(self, trace: Trace, test_case: EvalCase) -> GradeResult:
        total = trace.total_tokens

        if total <= self.max_tokens:
            return GradeResult.passed_result(
                "TokenBudgetGrader",
                f"Used {total} tokens (budget: {self.max_tokens})"
            )
        else:
            return GradeResult.failed_result(
                "TokenBudgetGrader",
                f"Exceeded token budget",
                expected=f"<= {self.max_tokens}",
                actual=str(total)
            )
