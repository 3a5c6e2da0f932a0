"""letta_evals, as gavel's sandbox provides it: the decorators, models and extractor helpers of
letta-evals 0.26.0 that grader, extractor and reward code uses, without pydantic or a network."""

__version__ = "0.26.0"
