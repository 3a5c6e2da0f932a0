"""evaldeck.results: what a grader returns (stand-in for evaldeck 0.1.5)."""

import datetime as _dt
from enum import Enum

from _gavel_model import (
    REQUIRED,
    Field,
    Model,
    any_value,
    boolean,
    datetime,
    enum,
    floating,
    integer,
    list_of,
    mapping,
    model,
    optional,
    string,
)


class GradeStatus(str, Enum):
    PASS = "pass"
    FAIL = "fail"
    ERROR = "error"
    SKIP = "skip"


class _Passed:
    @property
    def passed(self):
        return self.status == GradeStatus.PASS


class _Graded(_Passed):
    @property
    def failed_grades(self):
        return [g for g in self.grades if g.status == GradeStatus.FAIL]


class GradeResult(_Passed, Model):
    _fields = (
        Field("grader_name", string, REQUIRED),
        Field("status", enum(GradeStatus), REQUIRED),
        Field("score", optional(floating)),
        Field("message", optional(string)),
        Field("details", mapping, factory=dict),
        Field("expected", any_value),
        Field("actual", any_value),
    )

    @classmethod
    def passed_result(cls, grader_name, message=None, **kwargs):
        return cls(grader_name=grader_name, status=GradeStatus.PASS, message=message, **kwargs)

    @classmethod
    def failed_result(cls, grader_name, message, expected=None, actual=None, **kwargs):
        return cls(
            grader_name=grader_name,
            status=GradeStatus.FAIL,
            message=message,
            expected=expected,
            actual=actual,
            **kwargs,
        )

    @classmethod
    def error_result(cls, grader_name, message, **kwargs):
        return cls(grader_name=grader_name, status=GradeStatus.ERROR, message=message, **kwargs)


class MetricResult(Model):
    _fields = (
        Field("metric_name", string, REQUIRED),
        Field("value", floating, REQUIRED),
        Field("unit", optional(string)),
        Field("details", mapping, factory=dict),
    )


class TurnResult(_Graded, Model):
    _fields = (
        Field("turn_index", integer, REQUIRED),
        Field("user_input", string, REQUIRED),
        Field("status", enum(GradeStatus), REQUIRED),
        Field("grades", list_of(model(GradeResult)), factory=list),
        Field("trace_id", optional(string)),
        Field("duration_ms", optional(floating)),
        Field("skipped", boolean, False),
    )


class EvaluationResult(_Graded, Model):
    _fields = (
        Field("test_case_name", string, REQUIRED),
        Field("status", enum(GradeStatus), REQUIRED),
        Field("grades", list_of(model(GradeResult)), factory=list),
        Field("metrics", list_of(model(MetricResult)), factory=list),
        Field("turn_results", list_of(model(TurnResult)), factory=list),
        Field("failed_at_turn", optional(integer)),
        Field("duration_ms", optional(floating)),
        Field("started_at", datetime, factory=_dt.datetime.now),
        Field("completed_at", optional(datetime)),
        Field("trace_id", optional(string)),
        Field("error", optional(string)),
    )

    @property
    def pass_rate(self):
        if not self.grades:
            return 0.0
        return sum(1 for g in self.grades if g.passed) / len(self.grades)

    @property
    def is_multi_turn(self):
        return len(self.turn_results) > 1

    @property
    def turns_completed(self):
        return sum(1 for t in self.turn_results if not t.skipped)

    @property
    def total_turns(self):
        return len(self.turn_results)

    def add_grade(self, grade):
        self.grades.append(grade)
        if grade.status == GradeStatus.ERROR:
            self.status = GradeStatus.ERROR
        elif grade.status == GradeStatus.FAIL and self.status != GradeStatus.ERROR:
            self.status = GradeStatus.FAIL

    def add_metric(self, metric):
        self.metrics.append(metric)
