"""Payout proposals: prepare, submit, approve (four eyes), reject, replay, explain.

Compute, preview, then perform: the engine computes a proposal from the stored snapshot and the
incident's timing; its lines, summary, warnings and fingerprint are stored; a manager approves
quoting the fingerprint they saw; posting pays exactly the stored lines.

Preparing again (the snapshot was re-imported, a site-wide issue was confirmed) creates the
next version, a draft to be submitted again, and marks the live one (draft or already submitted)
superseded: it is kept, lines and all, so that "What changed" compares with it, and an approval
quoting its numbers is refused. An approved proposal is never replaced. A rejected proposal
stays as it was and preparing again creates the next version too.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from functools import partial
from operator import itemgetter
from typing import TYPE_CHECKING, Any, NamedTuple, TypeVar

from django.core.exceptions import PermissionDenied
from django.db import connection, transaction
from django.db.models import Max
from django.utils import timezone

from refunds_admin.accounts.roles import CAN_DECIDE, CAN_PREPARE, require_role
from refunds_admin.audit.models import AuditEvent
from refunds_admin.audit.services import record
from refunds_admin.db import Same, copy_into_partition, fetch_beside, insert_columns
from refunds_admin.errors import Refused, required_text
from refunds_admin.incidents.models import Incident
from refunds_admin.incidents.services import rule_sentence
from refunds_admin.payouts import (
    Proposal,
    Snapshot,
    SnapshotError,
    compute_proposal,
    explain,
    parse_snapshot,
    paused_gc,
)
from refunds_admin.payouts.rules import LineColumns
from refunds_admin.policies.models import PolicyVersion
from refunds_admin.recent import Recent
from refunds_admin.tournaments.models import Snapshot as SnapshotRow
from refunds_admin.tournaments.models import Tournament
from refunds_admin.tournaments.services import current_snapshot, engine_snapshot, payments_json

from . import figures as proposal_figures
from .lines import entry_line, stored_fingerprint
from .models import LINE_PARTITION_INDEXES, NOT_LIVE, PayoutLine, PayoutProposal
from .posting_order import configured_wallet, queue_posting

if TYPE_CHECKING:
    from datetime import datetime

    from django.contrib.auth.models import User

    from refunds_admin.payouts.policy import Policy

_T = TypeVar("_T")

Status = PayoutProposal.Status
# Once approved, a proposal is what gets paid: nothing may replace it.
DECIDED = (Status.APPROVED, Status.POSTING, Status.POSTED, Status.FAILED)


class RulesCannotApply(Refused):
    """The payout rules refuse this snapshot under this policy (rule 2 with fewer than two
    active entries, a guaranteed part above first prize, a pool smaller than the guaranteed
    parts): nothing typed is wrong, a manager must decide how the players are paid."""


class ReplayResult(NamedTuple):
    matches: bool
    stored_fingerprint: str
    recomputed_fingerprint: str
    differences: list[str]


# --------------------------------------------------------------------------------------------
# Computing
# --------------------------------------------------------------------------------------------


def _compute(
    parsed: Snapshot, failed_at: datetime, site_wide_issue: bool, policy_version: PolicyVersion
) -> Proposal:
    """The engine's proposal under the given policy version (the tournament's when preparing,
    the stored one when replaying)."""
    try:
        return compute_proposal(
            parsed,
            failed_at=failed_at,
            site_wide_issue=site_wide_issue,
            policy=policy_version.engine(),
        )
    except SnapshotError as e:
        raise RulesCannotApply(
            "The payout rules cannot be applied to this snapshot automatically.",
            problems=[(p.field, p.message) for p in e.problems],
        ) from None


def _summary_for_storage(result: Proposal) -> dict[str, str | int]:
    """The payout-proposal/1 summary (amounts as strings), formatted by the engine itself;
    the lines are left out of that document because they are stored as rows."""
    return result.to_json(with_fingerprint=False, with_lines=False)["summary"]


# A line's stored fields in the engine's column order (LineColumns, whose screen name is left
# to the entry at the same position: PayoutLine).
LINE_FIELDS = (
    "entry_id",
    "player_id",
    "status",
    "chips",
    "buy_in_refund_cents",
    "next_prize_cents",
    "chip_equity_cents",
    "fee_refund_cents",
    "total_cents",
    "capped",
    "equal_share_cents",
    "bounty_refund_cents",
    "refunds",
)
_LINE_COLUMNS = ("proposal_id", "position", *LINE_FIELDS[:-3])


def _insert_lines(
    proposal: PayoutProposal, columns: LineColumns, *, meanwhile: Callable[[], _T]
) -> _T:
    """Write the proposal's lines in snapshot order (COPY on PostgreSQL), from the engine's
    columns. The policy's components a proposal does not use (no equal share, no bounty,
    nothing returned otherwise than in cash: most proposals) are not written: they keep their
    database defaults, and the COPY carries what it always did."""
    c = columns
    names = list(_LINE_COLUMNS)
    data = [
        Same(proposal.pk), range(len(c.entry_id)), c.entry_id, c.player_id, c.status, c.chips,
        c.buy_in_refund, c.next_prize, c.chip_equity, c.fee_refund, c.total, c.capped,
    ]  # fmt: skip
    for name, column in (
        ("equal_share_cents", c.equal_share),
        ("bounty_refund_cents", c.bounty_refund),
    ):
        if any(column):
            names.append(name)
            data.append(column)
    if c.has_refunds:
        names.append("refunds")
        data.append(list(map(payments_json, c.refunds)))
    if connection.vendor == "postgresql":
        # The proposal's own partition, indexed after the COPY; it replaces the lines of the
        # proposal prepared before, if any (refunds_admin/db/, docs/performance.md).
        return copy_into_partition(
            PayoutLine,
            "proposal_id",
            proposal.pk,
            names,
            data,
            meanwhile=meanwhile,
            local_indexes=LINE_PARTITION_INDEXES,
        )
    PayoutLine.objects.filter(proposal=proposal)._raw_delete(proposal._state.db)
    return insert_columns(PayoutLine, names, data, meanwhile=meanwhile)


def _stale_reasons(
    proposal: PayoutProposal, incident: Incident, tournament: Tournament
) -> list[str]:
    """Why the proposal no longer describes the current facts (empty when it does)."""
    reasons = []
    if tournament.current_snapshot_id != proposal.snapshot_id:
        reasons.append("the tournament's snapshot was re-imported after this proposal was prepared")
    if incident.failed_at != proposal.failed_at:
        reasons.append("the incident's failure time changed after this proposal was prepared")
    if incident.site_wide_issue != proposal.site_wide_issue:
        reasons.append("a site-wide issue was confirmed after this proposal was prepared")
    if tournament.policy_version_id != proposal.policy_version_id:
        reasons.append(
            f"it was computed under policy {proposal.policy_id} v{proposal.policy_version_number}"
            f", which is no longer the tournament's ({tournament.policy_version.label} applies now)"
        )
    return reasons


def out_of_date_reasons(proposal: PayoutProposal) -> list[str]:
    """Why a draft or submitted proposal no longer describes the current facts: submitting or
    approving it would be refused for these reasons (`_refuse_if_stale`), so the proposal and
    approval pages say them before anyone types a password or a code. Empty for a current
    proposal and for one already decided."""
    if proposal.status not in (Status.DRAFT, Status.SUBMITTED):
        return []
    incident = proposal.incident
    return _stale_reasons(proposal, incident, incident.tournament)


def _refuse_if_stale(
    proposal: PayoutProposal, incident: Incident, tournament: Tournament, doing: str
) -> None:
    reasons = _stale_reasons(proposal, incident, tournament)
    if reasons:
        raise Refused(
            f"Proposal {proposal.pk} cannot be {doing}: {'; '.join(reasons)}. Prepare it again."
        )


def _rule_chosen_by(incident: Incident, tournament: Tournament) -> dict[str, int | None]:
    """The managers whose decisions chose this proposal's rule (PayoutProposal.RULE_CHOOSERS):
    recorded on the proposal so that none of them approves it (four eyes)."""
    not_resumable = incident.cancelled_because == Incident.CancelledBecause.NOT_RESUMABLE
    return {
        "site_wide_confirmed_by_id": incident.site_wide_confirmed_by_id
        if incident.site_wide_issue
        else None,
        "declared_not_resumable_by_id": incident.closed_by_id if not_resumable else None,
        # The manager who changed the tournament's policy chose the rule as much as a finding.
        "policy_changed_by_id": tournament.policy_changed_by_id,
        # So did the manager who added it to an outage after the outage's finding.
        "site_wide_applied_by_id": incident.site_wide_applied_by_id
        if incident.site_wide_issue
        else None,
    }


def _facts(p: PayoutProposal) -> dict[str, str | int]:
    return {
        "status": p.status,
        "version": p.version,
        "fingerprint": p.fingerprint,
        "rule": p.rule,
        "total": p.total_cents,
        "currency": p.currency,
        "lines": p.lines_count,
    }


# --------------------------------------------------------------------------------------------
# State changes
# --------------------------------------------------------------------------------------------


def _supersede(live: PayoutProposal, *, acting_user: User, tournament: Tournament) -> None:
    """Prepared again: the live draft (or submission) is kept, superseded, with its lines, so
    that the new version's "What changed" compares with it and the history shows both."""
    changed = PayoutProposal.objects.filter(
        pk=live.pk, status__in=[Status.DRAFT, Status.SUBMITTED]
    ).update(status=Status.SUPERSEDED)
    if not changed:
        raise Refused(f"Proposal {live.pk} was decided at the same time; reload it.")
    record(
        "proposal.superseded",
        live,
        actor=acting_user,
        tournament=tournament,
        before={"status": live.status},
        after={"status": Status.SUPERSEDED.value},
    )


@transaction.atomic
@paused_gc()  # 100k lines of small objects and no cycles (see tournaments.services)
def prepare_proposal(
    incident: Incident, *, acting_user: User, keep_current_submission: bool = False
) -> PayoutProposal:
    """Compute the proposal for a cancelled incident from the tournament's current snapshot and
    store it as a draft: a new version, superseding a live draft or submitted one (kept, to
    show what changed). `keep_current_submission`: refuse instead when the live proposal is
    submitted and up to date (what the incident page offers; a page opened before the
    submission must not pull it back from the manager)."""
    require_role(acting_user, CAN_PREPARE, "prepare proposals")
    # Locks in the one order used everywhere: tournament -> incident -> proposal -> job.
    tournament = Tournament.objects.select_for_update().get(pk=incident.tournament_id)
    incident = Incident.objects.select_for_update().get(pk=incident.pk)
    if incident.status != Incident.Status.CANCELLED:
        raise Refused(
            f"Incident {incident.pk} is {incident.get_status_display().lower()}: a proposal is "
            "prepared only once the tournament is cancelled."
        )
    if tournament.frozen_at is not None:
        raise Refused(
            f"Tournament {tournament.external_id} is frozen: a proposal was already approved."
        )
    snapshot = current_snapshot(tournament)
    live = (
        PayoutProposal.objects.select_for_update()
        .filter(incident=incident)
        .exclude(status__in=NOT_LIVE)
        .first()
    )
    if live is not None and live.status in DECIDED:
        raise Refused(
            f"Proposal {live.pk} is {live.status}: an approved proposal is never replaced."
        )
    if (
        keep_current_submission
        and live is not None
        and live.status == Status.SUBMITTED
        and not _stale_reasons(live, incident, tournament)
    ):
        raise Refused(
            f"Proposal v{live.version} was submitted and is waiting for a manager's approval; "
            "it is up to date, so it is not prepared again. To change it, withdraw the "
            "submission (its submitter) or have a manager reject it."
        )

    before = None
    if live is not None:
        before = _facts(live)
        _supersede(live, acting_user=acting_user, tournament=tournament)
    version = (incident.proposals.aggregate(v=Max("version"))["v"] or 0) + 1
    previous = incident.proposals.filter(version__lt=version).order_by("-version").first()
    parsed = engine_snapshot(snapshot)
    policy_version = tournament.policy_version
    compute = partial(
        _compute, parsed, incident.failed_at, incident.site_wide_issue, policy_version
    )
    # What changed since the version before (usually the superseded or rejected one), for the
    # approver: its lines are read while the engine computes this one (the database and Python
    # at once, refunds_admin/db/beside.py). Computed from the same snapshot version (the usual
    # case), its lines are this one's entries position for position: its totals in that order
    # are enough, compared in C passes (figures.changes_by_position). Otherwise its entries are
    # matched by entry id.
    same_entries = (
        previous is not None
        and previous.snapshot_id == snapshot.pk
        and previous.lines_count == len(parsed.columns.entry_id)
    )
    old_totals: list[int] = []
    old: dict[str, int] = {}
    if previous is None:
        result = compute()
    elif same_entries:
        totals = previous.lines.order_by("position").values_list("total_cents")
        rows, result = fetch_beside(*totals.query.sql_with_params(), compute)
        old_totals = list(map(itemgetter(0), rows))
    else:
        by_entry = previous.lines.order_by().values_list("entry_id", "total_cents")
        rows, result = fetch_beside(*by_entry.query.sql_with_params(), compute)
        old = dict(rows)
    fields = {
        "snapshot": snapshot,
        "status": Status.DRAFT,
        "rule": result.rule,
        "currency": result.currency,
        "failed_at": incident.failed_at,
        "site_wide_issue": incident.site_wide_issue,
        "policy_version": policy_version,
        "policy_id": policy_version.policy_id,
        "policy_version_number": policy_version.version,
        "policy_sha256": policy_version.sha256,
        "summary": _summary_for_storage(result),
        "warnings": list(result.warnings),
        "fingerprint": "",  # computed while the lines are indexed, below
        "total_cents": result.summary["total"],
        "lines_count": len(result.columns.entry_id),
        "prepared_by": acting_user,
        "prepared_at": timezone.now(),
        **_rule_chosen_by(incident, tournament),
        # Who supplied the facts it was computed from (four eyes: PayoutProposal.FACT_SUPPLIERS).
        "snapshot_imported_by_id": snapshot.imported_by_id,
        "failure_recorded_by_id": incident.recorded_by_id,
        "submitted_by": None,
        "submitted_at": None,
        "figures": {},  # computed while the lines are indexed, below
    }
    proposal = PayoutProposal.objects.create(incident=incident, version=version, **fields)

    def figures_and_fingerprint() -> tuple[dict[str, Any], str]:
        # Pure computation, run while PostgreSQL builds the lines' indexes (refunds_admin/db/).
        figures = _figures(result, parsed, snapshot, policy_version.engine())
        if previous is not None:
            figures["changes"] = (
                proposal_figures.changes_by_position(old_totals, result.columns)
                if same_entries
                else proposal_figures.changes(old, result.columns)
            ) | {
                "previous_version": previous.version,
                "previous_id": previous.pk,
                "previous_status": previous.status,
                "previous_rule": previous.rule,
            }
        return figures, result.fingerprint()

    proposal.figures, proposal.fingerprint = _insert_lines(
        proposal, result.columns, meanwhile=figures_and_fingerprint
    )
    PayoutProposal.objects.filter(pk=proposal.pk).update(
        figures=proposal.figures, fingerprint=proposal.fingerprint
    )
    record(
        "proposal.prepared",
        proposal,
        actor=acting_user,
        tournament=tournament,
        before=before,
        after=_facts(proposal)
        | {"snapshot_version": snapshot.version, "policy": policy_version.label},
        # No player_ids: the lines name the players, and the history finds this event through
        # them (web/queries.audit_events).
    )
    return proposal


def _figures(
    result: Proposal, parsed: Snapshot, snapshot: SnapshotRow, policy: Policy
) -> dict[str, Any]:
    """The approver's figures (see figures.py) and the rule's sentence, as the incident
    preview words it."""
    figures = proposal_figures.from_columns(
        result.columns, rule=result.rule, currency=result.currency, summary_cents=result.summary
    )
    figures["rule_sentence"] = rule_sentence(
        result.rule,
        elapsed_seconds=float(result.elapsed_seconds),
        site_wide_issue=result.site_wide_issue,
        entries=snapshot.entries_count,
        active=snapshot.active_count,
        paid_places=parsed.last_paid_place,
        policy=policy,
        knockout=parsed.is_knockout,
        rebuys=parsed.has_rebuys,
    )
    figures["elapsed_seconds"] = int(result.elapsed_seconds)
    figures["snapshot_version"] = snapshot.version
    return figures


def _locked(proposal: PayoutProposal) -> PayoutProposal:
    """The proposal re-read under its row lock only (`of=self`: locking the joined incident and
    tournament rows here too would take them after the proposal, against the one lock order
    tournament -> incident -> proposal -> job, and deadlock with prepare or approve)."""
    return (
        PayoutProposal.objects.select_for_update(of=("self",))
        .select_related("incident", "incident__tournament")
        .get(pk=proposal.pk)
    )


def _require_status(proposal: PayoutProposal, status: str, doing: str) -> None:
    if proposal.status != status:
        raise Refused(
            f"Proposal {proposal.pk} is {proposal.get_status_display().lower()}, not "
            f"{Status(status).label.lower()}: cannot {doing} it."
        )


def _sync(proposal: PayoutProposal) -> PayoutProposal:
    proposal.refresh_from_db()
    return proposal


@transaction.atomic
def submit_proposal(proposal: PayoutProposal, *, acting_user: User) -> PayoutProposal:
    """Send a draft to the managers for approval."""
    require_role(acting_user, CAN_PREPARE, "submit proposals")
    fresh = _locked(proposal)
    _require_status(fresh, Status.DRAFT, "submit")
    _refuse_if_stale(fresh, fresh.incident, fresh.incident.tournament, "submitted")
    changed = PayoutProposal.objects.filter(pk=fresh.pk, status=Status.DRAFT).update(
        status=Status.SUBMITTED, submitted_by=acting_user, submitted_at=timezone.now()
    )
    if not changed:
        raise Refused(f"Proposal {fresh.pk} changed at the same time; reload it.")
    record(
        "proposal.submitted",
        fresh,
        actor=acting_user,
        tournament=fresh.incident.tournament,
        before={"status": "draft"},
        after={"status": "submitted", "fingerprint": fresh.fingerprint},
    )
    return _sync(proposal)


@transaction.atomic
def approve_proposal(
    proposal: PayoutProposal, *, acting_user: User, fingerprint: str, second_factor: str = ""
) -> PayoutProposal:
    """A second person's approval: a manager the proposal does not rest on (four eyes:
    PayoutProposal.why_not_decided_by), quoting the fingerprint they saw. Freezes the tournament's snapshot and schedules posting in
    the same transaction (the posting job starts only after commit)."""
    require_role(acting_user, CAN_DECIDE, "approve proposals")
    # Locks in the one order used everywhere: tournament -> incident -> proposal -> job.
    tournament = Tournament.objects.select_for_update().get(pk=proposal.incident.tournament_id)
    Incident.objects.select_for_update().filter(pk=proposal.incident_id).first()
    fresh = _locked(proposal)
    why_not = fresh.why_not_decided_by(acting_user)
    if why_not:
        raise PermissionDenied(why_not)
    _require_status(fresh, Status.SUBMITTED, "approve")
    if (fingerprint or "").strip().lower() != fresh.fingerprint:
        raise Refused(
            f"Proposal {fresh.pk} is not the one you reviewed: its fingerprint is "
            f"{fresh.fingerprint[:12]}…, you quoted {(fingerprint or '')[:12] or 'none'}. "
            "Review it again."
        )
    tournament.refresh_from_db()
    _refuse_if_stale(fresh, fresh.incident, tournament, "approved")
    # The lines as stored must still be the ones fingerprinted (posting checks them again):
    # lines rewritten behind the app's back are refused before anyone approves them.
    stored, stored_lines = stored_fingerprint(fresh)
    if stored != fresh.fingerprint or stored_lines != fresh.lines_count:
        raise Refused(
            f"Proposal {fresh.pk}'s stored lines no longer match its fingerprint: they were "
            "changed after it was prepared. Nothing was approved; replay it and prepare it again."
        )
    now = timezone.now()
    # The posting order: the wallet this approval pays into, as this process is configured.
    wallet, wallet_identity = configured_wallet()
    changed = PayoutProposal.objects.filter(
        pk=fresh.pk, status=Status.SUBMITTED, fingerprint=fresh.fingerprint
    ).update(
        status=Status.APPROVED,
        approved_by=acting_user,
        approved_at=now,
        approved_fingerprint=fresh.fingerprint,
        wallet=wallet,
        wallet_identity=wallet_identity,
    )
    if not changed:
        raise Refused(f"Proposal {fresh.pk} was decided at the same time; reload it.")
    # From now on the snapshot this proposal was computed from is the one that counts.
    Tournament.objects.filter(pk=tournament.pk, frozen_at__isnull=True).update(frozen_at=now)
    record(
        "proposal.approved",
        fresh,
        actor=acting_user,
        tournament=tournament,
        before={"status": "submitted"},
        after={
            "status": "approved",
            "fingerprint": fresh.fingerprint,
            "total": fresh.total_cents,
            "currency": fresh.currency,
            "wallet": wallet,
            "wallet_identity": wallet_identity,
            # How the approver confirmed it was them (accounts.mfa.evidence), for the auditor.
            **({"second_factor": second_factor} if second_factor else {}),
        },
        # The players this approval credits, so that the history can be searched by player.
        player_ids=dict.fromkeys(
            PayoutLine.objects.filter(proposal=fresh, total_cents__gt=0)
            .order_by("position")
            .values_list("player_id", flat=True)
            .iterator(chunk_size=10_000)
        ),
    )
    proposal = _sync(proposal)
    # The transactional outbox: the order to pay is this approved row (wallet included); the
    # ledger's task is queued by name once it has committed, and the ledger's sweeper queues
    # it again if the broker was down.
    transaction.on_commit(partial(queue_posting, proposal.pk))
    return proposal


@transaction.atomic
def reject_proposal(proposal: PayoutProposal, *, acting_user: User, reason: str) -> PayoutProposal:
    """A manager sends a submitted proposal back with a reason; it may be prepared again as a
    new version."""
    require_role(acting_user, CAN_DECIDE, "reject proposals")
    reason = required_text(reason, "reason")
    fresh = _locked(proposal)
    why_not = fresh.why_not_rejected_by(acting_user)
    if why_not:
        raise PermissionDenied(why_not)
    _require_status(fresh, Status.SUBMITTED, "reject")
    changed = PayoutProposal.objects.filter(pk=fresh.pk, status=Status.SUBMITTED).update(
        status=Status.REJECTED,
        rejected_by=acting_user,
        rejected_at=timezone.now(),
        rejection_reason=reason,
    )
    if not changed:
        raise Refused(f"Proposal {fresh.pk} was decided at the same time; reload it.")
    record(
        "proposal.rejected",
        fresh,
        actor=acting_user,
        tournament=fresh.incident.tournament,
        before={"status": "submitted"},
        after={"status": "rejected"},
        reason=reason,
    )
    return _sync(proposal)


@transaction.atomic
def withdraw_proposal(
    proposal: PayoutProposal, *, acting_user: User, reason: str = ""
) -> PayoutProposal:
    """The submitter takes a submission back (to correct it before anyone decides): the proposal
    returns to draft, to be submitted again."""
    require_role(acting_user, CAN_PREPARE, "withdraw proposals")
    fresh = _locked(proposal)
    _require_status(fresh, Status.SUBMITTED, "withdraw")
    if not fresh.may_be_withdrawn_by(acting_user):
        raise PermissionDenied(
            f"Only {fresh.submitted_by.get_username() if fresh.submitted_by else 'the submitter'}, "
            f"who submitted proposal {fresh.pk}, may withdraw it."
        )
    changed = PayoutProposal.objects.filter(
        pk=fresh.pk, status=Status.SUBMITTED, submitted_by=acting_user
    ).update(status=Status.DRAFT, submitted_by=None, submitted_at=None)
    if not changed:
        raise Refused(f"Proposal {fresh.pk} was decided at the same time; reload it.")
    record(
        "proposal.withdrawn",
        fresh,
        actor=acting_user,
        tournament=fresh.incident.tournament,
        before={"status": "submitted"},
        after={"status": "draft"},
        reason=(reason or "").strip(),
    )
    return _sync(proposal)


# --------------------------------------------------------------------------------------------
# Reading: replay and statements
# --------------------------------------------------------------------------------------------

_LINE_FIELDS = (
    ("entry_id", "entry_id"),
    ("player_id", "player_id"),
    ("chips", "chips"),
    ("buy_in_refund_cents", "buy_in_refund"),
    ("next_prize_cents", "next_prize"),
    ("chip_equity_cents", "chip_equity"),
    ("fee_refund_cents", "fee_refund"),
    ("total_cents", "total"),
    ("capped", "capped"),
    ("equal_share_cents", "equal_share"),
    ("bounty_refund_cents", "bounty_refund"),
    ("refunds", "refunds"),
)
MAX_DIFFERENCES = 20


def replay_proposal(proposal: PayoutProposal) -> ReplayResult:
    """Recompute the proposal from its stored snapshot document and timing, and compare.

    The auditor's check that history was not rewritten: the document must still match its
    SHA-256, the recomputed fingerprint must equal the stored one, and every stored line must
    equal the recomputed line.
    """
    snapshot = proposal.snapshot
    differences = []
    document = (
        snapshot.document
    )  # decompressed once: the record a replay reads, not the parsed form
    if hashlib.sha256(document.encode("utf-8")).hexdigest() != snapshot.sha256:
        differences.append(f"snapshot v{snapshot.version} no longer matches its SHA-256")
    version = proposal.policy_version
    if hashlib.sha256(version.document.encode("utf-8")).hexdigest() != version.sha256:
        differences.append(
            f"the stored policy version {version.label} no longer matches its SHA-256"
        )
    if (version.policy_id, version.version, version.sha256) != (
        proposal.policy_id,
        proposal.policy_version_number,
        proposal.policy_sha256,
    ):
        differences.append(
            f"the stored policy version {version.label} no longer matches the recorded "
            f"{proposal.policy_id} v{proposal.policy_version_number} ({proposal.policy_sha256[:12]}…)"
        )
    try:
        # Under the stored policy version, whatever applies to the tournament today; the
        # document read as it was accepted, whatever a later release refuses at import.
        result = _compute(
            parse_snapshot(document, stored=True),
            proposal.failed_at,
            proposal.site_wide_issue,
            version,
        )
    except Refused as e:
        differences.append(f"the stored snapshot is now refused: {e}")
        return ReplayResult(False, proposal.fingerprint, "", differences)
    except SnapshotError as e:
        differences.append(f"the stored snapshot is now refused: {e}")
        return ReplayResult(False, proposal.fingerprint, "", differences)
    if result.policy.sha256 != proposal.policy_sha256:
        differences.append(
            f"the policy recomputed under has SHA-256 {result.policy.sha256[:12]}…, the proposal "
            f"records {proposal.policy_sha256[:12]}…"
        )
    recomputed = result.fingerprint()
    if recomputed != proposal.fingerprint:
        differences.append("the recomputed fingerprint differs from the stored one")
    if result.rule != proposal.rule:
        differences.append(f"rule: stored {proposal.rule}, recomputed {result.rule}")
    if proposal.approved_fingerprint and proposal.approved_fingerprint != proposal.fingerprint:
        differences.append("the approved fingerprint differs from the stored one")
    differences += _audit_disagrees(proposal)
    stored = (
        PayoutLine.objects.filter(proposal=proposal)
        .order_by("position")
        .values_list(*(db for db, _ in _LINE_FIELDS))
        .iterator(chunk_size=5000)
    )
    count = 0
    for count, (row, line) in enumerate(zip(stored, result.lines, strict=False), start=1):
        for value, (_column, attr) in zip(row, _LINE_FIELDS, strict=True):
            computed = getattr(line, attr)
            if attr == "refunds":
                computed = payments_json(computed)
            if value != computed and len(differences) < MAX_DIFFERENCES:
                differences.append(
                    f"line {count} ({line.entry_id}) {attr}: stored {value}, recomputed {computed}"
                )
    if proposal.lines_count != len(result.lines) or count != len(result.lines):
        differences.append(
            f"lines: {proposal.lines_count} recorded, {count} stored, {len(result.lines)} recomputed"
        )
    return ReplayResult(not differences, proposal.fingerprint, recomputed, differences)


def _audit_disagrees(proposal: PayoutProposal) -> list[str]:
    """What the tamper-evident audit recorded of this proposal (the fingerprint it was last
    prepared with, the one its manager approved) and the stored row no longer agrees with. A
    proposal rewritten consistently behind the app's back (its facts, lines and fingerprint)
    recomputes to itself; the audit's hash chain (verify_audit) still holds what was decided."""
    found = []
    events = AuditEvent.objects.filter(
        object_type=PayoutProposal._meta.model_name,
        object_id=str(proposal.pk),
        action__in=("proposal.prepared", "proposal.approved"),
    ).order_by("-id")
    seen = set()
    for action, after in events.values_list("action", "after"):
        if action in seen or not isinstance(after, dict):
            continue
        seen.add(action)
        recorded = str(after.get("fingerprint") or "")
        if recorded and recorded != proposal.fingerprint:
            verb = "approved" if action == "proposal.approved" else "prepared"
            found.append(
                f"the audit recorded the proposal {verb} with fingerprint {recorded[:12]}…, "
                f"it now has {proposal.fingerprint[:12]}…"
            )
    if proposal.approved_at is not None and "proposal.approved" not in seen:
        found.append("the audit holds no approval of this approved proposal")
    return found


# The engine's proposal behind a stored one, for statements (a player's "why did I get this?").
_COMPUTED: Recent[tuple[int, str], Proposal] = Recent(size=2)


def _engine_proposal(proposal: PayoutProposal) -> Proposal:
    def recompute() -> Proposal:
        result = _compute(
            engine_snapshot(proposal.snapshot),
            proposal.failed_at,
            proposal.site_wide_issue,
            proposal.policy_version,
        )
        if result.fingerprint() != proposal.fingerprint:
            raise Refused(
                f"Proposal {proposal.pk} no longer recomputes to its stored fingerprint; "
                "replay it for details."
            )
        return result

    return _COMPUTED.get((proposal.pk, proposal.fingerprint), recompute)


def statement(proposal: PayoutProposal, entry_id: str) -> str:
    """The entry's statement in the policy's layout (the same text as `compute_payouts
    --explain`), computed from the stored snapshot and checked against the stored fingerprint."""
    if not entry_line(proposal, entry_id).exists():
        raise Refused(f"Entry {entry_id!r} is not part of proposal {proposal.pk}.")
    return explain(_engine_proposal(proposal), entry_id)


def statement_maker(proposal):
    """A function entry_id -> statement text for this proposal (the same text as `statement`),
    computing the proposal once: statements for every player of a posting use it."""
    engine = _engine_proposal(proposal)
    return lambda entry_id: explain(engine, entry_id)
