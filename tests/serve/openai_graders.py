"""OpenAI's own client against `gavel serve`: `client.fine_tuning.alpha.graders.run` and
`.validate`, each answer read through the package's response types.

    python openai_graders.py BASE_URL TOKEN FILE

BASE_URL is the server's `http://ADDR/v1`, TOKEN its bearer token, FILE a file the server can
read, which a Python grader from a request must not. The server is started with
GAVEL_PROBE_SECRET in its environment, which such a grader must not see either.
"""

import sys

import openai
from openai import OpenAI

base_url, token, readable = sys.argv[1:4]
client = OpenAI(base_url=base_url, api_key=token, max_retries=0)
graders = client.fine_tuning.alpha.graders

STRING_CHECK = {
    "type": "string_check",
    "name": "same city",
    "input": "{{sample.output_text}}",
    "reference": "{{item.city}}",
    "operation": "eq",
}
SIMILAR = {
    "type": "text_similarity",
    "name": "close",
    "input": "{{sample.output_text}}",
    "reference": "{{item.city}}",
    "evaluation_metric": "fuzzy_match",
}


def errors_clear(metadata):
    flags = metadata.errors
    return not any(
        [
            flags.formula_parse_error,
            flags.invalid_variable_error,
            flags.api_model_grader_parse_error,
            flags.api_model_grader_refusal_error,
            flags.api_model_grader_server_error,
            flags.other_error,
            flags.python_grader_runtime_error,
            flags.python_grader_server_error,
            flags.sample_parse_error,
            flags.truncated_observation_error,
            flags.unresponsive_reward_error,
        ]
    )


def string_check():
    hit = graders.run(grader=STRING_CHECK, model_sample="Paris", item={"city": "Paris"})
    assert hit.reward == 1.0, hit
    assert hit.metadata.name == "same city" and hit.metadata.type == "string_check", hit
    assert errors_clear(hit.metadata), hit
    assert isinstance(hit.metadata.execution_time, float), hit
    assert hit.metadata.scores == {} and hit.sub_rewards == {}, hit
    assert hit.metadata.token_usage is None, hit
    assert hit.api_model_grader_token_usage_per_model == {}, hit
    miss = graders.run(grader=STRING_CHECK, model_sample="Lyon", item={"city": "Paris"})
    assert miss.reward == 0.0, miss
    # A variable the item lacks: OpenAI's flag, not a failed request.
    unset = graders.run(grader=STRING_CHECK, model_sample="Paris")
    assert unset.reward == 0.0 and unset.metadata.errors.invalid_variable_error, unset


def text_similarity():
    close = graders.run(grader=SIMILAR, model_sample="Pariss", item={"city": "Paris"})
    assert 0.8 < close.reward < 1.0, close
    assert close.metadata.type == "text_similarity" and errors_clear(close.metadata), close


def multi():
    grader = {
        "type": "multi",
        "name": "both",
        "graders": {"exact": STRING_CHECK, "close": SIMILAR},
        "calculate_output": "0.5 * exact + 0.5 * close",
    }
    both = graders.run(grader=grader, model_sample="Pariss", item={"city": "Paris"})
    close = both.sub_rewards["close"]
    assert both.sub_rewards["exact"] == 0.0 and 0.8 < close < 1.0, both
    assert abs(both.reward - 0.5 * close) < 1e-9, both
    assert both.metadata.scores == both.sub_rewards, both
    assert both.metadata.type == "multi" and errors_clear(both.metadata), both


def python():
    source = "def grade(sample, item):\n    return 0.25 if sample['output_text'] == item['city'] else 0.0\n"
    grader = {"type": "python", "name": "py", "source": source}
    graded = graders.run(grader=grader, model_sample="Paris", item={"city": "Paris"})
    assert graded.reward == 0.25, graded
    assert graded.metadata.type == "python" and graded.metadata.name == "py", graded
    assert errors_clear(graded.metadata), graded
    raising = {"type": "python", "name": "raises", "source": "def grade(sample, item):\n    raise ValueError('no verdict')\n"}
    raised = graders.run(grader=raising, model_sample="Paris")
    assert raised.reward == 0.0, raised
    assert raised.metadata.errors.python_grader_runtime_error, raised
    details = raised.metadata.errors.python_grader_runtime_error_details
    assert "no verdict" in details and "/tmp" not in details, details


# Each reach is tried, and what it reached is the grader's error: none of the three may.
PROBE = """
import os

def grade(sample, item):
    reached = []
    try:
        with open(item['file']) as f:
            reached.append('file: ' + f.read())
    except Exception:
        pass
    if 'GAVEL_PROBE_SECRET' in os.environ:
        reached.append('env: ' + os.environ['GAVEL_PROBE_SECRET'])
    try:
        import socket

        socket.create_connection((item['host'], item['port']), timeout=2).close()
        reached.append('socket')
    except Exception:
        pass
    if reached:
        raise RuntimeError('reached ' + ', '.join(reached))
    return 1.0
"""


def multi_with_python():
    length = "def grade(sample, item):\n    return len(sample['output_text']) / 10\n"
    grader = {
        "type": "multi",
        "name": "blend",
        "graders": {"exact": STRING_CHECK, "length": {"type": "python", "name": "length", "source": length}},
        "calculate_output": "0.5 * exact + 0.5 * length",
    }
    blended = graders.run(grader=grader, model_sample="Paris", item={"city": "Paris"})
    assert blended.reward == 0.75 and blended.sub_rewards == {"exact": 1.0, "length": 0.5}, blended
    assert blended.metadata.type == "multi" and errors_clear(blended.metadata), blended
    raising = {"type": "python", "name": "length", "source": "def grade(sample, item):\n    raise ValueError('no verdict')\n"}
    raised = graders.run(grader=dict(grader, graders={"exact": STRING_CHECK, "length": raising}), model_sample="Paris", item={"city": "Paris"})
    assert raised.reward == 0.0 and raised.metadata.errors.python_grader_runtime_error, raised
    details = raised.metadata.errors.python_grader_runtime_error_details
    assert "no verdict" in details and "/tmp" not in details, details
    checked = graders.validate(grader=grader)
    assert checked.grader.type == "multi", checked
    broken = {"type": "python", "name": "broken", "source": "def grade(:\n"}
    try:
        graders.validate(grader=dict(grader, graders={"exact": STRING_CHECK, "length": broken}))
    except openai.BadRequestError as e:
        assert e.param == "grader.graders.length.source", e.body
    else:
        raise AssertionError("a python sub-grader that does not compile was accepted")


def python_reaches_nothing():
    host, port = base_url.split("//")[1].split("/")[0].rsplit(":", 1)
    grader = {"type": "python", "name": "probe", "source": PROBE}
    item = {"file": readable, "host": host, "port": int(port)}
    probed = graders.run(grader=grader, model_sample="", item=item)
    assert errors_clear(probed.metadata), probed.metadata.errors
    assert probed.reward == 1.0, probed
    inside = {"type": "multi", "name": "m", "graders": {"probe": grader}, "calculate_output": "probe"}
    probed = graders.run(grader=inside, model_sample="", item=item)
    assert errors_clear(probed.metadata), probed.metadata.errors
    assert probed.reward == 1.0, probed


def invalid():
    wrong = dict(STRING_CHECK, operation="equals")
    try:
        graders.run(grader=wrong, model_sample="Paris")
    except openai.BadRequestError as e:
        assert e.status_code == 400, e
        assert e.param == "grader.operation", e.body
        assert e.type == "invalid_request_error", e.body
        assert "`equals` is not one of eq, ne, like, ilike" in e.message, e.message
    else:
        raise AssertionError("an unknown operation was run")
    try:
        graders.validate(grader={"type": "python", "name": "broken", "source": "def grade(:\n"})
    except openai.BadRequestError as e:
        assert e.param == "grader.source", e.body
    else:
        raise AssertionError("a python grader that does not compile was accepted")


def validate():
    checked = graders.validate(grader=STRING_CHECK)
    assert checked.grader.type == "string_check", checked
    assert checked.grader.operation == "eq" and checked.grader.name == "same city", checked
    source = "def grade(sample, item):\n    return 1.0\n"
    checked = graders.validate(grader={"type": "python", "name": "py", "source": source})
    assert checked.grader.type == "python" and checked.grader.source == source, checked


def wrong_token():
    stranger = OpenAI(base_url=base_url, api_key="not-" + token, max_retries=0)
    try:
        stranger.fine_tuning.alpha.graders.validate(grader=STRING_CHECK)
    except openai.AuthenticationError as e:
        assert e.status_code == 401, e
    else:
        raise AssertionError("a wrong token was let in")


for test in [string_check, text_similarity, multi, python, multi_with_python, python_reaches_nothing, invalid, validate, wrong_token]:
    test()
    print("ok", test.__name__)
