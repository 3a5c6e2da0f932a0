"""The pack's functions tested under plain CPython: the records are the classes componentize-py
generates from the WIT, so no WebAssembly is involved. build.sh runs these before it builds the
component, and stops when one fails."""

import json
import unittest

from app import contains_answer, contains_answer_config, final_answer, final_answer_config
from gavel_pack import GradeError
from wit_world.imports import types


def run(*messages):
    events = [types.Event_Assistant(types.Content_Text(text)) for text in messages]
    return types.Trajectory(turns=[events], output=None, status=types.RunStatus.SUCCESS,
                            input=None, duration_ms=None, usage=None)


def sample(truth=None):
    return types.Sample(id=types.SampleId_Str("s"), input=None,
                        ground_truth=None if truth is None else types.Texts_One(truth),
                        rubric_vars="{}", name=None, description=None, expected=None,
                        reference_output=None, reference_tools=[], tags=[], metadata="{}",
                        memory=None)


class ContainsAnswer(unittest.TestCase):
    def test_passes_when_the_answer_is_in_the_submission(self):
        grade = contains_answer(sample("paris"), run(), "  It is Paris. ", False)
        self.assertEqual(grade.status, types.Status.PASS)

    def test_fails_with_what_it_wanted_and_what_it_got(self):
        grade = contains_answer(sample("paris"), run(), "It is Paris.", True)
        self.assertEqual(grade.status, types.Status.FAIL)
        self.assertEqual(json.loads(grade.expected), "paris")
        self.assertEqual(json.loads(grade.actual), "It is Paris.")

    def test_a_sample_without_ground_truth_is_an_error(self):
        with self.assertRaises(GradeError):
            contains_answer(sample(), run(), "Paris", False)

    def test_config_is_checked(self):
        self.assertFalse(contains_answer_config({}))
        with self.assertRaises(ValueError):
            contains_answer_config({"case_sensitive": "yes"})
        with self.assertRaises(ValueError):
            contains_answer_config({"casesensitive": True})


class FinalAnswer(unittest.TestCase):
    def test_takes_the_line_after_the_last_marker(self):
        trajectory = run("FINAL ANSWER: no", "Done.\nFINAL ANSWER:  42 \nThanks")
        self.assertEqual(final_answer(sample(), trajectory, "FINAL ANSWER:"), "42")

    def test_nothing_without_a_marker(self):
        self.assertIsNone(final_answer(sample(), run("hello"), "FINAL ANSWER:"))

    def test_config_is_checked(self):
        self.assertEqual(final_answer_config({}), "FINAL ANSWER:")
        with self.assertRaises(ValueError):
            final_answer_config({"marker": ""})


if __name__ == "__main__":
    unittest.main()
