"""Posting approved proposals: every credit booked exactly once, whatever fails.

The flow, in the domain's words:
1. `schedule_posting()` runs inside the approval's transaction and writes the proposal's
   PostingJob (the outbox row). The approval and the promise to post commit together, so a
   broker that is down cannot lose the job. After commit it kicks the Celery task; if the kick
   fails, the sweeper (`sweep_unposted`, Celery beat) queues it again later.
2. The task `ledger.post_proposal` calls `post_proposal()`, which takes an advisory lock on the
   job (two workers never post one proposal at once), checks the lines are still the approved
   ones, and books credits in chunks of thousands of lines, one transaction per chunk. Each
   credit has a unique key, and inserting skips keys already booked, so a crashed or repeated
   job continues where it stopped and never pays twice.
3. It ends by checking that the ledger holds exactly the approved total, to the cent, before the
   proposal becomes `posted`.
"""

from __future__ import annotations

import logging
from contextlib import contextmanager
from datetime import timedelta
from functools import partial
from typing import TYPE_CHECKING, Any

from django.conf import settings
from django.db import connection, transaction
from django.db.models import Count, Q, Sum
from django.utils import timezone

from refunds_admin.accounts.roles import CAN_DECIDE, require_role
from refunds_admin.audit.services import record
from refunds_admin.errors import Refused
from refunds_admin.proposals.models import PayoutProposal

from .models import CashierDelivery, Credit, PostingJob
from .summary import record_posted_total
from .wallets import CashierStopped, get_wallet
from .writers import book_chunk, chunk_keys, lines_summary

if TYPE_CHECKING:
    from collections.abc import Iterable

    from django.contrib.auth.models import User

log = logging.getLogger(__name__)

Status = PayoutProposal.Status
State = PostingJob.State


def _chunk_size():
    """Lines per chunk: one transaction each. Thousands keep a chunk well under a second."""
    return settings.POSTING_CHUNK_SIZE


def _stale_after():
    """A queued job not picked up, or a running job without heartbeat, this long is re-queued."""
    return timedelta(seconds=settings.POSTING_STALE_AFTER)


def max_attempts():
    """After this many runs that ended in an error the job fails and waits for a manager."""
    return settings.POSTING_MAX_ATTEMPTS


# Namespace of our advisory locks (the job lock is keyed by (namespace, proposal id)).
_LOCK_NAMESPACE = 4_0400


class PostingStopped(Exception):
    """The job stopped for a reason that retrying cannot fix; it is marked failed."""


def _tournament(proposal):
    return proposal.incident.tournament


# ---------------------------------------------------------------------------------------------
# Scheduling (inside the approval) and kicking the task (after commit)
# ---------------------------------------------------------------------------------------------


def schedule_posting(proposal: PayoutProposal, *, actor: User | None) -> PostingJob:
    """Record, in the caller's transaction, that this approved proposal must be posted.

    Called by approve_proposal. Writes the PostingJob outbox row (one per proposal) with the
    fingerprint of the lines as approved, and kicks the task once the approval has committed.
    """
    if not transaction.get_connection().in_atomic_block:
        raise RuntimeError("schedule_posting must run inside the approval's transaction")
    if proposal.status != Status.APPROVED:
        raise Refused(f"proposal {proposal.pk} is {proposal.status}, not approved")
    fingerprint, lines, total, total_cents = lines_summary(proposal)
    if fingerprint != proposal.approved_fingerprint:
        raise Refused(
            f"proposal {proposal.pk}: its stored lines no longer match the fingerprint approved; "
            "prepare it again"
        )
    if total_cents != proposal.total_cents or lines != proposal.lines_count:
        raise Refused(
            f"proposal {proposal.pk}: its lines add up to {total_cents} cents in {lines} "
            f"lines, not the approved {proposal.total_cents} cents in {proposal.lines_count}"
        )
    # The approval's own audit event covers this row: scheduling is part of approving.
    job, _ = PostingJob.objects.get_or_create(
        proposal=proposal,
        defaults={"total": total, "total_cents": total_cents, "lines_digest": fingerprint},
    )
    transaction.on_commit(partial(kick_posting, proposal.pk))
    return job


def kick_posting(proposal_id: int) -> bool:
    """Queue the posting task. Never raises: with the broker down the job stays in the outbox
    and the sweeper queues it later. Returns whether the task was queued (or ran, in-process)."""
    from .tasks import post_proposal

    PostingJob.objects.filter(proposal_id=proposal_id).update(queued_at=timezone.now())
    try:
        post_proposal.delay(proposal_id)
        return True
    except Exception:
        log.warning(
            "could not queue the posting of proposal %s; the sweeper will retry",
            proposal_id,
            exc_info=True,
        )
        return False


def sweep_unposted(*, stale_after: timedelta | None = None) -> list[int]:
    """Queue again every approved proposal that is not posted and not being posted.

    That is: jobs queued but not started for a while (the broker was down, or the message was
    lost), and jobs whose worker stopped sending heartbeats (it was killed). A job still running
    elsewhere is safe to queue again: the job lock turns the second run into a no-op.
    """
    cutoff = timezone.now() - (_stale_after() if stale_after is None else stale_after)
    requeued: list[int] = []
    # Approved proposals without an outbox row (approved before the outbox existed): add one;
    # schedule_posting queues it when its transaction commits.
    for proposal in PayoutProposal.objects.filter(status=Status.APPROVED, posting_job=None):
        with transaction.atomic():
            schedule_posting(proposal, actor=None)
        requeued.append(proposal.pk)
    stale = PostingJob.objects.filter(
        Q(state=State.QUEUED, queued_at__lte=cutoff)
        | Q(state=State.RUNNING, heartbeat_at__lte=cutoff)
        | Q(state=State.RUNNING, heartbeat_at__isnull=True, queued_at__lte=cutoff)
    ).values_list("proposal_id", flat=True)
    for proposal_id in stale:
        log.info("sweeper: queueing the posting of proposal %s again", proposal_id)
        if kick_posting(proposal_id):
            requeued.append(proposal_id)
    return requeued


# ---------------------------------------------------------------------------------------------
# Posting (what the task runs)
# ---------------------------------------------------------------------------------------------


@contextmanager
def _job_lock(proposal_id):
    """A session-level advisory lock on PostgreSQL: held by one worker at a time, released if
    its process dies. Elsewhere (SQLite, development) the database serialises writers and the
    unique credit key alone prevents duplicates."""
    if connection.vendor != "postgresql":
        yield True
        return
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_try_advisory_lock(%s, %s)", [_LOCK_NAMESPACE, proposal_id])
        got = cursor.fetchone()[0]
    try:
        yield got
    finally:
        if got and connection.connection is not None:
            with connection.cursor() as cursor:
                cursor.execute("SELECT pg_advisory_unlock(%s, %s)", [_LOCK_NAMESPACE, proposal_id])


def post_proposal(proposal_id: int, *, max_chunks: int | None = None) -> str:
    """Post every credit of an approved proposal that is not posted yet. Idempotent.

    `max_chunks` stops after that many chunks, leaving the job running (to be continued by the
    next run); the task never passes it, tests use it to interleave runs.

    Returns the job's state afterwards (or "busy" when another worker holds the job).
    Raises PostingStopped when the job was marked failed, any other error when a retry may help
    (the error and the attempt are recorded on the job first).
    """
    with _job_lock(proposal_id) as got:
        if not got:
            log.info("proposal %s is being posted by another worker", proposal_id)
            return "busy"
        job = _start(proposal_id)
        if job is None:
            return PostingJob.objects.get(proposal_id=proposal_id).state
        try:
            done = _post_all(job, max_chunks=max_chunks)
        except PostingStopped:
            raise
        except CashierStopped as exc:
            _fail(job, str(exc))
            raise PostingStopped(str(exc)) from exc
        except Exception as exc:
            _record_error(job, exc)
            raise
        return State.POSTED if done else State.RUNNING


def _start(proposal_id):
    """Mark the job running (and the proposal posting). None when there is nothing to do."""
    with transaction.atomic():
        job = (
            PostingJob.objects.select_for_update()
            .select_related("proposal__incident__tournament")
            .get(proposal_id=proposal_id)
        )
        proposal = job.proposal
        if job.state in (State.POSTED, State.FAILED) or proposal.status not in (
            Status.APPROVED,
            Status.POSTING,
        ):
            log.info(
                "proposal %s: nothing to post (%s, job %s)", proposal_id, proposal.status, job.state
            )
            return None
        give_up = job.attempts >= max_attempts()
        if not give_up:
            _mark_running(job)
    if give_up:
        _fail(job, f"gave up after {job.attempts} attempts; last error: {job.last_error}")
        raise PostingStopped(job.last_error)
    return job


def _mark_running(job):
    proposal = job.proposal
    if proposal.status == Status.APPROVED:
        changed = PayoutProposal.objects.filter(pk=proposal.pk, status=Status.APPROVED).update(
            status=Status.POSTING
        )
        if changed:
            record(
                "ledger.posting_started",
                proposal,
                actor=None,
                before={"status": Status.APPROVED},
                after={"status": Status.POSTING},
                tournament=_tournament(proposal),
            )
    now = timezone.now()
    job.state = State.RUNNING
    job.attempts += 1
    job.started_at = job.started_at or now
    job.heartbeat_at = now
    job.save(update_fields=["state", "attempts", "started_at", "heartbeat_at"])


def _post_all(job, *, max_chunks=None):
    """Book the chunks after the job's last finished one; True when the proposal is posted."""
    proposal = job.proposal
    fingerprint, _, _, _ = lines_summary(proposal)
    if fingerprint != proposal.approved_fingerprint or fingerprint != job.lines_digest:
        _fail(job, "the proposal's lines no longer match what was approved; nothing more posted")
        raise PostingStopped("lines changed after approval")

    wallet = get_wallet()
    if wallet.external:
        # Credits booked by an earlier run but never answered by the cashier (the worker died
        # in between, or a manager resumed after a refusal): deliver them first.
        undelivered = Credit.objects.filter(proposal_id=proposal.pk, delivery__isnull=True)
        wallet.deliver(
            list(undelivered.values_list("key", flat=True)), proposal, partial(_beat, job)
        )
    after, posted, posted_cents = job.posted_through, job.posted, job.posted_cents
    chunks = 0
    while True:
        if max_chunks is not None and chunks >= max_chunks:
            return False  # stopped early on purpose; the next run continues
        with transaction.atomic():
            booked = book_chunk(proposal, after, _chunk_size())
            if booked is None:
                break
            through, credits, cents, _new = booked
            if not wallet.external:
                # The ledger is the wallet: progress commits with the credits it counts.
                _advance(job, through, posted + credits, posted_cents + cents)
        if wallet.external:
            wallet.deliver(chunk_keys(proposal, after, through), proposal, partial(_beat, job))
            applied = _cashier_applied(proposal.pk)
            _advance(job, through, applied["n"], applied["cents"] or 0)
        after, posted, posted_cents = through, posted + credits, posted_cents + cents
        chunks += 1
    _finish(job, wallet)
    return True


def _advance(job, through, posted, posted_cents):
    """Record progress: absolute figures, and only forwards, so a repeated chunk changes nothing."""
    PostingJob.objects.filter(pk=job.pk, posted_through__lt=through).update(
        posted_through=through,
        posted=posted,
        posted_cents=posted_cents,
        heartbeat_at=timezone.now(),
    )


def _beat(job):
    """The job is alive (for the sweeper), even while a slow cashier answers."""
    PostingJob.objects.filter(pk=job.pk).update(heartbeat_at=timezone.now())


def _cashier_applied(proposal_id):
    return CashierDelivery.objects.filter(
        credit__proposal_id=proposal_id, state=CashierDelivery.State.APPLIED
    ).aggregate(n=Count("pk"), cents=Sum("credit__amount_cents"))


def _finish(job, wallet):
    """Mark posted only when the ledger holds exactly the approved total, to the cent."""
    proposal = job.proposal
    problem = _final_check(job, wallet)
    if problem:
        _fail(job, problem)
        raise PostingStopped(problem)
    with transaction.atomic():
        changed = PayoutProposal.objects.filter(pk=proposal.pk, status=Status.POSTING).update(
            status=Status.POSTED
        )
        if not changed:
            raise PostingStopped(f"proposal {proposal.pk} is no longer posting")
        now = timezone.now()
        PostingJob.objects.filter(pk=job.pk).update(
            state=State.POSTED,
            posted=job.total,
            posted_cents=job.total_cents,
            finished_at=now,
            heartbeat_at=now,
            last_error="",
        )
        # The finance report's row, in the same transaction as "posted".
        record_posted_total(proposal, posted_at=now)
        record(
            "ledger.posted",
            proposal,
            actor=None,
            before={"status": Status.POSTING},
            after={
                "status": Status.POSTED,
                "credits": job.total,
                "total_cents": job.total_cents,
                "currency": proposal.currency,
            },
            tournament=_tournament(proposal),
        )


def _final_check(job, wallet):
    """None when the ledger (and the cashier, if any) holds exactly the approved credits."""
    proposal = job.proposal
    booked = Credit.objects.filter(proposal_id=proposal.pk).aggregate(
        n=Count("pk"), cents=Sum("amount_cents")
    )
    if booked["n"] != job.total or (booked["cents"] or 0) != proposal.total_cents:
        return (
            f"the ledger holds {booked['n']} credits for {booked['cents'] or 0} cents, "
            f"the approved proposal {job.total} credits for {proposal.total_cents} cents"
        )
    if wallet.external:
        applied = _cashier_applied(proposal.pk)
        if applied["n"] != job.total or (applied["cents"] or 0) != proposal.total_cents:
            refused = CashierDelivery.objects.filter(
                credit__proposal_id=proposal.pk, state=CashierDelivery.State.FAILED
            ).count()
            return (
                f"the cashier confirmed {applied['n']} of {job.total} credits; "
                f"{refused} refused and need a human (see cashier deliveries)"
            )
    return None


def _record_error(job, exc):
    """Remember why this attempt stopped; the task retries later, the sweeper as a last resort."""
    message = f"{type(exc).__name__}: {exc}"[:2000]
    log.warning("posting of proposal %s stopped: %s", job.proposal_id, message)
    PostingJob.objects.filter(pk=job.pk, state=State.RUNNING).update(
        state=State.QUEUED, last_error=message, queued_at=timezone.now()
    )


def _fail(job, reason):
    """Job failed, proposal failed, audited; a manager may resume it. Runs in its own
    transaction (or the caller's)."""
    with transaction.atomic():
        proposal = job.proposal
        PostingJob.objects.filter(pk=job.pk).update(
            state=State.FAILED, last_error=reason, finished_at=timezone.now()
        )
        before = PayoutProposal.objects.get(pk=proposal.pk).status
        changed = PayoutProposal.objects.filter(
            pk=proposal.pk, status__in=[Status.APPROVED, Status.POSTING]
        ).update(status=Status.FAILED)
        if changed:
            record(
                "ledger.posting_failed",
                proposal,
                actor=None,
                before={"status": before},
                after={"status": Status.FAILED},
                reason=reason,
                tournament=_tournament(proposal),
            )
    log.error("posting of proposal %s failed: %s", proposal.pk, reason)


@transaction.atomic
def resume_posting(proposal: PayoutProposal, *, acting_user: User) -> None:
    """A manager sends a failed posting job back to the queue; it continues where it stopped."""
    require_role(acting_user, CAN_DECIDE, "resume posting")
    job = PostingJob.objects.select_for_update().filter(proposal_id=proposal.pk).first()
    if job is None or job.state != State.FAILED:
        raise Refused(f"proposal {proposal.pk}: posting has not failed, there is nothing to resume")
    changed = PayoutProposal.objects.filter(pk=proposal.pk, status=Status.FAILED).update(
        status=Status.APPROVED
    )
    if not changed:
        raise Refused(f"proposal {proposal.pk} is not in the failed state")
    previous_error = job.last_error
    # Credits the cashier refused (409/422) are sent again, under the same key, once a human
    # has resolved the cause and resumes; their refusal stays in the audit event below.
    refused = CashierDelivery.objects.filter(
        credit__proposal_id=proposal.pk, state=CashierDelivery.State.FAILED
    )
    refusals = list(refused.values_list("credit_id", "error"))
    refused.delete()
    PostingJob.objects.filter(pk=job.pk).update(
        state=State.QUEUED, attempts=0, last_error="", finished_at=None, queued_at=timezone.now()
    )
    record(
        "ledger.posting_resumed",
        proposal,
        actor=acting_user,
        before={
            "status": Status.FAILED,
            "error": previous_error,
            "cashier_refusals": [{"key": k, "error": e} for k, e in refusals],
        },
        after={"status": Status.APPROVED},
        tournament=_tournament(proposal),
    )
    transaction.on_commit(partial(kick_posting, proposal.pk))
    proposal.status = Status.APPROVED


# ---------------------------------------------------------------------------------------------
# Reading: progress bar, player lookup, reconciliation
# ---------------------------------------------------------------------------------------------


def posting_progress(proposal: PayoutProposal) -> dict[str, Any]:
    """What the progress bar shows. Before approval there is no job: state None."""
    job = PostingJob.objects.filter(proposal_id=proposal.pk).first()
    if job is None:
        return {
            "posted": 0,
            "total": 0,
            "posted_cents": 0,
            "total_cents": proposal.total_cents,
            "state": None,
            "error": "",
            "percent": 0,
        }
    percent = 100 if job.total == 0 else (100 * job.posted) // job.total
    if job.state == State.POSTED:
        percent = 100
    return {
        "posted": job.posted,
        "total": job.total,
        "posted_cents": job.posted_cents,
        "total_cents": job.total_cents,
        "state": job.state,
        "error": job.last_error,
        "percent": percent,
        "attempts": job.attempts,
        "heartbeat_at": job.heartbeat_at,
    }


def player_credits(player_id: str) -> dict[str, Any]:
    """Every credit a player received, newest proposal first, with balances per currency."""
    credits = list(
        Credit.objects.filter(player_id=player_id)
        .select_related("proposal__incident__tournament")
        .order_by("-proposal_id", "entry_id", "key")
    )
    balances: dict[str, int] = {}
    for credit in credits:
        balances[credit.currency] = balances.get(credit.currency, 0) + credit.amount_cents
    return {"credits": credits, "balances": balances}


def player_balances(player_id: str) -> dict[str, int]:
    """{currency: cents}: a player's balance follows from their credits."""
    return dict(
        Credit.objects.filter(player_id=player_id)
        .values("currency")
        .annotate(cents=Sum("amount_cents"))
        .values_list("currency", "cents")
    )


def reconcile(proposal_ids: Iterable[int] | None = None) -> list[dict[str, Any]]:
    """Per approved proposal (or only those in `proposal_ids`): approved total vs credits booked
    (and vs the cashier when one is configured). Rows with `ok` False are mismatches."""
    from .wallets import cashier_from_settings

    cashier = cashier_from_settings()
    rows = []
    proposals = PayoutProposal.objects.filter(
        status__in=[Status.APPROVED, Status.POSTING, Status.POSTED, Status.FAILED]
    ).order_by("pk")
    if proposal_ids is not None:
        proposals = proposals.filter(pk__in=proposal_ids)
    for proposal in proposals:
        booked = Credit.objects.filter(proposal_id=proposal.pk).aggregate(
            n=Count("pk"), cents=Sum("amount_cents")
        )
        row = {
            "proposal": proposal.pk,
            "status": proposal.status,
            "currency": proposal.currency,
            "approved_cents": proposal.total_cents,
            "booked_cents": booked["cents"] or 0,
            "booked_credits": booked["n"],
            "cashier_cents": None,
            "problems": [],
        }
        if proposal.status == Status.POSTED and row["booked_cents"] != proposal.total_cents:
            row["problems"].append("posted, but the ledger differs from the approved total")
        if row["booked_cents"] > proposal.total_cents:
            row["problems"].append("the ledger holds more than was approved")
        if cashier is not None and booked["n"]:
            try:
                held = cashier.credits_for(f"proposal {proposal.pk} ")
            except Exception as exc:
                row["problems"].append(f"cashier unreachable: {exc}")
            else:
                row["cashier_cents"] = sum(c["amount_cents"] for c in held)
                ours = dict(
                    Credit.objects.filter(proposal_id=proposal.pk).values_list(
                        "key", "amount_cents"
                    )
                )
                theirs = {c["key"]: c["amount_cents"] for c in held}
                if proposal.status == Status.POSTED and theirs != ours:
                    missing = len(set(ours) - set(theirs))
                    extra = len(set(theirs) - set(ours))
                    differ = sum(1 for k in set(ours) & set(theirs) if ours[k] != theirs[k])
                    row["problems"].append(
                        f"cashier differs: {missing} missing, {extra} unknown, {differ} amounts differ"
                    )
                elif set(theirs) - set(ours):
                    row["problems"].append("the cashier holds credits the ledger does not")
        row["ok"] = not row["problems"]
        rows.append(row)
    return rows
