"""Audit: one event per state change, written in the change's transaction, append-only."""

from datetime import timedelta

import pytest
from django.db import DatabaseError, connection, transaction
from django.utils import timezone

from refunds_admin.audit.display import describe
from refunds_admin.audit.models import AuditEvent
from refunds_admin.errors import Refused
from refunds_admin.incidents import services as incidents
from refunds_admin.proposals import services as proposals
from tests.support.factories import import_doc, open_incident

pytestmark = pytest.mark.django_db


def _actions():
    # The persona fixtures' users and roles are audited too (user.created, ...): only the flow.
    return list(
        AuditEvent.objects.exclude(action__regex=r"^(user|group|mfa)\.")
        .order_by("id")
        .values_list("action", flat=True)
    )


def test_it_writes_one_event_per_state_change_through_the_whole_flow(
    support, manager, other_manager
):
    incident = open_incident(support, failed_ago=timedelta(minutes=40))
    incidents.log_restart_attempt(
        incident,
        attempted_at=timezone.now() - timedelta(minutes=35),
        succeeded=False,
        note="reboot",
        acting_user=support,
    )
    incidents.confirm_site_wide_issue(incident, justification="lag", acting_user=manager)
    incidents.cancel_after_window(incident, acting_user=support)
    proposal = proposals.prepare_proposal(incident, acting_user=support)
    proposals.submit_proposal(proposal, acting_user=support)
    proposals.reject_proposal(proposal, acting_user=manager, reason="check chips")
    v2 = proposals.prepare_proposal(incident, acting_user=support)
    proposals.submit_proposal(v2, acting_user=support)
    proposals.approve_proposal(v2, acting_user=other_manager, fingerprint=v2.fingerprint)

    assert _actions() == [
        "snapshot.imported",
        "incident.recorded",
        "incident.restart_attempt",
        "incident.site_wide_confirmed",
        "incident.cancelled",
        "proposal.prepared",
        "proposal.submitted",
        "proposal.rejected",
        "proposal.prepared",
        "proposal.submitted",
        "proposal.approved",
    ]
    approved = AuditEvent.objects.get(action="proposal.approved")
    assert approved.actor == other_manager and approved.object_id == str(v2.pk)
    assert approved.before == {"status": "submitted"}
    assert approved.tournament_external_id == incident.tournament.external_id
    # Every event reads as a sentence on the history page.
    sentences = [
        describe(e)
        for e in AuditEvent.objects.exclude(action__regex=r"^(user|group|mfa)\.").order_by("id")
    ]
    assert sentences[0].startswith("sam_support imported tournament T-1 (10 entries, 4 active")
    assert sentences[4].startswith("Tournament T-1 cancelled: play did not resume within 30")
    assert sentences[7] == f"maria_manager rejected proposal {proposal.pk} — check chips"
    assert sentences[10] == (
        f"otto_manager approved proposal {v2.pk} (USD 330.00), to be paid into the app's own ledger"
    )


def test_it_writes_no_event_when_a_change_is_refused(support):
    incident = open_incident(support)
    before = _actions()
    with pytest.raises(Refused):
        incidents.cancel_after_window(incident, acting_user=support)  # window still running
    with pytest.raises(Refused):
        import_doc(support, {"format": "nope"})
    assert _actions() == before


def test_it_has_a_sentence_for_every_action_the_app_records():
    import re
    from pathlib import Path

    import refunds_admin
    from refunds_admin.audit.display import SENTENCES

    source = Path(refunds_admin.__file__).parent
    recorded = {
        action
        for path in source.rglob("*.py")
        for action in re.findall(r'\brecord\(\s*"([a-z_]+\.[a-z_]+)"', path.read_text())
    }
    assert {"proposal.approved", "ledger.posted", "incident.overdue_flagged"} <= recorded
    assert sorted(recorded - SENTENCES.keys()) == []


def test_it_describes_posting_in_words(support):
    event = AuditEvent(
        actor_name="system",
        action="ledger.posted",
        object_type="payoutproposal",
        object_id="12",
        after={"status": "posted", "credits": 1200, "total_cents": 3015000, "currency": "USD"},
    )
    assert describe(event) == (
        "Proposal 12 posted: 1,200 credits, USD 30,150.00 in total, matching the approved total "
        "to the cent"
    )


def test_it_describes_unknown_actions_sensibly(support):
    event = AuditEvent(actor_name="sam", action="thing.done", object_type="x", object_id="7")
    assert describe(event) == "sam: thing.done on x 7"


@pytest.mark.postgres
def test_the_database_refuses_to_update_or_delete_audit_events(support):
    import_doc(support)
    event = AuditEvent.objects.get(action="snapshot.imported")
    with pytest.raises(DatabaseError, match="append-only"), transaction.atomic():
        AuditEvent.objects.filter(pk=event.pk).update(reason="rewritten")
    with pytest.raises(DatabaseError, match="append-only"), transaction.atomic():
        AuditEvent.objects.filter(pk=event.pk).delete()
    with pytest.raises(DatabaseError, match="append-only"), transaction.atomic():
        with connection.cursor() as cursor:
            cursor.execute("UPDATE audit_auditevent SET actor_name = 'someone else'")
    event.refresh_from_db()
    assert event.reason == "" and event.actor_name == "sam_support"


@pytest.mark.django_db(transaction=True)
def test_it_refuses_an_event_written_outside_the_changes_transaction(support):
    from refunds_admin.audit.services import record

    incident = open_incident(support)
    events = AuditEvent.objects.count()
    with pytest.raises(RuntimeError, match="outside a transaction"):
        record("incident.noted", incident, actor=support, tournament=incident.tournament)
    assert AuditEvent.objects.count() == events
    with transaction.atomic():  # inside one, the same event is written
        record("incident.noted", incident, actor=support, tournament=incident.tournament)
    assert AuditEvent.objects.filter(action="incident.noted").count() == 1
