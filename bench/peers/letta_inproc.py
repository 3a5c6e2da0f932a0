"""letta-evals in process, JSON in and JSON out (mode E of its benchmark).

For each dataset line: json.loads, pydantic validation of the sample and of its trajectory,
the runner's grading core (grade_sample over the suite's graders, detect_errors, the metric
reward, a SampleResult) and model_dump_json, written to OUT. Only that loop is timed; imports
and suite loading are not.

usage: letta_inproc.py SUITE.yaml DATASET.jsonl OUT.jsonl   (prints a JSON report)
"""

import asyncio
import json
import sys
import time
from pathlib import Path
from typing import List

import yaml
from pydantic import TypeAdapter

from letta_evals.datasets.loader import _json_sample_id
from letta_evals.execution.grading import detect_errors, grade_sample
from letta_evals.models import LettaMessageUnion, Sample, SampleResult, SuiteSpec, Timing
from letta_evals.rewards import RewardContext
from letta_evals.runner import Runner

MODEL = "bench-model"


async def grade_file(runner, dataset, out):
    trajectory_adapter = TypeAdapter(List[List[LettaMessageUnion]])
    scores = {key: 0.0 for key in runner.graders}
    errors = 0
    count = 0
    with open(dataset, encoding="utf-8") as lines, open(out, "w", encoding="utf-8") as sink:
        for index, line in enumerate(lines):
            t0 = time.perf_counter()
            data = json.loads(line)
            sample = Sample(id=_json_sample_id(data, index), input=data["input"], ground_truth=data.get("ground_truth"))
            trajectory = trajectory_adapter.validate_python(data["trajectory"])
            agent_id = f"agent-{sample.id}"
            grades, submissions, per_grader = await grade_sample(
                sample, trajectory, None, runner.graders, sample.id, agent_id, MODEL, None
            )
            error = detect_errors(grades, trajectory, submissions)
            extraction = sum(g.metadata.get("extraction_time", 0.0) for g in grades.values())
            timing = Timing(
                total=time.perf_counter() - t0,
                target=0.0,
                extraction=extraction if extraction > 0 else None,
                per_grader=per_grader,
            )
            reward = None
            if error is None:
                reward = await runner.reward_composer(
                    RewardContext(
                        sample=sample,
                        grades=grades,
                        submissions=submissions,
                        trajectory=trajectory,
                        agent_id=agent_id,
                        model_handle=MODEL,
                        agent_state=None,
                        usage=None,
                        timing=timing,
                    )
                )
            result = SampleResult(
                sample_id=sample.id,
                agent_id=agent_id,
                model_handle=MODEL,
                trajectory=trajectory,
                submissions=submissions,
                grades=grades,
                reward=reward,
                timing=timing,
                error=error,
            )
            sink.write(result.model_dump_json(exclude_none=True))
            sink.write("\n")
            count += 1
            if error is None:
                for key, grade in grades.items():
                    scores[key] += grade.score
            else:
                errors += 1
    attempted = count - errors
    return {
        "samples": count,
        "errored": errors,
        "mean_scores": {k: (v / attempted if attempted else 0.0) for k, v in scores.items()},
    }


def main():
    suite_path, dataset, out = (Path(a) for a in sys.argv[1:4])
    suite = SuiteSpec.from_yaml(
        yaml.safe_load(suite_path.read_text()), base_dir=suite_path.parent, suite_path=suite_path
    )
    runner = Runner(suite, max_concurrent=1)
    start = time.perf_counter()
    report = asyncio.run(grade_file(runner, dataset, out))
    report["seconds"] = time.perf_counter() - start
    print(json.dumps(report))


if __name__ == "__main__":
    main()
