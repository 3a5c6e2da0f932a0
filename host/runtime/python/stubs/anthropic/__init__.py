"""anthropic, as gavel's sandbox provides it: `Anthropic` and `AsyncAnthropic` with
`messages.create` and `messages.count_tokens`, sending the requests anthropic 2.14 sends
(`Authorization: Bearer` with the key, `anthropic-version`) through gavel's HTTP, with its
error classes and response objects. No streaming."""

import os

import _gavel_api
from _gavel_api import DEFAULT_MAX_RETRIES, NOT_GIVEN, NotGiven, Omit, extract, omit

from . import types

__version__ = "2.14.0"
ANTHROPIC_API_VERSION = "2026-10-21"


class AnthropicError(Exception):
    pass


def _read_error_body(error, body, *, status):
    if not status:
        return
    error.workspace_id = error.response.headers.get("anthropic-workspace-id")
    error.api_message = extract(body, "error", "message")
    error.type = extract(body, "error", "type")
    code = extract(body, "error", "details", "error_code")
    error.error_code = code if isinstance(code, str) else None
    error.details = _gavel_api.construct(_gavel_api.Model, extract(body, "error", "details"))


_ERRORS = _gavel_api.error_classes(
    __name__,
    AnthropicError,
    request_id_header="request-id",
    timeout_message=(
        "Request timed out or interrupted. This could be due to a network timeout, dropped connection, "
        "or request cancellation. See https://docs.anthropic.com/en/api/errors#long-requests for more details."
    ),
    read_error_body=_read_error_body,
    statuses=[
        ("BadRequestError", 400, "APIStatusError"),
        ("AuthenticationError", 401, "APIStatusError"),
        ("PaymentRequiredError", 402, "APIStatusError"),
        ("PermissionDeniedError", 403, "APIStatusError"),
        ("NotFoundError", 404, "APIStatusError"),
        ("RequestTimeoutError", 408, "APIStatusError"),
        ("ConflictError", 409, "APIStatusError"),
        ("PreconditionFailedError", 412, "APIStatusError"),
        ("ContentTooLargeError", 413, "APIStatusError"),
        ("UnprocessableEntityError", 422, "APIStatusError"),
        ("RateLimitError", 429, "APIStatusError"),
        ("RequestHeaderFieldsTooLargeError", 431, "APIStatusError"),
        ("ClientClosedRequestError", 499, "APIStatusError"),
        ("InternalServerError", None, "APIStatusError"),
        ("HTTPNotImplementedError", 501, "InternalServerError"),
        ("ServiceUnavailableError", 503, "InternalServerError"),
        ("GatewayTimeoutError", 504, "InternalServerError"),
        ("OverloadedError", 529, "InternalServerError"),
    ],
)
globals().update(_ERRORS[0])
RequestTooLargeError = ContentTooLargeError  # noqa: F821 (defined just above)
DeadlineExceededError = GatewayTimeoutError  # noqa: F821

# Models whose non-streaming output the real client caps below the time rule.
_NONSTREAMING_TOKENS = {
    "claude-opus-4-20250514": 8192,
    "claude-opus-4-0": 8192,
    "claude-4-opus-20250514": 8192,
    "anthropic.claude-opus-4-20250514-v1:0": 8192,
    "claude-opus-4@20250514": 8192,
    "anthropic.claude-opus-4-1-20250805-v1:0": 8192,
    "claude-opus-4-1@20250805": 8192,
}


# The parameters anthropic 2.14's methods take (required ones first).
_CREATE_REQUIRED = ("max_tokens", "messages", "model")
_CREATE = """cache_control container diagnostics inference_geo metadata output_config service_tier speed
stop_sequences stream system thinking tool_choice tools""".split()
_COUNT_REQUIRED = ("messages", "model")
_COUNT = "cache_control output_config output_format speed system thinking tool_choice tools".split()


def _describe(status, body, parsed):
    if parsed:
        return f"Error code: {status} - {body}"
    return body or f"Error code: {status}"


class Messages(_gavel_api.Resource):
    def create(self, *, extra_headers=None, extra_query=None, extra_body=None, timeout=NOT_GIVEN, **params):
        where = f"{type(self).__name__}.create"
        _gavel_api.check_arguments(where, params, _CREATE, _CREATE_REQUIRED, streams=True)
        if params.get("stream"):
            raise NotImplementedError(
                "gavel's anthropic stand-in does not stream: call messages.create without stream=True"
            )
        if not _gavel_api.given(timeout) and not self._client._timeout_given:
            _check_nonstreaming(params.get("max_tokens"), params.get("model"))
        return self._client.post(
            "/v1/messages",
            params,
            types.Message,
            extra_headers=extra_headers,
            extra_query=extra_query,
            extra_body=extra_body,
            timeout=timeout,
        )

    def count_tokens(self, *, extra_headers=None, extra_query=None, extra_body=None, timeout=NOT_GIVEN, **params):
        _gavel_api.check_arguments(f"{type(self).__name__}.count_tokens", params, _COUNT, _COUNT_REQUIRED)
        return self._client.post(
            "/v1/messages/count_tokens",
            params,
            types.MessageTokensCount,
            extra_headers=extra_headers,
            extra_query=extra_query,
            extra_body=extra_body,
            timeout=timeout,
        )


def _check_nonstreaming(max_tokens, model):
    """The real client refuses, before sending, a request whose answer may take longer than
    its ten minutes without streaming."""
    if not isinstance(max_tokens, (int, float)):
        return
    limit = _NONSTREAMING_TOKENS.get(model)
    if 60 * 60 * max_tokens / 128_000 > 60 * 10 or (limit and max_tokens > limit):
        raise ValueError(
            "Streaming is required for operations that may take longer than 10 minutes. "
            "See https://platform.claude.com/docs/en/cli-sdks-libraries/sdks/python#long-requests for more details"
        )


class AsyncMessages(Messages):
    async def create(self, **kwargs):
        return Messages.create(self, **kwargs)

    async def count_tokens(self, **kwargs):
        return Messages.count_tokens(self, **kwargs)


class Anthropic(_gavel_api.Client):
    _errors = _ERRORS
    _REQUEST_ID_HEADER = "request-id"
    _messages = Messages

    def __init__(
        self,
        *,
        api_key=None,
        auth_token=None,
        base_url=None,
        timeout=NOT_GIVEN,
        max_retries=DEFAULT_MAX_RETRIES,
        default_headers=None,
        default_query=None,
    ):
        if api_key is not None and auth_token is not None:
            raise ValueError(
                "Pass at most one of `api_key=`, `auth_token=`, `credentials=`, `config=`, or `profile=`. "
                "Received `api_key=`, `auth_token=`."
            )
        if api_key is None and auth_token is None:
            api_key = os.environ.get("ANTHROPIC_API_KEY") or None
            auth_token = None if api_key else os.environ.get("ANTHROPIC_AUTH_TOKEN") or None
        self.api_key = api_key
        self.auth_token = auth_token
        if base_url is None:
            base_url = os.environ.get("ANTHROPIC_BASE_URL") or "https://api.anthropic.com"
        super().__init__(base_url, timeout, max_retries, default_headers, default_query)

    def _attach(self):
        self.messages = self._messages(self)

    def _auth_headers(self):
        key = self.api_key if self.api_key is not None else self.auth_token
        return {} if key is None else {"Authorization": f"Bearer {key}"}

    def _package_headers(self):
        return {"anthropic-version": ANTHROPIC_API_VERSION}

    def _status_error(self, response):
        return _gavel_api.status_error(self._errors, response, _describe)

    def _check_headers(self, headers):
        if not any(k.lower() in ("authorization", "x-api-key") for k in headers):
            raise TypeError(
                '"Could not resolve authentication method. Expected one of api_key, auth_token, or credentials '
                'to be set. Or for the `Authorization` header to be explicitly omitted"'
            )


class AsyncAnthropic(Anthropic):
    _messages = AsyncMessages


Client = Anthropic
AsyncClient = AsyncAnthropic

__all__ = [
    "Anthropic",
    "AnthropicError",
    "AsyncAnthropic",
    "AsyncClient",
    "Client",
    "NOT_GIVEN",
    "NotGiven",
    "Omit",
    "omit",
    "types",
    *_ERRORS[0],
]
