"""What the user's code meets when it reaches outside the sandbox.

The host grants no files, environment, processes or sockets (HTTP goes to the host over
wasi:http: `gavel_runtime.http`, which sends only what the grader's grant allows). In the
sandbox, an answer that pretends otherwise (a file that "does not exist", an unset variable) would make a grader score
differently from its own tool without saying so; so when the user's code itself (directly or
through pathlib/os.path) reaches for one of them it gets `SandboxError`, which is not an
`OSError` and so is not swallowed by `except OSError` or `Path.exists()`, and the grade becomes
an error that says why. When the standard library probes on its own behalf (mimetypes looking
for its tables, linecache for a source file) it gets the ordinary `OSError` and degrades as it
would on a bare machine. The guards only narrow what the interpreter can do.
"""

import os
import sys


class SandboxError(RuntimeError):
    """An operation gavel's sandbox does not provide."""


class EnvironmentUnavailable(KeyError):
    """Reading a variable: the sandbox has no environment. A `KeyError` too, so code written to
    handle a missing variable keeps working."""

    def __str__(self):
        return self.args[0]


# The sources whose frames count as the user's (set by `install`).
_user_paths = set()

# Library code that only relays the user's request: a frame here is skipped when deciding
# whose request an access is.
_RELAYS = {"os.py", "genericpath.py", "posixpath.py", "shutil.py", "_pyio.py", "io.py", "codecs.py", "glob.py"}


def _relay(filename):
    if filename.startswith("<frozen ") and filename.endswith(">"):  # CPython's frozen modules
        filename = filename[len("<frozen ") : -1].replace(".", "/") + ".py"
    return filename.rsplit("/", 1)[-1] in _RELAYS or "/pathlib/" in filename or filename.endswith("pathlib.py")


def _from_user(depth=2):
    """Whether the nearest frame, past relaying library code, is in the user's sources."""
    try:
        frame = sys._getframe(depth)
    except ValueError:  # asked from the top of the stack, where no user code is
        return False
    while frame is not None and _relay(frame.f_code.co_filename):
        frame = frame.f_back
    return frame is not None and frame.f_code.co_filename in _user_paths


def _library_path(path):
    """The interpreter's own library directories (read when a standard module is imported)."""
    if not isinstance(path, str):
        return False
    roots = [p for p in sys.path if p.startswith("/")]
    return any(path == r or path.startswith(r.rstrip("/") + "/") for r in roots)


def _refuse(what, os_error):
    if _from_user(3):
        raise SandboxError(f"gavel's sandbox {what}")
    raise os_error


_PROCESSES = {"subprocess.Popen", "os.system", "os.exec", "os.posix_spawn", "os.spawn", "os.fork", "os.forkpty", "os.kill"}
_NETWORK = {"socket.__new__", "socket.connect", "socket.bind", "socket.getaddrinfo", "socket.gethostbyname"}
_FILES = {"os.listdir", "os.scandir", "os.remove", "os.rename", "os.mkdir", "os.rmdir", "os.chdir", "shutil.copyfile", "shutil.rmtree"}


def _audit(event, args):
    if event == "open":
        path = args[0] if args else None
        mode = args[1] if len(args) > 1 else "r"
        if isinstance(mode, str) and not any(c in mode for c in "wax+") and _library_path(path):
            return
        _refuse(f"has no files: cannot open {path!r}", PermissionError(13, "gavel's sandbox has no files", path))
    elif event in _FILES:
        if event in ("os.listdir", "os.scandir") and args and _library_path(args[0]):
            return
        path = args[0] if args else None
        _refuse(f"has no files ({event} {path!r})", PermissionError(13, "gavel's sandbox has no files", path))
    elif event in _PROCESSES:
        raise SandboxError(f"gavel's sandbox cannot start processes ({event})")
    elif event in _NETWORK:
        raise SandboxError(f"gavel's sandbox has no network ({event})")
    elif event == "ctypes.dlopen":
        raise SandboxError("gavel's sandbox cannot load native code")


def _guard_stat(real):
    def stat(path, *args, **kwargs):
        if isinstance(path, int) or _library_path(os.fspath(path)) or os.fspath(path) in _user_paths:
            return real(path, *args, **kwargs)
        _refuse(
            f"has no files: cannot look at {os.fspath(path)!r}",
            FileNotFoundError(2, "No such file or directory", os.fspath(path)),
        )

    return stat


class SandboxEnviron(dict):
    """`os.environ` in the sandbox: empty. Read by the user's code (a variable, or the whole
    mapping: `dict(os.environ)`, iteration, `len`), it raises `EnvironmentUnavailable`; read by
    the library on its own behalf, it is simply empty. Variables the code sets itself read back."""

    def _refuse(self, what):
        if _from_user(3):
            raise EnvironmentUnavailable(
                f"gavel's sandbox has no environment variables: {what} "
                "(put the value in the suite or the dataset row instead)"
            )

    def __getitem__(self, key):
        if dict.__contains__(self, key):
            return dict.__getitem__(self, key)
        self._refuse(f"{key!r} is not set")
        raise KeyError(key)

    def get(self, key, default=None):
        if dict.__contains__(self, key):
            return dict.__getitem__(self, key)
        self._refuse(f"{key!r} is not set")
        return default

    def __contains__(self, key):
        if dict.__contains__(self, key):
            return True
        self._refuse(f"{key!r} is not set")
        return False

    def __iter__(self):
        self._refuse("os.environ cannot be listed")
        return dict.__iter__(self)

    def keys(self):
        self._refuse("os.environ cannot be listed")
        return dict.keys(self)

    def items(self):
        self._refuse("os.environ cannot be listed")
        return dict.items(self)

    def values(self):
        self._refuse("os.environ cannot be listed")
        return dict.values(self)

    def __len__(self):
        self._refuse("os.environ cannot be listed")
        return dict.__len__(self)

    def __repr__(self):
        self._refuse("os.environ cannot be listed")
        return f"environ({dict.__repr__(self)})"

    def copy(self):
        self._refuse("os.environ cannot be listed")
        return dict(dict.items(self))


_installed = False


def install(user_paths=()):
    """Guards the interpreter; `user_paths` are the paths of the user's sources."""
    global _installed
    _user_paths.update(user_paths)
    if _installed:
        return
    _installed = True
    os.environ = SandboxEnviron()
    if hasattr(os, "environb"):
        os.environb = {}
    os.stat = _guard_stat(os.stat)
    os.lstat = _guard_stat(os.lstat)
    import subprocess

    def no_processes(*args, **kwargs):
        raise SandboxError("gavel's sandbox cannot start processes (subprocess)")

    # WASI has no processes; say so in the sandbox's words rather than as an errno.
    subprocess.Popen.__init__ = no_processes
    sys.addaudithook(_audit)
