"""letta_client, as gavel's sandbox provides it: the message and agent-state types that grader
and extractor code reads. The API clients exist so that imports and type hints work; the
sandbox has no network, so building one raises `LettaError`."""


class LettaError(Exception):
    pass


class _NoNetworkClient:
    def __init__(self, *args, **kwargs):
        raise LettaError(
            f"{type(self).__name__} cannot be used in gavel's sandbox: it has no network "
            "(grade the recorded run instead)"
        )


class Letta(_NoNetworkClient):
    pass


class AsyncLetta(_NoNetworkClient):
    pass


__all__ = ["Letta", "AsyncLetta", "LettaError"]
