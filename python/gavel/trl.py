"""TRL's reward function: ``reward_func(prompts, completions, **columns)`` (``GRPOTrainer``,
``RLOOTrainer``).

::

    import gavel.trl
    trainer = GRPOTrainer(..., reward_funcs=[gavel.trl.reward_func("suite.yaml")])

TRL calls it with keywords: ``prompts``, ``completions``, ``completion_ids``, each of the
dataset's other columns as a list (one entry per completion), and ``trainer_state``,
``log_extra``, ``log_metric``. Each completion is one row of the suite, as ``gavel serve``'s
``/openrlhf`` route makes it: the prompt is the row's ``input``, the column ``label_column``
(``ground_truth`` by default) its ``ground_truth``, and the completion the assistant's message;
prompts and completions in the conversational format (lists of messages) are taken as their
messages' contents. The answer is one float per completion, the suite's reward or ``metric``'s
score, and ``None`` (which TRL counts as NaN, left out of the mean) for a row with no reward.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ._reward import Scorer, SuiteLike, text

__all__ = ["RewardFunc", "reward_func"]


class RewardFunc:
    """The callable :func:`reward_func` makes; TRL names it by ``__name__`` in its logs."""

    def __init__(
        self,
        suite: SuiteLike,
        *,
        metric: str | None = None,
        label_column: str = "ground_truth",
        name: str | None = None,
        timeout: float | None = None,
    ) -> None:
        self.scorer = Scorer(suite, metric, timeout)
        self.label_column = label_column
        self.__name__ = name or f"gavel_{metric or self.scorer.suite.name}"

    def __call__(
        self, prompts: Sequence[Any], completions: Sequence[Any], **columns: Any
    ) -> list[float | None]:
        labels = columns.get(self.label_column)
        if labels is None:
            labels = [None] * len(completions)
        prompts = [text(p) for p in prompts]
        queries = [p + text(c) for p, c in zip(prompts, completions)]
        values, logs = self.scorer.score(queries, prompts, list(labels))
        log_metric = columns.get("log_metric")
        if callable(log_metric):
            errors = logs["gavel_error"]
            log_metric(f"{self.__name__}/gavel_error", sum(errors) / max(len(errors), 1))
        return values


def reward_func(
    suite: SuiteLike,
    *,
    metric: str | None = None,
    label_column: str = "ground_truth",
    name: str | None = None,
    timeout: float | None = None,
) -> RewardFunc:
    """TRL's reward function for ``suite`` (loaded once, here).

    :param metric: the key of the grader whose score is the reward; by default the suite's
        ``reward:``.
    :param label_column: the dataset column that holds each row's ``ground_truth``.
    :param name: the name TRL logs the reward under; by default ``gavel_<suite or metric>``.
    :param timeout: seconds a call may take; by default no bound.
    """
    return RewardFunc(
        suite, metric=metric, label_column=label_column, name=name, timeout=timeout
    )
