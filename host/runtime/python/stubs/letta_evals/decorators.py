"""letta_evals.decorators (stand-in for letta-evals 0.26.0): `@grader`, `@extractor` and
`@reward_composer` check a function's parameters as letta-evals does (same TypeError texts),
register it by name, and mark the wrapper they return."""

import functools
import inspect

from letta_evals.models import GradeResult

GRADER_REGISTRY = {}
EXTRACTOR_REGISTRY = {}


def _params(f):
    return list(inspect.signature(f).parameters.values())


def _wrap(f):
    if inspect.iscoroutinefunction(f):

        async def wrapper(*args, **kwargs):
            return await f(*args, **kwargs)

    else:

        def wrapper(*args, **kwargs):
            return f(*args, **kwargs)

    return functools.wraps(f)(wrapper)


def grader(func=None, *, name=None):
    def decorate(f):
        signature = inspect.signature(f)
        params = list(signature.parameters.values())
        if len(params) != 2:
            raise TypeError(
                f"Grader {f.__name__} must have exactly 2 parameters (sample: Sample, submission: str), "
                f"got {len(params)}"
            )
        names = [p.name for p in params]
        if names != ["sample", "submission"]:
            raise TypeError(f"Grader {f.__name__} must have parameters named 'sample' and 'submission', got {names}")
        returns = signature.return_annotation
        if returns is not inspect.Signature.empty and returns != GradeResult:
            raise TypeError(f"Grader {f.__name__} must return GradeResult, got {returns}")
        GRADER_REGISTRY[name or f.__name__] = f
        wrapper = _wrap(f)
        wrapper._is_grader = True
        return wrapper

    return decorate if func is None else decorate(func)


def extractor(func=None, *, name=None):
    def decorate(f):
        signature = inspect.signature(f)
        params = list(signature.parameters.values())
        if len(params) not in (2, 3):
            raise TypeError(
                f"Extractor {f.__name__} must have 2 or 3 parameters (trajectory, config) or "
                f"(trajectory, config, agent_state), got {len(params)}"
            )
        names = [p.name for p in params]
        if len(params) == 2 and names != ["trajectory", "config"]:
            raise TypeError(f"Extractor {f.__name__} must have parameters named 'trajectory' and 'config', got {names}")
        if len(params) == 3 and names != ["trajectory", "config", "agent_state"]:
            raise TypeError(
                f"Extractor {f.__name__} must have parameters named 'trajectory', 'config', and 'agent_state', "
                f"got {names}"
            )
        returns = signature.return_annotation
        if returns is not inspect.Signature.empty and returns is not str:
            raise TypeError(f"Extractor {f.__name__} must return str, got {returns}")
        f._is_extractor = True
        f._extractor_param_count = len(params)
        EXTRACTOR_REGISTRY[name or f.__name__] = f

        def wrapper(*args, **kwargs):
            return f(*args, **kwargs)

        wrapper = functools.wraps(f)(wrapper)
        wrapper._is_extractor = True
        wrapper._extractor_param_count = len(params)
        return wrapper

    return decorate if func is None else decorate(func)


def reward_composer(func):
    params = _params(func)
    if len(params) != 1:
        raise TypeError(f"Reward composer {func.__name__} must have exactly 1 parameter (ctx), got {len(params)}")
    names = [p.name for p in params]
    if names != ["ctx"]:
        raise TypeError(f"Reward composer {func.__name__} must have parameter named 'ctx', got {names}")
    wrapper = _wrap(func)
    wrapper._is_reward_composer = True
    return wrapper


def agent_factory(func):
    params = _params(func)
    if len(params) != 2:
        raise TypeError(
            f"Agent factory {func.__name__} must have exactly 2 parameters (client, sample), got {len(params)}"
        )
    names = [p.name for p in params]
    if names != ["client", "sample"]:
        raise TypeError(f"Agent factory {func.__name__} must have parameters named 'client' and 'sample', got {names}")
    if not inspect.iscoroutinefunction(func):
        raise TypeError(f"Agent factory {func.__name__} must be an async function")
    wrapper = _wrap(func)
    wrapper._is_agent_factory = True
    return wrapper


def suite_setup(func):
    params = _params(func)
    if len(params) not in (0, 1, 2):
        raise TypeError(
            f"Suite setup {func.__name__} must have 0, 1, or 2 parameters (client, model_handle), got {len(params)}"
        )
    names = [p.name for p in params]
    if len(params) == 1 and names != ["client"]:
        raise TypeError(f"Suite setup {func.__name__} must have parameter named 'client', got {names}")
    if len(params) == 2 and names != ["client", "model_handle"]:
        raise TypeError(
            f"Suite setup {func.__name__} must have parameters named 'client' and 'model_handle', got {names}"
        )
    wrapper = _wrap(func)
    wrapper._is_suite_setup = True
    wrapper._suite_setup_param_count = len(params)
    return wrapper
