"""Records how evaldeck 0.1.5 grades the cases in cases/ with their `type: code` entries, into
expected.json.

Run with the peers' venv (bench/.venv, see bench/run.sh):
    bench/.venv/bin/python host/tests/data/evaldeck-code/record.py

The cases' `my_graders` is the seed's (`../python/evaldeck-seed/my_graders.py`, which the tests
copy beside the case files); `fares` is in cases/.

evaldeck's `Evaluator._create_grader_from_config` builds no grader for a `code` entry (it drops
it); here it builds the one evaldeck documents, `CustomGrader(module=..., function=...)`, with
cases/ on the import path, and every other entry as evaldeck does. The cases are read by
`EvalCase.from_yaml` in gavel's order and graded by evaldeck's suite path
(`Evaluator.evaluate_suite_async`), an agent replaying each case's recorded traces turn by turn.
Recorded: each case's status, `failed_at_turn` and pass rate, and every turn's status, `skipped`
flag and grades (grader name, status, message, score, expected, actual, details).
"""
import asyncio
import glob
import json
import os
import sys

here = os.path.dirname(os.path.abspath(__file__))
cases_dir = os.path.join(here, "cases")
sys.path.insert(0, cases_dir)
sys.path.insert(1, os.path.join(here, "..", "python", "evaldeck-seed"))

from evaldeck import EvalCase, Evaluator, Trace  # noqa: E402
from evaldeck.graders.code import CustomGrader  # noqa: E402
from evaldeck.test_case import EvalSuite, GraderConfig  # noqa: E402

dropped = Evaluator._create_grader_from_config


def create_grader(self, config):
    if isinstance(config, GraderConfig) and config.type.lower() == "code":
        return CustomGrader(module=config.module, function=config.function)
    return dropped(self, config)


Evaluator._create_grader_from_config = create_grader

traces = {}
with open(os.path.join(here, "traces.jsonl")) as lines:
    for line in lines:
        recorded = json.loads(line)
        recorded = recorded if isinstance(recorded, list) else [recorded]
        traces[recorded[0]["metadata"]["case_name"]] = recorded


async def grade(case):
    queue = [Trace(**t) for t in traces[case.name]]

    def agent(user, history):
        return queue.pop(0)

    suite = EvalSuite(name="code", test_cases=[case])
    result = (await Evaluator().evaluate_suite_async(suite, agent)).results[0]
    return {
        "name": case.name,
        "status": result.status.value,
        "failed_at_turn": result.failed_at_turn,
        "pass_rate": result.pass_rate,
        "turns": [
            {
                "turn_index": t.turn_index,
                "status": t.status.value,
                "skipped": t.skipped,
                "grades": [
                    {
                        "grader_name": g.grader_name,
                        "status": g.status.value,
                        "message": g.message,
                        "score": g.score,
                        "expected": g.expected,
                        "actual": g.actual,
                        "details": g.details,
                    }
                    for g in t.grades
                ],
            }
            for t in result.turn_results
        ],
    }


files = sorted(glob.glob(os.path.join(cases_dir, "*.yaml")))
recorded = [asyncio.run(grade(EvalCase.from_yaml(f))) for f in files]
with open(os.path.join(here, "expected.json"), "w") as out:
    json.dump(recorded, out, indent=1)
    out.write("\n")
