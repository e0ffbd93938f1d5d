"""`make serve` as an operator runs it: gunicorn with DEBUG=0 on PostgreSQL, behind a TLS proxy.

The server is the real one (make -> migrate -> collectstatic -> gunicorn) on a free port of
127.0.0.1, against the test database; the checks are plain HTTP requests, as a load balancer and
a browser behind the proxy send them.
"""

import http.client
import json
import os
import re
import secrets
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
from django.conf import global_settings
from django.test import override_settings

from tests.support import servers
from tests.support.factories import draft_proposal
from tests.support.posting_support import worker_database_url
from tests.support.servers import HTTPS

ROOT = Path(__file__).resolve().parents[2]


def _free_port():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class Served:
    def __init__(self, port, proc, log_path):
        self.port, self.proc, self.log_path = port, proc, log_path

    def request(self, method, path, body=None, headers=None):
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=30)
        try:
            conn.request(method, path, body=body, headers=headers or {})
            response = conn.getresponse()
            response.text = response.read().decode("utf-8", "replace")
            return response
        finally:
            conn.close()

    def log(self):
        return self.log_path.read_text()


@pytest.fixture
def served(transactional_db, tmp_path):
    """`make serve` on a free port, JSON logs, two workers; stopped (whole group) afterwards."""
    port = _free_port()
    env = servers.production_env(
        DATABASE_URL=worker_database_url(),
        STATIC_ROOT=tmp_path / "static",
        WEB_CONCURRENCY=2,
        LOG_FORMAT="json",
    )
    server = Served(port, None, tmp_path / "serve.log")
    server.proc = servers.start(
        ["make", "--no-print-directory", "serve", "HOST=127.0.0.1", f"PORT={port}"],
        cwd=ROOT,
        env=env,
        log_path=server.log_path,
        answers=lambda: server.request("GET", "/healthz").status == 200,
        what="make serve",
        timeout=180,
    )
    yield server
    servers.stop(server.proc)


def _children(pid):
    kids = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == pid:
            kids.append(int(stat.parent.name))
    return kids


def _cmdline(pid):
    return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()


def _cookies(response, jar):
    for header, value in response.getheaders():
        if header.lower() == "set-cookie":
            name, _, rest = value.partition("=")
            jar[name] = rest.split(";", 1)[0]
    return jar


def _cookie_header(jar):
    return "; ".join(f"{k}={v}" for k, v in jar.items())


@pytest.mark.postgres
def test_it_serves_the_app_with_gunicorn_as_an_operator_deploys_it(served, support, manager):
    # The process listening is gunicorn (make exec'd it), not Django's development server.
    (master,) = _children(served.proc.pid)
    assert "gunicorn" in _cmdline(master) and "runserver" not in _cmdline(master)
    workers = _children(master)
    assert len(workers) == 2, workers  # WEB_CONCURRENCY
    assert all("runserver" not in _cmdline(w) for w in workers)

    # /healthz: no login, JSON, the database answers; nothing but the states.
    health = served.request("GET", "/healthz")
    assert health.status == 200
    assert health.getheader("Server", "").startswith("gunicorn")
    assert health.getheader("Content-Type") == "application/json"
    body = json.loads(health.text)
    assert body["status"] == "ok" and body["database"] == "ok"
    assert set(body) <= {"status", "database", "broker", "beat", "worker", "queues", "stalled_jobs"}
    assert body["broker"] == ("ok" if os.environ.get("REDIS_URL") else "not configured")

    # Plain HTTP (nothing says the proxy terminated TLS) is sent to HTTPS...
    plain = served.request("GET", "/accounts/login/")
    assert plain.status == 301
    assert plain.getheader("Location") == f"https://127.0.0.1:{served.port}/accounts/login/"
    # ...and with X-Forwarded-Proto: https the sign-in page is served, with its headers.
    login = served.request("GET", "/accounts/login/", headers=HTTPS)
    assert login.status == 200 and "Sign in" in login.text
    csp = login.getheader("Content-Security-Policy")
    assert "default-src 'self'" in csp and "script-src 'self'" in csp
    assert "style-src 'self'" in csp and "frame-ancestors 'none'" in csp
    assert "unsafe-inline" not in csp and "unsafe-eval" not in csp
    assert login.getheader("Strict-Transport-Security") == (
        "max-age=31536000; includeSubDomains; preload"
    )
    assert login.getheader("X-Frame-Options") == "DENY"
    assert login.getheader("X-Content-Type-Options") == "nosniff"
    assert re.fullmatch(r"[0-9a-f]{32}", login.getheader("X-Request-ID"))

    # Static files: hashed names in the page, a year-long immutable cache, gzip when accepted.
    script = re.search(r'src="(/static/js/app\.[0-9a-f]{12}\.js)"', login.text)
    assert script, login.text
    static = served.request("GET", script.group(1), headers={**HTTPS, "Accept-Encoding": "gzip"})
    assert static.status == 200
    cache = static.getheader("Cache-Control")
    assert "max-age=315360000" in cache and "immutable" in cache and "public" in cache
    assert static.getheader("Content-Encoding") == "gzip"
    css = re.search(r'href="(/static/css/app\.[0-9a-f]{12}\.css)"', login.text)
    assert css and served.request("GET", css.group(1), headers=HTTPS).status == 200

    # A sane request id from the proxy is kept; anything else is replaced.
    kept = served.request("GET", "/healthz", headers={"X-Request-ID": "lb-4f1c2a9e-0001"})
    assert kept.getheader("X-Request-ID") == "lb-4f1c2a9e-0001"
    forged = served.request("GET", "/healthz", headers={"X-Request-ID": 'x" forged=1 {'})
    assert re.fullmatch(r"[0-9a-f]{32}", forged.getheader("X-Request-ID"))

    # A manager signs in behind the proxy and opens a proposal. The suite hashes passwords
    # with a fast hasher the server does not accept: give the manager a production hash.
    with override_settings(PASSWORD_HASHERS=global_settings.PASSWORD_HASHERS):
        manager.set_password("pw-" + manager.username)
        manager.save(update_fields=["password"])
    proposal = draft_proposal(support)
    jar = _cookies(login, {})
    token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', login.text).group(1)
    password = "pw-" + manager.username
    signed_in = served.request(
        "POST",
        "/accounts/login/",
        body=f"csrfmiddlewaretoken={token}&username={manager.username}&password={password}",
        headers={
            **HTTPS,
            "Content-Type": "application/x-www-form-urlencoded",
            "Cookie": _cookie_header(jar),
            "Referer": f"https://127.0.0.1:{served.port}/accounts/login/",
        },
    )
    assert signed_in.status == 302, signed_in.text
    _cookies(signed_in, jar)
    assert "sessionid" in jar
    page = served.request(
        "GET", f"/proposals/{proposal.pk}/", headers={**HTTPS, "Cookie": _cookie_header(jar)}
    )
    assert page.status == 200, page.text
    page_id = page.getheader("X-Request-ID")

    # Things that carry secrets: an API token, a password-reset link, a bad password.
    api_token = "tok_" + secrets.token_urlsafe(24)
    refused = served.request(
        "POST",
        "/api/snapshots",
        body="{}",
        headers={
            **HTTPS,
            "Authorization": f"Bearer {api_token}",
            "Content-Type": "application/json",
        },
    )
    assert refused.status == 401
    reset_token = "c4t9zq-" + secrets.token_hex(16)
    served.request("GET", f"/accounts/reset/MQ/{reset_token}/", headers=HTTPS)
    served.request("GET", f"/healthz?token={api_token}&password={password}")

    # The logs: from gunicorn's start on, one JSON object per line; the request lines carry the
    # request id, the user and the proposal; no secret appears anywhere in the output.
    time.sleep(0.5)  # the last access lines
    output = served.log()
    lines = output[output.index('{"time"') :].splitlines()
    entries = [json.loads(line) for line in lines if line.strip()]
    assert all({"time", "level", "logger", "message"} <= set(e) for e in entries)
    (page_line,) = [
        e
        for e in entries
        if e["logger"] == "refunds_admin.request" and e.get("request_id") == page_id
    ]
    assert page_line["user_id"] == manager.pk
    assert page_line["proposal_id"] == proposal.pk
    assert page_line["status"] == 200 and page_line["path"] == f"/proposals/{proposal.pk}/"
    access = [e for e in entries if e["logger"] == "gunicorn.access"]
    assert any(e.get("request_id") == page_id and e.get("status") == 200 for e in access)
    assert any("/accounts/reset/[redacted]/" in e["message"] for e in access)
    for secret in (password, api_token, reset_token, jar["sessionid"], token, jar["csrftoken"]):
        assert secret not in output


@pytest.mark.postgres
def test_slow_clients_do_not_stall_the_server(served):
    """More clients sending their headers slowly than there are worker processes: /healthz
    still answers at once (gthread; a sync worker is held by each such client)."""
    import socket

    (master,) = _children(served.proc.pid)
    slow = []
    try:
        for _ in range(2 * len(_children(master)) + 1):
            sock = socket.create_connection(("127.0.0.1", served.port), timeout=5)
            sock.sendall(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ")
            slow.append(sock)
        time.sleep(0.5)
        started = time.monotonic()
        assert served.request("GET", "/healthz").status == 200
        assert time.monotonic() - started < 3
    finally:
        for sock in slow:
            sock.close()


def test_it_refuses_to_serve_without_secret_key_or_allowed_hosts(tmp_path):
    env = servers.production_env()
    del env["SECRET_KEY"]
    res = subprocess.run(
        ["make", "--no-print-directory", "serve", f"PORT={_free_port()}"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert res.returncode != 0
    assert "set SECRET_KEY" in res.stderr

    env = servers.production_env()
    del env["ALLOWED_HOSTS"]
    res = subprocess.run(
        ["make", "--no-print-directory", "serve", f"PORT={_free_port()}"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert res.returncode != 0
    assert "set ALLOWED_HOSTS" in res.stderr

    # The settings say so too, for any other way of starting (celery, manage.py, a WSGI host).
    res = subprocess.run(
        [sys.executable, "manage.py", "check"],
        cwd=ROOT,
        env={**env, "DEBUG": "0"},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert res.returncode != 0
    assert "ALLOWED_HOSTS is required when DEBUG is off" in res.stderr


def test_it_passes_the_deployment_checklist():
    """`DEBUG=0 ... manage.py check --deploy` reports nothing, not even a warning."""
    res = subprocess.run(
        [sys.executable, "manage.py", "check", "--deploy", "--fail-level", "WARNING"],
        cwd=ROOT,
        env=servers.production_env(DEBUG="0", ALLOWED_HOSTS="refunds.example.com"),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert res.returncode == 0, res.stdout + res.stderr
    assert "System check identified no issues (0 silenced)." in res.stdout
    assert "WARNINGS" not in res.stderr + res.stdout
