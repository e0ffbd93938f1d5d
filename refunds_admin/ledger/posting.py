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

Delivery to the cashier is in delivery.py; what the pages read, in selectors.py.

Failures are classified. The wallet being unavailable (cashier down or throttling, database or
broker unreachable, a worker killed mid-run) never uses up the job's attempts: the job waits with
capped exponential backoff for up to POSTING_UNAVAILABLE_BUDGET, then fails. A definite refusal (409/422: a human must look; 401/403: configuration) fails the job at once with the
cashier's reason. Any other error counts as an attempt; after POSTING_MAX_ATTEMPTS the job fails.
A failed job always says why (a database constraint insists), and its audit event
`ledger.posting_failed` is what e-mails the managers, once, by their notification settings
(notifications/staff.py).
"""

import logging
from datetime import timedelta
from functools import partial

from django.conf import settings
from django.db import DatabaseError, connection, transaction
from django.db.models import Count, Sum

from refunds_admin.accounts.roles import CAN_DECIDE, require_role
from refunds_admin.audit.services import record
from refunds_admin.errors import Refused
from refunds_admin.jobs import errors as dberrors
from refunds_admin.jobs import locks
from refunds_admin.jobs.clock import db_now, now_expr
from refunds_admin.jobs.runtime import enqueue_once
from refunds_admin.proposals.models import PayoutProposal
from refunds_admin.proposals.posting_order import (
    CASHIER,
    POSTING_TASK,
    queue_posting,
)

from .delivery import cashier_applied, deliver_all
from .models import POSTING_JOBS, CashierDelivery, Credit, PostingJob
from .recovery import note_progress
from .summary import record_posted_total
from .wallets import (
    CashierRefused,
    CashierStopped,
    CashierUnavailable,
    WalletNotConfigured,
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


def unavailable_budget() -> timedelta:
    """How long the wallet may stay unavailable before the job fails (the managers are told)."""
    return timedelta(seconds=getattr(settings, "POSTING_UNAVAILABLE_BUDGET", 7200))


def unavailable_backoff(retries: int) -> float:
    """Seconds before the next run, after `retries` runs stopped by the wallet being unavailable: doubled
    each time from POSTING_BACKOFF_BASE, capped at POSTING_BACKOFF_MAX."""
    return dberrors.backoff(
        retries,
        base=getattr(settings, "POSTING_BACKOFF_BASE", 5.0),
        cap=getattr(settings, "POSTING_BACKOFF_MAX", 300.0),
    )


# Namespace of the job's advisory lock (keyed by (namespace, proposal id)): the toolkit's.
_LOCK_NAMESPACE = locks.POSTING

# The wallet is unavailable: errors that say "not now" rather than "wrong": they never use up
# the job's attempts. A database error is one only when its SQLSTATE says the database is
# unavailable (jobs/errors.py): then the job waits for the database instead.
WALLET_UNAVAILABLE = (CashierUnavailable,)
WALLET, DATABASE = "wallet", "database"  # PostingJob.waiting_for


class PostingStopped(Exception):
    """The job stopped for a reason that retrying cannot fix; it is marked failed."""


class PostingDelayed(Exception):
    """The wallet was unavailable; the job is queued again after `countdown` seconds."""

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
    and the sweeper queues it later. Returns whether the task was queued (or ran, in-process).
    Stamps the job queued (the database's clock): the sweeper leaves it a stale period."""
    POSTING_JOBS.mark_queued(proposal_id=proposal_id)
    return queue_posting(proposal_id)


def sweep_unposted(*, stale_after: timedelta | None = None) -> list[int]:
    """Queue again every approved proposal that is not posted and not being posted.

    That is: approved proposals whose task never ran (the broker was down at approval), jobs
    queued but not started for a while (a lost message) once their backoff is over, and jobs
    whose worker stopped sending heartbeats (it was killed). A job still running elsewhere is
    safe to queue again: the job lock turns the second run into a no-op.
    """
    now = db_now()  # every stamp compared here is the database's, whatever this clock says
    period = _stale_after() if stale_after is None else stale_after
    requeued = []
    orphans = PayoutProposal.objects.filter(
        status=Status.APPROVED, posting_job=None, approved_at__lte=now - period
    ).values_list("pk", flat=True)
    for proposal_id in orphans:
        # No job row to stamp yet (the first run makes it): once per stale period.
        if enqueue_once(POSTING_TASK, proposal_id, within=max(1.0, period.total_seconds())):
            log.info("sweeper: queueing the posting of proposal %s (never started)", proposal_id)
            requeued.append(proposal_id)
    stale = POSTING_JOBS.stale(now, stale_after=period).values_list("proposal_id", flat=True)
    for proposal_id in stale:
        log.info("sweeper: queueing the posting of proposal %s again", proposal_id)
        if kick_posting(proposal_id):
            requeued.append(proposal_id)
    return requeued


# ---------------------------------------------------------------------------------------------
# Posting (what the task runs)
# ---------------------------------------------------------------------------------------------


def post_proposal(proposal_id: int, *, max_chunks: int | None = None) -> str:
    """Post every credit of an approved proposal that is not posted yet. Idempotent.

    `max_chunks` stops after that many chunks, leaving the job running (to be continued by the
    next run); the task never passes it, tests use it to interleave runs.

    Returns the job's state afterwards, "busy" when another worker holds the job, or "refused"
    when this process is not configured for the job's wallet (the job waits, reason recorded).
    Raises PostingStopped when the job was marked failed, PostingDelayed when the wallet was
    unavailable (retry after its countdown), any other error when a retry may help (the error and
    the attempt are recorded on the job first).
    """
    with locks.advisory_lock(locks.POSTING, proposal_id) as got:
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
            done = _post_racing(job, wallet, max_chunks=max_chunks, lines_checked=lines_checked)
        except PostingStopped:
            raise
        except (CashierStopped, CashierRefused) as exc:
            _fail(job, str(exc))
            raise PostingStopped(str(exc)) from exc
        except WALLET_UNAVAILABLE as exc:
            # raises PostingDelayed, or PostingStopped past the budget
            _wallet_unavailable(job, exc, waiting_for=WALLET)
        except DatabaseError as exc:
            if dberrors.classify(exc) == dberrors.Kind.UNAVAILABLE:
                # The database went away (restarted, connection killed): wait for it, using
                # up no attempt. A fresh connection records that, if it is back already.
                if not connection.in_atomic_block:
                    connection.close()
                _wallet_unavailable(job, exc, waiting_for=DATABASE)
            # A statement timeout, a full disk, a race lost too often: the attempt fails,
            # with the real reason, for a human.
            _record_error(job, exc)
            raise
        except Exception as exc:
            _record_error(job, exc)
            raise
        return State.POSTED if done else State.RUNNING


def _post_racing(job, wallet, **options):
    """_post_all, run again at once when the database chose it to lose a race (serialization
    failure, deadlock), up to RACE_RETRIES times: the chunk rolled back whole, nothing twice."""
    proposal = job.proposal
    for race in range(dberrors.RACE_RETRIES + 1):
        try:
            return _post_all(job, wallet, **options)
        except DatabaseError as exc:
            if dberrors.classify(exc) != dberrors.Kind.RETRY or race == dberrors.RACE_RETRIES:
                raise
            log.warning(
                "posting of proposal %s lost a race, again at once: %s",
                job.proposal_id,
                dberrors.describe(exc),
            )
            job.refresh_from_db()
            job.proposal = proposal
            options["lines_checked"] = False
    raise AssertionError("unreachable")


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
    counts as the wallet being unavailable (it never uses up attempts), until that outlasts the
    budget. Returns a reason to
    stop, or None."""
    proposal = job.proposal
    now = db_now()
    if job.state == State.RUNNING:
        job.wallet_unavailable_since = job.wallet_unavailable_since or job.heartbeat_at or now
        job.wallet_unavailable_retries += 1
        job.last_error = "the worker posting this job stopped without finishing (killed or crashed)"
        job.waiting_for = job.waiting_for or WALLET
        if now - job.wallet_unavailable_since > unavailable_budget():
            budget = _budget_text()
            return f"wallet unavailable for longer than the budget of {budget}: {job.last_error}"
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
            "state", "started_at", "heartbeat_at", "wallet_unavailable_since",
            "wallet_unavailable_retries", "last_error", "waiting_for",
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
        deliver_all(job, wallet)
    _finish(job)
    return True


def _advance(job, through, posted=None, posted_cents=None):
    """Record progress: absolute figures, and only forwards, so a repeated chunk changes nothing.
    Progress ends the wallet's unavailability."""
    fields = {
        "posted_through": through,
        "heartbeat_at": now_expr(),
        "wallet_unavailable_since": None,
        "wallet_unavailable_retries": 0,
        "retry_at": None,
    }
    if posted is not None:
        fields.update(posted=posted, posted_cents=posted_cents)
    PostingJob.objects.filter(pk=job.pk, posted_through__lt=through).update(**fields)
    # The first chunk after a wait: the page stops saying "waiting"; the history keeps it.
    note_progress(job)


# ---------------------------------------------------------------------------------------------
# Ending: posted, wallet unavailable, error, failed
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
        now = db_now()
        PostingJob.objects.filter(pk=job.pk).update(
            waiting_for="",
            state=State.POSTED,
            posted=job.total,
            posted_cents=job.total_cents,
            finished_at=now,
            heartbeat_at=now,
            last_error="",
            wallet_unavailable_since=None,
            wallet_unavailable_retries=0,
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
        applied = cashier_applied(proposal.pk)
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
    seconds = int(unavailable_budget().total_seconds())
    return (
        f"{seconds // 3600} h {seconds % 3600 // 60:02d} min" if seconds >= 3600 else f"{seconds} s"
    )


def _wallet_unavailable(job, exc, *, waiting_for=WALLET):
    """The wallet (or the database, `waiting_for`) was unavailable: queue the job again after a
    capped exponential backoff, without using up an attempt; past the budget, fail it (the
    failure tells the managers)."""
    reason = (
        dberrors.describe(exc) if waiting_for == DATABASE else f"{type(exc).__name__}: {exc}"
    )[:2000]
    now = db_now()
    with transaction.atomic():
        fresh = PostingJob.objects.select_for_update().get(pk=job.pk)
        since = fresh.wallet_unavailable_since or now
        retries = fresh.wallet_unavailable_retries + 1
        if now - since > unavailable_budget():
            stop = (
                f"{waiting_for} unavailable for longer than the budget of {_budget_text()}: "
                f"{reason}"
            )
        else:
            stop = None
            countdown = unavailable_backoff(retries)
            PostingJob.objects.filter(pk=job.pk).update(
                state=State.QUEUED,
                waiting_for=waiting_for,
                wallet_unavailable_since=since,
                wallet_unavailable_retries=retries,
                retry_at=now + timedelta(seconds=countdown),
                queued_at=now,
                last_error=(
                    f"waiting for the {waiting_for} (unavailable since "
                    f"{since:%Y-%m-%d %H:%M:%S} UTC, retry {retries} in {countdown:g} s): {reason}"
                ),
            )
    if stop:
        _fail(job, stop)
        raise PostingStopped(stop) from exc
    log.warning("posting of proposal %s waits %g s: %s", job.proposal_id, countdown, reason)
    raise PostingDelayed(reason, countdown) from exc


def _record_error(job, exc):
    """A real error: it uses up one attempt. The task retries later (the sweeper as a last
    resort); the run that uses the last attempt fails the job with the reason."""
    message = (
        dberrors.describe(exc)
        if dberrors.classify(exc)
        else f"{type(exc).__name__}: {exc}" or type(exc).__name__
    )[:2000]
    message = f"attempt {job.attempts + 1} of {max_attempts()} failed: {message}"
    log.warning("posting of proposal %s stopped: %s", job.proposal_id, message)
    PostingJob.objects.filter(pk=job.pk, state=State.RUNNING).update(
        state=State.QUEUED, last_error=message, queued_at=now_expr(), waiting_for=""
    )
    PostingJob.objects.filter(pk=job.pk).update(attempts=job.attempts + 1)
    if job.attempts + 1 >= max_attempts():
        _fail(job, f"gave up after {job.attempts + 1} attempts; last error: {message}")


def _fail(job, reason):
    """Job failed (with its reason), proposal failed, audited; a manager may resume it. Runs in
    its own transaction (or the caller's)."""
    reason = reason or "stopped without a reason (report this)"
    with transaction.atomic():
        proposal = PayoutProposal.objects.select_for_update(of=("self",)).get(pk=job.proposal_id)
        PostingJob.objects.filter(pk=job.pk).update(
            state=State.FAILED, last_error=reason, finished_at=now_expr(), retry_at=None
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
        queued_at=now_expr(),
        waiting_for="",
        wallet_unavailable_since=None,
        wallet_unavailable_retries=0,
        retry_at=None,
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
