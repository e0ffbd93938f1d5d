"""Without REDIS_URL (`make run`), approval runs the same posting task in-process, with the same
progress recorded, the same retries and the same failed state."""

import pytest
from django.db import connection

from refunds_admin.celery import app
from refunds_admin.ledger import writers
from refunds_admin.ledger.models import Credit, PostingJob
from refunds_admin.proposals.models import PayoutProposal
from tests.support.posting_support import make_approved_proposal

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

    from refunds_admin.ledger.posting import schedule_posting

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


def test_a_chunk_booked_again_books_only_what_is_missing():
    # A chunk normally goes in as a plain INSERT; one whose credits are partly booked already (a
    # redelivery from a stale position) is booked again, skipping those keys, in the same
    # transaction.
    from django.db import transaction

    proposal = make_approved_proposal(amounts=[(1000, 0, 7, 100), (0, 0, 0, 0), (5, 0, 7, 8)])
    with transaction.atomic():
        assert writers.book_chunk(proposal, -1, 1) == (0, 3, 1107, 3)
    with transaction.atomic():
        assert writers.book_chunk(proposal, -1, 3) == (2, 6, 1127, 3)
        assert writers.book_chunk(proposal, 2, 3) is None
    with transaction.atomic():
        assert writers.book_chunk(proposal, -1, 3) == (2, 6, 1127, 0)
    assert Credit.objects.filter(proposal=proposal).count() == 6


def test_it_sweeps_only_jobs_left_waiting(settings, django_capture_on_commit_callbacks):
    import time

    from refunds_admin.ledger import posting
    from tests.support.fake_cashier import FakeCashier

    # Stale checks run on the database's clock, which no test can move: real seconds instead
    # of minutes (stale after 1 s, and the "old" jobs are 1.5 s old).
    settings.POSTING_STALE_AFTER = 1
    # Approved, but its task never reached a worker (the test's transaction never commits).
    lost = make_approved_proposal(lines=2)
    stale = make_approved_proposal(lines=2)
    posting.schedule_posting(stale)  # a job queued, never started
    # The cashier unavailable: its job waits for a backoff of ten minutes.
    settings.POSTING_BACKOFF_BASE = settings.POSTING_BACKOFF_MAX = 600
    with FakeCashier() as cashier:
        settings.CASHIER_URL, settings.CASHIER_TOKEN = cashier.url, cashier.token
        settings.CASHIER_MAX_TRIES, settings.CASHIER_BACKOFF = 1, 0
        backing_off = make_approved_proposal(lines=2)
        cashier.down = True
        with pytest.raises(posting.PostingDelayed):
            posting.post_proposal(backing_off.pk)
    settings.CASHIER_URL = ""
    time.sleep(1.5)  # ... a stale period ago
    fresh = make_approved_proposal(lines=2)  # approved a moment ago: its task is on its way

    with django_capture_on_commit_callbacks(execute=True):
        assert sorted(posting.sweep_unposted()) == sorted([lost.pk, stale.pk])
    states = dict(PostingJob.objects.values_list("proposal_id", "state"))
    assert states == {lost.pk: "posted", stale.pk: "posted", backing_off.pk: "queued"}
    assert not PostingJob.objects.filter(proposal=fresh).exists()


@pytest.mark.postgres
def test_whole_proposal_sorts_get_their_memory_only_for_themselves():
    from django.db import transaction

    def work_mem():
        with connection.cursor() as cursor:
            cursor.execute("SHOW work_mem")
            return cursor.fetchone()[0]

    with transaction.atomic():
        before = work_mem()
        assert before != writers.SORT_MEMORY
        with writers.sort_memory():
            assert work_mem() == writers.SORT_MEMORY
        assert work_mem() == before
        with pytest.raises(RuntimeError), writers.sort_memory():
            raise RuntimeError("the statement failed")
        assert work_mem() == before
