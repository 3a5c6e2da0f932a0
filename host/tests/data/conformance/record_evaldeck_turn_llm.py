"""Records how evaldeck 0.1.5 grades `llm` and `llm_rubric` entries of a case's turns, into
evaldeck-turn-llm-vectors.json.

Run with the peers' venv (bench/.venv, see bench/run.sh):
    bench/.venv/bin/python host/tests/data/conformance/record_evaldeck_turn_llm.py

A loopback endpoint answers each request with the scripted reply whose key the prompt contains,
and records the request: as a chat-completions endpoint (OPENAI_BASE_URL) and, for `claude*`
models, as the Messages API (ANTHROPIC_BASE_URL). `llm` entries are graded by
evaldeck's suite path (`Evaluator.evaluate_suite_async`, an agent replaying the recorded
traces); `llm_rubric` entries, which that path drops, by `LLMRubricGrader` built from the entry
(rubric and pass_threshold from `params`, model and threshold from the entry) on the turn's
trace and the case evaldeck makes of the turn (`turn_<index>`). Recorded: the requests' bodies
and every turn's status, `skipped` flag and grades (name, status, message, score, details).
"""
import asyncio
import json
import os
import threading
from http.server import BaseHTTPRequestHandler, HTTPServer

from evaldeck import EvalCase, Evaluator, Trace
from evaldeck.graders.llm import LLMRubricGrader
from evaldeck.test_case import EvalSuite

here = os.path.dirname(os.path.abspath(__file__))

# (key the prompt contains, the model's reply): the first key found answers.
REPLIES = [
    ("Execution Trace:", "VERDICT: PASS\nREASON: the trace shows it"),
    ("Booked UA12", "VERDICT: PASS\nREASON:  Polite and correct.\n"),
    ("dunno", "I'd say fail here: the agent did not answer."),
    ("Paris", "SCORE: 8\nVERDICT: FAIL\nREASON: mostly fine"),
    ("Lyon", "SCORE: 45 VERDICT: PASS REASON: too vague"),
    ("The answer is 42", "CRITERION: accuracy\nSCORE: 4\nREASON: right\n"
     "CRITERION: tone\nSCORE: 2\nREASON: curt\nTOTAL_SCORE: 6/10\nVERDICT: PASS"),
    ("(no output)", "Looks like a pass to me."),
    ("rude reply", "VERDICT: fail\nreason: rude"),
    ("Berlin", "VERDICT: PASS\nREASON: Right city."),
    ("The answer is 7", "CRITERION: accuracy\nSCORE: 1\nREASON: wrong\nVERDICT: FAIL"),
]
requests = []


class Handler(BaseHTTPRequestHandler):
    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers["content-length"])))
        requests.append(body)
        prompt = body["messages"][-1]["content"]
        text = next(reply for key, reply in REPLIES if key in prompt)
        if self.path.endswith("/messages"):
            answer = json.dumps({
                "id": "msg", "type": "message", "role": "assistant", "model": body["model"],
                "content": [{"type": "text", "text": text}], "stop_reason": "end_turn",
                "usage": {"input_tokens": 1, "output_tokens": 1},
            }).encode()
        else:
            answer = json.dumps({
                "id": "c", "object": "chat.completion", "created": 0, "model": body["model"],
                "choices": [{"index": 0, "finish_reason": "stop",
                             "message": {"role": "assistant", "content": text}}],
            }).encode()
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(answer)))
        self.end_headers()
        self.wfile.write(answer)

    def log_message(self, *args):
        pass


def trace(user, output):
    return {"input": user, "output": output, "status": "success", "steps": []}


RUBRIC = {"accuracy": "The answer is right", "tone": "The answer is friendly"}

# A turn's trace with a step of each type: llm calls (one longer than the 100 characters the
# summary keeps), tool calls with arguments of every JSON kind and results of several (a list,
# a text longer than 200 characters, an empty text with an error, a 0, none), reasoning and
# human input.
STEPS = [
    {"type": "llm_call", "model": "m", "input": "plan", "output": "I will look it up. " * 8,
     "tokens": {"prompt_tokens": 5, "completion_tokens": 5, "total_tokens": 10}},
    {"type": "tool_call", "tool_name": "lookup",
     "tool_args": {"q": "it's \"here\"", "n": 3, "f": 0.1, "big": 1e16, "none": None,
                   "ok": True, "list": [1, "a", {"é": False}]},
     "tool_result": [{"id": "A1", "price": 299.5}, None]},
    {"type": "tool_call", "tool_name": "fetch", "tool_args": {"url": "x"},
     "tool_result": "line\n" + "é" * 250},
    {"type": "tool_call", "tool_name": "broken", "tool_args": {}, "tool_result": "",
     "status": "failure", "error": "timed out"},
    {"type": "tool_call", "tool_name": "count", "tool_args": {}, "tool_result": 0},
    {"type": "tool_call", "tool_name": "silent", "tool_args": {"k": []}},
    {"type": "reasoning", "reasoning_text": "Now I know. " * 10},
    {"type": "human_input", "input": "go on"},
    {"type": "llm_call", "model": "m", "input": "answer"},
]

# (note, case as a YAML file would hold it, traces of its turns in order)
CASES = [
    ("default prompt, VERDICT and REASON",
     {"name": "default", "turns": [{"user": "Book a flight", "graders": [{"type": "llm"}]}]},
     [trace("Book a flight", "Booked UA12")]),
    ("custom prompt with the case name and a conversion; no VERDICT: FAIL alone fails",
     {"name": "custom", "turns": [{"user": "Where is it?", "graders": [{
         "type": "LLM", "model": "gpt-4.1-mini",
         "prompt": "Case {test_case_name}: does '{output}' answer {input!r}? {task}"}]}]},
     [trace("Where is it?", "dunno")]),
    ("threshold with SCORE out of 10 overrides the VERDICT",
     {"name": "scored", "turns": [{"user": "Capital of France?", "graders": [{
         "type": "llm", "threshold": 0.7}]}]},
     [trace("Capital of France?", "Paris")]),
    ("threshold with SCORE out of 100 fails below it",
     {"name": "scored-low", "turns": [{"user": "Second city?", "graders": [{
         "type": "llm", "threshold": 0.5}]}]},
     [trace("Second city?", "Lyon")]),
    ("no output, and a reply that only says pass",
     {"name": "empty", "turns": [{"user": "Say nothing", "graders": [{"type": "llm"}]}]},
     [trace("Say nothing", "")]),
    ("a failing llm turn skips the rest",
     {"name": "multi", "turns": [
         {"user": "Greet me", "expected": {"output_contains": ["rude"]},
          "graders": [{"type": "llm"}]},
         {"user": "Again", "graders": [{"type": "llm"}]}]},
     [trace("Greet me", "a rude reply")]),
    ("{trace} and {expected}: the trace summary and the turn's expected block as a Python dict",
     {"name": "traced", "turns": [
         {"user": "Look it up", "expected": {
             "output_contains": ["found"], "max_steps": 12, "task_completed": True,
             "tools_not_called": [], "custom": {"note": None, "weight": 2.0, "tags": ["a"]}},
          "graders": [{"type": "llm",
                       "prompt": "Expected: {expected}\n{trace}\nOutput: {output}"}]},
         {"user": "And again", "graders": [{"type": "llm", "prompt": "{expected!r} {trace}"}]}]},
     [dict(trace("Look it up", "found it"), steps=STEPS), trace("And again", "again")]),
    ("llm_rubric: the rubric prompt, its first SCORE, its threshold",
     {"name": "rubric", "turns": [
         {"user": "What is six times seven?", "graders": [{
             "type": "llm_rubric", "model": "gpt-4o", "threshold": 0.3,
             "params": {"rubric": RUBRIC, "pass_threshold": 0.9}}]}]},
     [trace("What is six times seven?", "The answer is 42")]),
    ("a claude model is asked on the Messages API",
     {"name": "claude", "turns": [{"user": "Capital of Germany?", "graders": [{
         "type": "llm", "model": "claude-3-5-haiku-latest"}]}]},
     [trace("Capital of Germany?", "Berlin")]),
    ("llm_rubric with a claude model",
     {"name": "claude-rubric", "turns": [
         {"user": "What is three plus four?", "graders": [{
             "type": "llm_rubric", "model": "claude-sonnet-4-5",
             "params": {"rubric": RUBRIC}}]}]},
     [trace("What is three plus four?", "The answer is 7")]),
]


def grade_row(g):
    return [g.grader_name, g.status.value, g.message, g.score, g.details]


async def grade(case, traces):
    # The agent replays the recorded traces, one a turn.
    replayed = iter([Trace(**t) for t in traces])
    suite = EvalSuite(name="vectors", test_cases=[case])
    run = Evaluator().evaluate_suite_async(suite, lambda user, history: next(replayed))
    result = (await run).results[0]
    turns = [
        {"turn_index": t.turn_index, "status": t.status.value, "skipped": t.skipped,
         "grades": [grade_row(g) for g in t.grades]}
        for t in result.turn_results
    ]
    # The suite path drops llm_rubric entries: graded as the grader built from the entry.
    for index, turn in enumerate(case.turns):
        for entry in turn.graders:
            if entry.type.lower() != "llm_rubric" or turns[index]["skipped"]:
                continue
            grader = LLMRubricGrader(
                rubric=entry.params["rubric"],
                pass_threshold=entry.params.get("pass_threshold", 0.7),
                model=entry.model or "gpt-4o-mini", threshold=entry.threshold)
            g = await grader.grade_async(
                Trace(**traces[index]), EvalCase(name=f"turn_{index}", turns=[turn]))
            turns[index]["grades"].append(grade_row(g))
            if g.status.value != "pass":
                turns[index]["status"] = g.status.value
    return turns


server = HTTPServer(("127.0.0.1", 0), Handler)
threading.Thread(target=server.serve_forever, daemon=True).start()
os.environ["OPENAI_BASE_URL"] = f"http://127.0.0.1:{server.server_port}/v1"
os.environ["OPENAI_API_KEY"] = "sk-test"
os.environ["ANTHROPIC_BASE_URL"] = f"http://127.0.0.1:{server.server_port}"
os.environ["ANTHROPIC_API_KEY"] = "sk-ant-test"

vectors = []
for note, data, traces in CASES:
    case = EvalCase._from_dict(json.loads(json.dumps(data)))
    requests.clear()
    turns = asyncio.run(grade(case, traces))
    vectors.append({
        "note": note,
        "case": case.model_dump(mode="json"),
        "traces": traces,
        "requests": list(requests),
        "turns": turns,
    })
server.shutdown()

with open(os.path.join(here, "evaldeck-turn-llm-vectors.json"), "w") as out:
    json.dump({"replies": REPLIES, "vectors": vectors}, out, indent=1)
    out.write("\n")
