"""Writes host/tests/data/evaldeck-check-errors.json: how evaldeck 0.1.5 grades a case whose
`expected.output_matches` is not a valid regex, beside a check that passes and one that fails.

evaldeck's own evaluator builds no grader for `output_matches`; gavel checks it, so the case is
graded here with evaldeck's graders for every key set, in gavel's order, each reading its value
from the case as it does when built by the evaluator. Run with CPython 3.11 and evaldeck 0.1.5:

    python3.11 host/src/grade/builtin/gen_evaldeck_check_errors.py \
        > host/tests/data/evaldeck-check-errors.json
"""

import json
import sys

from evaldeck import EvalCase, Evaluator, Trace
from evaldeck.graders.code import ContainsGrader, RegexGrader, ToolCalledGrader
from evaldeck.trace import Step

PATTERNS = ["[bad", "(", "a)", "*a", "a{2,1}", "(?P<1>x)", "x(?P=n)", "(?z)", "(?<=a+)b", "\\p{L}"]


def record(pattern):
    expected = {"output_contains": ["nowhere"], "output_matches": pattern, "tools_called": ["search"]}
    case = EvalCase._from_dict({"name": "bad-regex", "input": "u", "expected": dict(expected)})
    trace = Trace(
        input="u",
        output="done",
        steps=[Step.tool_call(tool_name="search", tool_args={}, tool_result="r")],
    )
    graders = [ContainsGrader(), RegexGrader(), ToolCalledGrader()]
    result = Evaluator(graders=graders).evaluate(trace, case)
    return {
        "expected": expected,
        "trace": {
            "input": "u",
            "output": "done",
            "status": "success",
            "steps": [{"type": "tool_call", "tool_name": "search", "tool_args": {}, "tool_result": "r"}],
        },
        "status": result.status.value,
        "pass_rate": result.pass_rate,
        "grades": [[g.grader_name, g.status.value, g.message] for g in result.grades],
    }


json.dump([record(p) for p in PATTERNS], sys.stdout, ensure_ascii=False, indent=1)
sys.stdout.write("\n")
