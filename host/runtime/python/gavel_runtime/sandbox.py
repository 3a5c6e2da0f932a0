"""The closed sandbox as Python on a bare machine.

The host grants nothing by default, and WASI itself says so in the ordinary way: `os.environ`
holds the variables the host passes in (none unless the suite grants some), a path outside
every folder the host preopens (none unless granted) is `FileNotFoundError`, a socket is
`PermissionError` and a name lookup `socket.gaierror`, and `subprocess` is `OSError`. So the
user's own error handling works as it would on a machine without those things, and a grant
needs nothing here. The guards below only fill the gaps WASI leaves:

- the process functions WASI lacks (`os.system`, `os.fork`, ...) raise `OSError` instead of
  being missing;
- a variable that is not set names, in a note of its `KeyError`, how a suite grants it;
- writing a file outside `/tmp` is refused with `OSError(EROFS)` whatever is granted: granted
  folders are read-only. Under `/tmp` WASI answers: a grader granted folders has a writable
  `/tmp` there, bounded by a quota (a write past it is `OSError(ENOSPC)`), and one granted none
  has no `/tmp` at all (`FileNotFoundError`);
- asyncio's new event loops are `aio.SandboxLoop`s, which need no socket pair to wake;
- a thread runs when the program waits for it, and a thread pool runs a function when it is
  submitted (`threads`);
- the CPU clocks (`time.process_time`, `os.times`) read the call's clock, as `time.monotonic`
  does: WASI has none of its own, and its C library's stand-in counts from the instant the
  interpreter's image was made, before the call's clock starts, so it gave negative times;
  `time.thread_time`, which Linux has, reads it too;
- a grader granted no folder has no `/tmp`, and `tempfile`'s `FileNotFoundError` says, in a
  note, how a suite gives it one;
- `signal.alarm` and `signal.setitimer` fire on the call's clock (`alarms`);
- `hashlib.pbkdf2_hmac`, which CPython takes from OpenSSL (absent here), is computed from the
  hashes the interpreter has (`_pbkdf2_hmac`).
"""

import errno
import hashlib
import os
import sys
import tempfile
import time

from gavel_runtime import aio, alarms, threads

# Process functions CPython leaves out on WASI. Code written for a system with processes calls
# them; on one without, they fail as an `OSError`.
_PROCESS_FUNCTIONS = (
    "system",
    "fork",
    "forkpty",
    "kill",
    "killpg",
    "wait",
    "waitpid",
    "execv",
    "execve",
    "posix_spawn",
    "posix_spawnp",
    "spawnv",
    "spawnve",
)


def _no_processes(name):
    def refused(*args, **kwargs):
        raise OSError(errno.ENOSYS, f"{sys.platform} does not support processes (os.{name})")

    refused.__name__ = name
    return refused


# Audit events that change the file system (an `open` is one when its flags say so).
_WRITE_EVENTS = frozenset(
    {
        "os.remove",
        "os.rename",
        "os.mkdir",
        "os.rmdir",
        "os.truncate",
        "os.chmod",
        "os.chown",
        "os.link",
        "os.symlink",
        "os.utime",
        "shutil.rmtree",
    }
)

_CHANGE_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_APPEND


def _writes(flags):
    # WASI's O_RDWR is O_RDONLY | O_WRONLY, with O_RDONLY not 0: test the bits, not equality.
    return bool(flags & _CHANGE_FLAGS) or flags & os.O_RDWR == os.O_RDWR


# Events whose second argument is a path they change too (a symlink's first is its target).
_TWO_PATHS = frozenset({"os.rename", "os.link"})

_SCRATCH = "/tmp"


def _in_scratch(path):
    # A descriptor was opened by a path this hook saw.
    if isinstance(path, int):
        return True
    try:
        path = os.path.abspath(os.fsdecode(path))
    except (TypeError, ValueError):
        return False
    return path == _SCRATCH or path.startswith(_SCRATCH + "/")


def _read_only(path):
    return OSError(errno.EROFS, os.strerror(errno.EROFS), path)


def _audit(event, args):
    if event == "open":
        if len(args) > 2 and isinstance(args[2], int) and _writes(args[2]) and not _in_scratch(args[0]):
            raise _read_only(args[0])
    elif event in _WRITE_EVENTS:
        changed = args[1:2] if event == "os.symlink" else args[:2] if event in _TWO_PATHS else args[:1]
        for path in changed or [None]:
            if path is None or not _in_scratch(path):
                raise _read_only(path)


class _Environ(type(os.environ)):
    """`os.environ` as it is, whose `KeyError` for a variable that is not set carries a note
    saying how a suite passes one in."""

    def __getitem__(self, key):
        try:
            return super().__getitem__(key)
        except KeyError as e:
            e.add_note(
                f"gavel's sandbox passes in only the environment variables the suite grants "
                f"(`allow: {{env: [{key}]}}`, or `allow: {{secrets: {{{key}: [HOST]}}}}` for a "
                f"key sent only to its hosts) that are set where gavel runs"
            )
            raise


_chdir = os.chdir

_default_tempdir = tempfile._get_default_tempdir


def _tempdir_or_why():
    try:
        return _default_tempdir()
    except FileNotFoundError as e:
        e.add_note(
            "gavel's sandbox gives a grader a writable /tmp of its own only where the suite "
            "grants it a folder (`allow: {files: [FOLDER]}`)"
        )
        raise


def _times():
    cpu = time.monotonic()
    return os.times_result((cpu, 0.0, 0.0, 0.0, cpu))


# The pads of HMAC (RFC 2104) applied to a key by `bytes.translate`.
_INNER_PAD = bytes(b ^ 0x36 for b in range(256))
_OUTER_PAD = bytes(b ^ 0x5C for b in range(256))


def _pbkdf2_hmac(hash_name, password, salt, iterations, dklen=None):
    """PBKDF2 with HMAC (RFC 8018, section 5.2), as `hashlib.pbkdf2_hmac` gives it."""
    password = bytes(memoryview(password))
    salt = bytes(memoryview(salt))
    if iterations < 1:
        raise ValueError("iteration value must be greater than 0.")
    if dklen is not None and dklen < 1:
        raise ValueError("key length must be greater than 0.")
    inner, outer = hashlib.new(hash_name), hashlib.new(hash_name)
    if len(password) > inner.block_size:
        password = hashlib.new(hash_name, password).digest()
    password = password.ljust(inner.block_size, b"\0")
    inner.update(password.translate(_INNER_PAD))
    outer.update(password.translate(_OUTER_PAD))

    def mac(message):
        keyed_inner, keyed_outer = inner.copy(), outer.copy()
        keyed_inner.update(message)
        keyed_outer.update(keyed_inner.digest())
        return keyed_outer.digest()

    size = outer.digest_size if dklen is None else dklen
    key = bytearray()
    block = 0
    while len(key) < size:
        block += 1
        u = mac(salt + block.to_bytes(4, "big"))
        folded = int.from_bytes(u, "big")
        for _ in range(iterations - 1):
            u = mac(u)
            folded ^= int.from_bytes(u, "big")
        key += folded.to_bytes(outer.digest_size, "big")
    return bytes(key[:size])


def _chdir_as_linux(path):
    # WASI's C library keeps the working folder as a text and refuses one that climbs above
    # every mounted folder: `..` at `/` stays at `/`, as Linux has it.
    if isinstance(path, (str, bytes, os.PathLike)):
        text = os.fsdecode(path)
        if text and ".." in text.split("/"):
            path = os.path.normpath(os.path.join(os.getcwd(), text))
    return _chdir(path)


_installed = False


def install():
    """Fills the gaps WASI leaves (see above); once per interpreter."""
    global _installed
    if _installed:
        return
    _installed = True
    # The same object, which the component fills with the host's variables on its first call.
    os.environ.__class__ = _Environ
    os.chdir = _chdir_as_linux
    os.times = _times
    tempfile._get_default_tempdir = _tempdir_or_why
    # The call's clock: it starts at 0 with each call and moves as the grader waits.
    time.process_time = time.thread_time = time.monotonic
    time.process_time_ns = time.thread_time_ns = time.monotonic_ns
    if not hasattr(hashlib, "pbkdf2_hmac"):
        hashlib.pbkdf2_hmac = _pbkdf2_hmac
    for name in _PROCESS_FUNCTIONS:
        if not hasattr(os, name):
            setattr(os, name, _no_processes(name))
    sys.addaudithook(_audit)
    aio.install()
    threads.install()
    alarms.install()
