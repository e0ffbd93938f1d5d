"""Posting approved proposals: every credit booked exactly once, and paid into the wallet the
approval chose, whatever fails.

The flow, in the domain's words (docs/posting.md):
1. The approval (proposals layer) records the posting order in its own transaction: the wallet
   and the wallet's identity (the cashier's URL). After commit it queues the task
   `ledger.post_proposal` by name; if that fails, the sweeper (`sweep_unposted`) queues it later.
2. The task calls `post_proposal()`, which takes an advisory lock (one worker per proposal),
   creates or claims the PostingJob from the posting order, refuses (job left waiting, reason
   recorded) when this process is not configured for the job's wallet, checks the lines are
   still the approved ones, and books the credits in chunks, one transaction per chunk. Each
   credit has a unique key and inserting skips keys already booked: never twice.
3. With the cashier as the wallet, the booked credits not yet confirmed are sent, up to
   CASHIER_CONCURRENCY at once; the confirmations commit a batch at a time.
4. The proposal becomes `posted` only when the wallet holds exactly the approved credits: the
   ledger to the cent, and, for the cashier, a confirmation for every credit.

Failures are classified. An outage (cashier down or throttling, database or broker unreachable,
a worker killed mid-run) never uses up the job's attempts: the job waits with capped exponential
backoff for up to POSTING_OUTAGE_BUDGET, then fails and the managers are e-mailed. A definite
refusal (409/422: a human must look; 401/403: configuration) fails the job at once with the
cashier's reason. Any other error counts as an attempt; after POSTING_MAX_ATTEMPTS the job fails.
A failed job always says why (a database constraint insists).
"""

import logging
from contextlib import contextmanager
from datetime import timedelta
from functools import partial
from typing import Any

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.mail import send_mail
from django.db import DatabaseError, InterfaceError, OperationalError, connection, transaction
from django.db.models import Count, F, Q, Sum
from django.utils import timezone

from refunds_admin.accounts.roles import CAN_DECIDE, MANAGER, require_role
from refunds_admin.audit.services import record
from refunds_admin.errors import Refused
from refunds_admin.proposals.models import PayoutProposal
from refunds_admin.proposals.posting import (
    CASHIER,
    describe_wallet,
    queue_posting,
)

from .models import CashierDelivery, Component, Credit, PostingJob
from .reconciliation import compare
from .summary import record_posted_total
from .wallets import (
    CashierRefused,
    CashierStopped,
    CashierUnavailable,
    CashierWallet,
    WalletNotConfigured,
    cashier_at,
    credit_body,
    wallet_for_job,
    wallet_problem,
)
from .writers import book_chunk, lines_summary

log = logging.getLogger(__name__)

Status = PayoutProposal.Status
State = PostingJob.State


def _chunk_size():
    """Lines per chunk: one transaction each. Thousands keep a chunk well under a second."""
    return settings.POSTING_CHUNK_SIZE


def _stale_after():
    """A queued job not picked up, or a running job without heartbeat, this long is re-queued."""
    return timedelta(seconds=settings.POSTING_STALE_AFTER)


def max_attempts() -> int:
    """After this many runs that ended in a real error the job fails and waits for a manager."""
    return settings.POSTING_MAX_ATTEMPTS


def outage_budget() -> timedelta:
    """How long an outage may last before the job fails and the managers are alerted."""
    return timedelta(seconds=getattr(settings, "POSTING_OUTAGE_BUDGET", 7200))


def outage_backoff(retries: int) -> float:
    """Seconds before the next run, after `retries` runs stopped by the same outage: doubled
    each time from POSTING_BACKOFF_BASE, capped at POSTING_BACKOFF_MAX."""
    base = getattr(settings, "POSTING_BACKOFF_BASE", 5.0)
    cap = getattr(settings, "POSTING_BACKOFF_MAX", 300.0)
    return min(cap, base * 2 ** max(0, retries - 1))


# Namespace of our advisory locks (the job lock is keyed by (namespace, proposal id)).
_LOCK_NAMESPACE = 4_0400

# Errors that say "not now" rather than "wrong": they never use up the job's attempts.
OUTAGES = (CashierUnavailable, OperationalError, InterfaceError)


class PostingStopped(Exception):
    """The job stopped for a reason that retrying cannot fix; it is marked failed."""


class PostingDelayed(Exception):
    """An outage stopped this run; the job is queued again after `countdown` seconds."""

    def __init__(self, reason, countdown):
        super().__init__(reason)
        self.countdown = countdown


def _tournament(proposal):
    return proposal.incident.tournament


# ---------------------------------------------------------------------------------------------
# The job: created from the approval's posting order, kicked after commit, swept when lost
# ---------------------------------------------------------------------------------------------


def _create_job(proposal):
    """The PostingJob of an approved proposal, from its posting order. Inside a transaction that
    holds the proposal's row lock. Refuses lines that no longer match the approval."""
    fingerprint, lines, total, total_cents = lines_summary(proposal)
    problem = None
    if fingerprint != proposal.approved_fingerprint:
        problem = "the proposal's lines no longer match the fingerprint approved; nothing posted"
    elif total_cents != proposal.total_cents or lines != proposal.lines_count:
        problem = (
            f"the proposal's lines add up to {total_cents} cents in {lines} lines, not the "
            f"approved {proposal.total_cents} cents in {proposal.lines_count}; nothing posted"
        )
    job = PostingJob.objects.create(
        proposal=proposal,
        wallet=proposal.wallet,
        wallet_identity=proposal.wallet_identity,
        total=total,
        total_cents=total_cents,
        lines_digest=fingerprint,
    )
    if problem:
        raise PostingStopped(problem)  # the job is recorded, so the page shows why
    return job


def schedule_posting(proposal: PayoutProposal, *, actor=None) -> PostingJob:
    """Create the job of an approved proposal now (normally the first run does it) and queue it
    once the caller's transaction commits. Used by the sweeper; idempotent."""
    with transaction.atomic():
        locked = PayoutProposal.objects.select_for_update(of=("self",)).get(pk=proposal.pk)
        if locked.status not in (Status.APPROVED, Status.POSTING):
            raise Refused(f"proposal {proposal.pk} is {locked.status}, not approved")
        job = PostingJob.objects.filter(proposal_id=proposal.pk).first()
        if job is None:
            try:
                job = _create_job(locked)
            except PostingStopped as exc:
                job = PostingJob.objects.get(proposal_id=proposal.pk)
                _fail(job, str(exc))
                return job
    transaction.on_commit(partial(kick_posting, proposal.pk))
    return job


def kick_posting(proposal_id: int) -> bool:
    """Queue the posting task. Never raises: with the broker down the job stays in the outbox
    and the sweeper queues it later. Returns whether the task was queued (or ran, in-process)."""
    PostingJob.objects.filter(proposal_id=proposal_id).update(queued_at=timezone.now())
    return queue_posting(proposal_id)


def sweep_unposted(*, stale_after: timedelta | None = None) -> list[int]:
    """Queue again every approved proposal that is not posted and not being posted.

    That is: approved proposals whose task never ran (the broker was down at approval), jobs
    queued but not started for a while (a lost message) once their backoff is over, and jobs
    whose worker stopped sending heartbeats (it was killed). A job still running elsewhere is
    safe to queue again: the job lock turns the second run into a no-op.
    """
    now = timezone.now()
    cutoff = now - (_stale_after() if stale_after is None else stale_after)
    requeued = []
    orphans = PayoutProposal.objects.filter(
        status=Status.APPROVED, posting_job=None, approved_at__lte=cutoff
    ).values_list("pk", flat=True)
    for proposal_id in orphans:
        log.info("sweeper: queueing the posting of proposal %s (never started)", proposal_id)
        if queue_posting(proposal_id):
            requeued.append(proposal_id)
    stale = PostingJob.objects.filter(
        (
            Q(state=State.QUEUED, queued_at__lte=cutoff)
            & (Q(retry_at__isnull=True) | Q(retry_at__lte=now))
        )
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
            try:
                with connection.cursor() as cursor:
                    cursor.execute(
                        "SELECT pg_advisory_unlock(%s, %s)", [_LOCK_NAMESPACE, proposal_id]
                    )
            except DatabaseError:
                pass  # the session is gone, and its locks with it


def post_proposal(proposal_id: int, *, max_chunks: int | None = None) -> str:
    """Post every credit of an approved proposal that is not posted yet. Idempotent.

    `max_chunks` stops after that many chunks, leaving the job running (to be continued by the
    next run); the task never passes it, tests use it to interleave runs.

    Returns the job's state afterwards, "busy" when another worker holds the job, or "refused"
    when this process is not configured for the job's wallet (the job waits, reason recorded).
    Raises PostingStopped when the job was marked failed, PostingDelayed when an outage stopped
    the run (retry after its countdown), any other error when a retry may help (the error and
    the attempt are recorded on the job first).
    """
    with _job_lock(proposal_id) as got:
        if not got:
            log.info("proposal %s is being posted by another worker", proposal_id)
            return "busy"
        try:
            job, wallet, lines_checked = _start(proposal_id)
        except WalletNotConfigured as exc:
            log.error("proposal %s not posted by this process: %s", proposal_id, exc)
            return "refused"
        if job is None:
            return PostingJob.objects.get(proposal_id=proposal_id).state
        try:
            done = _post_all(job, wallet, max_chunks=max_chunks, lines_checked=lines_checked)
        except PostingStopped:
            raise
        except (CashierStopped, CashierRefused) as exc:
            _fail(job, str(exc))
            raise PostingStopped(str(exc)) from exc
        except OUTAGES as exc:
            _outage(job, exc)  # raises PostingDelayed, or PostingStopped past the budget
        except Exception as exc:
            _record_error(job, exc)
            raise
        return State.POSTED if done else State.RUNNING


def _start(proposal_id):
    """Claim the job and mark it running (the proposal posting). (None, None) when there is
    nothing to do; raises WalletNotConfigured (after recording why) when this process must not
    touch the job."""
    refusal = stop = None
    with transaction.atomic():
        # Locks in the one order used everywhere: ... -> proposal -> job.
        proposal = (
            PayoutProposal.objects.select_for_update(of=("self",))
            .select_related("incident__tournament")
            .get(pk=proposal_id)
        )
        job = PostingJob.objects.select_for_update().filter(proposal_id=proposal_id).first()
        if proposal.status not in (Status.APPROVED, Status.POSTING) or (
            job is not None and job.state in (State.POSTED, State.FAILED)
        ):
            log.info("proposal %s: nothing to post (%s)", proposal_id, proposal.status)
            return None, None, False
        lines_checked = False
        if job is None:
            try:
                job = _create_job(proposal)
                lines_checked = True  # against the approved fingerprint, a moment ago
            except PostingStopped as exc:
                stop = str(exc)
                job = PostingJob.objects.get(proposal_id=proposal_id)
        job.proposal = proposal
        if stop is None:
            refusal = wallet_problem(job.wallet, job.wallet_identity)
            if refusal:
                # Not ours to touch: say why on the job and leave it waiting (queued).
                PostingJob.objects.filter(pk=job.pk).update(
                    state=State.QUEUED, last_error=f"waiting: {refusal}"
                )
            elif job.attempts >= max_attempts():
                stop = f"gave up after {job.attempts} attempts; last error: {job.last_error}"
            else:
                stop = _mark_running(job)
    if refusal:
        raise WalletNotConfigured(refusal)
    if stop:
        _fail(job, stop)
        raise PostingStopped(stop)
    return job, wallet_for_job(job.wallet, job.wallet_identity), lines_checked


def _mark_running(job):
    """Job running, proposal posting. A job found running was left by a worker that died: that
    is an outage (it never uses up attempts), until it outlasts the budget. Returns a reason to
    stop, or None."""
    proposal = job.proposal
    now = timezone.now()
    if job.state == State.RUNNING:
        job.outage_since = job.outage_since or job.heartbeat_at or now
        job.outage_retries += 1
        job.last_error = "the worker posting this job stopped without finishing (killed or crashed)"
        if now - job.outage_since > outage_budget():
            _alert_managers(job, job.last_error)
            return f"outage longer than the budget of {_budget_text()}: {job.last_error}"
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
                after={
                    "status": Status.POSTING,
                    "wallet": job.wallet,
                    "wallet_identity": job.wallet_identity,
                },
                tournament=_tournament(proposal),
            )
            proposal.status = Status.POSTING
    job.state = State.RUNNING
    job.started_at = job.started_at or now
    job.heartbeat_at = now
    job.save(
        update_fields=[
            "state", "started_at", "heartbeat_at", "outage_since", "outage_retries", "last_error"
        ]
    )  # fmt: skip
    return None


def _post_all(job, wallet, *, max_chunks=None, lines_checked=False):
    """Book the chunks after the job's last finished one, then (cashier) deliver every credit
    not yet confirmed; True when the proposal is posted."""
    proposal = job.proposal
    if lines_checked:
        fingerprint = job.lines_digest  # computed when this run created the job
    else:
        fingerprint, _, _, _ = lines_summary(proposal)
    if fingerprint != proposal.approved_fingerprint or fingerprint != job.lines_digest:
        _fail(job, "the proposal's lines no longer match what was approved; nothing more posted")
        raise PostingStopped("lines changed after approval")

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
            if wallet.external:
                # Booked is not paid: progress counts only what the cashier confirmed.
                _advance(job, through)
            else:
                # The ledger is the wallet: progress commits with the credits it counts.
                _advance(job, through, posted + credits, posted_cents + cents)
        after, posted, posted_cents = through, posted + credits, posted_cents + cents
        chunks += 1
    if wallet.external:
        _deliver_all(job, wallet)
    _finish(job)
    return True


def _advance(job, through, posted=None, posted_cents=None):
    """Record progress: absolute figures, and only forwards, so a repeated chunk changes nothing.
    Progress ends an outage."""
    fields = {
        "posted_through": through,
        "heartbeat_at": timezone.now(),
        "outage_since": None,
        "outage_retries": 0,
        "retry_at": None,
    }
    if posted is not None:
        fields.update(posted=posted, posted_cents=posted_cents)
    PostingJob.objects.filter(pk=job.pk, posted_through__lt=through).update(**fields)


def _beat(job):
    """The job is alive (for the sweeper), even while a slow cashier answers."""
    PostingJob.objects.filter(pk=job.pk).update(heartbeat_at=timezone.now())


# ---------------------------------------------------------------------------------------------
# Delivering to the cashier: batches of credits, many requests in flight, one commit per batch
# ---------------------------------------------------------------------------------------------

_COMPONENT_LABELS = dict(Component.choices)


def _deliver_all(job, wallet):
    """Send every booked credit of the proposal that the cashier has not confirmed yet, read
    CASHIER_BATCH at a time as the requests go out (one stream, no pause between pages)."""
    proposal = job.proposal
    tournament = _tournament(proposal).external_id
    page = max(1, getattr(settings, "CASHIER_BATCH", 2000))
    cents_by_key: dict[str, int] = {}

    def unconfirmed():
        last_key = ""
        while True:
            credits = list(
                Credit.objects.filter(proposal_id=proposal.pk, key__gt=last_key)
                .exclude(delivery__state=CashierDelivery.State.APPLIED)
                .order_by("key")
                .values(
                    "key",
                    "entry_id",
                    "component",
                    "player_id",
                    "currency",
                    "amount_cents",
                    "method",
                    "ticket_id",
                )[:page]
            )
            if not credits:
                return
            last_key = credits[-1]["key"]
            for c in credits:
                cents_by_key[c["key"]] = c["amount_cents"]
                label = _COMPONENT_LABELS[c["component"]]
                yield c["key"], credit_body(c, proposal.pk, tournament, label)

    wallet.deliver(
        unconfirmed(),
        record=partial(_record_deliveries, job, cents_by_key),
        heartbeat=partial(_beat, job),
        batch=max(50, min(500, page)),
    )


def _record_deliveries(job, cents_by_key, results):
    """One transaction per batch of answers: the deliveries (forward only: an applied one is
    never touched again) and the job's progress (what the cashier confirmed). Only credits
    without an applied delivery are ever sent, and one worker holds the job, so each applied
    answer adds one credit to the progress (the check constraint caps it at the total)."""
    table = connection.ops.quote_name(CashierDelivery._meta.db_table)
    now = timezone.now()
    rows = [
        (
            key,
            CashierDelivery.State.APPLIED if o.applied else CashierDelivery.State.FAILED,
            o.cashier_credit_id[:128],
            o.error,
            now,
        )
        for key, o in results
    ]
    with transaction.atomic():
        with connection.cursor() as cursor:
            cursor.executemany(
                f"INSERT INTO {table} (credit_id, state, cashier_credit_id, error, updated_at) "
                "VALUES (%s, %s, %s, %s, %s) ON CONFLICT (credit_id) DO UPDATE SET "
                "state = excluded.state, cashier_credit_id = excluded.cashier_credit_id, "
                "error = excluded.error, updated_at = excluded.updated_at "
                f"WHERE {table}.state <> 'applied'",
                rows,
            )
        confirmed = [key for key, o in results if o.applied]
        fields: dict[str, Any] = {"heartbeat_at": now}
        if confirmed:
            fields.update(
                posted=F("posted") + len(confirmed),
                posted_cents=F("posted_cents") + sum(cents_by_key.pop(k) for k in confirmed),
                outage_since=None,
                outage_retries=0,
                retry_at=None,
            )
        PostingJob.objects.filter(pk=job.pk).update(**fields)


def _cashier_applied(proposal_id):
    return CashierDelivery.objects.filter(
        credit__proposal_id=proposal_id, state=CashierDelivery.State.APPLIED
    ).aggregate(n=Count("pk"), cents=Sum("credit__amount_cents"))


# ---------------------------------------------------------------------------------------------
# Ending: posted, outage, error, failed
# ---------------------------------------------------------------------------------------------


def _finish(job):
    """Mark posted only when the job's wallet holds exactly the approved credits."""
    proposal = job.proposal
    problem = _final_check(job)
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
            outage_since=None,
            outage_retries=0,
            retry_at=None,
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
                "wallet": job.wallet,
                "wallet_identity": job.wallet_identity,
            },
            tournament=_tournament(proposal),
        )


def _final_check(job):
    """None when the ledger (and the job's cashier, if any) holds exactly the approved credits."""
    proposal = job.proposal
    booked = Credit.objects.filter(proposal_id=proposal.pk).aggregate(
        n=Count("pk"), cents=Sum("amount_cents")
    )
    if booked["n"] != job.total or (booked["cents"] or 0) != proposal.total_cents:
        return (
            f"the ledger holds {booked['n']} credits for {booked['cents'] or 0} cents, "
            f"the approved proposal {job.total} credits for {proposal.total_cents} cents"
        )
    if job.wallet == CASHIER:
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


def _budget_text():
    seconds = int(outage_budget().total_seconds())
    return (
        f"{seconds // 3600} h {seconds % 3600 // 60:02d} min" if seconds >= 3600 else f"{seconds} s"
    )


def _outage(job, exc):
    """An outage stopped this run: queue the job again after a capped exponential backoff,
    without using up an attempt; past the outage budget, fail it and alert the managers."""
    reason = f"{type(exc).__name__}: {exc}"[:2000]
    now = timezone.now()
    with transaction.atomic():
        fresh = PostingJob.objects.select_for_update().get(pk=job.pk)
        since = fresh.outage_since or now
        retries = fresh.outage_retries + 1
        if now - since > outage_budget():
            stop = f"outage longer than the budget of {_budget_text()}: {reason}"
        else:
            stop = None
            countdown = outage_backoff(retries)
            PostingJob.objects.filter(pk=job.pk).update(
                state=State.QUEUED,
                outage_since=since,
                outage_retries=retries,
                retry_at=now + timedelta(seconds=countdown),
                queued_at=now,
                last_error=(
                    f"waiting for the wallet (outage since {since:%Y-%m-%d %H:%M:%S} UTC, "
                    f"retry {retries} in {countdown:g} s): {reason}"
                ),
            )
    if stop:
        _alert_managers(job, reason)
        _fail(job, stop)
        raise PostingStopped(stop) from exc
    log.warning("posting of proposal %s waits %g s: %s", job.proposal_id, countdown, reason)
    raise PostingDelayed(reason, countdown) from exc


def _record_error(job, exc):
    """A real error: it uses up one attempt. The task retries later (the sweeper as a last
    resort); the run that uses the last attempt fails the job with the reason."""
    message = f"{type(exc).__name__}: {exc}"[:2000] or type(exc).__name__
    log.warning("posting of proposal %s stopped: %s", job.proposal_id, message)
    PostingJob.objects.filter(pk=job.pk, state=State.RUNNING).update(
        state=State.QUEUED, last_error=message, queued_at=timezone.now()
    )
    PostingJob.objects.filter(pk=job.pk).update(attempts=job.attempts + 1)
    if job.attempts + 1 >= max_attempts():
        _fail(job, f"gave up after {job.attempts + 1} attempts; last error: {message}")


def _manager_emails():
    return list(
        get_user_model()
        .objects.filter(groups__name=MANAGER, is_active=True)
        .exclude(email="")
        .values_list("email", flat=True)
        .distinct()
    )


def _alert_managers(job, reason):
    """E-mail the managers, once per outage, that a posting job outlasted the outage budget
    (after commit: a rolled-back decision sends nothing)."""
    changed = PostingJob.objects.filter(pk=job.pk, alerted_at__isnull=True).update(
        alerted_at=timezone.now()
    )
    if not changed:
        return
    proposal_id = job.proposal_id
    where = describe_wallet(job.wallet, job.wallet_identity)

    def send():
        recipients = _manager_emails()
        if not recipients:
            log.error(
                "posting of proposal %s outlasted its outage budget; no manager has an e-mail",
                proposal_id,
            )
            return
        send_mail(
            subject=f"Posting of proposal {proposal_id} stopped: outage longer than {_budget_text()}",
            message=(
                f"The refunds of proposal {proposal_id} could not be paid into {where} for more "
                f"than {_budget_text()}. Last error: {reason}\n\nNothing was paid twice; the "
                "job is marked failed. Once the wallet is back, resume the posting from the "
                "proposal's posting page: it continues where it stopped."
            ),
            from_email=None,
            recipient_list=recipients,
            fail_silently=True,
        )

    transaction.on_commit(send)


def _fail(job, reason):
    """Job failed (with its reason), proposal failed, audited; a manager may resume it. Runs in
    its own transaction (or the caller's)."""
    reason = reason or "stopped without a reason (report this)"
    with transaction.atomic():
        proposal = PayoutProposal.objects.select_for_update(of=("self",)).get(pk=job.proposal_id)
        PostingJob.objects.filter(pk=job.pk).update(
            state=State.FAILED, last_error=reason, finished_at=timezone.now(), retry_at=None
        )
        before = proposal.status
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
                tournament=_tournament(job.proposal),
            )
    log.error("posting of proposal %s failed: %s", proposal.pk, reason)


@transaction.atomic
def resume_posting(proposal: PayoutProposal, *, acting_user) -> None:
    """A manager sends a failed posting job back to the queue; it continues where it stopped,
    into the wallet chosen at approval. Credits the cashier refused are sent again under the
    same key; their refusal stays on record (deliveries only move forward) and in the audit."""
    require_role(acting_user, CAN_DECIDE, "resume posting")
    # Locks in the one order used everywhere: ... -> proposal -> job.
    locked = PayoutProposal.objects.select_for_update(of=("self",)).get(pk=proposal.pk)
    job = PostingJob.objects.select_for_update().filter(proposal_id=proposal.pk).first()
    if job is None or job.state != State.FAILED:
        raise Refused(f"proposal {proposal.pk}: posting has not failed, there is nothing to resume")
    if locked.status != Status.FAILED:
        raise Refused(f"proposal {proposal.pk} is not in the failed state")
    PayoutProposal.objects.filter(pk=proposal.pk, status=Status.FAILED).update(
        status=Status.APPROVED
    )
    previous_error = job.last_error
    refusals = list(
        CashierDelivery.objects.filter(
            credit__proposal_id=proposal.pk, state=CashierDelivery.State.FAILED
        ).values_list("credit_id", "error")
    )
    PostingJob.objects.filter(pk=job.pk).update(
        state=State.QUEUED,
        attempts=0,
        last_error="",
        finished_at=None,
        queued_at=timezone.now(),
        outage_since=None,
        outage_retries=0,
        retry_at=None,
        alerted_at=None,
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
        tournament=_tournament(locked),
    )
    transaction.on_commit(partial(kick_posting, proposal.pk))
    proposal.status = Status.APPROVED


# ---------------------------------------------------------------------------------------------
# Reading: progress bar, player lookup, reconciliation
# ---------------------------------------------------------------------------------------------


def posting_progress(proposal: PayoutProposal) -> dict:
    """What the progress bar shows. Before approval there is no job: state None; approved but
    not yet picked up by a worker (the first run creates the job): queued. `wallet` says where
    the money goes, as recorded at approval."""
    job = PostingJob.objects.filter(proposal_id=proposal.pk).first()
    if job is None:
        approved = proposal.status == Status.APPROVED
        return {
            "posted": 0,
            "total": 0,
            "posted_cents": 0,
            "total_cents": proposal.total_cents,
            "state": State.QUEUED if approved else None,
            "error": "",
            "percent": 0,
            "wallet": describe_wallet(proposal.wallet, proposal.wallet_identity)
            if proposal.wallet
            else "",
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
        "wallet": describe_wallet(job.wallet, job.wallet_identity),
    }


def player_credits(player_id: str) -> dict:
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


def reconcile(proposal_ids: list[int] | None = None) -> list[dict]:
    """Per approved proposal (or only those in `proposal_ids`): approved total vs credits booked,
    and vs the wallet the proposal was approved to be paid into, whatever this process's own
    settings. Rows with `ok` False are mismatches; a proposal paid into a cashier this process
    is not configured for cannot be checked, and says so (not ok)."""
    rows = []
    proposals = (
        PayoutProposal.objects.filter(
            status__in=[Status.APPROVED, Status.POSTING, Status.POSTED, Status.FAILED]
        )
        .select_related("posting_job")
        .order_by("pk")
    )
    if proposal_ids is not None:
        proposals = proposals.filter(pk__in=proposal_ids)
    cashiers: dict[str, CashierWallet] = {}
    for proposal in proposals:
        job = getattr(proposal, "posting_job", None)
        wallet = job.wallet if job else proposal.wallet
        identity = job.wallet_identity if job else proposal.wallet_identity
        booked = Credit.objects.filter(proposal_id=proposal.pk).aggregate(
            n=Count("pk"), cents=Sum("amount_cents")
        )
        row = {
            "proposal": proposal.pk,
            "status": proposal.status,
            "currency": proposal.currency,
            "wallet": wallet,
            "wallet_identity": identity,
            "approved_cents": proposal.total_cents,
            "booked_cents": booked["cents"] or 0,
            "booked_credits": booked["n"],
            "cashier_cents": None,
            "problems": [],
        }
        row["by_method"] = {
            method: {"ledger_cents": cents, "cashier_cents": None}
            for method, cents in Credit.objects.filter(proposal_id=proposal.pk)
            .values("method")
            .annotate(cents=Sum("amount_cents"))
            .order_by("method")
            .values_list("method", "cents")
        }
        if proposal.status == Status.POSTED and row["booked_cents"] != proposal.total_cents:
            row["problems"].append("posted, but the ledger differs from the approved total")
        if row["booked_cents"] > proposal.total_cents:
            row["problems"].append("the ledger holds more than was approved")
        if wallet == CASHIER:
            if wallet_problem(wallet, identity):
                # Loud, never "ok": this process cannot see the wallet the money went to.
                row["problems"].append(
                    f"paid into {describe_wallet(wallet, identity)}, which this process is not "
                    f"configured for: cannot check it (set CASHIER_URL={identity})"
                )
            elif booked["n"] or proposal.status == Status.POSTED:
                cashier = cashiers.setdefault(identity, cashier_at(identity))
                _compare_with_cashier(proposal, cashier, row)
        row["ok"] = not row["problems"]
        rows.append(row)
    return rows


def _compare_with_cashier(proposal, cashier, row):
    """Per credit, per method and per ticket (ledger.reconciliation)."""
    try:
        held = cashier.credits_for(f"proposal {proposal.pk} ")
    except (CashierUnavailable, CashierStopped) as exc:
        row["problems"].append(f"cashier unreachable: {exc}")
        return
    row["cashier_cents"] = sum(c["amount_cents"] for c in held)
    ours = Credit.objects.filter(proposal_id=proposal.pk).values(
        "key", "amount_cents", "method", "ticket_id"
    )
    found = compare(ours, held)
    row["by_method"] = {
        method: {
            "ledger_cents": found.ledger_by_method.get(method, 0),
            "cashier_cents": found.cashier_by_method.get(method, 0),
        }
        for method in sorted(set(found.ledger_by_method) | set(found.cashier_by_method))
    }
    row["tickets"] = {"ledger": found.ledger_tickets, "cashier": found.cashier_tickets}
    row["problems"].extend(found.problems(complete=proposal.status == Status.POSTED))
