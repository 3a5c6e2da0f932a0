"""letta-evals custom graders, as letta-evals runs them: an @extractor and a @grader."""
import json

from letta_evals.decorators import extractor, grader
from letta_evals.extractors.utils import get_assistant_messages
from letta_evals.models import GradeResult, Sample


@extractor
def last_json_object(trajectory, config):
    """The last JSON object the agent wrote."""
    for message in reversed(get_assistant_messages(trajectory)):
        text = message.content if isinstance(message.content, str) else ""
        start, end = text.find("{"), text.rfind("}")
        if start != -1 and end > start:
            return text[start : end + 1]
    return ""


@grader
def ticket_fields(sample: Sample, submission: str) -> GradeResult:
    """Half a point for each of category and priority that matches the ground truth."""
    try:
        got = json.loads(submission)
    except json.JSONDecodeError as e:
        return GradeResult(score=0.0, rationale=f"not JSON: {e}")
    want = json.loads(sample.ground_truth)
    matched = [key for key in ("category", "priority") if got.get(key) == want[key]]
    return GradeResult(score=len(matched) / 2, rationale=f"matched: {', '.join(matched) or 'none'}")
