"""Making the user's sources importable without files, and reporting why they do not load.

The sources arrive as data; a meta-path finder serves them by module name, compiled under the
path the suite uses, so tracebacks and load errors name the user's file and line. A source may
come with its code already compiled (by `compile_sources`, in an earlier instance): loading it
then skips the compiler, which costs many times what running a module's top level does.
"""

import importlib.abc
import importlib.util
import marshal
import sys
import traceback

SANDBOX_NOTE = (
    "(gavel's sandbox has the standard library and the .py files beside your grader, in its "
    "folder, when that is in the suite's folder; a grader file outside the suite's folder comes "
    "alone; pure-Python packages such as httpx come from `requirements:`, native ones such as numpy cannot load there)"
)

STDLIB_NOTE = (
    "(gavel's sandbox carries the standard modules graders commonly use, not this one: it needs "
    "native code, files or processes the sandbox does not have, or is seldom used in grading)"
)

# Modules the sandbox provides besides the standard library.
PROVIDED = {"letta_evals", "letta_client", "evaldeck", "anthropic", "openai"}


class LoadFailure(Exception):
    """The user's code could not be loaded: `path` and `line` when known, a CPython-like message."""

    def __init__(self, path, line, message):
        super().__init__(message)
        self.path = path
        self.line = line
        self.message = message


class SourceFinder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Serves `{module: (path, text, code)}` (`code`: the marshalled code object, or None); a
    dotted module's parents without an `__init__.py` are namespace packages, as they are on
    disk."""

    def __init__(self, sources):
        self.sources = dict(sources)
        self.packages = {name for name, (path, _, _) in self.sources.items() if _is_init(path)}
        self.namespaces = set()
        for name in self.sources:
            parts = name.split(".")
            for i in range(1, len(parts)):
                parent = ".".join(parts[:i])
                if parent not in self.sources:
                    self.namespaces.add(parent)
        self.paths = {path for path, _, _ in self.sources.values()}

    def find_spec(self, fullname, path=None, target=None):
        if fullname in self.sources:
            origin = self.sources[fullname][0]
            spec = importlib.util.spec_from_loader(
                fullname, self, origin=origin, is_package=fullname in self.packages
            )
            spec.has_location = True
            return spec
        if fullname in self.namespaces:
            spec = importlib.util.spec_from_loader(fullname, self, is_package=True)
            return spec
        return None

    def create_module(self, spec):
        return None

    def exec_module(self, module):
        name = module.__name__
        if name in self.namespaces:
            module.__path__ = []
            return
        path, text, code = self.sources[name]
        # Absolute, as CPython's is, and under `/`, where no granted folder is mounted: the
        # grader's own folder is not in the sandbox, so a file its code opens beside
        # `__file__` is not found, never one of the same name in the folder it starts in.
        module.__file__ = path if path.startswith("/") else "/" + path
        if name in self.packages:
            module.__path__ = []
        exec(compile_source(path, text) if code is None else marshal.loads(code[_PYC_HEADER:]), module.__dict__)

    def get_source(self, fullname):
        entry = self.sources.get(fullname)
        return entry[1] if entry else None


def compile_source(path, text):
    """The module's code object, as an import compiles it; raises `SyntaxError`."""
    return compile(text, path, "exec", dont_inherit=True)


# The flags word of a bytecode file whose source is never checked again (PEP 552): the host
# keeps each such file with its source, under one authentication tag.
_UNCHECKED_HASH = (1).to_bytes(4, "little")
# Magic, flags and source hash: what precedes the marshalled code in a bytecode file.
_PYC_HEADER = 16


def compile_sources(sources):
    """Each of `sources` ((module, path, text) triples) compiled, in order, as the bytes of a
    bytecode file (`__pycache__/*.pyc`, hash-based and unchecked) that `install` takes back and
    the import system reads; None for a source that does not compile (loading it says why)."""
    compiled = []
    for _, path, text in sources:
        try:
            code = compile_source(path, text)
        except (SyntaxError, ValueError):
            compiled.append(None)
            continue
        source_hash = importlib.util.source_hash(text.encode())
        compiled.append(importlib.util.MAGIC_NUMBER + _UNCHECKED_HASH + source_hash + marshal.dumps(code))
    return compiled


def syntax_failure(error):
    """A `SyntaxError` (or subclass) as a load failure at its place."""
    return LoadFailure(error.filename, error.lineno, f"{type(error).__name__}: {error.msg}")


def _is_init(path):
    return path.replace("\\", "/").rsplit("/", 1)[-1] == "__init__.py"


def install(sources):
    """Makes `sources` (an iterable of (module, path, text, code), `code` from `compile_sources`
    or None) importable, in place of any sources installed before (and the modules imported
    from them); returns the finder."""
    for old in [f for f in sys.meta_path if isinstance(f, SourceFinder)]:
        sys.meta_path.remove(old)
        for name in list(old.sources) + list(old.namespaces):
            sys.modules.pop(name, None)
    finder = SourceFinder({module: (path, text, code) for module, path, text, code in sources})
    sys.meta_path.insert(0, finder)
    return finder


def import_entries(finder, entries):
    """Imports each entry module, running its top level; raises `LoadFailure`."""
    import importlib

    for entry in entries:
        try:
            importlib.import_module(entry)
        except SyntaxError as e:
            raise syntax_failure(e) from None
        except BaseException as e:  # the user's top level may raise anything, SystemExit too
            path, line = user_location(finder, e.__traceback__)
            if path is None:
                path = finder.sources.get(entry, (None,))[0]
            raise LoadFailure(path, line, describe(e)) from None


def user_location(finder, tb):
    """The innermost frame of the traceback that is in the user's sources."""
    found = (None, None)
    for frame, line in traceback.walk_tb(tb):
        if frame.f_code.co_filename in finder.paths:
            found = (frame.f_code.co_filename, line)
    return found


def safe_text(value, failed, func=str):
    """`func(value)` (`str` or `repr`), or `failed` when that raises, as CPython's traceback
    writes what it cannot format (`<exception str() failed>`): the user's `__str__` may raise
    anything, and the call must still end in a message."""
    try:
        # A `__str__` may return an instance of a subclass of str, whose own methods would run
        # again when the text is formatted: its plain text is taken.
        return str.__str__(func(value))
    except BaseException:
        return failed


def exception_text(error):
    """`Type: message`, the message `<exception str() failed>` when the exception's `__str__`
    raises."""
    return f"{type(error).__name__}: {safe_text(error, '<exception str() failed>')}"


def describe(error):
    """`Type: message` as CPython prints it, plus why a missing package is missing."""
    text = exception_text(error)
    if isinstance(error, ModuleNotFoundError) and error.name:
        top = error.name.split(".")[0]
        if top not in sys.stdlib_module_names and top not in PROVIDED:
            text = f"{text} {SANDBOX_NOTE}"
        elif top in sys.stdlib_module_names:
            text = f"{text} {STDLIB_NOTE}"
    return text
