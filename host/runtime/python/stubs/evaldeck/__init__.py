"""evaldeck, as gavel's sandbox provides it: the data models and graders of evaldeck 0.1.5 that
grader code reads, written for an interpreter without pydantic."""

from evaldeck.evaluator import EvaluationRunner, Evaluator
from evaldeck.results import EvaluationResult, GradeResult, GradeStatus, MetricResult
from evaldeck.test_case import EvalCase, EvalSuite, ExpectedBehavior, GraderConfig, Turn
from evaldeck.trace import Message, Step, StepStatus, StepType, TokenUsage, Trace, TraceStatus

__version__ = "0.1.0"

__all__ = [
    "__version__",
    "Trace",
    "Step",
    "StepType",
    "StepStatus",
    "TraceStatus",
    "TokenUsage",
    "Message",
    "EvalCase",
    "EvalSuite",
    "ExpectedBehavior",
    "GraderConfig",
    "Turn",
    "GradeResult",
    "GradeStatus",
    "MetricResult",
    "EvaluationResult",
    "Evaluator",
    "EvaluationRunner",
]
