"""What the user's code meets when it reaches outside the sandbox: a Python exception that says
why, raised where the call is made, instead of a bare OS error.

The host grants no files, network, environment or processes; these guards turn each attempt
into an exception a user can read (and the host reports as an error grade). They only narrow
what the interpreter can do, so installing them twice or before the user's import is harmless.
"""

import os
import sys

_DENIED = {
    "subprocess.Popen": "cannot start processes",
    "os.system": "cannot start processes",
    "os.exec": "cannot start processes",
    "os.posix_spawn": "cannot start processes",
    "os.spawn": "cannot start processes",
    "os.fork": "cannot start processes",
    "os.forkpty": "cannot start processes",
    "os.kill": "cannot signal processes",
    "socket.__new__": "has no network",
    "socket.connect": "has no network",
    "socket.bind": "has no network",
    "socket.getaddrinfo": "has no network",
    "socket.gethostbyname": "has no network",
    "urllib.Request": "has no network",
    "os.listdir": "has no files",
    "os.scandir": "has no files",
    "os.remove": "has no files",
    "os.rename": "has no files",
    "os.mkdir": "has no files",
    "os.rmdir": "has no files",
    "os.chdir": "has no files",
    "shutil.copyfile": "has no files",
    "shutil.rmtree": "has no files",
    "ctypes.dlopen": "cannot load native code",
}


class SandboxError(PermissionError):
    """An operation gavel's sandbox does not provide."""


def _readable(path):
    """The interpreter's own library (read when a standard module is first imported)."""
    if not isinstance(path, str):
        return False
    prefixes = [p for p in sys.path if p and p.startswith("/")]
    return any(path == p or path.startswith(p.rstrip("/") + "/") for p in prefixes)


def _audit(event, args):
    if event == "open":
        path = args[0] if args else None
        mode = args[1] if len(args) > 1 else "r"
        if isinstance(mode, str) and not any(c in mode for c in "wax+") and _readable(path):
            return
        raise SandboxError(f"gavel's sandbox has no files: cannot open {path!r}")
    if event in ("os.listdir", "os.scandir") and args and _readable(args[0]):
        return
    reason = _DENIED.get(event)
    if reason is not None:
        raise SandboxError(f"gavel's sandbox {reason} ({event})")


class EnvironmentUnavailable(KeyError):
    """Reading a variable: the sandbox has no environment. A `KeyError`, so code that handles a
    missing variable keeps working."""

    def __str__(self):
        return self.args[0]


class SandboxEnviron(dict):
    """`os.environ` in the sandbox: empty; `get` gives the default, `[]` says why it fails.
    Variables the code sets itself read back."""

    def __getitem__(self, key):
        if dict.__contains__(self, key):
            return dict.__getitem__(self, key)
        raise EnvironmentUnavailable(
            f"gavel's sandbox has no environment variables: os.environ[{key!r}] is not set "
            "(put the value in the suite or the dataset row instead)"
        )

    def copy(self):
        return dict(self)


_installed = False


def install():
    global _installed
    if _installed:
        return
    _installed = True
    os.environ = SandboxEnviron()
    import subprocess

    def no_processes(*args, **kwargs):
        raise SandboxError("gavel's sandbox cannot start processes (subprocess)")

    # WASI has no processes; say so in the sandbox's words rather than as an errno.
    subprocess.Popen.__init__ = no_processes
    if hasattr(os, "environb"):
        os.environb = {}
    sys.addaudithook(_audit)
