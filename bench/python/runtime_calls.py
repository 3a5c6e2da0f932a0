"""The interpreter runtime's own cost of a warm evaldeck call, under plain CPython (no
WebAssembly): `Runtime(sandboxed=False)` loads the seed's `my_graders` and grades every row of a
workload with its two functions, as gavel's warm instance calls them. Prints CPU µs per call
(`time.process_time`, five passes after a warm-up) or, with `profile`, cProfile's table.

    python3 bench/python/runtime_calls.py ROOT DATASET.jsonl [time|profile]

ROOT is a checkout of gavel (so two checkouts can be compared in turns); DATASET is the evaldeck
part of `bench-gen` (`bench-gen DIR 2000 --seed 1234 --parts evaldeck`).
"""

import cProfile
import json
import os
import pstats
import sys
import time

root, dataset = sys.argv[1], sys.argv[2]
mode = sys.argv[3] if len(sys.argv) > 3 else "time"
runtime_dir = os.path.join(root, "host", "runtime", "python")
sys.path[:0] = [runtime_dir, os.path.join(runtime_dir, "stubs")]
from gavel_runtime import Run, Runtime  # noqa: E402

seed = os.path.join(root, "host", "tests", "data", "python", "evaldeck-seed", "my_graders.py")
with open(seed, encoding="utf-8") as f:
    sources = [("my_graders", "my_graders.py", f.read(), None)]
runtime = Runtime(sandboxed=False)
runtime.load(sources, ["my_graders"])
calls = []
with open(dataset, encoding="utf-8") as lines:
    for line in lines:
        row = json.loads(line)
        calls.append((row, Run(recorded_format="evaldeck", recorded_value=json.dumps(row.pop("trajectory")))))
names = ["evaldeck-function:my_graders:check_booking_format", "evaldeck-function:my_graders:validate_search_args"]


def grade_all():
    return [runtime.grade(name, row, i, run, "", "{}") for i, (row, run) in enumerate(calls) for name in names]


grade_all()
if mode == "profile":
    profile = cProfile.Profile()
    profile.enable()
    grade_all()
    profile.disable()
    pstats.Stats(profile).sort_stats("cumulative").print_stats(25)
else:
    passes = []
    for _ in range(5):
        start = time.process_time()
        grade_all()
        passes.append((time.process_time() - start) / (len(calls) * len(names)) * 1e6)
    print(f"{len(calls) * len(names)} calls; CPU µs per call: {', '.join(f'{p:.1f}' for p in passes)}; min {min(passes):.1f}")
