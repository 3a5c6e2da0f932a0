"""Records how letta-evals 0.26.0 grades its own example suites, into vectors.json.

Run with the peers' venv (bench/.venv, see bench/run.sh):
    bench/.venv/bin/python host/tests/data/letta-examples/record.py

For every example suite letta-evals loads and gavel can grade, this writes the recorded runs of
its samples (`runs.jsonl` beside the suite: one letta-evals result line per sample, a synthetic
trajectory of Letta messages, some that pass and some that fail) and records what letta-evals
itself makes of them, offline: the suite is loaded by `SuiteSpec.from_yaml`, its dataset by
`load_dataset`, and every sample goes through `Runner.run_sample` with the recorded runs as its
cache of trajectories (what `letta-evals run --cached` does), so the graders, extractors, the
per-turn mode, error detection and the reward composer are letta-evals' own; the summary is
`summarize_model`'s. The suite's setup script is not run (it prepares a live agent), and a
`sandbox:` is dropped as letta-evals' in-sandbox runner drops it: the grading inside the sandbox
is the same code run there.

The judge of the rubric suites is a loopback server here: it answers each request with a verdict
drawn from a hash of the prompt, and every request and reply is recorded, so that the test can
answer gavel's requests with the same replies and check that gavel sent the same prompts.
"""
import asyncio
import hashlib
import json
import os
import sys
import threading
import types
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

sys.dont_write_bytecode = True
here = Path(__file__).resolve().parent

JUDGED = []


class Judge(BaseHTTPRequestHandler):
    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers["content-length"])))
        prompt = body["messages"][-1]["content"]
        digest = hashlib.sha256(prompt.encode()).hexdigest()
        score = [0.0, 0.25, 0.5, 0.75, 1.0][int(digest, 16) % 5]
        content = json.dumps({"score": score, "rationale": f"judged {digest[:8]}: {score}"})
        JUDGED.append({"request": body, "reply": content})
        reply = json.dumps({
            "id": "chatcmpl-test", "object": "chat.completion", "created": 0, "model": body["model"],
            "choices": [{"index": 0, "finish_reason": "stop",
                         "message": {"role": "assistant", "content": content}}],
            "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
        }).encode()
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(reply)))
        self.end_headers()
        self.wfile.write(reply)

    def log_message(self, *args):
        pass


server = ThreadingHTTPServer(("127.0.0.1", 0), Judge)
threading.Thread(target=server.serve_forever, daemon=True).start()
os.environ["OPENAI_BASE_URL"] = f"http://127.0.0.1:{server.server_address[1]}/v1"
os.environ["OPENAI_API_KEY"] = "sk-recorder"

from letta_evals.datasets.loader import load_dataset  # noqa: E402
from letta_evals.execution.grading import validate_rubric_vars  # noqa: E402
from letta_evals.metrics import summarize_model  # noqa: E402
from letta_evals.models import SampleResult  # noqa: E402
from letta_evals.models.specs import SuiteSpec  # noqa: E402
from letta_evals.runner import Runner  # noqa: E402

import yaml  # noqa: E402


class Messages:
    """Letta messages of one recorded run, numbered in order."""

    def __init__(self, run):
        self.run = run
        self.n = 0

    def _message(self, kind, **fields):
        self.n += 1
        return {"id": f"message-{self.run}-{self.n}", "date": f"2026-03-01T10:00:{self.n:02d}Z",
                "message_type": kind, **fields}

    def user(self, text):
        return self._message("user_message", content=text)

    def reasoning(self, text):
        return self._message("reasoning_message", reasoning=text)

    def assistant(self, text):
        return self._message("assistant_message", content=text)

    def call(self, name, arguments, call_id):
        call = {"name": name, "arguments": json.dumps(arguments), "tool_call_id": call_id}
        return self._message("tool_call_message", tool_call=call, tool_calls=[call])

    def result(self, call_id, text, status="success"):
        return self._message("tool_return_message", tool_return=text, status=status,
                             tool_call_id=call_id)


def replies(prefix, exchanges, start=0):
    """Runs of one turn each: the question, the agent's reasoning, its reply."""
    runs = []
    for i, (question, answer) in enumerate(exchanges, start):
        m = Messages(f"{prefix}-{i}")
        runs.append([[m.user(question), m.reasoning("Reading the request."), m.assistant(answer)]])
    return runs


def ticket_runs():
    return replies("ticket", [
        ("Classify this ticket.", '```json\n{"category": "incident", "priority": "high"}\n```'),
        ("Classify this ticket.", 'Here you go: {"category": "Feature", "priority": "medium"} Thanks!'),
        ("Classify this ticket.", "This looks like a bug report with medium urgency."),
    ])


def bug_fix_runs():
    m = Messages("fix-0")
    fixed = [[m.user("Find and fix the bug in sandbox/task_1.py."),
              m.reasoning("The loop stops one short."),
              m.call("Read", {"file_path": "/mnt/suite/sandbox/task_1.py"}, "call-read-1"),
              m.result("call-read-1", "def total(xs):\n    return sum(xs[:-1])\n"),
              m.call("Edit", {"file_path": "/mnt/suite/sandbox/task_1.py",
                              "old_string": "xs[:-1]", "new_string": "xs"}, "call-edit-1"),
              m.result("call-edit-1", "The file has been updated."),
              m.assistant('Fixed the off-by-one.\n```json\n{"file_path": "/mnt/suite/sandbox/task_1.py"}\n```')]]
    return [fixed] + replies("fix", [
        ("Find and fix the bug in sandbox/task_2.py.", "I fixed the bug in sandbox/task_2.py."),
        ("Find and fix the bug in sandbox/task_3.py.", 'Done: {"path": "/mnt/suite/sandbox/task_3.py"}'),
    ], start=1)


ART = [
    "```\n /\\_/\\\n( o.o )\n > ^ <\n```",
    "Here is a dog:\n```\n  / \\__\n (    @\\___\n /         O\n```",
    "```\n><(((\u00ba>\n```",
    "A bird \U0001F426",
    None,
]


def art_runs(prefix, rows):
    runs = []
    for i in range(rows):
        m = Messages(f"{prefix}-{i}")
        turn = [m.user("Send me your best version of ASCII art.")]
        art = ART[i % len(ART)]
        if art is None:
            # The agent drew nothing: it only looked something up.
            turn += [m.call("web_search", {"query": "ascii rabbit"}, f"call-{i}"),
                     m.result(f"call-{i}", "no results", status="error")]
        else:
            turn += [m.reasoning("Drawing it line by line."), m.assistant(art)]
        runs.append([turn])
    return runs


def per_turn_runs():
    answers = [["Paris", "Berlin", "Rome"], ["4", "13", "3"], ["The sky is blue.", "green"]]
    runs = []
    for i, replies in enumerate(answers):
        m = Messages(f"turns-{i}")
        runs.append([[m.user(f"question {t}"), m.assistant(reply)] for t, reply in enumerate(replies)])
    return runs


def inventory_runs():
    updates = [("Widget A", "10"), ("Gadget B", "-5"), ("Device C", "20"), (None, "15"), None]
    runs = []
    for i, update in enumerate(updates):
        m = Messages(f"inventory-{i}")
        turn = [m.user("Update the inventory.")]
        if update is not None:
            name, change = update
            call_id = f"call-inventory-{i}"
            turn.append(m.call("evals_ci_manage_inventory_tool", {"change": int(change)}, call_id))
            if name is None:
                turn.append(m.result(call_id, "Error: SKU-101 not found", status="error"))
            else:
                turn.append(m.result(call_id, f"Updated inventory for {name} with a quantity change of {change}"))
        turn.append(m.assistant("Done." if update else "I could not find the inventory tool."))
        runs.append([turn])
    return runs


# (folder, suites in it, recorded runs of its samples in dataset order)
EXAMPLES = [
    ("custom-tool-grader-and-extractor", ["suite.yaml"], ticket_runs),
    ("letta-code-simple-edit", ["suite.yaml"], bug_fix_runs),
    ("multi-model-simple-rubric-grader", ["suite.yaml"], lambda: art_runs("art", 5)),
    ("multiturn-per-turn-grading", ["suite.yaml"], per_turn_runs),
    ("per-sample-rubric", ["suite.yaml"], lambda: art_runs("rubric", 3)),
    ("programmatic-agent-creation", ["suite.yaml"], inventory_runs),
    ("reward-composition", ["suite.logical-and.yaml", "suite.weighted-average.yaml"],
     lambda: art_runs("reward", 5)),
]


def grade_vector(grade, submission):
    metadata = {k: v for k, v in grade.metadata.items() if k not in ("extraction_time", "usage")}
    vector = {"score": grade.score, "rationale": grade.rationale, "submission": submission,
              "metadata": metadata}
    if grade.per_turn_grades is not None:
        vector["per_turn"] = [{"turn": t.turn, "score": t.score, "rationale": t.rationale,
                               "submission": t.submission} for t in grade.per_turn_grades]
    return vector


async def record_suite(folder, name, runs_file):
    path = here / folder / name
    data = yaml.safe_load(path.read_text())
    data.pop("sandbox", None)
    spec = SuiteSpec.from_yaml(data, base_dir=path.parent, suite_path=path)
    samples = list(load_dataset(spec.dataset, max_samples=spec.max_samples,
                                sample_tags=spec.sample_tags, base_dir=spec.base_dir))
    validate_rubric_vars(spec, samples)
    handle = spec.target.model_handles[0]
    cached = [SampleResult.model_validate({**json.loads(line), "timing": {"total": 0.0, "target": 0.0}})
              for line in runs_file.read_text().splitlines()]
    cache = types.SimpleNamespace(runs={handle: types.SimpleNamespace(results=cached)})
    runner = Runner(suite=spec, max_concurrent=1, cached_results=cache)
    JUDGED.clear()
    results = [await runner.run_sample(sample, model_handle=handle) for sample in samples]
    summary = summarize_model(model=handle, results=results, grader_keys=runner.grader_keys)
    return {
        "suite": f"{folder}/{name}",
        "runs": f"{folder}/{runs_file.name}",
        "model_handle": handle,
        "samples": [{
            "sample_id": r.sample_id,
            "grades": {k: grade_vector(g, r.submissions.get(k)) for k, g in r.grades.items()},
            "reward": r.reward.model_dump() if r.reward else None,
            "error": r.error.model_dump(mode="json") if r.error else None,
        } for r in results],
        "summary": {"n_total": summary.n_total, "n_attempted": summary.n_attempted,
                    "per_metric": summary.per_metric, "reward": summary.reward},
        "judge": list(JUDGED),
    }


async def main():
    vectors = []
    for folder, suites, runs in EXAMPLES:
        runs_file = here / folder / "runs.jsonl"
        with open(runs_file, "w") as f:
            for i, trajectory in enumerate(runs()):
                f.write(json.dumps({"sample_id": i, "agent_id": f"agent-{folder}-{i}",
                                    "model_handle": "recorded", "trajectory": trajectory}) + "\n")
        for name in suites:
            vectors.append(await record_suite(folder, name, runs_file))
    with open(here / "vectors.json", "w") as f:
        json.dump({"letta_evals": "0.26.0", "suites": vectors}, f, indent=1, ensure_ascii=False)
        f.write("\n")
    print(f"{len(vectors)} suites recorded")


asyncio.run(main())
