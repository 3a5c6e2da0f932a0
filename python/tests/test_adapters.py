"""The reward functions, called exactly as the trainers call them (read from their sources:
verl 0.9.1's reward managers, TRL 1.16.0's GRPOTrainer._calculate_rewards, OpenRLHF 0.11.2's
agent executor), give the suite's reward for the row `gavel serve`'s /openrlhf route makes."""

from __future__ import annotations

import asyncio
import functools
import importlib.util
from pathlib import Path

import pytest

import gavel
import gavel.openrlhf
import gavel.trl
import gavel.verl
from conftest import DATA

CAPITALS = DATA / "capitals" / "suite.yaml"
SANDBOXED = DATA / "sandboxed" / "suite.yaml"

PROMPT = "Q: capital of France? A: "
# (response, ground truth, reward): `contains` weighs 0.75 and `exact_match` 0.25.
CASES = [("Paris", "Paris", 1.0), ("It is Paris.", "Paris", 0.75), ("Lyon", "Paris", 0.0)]


@pytest.fixture(scope="module")
def capitals(cache: str) -> gavel.Suite:
    return gavel.Suite(CAPITALS, cache_dir=cache)


def row(prompt: str, response: str, label: str) -> dict:
    """The row the adapters grade: what serve/openrlhf.rs makes of a query."""
    return {
        "input": prompt,
        "ground_truth": label,
        "trajectory": [
            {"role": "user", "content": prompt},
            {"role": "assistant", "content": response},
        ],
    }


def test_the_rows_the_adapters_grade_are_the_suites_rows(capitals):
    graded = capitals.grade([row(PROMPT, response, label) for response, label, _ in CASES])
    assert [r["reward"] for r in graded] == [reward for _, _, reward in CASES]


# verl: NaiveRewardManager.__call__ (workers/reward_manager/naive.py) calls
# `self.compute_score(data_source=..., solution_str=..., ground_truth=..., extra_info=...)`,
# extra_info carrying num_turns and rollout_reward_scores; a dict answer's "score" is the reward
# and each of its keys is logged. BatchRewardManager.verify (batch.py) calls it once per batch
# with data_sources=, solution_strs=, ground_truths=, extra_infos=. get_custom_reward_fn
# (trainer/ppo/reward.py) loads it by name from a file and wraps it in functools.partial.
def test_verl_compute_score_as_the_naive_manager_calls_it(capitals):
    compute_score = functools.partial(gavel.verl.compute_score(capitals))
    for response, label, reward in CASES:
        extra_info = {"question": PROMPT, "num_turns": None, "rollout_reward_scores": {}}
        score = compute_score(
            data_source="capitals",
            solution_str=response,
            ground_truth=label,
            extra_info=extra_info,
        )
        assert isinstance(score, float) and score == reward


def test_verl_compute_score_details_and_batches(capitals):
    detailed = gavel.verl.compute_score(capitals, details=True)
    answer = detailed(
        data_source="capitals",
        solution_str="It is Paris.",
        ground_truth="Paris",
        extra_info={"prompt": PROMPT},
    )
    assert answer == {"score": 0.75, "answer": 1.0, "exact": 0.0, "gavel_error": 0.0}
    batch = gavel.verl.compute_score(capitals)(
        data_sources=["capitals"] * 3,
        solution_strs=[response for response, _, _ in CASES],
        ground_truths=[label for _, label, _ in CASES],
        extra_infos=[{"question": PROMPT, "rollout_reward_scores": {}}] * 3,
    )
    assert batch == [reward for _, _, reward in CASES]
    exact = gavel.verl.compute_score(capitals, metric="exact")
    assert exact("capitals", "It is Paris.", "Paris", {}) == 0.0


def reward_file(folder: Path, module_name: str, line: str) -> object:
    """The module a trainer loads from the user's reward file holding `line`, loaded as the
    trainer loads it."""
    reward = folder / "reward.py"
    reward.write_text(f"import gavel, gavel.openrlhf, gavel.verl\n{line}\n")
    spec = importlib.util.spec_from_file_location(module_name, str(reward))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def suite_source(cache: str) -> str:
    return f"gavel.Suite({str(CAPITALS)!r}, cache_dir={cache!r})"


def test_verl_loads_it_from_a_file_by_name(tmp_path: Path, cache: str):
    line = f"compute_score = gavel.verl.compute_score({suite_source(cache)})"
    compute_score = getattr(reward_file(tmp_path, "custom_module", line), "compute_score")
    assert compute_score(data_source="x", solution_str="Paris", ground_truth="Paris",
                         extra_info={}) == 1.0


# TRL: GRPOTrainer._calculate_rewards (trainer/grpo_trainer.py) calls
# `reward_func(prompts=prompts, completions=completions, completion_ids=completion_ids_list,
# **reward_kwargs)`, reward_kwargs holding each dataset column but prompt/completion as a list
# and trainer_state, log_extra, log_metric; None answers become NaN. Names come from
# get_callable_name (trainer/utils.py): `__name__`, else the class's name.
def test_trl_reward_func_as_grpo_trainer_calls_it(capitals):
    reward_func = gavel.trl.reward_func(capitals)
    logged: dict[str, float] = {}
    prompts = [PROMPT] * len(CASES)
    completions = [response for response, _, _ in CASES]
    rewards = reward_func(
        prompts=prompts,
        completions=completions,
        completion_ids=[[1, 2, 3]] * len(CASES),
        ground_truth=[label for _, label, _ in CASES],
        other_column=["x"] * len(CASES),
        trainer_state=object(),
        log_extra=lambda column, values: None,
        log_metric=lambda name, value: logged.__setitem__(name, value),
    )
    assert rewards == [reward for _, _, reward in CASES]
    assert getattr(reward_func, "__name__") == "gavel_capitals"
    assert logged == {"gavel_capitals/gavel_error": 0.0}


def test_trl_conversational_completions_and_a_metric(capitals):
    reward_func = gavel.trl.reward_func(capitals, metric="answer", label_column="solution")
    rewards = reward_func(
        prompts=[[{"role": "user", "content": PROMPT}]] * 2,
        completions=[
            [{"role": "assistant", "content": "It is Paris."}],
            [{"role": "assistant", "content": [{"type": "text", "text": "Lyon"}]}],
        ],
        completion_ids=[[1], [2]],
        solution=["Paris", "Paris"],
        trainer_state=None,
    )
    assert rewards == [1.0, 0.0]
    assert reward_func.__name__ == "gavel_answer"


# OpenRLHF: SingleTurnExecutor loads `reward_module.reward_func` from the --remote_rm_url file
# (utils/agent.py) and calls it as `asyncio.to_thread(self.reward_func, queries, prompts,
# labels)`, one query at a time; it reads "rewards", "scores" and "extra_logs".
def test_openrlhf_reward_func_as_its_executor_calls_it(tmp_path: Path, cache: str):
    line = f"reward_func = gavel.openrlhf.reward_func({suite_source(cache)})"
    reward_func = reward_file(tmp_path, "reward_func", line).reward_func

    async def fetch(queries, prompts, labels):
        tasks = [
            asyncio.to_thread(reward_func, queries[i : i + 1], prompts[i : i + 1], labels[i : i + 1])
            for i in range(len(queries))
        ]
        return await asyncio.gather(*tasks)

    answers = asyncio.run(
        fetch(
            [PROMPT + response for response, _, _ in CASES],
            [PROMPT] * len(CASES),
            [label for _, label, _ in CASES],
        )
    )
    for answer, (_, _, reward) in zip(answers, CASES):
        assert [float(x) for x in answer["rewards"]] == [reward]
        assert [float(x) for x in answer["scores"]] == [reward]
        assert sorted(answer["extra_logs"]) == ["answer", "exact", "gavel_error"]


def test_openrlhf_answers_what_serve_answers(capitals):
    queries = [PROMPT + response for response, _, _ in CASES]
    labels = [label for _, label, _ in CASES]
    answer = gavel.openrlhf.reward_func(capitals)(queries, [PROMPT] * 3, labels)
    served = capitals.reward_request(queries, [PROMPT] * 3, labels)
    assert [float(x) for x in answer["rewards"]] == served["rewards"]
    assert {k: [float(x) for x in v] for k, v in answer["extra_logs"].items()} == served[
        "extra_logs"
    ]


def test_users_python_graders_run_sandboxed(cache: str):
    # The grader that opens a file of the machine finds none inside the sandbox: its grade is
    # an error, so the row has no reward (gavel_error 1), while the other grader still grades.
    suite = gavel.Suite(SANDBOXED, cache_dir=cache)
    graded = suite.grade([row("hi", "hello", "x")])[0]
    assert graded["grades"]["peek"]["status"] == "error", graded
    assert "No such file or directory: '/etc/hostname'" in graded["grades"]["peek"]["rationale"]
    assert "reward" not in graded
    compute_score = gavel.verl.compute_score(suite, details=True)
    answer = compute_score("d", "hello", None, {"prompt": "hi"})
    assert answer == {"score": 0.0, "peek": 0.0, "length": 1.0, "gavel_error": 1.0}
    assert gavel.trl.reward_func(suite)(prompts=["hi"], completions=["hello"]) == [None]


def test_a_suite_without_a_reward_needs_a_metric(cache: str):
    from conftest import SUITES

    quickstart = gavel.Suite(SUITES["quickstart"], cache_dir=cache)
    with pytest.raises(ValueError, match="has no `reward:`.*metric="):
        gavel.trl.reward_func(quickstart)
    with pytest.raises(KeyError, match="'nope' is not a grader"):
        gavel.verl.compute_score(quickstart, metric="nope")("d", "x", "y", {})


def test_rows_without_a_reward_are_none_for_trl_and_zero_elsewhere(capitals):
    # An empty completion has no submission: letta-evals' guard leaves the row without reward.
    trl = gavel.trl.reward_func(capitals)(prompts=[PROMPT], completions=[""], ground_truth=["Paris"])
    assert trl == [None]
    verl = gavel.verl.compute_score(capitals, details=True)("d", "", "Paris", {"prompt": PROMPT})
    assert verl["score"] == 0.0 and verl["gavel_error"] == 1.0
    openrlhf = gavel.openrlhf.reward_func(capitals)([PROMPT], [PROMPT], ["Paris"])
    assert [float(x) for x in openrlhf["rewards"]] == [0.0]
    assert [float(x) for x in openrlhf["extra_logs"]["gavel_error"]] == [1.0]
