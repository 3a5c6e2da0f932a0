"""evaldeck.graders.code: the deterministic graders (stand-in for evaldeck 0.1.5).

Each falls back to the case's `expected` block when built without its own value, and passes
when there is nothing to check; messages embed Python reprs exactly as evaldeck writes them.
"""

import importlib
import inspect
import re

from evaldeck.graders.base import BaseGrader
from evaldeck.results import GradeResult


def _expected(test_case, key):
    return getattr(test_case.expected, key)


class _TextGrader(BaseGrader):
    def __init__(self, values=None, field="output", case_sensitive=False):
        self.values = values
        self.field = field
        self.case_sensitive = case_sensitive

    def _fold(self, text):
        return text if self.case_sensitive else text.lower()

    def _present(self, trace, values):
        content = self._fold(trace.output or "")
        return [v for v in values if self._fold(v) in content]


class ContainsGrader(_TextGrader):
    name = "contains"

    def grade(self, trace, test_case):
        values = self.values if self.values is not None else (_expected(test_case, "output_contains") or [])
        if not values:
            return GradeResult.passed_result(self.name, "No values to check")
        missing = [v for v in values if v not in self._present(trace, [v])]
        if missing:
            return GradeResult.failed_result(
                self.name, f"Missing values in output: {missing}", expected=values, actual=trace.output
            )
        return GradeResult.passed_result(self.name, f"All {len(values)} values found in output")


class NotContainsGrader(_TextGrader):
    name = "not_contains"

    def grade(self, trace, test_case):
        values = self.values if self.values is not None else (_expected(test_case, "output_not_contains") or [])
        if not values:
            return GradeResult.passed_result(self.name, "No values to check")
        found = self._present(trace, values)
        if found:
            return GradeResult.failed_result(
                self.name,
                f"Forbidden values found in output: {found}",
                expected=f"None of: {values}",
                actual=trace.output,
            )
        return GradeResult.passed_result(self.name, "No forbidden values found")


class EqualsGrader(BaseGrader):
    name = "equals"

    def __init__(self, expected=None, field="output", normalize_whitespace=True):
        self.expected = expected
        self.field = field
        self.normalize_whitespace = normalize_whitespace

    def grade(self, trace, test_case):
        expected = self.expected or _expected(test_case, "output_equals")
        if expected is None:
            return GradeResult.passed_result(self.name, "No expected value to check")
        actual = trace.output or ""
        if self.normalize_whitespace:
            expected, actual = " ".join(expected.split()), " ".join(actual.split())
        if actual == expected:
            return GradeResult.passed_result(self.name, "Output matches expected")
        return GradeResult.failed_result(self.name, "Output does not match expected", expected=expected, actual=actual)


class RegexGrader(BaseGrader):
    name = "regex"

    def __init__(self, pattern=None, field="output", flags=0):
        self.pattern = pattern
        self.field = field
        self.flags = flags

    def grade(self, trace, test_case):
        pattern = self.pattern or _expected(test_case, "output_matches")
        if pattern is None:
            return GradeResult.passed_result(self.name, "No pattern to check")
        content = trace.output or ""
        try:
            found = re.search(pattern, content, self.flags)
        except re.error as e:
            return GradeResult.error_result(self.name, f"Invalid regex: {e}")
        if found:
            return GradeResult.passed_result(self.name, f"Output matches pattern: {pattern}")
        return GradeResult.failed_result(
            self.name, f"Output does not match pattern: {pattern}", expected=pattern, actual=content
        )


class ToolCalledGrader(BaseGrader):
    name = "tool_called"

    def __init__(self, required=None):
        self.required = required

    def grade(self, trace, test_case):
        required = self.required if self.required is not None else (_expected(test_case, "tools_called") or [])
        if not required:
            return GradeResult.passed_result(self.name, "No required tools to check")
        called = set(trace.tools_called)
        missing = set(required) - called
        if missing:
            return GradeResult.failed_result(
                self.name,
                f"Required tools not called: {sorted(missing)}",
                expected=sorted(required),
                actual=sorted(called),
            )
        return GradeResult.passed_result(self.name, f"All {len(required)} required tools were called")


class ToolNotCalledGrader(BaseGrader):
    name = "tool_not_called"

    def __init__(self, forbidden=None):
        self.forbidden = forbidden

    def grade(self, trace, test_case):
        forbidden = self.forbidden if self.forbidden is not None else (_expected(test_case, "tools_not_called") or [])
        if not forbidden:
            return GradeResult.passed_result(self.name, "No forbidden tools to check")
        called = set(trace.tools_called)
        violated = called & set(forbidden)
        if violated:
            return GradeResult.failed_result(
                self.name,
                f"Forbidden tools were called: {sorted(violated)}",
                expected=f"None of: {sorted(forbidden)}",
                actual=sorted(called),
            )
        return GradeResult.passed_result(self.name, "No forbidden tools were called")


class ToolOrderGrader(BaseGrader):
    name = "tool_order"

    def __init__(self, expected_order=None):
        self.expected_order = expected_order

    def grade(self, trace, test_case):
        order = self.expected_order if self.expected_order is not None else (_expected(test_case, "tool_call_order") or [])
        if not order:
            return GradeResult.passed_result(self.name, "No expected order to check")
        actual = trace.tools_called
        matched = 0
        for tool in actual:
            if matched < len(order) and tool == order[matched]:
                matched += 1
        if matched == len(order):
            return GradeResult.passed_result(self.name, "Tools called in correct order")
        return GradeResult.failed_result(self.name, "Tools not called in expected order", expected=order, actual=actual)


class _LimitGrader(BaseGrader):
    # (expected key, what is counted in messages, how to count, message when unset)
    _key = _noun = _unset = None

    def __init__(self, limit=None):
        self._limit = limit

    def _count(self, trace):
        raise NotImplementedError

    def grade(self, trace, test_case):
        limit = self._limit if self._limit is not None else _expected(test_case, self._key)
        if limit is None:
            return GradeResult.passed_result(self.name, self._unset)
        actual = self._count(trace)
        if actual <= limit:
            return GradeResult.passed_result(self.name, self._ok.format(actual=actual, limit=limit))
        return GradeResult.failed_result(
            self.name, self._over.format(actual=actual, limit=limit), expected=limit, actual=actual
        )


class MaxStepsGrader(_LimitGrader):
    name = _key = "max_steps"
    _unset = "No max steps defined"
    _ok = "Completed in {actual} steps (max: {limit})"
    _over = "Too many steps: {actual} > {limit}"

    def __init__(self, max_steps=None):
        super().__init__(max_steps)
        self.max_steps = max_steps

    def _count(self, trace):
        return trace.step_count


class MaxToolCallsGrader(_LimitGrader):
    name = _key = "max_tool_calls"
    _unset = "No max tool calls defined"
    _ok = "Made {actual} tool calls (max: {limit})"
    _over = "Too many tool calls: {actual} > {limit}"

    def __init__(self, max_tool_calls=None):
        super().__init__(max_tool_calls)
        self.max_tool_calls = max_tool_calls

    def _count(self, trace):
        return len(trace.tool_calls)


class MaxLLMCallsGrader(_LimitGrader):
    name = _key = "max_llm_calls"
    _unset = "No max LLM calls defined"
    _ok = "Made {actual} LLM calls (max: {limit})"
    _over = "Too many LLM calls: {actual} > {limit}"

    def __init__(self, max_llm_calls=None):
        super().__init__(max_llm_calls)
        self.max_llm_calls = max_llm_calls

    def _count(self, trace):
        return len(trace.llm_calls)


class TaskCompletedGrader(BaseGrader):
    name = "task_completed"

    def __init__(self, require_success=True):
        self.require_success = require_success

    def grade(self, trace, test_case):
        from evaldeck.trace import TraceStatus

        expected = _expected(test_case, "task_completed")
        if expected is None:
            expected = self.require_success
        completed = trace.status == TraceStatus.SUCCESS and bool(trace.output)
        if expected and completed:
            return GradeResult.passed_result(self.name, "Task completed successfully")
        if expected:
            return GradeResult.failed_result(
                self.name,
                f"Task not completed. Status: {trace.status}, Output: {bool(trace.output)}",
                expected="completed",
                actual=f"status={trace.status}",
            )
        if not completed:
            return GradeResult.passed_result(self.name, "Task correctly did not complete (as expected)")
        return GradeResult.failed_result(
            self.name, "Task completed but was expected to fail", expected="not completed", actual="completed"
        )


class CustomGrader(BaseGrader):
    """A function `(trace, test_case) -> GradeResult` as a grader. Any exception, the import of
    `module` included, becomes an ERROR grade `Custom grader error: <exception>`."""

    name = "custom"

    def __init__(self, func=None, module=None, function=None):
        self.func = func
        self.module_name = module
        self.function_name = function
        self._loaded_func = None

    def _get_func(self):
        if self.func is not None:
            return self.func
        if self._loaded_func is None:
            if not (self.module_name and self.function_name):
                raise ValueError("CustomGrader requires either func or module+function")
            self._loaded_func = getattr(importlib.import_module(self.module_name), self.function_name)
        return self._loaded_func

    def grade(self, trace, test_case):
        try:
            return self._get_func()(trace, test_case)
        except Exception as e:
            return GradeResult.error_result(self.name, f"Custom grader error: {e}")

    async def grade_async(self, trace, test_case):
        try:
            func = self._get_func()
            if inspect.iscoroutinefunction(func):
                return await func(trace, test_case)
            return func(trace, test_case)
        except Exception as e:
            return GradeResult.error_result(self.name, f"Custom grader error: {e}")
