"""What /healthz reports: the database, and with Redis the broker and the Celery heartbeats.

Beat stamps the time each time it sends the `ops.heartbeat` task; a worker stamps the time
each time it finishes a task (any task; beat sends the heartbeat every HEARTBEAT_EVERY seconds,
30 by default).
Both stamps live in Redis, so every web process reads the same ones. Beat sends the heartbeat
to each queue (`periodic` and `celery`, the long jobs'), and a worker also stamps the queue the
task came from: with one worker per queue, /healthz shows each queue's worker on its own, so a
dead worker of the long jobs cannot hide behind a live periodic one.
"""

import time
from functools import lru_cache

from django.conf import settings
from django.db import connection

from refunds_admin.jobs import kinds

_KEY = "refunds_admin:heartbeat:{}"
_TTL = 7 * 24 * 3600
# The queues a deployment runs a worker for (README "Deploying"; CELERY_TASK_ROUTES).
QUEUES = ("celery", "periodic")


@lru_cache(maxsize=4)
def _redis(url):
    import redis

    # A health check must answer quickly even when Redis hangs.
    return redis.Redis.from_url(url, socket_connect_timeout=1, socket_timeout=1)


def _client():
    url = getattr(settings, "REDIS_URL", None)
    return _redis(url) if url else None


def database_ok():
    # Twice: a kept-alive connection that a database restart broke fails once, then reconnects.
    for _ in range(2):
        try:
            with connection.cursor() as cursor:
                cursor.execute("SELECT 1")
                if cursor.fetchone() == (1,):
                    return True
        except Exception:  # any failure is "not answering"; the reason is not the prober's
            try:
                connection.close()
            except Exception:
                pass
    return False


def stamp(which, now=None):
    """Record that `which` ("beat" or "worker") was alive now. Never raises: a missed stamp
    shows as an older heartbeat, it must not fail a task."""
    client = _client()
    if client is None:
        return
    try:
        client.set(_KEY.format(which), repr(now if now is not None else time.time()), ex=_TTL)
    except Exception:
        pass


def celery_status():
    """None without Redis; otherwise the broker's reachability and the two heartbeats."""
    client = _client()
    if client is None:
        return None
    try:
        client.ping()
        beat, worker, *queues = client.mget(
            [_KEY.format("beat"), _KEY.format("worker")]
            + [_KEY.format(f"queue:{queue}") for queue in QUEUES]
        )
    except Exception:
        return {"broker": "unreachable", "beat": None, "worker": None, "queues": None}
    now = time.time()
    return {
        "broker": "ok",
        "beat": _age(beat, now),
        "worker": _age(worker, now),
        "queues": {queue: _age(raw, now) for queue, raw in zip(QUEUES, queues, strict=True)},
    }


def _age(raw, now):
    if raw is None:
        return None
    try:
        stamped = float(raw)
    except ValueError:
        return None
    return {
        "last_seen": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(stamped)),
        "age_seconds": max(0, round(now - stamped)),
    }


def stalled_jobs():
    """{kind: [{"id", "age_seconds"}]}: the jobs running without a heartbeat for their stale
    period (posting, prepare, statements), by the database's clock; the sweeper resumes them.
    None when the database cannot say."""
    try:
        return kinds.stalled_jobs()
    except Exception:  # reported, not judged: the database line says what is wrong
        return None


def report():
    """(status code, JSON-able body). 200 when the database answers, 503 when it does not; the
    broker, heartbeats and stalled jobs are reported, not judged (a load balancer should keep
    sending web traffic while the worker restarts)."""
    db = database_ok()
    body = {"status": "ok" if db else "unavailable", "database": "ok" if db else "unavailable"}
    celery = celery_status()
    if celery is None:
        body["broker"] = "not configured"
    else:
        body.update(celery)
    if db:
        body["stalled_jobs"] = stalled_jobs()
    return (200 if db else 503), body
