"""/healthz for load balancers: the database decides 200 or 503; broker and heartbeats reported."""

import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
from django.test import Client, override_settings

from refunds_admin.ops import health
from tests.support.posting_support import wait_for

ROOT = Path(__file__).resolve().parents[2]
KEYS = {"status", "database", "broker", "beat", "worker", "queues", "stalled_jobs"}


def _closed_port():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]  # nothing listens once the socket is closed


@pytest.mark.django_db
def test_it_answers_200_with_json_and_no_login_when_the_database_answers():
    response = Client().get("/healthz")
    assert response.status_code == 200
    assert response["Content-Type"] == "application/json"
    assert response["Cache-Control"] == "no-store"
    body = response.json()
    assert body["status"] == "ok" and body["database"] == "ok"
    assert set(body) <= KEYS
    assert not response.cookies  # no session, no CSRF cookie: nothing to leak


@pytest.mark.django_db
@override_settings(SECURE_SSL_REDIRECT=True, ALLOWED_HOSTS=["refunds.example.com"])
def test_it_answers_a_probe_by_address_over_plain_http():
    """A load balancer probes http://10.0.0.7:8000/healthz: no host check, no HTTPS redirect
    (the sign-in page on the same request is refused and redirected)."""
    client = Client()
    assert client.get("/healthz", HTTP_HOST="10.0.0.7:8000").status_code == 200
    assert client.get("/accounts/login/", HTTP_HOST="10.0.0.7:8000").status_code == 400
    redirect = client.get("/accounts/login/", HTTP_HOST="refunds.example.com")
    assert redirect.status_code == 301


def test_it_answers_503_when_the_database_is_down(tmp_path):
    """A real connection attempt to a PostgreSQL that is not there, in a fresh process."""
    script = (
        "import django, json; django.setup();"
        "from django.test import Client;"
        "r = Client().get('/healthz');"
        "print(r.status_code); print(r.content.decode())"
    )
    env = {k: v for k, v in os.environ.items() if k not in ("REDIS_URL",)}
    env.update(
        DJANGO_SETTINGS_MODULE="refunds_admin.settings",
        DATABASE_URL=f"postgres://postgres@127.0.0.1:{_closed_port()}/refunds_gone",
    )
    res = subprocess.run(
        [sys.executable, "-c", script], cwd=ROOT, env=env, capture_output=True, text=True
    )
    assert res.returncode == 0, res.stderr
    status, body = res.stdout.strip().splitlines()
    assert status == "503"
    assert json.loads(body) == {
        "status": "unavailable",
        "database": "unavailable",
        "broker": "not configured",
    }
    assert "refused" not in body.lower() and "5432" not in body  # no error text, no address


def test_it_answers_503_in_seconds_when_the_database_host_never_answers():
    """A host that takes the connection and then says nothing (as one that drops packets): the
    connect timeout gives up after DATABASE_CONNECT_TIMEOUT seconds instead of holding /healthz
    for the operating system's minutes. The silent server is a listening socket on 127.0.0.1
    that never accepts: the kernel completes the handshake, nobody ever answers."""
    import socket
    import time

    silent = socket.socket()
    silent.bind(("127.0.0.1", 0))
    silent.listen(8)
    script = (
        "import django; django.setup();"
        "from django.test import Client;"
        "print(Client().get('/healthz').status_code)"
    )
    env = {k: v for k, v in os.environ.items() if k not in ("REDIS_URL",)}
    env.update(
        DJANGO_SETTINGS_MODULE="refunds_admin.settings",
        DATABASE_URL=f"postgres://postgres@127.0.0.1:{silent.getsockname()[1]}/refunds_silent",
        DATABASE_CONNECT_TIMEOUT="2",
    )
    started = time.monotonic()
    try:
        res = subprocess.run(
            [sys.executable, "-c", script],
            cwd=ROOT,
            env=env,
            capture_output=True,
            text=True,
            timeout=60,
        )
    finally:
        silent.close()
    assert res.returncode == 0, res.stderr
    assert res.stdout.strip() == "503"
    assert time.monotonic() - started < 30


@pytest.mark.django_db
def test_it_reports_an_unreachable_broker_without_failing():
    with override_settings(REDIS_URL=f"redis://127.0.0.1:{_closed_port()}/0"):
        response = Client().get("/healthz")
    assert response.status_code == 200
    assert response.json() == {
        "status": "ok",
        "database": "ok",
        "broker": "unreachable",
        "beat": None,
        "worker": None,
        "queues": None,
        "stalled_jobs": {"posting": [], "prepare": [], "statements": []},
    }


@pytest.mark.django_db
def test_it_reports_stalled_jobs_by_kind_with_their_ages(support, settings):
    """A batch prepare whose worker died: /healthz lists it under its kind, with the seconds
    since its last heartbeat, until the sweeper hands it to another worker."""
    from refunds_admin.proposals import batches
    from tests.support.factories import cancelled_outage

    run = batches.start_prepare(cancelled_outage(support), acting_user=support)
    assert batches._claim(run.pk)  # a worker claimed it ... and was killed
    assert Client().get("/healthz").json()["stalled_jobs"]["prepare"] == []  # still fresh
    settings.OUTAGE_PREPARE_STALE_AFTER = 1
    time.sleep(2.1)
    [stalled] = Client().get("/healthz").json()["stalled_jobs"]["prepare"]
    assert stalled["id"] == run.pk and stalled["age_seconds"] >= 2


@pytest.mark.redis
@pytest.mark.postgres
def test_it_reports_the_beat_and_worker_heartbeats(celery_worker_process, tmp_path):
    """A real beat sends the heartbeat every second; a real worker runs it; /healthz shows both
    as just seen. Before them, it shows neither."""
    client = Client()
    first = client.get("/healthz").json()
    assert first["broker"] == "ok" and first["beat"] is None and first["worker"] is None

    celery_worker_process.start()
    log = tmp_path / "beat.log"
    with open(log, "w") as handle:
        beat = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "celery",
                "-A",
                "refunds_admin",
                "beat",
                "--loglevel=INFO",
                f"--schedule={tmp_path / 'beat-schedule'}",
                f"--pidfile={tmp_path / 'beat.pid'}",
            ],
            cwd=ROOT,
            env=celery_worker_process.env(HEARTBEAT_EVERY=1),
            stdout=handle,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    try:
        deadline = time.monotonic() + 60
        while True:
            body = client.get("/healthz").json()
            if body["beat"] and body["worker"]:
                break
            assert beat.poll() is None, log.read_text()
            assert time.monotonic() < deadline, (body, log.read_text())
            time.sleep(0.3)
    finally:
        beat.terminate()
        beat.wait(timeout=20)
    assert body["status"] == "ok" and body["broker"] == "ok"
    for which in ("beat", "worker"):
        assert body[which]["age_seconds"] <= 5
        assert body[which]["last_seen"].endswith("Z")

    # Without new heartbeats the ages grow: a stopped beat shows as an old one.
    time.sleep(2.2)
    later = client.get("/healthz").json()
    assert later["beat"]["age_seconds"] >= 2


@pytest.mark.redis
@pytest.mark.postgres
def test_it_tells_a_dead_long_jobs_worker_from_a_live_periodic_one(celery_worker_process):
    """The deployment runs one worker per queue (README "Deploying"). With only the periodic
    worker alive -- the one that posts, the `celery` queue's, killed or never started --
    /healthz must not report the workers as just seen: each queue has its own age."""
    celery_worker_process.start_periodic()
    celery_worker_process.start_beat(HEARTBEAT_EVERY=1)
    client = Client()
    wait_for(
        lambda: (client.get("/healthz").json().get("queues") or {}).get("periodic"),
        timeout=60,
        message="the periodic queue's heartbeat",
    )
    body = client.get("/healthz").json()
    assert body["queues"]["periodic"]["age_seconds"] <= 5
    assert body["queues"]["celery"] is None  # nobody consumes the long jobs' queue

    celery_worker_process.start()  # the long jobs' worker comes up: its queue is seen too
    wait_for(
        lambda: client.get("/healthz").json()["queues"]["celery"],
        timeout=60,
        message="the long jobs' queue's heartbeat",
    )
    assert client.get("/healthz").json()["queues"]["celery"]["age_seconds"] <= 5


def test_it_stamps_nothing_and_reports_nothing_without_redis(settings):
    settings.REDIS_URL = None
    health.stamp("worker")  # no error, nothing to write to
    assert health.celery_status() is None
