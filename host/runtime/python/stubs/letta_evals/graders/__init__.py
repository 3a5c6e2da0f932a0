"""letta_evals.graders (stand-in for letta-evals 0.26.0): the built-in tool graders."""

from letta_evals.graders.builtin import ascii_printable_only, contains, exact_match, regex_match

__all__ = ["ascii_printable_only", "contains", "exact_match", "regex_match"]
