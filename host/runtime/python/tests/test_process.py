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
    (["-m", "json.tool"], '{"b": [1, 2], "a": null}'),
    (["-m", "json.tool", "--compact"], '{"b": [1, 2]}'),
    (["-mjson.tool"], "[]"),
    (["-m", "script", "5"], ""),
    (["-u", "-m", "script"], ""),
    (["-m", "nothere"], ""),
    (["-m"], ""),
]

# Shell command lines of plain words, and what CPython's shell runs them as.
SHELL_LINES = [
    "python3 -c 'import sys; print(sys.argv)' a \"b c\" d'e'f",
    "python3 -m json.tool --compact",
    "  python3   script.py   7  ",
    "python3 -c \"print('x')\"",
]
# Shell command lines the shell would do more with than run the interpreter.
NOT_PLAIN = [
    "python3 -c 'print(1)' | cat",
    "python3 script.py > out.txt",
    "python3 script.py; ls",
    "python3 script.py && ls",
    "python3 $HOME/x.py",
    "python3 -c \"print('$HOME')\"",
    "python3 `which x`",
    "python3 *.py",
    "python3 x.py # comment",
    "python3 -c 'unclosed",
    "A=1 python3 x.py",
    "ls -l",
    "",
]


class _Kept(io.StringIO):
    """A captured stream that a program may close (`json.tool` closes its output), as it
    closes its real stdout."""

    def close(self):
        pass


def gavel(folder, argv, stdin):
    out, err = _Kept(), _Kept()
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

    def test_the_version_is_printed_as_cpython_prints_it(self):
        for option in ("-V", "--version"):
            with self.subTest(option=option):
                self.assertEqual(gavel("/", [option], ""), cpython("/", [option], ""))

    def test_an_unknown_option_is_a_usage_error(self):
        code, out, err = gavel("/", ["-j", "json.tool"], "")
        self.assertEqual((code, out), (2, ""))
        self.assertTrue(err.startswith("Unknown option: -j\nusage: python3 "), err)

    def test_a_plain_shell_line_runs_as_the_shell_runs_it(self):
        with tempfile.TemporaryDirectory() as folder:
            folder = os.path.realpath(folder)
            with open(os.path.join(folder, "script.py"), "w") as f:
                f.write(SCRIPT)
            for line in SHELL_LINES:
                with self.subTest(line=line):
                    argv = process._command(line, None, True)
                    self.assertIsNotNone(argv)
                    self.assertEqual(argv[0], "python3")
                    done = subprocess.run(
                        line.replace("python3", sys.executable, 1),
                        shell=True,
                        cwd=folder,
                        input="[1]",
                        capture_output=True,
                        text=True,
                        env={},
                    )
                    self.assertEqual(gavel(folder, argv[1:], "[1]"), (done.returncode, done.stdout, done.stderr))

    def test_any_other_shell_line_is_not_the_interpreters(self):
        for line in NOT_PLAIN:
            with self.subTest(line=line):
                self.assertIsNone(process._command(line, None, True))
        self.assertIsNone(process._command(["python3 x.py", "arg0"], None, True))
        self.assertEqual(process._command(["python3 x.py"], None, True), ["python3", "x.py"])

    def test_the_interpreter_is_named_as_the_caller_names_it(self):
        for name in ["python", "python3", "python3.14", "/usr/bin/python3", sys.executable]:
            self.assertTrue(process.is_interpreter(name), name)
        for name in ["ls", "python2", "/bin/sh", "pythonw", "python3-config"]:
            self.assertFalse(process.is_interpreter(name), name)


if __name__ == "__main__":
    unittest.main()
