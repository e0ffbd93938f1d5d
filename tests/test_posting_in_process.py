"""Without REDIS_URL (`make run`), approval runs the same posting task in-process, with the same
progress recorded, the same retries and the same failed state."""

import pytest
from django.db import connection

from refunds_admin.celery import app
from refunds_admin.ledger import writers
from refunds_admin.ledger.models import Credit, PostingJob
from refunds_admin.proposals.models import PayoutProposal
from tests.posting_support import make_approved_proposal

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def in_process(monkeypatch, settings):
    monkeypatch.setitem(app.conf, "task_always_eager", True)
    settings.POSTING_CHUNK_SIZE = 2


def test_it_posts_on_approval_in_process(django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):
        proposal = make_approved_proposal(lines=5)
    job = PostingJob.objects.get(proposal=proposal)
    assert (job.state, job.posted, job.total, job.posted_cents) == ("posted", 10, 10, 5500)
    proposal.refresh_from_db()
    assert proposal.status == PayoutProposal.Status.POSTED


def test_it_retries_then_fails_with_the_reason(settings, django_capture_on_commit_callbacks):
    settings.POSTING_MAX_ATTEMPTS = 3
    proposal = make_approved_proposal(lines=5, schedule=False)
    # The database keeps refusing every credit (a constraint the data violates, say).
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            cursor.execute(
                "CREATE FUNCTION pg_temp.refuse() RETURNS trigger AS $$ BEGIN "
                "RAISE EXCEPTION 'tablespace full (simulated)'; END $$ LANGUAGE plpgsql"
            )
            cursor.execute(
                "CREATE TRIGGER refuse BEFORE INSERT ON ledger_credit "
                "FOR EACH ROW EXECUTE FUNCTION pg_temp.refuse()"
            )
        else:
            cursor.execute(
                "CREATE TRIGGER refuse BEFORE INSERT ON ledger_credit "
                "BEGIN SELECT RAISE(ABORT, 'tablespace full (simulated)'); END"
            )
    from django.db import transaction

    from refunds_admin.ledger.services import schedule_posting

    with django_capture_on_commit_callbacks(execute=True), transaction.atomic():
        schedule_posting(proposal, actor=None)

    job = PostingJob.objects.get(proposal=proposal)
    assert job.state == "failed"
    assert "tablespace full" in job.last_error and "3 attempts" in job.last_error
    assert job.attempts == 3
    proposal.refresh_from_db()
    assert proposal.status == PayoutProposal.Status.FAILED
    assert not Credit.objects.filter(proposal=proposal).exists()


@pytest.mark.postgres
def test_it_fingerprints_stored_lines_the_same_in_sql_and_in_python():
    proposal = make_approved_proposal(amounts=[(1000, 0, 7, 100), (0, 0, 0, 0), (5, 0, 7, 8)])
    assert writers.lines_summary(proposal) == writers.lines_summary_in_python(proposal)
    # ... and it is the engine's fingerprint, the one the manager approved.
    assert writers.lines_summary(proposal)[0] == proposal.approved_fingerprint


def test_it_sweeps_only_jobs_left_waiting(
    settings, django_capture_on_commit_callbacks, time_machine
):
    from datetime import timedelta

    from django.utils import timezone

    from refunds_admin.ledger.services import sweep_unposted

    settings.POSTING_STALE_AFTER = 120
    time_machine.move_to(timezone.now(), tick=False)
    lost = make_approved_proposal(lines=2)  # its kick never reached a worker (test transaction)
    time_machine.shift(timedelta(minutes=5))  # ... five minutes ago
    fresh = make_approved_proposal(lines=2)
    orphan = make_approved_proposal(lines=2, schedule=False)  # approved, no outbox row at all

    with django_capture_on_commit_callbacks(execute=True):
        assert sorted(sweep_unposted()) == sorted([lost.pk, orphan.pk])
    states = dict(PostingJob.objects.values_list("proposal_id", "state"))
    assert states == {lost.pk: "posted", fresh.pk: "queued", orphan.pk: "posted"}
