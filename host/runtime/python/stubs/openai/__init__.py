"""openai, as gavel's sandbox provides it: `OpenAI` and `AsyncOpenAI` with
`chat.completions.create`, `responses.create` and `embeddings.create`, sending the requests
openai 3.57 sends (`Authorization: Bearer`, `OpenAI-Organization`, `OpenAI-Project`) through
gavel's HTTP, with its error classes and response objects. No streaming."""

import array
import base64
import os

import _gavel_api
from _gavel_api import DEFAULT_MAX_RETRIES, NOT_GIVEN, NotGiven, Omit, omit

from . import types

__version__ = "3.57.0"


class OpenAIError(Exception):
    pass


def _read_error_body(error, body, *, status):
    if status:
        return
    if isinstance(body, dict):
        code = body.get("code")
        error.code = str(code) if code is not None else None
        error.param = body.get("param")
        error.type = body.get("type")
    else:
        error.code = error.param = error.type = None


_ERRORS = _gavel_api.error_classes(
    __name__,
    OpenAIError,
    request_id_header="x-request-id",
    timeout_message="Request timed out.",
    read_error_body=_read_error_body,
    statuses=[
        ("BadRequestError", 400, "APIStatusError"),
        ("AuthenticationError", 401, "APIStatusError"),
        ("PermissionDeniedError", 403, "APIStatusError"),
        ("NotFoundError", 404, "APIStatusError"),
        ("ConflictError", 409, "APIStatusError"),
        ("UnprocessableEntityError", 422, "APIStatusError"),
        ("RateLimitError", 429, "APIStatusError"),
        ("InternalServerError", None, "APIStatusError"),
    ],
)
globals().update(_ERRORS[0])


# The parameters openai 3.57's methods take.
_CHAT = """audio frequency_penalty function_call functions logit_bias logprobs max_completion_tokens
max_tokens metadata modalities moderation n parallel_tool_calls prediction presence_penalty
prompt_cache_key prompt_cache_options prompt_cache_retention reasoning_effort response_format
safety_identifier seed service_tier stop store stream stream_options temperature tool_choice tools
top_logprobs top_p user verbosity web_search_options""".split()
_RESPONSES = """access_programs background background_options context_management conversation image
include input instructions max_output_tokens max_tool_calls metadata model moderation
parallel_tool_calls previous_response_id prompt prompt_cache_key prompt_cache_options
prompt_cache_retention reasoning safety_identifier service_tier store stream stream_options
temperature text tool_choice tools top_logprobs top_p truncation user""".split()
_EMBEDDINGS = ["dimensions", "encoding_format", "user"]


def _describe(status, body, parsed):
    error = body.get("error", body) if parsed and isinstance(body, dict) else None
    message = error.get("message") if isinstance(error, dict) else None
    return f"Error code: {status} - {message}" if isinstance(message, str) and message else f"Error code: {status}"


def _stream_refused(params):
    if params.get("stream"):
        raise NotImplementedError("gavel's openai stand-in does not stream: call create without stream=True")


class Completions(_gavel_api.Resource):
    def create(self, *, extra_headers=None, extra_query=None, extra_body=None, timeout=NOT_GIVEN, **params):
        where = f"{type(self).__name__}.create"
        _gavel_api.check_arguments(where, params, _CHAT, ("messages", "model"), streams=True)
        _stream_refused(params)
        options = dict(extra_headers=extra_headers, extra_query=extra_query, extra_body=extra_body, timeout=timeout)
        return self._client.post("/chat/completions", params, types.ChatCompletion, **options)


class Responses(_gavel_api.Resource):
    def create(self, *, extra_headers=None, extra_query=None, extra_body=None, timeout=NOT_GIVEN, **params):
        _gavel_api.check_arguments(f"{type(self).__name__}.create", params, _RESPONSES, ())
        _stream_refused(params)
        options = dict(extra_headers=extra_headers, extra_query=extra_query, extra_body=extra_body, timeout=timeout)
        return self._client.post("/responses", params, types.Response, **options)


class Embeddings(_gavel_api.Resource):
    def create(self, *, extra_headers=None, extra_query=None, extra_body=None, timeout=NOT_GIVEN, **params):
        _gavel_api.check_arguments(f"{type(self).__name__}.create", params, _EMBEDDINGS, ("input", "model"))
        # Unless told otherwise the real client asks for base64 and decodes it to floats.
        encoding_format = params.get("encoding_format", NOT_GIVEN)
        if not _gavel_api.given(encoding_format):
            params["encoding_format"] = "base64"
        options = dict(extra_headers=extra_headers, extra_query=extra_query, extra_body=extra_body, timeout=timeout)
        result = self._client.post("/embeddings", params, types.CreateEmbeddingResponse, **options)
        if _gavel_api.given(encoding_format):
            return result
        if not result.data:
            raise ValueError("No embedding data received")
        for item in result.data:
            if isinstance(item.embedding, str):
                item.embedding = array.array("f", base64.b64decode(item.embedding)).tolist()
        return result


class AsyncCompletions(Completions):
    async def create(self, **kwargs):
        return Completions.create(self, **kwargs)


class AsyncResponses(Responses):
    async def create(self, **kwargs):
        return Responses.create(self, **kwargs)


class AsyncEmbeddings(Embeddings):
    async def create(self, **kwargs):
        return Embeddings.create(self, **kwargs)


class Chat:
    def __init__(self, completions):
        self.completions = completions


class OpenAI(_gavel_api.Client):
    _errors = _ERRORS
    _REQUEST_ID_HEADER = "x-request-id"
    _resources = (Completions, Responses, Embeddings)

    def __init__(
        self,
        *,
        api_key=None,
        organization=None,
        project=None,
        base_url=None,
        timeout=NOT_GIVEN,
        max_retries=DEFAULT_MAX_RETRIES,
        default_headers=None,
        default_query=None,
    ):
        if api_key is None:
            api_key = os.environ.get("OPENAI_API_KEY")
        if not api_key:
            raise OpenAIError(
                "Missing credentials. Please pass an `api_key`, `workload_identity`, `admin_api_key`, "
                "or set the `OPENAI_API_KEY` or `OPENAI_ADMIN_KEY` environment variable."
            )
        self.api_key = api_key
        self.organization = organization if organization is not None else os.environ.get("OPENAI_ORG_ID")
        self.project = project if project is not None else os.environ.get("OPENAI_PROJECT_ID")
        if base_url is None:
            base_url = os.environ.get("OPENAI_BASE_URL") or "https://api.openai.com/v1"
        super().__init__(base_url, timeout, max_retries, default_headers, default_query)

    def _attach(self):
        completions, responses, embeddings = self._resources
        self.chat = Chat(completions(self))
        self.responses = responses(self)
        self.embeddings = embeddings(self)

    def _auth_headers(self):
        key = self.api_key() if callable(self.api_key) else self.api_key
        return {"Authorization": f"Bearer {key}"}

    def _package_headers(self):
        headers = {}
        if self.organization is not None:
            headers["OpenAI-Organization"] = self.organization
        if self.project is not None:
            headers["OpenAI-Project"] = self.project
        return headers

    def _status_error(self, response):
        # The real client hands the error its body's `error` object.
        return _gavel_api.status_error(
            self._errors, response, _describe, lambda body: body.get("error", body) if isinstance(body, dict) else body
        )


class AsyncOpenAI(OpenAI):
    _resources = (AsyncCompletions, AsyncResponses, AsyncEmbeddings)


Client = OpenAI
AsyncClient = AsyncOpenAI

__all__ = [
    "AsyncClient",
    "AsyncOpenAI",
    "Client",
    "NOT_GIVEN",
    "NotGiven",
    "Omit",
    "OpenAI",
    "OpenAIError",
    "omit",
    "types",
    *_ERRORS[0],
]
