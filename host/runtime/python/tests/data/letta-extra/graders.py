import asyncio

from letta_evals.decorators import extractor, grader
from letta_evals.extractors.builtin import last_assistant, tool_arguments
from letta_evals.graders.builtin import ascii_printable_only, contains, exact_match, regex_match
from letta_evals.models import GradeResult, Sample


@grader
async def mentions_team(sample: Sample, submission: str) -> GradeResult:
    await asyncio.sleep(0)
    team = (sample.extra_vars or {}).get("team", "")
    return GradeResult(
        score=1.0 if team and team in submission else 0.0,
        rationale=f"id={sample.id!r} input={sample.input!r} agent_args={sample.agent_args}",
        metadata={"sample": str(sample)},
    )


@grader(name="length_ok")
def length(sample, submission):
    return GradeResult(score=min(1.0, len(submission) / 40), rationale=repr(sample))


@grader
def raises(sample, submission):
    return {"score": 1}["missing"]


@grader
def bad_score(sample, submission):
    return GradeResult(score=1.5, rationale="too high")


@extractor
def lookup_args(trajectory, config):
    return tool_arguments(trajectory, {"tool_name": config.get("tool", "lookup")})


@extractor
def shout(trajectory, config, agent_state):
    return last_assistant(trajectory, config).upper() + f" [{type(trajectory[0][0]).__name__}]"


@grader
def builtins_together(sample, submission):
    parts = [f(sample, submission) for f in (exact_match, contains, regex_match, ascii_printable_only)]
    return GradeResult(score=sum(p.score for p in parts) / 4, rationale=" | ".join(p.rationale for p in parts))
