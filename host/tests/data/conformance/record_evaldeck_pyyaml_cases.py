"""Records how evaldeck 0.1.5 reads and grades the case files of evaldeck-pyyaml/, whose scalars
YAML 1.1 (PyYAML's `safe_load`) reads otherwise than YAML 1.2, into
evaldeck-pyyaml/recorded.json.

Run with the peers' venv (bench/.venv, see bench/run.sh):
    bench/.venv/bin/python host/tests/data/conformance/record_evaldeck_pyyaml_cases.py

Each case file of `cases/` and `refused/` is read by `EvalCase.from_yaml`. Recorded: the case as
`model_dump(mode="json")` writes it, and what evaldeck's suite path
(`Evaluator.evaluate_suite_async`, an agent replaying the traces of `traces.jsonl`, and of
`refused.jsonl` for `refused/`) makes of
it: the case's status, `failed_at_turn`, pass rate, `error`, and every turn's status, `skipped`
flag and grades (name, status, message), as record_evaldeck_turns.py records them; or, for a
file evaldeck refuses, its error.
"""
import asyncio
import json
import os

from evaldeck import EvalCase
from record_evaldeck_turns import grade

here = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "evaldeck-pyyaml")

traces = {}
for name in ("traces.jsonl", "refused.jsonl"):
    with open(os.path.join(here, name)) as f:
        for line in f:
            recorded = json.loads(line)
            first = recorded[0] if isinstance(recorded, list) else recorded
            traces[first["metadata"]["case_name"]] = (
                recorded if isinstance(recorded, list) else [recorded])


recorded = {}
for folder in ("cases", "refused"):
    for name in sorted(os.listdir(os.path.join(here, folder))):
        path = os.path.join(here, folder, name)
        try:
            case = EvalCase.from_yaml(path)
        except Exception as e:
            recorded[f"{folder}/{name}"] = {"error": str(e)}
            continue
        recorded[f"{folder}/{name}"] = {
            "case": case.model_dump(mode="json"),
            "expected": asyncio.run(grade(case, traces[case.name])),
        }

with open(os.path.join(here, "recorded.json"), "w") as out:
    json.dump(recorded, out, indent=1)
    out.write("\n")
