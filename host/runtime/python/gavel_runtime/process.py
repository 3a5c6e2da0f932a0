"""Processes in the sandbox: the Python interpreter, started afresh; nothing else.

A grader that runs a file with `python3` (`subprocess.run`, `Popen(...).communicate()`,
`asyncio.create_subprocess_exec`) gets a new interpreter instance from the host: a fresh
sandbox of its own, with the caller's folders read-only, a `/tmp` of its own, no network, no
environment but what `env=` passes, its output captured and bounded, and the caller's own fuel
and deadline. It never runs in the caller's instance: the file is the agent's, and code run
there could rewrite the grader's globals and forge its grade. Any other program fails as it
does on a system without processes.

A process runs to its end when the caller waits on it (`communicate`, `wait`, `poll`, reading
its output, leaving its `with` block): the sandbox has one thread. `main` is what the new
instance runs.
"""

import contextvars
import errno
import io
import os
import re
import runpy
import signal
import subprocess
import sys
import traceback
import types

# The names under which a command line reaches the interpreter: python, python3, python3.14,
# as a bare name or a path to one.
_INTERPRETER = re.compile(r"python(?:3(?:\.\d+)?)?")

# What the host provides: `run(argv, stdin, cwd, env, merge_stderr, timeout_ms)` returns
# (exit_code, stdout, stderr) or raises `TimedOut`/`OSError`; `working_folder()` the folder a
# call starts in, or None. Unset outside gavel's interpreter component.
_host = None


class TimedOut(Exception):
    """The process ran past its `timeout=`; `exit_code`, `stdout` and `stderr` until then."""

    def __init__(self, exit_code, stdout, stderr):
        super().__init__("timed out")
        self.exit_code = exit_code
        self.stdout = stdout
        self.stderr = stderr


def is_interpreter(program):
    """Whether `program` names the Python interpreter."""
    program = os.fsdecode(program)
    if program == sys.executable:
        return True
    return bool(_INTERPRETER.fullmatch(program.rsplit("/", 1)[-1]))


def enter_working_folder():
    """Makes the call's folder (see README, "files") the working folder."""
    if _host is None:
        return
    folder = _host.working_folder()
    if folder is not None:
        os.chdir(folder)


# -- the caller's side -----------------------------------------------------------------------

_original_popen = subprocess.Popen


# Characters a shell gives a meaning of its own outside quotes (operators, expansions, globs,
# comments), and inside double quotes.
_SHELL_SYNTAX = frozenset("|&;<>()$`\\*?[]{}~#!\n")
_EXPANDED_IN_DOUBLE_QUOTES = frozenset("$`\\!")


def _plain_words(line):
    """The words of a shell command line that is plain words (quoted or not, spaces between),
    as `shlex.split` gives them; None when the shell would do more with it (an operator, a
    redirection, an expansion, a glob, a comment, an escape)."""
    words, word, quote, started = [], [], None, False
    for c in line:
        if quote == "'":
            if c == "'":
                quote = None
            else:
                word.append(c)
        elif quote == '"':
            if c == '"':
                quote = None
            elif c in _EXPANDED_IN_DOUBLE_QUOTES:
                return None
            else:
                word.append(c)
        elif c in "'\"":
            quote, started = c, True
        elif c in " \t":
            if started:
                words.append("".join(word))
            word, started = [], False
        elif c in _SHELL_SYNTAX:
            return None
        else:
            word.append(c)
            started = True
    if quote is not None:
        return None
    if started:
        words.append("".join(word))
    return words


def _command(args, executable, shell):
    """The command line as a list of texts when it starts the interpreter, else None. With
    `shell`, a command line of plain words (see `_plain_words`) that names the interpreter is
    what the shell would have run."""
    if shell:
        if not isinstance(args, (str, bytes, os.PathLike)):
            args = args[0] if len(args) == 1 else None
        if args is None or executable is not None:
            return None
        argv = _plain_words(os.fsdecode(args))
        return argv if argv and is_interpreter(argv[0]) else None
    if isinstance(args, (str, bytes, os.PathLike)):
        argv = [os.fsdecode(args)]
    else:
        argv = [os.fsdecode(a) for a in args]
    if not argv:
        return None
    program = argv[0] if executable is None else os.fsdecode(executable)
    return argv if is_interpreter(program) else None


def _input_bytes(source):
    """What a `stdin=` file holds; nothing for the parent's own (empty) stdin or DEVNULL."""
    if source in (None, subprocess.DEVNULL, subprocess.PIPE):
        return b""
    if isinstance(source, int):
        with open(source, "rb", closefd=False) as f:
            return f.read()
    data = source.read()
    return data.encode() if isinstance(data, str) else data


def _deliver(data, target):
    """Writes output that is not captured where `stdout=`/`stderr=` sends it."""
    if target is subprocess.DEVNULL or not data:
        return
    if target is None:
        sys.stdout.flush()
        sys.stdout.buffer.write(data)
        return
    if isinstance(target, int):
        os.write(target, data)
        return
    try:
        target.write(data)
    except TypeError:
        target.write(data.decode())


class _Pipe:
    """A captured stream of a process, read once it ended."""

    def __init__(self, process, which):
        self._process = process
        self._which = which
        self._file = None
        self.closed = False

    def _opened(self):
        if self._file is None:
            self._process._run(None)
            self._file = self._process._stream(self._which)
        return self._file

    def read(self, size=-1):
        return self._opened().read(size)

    def readline(self, size=-1):
        return self._opened().readline(size)

    def readlines(self, hint=-1):
        return self._opened().readlines(hint)

    def __iter__(self):
        return iter(self._opened())

    def close(self):
        self.closed = True

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


class _Stdin(io.BytesIO):
    """A process's `stdin=PIPE`: what is written before it runs is its input."""

    def __init__(self, text, encoding, errors):
        super().__init__()
        self._text = text
        self._encoding = encoding
        self._errors = errors
        self.taken = b""

    def write(self, data):
        if self._text and isinstance(data, str):
            data = data.encode(self._encoding, self._errors)
        return super().write(data)

    def close(self):
        if not self.closed:
            self.taken = self.getvalue()
        super().close()


class Popen:
    """`subprocess.Popen` for a command line that starts the interpreter (see the module's
    documentation); `subprocess`'s own class for any other, which fails as it does on a system
    without processes."""

    _pids = iter(range(1000, 1 << 30))

    def __new__(cls, args, *rest, **kwargs):
        named = dict(zip(("bufsize", "executable", "stdin", "stdout", "stderr"), rest))
        named.update(kwargs)
        if _host is None or _command(args, named.get("executable"), named.get("shell", False)) is None:
            return _original_popen(args, *rest, **kwargs)
        return super().__new__(cls)

    def __init__(
        self,
        args,
        bufsize=-1,
        executable=None,
        stdin=None,
        stdout=None,
        stderr=None,
        preexec_fn=None,
        close_fds=True,
        shell=False,
        cwd=None,
        env=None,
        universal_newlines=None,
        startupinfo=None,
        creationflags=0,
        restore_signals=True,
        start_new_session=False,
        pass_fds=(),
        *,
        encoding=None,
        errors=None,
        text=None,
        **ignored,
    ):
        self.args = args
        self._argv = _command(args, executable, shell)
        self.pid = next(Popen._pids)
        self.returncode = None
        self.text_mode = bool(text or universal_newlines or encoding or errors)
        self.encoding = encoding or "utf-8"
        self.errors = errors or "strict"
        if cwd is None:
            self._cwd = os.getcwd()
        else:
            self._cwd = os.path.normpath(os.path.join(os.getcwd(), os.fsdecode(cwd)))
            if not os.path.isdir(self._cwd):
                raise FileNotFoundError(errno.ENOENT, os.strerror(errno.ENOENT), os.fsdecode(cwd))
        self._env = [] if env is None else [(os.fsdecode(k), os.fsdecode(v)) for k, v in env.items()]
        self._input = _input_bytes(stdin)
        self._targets = (stdout, stderr)
        self.stdin = _Stdin(self.text_mode, self.encoding, self.errors) if stdin == subprocess.PIPE else None
        self.stdout = _Pipe(self, 0) if stdout == subprocess.PIPE else None
        self.stderr = _Pipe(self, 1) if stderr == subprocess.PIPE else None
        self._output = None

    def _run(self, timeout):
        """Runs the process to its end, once; raises `subprocess.TimeoutExpired` past `timeout`."""
        if self._output is not None:
            return
        stdin = self._input
        if self.stdin is not None:
            stdin += self.stdin.taken if self.stdin.closed else self.stdin.getvalue()
        merge = self._targets[1] == subprocess.STDOUT
        timeout_ms = None if timeout is None else max(0, int(timeout * 1000))
        try:
            code, out, err = _host.run(self._argv, stdin, self._cwd, self._env, merge, timeout_ms)
        except TimedOut as t:
            self._finish(-signal.SIGKILL, t.stdout, t.stderr)
            raise subprocess.TimeoutExpired(self.args, timeout, self._captured(0), self._captured(1)) from None
        self._finish(code, out, err)

    def _finish(self, code, out, err):
        self.returncode = code
        self._output = (out, err)
        for data, target in zip(self._output, self._targets):
            if target not in (subprocess.PIPE, subprocess.STDOUT):
                _deliver(data, target)

    def _captured(self, which):
        if self._targets[which] != subprocess.PIPE:
            return None
        data = self._output[which]
        if not self.text_mode:
            return data
        return data.decode(self.encoding, self.errors).replace("\r\n", "\n").replace("\r", "\n")

    def _stream(self, which):
        data = self._captured(which)
        return io.StringIO(data) if self.text_mode else io.BytesIO(data)

    def communicate(self, input=None, timeout=None):
        if input is not None and self.stdin is not None and not self.stdin.closed:
            self.stdin.write(input)
        self._run(timeout)
        return tuple(
            None if pipe is None else pipe.read() if pipe._file is not None else self._captured(i)
            for i, pipe in enumerate((self.stdout, self.stderr))
        )

    def wait(self, timeout=None):
        self._run(timeout)
        return self.returncode

    def poll(self):
        self._run(None)
        return self.returncode

    def send_signal(self, sig):
        # A process not yet run is stopped before it starts; one that ran has ended.
        if self._output is None:
            self._finish(-sig, b"", b"")

    def terminate(self):
        self.send_signal(signal.SIGTERM)

    def kill(self):
        self.send_signal(signal.SIGKILL)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.wait()

    def __repr__(self):
        return f"<Popen: returncode: {self.returncode} args: {self.args!r}>"


# -- asyncio ---------------------------------------------------------------------------------

# The timeout of the innermost `asyncio.wait_for` being awaited without an event loop.
_wait_for_timeout = contextvars.ContextVar("gavel_wait_for_timeout", default=None)


class _Reader:
    """A process's captured stream, as asyncio's `StreamReader` is read."""

    def __init__(self, process, which):
        self._pipe = _Pipe(process, which)

    async def read(self, n=-1):
        return self._pipe.read(n)

    async def readline(self):
        return self._pipe.readline()


class _AsyncProcess:
    """`asyncio.subprocess.Process` over `Popen`."""

    def __init__(self, popen):
        self._popen = popen
        self.pid = popen.pid
        self.stdin = popen.stdin
        self.stdout = None if popen.stdout is None else _Reader(popen, 0)
        self.stderr = None if popen.stderr is None else _Reader(popen, 1)

    @property
    def returncode(self):
        return self._popen.returncode

    def _run(self):
        try:
            self._popen._run(_wait_for_timeout.get())
        except subprocess.TimeoutExpired:
            raise TimeoutError from None

    async def communicate(self, input=None):
        if input is not None and self._popen.stdin is not None:
            self._popen.stdin.write(input)
        self._run()
        return self._popen.communicate()

    async def wait(self):
        self._run()
        return self._popen.returncode

    def send_signal(self, sig):
        self._popen.send_signal(sig)

    def terminate(self):
        self._popen.terminate()

    def kill(self):
        self._popen.kill()


def _install_asyncio():
    import asyncio
    import asyncio.subprocess
    import asyncio.tasks

    original_exec = asyncio.subprocess.create_subprocess_exec
    original_shell = asyncio.subprocess.create_subprocess_shell
    original_wait_for = asyncio.tasks.wait_for

    async def create_subprocess_exec(program, *args, stdin=None, stdout=None, stderr=None, limit=None, **kwds):
        if _command([program, *args], None, False) is None:
            return await original_exec(program, *args, stdin=stdin, stdout=stdout, stderr=stderr, **kwds)
        return _AsyncProcess(Popen([program, *args], stdin=stdin, stdout=stdout, stderr=stderr, **kwds))

    async def wait_for(fut, timeout):
        # The timeout bounds the processes the awaited code runs, which take time without
        # yielding to an event loop (a process blocks the sandbox's one thread until it ends);
        # in a loop it bounds its timers too, as asyncio's own does.
        token = _wait_for_timeout.set(timeout)
        try:
            if asyncio.events._get_running_loop() is not None:
                return await original_wait_for(fut, timeout)
            return await fut
        finally:
            _wait_for_timeout.reset(token)

    async def create_subprocess_shell(cmd, stdin=None, stdout=None, stderr=None, limit=None, **kwds):
        if _command(cmd, None, True) is None:
            return await original_shell(cmd, stdin=stdin, stdout=stdout, stderr=stderr, **kwds)
        return _AsyncProcess(Popen(cmd, stdin=stdin, stdout=stdout, stderr=stderr, shell=True, **kwds))

    asyncio.create_subprocess_exec = asyncio.subprocess.create_subprocess_exec = create_subprocess_exec
    asyncio.create_subprocess_shell = asyncio.subprocess.create_subprocess_shell = create_subprocess_shell
    asyncio.wait_for = asyncio.tasks.wait_for = wait_for


def install(host):
    """Starts processes through `host` (see `_host`); once per interpreter."""
    global _host
    if _host is not None:
        return
    _host = host
    subprocess.Popen = Popen
    _install_asyncio()


# -- the process's side ----------------------------------------------------------------------

# Options that change nothing here: unbuffered output, no bytecode written, isolation from the
# environment and the user's site folder (there is neither), warnings as default.
_IGNORED_OPTIONS = frozenset("uBEIsSqOd")


def _usage(program, message):
    sys.stderr.write(
        f"{message}\nusage: {program} [option] ... [-c cmd | -m mod | file | -] [arg] ...\n"
        "Try `python -h' for more information.\n"
    )
    return 2


def main(argv, cwd):
    """Runs a command line of the interpreter (`python3 [options] FILE|-c CODE|-m MODULE
    [ARGS]`) as CPython does, in `cwd`; returns its exit code."""
    from gavel_runtime import sandbox, stdlib

    sandbox.install()
    # Without a folder granted, the process starts at `/`, where it already is.
    if cwd != os.getcwd():
        os.chdir(cwd)
    # `sys.executable` is '' in the sandbox; CPython names itself.
    program = argv[0] if argv and argv[0] else "python3"
    rest = list(argv[1:])
    code = path = named = None
    while rest and rest[0].startswith("-") and rest[0] != "-":
        option = rest.pop(0)
        if option == "--":
            break
        if option in ("-V", "--version"):
            # What CPython prints, to stdout, and ends at.
            print(f"Python {sys.version.split()[0]}")
            return 0
        if option[:2] in ("-c", "-m"):
            value = option[2:] or (rest.pop(0) if rest else None)
            if value is None:
                return _usage(program, f"Argument expected for the {option[:2]} option")
            if option[:2] == "-c":
                code = value
            else:
                named = value
            break
        if not set(option[1:]) <= _IGNORED_OPTIONS:
            return _usage(program, f"Unknown option: {option}")
    module = types.ModuleType("__main__")
    if named is not None:
        # As `runpy` runs `-m`: the working folder first on the path, the module found there
        # or on the path (a standard one's code kept from the build: no files hold it here),
        # its file as argv[0].
        sys.path.insert(0, os.getcwd())
        try:
            spec, text = stdlib.RUNNABLE.get(named) or runpy._get_module_details(named, runpy._Error)[1:]
        except runpy._Error as e:
            sys.stderr.write(f"{program}: {e}\n")
            return 1
        sys.argv = [spec.origin, *rest]
        path = spec.origin
        module.__spec__, module.__loader__ = spec, spec.loader
        module.__package__ = spec.parent
    elif code is not None:
        sys.argv = ["-c", *rest]
        name = "<string>"
        text = code
    elif rest and rest[0] != "-":
        path = rest[0]
        sys.argv = rest
        name = path
        try:
            with open(path, "rb") as f:
                text = f.read()
        except OSError as e:
            full = os.path.join(cwd, path)
            sys.stderr.write(f"{program}: can't open file {full!r}: [Errno {e.errno}] {e.strerror}\n")
            if _host is not None and os.path.normpath(full).startswith("/tmp/"):
                sys.stderr.write(
                    "(in gavel's sandbox a process has a /tmp of its own, not the grader's: "
                    "pass a script the grader wrote with -c)\n"
                )
            return 2
        sys.path.insert(0, os.path.dirname(os.path.abspath(path)))
    else:
        sys.argv = [""]
        name = "<stdin>"
        text = sys.stdin.read()
    module.__file__ = path
    sys.modules["__main__"] = module
    try:
        exec(text if named is not None else compile(text, name, "exec"), module.__dict__)
        status = 0
    except SystemExit as e:
        status = _exit_status(e.code)
    except BaseException as e:
        # The traceback from the program's own frames on, as CPython prints it.
        traceback.print_exception(type(e), e, e.__traceback__.tb_next)
        status = 1
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except Exception:
            pass
    return status


def _exit_status(code):
    """The exit status of `SystemExit(code)`, as CPython's process ends with it."""
    if code is None:
        return 0
    if isinstance(code, int):
        return code & 0xFF
    sys.stderr.write(f"{code}\n")
    return 1
