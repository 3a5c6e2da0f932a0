"""Threads in the sandbox, which has one: a thread runs when the program waits for it.

`threading.Thread.start` does not start the thread's function; it marks the thread started
and keeps it waiting. A waiting thread runs, to its end, when the program would wait for it:
it is joined, or the program waits on a condition (an `Event`, a `Queue`, a `Semaphore`, a
future...) or on an event loop with nothing left to do. Waiting threads run one at a time, in
the order they were started, and a wait that no thread can end any more raises
`RuntimeError` instead of hanging. So the usual shapes of threaded code in a grader (start
workers and join them, a queue filled and then drained, `asyncio.to_thread`) give what they
give under CPython, in one order CPython could have run them in. A thread started and never
waited for does not run: under the peers it would run beside the grader, which has returned.

`concurrent.futures.ThreadPoolExecutor` runs each function when it is submitted, by one
worker of the executor's (its initializer run on the first submit), and hands back the future
done, as an executor of one idle worker would soon after.

A timed wait that nothing ends takes no time (the clock moves by its timeout, as `time.sleep`
moves it). A blocking `Lock.acquire` on a lock the program holds is CPython's own, which with
one thread never returns: fuel or the deadline ends it.
"""

import concurrent.futures._base as _base
import concurrent.futures.thread as _pool
import contextvars
import threading
import time

# Handles of the threads started and not yet run, oldest first.
waiting = []

_PENDING, _RUNNING, _DONE = range(3)


class _Handle:
    """A thread's handle in place of `_thread._ThreadHandle`: what `join` and `is_alive`
    ask of it."""

    __slots__ = ("_bootstrap", "_state", "ident")

    def __init__(self, bootstrap):
        self._bootstrap = bootstrap
        self._state = _PENDING
        self.ident = threading.get_ident()

    def run(self):
        """Runs the thread to its end, once; the caller's thread stays the current one."""
        if self._state != _PENDING:
            return
        self._state = _RUNNING
        if self in waiting:  # joined before its turn
            waiting.remove(self)
        active = threading._active
        caller = active.get(self.ident)
        try:
            self._bootstrap()
        finally:
            self._state = _DONE
            # The thread's bootstrap put itself in the place of the thread running it (they
            # share an ident) and took that place away at its end.
            if caller is not None:
                active[self.ident] = caller

    def join(self, timeout=None):
        if self._state == _RUNNING:
            raise RuntimeError(
                "a thread joined one that is waiting for it: in gavel's sandbox threads run one "
                "at a time, so this join can never end"
            )
        self.run()

    def is_done(self):
        return self._state == _DONE


def _start_joinable_thread(function, handle=None, daemon=True):
    thread = function.__self__
    started = _Handle(function)
    thread._os_thread_handle = started
    thread._started.set()
    waiting.append(started)
    return started


def run_waiting():
    """Runs every waiting thread, oldest first, those they start too; whether any ran."""
    ran = bool(waiting)
    while waiting:
        waiting.pop(0).run()
    return ran


def forget_waiting():
    """Drops the threads a call started and left waiting; joining one still runs it."""
    waiting.clear()


_DEADLOCK = (
    "the program waits for what no thread can do any more: in gavel's sandbox threads run one "
    "at a time, each when the program waits for it, and every one started has run"
)


def _wait(self, timeout=None):
    # `threading.Condition.wait` with one thread: the waiting threads run (one of them may
    # notify), and a wait they did not end times out at once or can never end.
    if not self._is_owned():
        raise RuntimeError("cannot wait on un-acquired lock")
    waiter = threading._allocate_lock()
    waiter.acquire()
    self._waiters.append(waiter)
    saved_state = self._release_save()
    notified = False
    try:
        run_waiting()
        notified = waiter.acquire(False)
        if not notified:
            if timeout is None:
                raise RuntimeError(_DEADLOCK)
            if timeout > 0:
                time.sleep(timeout)
        return notified
    finally:
        self._acquire_restore(saved_state)
        if not notified:
            try:
                self._waiters.remove(waiter)
            except ValueError:
                pass


def _submit(self, fn, /, *args, **kwargs):
    # `ThreadPoolExecutor.submit`, run at once by the executor's one worker, made on the first
    # submit as a worker thread would be (its initializer run, in a context of its own).
    with self._shutdown_lock:
        if self._broken:
            raise _pool.BrokenThreadPool(self._broken)
        if self._shutdown:
            raise RuntimeError("cannot schedule new futures after shutdown")
        worker = self.__dict__.get("_gavel_worker")
        starting = worker is None
        if starting:
            worker = self._gavel_worker = (contextvars.Context(), self._create_worker_context())
    context, worker_context = worker
    future = _base.Future()
    if starting:
        try:
            context.run(worker_context.initialize)
        except BaseException:
            _base.LOGGER.critical("Exception in initializer:", exc_info=True)
            self._initializer_failed()
            future.set_exception(_pool.BrokenThreadPool(self._broken))
            return future
    task = self._resolve_work_item_task(fn, args, kwargs)
    # A function submitting another runs it as a second worker would, in a context of its own.
    if _running(context):
        context = contextvars.Context()
    context.run(_pool._WorkItem(future, task).run, worker_context)
    return future


def _running(context):
    """Whether `context` is entered (a context can be entered once at a time)."""
    try:
        context.run(int)
    except RuntimeError:
        return True
    return False


def install():
    """Threads and thread pools as above (by `sandbox.install`, once per interpreter)."""
    threading._start_joinable_thread = _start_joinable_thread
    threading.Condition.wait = _wait
    _pool.ThreadPoolExecutor.submit = _submit
