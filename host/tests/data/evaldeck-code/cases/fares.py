# fares.py: a grader that raises on a fare class it does not know.
from evaldeck import Trace, EvalCase
from evaldeck.results import GradeResult

FARES = {"economy": 120, "business": 480}


def check_fare(trace: Trace, test_case: EvalCase) -> GradeResult:
    """Looks the fare class the agent named up in FARES."""
    fare = FARES[(trace.output or "").split()[-1]]
    return GradeResult.passed_result("check_fare", f"fare {fare} for {test_case.name}")
