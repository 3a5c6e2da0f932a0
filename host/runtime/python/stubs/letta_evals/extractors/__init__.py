"""letta_evals.extractors (stand-in for letta-evals 0.26.0)."""

from letta_evals.extractors.builtin import (
    after_marker,
    all_assistant,
    first_assistant,
    last_assistant,
    last_turn,
    memory_block,
    pattern,
    tool_arguments,
    tool_output,
)

__all__ = [
    "after_marker",
    "all_assistant",
    "first_assistant",
    "last_assistant",
    "last_turn",
    "memory_block",
    "pattern",
    "tool_arguments",
    "tool_output",
]
