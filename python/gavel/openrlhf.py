"""OpenRLHF's reward function: ``reward_func(queries, prompts, labels)``, loaded from the file
``--remote_rm_url`` names (a path ending in ``.py``).

::

    # reward.py
    import gavel.openrlhf
    reward_func = gavel.openrlhf.reward_func("suite.yaml")

OpenRLHF calls it from a worker thread with three lists: each query (the prompt and the
response, decoded as one text), its prompt and its label (``--label_key``). It is graded as
``gavel serve``'s ``/openrlhf`` route grades the same request: the prompt is the row's
``input``, the label its ``ground_truth``, and the query after its prompt the assistant's
message. The answer is ``{"rewards", "scores", "extra_logs"}``: the suite's reward (or
``metric``'s score) for each query, 0 where the row has no reward, and in ``extra_logs`` each
grader's scores and ``gavel_error`` (1 where the row has no reward); torch tensors when torch is
installed (as OpenRLHF's own examples answer), lists of floats otherwise.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ._reward import Scorer, SuiteLike

__all__ = ["RewardFunc", "reward_func"]


class RewardFunc:
    """The callable :func:`reward_func` makes."""

    __name__ = "reward_func"

    def __init__(
        self, suite: SuiteLike, *, metric: str | None = None, timeout: float | None = None
    ) -> None:
        self.scorer = Scorer(suite, metric, timeout)

    def __call__(
        self,
        queries: Sequence[str],
        prompts: Sequence[str] | None = None,
        labels: Sequence[Any] | None = None,
    ) -> dict[str, Any]:
        n = len(queries)
        prompts = list(prompts) if prompts is not None else [""] * n
        labels = list(labels) if labels is not None else [None] * n
        values, logs = self.scorer.score(queries, prompts, labels)
        rewards = _tensor([0.0 if value is None else value for value in values])
        return {
            "rewards": rewards,
            "scores": rewards,
            "extra_logs": {key: _tensor(column) for key, column in logs.items()},
        }


def reward_func(
    suite: SuiteLike, *, metric: str | None = None, timeout: float | None = None
) -> RewardFunc:
    """OpenRLHF's ``reward_func`` for ``suite`` (loaded once, here).

    :param metric: the key of the grader whose score is the reward; by default the suite's
        ``reward:``.
    :param timeout: seconds a call may take; by default no bound.
    """
    return RewardFunc(suite, metric=metric, timeout=timeout)


def _tensor(values: list[float]) -> Any:
    try:
        import torch
    except ImportError:
        return values
    return torch.tensor(values, dtype=torch.float32)
