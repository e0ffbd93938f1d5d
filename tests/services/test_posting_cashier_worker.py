"""Posted means paid, with real Celery workers on Redis and PostgreSQL and a real HTTP cashier
on 127.0.0.1 that answers 5xx, 429 with Retry-After, drops connections after applying, answers
slowly: workers SIGKILLed again and again, a worker without CASHIER_URL, a cashier unavailable
for long."""

from datetime import timedelta

import pytest
from django.db.models import Count

from refunds_admin.ledger import posting, selectors
from refunds_admin.ledger.models import CashierDelivery, Credit, PostingJob
from refunds_admin.proposals.models import PayoutProposal
from tests.support.fake_cashier import FakeCashier
from tests.support.posting_support import (
    expected_keys,
    make_approved_proposal,
    wait_for,
    wait_until_posted,
)

pytestmark = [pytest.mark.postgres, pytest.mark.redis]


@pytest.fixture
def cashier(settings):
    faults = {"500": 0.04, "429": 0.04, "drop": 0.02, "slow": 0.04}
    with FakeCashier(faults=faults, answer_delay=0.05, retry_after="0.1", seed=9) as fake:
        # The approving process (this one) is configured for it: approvals record it.
        settings.CASHIER_URL = fake.url
        settings.CASHIER_TOKEN = fake.token
        yield fake


def _worker_env(cashier, **extra):
    return {
        "CASHIER_URL": cashier.url,
        "CASHIER_TOKEN": cashier.token,
        "CASHIER_TIMEOUT": "1",
        "CASHIER_BACKOFF": "0.02",
        "CASHIER_MAX_TRIES": "4",
        "CASHIER_CONCURRENCY": "4",
        "CASHIER_BATCH": "100",
        "POSTING_CHUNK_SIZE": "300",
        "POSTING_BACKOFF_BASE": "0.2",
        "POSTING_BACKOFF_MAX": "1",
        # Crashes and an unavailable wallet must never use attempts: one attempt is all a job gets.
        "POSTING_MAX_ATTEMPTS": "1",
    } | extra


def _job(proposal):
    return PostingJob.objects.filter(proposal=proposal).first()


def _confirmed(proposal):
    return CashierDelivery.objects.filter(credit__proposal=proposal, state="applied").count()


def assert_paid_exactly_once(proposal, cashier):
    proposal.refresh_from_db()
    assert proposal.status == PayoutProposal.Status.POSTED
    keys = expected_keys(proposal)
    booked = Credit.objects.filter(proposal=proposal)
    assert set(booked.values_list("key", flat=True)) == keys
    assert not booked.values("key").annotate(n=Count("key")).filter(n__gt=1).exists()
    # The cashier holds each credit once and exactly the approved total.
    assert set(cashier.applied) == keys and cashier.duplicates() == 0
    assert cashier.total_cents(f"proposal {proposal.pk} ") == proposal.total_cents
    assert _confirmed(proposal) == len(keys)
    [row] = selectors.reconcile([proposal.pk])
    assert row["ok"], row["problems"]


def test_it_pays_every_credit_once_while_workers_are_killed_repeatedly(
    celery_worker_process, cashier
):
    env = _worker_env(cashier)
    worker = celery_worker_process.start(**env)
    proposal = make_approved_proposal(lines=1_500)  # 3,000 credits; queued on commit
    confirmed = 0
    for kill in range(4):
        # Let it pay some more, then SIGKILL the whole worker mid-delivery.
        confirmed = wait_for(
            lambda c=confirmed: (lambda n: n if n > c + 150 else None)(_confirmed(proposal)),
            timeout=60,
            message=f"progress before kill {kill + 1}",
        )
        assert _job(proposal).state == "running"
        celery_worker_process.kill(worker)
        worker = celery_worker_process.start(**env)
        # The killed run's message is not redelivered before the visibility timeout: the
        # sweeper finds the job without heartbeat and queues it again.
        wait_for(
            lambda: posting.sweep_unposted(stale_after=timedelta(0)),
            timeout=30,
            message="the sweeper to queue the job again",
        )
    job = wait_until_posted(proposal, timeout=120)
    assert job.state == "posted", job.last_error
    assert job.attempts == 0  # four crashes, and still every attempt left
    assert_paid_exactly_once(proposal, cashier)
    assert cashier.answers[500] and cashier.answers[429] and cashier.answers["drop"]


def test_it_leaves_the_job_to_a_worker_configured_for_its_cashier(celery_worker_process, cashier):
    # A worker with an incomplete environment gets the task first.
    bare = celery_worker_process.start(**_worker_env(cashier, CASHIER_URL=""))
    proposal = make_approved_proposal(lines=50)
    job = wait_for(
        lambda: (lambda j: j if j and "has no CASHIER_URL" in j.last_error else None)(
            _job(proposal)
        ),
        message="the worker to refuse the job",
    )
    assert job.state == "queued" and job.posted == 0
    assert PayoutProposal.objects.get(pk=proposal.pk).status == "approved"
    assert cashier.applied == {} and not Credit.objects.filter(proposal=proposal).exists()

    celery_worker_process.kill(bare)
    celery_worker_process.start(**_worker_env(cashier))
    assert posting.sweep_unposted(stale_after=timedelta(0)) == [proposal.pk]
    job = wait_until_posted(proposal)
    assert job.state == "posted", job.last_error
    assert_paid_exactly_once(proposal, cashier)


def test_it_survives_a_cashier_unavailable_longer_than_its_attempts(celery_worker_process, cashier):
    cashier.down = True
    celery_worker_process.start(**_worker_env(cashier, CASHIER_MAX_TRIES="2"))
    proposal = make_approved_proposal(lines=100)
    # Many more runs stopped by the unavailable cashier than POSTING_MAX_ATTEMPTS (1) allows.
    job = wait_for(
        lambda: (lambda j: j if j and j.wallet_unavailable_retries >= 4 else None)(_job(proposal)),
        timeout=60,
        message="four runs stopped by the unavailable cashier",
    )
    assert job.attempts == 0 and job.state in ("queued", "running")
    assert "waiting for the wallet" in job.last_error or job.state == "running"
    cashier.down = False
    job = wait_until_posted(proposal, timeout=60)
    assert job.state == "posted", job.last_error
    assert job.attempts == 0 and job.wallet_unavailable_since is None
    assert_paid_exactly_once(proposal, cashier)


# -- tickets and tournament money ---------------------------------------------------


def _terminate_worker_connections():
    """A database restart as the workers see it: every other connection to the test database
    is terminated (this test's own stays; no other database is touched)."""
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity "
            "WHERE datname = current_database() AND pid <> pg_backend_pid()"
        )
        return cursor.fetchone()[0]


def assert_every_form_paid_exactly_once(proposal, cashier):
    """Posted means the cashier holds every cent and every ticket: each credit once, each in
    the form it was booked, each ticket re-issued once."""
    from tests.support.posting_support import expected_credits

    assert_paid_exactly_once(proposal, cashier)
    expected = expected_credits(proposal)
    for key, (method, ticket_id, _) in expected.items():
        [body] = cashier.applied[key]
        assert (body.get("method", "cash"), body.get("ticket_id", "")) == (method, ticket_id), key
    tickets = {t for m, t, _ in expected.values() if m == "ticket"}
    assert set(cashier.tickets) == tickets and cashier.ticket_duplicates() == 0
    assert all(len(keys) == 1 for keys in cashier.tickets.values())
    [row] = selectors.reconcile([proposal.pk])
    assert row["ok"] and row["tickets"] == {"ledger": len(tickets), "cashier": len(tickets)}
    return len(tickets)


def test_every_ticket_is_returned_once_through_kills_faults_and_a_database_restart(
    celery_worker_process, cashier
):
    from tests.support.posting_support import third_non_cash

    env = _worker_env(cashier)
    worker = celery_worker_process.start(**env)
    # 1,200 entries, a third returned as tickets, a third as tournament money + cash: 2,000
    # credits, 400 of them tickets.
    proposal = make_approved_proposal(lines=1_200, paid_with=third_non_cash)
    confirmed, kills, restarts = 0, 0, 0
    for round_ in range(4):
        confirmed = wait_for(
            lambda c=confirmed: (lambda n: n if n > c + 120 else None)(_confirmed(proposal)),
            timeout=90,
            message=f"progress before fault {round_ + 1}",
        )
        if round_ == 2:
            # The database restarts under the running worker: its connections die mid-batch.
            restarts += _terminate_worker_connections() > 0
            continue
        assert _job(proposal).state in ("running", "queued")
        celery_worker_process.kill(worker)
        kills += 1
        worker = celery_worker_process.start(**env)
        wait_for(
            lambda: posting.sweep_unposted(stale_after=timedelta(0)),
            timeout=30,
            message="the sweeper to queue the job again",
        )
    job = wait_until_posted(proposal, timeout=180)
    assert job.state == "posted", job.last_error
    assert job.attempts == 0  # kills and a restart are outages, never attempts
    tickets = assert_every_form_paid_exactly_once(proposal, cashier)
    faults = {str(k): v for k, v in cashier.answers.items() if k in (500, 429, "drop")}
    assert faults.get("500") and faults.get("429") and faults.get("drop")
    print(
        f"\nFAULT FIGURES: {kills} SIGKILLs, {restarts} database restart, faults injected "
        f"{faults}, {job.total} credits, {tickets} tickets returned exactly once, "
        f"{cashier.ticket_duplicates()} twice, reconcile ok"
    )
