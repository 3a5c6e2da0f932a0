"""Runs the same user graders the way their own tool runs them (`real`: letta-evals 0.26.0 and
evaldeck 0.1.5 installed) or the way gavel's interpreter runs them (`gavel`: the runtime and
its stand-ins, under CPython), and prints what each produced as JSON, one entry per case.

    python observe.py real|gavel

test_differential.py runs both and compares the entries field by field.
"""

import asyncio
import copy
import json
import os
import sys
import tempfile
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
DATA = os.path.join(HERE, "data")
# letta-evals' own example suites, kept with gavel's integration tests.
EXAMPLES = os.path.normpath(os.path.join(HERE, "..", "..", "..", "tests", "data", "letta-examples"))
RUNTIME = os.path.dirname(HERE)
MODE = sys.argv[1] if len(sys.argv) > 1 else "gavel"

if MODE == "gavel":
    sys.path[:0] = [RUNTIME, os.path.join(RUNTIME, "stubs")]
    from gavel_runtime import CallError, Run, Runtime
elif MODE != "real":
    sys.exit("usage: observe.py real|gavel")


def jsonl(path):
    with open(path) as f:
        return [json.loads(line) for line in f if line.strip()]


def error_text(e):
    return f"{type(e).__name__}: {e}"


def sources_of(folder, modules):
    return [(m, f"{m}.py", open(os.path.join(folder, f"{m}.py")).read(), None) for m in modules]


# ------------------------------------------------------------------------------------------
# evaldeck: the documentation's custom graders on recorded traces


def evaldeck_cases(out):
    rows = jsonl(os.path.join(DATA, "evaldeck", "cases.jsonl"))
    functions = ["check_booking_format", "validate_search_args", "quality_score"]
    classes = [("TokenBudgetGrader", {"max_tokens": 1000}), ("TokenBudgetGrader", {"max_tokens": 50})]
    if MODE == "real":
        sys.path.insert(0, os.path.join(DATA, "evaldeck"))
        import my_graders
        from evaldeck import EvalCase, Trace
        from evaldeck.graders import CustomGrader
        from evaldeck.results import GradeResult

        def run_function(fn, row):
            trace = Trace.from_dict(row["trace"])
            case = EvalCase._from_dict({k: v for k, v in row.items() if k != "trace"})
            return dump_evaldeck(CustomGrader(func=getattr(my_graders, fn)).grade(trace, case))

        def run_class(cls, params, row):
            trace = Trace.from_dict(row["trace"])
            case = EvalCase._from_dict({k: v for k, v in row.items() if k != "trace"})
            grader = getattr(my_graders, cls)(**params)
            try:
                result = grader.grade(trace, case)
            except Exception as e:
                result = GradeResult.error_result(grader.name, f"Grader error: {e}")
            return dump_evaldeck(result)

    else:
        runtime = Runtime(sandboxed=False)
        runtime.load(sources_of(os.path.join(DATA, "evaldeck"), ["my_graders"]), ["my_graders"])

        def run(name, row, config):
            data = {k: v for k, v in row.items() if k != "trace"}
            recorded = Run(recorded_format="evaldeck", recorded_value=json.dumps(row["trace"]))
            grade = runtime.grade(name, data, 0, recorded, "", config)
            return {
                "grader_name": json.loads(grade["metadata"]).get("grader_name"),
                "status": grade["status"],
                "message": grade["rationale"],
                "details": {k: v for k, v in json.loads(grade["metadata"]).items() if k != "grader_name"},
                "expected": None if grade["expected"] is None else json.loads(grade["expected"]),
                "actual": None if grade["actual"] is None else json.loads(grade["actual"]),
            }

        def run_function(fn, row):
            return run(f"evaldeck-function:my_graders:{fn}", row, "{}")

        def run_class(cls, params, row):
            return run(f"evaldeck-class:my_graders:{cls}", row, json.dumps(params))

    for row in rows:
        for fn in functions:
            out[f"evaldeck/{fn}/{row['name']}"] = run_function(fn, row)
        for cls, params in classes:
            out[f"evaldeck/{cls}{params}/{row['name']}"] = run_class(cls, params, row)


def dump_evaldeck(result):
    # What the host receives: the score is the grader's own, or evaldeck's pass rule.
    return {
        "grader_name": result.grader_name,
        "status": result.status.value,
        "message": result.message or "",
        "details": json.loads(json.dumps(result.details, default=str)),
        "expected": result.expected,
        "actual": result.actual,
    }


# ------------------------------------------------------------------------------------------
# letta-evals: custom graders and extractors through letta's pipeline, and reward composers

LETTA_GRADERS = [
    # (folder, grader, extractor, extractor config)
    (os.path.join(EXAMPLES, "custom-tool-grader-and-extractor"), "custom_evaluators:ticket_classification_grader",
     "custom_evaluators:json_object_extractor", {}),
    ("letta-extra", "graders:mentions_team", "graders:shout", {}),
    ("letta-extra", "graders:length", "graders:lookup_args", {"tool": "lookup"}),
    ("letta-extra", "graders:raises", "graders:shout", {}),
    ("letta-extra", "graders:bad_score", "graders:shout", {}),
    ("letta-extra", "graders:builtins_together", "graders:shout", {}),
    (os.path.join(EXAMPLES, "letta-code-simple-edit"), "custom_python_grader:python_output_grader", "last_assistant", {}),
]


def letta_cases(out):
    runs = jsonl(os.path.join(DATA, "letta-runs.jsonl"))
    with tempfile.TemporaryDirectory() as tmp:
        dataset = os.path.join(tmp, "dataset.jsonl")
        with open(dataset, "w") as f:
            for run in runs:
                f.write(json.dumps(run["row"]) + "\n")
        for folder, grader, extractor, config in LETTA_GRADERS:
            results = grade_letta(os.path.join(DATA, folder), grader, extractor, config, runs, dataset)
            for index, result in enumerate(results):
                out[f"letta/{grader}+{extractor}/{index}"] = result
    out["letta/decorator/wrong-names"] = letta_load_error(os.path.join(DATA, "letta-extra"), "bad_decorators")
    letta_rewards(out)


def grade_letta(folder, grader, extractor, config, runs, dataset):
    results = []
    if MODE == "real":
        from letta_evals.datasets.loader import load_jsonl
        from letta_evals.graders.tool import ToolGrader
        from letta_evals.models import LettaMessageUnion
        from pydantic import TypeAdapter
        from typing import List

        adapter = TypeAdapter(List[List[LettaMessageUnion]])
        tool = ToolGrader(
            function=grader.replace(":", ".py:"),
            extractor=extractor.replace(":", ".py:") if ":" in extractor else extractor,
            extractor_config=config,
            base_dir=__import__("pathlib").Path(folder),
        )
        samples = list(load_jsonl(__import__("pathlib").Path(dataset)))
        for sample, run in zip(samples, runs):
            trajectory = adapter.validate_python(run["trajectory"])
            try:
                result, submission = asyncio.run(tool.grade(sample, trajectory))
                metadata = dict(result.metadata)
                metadata.pop("extraction_time", None)
                results.append(
                    {"submission": submission, "score": result.score, "rationale": result.rationale, "metadata": metadata}
                )
            except Exception as e:
                results.append({"error": error_text(e)})
        return results
    modules = sorted({grader.split(":")[0]} | ({extractor.split(":")[0]} if ":" in extractor else set()))
    extractor_name = f"letta-extractor:{extractor}" if ":" in extractor else f"letta-extractor::{extractor}"
    runtime = Runtime(sandboxed=False)
    runtime.load(sources_of(folder, modules), modules)
    for index, run in enumerate(runs):
        recorded = Run(recorded_format="letta", recorded_value=json.dumps(run["trajectory"]))
        trajectory = run["trajectory"]
        # The host's guard, as letta-evals' Grader.extract does it.
        if not trajectory or not any(turn for turn in trajectory):
            results.append({"submission": "", "score": 0.0, "rationale": "Empty trajectory - agent produced no messages", "metadata": {}})
            continue
        try:
            submission = runtime.extract(extractor_name, run["row"], index, recorded, json.dumps(config))
            if not submission:
                results.append({"submission": "", "score": 0.0, "rationale": "Empty submission - extractor found no content", "metadata": {}})
                continue
            grade = runtime.grade(f"letta-grader:{grader}", run["row"], index, recorded, submission, "{}")
            results.append(
                {"submission": submission, "score": grade["score"], "rationale": grade["rationale"], "metadata": json.loads(grade["metadata"])}
            )
        except CallError as e:
            results.append({"error": str(e).split(" (at ")[0]})
    return results


def letta_load_error(folder, module):
    if MODE == "real":
        from letta_evals.utils import load_object

        try:
            load_object(f"{module}.py:wrong_names", __import__("pathlib").Path(folder))
        except Exception as e:
            return {"error": error_text(e)}
        return {"error": None}
    from gavel_runtime import LoadFailure

    try:
        Runtime(sandboxed=False).load(sources_of(folder, [module]), [module])
    except LoadFailure as e:
        return {"error": e.message, "path": e.path, "line": e.line}
    return {"error": None}


REWARD_CONTEXT = {
    "sample": {"id": 3, "input": "q", "ground_truth": "a"},
    "grades": {
        "a": {"score": 1.0, "rationale": "ok", "metadata": {}},
        "b": {"score": 0.5, "rationale": "half", "metadata": {"k": 1}},
    },
    "submissions": {"a": "x", "b": "y"},
}


def letta_rewards(out):
    folder = os.path.join(DATA, "letta-extra")
    names = ["weighted", "gated", "out_of_range", "wrong_type", "undecorated", "top_level", "collections"]
    if MODE == "real":
        from pathlib import Path

        from letta_evals.models import CustomRewardSpec, GradeResult, Sample, Timing
        from letta_evals.rewards import RewardContext, load_reward_composer

        ctx = RewardContext(
            sample=Sample(**REWARD_CONTEXT["sample"]),
            grades={k: GradeResult(**g) for k, g in REWARD_CONTEXT["grades"].items()},
            submissions=REWARD_CONTEXT["submissions"],
            trajectory=[],
            agent_id=None,
            model_handle=None,
            agent_state=None,
            usage=None,
            timing=Timing(total=0.0, target=0.0),
        )
        for name in names:
            try:
                composer = load_reward_composer(CustomRewardSpec(kind="custom", function=f"rewards.py:{name}"), Path(folder))
                output = asyncio.run(composer(ctx))
                # The metadata as letta-evals writes it in its results.
                metadata = json.loads(output.model_dump_json())["metadata"]
                out[f"reward/{name}"] = {"score": output.score, "metadata": metadata}
            except Exception as e:
                out[f"reward/{name}"] = {"error": error_text(e).split(": ", 1)[1] if "must be decorated" in str(e) else error_text(e)}
        return
    runtime = Runtime(sandboxed=False)
    runtime.load(sources_of(folder, ["rewards"]), ["rewards"])
    for name in names:
        try:
            output = json.loads(runtime.reward(f"letta-reward:rewards:{name}", json.dumps(REWARD_CONTEXT)))
            out[f"reward/{name}"] = {"score": output["score"], "metadata": output["metadata"]}
        except CallError as e:
            text = str(e).split(" (at ")[0]
            out[f"reward/{name}"] = {"error": text.split(": ", 1)[0] + ": " + text.split(": ", 1)[1] if ": " in text else text}


# ------------------------------------------------------------------------------------------
# The models themselves: what printing, comparing and the helpers show


def outcomes(model, *reads):
    """What each read of `model` gives, or the error it raises, in order."""
    seen = []
    for read in reads:
        try:
            seen.append(repr(read(model)))
        except Exception as e:
            seen.append({"error": error_text(e)})
    return seen


def unset_and_defaults(model):
    """What pydantic holds as given of `model`, and what its dumps leave out as unset or default."""
    return [sorted(model.model_fields_set), model.model_dump(mode="json", exclude_unset=True),
            model.model_dump(mode="json", exclude_defaults=True), model.model_dump_json(exclude_unset=True, exclude_none=True)]


def deleted(name):
    """An edit of a model that deletes its attribute `name`, giving what that did."""

    def edit(model):
        try:
            delattr(model, name)
        except AttributeError as e:
            return error_text(e)
        return "deleted"

    return edit


def trace_of(data):
    """evaldeck's `Trace` of `data`, as `Trace.from_dict` builds it, or as gavel's runtime
    builds it from a run's recording (a model of the usual form built on first read)."""
    if MODE == "real":
        from evaldeck import Trace

        return Trace.from_dict(copy.deepcopy(data))
    from gavel_runtime.convert import evaldeck_trace

    return evaldeck_trace(Run(recorded_format="evaldeck", recorded_value=json.dumps(data)))


def case_of(data):
    """evaldeck's `EvalCase` of a row without its trace, as `EvalCase._from_dict` builds it, or
    as gavel's runtime builds it from the row."""
    if MODE == "real":
        from evaldeck import EvalCase

        return EvalCase._from_dict(copy.deepcopy(data))
    from gavel_runtime.convert import evaldeck_case

    return evaldeck_case(copy.deepcopy(data), data["name"])


def sample_of(row):
    """letta-evals' `Sample` of a dataset row, as its JSONL loader builds it, or as gavel's
    runtime builds it."""
    if MODE == "real":
        from letta_evals.datasets.loader import load_jsonl

        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "dataset.jsonl")
            with open(path, "w") as f:
                f.write(json.dumps(row) + "\n")
            return next(load_jsonl(__import__("pathlib").Path(path)))
    from gavel_runtime.convert import letta_sample

    return letta_sample(copy.deepcopy(row), 0)


def model_cases(out):
    from evaldeck import EvalCase, Step, StepType, TokenUsage, Trace
    from evaldeck.results import GradeResult as EGrade, GradeStatus
    from letta_evals.models import GradeResult, RewardOutput, Sample

    def attempt(key, fn):
        try:
            out[key] = fn()
        except Exception as e:
            out[key] = {"error": error_text(e)}

    attempt("model/letta-grade-repr", lambda: [repr(GradeResult(score=1, rationale="x")), str(GradeResult(score=0.5))])
    attempt("model/letta-grade-range", lambda: GradeResult(score=1.5))
    attempt("model/letta-grade-missing", lambda: GradeResult(rationale="no score"))
    attempt("model/letta-grade-type", lambda: GradeResult(score="high"))
    attempt("model/letta-grade-dump", lambda: GradeResult(score=0.25, metadata={"a": [1]}).model_dump())
    attempt("model/letta-sample", lambda: [repr(Sample(id=1, input=["a", "b"], ground_truth=["x", "y"])), Sample(id="s", input="q").model_dump(mode="json")])
    attempt("model/letta-sample-lists", lambda: Sample(id=1, input="a", ground_truth=["x"]))
    attempt("model/reward", lambda: [repr(RewardOutput(score=0.5)), RewardOutput(score=0.5).model_dump()])
    attempt("model/reward-range", lambda: RewardOutput(score=-1))

    def evaldeck_helpers():
        trace = Trace(
            id="t",
            input="in",
            steps=[
                Step.tool_call("search", {"q": 1}, tool_result="r", id="a"),
                Step.tool_call("", id="b"),
                Step.llm_call("m", "i", "o", tokens=TokenUsage(total_tokens=5), id="c"),
                Step.reasoning("why", id="d"),
                Step(type="llm_call", tokens={"total_tokens": 7}, id="e"),
            ],
        )
        passed = EGrade.passed_result("g", "fine", score=0.9)
        failed = EGrade.failed_result("g", "bad", expected=[1], actual={"a": 1})
        return {
            "tools_called": trace.tools_called,
            "total_tokens": trace.total_tokens,
            "step_count": trace.step_count,
            "tool_calls": [s.id for s in trace.tool_calls],
            "llm_calls": [s.id for s in trace.llm_calls],
            "types": [str(s.type) for s in trace.steps],
            "type_eq": [s.type == "tool_call" for s in trace.steps],
            "status": [str(GradeStatus.PASS), GradeStatus("fail").name, repr(GradeStatus.SKIP)],
            "passed": [passed.passed, failed.passed, passed.score, failed.expected, failed.actual],
            "repr": repr(failed),
            "str": str(passed),
            "dump": failed.model_dump(mode="json"),
            "tool_args": trace.steps[1].tool_args,
        }

    attempt("model/evaldeck-helpers", evaldeck_helpers)
    attempt("model/evaldeck-case-bad", lambda: EvalCase._from_dict({"name": "x", "input": "i", "expected": {"max_steps": "many"}}))
    attempt(
        "model/evaldeck-case",
        lambda: EvalCase._from_dict(
            {"name": "x", "input": "i", "expected": {"tools_called": ["a"]}, "graders": [{"type": "contains", "params": {"values": ["z"]}}], "tags": ["t"]}
        ).model_dump(mode="json"),
    )
    for row in jsonl(os.path.join(DATA, "evaldeck", "cases.jsonl")):
        attempt(f"model/evaldeck-trace-roundtrip/{row['name']}", lambda row=row: Trace.from_dict(row["trace"]).to_dict())
    # Invalid traces: the stand-ins take valid values inline and leave the rest to each field's
    # check, so these must raise exactly what evaldeck's pydantic models raise.
    ok = {"id": "s1", "type": "llm_call", "timestamp": "2026-01-01T00:00:01", "model": "m", "duration_ms": 12,
          "tokens": {"prompt_tokens": 3, "completion_tokens": 4, "total_tokens": 7}}
    tool = {"id": "s2", "type": "tool_call", "timestamp": "2026-01-01T00:00:02", "tool_name": "t", "tool_args": {"a": 1}}
    bad_steps = {
        "status": [ok, dict(tool, status="passed")],
        "several": [dict(ok, tokens={"total_tokens": "many"}), tool, dict(tool, type="tool", tool_args=[1]), "step"],
        "not-a-dict": [ok, 3],
        "tuple": (ok, dict(ok, status="done")),
        "missing-type": [ok, {"id": "x"}],
        "tokens-list": [dict(ok, tokens=[1, 2])],
        "duration-text": [dict(ok, duration_ms="fast"), dict(ok, duration_ms="1.5")],
        "not-a-list": {"a": 1},
    }
    for name, steps in bad_steps.items():
        attempt(f"model/evaldeck-trace-bad/{name}", lambda steps=steps: Trace.from_dict({"id": "t", "input": "q", "steps": steps}).to_dict())
    attempt(
        "model/evaldeck-trace-bad/fields",
        lambda: Trace.from_dict({"input": 3, "status": "done", "duration_ms": [1], "metadata": "m", "steps": [ok]}),
    )
    attempt(
        "model/evaldeck-case-bad-lists",
        lambda: EvalCase._from_dict({"name": "x", "input": "i", "expected": {"tools_called": ["a", 2], "max_steps": 2.5}, "tags": "t"}),
    )
    attempt("model/evaldeck-bad-status", lambda: EGrade(grader_name="g", status="passed"))

    def fields_set_kept():
        """A model's fields set through copies, pickling and updates: each copy's its own."""
        import pickle

        grade = GradeResult(score=1, metadata={})
        shallow, deep = copy.copy(grade), copy.deepcopy(grade)
        shallow.rationale = "r"
        updated = grade.model_copy(update={"per_turn_grades": None})
        revived = pickle.loads(pickle.dumps(grade))
        grade.__pydantic_fields_set__ = {"score"}
        return [[sorted(m.model_fields_set), m.model_dump(exclude_unset=True)] for m in (grade, shallow, deep, updated, revived)] + [
            type(grade.__pydantic_fields_set__).__name__, grade.model_fields_set is grade.__pydantic_fields_set__]

    attempt("model/fields-set-kept", fields_set_kept)
    attempt("model/dump-keywords", lambda: [
        Step(type="llm_call", id="s", timestamp="2026-01-01T00:00:00").model_dump(
            mode="json", exclude_unset=True, exclude_defaults=True, round_trip=True, warnings=False, by_alias=True,
            context={}, serialize_as_any=False),
        TokenUsage(total_tokens=2).model_dump_json(indent=1, ensure_ascii=True, exclude_defaults=True),
        Sample(id=1, input="q", ground_truth=None).model_dump(exclude_unset=True, exclude_none=True)])
    attempt("model/dump-unknown-keyword", lambda: GradeResult(score=1).model_dump(foo=1))
    attempt("model/to-dict-unknown-keyword", lambda: __import__("letta_client.types.agents").types.agents.AssistantMessage(
        id="m", date="2026-01-01T00:00:00", content="a").to_dict(foo=1))
    attempt("model/dump-json-mode", lambda: GradeResult(score=1).model_dump_json(mode="json"))
    attempt("model/evaldeck-step-type", lambda: Step(type="tool"))
    attempt("model/evaldeck-trace-input", lambda: Trace(output="x"))


def deferred_cases(out):
    """What a grader reads of the trace and the case of a row, built as each tool builds them:
    evaldeck with `Trace.from_dict` and `EvalCase._from_dict`, gavel's runtime from the run's
    recording and the row (which builds a model of the usual form on first read). Each probe
    starts from a new model, so that it reads only what it names."""
    from evaldeck import EvalCase, Step, Trace

    rows = jsonl(os.path.join(DATA, "evaldeck", "cases.jsonl"))
    step = {"id": "s1", "type": "llm_call", "timestamp": "2026-01-01T00:00:01", "status": "success", "model": "m",
            "input": "q", "output": "a", "tokens": {"prompt_tokens": 3, "completion_tokens": 4, "total_tokens": 7},
            "duration_ms": 112.5}
    tool = {"id": "s2", "type": "tool_call", "timestamp": "2026-01-01T00:00:02Z", "tool_name": "search_flights",
            "tool_args": {"from": "SFO", "to": "NYC"}, "tool_result": {"flights": [1, 2]}, "duration_ms": 30}
    trace = {"id": "t", "input": "q", "output": "Confirmation: AB123456", "status": "success", "steps": [step, tool],
             "started_at": "2026-01-01T00:00:00.250", "completed_at": "2026-01-01T00:00:09+02:00",
             "duration_ms": 9000.0, "metadata": {"k": [1]}, "framework": "custom", "agent_name": "A", "extra": 1}
    traces = {row["name"]: row["trace"] for row in rows}
    traces["usual"] = trace
    # Valid, but not of the form taken on first read: the full check converts these.
    traces["lax-values"] = dict(trace, steps=[dict(step, tokens={"total_tokens": "7"}, duration_ms="1.5"),
                                              dict(tool, timestamp="2024-02-29T10:00:00.1", status="failure")])
    traces["step-objects-and-tuple"] = dict(trace, steps=({"type": "reasoning", "id": "r", "timestamp": 0,
                                                           "reasoning_text": "why"},))
    # Refused: the error must come when the trace is built, as evaldeck's, not on a read.
    bad = {
        "bad-day": dict(trace, steps=[dict(step, timestamp="2026-02-30T00:00:00")]),
        "bad-month": dict(trace, completed_at="2026-13-01T00:00:00"),
        "bad-type": dict(trace, steps=[step, dict(tool, type="tool")]),
        "bad-tokens": dict(trace, steps=[dict(step, tokens={"total_tokens": "many"})]),
        "bad-args": dict(trace, steps=[dict(tool, tool_args=["SFO"])]),
        "bad-input": dict(trace, input=None),
        "bad-steps": dict(trace, steps=[step, "s"]),
        "not-a-dict": [trace],
    }

    built = trace_of

    def attempt(key, fn):
        try:
            out[key] = fn()
        except Exception as e:
            out[key] = {"error": error_text(e)}

    def edited(data):
        t = built(data)
        t.output = "changed"
        t.steps.append(Step(type="reasoning", id="new", timestamp="2026-01-01T00:00:00"))
        return [t.output, t.step_count, t.to_dict()]

    def after_edits(data, edit):
        """A model of `data` edited before any field was read, then read as a grader reads it."""
        t = built(data)
        edit(t)
        return outcomes(t, lambda t: t.output, lambda t: t.completed_at, lambda t: [s.model for s in t.steps],
                        lambda t: t.model_dump(mode="json"), repr, str, list, vars, lambda t: t == built(data),
                        lambda t: t.to_dict(), unset_and_defaults, lambda t: [unset_and_defaults(s) for s in t.steps])

    refused = []

    def delete(*names):
        def edit(t):
            for name in names:
                try:
                    delattr(t, name)
                except AttributeError as e:
                    refused.append(error_text(e))

        return edit

    def edits(data):
        out = {}
        for name, edit in {
            "del-output": delete("output"),
            "del-twice": delete("output", "output"),
            "del-unknown": delete("nothing"),
            "del-property": delete("tool_calls"),
            "del-then-set": lambda t: (delattr(t, "output"), setattr(t, "output", "again")),
            "set-unread": lambda t: (setattr(t, "output", 5), setattr(t, "completed_at", None)),
            "del-step-field": lambda t: delattr(t.steps[0], "model") if t.steps else None,
            "dict-set": lambda t: t.__dict__.__setitem__("output", "z"),
            "dict-del": lambda t: t.__dict__.pop("completed_at"),
            "dict-clear": lambda t: t.__dict__.clear(),
        }.items():
            refused.clear()
            try:
                out[name] = [after_edits(data, edit), list(refused)]
            except Exception as e:
                out[name] = {"error": error_text(e)}
        return out

    probes = {
        "edits": edits,
        "output": lambda data: built(data).output,
        "tool-calls": lambda data: [(s.id, s.tool_name, s.tool_args, s.status.value) for s in built(data).tool_calls],
        "step-types": lambda data: [str(s.type) for s in built(data).steps],
        "tokens": lambda data: [built(data).total_tokens, built(data).tools_called],
        "dump": lambda data: built(data).model_dump(mode="json"),
        "dump-python": lambda data: repr(built(data).model_dump()),
        "repr": lambda data: [repr(built(data)), str(built(data).steps[:1])],
        "equal": lambda data: [built(data) == Trace.from_dict(copy.deepcopy(data)), built(data) == built(dict(data, id="x")),
                               [a == b for a, b in zip(built(data).steps, Trace.from_dict(copy.deepcopy(data)).steps)]],
        "isinstance": lambda data: [isinstance(built(data), Trace), type(built(data)).__name__,
                                    all(isinstance(s, Step) and type(s) is Step for s in built(data).steps)],
        "iterate": lambda data: [name for name, _ in built(data)] + [repr(v) for _, v in built(data)],
        "edited": edited,
        "missing-attribute": lambda data: getattr(built(data), "tool_call_count"),
        "copy": lambda data: copy.deepcopy(built(data)).to_dict() == built(data).to_dict(),
        "vars": lambda data: [list(vars(built(data))), [repr(vars(s)) for s in vars(built(data))["steps"]]],
        "unset": lambda data: [unset_and_defaults(built(data)), [unset_and_defaults(s) for s in built(data).steps],
                               [unset_and_defaults(s.tokens) for s in built(data).steps if s.tokens is not None]],
        "unset-after-vars": lambda data: (lambda t: [vars(t), unset_and_defaults(t)])(built(data)),
    }
    for name, data in traces.items():
        for probe, fn in probes.items():
            attempt(f"deferred/trace/{name}/{probe}", lambda fn=fn, data=data: fn(data))
    # An empty or missing id is made when the model is built (a random one, so only its length
    # is compared).
    without = {k: v for k, v in trace.items() if k != "id"}
    for name, data in (("empty", dict(trace, id="", steps=[dict(step, id=""), tool])),
                       ("missing", dict(without, steps=[step, {k: v for k, v in tool.items() if k != "id"}]))):
        attempt(f"deferred/trace/{name}-ids", lambda data=data: [len(built(data).id), [len(s.id) for s in built(data).steps]])
    def refused(data):
        try:
            built(data)
        except Exception as e:
            # The error's kind, title and where it points (the stand-ins word some datetime
            # errors more briefly than pydantic-core).
            return [line.split(", input_value=")[0] for line in error_text(e).splitlines()[:2]]
        return "built"

    for name, data in bad.items():
        attempt(f"deferred/trace/{name}", lambda data=data: refused(data))

    def case(row):
        return case_of({k: v for k, v in row.items() if k != "trace"})

    cases = {row["name"]: row for row in rows}
    cases["graders"] = {"name": "g", "input": "i", "expected": {"tools_called": ["a"], "max_steps": 3, "task_completed": True},
                        "graders": [{"type": "contains", "params": {"values": ["z"]}}], "tags": ["t"], "timeout": 5}
    cases["bad-expected"] = {"name": "b", "input": "i", "expected": {"tools_called": ["a", 2]}}
    cases["bad-grader"] = {"name": "b", "input": "i", "graders": [{"params": {}}]}
    cases["bad-tags"] = {"name": "b", "input": "i", "tags": "t"}
    def case_edited(row):
        c = case(row)
        seen = []
        for name in ("name", "expected", "input", "name"):
            try:
                delattr(c, name)
                seen.append("deleted")
            except AttributeError as e:
                seen.append(error_text(e))
        return seen + outcomes(c, lambda c: c.name, lambda c: c.input, lambda c: c.model_dump(mode="json"), repr)

    case_probes = {
        "deleted": case_edited,
        "expected": lambda row: case(row).expected.model_dump(),
        "input": lambda row: [case(row).input, case(row).name, case(row).is_multi_turn],
        "dump": lambda row: case(row).model_dump(mode="json"),
        "graders": lambda row: [g.model_dump() for g in case(row).graders],
        "equal": lambda row: case(row) == EvalCase._from_dict({k: v for k, v in row.items() if k != "trace"}),
        "unset": lambda row: [unset_and_defaults(case(row))] + [unset_and_defaults(t) for t in case(row).turns],
    }
    for name, row in cases.items():
        for probe, fn in case_probes.items():
            attempt(f"deferred/case/{name}/{probe}", lambda fn=fn, row=row: fn(row))


def sample_cases(out):
    """What a grader reads of a letta-evals `Sample`, built from a dataset row by letta-evals'
    JSONL loader and by gavel's runtime (which builds one of the usual form on first read).
    Each probe starts from a new sample, so that it reads only what it names."""
    rows = {
        "usual": {"id": 3, "input": "What is 2+2?", "ground_truth": "4", "trajectory": [[]]},
        "no-truth": {"id": 0, "input": "q"},
        "str-id": {"id": "case-7", "input": "q", "ground_truth": "a"},
        "float-id": {"id": 2.0, "input": "q", "ground_truth": "a"},
        "sample-id": {"sample_id": 5, "id": 1, "input": "q"},
        "prompt": {"prompt": "from the prompt", "ground_truth": "x"},
        "per-turn": {"id": 1, "input": ["a", "b"], "ground_truth": ["x", "y"]},
        "args": {"id": 1, "input": "q", "metadata": {"agent_args": {"k": [1]}, "rubric_vars": {"r": "v"}},
                 "extra_vars": {"e": 1}, "rubric": "Be kind."},
        "bad-truth-list": {"id": 1, "input": "q", "ground_truth": ["x"]},
        "bad-lengths": {"id": 1, "input": ["a"], "ground_truth": ["x", "y"]},
        "bad-args": {"id": 1, "input": "q", "agent_args": [1]},
    }

    built = sample_of

    def attempt(key, fn):
        try:
            out[key] = fn()
        except Exception as e:
            out[key] = {"error": error_text(e).split(", input_value=")[0]}

    def edited(row, edit):
        sample = built(row)
        seen = [edit(sample)]
        return seen + outcomes(sample, lambda s: s.ground_truth, lambda s: s.input, repr, str,
                               lambda s: s.model_dump(mode="json"), lambda s: list(vars(s)), lambda s: s == built(row),
                               unset_and_defaults)

    probes = {
        "truth": lambda row: [built(row).ground_truth, type(built(row).ground_truth).__name__],
        "fields": lambda row: [built(row).id, built(row).input, built(row).agent_args, built(row).rubric_vars,
                               built(row).extra_vars, built(row).rubric, built(row).rubric_path],
        "repr": lambda row: [repr(built(row)), str(built(row))],
        "dump": lambda row: [built(row).model_dump(mode="json"), repr(built(row).model_dump())],
        "vars": lambda row: repr(vars(built(row))),
        "iterate": lambda row: repr(list(built(row))),
        "equal": lambda row: [built(row) == built(row), built(row) == built(dict(row, id=99))],
        "isinstance": lambda row: type(built(row)).__name__,
        "unset": lambda row: unset_and_defaults(built(row)),
        "del-truth": lambda row: edited(row, deleted("ground_truth")),
        "del-twice": lambda row: edited(row, lambda s: [deleted("input")(s), deleted("input")(s)]),
        "del-unknown": lambda row: edited(row, deleted("nothing")),
        "set-unread": lambda row: edited(row, lambda s: setattr(s, "ground_truth", "set")),
        "dict-set": lambda row: edited(row, lambda s: s.__dict__.__setitem__("input", "z")),
        "dict-del": lambda row: edited(row, lambda s: repr(s.__dict__.pop("ground_truth"))),
    }
    for name, row in rows.items():
        for probe, fn in probes.items():
            attempt(f"deferred/sample/{name}/{probe}", lambda fn=fn, row=row: fn(row))


def assignment_cases(out):
    """What assigning an attribute does to each model a grader may hold: a field, a private
    name, a property, a method's name and a name that is none of these; then what the model
    shows. Models the runtime builds on first read are assigned to before any read."""
    from evaldeck import EvalCase, Step, TokenUsage, Trace, Turn
    from evaldeck.results import EvaluationResult, GradeResult as EGrade, MetricResult, TurnResult
    from letta_client.types.agents import AssistantMessage, ToolCall
    from letta_evals.models import GradeResult, PerTurnGrade, RewardOutput, Sample, Timing, Usage

    case = {"name": "c", "input": "i", "expected": {"tools_called": ["a"]}, "graders": [{"type": "contains"}],
            "turns": [{"user": "u"}]}
    trace = {"id": "t", "input": "q", "output": "o", "started_at": "2026-01-01T00:00:00",
             "steps": [{"id": "s", "type": "llm_call", "timestamp": "2026-01-01T00:00:01", "model": "m",
                        "tokens": {"total_tokens": 3}}]}
    row = {"id": 3, "input": "q", "ground_truth": "a"}

    def deferred_trace():
        return trace_of(trace)

    stamp = "2026-01-01T00:00:00"
    models = {
        "evaldeck-trace": (lambda: Trace(id="t", input="q", started_at=stamp), ["output", "tool_calls", "step_count"]),
        "evaldeck-step": (lambda: Step(id="s", type="llm_call", timestamp=stamp), ["model"]),
        "evaldeck-tokens": (lambda: TokenUsage(total_tokens=2), ["total_tokens", "cost_estimate"]),
        "evaldeck-case": (lambda: EvalCase._from_dict(copy.deepcopy(case)), ["name", "is_multi_turn"]),
        "evaldeck-expected": (lambda: EvalCase._from_dict(copy.deepcopy(case)).expected, ["max_steps"]),
        "evaldeck-turn": (lambda: Turn(user="u"), ["user"]),
        "evaldeck-grade": (lambda: EGrade(grader_name="g", status="pass"), ["message", "passed"]),
        "evaldeck-metric": (lambda: MetricResult(metric_name="m", value=1), ["unit"]),
        "evaldeck-turn-result": (lambda: TurnResult(turn_index=0, user_input="u", status="pass"), ["skipped", "passed"]),
        "evaldeck-evaluation": (lambda: EvaluationResult(test_case_name="c", status="fail", started_at=stamp),
                                ["error", "pass_rate"]),
        "evaldeck-deferred-trace": (deferred_trace, ["output", "tool_calls"]),
        "evaldeck-deferred-step": (lambda: deferred_trace().steps[0], ["model"]),
        "evaldeck-deferred-tokens": (lambda: deferred_trace().steps[0].tokens, ["total_tokens"]),
        "evaldeck-deferred-case": (lambda: case_of(case), ["name", "is_multi_turn"]),
        "letta-sample": (lambda: Sample(id=1, input="q"), ["ground_truth"]),
        "letta-deferred-sample": (lambda: sample_of(row), ["ground_truth"]),
        "letta-grade": (lambda: GradeResult(score=1), ["rationale"]),
        "letta-per-turn": (lambda: PerTurnGrade(turn=0, score=1, submission="s"), ["rationale"]),
        "letta-reward": (lambda: RewardOutput(score=0.5), ["metadata"]),
        "letta-usage": (lambda: Usage(), ["cost"]),
        "letta-timing": (lambda: Timing(total=1, target=1), ["extraction"]),
        # letta_client's models keep extra keys: an unknown name assigned becomes one.
        "letta-message": (lambda: AssistantMessage(id="m", date=stamp, content="hi", message_type="assistant_message", extra=1),
                         ["name", "to_dict"]),
        "letta-tool-call": (lambda: ToolCall(arguments="{}", name="n", tool_call_id="i"), ["name"]),
    }
    names = ["foo", "_foo", "__foo", "", "model_config", "model_dump"]
    for key, (make, own) in models.items():
        for name in names + own:
            def assign(make=make, name=name):
                model = make()
                try:
                    setattr(model, name, "set")
                    outcome = "set"
                except Exception as e:
                    outcome = error_text(e)
                # A method is told apart by being callable (the real one is pydantic's).
                reads = [lambda m: (lambda v: "a method" if callable(v) else v)(getattr(m, name)), repr, str,
                         lambda m: m.model_dump(mode="json"), lambda m: m == make()]
                reads.append(lambda m: sorted(vars(m)))
                reads.append(unset_and_defaults)
                return [outcome] + outcomes(model, *reads)

            try:
                out[f"assign/{key}/{name or '(empty)'}"] = assign()
            except Exception as e:
                out[f"assign/{key}/{name or '(empty)'}"] = {"error": error_text(e)}
    # Assigned twice, deleted and assigned again: where the extra key stands.
    def again():
        message = AssistantMessage(id="m", date=stamp, content="hi", message_type="assistant_message", extra=1)
        message.foo = 1
        message.bar = 2
        message.foo = 3
        del message.extra
        message.extra = 4
        return [repr(message), message.model_dump(mode="json"), message == AssistantMessage(id="m", date=stamp, content="hi", message_type="assistant_message")]

    try:
        out["assign/letta-message/order"] = again()
    except Exception as e:
        out["assign/letta-message/order"] = {"error": error_text(e)}


def union_cases(out):
    """A value that every member of a field's union refuses: pydantic lists each member's
    errors, as `str(e)` and `e.errors()` show them."""
    from letta_client.types.agents import AssistantMessage, ToolCallMessage, UserMessage
    from letta_evals.models import Sample

    stamp = "2026-01-01T00:00:00"
    call = {"name": "n", "arguments": "{}", "tool_call_id": "i"}
    attempts = {
        "sample-input-int": lambda: Sample(id=1, input=5),
        "sample-input-items": lambda: Sample(id=1, input=["a", 2]),
        "sample-id-list": lambda: Sample(id=[1], input="q"),
        "sample-id-none": lambda: Sample(id=None, input="q"),
        "sample-truth-int": lambda: Sample(id=1, input="q", ground_truth=5),
        "sample-several": lambda: Sample(id=[1], input=None, ground_truth=3),
        "sample-id-text": lambda: [repr(Sample(id="5", input="q").id), repr(Sample(id=5.0, input="q").id),
                                   repr(Sample(id=True, input="q").id)],
        "user-content-int": lambda: UserMessage(id="m", date=stamp, content=5),
        "user-content-item": lambda: UserMessage(id="m", date=stamp, content=[5]),
        "assistant-content-int": lambda: AssistantMessage(id="m", date=stamp, content=5),
        "assistant-content-items": lambda: AssistantMessage(id="m", date=stamp, content=["a", {}]),
        "tool-call-int": lambda: ToolCallMessage(id="m", date=stamp, tool_call=5),
        "tool-call-fields": lambda: ToolCallMessage(id="m", date=stamp, tool_call={"name": 1}),
        "tool-calls-int": lambda: ToolCallMessage(id="m", date=stamp, tool_call=call, tool_calls=5),
        "tool-calls-items": lambda: ToolCallMessage(id="m", date=stamp, tool_call=call, tool_calls=[call, {"name": "n"}]),
    }
    for name, attempt in attempts.items():
        try:
            out[f"union/{name}"] = attempt()
        except Exception as e:
            out[f"union/{name}"] = validation_outcome(e)
    # The other errors a grader may list, with their context.
    from evaldeck import Step
    from letta_evals.models import GradeResult, RewardOutput

    for name, attempt in {
        "enum": lambda: Step(type="x"),
        "ge": lambda: RewardOutput(score=-1),
        "le": lambda: RewardOutput(score=2),
        "value-error": lambda: GradeResult(score=1.5),
        "model-validator": lambda: Sample(id=1, input="a", ground_truth=["x"]),
        "model-type": lambda: Step(type="llm_call", duration_ms="x", tokens=5),
    }.items():
        try:
            attempt()
            out[f"errors/{name}"] = "built"
        except Exception as e:
            out[f"errors/{name}"] = repr(e.errors())


def validation_outcome(e):
    """What a grader sees of a refused model: the text, each error and how many."""
    return {"error": error_text(e), "errors": repr(e.errors()) if hasattr(e, "errors") else None,
            "count": e.error_count() if hasattr(e, "error_count") else None}


def sdk_cases(out):
    """letta_client's models built directly by a grader: the default of `message_type`, extra
    keys (kept out of `__dict__`), and a content part that no member of its union takes."""
    import copy as copying
    import pickle

    from letta_client.types.agents import (
        ApprovalRequestMessage, ApprovalResponseMessage, AssistantMessage, EventMessage, HiddenReasoningMessage,
        ImageContent, ReasoningMessage, SummaryMessage, SystemMessage, TextContent, ToolCall, ToolCallMessage,
        UserMessage,
    )
    from letta_client.types import ToolReturnMessage
    from letta_evals.models import GradeResult

    stamp = "2026-01-01T00:00:00"
    call = {"name": "n", "arguments": "{}", "tool_call_id": "i"}
    messages = {
        "system": (SystemMessage, {"content": "s"}),
        "user": (UserMessage, {"content": "u"}),
        "assistant": (AssistantMessage, {"content": "a"}),
        "reasoning": (ReasoningMessage, {"reasoning": "r"}),
        "hidden-reasoning": (HiddenReasoningMessage, {"state": "omitted"}),
        "tool-call": (ToolCallMessage, {"tool_call": call}),
        "tool-return": (ToolReturnMessage, {"status": "success", "tool_call_id": "i", "tool_return": "x"}),
        "approval-request": (ApprovalRequestMessage, {"tool_call": call}),
        "approval-response": (ApprovalResponseMessage, {}),
        "summary": (SummaryMessage, {"summary": "s"}),
        "event": (EventMessage, {"event_data": {}, "event_type": "compaction"}),
    }

    def attempt(key, fn):
        try:
            out[key] = fn()
        except Exception as e:
            out[key] = validation_outcome(e)

    for name, (cls, fields) in messages.items():
        def built(cls=cls, fields=fields, **more):
            return cls(id="m", date=stamp, **fields, **more)

        attempt(f"sdk/message-type/{name}", lambda built=built: outcomes(
            built(), lambda m: m.message_type, repr, str, lambda m: m.model_dump(mode="json"), lambda m: m.to_dict(mode="json"),
            lambda m: m == built(message_type=m.model_dump(mode="json", exclude_none=False).get("message_type"))))
        attempt(f"sdk/message-type/{name}/given", lambda built=built: [m.message_type for m in (
            built(message_type=None), built(message_type=type(built()).__name__.replace("Message", "").lower()))])

    def with_extras():
        return AssistantMessage(id="m", date=stamp, content="hi", message_type="assistant_message", zeta=1, alpha=[2])

    def edited(edit):
        message = with_extras()
        seen = [edit(message)]
        return seen + outcomes(message, lambda m: sorted(vars(m)), lambda m: list(m.__dict__), lambda m: m.model_extra,
                               lambda m: m.__pydantic_extra__, repr, str, lambda m: m.model_dump(mode="json"),
                               lambda m: m.model_dump_json(), lambda m: m.to_dict(), lambda m: [k for k, _ in m],
                               lambda m: m.zeta, lambda m: getattr(m, "omega", "absent"), lambda m: m == with_extras(),
                               unset_and_defaults, lambda m: m.to_dict(exclude_unset=False, exclude_none=True),
                               lambda m: m.to_json(exclude_defaults=True), lambda m: m.to_dict(mode="json", exclude_unset=False))

    extra_edits = {
        "none": lambda m: None,
        "assign-new": lambda m: setattr(m, "omega", 3),
        "assign-extra": lambda m: setattr(m, "zeta", 9),
        "assign-field": lambda m: setattr(m, "name", "n"),
        "delete-extra": deleted("zeta"),
        "delete-field": deleted("content"),
        "delete-unknown": deleted("omega"),
        "dict-set": lambda m: m.__dict__.__setitem__("omega", 4),
        "extra-set": lambda m: m.__pydantic_extra__.__setitem__("omega", 5),
        "reordered": lambda m: [m == AssistantMessage(id="m", date=stamp, content="hi", message_type="assistant_message",
                                                      alpha=[2], zeta=1), m == AssistantMessage(
                                    id="m", date=stamp, content="hi", message_type="assistant_message", zeta=1)],
    }
    for name, edit in extra_edits.items():
        attempt(f"sdk/extras/{name}", lambda edit=edit: edited(edit))

    def copies():
        message = with_extras()
        shallow, deep = copying.copy(message), copying.deepcopy(message)
        updated = message.model_copy(update={"omega": 6, "content": "new"})
        shallow.zeta = 7
        deep.alpha.append(3)
        revived = pickle.loads(pickle.dumps(message))
        return [repr(m) for m in (message, shallow, deep, updated, revived)] + [
            sorted(vars(updated)), updated.model_extra, revived.model_extra] + [
            sorted(m.model_fields_set) for m in (message, shallow, deep, updated, revived)]

    attempt("sdk/extras/copies", copies)
    attempt("sdk/extras/none-kept", lambda: outcomes(ToolCall(**call), vars, lambda m: m.model_extra,
                                                     lambda m: m.__pydantic_extra__, lambda m: getattr(m, "zeta", "absent")))
    attempt("sdk/extras/not-allowed", lambda: outcomes(GradeResult(score=1), lambda m: m.model_extra,
                                                       lambda m: m.__pydantic_extra__, lambda m: sorted(vars(m))))

    # A content part that no member of the content union takes, and the parts it does take.
    parts = {
        "no-type": {"foo": 1},
        "empty": {},
        "wrong-type": {"type": "video", "text": "x"},
        "text-no-text": {"type": "text"},
        "text-int": {"type": "text", "text": 5},
        "text-with-source": {"text": "x", "type": "image"},
        "image-no-source": {"type": "image"},
        "image-source-int": {"type": "image", "source": 5},
        "image-source-empty": {"type": "image", "source": {}},
        "image-source-url-missing": {"type": "image", "source": {"type": "url"}},
        "image-source-wrong-type": {"type": "image", "source": {"type": "gif", "url": "u"}},
        "image-base64-partial": {"type": "image", "source": {"type": "base64", "data": "d"}},
        "image-url": {"type": "image", "source": {"type": "url", "url": "u"}},
        "image-url-untyped": {"source": {"url": "u"}},
        "image-base64": {"type": "image", "source": {"type": "base64", "data": "d", "media_type": "image/png"}},
        "image-letta": {"type": "image", "source": {"type": "letta", "file_id": "f", "detail": "low"}},
        "text": {"type": "text", "text": "t", "signature": "s"},
        "int": 5,
        "none": None,
        "model": ToolCall(**call),
    }
    for name, part in parts.items():
        for cls in (UserMessage, AssistantMessage):
            def content(cls=cls, part=part):
                message = cls(id="m", date=stamp, content=[part])
                return [repr(message), message.model_dump(mode="json"), [type(p).__name__ for p in message.content]]

            attempt(f"sdk/content/{cls.__name__}/{name}", content)
    for name, make in {
        "text": lambda: TextContent(text="x", type="video"),
        "image": lambda: ImageContent(source=5),
        "image-type": lambda: ImageContent(source={"url": "u"}, type="text"),
        "message-type": lambda: AssistantMessage(id="m", date=stamp, content="a", message_type="user_message"),
        "tool-return-status": lambda: ToolReturnMessage(id="m", date=stamp, status="ok", tool_call_id="i", tool_return="x"),
        "tool-return-status-error": lambda: ToolReturnMessage(id="m", date=stamp, status="error", tool_call_id="i",
                                                              tool_return="x"),
        "tool-return-status-int": lambda: ToolReturnMessage(id="m", date=stamp, status=1, tool_call_id="i", tool_return="x"),
        "tool-returns-status": lambda: ToolReturnMessage(
            id="m", date=stamp, status="success", tool_call_id="i", tool_return="x",
            tool_returns=[{"status": "done", "tool_call_id": "i", "tool_return": 1, "type": "tool"}]),
        "tool-returns-type": lambda: ToolReturnMessage(
            id="m", date=stamp, status="success", tool_call_id="i", tool_return="x",
            tool_returns=[{"status": "success", "tool_call_id": "i", "tool_return": 1, "type": "function"}]),
        "tool-returns-content": lambda: ToolReturnMessage(
            id="m", date=stamp, status="success", tool_call_id="i", tool_return="x",
            tool_returns=[{"status": "success", "tool_call_id": "i", "tool_return": [{"type": "text", "text": "t"}]},
                          {"status": "error", "tool_call_id": "j", "tool_return": "plain", "type": "tool"}]),
        "hidden-state": lambda: HiddenReasoningMessage(id="m", date=stamp, state="hidden"),
        "hidden-state-ok": lambda: HiddenReasoningMessage(id="m", date=stamp, state="redacted"),
        "reasoning-source": lambda: ReasoningMessage(id="m", date=stamp, reasoning="r", source="model"),
        "reasoning-source-ok": lambda: ReasoningMessage(id="m", date=stamp, reasoning="r", source="non_reasoner_model"),
        "event-type": lambda: EventMessage(id="m", date=stamp, event_data={}, event_type="other"),
    }.items():
        attempt(f"sdk/literal/{name}", lambda make=make: repr(make()))


class Forged(float):
    """A float whose `repr` and `str` say another number than it holds (a module's own class:
    pydantic names an input's type by its qualified name, the stand-ins by its name)."""

    def __repr__(self):
        return "FORGED"

    __str__ = __repr__


def numeric_cases(out):
    """A number field refused, by its type or by a validator: pydantic shows the input as given
    (`3`, `'3'`), not as converted, with every other field's error beside it. An int no float
    holds is no number; a float subclass's value is the plain float it holds."""
    from evaldeck.results import GradeResult as EvaldeckGrade
    from letta_evals.models import GradeResult, PerTurnGrade, RewardOutput, Timing, Usage

    for name, make in {
        "grade-int": lambda: GradeResult(score=3),
        "grade-negative": lambda: GradeResult(score=-2),
        "grade-text": lambda: GradeResult(score="3"),
        "grade-text-fraction": lambda: GradeResult(score=" 1.5 "),
        "grade-bool": lambda: GradeResult(score=True),
        "grade-unparsable": lambda: GradeResult(score="x"),
        "grade-and-metadata": lambda: GradeResult(score=3, metadata=5),
        "grade-and-rationale": lambda: GradeResult(rationale=5, score=3),
        "grade-and-per-turn": lambda: GradeResult(score=2, per_turn_grades=[{"turn": "a", "score": 9, "submission": "s"}]),
        "grade-ok": lambda: repr(GradeResult(score="1")),
        "grade-huge-int": lambda: GradeResult(score=10**400),
        "grade-float-subclass": lambda: repr(GradeResult(score=Forged(0.5))),
        "grade-float-subclass-range": lambda: GradeResult(score=Forged(1.5)),
        "evaldeck-huge-int": lambda: EvaldeckGrade(grader_name="g", status="pass", score=-10**400),
        "evaldeck-float-subclass": lambda: repr(EvaldeckGrade(grader_name="g", status="pass", score=Forged(2.5))),
        "per-turn": lambda: PerTurnGrade(turn=1.5, score="x", submission="s"),
        "per-turn-ok": lambda: repr(PerTurnGrade(turn="2", score=5, submission="s")),
        "reward-high": lambda: RewardOutput(score=2),
        "reward-text": lambda: RewardOutput(score="2"),
        "reward-negative-text": lambda: RewardOutput(score="-1", metadata=5),
        "reward-huge-int": lambda: RewardOutput(score=10**400),
        "usage": lambda: Usage(prompt_tokens=1.5, cost="x"),
        "usage-text": lambda: Usage(completion_tokens="7.0"),
        "timing": lambda: Timing(total="x", target=True, extraction=[1]),
    }.items():
        try:
            out[f"numeric/{name}"] = make()
        except Exception as e:
            out[f"numeric/{name}"] = validation_outcome(e)


def message_cases(out):
    """The Letta messages a trajectory recording becomes, as user code sees them."""
    runs = jsonl(os.path.join(DATA, "letta-runs.jsonl"))
    for index, run in enumerate(runs):
        if MODE == "real":
            from typing import List

            from letta_evals.models import LettaMessageUnion
            from pydantic import TypeAdapter

            trajectory = TypeAdapter(List[List[LettaMessageUnion]]).validate_python(run["trajectory"])
        else:
            from gavel_runtime.convert import letta_trajectory

            trajectory = letta_trajectory(Run(recorded_format="letta", recorded_value=json.dumps(run["trajectory"])))
        out[f"messages/{index}"] = [
            {
                "class": type(m).__name__,
                "repr": repr(m),
                "str": str(m),
                "dump": m.model_dump(mode="json"),
                "to_dict": json.loads(json.dumps(m.to_dict(), default=str)),
                "content": [type(p).__name__ for p in m.content] if isinstance(getattr(m, "content", None), list) else None,
            }
            for turn in trajectory
            for m in turn
        ]


def main():
    out = {}
    for section in (evaldeck_cases, letta_cases, model_cases, deferred_cases, sample_cases, message_cases,
                    assignment_cases, union_cases, sdk_cases, numeric_cases):
        try:
            section(out)
        except Exception:
            out[f"crash/{section.__name__}"] = traceback.format_exc()
    json.dump(out, sys.stdout, indent=1, sort_keys=True, default=repr)


if __name__ == "__main__":
    main()
