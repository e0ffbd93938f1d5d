"""Posted means paid: the job pays only into the wallet recorded at approval, keys are safe for
every id, an unavailable wallet is waited for without using up attempts, refusals stop at once
with the reason.
A real HTTP cashier on 127.0.0.1 (tests/support/fake_cashier.py); data built through the services."""

from urllib.parse import unquote

import pytest
from django.core import mail
from django.core.management import call_command
from django.core.management.base import CommandError
from django.db import connection

from refunds_admin.audit.models import AuditEvent
from refunds_admin.errors import Refused
from refunds_admin.ledger import posting, selectors
from refunds_admin.ledger.models import (
    CashierDelivery,
    Credit,
    PostingJob,
    credit_key,
    key_part,
    parse_credit_key,
)
from refunds_admin.notifications import staff
from refunds_admin.payouts import SnapshotError, parse_snapshot
from refunds_admin.proposals.models import PayoutProposal
from tests.support.factories import approved_proposal, dumps, import_doc, snapshot_doc
from tests.support.fake_cashier import point_settings_at
from tests.support.posting import fail_past_the_unavailable_budget

pytestmark = pytest.mark.django_db


@pytest.fixture
def with_cashier(settings, cashier):
    """This process is configured for the fake cashier."""
    return point_settings_at(settings, cashier, max_tries=2, chunk_size=3)


def _job(proposal):
    return PostingJob.objects.get(proposal=proposal)


def _status(proposal):
    return PayoutProposal.objects.get(pk=proposal.pk).status


# ---------------------------------------------------------------------------------------------
# The wallet recorded at approval
# ---------------------------------------------------------------------------------------------


def test_it_records_the_wallet_at_approval(with_cashier, support, manager, cashier):
    proposal = approved_proposal(support, manager)
    assert (proposal.wallet, proposal.wallet_identity) == ("cashier", cashier.url)
    event = AuditEvent.objects.get(action="proposal.approved")
    assert event.after["wallet_identity"] == cashier.url


def test_it_refuses_to_post_from_a_process_without_the_cashier(
    with_cashier, support, manager, cashier
):
    proposal = approved_proposal(support, manager)  # approved to be paid at the cashier
    with_cashier.CASHIER_URL = ""  # a web process or worker with an incomplete environment

    assert posting.post_proposal(proposal.pk) == "refused"
    job = _job(proposal)
    assert job.state == "queued" and "has no CASHIER_URL" in job.last_error
    assert cashier.url in job.last_error
    assert _status(proposal) == "approved"
    assert not Credit.objects.filter(proposal=proposal).exists() and cashier.applied == {}

    # Another cashier is not the job's cashier either.
    with_cashier.CASHIER_URL = "http://127.0.0.1:9/other"
    assert posting.post_proposal(proposal.pk) == "refused"
    assert "configured for the cashier at http://127.0.0.1:9/other" in _job(proposal).last_error

    # Reconciliation from such a process fails loudly rather than say "ok".
    [row] = selectors.reconcile()
    assert not row["ok"] and "cannot check it" in row["problems"][0]

    # A process configured for the job's cashier pays it; only then is it posted.
    with_cashier.CASHIER_URL = cashier.url + "/"  # the same cashier, however it is written
    assert posting.post_proposal(proposal.pk) == "posted"
    job = _job(proposal)
    assert (job.posted, job.posted_cents) == (job.total, proposal.total_cents)
    assert cashier.total_cents("proposal ") == proposal.total_cents
    assert CashierDelivery.objects.filter(state="applied").count() == job.total


def test_it_leaves_a_resumed_job_waiting_in_a_process_without_the_cashier(
    with_cashier, support, manager, cashier, django_capture_on_commit_callbacks, monkeypatch
):
    proposal = approved_proposal(support, manager)
    cashier.script = {credit_key(proposal.pk, "e1", "chip_equity"): ["422"]}
    with pytest.raises(posting.PostingStopped):
        posting.post_proposal(proposal.pk)
    assert _status(proposal) == "failed"

    # A manager resumes from a process without CASHIER_URL, where tasks run in-process.
    with_cashier.CASHIER_URL = ""
    from refunds_admin.celery import app

    monkeypatch.setitem(app.conf, "task_always_eager", True)
    with django_capture_on_commit_callbacks(execute=True):
        posting.resume_posting(PayoutProposal.objects.get(pk=proposal.pk), acting_user=manager)
    job = _job(proposal)
    assert job.state == "queued" and "has no CASHIER_URL" in job.last_error
    assert _status(proposal) == "approved"  # waiting, never posted


def test_it_posts_only_when_the_cashier_confirmed_every_credit(with_cashier, support, manager):
    proposal = approved_proposal(support, manager)
    assert posting.post_proposal(proposal.pk) == "posted"
    job = _job(proposal)
    applied = CashierDelivery.objects.filter(credit__proposal=proposal, state="applied")
    assert applied.count() == job.total == Credit.objects.filter(proposal=proposal).count()
    [row] = selectors.reconcile()
    assert row["ok"] and row["cashier_cents"] == proposal.total_cents
    call_command("reconcile")


def test_it_reconciles_against_the_jobs_own_cashier_whatever_this_process_says(
    with_cashier, support, manager, cashier
):
    proposal = approved_proposal(support, manager)
    posting.post_proposal(proposal.pk)
    with_cashier.CASHIER_URL = ""
    with pytest.raises(CommandError):
        call_command("reconcile")
    # The cashier loses a credit: with the right configuration, reconcile finds it.
    with_cashier.CASHIER_URL = cashier.url
    del cashier.applied[sorted(cashier.applied)[0]]
    [row] = selectors.reconcile()
    assert not row["ok"] and "1 missing" in row["problems"][0]


# ---------------------------------------------------------------------------------------------
# Keys safe for every id
# ---------------------------------------------------------------------------------------------

ODD_IDS = ["玩家-00001", "a/b c", "100%", "x+y=z", "~tilde_.-", "🂡 ace", "é", "line\u2028sep"]


def test_it_builds_keys_that_round_trip_and_fit_a_header():
    for entry_id in ODD_IDS:
        key = credit_key(12, entry_id, "chip_equity")
        assert key.isascii() and key.isprintable() and " " not in key
        assert parse_credit_key(key) == (12, entry_id, "chip_equity")
        assert key == credit_key(12, entry_id, "chip_equity")  # the same on every retry
    assert credit_key(12, "玩家-00001", "fee_refund") == (
        "proposal-12/%E7%8E%A9%E5%AE%B6-00001/fee_refund"
    )
    assert credit_key(12, "a/b c", "fee_refund") == "proposal-12/a%2Fb%20c/fee_refund"
    assert key_part("e000001") == "e000001"


@pytest.mark.postgres
def test_it_builds_the_same_keys_in_sql_as_in_python():
    with connection.cursor() as cursor:
        for entry_id in ODD_IDS + ["e000001", ""]:
            cursor.execute("SELECT ledger_key_part(%s)", [entry_id])
            assert cursor.fetchone()[0] == key_part(entry_id), entry_id


def test_it_pays_a_unicode_entry_id(with_cashier, support, manager, cashier):
    doc = snapshot_doc("T-UNI")
    doc["entries"][0]["entry_id"] = "玩家-00001"
    doc["entries"][1]["entry_id"] = "a/b c%"
    doc["entries"][0]["player_id"] = "игрок-1"
    proposal = approved_proposal(support, manager, doc=doc)
    assert posting.post_proposal(proposal.pk) == "posted"

    keys = set(Credit.objects.filter(proposal=proposal).values_list("key", flat=True))
    unicode_keys = {k for k in keys if "%E7%8E%A9" in k}
    assert unicode_keys and all(parse_credit_key(k)[1] == "玩家-00001" for k in unicode_keys)
    assert set(cashier.applied) == keys  # the cashier got the keys exactly as booked
    for key in unicode_keys:
        body = cashier.applied[key][0]
        assert body["player_id"] == "игрок-1" and "玩家-00001" in body["reference"]
        assert unquote(key.split("/")[1]) == "玩家-00001"
    assert cashier.total_cents("proposal ") == proposal.total_cents


def _entries_doc(**change):
    doc = snapshot_doc("T-CTRL")
    doc["entries"][2].update(change)
    return doc


@pytest.mark.parametrize("field", ["entry_id", "player_id"])
@pytest.mark.parametrize("bad", ["e3\r\nX-Evil: 1", "e3\x00", "e3\x85"])
def test_it_refuses_ids_with_control_characters_at_import(support, field, bad):
    from refunds_admin.payouts import snapshot as engine

    doc = _entries_doc(**{field: bad})
    # The column-by-column path does not accept it...
    assert engine._parse_entries_in_bulk(doc["entries"], 3000, 300) is None
    # ...and the entry-by-entry path names the entry, the field and the character.
    with pytest.raises(SnapshotError) as refused:
        parse_snapshot(dumps(doc))
    [problem] = refused.value.problems
    assert problem.field.endswith(f".{field}") and "control characters" in problem.message
    with pytest.raises(Refused):
        import_doc(support, doc)


def test_it_refuses_a_pool_too_large_to_store(support):
    doc = snapshot_doc("T-HUGE", eliminated=4700)
    for entry in doc["entries"]:
        entry["buy_in_paid"] = "10000000000000.00"  # the largest amount one field may hold
        entry["fee_paid"] = "10000000000000.00"
    with pytest.raises(SnapshotError) as refused:
        parse_snapshot(dumps(doc))
    assert any(
        p.field == "entries" and "more than the 9,223,372,036,854,775,807 cents" in p.message
        for p in refused.value.problems
    )
    with pytest.raises(Refused):
        import_doc(support, doc)


# ---------------------------------------------------------------------------------------------
# Failures classified
# ---------------------------------------------------------------------------------------------


def test_it_waits_for_an_unavailable_wallet_longer_than_the_attempts_would_allow(
    with_cashier, support, manager, cashier
):
    with_cashier.POSTING_MAX_ATTEMPTS = 2
    proposal = approved_proposal(support, manager)
    cashier.down = True
    for retry in range(1, 6):  # more runs than POSTING_MAX_ATTEMPTS
        with pytest.raises(posting.PostingDelayed) as delayed:
            posting.post_proposal(proposal.pk)
        job = _job(proposal)
        assert (
            job.state == "queued" and job.attempts == 0 and job.wallet_unavailable_retries == retry
        )
        assert "waiting for the wallet" in job.last_error and "503" in job.last_error
        assert job.retry_at is not None
    # Capped exponential backoff: 5, 10, 20, 40, 80 s by default.
    assert delayed.value.countdown == 80
    cashier.down = False
    assert posting.post_proposal(proposal.pk) == "posted"
    job = _job(proposal)
    assert (
        job.attempts,
        job.wallet_unavailable_retries,
        job.wallet_unavailable_since,
        job.last_error,
    ) == (0, 0, None, "")
    assert cashier.total_cents("proposal ") == proposal.total_cents


def test_it_caps_the_backoff(settings):
    settings.POSTING_BACKOFF_BASE = 5
    settings.POSTING_BACKOFF_MAX = 300
    assert [posting.unavailable_backoff(n) for n in (1, 2, 3, 7, 8, 30)] == [
        5,
        10,
        20,
        300,
        300,
        300,
    ]


def test_it_alerts_the_managers_when_the_wallet_stays_unavailable_past_its_budget(
    with_cashier, support, manager, cashier, django_capture_on_commit_callbacks
):
    manager.email = "maria@example.test"
    manager.save()
    with_cashier.POSTING_UNAVAILABLE_BUDGET = 0  # unavailable on the second run is already too long
    proposal = approved_proposal(support, manager)
    cashier.down = True
    fail_past_the_unavailable_budget(proposal.pk, django_capture_on_commit_callbacks)
    job = _job(proposal)
    assert job.state == "failed" and "unavailable for longer than the budget" in job.last_error
    assert "503" in job.last_error
    assert _status(proposal) == "failed"
    # The failure's audit event is what tells the managers (notifications/staff.py), once.
    staff.dispatch_events()
    [message] = [m for m in mail.outbox if "unavailable for longer than" in m.subject + m.body]
    assert message.to == ["maria@example.test"] and "Posting failed" in message.subject
    assert f"/proposals/{proposal.pk}/" in message.body and "503" in message.body


@pytest.mark.parametrize("answer", ["409", "422"])
def test_it_stops_at_once_on_a_refused_credit_with_the_cashiers_reason(
    with_cashier, support, manager, cashier, answer
):
    proposal = approved_proposal(support, manager)
    key = credit_key(proposal.pk, "e1", "chip_equity")
    cashier.script = {key: [answer]}
    with pytest.raises(posting.PostingStopped):
        posting.post_proposal(proposal.pk)
    job = _job(proposal)
    assert job.state == "failed"
    assert f"cashier refused credit {key}" in job.last_error
    assert f"({answer}): refused ({answer})" in job.last_error
    assert cashier.posts[key] == 1  # never resent by itself

    # Fixed at the cashier, a manager resumes: the same key is sent again, once.
    posting.resume_posting(proposal, acting_user=manager)
    assert posting.post_proposal(proposal.pk) == "posted"
    assert cashier.times_applied(key) == 1
    delivery = CashierDelivery.objects.get(credit_id=key)
    assert delivery.state == "applied"  # moved forward from failed


def test_it_stops_at_once_on_a_bad_token(with_cashier, support, manager, cashier):
    proposal = approved_proposal(support, manager)
    cashier.token = "rotated"
    with pytest.raises(posting.PostingStopped):
        posting.post_proposal(proposal.pk)
    job = _job(proposal)
    assert job.state == "failed" and "(401): bad token" in job.last_error
    assert job.attempts == 0 and cashier.applied == {}


def test_a_failed_job_always_says_why(with_cashier, support, manager):
    proposal = approved_proposal(support, manager)
    posting.schedule_posting(proposal)
    from django.db import IntegrityError, transaction

    with pytest.raises(IntegrityError), transaction.atomic():
        PostingJob.objects.filter(proposal=proposal).update(state="failed", last_error="")


def test_it_shows_where_the_money_goes_on_the_posting_page(
    with_cashier, support, manager, cashier, client
):
    proposal = approved_proposal(support, manager)
    progress = selectors.posting_progress(proposal)
    assert progress["state"] == "queued"  # approved, the first run not there yet
    assert progress["wallet"] == f"the cashier at {cashier.url}"
    client.force_login(manager)
    page = client.get(f"/proposals/{proposal.pk}/").content.decode()
    assert f"Paying into the cashier at {cashier.url}, as approved." in page


def test_it_counts_a_killed_run_as_the_wallet_unavailable_not_an_attempt(
    settings, support, manager, django_capture_on_commit_callbacks
):
    from datetime import timedelta

    from django.utils import timezone

    manager.email = "maria@example.test"
    manager.save()
    settings.POSTING_CHUNK_SIZE = 2
    settings.POSTING_MAX_ATTEMPTS = 1
    proposal = approved_proposal(support, manager)
    assert posting.post_proposal(proposal.pk, max_chunks=1) == "running"  # then "killed"
    # The next run finds the job still running: the worker died. No attempt is used.
    assert posting.post_proposal(proposal.pk, max_chunks=1) == "running"
    job = _job(proposal)
    assert (job.state, job.attempts) == ("running", 0)  # and its progress ended the unavailability
    assert (job.wallet_unavailable_retries, job.wallet_unavailable_since) == (0, None)
    # Killed again and again for longer than the budget: failed, managers alerted.
    settings.POSTING_UNAVAILABLE_BUDGET = 60
    PostingJob.objects.filter(pk=job.pk).update(
        wallet_unavailable_since=timezone.now() - timedelta(minutes=5)
    )
    with django_capture_on_commit_callbacks(execute=True), pytest.raises(posting.PostingStopped):
        posting.post_proposal(proposal.pk)
    job = _job(proposal)
    assert job.state == "failed" and "stopped without finishing" in job.last_error
    staff.dispatch_events()
    assert len([m for m in mail.outbox if "unavailable for longer than" in m.subject + m.body]) == 1
