"""gavel_runtime.http under plain CPython, against a server on this machine: the function the
stand-in clients call, and urllib, requests and httpx over it (run.sh runs it with a Python that
has httpx and requests)."""

import io
import json
import os
import sys
import threading
import unittest
import urllib.error
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

_RUNTIME = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
sys.path[:0] = [_RUNTIME, os.path.join(_RUNTIME, "stubs")]

from gavel_runtime import http  # noqa: E402


class _Server(BaseHTTPRequestHandler):
    def log_message(self, *args):
        pass

    def _reply(self, status, body, headers=()):
        self.send_response(status)
        for name, value in headers:
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self):
        if self.path == "/moved":
            self._reply(302, b"", [("Location", "/seen")])
        elif self.path == "/missing":
            self._reply(404, b"no such thing")
        else:
            self._reply(200, json.dumps({"path": self.path}).encode())

    def do_POST(self):
        body = self.rfile.read(int(self.headers["Content-Length"]))
        seen = {"body": json.loads(body), "type": self.headers["Content-Type"], "key": self.headers["X-Key"]}
        self._reply(201, json.dumps(seen).encode(), [("X-Reply", "yes")])


class HttpTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.server = ThreadingHTTPServer(("127.0.0.1", 0), _Server)
        cls.base = f"http://127.0.0.1:{cls.server.server_address[1]}"
        threading.Thread(target=cls.server.serve_forever, daemon=True).start()
        http.install()

    @classmethod
    def tearDownClass(cls):
        cls.server.shutdown()

    def test_request_posts_and_returns_status_headers_and_body(self):
        answer = http.request(
            "post",
            self.base + "/grade",
            {"Content-Type": "application/json", "X-Key": "k"},
            json.dumps({"answer": 42}),
            timeout=10,
        )
        self.assertEqual(answer.status, 201)
        self.assertEqual(answer.header("x-reply"), "yes")
        self.assertEqual(answer.json(), {"body": {"answer": 42}, "type": "application/json", "key": "k"})

    def test_request_returns_redirects_and_errors_as_responses(self):
        moved = http.request("GET", self.base + "/moved")
        self.assertEqual((moved.status, moved.header("Location")), (302, "/seen"))
        self.assertEqual(http.request("GET", self.base + "/missing").status, 404)

    def test_urlopen_follows_redirects_and_raises_http_errors(self):
        with urllib.request.urlopen(self.base + "/moved", timeout=10) as answer:
            self.assertEqual(json.loads(answer.read()), {"path": "/seen"})
        with self.assertRaises(urllib.error.HTTPError) as raised:
            urllib.request.urlopen(self.base + "/missing", timeout=10)
        self.assertEqual(raised.exception.code, 404)

    def test_a_refused_connection_is_a_url_error(self):
        closed = ThreadingHTTPServer(("127.0.0.1", 0), _Server)
        port = closed.server_address[1]
        closed.server_close()
        with self.assertRaises(urllib.error.URLError) as raised:
            http.request("GET", f"http://127.0.0.1:{port}/")
        self.assertIsInstance(raised.exception.reason, ConnectionRefusedError)

    def test_requests_sends_over_request_and_raises_its_connection_error(self):
        import requests

        self.assertEqual(requests.adapters.HTTPAdapter.send.__module__, "gavel_runtime.http")
        answer = requests.post(self.base + "/grade", json={"answer": 42}, headers={"X-Key": "k"}, timeout=10)
        self.assertEqual(answer.status_code, 201)
        self.assertEqual(answer.headers["x-reply"], "yes")
        self.assertEqual(answer.json()["body"], {"answer": 42})
        self.assertEqual(requests.get(self.base + "/moved", timeout=10).json(), {"path": "/seen"})
        closed = ThreadingHTTPServer(("127.0.0.1", 0), _Server)
        port = closed.server_address[1]
        closed.server_close()
        with self.assertRaises(requests.ConnectionError):
            requests.get(f"http://127.0.0.1:{port}/")

    def test_httpx_sends_over_request_and_raises_its_connect_error(self):
        import httpx

        self.assertEqual(httpx.HTTPTransport.handle_request.__module__, "gavel_runtime.http")
        answer = httpx.post(self.base + "/grade", json={"answer": 42}, headers={"X-Key": "k"})
        self.assertEqual((answer.status_code, answer.headers["x-reply"]), (201, "yes"))
        self.assertEqual(answer.json()["body"], {"answer": 42})
        with httpx.Client(follow_redirects=True) as client:
            self.assertEqual(client.get(self.base + "/moved").json(), {"path": "/seen"})

        async def post():
            async with httpx.AsyncClient() as client:
                return await client.post(self.base + "/grade", json={"answer": 1}, headers={"X-Key": "a"})

        import asyncio

        self.assertEqual(asyncio.run(post()).json()["body"], {"answer": 1})
        closed = ThreadingHTTPServer(("127.0.0.1", 0), _Server)
        port = closed.server_address[1]
        closed.server_close()
        with self.assertRaises(httpx.ConnectError):
            httpx.get(f"http://127.0.0.1:{port}/")

    def test_other_schemes_are_refused(self):
        with self.assertRaises(urllib.error.URLError):
            http.request("GET", "ftp://example.com/")


class ResponseStream(unittest.TestCase):
    """What `HTTPResponse` reads a response from in the sandbox: the head and the body read as
    one stream would read their bytes joined, the body read whole without a copy."""

    HEAD = b"HTTP/1.1 200 OK\r\nA: b\r\n\r\n"
    BODY = b"line1\nline2\nrest"

    def test_reads_of_every_size_give_the_joined_bytes(self):
        for sizes in ([-1], [3, 100], [1] * 40, [0, 5, None], [len(self.HEAD) + 3, -1]):
            with self.subTest(sizes=sizes):
                ours, joined = http._Reader((self.HEAD, self.BODY)), io.BytesIO(self.HEAD + self.BODY)
                self.assertEqual(ours.readline(7), joined.readline(7))
                self.assertEqual(ours.readline(), joined.readline())
                for size in sizes:
                    self.assertEqual(ours.read(size), joined.read(size))
                self.assertEqual(ours.readline(), joined.readline())
                self.assertEqual(ours.read(), b"")

    def test_readinto_and_the_body_read_whole(self):
        ours = http._Reader((self.HEAD, self.BODY))
        buffer = bytearray(10)
        self.assertEqual(ours.readinto(buffer), 10)
        self.assertEqual(bytes(buffer), self.HEAD[:10])
        while ours.readline() != b"\r\n":
            pass
        self.assertIs(ours.read(), self.BODY)

    def test_an_http_response_reads_its_body_from_it(self):
        response = http._http_response("GET", "http://h/", http.Response(200, [("X", "y")], self.BODY))
        self.assertEqual((response.status, response.getheader("X")), (200, "y"))
        self.assertIs(response.read(), self.BODY)


if __name__ == "__main__":
    unittest.main()
