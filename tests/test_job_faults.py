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

from .factories import cancelled_outage
from .posting_support import wait_for

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
    celery_worker_process, support, settings
):
    """Every slot of the long jobs' worker is busy: the sweeps still run (their own queue and
    worker), and a stalled run is queued again once per stale period, not at every sweep."""
    settings.OUTAGE_PREPARE_STALE_AFTER = FAST["OUTAGE_PREPARE_STALE_AFTER"]
    _, busy = _big_outage(support, "BUSY", n=30)
    _, dead = _big_outage(support, "DEAD", n=2)
    periodic = celery_worker_process.start_periodic(**FAST)
    celery_worker_process.start_beat(**FAST)
    celery_worker_process.start(OUTAGE_PREPARE_PARTS=1, concurrency=1, **FAST)
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
    wait_for(lambda: _run(stalled.pk).state == "done", timeout=180, message="the stalled run")
    report_timing(
        "batch prepare stalled while every slot is busy",
        queued_again=requeued,
        done=time.monotonic() - died,
    )
