"""The HTTP client of the operator's services, the cashier (ledger/wallets.py) and the
player-statement webhook (notifications/adapters.py): urllib3, one pool of keep-alive
connections per service, urllib3's Retry for what may safely be sent again.

What urllib3 does here (design.md convention 13):
- a refused connection never reached the service: sent again after the backoff;
- 429 and 5xx are answers (the service did nothing): waited for -- `Retry-After` in seconds
  (whole or not) or as an HTTP date, else the backoff -- and sent again under the same
  Idempotency-Key, POST included;
- a request that was sent and got no answer (a timeout, a dropped connection) is NEVER sent
  again by urllib3 (`read=False`): its outcome is unknown, and only the caller can ask the
  service whether it landed before sending it again ("ask before sending again", which no
  library does: the adapters' loops). Raised here as `Unknown`;
- framing: a body without Content-Length is read to the end of a connection that is then not
  reused; interim answers (100 Continue, 103 Early Hints) are skipped, never taken for the answer.

One `Tries` budget per message is spent by urllib3's retries and the caller's loop alike, so
`*_MAX_TRIES` counts every request sent. This module imports no app.
"""

import email.parser
import http.client
import json
import math
import re
import threading
import time
import urllib.parse

import urllib3
from urllib3.connection import HTTPConnection, HTTPSConnection
from urllib3.exceptions import (
    ConnectTimeoutError,
    HTTPError,
    InvalidHeader,
    MaxRetryError,
)
from urllib3.util import Retry, Timeout


class Unknown(Exception):
    """The request was sent but no answer came back: it may have been applied."""


class NotSent(Exception):
    """The request never reached the service (connection refused): safe to send again."""


class Halted(Exception):
    """Another request stopped the delivery: this one stops waiting and is not sent again."""


# Answers that mean "not now, send it again later": throttled, or the service failing.
RETRY_STATUSES = frozenset([429, *range(500, 600)])


def backoff_delay(attempt, backoff, max_wait, retry_after=None):
    """Capped exponential backoff from `backoff` seconds, doubled each try; the service's
    Retry-After in seconds wins when given (the ask-before-sending-again loop's wait)."""
    delay = min(max_wait, backoff * (2 ** (max(1, attempt) - 1)))
    if retry_after:
        try:
            delay = min(max_wait, max(0.0, float(retry_after)))
        except ValueError:
            pass
    return delay


def pause(seconds, halt=None):
    """Sleep `seconds`, in short steps, stopping early (Halted) when `halt` is set. (Short
    sleeps rather than a timed Event.wait: the same behaviour, and it holds under a shifted
    clock such as the suite's libfaketime run.)"""
    deadline = time.monotonic() + seconds
    while True:
        if halt is not None and halt.is_set():
            raise Halted()
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            return
        time.sleep(min(0.05, remaining))


def json_or_none(raw):
    """The answer's JSON body, or None when it is empty or not JSON."""
    try:
        return json.loads(raw) if raw else None
    except ValueError:
        return None


class Tries:
    """The requests one message may still send (urllib3's retries and the caller's asking and
    re-sending draw on the same count), and the event that stops its waits."""

    def __init__(self, tries, halt=None):
        self.total = tries
        self.left = tries
        self.halt = halt

    @property
    def spent(self):
        return self.total - self.left


class ServiceRetry(Retry):
    """urllib3's Retry with the app's rules: every try counted in the message's `Tries`, the
    backoff from the first retry (`backoff`, doubled, capped), Retry-After read in seconds even
    when not whole ("0.3"; urllib3 reads only whole seconds or a date) and ignored when
    unreadable, and the wait interruptible by the delivery's halt."""

    def __init__(self, *args, tries=None, **kwargs):
        super().__init__(*args, **kwargs)
        self.tries = tries

    def new(self, **kw):
        retry = super().new(**kw)
        retry.tries = self.tries
        return retry

    def increment(self, *args, **kwargs):
        retry = super().increment(*args, **kwargs)  # raises when this one is not sent again
        if self.tries is not None:
            self.tries.left -= 1  # the request about to be sent again
        return retry

    def get_backoff_time(self):
        return backoff_delay(len(self.history), self.backoff_factor, self.backoff_max)

    def parse_retry_after(self, retry_after):
        try:
            seconds = float(retry_after)
        except ValueError:
            try:
                return super().parse_retry_after(retry_after)  # the HTTP-date form
            except InvalidHeader:
                return 0.0  # unreadable: the backoff applies
        if not math.isfinite(seconds):
            return 0.0
        return min(max(0.0, seconds), self.retry_after_max)

    def sleep(self, response=None):
        delay = None
        if response is not None and self.respect_retry_after_header:
            delay = self.get_retry_after(response)
        pause(delay or self.get_backoff_time(), self.tries.halt if self.tries else None)


# http.client's limits on an answer's header block: a line's length, and the lines (the blank
# line that ends the block counts as one).
_MAX_LINE = 65536
_MAX_HEADERS = 100
# A header line the e-mail parser reads as "name: value": the name is printable ASCII without
# ':' or a space (its headerRE), the line has no carriage return but the one ending it.
_PLAIN_HEADER = re.compile(rb"([\x21-\x39\x3b-\x7e]+):([^\r\n]*)\r?\n?")


def parse_headers(fp):
    """An answer's header block, read from `fp` up to and including the blank line that ends
    it, as the http.client.HTTPMessage that `http.client.parse_headers` returns, with the same
    limits and errors.

    Why not that function: it hands every block to the e-mail package's parser, about a quarter
    of the client's CPU per request, and a posting or a statement delivery is one request per
    credit or player (docs/performance.md, "The answers' headers"). The cashier's and the
    webhook's answers are a few plain "Name: value" lines, read here directly; any other block
    (a folded line, a line without a name, a stray carriage return) goes to the e-mail parser
    as before. A property test keeps the two equal
    (tests/services/test_service_http_headers.py)."""
    lines = []
    while True:
        line = fp.readline(_MAX_LINE + 1)
        if len(line) > _MAX_LINE:
            raise http.client.LineTooLong("header line")
        lines.append(line)
        if len(lines) > _MAX_HEADERS:
            raise http.client.HTTPException(f"got more than {_MAX_HEADERS} headers")
        if line in (b"\r\n", b"\n", b""):
            break
    message = http.client.HTTPMessage()
    for line in lines[:-1]:
        plain = _PLAIN_HEADER.fullmatch(line)
        if plain is None:
            text = b"".join(lines).decode("iso-8859-1")
            return email.parser.Parser(_class=http.client.HTTPMessage).parsestr(text)
        name, value = plain.groups()
        # As the e-mail parser stores it (compat32): leading blanks dropped, trailing kept.
        message.set_raw(name.decode("ascii"), value.lstrip(b" \t").decode("iso-8859-1"))
    message.set_payload("")
    return message


class _FinalResponse(http.client.HTTPResponse):
    """http.client's answer, with two differences:

    - http.client skips a `100 Continue`, but takes any other interim answer (`103 Early
      Hints`) for the answer: the real answer would stay in the socket and be read as the
      answer to the next request. This one skips every 1xx answer (its header lines included).
    - The header block is read by `parse_headers` above, not the e-mail parser.

    `begin` is http.client's own (Python 3.11-3.13), but for those two calls."""

    MAX_INTERIM = 20

    def _read_status(self):
        for _ in range(self.MAX_INTERIM):
            version, status, reason = super()._read_status()  # type: ignore[misc]
            if not 100 <= status < 200:
                return version, status, reason
            while self.fp.readline(_MAX_LINE + 1) not in (b"\r\n", b"\n", b""):
                pass
        raise http.client.HTTPException(f"more than {self.MAX_INTERIM} interim answers")

    def begin(self):
        if self.headers is not None:
            return  # already read
        version, status, reason = self._read_status()
        self.code = self.status = status
        self.reason = reason.strip()
        if version in ("HTTP/1.0", "HTTP/0.9"):
            self.version = 10
        elif version.startswith("HTTP/1."):
            self.version = 11
        else:
            raise http.client.UnknownProtocol(version)
        self.headers = self.msg = parse_headers(self.fp)
        transfer_encoding = self.headers.get("transfer-encoding")
        self.chunked = bool(transfer_encoding and transfer_encoding.lower() == "chunked")
        if self.chunked:
            self.chunk_left = None
        self.will_close = self._check_close()
        # Content-Length, unless chunked (RFC 9112 6.3): a bad or negative one is ignored.
        self.length = None
        length = self.headers.get("content-length")
        if length and not self.chunked:
            try:
                self.length = int(length)
            except ValueError:
                self.length = None
            else:
                if self.length < 0:
                    self.length = None
        if status in (204, 304) or 100 <= status < 200 or self._method == "HEAD":
            self.length = 0
        # Kept open, not chunked and no length: the body ends when the connection closes.
        if not self.will_close and not self.chunked and self.length is None:
            self.will_close = True


class _Connection(HTTPConnection):
    response_class = _FinalResponse


class _TLSConnection(HTTPSConnection):
    response_class = _FinalResponse


class ServiceClient:
    """One service (base URL + bearer token) over a pool of up to `connections` keep-alive
    connections, shared by the sending threads. `request()` answers (status, JSON or None,
    headers) or raises NotSent / Unknown / Halted."""

    def __init__(self, base_url, token, *, timeout, connections, backoff, max_wait):
        parsed = urllib.parse.urlsplit(base_url.rstrip("/"))
        self.scheme, self.host, self.port = parsed.scheme, parsed.hostname, parsed.port
        self.base_path = parsed.path
        self.headers = {"Authorization": f"Bearer {token}", "Accept": "application/json"}
        self.timeout = Timeout(connect=timeout, read=timeout)
        self.connections = max(1, int(connections))
        self.backoff = backoff
        self.max_wait = max_wait
        self._pool = None
        self._lock = threading.Lock()

    def pool(self):
        with self._lock:
            if self._pool is None:
                tls = self.scheme == "https"
                cls = urllib3.HTTPSConnectionPool if tls else urllib3.HTTPConnectionPool
                # block: never more connections than sending threads; each thread holds one
                # only while its request is out (not while it waits to retry).
                pool = cls(
                    self.host,
                    self.port,
                    maxsize=self.connections,
                    block=True,
                    timeout=self.timeout,
                    retries=False,
                )
                pool.ConnectionCls = _TLSConnection if tls else _Connection
                self._pool = pool
            return self._pool

    def close(self):
        """Close every connection; the next request opens new ones."""
        with self._lock:
            pool, self._pool = self._pool, None
        if pool is not None:
            pool.close()

    def _retry(self, tries):
        left = tries.left
        return ServiceRetry(
            total=left,
            connect=left,
            read=False,  # sent, no answer: the outcome is unknown, the caller asks first
            status=left,
            other=0,
            redirect=False,
            status_forcelist=RETRY_STATUSES,
            allowed_methods=None,  # POST too: a 429 or 5xx answer says nothing was done
            backoff_factor=self.backoff,
            backoff_max=self.max_wait,
            retry_after_max=self.max_wait,
            raise_on_status=False,  # the last 429/5xx is returned, the caller says why it gave up
            tries=tries,
        )

    def request(self, method, path, *, body=None, headers=None, tries=None):
        """One request; with `tries`, sent again for 429, 5xx and refused connections while
        tries are left (each one spent). Raises NotSent (it never reached the service), Unknown
        (sent, no answer: ask before sending it again) or Halted."""
        retries: Retry | bool = False
        if tries is not None:
            tries.left -= 1
            if tries.left > 0:
                retries = self._retry(tries)
        try:
            response = self.pool().urlopen(
                method,
                self.base_path + path,
                body=body,
                headers={**self.headers, **(headers or {})},
                retries=retries,
                redirect=False,
                assert_same_host=False,
            )
        except MaxRetryError as exc:
            raise _failure(exc.reason or exc) from exc
        except (HTTPError, OSError, http.client.HTTPException) as exc:
            raise _failure(exc) from exc
        return response.status, json_or_none(response.data), response.headers


def _failure(exc):
    """NotSent when the connection was never made (refused, unreachable, connect timeout;
    NewConnectionError is a ConnectTimeoutError), else Unknown."""
    text = str(exc) or type(exc).__name__
    if isinstance(exc, ConnectTimeoutError):
        return NotSent(text)
    return Unknown(text)
