"""Proposals: prepare, replace, submit, four-eyes approval, reject, replay, statements."""

import zlib
from types import SimpleNamespace

import pytest
from django.core.exceptions import PermissionDenied
from django.core.management import call_command
from django.core.management.base import CommandError
from django.db import IntegrityError, transaction
from django.utils import timezone

from refunds_admin.audit.models import AuditEvent
from refunds_admin.errors import Refused
from refunds_admin.incidents import services as incidents
from refunds_admin.ledger import selectors as ledger_selectors
from refunds_admin.payouts import compute_proposal, parse_snapshot
from refunds_admin.proposals import figures, services
from refunds_admin.proposals.models import PayoutLine, PayoutProposal
from refunds_admin.tournaments import services as tournaments
from refunds_admin.tournaments.models import Snapshot, Tournament
from tests.support.factories import cancelled_incident, import_doc, open_incident, snapshot_doc
from tests.support.tampering import triggers_off

pytestmark = pytest.mark.django_db


@pytest.fixture
def incident(support):
    return cancelled_incident(support)


@pytest.fixture
def submitted(incident, support):
    proposal = services.prepare_proposal(incident, acting_user=support)
    return services.submit_proposal(proposal, acting_user=support)


def test_it_prepares_the_engines_proposal_from_the_stored_snapshot(incident, support):
    proposal = services.prepare_proposal(incident, acting_user=support)

    snapshot = incident.tournament.current_snapshot
    expected = compute_proposal(parse_snapshot(snapshot.document), failed_at=incident.failed_at)
    assert proposal.fingerprint == expected.fingerprint()
    assert proposal.snapshot == snapshot and proposal.version == 1 and proposal.status == "draft"
    assert proposal.rule == "not_in_the_money" and proposal.currency == "USD"
    # Rule 2 before the bubble: the whole table (1,000.00) + 4 fees of 3.00.
    assert proposal.total_cents == 100_000 + 4 * 300
    assert proposal.summary["total"] == "1012.00"
    assert proposal.lines_count == 10 == proposal.lines.count()
    lines = list(proposal.lines.order_by("position"))
    assert [ln.entry_id for ln in lines] == [ln.entry_id for ln in expected.lines]
    assert [ln.total_cents for ln in lines] == [ln.total for ln in expected.lines]
    assert sum(ln.total_cents for ln in lines) == proposal.total_cents
    assert lines[-1].status == "eliminated" and lines[-1].total_cents == 0
    event = AuditEvent.objects.get(action="proposal.prepared")
    assert event.after["fingerprint"] == proposal.fingerprint and event.before is None


def test_it_prepares_only_for_a_cancelled_incident(support):
    incident = open_incident(support)
    with pytest.raises(Refused, match="only once the tournament is cancelled"):
        services.prepare_proposal(incident, acting_user=support)
    assert PayoutProposal.objects.count() == 0


def test_it_refuses_when_the_rules_cannot_be_applied(support):
    # One active entry left: the tournament has a winner, rule 2 does not apply.
    incident = cancelled_incident(support, active_chips=[100_000], eliminated=9)
    with pytest.raises(Refused) as refused:
        services.prepare_proposal(incident, acting_user=support)
    assert refused.value.problems
    assert PayoutProposal.objects.count() == 0 and PayoutLine.objects.count() == 0


def test_it_supersedes_a_draft_with_the_next_version_when_prepared_again(
    incident, support, manager
):
    first = services.prepare_proposal(incident, acting_user=support)
    old_fingerprint = first.fingerprint
    incidents.confirm_site_wide_issue(incident, justification="DDoS", acting_user=manager)
    again = services.prepare_proposal(incident, acting_user=manager)

    assert again.pk != first.pk and again.version == 2 and again.status == "draft"
    first.refresh_from_db()
    assert first.status == "superseded" and first.fingerprint == old_fingerprint  # kept
    assert again.rule == "full_refund" and again.fingerprint != old_fingerprint
    assert again.prepared_by == manager
    assert PayoutLine.objects.filter(proposal=first).count() == 10  # kept, to compare
    assert PayoutLine.objects.filter(proposal=again).count() == 10
    assert again.total_cents == 10 * 3300  # everybody's buy-in and fee
    # "What changed" compares with the superseded version: the same snapshot, so line by line
    # in position order (figures.changes_by_position), as matching entry ids would.
    changes = again.figures["changes"]
    assert changes["previous_version"] == 1
    first_totals = dict(first.lines.values_list("entry_id", "total_cents"))
    again_lines = list(again.lines.order_by("position").values_list("entry_id", "total_cents"))
    columns = SimpleNamespace(
        entry_id=[e for e, _ in again_lines], total=[t for _, t in again_lines]
    )
    expected = figures.changes(first_totals, columns)
    assert {k: changes[k] for k in expected} == expected
    assert changes["changed"] == sum(first_totals[e] != t for e, t in again_lines) > 0
    event = AuditEvent.objects.filter(action="proposal.prepared").latest("id")
    assert event.before["fingerprint"] == old_fingerprint
    assert event.after["fingerprint"] == again.fingerprint


def test_it_supersedes_a_submitted_proposal_with_a_new_draft_when_prepared_again(
    submitted, support
):
    again = services.prepare_proposal(submitted.incident, acting_user=support)
    assert again.version == submitted.version + 1
    assert again.status == "draft" and again.submitted_by is None
    submitted.refresh_from_db()
    assert submitted.status == "superseded"


def test_it_never_replaces_an_approved_proposal(submitted, support, manager):
    services.approve_proposal(submitted, acting_user=manager, fingerprint=submitted.fingerprint)
    with pytest.raises(Refused, match="frozen"):
        services.prepare_proposal(submitted.incident, acting_user=support)
    submitted.refresh_from_db()
    assert submitted.status == "approved" and PayoutProposal.objects.count() == 1


def test_it_prepares_a_new_version_after_a_rejection(submitted, support, manager):
    services.reject_proposal(submitted, acting_user=manager, reason="wrong snapshot")
    v2 = services.prepare_proposal(submitted.incident, acting_user=support)
    assert v2.pk != submitted.pk and v2.version == 2 and v2.status == "draft"
    submitted.refresh_from_db()
    assert submitted.status == "rejected" and submitted.lines.count() == 10


def test_it_submits_a_draft_once(incident, support):
    proposal = services.prepare_proposal(incident, acting_user=support)
    services.submit_proposal(proposal, acting_user=support)
    assert proposal.status == "submitted" and proposal.submitted_by == support
    with pytest.raises(Refused, match="not draft"):
        services.submit_proposal(proposal, acting_user=support)
    assert AuditEvent.objects.filter(action="proposal.submitted").count() == 1


def test_it_approves_with_four_eyes_and_freezes_the_tournament(submitted, manager, support):
    services.approve_proposal(submitted, acting_user=manager, fingerprint=submitted.fingerprint)
    assert submitted.status == "approved" and submitted.approved_by == manager
    assert submitted.approved_fingerprint == submitted.fingerprint
    tournament = Tournament.objects.get()
    assert tournament.frozen_at is not None
    event = AuditEvent.objects.get(action="proposal.approved")
    assert event.actor == manager and event.after["total"] == submitted.total_cents
    # The posting job was written in the approval's transaction, waiting to be posted.
    progress = ledger_selectors.posting_progress(submitted)
    assert (progress["state"], progress["total_cents"]) == ("queued", submitted.total_cents)
    # Frozen: the platform can no longer replace the snapshot.
    with pytest.raises(Refused, match="frozen"):
        import_doc(support, snapshot_doc(name="late"))


def test_it_refuses_approval_by_the_preparer_or_the_submitter(
    incident, manager, other_manager, support
):
    proposal = services.prepare_proposal(incident, acting_user=manager)
    services.submit_proposal(proposal, acting_user=other_manager)
    for who in (manager, other_manager):
        with pytest.raises(PermissionDenied, match="four eyes"):
            services.approve_proposal(proposal, acting_user=who, fingerprint=proposal.fingerprint)
    proposal.refresh_from_db()
    assert proposal.status == "submitted" and proposal.approved_by is None
    assert Tournament.objects.get().frozen_at is None


def test_the_database_refuses_an_approver_who_prepared_it(submitted, support):
    with pytest.raises(IntegrityError), transaction.atomic():
        PayoutProposal.objects.filter(pk=submitted.pk).update(
            status="approved", approved_by=support, approved_fingerprint=submitted.fingerprint
        )


def test_the_database_refuses_an_approval_without_the_fingerprint(submitted, manager):
    with pytest.raises(IntegrityError), transaction.atomic():
        PayoutProposal.objects.filter(pk=submitted.pk).update(
            status="approved", approved_by=manager, approved_fingerprint="0" * 64
        )


def test_it_refuses_approval_quoting_another_fingerprint(submitted, manager):
    with pytest.raises(Refused, match="not the one you reviewed"):
        services.approve_proposal(submitted, acting_user=manager, fingerprint="ab" * 32)
    submitted.refresh_from_db()
    assert submitted.status == "submitted" and not AuditEvent.objects.filter(
        action="proposal.approved"
    )


def test_prepared_again_after_a_re_import_it_compares_the_entries_by_entry_id(incident, support):
    """The previous version's lines are read beside the engine's computation (db.fetch_beside);
    from another snapshot version they are matched by entry id, as `figures.changes` does."""
    first = services.prepare_proposal(incident, acting_user=support)
    starts_at = incident.tournament.starts_at
    import_doc(
        support, snapshot_doc(starts_at=starts_at, active_chips=[40_000, 30_000, 20_001, 9_999])
    )
    again = services.prepare_proposal(incident, acting_user=support)

    assert again.snapshot_id != first.snapshot_id
    first_totals = dict(first.lines.values_list("entry_id", "total_cents"))
    again_lines = list(again.lines.order_by("position").values_list("entry_id", "total_cents"))
    columns = SimpleNamespace(
        entry_id=[e for e, _ in again_lines], total=[t for _, t in again_lines]
    )
    changes = again.figures["changes"]
    expected = figures.changes(first_totals, columns)
    assert {k: changes[k] for k in expected} == expected
    assert changes["previous_version"] == 1 and changes["changed"] > 0


def test_it_refuses_approving_a_draft(incident, support, manager):
    proposal = services.prepare_proposal(incident, acting_user=support)
    with pytest.raises(Refused, match="not submitted"):
        services.approve_proposal(proposal, acting_user=manager, fingerprint=proposal.fingerprint)


def test_it_refuses_approving_a_proposal_whose_snapshot_was_replaced(submitted, support, manager):
    starts_at = submitted.incident.tournament.starts_at
    import_doc(
        support, snapshot_doc(starts_at=starts_at, active_chips=[40_000, 30_000, 20_001, 9_999])
    )
    with pytest.raises(Refused, match="re-imported"):
        services.approve_proposal(submitted, acting_user=manager, fingerprint=submitted.fingerprint)
    assert Tournament.objects.get().frozen_at is None


def test_it_rejects_with_a_reason(submitted, manager, support):
    with pytest.raises(PermissionDenied):
        services.reject_proposal(submitted, acting_user=support, reason="no")
    with pytest.raises(Refused, match="reason is required"):
        services.reject_proposal(submitted, acting_user=manager, reason="")
    services.reject_proposal(submitted, acting_user=manager, reason="chip counts look stale")
    assert submitted.status == "rejected" and submitted.rejection_reason == (
        "chip counts look stale"
    )
    assert AuditEvent.objects.get(action="proposal.rejected").reason == "chip counts look stale"
    with pytest.raises(Refused):
        services.reject_proposal(submitted, acting_user=manager, reason="again")


def test_it_replays_a_proposal_and_notices_a_rewritten_line(submitted, capsys):
    result = services.replay_proposal(submitted)
    assert result.matches and result.stored_fingerprint == result.recomputed_fingerprint
    call_command("replay_proposal", submitted.pk)
    assert "OK" in capsys.readouterr().out

    # Someone moves a cent from one entry to another directly in the database (a superuser
    # with the immutability trigger switched off).
    line = submitted.lines.get(position=0)
    with triggers_off():
        PayoutLine.objects.filter(pk=line.pk).update(
            chip_equity_cents=line.chip_equity_cents + 1, total_cents=line.total_cents + 1
        )
    result = services.replay_proposal(submitted)
    assert not result.matches
    assert any("line 1 (e1) chip_equity" in d for d in result.differences)
    with pytest.raises(CommandError, match="does NOT match"):
        call_command("replay_proposal", submitted.pk)


def test_the_replay_command_names_the_policy_version_it_recomputed_under(
    submitted, capsys, manager, other_manager
):
    """An auditor replaying on the command line after the policy changed reads under which
    version the cents were recomputed (the stored one, not today's), as the replay page says."""
    from tests.support.factories import approved_policy_version

    approved_policy_version(other_manager, manager, policy_id="ultimatepoker-2026",
                            **{"full_refund.within_minutes": 240})  # fmt: skip
    call_command("replay_proposal", submitted.pk)
    out = capsys.readouterr().out
    assert f"policy version, ultimatepoker-2026 v1 ({submitted.policy_sha256[:12]}…)" in out, out


def test_replay_checks_the_fingerprint_the_audit_recorded_at_approval(submitted, manager):
    """Someone with the database's superuser rewrites an approved proposal consistently: its
    failure time (within 20 minutes of the start: a full refund), its lines, rule, totals and
    fingerprint, all as the engine computes them. The proposal then recomputes to itself; only
    the tamper-evident audit still holds the fingerprint the manager approved, and the replay
    must compare with it."""
    proposal = services.approve_proposal(
        submitted, acting_user=manager, fingerprint=submitted.fingerprint
    )
    assert services.replay_proposal(proposal).matches
    started = parse_snapshot(proposal.snapshot.document, stored=True).starts_at.at
    failed_at = started + timezone.timedelta(minutes=10)
    forged = services._compute(
        parse_snapshot(proposal.snapshot.document, stored=True),
        failed_at,
        proposal.site_wide_issue,
        proposal.policy_version,
    )
    assert forged.rule == "full_refund" and forged.fingerprint() != proposal.fingerprint
    with triggers_off():
        for position, line in enumerate(forged.lines):
            PayoutLine.objects.filter(proposal=proposal, position=position).update(
                **{
                    column: services.payments_json(getattr(line, attr))
                    if attr == "refunds"
                    else getattr(line, attr)
                    for column, attr in services._LINE_FIELDS
                }
            )
        PayoutProposal.objects.filter(pk=proposal.pk).update(
            failed_at=failed_at,
            rule=forged.rule,
            fingerprint=forged.fingerprint(),
            approved_fingerprint=forged.fingerprint(),
            total_cents=sum(line.total for line in forged.lines),
        )
    proposal.refresh_from_db()
    result = services.replay_proposal(proposal)
    assert not result.matches
    assert any("the audit recorded" in d for d in result.differences), result.differences


def test_it_replays_against_the_stored_document_not_the_current_one(submitted):
    # A rewritten snapshot document no longer matches its SHA-256.
    rewritten = submitted.snapshot.document.replace("40000", "40001")
    Snapshot.objects.filter(pk=submitted.snapshot_id).update(
        document_zlib=zlib.compress(rewritten.encode())
    )
    submitted.refresh_from_db()
    result = services.replay_proposal(submitted)
    assert not result.matches
    assert any("SHA-256" in d for d in result.differences)


def test_a_snapshot_an_earlier_release_accepted_is_still_prepared_and_replayed(
    support, monkeypatch
):
    """Earlier releases read a space for the T of a time, which an import now refuses: the
    documents they stored are still read, prepared from and replayed as they were accepted."""
    doc = snapshot_doc("OLD-1")
    doc["tournament"]["starts_at"] = doc["tournament"]["starts_at"].replace("T", " ")
    with pytest.raises(Refused, match="space"):
        import_doc(support, doc=doc)
    # The earlier release's import: its parse read the space.
    monkeypatch.setattr(
        tournaments,
        "parse_snapshot",
        lambda document, **kw: parse_snapshot(document, **kw, stored=True),
    )
    incident = cancelled_incident(support, doc=doc)
    monkeypatch.undo()
    # Stored before the parsed form existed: read again from its document.
    Snapshot.objects.filter(tournament=incident.tournament).update(parsed=None)
    tournaments._PARSED.clear()
    proposal = services.prepare_proposal(incident, acting_user=support)
    assert proposal.lines.count() == len(doc["entries"])
    result = services.replay_proposal(proposal)
    assert result.matches, result.differences


def test_it_explains_an_entrys_payout(submitted):
    line = submitted.lines.get(entry_id="e1")
    text = services.statement(submitted, "e1")
    total = f"${line.total_cents // 100:,}.{line.total_cents % 100:02d}"
    assert "e1" in text and total in text
    with pytest.raises(Refused, match="not part of proposal"):
        services.statement(submitted, "nobody")


def test_it_stamps_the_approval_time(submitted, manager):
    before = timezone.now()
    services.approve_proposal(submitted, acting_user=manager, fingerprint=submitted.fingerprint)
    assert before <= submitted.approved_at <= timezone.now()
