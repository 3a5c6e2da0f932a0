"""An example gavel pack in Python: graders and extractors over recorded agent runs.

Build it with `./build.sh` (it writes target/pack.wasm); `gavel run suite.yaml` uses it.
"""

import json

from gavel_pack import (
    GradeError,
    PackBuilder,
    assistant_texts,
    expected_block,
    failed,
    final_output,
    metadata,
    passed,
    scored,
    step_count,
    tool_calls,
    tool_returns,
)
from wit_world.imports import types

pack = PackBuilder("agent-checks-py", "0.1.0")


# ---------------------------------------------------------------------------------------------
# tool_args_subset: was the tool called with the arguments we expect?

def contains(actual, wanted) -> bool:
    """`wanted` is a JSON subset of `actual`: objects match key by key, recursively; anything
    else must be equal (and of the same JSON type: `true` is not `1`)."""
    if isinstance(wanted, dict):
        return isinstance(actual, dict) and all(
            key in actual and contains(actual[key], value) for key, value in wanted.items()
        )
    if isinstance(wanted, bool) or isinstance(actual, bool):
        return actual is wanted
    return actual == wanted


def subset_config(config: dict):
    unknown = set(config) - {"tool", "args"}
    if unknown:
        raise ValueError(f"unknown key(s) {', '.join(sorted(unknown))}; expected tool, args")
    tool = config.get("tool")
    if not isinstance(tool, str) or not tool:
        raise ValueError("config.tool: the tool's name is required (a string)")
    args = config.get("args")
    if args is not None and not isinstance(args, dict):
        raise ValueError("config.args: must be a mapping of the expected arguments")
    return tool, args


@pack.grader(config=subset_config)
def tool_args_subset(sample, trajectory, submission, config):
    """A call to `tool` had arguments that contain the expected ones (config `args`, else the
    row's `metadata.expected_args`), compared as a JSON subset.

    Objects match key by key and recursively, so `{"passengers": {"adults": 2}}` matches a call
    that also names children, dates and airports.
    """
    tool, wanted = config
    if wanted is None:
        wanted = metadata(sample).get("expected_args")
        if not isinstance(wanted, dict):
            raise GradeError("no expected arguments: set config.args or the row's "
                             "metadata.expected_args")
    calls = tool_calls(trajectory, tool)
    if not calls:
        return failed(f"`{tool}` was never called", expected=wanted)
    seen = []
    for call in calls:
        try:
            arguments = json.loads(call.arguments or "{}")
        except json.JSONDecodeError:
            seen.append(call.arguments)
            continue
        if contains(arguments, wanted):
            return passed(f"`{tool}` was called with {json.dumps(wanted)}",
                          metadata={"call_id": call.id})
        seen.append(arguments)
    return failed(f"no call of `{tool}` had the expected arguments ({len(calls)} call(s))",
                  expected=wanted, actual=seen)


# ---------------------------------------------------------------------------------------------
# quality_score: evaldeck's "scoring grader" example, several factors in one score

def threshold_config(config: dict) -> float:
    unknown = set(config) - {"threshold"}
    if unknown:
        raise ValueError(f"unknown key(s) {', '.join(sorted(unknown))}; expected threshold")
    threshold = config.get("threshold", 0.7)
    if isinstance(threshold, bool) or not isinstance(threshold, (int, float)) \
            or not 0 <= threshold <= 1:
        raise ValueError(f"config.threshold: {threshold!r} is not a number in [0, 1]")
    return float(threshold)


@pack.grader(config=threshold_config)
def quality_score(sample, trajectory, submission, threshold):
    """Efficiency (steps against `expected.max_steps`, else 10) 30%, the expected tools called
    40%, output length up to 100 characters 30%; passes at `threshold` (default 0.7)."""
    expected = expected_block(sample)
    max_steps = expected.get("max_steps") or 10
    efficiency = max(0.0, 1 - step_count(trajectory) / max_steps)
    wanted = set(expected.get("tools_called") or [])
    used = {call.name for call in tool_calls(trajectory)}
    selection = len(wanted & used) / len(wanted) if wanted else 1.0
    length = min(1.0, len(final_output(trajectory) or "") / 100)
    # A sum of fractions can land a hair above 1.0, which gavel refuses as out of range.
    score = min(1.0, round(0.3 * efficiency + 0.4 * selection + 0.3 * length, 6))
    details = {"efficiency": efficiency, "tool_selection": selection, "output_quality": length}
    return scored(score, f"Quality score: {score:.2f} (threshold: {threshold})",
                  status="pass" if score >= threshold else "fail", metadata=details)


# ---------------------------------------------------------------------------------------------
# final_answer: the answer an agent marks as final

def marker_config(config: dict) -> str:
    unknown = set(config) - {"marker"}
    if unknown:
        raise ValueError(f"unknown key(s) {', '.join(sorted(unknown))}; expected marker")
    marker = config.get("marker", "FINAL ANSWER:")
    if not isinstance(marker, str) or not marker:
        raise ValueError("config.marker: must be a non-empty string")
    return marker


@pack.extractor(config=marker_config)
def final_answer(sample, trajectory, marker):
    """The rest of the line after the last `FINAL ANSWER:` (or config `marker`) in the
    assistant messages, stripped; nothing when no message has it."""
    for message in reversed(assistant_texts(trajectory)):
        at = message.rfind(marker)
        if at >= 0:
            return message[at + len(marker):].split("\n", 1)[0].strip()
    return None


# ---------------------------------------------------------------------------------------------
# tool_success_rate: deliberately buggy

@pack.grader
def tool_success_rate(sample, trajectory, submission, config):
    """The share of tool returns that succeeded. Deliberately buggy: a run without tool
    returns divides by zero, to show what an exception in a grader becomes."""
    returns = tool_returns(trajectory)
    ok = sum(1 for r in returns if r.status == types.ToolStatus.SUCCESS)
    rate = ok / len(returns)
    return scored(rate, f"{ok} of {len(returns)} tool calls succeeded")


# The class componentize-py exports as `gavel:grader/pack`.
Pack = pack.component()
