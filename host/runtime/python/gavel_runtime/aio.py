"""asyncio in the sandbox: an async grader's coroutine runs in an event loop of its own, as
`asyncio.run` would run it, so `await asyncio.sleep(...)`, `gather`, tasks, `timeout` and
`get_running_loop()` work as they do under the peers.

The loop is asyncio's own base loop with one difference: nothing outside it can wake it (the
sandbox's requests and processes block the call until they are answered, and there is one
thread), so where a loop would wait on its selector this one runs the threads waiting to run
(`threads`), or else sleeps until the next timer. Its clock is `time.monotonic()`'s, the call's:
a sleep takes no time, as `time.sleep` takes none there (it moves the clock by its length), a
signal timer due before a sleep's end fires there (`alarms`), and the loop's timers fire in the
order their times say. A wait for nothing at all, which would hang a loop anywhere, raises
instead.
"""

import asyncio
import asyncio.base_events
import time

from gavel_runtime import threads


class _Clock:
    """The loop's selector: a wait with a timeout sleeps to its end; a wait without one can
    never end."""

    def select(self, timeout=None):
        # A thread the loop waits for (`to_thread`, an executor's shutdown) runs now; the loop
        # then takes up what it finished.
        if threads.run_waiting():
            return []
        if timeout is None:
            raise RuntimeError(
                "the coroutine waits for what cannot come in gavel's sandbox: no timer is set, "
                "and no I/O or other thread can wake the event loop there"
            )
        time.sleep(timeout)
        return []

    def close(self):
        pass


class SandboxLoop(asyncio.base_events.BaseEventLoop):
    """asyncio's base event loop (its clock `time.monotonic()`), waiting by sleeping."""

    def __init__(self):
        super().__init__()
        self._selector = _Clock()
        # Timers within the clock's resolution of now fire early; a sleep moves the clock
        # exactly to each timer, where the sandbox's monotonic clock reports a coarse
        # resolution.
        self._clock_resolution = 1e-9

    def _process_events(self, event_list):
        pass

    def _write_to_self(self):
        pass


async def _awaited(awaitable):
    return await awaitable


def run(awaitable):
    """The result of `awaitable`, run to its end in a new `SandboxLoop`; as `asyncio.run` ends,
    the tasks it left are cancelled and its async generators closed before the loop is."""
    loop = SandboxLoop()
    try:
        return loop.run_until_complete(_awaited(awaitable))
    finally:
        try:
            left = asyncio.all_tasks(loop)
            for task in left:
                task.cancel()
            if left:
                loop.run_until_complete(asyncio.gather(*left, return_exceptions=True))
            loop.run_until_complete(loop.shutdown_asyncgens())
        finally:
            loop.close()


class _Policy(asyncio.DefaultEventLoopPolicy):
    """Loops made by asyncio (`asyncio.run`, `new_event_loop`) are `SandboxLoop`s: asyncio's
    own needs a socket pair to wake itself, which the sandbox does not give."""

    def new_event_loop(self):
        return SandboxLoop()


def install():
    """Makes asyncio's new loops `SandboxLoop`s; once per interpreter, in the sandbox."""
    asyncio.set_event_loop_policy(_Policy())
