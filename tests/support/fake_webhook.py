"""A real HTTP server on 127.0.0.1 playing the operator's messaging webhook
(docs/notifications.md): POST /hooks/messages with an Idempotency-Key, GET /hooks/messages/<key>.

Like a real CRM it delivers a key once and answers a repeated key with the first answer; with
`ignore_keys` it delivers again on every POST, so only a client that never resends blindly ends
with each player told once. Scripted to misbehave per player: 500, 429 with Retry-After,
"timeout" (deliver, then answer too late), "drop" (deliver, then close without answering),
409 (refuse; "409:<text>" in those words), and a wrong token (401). HTTP/1.1 keep-alive, like the operator's service.
"""

import json
import threading
import time
import urllib.parse
from collections import Counter
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class FakeWebhook:
    def __init__(self, token="notify-secret", *, ignore_keys=False, slow=1.0, delay=0.0):
        self.token = token
        self.ignore_keys = ignore_keys
        self.slow = slow  # seconds a "timeout" answer takes (longer than the client waits)
        self.delay = delay  # seconds every POST takes (to catch a worker mid-delivery)
        self.delivered = {}  # key -> [body, ...]: more than one means the player was told twice
        self.script = {}  # player id -> behaviours for its next POSTs
        self.posts = Counter()
        self.lock = threading.Lock()
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/hooks"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.server.shutdown()
        self.server.server_close()

    def players_told(self):
        """player id -> times told."""
        told = Counter()
        for bodies in self.delivered.values():
            for body in bodies:
                told[body["player_id"]] += 1
        return told

    def _handler(self):
        hook = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

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
                    pass

            def _authorised(self):
                if self.headers.get("Authorization") != f"Bearer {hook.token}":
                    self._send(401, {"error": "bad token"})
                    return False
                return True

            def _deliver(self, key, body):
                with hook.lock:
                    if key in hook.delivered and not hook.ignore_keys:
                        return f"m-{key}"
                    hook.delivered.setdefault(key, []).append(body)
                    return f"m-{key}"

            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                key = self.headers.get("Idempotency-Key", "")
                hook.posts[key] += 1
                if not self._authorised():
                    return
                if hook.delay:
                    time.sleep(hook.delay)
                with hook.lock:
                    steps = hook.script.get(body["player_id"]) or []
                    step = steps.pop(0) if steps else "ok"
                if step == "500":
                    return self._send(500, {"error": "internal"})
                if step == "429":
                    return self._send(429, {"error": "slow down"}, {"Retry-After": "0"})
                if step == "409":
                    return self._send(409, {"error": "unknown player"})
                if step.startswith("409:"):  # a refusal in the CRM's own words
                    return self._send(409, {"error": step[4:]})
                message_id = self._deliver(key, body)
                if step == "timeout":
                    time.sleep(hook.slow)
                elif step == "drop":
                    self.close_connection = True
                    self.connection.close()
                    return
                self._send(201, {"message_id": message_id})

            def do_GET(self):
                if not self._authorised():
                    return
                key = urllib.parse.unquote(self.path.rsplit("/", 1)[-1])
                with hook.lock:
                    known = key in hook.delivered
                if known:
                    return self._send(200, {"status": "accepted", "message_id": f"m-{key}"})
                self._send(404, {"error": "no such message"})

        return Handler
