"""Every job recovers by itself and every screen tells the truth, whatever fails: faults made
for real (SIGKILLed workers, killed database connections, clocks 10 minutes off) against real
Celery workers, beat and PostgreSQL.

Each test reports, for its fault, the seconds from the fault to the job running again and to
done (set FAULT_TIMINGS=path to collect them; docs/jobs.md lists the figures)."""

import os
import time
from unittest import mock

import pytest

from refunds_admin.audit.models import AuditEvent
from refunds_admin.proposals import batches
from refunds_admin.proposals.models import OutagePrepareRun, PayoutProposal
from tests.support.factories import cancelled_outage
from tests.support.posting_support import (
    expected_keys,
    make_approved_proposal,
    wait_for,
    wait_until_posted,
    worker_database_url,
)

pytestmark = [pytest.mark.postgres, pytest.mark.redis]

# Short periods, so that a test sees a stalled job taken over in seconds, not minutes.
FAST = {"SWEEP_EVERY": 1, "OUTAGE_PREPARE_STALE_AFTER": 4, "POSTING_STALE_AFTER": 4}


def report_timing(fault, **seconds):
    line = f"{fault}: " + ", ".join(f"{k} {v:.1f} s" for k, v in seconds.items())
    print(line)
    if os.environ.get("FAULT_TIMINGS"):
        with open(os.environ["FAULT_TIMINGS"], "a") as out:
            out.write(line + "\n")


def _run(run_id):
    return OutagePrepareRun.objects.get(pk=run_id)


def test_a_batch_prepare_whose_worker_is_killed_is_resumed_by_the_sweeper(
    celery_worker_process, support, manager, settings, client
):
    settings.OUTAGE_PREPARE_STALE_AFTER = FAST["OUTAGE_PREPARE_STALE_AFTER"]
    ids = tuple(f"K-{n}" for n in range(1, 13))
    # Big enough tournaments that the run is caught mid-way.
    o = cancelled_outage(support, external_ids=ids, docs={x: {"eliminated": 2500} for x in ids})
    celery_worker_process.start_periodic(**FAST)
    celery_worker_process.start_beat(**FAST)
    first = celery_worker_process.start(OUTAGE_PREPARE_PARTS=1, **FAST)
    run = batches.start_prepare(o, acting_user=support)
    wait_for(lambda: 1 <= _run(run.pk).done, timeout=90, message="the run to be under way")
    celery_worker_process.kill(first)  # the whole worker: its message waits an hour in Redis
    killed = time.monotonic()
    done_when_killed = _run(run.pk).done
    assert done_when_killed < len(ids), "the run finished before the worker could be killed"

    # The page does not say "running" for a dead run: it says it is stalled and resuming.
    wait_for(
        lambda: batches.prepare_progress(o)["status"].code == "stalled",
        timeout=30,
        message="the run to be seen stalled",
    )
    client.force_login(support)
    page = client.get(f"/outages/{o.pk}/prepare/progress/", HTTP_HX_REQUEST="true")
    assert "Stalled, resuming" in page.content.decode()

    # A worker comes back; nobody presses Prepare again: the sweeper hands the run over.
    celery_worker_process.start("w2", OUTAGE_PREPARE_PARTS=1, **FAST)
    wait_for(
        lambda: _run(run.pk).done > done_when_killed or _run(run.pk).state == "done",
        timeout=120,
        message="the run to continue",
    )
    running_again = time.monotonic() - killed
    wait_for(lambda: _run(run.pk).state == "done", timeout=180, message="the run to finish")
    finished = time.monotonic() - killed
    run.refresh_from_db()
    assert run.results.count() == len(ids) == run.done  # one result per tournament, none twice
    assert PayoutProposal.objects.filter(status="submitted").count() == len(ids)
    assert AuditEvent.objects.filter(action="outage.prepared").count() == 1
    report_timing("batch prepare, worker SIGKILLed", running_again=running_again, done=finished)


LIBFAKETIME = "/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1"


def _clock_off(offset):
    """The environment of a worker whose own clock is `offset` off (libfaketime); monotonic
    timers (Celery's, the heartbeat thread's) keep running true."""
    if not os.path.exists(LIBFAKETIME):
        pytest.skip("needs libfaketime (apt-get install faketime)")
    return {"LD_PRELOAD": LIBFAKETIME, "FAKETIME": offset, "FAKETIME_DONT_FAKE_MONOTONIC": "1"}


def _big_outage(support, prefix, n=12):
    ids = tuple(f"{prefix}-{i}" for i in range(1, n + 1))
    return ids, cancelled_outage(
        support, external_ids=ids, docs={x: {"eliminated": 2500} for x in ids}
    )


def test_a_killed_worker_whose_clock_is_10_minutes_fast_is_taken_over_in_seconds(
    celery_worker_process, support, settings
):
    settings.OUTAGE_PREPARE_STALE_AFTER = FAST["OUTAGE_PREPARE_STALE_AFTER"]
    ids, o = _big_outage(support, "FAST")
    celery_worker_process.start_periodic(**FAST)
    celery_worker_process.start_beat(**FAST)
    fast = celery_worker_process.start(OUTAGE_PREPARE_PARTS=1, **FAST, **_clock_off("+10m"))
    run = batches.start_prepare(o, acting_user=support)
    wait_for(lambda: 1 <= _run(run.pk).done, timeout=90, message="the run to be under way")
    celery_worker_process.kill(fast)
    killed = time.monotonic()
    done_when_killed = _run(run.pk).done
    assert done_when_killed < len(ids), "the run finished before the worker could be killed"
    # Its last heartbeat is on the database's clock, not 10 minutes in the future.
    celery_worker_process.start("w2", OUTAGE_PREPARE_PARTS=1, **FAST)
    wait_for(
        lambda: _run(run.pk).done > done_when_killed or _run(run.pk).state == "done",
        timeout=120,
        message="the run to be taken over (a future heartbeat would hold it for 10 minutes)",
    )
    running_again = time.monotonic() - killed
    wait_for(lambda: _run(run.pk).state == "done", timeout=180, message="the run to finish")
    assert _run(run.pk).results.count() == len(ids)
    report_timing(
        "batch prepare, worker 10 min fast SIGKILLed",
        running_again=running_again,
        done=time.monotonic() - killed,
    )


def test_a_healthy_worker_whose_clock_is_10_minutes_slow_is_left_alone(
    celery_worker_process, support, settings
):
    settings.OUTAGE_PREPARE_STALE_AFTER = FAST["OUTAGE_PREPARE_STALE_AFTER"]
    ids, o = _big_outage(support, "SLOW")
    periodic = celery_worker_process.start_periodic(**FAST)
    celery_worker_process.start_beat(**FAST)
    celery_worker_process.start(OUTAGE_PREPARE_PARTS=1, **FAST, **_clock_off("-10m"))
    run = batches.start_prepare(o, acting_user=support)
    seen = set()

    def finished():
        seen.add(batches.prepare_progress(o)["status"].code)
        return _run(run.pk).state == "done"

    wait_for(finished, timeout=180, interval=0.2, message="the run to finish")
    # Never taken for dead: no "stalled" on the page, and the sweeper queued it never again.
    assert "stalled" not in seen and "running" in seen
    assert "queueing batch prepare run" not in periodic.log_path.read_text()
    assert _run(run.pk).results.count() == len(ids)


def test_the_sweeper_runs_beside_a_busy_worker_and_queues_a_stalled_run_once_per_period(
    celery_worker_process, support, settings, request
):
    """Every slot of the long jobs' worker is busy: the sweeps still run (their own queue and
    worker), and a stalled run is queued again once per stale period, not at every sweep."""
    import psycopg

    settings.OUTAGE_PREPARE_STALE_AFTER = FAST["OUTAGE_PREPARE_STALE_AFTER"]
    busy_ids, busy = _big_outage(support, "BUSY", n=12)
    _, dead = _big_outage(support, "DEAD", n=2)
    periodic = celery_worker_process.start_periodic(**FAST)
    celery_worker_process.start_beat(**FAST)
    celery_worker_process.start(OUTAGE_PREPARE_PARTS=1, concurrency=1, **FAST)
    # The only slot stays busy through a sweep, a stale period and a requeue whatever the
    # machine's speed: another session holds the busy outage's tournaments, so the long run
    # waits at the next one it prepares (each prepare locks its tournament first), its
    # heartbeat beating all along, until the lock is let go below.
    holder = psycopg.connect(worker_database_url())
    request.addfinalizer(holder.close)  # before the database is emptied, even if a check fails
    holder.execute(
        "SELECT id FROM tournaments_tournament WHERE external_id = ANY(%s) FOR UPDATE SKIP LOCKED",
        [list(busy_ids[1:])],
    )
    long_run = batches.start_prepare(busy, acting_user=support)
    wait_for(lambda: _run(long_run.pk).state == "running", timeout=60, message="the long run")
    # A run claimed by a worker that died at once, its message acknowledged and lost.
    with mock.patch.object(batches, "kick_prepare"):
        stalled = batches.start_prepare(dead, acting_user=support)
    assert batches._claim(stalled.pk)
    died = time.monotonic()
    log = periodic.log_path
    wait_for(
        lambda: f"queueing batch prepare run {stalled.pk} again" in log.read_text(),
        timeout=60,
        message="the sweeper to queue the stalled run",
    )
    requeued = time.monotonic() - died
    assert _run(long_run.pk).state == "running"  # the only slot is still busy: not starved
    time.sleep(FAST["OUTAGE_PREPARE_STALE_AFTER"])
    text = log.read_text()
    sweeps = text.count("proposals.sweep_prepare[") // 2  # received + succeeded
    queued = text.count(f"queueing batch prepare run {stalled.pk} again")
    assert sweeps >= 4 and queued <= 2, (sweeps, queued)
    assert _run(long_run.pk).state == "running" and _run(stalled.pk).state != "done"
    holder.rollback()  # the busy outage's tournaments let go: the long run goes on, then the other
    wait_for(lambda: _run(long_run.pk).state == "done", timeout=180, message="the long run")
    wait_for(lambda: _run(stalled.pk).state == "done", timeout=180, message="the stalled run")
    report_timing(
        "batch prepare stalled while every slot is busy",
        queued_again=requeued,
        done=time.monotonic() - died,
    )


# ---------------------------------------------------------------------------------------------
# Posting
# ---------------------------------------------------------------------------------------------


def _job(proposal):
    from refunds_admin.ledger.models import PostingJob

    return PostingJob.objects.filter(proposal_id=proposal.pk).first()


def _posted(proposal):
    job = _job(proposal)
    return job.posted if job else 0


def _kill_database_connections():
    """What a PostgreSQL restart does to every session of the test database but this one."""
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity "
            "WHERE datname = current_database() AND pid <> pg_backend_pid()"
        )
        return cursor.fetchone()[0]


def test_posting_through_killed_database_connections_waits_for_the_database_then_clears_it(
    celery_worker_process,
):
    from refunds_admin.ledger import selectors

    env = {**FAST, "POSTING_CHUNK_SIZE": 500, "POSTING_BACKOFF_BASE": 1}
    celery_worker_process.start_periodic(**env)
    celery_worker_process.start_beat(**env)
    celery_worker_process.start(**env)
    proposal = make_approved_proposal(lines=12_000)  # 24,000 credits in 24 chunks
    wait_for(lambda: _posted(proposal) >= 2_000, timeout=120, message="posting under way")
    assert _kill_database_connections() >= 1
    killed = time.monotonic()
    at_kill = _posted(proposal)
    # Credits flow again, and the page no longer shows a reason while they do.
    wait_for(
        lambda: _posted(proposal) > at_kill + 1_000 or _job(proposal).state == "posted",
        timeout=120,
        message="credits to flow again",
    )
    running_again = time.monotonic() - killed
    progress = selectors.posting_progress(proposal)
    assert progress["error"] == "" and progress["status"].code in ("running", "done"), progress
    job = wait_until_posted(proposal, timeout=180)
    assert job.state == "posted", job.last_error
    assert job.attempts == 0  # the database going away is not the job's fault
    assert_posted_exactly_once(proposal)
    # The history keeps what the page showed while it waited.
    [recovered] = AuditEvent.objects.filter(
        action="ledger.posting_recovered", object_id=str(proposal.pk)
    )
    assert "waiting for the database" in recovered.before["error"]
    assert recovered.before["waiting_for"] == "database"
    report_timing(
        "posting, every database connection killed",
        running_again=running_again,
        posted=time.monotonic() - killed,
    )


def test_a_statement_timeout_in_posting_fails_the_attempt_with_its_reason(celery_worker_process):
    import psycopg

    from refunds_admin.ledger import selectors
    from refunds_admin.ledger.models import Credit

    env = {**FAST, "PGOPTIONS": "-c statement_timeout=1500"}
    celery_worker_process.start(**env)
    url = worker_database_url().replace("postgres://", "postgresql://")
    with psycopg.connect(url) as other:
        # Another session holds the ledger: the job's insert waits until the timeout cancels it.
        other.execute(f"LOCK TABLE {Credit._meta.db_table} IN ACCESS EXCLUSIVE MODE")
        proposal = make_approved_proposal(lines=50)
        job = wait_for(
            lambda: (lambda j: j if j and j.attempts >= 1 else None)(_job(proposal)),
            timeout=60,
            message="the first attempt to fail",
        )
        faulted = time.monotonic()
        progress = selectors.posting_progress(proposal)
        assert "statement timeout (SQLSTATE 57014)" in job.last_error, job.last_error
        assert "attempt 1 of" in progress["error"]
        assert progress["status"].code != "waiting"  # not "waiting for the wallet"
        other.rollback()
    job = wait_until_posted(proposal, timeout=120)
    assert job.state == "posted", job.last_error
    assert_posted_exactly_once(proposal)
    report_timing(
        "posting, statement timeout (lock held 1.5 s+)", posted=time.monotonic() - faulted
    )


def test_a_killed_posting_worker_whose_clock_is_10_minutes_fast_is_taken_over_in_seconds(
    celery_worker_process,
):
    env = {**FAST, "POSTING_CHUNK_SIZE": 500}
    celery_worker_process.start_periodic(**env)
    celery_worker_process.start_beat(**env)
    fast = celery_worker_process.start(**env, **_clock_off("+10m"))
    proposal = make_approved_proposal(lines=12_000)
    wait_for(lambda: _posted(proposal) >= 2_000, timeout=120, message="posting under way")
    celery_worker_process.kill(fast)
    killed = time.monotonic()
    at_kill = _posted(proposal)
    assert _job(proposal).state == "running"
    celery_worker_process.start("w2", **env)
    wait_for(
        lambda: _posted(proposal) > at_kill or _job(proposal).state == "posted",
        timeout=120,
        message="the job to be taken over (a future heartbeat would hold it 10 minutes)",
    )
    running_again = time.monotonic() - killed
    job = wait_until_posted(proposal, timeout=180)
    assert job.state == "posted" and job.attempts == 0, job.last_error
    assert_posted_exactly_once(proposal)
    report_timing(
        "posting, worker 10 min fast SIGKILLed",
        running_again=running_again,
        posted=time.monotonic() - killed,
    )


def assert_posted_exactly_once(proposal):
    from django.db.models import Count

    from refunds_admin.ledger.models import Credit

    credits = Credit.objects.filter(proposal_id=proposal.pk)
    assert set(credits.values_list("key", flat=True)) == expected_keys(proposal)
    assert not credits.values("key").annotate(n=Count("key")).filter(n__gt=1).exists()
    total = sum(credits.values_list("amount_cents", flat=True))
    assert total == PayoutProposal.objects.get(pk=proposal.pk).total_cents


def test_a_statement_timeout_in_a_batch_prepare_fails_the_run_with_its_reason(
    celery_worker_process, support, client
):
    import psycopg

    _, o = _big_outage(support, "TMO", n=2)
    celery_worker_process.start(OUTAGE_PREPARE_PARTS=1, PGOPTIONS="-c statement_timeout=1500")
    url = worker_database_url().replace("postgres://", "postgresql://")
    with psycopg.connect(url) as other:
        # Another session holds the proposals: the run's first read waits until the timeout.
        other.execute(f"LOCK TABLE {PayoutProposal._meta.db_table} IN ACCESS EXCLUSIVE MODE")
        run = batches.start_prepare(o, acting_user=support)
        wait_for(lambda: _run(run.pk).state == "failed", timeout=60, message="the run to fail")
        other.rollback()
    status = batches.prepare_progress(o)["status"]
    assert status.code == "failed"
    assert status.reason.startswith("statement timeout (SQLSTATE 57014): "), status.reason
    client.force_login(support)
    page = client.get(f"/outages/{o.pk}/prepare/progress/", HTTP_HX_REQUEST="true")
    assert "statement timeout (SQLSTATE 57014)" in page.content.decode()
