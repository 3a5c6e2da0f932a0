"""The interpreter runtime's own behaviour under CPython: loading sources, resolving names,
checking configs, building what each form receives, and the sandbox's guards."""

import copy
import gc
import hashlib
import json
import math
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import textwrap
import unittest
from unittest import mock
import warnings

HERE = os.path.dirname(os.path.abspath(__file__))
RUNTIME = os.path.dirname(HERE)
sys.path[:0] = [RUNTIME, os.path.join(RUNTIME, "stubs")]

from gavel_runtime import CallError, LoadFailure, Run, Runtime  # noqa: E402


def loaded(files, entries=None, compiled=True):
    """A runtime with `files` ({module: text}) loaded, each at path `<module as path>.py`;
    compiled first, as the host does, unless `compiled` is false."""
    runtime = Runtime(sandboxed=False)
    sources = []
    for module, text in files.items():
        path = module.replace(".", "/") + ".py"
        if module.endswith(".__init__"):
            module = module[: -len(".__init__")]
        sources.append((module, path, textwrap.dedent(text)))
    codes = runtime.compile(sources) if compiled else [None] * len(sources)
    sources = [source + (code,) for source, code in zip(sources, codes)]
    runtime.load(sources, entries if entries is not None else [m for m, _, _, _ in sources])
    return runtime


# A run with one turn: the user asks, the agent calls a tool, reads its return, answers.
RUN = Run(
    turns=[
        [
            ("user", "Book NYC"),
            ("reasoning", "search first"),
            ("llm_call", "gpt-x", "plan", "search", {"prompt_tokens": 3, "completion_tokens": 4, "total_tokens": 7}),
            ("tool_call", "c1", "search_flights", '{"from": "JFK", "to": "LAX"}', False),
            ("tool_return", "c1", '[{"id": "AA1"}]', "success"),
            ("tool_call", "c2", "book", "not json", True),
            ("assistant", ["Booked.", "Confirmation: AB123456"]),
        ]
    ],
    output="Booked. Confirmation: AB123456",
    status="success",
    input="Book NYC",
    duration_ms=12.5,
)


class Loading(unittest.TestCase):
    def load_error(self, files):
        with self.assertRaises(LoadFailure) as caught:
            loaded(files)
        return caught.exception

    def test_syntax_error_names_file_and_line(self):
        e = self.load_error({"graders": "x = 1\ndef f(:\n    pass\n"})
        self.assertEqual((e.path, e.line), ("graders.py", 2))
        self.assertTrue(e.message.startswith("SyntaxError: "), e.message)

    def test_missing_package_says_why(self):
        e = self.load_error({"graders": "import json\nimport numpy\n"})
        self.assertEqual((e.path, e.line), ("graders.py", 2))
        self.assertEqual(
            e.message,
            "ModuleNotFoundError: No module named 'numpy' (gavel's sandbox has the standard library and the "
            ".py files beside your grader, in its folder, when that is in the suite's folder; a grader file "
            "outside the suite's folder comes alone; pure-Python packages such as httpx come from `requirements:`, "
            "native ones such as numpy cannot load there)",
        )

    def test_exception_in_an_imported_module_points_at_it(self):
        e = self.load_error({"graders": "import helper\n", "helper": "A = 1\nB = 2\nraise RuntimeError('no config')\n"})
        self.assertEqual((e.path, e.line, e.message), ("helper.py", 3, "RuntimeError: no config"))

    def test_decorator_check_fails_at_load_with_letta_text(self):
        e = self.load_error(
            {"graders": "from letta_evals.decorators import grader\n\n@grader\ndef g(sample):\n    pass\n"}
        )
        self.assertEqual(e.line, 3)
        self.assertEqual(
            e.message,
            "TypeError: Grader g must have exactly 2 parameters (sample: Sample, submission: str), got 1",
        )

    def test_packages_and_namespace_packages_import(self):
        runtime = loaded(
            {
                "graders": "from helpers.text import shout\nfrom lib.util import TWO\ndef grade(sample, item):\n    return TWO / 4\n",
                "helpers.__init__": "PREFIX = '!'\n",
                "helpers.text": "from . import PREFIX\ndef shout(s):\n    return s.upper() + PREFIX\n",
                "lib.util": "TWO = 2\n",
            },
            entries=["graders"],
        )
        self.assertEqual(runtime.grade("openai:graders:grade", {}, 0, RUN, "", "{}")["score"], 0.5)
        self.assertEqual(sys.modules["helpers.text"].shout("a"), "A!")
        self.assertEqual(sys.modules["helpers"].__file__, "/helpers/__init__.py")


    def test_compiled_and_text_sources_load_alike(self):
        files = {"graders": "def grade(sample, item):\n    return 1 / item['d']\n"}
        for compiled in (True, False):
            runtime = loaded(files, compiled=compiled)
            self.assertEqual(runtime.grade("openai:graders:grade", {"d": 4}, 0, RUN, "", "{}")["score"], 0.25)
            with self.assertRaisesRegex(CallError, r"ZeroDivisionError: division by zero \(at graders.py:2\)"):
                runtime.grade("openai:graders:grade", {"d": 0}, 0, RUN, "", "{}")

    def test_a_source_that_does_not_compile_is_left_to_load_which_finds_it_at_its_place(self):
        sources = [("ok", "ok.py", "x = 1\n"), ("bad", "sub/bad.py", "\n\nif:\n")]
        codes = Runtime(sandboxed=False).compile(sources)
        self.assertIsNotNone(codes[0])
        self.assertIsNone(codes[1])
        with self.assertRaises(LoadFailure) as caught:
            Runtime(sandboxed=False).load([s + (c,) for s, c in zip(sources, codes)], ["ok", "bad"])
        self.assertEqual((caught.exception.path, caught.exception.line), ("sub/bad.py", 3))

    def test_compiled_code_is_a_bytecode_file_that_the_import_system_reads(self):
        import importlib.util
        import os
        import sys
        import tempfile

        text = "VALUE = 41 + 1\n"
        [code] = Runtime(sandboxed=False).compile([("m", "m.py", text)])
        with tempfile.TemporaryDirectory() as folder:
            with open(os.path.join(folder, "gavel_pyc_probe.py"), "w") as f:
                f.write("VALUE = 0\n")  # unchecked bytecode wins over its source
            os.mkdir(os.path.join(folder, "__pycache__"))
            with open(importlib.util.cache_from_source(os.path.join(folder, "gavel_pyc_probe.py")), "wb") as f:
                f.write(code)
            sys.path.insert(0, folder)
            try:
                import gavel_pyc_probe

                self.assertEqual(gavel_pyc_probe.VALUE, 42)
            finally:
                sys.path.remove(folder)
                sys.modules.pop("gavel_pyc_probe", None)

    def test_loading_the_same_sources_again_does_not_rerun_them(self):
        files = {"counted": "import builtins\nbuiltins.gavel_loads = getattr(builtins, 'gavel_loads', 0) + 1\n"}
        runtime = loaded(files, compiled=False)
        import builtins

        before = builtins.gavel_loads
        runtime.load([("counted", "counted.py", files["counted"], None)], ["counted"])
        self.assertEqual(builtins.gavel_loads, before)
        runtime.load([("counted", "counted.py", files["counted"] + "\n", None)], ["counted"])
        self.assertEqual(builtins.gavel_loads, before + 1)
        del builtins.gavel_loads


class Names(unittest.TestCase):
    def setUp(self):
        self.runtime = loaded(
            {
                "graders": """
                from letta_evals.decorators import grader, extractor, reward_composer
                from letta_evals.models import GradeResult

                @grader(name="renamed")
                def first(sample, submission):
                    return GradeResult(score=0.25, rationale=sample.input)

                def plain(sample, submission):
                    return GradeResult(score=1.0)

                @reward_composer
                def combine(ctx):
                    return 0.5
                """
            }
        )

    def test_unknown_form(self):
        with self.assertRaisesRegex(CallError, "unknown function name 'python:graders:first'"):
            self.runtime.check_config("python:graders:first", "{}")

    def test_missing_attribute_lists_what_exists(self):
        with self.assertRaises(CallError) as caught:
            self.runtime.check_config("letta-grader:graders:nope", "{}")
        self.assertIn("graders.py: module 'graders' has no attribute 'nope'. Available: ", str(caught.exception))
        self.assertIn("combine", str(caught.exception))

    def test_bare_names_come_from_the_registries(self):
        # Registered by @grader, the name needs no mark of the decorator's wrapper.
        self.runtime.check_config("letta-grader::renamed", "{}")
        grade = self.runtime.grade("letta-grader::renamed", {"input": "hi"}, 0, RUN, "x", "{}")
        self.assertEqual((grade["score"], grade["rationale"]), (0.25, "hi"))
        reward = json.loads(self.runtime.reward("letta-reward::combine", json.dumps({"sample": {"input": "q"}})))
        self.assertEqual(reward["reward"], 0.5)
        with self.assertRaisesRegex(CallError, "^Grader function 'first' not found in registry$"):
            self.runtime.check_config("letta-grader::first", "{}")

    def test_undecorated_grader_is_refused_with_its_location(self):
        with self.assertRaises(CallError) as caught:
            self.runtime.check_config("letta-grader:graders:plain", "{}")
        self.assertTrue(str(caught.exception).startswith("graders.py:9: Loaded object graders.py:plain is not a valid @grader"))


class Configs(unittest.TestCase):
    def setUp(self):
        self.runtime = loaded(
            {
                "checks": """
                from evaldeck.graders import BaseGrader
                from evaldeck.results import GradeResult

                class Budget(BaseGrader):
                    def __init__(self, max_tokens: int):
                        self.max_tokens = max_tokens

                    def grade(self, trace, test_case):
                        if self.max_tokens < 0:
                            raise ValueError("negative budget")
                        return GradeResult.passed_result("Budget", f"{trace.total_tokens} <= {self.max_tokens}")

                def one(sample):
                    return 1.0

                def grade(sample, item):
                    return 1.0
                """
            }
        )

    def test_class_params_are_checked_by_building_the_grader(self):
        self.runtime.check_config("evaldeck-class:checks:Budget", '{"max_tokens": 5}')
        with self.assertRaisesRegex(CallError, r"Budget\(\*\*params\) failed: TypeError: .*unexpected keyword argument 'budget'"):
            self.runtime.check_config("evaldeck-class:checks:Budget", '{"budget": 5}')

    def test_class_grader_exception_is_reported_as_evaldeck_does(self):
        grade = self.runtime.grade("evaldeck-class:checks:Budget", {"name": "c"}, 0, RUN, "", '{"max_tokens": -1}')
        self.assertEqual((grade["status"], grade["rationale"]), ("error", "Grader error: negative budget"))
        grade = self.runtime.grade("evaldeck-class:checks:Budget", {"name": "c"}, 0, RUN, "", '{"max_tokens": 9}')
        self.assertEqual((grade["status"], grade["score"], grade["rationale"]), ("pass", 1.0, "7 <= 9"))
        self.assertEqual(json.loads(grade["metadata"]), {"grader_name": "Budget"})

    def test_openai_grade_needs_two_parameters(self):
        self.runtime.check_config("openai:checks:grade", "{}")
        with self.assertRaisesRegex(CallError, r"^checks\.py:14: grade must take two parameters \(sample, item\), it takes 1$"):
            self.runtime.check_config("openai:checks:one", "{}")


class OpenAI(unittest.TestCase):
    def grade(self, body, row=None, run=RUN):
        runtime = loaded({"g": "import json, math\ndef grade(sample, item):\n" + textwrap.indent(textwrap.dedent(body), "    ")})
        return runtime.grade("openai:g:grade", row or {}, 0, run, "", "{}")

    def test_sample_fields(self):
        runtime = loaded({"g": "SEEN = {}\ndef grade(sample, item):\n    SEEN.update(sample=sample, item=item)\n    return 0.75\n"})
        row = {"input": "Book NYC", "unknown_key": [1, {"x": None}]}
        grade = runtime.grade("openai:g:grade", row, 0, RUN, "", "{}")
        seen = sys.modules["g"].SEEN
        self.assertEqual(grade["score"], 0.75)
        self.assertIsNone(grade["status"])
        self.assertEqual(seen["item"], row)
        sample = seen["sample"]
        self.assertEqual(sample["output_text"], "Booked.Confirmation: AB123456")
        self.assertIsNone(sample["output_json"])
        self.assertEqual(
            sample["output_tools"],
            [
                {"id": "c1", "type": "function", "function": {"name": "search_flights", "arguments": '{"from": "JFK", "to": "LAX"}'}},
                {"id": "c2", "type": "function", "function": {"name": "book", "arguments": "not json"}},
            ],
        )
        self.assertEqual(sample["choices"][0]["message"]["content"], sample["output_text"])
        self.assertEqual(sample["choices"][0]["message"]["tool_calls"], sample["output_tools"])

    def test_an_eval_shaped_row_gives_its_own_item_and_sample(self):
        runtime = loaded({"g": "SEEN = {}\ndef grade(sample, item):\n    SEEN.update(sample=sample, item=item)\n    return 1.0\n"})
        row = {"item": {"answer": "Paris"}, "sample": {"output_text": "Paris"}}
        runtime.grade("openai:g:grade", row, 0, RUN, "", "{}")
        seen = sys.modules["g"].SEEN
        self.assertEqual((seen["item"], seen["sample"]), (row["item"], row["sample"]))
        runtime.grade("openai:g:grade", {"item": {"answer": "Paris"}}, 0, RUN, "", "{}")
        self.assertEqual(seen["sample"]["output_text"], "Booked.Confirmation: AB123456")
        runtime.grade("openai:g:grade", {"item": {"answer": "Paris"}, "id": 3}, 0, RUN, "", "{}")
        self.assertEqual(seen["item"], {"item": {"answer": "Paris"}, "id": 3})

    def test_output_json_is_parsed_objects_only(self):
        runtime = loaded({"g": "def grade(sample, item):\n    return float(sample['output_json']['score'])\n"})
        run = Run(turns=[[("assistant", '{"score": 0.5}')]])
        self.assertEqual(runtime.grade("openai:g:grade", {}, 0, run, "", "{}")["score"], 0.5)

    def test_bad_scores_and_exceptions_are_errors(self):
        for body, message in (
            ("return float('nan')", "grade returned nan, not a finite number"),
            ("return 'high'", "grade returned str 'high', not a number"),
            ("return True", "grade returned bool True, not a number"),
            ("return item['missing']", "KeyError: 'missing' (at g.py:3)"),
            ("raise SystemExit(3)", "SystemExit: 3 (at g.py:3)"),
            (
                "e = KeyError('KEY'); e.add_note('set it first'); raise e",
                "KeyError: 'KEY' (at g.py:3); set it first",
            ),
            ("return 10**400", "invalid score: an int of 1329 bits, too large for a float, is out of range [0, 1]"),
            ("return -10**400", "invalid score: an int of 1329 bits, too large for a float, is out of range [0, 1]"),
            # What the user's code formats raises in turn: the message is CPython traceback's.
            (
                "class Bad(Exception):\n    __str__ = lambda s: (_ for _ in ()).throw(Bad())\nraise Bad()",
                "Bad: <exception str() failed> (at g.py:5)",
            ),
            (
                "e = KeyError('KEY'); e.__notes__ = [Exception(), type('N', (), {'__str__': None})()]; raise e",
                "KeyError: 'KEY' (at g.py:3); ; <note str() failed>",
            ),
            ("class R:\n    __repr__ = lambda s: 1 / 0\nreturn R()", "grade returned R <object repr() failed>, not a number"),
        ):
            with self.subTest(body=body), self.assertRaises(CallError) as caught:
                self.grade(body)
            self.assertEqual(str(caught.exception), message)

    def test_a_score_is_written_as_its_plain_type_writes_it(self):
        for body, score, rationale in (
            ("return 1", 1.0, "grade returned 1"),
            ("return 0.25", 0.25, "grade returned 0.25"),
            ("class F(float):\n    __repr__ = __str__ = lambda s: 'FORGED'\nreturn F(0.5)", 0.5, "grade returned 0.5"),
            (
                "class I(int):\n    __repr__ = lambda s: 'FORGED'\n    __float__ = lambda s: 0.5\nreturn I(1)",
                1.0,
                "grade returned 1",
            ),
        ):
            with self.subTest(body=body):
                grade = self.grade(body)
                self.assertEqual((grade["score"], grade["rationale"]), (score, rationale))
                self.assertIs(type(grade["score"]), float)


class Conversions(unittest.TestCase):
    def test_letta_messages_from_canonical_events(self):
        runtime = loaded(
            {
                "x": """
                from letta_evals.decorators import extractor
                from letta_evals.extractors.builtin import last_assistant, tool_output, tool_arguments
                from letta_evals.extractors.utils import get_tool_calls

                @extractor
                def summary(trajectory, config):
                    kinds = [m.message_type for m in trajectory[0]]
                    pairs = [(c.tool_call.name, r.tool_return) for c, r in get_tool_calls(trajectory)]
                    return repr((kinds, last_assistant(trajectory, {}), tool_output(trajectory, {"tool_name": "search_flights"}),
                                 tool_arguments(trajectory, {"tool_name": "nope"}), pairs))

                @extractor
                def classes(trajectory, config):
                    from letta_client.types.agents.assistant_message import AssistantMessage
                    from letta_client.types.tool_return_message import ToolReturnMessage
                    from letta_evals.models.results import GradeResult
                    from letta_evals.models.sample import Sample
                    kinds = [m for turn in trajectory for m in turn if isinstance(m, (AssistantMessage, ToolReturnMessage))]
                    return f"{len(kinds)} {GradeResult.__name__} {Sample.__name__}"

                @extractor
                def memory(trajectory, config, agent_state):
                    return agent_state.blocks[0].value + "|" + config["k"]
                """
            }
        )
        text = runtime.extract("letta-extractor:x:summary", {}, 0, RUN, "{}")
        kinds, last, output, missing, pairs = eval(text)
        self.assertEqual(
            kinds,
            ["user_message", "reasoning_message", "tool_call_message", "tool_return_message", "tool_call_message", "assistant_message"],
        )
        self.assertEqual((last, output, missing), ("Booked. Confirmation: AB123456", '[{"id": "AA1"}]', "{}"))
        # letta pairs a call with the first return after it in its turn; the failed `book` call has none.
        self.assertEqual(pairs, [("search_flights", '[{"id": "AA1"}]')])
        # Types imported from the modules that define them in the real packages are the same.
        self.assertEqual(runtime.extract("letta-extractor:x:classes", {}, 0, RUN, "{}"), "2 GradeResult Sample")
        row = {"agent_state": {"id": "agent-1", "blocks": [{"label": "human", "value": "Ann"}]}}
        self.assertEqual(runtime.extract("letta-extractor:x:memory", row, 0, RUN, '{"k": "v"}'), "Ann|v")

    def test_evaldeck_trace_from_canonical_events(self):
        runtime = loaded(
            {
                "x": """
                from evaldeck import Evaluator
                from evaldeck.results import GradeResult

                EVALUATOR = Evaluator(graders=[])

                def nested(trace, test_case):
                    return EVALUATOR.evaluate(trace, test_case)

                def look(trace, test_case):
                    return GradeResult.failed_result("look", "seen", actual=[
                        trace.input, trace.output, trace.status.value, trace.tools_called, trace.total_tokens,
                        [s.tool_args for s in trace.tool_calls], [s.tool_result for s in trace.tool_calls],
                        [s.status.value for s in trace.tool_calls], [s.type.value for s in trace.steps],
                        test_case.name, test_case.input, test_case.expected.max_steps])
                """
            }
        )
        row = {"name": "case-1", "input": "Book NYC", "expected": {"max_steps": 4}, "trace_file": "ignored"}
        nested = runtime.grade("evaldeck-function:x:nested", row, 0, RUN, "", "{}")
        self.assertEqual(
            nested["rationale"],
            "Custom grader error: Evaluator.evaluate is not available in gavel's sandbox: gavel runs the "
            "suite's graders itself (name them in the suite)",
        )
        grade = runtime.grade("evaldeck-function:x:look", row, 0, RUN, "", "{}")
        self.assertEqual((grade["status"], grade["score"]), ("fail", 0.0))
        self.assertEqual(
            json.loads(grade["actual"]),
            [
                "Book NYC",
                "Booked. Confirmation: AB123456",
                "success",
                ["search_flights", "book"],
                7,
                [{"from": "JFK", "to": "LAX"}, {"input": "not json"}],
                [[{"id": "AA1"}], None],
                ["success", "failure"],
                ["reasoning", "llm_call", "tool_call", "tool_call"],
                "case-1",
                "Book NYC",
                4,
            ],
        )

    def test_async_graders_run_in_an_event_loop_and_waits_for_nothing_are_refused(self):
        runtime = loaded(
            {
                "a": """
                import asyncio
                from letta_evals.decorators import grader
                from letta_evals.models import GradeResult

                @grader
                async def ok(sample, submission):
                    loop = asyncio.get_running_loop()
                    started = loop.time()
                    said = await asyncio.gather(asyncio.sleep(0.5, "slow"), asyncio.sleep(0.1, "fast"))
                    try:
                        async with asyncio.timeout(1):
                            await asyncio.sleep(5)
                    except TimeoutError:
                        said.append("timed out")
                    said.append(str(loop.time() - started))
                    return GradeResult(score=1.0, rationale=" ".join(said))

                class Pending:
                    def __await__(self):
                        yield self

                @grader
                async def bad_yield(sample, submission):
                    await Pending()

                @grader
                async def waits(sample, submission):
                    await asyncio.get_running_loop().create_future()
                """
            }
        )
        # The loop sleeps on the call's clock: a fake one here, as the sandbox's moves only as
        # the program sleeps.
        now = [100.0]

        def slept(seconds):
            now[0] += seconds

        with mock.patch("time.monotonic", lambda: now[0]), mock.patch("time.sleep", slept):
            # A letta @grader reads nothing of the run: the interpreter gives it none.
            self.assertEqual(
                runtime.grade("letta-grader:a:ok", {"input": "q"}, 0, None, "s", "{}")["rationale"],
                "slow fast timed out 1.5",
            )
            self.assertEqual(now[0], 101.5)
        # What asyncio says of an awaitable that yields what is no future.
        with self.assertRaisesRegex(CallError, "RuntimeError: Task got bad yield"):
            runtime.grade("letta-grader:a:bad_yield", {"input": "q"}, 0, RUN, "s", "{}")
        with self.assertRaisesRegex(CallError, "RuntimeError: the coroutine waits for what cannot come"):
            runtime.grade("letta-grader:a:waits", {"input": "q"}, 0, RUN, "s", "{}")

    def test_evaldeck_functions_are_awaited_when_they_are_coroutines_only(self):
        runtime = loaded(
            {
                "e": """
                import asyncio
                from evaldeck.results import GradeResult

                async def awaited(trace, case):
                    await asyncio.sleep(0)
                    return GradeResult.passed_result("a", "awaited")

                def plain(trace, case):
                    return GradeResult.passed_result("p", "plain")

                def hands_back_a_coroutine(trace, case):
                    return awaited(trace, case)

                def raises(trace, case):
                    raise KeyError("k")
                """
            }
        )

        def grade(name):
            return runtime.grade(f"evaldeck-function:e:{name}", {"input": "q"}, 0, RUN, "s", "{}")

        self.assertEqual(grade("awaited")["rationale"], "awaited")
        self.assertEqual(grade("plain")["rationale"], "plain")
        # evaldeck's grade_async returns what a plain function returns, unawaited; CPython warns
        # of the coroutine never awaited where it is collected: here, not in a later test.
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            self.assertEqual(
                grade("hands_back_a_coroutine")["rationale"],
                "Grader error: 'coroutine' object has no attribute 'status'",
            )
            gc.collect()
        self.assertEqual((grade("raises")["status"], grade("raises")["rationale"]), ("error", "Custom grader error: 'k'"))


class OncePerProgram(unittest.TestCase):
    """What a call takes once per loaded program: the function a name resolves to, and an
    evaldeck function's grader. A load of other sources takes them anew; what fails is
    reported on every call."""

    SOURCE = """
    from evaldeck.results import GradeResult
    from letta_evals.decorators import grader
    from letta_evals.models import GradeResult as LettaGrade

    def check(trace, case):
        global check
        check = lambda trace, case: GradeResult.passed_result("rebound", "rebound")
        return GradeResult.passed_result("first", "%s")

    @grader
    def answer(sample, submission):
        return LettaGrade(score=1.0, rationale="%s")
    """

    def grade(self, runtime, name):
        return runtime.grade(name, {"input": "q"}, 0, Run(output="a"), "s", "{}")

    def test_a_name_takes_the_function_its_first_call_took(self):
        runtime = loaded({"m": self.SOURCE % ("one", "one")})
        for _ in range(3):
            self.assertEqual(self.grade(runtime, "evaldeck-function:m:check")["rationale"], "one")

    def test_a_load_of_other_sources_resolves_each_name_anew(self):
        runtime = loaded({"m": self.SOURCE % ("one", "one")})
        self.assertEqual(self.grade(runtime, "evaldeck-function:m:check")["rationale"], "one")
        self.assertEqual(self.grade(runtime, "letta-grader::answer")["rationale"], "one")
        runtime.load([("m", "m.py", textwrap.dedent(self.SOURCE % ("two", "two")), None)], ["m"])
        self.assertEqual(self.grade(runtime, "evaldeck-function:m:check")["rationale"], "two")
        self.assertEqual(self.grade(runtime, "letta-grader::answer")["rationale"], "two")
        # Loading what is loaded keeps what the calls took.
        runtime.load([("m", "m.py", textwrap.dedent(self.SOURCE % ("two", "two")), None)], ["m"])
        self.assertEqual(self.grade(runtime, "evaldeck-function:m:check")["rationale"], "two")

    def test_a_name_that_does_not_resolve_fails_on_every_call_until_it_does(self):
        runtime = loaded({"m": self.SOURCE % ("one", "one")})
        for _ in range(2):
            with self.assertRaisesRegex(CallError, "module 'm' has no attribute 'late'"):
                self.grade(runtime, "evaldeck-function:m:late")
            with self.assertRaisesRegex(CallError, "^Grader function 'late' not found in registry$"):
                self.grade(runtime, "letta-grader::late")
        sys.modules["m"].late = sys.modules["m"].check
        self.assertEqual(self.grade(runtime, "evaldeck-function:m:late")["rationale"], "one")

    def test_an_evaldeck_functions_grader_serves_every_call_while_custom_grader_is_its_own(self):
        from evaldeck.graders import CustomGrader

        runtime = loaded(
            {
                "e": """
                import asyncio
                from evaldeck.results import GradeResult

                def raises(trace, case):
                    raise KeyError("k")

                async def awaited(trace, case):
                    await asyncio.sleep(0)
                    return GradeResult.passed_result("a", "awaited")
                """
            }
        )
        for _ in range(2):
            grade = self.grade(runtime, "evaldeck-function:e:raises")
            self.assertEqual((grade["status"], grade["rationale"]), ("error", "Custom grader error: 'k'"))
            self.assertEqual(json.loads(grade["metadata"]), {"grader_name": "custom"})
            self.assertEqual(self.grade(runtime, "evaldeck-function:e:awaited")["rationale"], "awaited")
        # The class's name, read by the grader when it is made and on every call.
        CustomGrader.name = "renamed"
        try:
            grade = self.grade(runtime, "evaldeck-function:e:raises")
        finally:
            CustomGrader.name = "custom"
        self.assertEqual(json.loads(grade["metadata"]), {"grader_name": "renamed"})
        # A method replaced: each call makes its own grader, as evaldeck's user would.
        made = []
        for method in ("__init__", "grade", "_get_func"):
            own = getattr(CustomGrader, method)

            def replaced(self, *args, own=own, **kwargs):
                made.append(self)  # kept, so that no two are at one address
                return own(self, *args, **kwargs)

            setattr(CustomGrader, method, replaced)
            try:
                made.clear()
                for _ in range(3):
                    self.grade(runtime, "evaldeck-function:e:raises")
            finally:
                setattr(CustomGrader, method, own)
            self.assertEqual(len({id(grader) for grader in made}), 3, method)


SANDBOXED = r"""
import json, os, sys
# What CPython lacks on WASI, as the sandbox finds it there.
del os.system, os.fork
sys.path[:0] = %r
from gavel_runtime import Runtime, Run, CallError
runtime = Runtime()
runtime.load([("h", "h.py", '''
import os
def g_write(sample, item):
    open("out.txt", "w").write("x")
def g_append(sample, item):
    os.open("out.txt", os.O_WRONLY | os.O_APPEND)
def g_update(sample, item):
    open("h.py", "r+")
def g_read_back(sample, item):
    return 0.5 if open(os.path.join(os.path.dirname(os.__file__), "os.py")).read() else 0.0
def g_mkdir(sample, item):
    os.mkdir("made")
def g_env(sample, item):
    return len(os.environ["HOME"])
def g_env_missing(sample, item):
    return len(os.environ["OPENAI_API_KEY"])
def g_env_get(sample, item):
    return 0.25 if os.getenv("OPENAI_API_KEY", "none") == "none" and "OPENAI_API_KEY" not in os.environ else 0.0
def g_env_set(sample, item):
    os.environ["MINE"] = "0.25"
    return float(os.environ["MINE"])
def g_system(sample, item):
    os.system("true")
def g_fork(sample, item):
    try:
        os.fork()
    except OSError:
        return 0.75
''', None)], ["h"])
out = {}
for name in ["g_write", "g_append", "g_update", "g_read_back", "g_mkdir", "g_env", "g_env_missing", "g_env_get", "g_env_set", "g_system", "g_fork"]:
    try:
        out[name] = runtime.grade("openai:h:" + name, {}, 0, Run(), "", "{}")["score"]
    except CallError as e:
        out[name] = str(e)
print(json.dumps(out))
"""


class Rows(unittest.TestCase):
    """What each form's builders receive of a row: the row whole for OpenAI's graders (their
    item); for the others, when the host sends the recording's value empty (the recording is
    the row's own `trajectory` member), the row without that member, and the member parsed as
    the recording for the forms that read it in its format; the row whole otherwise. Never
    another member left out or changed."""

    RECORDING = '{"steps": [{"type": "llm_call"}], "output": "Paris"}'

    def parsed(self, text, recorded, name="evaldeck-function:m:f", fmt="evaldeck"):
        runtime = Runtime(sandboxed=False)
        return runtime.row("openai:m:f", text, recorded, fmt), runtime.row(name, text, recorded, fmt)

    def test_the_rows_own_recording_comes_parsed_with_the_row_to_the_forms_that_read_it(self):
        recording = json.loads(self.RECORDING)
        for text in (
            '{"id": 3, "trajectory": %s}' % self.RECORDING,
            '{"trajectory":%s}' % self.RECORDING,
            '{"id": 3 ,\n "trajectory" :\t%s \n}\n' % self.RECORDING,
            '{"trajectory": %s, "expected": {"output_contains": ["Paris"]}}' % self.RECORDING,
            '{"traj\\u0065ctory": %s, "id": 3}' % self.RECORDING,
        ):
            whole, apart = self.parsed(text, "")
            self.assertEqual(whole, (json.loads(text), None), text)
            row = json.loads(text)
            del row["trajectory"]
            self.assertEqual(apart, (row, recording), text)
            self.assertEqual(self.parsed(text, "", "letta-extractor:m:f", "letta")[1], (row, recording))
            # A form that reads no recording, or not in this format, gets the row alone.
            for name, fmt in (("letta-grader:m:f", "evaldeck"), ("evaldeck-class:m:f", "letta")):
                self.assertEqual(self.parsed(text, "", name, fmt)[1], (row, None), (text, name))

    def test_a_recording_sent_as_text_leaves_the_row_whole(self):
        # The run came from a run record; the row may hold a `trajectory` of its own.
        for text in (
            '{"expected": %s, "trajectory": null}' % self.RECORDING,
            '{"trajectory": %s, "input": "x"}' % self.RECORDING,
            '{"id": 1}',
        ):
            for recorded in (self.RECORDING, None):
                whole, apart = self.parsed(text, recorded)
                self.assertEqual(apart, (json.loads(text), None), text)
                self.assertEqual(whole, (json.loads(text), None), text)

    def test_the_recording_parsed_with_the_row_is_handed_out_once(self):
        row, parsed = self.parsed('{"trajectory": %s}' % self.RECORDING, "")[1]
        for value in (self.RECORDING, ""):
            parsed = copy.deepcopy(parsed)
            run = Run(recorded_format="evaldeck", recorded_value=value, recorded_parsed=parsed)
            first, second = run.recorded("evaldeck"), run.recorded("evaldeck")
            self.assertIs(first, parsed)
            self.assertEqual(second, parsed)
            self.assertIsNot(second, parsed)
            self.assertIsNot(second["steps"], parsed["steps"])
            self.assertIsNone(run.recorded("letta"))

    def test_a_row_parses_as_json_loads_parses_it(self):
        from gavel_runtime.convert import row_whole

        for text in ('{"a": 1}', ' {"a": [1, 2.5, "é"]}\n', '{"a": 1} x', '{"a": 1', "\ufeff{}", " ", "{} {}", "[1]", "nul"):
            try:
                expected = json.loads(text)
            except ValueError as e:
                with self.assertRaises(type(e), msg=text) as raised:
                    row_whole(text)
                self.assertEqual(str(raised.exception), str(e))
                continue
            self.assertEqual(row_whole(text), expected if isinstance(expected, dict) else {}, text)

    def test_rows_that_are_no_object_or_absent_are_empty(self):
        for text, recorded in (("", None), ("[1, 2]", None), ('["x"]', '"x"'), ('"x"', '"x"'), ("", "1"), ("[1]", "")):
            self.assertEqual(self.parsed(text, recorded), (({}, None), ({}, None)), text)

    def test_events_given_as_a_function_are_converted_on_first_use_only(self):
        made = []

        def turns():
            made.append(1)
            return RUN.turns

        run = Run(turns=turns, output="Booked.")
        self.assertEqual(made, [])
        self.assertEqual(list(run.events()), [e for turn in RUN.turns for e in turn])
        self.assertEqual(run.turns, RUN.turns)
        self.assertEqual(made, [1])

    def test_usage_given_as_its_three_counts_reads_as_the_dict(self):
        tokens = {"prompt_tokens": 3, "completion_tokens": 4, "total_tokens": 7}
        self.assertEqual(Run(usage=(3, 4, 7)).usage, tokens)
        self.assertEqual(Run(usage=tokens).usage, tokens)
        self.assertIsNone(Run().usage)


class GradeTexts(unittest.TestCase):
    def test_a_grades_values_are_written_as_json_writes_them(self):
        from gavel_runtime.convert import to_json

        class Text(str):
            pass

        values = [
            {}, {"grader_name": "g"}, {"length": 12, "ok": True, "no": False, "none": None, "ratio": 0.1 + 0.2},
            {"big": 10**30, "neg": -0.0, "exp": 1e300, "tiny": 5e-324, "mixed": "é \" \\ \n \u2028 \x00 😀"},
            {"nan": float("nan")}, {"inf": float("inf")}, {1: "int key"}, {"nested": {"a": [1]}}, {"t": (1, 2)},
            {"sub": Text("x")}, {"flag": 1}, {"set": {1}}, "text", 3, [1, {"a": 2}], None,
        ]
        for value in values:
            self.assertEqual(to_json(value), json.dumps(value, ensure_ascii=False, default=list), repr(value))


    def test_an_evaldeck_results_metadata_is_its_details_with_its_graders_name(self):
        from gavel_runtime.convert import evaldeck_metadata, to_json

        class Text(str):
            pass

        class Details(dict):
            pass

        for details, name in (
            ({}, "g"), ({}, "é \" \\ \n \u2028 \x00 😀"), ({}, Text("x")), (Details(), "g"),
            ({"length": 3}, "g"), ({"grader_name": "own"}, "g"), ({"a": {"b": [1]}}, "g"),
        ):
            whole = dict(details)
            whole.setdefault("grader_name", name)
            self.assertEqual(evaldeck_metadata(details, name), to_json(whole), repr((details, name)))
            self.assertEqual(evaldeck_metadata(details, name), json.dumps(whole, ensure_ascii=False))

class HostileResults(unittest.TestCase):
    """A letta-evals or evaldeck grade is read without running the user's code where that could
    fail or say something else than the grade holds (a subclass's methods, a `__str__`): a value
    the host cannot take is the grade's error, in the host's words for its field."""

    SOURCE = """
        from evaldeck.results import GradeResult as EvaldeckGrade
        from letta_evals.decorators import grader
        from letta_evals.models import GradeResult


        class Bad(Exception):
            def __str__(self):
                raise Bad()


        class Unprintable:
            def __str__(self):
                raise Bad()


        class Text(str):
            def __bool__(self):
                raise Bad()


        class Forged(float):
            def __repr__(self):
                return "FORGED"


        def assigned(result, **values):
            for name, value in values.items():
                setattr(result, name, value)
            return result


        def raises():
            raise Bad()


        LETTA = {
            "huge": lambda: assigned(GradeResult(score=0.5), score=10**400),
            "forged": lambda: GradeResult(score=Forged(0.25)),
            "forged-assigned": lambda: assigned(GradeResult(score=0.5), score=Forged(0.25)),
            "text": lambda: GradeResult(score=1.0, rationale=Text("fine")),
            "number-rationale": lambda: assigned(GradeResult(score=1.0), rationale=5),
            "unprintable": lambda: GradeResult(score=1.0, metadata={"x": Unprintable()}),
            "tuple-key": lambda: GradeResult(score=1.0, metadata={(1, 2): "x"}),
            "raises": raises,
        }

        EVALDECK = {
            "huge": lambda: assigned(EvaldeckGrade.passed_result("g", "ok"), score=-10**400),
            "forged": lambda: assigned(EvaldeckGrade.passed_result("g", "ok"), score=Forged(0.25)),
            "text": lambda: EvaldeckGrade.passed_result("g", Text("fine")),
            "unprintable": lambda: EvaldeckGrade.passed_result("g", "ok", details={"x": Unprintable()}),
            "expected": lambda: EvaldeckGrade.failed_result("g", "no", expected=Unprintable()),
            "raises": raises,
        }


        @grader
        def letta(sample, submission):
            return LETTA[sample.id]()


        def evaldeck(trace, test_case):
            return EVALDECK[test_case.name]()
    """

    def setUp(self):
        self.runtime = loaded({"g": self.SOURCE})

    def outcome(self, form, case):
        """(score, rationale, metadata) of `case`, or the text of the call's error."""
        name, row = {"letta": ("letta-grader:g:letta", {"input": "q"}), "evaldeck": ("evaldeck-function:g:evaldeck", {"name": case})}[form]
        try:
            grade = self.runtime.grade(name, row, case, RUN, "x", "{}")
        except CallError as e:
            return str(e)
        self.assertIs(type(grade["score"]), float)
        self.assertIs(type(grade["rationale"]), str)
        return grade["score"], grade["rationale"], json.loads(grade["metadata"])

    def test_a_letta_grades_values_are_what_it_holds_or_its_error(self):
        huge = "invalid score: an int of 1329 bits, too large for a float, is out of range [0, 1]"
        for case, expected in (
            ("huge", huge),
            ("forged", (0.25, "", {})),
            ("forged-assigned", (0.25, "", {})),
            ("text", (1.0, "fine", {})),
            ("number-rationale", "invalid rationale: int 5 is not a str"),
            ("unprintable", "invalid metadata: Bad: <exception str() failed> (at g.py:14)"),
            ("tuple-key", "invalid metadata: TypeError: keys must be str, int, float, bool or None, not tuple"),
            ("raises", "Bad: <exception str() failed> (at g.py:34)"),
        ):
            with self.subTest(case=case):
                self.assertEqual(self.outcome("letta", case), expected)

    def test_an_evaldeck_grades_values_are_what_it_holds_or_its_error(self):
        huge = "invalid score: an int of 1329 bits, too large for a float, is out of range [0, 1]"
        for case, expected in (
            ("huge", huge),
            ("forged", (0.25, "ok", {"grader_name": "g"})),
            ("text", (1.0, "fine", {"grader_name": "g"})),
            ("unprintable", "invalid metadata: Bad: <exception str() failed> (at g.py:14)"),
            ("expected", "invalid expected: Bad: <exception str() failed> (at g.py:14)"),
            # evaldeck's `CustomGrader` formats the exception itself, which raises in turn.
            ("raises", (0.0, "Grader error: Bad: <exception str() failed>", {"grader_name": "custom"})),
        ):
            with self.subTest(case=case):
                self.assertEqual(self.outcome("evaldeck", case), expected)

    def test_a_reward_composers_output_is_what_it_holds_or_its_error(self):
        runtime = loaded(
            {
                "r": """
                from letta_evals.decorators import reward_composer
                from letta_evals.models import RewardOutput


                class Unprintable:
                    def __str__(self):
                        raise ValueError("no text")


                class Forged(float):
                    def __repr__(self):
                        return "FORGED"


                def assigned(**values):
                    output = RewardOutput(score=0.5)
                    for name, value in values.items():
                        setattr(output, name, value)
                    return output


                def circular():
                    metadata = {}
                    metadata["self"] = metadata
                    return metadata


                CASES = {
                    "set": lambda: RewardOutput(score=0.5, metadata={"seen": {3}, "pair": ("a", 1)}),
                    "object": lambda: {"score": 0.5, "metadata": {"x": type("X", (), {"__str__": lambda s: "x"})()}},
                    "circular": lambda: RewardOutput(score=0.5, metadata=circular()),
                    "unprintable": lambda: RewardOutput(score=0.5, metadata={"x": Unprintable()}),
                    "forged": lambda: assigned(score=Forged(0.25)),
                    "huge": lambda: assigned(score=10**400),
                    "set-score": lambda: assigned(score={1}),
                }


                @reward_composer
                def compose(ctx):
                    return CASES[ctx.sample.input]()
                """
            }
        )

        def outcome(case):
            try:
                answer = runtime.reward("letta-reward:r:compose", json.dumps({"sample": {"input": case}}))
            except CallError as e:
                return str(e)
            return json.loads(answer)

        for case, expected in (
            # What letta-evals writes of its `RewardOutput`: a set or a tuple as a list.
            ("set", {"reward": 0.5, "score": 0.5, "metadata": {"seen": [3], "pair": ["a", 1]}}),
            ("object", {"reward": 0.5, "score": 0.5, "metadata": {"x": "x"}}),
            ("circular", "invalid metadata: ValueError: Circular reference detected"),
            ("unprintable", "invalid metadata: ValueError: no text (at r.py:8)"),
            ("forged", {"reward": 0.25, "score": 0.25, "metadata": None}),
            ("huge", "invalid score: an int of 1329 bits, too large for a float, is out of range [0, 1]"),
            ("set-score", "invalid score: set {1} is not a number"),
        ):
            with self.subTest(case=case):
                self.assertEqual(outcome(case), expected)


def held(model):
    from _gavel_model import _dict_of

    return _dict_of(model)


class Deferred(unittest.TestCase):
    """evaldeck's trace and case of a usual recording and row are built on first read (their
    values and errors against evaldeck's own: test_differential's `deferred/` cases). What a
    model holds is read past its `__dict__`, which builds every field (as `held()` shows an
    eagerly built model)."""

    STEP = {"id": "s1", "type": "tool_call", "timestamp": "2026-01-01T00:00:01", "tool_name": "search",
            "tool_args": {"to": "NYC"}, "tokens": {"total_tokens": 3}}
    TRACE = {"id": "t", "input": "q", "output": "done", "started_at": "2026-01-01T00:00:00", "steps": [STEP, STEP]}

    def trace(self, data):
        from gavel_runtime.convert import evaldeck_trace

        return evaldeck_trace(Run(recorded_format="evaldeck", recorded_value=json.dumps(data)))

    def test_a_read_builds_only_the_fields_read(self):
        trace = self.trace(self.TRACE)
        self.assertEqual(trace.output, "done")
        self.assertNotIn("steps", held(trace))
        self.assertEqual([s.tool_name for s in trace.tool_calls], ["search", "search"])
        self.assertIn("steps", held(trace))
        step = trace.steps[0]
        self.assertIn("type", held(step))
        self.assertNotIn("timestamp", held(step))
        self.assertNotIn("tokens", held(step))

    def test_a_trace_of_another_form_is_built_whole_at_once(self):
        for data in (dict(self.TRACE, steps=[dict(self.STEP, timestamp=" 2026-01-01T00:00:01 ")]),
                     dict(self.TRACE, steps=[dict(self.STEP, timestamp=1767225600)]),
                     dict(self.TRACE, id=""), {k: v for k, v in self.TRACE.items() if k != "started_at"}):
            trace = self.trace(data)
            self.assertIn("steps", held(trace), data)
            self.assertIn("timestamp", held(trace.steps[0]), data)

    def test_a_datetime_python_reads_is_taken_on_first_read(self):
        from evaldeck.trace import Trace

        for text in ("2026-01-01T00:00:01.5", "2028-02-29T00:00:00", "2026-01-01 00:00:01+05:30", "2026-01-01"):
            trace = self.trace(dict(self.TRACE, started_at=text))
            self.assertNotIn("started_at", held(trace), text)
            self.assertEqual(trace.started_at, Trace.from_dict(dict(self.TRACE, started_at=text)).started_at, text)

    def test_a_usual_letta_sample_is_built_on_first_read(self):
        from gavel_runtime.convert import letta_sample

        sample = letta_sample({"id": 3, "input": "q", "ground_truth": "a", "metadata": {"agent_args": {"k": 1}}}, 0)
        self.assertEqual(held(sample).keys(), {"_gavel_data"})
        self.assertEqual(sample.ground_truth, "a")
        self.assertEqual(held(sample).keys(), {"_gavel_data", "ground_truth"})
        self.assertEqual(sample.agent_args, {"k": 1})
        # A str id is taken as it is too; per-turn lists are checked, so built now.
        self.assertIn("_gavel_data", held(letta_sample({"id": "s", "input": "q"}, 0)))
        row = {"id": 1, "input": ["a"], "ground_truth": ["b"]}
        self.assertNotIn("_gavel_data", held(letta_sample(row, 0)), row)

    def test_a_usual_case_is_built_on_first_read(self):
        from gavel_runtime.convert import evaldeck_case

        case = evaldeck_case({"name": "c", "input": "q", "expected": {"tools_called": ["search"]}}, 0)
        self.assertEqual(held(case).keys(), {"_gavel_data"})
        self.assertEqual(case.expected.tools_called, ["search"])
        self.assertNotIn("name", held(case))
        self.assertEqual(list(vars(case)), [f.name for f in case._fields])
        self.assertEqual(held(case).keys(), {f.name for f in case._fields})


class UsualForms(unittest.TestCase):
    """The labels the host's own tests hold its digest to (host `grade/pack/digest.rs`): the
    runtime's check takes each recording labelled usual (true, or null where the host leaves
    the form to the runtime) and refuses each labelled false."""

    def test_the_labels_are_the_checks(self):
        from evaldeck.trace import Trace

        with open(os.path.join(HERE, "data", "evaldeck", "usual-forms.json"), encoding="utf-8") as f:
            forms = json.load(f)
        for form in forms:
            self.assertEqual(Trace._usual(form["recording"]), form["usual"] is not False, form["why"])

    def test_the_case_labels_are_the_checks(self):
        from gavel_runtime.convert import evaldeck_case

        with open(os.path.join(HERE, "data", "evaldeck", "usual-cases.json"), encoding="utf-8") as f:
            cases = json.load(f)
        for case in cases:
            try:
                deferred = "_gavel_data" in held(evaldeck_case(case["row"], 7))
            except (TypeError, ValueError):  # refused, as evaldeck's loader refuses it
                deferred = False
            self.assertEqual(deferred, case["usual"] is not False, case["why"])


class Vouched(unittest.TestCase):
    """A row whose evaldeck recording the host vouched for: its members parsed each where it
    starts, the recording's fields on first read, and all of it as the row parsed whole gives."""

    TEXT = (
        '{"id": 3, "name": "c\u00e9", "input": "Book ≥ 2", "trajectory": {"id": "t", "input": "q", '
        '"steps": [{"id": "s1", "type": "tool_call", "timestamp": "2026-01-01T00:00:01", "tool_name": "search", '
        '"tool_args": {"to": "NYC"}, "tokens": {"total_tokens": 3}}], "started_at": "2026-01-01T00:00:00", '
        '"extra": 1}, "expected": {"tools_called": ["search"]}}'
    )

    def digest(self, text=TEXT):
        """The digest the host sends for `text` (TEXT or it longer): each value's start found by
        its key, each number four bytes, little-endian."""

        def at(key, after=0):
            return text.index(key, after) + len(key) + 2

        trajectory = text.index('"trajectory"')
        row = [text.index('"id"'), at('"id"'), text.index('"name"'), at('"name"'), text.index('"input"'),
               at('"input"'), text.index('"expected"'), at('"expected"')]
        trace = [at('"id"', trajectory), at('"input"', trajectory), 0, 0, at('"steps"'), at('"started_at"'),
                 0, 0, 0, 0, 0]
        step = text.index('"steps"')
        steps = [at('"id"', step), at('"type"'), at('"timestamp"'), 0, 0, 0, 0, at('"tokens"'), at('"tool_name"'),
                 at('"tool_args"'), 0, 0, 0, 0, 0, 0]
        return b"".join(n.to_bytes(4, "little") for n in [1, 4] + row + trace + steps)

    def test_the_row_and_trace_are_the_parsed_rows(self):
        self.check_row(self.TEXT)

    def test_numbers_past_two_bytes_are_read(self):
        self.check_row(self.TEXT.replace("Book", "Book" + "x" * 0x1_0000))

    def check_row(self, text):
        from evaldeck.trace import Trace
        from gavel_runtime.convert import evaldeck_trace

        runtime = Runtime(sandboxed=False)
        name = "evaldeck-function:m:f"
        whole, parsed = runtime.row(name, text, "", "evaldeck")
        row, located = runtime.row(name, text, "", "evaldeck", self.digest(text))
        self.assertEqual(list(row.items()), list(whole.items()))
        run = Run(recorded_format="evaldeck", recorded_value="", recorded_parsed=located)
        trace = evaldeck_trace(run)
        self.assertEqual(held(trace).keys(), {"_gavel_data"})
        self.assertEqual([s.tool_args for s in trace.tool_calls], [{"to": "NYC"}])
        self.assertNotIn("timestamp", held(trace.steps[0]))
        expected = Trace.from_dict(parsed)
        self.assertEqual(trace, expected)
        self.assertEqual(repr(trace), repr(expected))
        self.assertEqual(trace.model_dump_json(), expected.model_dump_json())
        self.assertTrue(run.case_vouched)

    def test_a_vouched_trace_and_case_copy_and_pickle_before_any_read(self):
        import copy
        import pickle

        from gavel_runtime.convert import evaldeck_case, evaldeck_trace

        runtime = Runtime(sandboxed=False)
        whole, parsed = runtime.row("evaldeck-function:m:f", self.TEXT, "", "evaldeck")
        for again in (copy.deepcopy, copy.copy, lambda m: pickle.loads(pickle.dumps(m))):
            row, located = runtime.row("evaldeck-function:m:f", self.TEXT, "", "evaldeck", self.digest())
            run = Run(recorded_format="evaldeck", recorded_value="", recorded_parsed=located)
            trace, case = evaldeck_trace(run), evaldeck_case(row, 3, vouched=True)
            self.assertEqual(held(trace).keys(), {"_gavel_data"})
            self.assertEqual(held(case).keys(), {"_gavel_data"})
            copied, copied_case = again(trace), again(case)
            self.assertEqual(copied, evaldeck_trace(Run(recorded_format="evaldeck", recorded_value="",
                                                        recorded_parsed=parsed)))
            self.assertEqual(copied_case, evaldeck_case(whole, 3))
            self.assertEqual(copied.steps[0].tool_args, {"to": "NYC"})

    def test_a_vouched_case_is_built_on_first_read_as_the_checked_one(self):
        from evaldeck.test_case import Turn
        from gavel_runtime.convert import evaldeck_case

        row = json.loads(self.TEXT)
        del row["trajectory"]
        case = evaldeck_case(row, 3, vouched=True)
        self.assertEqual(held(case).keys(), {"_gavel_data"})
        self.assertEqual(case, evaldeck_case(row, 3))
        self.assertEqual(case.expected.tools_called, ["search"])
        init = Turn.__init__
        Turn.__init__ = lambda self, **data: init(self, **data)
        try:
            self.assertNotIn("_gavel_data", held(evaldeck_case(dict(row, expected={"max_steps": "x"}), 3, vouched=True)))
        except ValueError:
            pass
        finally:
            Turn.__init__ = init

    def test_each_models_constructor_replaced_takes_the_host_at_its_word_no_more(self):
        from evaldeck import test_case
        from gavel_runtime import convert

        for classes, check in (
            (test_case._CASE_MODELS, test_case._own_case_constructors),
            (convert._TRACE_MODELS, convert._own_trace_constructors),
        ):
            self.assertTrue(check())
            for cls in classes:
                own = cls.__dict__["__init__"] if "__init__" in cls.__dict__ else None
                cls.__init__ = lambda self, **data: cls._construct(self, **data)
                try:
                    self.assertFalse(check(), cls.__name__)
                finally:
                    if own is None:
                        del cls.__init__
                    else:
                        cls.__init__ = own
                self.assertTrue(check(), cls.__name__)

    def test_a_vouched_rows_members_are_parsed_when_the_case_reads_them(self):
        from evaldeck.test_case import Turn
        from gavel_runtime import convert

        runtime = Runtime(sandboxed=False)
        name = "evaldeck-function:m:f"
        whole, _ = runtime.row(name, self.TEXT, "", "evaldeck")
        scanned = []
        scan = convert._scan
        convert._scan = lambda text, start: scanned.append(start) or scan(text, start)
        try:
            row, located = runtime.row(name, self.TEXT, "", "evaldeck", self.digest())
            case = convert.evaldeck_case(row, 3, vouched=True)
            # Nothing of the members until the case reads them; its turn then reads the 4 keys
            # and the two values it is made of (`input`, `expected`).
            self.assertEqual(scanned, [])
            self.assertEqual(held(case).keys(), {"_gavel_data"})
            self.assertEqual(case.expected.tools_called, ["search"])
            self.assertEqual(len(scanned), 4 + 2)
            self.assertEqual(case.input, "Book ≥ 2")
        finally:
            convert._scan = scan
        self.assertEqual(case, convert.evaldeck_case(whole, 3))
        self.assertEqual(repr(case), repr(convert.evaldeck_case(whole, 3)))
        # Without the name, the id names the case; a list input is joined, as evaldeck's loader does.
        text = '{"input": ["a", 2], "expected": {"max_steps": 2}}'
        starts = [text.index('"input"'), text.index("["), text.index('"expected"'), text.index('{"max')]
        row = convert.LocatedRow(text, [1, 2] + starts)
        whole = json.loads(text)
        case = convert.evaldeck_case(row, 3, vouched=True)
        self.assertEqual(held(case).keys(), {"_gavel_data"})
        self.assertEqual(case, convert.evaldeck_case(whole, 3))
        self.assertEqual((case.name, case.input, case.expected.max_steps), ("3", "a\n2", 2))
        # A replaced constructor: the case is validated from the members, as without the digest.
        init = Turn.__init__
        Turn.__init__ = lambda self, **data: init(self, **data)
        try:
            case = convert.evaldeck_case(row, 3, vouched=True)
        finally:
            Turn.__init__ = init
        self.assertNotIn("_gavel_data", held(case))
        self.assertEqual(case, convert.evaldeck_case(whole, 3))

    def test_a_form_that_reads_no_recording_or_a_replaced_model_takes_the_usual_path(self):
        from evaldeck.trace import Step

        runtime = Runtime(sandboxed=False)
        row, parsed = runtime.row("letta-grader:m:f", self.TEXT, "", "evaldeck", self.digest())
        self.assertIsNone(parsed)
        self.assertNotIn("trajectory", row)
        init = Step.__init__
        Step.__init__ = lambda self, **data: init(self, **data)
        try:
            _, parsed = runtime.row("evaldeck-function:m:f", self.TEXT, "", "evaldeck", self.digest())
        finally:
            Step.__init__ = init
        self.assertEqual(type(parsed), dict)


class Sandbox(unittest.TestCase):
    """What the sandbox adds to what WASI answers, installed in a child interpreter (it cannot
    be removed once installed); the files, network and processes WASI refuses are tested
    through the interpreter component (tests/all/python_bare.rs)."""

    @classmethod
    def setUpClass(cls):
        # Outside /tmp, where the sandbox lets writes through to WASI (its scratch folder).
        cls.cwd = tempfile.mkdtemp(dir="/var/tmp")
        cls.addClassCleanup(shutil.rmtree, cls.cwd)
        code = SANDBOXED % [RUNTIME, os.path.join(RUNTIME, "stubs")]
        env = {"HOME": "/root", "PATH": os.environ.get("PATH", "/usr/bin")}
        # Run from a folder outside the runtime's (which is on the child's sys.path).
        done = subprocess.run(
            [sys.executable, "-c", code], capture_output=True, text=True, env=env, check=False, cwd=cls.cwd
        )
        if done.returncode != 0:
            raise AssertionError(done.stderr)
        cls.seen = json.loads(done.stdout)

    def test_files_are_read_only(self):
        self.assertEqual(self.seen["g_write"], "OSError: [Errno 30] Read-only file system: 'out.txt' (at h.py:4)")
        self.assertEqual(self.seen["g_append"], "OSError: [Errno 30] Read-only file system: 'out.txt' (at h.py:6)")
        self.assertEqual(self.seen["g_update"], "OSError: [Errno 30] Read-only file system: 'h.py' (at h.py:8)")
        self.assertEqual(self.seen["g_mkdir"], "OSError: [Errno 30] Read-only file system: 'made' (at h.py:12)")
        self.assertEqual(self.seen["g_read_back"], 0.5)
        self.assertFalse(os.listdir(self.cwd))

    def test_the_environment_is_the_one_given(self):
        self.assertEqual(self.seen["g_env"], len("/root"))
        self.assertEqual(self.seen["g_env_get"], 0.25)
        self.assertEqual(self.seen["g_env_set"], 0.25)

    def test_a_missing_variable_is_a_key_error_saying_how_to_grant_it(self):
        self.assertEqual(
            self.seen["g_env_missing"],
            "KeyError: 'OPENAI_API_KEY' (at h.py:16); gavel's sandbox passes in only the environment "
            "variables the suite grants (`allow: {env: [OPENAI_API_KEY]}`, or "
            "`allow: {secrets: {OPENAI_API_KEY: [HOST]}}` for a key sent only to its hosts) that "
            "are set where gavel runs",
        )

    def test_process_functions_wasi_lacks_raise_os_error(self):
        self.assertEqual(self.seen["g_system"], "OSError: [Errno 38] linux does not support processes (os.system) (at h.py:23)")
        self.assertEqual(self.seen["g_fork"], 0.75)


class Alarms(unittest.TestCase):
    """`signal.alarm` and `signal.setitimer` on a clock that moves only as the program sleeps,
    as the sandbox's does (a fake clock here: the module's sleep and monotonic)."""

    def setUp(self):
        from gavel_runtime import alarms

        self.alarms = alarms
        self.now = 0.0
        clock = self

        class Time:
            @staticmethod
            def monotonic():
                return clock.now

        def slept(seconds):
            if seconds < 0:
                raise ValueError("sleep length must be non-negative")
            clock.now += seconds

        self.patches = [(alarms, "time", alarms.time), (alarms, "_sleep", alarms._sleep)]
        alarms.time, alarms._sleep = Time, slept
        self.fired = []
        self.handler = signal.signal(signal.SIGALRM, lambda signum, frame: self.fired.append((signum, clock.now)))
        alarms.cancel()

    def tearDown(self):
        for owner, name, value in self.patches:
            setattr(owner, name, value)
        signal.signal(signal.SIGALRM, self.handler)
        self.alarms.cancel()

    def test_a_timer_fires_where_a_sleep_passes_it_and_the_sleep_goes_on(self):
        a = self.alarms
        self.assertEqual(a.setitimer(a.ITIMER_REAL, 1.5, 2.0), (0.0, 0.0))
        self.assertEqual(a.getitimer(a.ITIMER_REAL), (1.5, 2.0))
        a.sleep(6)
        self.assertEqual(self.fired, [(signal.SIGALRM, 1.5), (signal.SIGALRM, 3.5), (signal.SIGALRM, 5.5)])
        self.assertEqual(self.now, 6)
        self.assertEqual(a.setitimer(a.ITIMER_REAL, 0), (1.5, 2.0))
        a.sleep(10)
        self.assertEqual(len(self.fired), 3)

    def test_a_handler_that_raises_ends_the_sleep_at_the_timer(self):
        a = self.alarms

        def timed_out(signum, frame):
            raise TimeoutError("Timed out!")

        signal.signal(signal.SIGALRM, timed_out)
        a.setitimer(a.ITIMER_REAL, 3)
        with self.assertRaisesRegex(TimeoutError, "Timed out!"):
            a.sleep(100)
        self.assertEqual((self.now, a.due), (3, None))

    def test_alarm_returns_the_whole_seconds_left_as_linux_rounds_them(self):
        a = self.alarms
        self.assertEqual(a.alarm(5), 0)
        a.sleep(0.25)
        self.assertEqual(a.alarm(1), 5)
        a.sleep(1)
        self.assertEqual(self.fired, [(signal.SIGALRM, 1.25)])
        a.setitimer(a.ITIMER_REAL, 0.2)
        self.assertEqual(a.alarm(0), 1)
        self.assertEqual(a.getitimer(a.ITIMER_REAL), (0.0, 0.0))
        with self.assertRaises(TypeError):
            a.alarm(1.5)

    def test_no_handler_ends_the_program_and_ignoring_does_nothing(self):
        a = self.alarms
        signal.signal(signal.SIGALRM, signal.SIG_IGN)
        a.alarm(1)
        a.sleep(2)
        signal.signal(signal.SIGALRM, signal.SIG_DFL)
        a.alarm(1)
        with self.assertRaisesRegex(SystemExit, "Alarm clock"):
            a.sleep(2)

    def test_what_cannot_be_set_is_refused(self):
        a = self.alarms
        for which, seconds in [(a.ITIMER_VIRTUAL, 1), (a.ITIMER_PROF, 1), (a.ITIMER_REAL, -1)]:
            with self.subTest(which=which, seconds=seconds), self.assertRaises(a.ItimerError):
                a.setitimer(which, seconds)
        with self.assertRaises(TypeError):
            a.setitimer(a.ITIMER_REAL, "1")
        a.alarm(1)
        with self.assertRaises(ValueError):
            a.sleep(-1)
        with self.assertRaises(TypeError):
            a.sleep("1")


class KeyDerivation(unittest.TestCase):
    """`hashlib.pbkdf2_hmac` where the interpreter has no OpenSSL, against CPython's own."""

    def test_derived_keys_are_cpythons(self):
        from gavel_runtime.sandbox import _pbkdf2_hmac

        cases = [
            ("sha256", b"password", b"salt", 1, None),
            ("sha256", b"password", b"salt", 4096, 80),
            ("sha1", b"k" * 200, bytearray(b"NaCl"), 7, 3),
            ("sha512", b"", b"", 2, None),
            ("md5", memoryview(b"key"), b"s", 5, 100),
        ]
        for name, password, salt, iterations, dklen in cases:
            with self.subTest(name=name, iterations=iterations, dklen=dklen):
                self.assertEqual(
                    _pbkdf2_hmac(name, password, salt, iterations, dklen),
                    hashlib.pbkdf2_hmac(name, password, salt, iterations, dklen),
                )

    def test_bad_arguments_raise_what_cpython_raises(self):
        from gavel_runtime.sandbox import _pbkdf2_hmac

        for args in [("sha256", b"p", b"s", 0), ("sha256", b"p", b"s", 1, 0), ("nope", b"p", b"s", 1)]:
            with self.subTest(args=args):
                with self.assertRaises(ValueError) as ours:
                    _pbkdf2_hmac(*args)
                with self.assertRaises(ValueError) as cpythons:
                    hashlib.pbkdf2_hmac(*args)
                if args[0] != "nope":  # OpenSSL words an unknown digest its own way
                    self.assertEqual(str(ours.exception), str(cpythons.exception))


if __name__ == "__main__":
    unittest.main()
