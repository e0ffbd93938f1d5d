"""Outages: recording one failure across many tournaments, and its one 30-minute window."""

from datetime import timedelta

import pytest
from django.core.exceptions import PermissionDenied
from django.utils import timezone

from refunds_admin.audit.models import AuditEvent
from refunds_admin.errors import Refused
from refunds_admin.incidents.models import Incident
from refunds_admin.outages import services
from refunds_admin.outages.models import Outage
from tests.support.factories import import_doc, outage, snapshot_doc

pytestmark = pytest.mark.django_db


def _statuses(o):
    return {i.tournament.external_id: i.status for i in services.incidents_of(o)}


def test_it_records_one_incident_per_tournament_with_the_outage_timing(support):
    o = outage(support)
    incidents = list(services.incidents_of(o))
    assert [i.tournament.external_id for i in incidents] == ["OUT-1", "OUT-2", "OUT-3"]
    assert {i.failed_at for i in incidents} == {o.failed_at}
    assert {i.cause for i in incidents} == {"server_crash"}
    assert {i.rule for i in incidents} == {"not_in_the_money"}
    assert AuditEvent.objects.filter(action="outage.recorded", object_id=str(o.pk)).count() == 1
    assert AuditEvent.objects.filter(action="incident.recorded").count() == 3
    joined = AuditEvent.objects.filter(action="incident.joined_outage")
    assert sorted(joined.values_list("tournament_external_id", flat=True)) == [
        "OUT-1",
        "OUT-2",
        "OUT-3",
    ]


def test_it_keeps_each_tournaments_own_rule_from_its_own_start(support):
    now = timezone.now()
    early = {"starts_at": now - timedelta(minutes=50)}  # failed 10 min in: rule 1
    o = outage(support, docs={"OUT-2": early})
    rules = {i.tournament.external_id: i.rule for i in services.incidents_of(o)}
    assert rules == {
        "OUT-1": "not_in_the_money",
        "OUT-2": "full_refund",
        "OUT-3": "not_in_the_money",
    }


def test_it_records_nothing_when_one_tournament_is_refused(support):
    good = import_doc(support, external_id="OK-1").tournament
    # Started after the failure time: record_incident refuses it.
    late = import_doc(
        support, snapshot_doc("LATE-1", starts_at=timezone.now() - timedelta(minutes=10))
    ).tournament
    with pytest.raises(Refused) as refused:
        services.record_outage(
            failed_at=timezone.now() - timedelta(minutes=20),
            cause="network",
            description="uplink",
            tournaments=[good, late],
            acting_user=support,
        )
    assert [where for where, _ in refused.value.problems] == ["LATE-1"]
    assert "before the tournament's start" in refused.value.problems[0][1]
    assert Outage.objects.count() == 0 and Incident.objects.count() == 0
    assert not AuditEvent.objects.filter(action__startswith="incident.").exists()


def test_it_names_every_bad_field(support):
    with pytest.raises(Refused) as refused:
        services.record_outage(
            failed_at=timezone.now() + timedelta(hours=1),
            cause="meteor",
            description="",
            tournaments=[],
            acting_user=support,
        )
    assert {where for where, _ in refused.value.problems} == {"failed_at", "cause", "tournaments"}


def test_it_lets_only_staff_record_an_outage(auditor, support):
    t = import_doc(support).tournament
    with pytest.raises(PermissionDenied):
        services.record_outage(
            failed_at=timezone.now() - timedelta(minutes=5),
            cause="network",
            description="",
            tournaments=[t],
            acting_user=auditor,
        )


def test_it_lists_the_tournaments_running_at_the_failure_time(support):
    failed_at = timezone.now() - timedelta(minutes=30)
    import_doc(support, external_id="RUN-A")
    import_doc(support, snapshot_doc("RUN-B", name="Bounty Builder"))
    import_doc(support, snapshot_doc("LATER", starts_at=timezone.now() - timedelta(minutes=5)))
    busy = import_doc(support, external_id="BUSY").tournament
    services.record_outage(
        failed_at=failed_at,
        cause="network",
        description="",
        tournaments=[busy],
        acting_user=support,
    )
    running = [t.external_id for t in services.tournaments_running_at(failed_at)]
    assert running == ["RUN-A", "RUN-B"]  # not started yet, or already in an incident: not listed
    assert [t.external_id for t in services.tournaments_running_at(failed_at, "bounty")] == [
        "RUN-B"
    ]


def test_it_resolves_external_ids_with_a_problem_per_unknown_one(support):
    import_doc(support, external_id="KNOWN")
    tournaments, problems = services.resolve_external_ids(["KNOWN", "NOPE", "KNOWN"])
    assert [t.external_id for t in tournaments] == ["KNOWN"]
    assert problems == [
        ("NOPE", "unknown tournament: import its snapshot first"),
        ("KNOWN", "is listed twice"),
    ]


def test_it_adds_a_tournament_to_an_open_outage_later(support):
    o = outage(support, failed_ago=timedelta(minutes=5))
    late = import_doc(support, external_id="FOUND-LATER").tournament
    incident = services.add_tournament(o, late, acting_user=support, second_factor=False)
    assert incident.failed_at == o.failed_at and incident.status == "open"
    assert "FOUND-LATER" in _statuses(o)
    assert AuditEvent.objects.filter(action="outage.tournament_added").count() == 1


def test_it_refuses_to_add_a_tournament_to_a_closed_outage(support, manager):
    o = outage(support, failed_ago=timedelta(minutes=5))
    services.declare_rest_not_resumable(o, reason="hardware gone", acting_user=manager)
    late = import_doc(support, external_id="FOUND-LATER").tournament
    with pytest.raises(Refused, match="closed"):
        services.add_tournament(o, late, acting_user=support, second_factor=False)


def test_it_marks_resumed_per_tournament_and_declares_the_rest_not_resumable(support, manager):
    o = outage(support, failed_ago=timedelta(minutes=10))
    first = services.incidents_of(o)[0]
    services.mark_resumed(
        o, [first.pk], resumed_at=timezone.now() - timedelta(minutes=2), acting_user=support
    )
    services.declare_rest_not_resumable(o, reason="rack 4 will not boot", acting_user=manager)
    assert _statuses(o) == {"OUT-1": "resumed", "OUT-2": "cancelled", "OUT-3": "cancelled"}
    cancelled = Incident.objects.filter(status="cancelled")
    assert set(cancelled.values_list("cancelled_because", flat=True)) == {"not_resumable"}
    assert set(cancelled.values_list("cancel_reason", flat=True)) == {"rack 4 will not boot"}
    o.refresh_from_db()
    assert o.rest_declared_by == manager
    event = AuditEvent.objects.get(action="outage.rest_not_resumable")
    assert event.after["tournaments"] == ["OUT-2", "OUT-3"]
    assert AuditEvent.objects.filter(action="incident.cancelled").count() == 2
    assert not services.is_open(o)


def test_it_refuses_a_resumed_mark_after_the_window_for_every_tournament(support):
    o = outage(support, failed_ago=timedelta(minutes=40))
    ids = [i.pk for i in services.incidents_of(o)]
    with pytest.raises(Refused) as refused:
        services.mark_resumed(o, ids, resumed_at=timezone.now(), acting_user=support)
    assert [w for w, _ in refused.value.problems] == ["OUT-1", "OUT-2", "OUT-3"]
    assert set(_statuses(o).values()) == {"open"}


def test_only_a_manager_declares_the_rest_not_resumable(support):
    o = outage(support, failed_ago=timedelta(minutes=5))
    with pytest.raises(PermissionDenied):
        services.declare_rest_not_resumable(o, reason="gone", acting_user=support)


def test_it_cancels_the_rest_only_once_the_window_passed(support):
    o = outage(support, failed_ago=timedelta(minutes=5))
    with pytest.raises(Refused, match="still running"):
        services.cancel_rest_after_window(o, acting_user=support)
    o2 = outage(support, external_ids=("W-1", "W-2"), failed_ago=timedelta(minutes=31))
    services.cancel_rest_after_window(o2, acting_user=support)
    assert set(_statuses(o2).values()) == {"cancelled"}
    assert AuditEvent.objects.filter(action="outage.window_passed").count() == 1


def test_the_site_wide_finding_is_justified_once_and_applies_rule_1_to_all(support, manager):
    o = outage(support)
    services.confirm_site_wide_issue(o, justification="whole DC down 2 h", acting_user=manager)
    incidents = list(services.incidents_of(o))
    assert {i.rule for i in incidents} == {"full_refund"}
    assert {i.site_wide_justification for i in incidents} == {"whole DC down 2 h"}
    assert AuditEvent.objects.filter(action="incident.site_wide_confirmed").count() == 3
    assert AuditEvent.objects.filter(action="outage.site_wide_confirmed").count() == 1
    with pytest.raises(Refused, match="already confirmed"):
        services.confirm_site_wide_issue(o, justification="again", acting_user=manager)


def test_a_tournament_added_after_the_finding_gets_it_from_a_manager(support, manager):
    o = outage(support, failed_ago=timedelta(minutes=5))
    services.confirm_site_wide_issue(o, justification="DC down", acting_user=manager)
    late = import_doc(support, external_id="FOUND-LATER").tournament
    with pytest.raises(PermissionDenied):
        services.add_tournament(o, late, acting_user=support, second_factor=False)
    incident = services.add_tournament(o, late, acting_user=manager, second_factor=True)
    assert incident.site_wide_issue and incident.rule == "full_refund"


def test_applying_a_finding_to_a_tournament_added_later_needs_the_second_factor(support, manager):
    o = outage(support, failed_ago=timedelta(minutes=5))
    services.confirm_site_wide_issue(o, justification="DC down", acting_user=manager)
    late = import_doc(support, external_id="FOUND-LATER").tournament
    with pytest.raises(Refused, match="authenticator app"):
        services.add_tournament(o, late, acting_user=manager, second_factor=False)
    assert not Incident.objects.filter(tournament=late).exists()  # nothing half-saved
    assert "FOUND-LATER" not in _statuses(o)


def test_neither_the_findings_author_nor_who_applied_it_approves_the_added_tournament(
    support, manager, other_manager
):
    from refunds_admin.proposals import services as proposals
    from refunds_admin.proposals.models import PayoutProposal

    o = outage(support, failed_ago=timedelta(minutes=5))
    services.confirm_site_wide_issue(o, justification="DC down", acting_user=manager)
    late = import_doc(support, external_id="FOUND-LATER").tournament
    incident = services.add_tournament(o, late, acting_user=other_manager, second_factor=True)
    # The finding stays its author's (with its justification); the incident names both.
    assert incident.site_wide_confirmed_by == manager
    assert incident.site_wide_applied_by == other_manager
    event = AuditEvent.objects.get(
        action="incident.site_wide_confirmed", object_id=str(incident.pk)
    )
    assert event.actor == other_manager and event.reason == "DC down"
    assert event.after["finding_by"] == manager.username
    assert event.after["applied_by"] == other_manager.username

    services.declare_rest_not_resumable(o, reason="rack gone", acting_user=manager)
    incident.refresh_from_db()
    proposal = proposals.prepare_proposal(incident, acting_user=support)
    proposal = proposals.submit_proposal(proposal, acting_user=support)
    assert proposal.rule == "full_refund"
    assert proposal.site_wide_confirmed_by == manager
    assert proposal.site_wide_applied_by == other_manager
    with pytest.raises(PermissionDenied, match="applied the outage's site-wide finding"):
        proposals.approve_proposal(
            proposal, acting_user=other_manager, fingerprint=proposal.fingerprint
        )
    with pytest.raises(PermissionDenied, match="four eyes"):
        proposals.approve_proposal(proposal, acting_user=manager, fingerprint=proposal.fingerprint)
    assert PayoutProposal.objects.get(pk=proposal.pk).status == "submitted"
