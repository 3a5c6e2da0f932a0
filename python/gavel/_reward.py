"""What the trainers' adapters share: a suite's reward (or one grader's scores) for
(query, prompt, label) triples, graded as ``gavel serve``'s ``/openrlhf`` route grades them.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any, Union

from . import Suite

#: A suite, or the path of one (loaded once, when the adapter is made).
SuiteLike = Union[Suite, str, "os.PathLike[str]"]


class Scorer:
    """Scores (query, prompt, label) triples with a suite's reward, or with ``metric``'s
    scores (the key of one of its graders) when given."""

    def __init__(
        self, suite: SuiteLike, metric: str | None = None, timeout: float | None = None
    ) -> None:
        self.suite = suite if isinstance(suite, Suite) else Suite(suite)
        if metric is None and not self.suite.has_reward:
            raise ValueError(
                f"suite {self.suite.path} has no `reward:`: add one (see the README's \"Gate and "
                "reward\"), or pass metric= with the key of the grader whose score is the reward"
            )
        self.metric = metric
        self.timeout = timeout

    def score(
        self,
        queries: Sequence[str],
        prompts: Sequence[str],
        labels: Sequence[Any],
    ) -> tuple[list[float | None], dict[str, list[float]]]:
        """Each query's value (``None`` where its row has no reward) and the grades behind it:
        each grader's scores and ``gavel_error`` (1 where the row has no reward). A query is
        its prompt and then the response, as OpenRLHF sends it."""
        answer = self.suite.reward_request(
            list(queries), list(prompts), list(labels), timeout=self.timeout
        )
        logs: dict[str, list[float]] = answer["extra_logs"]
        failed = logs["gavel_error"]
        if self.metric is None:
            values = answer["rewards"]
        elif self.metric in logs:
            values = logs[self.metric]
        else:
            keys = ", ".join(k for k in logs if k != "gavel_error")
            raise KeyError(
                f"metric {self.metric!r} is not a grader of suite {self.suite.path}: "
                f"its graders are {keys}"
            )
        return [None if error else value for value, error in zip(values, failed)], logs


def text(value: Any) -> str:
    """A prompt or a completion as text: a string as it is, a list of chat messages as their
    contents one after another (a part list's text parts), ``None`` as nothing."""
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    if isinstance(value, Sequence):
        return "".join(_content(message) for message in value)
    raise TypeError(
        f"a {type(value).__name__} is neither text nor a list of chat messages: give a string or "
        'a list of {"role", "content"} dicts'
    )


def _content(message: Any) -> str:
    if isinstance(message, str):
        return message
    content = message.get("content") if isinstance(message, dict) else None
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    return "".join(
        part.get("text", "") for part in content if isinstance(part, dict) and part.get("type") == "text"
    )
