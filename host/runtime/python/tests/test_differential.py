"""The same user graders, run by their own tools (letta-evals 0.26.0, evaldeck 0.1.5, real,
under CPython) and by gavel's interpreter runtime with its stand-ins (under CPython, no
WebAssembly), must produce the same results field by field. `PEER_PYTHON` is the interpreter
that has the real packages (run.sh makes it)."""

import json
import os
import subprocess
import sys
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))


def observe(script, python, mode):
    """What `script` printed (JSON) when run by `python` in `mode` (real or gavel)."""
    done = subprocess.run(
        [python, "-W", "ignore", os.path.join(HERE, script), mode], capture_output=True, text=True, check=False
    )
    if done.returncode != 0:
        raise AssertionError(f"{script} {mode} failed:\n{done.stderr}")
    return json.loads(done.stdout)


def both_sides(script):
    """`script`'s observations (real, gavel): the real packages' under `PEER_PYTHON`, the
    stand-ins' under this interpreter."""
    peer = os.environ.get("PEER_PYTHON")
    if not peer:
        raise unittest.SkipTest("PEER_PYTHON is not set: run tests/run.sh")
    return observe(script, peer, "real"), observe(script, sys.executable, "gavel")


class Differential(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.real, cls.gavel = both_sides("observe.py")

    def test_no_side_crashed(self):
        for side, seen in (("real", self.real), ("gavel", self.gavel)):
            crashes = {k: v for k, v in seen.items() if k.startswith("crash/")}
            self.assertEqual(crashes, {}, f"{side} side crashed")

    def test_same_cases(self):
        self.assertEqual(sorted(self.real), sorted(self.gavel))
        # Every family of cases is present, so a section that silently produced nothing fails.
        for prefix, least in (("evaldeck/", 25), ("letta/", 25), ("reward/", 5), ("model/", 12), ("deferred/", 150),
                              ("assign/", 150), ("union/", 15), ("errors/", 6), ("sdk/", 75), ("numeric/", 15)):
            self.assertGreaterEqual(sum(1 for k in self.real if k.startswith(prefix)), least, prefix)

    def test_every_case_matches(self):
        for key in sorted(self.real):
            with self.subTest(case=key):
                real, gavel = self.real[key], self.gavel.get(key)
                if key.startswith("letta/decorator/"):
                    # gavel also names the file and line; the message is letta-evals' own.
                    self.assertEqual(real["error"], gavel["error"])
                    continue
                self.assertEqual(real, gavel)

    def test_seed_bug_surfaces_as_evaldeck_reports_it(self):
        # The documentation's quality_score does `set & list`: evaldeck reports the TypeError
        # through its CustomGrader; so must gavel.
        key = "evaldeck/quality_score/booking_ok"
        self.assertEqual(self.real[key]["status"], "error")
        self.assertEqual(
            self.gavel[key]["message"],
            "Custom grader error: unsupported operand type(s) for &: 'set' and 'list'",
        )

    def test_letta_example_grades(self):
        first = self.gavel["letta/custom_evaluators:ticket_classification_grader+custom_evaluators:json_object_extractor/0"]
        self.assertEqual(first["score"], 1.0)
        self.assertEqual(first["rationale"], "category_ok=True, priority_ok=True")


if __name__ == "__main__":
    unittest.main()
