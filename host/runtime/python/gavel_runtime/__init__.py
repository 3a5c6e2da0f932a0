"""The interpreter's logic, free of the WebAssembly bindings so that CPython can test it.

A call is `load(sources, entries)` then one of `check_config`, `grade`, `extract`, `reward`,
each naming the user's function as `<form>:<module>:<attribute>` (an empty module: a name a
decorator registered). Results are plain dicts; a user-visible failure raises `CallError`
with the text the host reports.
"""

import inspect
import json
import math
import os
import sys

from evaldeck.graders import CustomGrader
from evaldeck.results import GradeResult as EvaldeckGrade
from letta_evals.models import GradeResult as LettaGrade

from gavel_runtime import aio, alarms, convert, loader, process, sandbox, threads
from gavel_runtime.convert import Run
from gavel_runtime.loader import LoadFailure

__all__ = ["CallError", "LoadFailure", "Run", "Runtime"]

# The methods of `CustomGrader` a plain function's call runs, as the stand-in defines them.
_CUSTOM_INIT = CustomGrader.__init__
_CUSTOM_GRADE = CustomGrader.grade
_CUSTOM_GET_FUNC = CustomGrader._get_func


def _own_custom_grader():
    """Whether none of `_CUSTOM_*` was replaced: one grader of a function may then serve every
    call (`Runtime._custom_grader`)."""
    return (
        CustomGrader.__init__ is _CUSTOM_INIT
        and CustomGrader.grade is _CUSTOM_GRADE
        and CustomGrader._get_func is _CUSTOM_GET_FUNC
    )

# The forms whose builders read the run's recording, and the format each reads.
READS_RECORDING = {"evaldeck-function": "evaldeck", "evaldeck-class": "evaldeck", "letta-extractor": "letta"}

# The form that reads nothing of the run (a letta `@grader` reads the row and the submission):
# its calls may be given None for it.
READS_NO_RUN = "letta-grader"

# A grade's values, in the order of `gavel:grader`'s `grade` record (`Runtime.outcome`).
GRADE_FIELDS = ("score", "status", "rationale", "metadata", "expected", "actual")

FORMS = (
    "letta-grader",
    "letta-extractor",
    "letta-reward",
    "evaldeck-function",
    "evaldeck-class",
    "openai",
)


# Where the host mounts, read-only, the packages of the grader's `requirements:` (the folder of
# `PACKAGES_MOUNT` in host/src/grade/pack/engine.rs); graders without requirements have none.
PACKAGES = "/gavel/packages"


def mount_packages():
    """Makes the mounted packages importable from their files, when the host mounted them."""
    if PACKAGES in sys.path:
        return
    # On `sys.path`, the folder is the interpreter's library as far as the sandbox's guards go.
    sys.path.append(PACKAGES)
    try:
        os.stat(PACKAGES)
    except OSError:
        sys.path.remove(PACKAGES)
        return
    # The folder is read-only: no bytecode is written beside its sources.
    sys.dont_write_bytecode = True


class CallError(Exception):
    """The call failed; the message is what the host shows (`guest returned error: ...`)."""


def run_coroutine(value):
    """The result of `value`, awaited when it is awaitable: run in an event loop of its own
    (`aio.run`), as the peers await an async grader in theirs."""
    if not inspect.isawaitable(value):
        return value
    return aio.run(value)


def _user_error(error, finder):
    """`Type: message`, with the user's file and line when the error arose in their code. Each
    text the user's code makes (the message, the cause's, a note) is `loader.safe_text`'s: one
    whose `__str__` raises is shown as CPython's traceback shows it."""
    text = loader.exception_text(error)
    if isinstance(error.__cause__, OSError) and not isinstance(error, OSError):
        # A library's own error for a connection that failed (an API client's connection
        # error): the refusal it wraps is the reason to show.
        text += f" (caused by {loader.exception_text(error.__cause__)})"
    path, line = loader.user_location(finder, error.__traceback__) if finder else (None, None)
    if path:
        text = f"{text} (at {path}:{line})"
    for note in _notes(error):
        text = f"{text}; {note}"
    return text


def _notes(error):
    """The texts of `error`'s notes (`add_note`), as CPython's traceback writes them: each
    note's `str`, or the `repr` of a `__notes__` that is no list or tuple."""
    notes = getattr(error, "__notes__", ())
    if isinstance(notes, (list, tuple)):
        return [loader.safe_text(note, "<note str() failed>") for note in notes]
    return [loader.safe_text(notes, "<__notes__ repr() failed>", repr)]


def _score(value):
    """A grade's score as the plain float the host receives: `value`, an int or a float (or an
    instance of a subclass of one, bool included), read without the subclass's methods, which
    could give another number than the one it holds. Anything else, and an int no float can
    hold, is the grade's error, in the host's words for a score it refuses."""
    kind = type(value)
    if issubclass(kind, float):
        return float.__float__(value)
    if not issubclass(kind, int):
        raise CallError(f"invalid score: {kind.__name__} {_repr(value)} is not a number")
    number = int.__int__(value)
    try:
        return float(number)
    except OverflowError:
        raise CallError(
            f"invalid score: an int of {number.bit_length()} bits, too large for a float, is out of range [0, 1]"
        ) from None


def _repr(value):
    """`repr(value)` of the user's value, or a placeholder when its `__repr__` raises."""
    return loader.safe_text(value, "<object repr() failed>", repr)


def _text(value):
    """A grade's rationale as the plain str the host receives: empty for None, a str subclass's
    text read without its methods. Anything else is the grade's error."""
    if value is None:
        return ""
    if issubclass(type(value), str):
        return str.__str__(value)
    raise CallError(f"invalid rationale: {type(value).__name__} {_repr(value)} is not a str")


def _built(what, build, *args):
    """What the user's code receives, built as its tool builds it; the tool would have refused
    input it cannot build, and so does this, saying what was wrong."""
    try:
        return build(*args)
    except (KeyError, ValueError, TypeError) as e:
        raise _build_error(what, e) from None


def _build_error(what, error):
    """The `CallError` of `error`, raised building `what` (`_built`)."""
    detail = f"missing key {error}" if isinstance(error, KeyError) else str(error)
    return CallError(f"cannot build {what}: {detail}")


class Runtime:
    def __init__(self, sandboxed=True):
        self.sandboxed = sandboxed
        self.finder = None
        self.entries = []
        self._loaded = None
        # Each name resolved in the program loaded, by name (`_resolve`).
        self._resolved = {}
        # Each evaldeck function's grader, by the function's id (`_custom_grader`).
        self._graders = {}

    # -- load ----------------------------------------------------------------------------

    def compile(self, sources):
        """`sources` ((module, path, text) triples) compiled for `load`, each as a bytecode
        file's bytes, or None where one does not compile."""
        return loader.compile_sources(sources)

    def load(self, sources, entries):
        """`sources`: (module, path, text, code) with `code` from `compile` or None. Raises
        `LoadFailure`.

        Loading what is already loaded does nothing: an instance pre-initialised with a suite's
        sources (a snapshot taken after `load`) pays for compiling and importing them once."""
        from letta_evals.decorators import EXTRACTOR_REGISTRY, GRADER_REGISTRY

        sources = list(sources)
        if self.sandboxed:
            process.enter_working_folder()
            # WASI passes a call no arguments; CPython's `sys.argv` always has its first, which
            # argparse names the program by: empty, as in an interpreter embedded without any.
            if not sys.argv:
                sys.argv.append("")
        if self.finder is not None and self._loaded == (sources, list(entries)):
            return
        self._loaded = (sources, list(entries))
        self._resolved = {}
        self._graders = {}
        if self.sandboxed:
            sandbox.install()
        self.finder = loader.install(sources)
        # Names registered by sources loaded before these are gone with their modules.
        for registry in (GRADER_REGISTRY, EXTRACTOR_REGISTRY):
            for key in [k for k, f in registry.items() if f.__module__ not in sys.modules]:
                del registry[key]
        self.entries = list(entries)
        mount_packages()
        loader.import_entries(self.finder, self.entries)

    # -- resolving names -----------------------------------------------------------------

    def _resolve(self, name):
        """(form, function, module name or None) of `name`, `<form>:<module>:<attribute>`.

        A name is resolved once in the program loaded, as letta-evals and evaldeck take the
        function once when they load the suite: every call of a warm instance takes the function
        its first call took (the one a fresh instance's only call takes), even if code run since
        rebound the module's attribute or the registry's name. Only successes are kept: a name
        that does not resolve raises on every call, as it did on the first."""
        if threads.waiting:
            # Threads an earlier call started and left waiting do not run in this one.
            threads.forget_waiting()
        if alarms.due is not None:
            # Nor does a timer it left set: this call's clock starts again at 0.
            alarms.cancel()
        resolved = self._resolved.get(name)
        if resolved is None:
            resolved = self._resolved[name] = self._resolve_anew(name)
        return resolved

    def _resolve_anew(self, name):
        form, _, rest = name.partition(":")
        module_name, sep, attribute = rest.partition(":")
        if form not in FORMS or not sep or not attribute:
            raise CallError(
                f"unknown function name {name!r}: expected <form>:<module>:<attribute> with form "
                f"one of {', '.join(FORMS)}"
            )
        if not module_name:
            return form, self._registered(form, attribute), None
        module = sys.modules.get(module_name)
        if module is None:
            import importlib

            try:
                module = importlib.import_module(module_name)
            except Exception as e:
                raise CallError(loader.describe(e)) from None
        if not hasattr(module, attribute):
            available = [n for n in dir(module) if not n.startswith("_")]
            raise CallError(
                f"{self._path(module_name)}: module '{module_name}' has no attribute '{attribute}'. "
                f"Available: {', '.join(available[:10])}"
            )
        return form, getattr(module, attribute), module_name

    def _registered(self, form, attribute):
        if form == "letta-grader":
            from letta_evals.decorators import GRADER_REGISTRY as registry
        elif form == "letta-extractor":
            from letta_evals.decorators import EXTRACTOR_REGISTRY as registry
        else:
            registry = {}
        if attribute in registry:
            return registry[attribute]
        if form == "letta-reward":
            for entry in self.entries:
                candidate = getattr(sys.modules.get(entry), attribute, None)
                if getattr(candidate, "_is_reward_composer", False):
                    return candidate
        if form == "letta-extractor":
            raise CallError(f"Unknown extractor: {attribute}")
        if form == "letta-grader":
            raise CallError(f"Grader function '{attribute}' not found in registry")
        raise CallError(f"Reward composer '{attribute}' is not a @reward_composer in {', '.join(self.entries)}")

    def _path(self, module_name):
        entry = self.finder.sources.get(module_name) if self.finder else None
        return entry[0] if entry else module_name

    def _location(self, func):
        code = getattr(inspect.unwrap(func), "__code__", None)
        if code is None or not self.finder or code.co_filename not in self.finder.paths:
            return ""
        return f"{code.co_filename}:{code.co_firstlineno}: "

    # -- check-config --------------------------------------------------------------------

    def _spec(self, name):
        """The function as letta-evals' suite names it: `file.py:function`."""
        module_name, _, attribute = name.split(":", 1)[1].partition(":")
        return f"{self._path(module_name)}:{attribute}" if module_name else attribute

    def check_config(self, name, config):
        form, func, module_name = self._resolve(name)
        where = self._location(func)
        if form == "letta-grader":
            # A name in the registry was put there by @grader, which marks its wrapper only.
            if module_name is not None and not (callable(func) and hasattr(func, "_is_grader")):
                raise CallError(
                    f"{where}Loaded object {self._spec(name)} is not a valid @grader decorated function. "
                    "Please use the @grader decorator."
                )
        elif form == "letta-extractor":
            if not (callable(func) and hasattr(func, "_is_extractor")):
                raise CallError(
                    f"{where}Loaded object {self._spec(name)} is not a valid @extractor decorated function. "
                    "Please use the @extractor decorator."
                )
        elif form == "letta-reward":
            if not getattr(func, "_is_reward_composer", False):
                raise CallError(f"{where}Reward composer must be decorated with @reward_composer: {self._spec(name)}")
        elif form == "evaldeck-function":
            if not callable(func):
                raise CallError(f"{where}{name.rsplit(':', 1)[1]} is not callable")
        elif form == "evaldeck-class":
            self._grader_instance(func, config)
        elif form == "openai":
            if not callable(func):
                raise CallError(f"{where}grade is not a function")
            try:
                params = list(inspect.signature(func).parameters.values())
            except (TypeError, ValueError):
                params = []
            positional = [p for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
            if len(positional) != 2 and not any(p.kind == p.VAR_POSITIONAL for p in params):
                raise CallError(f"{where}grade must take two parameters (sample, item), it takes {len(positional)}")

    def _grader_instance(self, cls, config):
        from evaldeck.graders import BaseGrader

        where = self._location(getattr(cls, "__init__", cls))
        if not (isinstance(cls, type) and issubclass(cls, BaseGrader)):
            raise CallError(f"{where}{getattr(cls, '__name__', cls)!r} is not a subclass of evaldeck.graders.BaseGrader")
        params = json.loads(config) if config else {}
        if not isinstance(params, dict):
            raise CallError("params must be a mapping of the grader's keyword arguments")
        try:
            return cls(**params)
        except BaseException as e:  # SystemExit too: it ends the call, not the instance
            raise CallError(f"{where}{cls.__name__}(**params) failed: {_user_error(e, self.finder)}") from None

    # -- grade / extract -----------------------------------------------------------------

    def row(self, name, text, recorded, recorded_format=None, digest=None):
        """The row of a call of `name`, from its JSON text, with `recorded` the run's recording
        (or None) in `recorded_format`; and the recording parsed with the row, or None.

        The host sends the recording's text when it came from a run record, and an empty text
        when it is the row's own `trajectory` member, sent once, with the row (host
        `grade/pack/wit.rs`, `crossing`): the row is then parsed once, the member taken out of
        it as the recording for the forms that read it in its format. OpenAI's graders receive
        the row whole, as their item. The other forms' builders read the run from its recording
        or its events and the row only for its other members.

        `digest`, when given, is the host's word that the row's own `trajectory` member is an
        evaldeck recording of the usual form, with where each value starts (host
        `grade/pack/digest.rs`): a form that reads it is given the row's other members and the
        recording located, not parsed, each value parsed on first read."""
        form = name.partition(":")[0]
        if recorded != "" or form == "openai":
            return convert.row_whole(text), None
        reads = READS_RECORDING.get(form) == recorded_format
        if digest is not None and reads and recorded_format == "evaldeck":
            vouched = convert.row_and_vouched(text, digest)
            if vouched is not None:
                return vouched
        row, parsed = convert.row_and_recording(text)
        return row, parsed if reads else None

    def grade(self, name, row, sample_id, run, submission, config):
        """A grade dict: score, status (None or pass/fail/error/skip), rationale, metadata,
        expected, actual (JSON texts or None)."""
        return dict(zip(GRADE_FIELDS, self.outcome(name, row, sample_id, run, submission, config)))

    def outcome(self, name, row, sample_id, run, submission, config):
        """`grade`'s values as a tuple, in the order of `GRADE_FIELDS`: what the interpreter
        hands back (a tuple costs less to make and to read than the dict)."""
        form, func, _ = self._resolve(name)
        if form == "letta-grader":
            return self._letta_grade(func, row, sample_id, submission)
        if form == "evaldeck-function":
            return self._evaldeck_grade(func, None, row, sample_id, run, config)
        if form == "evaldeck-class":
            return self._evaldeck_grade(None, func, row, sample_id, run, config)
        if form == "openai":
            return self._openai_grade(func, row, run)
        raise CallError(f"{name!r} is not a grader")

    def _letta_grade(self, func, row, sample_id, submission):
        # `_built`, inline: every call of the form makes its sample.
        try:
            sample = convert.letta_sample(row, sample_id)
        except (KeyError, ValueError, TypeError) as e:
            raise _build_error("the dataset row as a letta-evals Sample", e) from None
        try:
            result = func(sample, submission)
            if type(result) is not LettaGrade:  # the usual result, which is no awaitable
                result = run_coroutine(result)
        except BaseException as e:  # SystemExit too: it ends the call, not the instance
            raise CallError(_user_error(e, self.finder)) from None
        if not isinstance(result, LettaGrade):
            raise CallError(
                f"AttributeError: '{type(result).__name__}' object has no attribute 'metadata' "
                "(a @grader must return letta_evals.models.GradeResult)"
            )
        # The stand-in's model holds a plain float and str, or None; a grader may have assigned
        # anything since.
        score, rationale = result.score, result.rationale
        if type(score) is not float:
            score = _score(score)
        if type(rationale) is not str:
            rationale = _text(rationale)
        try:
            metadata = convert.to_json(result.metadata)
        except BaseException as e:
            raise self._unconvertible("metadata", e) from None
        return score, None, rationale, metadata, None, None

    def _evaldeck_grade(self, func, cls, row, sample_id, run, config):
        # `_built`, inline: every call of these forms makes both.
        try:
            trace = convert.evaldeck_trace(run)
        except (KeyError, ValueError, TypeError) as e:
            raise _build_error("the recorded run as an evaldeck Trace", e) from None
        try:
            case = convert.evaldeck_case(row, sample_id, run.case_vouched)
        except (KeyError, ValueError, TypeError) as e:
            raise _build_error("the dataset row as an evaldeck EvalCase", e) from None
        if func is not None:
            grader, plain = self._custom_grader(func)
        else:
            grader, plain = self._grader_instance(cls, config), False
        try:
            # evaldeck's CustomGrader turns an exception into an ERROR grade itself. Its
            # `grade_async` calls a plain function as `grade` does: called so, without a
            # coroutine to drive.
            if plain:
                result = grader.grade(trace, case)
            else:
                result = run_coroutine(grader.grade_async(trace, case))
        except Exception as e:
            # evaldeck's Evaluator reports what escapes a grader this way; an exception whose
            # `__str__` raises is named by its type, as CPython's traceback names it.
            message = loader.safe_text(e, f"{type(e).__name__}: <exception str() failed>")
            result = EvaldeckGrade.error_result(grader.name, f"Grader error: {message}")
        except BaseException as e:  # SystemExit: evaldeck's run would end; this call does
            raise CallError(_user_error(e, self.finder)) from None
        if not isinstance(result, EvaldeckGrade):
            # evaldeck's Evaluator reads `.status` of whatever came back.
            return (
                0.0,
                "error",
                f"Grader error: {type(result).__name__!r} object has no attribute 'status'",
                convert.to_json({"grader_name": grader.name}),
                None,
                None,
            )
        # The status's value read once: `Enum.value` is a property of Python code.
        status = result.status.value
        # As a letta-evals grade's (`_letta_grade`): what the model holds, or what was assigned.
        score, message = result.score, result.message
        if score is None:
            score = 1.0 if status == "pass" else 0.0
        elif type(score) is not float:
            score = _score(score)
        if type(message) is not str:
            message = _text(message)
        expected, actual = result.expected, result.actual
        try:
            metadata = convert.evaldeck_metadata(result.details, result.grader_name)
        except BaseException as e:
            raise self._unconvertible("metadata", e) from None
        return (
            score,
            status,
            message,
            metadata,
            None if expected is None else self._json("expected", expected),
            None if actual is None else self._json("actual", actual),
        )

    def _json(self, what, value):
        """`value`, a grade's `what` (metadata, expected, actual), as JSON text (`convert.to_json`)."""
        try:
            return convert.to_json(value)
        except BaseException as e:  # a key JSON cannot hold, a value whose `__str__` raises, ...
            raise self._unconvertible(what, e) from None

    def _unconvertible(self, what, error):
        """The `CallError` of a grade's `what` that `error` kept from becoming JSON, in the host's
        words for a JSON text it cannot read (`invalid metadata: ...`)."""
        return CallError(f"invalid {what}: {_user_error(error, self.finder)}")

    def _custom_grader(self, func):
        """evaldeck's `CustomGrader` of `func`, and whether `func` is a plain function (no
        coroutine function), which decides how it is called.

        Made once per function, as evaldeck's user makes the grader once for every case: while
        the methods a plain function's call runs (`CustomGrader`'s constructor, `grade` and
        `_get_func`) are the stand-in's own, the grader keeps nothing of a call (its name is
        its class's), so one serves every call as a new one would. With any of them replaced,
        or for a coroutine function, each call makes its own as before."""
        made = self._graders.get(id(func))
        if made is not None and made[0] is func and _own_custom_grader():
            return made[1], True
        plain = not inspect.iscoroutinefunction(func)
        grader = CustomGrader(func=func)
        if plain and _own_custom_grader():
            self._graders[id(func)] = (func, grader)
        return grader, plain

    def _openai_grade(self, func, row, run):
        item, sample = convert.openai_item_and_sample(row, run)
        try:
            score = run_coroutine(func(sample, item))
        except BaseException as e:  # SystemExit too: it ends the call, not the instance
            raise CallError(_user_error(e, self.finder)) from None
        kind = type(score)
        if kind is bool or not issubclass(kind, (int, float)):
            raise CallError(f"grade returned {kind.__name__} {_repr(score)}, not a number")
        value = _score(score)
        if not math.isfinite(value):
            raise CallError(f"grade returned {value!r}, not a finite number")
        # The number as its plain type writes it, whatever a subclass's `__repr__` says: an int
        # stays an int (`grade returned 1`).
        text = float.__repr__(value) if issubclass(kind, float) else int.__repr__(score)
        return value, None, f"grade returned {text}", None, None, None

    def extract(self, name, row, sample_id, run, config):
        form, func, _ = self._resolve(name)
        if form != "letta-extractor":
            raise CallError(f"{name!r} is not an extractor")
        params = json.loads(config) if config else {}
        trajectory = _built("the recorded run as Letta messages", convert.letta_trajectory, run)
        try:
            if getattr(func, "_extractor_param_count", 2) == 3:
                result = func(trajectory, params, convert.letta_agent_state(row, run))
            else:
                result = func(trajectory, params)
            result = run_coroutine(result)
        except BaseException as e:  # SystemExit too: it ends the call, not the instance
            raise CallError(_user_error(e, self.finder)) from None
        if result is None:
            return None
        if not isinstance(result, str):
            raise CallError(f"extractor returned {type(result).__name__}, not str")
        return result

    # -- reward --------------------------------------------------------------------------

    def reward(self, name, context, sample_id=None):
        from letta_evals.rewards import coerce_reward_output

        form, func, _ = self._resolve(name)
        if form != "letta-reward":
            raise CallError(f"{name!r} is not a reward composer")
        if not getattr(func, "_is_reward_composer", False):
            raise CallError(f"Reward composer must be decorated with @reward_composer: {self._spec(name)}")
        ctx = convert.letta_reward_context(json.loads(context), sample_id)
        try:
            output = coerce_reward_output(run_coroutine(func(ctx)))
        except BaseException as e:  # SystemExit too: it ends the call, not the instance
            raise CallError(_user_error(e, self.finder)) from None
        # As a letta-evals grade's (`_letta_grade`): the model holds a plain float, and its
        # metadata becomes JSON as a grade's does (a set as a list, as letta-evals writes it);
        # a composer may have assigned anything since, which is its error, not the runtime's.
        score = output.score
        if type(score) is not float:
            score = _score(score)
        if not math.isfinite(score):
            # JSON has no number for it (`json.dumps` would write `NaN`), and no reward is one.
            raise CallError(f"the composer's score is {score!r}, not a finite number")
        metadata = "null" if output.metadata is None else self._json("metadata", output.metadata)
        number = json.dumps(score)
        return f'{{"reward": {number}, "score": {number}, "metadata": {metadata}}}'
