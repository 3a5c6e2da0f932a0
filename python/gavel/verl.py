"""verl's custom reward function: ``compute_score(data_source, solution_str, ground_truth,
extra_info)``.

In the file ``custom_reward_function.path`` names::

    import gavel.verl
    compute_score = gavel.verl.compute_score("suite.yaml")

verl's reward managers call it as ``compute_score(data_source=..., solution_str=...,
ground_truth=..., extra_info=...)`` for one response (naive, dapo, prime), or with the plural
keywords ``data_sources``, ``solution_strs``, ``ground_truths``, ``extra_infos`` for a batch
(the batch manager). Each response is one row of the suite, as ``gavel serve``'s ``/openrlhf``
route makes it: the prompt (``extra_info["prompt"]``, else ``extra_info["question"]``, when
text) is the row's ``input``, ``ground_truth`` its ``ground_truth``, and the response the
assistant's message. The value is the suite's reward, or ``metric``'s score; a row with no
reward scores ``0.0`` (``gavel_error`` is 1 in the details).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ._reward import Scorer, SuiteLike

__all__ = ["ComputeScore", "compute_score"]


class ComputeScore:
    """The callable :func:`compute_score` makes."""

    __name__ = "compute_score"

    def __init__(
        self,
        suite: SuiteLike,
        *,
        metric: str | None = None,
        details: bool = False,
        timeout: float | None = None,
    ) -> None:
        self.scorer = Scorer(suite, metric, timeout)
        self.details = details

    def __call__(
        self,
        data_source: Any = None,
        solution_str: str | None = None,
        ground_truth: Any = None,
        extra_info: Mapping[str, Any] | None = None,
        *,
        data_sources: Sequence[Any] | None = None,
        solution_strs: Sequence[str] | None = None,
        ground_truths: Sequence[Any] | None = None,
        extra_infos: Sequence[Mapping[str, Any] | None] | None = None,
        **kwargs: Any,
    ) -> Any:
        if solution_strs is not None:
            n = len(solution_strs)
            return self._score(
                list(solution_strs),
                list(ground_truths) if ground_truths is not None else [None] * n,
                list(extra_infos) if extra_infos is not None else [None] * n,
            )
        if solution_str is None:
            raise TypeError(
                "compute_score needs solution_str (one response) or solution_strs (a batch)"
            )
        return self._score([solution_str], [ground_truth], [extra_info])[0]

    def _score(
        self,
        responses: list[str],
        labels: list[Any],
        infos: list[Mapping[str, Any] | None],
    ) -> list[Any]:
        prompts = [_prompt(info) for info in infos]
        queries = [p + r for p, r in zip(prompts, responses)]
        values, logs = self.scorer.score(queries, prompts, labels)
        scores = [0.0 if value is None else value for value in values]
        if not self.details:
            return scores
        return [
            {"score": score, **{key: column[i] for key, column in logs.items()}}
            for i, score in enumerate(scores)
        ]


def compute_score(
    suite: SuiteLike,
    *,
    metric: str | None = None,
    details: bool = False,
    timeout: float | None = None,
) -> ComputeScore:
    """verl's ``compute_score`` for ``suite`` (loaded once, here).

    :param metric: the key of the grader whose score is the value; by default the suite's
        ``reward:``.
    :param details: answer a dict per response, ``{"score", <each grader's key>,
        "gavel_error"}`` (verl logs each key), instead of the float.
    :param timeout: seconds a call may take; by default no bound.
    """
    return ComputeScore(suite, metric=metric, details=details, timeout=timeout)


def _prompt(info: Mapping[str, Any] | None) -> str:
    for key in ("prompt", "question"):
        value = info.get(key) if isinstance(info, Mapping) else None
        if isinstance(value, str):
            return value
    return ""
