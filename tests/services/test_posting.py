"""Posting an approved proposal in-process: the ledger, the job's progress, failures, resume."""

import pytest
from django.core.exceptions import PermissionDenied
from django.db import connection, transaction

from refunds_admin.audit.models import AuditEvent
from refunds_admin.errors import Refused
from refunds_admin.jobs.kinds import JobStatus
from refunds_admin.ledger import posting, selectors
from refunds_admin.ledger.models import Credit, PostingJob
from refunds_admin.proposals.models import PayoutLine, PayoutProposal
from tests.support.posting_support import expected_keys, make_approved_proposal
from tests.support.tampering import triggers_off

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def small_chunks(settings):
    settings.POSTING_CHUNK_SIZE = 4


def _ledger(proposal):
    return list(Credit.objects.filter(proposal=proposal).values_list("key", "amount_cents"))


def test_it_books_one_credit_per_entry_and_non_zero_component():
    proposal = make_approved_proposal(
        amounts=[(1000, 0, 250, 100), (0, 0, 0, 0), (0, 0, 1733, 0), (1000, 0, 17, 100)] * 3
    )
    assert posting.post_proposal(proposal.pk) == "posted"

    credits = dict(_ledger(proposal))
    assert set(credits) == expected_keys(proposal)
    assert len(credits) == 21  # 3 x (3 + 0 + 1 + 3): zero components book nothing
    assert credits[f"proposal-{proposal.pk}/e000003/chip_equity"] == 1733
    assert sum(credits.values()) == proposal.total_cents
    proposal.refresh_from_db()
    assert proposal.status == PayoutProposal.Status.POSTED
    assert selectors.posting_progress(proposal) | {"heartbeat_at": None} == {
        "posted": 21,
        "total": 21,
        "posted_cents": proposal.total_cents,
        "total_cents": proposal.total_cents,
        "state": "posted",
        "status": JobStatus("done", "Posted"),  # what the page says (jobs.kinds)
        "error": "",
        "percent": 100,
        "attempts": 0,  # attempts count real errors only
        "heartbeat_at": None,
        "wallet": "the app's own ledger (no cashier)",
    }
    actions = list(
        AuditEvent.objects.filter(
            object_type="payoutproposal", object_id=str(proposal.pk), action__startswith="ledger."
        )
        .order_by("id")
        .values_list("action", flat=True)
    )
    assert actions == ["ledger.posting_started", "ledger.posted"]


def test_it_derives_player_balances_from_credits():
    proposal = make_approved_proposal(amounts=[(1000, 0, 0, 350), (500, 0, 0, 0)])
    posting.post_proposal(proposal.pk)
    assert selectors.player_balances("p000001") == {"USD": 1350}
    assert selectors.player_credits("p000001")["balances"] == {"USD": 1350}
    assert [c.component for c in selectors.player_credits("p000002")["credits"]] == [
        "buy_in_refund"
    ]


def test_it_records_progress_chunk_by_chunk():
    proposal = make_approved_proposal(lines=10)  # 20 credits, 4 lines (8 credits) per chunk
    assert posting.post_proposal(proposal.pk, max_chunks=1) == "running"
    progress = selectors.posting_progress(proposal)
    assert (progress["posted"], progress["total"], progress["posted_cents"]) == (8, 20, 4400)
    assert progress["state"] == "running" and progress["percent"] == 40
    assert len(_ledger(proposal)) == 8
    posting.post_proposal(proposal.pk, max_chunks=1)
    assert selectors.posting_progress(proposal)["posted"] == 16
    assert posting.post_proposal(proposal.pk) == "posted"
    assert len(_ledger(proposal)) == 20


def test_it_pays_nothing_twice_when_run_again():
    proposal = make_approved_proposal(lines=9)
    posting.post_proposal(proposal.pk)
    before = _ledger(proposal)
    # A redelivered task, and a job whose progress was lost: still nothing booked twice.
    assert posting.post_proposal(proposal.pk) == "posted"
    PostingJob.objects.filter(proposal=proposal).update(
        state="running", posted_through=-1, posted=0, posted_cents=0
    )
    _back_to_posting(proposal)
    assert posting.post_proposal(proposal.pk) == "posted"
    assert sorted(_ledger(proposal)) == sorted(before)


def test_it_refuses_lines_changed_after_approval():
    proposal = make_approved_proposal(lines=6)
    line = PayoutLine.objects.get(proposal=proposal, position=5)
    with triggers_off():  # the database refuses it otherwise (see test_append_only.py)
        PayoutLine.objects.filter(pk=line.pk).update(buy_in_refund_cents=999, fee_refund_cents=101)
    with pytest.raises(posting.PostingStopped):
        posting.post_proposal(proposal.pk)
    assert _ledger(proposal) == []
    proposal.refresh_from_db()
    assert proposal.status == PayoutProposal.Status.FAILED
    job = PostingJob.objects.get(proposal=proposal)
    assert job.state == "failed" and "no longer match" in job.last_error
    assert AuditEvent.objects.filter(action="ledger.posting_failed", object_id=str(proposal.pk))


def test_it_schedules_only_approved_proposals_once():
    proposal = make_approved_proposal(lines=2, schedule=False)
    with transaction.atomic():
        posting.schedule_posting(proposal, actor=None)
        posting.schedule_posting(proposal, actor=None)
    assert PostingJob.objects.filter(proposal=proposal).count() == 1
    assert posting.post_proposal(proposal.pk) == "posted"
    proposal.refresh_from_db()
    with pytest.raises(Refused), transaction.atomic():
        posting.schedule_posting(proposal, actor=None)


def test_it_rolls_back_a_chunk_hit_by_a_database_error_and_resumes():
    proposal = make_approved_proposal(lines=10)
    bad_key = f"proposal-{proposal.pk}/e000006/fee_refund"  # in the second chunk
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            cursor.execute(
                "CREATE FUNCTION pg_temp.fail_one() RETURNS trigger AS $$ BEGIN "
                f"IF NEW.key = '{bad_key}' THEN RAISE EXCEPTION 'disk full (simulated)'; END IF; "
                "RETURN NEW; END $$ LANGUAGE plpgsql"
            )
            cursor.execute(
                "CREATE TRIGGER fail_one BEFORE INSERT ON ledger_credit "
                "FOR EACH ROW EXECUTE FUNCTION pg_temp.fail_one()"
            )
        else:
            cursor.execute(
                "CREATE TRIGGER fail_one BEFORE INSERT ON ledger_credit "
                f"WHEN NEW.key = '{bad_key}' BEGIN SELECT RAISE(ABORT, 'disk full (simulated)'); END"
            )
    with pytest.raises(Exception, match="disk full"):
        posting.post_proposal(proposal.pk)

    # The first chunk stays, the second is rolled back whole (e000005..e000008 absent).
    keys = {k for k, _ in _ledger(proposal)}
    assert len(keys) == 8 and not any("e000005" in k for k in keys)
    job = PostingJob.objects.get(proposal=proposal)
    assert (job.state, job.posted, job.attempts) == ("queued", 8, 1)
    assert "disk full" in job.last_error

    with connection.cursor() as cursor:
        cursor.execute(
            "DROP TRIGGER fail_one"
            + (" ON ledger_credit" if connection.vendor == "postgresql" else "")
        )
    assert posting.post_proposal(proposal.pk) == "posted"
    assert {k for k, _ in _ledger(proposal)} == expected_keys(proposal)


def test_it_fails_after_too_many_attempts_and_a_manager_resumes_it(
    settings, manager, support, django_capture_on_commit_callbacks
):
    settings.POSTING_MAX_ATTEMPTS = 2
    proposal = make_approved_proposal(lines=3)
    posting.schedule_posting(proposal)  # the job, as its first run would make it
    PostingJob.objects.filter(proposal=proposal).update(attempts=2, last_error="boom")
    with pytest.raises(posting.PostingStopped):
        posting.post_proposal(proposal.pk)
    proposal.refresh_from_db()
    assert proposal.status == "failed"
    assert "gave up after 2 attempts" in selectors.posting_progress(proposal)["error"]

    with pytest.raises(PermissionDenied):
        posting.resume_posting(proposal, acting_user=support)
    with django_capture_on_commit_callbacks(execute=False) as kicks:
        posting.resume_posting(proposal, acting_user=manager)
    assert len(kicks) == 1
    assert posting.post_proposal(proposal.pk) == "posted"
    assert AuditEvent.objects.get(action="ledger.posting_resumed").actor == manager
    with pytest.raises(Refused):
        posting.resume_posting(proposal, acting_user=manager)


def test_it_skips_a_proposal_another_worker_is_posting():
    if connection.vendor != "postgresql":
        pytest.skip("the job lock is a PostgreSQL advisory lock")
    import psycopg

    from tests.support.posting_support import worker_database_url

    proposal = make_approved_proposal(lines=3)
    with psycopg.connect(worker_database_url()) as other:
        other.execute("SELECT pg_advisory_lock(%s, %s)", [posting._LOCK_NAMESPACE, proposal.pk])
        assert posting.post_proposal(proposal.pk) == "busy"
        assert _ledger(proposal) == []
        # Released explicitly: a closed session's locks go only once its backend has exited.
        other.execute("SELECT pg_advisory_unlock(%s, %s)", [posting._LOCK_NAMESPACE, proposal.pk])
    assert posting.post_proposal(proposal.pk) == "posted"


@pytest.mark.postgres
def test_it_refuses_to_change_or_delete_a_credit_in_the_database():
    proposal = make_approved_proposal(lines=1)
    posting.post_proposal(proposal.pk)
    for statement in ("UPDATE ledger_credit SET amount_cents = 1", "DELETE FROM ledger_credit"):
        with pytest.raises(Exception, match="append-only"), transaction.atomic():
            with connection.cursor() as cursor:
                cursor.execute(statement)
    # Nor can the proposal the credits belong to disappear from under them.
    with pytest.raises(Exception, match="has credits in the ledger"), transaction.atomic():
        with connection.cursor() as cursor:
            cursor.execute("DELETE FROM proposals_payoutproposal WHERE id = %s", [proposal.pk])
    assert len(_ledger(proposal)) == 2


def _back_to_posting(proposal):
    """Stage lost progress: a posted proposal back at "posting". The database never lets a
    proposal's status go back (proposals migration 0020); the test's connection owns the tables
    and steps round that guard for this one update."""
    from django.db import connection

    guard = "proposals_status_moves_forward"
    on_postgres = connection.vendor == "postgresql"
    with connection.cursor() as cursor:
        if on_postgres:
            # ALTER TABLE waits for no deferred check: run those now.
            cursor.execute("SET CONSTRAINTS ALL IMMEDIATE")
            cursor.execute(f"ALTER TABLE proposals_payoutproposal DISABLE TRIGGER {guard}")
        PayoutProposal.objects.filter(pk=proposal.pk).update(status="posting")
        if on_postgres:
            cursor.execute(f"ALTER TABLE proposals_payoutproposal ENABLE TRIGGER {guard}")
