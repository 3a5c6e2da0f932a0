"""How fast gavel reads recorded runs, against the SDKs' own parsers reading the same runs.

Two datasets of N rows are written from the recordings of host/tests/data/traces/: each row an
OpenAI Responses object (`responses-object.json`, the research response: reasoning, built-in
tool calls, a message) or an OTLP JSON trace (`otel-openinference.json`: an agent span, two
model calls), under its own id. Then, in one run, the entries take turns (median of --repeat
rounds):

- gavel: `gavel validate` of a suite over the dataset, which reads every row and converts its
  trajectory to the canonical model (a malformed one is an error), the process's whole time;
- openai: each line parsed (`json.loads`) and its trajectory made a `Response` by the SDK's
  `Response.model_validate` (checked), and by `Response.model_construct` (not checked);
- opentelemetry-proto: each line parsed and its trajectory made an `ExportTraceServiceRequest`
  by protobuf's `json_format.ParseDict`, as the collector's JSON is read into the OTLP message.

    python bench/traces_read.py --gavel target/release/gavel [--rows N] [--repeat R]

Prints a Markdown table (MB/s and rows/s of each entry) and writes it to
bench/results/traces-read.md.
"""

import argparse
import json
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

from google.protobuf import json_format
from openai.types.responses import Response
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

ROOT = Path(__file__).resolve().parent.parent
TRACES = ROOT / "host/tests/data/traces"

SUITE = """\
name: read
dataset: {dataset}
format: {format}
graders:
  steps:
    kind: tool
    function: max_steps
    config: {{max_steps: 100}}
"""


def valid(trajectory):
    """The recording as the SDK's validation takes it: the stand-in API that made it left a
    usage's `cache_write_tokens` unset, which the SDK's dump writes as null and its validation
    requires."""
    details = (trajectory.get("usage") or {}).get("input_tokens_details")
    if details is not None and details.get("cache_write_tokens") is None:
        details["cache_write_tokens"] = 0
    return trajectory


def write_dataset(work, name, recording, rows):
    """`rows` rows, each the recording under its own id; the dataset's path and size."""
    trajectory = valid(json.loads((TRACES / recording).read_text()))
    path = work / f"{name}.jsonl"
    with path.open("w") as out:
        for i in range(rows):
            out.write(json.dumps({"id": f"{name}-{i}", "trajectory": trajectory}) + "\n")
    return path, path.stat().st_size


def gavel_read(gavel, work, name, fmt):
    suite = work / f"{name}.yaml"
    suite.write_text(SUITE.format(dataset=f"{name}.jsonl", format=fmt))
    start = time.perf_counter()
    done = subprocess.run([gavel, "validate", str(suite)], capture_output=True, text=True)
    elapsed = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"gavel validate failed: {done.stderr}")
    return elapsed


def python_read(path, parse):
    start = time.perf_counter()
    with path.open() as rows:
        for line in rows:
            parse(json.loads(line)["trajectory"])
    return time.perf_counter() - start


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--gavel", required=True)
    parser.add_argument("--rows", type=int, default=20000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="gavel-traces-read-"))
    responses, responses_size = write_dataset(work, "responses", "responses-object.json",
                                              args.rows)
    otel, otel_size = write_dataset(work, "otel", "otel-openinference.json", args.rows)
    entries = [
        ("responses", responses_size, "gavel",
         lambda: gavel_read(args.gavel, work, "responses", "openai_responses")),
        ("responses", responses_size, "openai `Response.model_validate`",
         lambda: python_read(responses, Response.model_validate)),
        ("responses", responses_size, "openai `Response.model_construct`",
         lambda: python_read(responses, lambda d: Response.model_construct(**d))),
        ("otel", otel_size, "gavel", lambda: gavel_read(args.gavel, work, "otel", "otel")),
        ("otel", otel_size, "opentelemetry-proto `json_format.ParseDict`",
         lambda: python_read(otel, lambda d: json_format.ParseDict(
             d, ExportTraceServiceRequest()))),
    ]
    times = {i: [] for i in range(len(entries))}
    for _ in range(args.repeat):
        for i, (_, _, _, run) in enumerate(entries):
            times[i].append(run())
    lines = [
        f"{args.rows} rows a dataset, median of {args.repeat} rounds.",
        "",
        "| dataset | size | reader | seconds | MB/s | rows/s |",
        "|---|---:|---|---:|---:|---:|",
    ]
    for i, (dataset, size, reader, _) in enumerate(entries):
        seconds = statistics.median(times[i])
        lines.append(f"| {dataset} | {size / 1e6:.1f} MB | {reader} | {seconds:.3f} | "
                     f"{size / 1e6 / seconds:.1f} | {args.rows / seconds:,.0f} |")
    table = "\n".join(lines) + "\n"
    print(table)
    results = ROOT / "bench/results"
    results.mkdir(exist_ok=True)
    (results / "traces-read.md").write_text(table)


if __name__ == "__main__":
    main()
