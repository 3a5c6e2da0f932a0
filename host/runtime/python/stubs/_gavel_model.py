"""Plain-class models that behave, for the code that uses them, like the pydantic models of the
packages these stand-ins replace (pydantic is not available inside gavel's sandbox).

A model declares its fields in order as `Field(name, check, default)`. Construction takes keyword
arguments, ignores unknown ones (pydantic's default), fills defaults, and checks each value with
pydantic's lax rules for the few types the models use; a bad value raises `ValidationError` with
pydantic's message layout. `repr`, `str`, equality, `model_dump` and `model_dump_json` follow
pydantic so that printing or serialising a model shows what the real package shows.
"""

import datetime as _dt
import enum as _enum
import json as _json

PYDANTIC_VERSION = "2.14"
REQUIRED = object()
_ABSENT = object()


class ValidationError(ValueError):
    """pydantic's `ValidationError`: a `ValueError` whose text lists each failing field."""

    def __init__(self, title, errors):
        self.title = title
        self._errors = errors
        super().__init__(self._render())

    def errors(self):
        # Each as pydantic lists it: its kind, where, message, input, context, then its page.
        return [dict(e, url=f"https://errors.pydantic.dev/{PYDANTIC_VERSION}/v/{e['type']}") for e in self._errors]

    def error_count(self):
        return len(self._errors)

    def _render(self):
        count = len(self._errors)
        lines = [f"{count} validation error{'s' if count != 1 else ''} for {self.title}"]
        for e in self._errors:
            if e["loc"]:
                lines.append(".".join(str(part) for part in e["loc"]))
            value = e["input"]
            lines.append(
                f"  {e['msg']} [type={e['type']}, input_value={_input_repr(value)}, "
                f"input_type={type(value).__name__}]"
            )
            lines.append(
                f"    For further information visit https://errors.pydantic.dev/{PYDANTIC_VERSION}/v/{e['type']}"
            )
        return "\n".join(lines)

    def __str__(self):
        return self._render()


def _input_repr(value):
    # pydantic-core's: a repr past 50 characters keeps its first 25 and last 24.
    text = repr(value)
    return text if len(text) <= 50 else text[:25] + "..." + text[-24:]


class _Invalid(Exception):
    def __init__(self, kind, msg, ctx=None):
        self.kind = kind
        self.msg = msg
        self.ctx = ctx

    def error(self, loc, value):
        """The error as `ValidationError` lists it, at `loc`, for the input `value`."""
        error = {"type": self.kind, "loc": loc, "msg": self.msg, "input": value}
        if self.ctx is not None:
            error["ctx"] = self.ctx
        return error


# Checks: each takes a value and returns it converted, or raises _Invalid.


def any_value(value):
    return value


def string(value):
    if isinstance(value, str):
        return str(value) if type(value) is not str and isinstance(value, _enum.Enum) else value
    raise _Invalid("string_type", "Input should be a valid string")


def floating(value):
    if isinstance(value, bool):
        return float(value)
    if isinstance(value, float):
        # pydantic's value of a float subclass is the plain float it holds, whatever the
        # subclass's methods say.
        return value if type(value) is float else float.__float__(value)
    if isinstance(value, int):
        try:
            return float(value)
        except OverflowError:
            # pydantic refuses an int that no float holds as no number at all.
            raise _Invalid("float_type", "Input should be a valid number") from None
    if isinstance(value, str):
        # pydantic reads ASCII digits alone, where Python's `float` reads any script's.
        text = value.strip()
        if text.isascii():
            try:
                return float(text)
            except ValueError:
                pass
        raise _Invalid("float_parsing", "Input should be a valid number, unable to parse string as a number")
    raise _Invalid("float_type", "Input should be a valid number")


def integer(value):
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, int):
        return value
    if isinstance(value, float):
        if value.is_integer():
            return int(value)
        raise _Invalid("int_from_float", "Input should be a valid integer, got a number with a fractional part")
    if isinstance(value, str):
        # pydantic reads ASCII digits alone, and a fraction of zeros (`"7.0"`) as none.
        text = value.strip()
        whole, dot, fraction = text.partition(".")
        if text.isascii() and (not dot or (fraction and not fraction.strip("0") and not whole[-1:].isspace())):
            try:
                return int(whole)
            except ValueError:
                pass
        raise _Invalid("int_parsing", "Input should be a valid integer, unable to parse string as an integer")
    raise _Invalid("int_type", "Input should be a valid integer")


def boolean(value):
    if isinstance(value, bool):
        return value
    if isinstance(value, int) and value in (0, 1):
        return bool(value)
    if isinstance(value, str):
        lowered = value.strip().lower()
        if lowered in ("1", "on", "t", "true", "y", "yes"):
            return True
        if lowered in ("0", "off", "f", "false", "n", "no"):
            return False
    raise _Invalid("bool_parsing", "Input should be a valid boolean, unable to interpret input")


def mapping(value):
    if isinstance(value, dict):
        return dict(value)
    raise _Invalid("dict_type", "Input should be a valid dictionary")


class TzInfo(_dt.tzinfo):
    """pydantic-core's fixed-offset zone, so parsed datetimes print as pydantic's do."""

    def __init__(self, seconds):
        self.seconds = seconds
        self._offset = _dt.timedelta(seconds=seconds)

    def utcoffset(self, dt):
        return self._offset

    def dst(self, dt):
        return _dt.timedelta(0)

    def tzname(self, dt):
        if self.seconds == 0:
            return "UTC"
        sign = "+" if self.seconds >= 0 else "-"
        hours, rest = divmod(abs(self.seconds), 3600)
        return f"{sign}{hours:02d}:{rest // 60:02d}"

    def __repr__(self):
        return f"TzInfo({self.seconds})"

    def __eq__(self, other):
        return isinstance(other, _dt.tzinfo) and other.utcoffset(None) == self._offset

    def __hash__(self):
        return hash(self._offset)

    def __reduce__(self):
        return (TzInfo, (self.seconds,))


def datetime(value):
    if isinstance(value, _dt.datetime):
        return value
    if isinstance(value, str):
        text = value.strip()
        if text.endswith(("Z", "z")):
            text = text[:-1] + "+00:00"
        try:
            parsed = _dt.datetime.fromisoformat(text)
        except ValueError:
            raise _Invalid("datetime_from_date_parsing", "Input should be a valid datetime") from None
        if parsed.tzinfo is not None:
            parsed = parsed.replace(tzinfo=TzInfo(int(parsed.utcoffset().total_seconds())))
        return parsed
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return _dt.datetime.fromtimestamp(value, TzInfo(0))
    raise _Invalid("datetime_type", "Input should be a valid datetime")


# pydantic's names of the types these checks take, which place a union member's errors, and
# the type each takes as it is (pydantic's strict match, which a union tries first).
any_value.label = "any"
string.label = "str"
floating.label = "float"
integer.label = "int"
boolean.label = "bool"
mapping.label = "dict[str,any]"
datetime.label = "datetime"
_EXACT = {string: str, integer: int, floating: float, boolean: bool, mapping: dict, datetime: _dt.datetime}


def optional(check):
    def check_optional(value):
        return None if value is None else check(value)

    check_optional.inner = check
    return check_optional


def list_of(check):
    def check_list(value):
        if not isinstance(value, (list, tuple)):
            raise _Invalid("list_type", "Input should be a valid list")
        items, errors = [], []
        for index, item in enumerate(value):
            try:
                items.append(check(item))
            except _Invalid as e:
                errors.append(e.error((index,), item))
            except ValidationError as e:
                errors.extend(dict(inner, loc=(index,) + tuple(inner["loc"])) for inner in e._errors)
        if errors:
            raise ValidationError("list", errors)
        return items

    check_list.inner = check
    check_list.label = f"list[{check.label}]"
    return check_list


def union(*checks):
    """pydantic's smart union of `checks`, in the order the real type declares them: a value of
    exactly the type one member takes as it is (a `str` for `str`, an instance for a model) goes
    to that member, any other to each member in turn, the first that takes it winning. A value
    that every member refuses raises every member's errors, each under its member's label."""
    exact = {}
    for check in checks:
        kind = getattr(check, "cls", None) if hasattr(check, "cls") and not hasattr(check, "members") else _EXACT.get(check)
        if kind is not None:
            exact.setdefault(kind, check)

    def check_union(value):
        check = exact.get(type(value))
        if check is not None:
            return check(value)
        errors = []
        for check in checks:
            try:
                return check(value)
            except _Invalid as e:
                errors.append(e.error((check.label,), value))
            except ValidationError as e:
                errors.extend(dict(inner, loc=(check.label,) + tuple(inner["loc"])) for inner in e._errors)
        raise ValidationError("union", errors)

    check_union.checks = checks
    check_union.label = f"union[{','.join(check.label for check in checks)}]"
    return check_union


def enum(cls):
    # Members by value, looked up directly: `cls(value)` goes through the enum machinery.
    members = {member.value: member for member in cls}

    def check_enum(value):
        if isinstance(value, cls):
            return value
        member = members.get(value) if isinstance(value, str) else None
        if member is not None:
            return member
        expected = _one_of(member.value for member in cls)
        raise _Invalid("enum", f"Input should be {expected}", {"expected": expected})

    check_enum.cls = cls
    check_enum.label = cls.__name__
    check_enum.members = members
    return check_enum


def _one_of(values):
    """pydantic's words for the values an enum or a literal takes: `'a', 'b' or 'c'`."""
    values = [repr(value) for value in values]
    return values[0] if len(values) == 1 else ", ".join(values[:-1]) + " or " + values[-1]


def literal(*allowed):
    """pydantic's `Literal[...]` of strings: one of them, and no other value."""
    expected = _one_of(allowed)

    def check_literal(value):
        # pydantic takes a `str` (of a subclass too) equal to one, and gives the literal itself.
        if isinstance(value, str):
            for literal in allowed:
                if value == literal:
                    return literal
        raise _Invalid("literal_error", f"Input should be {expected}", {"expected": expected})

    check_literal.values = allowed
    check_literal.label = f"literal[{','.join(map(repr, allowed))}]"
    return check_literal


def model(cls):
    def check_model(value):
        if isinstance(value, cls):
            return value
        if isinstance(value, dict):
            return cls(**value)
        raise _model_type(cls)

    check_model.cls = cls
    check_model.label = cls.__name__
    return check_model


def _model_type(cls):
    return _Invalid("model_type", f"Input should be a valid dictionary or instance of {cls.__name__}", {"class_name": cls.__name__})


class Field:
    __slots__ = ("name", "check", "default", "factory")

    def __init__(self, name, check=any_value, default=None, factory=None):
        self.name = name
        self.check = check
        self.default = default
        self.factory = factory


def _bad(errors, name, value, error):
    errors = errors or []
    if isinstance(error, ValidationError):
        errors.extend(dict(inner, loc=(name,) + tuple(inner["loc"])) for inner in error._errors)
    else:
        errors.append(error.error((name,), value))
    return errors


def _missing(errors, name, data):
    errors = errors or []
    errors.append({"type": "missing", "loc": (name,), "msg": "Field required", "input": data})
    return errors


def _shortcuts(check, i, scope):
    """The common inputs `check` takes, as two lists of `(condition on v, value)` pairs of source
    text: for each, `check(v)` would return that value, so the constructor skips the call. The
    first list's values cannot be refused; the second's build a model, which may refuse its
    input, so the constructor evaluates them where it catches what the check would raise.
    Conditions test `type(v) is`, so no input of another type (a subclass included) takes a
    shortcut."""
    if check is string:
        return [("type(v) is str", "v")], []
    if check is integer:
        return [("type(v) is int", "v")], []
    if check is floating:
        # An int below 2**1023 in size converts to a float; a larger one may not (the check
        # refuses one that does not).
        scope["_FLOAT_INTS"] = 1 << 1023
        return [("type(v) is float", "v"), ("type(v) is int and -_FLOAT_INTS < v < _FLOAT_INTS", "float(v)")], []
    if check is boolean:
        return [("type(v) is bool", "v")], []
    if check is mapping:
        return [("type(v) is dict", "dict(v)")], []
    if check is datetime:
        scope["_datetime"] = _dt.datetime
        return [("type(v) is _datetime", "v")], []
    if getattr(check, "__name__", None) == "check_literal":
        if len(check.values) > 1:
            scope[f"literals{i}"] = frozenset(check.values)
            return [(f"type(v) is str and v in literals{i}", "v")], []
        scope[f"literal{i}"] = check.values[0]
        # A literal is a string, which only a string equals.
        return [(f"v == literal{i}", f"literal{i}")], []
    if hasattr(check, "members"):
        scope[f"enum{i}"], scope[f"members{i}"] = check.cls, check.members
        return [(f"type(v) is str and (m := members{i}.get(v)) is not None", "m"), (f"type(v) is enum{i}", "v")], []
    if hasattr(check, "cls"):
        scope[f"model{i}"] = check.cls
        return [(f"type(v) is model{i}", "v")], [("type(v) is dict", f"model{i}(**v)")]
    if getattr(check, "__name__", None) == "check_optional":
        sure, guarded = _shortcuts(check.inner, i, scope)
        return [("v is None", "None")] + sure, guarded
    if getattr(check, "__name__", None) == "check_union":
        # A value of exactly the type a member takes as it is goes to that member.
        return [_shortcuts(member, i, scope)[0][0] for member in check.checks if member in _EXACT], []
    return [], []


def _list_shortcut(check, i, scope):
    """For a list of models or strings, the list built in one comprehension; `None` for other
    checks. When an item is refused the constructor runs the whole check again, which reports
    every item's error as the check always has."""
    if getattr(check, "__name__", None) != "check_list":
        return None
    inner = check.inner
    scope[f"item{i}"] = inner
    if inner is string:
        return f"[x if type(x) is str else item{i}(x) for x in v]"
    if hasattr(inner, "cls") and not hasattr(inner, "members"):
        scope[f"model{i}"] = inner.cls
        return f"[model{i}(**x) if type(x) is dict else item{i}(x) for x in v]"
    return None


def _constructor(cls):
    """`__init__` for `cls`, written out field by field: models are built on every call (each
    message of a trajectory, each step of a trace), and a loop over field descriptions costs
    the interpreter several times what straight-line code does. The usual values (a `str` for a
    string, a `dict` for a model, a known value for an enum) are taken inline; any other goes
    through the field's check, so what is refused, and how, is the check's. Made when the class
    is defined, so at build time, into the snapshot."""
    lines = ["def _construct(self, **data):", "    values = _dict_of(self)", "    errors = None"]
    scope = {"_ABSENT": _ABSENT, "_Invalid": _Invalid, "ValidationError": ValidationError, "_bad": _bad,
             "_missing": _missing, "_dict_of": _dict_of}
    after = dict(cls._after)
    for i, field in enumerate(cls._fields):
        name = repr(field.name)
        if field.name in after:
            # The field's check after its type's, of a value given that its type took.
            scope[f"after{i}"] = after[field.name]
            check_after = (f"    if v is not _ABSENT and {name} in values and (e := after{i}(values[{name}])) is not None:\n"
                           f"        errors = _bad(errors, {name}, v, e)")
        else:
            check_after = None
        lines.append(f"    v = data.get({name}, _ABSENT)")
        lines.append("    if v is _ABSENT:")
        if field.factory is not None:
            scope[f"factory{i}"] = field.factory
            lines.append(f"        values[{name}] = factory{i}()")
        elif field.default is REQUIRED:
            lines.append(f"        errors = _missing(errors, {name}, data)")
        else:
            scope[f"default{i}"] = field.default
            lines.append(f"        values[{name}] = default{i}")
        check = field.check
        if check is any_value:
            lines.append(f"    else:\n        values[{name}] = v")
            lines += [check_after] if check_after else []
            continue
        scope[f"check{i}"] = check
        sure, guarded = _shortcuts(check, i, scope)
        for condition, value in sure:
            lines.append(f"    elif {condition}:\n        values[{name}] = {value}")
        listed = _list_shortcut(check, i, scope)
        if listed is not None:
            lines.append("    elif type(v) is list:")
            lines.append("        try:")
            lines.append(f"            values[{name}] = {listed}")
            lines.append("        except (_Invalid, ValidationError):")
            lines.append("            try:")
            lines.append(f"                values[{name}] = check{i}(v)")
            lines.append("            except (_Invalid, ValidationError) as e:")
            lines.append(f"                errors = _bad(errors, {name}, v, e)")
        lines.append("    else:")
        lines.append("        try:")
        for k, (condition, value) in enumerate(guarded):
            lines.append(f"            {'if' if k == 0 else 'elif'} {condition}:")
            lines.append(f"                values[{name}] = {value}")
        if guarded:
            lines.append(f"            else:\n                values[{name}] = check{i}(v)")
        else:
            lines.append(f"            values[{name}] = check{i}(v)")
        lines.append("        except (_Invalid, ValidationError) as e:")
        lines.append(f"            errors = _bad(errors, {name}, v, e)")
        lines += [check_after] if check_after else []
    lines.append("    self._finish(data, errors)")
    exec("\n".join(lines), scope)
    return scope["_construct"]


_from_iso = _dt.datetime.fromisoformat


def _usual_datetime(text):
    """Whether `datetime` takes `text`: it does when the text is ISO 8601 as Python reads it
    whole (the check strips spaces first and reads a final `Z` as UTC, as Python's own parser
    does too, so it takes all that parser takes). One parse of C code, where a pattern of the
    usual forms cost the sandbox's regex engine twice as much."""
    try:
        _from_iso(text)
    except ValueError:
        return False
    return True


def _deferrable(cls):
    """Whether `cls` may be built on first read: it says so (`_defer`) and keeps no extra keys."""
    return "_fields" in cls.__dict__ and "_defer" in cls.__dict__ and issubclass(cls, DeferredModel) and not cls._extra


def _usual_form(check, i, scope):
    """For a field checked by `check`: a condition on `v` that holds only when `check(v)`
    certainly accepts `v` (None when no such test is cheap), `_shortcuts`' sure pairs, and the
    source of the value to take when none of those applies (None: `check(v)` itself, which
    cannot refuse a value the condition let through)."""
    sure, guarded = _shortcuts(check, i, scope)
    conditions = [condition for condition, _ in sure]
    inner = getattr(check, "inner", check) if getattr(check, "__name__", None) == "check_optional" else check
    taken = None
    if inner is datetime:
        scope["_usual_datetime"] = _usual_datetime
        conditions.append("type(v) is str and _usual_datetime(v)")
    elif guarded and _deferrable(inner.cls):
        scope[f"init{i}"] = inner.cls._construct
        conditions.append(f"type(v) is dict and model{i}.__init__ is init{i} and model{i}._usual(v)")
        taken = f"model{i}._deferred(v)"
    elif getattr(inner, "__name__", None) == "check_list":
        item = inner.inner
        if item is string:
            scope["_only_str"] = frozenset((str,))
            conditions.append("type(v) is list and set(map(type, v)) <= _only_str")
            taken = "list(v)"
        elif hasattr(item, "cls") and not hasattr(item, "members") and _deferrable(item.cls):
            scope[f"model{i}"], scope[f"init{i}"] = item.cls, item.cls._construct
            conditions.append(f"type(v) is list and model{i}.__init__ is init{i} and all(map(model{i}._usual, v))")
            taken = f"[model{i}._deferred(x) for x in v]"
    return " or ".join(f"({c})" for c in conditions) or None, sure, taken


def _deferred_parts(cls):
    """`_usual(data)`, true only when `cls(**data)` certainly succeeds (and leaves the model
    checks nothing to do), and `_take`, each field's function from `data` to the value that
    constructor would give it. Written out per class when it is defined, as `_constructor` is."""
    lines = ["def _usual(d):", "    if type(d) is not dict:", "        return False"]
    takes = []
    scope = {"_ABSENT": _ABSENT}
    settled = cls._defer
    for i, field in enumerate(cls._fields):
        name = repr(field.name)
        take = [f"def take{i}(data):", f"    v = data.get({name}, _ABSENT)", "    if v is _ABSENT:"]
        if field.factory is not None:
            scope[f"factory{i}"] = field.factory
            take.append(f"        return factory{i}()")
        else:
            scope[f"default{i}"] = field.default
            take.append(f"        return default{i}")
        if field.check is any_value:
            take.append("    return v")
            takes.append("\n".join(take))
            continue
        scope[f"check{i}"] = field.check
        condition, sure, taken = _usual_form(field.check, i, scope)
        # A missing value is usual when its default is fixed or a new empty container: a
        # factory such as `datetime.now` would give another value when taken later.
        needed = (
            field.default is REQUIRED
            or (field.factory is not None and field.factory not in (dict, list))
            or field.name in settled
        )
        if needed:
            lines.append(f"    v = d.get({name}, _ABSENT)\n    if v is _ABSENT:\n        return False")
        elif field.default is None and field.factory is None and sure and sure[0][0] == "v is None":
            # Optional: a missing value reads as None, which the condition takes.
            lines.append(f"    v = d.get({name})")
        else:
            lines.append(f"    v = d.get({name}, _ABSENT)")
            condition = condition and f"v is _ABSENT or {condition}"
        if condition is None:
            lines.append("    if v is not _ABSENT:\n        return False")
        else:
            if field.name in settled:
                condition = f"v and ({condition})"
            lines.append(f"    if not ({condition}):\n        return False")
        for condition, value in sure:
            take.append(f"    if {condition}:\n        return {value}")
        take.append(f"    return {taken or f'check{i}(v)'}")
        takes.append("\n".join(take))
    lines.append("    return True")
    exec("\n\n".join(["\n".join(lines)] + takes), scope)
    return scope["_usual"], {f.name: scope[f"take{i}"] for i, f in enumerate(cls._fields)}


def own_constructors(classes):
    """Whether each of `classes` is built by its own constructor (none replaced since it was
    defined), which the host's word that their data is usual presumes."""
    for cls in classes:
        if cls.__init__ is not cls._construct:
            return False
    return True


def own_constructors_check(classes):
    """`own_constructors(classes)` as a function of no arguments, its loop unrolled: the check
    runs on every call that reads a row the host vouched for, where the loop cost twice what
    its tests do."""
    scope = {f"cls{i}": cls for i, cls in enumerate(classes)}
    tests = " and ".join(f"cls{i}.__init__ is cls{i}._construct" for i in range(len(classes)))
    exec(f"def own_constructors():\n    return {tests or 'True'}\n", scope)
    return scope["own_constructors"]


def _read_deferred(self, name):
    """`__getattr__` of the classes that may be deferred, called only for names not set on the
    instance: a deferred model's field on its first read."""
    values = _dict_of(self)
    data = values.get("_gavel_data")
    if data is not None:
        take = self._take.get(name)
        if take is not None:
            value = values[name] = take(data)
            return value
    raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")


class Model:
    """The shared behaviour of every stand-in model; subclasses set `_fields`."""

    # `_gavel_set`: pydantic's `__pydantic_fields_set__`, the fields given to the constructor
    # (every key given, on a model that keeps extra keys) and those assigned since. The
    # constructor keeps its keyword arguments' dict there, made the set when first asked
    # (`_fields_set`), as a model built on first read has it made from its data.
    __slots__ = ("__dict__", "__weakref__", "_gavel_set")

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        cls._extra = cls.model_config.get("extra") == "allow"
        if "_fields" in cls.__dict__:
            cls._construct = _constructor(cls)
            cls._known = frozenset(f.name for f in cls._fields)
            if "__init__" not in cls.__dict__:
                cls.__init__ = cls._construct
            if _deferrable(cls):
                usual, cls._take = _deferred_parts(cls)
                cls._usual = staticmethod(usual)
                # Only these classes read attributes through `__getattr__`: on any other, it
                # would keep CPython from specialising every read of a field.
                cls.__getattr__ = _read_deferred

    _fields = ()
    # pydantic's configuration of the model: `"extra": "allow"` keeps unknown keys, given or
    # assigned, as attributes (letta_client's models).
    model_config = {}
    # `_defer`, set by a `DeferredModel` class that may be built on first read
    # (`_deferred_if_usual`): the fields that, when set, leave its `_validate` nothing to do
    # (an empty tuple for a class without one). Any other class is built when made.
    _extra = False
    # pydantic's extra keys of a model that keeps them (an `ExtraModel`'s), None on any other.
    __pydantic_extra__ = None
    # pydantic's checks of a field's value after its type's (constraints, field validators),
    # which the constructor makes, each error listed with the field's input as given:
    # `(name, check)` pairs, `check(value)` giving the `_Invalid` of a value it refuses, or None.
    _after = ()
    # `str()` shows what `repr()` shows (letta_client's models), not pydantic's `a=1 b=2`.
    _str_is_repr = False

    def __init__(self, **data):
        self._construct(**data)

    def _finish(self, data, errors):
        if errors:
            raise ValidationError(type(self).__name__, errors)
        _set_fields_set(self, data)
        if self._extra:
            if data.keys() <= self._known:
                object.__setattr__(self, "__pydantic_extra__", {})
            else:
                self._keep_extras(data)
        self._validate()

    def _keep_extras(self, data):
        known = self._known
        object.__setattr__(self, "__pydantic_extra__", {key: data[key] for key in data if key not in known})
        _reads_extras(type(self))

    def _validate(self):
        """Model-level checks after the fields (pydantic's validators); raise `_invalid(...)`."""

    def _invalid(self, name, message, value):
        return ValidationError(type(self).__name__, [_value_error(message).error((name,) if name else (), value)])

    @classmethod
    def model_validate(cls, data):
        if isinstance(data, cls):
            return data
        if not isinstance(data, dict):
            raise ValidationError(cls.__name__, [_model_type(cls).error((), data)])
        return cls(**data)

    @classmethod
    def _deferred_if_usual(cls, data):
        """The model of `data`, a dict nothing else holds (just parsed), built field by field
        on first read, when `data` has the usual form, which `cls(**data)` cannot refuse; None
        otherwise, for the caller to validate `data` now, so that every error is raised where
        and as it always is."""
        usual = cls.__dict__.get("_usual")
        if usual is not None and cls.__init__ is cls._construct and usual(data):
            return cls._deferred(data)
        return None

    @classmethod
    def _deferred(cls, data):
        model = object.__new__(cls)
        _dict_of(model)["_gavel_data"] = data
        return model

    @classmethod
    def model_validate_json(cls, text):
        return cls.model_validate(_json.loads(text))

    @property
    def model_extra(self):
        return self.__pydantic_extra__

    @property
    def model_fields_set(self):
        return _fields_set(self)

    def _items(self):
        """The fields and extra keys the model holds, as pydantic lists them (its `__dict__`'s
        order, a field deleted left out); a deferred model's in their order (deleting a field
        builds every field first, so none is deleted from one)."""
        values = _dict_of(self)
        if "_gavel_data" in values:
            return [(f.name, getattr(self, f.name)) for f in self._fields]
        known = self._known
        items = [(name, value) for name, value in values.items() if name in known]
        # Extra keys follow the fields, as pydantic keeps them apart.
        extras = self.__pydantic_extra__
        if extras:
            items += extras.items()
        return items

    def __setattr__(self, name, value):
        # pydantic's: a field, or a name starting with `_` (a private attribute), is set; a
        # property runs its setter; any other name is refused, unless the model keeps extra
        # keys, where it becomes one (last of them, unless it is one already) when the class has
        # no attribute of that name. A field or extra key assigned counts as set.
        if name in self._known:
            object.__setattr__(self, name, value)
            _fields_set(self).add(name)
            return
        if name[:1] == "_":
            object.__setattr__(self, name, value)
            return
        cls = type(self)
        attribute = getattr(cls, name, _ABSENT)
        if isinstance(attribute, property):
            attribute.__set__(self, value)
            return
        if not cls._extra:
            raise ValueError(f'"{cls.__name__}" object has no field "{name}"')
        if attribute is _ABSENT:
            self.__pydantic_extra__[name] = value
            _fields_set(self).add(name)
            _reads_extras(cls)
            return
        object.__setattr__(self, name, value)

    def __delattr__(self, name):
        # pydantic's: a field deleted is gone (reads fail, dumps and `repr` leave it out), an
        # extra key deleted too, and what cannot be deleted has "no attribute".
        extras = self.__pydantic_extra__
        if extras and name not in self._known and name in extras:
            del extras[name]
            return
        try:
            object.__delattr__(self, name)
        except AttributeError:
            raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}") from None

    def model_dump(self, *, mode="python", include=None, exclude=None, context=None, by_alias=None,
                   exclude_unset=False, exclude_defaults=False, exclude_none=False, exclude_computed_fields=False,
                   round_trip=False, warnings=True, fallback=None, serialize_as_any=False,
                   polymorphic_serialization=None):
        # pydantic's keywords, all of them; those not named below change nothing on these
        # models (no aliases, computed fields or serialisers of their own).
        how = (mode, exclude_none, exclude_unset, exclude_defaults)
        known = self._known
        unset = _fields_set(self) if exclude_unset else None
        defaults = _defaults(type(self)) if exclude_defaults else None
        out = {}
        for name, value in self._items():
            if include is not None and name not in include:
                continue
            if exclude is not None and name in exclude:
                continue
            if exclude_none and value is None:
                continue
            # Extra keys are never left out as unset or default: pydantic holds them as given.
            if unset is not None and name in known and name not in unset:
                continue
            if defaults is not None and name in defaults and value == defaults[name]():
                continue
            out[name] = _dump(value, how)
        return out

    def dict(self, **kwargs):
        return self.model_dump(**kwargs)

    def model_dump_json(self, *, indent=None, ensure_ascii=False, include=None, exclude=None, context=None,
                        by_alias=None, exclude_unset=False, exclude_defaults=False, exclude_none=False,
                        exclude_computed_fields=False, round_trip=False, warnings=True, fallback=None,
                        serialize_as_any=False, polymorphic_serialization=None):
        data = self.model_dump(mode="json", include=include, exclude=exclude, exclude_unset=exclude_unset,
                               exclude_defaults=exclude_defaults, exclude_none=exclude_none)
        if indent is None:
            return _json.dumps(data, ensure_ascii=ensure_ascii, separators=(",", ":"))
        return _json.dumps(data, ensure_ascii=ensure_ascii, indent=indent)

    def json(self, **kwargs):
        return self.model_dump_json(**kwargs)

    def model_copy(self, *, update=None, deep=False):
        import copy

        clone = copy.deepcopy(self) if deep else copy.copy(self)
        extras = clone.__pydantic_extra__
        update = update or {}
        _fields_set(clone).update(update)
        for key, value in update.items():
            if extras is not None and key not in self._known:
                extras[key] = value
                _reads_extras(type(clone))
            else:
                object.__setattr__(clone, key, value)
        return clone

    def copy(self, **kwargs):
        return self.model_copy(**kwargs)

    def __getstate__(self):
        # What pickling and `copy.deepcopy` take: the fields set made first, so that they
        # carry the set, not the constructor's arguments.
        _fields_set(self)
        return object.__getstate__(self)

    def __copy__(self):
        # pydantic's: the copy's fields set is its own.
        clone = object.__new__(type(self))
        _dict_of(clone).update(_dict_of(self))
        _set_fields_set(clone, set(_fields_set(self)))
        return clone

    def __eq__(self, other):
        # pydantic compares the fields held and the extra keys, in any order.
        if type(self) is not type(other):
            return NotImplemented
        return dict(self._items()) == dict(other._items())

    __hash__ = None

    def __repr_args(self):
        return ", ".join(f"{name}={value!r}" for name, value in self._items())

    def __repr__(self):
        return f"{type(self).__name__}({self.__repr_args()})"

    def __str__(self):
        if self._str_is_repr:
            return repr(self)
        return " ".join(f"{name}={value!r}" for name, value in self._items())

    def __iter__(self):
        # pydantic's: what `__dict__` holds but private names, then the extra keys.
        values = _dict_of(self)
        if "_gavel_data" in values:
            return iter(self._items())
        items = [(name, value) for name, value in values.items() if name[:1] != "_"]
        extras = self.__pydantic_extra__
        if extras:
            items += extras.items()
        return iter(items)


# The instance dictionary itself, past a class's own `__dict__` (`DeferredModel`'s).
_dict_of = Model.__dict__["__dict__"].__get__
_fields_set_of, _set_fields_set = Model.__dict__["_gavel_set"].__get__, Model.__dict__["_gavel_set"].__set__


def _fields_set(self):
    """pydantic's `__pydantic_fields_set__` of `self` (the set itself, which assignments add
    to), made from the constructor's keyword arguments on first read; on a model built on
    first read, from the fields its data holds, as its constructor would have been given
    them."""
    try:
        given = _fields_set_of(self)
    except AttributeError:
        # Built on first read (a class that keeps no extra keys), or not built at all.
        data = _dict_of(self).get("_gavel_data")
        given = set() if data is None else {name for name in self._known if data.get(name, _ABSENT) is not _ABSENT}
        _set_fields_set(self, given)
        return given
    if type(given) is dict:
        given = set(given) if self._extra else {name for name in given if name in self._known}
        _set_fields_set(self, given)
    return given


Model.__pydantic_fields_set__ = property(_fields_set, _set_fields_set)
# Named as pydantic's methods are, which a `TypeError` for a keyword they do not take shows.
Model.model_dump.__qualname__ = "BaseModel.model_dump"
Model.model_dump_json.__qualname__ = "BaseModel.model_dump_json"


def _value_error(message):
    """The error of a validator that raised `ValueError(message)`, as pydantic lists it."""
    return _Invalid("value_error", f"Value error, {message}", {"error": ValueError(message)})


class ExtraModel(Model):
    """A model that keeps unknown keys, given or assigned (letta_client's), in
    `__pydantic_extra__` as pydantic does: out of `__dict__` (`vars()` shows the fields alone),
    read as attributes, listed after the fields by `repr`, dumps and iteration."""

    __slots__ = ("__pydantic_extra__",)
    model_config = {"extra": "allow"}

    def __copy__(self):
        # pydantic's: the copy has extra keys of its own.
        clone = Model.__copy__(self)
        object.__setattr__(clone, "__pydantic_extra__", dict(_extras_of(self)))
        return clone


_extras_of = ExtraModel.__dict__["__pydantic_extra__"].__get__


def _read_extra(self, name):
    """`__getattr__` of a class once one of its models holds an extra key (only then: on any
    other, it would keep CPython from specialising every read of a field): the key's value."""
    try:
        extras = _extras_of(self)
    except AttributeError:
        extras = None
    if extras and name in extras:
        return extras[name]
    raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")


def _reads_extras(cls):
    if not hasattr(cls, "__getattr__"):
        cls.__getattr__ = _read_extra


def _whole_dict(self):
    """`__dict__` of a model that may be deferred: every field, in their order, as a model
    built when made holds them (attributes set on it since kept), the parsed data gone."""
    values = _dict_of(self)
    data = values.get("_gavel_data")
    if data is not None:
        _fields_set(self)  # taken from the data while it is there
        whole = {name: values[name] if name in values else take(data) for name, take in self._take.items()}
        for key, value in values.items():
            if key != "_gavel_data" and key not in whole:
                whole[key] = value
        values.clear()
        values.update(whole)
    return values


class DeferredModel(Model):
    """A model whose class may be built on first read (it sets `_defer`). Its `__dict__`
    (`vars()`) and a deletion build every field first, so that they act as on an eagerly built
    model: a field deleted before it was read is gone, not read from the data later."""

    __dict__ = property(_whole_dict)

    def __delattr__(self, name):
        _whole_dict(self)
        Model.__delattr__(self, name)


def _defaults(cls):
    """Each field of `cls` that has a default, with a function giving it (a default factory
    itself): `exclude_defaults` compares a field with its default as pydantic does, a
    factory's new value included."""
    return {f.name: f.factory or (lambda d=f.default: d) for f in cls._fields
            if f.factory is not None or f.default is not REQUIRED}


def _dump(value, how):
    """`value` as `model_dump` gives it; `how`: its mode, `exclude_none`, `exclude_unset` and
    `exclude_defaults`, which reach the models inside."""
    if isinstance(value, Model):
        mode, exclude_none, exclude_unset, exclude_defaults = how
        return value.model_dump(mode=mode, exclude_none=exclude_none, exclude_unset=exclude_unset,
                                exclude_defaults=exclude_defaults)
    if isinstance(value, list):
        return [_dump(v, how) for v in value]
    if isinstance(value, tuple):
        return [_dump(v, how) for v in value] if how[0] == "json" else tuple(_dump(v, how) for v in value)
    if isinstance(value, dict):
        return {k: _dump(v, how) for k, v in value.items()}
    mode = how[0]
    if mode == "json":
        if isinstance(value, _enum.Enum):
            return value.value
        if isinstance(value, _dt.datetime):
            text = value.isoformat()
            return text[:-6] + "Z" if text.endswith("+00:00") else text
        if isinstance(value, _dt.date):
            return value.isoformat()
        if isinstance(value, (set, frozenset)):
            return [_dump(v, how) for v in value]
    return value


def submodules(package, classes):
    """Makes `package.<module>` importable for each `(module, class)`: the real packages define
    each type in a module of its own, and code may import it from there."""
    import sys
    import types

    namespace = sys.modules[package].__dict__
    for name, cls in classes:
        module = types.ModuleType(f"{package}.{name}")
        setattr(module, cls.__name__, cls)
        sys.modules[module.__name__] = module
        namespace[name] = module
