"""Records what evaldeck 0.1.5 grades on data.jsonl with my_graders.py, into expected.json.

Run with the peers' venv (bench/.venv, see bench/run.sh):
    bench/.venv/bin/python host/tests/data/python/evaldeck-seed/record.py
Each row becomes an EvalCase the way evaldeck loads a case file, its trajectory a Trace, and each
grader runs as evaldeck runs a `type: code` grader (`CustomGrader`, which turns an exception into
an error result) or a grader class built with its params.
"""
import json
import os
import sys

here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, here)

from evaldeck import EvalCase, Trace  # noqa: E402
from evaldeck.graders.code import CustomGrader  # noqa: E402

import my_graders  # noqa: E402

GRADERS = {
    "booking": lambda: CustomGrader(module="my_graders", function="check_booking_format"),
    "search": lambda: CustomGrader(module="my_graders", function="validate_search_args"),
    "quality": lambda: CustomGrader(module="my_graders", function="quality_score"),
    "budget": lambda: my_graders.TokenBudgetGrader(max_tokens=1000),
}

expected = []
with open(os.path.join(here, "data.jsonl")) as rows:
    for line in rows:
        row = json.loads(line)
        trace = Trace(**row["trajectory"])
        case = EvalCase._from_dict(
            {k: row[k] for k in ("name", "input", "expected") if k in row}
        )
        for key, make in GRADERS.items():
            result = make().grade(trace, case)
            expected.append({
                "id": row["id"],
                "grader": key,
                "status": result.status.value,
                "score": result.score,
                "message": result.message,
                "expected": result.expected,
                "actual": result.actual,
                "details": result.details,
            })

with open(os.path.join(here, "expected.json"), "w") as out:
    json.dump(expected, out, indent=1)
    out.write("\n")
