"""Four eyes: the manager who approves (or rejects) a proposal is none of the people it rests on:
whoever prepared or submitted it, and the managers whose decisions chose its rule (the site-wide
finding, "not resumable", for one tournament or a whole outage). Batches check it proposal by
proposal, a sign-in set up by someone else decides nothing, and the database refuses an approval
that slips past the services."""

from datetime import timedelta

import pytest
from django.core.exceptions import PermissionDenied
from django.db import IntegrityError, transaction
from django.utils import timezone

from refunds_admin.accounts import credentials
from refunds_admin.incidents import services as incidents
from refunds_admin.outages import services as outages
from refunds_admin.proposals import batches
from refunds_admin.proposals import services as proposals
from refunds_admin.proposals.models import PayoutProposal
from tests.support.factories import (
    approve_outage,
    approved_policy_version,
    cancelled_incident,
    import_doc,
    open_incident,
    outage,
    policy_doc,
)
from tests.support.factories import prepared_outage as _prepared

pytestmark = pytest.mark.django_db


def _submitted(support, incident):
    proposal = proposals.prepare_proposal(incident, acting_user=support)
    return proposals.submit_proposal(proposal, acting_user=support)


def _approve(proposal, manager):
    return proposals.approve_proposal(
        proposal, acting_user=manager, fingerprint=proposal.fingerprint
    )


def test_the_manager_who_declared_not_resumable_may_not_approve(support, manager, other_manager):
    incident = incidents.declare_not_resumable(
        open_incident(support), reason="the database is gone", acting_user=manager
    )
    proposal = _submitted(support, incident)
    assert proposal.declared_not_resumable_by == manager
    assert not proposal.may_be_decided_by(manager)
    assert proposal not in PayoutProposal.objects.awaiting_decision_by(manager)
    with pytest.raises(PermissionDenied, match="declared not resumable.*four eyes"):
        _approve(proposal, manager)
    assert proposal in PayoutProposal.objects.awaiting_decision_by(other_manager)
    assert _approve(proposal, other_manager).status == PayoutProposal.Status.APPROVED


def test_the_manager_who_confirmed_the_site_wide_finding_may_not_approve(
    support, manager, other_manager
):
    incident = incidents.confirm_site_wide_issue(
        cancelled_incident(support), justification="lag everywhere", acting_user=manager
    )
    proposal = _submitted(support, incident)
    assert proposal.site_wide_confirmed_by == manager and proposal.rule == "full_refund"
    with pytest.raises(PermissionDenied, match="site-wide finding.*four eyes"):
        _approve(proposal, manager)
    assert _approve(proposal, other_manager).approved_by == other_manager


def test_the_manager_who_changed_the_tournaments_policy_may_not_approve(
    support, manager, other_manager
):
    incident = cancelled_incident(support)
    uncapped = approved_policy_version(
        other_manager, manager, doc=policy_doc("ultimatepoker-2026", first_place_cap=False)
    )
    incidents.change_tournament_policy(
        incident.tournament, uncapped, acting_user=manager, reason="the operator dropped the cap"
    )
    proposal = _submitted(support, incident)
    assert proposal.policy_changed_by == manager
    assert proposal not in PayoutProposal.objects.awaiting_decision_by(manager)
    with pytest.raises(PermissionDenied, match="cancellation policy.*four eyes"):
        _approve(proposal, manager)
    assert _approve(proposal, other_manager).approved_by == other_manager


def test_a_batch_refuses_the_manager_whose_outage_decision_chose_the_rule(
    support, manager, other_manager
):
    an_outage = outage(support, failed_ago=timedelta(minutes=10))
    outages.declare_rest_not_resumable(an_outage, reason="DC lost", acting_user=manager)
    outages.confirm_site_wide_issue(
        an_outage, justification="all lagged", acting_user=other_manager
    )
    batches.run_prepare(batches.start_prepare(an_outage, acting_user=support).pk)
    for person in (manager, other_manager):
        with pytest.raises(PermissionDenied, match="four eyes.*Nothing was approved"):
            approve_outage(an_outage, person)
    assert not PayoutProposal.objects.exclude(status=PayoutProposal.Status.SUBMITTED).exists()


def test_a_batch_is_approved_by_a_manager_it_does_not_rest_on(support, manager):
    an_outage = _prepared(support)
    assert approve_outage(an_outage, manager)
    assert set(PayoutProposal.objects.values_list("status", "approved_by")) == {
        ("approved", manager.pk)
    }


def test_the_database_refuses_an_approval_by_who_chose_the_rule(support, manager):
    incident = incidents.confirm_site_wide_issue(
        cancelled_incident(support), justification="lag", acting_user=manager
    )
    proposal = _submitted(support, incident)
    with pytest.raises(IntegrityError), transaction.atomic():
        PayoutProposal.objects.filter(pk=proposal.pk).update(
            status="approved", approved_by=manager, approved_fingerprint=proposal.fingerprint,
            wallet="ledger",
        )  # fmt: skip


def test_a_manager_whose_sign_in_someone_else_set_decides_nothing_until_they_change_it(
    support, manager, other_manager, superuser
):
    proposal = _submitted(support, cancelled_incident(support))
    credentials.set_for(manager, credentials.DEVICE, by=superuser)
    assert "set by root" in proposal.why_not_decided_by(manager)
    with pytest.raises(PermissionDenied, match="set by root"):
        _approve(proposal, manager)
    credentials.set_by_themselves(manager, credentials.DEVICE)
    assert _approve(proposal, manager).approved_by == manager


def _submitted_on_a_snapshot_imported_by(importer, support):
    """A proposal support prepared and submitted, on a snapshot `importer` uploaded; the
    incident recorded by support and cancelled by the system."""
    tournament = import_doc(importer, external_id="T-MINE").tournament
    incident = incidents.cancel_after_window(
        incidents.record_incident(
            tournament,
            failed_at=timezone.now() - timedelta(minutes=40),
            cause="server_crash",
            description="crashed",
            acting_user=support,
        ),
        acting_user=None,
    )
    return _submitted(support, incident)


def test_the_manager_who_imported_the_snapshot_may_not_approve(support, manager, other_manager):
    """The snapshot is what the lines are computed from (chips, prize table, who played): a
    manager who uploaded it -- a re-import with doctored chips, say -- approves nothing computed
    from it."""
    proposal = _submitted_on_a_snapshot_imported_by(manager, support)
    assert proposal.snapshot_imported_by == manager
    assert proposal not in PayoutProposal.objects.awaiting_decision_by(manager)
    with pytest.raises(PermissionDenied, match="imported the snapshot.*four eyes"):
        _approve(proposal, manager)
    assert _approve(proposal, other_manager).approved_by == other_manager


def test_the_manager_who_recorded_the_failure_time_may_not_approve(support, manager, other_manager):
    """The failure time chooses the rule (a full refund early on, chip equity later): the
    manager who recorded it approves nothing that rests on it, here through an outage."""
    tournaments = [import_doc(support, external_id=x).tournament for x in ("OUT-1", "OUT-2")]
    an_outage = outages.record_outage(
        failed_at=timezone.now() - timedelta(minutes=40),
        cause="server_crash",
        description="DC lost",
        tournaments=tournaments,
        acting_user=manager,
    )
    outages.cancel_rest_after_window(an_outage, acting_user=support)
    batches.run_prepare(batches.start_prepare(an_outage, acting_user=support).pk)
    proposal = PayoutProposal.objects.filter(status=PayoutProposal.Status.SUBMITTED).first()
    assert proposal.failure_recorded_by == manager
    with pytest.raises(PermissionDenied, match="recorded the failure.*four eyes"):
        _approve(proposal, manager)
    with pytest.raises(PermissionDenied, match="four eyes.*Nothing was approved"):
        approve_outage(an_outage, manager)
    assert approve_outage(an_outage, other_manager)


def test_the_database_refuses_an_approval_by_who_imported_the_snapshot(support, manager):
    proposal = _submitted_on_a_snapshot_imported_by(manager, support)
    with pytest.raises(IntegrityError), transaction.atomic():
        PayoutProposal.objects.filter(pk=proposal.pk).update(
            status="approved", approved_by=manager, approved_fingerprint=proposal.fingerprint,
            wallet="ledger",
        )  # fmt: skip


def test_a_re_import_that_moves_the_tournament_to_another_policy_records_who_moved_it(
    support, manager, other_manager
):
    """A re-import naming another policy changes the tournament's policy as much as "Change the
    policy" does: the manager who uploaded it approves nothing computed under it, even once a
    later snapshot (naming no policy, so keeping it) was imported by someone else."""
    incident = cancelled_incident(support)
    import_doc(manager, policy="roll-forward-50-50")
    import_doc(support, active_chips=[40_000, 30_000, 20_000, 10_001])
    incident.tournament.refresh_from_db()
    assert incident.tournament.policy_version.policy_id == "roll-forward-50-50"
    assert incident.tournament.policy_changed_by == manager
    proposal = _submitted(support, incident)
    assert proposal.snapshot_imported_by == support and proposal.policy_changed_by == manager
    with pytest.raises(PermissionDenied, match="cancellation policy.*four eyes"):
        _approve(proposal, manager)
    assert _approve(proposal, other_manager).approved_by == other_manager
