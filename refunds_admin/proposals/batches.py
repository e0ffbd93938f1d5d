"""Outage batches: prepare every proposal of an outage in one job, review them on one page,
approve them at once.

Batch prepare runs `prepare_proposal` and `submit_proposal` for each cancelled tournament of the
outage, one transaction per tournament, so a refused snapshot is listed with its reasons and the
others go on. Running it again prepares only what is missing or stale.

Batch approval quotes one outage fingerprint (SHA-256 over the sorted fingerprints of the
proposals on the page) and the fingerprint of each proposal as it was shown; it runs
`approve_proposal` for each proposal in one transaction, so a stale or changed proposal, or one
the manager prepared or submitted, refuses the whole batch and names the proposals concerned.
"""

import hashlib
import logging
import time
from collections import defaultdict
from functools import partial

from django.conf import settings
from django.core.exceptions import PermissionDenied
from django.db import IntegrityError, transaction
from django.db.models import Count, F

from refunds_admin.accounts.roles import CAN_DECIDE, CAN_PREPARE, require_role
from refunds_admin.audit.services import record
from refunds_admin.errors import Refused
from refunds_admin.incidents.models import Incident
from refunds_admin.jobs import errors as dberrors
from refunds_admin.jobs.clock import db_now, now_expr
from refunds_admin.jobs.heartbeat import beating
from refunds_admin.jobs.runtime import enqueue, enqueue_on_commit, enqueue_once
from refunds_admin.outages.models import Outage
from refunds_admin.outages.services import incidents_of
from refunds_admin.tournaments.models import Tournament

from . import services
from .models import NOT_LIVE, PREPARE_JOBS, OutagePrepareResult, OutagePrepareRun, PayoutProposal

log = logging.getLogger(__name__)

Status = PayoutProposal.Status
Outcome = OutagePrepareResult.Outcome
RunState = OutagePrepareRun.State


def outage_fingerprint(fingerprints):
    """SHA-256 over the sorted per-proposal fingerprints, one per line: the one value a manager
    quotes to approve a batch."""
    text = "\n".join(sorted(fingerprints))
    return hashlib.sha256(text.encode("ascii")).hexdigest()


def live_proposals(outage):
    """The live (not rejected) proposal of each tournament of the outage, by tournament id."""
    return (
        PayoutProposal.objects.filter(incident__outage_membership__outage=outage)
        .exclude(status__in=NOT_LIVE)
        .select_related("incident__tournament", "prepared_by", "submitted_by", "approved_by")
        .order_by("incident__tournament__external_id", "pk")
    )


# --------------------------------------------------------------------------------------------
# Batch prepare
# --------------------------------------------------------------------------------------------


@transaction.atomic
def start_prepare(outage, *, acting_user):
    """Queue the batch prepare of the outage (after commit). A run already queued or running
    is returned as it is: one run at a time per outage. A stalled one (its worker died) is
    queued again: whoever claims it first continues it where it stopped."""
    require_role(acting_user, CAN_PREPARE, "prepare proposals")
    outage = Outage.objects.select_for_update().get(pk=outage.pk)
    running = outage.prepare_runs.filter(state__in=[RunState.QUEUED, RunState.RUNNING]).first()
    if running is not None:
        if running.state == RunState.QUEUED or PREPARE_JOBS.stalled().filter(pk=running.pk):
            # Its message may be lost or its worker dead: queue it again (claiming is safe).
            enqueue_on_commit(PREPARE_TASK, running.pk)
        return running
    total = incidents_of(outage).count()
    if not total:
        raise Refused(f"Outage {outage.pk} has no tournament.")
    run = OutagePrepareRun.objects.create(
        outage=outage, total=total, requested_by=acting_user, requested_at=db_now()
    )
    record(
        "outage.prepare_started",
        outage,
        actor=acting_user,
        after={"run": run.pk, "tournaments": total},
    )
    transaction.on_commit(partial(kick_prepare, run.pk))
    return run


PREPARE_TASK = "proposals.prepare_outage"
PREPARE_PART_TASK = "proposals.prepare_outage_part"


def kick_prepare(run_id):
    """Queue the job. Never raises: with the broker down the run stays queued (it is its own
    outbox row) and the sweeper, or starting the batch prepare again, queues it again."""
    return enqueue(PREPARE_TASK, run_id)


def sweep_prepare():
    """The sweeper: queue again every run lost in the queue or stalled (its worker was killed),
    judged on the database's clock; each at most once per stale period (its message expires
    then), so a busy worker does not find the same run queued many times. Returns the run ids
    queued."""
    queued = []
    period = settings.OUTAGE_PREPARE_STALE_AFTER
    for run_id in PREPARE_JOBS.stale().values_list("pk", flat=True):
        if enqueue_once(PREPARE_TASK, run_id, within=period):
            log.info("sweeper: queueing batch prepare run %s again", run_id)
            queued.append(run_id)
    return queued


def _claim(run_id):
    """Compare-and-set queued -> running (or a stalled run -> running again): a message
    delivered twice runs once, and a run whose worker died is continued where it stopped."""
    return PREPARE_JOBS.claim(pk=run_id)


def _heartbeat_every():
    """A fifth of the stale period: four heartbeats may be missed before the run is stalled."""
    return max(0.5, settings.OUTAGE_PREPARE_STALE_AFTER / 5)


RULES_NEXT_STEP = (
    "a manager puts the tournament under a policy version that can be applied (Change the "
    "policy, on its tournament page), or confirms management's finding for the outage (on this "
    "page: rule 1, a full refund, for every tournament); if the snapshot's prize table is wrong, "
    "import the corrected snapshot. Then prepare every proposal again."
)


def _prepare_one(incident, user):
    """(outcome, proposal, message, problems) for one tournament; each change in its own
    transaction so that a refusal leaves the others alone."""
    if incident.status != Incident.Status.CANCELLED:
        word = "play resumed" if incident.status == Incident.Status.RESUMED else "still open"
        return Outcome.SKIPPED, None, f"Not cancelled ({word}): nothing to prepare.", []
    live = (
        PayoutProposal.objects.filter(incident=incident)
        .exclude(status__in=NOT_LIVE)
        .select_related("incident__tournament")
        .first()
    )
    stale = services._stale_reasons(live, live.incident, live.incident.tournament) if live else []
    try:
        with transaction.atomic():
            if live is not None and live.status in services.DECIDED:
                return Outcome.UNCHANGED, live, f"Already {live.get_status_display().lower()}.", []
            if live is not None and not stale and live.status == Status.SUBMITTED:
                return Outcome.UNCHANGED, live, "Submitted and up to date.", []
            if live is None or stale:
                live = services.prepare_proposal(incident, acting_user=user)
            live = services.submit_proposal(live, acting_user=user)
    except services.RulesCannotApply as exc:
        # Nothing typed is wrong: someone must decide how these players are paid (as the
        # incident page says after the same refusal).
        problems = [[w, m] for w, m in exc.problems] + [["what to do", RULES_NEXT_STEP]]
        return Outcome.REFUSED, None, exc.message, problems
    except Refused as exc:
        return Outcome.REFUSED, None, exc.message, [[w, m] for w, m in exc.problems]
    message = (
        "Prepared again: " + "; ".join(stale)
        if stale
        else f"Version {live.version} is waiting for a manager's approval."
    )
    return Outcome.PREPARED, live, message, []


# Per tournament, the fixed cost of preparing and submitting (queries, audit events) weighs about
# as much as this many lines; used to share the tournaments fairly between the parts of a run.
_TOURNAMENT_WEIGHT = 1500


def _split(incidents, parts):
    """Share the incidents between `parts` lists of about equal work (lines plus a fixed cost
    per tournament), the biggest first, so that two 100k-entry tournaments land apart."""
    loads: list[tuple[int, int, list[int]]] = [(0, i, []) for i in range(parts)]
    weighted = sorted(
        incidents,
        key=lambda i: (
            -(i.tournament.current_snapshot.entries_count if i.tournament.current_snapshot else 0)
        ),
    )
    for incident in weighted:
        snapshot = incident.tournament.current_snapshot
        weight, index, ids = min(loads)
        ids.append(incident.pk)
        loads[index] = (
            weight + (snapshot.entries_count if snapshot else 0) + _TOURNAMENT_WEIGHT,
            index,
            ids,
        )
    return [ids for _, _, ids in loads if ids]


def run_prepare(run_id, *, parts=1):
    """What the Celery job runs: prepare (and submit) every tournament's proposal, recording a
    result per tournament and the progress after each. Idempotent: a run already claimed or
    finished is left alone, and only missing or stale proposals are prepared.

    With `parts` > 1 (the task on a worker passes OUTAGE_PREPARE_PARTS), the tournaments are
    shared between that many parts: this job works through the first and queues the others as
    `proposals.prepare_outage_part`, so several worker processes prepare at once; whichever part
    finishes last marks the run done."""
    if not _claim(run_id):
        return OutagePrepareRun.objects.get(pk=run_id).state
    run = OutagePrepareRun.objects.select_related("outage").get(pk=run_id)
    # The snapshots' sizes only: not their documents and parsed forms, megabytes each.
    members = list(
        incidents_of(run.outage)
        .select_related("tournament__current_snapshot")
        .defer(
            "tournament__current_snapshot__document_zlib", "tournament__current_snapshot__parsed"
        )
    )
    # Tournaments added to the outage since the run was queued count too.
    OutagePrepareRun.objects.filter(pk=run.pk).update(total=len(members))
    done = set(run.results.values_list("incident_id", flat=True))
    remaining = [i for i in members if i.pk not in done]
    split = _split(remaining, max(1, parts)) if remaining else [[]]
    for ids in split[1:]:
        enqueue(PREPARE_PART_TASK, run_id, ids)
    return run_prepare_part(run_id, split[0])


def run_prepare_part(run_id, incident_ids):
    """Prepare the given tournaments of a run (one part), then finish the run if it is complete."""
    run = OutagePrepareRun.objects.select_related("outage", "requested_by").get(pk=run_id)
    if run.state != RunState.RUNNING:
        return run.state
    incidents = Incident.objects.select_related("tournament").in_bulk(incident_ids)
    try:
        with beating(PREPARE_JOBS, every=_heartbeat_every(), pk=run.pk):
            _prepare_part(run, incident_ids, incidents)
    except Exception as exc:
        if dberrors.classify(exc) == dberrors.Kind.UNAVAILABLE:
            # Nothing can be written now. The run stops beating: stalled, then resumed by the
            # sweeper once the database is back.
            raise
        reason = dberrors.describe(exc) if dberrors.classify(exc) else str(exc)
        OutagePrepareRun.objects.filter(pk=run.pk, state=RunState.RUNNING).update(
            state=RunState.FAILED, finished_at=now_expr(), last_error=reason[:2000]
        )
        raise
    return _finish_if_complete(run)


def _prepare_part(run, incident_ids, incidents):
    """One result per tournament, and the progress after each (the run's heartbeat too)."""
    for pk in incident_ids:
        incident = incidents[pk]
        if OutagePrepareResult.objects.filter(run=run, incident=incident).exists():
            continue
        started = time.perf_counter()
        outcome, proposal, message, problems = _prepare_one(incident, run.requested_by)
        try:
            with transaction.atomic():
                OutagePrepareResult.objects.create(
                    run=run,
                    incident=incident,
                    outcome=outcome,
                    proposal=proposal,
                    message=message,
                    problems=problems,
                    seconds=round(time.perf_counter() - started, 3),
                )
                OutagePrepareRun.objects.filter(pk=run.pk).update(
                    done=F("done") + 1, heartbeat_at=now_expr()
                )
        except IntegrityError:
            # A run taken for dead was still alive and got here first: its result stands.
            continue


def _finish_if_complete(run):
    """The part that records the last result marks the run done (compare-and-set, once)."""
    with transaction.atomic():
        changed = OutagePrepareRun.objects.filter(
            pk=run.pk, state=RunState.RUNNING, done__gte=F("total")
        ).update(state=RunState.DONE, finished_at=now_expr())
        if not changed:
            return OutagePrepareRun.objects.get(pk=run.pk).state
        counts = dict(
            run.results.values_list("outcome").annotate(n=Count("pk")).values_list("outcome", "n")
        )
        record(
            "outage.prepared",
            run.outage,
            actor=run.requested_by,
            after={"run": run.pk, **{k: counts.get(k, 0) for k in Outcome.values}},
        )
    return RunState.DONE


def prepare_progress(outage):
    """The latest run of the outage's batch prepare, with its results, for the progress bar."""
    run = outage.prepare_runs.order_by("-id").first()
    if run is None:
        return None
    results = list(
        run.results.select_related("incident__tournament", "proposal").order_by(
            "incident__tournament__external_id"
        )
    )
    counts: defaultdict[str, int] = defaultdict(int)
    for result in results:
        counts[result.outcome] += 1
    status = PREPARE_JOBS.status(run)
    return {
        "run": run,
        "results": results,
        "counts": dict(counts),
        "percent": 100
        if run.state == RunState.DONE
        else (run.done * 100 // run.total if run.total else 0),
        # queued, running, stalled (resuming), failed (with the reason), done
        "status": status,
        "active": status.active,
    }


# --------------------------------------------------------------------------------------------
# Batch review and approval
# --------------------------------------------------------------------------------------------


# What the review page reads of each proposal (not the users' other fields).
_REVIEW_FIELDS = (
    "version", "status", "rule", "currency", "total_cents", "lines_count", "warnings", "summary",
    "fingerprint", "prepared_by_id", "submitted_by_id", "incident_id", "snapshot_id",
    "failed_at", "site_wide_issue", "incident__failed_at", "incident__site_wide_issue",
    "incident__tournament__external_id", "incident__tournament__name",
    "incident__tournament__current_snapshot_id",
    "prepared_by__username", "submitted_by__username",
    # Each tournament runs under its own policy: the review names it, and a proposal whose
    # policy version is no longer the tournament's is stale.
    "policy_version_id", "policy_id", "policy_version_number", "policy_sha256",
    "incident__tournament__policy_version_id",
    # The facts a manager decides on, per tournament: time into play, why cancelled.
    "incident__tournament__starts_at", "incident__cancelled_because", "incident__cancel_reason",
)  # fmt: skip


def review(outage, only=None):
    """Every live proposal of the outage (or only those with ids in `only`) as review rows,
    with the totals per currency and the outage fingerprint over the approvable ones."""
    proposals = (
        PayoutProposal.objects.filter(incident__outage_membership__outage=outage)
        .exclude(status__in=NOT_LIVE)
        .select_related("incident__tournament", "prepared_by", "submitted_by")
        .only(*_REVIEW_FIELDS)
        .order_by("incident__tournament__external_id", "pk")
    )
    if only:
        proposals = proposals.filter(pk__in=only)
    listed = list(proposals)
    # The engine's summary counts the capped entries: no need to read a line (the lines of 200
    # proposals are 200 partitions).
    capped = {p.pk: int((p.summary or {}).get("capped_entries") or 0) for p in listed}
    totals: defaultdict[str, dict[str, int]] = defaultdict(
        lambda: {"cents": 0, "proposals": 0, "entries": 0}
    )
    approvable = [p for p in listed if p.status == Status.SUBMITTED]
    rows = []
    for p in listed:
        rows.append(
            {
                "proposal": p,
                "tournament": p.incident.tournament,
                "capped": capped.get(p.pk, 0),
                # Shown before approving: a stale proposal would refuse the whole batch.
                "stale": services._stale_reasons(p, p.incident, p.incident.tournament)
                if p.status in (Status.DRAFT, Status.SUBMITTED)
                else [],
            }
        )
        total = totals[p.currency]
        total["cents"] += p.total_cents
        total["proposals"] += 1
        total["entries"] += p.lines_count
    approvable_totals: defaultdict[str, int] = defaultdict(int)
    for p in approvable:
        approvable_totals[p.currency] += p.total_cents
    return {
        "rows": rows,
        "totals": dict(sorted(totals.items())),
        "approvable": approvable,
        "approvable_totals": dict(sorted(approvable_totals.items())),
        "fingerprint": outage_fingerprint(p.fingerprint for p in approvable),
    }


def _name(p):
    return f"{p.incident.tournament.external_id} (proposal {p.pk})"


@transaction.atomic
def approve_batch(outage, *, seen, fingerprint, acting_user, second_factor=""):
    """Approve the proposals the manager reviewed, all or none.

    `seen` maps each proposal id to the fingerprint shown on the review page; `fingerprint` is
    the outage fingerprint quoted (over the sorted fingerprints in `seen`). Each proposal is
    approved by `approve_proposal` (four eyes, fingerprint, staleness checked again there).
    """
    require_role(acting_user, CAN_DECIDE, "approve proposals")
    seen = {int(k): (v or "").strip().lower() for k, v in (seen or {}).items()}
    if not seen:
        raise Refused("Choose the proposals to approve.", problems=[("proposals", "none chosen")])
    if (fingerprint or "").strip().lower() != outage_fingerprint(seen.values()):
        raise Refused(
            "The outage fingerprint quoted does not match the proposals listed; review the "
            "batch again.",
            problems=[("fingerprint", "does not match the proposals listed")],
        )
    locked = _lock_in_order(list(seen))
    members = set(
        incidents_of(outage)
        .filter(pk__in=[p.incident_id for p in locked])
        .values_list("pk", flat=True)
    )
    missing = sorted(set(seen) - {p.pk for p in locked if p.incident_id in members})
    if missing:
        raise Refused(
            f"Proposals {', '.join(map(str, missing))} are not part of outage {outage.pk}; "
            "nothing was approved."
        )
    # Four eyes per proposal: the approver is none of the people each one rests on.
    refusals = [(p, p.why_not_decided_by(acting_user)) for p in locked]
    refusals = [(p, why) for p, why in refusals if why]
    if refusals:
        raise PermissionDenied(
            " ".join(f"{_name(p)}: {why}" for p, why in refusals) + " Nothing was approved."
        )
    problems = []
    for p in locked:
        if p.status != Status.SUBMITTED:
            problems.append((_name(p), f"is {p.get_status_display().lower()}, not submitted"))
            continue
        if seen[p.pk] != p.fingerprint:
            problems.append((_name(p), "changed since it was reviewed (its fingerprint differs)"))
            continue
        stale = services._stale_reasons(p, p.incident, p.incident.tournament)
        if stale:
            problems.append((_name(p), "; ".join(stale)))
    if problems:
        raise Refused(
            "The batch was not approved; nothing was approved. Review the proposals concerned "
            "again.",
            problems=problems,
        )
    totals: defaultdict[str, int] = defaultdict(int)
    try:
        for p in locked:
            services.approve_proposal(
                p, acting_user=acting_user, fingerprint=seen[p.pk], second_factor=second_factor
            )
            totals[p.currency] += p.total_cents
    except (Refused, IntegrityError) as exc:
        # Checked above under the same locks, so this is unexpected; the whole batch rolls back.
        raise Refused(f"The batch was not approved; nothing was approved: {exc}") from exc
    record(
        "outage.batch_approved",
        outage,
        actor=acting_user,
        after={
            "fingerprint": fingerprint,
            "proposals": sorted(seen),
            "count": len(seen),
            "totals": dict(sorted(totals.items())),
            **({"second_factor": second_factor} if second_factor else {}),
        },
    )
    return locked


@transaction.atomic
def reject_batch(outage, *, proposal_ids, reason, acting_user):
    """Reject the submitted proposals the manager reviewed, all or none, with one reason.

    Each is rejected by `reject_proposal` (four eyes, status checked there); a proposal the
    manager prepared or submitted, or one no longer submitted, refuses the whole batch and is
    named. Each tournament may then be prepared again as a new version.
    """
    require_role(acting_user, CAN_DECIDE, "reject proposals")
    ids = sorted({int(pk) for pk in proposal_ids or []})
    if not ids:
        raise Refused("Choose the proposals to reject.", problems=[("proposals", "none chosen")])
    if not (reason or "").strip():
        raise Refused("Give the reason for rejecting.", problems=[("reason", "required")])
    locked = _lock_in_order(ids)
    members = set(
        incidents_of(outage)
        .filter(pk__in=[p.incident_id for p in locked])
        .values_list("pk", flat=True)
    )
    missing = sorted(set(ids) - {p.pk for p in locked if p.incident_id in members})
    if missing:
        raise Refused(
            f"Proposals {', '.join(map(str, missing))} are not part of outage {outage.pk}; "
            "nothing was rejected."
        )
    own = [p for p in locked if acting_user.pk in (p.prepared_by_id, p.submitted_by_id)]
    if own:
        raise PermissionDenied(
            f"{acting_user.get_username()} prepared or submitted "
            f"{', '.join(_name(p) for p in own)}; another manager must decide on "
            f"{'it' if len(own) == 1 else 'them'} (four eyes). Nothing was rejected."
        )
    problems = [
        (_name(p), f"is {p.get_status_display().lower()}, not submitted")
        for p in locked
        if p.status != Status.SUBMITTED
    ]
    if problems:
        raise Refused("Nothing was rejected.", problems=problems)
    totals: defaultdict[str, int] = defaultdict(int)
    for p in locked:
        services.reject_proposal(p, acting_user=acting_user, reason=reason)
        totals[p.currency] += p.total_cents
    record(
        "outage.batch_rejected",
        outage,
        actor=acting_user,
        after={"proposals": ids, "count": len(ids), "totals": dict(sorted(totals.items()))},
        reason=reason.strip(),
    )
    return locked


def replay_outage(outage):
    """Recompute every proposal of the outage (each version) from its stored snapshot: one
    (proposal, ReplayResult) per proposal, for the auditor's page (`manage.py replay_outage`
    also checks the batch approvals' outage fingerprints)."""
    proposals = (
        PayoutProposal.objects.filter(incident__outage_membership__outage=outage)
        .select_related("snapshot", "incident__tournament")
        .order_by("incident__tournament__external_id", "version")
    )
    return [(p, services.replay_proposal(p)) for p in proposals.iterator(chunk_size=100)]


def _lock_in_order(proposal_ids):
    """Lock the proposals' tournaments, incidents and the proposals themselves, in the one lock
    order (tournament -> incident -> proposal), each kind in id order: two managers deciding
    overlapping batches queue behind each other on the first tournament they share, and neither
    deadlocks with a prepare or a single approval. Returns the proposals, locked, by id."""
    keys = list(
        PayoutProposal.objects.filter(pk__in=proposal_ids).values_list(
            "incident_id", "incident__tournament_id"
        )
    )
    list(
        Tournament.objects.select_for_update()
        .filter(pk__in={t for _, t in keys})
        .order_by("pk")
        .values_list("pk", flat=True)
    )
    list(
        Incident.objects.select_for_update()
        .filter(pk__in={i for i, _ in keys})
        .order_by("pk")
        .values_list("pk", flat=True)
    )
    return list(
        PayoutProposal.objects.select_for_update(of=("self",))
        .filter(pk__in=proposal_ids)
        .select_related("incident__tournament")
        .order_by("pk")
    )
