"""Outage batches: prepare every proposal in one job, review and approve them at once, follow
the posting, report, replay."""

import hashlib
from datetime import timedelta

import pytest
from django.core.exceptions import PermissionDenied
from django.core.management import call_command
from django.core.management.base import CommandError
from django.utils import timezone

from refunds_admin.audit.models import AuditEvent
from refunds_admin.errors import Refused
from refunds_admin.incidents.services import import_snapshot
from refunds_admin.outages import services as outages
from refunds_admin.proposals import batches
from refunds_admin.proposals.models import OutagePrepareRun, PayoutLine, PayoutProposal
from refunds_admin.reports import outages as reports
from tests.support.factories import (
    approve_outage,
    cancelled_outage,
    dumps,
    import_doc,
    outage,
    prepared_outage,
    snapshot_doc,
)
from tests.support.tampering import triggers_off

pytestmark = pytest.mark.django_db


def _outcomes(o):
    progress = batches.prepare_progress(o)
    return {r.incident.tournament.external_id: r.outcome for r in progress["results"]}


def test_it_prepares_and_submits_every_proposal_in_one_run(support):
    o = prepared_outage(support)
    run = OutagePrepareRun.objects.get()
    assert run.state == "done" and run.done == run.total == 3
    assert _outcomes(o) == {"OUT-1": "prepared", "OUT-2": "prepared", "OUT-3": "prepared"}
    proposals = list(batches.live_proposals(o))
    assert [p.status for p in proposals] == ["submitted"] * 3
    assert {p.rule for p in proposals} == {"not_in_the_money"}
    assert batches.prepare_progress(o)["percent"] == 100
    assert AuditEvent.objects.filter(action="outage.prepared").get().after["prepared"] == 3


def test_a_refused_snapshot_is_listed_and_does_not_block_the_others(support):
    # A prize pool smaller than the buy-ins to refund: the policy cannot apply automatically.
    small_pool = {"prizes": [{"place": 1, "amount": "50.00"}]}
    o = prepared_outage(support, docs={"OUT-2": small_pool})
    assert _outcomes(o) == {"OUT-1": "prepared", "OUT-2": "refused", "OUT-3": "prepared"}
    refused = batches.prepare_progress(o)["results"][1]
    assert refused.message and refused.problems
    assert PayoutProposal.objects.count() == 2


def test_running_it_again_prepares_only_what_is_missing_or_stale(support):
    o = prepared_outage(support)
    before = {p.pk: p.fingerprint for p in batches.live_proposals(o)}
    # OUT-2 is re-imported with other chip counts: its proposal is stale.
    import_snapshot(
        dumps(snapshot_doc("OUT-2", active_chips=[50_000, 25_000, 15_000, 10_000])).encode(),
        acting_user=support,
        source="upload",
    )
    run = batches.start_prepare(o, acting_user=support)
    batches.run_prepare(run.pk)
    assert _outcomes(o) == {"OUT-1": "unchanged", "OUT-2": "prepared", "OUT-3": "unchanged"}
    after = {p.pk: p.fingerprint for p in batches.live_proposals(o)}
    # OUT-2's proposal is superseded by a new version; the other two are kept as they were.
    assert len(after) == 3 and len(set(after) & set(before)) == 2
    assert all(after[pk] == before[pk] for pk in set(after) & set(before))
    # A message delivered twice runs once.
    assert batches.run_prepare(run.pk) == "done"


def test_it_skips_tournaments_that_were_not_cancelled(support, manager):
    o = outage(support, failed_ago=timedelta(minutes=10))
    first = outages.incidents_of(o)[0]
    outages.mark_resumed(o, [first.pk], resumed_at=timezone.now(), acting_user=support)
    outages.declare_rest_not_resumable(o, reason="rack gone", acting_user=manager)
    run = batches.start_prepare(o, acting_user=support)
    batches.run_prepare(run.pk)
    assert _outcomes(o) == {"OUT-1": "skipped", "OUT-2": "prepared", "OUT-3": "prepared"}


def test_one_run_at_a_time_per_outage(support):
    o = cancelled_outage(support)
    first = batches.start_prepare(o, acting_user=support)
    assert batches.start_prepare(o, acting_user=support) == first


def test_the_outage_fingerprint_is_sha256_over_the_sorted_fingerprints(support):
    o = prepared_outage(support)
    fps = sorted(p.fingerprint for p in batches.live_proposals(o))
    expected = hashlib.sha256("\n".join(fps).encode()).hexdigest()
    assert batches.review(o)["fingerprint"] == expected
    assert batches.outage_fingerprint(reversed(fps)) == expected


def test_the_review_lists_every_proposal_with_totals_per_currency(support):
    o = prepared_outage(support, docs={"OUT-3": {"currency": "EUR"}})
    data = batches.review(o)
    assert [r["tournament"].external_id for r in data["rows"]] == ["OUT-1", "OUT-2", "OUT-3"]
    usd = sum(r["proposal"].total_cents for r in data["rows"][:2])
    assert data["totals"]["USD"]["cents"] == usd and data["totals"]["USD"]["proposals"] == 2
    assert data["totals"]["EUR"]["proposals"] == 1
    assert all(r["capped"] == 0 for r in data["rows"])


def test_a_manager_approves_the_whole_batch(support, manager):
    o = prepared_outage(support)
    approve_outage(o, manager)
    proposals = list(batches.live_proposals(o))
    assert {p.status for p in proposals} == {"approved"}
    assert {p.approved_by_id for p in proposals} == {manager.pk}
    assert AuditEvent.objects.filter(action="proposal.approved").count() == 3
    event = AuditEvent.objects.get(action="outage.batch_approved")
    assert event.after["count"] == 3 and event.after["fingerprint"] == batches.outage_fingerprint(
        p.fingerprint for p in proposals
    )


def test_a_manager_approves_a_selection(support, manager):
    o = prepared_outage(support)
    first = batches.live_proposals(o)[0]
    approve_outage(o, manager, only=[first.pk])
    assert [p.status for p in batches.live_proposals(o)] == ["approved", "submitted", "submitted"]


def test_four_eyes_apply_to_every_proposal_of_the_batch(manager, other_manager):
    o = prepared_outage(manager)  # the manager prepared and submitted them
    with pytest.raises(PermissionDenied, match="four eyes"):
        approve_outage(o, manager)
    assert not PayoutProposal.objects.filter(status="approved").exists()
    approve_outage(o, other_manager)
    assert PayoutProposal.objects.filter(status="approved").count() == 3


def test_a_changed_proposal_refuses_the_whole_batch_naming_it(support, manager):
    o = prepared_outage(support)
    shown = batches.review(o)["approvable"]
    seen = {p.pk: p.fingerprint for p in shown}
    # Meanwhile OUT-3's snapshot is re-imported and its proposal prepared again.
    import_snapshot(
        dumps(snapshot_doc("OUT-3", active_chips=[70_000, 20_000, 5_000, 5_000])).encode(),
        acting_user=support,
        source="upload",
    )
    with pytest.raises(Refused) as refused:
        batches.approve_batch(
            o,
            seen=seen,
            fingerprint=batches.outage_fingerprint(seen.values()),
            acting_user=manager,
        )
    names = [where for where, _ in refused.value.problems]
    assert len(names) == 1 and names[0].startswith("OUT-3 (proposal ")
    assert "re-imported" in refused.value.problems[0][1]
    assert not PayoutProposal.objects.filter(status="approved").exists()


def test_a_proposal_prepared_again_since_the_review_refuses_the_batch(support, manager):
    o = prepared_outage(support)
    seen = {p.pk: p.fingerprint for p in batches.review(o)["approvable"]}
    victim = list(seen)[1]
    seen[victim] = "0" * 64  # what the manager saw is not what is stored now
    with pytest.raises(Refused) as refused:
        batches.approve_batch(
            o, seen=seen, fingerprint=batches.outage_fingerprint(seen.values()), acting_user=manager
        )
    assert [w for w, _ in refused.value.problems] == [
        f"{PayoutProposal.objects.get(pk=victim).incident.tournament.external_id} (proposal {victim})"
    ]
    assert "fingerprint differs" in refused.value.problems[0][1]


def test_a_wrong_outage_fingerprint_refuses_the_batch(support, manager):
    o = prepared_outage(support)
    seen = {p.pk: p.fingerprint for p in batches.review(o)["approvable"]}
    with pytest.raises(Refused, match="outage fingerprint"):
        batches.approve_batch(o, seen=seen, fingerprint="a" * 64, acting_user=manager)


def test_an_approved_proposal_in_the_batch_refuses_it(support, manager, other_manager):
    o = prepared_outage(support)
    seen = {p.pk: p.fingerprint for p in batches.review(o)["approvable"]}
    approve_outage(o, manager, only=[list(seen)[0]])
    with pytest.raises(Refused) as refused:
        batches.approve_batch(
            o,
            seen=seen,
            fingerprint=batches.outage_fingerprint(seen.values()),
            acting_user=other_manager,
        )
    assert "is approved, not submitted" in refused.value.problems[0][1]
    assert PayoutProposal.objects.filter(status="approved").count() == 1


def test_proposals_of_another_outage_are_refused(support, manager):
    o = prepared_outage(support)
    other = prepared_outage(support, external_ids=("B-1",))
    seen = {p.pk: p.fingerprint for p in batches.review(other)["approvable"]}
    with pytest.raises(Refused, match="not part of outage"):
        batches.approve_batch(
            o, seen=seen, fingerprint=batches.outage_fingerprint(seen.values()), acting_user=manager
        )


def test_the_report_adds_up_cost_per_currency_and_rule(support, manager):
    now = timezone.now()
    o = prepared_outage(
        support,
        docs={
            "OUT-2": {"starts_at": now - timedelta(minutes=50)},  # failed 10 min in: rule 1
            "OUT-3": {"currency": "EUR"},
        },
    )
    approve_outage(o, manager)
    report = reports.report(o)
    proposals = {p.incident.tournament.external_id: p for p in batches.live_proposals(o)}
    usd = proposals["OUT-1"].total_cents + proposals["OUT-2"].total_cents
    assert report["by_currency"]["USD"]["cents"] == usd
    assert report["by_currency"]["EUR"]["cents"] == proposals["OUT-3"].total_cents
    assert [(r["currency"], r["rule"]) for r in report["by_rule"]] == [
        ("EUR", "not_in_the_money"),
        ("USD", "full_refund"),
        ("USD", "not_in_the_money"),
    ]
    paid = PayoutLine.objects.filter(total_cents__gt=0)
    assert report["entries_paid"] == paid.count()
    assert report["players_paid"] == paid.values("player_id").distinct().count()
    assert report["timings"]["to_cancelled"] > 0 and report["timings"]["approved_at"]
    assert report["approved"] == 3 and len(report["rows"]) == 3


def test_posting_progress_aggregates_every_proposal(support, manager):
    o = prepared_outage(support)
    progress = reports.posting_progress(o)
    assert progress["count"] == 0  # nothing approved yet
    approve_outage(o, manager)
    progress = reports.posting_progress(o)
    assert progress["count"] == 3
    total = sum(p.total_cents for p in batches.live_proposals(o))
    assert progress["money"]["USD"]["total_cents"] == total


def test_replay_outage_checks_every_proposal_and_exits_1_on_a_mismatch(support, manager, capsys):
    o = prepared_outage(support)
    approve_outage(o, manager, only=[batches.live_proposals(o)[0].pk])
    call_command("replay_outage", str(o.pk))
    out = capsys.readouterr().out
    assert "all 3 proposals" in out and "OK       batch approval of 1 proposals" in out
    # Someone rewrites a stored line behind the app's back.
    victim = batches.live_proposals(o)[1]
    line = PayoutLine.objects.filter(proposal=victim, total_cents__gt=0).first()
    with triggers_off():  # a superuser behind the app's back: the lines are immutable otherwise
        PayoutLine.objects.filter(pk=line.pk).update(
            fee_refund_cents=line.fee_refund_cents + 1, total_cents=line.total_cents + 1
        )
    with pytest.raises(CommandError, match="1 of 3 proposals") as failed:
        call_command("replay_outage", str(o.pk))
    assert victim.incident.tournament.external_id in str(failed.value)
    with pytest.raises(SystemExit) as exited:
        _run_main(o.pk)
    assert exited.value.code == 1


def _run_main(outage_id):
    """As from the shell: `manage.py replay_outage ID` exits with status 1."""
    from django.core.management import ManagementUtility

    ManagementUtility(["manage.py", "replay_outage", str(outage_id)]).execute()


def test_adding_a_tournament_keeps_the_batch_idempotent(support, manager):
    o = outage(support, failed_ago=timedelta(minutes=10))
    outages.add_tournament(
        o,
        import_doc(support, external_id="LATE").tournament,
        acting_user=support,
        second_factor=False,
    )
    outages.declare_rest_not_resumable(o, reason="rack gone", acting_user=manager)
    run = batches.start_prepare(o, acting_user=support)
    batches.run_prepare(run.pk)
    assert _outcomes(o)["LATE"] == "prepared"


def test_a_run_whose_worker_died_is_continued_not_run_twice(support, settings):
    o = cancelled_outage(support)
    run = batches.start_prepare(o, acting_user=support)
    assert batches._claim(run.pk)  # a worker claimed it ... and was killed before any result
    # Still fresh: a second delivery leaves it to the (possibly living) worker.
    assert batches.run_prepare(run.pk) == "running"
    assert batches.start_prepare(o, acting_user=support) == run  # one run at a time
    settings.OUTAGE_PREPARE_STALE_AFTER = 0  # its heartbeat is now too old: taken to be dead
    assert batches.run_prepare(run.pk) == "done"
    assert _outcomes(o) == {"OUT-1": "prepared", "OUT-2": "prepared", "OUT-3": "prepared"}


def test_the_tournaments_are_shared_fairly_between_the_parts_of_a_run(support):
    big = {"active_chips": [1_000] * 2_000, "eliminated": 0}
    o = cancelled_outage(
        support,
        external_ids=("BIG-1", "BIG-2", "S-1", "S-2", "S-3", "S-4"),
        docs={"BIG-1": big, "BIG-2": big},
    )
    incidents = list(outages.incidents_of(o).select_related("tournament__current_snapshot"))
    parts = batches._split(incidents, 2)
    names = [{i.tournament.external_id for i in incidents if i.pk in part} for part in parts]
    assert len(parts) == 2
    assert all(len(n & {"BIG-1", "BIG-2"}) == 1 for n in names)  # the two big ones apart
    assert sorted(len(n) for n in names) == [3, 3]


def test_every_outage_event_reads_as_a_sentence(support, manager, other_manager):
    from refunds_admin.audit.display import describe

    o = outage(support, failed_ago=timedelta(minutes=5), docs={"OUT-3": {"currency": "EUR"}})
    outages.add_tournament(
        o,
        import_doc(support, external_id="LATE").tournament,
        acting_user=support,
        second_factor=False,
    )
    first = outages.incidents_of(o)[0]
    outages.mark_resumed(o, [first.pk], resumed_at=timezone.now(), acting_user=support)
    outages.declare_rest_not_resumable(o, reason="rack gone", acting_user=manager)
    outages.confirm_site_wide_issue(o, justification="whole DC", acting_user=manager)
    batches.run_prepare(batches.start_prepare(o, acting_user=support).pk)
    approve_outage(o, other_manager)
    events = AuditEvent.objects.filter(action__startswith="outage.") | AuditEvent.objects.filter(
        action="incident.joined_outage"
    )
    actions = set(events.values_list("action", flat=True))
    assert len(actions) == 9, actions  # every outage action but window_passed, and joining one
    for event in events:
        sentence = describe(event)
        assert f": {event.action} on " not in sentence, sentence  # not the fallback
    approved = AuditEvent.objects.get(action="outage.batch_approved")
    assert "EUR" in describe(approved) and "USD" in describe(approved)
