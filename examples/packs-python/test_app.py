"""The pack's functions tested under plain CPython: the records are the generated dataclasses,
so no WebAssembly is involved. build.sh runs these before building the component."""

import json
import unittest

from app import contains, final_answer, quality_score, tool_args_subset
from wit_world.imports import types


def run(*events, output=None):
    return types.Trajectory(turns=[list(events)], output=output, status=types.RunStatus.SUCCESS,
                            input=None, duration_ms=None, usage=None)


def say(text):
    return types.Event_Assistant(types.Content_Text(text))


def call(name, arguments):
    return types.Event_ToolCall(types.ToolCall(id="c1", name=name, arguments=arguments,
                                               failed=False))


def sample(metadata=None, expected=None):
    return types.Sample(id=types.SampleId_Int(1), input=None, ground_truth=None, rubric_vars="{}",
                        name=None, description=None,
                        expected=None if expected is None else json.dumps(expected),
                        reference_output=None, reference_tools=[], tags=[],
                        metadata=json.dumps(metadata or {}), memory=None)


class ToolArgsSubset(unittest.TestCase):
    def test_nested_objects_match_key_by_key(self):
        self.assertTrue(contains({"a": {"b": 1, "c": 2}, "d": 3}, {"a": {"b": 1}}))
        self.assertFalse(contains({"a": {"b": 2}}, {"a": {"b": 1}}))
        self.assertFalse(contains({"a": 1}, {"a": True}))

    def test_grades_against_the_rows_expected_args(self):
        trajectory = run(call("search", '{"from": "SFO", "to": "JFK"}'))
        grade = tool_args_subset(sample({"expected_args": {"to": "JFK"}}), trajectory, "",
                                 ("search", None))
        self.assertEqual(grade.status, types.Status.PASS)
        grade = tool_args_subset(sample(), trajectory, "", ("search", {"to": "EWR"}))
        self.assertEqual(grade.status, types.Status.FAIL)
        self.assertEqual(json.loads(grade.actual), [{"from": "SFO", "to": "JFK"}])


class QualityScore(unittest.TestCase):
    def test_score_stays_within_one(self):
        trajectory = run(call("search", "{}"), output="x" * 200)
        grade = quality_score(sample(expected={"tools_called": ["search"], "max_steps": 100}),
                              trajectory, "", 0.7)
        self.assertLessEqual(grade.score, 1.0)
        self.assertEqual(grade.status, types.Status.PASS)


class FinalAnswer(unittest.TestCase):
    def test_takes_the_line_after_the_last_marker(self):
        trajectory = run(say("FINAL ANSWER: no"), say("Done.\nFINAL ANSWER:  UA 15 \nThanks"))
        self.assertEqual(final_answer(sample(), trajectory, "FINAL ANSWER:"), "UA 15")
        self.assertIsNone(final_answer(sample(), run(say("hi")), "FINAL ANSWER:"))


if __name__ == "__main__":
    unittest.main()
