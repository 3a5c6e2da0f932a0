"""HTTP for the stand-in API clients: one request, one response, nothing retried.

`request` is the only way the `anthropic` and `openai` stand-ins reach the network. This form
goes through CPython's `urllib.request`: in the sandbox, with no network granted, the sandbox
refuses it (`SandboxError`), and a client turns that into its own connection error.
"""

class Response:
    """What the server answered: `status`, `headers` as sent (name, value) pairs, `body`."""

    def __init__(self, status, headers, body):
        self.status = status
        self.headers = headers
        self.body = body

    def __repr__(self):
        return f"Response(status={self.status}, headers={self.headers!r}, body={self.body!r})"


def request(method, url, headers, body, timeout):
    """Sends `body` (bytes or None) to `url` with `headers` ((name, value) pairs) and returns
    the `Response`, whatever its status; `timeout` is in seconds (None: no limit). Raises
    `OSError` (`TimeoutError` when `timeout` passed) when no answer comes."""
    # Imported here: a snapshot without them still imports the clients, whose calls then fail
    # as connection errors.
    import urllib.error
    import urllib.request

    req = urllib.request.Request(url, data=body, method=method)
    for name, value in headers:
        req.add_header(name, value)
    try:
        with urllib.request.urlopen(req, timeout=timeout) as answer:
            return Response(answer.status, list(answer.headers.items()), answer.read())
    except urllib.error.HTTPError as answer:
        with answer:
            return Response(answer.code, list(answer.headers.items()), answer.read())
    except urllib.error.URLError as e:
        # The reason is the OSError beneath (refused, unresolved, timed out).
        if isinstance(e.reason, OSError):
            raise e.reason from None
        raise
