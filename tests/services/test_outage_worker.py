"""The outage's batch prepare and posting on real Celery workers (Redis, PostgreSQL): the run is
shared between worker processes, finishes once, and a worker killed mid-run is continued."""

from datetime import timedelta

import pytest

from refunds_admin.audit.models import AuditEvent
from refunds_admin.ledger.models import Credit
from refunds_admin.proposals import batches
from refunds_admin.proposals.models import OutagePrepareRun, PayoutProposal
from refunds_admin.reports import outages as reports
from tests.support.factories import approve_outage, cancelled_outage, outage
from tests.support.posting_support import wait_for

pytestmark = [pytest.mark.postgres, pytest.mark.redis]

IDS = tuple(f"W-{n}" for n in range(1, 9))


def _wait_done(run, timeout=90):
    def finished():
        run.refresh_from_db()
        return run.state in ("done", "failed")

    wait_for(finished, timeout=timeout, message=f"prepare run {run.pk} to finish")
    return run


def test_the_batch_prepare_is_shared_between_workers_and_finishes_once(
    celery_worker_process, support, manager
):
    celery_worker_process.start(concurrency=2, OUTAGE_PREPARE_PARTS=2)
    o = cancelled_outage(support, external_ids=IDS)
    run = _wait_done(batches.start_prepare(o, acting_user=support))
    assert run.state == "done" and run.done == run.total == len(IDS), run.last_error
    assert run.results.filter(outcome="prepared").count() == len(IDS)
    assert PayoutProposal.objects.filter(status="submitted").count() == len(IDS)
    assert AuditEvent.objects.filter(action="outage.prepared").count() == 1

    # Approve all: every proposal posts exactly once, and the aggregated progress says so.
    approve_outage(o, manager)
    wait_for(lambda: reports.posting_progress(o)["done"], timeout=90, message="everything posted")
    progress = reports.posting_progress(o)
    assert progress["states"] == {"done": len(IDS)}
    total = sum(PayoutProposal.objects.values_list("total_cents", flat=True))
    assert progress["money"]["USD"]["posted_cents"] == total
    assert sum(Credit.objects.values_list("amount_cents", flat=True)) == total


def test_a_worker_killed_mid_run_is_continued_by_starting_again(
    celery_worker_process, support, settings
):
    o = cancelled_outage(support, external_ids=IDS)
    # No worker yet: queue the run, then a worker that claims it and is killed at once.
    run = batches.start_prepare(o, acting_user=support)
    first = celery_worker_process.start(OUTAGE_PREPARE_PARTS=1)
    wait_for(
        lambda: OutagePrepareRun.objects.get(pk=run.pk).state == "running",
        timeout=30,
        message="the worker to claim the run",
    )
    celery_worker_process.kill(first)
    run.refresh_from_db()
    if run.state == "done":
        pytest.skip("the worker finished before it could be killed")
    # A new worker, and the run is taken to be dead once its heartbeat is old.
    celery_worker_process.start(OUTAGE_PREPARE_PARTS=1, OUTAGE_PREPARE_STALE_AFTER=0)
    settings.OUTAGE_PREPARE_STALE_AFTER = 0
    assert batches.start_prepare(o, acting_user=support) == run  # the same run, queued again
    run = _wait_done(run)
    assert run.state == "done", run.last_error
    assert run.results.count() == len(IDS)  # one result per tournament, none twice
    assert PayoutProposal.objects.exclude(status="rejected").count() == len(IDS)
    assert AuditEvent.objects.filter(action="outage.prepared").count() == 1


def test_an_open_outage_prepares_nothing(celery_worker_process, support):
    celery_worker_process.start()
    o = outage(support, external_ids=("OPEN-1",), failed_ago=timedelta(minutes=3))
    run = _wait_done(batches.start_prepare(o, acting_user=support))
    assert [r.outcome for r in run.results.all()] == ["skipped"]
