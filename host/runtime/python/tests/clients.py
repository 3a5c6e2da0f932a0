"""Makes the same `anthropic` and `openai` calls with the real packages (`real`: anthropic 2.14.0
and openai 3.57.0 installed) or with gavel's stand-ins (`gavel`: under CPython, over
`gavel_runtime.http`), against a loopback server that records each request and answers from a
script, and prints JSON: per case, the requests the server saw and what the caller read back.

    python clients.py real|gavel

test_clients.py runs both and compares them case by case.
"""

import asyncio
import json
import os
import socket
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

HERE = os.path.dirname(os.path.abspath(__file__))
RUNTIME = os.path.dirname(HERE)
MODE = sys.argv[1] if len(sys.argv) > 1 else "gavel"
if MODE == "gavel":
    sys.path[:0] = [RUNTIME, os.path.join(RUNTIME, "stubs")]
elif MODE != "real":
    sys.exit("usage: clients.py real|gavel")

# Each client reads its own credentials and addresses from the environment; the cases set them.
for _name in list(os.environ):
    if _name.startswith(("ANTHROPIC_", "OPENAI_")):
        del os.environ[_name]
os.environ["HOME"] = os.path.join(HERE, "data")  # no credential files of the user's

import anthropic  # noqa: E402
import openai  # noqa: E402

# Headers that are each client's own business (its transport, its telemetry), not the service's.
IGNORED = {"host", "accept-encoding", "connection", "content-length", "user-agent"}

# -- the loopback server -------------------------------------------------------------------

script = []  # (status, headers, body) answers, taken in order
STALL = "stall"  # an answer (STALL, {}, seconds): no answer for that long
seen = []  # the requests of the current case


class Handler(BaseHTTPRequestHandler):
    def _serve(self):
        length = int(self.headers.get("content-length") or 0)
        raw = self.rfile.read(length) if length else b""
        try:
            body = json.loads(raw) if raw else None
        except ValueError:
            body = raw.decode("utf-8", "replace")
        headers = {
            k.lower(): v
            for k, v in self.headers.items()
            if k.lower() not in IGNORED and not k.lower().startswith("x-stainless-")
        }
        seen.append({"method": self.command, "path": self.path, "headers": headers, "body": body})
        status, answer_headers, answer = script.pop(0) if script else (599, {}, b"script ran out")
        if status == STALL:
            time.sleep(answer)  # past the client's timeout: it gives up first
            return
        if not isinstance(answer, bytes):
            answer = json.dumps(answer).encode()
            answer_headers = {"content-type": "application/json", **answer_headers}
        self.send_response(status)
        for name, value in answer_headers.items():
            self.send_header(name, value)
        self.send_header("content-length", str(len(answer)))
        self.end_headers()
        self.wfile.write(answer)

    do_POST = do_GET = _serve

    def log_message(self, *args):
        pass


server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
threading.Thread(target=server.serve_forever, daemon=True).start()
URL = f"http://127.0.0.1:{server.server_address[1]}"


def _closed_port():
    """An address where nothing listens."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return f"http://127.0.0.1:{s.getsockname()[1]}"


CLOSED = _closed_port()


# A retried answer asks for a 1 ms wait, so that the real clients do not back off for seconds.
QUICK = {"retry-after-ms": "1"}

# -- canned answers ------------------------------------------------------------------------

MESSAGE = {
    "id": "msg_01",
    "type": "message",
    "role": "assistant",
    "model": "claude-sonnet-4-5",
    "content": [
        {"type": "text", "text": "PASS: the answer names the capital."},
        {"type": "tool_use", "id": "toolu_1", "name": "verdict", "input": {"score": 0.9, "why": ["a", "b"]}},
    ],
    "stop_reason": "end_turn",
    "stop_sequence": None,
    "usage": {"input_tokens": 412, "output_tokens": 19, "cache_read_input_tokens": 0},
}

CHAT = {
    "id": "chatcmpl-1",
    "object": "chat.completion",
    "created": 1767225600,
    "model": "gpt-4o-mini",
    "choices": [
        {
            "index": 0,
            "finish_reason": "tool_calls",
            "logprobs": None,
            "message": {
                "role": "assistant",
                "content": '{"score": 1, "reason": "correct"}',
                "refusal": None,
                "tool_calls": [
                    {"id": "call_1", "type": "function", "function": {"name": "grade", "arguments": '{"s": 1}'}}
                ],
            },
        }
    ],
    "usage": {"prompt_tokens": 50, "completion_tokens": 9, "total_tokens": 59},
    "system_fingerprint": "fp_1",
}

RESPONSE = {
    "id": "resp_1",
    "object": "response",
    "created_at": 1767225600,
    "status": "completed",
    "model": "gpt-4.1",
    "output": [
        {"type": "reasoning", "id": "rs_1", "summary": []},
        {
            "type": "message",
            "id": "msg_1",
            "role": "assistant",
            "status": "completed",
            "content": [
                {"type": "output_text", "text": "Score: ", "annotations": []},
                {"type": "output_text", "text": "7/10", "annotations": []},
            ],
        },
    ],
    "parallel_tool_calls": True,
    "tool_choice": "auto",
    "tools": [],
    "usage": {"input_tokens": 30, "output_tokens": 5, "total_tokens": 35},
}

# float32 [0.5, -1.0, 0.25] little-endian, as the service sends base64 embeddings
EMBEDDING_B64 = "AAAAPwAAgL8AAIA+"
EMBEDDINGS = {
    "object": "list",
    "model": "text-embedding-3-small",
    "data": [{"object": "embedding", "index": 0, "embedding": EMBEDDING_B64}],
    "usage": {"prompt_tokens": 3, "total_tokens": 3},
}

# -- what a caller reads -------------------------------------------------------------------


def model_views(obj):
    return {
        "type": type(obj).__name__,
        "model_dump": obj.model_dump(),
        "model_dump_exclude_none": obj.model_dump(exclude_none=True),
        "to_dict": obj.to_dict(),
        "to_json": json.loads(obj.to_json()),
        "model_dump_json": json.loads(obj.model_dump_json()),
        "repr": repr(obj),
        "request_id": getattr(obj, "_request_id", "absent"),
    }


def error_views(e, package):
    out = {"type": type(e).__name__, "str": str(e)}
    for name in ("message", "body", "status_code", "request_id", "code", "param", "type"):
        if hasattr(e, name):
            out[f"attr {name}"] = getattr(e, name)
    for name in ("APIError", "APIStatusError", "APIConnectionError", "APITimeoutError", "InternalServerError"):
        out[f"is {name}"] = isinstance(e, getattr(package, name))
    if hasattr(e, "response"):
        out["response"] = [e.response.status_code, e.response.headers.get("x-trace"), e.response.text]
    if getattr(e, "request", None) is not None:
        out["request"] = [e.request.method, str(e.request.url).replace(URL, "URL")]
    return out


def run(case_name, answers, call, package):
    script[:] = answers
    seen.clear()
    try:
        value = call()
        if asyncio.iscoroutine(value):
            value = asyncio.run(value)
        result = {"value": value}
    except Exception as e:
        result = {"error": error_views(e, package)}
    result["requests"] = list(seen)
    result["unanswered"] = len(script)
    return case_name, result


# -- the cases -----------------------------------------------------------------------------

ASK = [{"role": "user", "content": "Is Paris the capital of France? Answer PASS or FAIL."}]


def then(read, value):
    """`read` applied to what a client method returned: at once, or, for an async client's
    coroutine, once it is awaited (the coroutine `run` drives)."""
    if not asyncio.iscoroutine(value):
        return read(value)

    async def awaited():
        return read(await value)

    return awaited()


def read_message(m):
    return {
        "text": m.content[0].text,
        "tool": [m.content[1].name, m.content[1].input],
        "usage": [m.usage.input_tokens, m.usage.output_tokens, m.usage.cache_creation_input_tokens],
        "stop": m.stop_reason,
        "classes": [
            isinstance(m, anthropic.types.Message),
            isinstance(m.content[0], anthropic.types.TextBlock),
            isinstance(m.content[1], anthropic.types.ToolUseBlock),
            isinstance(m.usage, anthropic.types.Usage),
        ],
        **model_views(m),
        "blocks": [model_views(b) for b in m.content],
    }


def read_count(n):
    return {"input_tokens": n.input_tokens, **model_views(n)}


def read_chat(c):
    call = c.choices[0].message.tool_calls[0]
    return {
        "content": c.choices[0].message.content,
        "finish": c.choices[0].finish_reason,
        "tool": [call.id, call.function.name, call.function.arguments],
        "usage": [c.usage.prompt_tokens, c.usage.completion_tokens, c.usage.total_tokens],
        "classes": [
            isinstance(c, openai.types.chat.ChatCompletion),
            isinstance(c.choices[0].message, openai.types.chat.ChatCompletionMessage),
            isinstance(c.usage, openai.types.CompletionUsage),
        ],
        **model_views(c),
        "choice": model_views(c.choices[0]),
        "message": model_views(c.choices[0].message),
    }


def read_response(r):
    return {
        "output_text": r.output_text,
        "usage": [r.usage.input_tokens, r.usage.output_tokens],
        "message": model_views(r.output[1]),
        "part": model_views(r.output[1].content[0]),
        "status": r.status,
        "to_dict": r.to_dict(),
    }


def read_embeddings(e):
    return {"embedding": e.data[0].embedding, "usage": e.usage.total_tokens, **model_views(e)}


def imported(module, names):
    """The names importable from `module`, as a grader's `from module import ...` needs them."""
    found = __import__(module, fromlist=names)
    return [name for name in names if hasattr(found, name)]


def anthropic_cases():
    def create(client, **extra):
        value = client.messages.create(
            model="claude-sonnet-4-5", max_tokens=64, system="You grade.", messages=ASK, **extra
        )
        return then(read_message, value)

    def count(client):
        value = client.messages.count_tokens(model="claude-sonnet-4-5", system="Count.", messages=ASK)
        return then(read_count, value)

    def plain(**options):
        return anthropic.Anthropic(api_key="k", base_url=URL, **options)

    names = "Message MessageParam MessageTokensCount TextBlock TextBlockParam ToolParam ToolUseBlock Usage".split()
    yield "anthropic/type-imports", [], lambda: imported("anthropic.types", names)
    ok = [(200, {"request-id": "req_1"}, MESSAGE)]
    yield "anthropic/create", ok, lambda: create(anthropic.Anthropic(api_key="sk-ant", base_url=URL))
    yield "anthropic/create-async", ok, lambda: create(anthropic.AsyncAnthropic(api_key="sk-ant", base_url=URL + "/"))
    yield "anthropic/create-extras", ok, lambda: create(
        anthropic.Anthropic(
            auth_token="tok", base_url=URL + "/proxy", default_headers={"x-team": "evals"}, default_query={"a": "1"}
        ),
        extra_headers={"x-extra": "1"},
        extra_query={"beta": "true"},
        extra_body={"metadata": {"user_id": "u1"}},
        timeout=30,
    )
    yield "anthropic/count-tokens-env", [(200, {}, {"input_tokens": 21})], lambda: _with_env(
        {"ANTHROPIC_API_KEY": "sk-env", "ANTHROPIC_BASE_URL": URL}, lambda: count(anthropic.Anthropic())
    )
    yield "anthropic/count-tokens-async", [(200, {}, {"input_tokens": 21, "extra": [1]})], lambda: count(
        anthropic.AsyncAnthropic(api_key="k", base_url=URL)
    )
    yield "anthropic/no-credential", [], lambda: create(anthropic.Anthropic(base_url=URL))
    yield "anthropic/unknown-argument", [], lambda: create(plain(), temperature=0)
    yield "anthropic/missing-argument", [], lambda: plain().messages.create(model="m", messages=ASK)
    yield "anthropic/count-missing-argument", [], lambda: plain().messages.count_tokens(model="m")
    yield "anthropic/async-unknown-argument", [], lambda: create(
        anthropic.AsyncAnthropic(api_key="k", base_url=URL), top_q=1
    )
    yield "anthropic/too-long-unstreamed", [], lambda: plain().messages.create(
        model="claude-sonnet-4-5", max_tokens=64000, messages=ASK
    )
    statuses = [
        (400, {"type": "error", "error": {"type": "invalid_request_error", "message": "max_tokens: too big"}}),
        (401, {"type": "error", "error": {"type": "authentication_error", "message": "invalid x-api-key"}}),
        (403, {"type": "error", "error": {"type": "permission_error", "message": "no"}}),
        (404, {"type": "error", "error": {"type": "not_found_error", "message": "model: nope"}}),
        (413, {"type": "error", "error": {"type": "request_too_large", "message": "big"}}),
        (422, {"type": "error", "error": {"type": "invalid_request_error", "message": "bad"}}),
        (418, {"type": "error", "error": {"type": "teapot", "message": "short and stout"}}),
    ]
    for status, body in statuses:
        answer = [(status, {"request-id": f"req_{status}", "x-trace": "t"}, body)]
        yield f"anthropic/status-{status}", answer, lambda: create(plain())
    for status in (408, 409, 429, 500, 503, 529):
        body = {"type": "error", "error": {"type": "overloaded_error", "message": f"status {status}"}}
        answers = [(status, {**QUICK, "request-id": f"r{i}"}, body) for i in range(3)]
        yield f"anthropic/retried-{status}", answers, lambda: create(plain())
    recovering = [(529, QUICK, {"error": {"type": "overloaded_error"}}), (200, {}, MESSAGE)]
    yield "anthropic/retry-then-ok", recovering, lambda: create(plain())
    told = [(500, {"x-should-retry": "false"}, {"error": {"type": "api_error"}})]
    yield "anthropic/told-not-to-retry", told, lambda: create(plain())
    told = [(400, {**QUICK, "x-should-retry": "true"}, {"error": {}}), (200, {}, MESSAGE)]
    yield "anthropic/told-to-retry", told, lambda: create(plain())
    fewer = [(500, QUICK, b"upstream failed")] * 2
    yield "anthropic/max-retries-1-text-body", fewer, lambda: create(plain(max_retries=1))
    yield "anthropic/with-options", [(500, QUICK, b"")], lambda: create(plain().with_options(max_retries=0))
    yield "anthropic/timeout", [(STALL, {}, 2)], lambda: create(plain(max_retries=0), timeout=0.2)
    yield "anthropic/connection-refused", [], lambda: create(
        anthropic.Anthropic(api_key="k", base_url=CLOSED, max_retries=0)
    )


def openai_cases():
    def chat(client, **extra):
        value = client.chat.completions.create(model="gpt-4o-mini", messages=ASK, temperature=0, **extra)
        return then(read_chat, value)

    def respond(client):
        value = client.responses.create(model="gpt-4.1", input="Grade this: 7/10", instructions="Be strict.")
        return then(read_response, value)

    def embed(client, **extra):
        return then(read_embeddings, client.embeddings.create(model="text-embedding-3-small", input=["a", "b"], **extra))

    def plain(**options):
        return openai.OpenAI(api_key="k", base_url=URL, **options)

    names = """ChatCompletion ChatCompletionMessage ChatCompletionMessageFunctionToolCall
    ChatCompletionMessageParam ChatCompletionToolParam""".split()
    yield "openai/chat-type-imports", [], lambda: imported("openai.types.chat", names)
    names = "CompletionUsage CreateEmbeddingResponse Embedding".split()
    yield "openai/type-imports", [], lambda: imported("openai.types", names)
    ok = [(200, {"x-request-id": "req_o"}, CHAT)]
    yield "openai/chat", ok, lambda: chat(openai.OpenAI(api_key="sk-oa", base_url=URL + "/v1"))
    yield "openai/chat-async", ok, lambda: chat(openai.AsyncOpenAI(api_key="sk-oa", base_url=URL + "/v1/"))
    env = {"OPENAI_API_KEY": "sk-env", "OPENAI_BASE_URL": URL + "/v1", "OPENAI_ORG_ID": "org-1", "OPENAI_PROJECT_ID": "p"}
    yield "openai/chat-env", ok, lambda: _with_env(env, lambda: chat(openai.OpenAI()))
    yield "openai/chat-extras", ok, lambda: chat(
        openai.OpenAI(api_key="k", base_url=URL, organization="org-2", default_headers={"x-team": "evals"}),
        extra_headers={"x-extra": "1"},
        extra_body={"seed": 7},
        extra_query={"api-version": "2024"},
        response_format={"type": "json_object"},
    )
    yield "openai/responses", [(200, {}, RESPONSE)], lambda: respond(plain())
    yield "openai/responses-async", [(200, {}, RESPONSE)], lambda: respond(openai.AsyncOpenAI(api_key="k", base_url=URL))
    yield "openai/embeddings-base64", [(200, {}, EMBEDDINGS)], lambda: embed(plain())
    floats = {**EMBEDDINGS, "data": [{"object": "embedding", "index": 0, "embedding": [0.5, -1.0]}]}
    yield "openai/embeddings-float", [(200, {}, floats)], lambda: embed(plain(), encoding_format="float")
    yield "openai/embeddings-empty", [(200, {}, {**EMBEDDINGS, "data": []})], lambda: embed(plain())
    yield "openai/embeddings-async", [(200, {}, EMBEDDINGS)], lambda: embed(openai.AsyncOpenAI(api_key="k", base_url=URL))
    yield "openai/no-key", [], lambda: openai.OpenAI(base_url=URL) and None
    yield "openai/chat-missing-argument", [], lambda: plain().chat.completions.create(model="m")
    yield "openai/chat-unknown-argument", [], lambda: chat(plain(), max_output_tokens=5)
    yield "openai/embeddings-missing-arguments", [], lambda: plain().embeddings.create()
    yield "openai/responses-unknown-argument", [], lambda: plain().responses.create(messages=ASK)
    for status in (400, 401, 403, 404, 422, 418):
        body = {"error": {"message": f"status {status}", "type": "invalid_request_error", "param": "model", "code": status}}
        answer = [(status, {"x-request-id": f"req_{status}", "x-trace": "t"}, body)]
        yield f"openai/status-{status}", answer, lambda: chat(plain())
    for status in (408, 409, 429, 500, 502):
        body = {"error": {"message": "slow down", "type": "rate_limit", "param": None, "code": "rate_limit_exceeded"}}
        answers = [(status, QUICK, body)] * 3
        yield f"openai/retried-{status}", answers, lambda: chat(plain())
    text = [(502, QUICK, b"<html>Bad Gateway</html>")] * 3
    yield "openai/text-error-body", text, lambda: respond(plain())
    yield "openai/timeout", [(STALL, {}, 2)], lambda: chat(plain(max_retries=0, timeout=0.2))
    yield "openai/connection-refused", [], lambda: chat(openai.OpenAI(api_key="k", base_url=CLOSED, max_retries=0))


def _with_env(values, call):
    os.environ.update(values)
    try:
        return call()
    finally:
        for name in values:
            del os.environ[name]


def main():
    out = {}
    for package, cases in ((anthropic, anthropic_cases()), (openai, openai_cases())):
        for name, answers, call in cases:
            key, result = run(name, answers, call, package)
            text = json.dumps(result, default=repr).replace(URL, "URL").replace(CLOSED, "CLOSED")
            out[key] = json.loads(text)
    json.dump(out, sys.stdout, indent=1, sort_keys=True)


if __name__ == "__main__":
    main()
