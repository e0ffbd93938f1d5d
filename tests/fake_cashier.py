"""A real HTTP server on 127.0.0.1 playing the operator's cashier (../shared/spec/cashier-api.md),
scripted to misbehave: 500, 429 with Retry-After, time out or drop the connection after
applying a credit, refuse (409/422/401), and even apply a credit again when a key is resent
(`ignore_keys`), so only an adapter that never resends blindly ends with each credit once."""

import json
import threading
import time
import urllib.parse
from collections import Counter
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class FakeCashier:
    def __init__(self, token="cashier-secret", *, ignore_keys=False, slow=1.0):
        self.token = token
        self.ignore_keys = ignore_keys
        self.slow = slow  # seconds a "timeout" answer takes (longer than the client waits)
        self.applied = {}  # key -> [body, ...]: more than one means applied twice
        self.script = {}  # key -> behaviours for its next POSTs
        self.posts = Counter()
        self.lock = threading.Lock()
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self.server.daemon_threads = True
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

    def _apply(self, key, body):
        with self.lock:
            self.applied.setdefault(key, []).append(body)
            return f"cc-{key}"

    def _handler(self):
        cashier = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def _send(self, status, payload=None, headers=None):
                data = json.dumps(payload or {}).encode()
                try:
                    self.send_response(status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(data)))
                    for name, value in (headers or {}).items():
                        self.send_header(name, value)
                    self.end_headers()
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up waiting (the "timeout" behaviour)

            def _authorised(self):
                if self.headers.get("Authorization") != f"Bearer {cashier.token}":
                    self._send(401, {"error": "bad token"})
                    return False
                return True

            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                key = self.headers["Idempotency-Key"]
                cashier.posts[key] += 1
                if not self._authorised():
                    return
                with cashier.lock:
                    steps = cashier.script.get(key) or []
                    step = steps.pop(0) if steps else "ok"
                if step == "500":
                    return self._send(500, {"error": "internal"})
                if step == "429":
                    return self._send(429, {"error": "slow down"}, {"Retry-After": "0.3"})
                if step in ("409", "422"):
                    return self._send(int(step), {"error": f"refused ({step})"})
                if step == "401":
                    return self._send(401, {"error": "token revoked"})
                known = key in cashier.applied and not cashier.ignore_keys
                credit_id = f"cc-{key}" if known else cashier._apply(key, body)
                if step == "drop":  # applied, then the connection dies before any answer
                    self.close_connection = True
                    self.connection.close()
                    return
                if step == "timeout":  # applied, but the answer comes too late
                    time.sleep(cashier.slow)
                self._send(200 if known else 201, {"credit_id": credit_id, "status": "applied"})

            def do_GET(self):
                if not self._authorised():
                    return
                parsed = urllib.parse.urlsplit(self.path)
                if parsed.path.startswith("/api/credits/"):
                    key = urllib.parse.unquote(parsed.path[len("/api/credits/") :])
                    if key not in cashier.applied:
                        return self._send(404, {"error": "unknown key"})
                    body = cashier.applied[key][0]
                    return self._send(200, {"credit_id": f"cc-{key}", "status": "applied", **body})
                prefix = urllib.parse.parse_qs(parsed.query).get("reference_prefix", [""])[0]
                credits = [
                    {"key": key, "credit_id": f"cc-{key}", **bodies[0]}
                    for key, bodies in cashier.applied.items()
                    for _ in bodies
                    if bodies[0]["reference"].startswith(prefix)
                ]
                self._send(200, {"credits": credits})

        return Handler
