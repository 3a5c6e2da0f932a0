//! Built-in extractors with letta-evals' exact semantics.
