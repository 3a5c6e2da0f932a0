"""HTTP for graders: each request is sent by the host over `wasi:http`, where the grader's
`allow: network:` grants it (nothing by default: then every request fails as on a machine with
no network, and the grader's own `except` runs).

`request()` is the one function the rest builds on: `urllib.request.urlopen` goes over it (see
`install`), and so do the stand-in API clients. Under plain CPython (the runtime's own tests)
it sends with urllib instead, with the same results and errors.

Errors are raised as CPython raises them: `urllib.error.URLError` whose `reason` is the
`OSError` a socket would have given (`ConnectionRefusedError`, `socket.gaierror`,
`TimeoutError`), so code written for a real network handles them unchanged.
"""

import errno
import http
import http.client
import io
import socket
import urllib.error
import urllib.parse
import urllib.request

__all__ = ["Response", "request", "install"]

# Headers the host sets itself; a request naming them would be refused.
_HOST_HEADERS = {
    "host",
    "connection",
    "keep-alive",
    "proxy-connection",
    "proxy-authorization",
    "proxy-authenticate",
    "transfer-encoding",
    "upgrade",
    "http2-settings",
}

# What one write to a request body's stream may hold.
_WRITE_CHUNK = 4096
_READ_CHUNK = 65536


class Response:
    """A response: `status`, `headers` as (name, value) pairs in order, and the whole `body`."""

    def __init__(self, status, headers, body):
        self.status = status
        self.headers = headers
        self.body = body

    def header(self, name, default=None):
        """The first value of header `name` (any case), or `default`."""
        name = name.lower()
        return next((v for k, v in self.headers if k.lower() == name), default)

    @property
    def text(self):
        return self.body.decode("utf-8", "replace")

    def json(self):
        import json

        return json.loads(self.body)

    def __repr__(self):
        return f"<Response {self.status}, {len(self.body)} bytes>"


def request(method, url, headers=(), body=None, timeout=None):
    """Sends one request and returns its `Response`, whatever its status; a redirect is
    returned, not followed. `headers` is a mapping or (name, value) pairs; `body` bytes or
    text; `timeout` seconds (the call's deadline bounds it anyway), or none (urllib's default,
    `socket._GLOBAL_DEFAULT_TIMEOUT`, when `urlopen` is given none)."""
    if timeout is socket._GLOBAL_DEFAULT_TIMEOUT:
        timeout = None
    pairs = list(headers.items()) if hasattr(headers, "items") else list(headers)
    if isinstance(body, str):
        body = body.encode("utf-8")
    parts = urllib.parse.urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise urllib.error.URLError(f"unknown url type or no host: {url!r}")
    if _wasi is None:
        return _urllib_request(method.upper(), url, pairs, body, timeout)
    return _wasi_request(method.upper(), parts, pairs, body, timeout)


try:
    from componentize_py_types import Err
    from wit_world.imports import outgoing_handler, streams
    from wit_world.imports import wasi_http_types as _wasi
except ImportError:  # plain CPython
    _wasi = None


def _wasi_request(method, parts, pairs, body, timeout):
    t = _wasi
    fields = t.Fields.from_list(
        [(k, str(v).encode("latin-1")) for k, v in pairs if k.lower() not in _HOST_HEADERS]
    )
    outgoing = t.OutgoingRequest(fields)
    known = {
        "GET": t.Method_Get(),
        "HEAD": t.Method_Head(),
        "POST": t.Method_Post(),
        "PUT": t.Method_Put(),
        "DELETE": t.Method_Delete(),
        "OPTIONS": t.Method_Options(),
        "PATCH": t.Method_Patch(),
    }
    outgoing.set_method(known.get(method) or t.Method_Other(method))
    outgoing.set_scheme(t.Scheme_Https() if parts.scheme == "https" else t.Scheme_Http())
    authority = parts.netloc.rsplit("@", 1)[-1]
    outgoing.set_authority(authority)
    path = parts.path or "/"
    outgoing.set_path_with_query(path + (f"?{parts.query}" if parts.query else ""))
    options = t.RequestOptions()
    if timeout is not None:
        nanos = max(1, int(timeout * 1e9))
        options.set_connect_timeout(nanos)
        options.set_first_byte_timeout(nanos)
        options.set_between_bytes_timeout(nanos)
    outgoing_body = outgoing.body()
    try:
        future = outgoing_handler.handle(outgoing, options)
    except Err as e:
        raise _error(e.value, parts) from None
    if body:
        with outgoing_body.write() as stream:
            for start in range(0, len(body), _WRITE_CHUNK):
                try:
                    stream.blocking_write_and_flush(body[start : start + _WRITE_CHUNK])
                except Err:
                    break  # the host ended the request: its future says why
    try:
        t.OutgoingBody.finish(outgoing_body, None)
    except Err:
        pass  # the host ended the request before its body: its future says why
    with future:
        with future.subscribe() as ready:
            ready.block()
        answer = future.get()
    if answer is None or isinstance(answer, Err):
        raise _error(None, parts)
    if isinstance(answer.value, Err):
        raise _error(answer.value.value, parts)
    with answer.value.value as response:
        status = response.status()
        with response.headers() as fields:
            headers = [(k, v.decode("latin-1")) for k, v in fields.entries()]
        incoming = response.consume()
        chunks = []
        with incoming.stream() as stream:
            while True:
                try:
                    chunks.append(stream.blocking_read(_READ_CHUNK))
                except Err as e:
                    if isinstance(e.value, streams.StreamError_Closed):
                        break
                    code = t.http_error_code(e.value.value)
                    if code is None:  # the host's own reasons do not travel with the stream
                        raise urllib.error.URLError(
                            ConnectionError(
                                f"reading the response of {parts.hostname} failed: the "
                                "connection ended, or the responses passed gavel's 16 MiB per "
                                "call, or the call's deadline came"
                            )
                        ) from None
                    raise _error(code, parts) from None
        t.IncomingBody.finish(incoming).__exit__(None, None, None)
    return Response(status, headers, b"".join(chunks))


def _error(code, parts):
    """The `URLError` CPython raises for what the host answered, `code` a wasi:http
    error-code (or none)."""
    t = _wasi
    where = f"{parts.hostname}:{parts.port or (443 if parts.scheme == 'https' else 80)}"
    if isinstance(code, t.ErrorCode_DnsError) and code.value.rcode == "REFUSED":
        reason = socket.gaierror(
            socket.EAI_NONAME,
            f"cannot resolve {parts.hostname!r}: not granted, a grader reaches only the "
            "hosts its allow: network: grants",
        )
    elif isinstance(code, t.ErrorCode_DnsError):
        # A granted name whose resolution failed: the resolver's own reason.
        reason = socket.gaierror(
            socket.EAI_NONAME,
            f"cannot resolve {parts.hostname!r}: name resolution failed "
            f"({code.value.rcode or 'no reason given'})",
        )
    elif isinstance(code, t.ErrorCode_DnsTimeout):
        reason = socket.gaierror(
            socket.EAI_AGAIN, f"cannot resolve {parts.hostname!r}: name resolution timed out"
        )
    elif isinstance(code, t.ErrorCode_DestinationIpProhibited):
        reason = ConnectionRefusedError(
            errno.ECONNREFUSED,
            f"connection to {where} refused: the address is not granted by allow: network: "
            "(this machine's and private networks' addresses need an address grant such as "
            "127.0.0.1:8080)",
        )
    elif isinstance(code, t.ErrorCode_ConnectionRefused):
        reason = ConnectionRefusedError(errno.ECONNREFUSED, f"connection to {where} refused")
    elif isinstance(
        code,
        (
            t.ErrorCode_ConnectionTimeout,
            t.ErrorCode_ConnectionReadTimeout,
            t.ErrorCode_HttpResponseTimeout,
        ),
    ):
        reason = TimeoutError(errno.ETIMEDOUT, f"{where} timed out")
    elif isinstance(code, t.ErrorCode_ConnectionLimitReached):
        reason = ConnectionError("gavel sends at most 32 requests per call")
    elif isinstance(code, t.ErrorCode_HttpResponseBodySize):
        reason = ConnectionError("responses past 16 MiB per call are cut off by gavel")
    elif isinstance(code, t.ErrorCode_InternalError) and code.value:
        # The host's own reason, such as a certificate it refused.
        reason = ConnectionError(f"request to {where} failed: {code.value}")
    else:
        name = type(code).__name__.replace("ErrorCode_", "") if code is not None else "no answer"
        reason = ConnectionError(f"request to {where} failed: {name}")
    return urllib.error.URLError(reason)


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args, **kwargs):
        return None


def _urllib_request(method, url, pairs, body, timeout):
    opener = urllib.request.build_opener(_NoRedirect)
    req = urllib.request.Request(url, data=body, headers=dict(pairs), method=method)
    try:
        with opener.open(req, timeout=timeout) as answer:
            return Response(answer.status, list(answer.headers.items()), answer.read())
    except urllib.error.HTTPError as answer:
        return Response(answer.code, list(answer.headers.items()), answer.read())


class _Handler(urllib.request.AbstractHTTPHandler):
    """urllib's http and https, over `request` (the base class adds Content-Length and
    Content-Type as urllib's own handlers do)."""

    http_request = urllib.request.AbstractHTTPHandler.do_request_
    https_request = urllib.request.AbstractHTTPHandler.do_request_

    def http_open(self, req):
        answer = request(
            req.get_method(),
            req.full_url,
            req.header_items(),
            req.data,
            getattr(req, "timeout", None),
        )
        # What CPython's `do_open` returns: the `HTTPResponse`, its `msg` the reason phrase.
        response = _http_response(req.get_method(), req.full_url, answer)
        response.url = req.get_full_url()
        response.msg = response.reason
        return response

    https_open = http_open


class _Socket:
    """What `http.client.HTTPResponse` reads a response from: its head, then its body, already
    whole."""

    def __init__(self, head, body):
        self._parts = (head, body)

    def makefile(self, mode, *args, **kwargs):
        return _Reader(self._parts)

    def close(self):
        pass


class _Reader(io.BufferedIOBase):
    """The bytes of `parts`, one after the other, as a buffered stream. A read that takes a
    whole part gives the part itself: a body read whole (`HTTPResponse.read()`) is not copied,
    so a body near the cap on a call's responses fits in a call's memory."""

    def __init__(self, parts):
        super().__init__()
        self._parts = list(parts)
        self._at = [0] * len(self._parts)

    def readable(self):
        return True

    def read(self, size=-1):
        pieces, wanted = [], None if size is None or size < 0 else size
        for i, data in enumerate(self._parts):
            at = self._at[i]
            take = len(data) - at if wanted is None else min(len(data) - at, wanted)
            if take <= 0:
                if wanted == 0:
                    break
                continue
            pieces.append(data if at == 0 and take == len(data) else data[at : at + take])
            self._at[i] = at + take
            if wanted is not None:
                wanted -= take
        return pieces[0] if len(pieces) == 1 else b"".join(pieces)

    read1 = read

    def readinto(self, buffer):
        data = self.read(len(buffer))
        buffer[: len(data)] = data
        return len(data)

    readinto1 = readinto

    def readline(self, size=-1):
        line = b""
        for i, data in enumerate(self._parts):
            at = self._at[i]
            if at == len(data):
                continue
            end = data.find(b"\n", at)
            end = len(data) if end < 0 else end + 1
            if size is not None and size >= 0:
                end = min(end, at + size - len(line))
            line += data[at:end]
            self._at[i] = end
            if line.endswith(b"\n") or (size is not None and 0 <= size <= len(line)):
                break
        return line

    def peek(self, size=0):
        for i, data in enumerate(self._parts):
            if self._at[i] < len(data):
                return data[self._at[i] : self._at[i] + max(size, io.DEFAULT_BUFFER_SIZE)]
        return b""


class _Connection(http.client.HTTPConnection):
    """`http.client.HTTPConnection` (and `HTTPSConnection`) over `request`: the request is
    gathered as http.client's callers write it and sent once it is whole (by `endheaders`, or
    when a body announced by Content-Length has all been `send`), where CPython sends it; the
    response is CPython's own `HTTPResponse`, read from the host's answer. A refused request
    raises there the `OSError` a socket would have given. What it does not override (the
    helpers urllib calls on the class) is CPython's."""

    default_port = 80
    scheme = "http"

    def __init__(self, host, port=None, timeout=socket._GLOBAL_DEFAULT_TIMEOUT, *args, **kwargs):
        if port is None and host.rfind(":") > host.rfind("]"):
            host, _, port = host.rpartition(":")
        self.host = host
        self.port = int(port) if port else self.default_port
        self.timeout = None if timeout is socket._GLOBAL_DEFAULT_TIMEOUT else timeout
        self._request = None
        self._answer = None

    def set_debuglevel(self, level):
        self.debuglevel = level

    def connect(self):
        pass

    def close(self):
        self._request = self._answer = None

    def putrequest(self, method, url, skip_host=False, skip_accept_encoding=False):
        # [method, url, headers, body parts, body bytes still announced, or None]
        self._request = [method, url, [], [], None]
        self._answer = None

    def putheader(self, header, *values):
        self._request[2].append((str(header), ", ".join(str(v) for v in values)))

    def send(self, data):
        if isinstance(data, str):
            data = data.encode("iso-8859-1")
        elif hasattr(data, "read"):
            data = data.read()
        data = bytes(data)
        self._request[3].append(data)
        if self._request[4] is not None:
            self._request[4] -= len(data)
            if self._request[4] <= 0:
                self._send()

    def endheaders(self, message_body=None, *, encode_chunked=False):
        if message_body is not None:
            self._request[3].append(message_body.encode("utf-8") if isinstance(message_body, str) else bytes(message_body))
            return self._send()
        length = next((v for k, v in self._request[2] if k.lower() == "content-length"), "0")
        self._request[4] = int(length) if length.strip().isdigit() else 0
        if self._request[4] <= 0:
            self._send()

    def _send(self):
        method, url, headers, body, _ = self._request
        if "://" not in url:
            host = f"[{self.host}]" if ":" in self.host else self.host
            url = f"{self.scheme}://{host}:{self.port}{url}"
        try:
            answer = request(method, url, headers, b"".join(body) or None, self.timeout)
        except urllib.error.URLError as e:
            raise (e.reason if isinstance(e.reason, OSError) else OSError(str(e.reason))) from None
        self._answer = (method, url, answer)

    def request(self, method, url, body=None, headers={}, *, encode_chunked=False):
        self.putrequest(method, url)
        headers = dict(headers)
        for name, value in headers.items():
            self.putheader(name, value)
        # As CPython's `_send_request`: a body of known length is announced by Content-Length
        # (none: 0 for a method that expects one), a text body sent in ISO-8859-1.
        if not {k.lower() for k in headers} & {"content-length", "transfer-encoding"}:
            length = self._get_content_length(body, method)
            if length is not None:
                self.putheader("Content-Length", str(length))
        if isinstance(body, str):
            body = http.client._encode(body, "body")
        self.endheaders(body)

    def getresponse(self):
        if self._answer is None:
            raise http.client.ResponseNotReady("no request was sent")
        method, url, answer = self._answer
        self._request = self._answer = None
        return _http_response(method, url, answer)


def _http_response(method, url, answer):
    """CPython's own `HTTPResponse` of the host's `answer`, read as from a socket."""
    try:
        phrase = http.HTTPStatus(answer.status).phrase
    except ValueError:
        phrase = ""
    head = [f"HTTP/1.1 {answer.status} {phrase}"]
    for name, value in answer.headers:
        if name.lower() not in ("transfer-encoding", "content-length"):
            head.append(f"{name}: {value}")
    head.append(f"Content-Length: {len(answer.body)}")
    head = ("\r\n".join(head) + "\r\n\r\n").encode("iso-8859-1")
    response = http.client.HTTPResponse(_Socket(head, answer.body), method=method, url=url)
    response.begin()
    return response


class _SecureConnection(_Connection):
    default_port = 443
    scheme = "https"

    def __init__(self, host, port=None, *args, context=None, **kwargs):
        # TLS and its certificate checks are the host's: a context has nothing to set.
        super().__init__(host, port, *args, **kwargs)


def _adapt_requests(adapters):
    """Makes `requests` (its `HTTPAdapter`, which every session mounts) send over `request`;
    a request that fails raises `requests.ConnectionError`. Each redirect is a new call here."""
    from requests import exceptions, models, utils
    from requests.structures import CaseInsensitiveDict

    def send(self, req, stream=False, timeout=None, verify=True, cert=None, proxies=None):
        if isinstance(timeout, tuple):
            timeout = max((t for t in timeout if t is not None), default=None)
        body = req.body
        if body is not None and not isinstance(body, (bytes, str)):
            body = b"".join(c if isinstance(c, bytes) else c.encode() for c in body)
        try:
            answer = request(req.method, req.url, list(req.headers.items()), body, timeout)
        except urllib.error.URLError as e:
            raise exceptions.ConnectionError(e.reason, request=req) from None
        response = models.Response()
        response.status_code = answer.status
        response.headers = CaseInsensitiveDict(answer.headers)
        response._content = answer.body
        response.url = req.url
        response.request = req
        response.reason = http.client.responses.get(answer.status, "")
        response.encoding = utils.get_encoding_from_headers(response.headers)
        response.connection = self
        return response

    adapters.HTTPAdapter.send = send


def _adapt_httpx(transports):
    """Makes httpx's default transports (`httpx.Client`, `httpx.post`, `httpx.AsyncClient`)
    send over `request`; a request that fails raises `httpx.ConnectError`."""
    import httpx

    def sent(req):
        timeout = req.extensions.get("timeout", {})
        seconds = max((t for t in timeout.values() if t is not None), default=None)
        try:
            answer = request(req.method, str(req.url), req.headers.multi_items(), req.content, seconds)
        except urllib.error.URLError as e:
            raise httpx.ConnectError(str(e.reason), request=req) from None
        return httpx.Response(answer.status, headers=answer.headers, content=answer.body, request=req)

    def handle_request(self, req):
        req.read()
        return sent(req)

    async def handle_async_request(self, req):
        await req.aread()
        return sent(req)

    # httpx's own transports make an SSL context and a connection pool, and close the pool
    # under httpcore's error mapping (httpcore imports `ssl`, which the sandbox lacks: TLS is
    # the host's); a request here uses none of them.
    def no_pool(self, *args, **kwargs):
        pass

    def enter(self):
        return self

    def leave(self, *args, **kwargs):
        return None

    async def aenter(self):
        return self

    async def aleave(self, *args, **kwargs):
        return None

    for transport in (transports.HTTPTransport, transports.AsyncHTTPTransport):
        transport.__init__ = no_pool
    transports.HTTPTransport.__enter__ = enter
    transports.HTTPTransport.__exit__ = leave
    transports.HTTPTransport.close = leave
    transports.AsyncHTTPTransport.__aenter__ = aenter
    transports.AsyncHTTPTransport.__aexit__ = aleave
    transports.AsyncHTTPTransport.aclose = aleave
    transports.HTTPTransport.handle_request = handle_request
    transports.AsyncHTTPTransport.handle_async_request = handle_async_request


# Modules adapted to send over `request` when they are imported.
_ADAPTERS = {"requests.adapters": _adapt_requests, "httpx._transports.default": _adapt_httpx}


class _AdaptOnImport:
    """A meta path finder that runs a module's adapter once the module has loaded."""

    def find_spec(self, name, path, target=None):
        adapt = _ADAPTERS.get(name)
        if adapt is None:
            return None
        import sys

        # The module as the other finders (the sandbox's among them) would find it.
        finders = (f for f in sys.meta_path if f is not self and hasattr(f, "find_spec"))
        spec = next((s for s in (f.find_spec(name, path, target) for f in finders) if s), None)
        if spec is None or spec.loader is None or not hasattr(spec.loader, "exec_module"):
            return spec
        exec_module = spec.loader.exec_module

        def exec_and_adapt(module):
            exec_module(module)
            adapt(module)

        spec.loader.exec_module = exec_and_adapt
        return spec


def install():
    """Makes `urllib.request.urlopen` (and the default opener) and `http.client`'s connections
    send over `request`, and `requests` and `httpx` when they are imported."""
    import sys

    if _wasi is not None:  # under plain CPython, http.client is what `request` sends with
        http.client.HTTPConnection = _Connection
        http.client.HTTPSConnection = _SecureConnection

    if not any(isinstance(f, _AdaptOnImport) for f in sys.meta_path):
        sys.meta_path.insert(0, _AdaptOnImport())
    opener = urllib.request.OpenerDirector()
    for handler in (
        urllib.request.UnknownHandler(),
        _Handler(),
        urllib.request.HTTPDefaultErrorHandler(),
        urllib.request.HTTPRedirectHandler(),
        urllib.request.HTTPErrorProcessor(),
        urllib.request.DataHandler(),
    ):
        opener.add_handler(handler)
    urllib.request.install_opener(opener)
