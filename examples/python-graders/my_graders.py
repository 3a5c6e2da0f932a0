"""An evaldeck code grader: a function over the whole trace."""
from evaldeck import EvalCase, Trace
from evaldeck.results import GradeResult


def classified_once(trace: Trace, test_case: EvalCase) -> GradeResult:
    calls = [step for step in trace.tool_calls if step.tool_name == "classify"]
    if len(calls) == 1:
        return GradeResult.passed_result("classified_once", "one classify call")
    return GradeResult.failed_result(
        "classified_once", "expected exactly one classify call", expected="1", actual=str(len(calls))
    )
