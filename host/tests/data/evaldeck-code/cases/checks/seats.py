# checks/seats.py: a module named by a dotted name, `checks.seats`.
from evaldeck.results import GradeResult, GradeStatus


def count_seats(trace, test_case):
    """Passes with half marks when the agent names a seat count, with the count in details."""
    words = (trace.output or "").split()
    seats = [int(w) for w in words if w.isdigit()]
    return GradeResult(
        grader_name="count_seats",
        status=GradeStatus.PASS if seats else GradeStatus.FAIL,
        message=f"{len(seats)} seat counts in {test_case.input!r}",
        score=0.5,
        details={"seats": seats},
    )
