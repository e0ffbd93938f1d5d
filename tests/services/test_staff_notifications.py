"""Staff e-mails derived from the committed audit trail: submitted -> managers, approved or
rejected (with the reason) -> the preparer, posting failed or stuck -> managers, overdue
incident -> managers (tests/services/test_overdue_incidents.py). Each once, after commit, and each kind
can be turned off per user."""

from datetime import timedelta

import pytest
from django.core import mail
from django.db import transaction
from django.utils import timezone

from refunds_admin.audit.models import AuditEvent
from refunds_admin.celery import app
from refunds_admin.ledger import posting as ledger
from refunds_admin.notifications import staff
from refunds_admin.notifications.models import StaffKind, StaffNotification
from refunds_admin.proposals import services as proposals
from tests.support.factories import approved_proposal, draft_proposal, submitted_proposal
from tests.support.fake_cashier import FakeCashier
from tests.support.posting import fail_past_the_unavailable_budget


@pytest.fixture(autouse=True)
def in_process(monkeypatch):
    """The after-commit kick runs the dispatch task in-process (as without REDIS_URL)."""
    monkeypatch.setitem(app.conf, "task_always_eager", True)


@pytest.fixture
def staff_emails(support, manager, other_manager, auditor):
    for user, email in [
        (support, "sam@example.test"),
        (manager, "maria@example.test"),
        (other_manager, "otto@example.test"),
        (auditor, "aud@example.test"),
    ]:
        user.email = email
        user.save()


def sent_to(subject_part):
    return sorted(m.to[0] for m in mail.outbox if subject_part in m.subject)


def test_it_mails_the_managers_once_after_a_submission_commits(
    support, manager, other_manager, staff_emails, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=True):
        proposal = submitted_proposal(support)
    assert sent_to("Approval needed") == ["maria@example.test", "otto@example.test"]
    message = next(m for m in mail.outbox if "Approval needed" in m.subject)
    assert f"/proposals/{proposal.pk}/approval/" in message.body and "support" in message.body
    # The sweeper, a repeated signal: nothing twice.
    staff.dispatch_events()
    staff.dispatch_events()
    assert len(sent_to("Approval needed")) == 2


def test_it_mails_nothing_for_a_change_that_rolled_back(
    support, staff_emails, django_capture_on_commit_callbacks
):
    proposal = draft_proposal(support)
    with django_capture_on_commit_callbacks(execute=True):
        with pytest.raises(RuntimeError), transaction.atomic():
            proposals.submit_proposal(proposal, acting_user=support)
            raise RuntimeError("the request failed after the submission")
    staff.dispatch_events()
    assert mail.outbox == []


def test_it_tells_the_preparer_of_an_approval_and_of_a_rejection_with_its_reason(
    support, manager, staff_emails
):
    approved_proposal(support, manager)
    rejected = submitted_proposal(support, external_id="T-2")
    proposals.reject_proposal(rejected, acting_user=manager, reason="wrong failure time")
    staff.dispatch_events()
    assert sent_to("Approved: your T-1") == ["sam@example.test"]
    assert sent_to("Rejected: your T-2") == ["sam@example.test"]
    rejection = next(m for m in mail.outbox if "Rejected" in m.subject)
    assert "Reason: wrong failure time" in rejection.body


def test_it_mails_the_managers_when_posting_fails(
    support, manager, other_manager, staff_emails, settings
):
    with FakeCashier() as cashier:
        # Approved to be paid at the cashier (the wallet is recorded at approval).
        settings.CASHIER_URL, settings.CASHIER_TOKEN = cashier.url, "revoked"
        proposal = approved_proposal(support, manager)
        with pytest.raises(ledger.PostingStopped):
            ledger.post_proposal(proposal.pk)
    staff.dispatch_events()
    # The system failed it (no actor): every manager is told.
    assert sent_to("Posting failed: T-1") == ["maria@example.test", "otto@example.test"]
    failed = next(m for m in mail.outbox if "Posting failed" in m.subject)
    assert "Reason:" in failed.body and "401" in failed.body


def test_it_mails_each_manager_once_when_the_wallet_stays_unavailable_past_its_budget(
    support, manager, other_manager, staff_emails, settings, django_capture_on_commit_callbacks
):
    settings.POSTING_UNAVAILABLE_BUDGET = 0  # unavailable on the second run is already too long
    staff.set_preferences(other_manager, [StaffKind.SUBMITTED, StaffKind.DECIDED])
    with FakeCashier() as cashier:
        settings.CASHIER_URL, settings.CASHIER_TOKEN = cashier.url, cashier.token
        settings.CASHIER_MAX_TRIES, settings.CASHIER_BACKOFF = 1, 0
        proposal = approved_proposal(support, manager)
        cashier.down = True
        fail_past_the_unavailable_budget(proposal.pk, django_capture_on_commit_callbacks)
    staff.dispatch_events()
    staff.dispatch_events()  # a second sweep finds nothing new to say
    staff.send_pending()
    told = [m for m in mail.outbox if "unavailable for longer than" in m.subject + m.body]
    # Once, to the manager who wants posting e-mails; not to the one who turned them off.
    assert [m.to for m in told] == [["maria@example.test"]]
    assert told[0].subject == "Posting failed: T-1 refunds"
    assert f"/proposals/{proposal.pk}/" in told[0].body


def test_it_mails_the_managers_once_about_a_stuck_posting(
    support, manager, other_manager, staff_emails
):
    proposal = approved_proposal(support, manager)  # queued; no worker picks it up
    later = timezone.now() + timedelta(minutes=20)
    assert staff.check_stuck_postings(now=timezone.now()) == []
    assert staff.check_stuck_postings(now=later) == [proposal.pk]
    assert staff.check_stuck_postings(now=later) == []  # told once
    staff.send_pending()
    assert sent_to("Posting stuck") == ["maria@example.test", "otto@example.test"]


def test_each_user_can_turn_each_kind_off(support, manager, other_manager, staff_emails):
    staff.set_preferences(other_manager, [StaffKind.DECIDED, StaffKind.POSTING])
    assert (StaffKind.SUBMITTED, False) in [
        (k, on) for k, _, on in staff.preferences_of(other_manager)
    ]
    submitted_proposal(support)
    staff.dispatch_events()
    assert sent_to("Approval needed") == ["maria@example.test"]
    assert not StaffNotification.objects.filter(user=other_manager).exists()
    with pytest.raises(ValueError):
        staff.set_preferences(manager, ["everything"])
    event = AuditEvent.objects.get(action="notifications.preferences_changed")
    assert event.actor == other_manager and event.after == {"enabled": ["decided", "posting"]}


def test_the_sweep_runs_as_a_named_celery_task(support, manager, other_manager, staff_emails):
    from refunds_admin.notifications.tasks import sweep

    submitted_proposal(support)  # its after-commit kick never ran (no commit in this test)
    result = sweep.apply().get()
    assert len(result["handled"]) == 1 and result["stuck"] == []
    assert sent_to("Approval needed") == ["maria@example.test", "otto@example.test"]
