"""Player statements after posting: schedule (the outbox), deliver (the job), retry (a manager).

1. `schedule_statements()` runs once a proposal is posted (derived from its `ledger.posted`
   audit event, see staff.dispatch_events): in one transaction it writes the StatementJob and
   one StatementMessage per credited player -- with their address under the configured
   channel, or listed as `no_address` -- and queues the job after commit.
2. The task `notifications.deliver_statements` calls `deliver_statements()`: an advisory lock
   (one worker per job), then the pending messages in batches, sent with bounded concurrency,
   each batch's outcomes recorded in one transaction. A worker killed mid-batch leaves those
   messages pending; the next run sends them again with the same Idempotency-Key, which the
   webhook answers without delivering twice.
3. Refused messages (409/422, a bounced address) are listed as failed; a manager retries them.
"""

import json
import logging
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from functools import partial
from typing import Any

from django.conf import settings
from django.db import connection, transaction
from django.db.models import Count, Q
from django.db.models.functions import Coalesce
from django.utils import timezone

from refunds_admin.accounts.roles import CAN_DECIDE, require_role
from refunds_admin.audit.services import record
from refunds_admin.db import insert_rows
from refunds_admin.errors import Refused
from refunds_admin.jobs import locks
from refunds_admin.jobs.clock import now_expr
from refunds_admin.jobs.runtime import enqueue
from refunds_admin.ledger.models import Credit, Method
from refunds_admin.proposals.models import PayoutLine, PayoutProposal
from refunds_admin.proposals.services import statement_maker
from refunds_admin.tournaments.models import Entry

from .adapters import NotifierStopped, NotifierUnavailable, configured_channel, notifier_for
from .models import STATEMENT_JOBS, StatementJob, StatementMessage
from .statements import content_for

log = logging.getLogger(__name__)

State = StatementJob.State
MState = StatementMessage.State
DELIVER_TASK = "notifications.deliver_statements"


def statement_key(proposal_id, player_id):
    """The message's Idempotency-Key: one per (proposal, player), the same on every retry."""
    return f"statement/proposal-{proposal_id}/{player_id}"


# ---------------------------------------------------------------------------------------------
# The outbox
# ---------------------------------------------------------------------------------------------


def schedule_statements(proposal, *, channel=None):
    """Write the statements' outbox for a posted proposal (once; later calls return the job)."""
    if proposal.status != PayoutProposal.Status.POSTED:
        raise Refused(f"proposal {proposal.pk} is {proposal.status}: statements follow posting")
    channel = channel or configured_channel()
    notifier = notifier_for(channel)
    with transaction.atomic():
        job, created = StatementJob.objects.get_or_create(
            proposal=proposal,
            defaults={"channel": channel, "endpoint": notifier.endpoint, "total": 0},
        )
        if not created:
            return job
        now = timezone.now()
        if connection.vendor == "postgresql" and _address_source(notifier) in _ADDRESS_SQL:
            players, no_address = _write_messages_in_sql(job, proposal, notifier, now)
        else:
            players, no_address = _write_messages_in_python(job, proposal, notifier, now)
        StatementJob.objects.filter(pk=job.pk).update(
            total=players - no_address, no_address=no_address
        )
        record(
            "notifications.statements_scheduled",
            proposal,
            actor=None,
            after={
                "channel": channel,
                "endpoint": notifier.endpoint,
                "players": players,
                "no_address": no_address,
            },
            tournament=proposal.incident.tournament,
        )
        transaction.on_commit(partial(kick_statements, proposal.pk))
    job.refresh_from_db()
    return job


# Who is told: each player a line credits, with money or with a ticket given back (a freeroll's
# seat is worth 0.00 and still comes back: ledger.writers._is_credit). _MESSAGES_SQL says the
# same in SQL.
def _told_lines(lines):
    """The lines that may tell their player something (the rest have neither money nor a
    refund list); _is_told decides on each."""
    return lines.filter(Q(total_cents__gt=0) | Q(refunds__isnull=False))


def _is_told(total_cents, refunds):
    return total_cents > 0 or any(part["method"] == "ticket" for part in refunds or ())


# The columns of one StatementMessage row, as both writers below fill them.
_MESSAGE_COLUMNS = (
    "job_id", "proposal_id", "player_id", "screen_name", "entry_ids", "total_cents",
    "address", "idempotency_key", "state", "attempts", "remote_id", "error", "updated_at",
)  # fmt: skip


def _write_messages_in_python(job, proposal, notifier, now):
    """One message per credited player, built in Python (SQLite in development, or an adapter
    without an SQL address). Returns (players, players without an address)."""
    players: dict[str, list[Any]] = {}  # player -> [first position, entry ids, cents]
    lines = (
        _told_lines(PayoutLine.objects.filter(proposal_id=proposal.pk))
        .order_by("position")
        .values_list("position", "entry_id", "player_id", "total_cents", "refunds")
    )
    for position, entry_id, player_id, cents, refunds in lines.iterator(chunk_size=10_000):
        if not _is_told(cents, refunds):
            continue
        player = players.get(player_id)
        if player is None:
            player = players[player_id] = [position, [], 0]
        player[1].append(entry_id)
        player[2] += cents
    # The screen name is that of the player's first credited entry (a line's is its entry's:
    # PayoutLine).
    first = {player[0] for player in players.values()}
    names = {
        position: name
        for position, name in Entry.objects.filter(snapshot_id=proposal.snapshot_id)
        .exclude(screen_name="")
        .values_list("position", "screen_name")
        .iterator(chunk_size=10_000)
        if position in first
    }
    emails = dict(
        Entry.objects.filter(snapshot_id=proposal.snapshot_id)
        .exclude(email="")
        .values_list("entry_id", "email")
    )
    postgres = connection.vendor == "postgresql"
    rows = []
    no_address = 0
    for player_id, (position, entry_ids, cents) in players.items():
        screen_name = names.get(position, "")
        email = next((emails[e] for e in entry_ids if e in emails), "")
        address = notifier.address_for(player_id, email)
        state = MState.PENDING if address else MState.NO_ADDRESS
        no_address += not address
        rows.append(
            (
                job.pk, proposal.pk, player_id, screen_name,
                json.dumps(entry_ids) if postgres else entry_ids,
                cents, address, statement_key(proposal.pk, player_id), state,
                0, "", "", now,
            )
        )  # fmt: skip
    insert_rows(StatementMessage, _MESSAGE_COLUMNS, rows)
    return len(rows), no_address


# Each adapter's address, from the player's credited lines `l` (position order) and their
# snapshot entries `e`: the webhook is keyed by player id; e-mail takes the first of the
# player's entries that carries an address ('' when none does: listed as no_address).
_ADDRESS_SQL = {
    "player_id": ("l.player_id", ""),
    "email": (
        "coalesce((array_agg(e.email ORDER BY l.position) "
        "FILTER (WHERE e.email IS NOT NULL))[1], '')",
        f"LEFT JOIN {Entry._meta.db_table} e ON e.snapshot_id = %(snapshot)s "
        "AND e.entry_id = l.entry_id AND e.email <> ''",
    ),
}


def _address_source(notifier):
    return getattr(notifier, "address_source", None)


# The screen name is that of the player's first credited entry, read from the entry at that
# position (a line's is its entry's: PayoutLine), one lookup per player.
_MESSAGES_SQL = f"""
WITH players AS (
    SELECT l.player_id,
           jsonb_agg(l.entry_id ORDER BY l.position) AS entry_ids,
           sum(l.total_cents) AS cents,
           min(l.position) AS first_position,
           {{address}} AS address
    FROM {PayoutLine._meta.db_table} l {{join}}
    WHERE l.proposal_id = %(proposal)s
        AND (l.total_cents > 0 OR jsonb_path_exists(l.refunds, '$[*] ? (@.method == "ticket")'))
    GROUP BY l.player_id
), written AS (
    INSERT INTO {StatementMessage._meta.db_table} ({", ".join(_MESSAGE_COLUMNS)})
    SELECT %(job)s, %(proposal)s, p.player_id, f.screen_name, p.entry_ids, p.cents, p.address,
           'statement/proposal-' || %(proposal)s::text || '/' || p.player_id,
           CASE WHEN p.address <> '' THEN %(pending)s ELSE %(no_address)s END,
           0, '', '', %(now)s
    FROM players p
    JOIN {Entry._meta.db_table} f ON f.snapshot_id = %(snapshot)s AND f.position = p.first_position
    ORDER BY p.first_position
    RETURNING state
)
SELECT count(*), count(*) FILTER (WHERE state = %(no_address)s) FROM written
"""


def _write_messages_in_sql(job, proposal, notifier, now):
    """The same messages as `_write_messages_in_python`, in one INSERT ... SELECT on
    PostgreSQL: no line travels to Python and back. For a 100k-player posting this took about
    0.7 s where the Python loop, json.dumps per player and COPY took 5-6 s (issue 15,
    docs/performance.md). Messages are written in the order of each player's first credited
    line, as in Python, so they are sent in snapshot order. The key is `statement_key()`."""
    address, join = _ADDRESS_SQL[_address_source(notifier)]
    with connection.cursor() as cursor:
        cursor.execute(
            _MESSAGES_SQL.format(address=address, join=join),
            {
                "job": job.pk,
                "proposal": proposal.pk,
                "snapshot": proposal.snapshot_id,
                "pending": MState.PENDING,
                "no_address": MState.NO_ADDRESS,
                "now": now,
            },
        )
        players, no_address = cursor.fetchone()
    return players, no_address


def kick_statements(proposal_id):
    """Queue the delivery task; never raises (the sweeper queues it later if the broker is down)."""
    STATEMENT_JOBS.mark_queued(proposal_id=proposal_id)
    return enqueue(DELIVER_TASK, proposal_id)


def sweep_statements(*, stale_after=None):
    """Queue again statement jobs that were never picked up or whose worker stopped beating
    (on the database's clock)."""
    stale = STATEMENT_JOBS.stale(stale_after=stale_after).values_list("proposal_id", flat=True)
    return [pid for pid in stale if kick_statements(pid)]


# ---------------------------------------------------------------------------------------------
# Delivery (what the task runs)
# ---------------------------------------------------------------------------------------------


def deliver_statements(proposal_id, *, max_batches=None):
    """Send every pending statement of a proposal. Idempotent; returns the job's state after
    (or "busy"). Raises NotifierUnavailable when a retry may help (recorded on the job)."""
    with locks.advisory_lock(locks.STATEMENTS, proposal_id) as got:
        if not got:
            return "busy"
        job = _start(proposal_id)
        if job is None:
            return StatementJob.objects.get(proposal_id=proposal_id).state
        try:
            done = _send_all(job, max_batches=max_batches)
        except NotifierStopped as exc:
            _fail(job, str(exc))
            return State.FAILED
        except Exception as exc:
            _record_error(job, exc)
            raise
        return State.DONE if done else State.RUNNING


def _start(proposal_id):
    with transaction.atomic():
        job = StatementJob.objects.select_for_update().get(proposal_id=proposal_id)
        if job.state in (State.DONE, State.FAILED):
            return None
        if job.attempts >= settings.NOTIFY_MAX_ATTEMPTS and job.last_error:
            _fail(job, f"gave up after {job.attempts} attempts: {job.last_error}")
            return None
        # Holding the job's lock: a job found running was left by a worker that died.
        now = now_expr()
        StatementJob.objects.filter(pk=job.pk).update(
            state=State.RUNNING,
            attempts=job.attempts + 1,
            started_at=Coalesce("started_at", now),
            heartbeat_at=now,
        )
        job.refresh_from_db()
        return job


def _send_all(job, *, max_batches=None):
    notifier = notifier_for(job.channel)
    proposal = PayoutProposal.objects.select_related("incident__tournament").get(pk=job.proposal_id)
    tournament = proposal.incident.tournament
    label = f"{tournament.external_id} {tournament.name}".strip()
    # The engine's proposal is computed once, in this thread (it reads the database), and only
    # when there is something to send.
    maker: list[Callable[[str], str]] = []
    forms: dict[str, list[Any]] = {}

    def ensure_maker():
        if not maker:
            maker.append(statement_maker(proposal))
            forms.update(refund_forms(proposal.pk))

    def statement_of(entry_id):
        return maker[0](entry_id)

    def content(message):
        return content_for(
            message, statement_of, label, proposal.currency, lambda e: forms.get(e, [])
        )

    pending = StatementMessage.objects.filter(job=job)
    if notifier.claims_before_sending:
        # E-mail: a message left `sending` by a killed worker may or may not have gone out, and
        # SMTP cannot be asked. List it for a human instead of e-mailing the player twice.
        pending.filter(state=MState.SENDING).update(
            state=MState.FAILED,
            error="outcome unknown: the worker stopped while handing it to the mail server; "
            "check with the player before retrying",
            updated_at=timezone.now(),
        )
    unavailable = None
    last_id, fetched = 0, 0
    batch_size = settings.NOTIFY_BATCH_SIZE
    concurrency = 1 if notifier.claims_before_sending else max(1, settings.NOTIFY_CONCURRENCY)

    def next_batch():
        nonlocal last_id, fetched
        if max_batches is not None and fetched >= max_batches:
            return []
        batch = list(
            pending.filter(state=MState.PENDING, id__gt=last_id).order_by("id")[:batch_size]
        )
        if batch:
            last_id, fetched = batch[-1].id, fetched + 1
            ensure_maker()
        return batch

    def record(results):
        nonlocal unavailable
        stopped = _record_batch(job, results)
        unavailable = next(
            (r for _, r in results if isinstance(r, NotifierUnavailable)), unavailable
        )
        return stopped

    try:
        if notifier.claims_before_sending:
            # E-mail: one message at a time, each claimed in its own commit first.
            while batch := next_batch():
                stopped = record([_send_claimed(notifier, m, content) for m in batch])
                if stopped is not None:
                    raise stopped
        else:
            # Webhook: while one batch's outcomes are written, the next batch is being sent.
            with ThreadPoolExecutor(concurrency) as pool:
                in_flight = None
                while True:
                    batch = next_batch()
                    sending = [pool.submit(_send_one, notifier, content, m) for m in batch]
                    if in_flight is not None:
                        stopped = record([f.result() for f in in_flight])
                        if stopped is not None:
                            for future in sending:
                                future.cancel()
                            record([f.result() for f in sending if not f.cancelled()])
                            raise stopped
                    if not batch:
                        break
                    in_flight = sending
    finally:
        notifier.close()
    if unavailable is not None:
        raise unavailable
    if (
        max_batches is not None
        and fetched >= max_batches
        and pending.filter(state=MState.PENDING).exists()
    ):
        return False
    _finish(job)
    return True


def refund_forms(proposal_id) -> dict[str, list[Any]]:
    """{entry id: its credits} for the entries of a proposal given back partly as tickets or
    tournament money (read once per job, in the calling thread); the all-cash entries are not
    in it."""
    entries = set(
        Credit.objects.filter(proposal_id=proposal_id)
        .exclude(method=Method.CASH)
        .values_list("entry_id", flat=True)
    )
    out: dict[str, list[Any]] = {}
    if not entries:
        return out
    for credit in (
        Credit.objects.filter(proposal_id=proposal_id, entry_id__in=entries)
        .order_by("key")
        .values("entry_id", "method", "ticket_id", "amount_cents")
    ):
        out.setdefault(credit["entry_id"], []).append(credit)
    return out


def _send_one(notifier, content, message):
    """(message, Outcome or the exception): one message, with the adapter's own retries."""
    try:
        return message, notifier.send(message, content(message))
    except (NotifierStopped, NotifierUnavailable) as exc:
        return message, exc


def _send_claimed(notifier, message, content):
    """E-mail: claim (pending -> sending) in its own commit before handing the message over."""
    claimed = StatementMessage.objects.filter(pk=message.pk, state=MState.PENDING).update(
        state=MState.SENDING, updated_at=timezone.now()
    )
    if not claimed:
        return message, None
    return _send_one(notifier, content, message)


def _record_batch(job, results):
    """Record a batch's outcomes in one transaction; returns NotifierStopped if one came back."""
    now = timezone.now()
    changed, stopped = [], None
    for message, outcome in results:
        if outcome is None:
            continue
        message.attempts += 1
        message.updated_at = now
        if isinstance(outcome, NotifierStopped):
            stopped = stopped or outcome
            message.state = MState.PENDING
            message.error = str(outcome)
        elif isinstance(outcome, NotifierUnavailable):
            message.state = MState.PENDING
            message.error = str(outcome)
        elif outcome.sent:
            message.state, message.remote_id, message.sent_at = MState.SENT, outcome.remote_id, now
            message.error = ""
        else:
            message.state, message.error = MState.FAILED, outcome.error
        changed.append(message)
    with transaction.atomic():
        _update_messages(changed, now)
        _count(job, heartbeat=True)
    return stopped


def _update_messages(messages, now):
    """Write the batch's outcomes: one UPDATE ... FROM unnest(six arrays) on PostgreSQL.
    (Django's bulk_update builds a CASE per column and row, a hundred times slower at 2,000
    rows; a VALUES list of 12,000 parameters took this thread 75 ms a batch to compose, time
    taken from the sending threads: docs/performance.md, "The answers' headers".)"""
    if not messages:
        return
    if connection.vendor != "postgresql":
        StatementMessage.objects.bulk_update(
            messages, ["state", "attempts", "remote_id", "error", "sent_at", "updated_at"]
        )
        return
    with connection.cursor() as cursor:
        cursor.execute(
            """UPDATE notifications_statementmessage AS m
                SET state = v.state, attempts = v.attempts, remote_id = v.remote_id,
                    error = v.error, sent_at = v.sent_at, updated_at = %s
                FROM unnest(%s::bigint[], %s::text[], %s::integer[], %s::text[], %s::text[],
                            %s::timestamptz[]) AS v(id, state, attempts, remote_id, error, sent_at)
                WHERE m.id = v.id""",
            [
                now,
                [m.pk for m in messages],
                [m.state for m in messages],
                [m.attempts for m in messages],
                [m.remote_id for m in messages],
                [m.error for m in messages],
                [m.sent_at for m in messages],
            ],
        )


def _count(job, **extra):
    counts = dict(
        StatementMessage.objects.filter(job=job)
        .values("state")
        .annotate(n=Count("pk"))
        .values_list("state", "n")
    )
    fields: dict[str, Any] = {
        "sent": counts.get(MState.SENT, 0),
        "failed": counts.get(MState.FAILED, 0),
    }
    if extra.get("heartbeat"):
        fields["heartbeat_at"] = now_expr()
    StatementJob.objects.filter(pk=job.pk).update(**fields)
    return counts


def _finish(job):
    with transaction.atomic():
        counts = _count(job)
        now = now_expr()
        changed = StatementJob.objects.filter(pk=job.pk, state=State.RUNNING).update(
            state=State.DONE, finished_at=now, heartbeat_at=now, last_error=""
        )
        if changed:
            proposal = job.proposal
            record(
                "notifications.statements_sent",
                proposal,
                actor=None,
                after={
                    "sent": counts.get(MState.SENT, 0),
                    "failed": counts.get(MState.FAILED, 0),
                    "no_address": counts.get(MState.NO_ADDRESS, 0),
                    "channel": job.channel,
                },
                tournament=proposal.incident.tournament,
            )


def _record_error(job, exc):
    message = f"{type(exc).__name__}: {exc}"[:2000]
    log.warning("statements of proposal %s stopped: %s", job.proposal_id, message)
    StatementJob.objects.filter(pk=job.pk, state=State.RUNNING).update(
        state=State.QUEUED, last_error=message, queued_at=now_expr()
    )


def _fail(job, reason):
    with transaction.atomic():
        changed = StatementJob.objects.filter(
            pk=job.pk, state__in=[State.QUEUED, State.RUNNING]
        ).update(state=State.FAILED, last_error=reason, finished_at=timezone.now())
        if changed:
            proposal = job.proposal
            record(
                "notifications.statements_stopped",
                proposal,
                actor=None,
                reason=reason,
                after={"state": State.FAILED},
                tournament=proposal.incident.tournament,
            )
    log.error("statements of proposal %s stopped: %s", job.proposal_id, reason)


@transaction.atomic
def retry_statements(proposal, *, acting_user):
    """A manager sends the failed messages (and a stopped job) back to the queue. The same
    Idempotency-Keys are used: a message the webhook did receive is not delivered twice."""
    require_role(acting_user, CAN_DECIDE, "retry player statements")
    job = StatementJob.objects.select_for_update().filter(proposal_id=proposal.pk).first()
    if job is None:
        raise Refused(f"proposal {proposal.pk} has no statements to retry")
    failed = StatementMessage.objects.filter(job=job, state=MState.FAILED)
    errors = list(failed.values_list("player_id", "error")[:200])
    retried = failed.update(state=MState.PENDING, error="", updated_at=timezone.now())
    if not retried and job.state != State.FAILED:
        raise Refused(f"proposal {proposal.pk}: no failed statement to retry")
    before = {"state": job.state, "error": job.last_error, "failed": errors}
    StatementJob.objects.filter(pk=job.pk).update(
        state=State.QUEUED, attempts=0, last_error="", finished_at=None, queued_at=now_expr()
    )
    _count(job)
    record(
        "notifications.statements_retried",
        proposal,
        actor=acting_user,
        before=before,
        after={"state": State.QUEUED, "retried": retried},
        tournament=proposal.incident.tournament,
    )
    transaction.on_commit(partial(kick_statements, proposal.pk))
    return retried


# ---------------------------------------------------------------------------------------------
# Reading
# ---------------------------------------------------------------------------------------------


def statement_outbox(proposal):
    """The job (or None) and its counts, for the outbox page."""
    job = StatementJob.objects.filter(proposal_id=proposal.pk).first()
    if job is None:
        return None
    counts = dict(
        StatementMessage.objects.filter(job=job)
        .values("state")
        .annotate(n=Count("pk"))
        .values_list("state", "n")
    )
    # queued, running, stalled (resuming), failed (with the reason), done
    return {"job": job, "counts": counts, "status": STATEMENT_JOBS.status(job)}


# ---------------------------------------------------------------------------------------------
# A copy on request: support re-sends a player's statement, or sends it where the player asks
# ---------------------------------------------------------------------------------------------

SENT_ONCE = (
    PayoutProposal.Status.APPROVED,
    PayoutProposal.Status.POSTING,
    PayoutProposal.Status.POSTED,
    PayoutProposal.Status.FAILED,
)


def send_statement_copy(proposal, player_id, *, address="", acting_user):
    """E-mail the player's statement for an approved proposal (every entry of theirs) to
    `address`, or to the e-mail their snapshot entry carries. Support's answer to "I never got
    it" and "send it to my other address"; recorded in the history with the address.

    Sent before the audit event is written: an event says only what did happen. A refused
    address or a server that is down raises Refused and records nothing.
    """
    from django.core.exceptions import ValidationError
    from django.core.mail import EmailMultiAlternatives
    from django.core.validators import validate_email

    from refunds_admin.accounts.roles import CAN_PREPARE

    require_role(acting_user, CAN_PREPARE, "send player statements")
    if proposal.status not in SENT_ONCE:
        raise Refused(
            f"Proposal {proposal.pk} is {proposal.get_status_display().lower()}: a statement is "
            "sent once the proposal is approved."
        )
    lines = [
        (entry_id, cents)
        for entry_id, cents, refunds in _told_lines(
            PayoutLine.objects.filter(proposal=proposal, player_id=player_id)
        )
        .order_by("position")
        .values_list("entry_id", "total_cents", "refunds")
        if _is_told(cents, refunds)
    ]
    if not lines:
        raise Refused(f"Player {player_id} gets nothing from proposal {proposal.pk}.")
    address = (address or "").strip()
    if not address:
        address = (
            Entry.objects.filter(snapshot_id=proposal.snapshot_id, player_id=player_id)
            .exclude(email="")
            .values_list("email", flat=True)
            .first()
            or ""
        )
    if not address:
        raise Refused(
            f"The snapshot has no e-mail for player {player_id}: ask the player for one.",
            problems=[("E-mail address", "required")],
        )
    try:
        validate_email(address)
    except ValidationError:
        raise Refused(
            f"{address!r} is not an e-mail address.",
            problems=[("E-mail address", "not an e-mail address")],
        ) from None
    tournament = proposal.incident.tournament
    maker = statement_maker(proposal)

    class _Message:
        entry_ids = [entry_id for entry_id, _ in lines]
        total_cents = sum(cents for _, cents in lines)

    content = content_for(
        _Message, maker, f"{tournament.external_id} {tournament.name}".strip(), proposal.currency
    )
    email = EmailMultiAlternatives(subject=content.subject, body=content.text, to=[address])
    email.attach_alternative(content.html, "text/html")
    try:
        email.send()
    except Exception as exc:  # the server refused it or is down: nothing was sent
        raise Refused(f"The e-mail was not sent: {exc}") from exc
    with transaction.atomic():
        record(
            "notifications.statement_copy_sent",
            proposal,
            actor=acting_user,
            after={"player": player_id, "address": address, "entries": len(lines)},
            tournament=tournament,
            player_ids=[player_id],
        )
    return address
