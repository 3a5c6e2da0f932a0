"""What a process started by a grader runs (`gavel_runtime.process.main`), against CPython's own
`python3` on the same command lines: exit code, stdout and stderr."""

import contextlib
import io
import os
import subprocess
import sys
import tempfile
import unittest
from unittest import mock

HERE = os.path.dirname(os.path.abspath(__file__))
RUNTIME = os.path.dirname(HERE)
sys.path[:0] = [RUNTIME, os.path.join(RUNTIME, "stubs")]

from gavel_runtime import process  # noqa: E402

SCRIPT = """import sys
print("argv", sys.argv)
print("name", __name__)
sys.exit(int(sys.argv[1]) if len(sys.argv) > 1 else None)
"""

# (command line after the program, stdin)
CASES = [
    (["-c", "print('hi'); import sys; print(sys.argv)", "a", "b"], ""),
    (["-c", "import sys; sys.exit(3)"], ""),
    (["-c", "import sys; sys.exit(256 + 7)"], ""),
    (["-c", "import sys; sys.exit('bye')"], ""),
    (["-c", "raise SystemExit"], ""),
    (["-c", "def f():\n    1 / 0\nf()"], ""),
    (["-c", "def f(:\n    pass"], ""),
    (["-c", "import sys; print(sys.stdin.read().upper(), end='')"], "from stdin\n"),
    (["-u", "-B", "-c", "print('options')"], ""),
    (["script.py"], ""),
    (["script.py", "4", "more"], ""),
    (["missing.py"], ""),
    ([], "print('program on stdin')\n"),
]


def gavel(folder, argv, stdin):
    out, err = io.StringIO(), io.StringIO()
    here = os.getcwd()
    saved = (list(sys.argv), list(sys.path), sys.modules.get("__main__"))
    try:
        with (
            mock.patch("gavel_runtime.sandbox.install"),
            mock.patch.object(sys, "stdin", io.StringIO(stdin)),
            contextlib.redirect_stdout(out),
            contextlib.redirect_stderr(err),
        ):
            code = process.main(["python3", *argv], folder)
    finally:
        os.chdir(here)
        sys.argv[:], sys.path[:] = saved[0], saved[1]
        sys.modules["__main__"] = saved[2]
    return code, out.getvalue(), err.getvalue()


def cpython(folder, argv, stdin):
    done = subprocess.run(
        [sys.executable, *argv], cwd=folder, input=stdin, capture_output=True, text=True, env={}
    )
    return done.returncode, done.stdout, done.stderr


class CommandLines(unittest.TestCase):
    def test_each_command_line_ends_as_cpythons_does(self):
        with tempfile.TemporaryDirectory() as folder:
            folder = os.path.realpath(folder)
            with open(os.path.join(folder, "script.py"), "w") as f:
                f.write(SCRIPT)
            for argv, stdin in CASES:
                with self.subTest(argv=argv):
                    want = cpython(folder, argv, stdin)
                    # CPython names itself by the path it was started as.
                    want = (want[0], want[1], want[2].replace(sys.executable, "python3"))
                    self.assertEqual(gavel(folder, argv, stdin), want)

    def test_an_unknown_option_is_a_usage_error(self):
        code, out, err = gavel("/", ["-m", "json.tool"], "")
        self.assertEqual((code, out), (2, ""))
        self.assertTrue(err.startswith("Unknown option: -m\nusage: python3 "), err)

    def test_the_interpreter_is_named_as_the_caller_names_it(self):
        for name in ["python", "python3", "python3.14", "/usr/bin/python3", sys.executable]:
            self.assertTrue(process.is_interpreter(name), name)
        for name in ["ls", "python2", "/bin/sh", "pythonw", "python3-config"]:
            self.assertFalse(process.is_interpreter(name), name)


if __name__ == "__main__":
    unittest.main()
