"""Records how evaldeck 0.1.5 grades cases in its `turns:` shape, into evaldeck-turn-vectors.json.

Run with the peers' venv (bench/.venv, see bench/run.sh):
    bench/.venv/bin/python host/tests/data/conformance/record_evaldeck_turns.py

Each vector is a case as `EvalCase.model_dump()` writes it, the recorded traces of its turns (one
per turn; fewer where the run stopped early), and what evaldeck's suite path
(`Evaluator.evaluate_suite_async`, which `evaldeck run` uses) makes of them: an agent that replays
the recorded traces turn by turn. Recorded: the case's status, `failed_at_turn`, its pass rate, its `error` and
every turn's status, `skipped` flag and grades (name, status, message).
"""
import asyncio
import json
import os

from evaldeck import EvalCase, Evaluator, Trace
from evaldeck.test_case import EvalSuite

here = os.path.dirname(os.path.abspath(__file__))


def trace(output, tools=(), status="success", llm_calls=0, reasoning=0):
    steps = [{"type": "llm_call", "model": "m", "input": "q", "output": "a",
              "tokens": {"prompt_tokens": 5, "completion_tokens": 5, "total_tokens": 10}}
             for _ in range(llm_calls)]
    steps += [{"type": "reasoning", "reasoning_text": "think"} for _ in range(reasoning)]
    steps += [{"type": "tool_call", "tool_name": t, "tool_args": {}, "tool_result": "ok"}
              for t in tools]
    return {"input": "u", "output": output, "status": status, "steps": steps}


# (note, case as a YAML file would hold it, traces of its turns in order)
CASES = [
    ("single turn via turns: every expected key evaldeck checks passes",
     {"name": "single-pass", "turns": [{"user": "Book a flight to NYC", "expected": {
         "output_contains": ["booked"], "output_not_contains": ["sorry"],
         "tools_called": ["search", "book"], "tools_not_called": ["cancel"],
         "tool_call_order": ["search", "book"], "max_steps": 4, "max_tool_calls": 2,
         "max_llm_calls": 1, "task_completed": True}}]},
     [trace("Booked: UA1", ["search", "book"], llm_calls=1)]),
    ("single turn via turns: failing checks, their messages",
     {"name": "single-fail", "turns": [{"user": "Book a flight", "expected": {
         "output_contains": ["confirmation", "booked"], "tools_called": ["book", "search"],
         "tool_call_order": ["book", "search"], "max_steps": 1, "max_llm_calls": 0,
         "task_completed": True}}]},
     [trace("Booked", ["search", "book"], llm_calls=1)]),
    ("single turn, failed run: task_completed's message",
     {"name": "single-failed-run", "turns": [{"user": "Go", "expected": {
         "task_completed": True, "output_not_contains": ["error"], "max_tool_calls": 0,
         "tools_not_called": ["rm"]}}]},
     [trace("error: gave up", ["rm"], status="failure")]),
    ("single turn with no check: passes with no grade (pass rate 0)",
     {"name": "single-nothing", "turns": [{"user": "Hi"}]},
     [trace("Hello")]),
    ("an expected block of nulls and empty lists (model_dump's shape) checks nothing",
     {"name": "single-empty-block", "turns": [{"user": "Hi", "expected": {
         "output_contains": [], "tools_called": [], "max_steps": None,
         "custom": {"rubric": "polite"}}}]},
     [trace("Hello")]),
    ("multi-turn pass: a turn with no check, then checked turns",
     {"name": "multi-pass", "turns": [
         {"user": "I want to book a flight"},
         {"user": "NYC to LA, March 15", "expected": {"tools_called": ["search_flights"]}},
         {"user": "Book the cheapest one", "expected": {
             "tools_called": ["book_flight"], "output_contains": ["confirmed"],
             "tools_not_called": ["search_flights"]}}]},
     [trace("Where to?"), trace("Found 3 flights", ["search_flights"]),
      trace("Booking confirmed", ["book_flight"])]),
    ("multi-turn: a failing middle turn skips the turns after it",
     {"name": "multi-middle-fails", "turns": [
         {"user": "Find flights", "expected": {"tools_called": ["search_flights"]}},
         {"user": "Book one", "expected": {
             "tools_called": ["book_flight"], "output_contains": ["booked"], "max_steps": 3}},
         {"user": "Email me", "expected": {"tools_called": ["send_email"]}}]},
     [trace("Found 2", ["search_flights"]), trace("Sorry, it is full", ["search_flights"]),
      trace("Sent", ["send_email"])]),
    ("multi-turn: a failing first turn skips the rest, even turns that would pass",
     {"name": "multi-first-fails", "turns": [
         {"user": "a", "expected": {"output_contains": ["yes"]}},
         {"user": "b"},
         {"user": "c", "expected": {"output_contains": ["z"]}}]},
     [trace("no"), trace("b"), trace("z")]),
    ("multi-turn: the last turn fails",
     {"name": "multi-last-fails", "turns": [
         {"user": "a", "expected": {"output_contains": ["a"], "task_completed": True}},
         {"user": "b", "expected": {"max_tool_calls": 0, "task_completed": False}}]},
     [trace("a"), trace("b", ["t"])]),
    ("multi-turn: each turn sees its own trace only",
     {"name": "multi-own-trace", "turns": [
         {"user": "a", "expected": {"tools_called": ["x"], "max_steps": 1}},
         {"user": "b", "expected": {"tools_not_called": ["x"], "max_steps": 1,
                                    "output_not_contains": ["first"]}}]},
     [trace("first", ["x"]), trace("second", ["y"])]),
    ("graders: contains and tool_called entries with params, after the expected checks",
     {"name": "graders-pass", "turns": [{"user": "Book", "expected": {"max_steps": 5},
         "graders": [
             {"type": "contains", "params": {"values": ["UA1"], "case_sensitive": True}},
             {"type": "tool_called", "params": {"required": ["book"]}},
             {"type": "Contains", "params": {"values": ["booked"]}}]}]},
     [trace("Booked UA1", ["book"])]),
    ("graders: failing entries, and a multi-turn case whose second turn has only graders",
     {"name": "graders-fail", "turns": [
         {"user": "a", "graders": [{"type": "contains", "params": {"values": ["a"]}}]},
         {"user": "b", "graders": [
             {"type": "contains", "params": {"values": ["UA1"], "case_sensitive": True}},
             {"type": "tool_called", "params": {"required": ["book", "pay"]}}]},
         {"user": "c", "expected": {"output_contains": ["c"]}}]},
     [trace("a"), trace("booked ua1", ["book"]), trace("c")]),
    ("graders: an entry without params falls back to the turn's expected block",
     {"name": "graders-fallback", "turns": [{"user": "a",
         "expected": {"output_contains": ["done"], "tools_called": ["t"]},
         "graders": [{"type": "contains"}, {"type": "tool_called"}]}]},
     [trace("not yet", ["t"])]),
    ("a case with no turns is an error",
     {"name": "no-turns", "turns": []},
     []),
]


async def grade(case, traces):
    queue = [Trace(**t) for t in traces]

    def agent(user, history):
        return queue.pop(0)

    suite = EvalSuite(name="vectors", test_cases=[case])
    result = (await Evaluator().evaluate_suite_async(suite, agent)).results[0]
    return {
        "status": result.status.value,
        "failed_at_turn": result.failed_at_turn,
        "pass_rate": result.pass_rate,
        "error": result.error,
        "turns": [
            {
                "turn_index": t.turn_index,
                "status": t.status.value,
                "skipped": t.skipped,
                "grades": [[g.grader_name, g.status.value, g.message] for g in t.grades],
            }
            for t in result.turn_results
        ],
    }


if __name__ == "__main__":
    vectors = []
    for note, data, traces in CASES:
        case = EvalCase._from_dict(json.loads(json.dumps(data)))
        expected = asyncio.run(grade(case, traces))
        # The recorded traces the run used: a turn after a failing one is never run.
        used = sum(1 for t in expected["turns"] if not t["skipped"])
        vectors.append({
            "note": note,
            "case": case.model_dump(mode="json"),
            "traces": traces[:used],
            "expected": expected,
            "source": "ran",
        })

    with open(os.path.join(here, "evaldeck-turn-vectors.json"), "w") as out:
        json.dump(vectors, out, indent=1)
        out.write("\n")
