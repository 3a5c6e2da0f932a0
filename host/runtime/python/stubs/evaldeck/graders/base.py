"""evaldeck.graders.base (stand-in for evaldeck 0.1.5)."""

import asyncio
from abc import ABC, abstractmethod

from evaldeck.results import GradeResult, GradeStatus


class BaseGrader(ABC):
    """What every grader is: `grade(trace, test_case) -> GradeResult`."""

    name = "base"

    @abstractmethod
    def grade(self, trace, test_case):
        pass

    async def grade_async(self, trace, test_case):
        # evaldeck hands the sync grade to a worker thread; the sandbox has one thread, and the
        # result is the same.
        return self.grade(trace, test_case)

    def __repr__(self):
        return f"{self.__class__.__name__}()"


class CompositeGrader(BaseGrader):
    name = "composite"

    def __init__(self, graders, require_all=True):
        self.graders = graders
        self.require_all = require_all

    def grade(self, trace, test_case):
        return self._combine_results([g.grade(trace, test_case) for g in self.graders])

    async def grade_async(self, trace, test_case):
        results = []
        for grader in self.graders:
            try:
                results.append(await grader.grade_async(trace, test_case))
            except Exception as e:
                results.append(GradeResult.error_result(grader.name, f"Grader error: {e}"))
        return self._combine_results(results)

    def _combine_results(self, results):
        passed = sum(1 for r in results if r.passed)
        total = len(results)
        if self.require_all:
            ok = passed == total
            message = f"{passed}/{total} graders passed"
        else:
            ok = passed > 0
            message = f"{passed}/{total} graders passed (require any)"
        return GradeResult(
            grader_name=self.name,
            status=GradeStatus.PASS if ok else GradeStatus.FAIL,
            message=message,
            details={"results": [r.model_dump() for r in results]},
        )
