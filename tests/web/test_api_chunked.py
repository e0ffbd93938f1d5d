"""Request bodies sent with `Transfer-Encoding: chunked` (no Content-Length), as some platform
HTTP clients stream them.

Under gunicorn (production, gunicorn.conf.py) the body is de-chunked and read up to Django's
body limit (refunds_admin/wsgi.py): the real server on 127.0.0.1, against the test database.
Under a server that cannot de-chunk (runserver's), a 411 naming Content-Length, not "an empty
document".
"""

import hashlib
import http.client
import json
import socket
import sys
import threading
from pathlib import Path

import pytest

from refunds_admin.outages.models import Outage
from refunds_admin.tournaments.models import Snapshot
from refunds_admin.tournaments.services import create_api_client
from tests.support import servers
from tests.support.factories import dumps, import_doc, snapshot_doc
from tests.support.posting_support import worker_database_url
from tests.support.servers import HTTPS
from tests.web.test_api_outages import _body as outage_body

pytestmark = pytest.mark.postgres
ROOT = Path(__file__).resolve().parents[2]
# Django's limit on a body, lowered for the server under test so that a body past it is small.
LIMIT = 256 * 1024
PORTS = range(18700, 18800)


def _port():
    for port in PORTS:
        with socket.socket() as sock:
            try:
                sock.bind(("127.0.0.1", port))
            except OSError:
                continue
            return port
    raise AssertionError(f"no free port in {PORTS}")


def _chunked(port, method, path, body, headers, pieces=3):
    """`body` sent as `pieces` chunks: http.client frames an iterable body without a
    Content-Length as Transfer-Encoding: chunked."""
    step = -(-len(body) // pieces) or 1
    parts = [body[i : i + step] for i in range(0, len(body), step)]
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    try:
        conn.request(method, path, body=iter(parts), headers=headers, encode_chunked=True)
        response = conn.getresponse()
        response.body = response.read()
        return response
    finally:
        conn.close()


@pytest.fixture
def gunicorn(transactional_db, tmp_path):
    """gunicorn as gunicorn.conf.py runs it (gthread, DEBUG off), one worker on a port of
    18700-18799; stopped (its process group) afterwards."""
    port = _port()
    log_path = tmp_path / "gunicorn.log"
    env = servers.production_env(
        DATABASE_URL=worker_database_url(),
        STATIC_ROOT=tmp_path / "static",
        HOST="127.0.0.1",
        PORT=port,
        WEB_CONCURRENCY=1,
        DATA_UPLOAD_MAX_MEMORY_SIZE=LIMIT,
    )
    proc = servers.start(
        [sys.executable, "-m", "gunicorn", "-c", "gunicorn.conf.py"],
        cwd=ROOT,
        env=env,
        log_path=log_path,
        answers=lambda: _status(port, "/healthz") == 200,
        what="gunicorn",
        timeout=120,
    )
    yield port
    servers.stop(proc)


def _status(port, path):
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
    try:
        conn.request("GET", path)
        return conn.getresponse().status
    finally:
        conn.close()


def _headers(token):
    return {**HTTPS, "Authorization": f"Bearer {token}", "Content-Type": "application/json"}


def test_gunicorn_reads_a_chunked_body_up_to_djangos_limit(gunicorn, support):
    # Found by the platform's trial: a chunked body was read as empty, "an empty document".
    token = create_api_client("platform", user=support)[1]
    body = dumps(snapshot_doc("CHUNKED-1")).encode()
    assert len(body) < LIMIT
    imported = _chunked(gunicorn, "POST", "/api/snapshots", body, _headers(token))
    assert imported.status == 201, imported.body
    snapshot = Snapshot.objects.get(tournament__external_id="CHUNKED-1")
    assert snapshot.sha256 == hashlib.sha256(body).hexdigest()  # stored byte for byte
    assert snapshot.document.encode() == body

    import_doc(support, external_id="CHUNKED-2")
    outage = json.dumps(outage_body(["CHUNKED-1", "CHUNKED-2"])).encode()
    recorded = _chunked(gunicorn, "POST", "/api/outages", outage, _headers(token))
    assert recorded.status == 201, recorded.body
    assert Outage.objects.get().pk == json.loads(recorded.body)["id"]

    # Past Django's limit (DATA_UPLOAD_MAX_MEMORY_SIZE): the API's 413, naming the body.
    huge = b'{"padding": "' + b"x" * LIMIT + b'"}'
    refused = _chunked(gunicorn, "POST", "/api/snapshots", huge, _headers(token), pieces=8)
    assert refused.status == 413 and refused.getheader("Content-Type") == "application/json"
    error = json.loads(refused.body)
    assert f"{LIMIT:,} bytes" in error["error"]
    assert [p["field"] for p in error["problems"]] == ["body"]
    # A body the worker never finished reading does not upset the next request.
    again = _chunked(gunicorn, "POST", "/api/outages", outage, _headers(token))
    assert again.status == 200, again.body
    assert Snapshot.objects.count() == 2


def test_gunicorn_answers_head_as_get_without_the_body(gunicorn, support):
    token = create_api_client("platform", user=support)[1]
    conn = http.client.HTTPConnection("127.0.0.1", gunicorn, timeout=30)
    try:
        for method in ("GET", "HEAD", "GET"):  # one connection: the HEAD leaves it usable
            conn.request(method, "/api/schema", headers=_headers(token))
            response = conn.getresponse()
            body = response.read()
            assert response.status == 200, body
            if method == "GET":
                length = len(body)
            else:
                assert body == b"" and response.getheader("Content-Length") == str(length)
    finally:
        conn.close()


@pytest.fixture
def runserver(transactional_db):
    """The application (refunds_admin.wsgi) under the server of `manage.py runserver`, on a
    port of 18700-18799 in a thread: a server that cannot de-chunk a body."""
    from django.core.servers.basehttp import WSGIRequestHandler, WSGIServer
    from django.db import connections

    from refunds_admin.wsgi import application

    server = WSGIServer(("127.0.0.1", _port()), WSGIRequestHandler)
    server.set_app(application)

    def serve():
        try:
            server.serve_forever(poll_interval=0.1)
        finally:
            connections.close_all()  # this thread's connection: the test database is dropped

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    yield server.server_address[1]
    server.shutdown()
    server.server_close()
    thread.join(timeout=10)


def test_a_server_that_cannot_dechunk_answers_411_naming_content_length(runserver, support):
    # runserver sets no wsgi.input_terminated: the body cannot be read, and it is not taken for
    # an empty one.
    token = create_api_client("platform", user=support)[1]
    body = dumps(snapshot_doc("CHUNKED-3")).encode()
    for path in ("/api/snapshots", "/api/outages"):
        response = _chunked(runserver, "POST", path, body, _headers(token))
        assert response.status == 411, (path, response.body)
        error = json.loads(response.body)
        assert "Content-Length" in error["error"] and "empty" not in error["error"]
        assert [p["field"] for p in error["problems"]] == ["header.Content-Length"]
    assert Snapshot.objects.count() == 0 and Outage.objects.count() == 0
