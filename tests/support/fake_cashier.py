"""A real HTTP server on 127.0.0.1 playing the operator's cashier (../shared/spec/cashier-api.md),
scripted to misbehave, over HTTP/1.1 keep-alive connections like a real one.

Per key (`script`): "500", "429" (with Retry-After), "409", "422", "401", "drop" (apply, then
drop the connection before answering), "timeout" (apply, answer too late), "slow" (apply,
answer late but in time). For every request (`faults`): a seeded random mix of the same, e.g.
`{"500": 0.05, "429": 0.05, "drop": 0.02, "slow": 0.02}`. `down = True`: every request gets a
503 (unavailable). `ignore_keys=True` even applies a credit again when its key is resent, so only
an adapter that never resends blindly ends with each credit once.

Tickets (`"method": "ticket"`): the cashier re-issues a ticket once. A ticket already returned
under another key, one in `unknown_tickets`, or a ticket without `ticket_id` is refused with
422 and the reason; `tickets` records each re-issue (ticket id -> keys), and
`ticket_duplicates()` counts re-issues beyond the first (must stay 0). An unknown `method`
is refused with 422 too.

`python -m tests.support.fake_cashier --port 0 [--faults 500=0.05,429=0.05]` runs one on its own (the
benchmark does), printing its URL; `GET /api/_stats` answers the counts.
"""

import argparse
import json
import random
import threading
import time
import urllib.parse
from collections import Counter
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

STEPS = ("500", "429", "409", "422", "401", "drop", "timeout", "slow")


class FakeCashier:
    def __init__(
        self,
        token="cashier-secret",
        *,
        ignore_keys=False,
        slow=1.0,
        answer_delay=0.0,
        faults=None,
        retry_after="0.3",
        seed=1,
        port=0,
    ):
        self.token = token
        self.ignore_keys = ignore_keys
        self.slow = slow  # seconds a "timeout" answer takes (longer than the client waits)
        self.answer_delay = answer_delay  # seconds a "slow" answer takes (within the timeout)
        self.faults = dict(faults or {})  # step -> probability, for every POST
        self.retry_after = retry_after
        self.random = random.Random(seed)
        self.down = False  # True: every request answers 503 (unavailable)
        self.applied = {}  # key -> [body, ...]: more than one means applied twice
        self.tickets = {}  # ticket id -> [key, ...]: each re-issue of the ticket
        self.unknown_tickets = set()  # ticket ids this cashier never issued (422)
        self.script = {}  # key -> behaviours for its next POSTs
        self.posts = Counter()
        self.answers = Counter()  # status (or "drop") -> count
        self.lock = threading.Lock()
        self.server = ThreadingHTTPServer(("127.0.0.1", port), self._handler())
        self.server.daemon_threads = True
        self.server.request_queue_size = 128
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/api"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.server.shutdown()
        self.server.server_close()

    def times_applied(self, key):
        return len(self.applied.get(key, []))

    def duplicates(self):
        """Credits applied more than once (must stay 0)."""
        return sum(len(bodies) - 1 for bodies in self.applied.values())

    def ticket_duplicates(self):
        """Tickets re-issued more than once (must stay 0)."""
        return sum(len(keys) - 1 for keys in self.tickets.values())

    def total_cents(self, prefix="", method=None):
        """Cents applied (every application counts), for one method if given ("cash": no
        method in the body)."""
        total = 0
        for bodies in list(self.applied.values()):
            for body in bodies:
                if body["reference"].startswith(prefix) and (
                    method is None or body.get("method", "cash") == method
                ):
                    whole, _, frac = body["amount"].partition(".")
                    total += int(whole) * 100 + int((frac + "00")[:2])
        return total

    def _ticket_refusal(self, key, body):
        """Why this body cannot be applied (422), or None. Under the lock."""
        method = body.get("method", "cash")
        if method not in ("cash", "tournament_money", "ticket"):
            return f"unknown method {method!r}"
        if method != "ticket":
            return "ticket_id without method ticket" if "ticket_id" in body else None
        ticket_id = body.get("ticket_id")
        if not ticket_id:
            return "a ticket without ticket_id"
        if ticket_id in self.unknown_tickets:
            return f"unknown ticket {ticket_id}"
        others = [k for k in self.tickets.get(ticket_id, []) if k != key]
        if others:
            return f"ticket {ticket_id} was already returned (key {others[0]})"
        return None

    def stats(self):
        with self.lock:
            return {
                "applied": len(self.applied),
                "duplicates": self.duplicates(),
                "tickets": len(self.tickets),
                "ticket_duplicates": self.ticket_duplicates(),
                "posts": sum(self.posts.values()),
                "answers": {str(k): v for k, v in self.answers.items()},
            }

    def _apply(self, key, body):
        with self.lock:
            self.applied.setdefault(key, []).append(body)
            return f"cc-{key}"

    def _next_step(self, key):
        with self.lock:
            self.posts[key] += 1
            steps = self.script.get(key) or []
            if steps:
                return steps.pop(0)
            if self.faults:
                roll = self.random.random()
                for step, probability in self.faults.items():
                    if roll < probability:
                        return step
                    roll -= probability
            return "ok"

    def _handler(self):
        cashier = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"  # keep-alive, as the adapter expects
            disable_nagle_algorithm = True  # headers and body go out as two writes

            def log_message(self, *args):
                pass

            def _send(self, status, payload=None, headers=None):
                data = json.dumps(payload or {}).encode()
                with cashier.lock:
                    cashier.answers[status] += 1
                try:
                    self.send_response(status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(data)))
                    for name, value in (headers or {}).items():
                        self.send_header(name, value)
                    self.end_headers()
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):
                    self.close_connection = True  # the client gave up waiting ("timeout")

            def _authorised(self):
                if self.headers.get("Authorization") != f"Bearer {cashier.token}":
                    self._send(401, {"error": "bad token"})
                    return False
                return True

            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                key = self.headers["Idempotency-Key"]
                if cashier.down:
                    return self._send(503, {"error": "down for maintenance"})
                if not self._authorised():
                    return
                step = cashier._next_step(key)
                if step == "500":
                    return self._send(500, {"error": "internal"})
                if step == "429":
                    return self._send(
                        429, {"error": "slow down"}, {"Retry-After": cashier.retry_after}
                    )
                if step in ("409", "422"):
                    return self._send(int(step), {"error": f"refused ({step})"})
                if step == "401":
                    return self._send(401, {"error": "token revoked"})
                with cashier.lock:
                    known = key in cashier.applied and not cashier.ignore_keys
                    refusal = None if known else cashier._ticket_refusal(key, body)
                    if not known and refusal is None:
                        cashier.applied.setdefault(key, []).append(body)
                        if body.get("method") == "ticket":
                            cashier.tickets.setdefault(body["ticket_id"], []).append(key)
                if refusal is not None:
                    return self._send(422, {"error": refusal})
                credit_id = f"cc-{key}"
                if step == "drop":  # applied, then the connection dies before any answer
                    with cashier.lock:
                        cashier.answers["drop"] += 1
                    self.close_connection = True
                    self.connection.close()
                    return
                if step == "timeout":  # applied, but the answer comes too late
                    time.sleep(cashier.slow)
                if step == "slow":  # applied, answered late but in time
                    time.sleep(cashier.answer_delay)
                self._send(200 if known else 201, {"credit_id": credit_id, "status": "applied"})

            def do_GET(self):
                if cashier.down:
                    return self._send(503, {"error": "down for maintenance"})
                if not self._authorised():
                    return
                parsed = urllib.parse.urlsplit(self.path)
                if parsed.path == "/api/_stats":
                    return self._send(200, cashier.stats())
                if parsed.path.startswith("/api/credits/"):
                    key = urllib.parse.unquote(parsed.path[len("/api/credits/") :])
                    with cashier.lock:
                        bodies = cashier.applied.get(key)
                    if not bodies:
                        return self._send(404, {"error": "unknown key"})
                    return self._send(
                        200, {"credit_id": f"cc-{key}", "status": "applied", **bodies[0]}
                    )
                prefix = urllib.parse.parse_qs(parsed.query).get("reference_prefix", [""])[0]
                with cashier.lock:
                    credits = [
                        {"key": key, "credit_id": f"cc-{key}", **body}
                        for key, bodies in cashier.applied.items()
                        for body in bodies
                        if body["reference"].startswith(prefix)
                    ]
                self._send(200, {"credits": credits})

        return Handler


def _parse_faults(text):
    faults = {}
    for part in filter(None, (text or "").split(",")):
        step, _, probability = part.partition("=")
        if step not in STEPS:
            raise SystemExit(f"unknown fault {step!r}; one of {', '.join(STEPS)}")
        faults[step] = float(probability)
    return faults


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--token", default="cashier-secret")
    parser.add_argument("--faults", default="", help="e.g. 500=0.05,429=0.05,drop=0.01")
    parser.add_argument("--retry-after", default="0.2")
    parser.add_argument("--answer-delay", type=float, default=0.05)
    parser.add_argument("--seconds", type=float, default=600, help="stop after this long")
    args = parser.parse_args()
    cashier = FakeCashier(
        args.token,
        faults=_parse_faults(args.faults),
        retry_after=args.retry_after,
        answer_delay=args.answer_delay,
        port=args.port,
    )
    with cashier:
        print(cashier.url, flush=True)
        time.sleep(args.seconds)


if __name__ == "__main__":
    main()


def point_settings_at(settings, fake, *, max_tries, chunk_size):
    """This process posts to the cashier `fake`: short timeouts and back-off, so that a test of
    errors and retries takes moments; a few requests in flight; small chunks, so that one
    proposal is posted in several."""
    settings.CASHIER_URL = fake.url
    settings.CASHIER_TOKEN = fake.token
    settings.CASHIER_TIMEOUT = 0.5
    settings.CASHIER_BACKOFF = 0.01
    settings.CASHIER_MAX_TRIES = max_tries
    settings.CASHIER_CONCURRENCY = 4
    settings.POSTING_CHUNK_SIZE = chunk_size
    return settings
