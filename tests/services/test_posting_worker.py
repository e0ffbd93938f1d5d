"""Posting with a real Celery worker on Redis and PostgreSQL: crashes, redelivery, two workers,
the broker down at approval. Every credit ends up booked exactly once."""

import os
import signal
import subprocess
import sys
from datetime import timedelta
from pathlib import Path

import psycopg
import pytest
from django.db import transaction
from django.db.models import Count, Sum

from refunds_admin.ledger import posting
from refunds_admin.ledger.models import Credit, PostingJob
from refunds_admin.ledger.tasks import post_proposal
from refunds_admin.proposals.models import PayoutProposal
from tests.support.posting_support import (
    ROOT,
    expected_keys,
    make_approved_proposal,
    make_submitted_proposal,
    wait_for,
    wait_until_posted,
    worker_database_url,
)

pytestmark = [pytest.mark.postgres, pytest.mark.redis]


def assert_posted_exactly_once(proposal):
    proposal.refresh_from_db()
    assert proposal.status == PayoutProposal.Status.POSTED
    keys = set(Credit.objects.filter(proposal=proposal).values_list("key", flat=True))
    assert keys == expected_keys(proposal)
    booked = Credit.objects.filter(proposal=proposal).aggregate(
        n=Count("key"), cents=Sum("amount_cents")
    )
    assert booked == {"n": len(keys), "cents": proposal.total_cents}
    job = PostingJob.objects.get(proposal=proposal)
    assert (job.posted, job.posted_cents) == (job.total, job.total_cents)


def test_it_posts_an_approved_proposal_on_a_real_worker(celery_worker_process):
    celery_worker_process.start()
    proposal = make_approved_proposal(lines=2_500)  # kicks the task when the approval commits
    job = wait_until_posted(proposal)
    assert job.state == "posted", job.last_error
    assert_posted_exactly_once(proposal)


def _blocked_backend(dbname):
    """The worker's database session waiting for a row lock our transaction holds."""
    with psycopg.connect(worker_database_url(), autocommit=True) as conn:
        row = conn.execute(
            # The chunk's statement is longer than pg_stat_activity keeps of a query (1 kB):
            # it is known by its start as well as by its INSERT.
            "SELECT pid FROM pg_stat_activity WHERE datname = %s AND wait_event_type = 'Lock'"
            " AND (query LIKE '%%INSERT INTO ledger_credit%%' OR query LIKE '%%WITH chunk AS%%')",
            [dbname],
        ).fetchone()
    return row and row[0]


def test_it_books_every_credit_once_after_the_worker_is_killed_mid_chunk(
    celery_worker_process, settings
):
    dbname = settings.DATABASES["default"]["NAME"]
    proposal = make_approved_proposal(lines=3_000, schedule=False)  # 6,000 credits
    chunk = 500
    # Hold, uncommitted, the key of a credit in the third chunk: the worker's INSERT of that
    # chunk waits for us, so we know it is in the middle of the chunk when we kill it.
    blocker = psycopg.connect(worker_database_url())
    try:
        blocker.execute(
            "INSERT INTO ledger_credit (key, proposal_id, entry_id, component, player_id,"
            " currency, amount_cents, created_at) VALUES (%s, %s, 'e001200', 'fee_refund',"
            " 'p001200', 'USD', 100, now())",
            [f"proposal-{proposal.pk}/e001200/fee_refund", proposal.pk],
        )
        worker = celery_worker_process.start(POSTING_CHUNK_SIZE=chunk)
        with transaction.atomic():
            posting.schedule_posting(proposal, actor=None)
        backend = wait_for(
            lambda: _blocked_backend(dbname), message="the worker to block mid-chunk"
        )
        job = PostingJob.objects.get(proposal=proposal)
        assert (job.state, job.posted) == ("running", 2 * chunk * 2)

        celery_worker_process.kill(worker)  # SIGKILL, mid-chunk
    finally:
        blocker.rollback()
        blocker.close()
    # The killed worker's session ends when it finds its client gone; its chunk rolls back.
    with psycopg.connect(worker_database_url(), autocommit=True) as conn:
        wait_for(
            lambda: (
                not conn.execute(
                    "SELECT 1 FROM pg_stat_activity WHERE pid = %s", [backend]
                ).fetchone()
            ),
            message="the killed worker's session to end",
        )
    assert Credit.objects.filter(proposal=proposal).count() == 2 * chunk * 2

    # A new worker, and the sweeper finding the job without heartbeat, finish it.
    celery_worker_process.start(POSTING_CHUNK_SIZE=chunk)
    assert posting.sweep_unposted(stale_after=timedelta(0)) == [proposal.pk]
    job = wait_until_posted(proposal)
    assert job.state == "posted", job.last_error
    assert_posted_exactly_once(proposal)
    assert job.attempts == 0  # a crash is not an error: it never uses up an attempt


def _pool_child(worker):
    """The prefork pool process doing the work (the worker's only child, concurrency 1)."""
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == worker.pid:
            return int(stat.parent.name)
    return None


def test_it_redelivers_the_task_when_the_pool_process_is_killed_mid_chunk(
    celery_worker_process, settings
):
    """acks_late + reject_on_worker_lost: the killed run's message goes back to the queue and
    the worker's next pool process finishes the job, no sweeper needed."""
    dbname = settings.DATABASES["default"]["NAME"]
    proposal = make_approved_proposal(lines=2_000, schedule=False)
    chunk = 500
    blocker = psycopg.connect(worker_database_url())
    try:
        blocker.execute(
            "INSERT INTO ledger_credit (key, proposal_id, entry_id, component, player_id,"
            " currency, amount_cents, created_at) VALUES (%s, %s, 'e000700', 'buy_in_refund',"
            " 'p000700', 'USD', 1000, now())",
            [f"proposal-{proposal.pk}/e000700/buy_in_refund", proposal.pk],
        )
        worker = celery_worker_process.start(POSTING_CHUNK_SIZE=chunk)
        with transaction.atomic():
            posting.schedule_posting(proposal, actor=None)
        wait_for(lambda: _blocked_backend(dbname), message="the worker to block mid-chunk")
        child = _pool_child(worker)
        assert child, "no pool process found"
        os.kill(child, signal.SIGKILL)
        wait_for(lambda: "WorkerLostError" in celery_worker_process.logs(), message="worker lost")
    finally:
        blocker.rollback()
        blocker.close()
    job = wait_until_posted(proposal)
    assert job.state == "posted", job.last_error
    assert_posted_exactly_once(proposal)
    assert worker.poll() is None  # the same worker, a new pool process


def test_it_books_nothing_twice_with_redelivery_and_two_workers(celery_worker_process):
    celery_worker_process.start(POSTING_CHUNK_SIZE=500)
    celery_worker_process.start(POSTING_CHUNK_SIZE=500)
    proposal = make_approved_proposal(lines=5_000)
    for _ in range(3):  # the same task delivered again, to either worker
        post_proposal.delay(proposal.pk)
    job = wait_until_posted(proposal)
    assert job.state == "posted", job.last_error
    # Every delivery ends (a busy one looks again a few seconds later), none books twice.
    wait_for(
        lambda: celery_worker_process.logs().count("succeeded") >= 4,
        timeout=60,
        message="all four deliveries to finish",
    )
    assert_posted_exactly_once(proposal)


APPROVE_WITH_REDIS_DOWN = """
import os, time, django
os.environ["DJANGO_SETTINGS_MODULE"] = "refunds_admin.settings"
django.setup()
from django.contrib.auth import get_user_model
from refunds_admin.proposals.models import PayoutProposal
from refunds_admin.proposals.services import approve_proposal
proposal = PayoutProposal.objects.get(pk=int(os.environ["PROPOSAL"]))
manager = get_user_model().objects.get(username="posting_approver")
started = time.monotonic()
approve_proposal(proposal, acting_user=manager, fingerprint=proposal.fingerprint)
print("ELAPSED", time.monotonic() - started)
"""


def test_it_approves_with_redis_down_and_the_sweeper_posts_later(celery_worker_process):
    proposal = make_submitted_proposal(lines=200)  # waiting for a manager's approval
    # The approving process sees a broker that refuses connections (nothing listens there).
    env = celery_worker_process.env(REDIS_URL="redis://127.0.0.1:6390/0", PROPOSAL=proposal.pk)
    done = subprocess.run(
        [sys.executable, "-c", APPROVE_WITH_REDIS_DOWN],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    elapsed = float(done.stdout.split("ELAPSED")[1])
    assert elapsed < 3, f"approval took {elapsed:.1f}s with Redis down"
    assert "could not queue the posting" in done.stderr
    proposal.refresh_from_db()
    assert proposal.status == PayoutProposal.Status.APPROVED  # the approval itself succeeded
    # The approved row (with its wallet) is the outbox: no job has run yet.
    assert proposal.wallet == "ledger"
    assert not PostingJob.objects.filter(proposal=proposal).exists()
    assert not Credit.objects.filter(proposal=proposal).exists()

    # Redis is back (the real one): a worker runs, and the sweeper queues the job again.
    celery_worker_process.start()
    assert posting.sweep_unposted(stale_after=timedelta(0)) == [proposal.pk]
    job = wait_until_posted(proposal)
    assert job.state == "posted", job.last_error
    assert_posted_exactly_once(proposal)


def test_it_runs_the_sweeper_and_the_overdue_check_as_named_celery_tasks(celery_worker_process):
    from refunds_admin.incidents.tasks import flag_overdue
    from refunds_admin.ledger.tasks import sweep_unposted

    celery_worker_process.start()
    sweep_unposted.delay()
    flag_overdue.delay()
    logs = wait_for(
        lambda: (lambda text: text.count("succeeded") >= 2 and text)(celery_worker_process.logs()),
        message="both periodic tasks to run",
    )
    assert "ledger.sweep_unposted" in logs and "incidents.flag_overdue" in logs
    assert os.environ["REDIS_URL"]
