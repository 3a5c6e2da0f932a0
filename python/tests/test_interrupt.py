"""Ctrl-C while a suite grades: a KeyboardInterrupt in the grading Python process, promptly, and
the rows not yet started are not graded."""

from __future__ import annotations

import http.server
import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

ROWS = 200
# Each verdict is answered after this long, one at a time: grading every row takes a minute.
DELAY = 0.3

GRADE = """
import sys
import gavel

suite = gavel.Suite(sys.argv[1], cache_dir=sys.argv[2], workers=1)
print("grading", flush=True)
try:
    suite.grade(sys.argv[3])
except KeyboardInterrupt:
    print("interrupted", flush=True)
    sys.exit(130)
print("finished", flush=True)
"""


class SlowJudge(http.server.ThreadingHTTPServer):
    """An OpenAI-compatible judge answering every request with a passing verdict, slowly."""

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.asked = 0
        self.lock = threading.Lock()


class _Handler(http.server.BaseHTTPRequestHandler):
    server: SlowJudge

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("content-length", 0)))
        with self.server.lock:
            self.server.asked += 1
        time.sleep(DELAY)
        verdict = json.dumps({"score": 1.0, "rationale": "fine"})
        body = json.dumps(
            {
                "id": "chatcmpl-test",
                "object": "chat.completion",
                "model": "m",
                "choices": [
                    {
                        "index": 0,
                        "message": {"role": "assistant", "content": verdict},
                        "finish_reason": "stop",
                    }
                ],
                "usage": {"prompt_tokens": 10, "completion_tokens": 5},
            }
        ).encode()
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


def test_ctrl_c_stops_grading_and_raises_keyboard_interrupt(tmp_path: Path) -> None:
    judge = SlowJudge()
    threading.Thread(target=judge.serve_forever, daemon=True).start()
    base_url = f"http://127.0.0.1:{judge.server_address[1]}/v1"
    (tmp_path / "suite.yaml").write_text(
        "name: slow\ndataset: data.jsonl\ngraders:\n  quality:\n    kind: rubric\n"
        f"    prompt: 'Answer: {{submission}}'\n    model: m\n    base_url: {base_url}\n"
        "    concurrency: 1\n"
    )
    rows = [
        {
            "id": i,
            "input": "Capital of France?",
            "ground_truth": "Paris",
            "trajectory": [
                [
                    {"id": "a", "date": "2026-01-01T00:00:01Z",
                     "message_type": "assistant_message", "content": f"Answer {i}: Paris"}
                ]
            ],
        }
        for i in range(ROWS)
    ]
    (tmp_path / "data.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    child = subprocess.Popen(
        [sys.executable, "-c", GRADE, str(tmp_path / "suite.yaml"), str(tmp_path / "cache"),
         str(tmp_path / "data.jsonl")],
        cwd=tmp_path,
        env={**os.environ, "OPENAI_API_KEY": "sk-test"},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert child.stdout is not None
        assert child.stdout.readline() == "grading\n", child.stderr.read() if child.stderr else ""
        while judge.asked < 3:
            assert child.poll() is None, child.stderr.read() if child.stderr else ""
            time.sleep(0.01)
        child.send_signal(signal.SIGINT)
        out, err = child.communicate(timeout=120)
    finally:
        child.kill()
        judge.shutdown()
    assert child.returncode == 130, err
    assert out == "interrupted\n", err
    # The rows after the signal were not sent to the judge: grading stopped, not only the wait.
    assert judge.asked < ROWS // 2, judge.asked
