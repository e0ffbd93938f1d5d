"""The HTTP pieces shared by the clients of the operator's services: the cashier
(ledger/wallets.py) and the player-statement webhook (notifications/adapters.py).

Both follow design.md convention 13: a request that never left is safe to send again
(NotSent); one that was sent and got no answer has an unknown outcome (Unknown), so the caller
asks before sending it again; 429 and 5xx wait `backoff_delay` (Retry-After wins) and retry.
Only the standard library is used; this module imports no app.
"""

import json
import socket
import ssl
from typing import Any


class Unknown(Exception):
    """The request was sent but no answer came back: it may have been applied."""


class NotSent(Exception):
    """The request never reached the service (connection refused): safe to send again."""


def backoff_delay(attempt, backoff, max_wait, retry_after=None):
    """Capped exponential backoff; the service's Retry-After (seconds) wins when given."""
    delay = min(max_wait, backoff * (2 ** (attempt - 1)))
    if retry_after:
        try:
            delay = min(max_wait, max(0.0, float(retry_after)))
        except ValueError:
            pass
    return delay


def json_or_none(raw):
    """The answer's JSON body, or None when it is empty or not JSON."""
    try:
        return json.loads(raw) if raw else None
    except ValueError:
        return None


class KeepAlive:
    """A small HTTP/1.1 client over one keep-alive socket. http.client parses every response's
    headers with the e-mail parser, which is most of a request's cost at 100k messages; this
    reads the status line, the headers and a Content-Length or chunked body, nothing more."""

    def __init__(self, scheme: str, host: str, port: int | None, timeout: float) -> None:
        self.scheme, self.host, self.timeout = scheme, host, timeout
        self.port = port or (443 if scheme == "https" else 80)
        self.sock: Any = None
        self.file: Any = None

    @property
    def connected(self):
        return self.sock is not None

    def connect(self):
        sock = socket.create_connection((self.host, self.port), timeout=self.timeout)
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        if self.scheme == "https":
            sock = ssl.create_default_context().wrap_socket(sock, server_hostname=self.host)
        self.sock, self.file = sock, sock.makefile("rb")

    def close(self):
        if self.file is not None:
            self.file.close()
        if self.sock is not None:
            self.sock.close()
        self.sock = self.file = None

    def send(self, method, path, body, headers):
        lines = [f"{method} {path} HTTP/1.1", f"Host: {self.host}:{self.port}"]
        lines += [f"{name}: {value}" for name, value in headers.items()]
        lines.append(f"Content-Length: {len(body or b'')}")
        self.sock.sendall(("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + (body or b""))

    def read_response(self):
        line = self.file.readline(65537)
        if not line:
            raise ConnectionError("the server closed the connection without answering")
        parts = line.split(None, 2)
        if len(parts) < 2 or not parts[0].startswith(b"HTTP/"):
            raise ValueError(f"not an HTTP status line: {line[:80]!r}")
        status = int(parts[1])
        headers = {}
        while True:
            line = self.file.readline(65537)
            if line in (b"\r\n", b"\n", b""):
                break
            name, _, value = line.decode("latin-1").partition(":")
            headers[name.strip().lower()] = value.strip()
        if headers.get("transfer-encoding", "").lower() == "chunked":
            chunks = []
            while True:
                size = int(self.file.readline(1024).split(b";")[0], 16)
                if size == 0:
                    while self.file.readline(65537) not in (b"\r\n", b"\n", b""):
                        pass
                    break
                chunks.append(self.file.read(size))
                self.file.readline(3)
            raw = b"".join(chunks)
        else:
            length = int(headers.get("content-length", "0"))
            raw = self.file.read(length) if length else b""
            if len(raw) < length:
                raise ConnectionError("the answer was cut short")
        return status, headers, raw
