"""evaldeck in process, JSON in and verdicts out (mode C of its benchmark).

For each dataset line: json.loads, Trace.from_dict (pydantic), the case's expected block
validated as an EvalCase, and the four code graders its benchmark uses (Contains, ToolCalled,
Regex, MaxSteps), each reading its value from the case as evaldeck's graders do. The case
status is their AND, as evaldeck combines grades. Only that loop is timed.

usage: evaldeck_inproc.py DATASET.jsonl   (prints a JSON report)
"""

import json
import sys
import time

from evaldeck.graders.code import ContainsGrader, MaxStepsGrader, RegexGrader, ToolCalledGrader
from evaldeck.results import GradeStatus
from evaldeck.test_case import EvalCase
from evaldeck.trace import Trace


def main():
    dataset = sys.argv[1]
    graders = [ContainsGrader(), ToolCalledGrader(), RegexGrader(), MaxStepsGrader()]
    passed = failed = errored = count = 0
    start = time.perf_counter()
    with open(dataset, encoding="utf-8") as lines:
        for line in lines:
            data = json.loads(line)
            trace = Trace.from_dict(data["trajectory"])
            case = EvalCase.model_validate(
                {"name": data["name"], "turns": [{"user": data["input"], "expected": data["expected"]}]}
            )
            statuses = [g.grade(trace, case).status for g in graders]
            if GradeStatus.ERROR in statuses:
                errored += 1
            elif GradeStatus.FAIL in statuses:
                failed += 1
            else:
                passed += 1
            count += 1
    seconds = time.perf_counter() - start
    print(json.dumps({"samples": count, "passed": passed, "failed": failed, "errored": errored, "seconds": seconds}))


if __name__ == "__main__":
    main()
