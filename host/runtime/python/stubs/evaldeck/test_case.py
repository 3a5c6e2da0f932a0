"""evaldeck.test_case: the case a grader checks a trace against (stand-in for evaldeck 0.1.5)."""

from _gavel_model import (
    REQUIRED,
    DeferredModel,
    Field,
    Model,
    boolean,
    floating,
    integer,
    list_of,
    mapping,
    model,
    optional,
    own_constructors_check,
    string,
)

_strings = optional(list_of(string))


class ExpectedBehavior(DeferredModel):
    _fields = (
        Field("tools_called", _strings),
        Field("tools_not_called", _strings),
        Field("tool_call_order", _strings),
        Field("output_contains", _strings),
        Field("output_not_contains", _strings),
        Field("output_equals", optional(string)),
        Field("output_matches", optional(string)),
        Field("max_steps", optional(integer)),
        Field("min_steps", optional(integer)),
        Field("max_tool_calls", optional(integer)),
        Field("max_llm_calls", optional(integer)),
        Field("task_completed", optional(boolean)),
        Field("custom", optional(mapping)),
    )
    _defer = ()


class GraderConfig(DeferredModel):
    _fields = (
        Field("type", string, REQUIRED),
        Field("params", mapping, factory=dict),
        Field("prompt", optional(string)),
        Field("model", optional(string)),
        Field("threshold", optional(floating)),
        Field("module", optional(string)),
        Field("function", optional(string)),
    )
    _defer = ()


class Turn(DeferredModel):
    _fields = (
        Field("user", string, REQUIRED),
        Field("expected", optional(model(ExpectedBehavior))),
        Field("graders", list_of(model(GraderConfig)), factory=list),
    )
    _defer = ()


class EvalCase(DeferredModel):
    _fields = (
        Field("name", string, REQUIRED),
        Field("description", optional(string)),
        Field("turns", list_of(model(Turn)), factory=list),
        Field("timeout", optional(floating)),
        Field("retries", optional(integer)),
        Field("tags", list_of(string), factory=list),
        Field("metadata", mapping, factory=dict),
        Field("reference_output", optional(string)),
        Field("reference_tools", optional(list_of(string))),
    )
    _defer = ()

    @property
    def is_multi_turn(self):
        return len(self.turns) > 1

    @property
    def expected(self):
        if self.turns and self.turns[0].expected:
            return self.turns[0].expected
        return ExpectedBehavior()

    @property
    def graders(self):
        return self.turns[0].graders if self.turns else []

    @property
    def input(self):
        return self.turns[0].user if self.turns else ""

    @classmethod
    def from_yaml_string(cls, content):
        raise NotImplementedError("gavel's sandbox has no YAML parser; pass the case as a dict to _from_dict")

    @classmethod
    def _from_dict(cls, data):
        """evaldeck's loader: a case written with `input` (and `expected`/`graders`) and no
        `turns` becomes one turn; each turn's parts are built in turn, so an error names the
        innermost model, as evaldeck's does."""
        data = _one_turn(data)
        if "turns" in data:
            turns = []
            for turn in data["turns"]:
                if isinstance(turn, dict):
                    turn = dict(turn)
                    if isinstance(turn.get("expected"), dict):
                        turn["expected"] = ExpectedBehavior(**turn["expected"])
                    if "graders" in turn:
                        turn["graders"] = [GraderConfig(**g) if isinstance(g, dict) else g for g in turn["graders"]]
                    turn = Turn(**turn)
                turns.append(turn)
            data["turns"] = turns
        return cls(**data)

    @classmethod
    def _from_dict_deferred(cls, data, vouched=False):
        """`_from_dict(data)` for `data` nothing else holds: built on first read when its form
        is usual (`Model._deferred_if_usual`; `vouched`: the host found it so, see
        `gavel_runtime.convert.evaldeck_case`), so that a grader that never reads the case
        never pays for it; validated now otherwise."""
        if vouched:
            case = cls._vouched(_one_turn(data))
            if case is not None:
                return case
        case = cls._deferred_if_usual(_one_turn(data))
        return cls._from_dict(data) if case is None else case

    @classmethod
    def _vouched(cls, data):
        """The case of `data` (anything with `get(name, default)`), which the host found usual,
        built on first read; None when a model's constructor was replaced since it was defined
        (the case must then be validated)."""
        return cls._deferred(data) if _own_case_constructors() else None


# The models a case is made of, built by their own constructors when the host's word stands.
_CASE_MODELS = (EvalCase, Turn, ExpectedBehavior, GraderConfig)
_own_case_constructors = own_constructors_check(_CASE_MODELS)


def _one_turn(data):
    """A copy of `data`, a case written with `input` (and `expected`/`graders`) and no `turns`
    made the one turn evaldeck's loader makes of it."""
    data = dict(data)
    if "input" in data and "turns" not in data:
        turn = {"user": data.pop("input")}
        if "expected" in data:
            turn["expected"] = data.pop("expected")
        if "graders" in data:
            turn["graders"] = data.pop("graders")
        data["turns"] = [turn]
    return data


class EvalSuite(Model):
    _fields = (
        Field("name", string, REQUIRED),
        Field("description", optional(string)),
        Field("test_cases", list_of(model(EvalCase)), factory=list),
        Field("defaults", mapping, factory=dict),
        Field("tags", list_of(string), factory=list),
    )

    def __len__(self):
        return len(self.test_cases)

    def filter_by_tags(self, tags):
        wanted = set(tags)
        return EvalSuite(
            name=self.name,
            description=self.description,
            test_cases=[c for c in self.test_cases if wanted & set(c.tags)],
            defaults=self.defaults,
            tags=self.tags,
        )
