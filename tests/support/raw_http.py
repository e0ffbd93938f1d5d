"""A real HTTP/1.1 server on 127.0.0.1 that writes scripted raw bytes, for the framing cases a
well-behaved server (http.server) never produces: a body without Content-Length ended by
closing the connection, interim answers (100 Continue, 103 Early Hints) before the answer,
Retry-After in both of its forms, a connection dropped after the request was read.

    with RawHTTPServer() as server:
        server.script = [close_delimited(201, {...}), ...]   # one per request, in order
        ... server.url, server.accepted (connections), server.requests ...

Requests beyond the script get `ok(request)`: 201 with Content-Length, kept alive. The answer
body names the request's Idempotency-Key, in the cashier's and the webhook's fields.
"""

import json
import socket
import threading
import time
from dataclasses import dataclass, field
from email.utils import formatdate


@dataclass
class Request:
    method: str
    path: str
    headers: dict
    body: bytes
    connection: int  # 1 for the first accepted connection, 2 for the next, ...
    at: float = field(default_factory=time.monotonic)

    @property
    def key(self):
        return self.headers.get("idempotency-key") or self.path.rsplit("/", 1)[-1]


def _json(payload):
    return json.dumps(payload).encode()


def answer_body(request):
    key = request.key
    return {"message_id": f"m-{key}", "credit_id": f"cc-{key}", "status": "applied"}


def response(status, reason, body=b"", headers=(), length=True):
    lines = [f"HTTP/1.1 {status} {reason}", "Content-Type: application/json"]
    lines += [f"{name}: {value}" for name, value in headers]
    if length:
        lines.append(f"Content-Length: {len(body)}")
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + body


def ok(request):
    """201 with Content-Length; the connection stays open."""
    return response(201, "Created", _json(answer_body(request))), False


def close_delimited(request):
    """201 with no Content-Length (nor chunked): the body ends when the server closes."""
    return response(201, "Created", _json(answer_body(request)), length=False), True


def after_interim(request):
    """100 Continue, then 103 Early Hints (with a header), then the answer."""
    interim = b"HTTP/1.1 100 Continue\r\n\r\n"
    interim += b"HTTP/1.1 103 Early Hints\r\nLink: </static/app.css>; rel=preload\r\n\r\n"
    return interim + ok(request)[0], False


def chunked(request):
    """201 with its body in two chunks (Transfer-Encoding: chunked); the connection stays open."""
    body = _json(answer_body(request))
    half = len(body) // 2
    chunks = b"".join(b"%x\r\n%s\r\n" % (len(part), part) for part in (body[:half], body[half:]))
    head = response(201, "Created", headers=[("Transfer-Encoding", "chunked")], length=False)
    return head + chunks + b"0\r\n\r\n", False


def folded_headers(request):
    """201 whose header block has a folded line (obsolete, but allowed to arrive), a name with
    a trailing blank value and odd spacing, then Content-Length; the connection stays open."""
    body = _json(answer_body(request))
    head = (
        "HTTP/1.1 201 Created\r\nContent-Type: application/json\r\n"
        "X-Note: first part\r\n  folded second part\r\nX-Empty:\r\n"
        f"Content-Length:   {len(body)}\r\n\r\n"
    )
    return head.encode("latin-1") + body, False


def close_after(request):
    """201 with Content-Length and `Connection: close`; the server closes after it."""
    body = _json(answer_body(request))
    return response(201, "Created", body, headers=[("Connection", "close")]), True


def unavailable_for(seconds):
    """503 with Retry-After in seconds."""

    def answer(request):
        headers = [("Retry-After", str(seconds))]
        return response(503, "Service Unavailable", b'{"error": "later"}', headers), False

    return answer


def unavailable_until(seconds_from_now):
    """429 with Retry-After as an HTTP date, `seconds_from_now` ahead (to the second)."""

    def answer(request):
        when = formatdate(time.time() + seconds_from_now, usegmt=True)
        return response(
            429, "Too Many Requests", b'{"error": "slow down"}', [("Retry-After", when)]
        ), False

    return answer


def drop(request):
    """Read the request, then close the connection without a word: the outcome is unknown."""
    return b"", True


def found(request):
    """200 to the GET that asks whether a key landed."""
    return response(200, "OK", _json(answer_body(request))), False


class RawHTTPServer:
    def __init__(self):
        self.script = []
        self.requests = []
        self.accepted = 0
        self.lock = threading.Lock()
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self.sock.getsockname()[1]}/api"
        self.stopping = False
        self.thread = threading.Thread(target=self._serve, daemon=True)

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.stopping = True
        # shutdown() wakes the thread blocked in accept(); close() alone does not, and the join
        # would then always wait out its timeout (for ever under the year-ahead run's
        # libfaketime, whose moved monotonic clock puts a timed wait's deadline 400 days away).
        self.sock.shutdown(socket.SHUT_RDWR)
        self.sock.close()
        self.thread.join(timeout=5)
        assert not self.thread.is_alive(), "the raw server's accept loop did not stop"

    def methods(self):
        return [r.method for r in self.requests]

    def _serve(self):
        while not self.stopping:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            with self.lock:
                self.accepted += 1
                number = self.accepted
            threading.Thread(target=self._connection, args=(conn, number), daemon=True).start()

    def _connection(self, conn, number):
        reader = conn.makefile("rb")
        try:
            while True:
                request = self._read(reader, number)
                if request is None:
                    return
                with self.lock:
                    self.requests.append(request)
                    step = self.script.pop(0) if self.script else ok
                data, close = step(request)
                if data:
                    conn.sendall(data)
                if close:
                    conn.shutdown(socket.SHUT_RDWR)
                    return
        except OSError:
            return
        finally:
            reader.close()
            conn.close()

    @staticmethod
    def _read(reader, number):
        line = reader.readline(65537)
        if not line:
            return None
        method, path, _ = line.decode("latin-1").split(" ", 2)
        headers = {}
        while True:
            line = reader.readline(65537)
            if line in (b"\r\n", b"\n", b""):
                break
            name, _, value = line.decode("latin-1").partition(":")
            headers[name.strip().lower()] = value.strip()
        body = reader.read(int(headers.get("content-length", "0") or 0))
        return Request(method, path, headers, body, number)
