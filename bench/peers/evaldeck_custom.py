"""evaldeck in process with the user's own graders: for each dataset line json.loads,
Trace.from_dict (pydantic), the case validated as an EvalCase (as mode C), then each function
through evaldeck's CustomGrader(module, function), which imports the module and calls the
function natively in CPython. Only that loop is timed.

usage: evaldeck_custom.py DATASET.jsonl MODULE_DIR MODULE FUNCTION...   (prints a JSON report)
"""

import json
import sys
import time

from evaldeck.graders.code import CustomGrader
from evaldeck.test_case import EvalCase
from evaldeck.trace import Trace


def main():
    dataset, folder, module, functions = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4:]
    sys.path.insert(0, folder)
    graders = {f: CustomGrader(module=module, function=f) for f in functions}
    statuses = {f: {} for f in functions}
    count = 0
    start = time.perf_counter()
    with open(dataset, encoding="utf-8") as lines:
        for line in lines:
            data = json.loads(line)
            trace = Trace.from_dict(data["trajectory"])
            case = EvalCase.model_validate(
                {"name": data["name"], "turns": [{"user": data["input"], "expected": data["expected"]}]}
            )
            for name, grader in graders.items():
                status = grader.grade(trace, case).status.value
                statuses[name][status] = statuses[name].get(status, 0) + 1
            count += 1
    seconds = time.perf_counter() - start
    print(json.dumps({"samples": count, "statuses": statuses, "seconds": seconds}))


if __name__ == "__main__":
    main()
