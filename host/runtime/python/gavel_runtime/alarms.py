"""Timers that signal, which WASI lacks: `signal.alarm`, `signal.setitimer` and
`signal.getitimer` with `ITIMER_REAL`, on the call's clock.

The sandbox's clock moves only as the grader waits (`time.sleep`, and the timed waits of
`threads`, which sleep), so a timer fires there: when a wait takes the clock to the instant it
is due, the clock stops there and the `SIGALRM` handler is called, as CPython calls it between
bytecodes. A handler that raises (the usual timeout guard) ends the wait with its exception;
one that returns lets the wait go on to its end (PEP 475). A timer with no handler set
(`SIG_DFL`) ends the call as the signal ends a process on Linux; one ignored (`SIG_IGN`) does
nothing. Work that does not wait never reaches a timer: fuel and the deadline end it instead.
A timer set in one call does not carry into the next (each call's clock starts at 0).
"""

import errno
import math
import signal
import sys
import time

# Linux's numbers, which CPython gives where the system has interval timers.
ITIMER_REAL, ITIMER_VIRTUAL, ITIMER_PROF = 0, 1, 2

# When the timer is due, on `time.monotonic()`'s clock, and its interval (0: it fires once).
due = None
_interval = 0.0

_sleep = time.sleep


class ItimerError(OSError):
    """What `signal.setitimer` and `signal.getitimer` raise for a timer they cannot set."""


def _seconds(value):
    if isinstance(value, (str, bytes, bytearray)):
        raise TypeError(f"must be real number, not {type(value).__name__}")
    seconds = float(value)
    if math.isnan(seconds):
        raise ValueError("Invalid value NaN (not a number)")
    if math.isinf(seconds):
        raise OverflowError("timestamp out of range for platform time_t")
    return seconds


def _real_only(which):
    if which != ITIMER_REAL:
        # The CPU timers count time a call never spends waiting: say so, not fire never.
        raise ItimerError(errno.EINVAL, "only ITIMER_REAL is kept in gavel's sandbox")


def getitimer(which):
    """The timer's (delay, interval): its seconds left and its period."""
    _real_only(which)
    return (0.0 if due is None else max(0.0, due - time.monotonic()), _interval)


def setitimer(which, seconds, interval=0.0):
    """Sets the timer to fire in `seconds` (0 clears it), then every `interval`; returns the
    (delay, interval) it replaces."""
    global due, _interval
    seconds, interval = _seconds(seconds), _seconds(interval)
    _real_only(which)
    if seconds < 0 or interval < 0:
        raise ItimerError(errno.EINVAL, "Invalid argument")
    before = getitimer(which)
    due = time.monotonic() + seconds if seconds > 0 else None
    _interval = interval if due is not None else 0.0
    return before


def alarm(seconds):
    """Sets the timer to fire once in `seconds` whole seconds (0 clears it); returns the whole
    seconds the alarm it replaces had left, as Linux rounds them."""
    if not isinstance(seconds, int):
        raise TypeError(f"'{type(seconds).__name__}' object cannot be interpreted as an integer")
    left, _ = setitimer(ITIMER_REAL, seconds)
    whole = int(left)
    return whole + 1 if left - whole >= 0.5 or (whole == 0 and left > 0) else whole


def cancel():
    """Clears the timer: a new call's clock starts again at 0."""
    global due, _interval
    due, _interval = None, 0.0


def _fire(frame):
    global due
    due = due + _interval if _interval else None
    handler = signal.getsignal(signal.SIGALRM)
    if handler == signal.SIG_DFL:
        raise SystemExit("Alarm clock")
    if callable(handler):
        handler(signal.SIGALRM, frame)


def sleep(seconds):
    """`time.sleep`, stopping at a timer due before its end to fire it."""
    if due is None or not isinstance(seconds, (int, float)) or not 0 <= seconds < math.inf:
        return _sleep(seconds)
    end = time.monotonic() + seconds
    while due is not None and due <= end:
        _sleep(max(0.0, due - time.monotonic()))
        _fire(sys._getframe(1))
    return _sleep(max(0.0, end - time.monotonic()))


def install():
    """The timers as above (by `sandbox.install`, once per interpreter), where the interpreter
    has none of its own."""
    if hasattr(signal, "setitimer"):
        return
    signal.ITIMER_REAL, signal.ITIMER_VIRTUAL, signal.ITIMER_PROF = ITIMER_REAL, ITIMER_VIRTUAL, ITIMER_PROF
    signal.ItimerError = ItimerError
    signal.getitimer, signal.setitimer, signal.alarm = getitimer, setitimer, alarm
    time.sleep = sleep
