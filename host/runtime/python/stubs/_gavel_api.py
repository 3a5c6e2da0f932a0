"""What gavel's `anthropic` and `openai` stand-ins share: the HTTP exchange with its retries, the
error classes, and the response objects.

The real clients (Stainless-generated, over httpx and pydantic) cannot run in the sandbox; these
send the same requests through `gavel_runtime.http.request` and give back objects that read
the same. Retries follow the real clients' rule (up to `max_retries`, 2 by default, on a
connection error, 408, 409, 429 and 5xx, unless the server's `x-should-retry` says otherwise)
but are sent at once: the sandbox's clock is fixed, so a backoff would never elapse there, and
waiting in real time would only spend the call's deadline.
"""

import json

from gavel_runtime import http

DEFAULT_TIMEOUT = 600.0
DEFAULT_MAX_RETRIES = 2


class NotGiven:
    """A parameter left out (the clients' `NOT_GIVEN`), as opposed to one given as None."""

    def __bool__(self):
        return False

    def __repr__(self):
        return "NOT_GIVEN"


NOT_GIVEN = NotGiven()


class Omit:
    """A header or parameter to leave out of the request, even a default one."""

    def __bool__(self):
        return False


omit = Omit()


def given(value):
    return not isinstance(value, (NotGiven, Omit))


# -- HTTP objects graders meet on errors ----------------------------------------------------


class Headers:
    """Response or request headers: looked up by name in any case, repeated ones joined."""

    def __init__(self, pairs=()):
        self._pairs = [(str(k), str(v)) for k, v in pairs]

    def get(self, name, default=None):
        values = [v for k, v in self._pairs if k.lower() == name.lower()]
        return ", ".join(values) if values else default

    def __getitem__(self, name):
        value = self.get(name)
        if value is None:
            raise KeyError(name)
        return value

    def __contains__(self, name):
        return self.get(name) is not None

    def keys(self):
        return list(dict.fromkeys(k.lower() for k, _ in self._pairs))

    def items(self):
        return [(k, self[k]) for k in self.keys()]

    def __iter__(self):
        return iter(self.keys())

    def __len__(self):
        return len(self.keys())

    def __repr__(self):
        return f"Headers({dict(self.items())!r})"


class Request:
    def __init__(self, method, url, headers, content):
        self.method = method
        self.url = url
        self.headers = Headers(headers)
        self.content = content

    def __repr__(self):
        return f"<Request('{self.method}', '{self.url}')>"


class Response:
    def __init__(self, request, answer):
        self.request = request
        self.status_code = answer.status
        self.headers = Headers(answer.headers)
        self.content = answer.body

    @property
    def text(self):
        return self.content.decode("utf-8", errors="replace")

    @property
    def is_success(self):
        return 200 <= self.status_code < 300

    def json(self):
        return json.loads(self.content)

    def __repr__(self):
        return f"<Response [{self.status_code}]>"


# -- errors --------------------------------------------------------------------------------


def extract(body, *keys):
    for key in keys:
        if not isinstance(body, dict):
            return None
        body = body.get(key)
    return body


def error_classes(package, root, *, request_id_header, timeout_message, read_error_body, statuses):
    """The clients' error hierarchy for `package`, under its `root` exception: `APIError`,
    `APIStatusError` and one class per status in `statuses` ((name, code, parent name)),
    `APIConnectionError`, `APITimeoutError`, `APIResponseValidationError`. `read_error_body`
    sets the attributes each package reads out of an error's body."""

    def made(name, bases, body):
        body.update(__module__=package, __qualname__=name)
        return type(name, bases, body)

    def api_error_init(self, message, request, *, body):
        root.__init__(self, message)
        self.request = request
        self.message = message
        self.body = body
        read_error_body(self, body, status=False)

    def status_error_init(self, message, *, response, body):
        api_error_init(self, message, response.request, body=body)
        self.response = response
        self.status_code = response.status_code
        self.request_id = response.headers.get(request_id_header)
        read_error_body(self, body, status=True)

    def connection_error_init(self, *, message="Connection error.", request):
        api_error_init(self, message, request, body=None)

    def timeout_error_init(self, request):
        connection_error_init(self, message=timeout_message, request=request)

    def validation_error_init(self, response, body, *, message=None):
        api_error_init(self, message or "Data returned by API invalid for expected schema.", response.request, body=body)
        self.response = response
        self.status_code = response.status_code

    classes = {}
    classes["APIError"] = made("APIError", (root,), {"__init__": api_error_init})
    classes["APIResponseValidationError"] = made(
        "APIResponseValidationError", (classes["APIError"],), {"__init__": validation_error_init}
    )
    classes["APIStatusError"] = made("APIStatusError", (classes["APIError"],), {"__init__": status_error_init})
    classes["APIConnectionError"] = made(
        "APIConnectionError", (classes["APIError"],), {"__init__": connection_error_init}
    )
    classes["APITimeoutError"] = made("APITimeoutError", (classes["APIConnectionError"],), {"__init__": timeout_error_init})
    by_status = {}
    for name, code, parent in statuses:
        classes[name] = made(name, (classes[parent],), {"status_code": code} if code else {})
        if code:
            by_status.setdefault(code, classes[name])
    return classes, by_status


def status_error(errors, response, describe, body_of=lambda body: body):
    """The error a client raises for an error status: the class for the status (5xx without
    one of its own: `InternalServerError`), its message written by `describe(status, body,
    parsed)` as the package writes it, and the body (JSON when it parses) through `body_of`."""
    classes, by_status = errors
    text = response.text.strip()
    try:
        body, parsed = json.loads(text), True
    except ValueError:
        body, parsed = text, False
    cls = by_status.get(response.status_code)
    if cls is None:
        cls = classes["InternalServerError"] if response.status_code >= 500 else classes["APIStatusError"]
    return cls(describe(response.status_code, body, parsed), response=response, body=body_of(body))


def _listed(names, last_comma=""):
    quoted = [f"'{n}'" for n in names]
    if len(quoted) < 3:
        return " and ".join(quoted)
    return ", ".join(quoted[:-1]) + f"{last_comma} and " + quoted[-1]


def check_arguments(where, params, allowed, required, *, streams=False):
    """Raises the `TypeError` the real method raises for `params`: a name it does not take,
    or a required one missing (worded by its `stream` overloads' check when it has them)."""
    missing = [n for n in required if n not in params]
    if missing and streams:
        raise TypeError(
            f"Missing required arguments; Expected either ({_listed(required)}) or "
            f"({_listed([*required, 'stream'])}) arguments to be given"
        )
    for name in params:
        if name not in allowed and name not in required:
            raise TypeError(f"{where}() got an unexpected keyword argument '{name}'")
    if missing:
        plural = "s" if len(missing) > 1 else ""
        raise TypeError(
            f"{where}() missing {len(missing)} required keyword-only argument{plural}: {_listed(missing, ',')}"
        )


# -- response objects ----------------------------------------------------------------------


class Model:
    """A response object: its `FIELDS` ((name, kind) in the real model's order; kind is None
    for a plain value, a `Model` subclass, `[kind]` for a list of them, or a dict from the
    `type` key to the model for that type) read from the JSON as the real client's models read
    it, without validation; keys not declared are kept as they came. Fields the response left
    out read as None; `to_dict()` gives only what the response had, `model_dump()` every
    declared field."""

    FIELDS = ()

    def __init__(self, data):
        declared = dict(self.FIELDS)
        object.__setattr__(self, "_set", [k for k in data if k in declared])
        object.__setattr__(self, "_extra", [k for k in data if k not in declared])
        for name, kind in self.FIELDS:
            object.__setattr__(self, name, construct(kind, data[name]) if name in data else None)
        for name in self._extra:
            if not hasattr(type(self), name):  # a key named as a property (`output_text`)
                object.__setattr__(self, name, data[name])

    @classmethod
    def construct_from(cls, data):
        return cls(data) if isinstance(data, dict) else data

    def _keys(self, unset):
        declared = [name for name, _ in self.FIELDS if unset or name in self._set]
        return declared + self._extra

    def model_dump(self, *, mode="python", exclude_unset=False, exclude_none=False, by_alias=None, **_):
        out = {}
        for name in self._keys(not exclude_unset):
            value = dump(getattr(self, name), exclude_unset=exclude_unset, exclude_none=exclude_none)
            if not (exclude_none and value is None):
                out[name] = value
        return out

    def model_dump_json(self, *, indent=None, exclude_unset=False, exclude_none=False, **_):
        data = self.model_dump(exclude_unset=exclude_unset, exclude_none=exclude_none)
        return json.dumps(data, indent=indent, ensure_ascii=False, separators=None if indent else (",", ":"))

    def to_dict(self, *, exclude_unset=True, exclude_none=False, **_):
        return self.model_dump(exclude_unset=exclude_unset, exclude_none=exclude_none)

    def to_json(self, *, indent=2, exclude_unset=True, exclude_none=False, **_):
        return self.model_dump_json(indent=indent, exclude_unset=exclude_unset, exclude_none=exclude_none)

    def __eq__(self, other):
        return type(self) is type(other) and self.model_dump() == other.model_dump()

    def __repr__(self):
        fields = ", ".join(f"{name}={getattr(self, name)!r}" for name in self._keys(True))
        return f"{type(self).__name__}({fields})"

    __str__ = __repr__


def construct(kind, value):
    if kind is None or value is None:
        return value
    if kind is float:  # the real models make a whole number in a float field a float
        return float(value) if isinstance(value, int) and not isinstance(value, bool) else value
    if isinstance(kind, list):
        return [construct(kind[0], item) for item in value] if isinstance(value, list) else value
    if isinstance(kind, dict):
        if not isinstance(value, dict):
            return value
        return construct(kind.get(value.get("type"), Model), value)
    return kind.construct_from(value)


def dump(value, **options):
    if isinstance(value, Model):
        return value.model_dump(**options)
    if isinstance(value, list):
        return [dump(item, **options) for item in value]
    if isinstance(value, dict):
        return {k: dump(v, **options) for k, v in value.items()}
    return value


# -- the client ----------------------------------------------------------------------------


def _json_value(value):
    """What the real clients send for a parameter value that is not plain JSON."""
    if isinstance(value, Model):
        return value.to_dict()
    if isinstance(value, (tuple, set, frozenset)) or hasattr(value, "__next__"):
        return list(value)
    raise TypeError(f"Object of type {type(value).__name__} is not JSON serializable")


def _seconds(timeout):
    if timeout is None or isinstance(timeout, (int, float)):
        return timeout
    return getattr(timeout, "read", None)  # an httpx.Timeout-like object


class Client:
    """One API client: its base URL, credentials, default headers and retry budget.
    A package's client sets `_errors` (from `error_classes`), `_auth_headers`, and `_attach`,
    which gives the client (and each copy) its resources."""

    _errors = None
    _REQUEST_ID_HEADER = None

    def __init__(self, base_url, timeout, max_retries, default_headers, default_query):
        self.base_url = str(base_url).rstrip("/") + "/"
        self.timeout = DEFAULT_TIMEOUT if not given(timeout) else timeout
        self._timeout_given = given(timeout)
        self.max_retries = max_retries
        self._custom_headers = dict(default_headers or {})
        self._custom_query = dict(default_query or {})
        self._attach()

    def _attach(self):
        pass

    def _auth_headers(self):
        return {}

    def _package_headers(self):
        return {}

    def _check_headers(self, headers):
        """Raises what the real client raises for a request it cannot authenticate."""

    def _headers(self, extra):
        merged = {"Accept": "application/json", "Content-Type": "application/json"}
        for layer in (self._auth_headers(), self._package_headers(), self._custom_headers, extra or {}):
            for name, value in layer.items():
                for old in [k for k in merged if k.lower() == name.lower()]:
                    del merged[old]
                if given(value):
                    merged[name] = value
        self._check_headers(merged)
        return merged

    def _url(self, path, extra_query):
        from urllib.parse import urlencode

        url = self.base_url + path.lstrip("/")
        query = {**self._custom_query, **(extra_query or {})}
        query = {k: v for k, v in query.items() if given(v)}
        return f"{url}?{urlencode(query, doseq=True)}" if query else url

    def post(self, path, params, cast, *, extra_headers=None, extra_query=None, extra_body=None, timeout=NOT_GIVEN):
        """POSTs `params` (those given, then `extra_body`) to `path`; returns the answer read
        as `cast` (a `Model` subclass), or raises the client's error for it."""
        body = {k: v for k, v in params.items() if given(v)}
        body.update(extra_body or {})
        content = json.dumps(body, default=_json_value, ensure_ascii=False, separators=(",", ":")).encode()
        headers = self._headers(extra_headers)
        url = self._url(path, extra_query)
        seconds = _seconds(self.timeout if not given(timeout) else timeout)
        request = Request("POST", url, headers.items(), content)
        errors, by_status = self._errors
        for attempt in range(self.max_retries + 1):
            last = attempt == self.max_retries
            try:
                answer = http.request("POST", url, list(headers.items()), content, seconds)
            except TimeoutError as e:
                if last:
                    raise errors["APITimeoutError"](request) from e
                continue
            except Exception as e:
                if last:
                    raise errors["APIConnectionError"](request=request) from e
                continue
            response = Response(request, answer)
            if response.is_success:
                return self._parse(response, cast)
            if not last and _should_retry(response):
                continue
            raise self._status_error(response)
        raise AssertionError("unreachable: the last attempt returns or raises")

    def _status_error(self, response):
        """The package's error for an error status (see `status_error`)."""
        raise NotImplementedError

    def _parse(self, response, cast):
        try:
            data = response.json()
        except ValueError:
            raise self._errors[0]["APIResponseValidationError"](response, response.text) from None
        result = construct(cast, data)
        if isinstance(result, Model):
            object.__setattr__(result, "_request_id", response.headers.get(self._REQUEST_ID_HEADER))
        return result

    def copy(self, **changes):
        """A client like this one with `changes` (the constructor's parameters)."""
        new = object.__new__(type(self))
        new.__dict__.update(self.__dict__)
        for name in ("timeout", "max_retries", "api_key"):
            if given(changes.get(name, NOT_GIVEN)):
                setattr(new, name, changes.pop(name))
                if name == "timeout":
                    new._timeout_given = True
        if changes.get("base_url") is not None:
            new.base_url = str(changes.pop("base_url")).rstrip("/") + "/"
        if changes.get("default_headers") is not None:
            new._custom_headers = {**self._custom_headers, **changes.pop("default_headers")}
        if changes.get("default_query") is not None:
            new._custom_query = {**self._custom_query, **changes.pop("default_query")}
        for name, value in changes.items():
            if value is not None and given(value):
                setattr(new, name, value)
        new._attach()
        return new

    with_options = copy

    def close(self):
        pass

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    async def __aenter__(self):
        return self

    async def __aexit__(self, *exc):
        self.close()


def _should_retry(response):
    header = response.headers.get("x-should-retry")
    if header in ("true", "false"):
        return header == "true"
    return response.status_code in (408, 409, 429) or response.status_code >= 500


class Resource:
    """A group of endpoints (`client.messages`, `client.chat.completions`)."""

    def __init__(self, client):
        self._client = client
