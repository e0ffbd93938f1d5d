"""Staff e-mails, derived from the audit trail after commit (docs/notifications.md).

The lower layers (proposals, ledger, incidents) already write an audit event in the same
transaction as every state change. This module reads those events once they have committed --
kicked after commit via audit's `event_recorded` signal, swept every minute as a backstop -- and turns each
into e-mails, so no lower layer imports notifications, and nothing is e-mailed for a change that
rolled back. Each (kind, event, user) e-mail is a StaffNotification row with a unique key: a
second dispatcher, a repeated signal or the sweeper cannot send it twice.

- proposal.submitted -> the managers (not the submitter)
- proposal.approved / proposal.rejected (with the reason) -> the preparer
- ledger.posting_failed, and a posting job stuck (no progress for POSTING_STUCK_AFTER) -> managers
- incident.overdue_flagged -> the managers
- ledger.posted -> not an e-mail: the players' statements are scheduled (services.py)
"""

import logging
from datetime import timedelta

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.mail import send_mail
from django.db import IntegrityError, transaction
from django.db.models import Q
from django.urls import reverse
from django.utils import timezone

from refunds_admin.accounts.roles import MANAGER
from refunds_admin.audit.models import AuditEvent
from refunds_admin.audit.services import record
from refunds_admin.incidents.models import Incident
from refunds_admin.jobs.clock import db_now
from refunds_admin.ledger.models import PostingJob
from refunds_admin.payouts.money import display
from refunds_admin.proposals.models import PayoutProposal

from .models import (
    HANDLED_ACTIONS,
    STAFF_ACTIONS,
    HandledEvent,
    StaffKind,
    StaffNotification,
    StaffPreference,
)
from .services import schedule_statements

log = logging.getLogger(__name__)

# Events older than this are not notified any more (a restored backup does not e-mail anyone).
LOOKBACK = timedelta(days=2)


def _link(name, *args):
    return settings.SITE_URL + reverse(name, args=args)


def _managers():
    return list(
        get_user_model()
        .objects.filter(groups__name=MANAGER, is_active=True)
        .exclude(email="")
        .distinct()
    )


def _wanting(users, kind):
    """The users who have not turned this kind off."""
    off = set(
        StaffPreference.objects.filter(user__in=users, kind=kind, enabled=False).values_list(
            "user_id", flat=True
        )
    )
    return [u for u in users if u.pk not in off and u.email and u.is_active]


def preferences_of(user):
    """[(kind, label, enabled)] for the settings page."""
    off = set(
        StaffPreference.objects.filter(user=user, enabled=False).values_list("kind", flat=True)
    )
    return [(kind, label, kind not in off) for kind, label in StaffKind.choices]


@transaction.atomic
def set_preferences(user, enabled_kinds):
    """Turn each kind on (in `enabled_kinds`) or off for this user (audited when it changes)."""
    enabled_kinds = set(enabled_kinds)
    unknown = enabled_kinds - set(StaffKind.values)
    if unknown:
        raise ValueError(f"unknown notification kinds: {', '.join(sorted(unknown))}")
    before = sorted(kind for kind, _, on in preferences_of(user) if on)
    for kind in StaffKind.values:
        StaffPreference.objects.update_or_create(
            user=user, kind=kind, defaults={"enabled": kind in enabled_kinds}
        )
    after = sorted(enabled_kinds)
    if before != after:
        record(
            "notifications.preferences_changed",
            user,
            actor=user,
            before={"enabled": before},
            after={"enabled": after},
        )


# ---------------------------------------------------------------------------------------------
# From audit events to e-mails
# ---------------------------------------------------------------------------------------------


def dispatch_events(*, now=None):
    """Handle every recent audit event of interest not handled yet, then send what is pending.
    Returns the ids of the events handled by this call."""
    now = now or timezone.now()
    handled = []
    events = (
        AuditEvent.objects.filter(action__in=HANDLED_ACTIONS, created_at__gte=now - LOOKBACK)
        .exclude(pk__in=HandledEvent.objects.values("event_id"))
        .order_by("id")
        # Not the players an approval credits (100k ids, a megabyte of JSON to decode): no
        # e-mail needs them.
        .defer("player_ids")
    )
    for event in events:
        try:
            if handle_event(event):
                handled.append(event.pk)
        except Exception:
            # Left unhandled: the next sweep tries again.
            log.exception("could not derive notifications from audit event %s", event.pk)
    send_pending()
    return handled


def handle_event(event):
    """Derive this event's e-mails (or the statements' outbox) once. False if already done."""
    try:
        with transaction.atomic():
            HandledEvent.objects.create(event=event)
            if event.action == "ledger.posted":
                proposal = PayoutProposal.objects.get(pk=event.object_id)
                if proposal.status == PayoutProposal.Status.POSTED:
                    schedule_statements(proposal)
                return True
            kind = STAFF_ACTIONS[event.action]
            subject, body, recipients = _message_for(event)
            recipients = [u for u in _wanting(recipients, kind) if u.pk != event.actor_id]
            StaffNotification.objects.bulk_create(
                [
                    StaffNotification(
                        kind=kind,
                        reference=f"audit-event-{event.pk}",
                        user=user,
                        email=user.email,
                        subject=subject,
                        body=body,
                    )
                    for user in recipients
                ],
                ignore_conflicts=True,
            )
            return True
    except IntegrityError:
        return False  # another dispatcher handled it first


def _message_for(event):
    """(subject, body, candidate recipients) of a staff event."""
    if event.object_type == "incident":
        incident = Incident.objects.select_related("tournament").get(pk=event.object_id)
        t = incident.tournament
        minutes = int((timezone.now() - incident.failed_at).total_seconds() // 60)
        return (
            f"Overdue incident: {t.external_id} not resumed after 30 minutes",
            f"Tournament {t.external_id} ({t.name}) failed at "
            f"{incident.failed_at:%Y-%m-%d %H:%M} UTC, {minutes} minutes ago, and play has not "
            "resumed. Under the policy it is cancelled: please cancel the incident and have "
            f"the refund proposal prepared.\n\n{_link('incident_detail', incident.pk)}\n",
            _managers(),
        )
    proposal = PayoutProposal.objects.select_related("incident__tournament", "prepared_by").get(
        pk=event.object_id
    )
    t = proposal.incident.tournament
    what = (
        f"proposal v{proposal.version} for {t.external_id} ({t.name}), "
        f"{display(proposal.total_cents, proposal.currency, symbol=False)} to {proposal.lines_count:,} entries"
    )
    link = _link("proposal_detail", proposal.pk)
    if event.action == "proposal.submitted":
        return (
            f"Approval needed: {t.external_id} refunds, {display(proposal.total_cents, proposal.currency, symbol=False)}",
            f"{event.actor_name} submitted the {what}. It waits for the approval of a manager "
            f"who did not prepare it.\n\n{_link('proposal_approval', proposal.pk)}\n",
            _managers(),
        )
    if event.action == "proposal.approved":
        return (
            f"Approved: your {t.external_id} refund proposal",
            f"{event.actor_name} approved your {what}. Posting has started.\n\n{link}\n",
            [proposal.prepared_by],
        )
    if event.action == "proposal.rejected":
        return (
            f"Rejected: your {t.external_id} refund proposal",
            f"{event.actor_name} rejected your {what}.\n\nReason: "
            f"{event.reason or proposal.rejection_reason}\n\n{link}\n",
            [proposal.prepared_by],
        )
    # ledger.posting_failed
    return (
        f"Posting failed: {t.external_id} refunds",
        f"Posting the {what} failed and waits for a manager.\n\nReason: {event.reason}\n\n"
        f"{_link('proposal_posting', proposal.pk)}\n",
        _managers(),
    )


def check_stuck_postings(*, now=None):
    """Posting jobs that made no progress for POSTING_STUCK_AFTER (on the database's clock):
    the managers are told once per job and attempt. Returns the proposal ids reported."""
    now = now or db_now()
    cutoff = now - timedelta(seconds=settings.POSTING_STUCK_AFTER)
    State = PostingJob.State
    stuck = PostingJob.objects.filter(
        Q(state=State.QUEUED, queued_at__lte=cutoff)
        | Q(state=State.RUNNING, heartbeat_at__lte=cutoff)
        | Q(state=State.RUNNING, heartbeat_at__isnull=True, queued_at__lte=cutoff)
    ).select_related("proposal__incident__tournament")
    # Approved, and no run has picked the posting order up yet (the first run creates the job).
    never_started = PayoutProposal.objects.filter(
        status=PayoutProposal.Status.APPROVED, posting_job=None, approved_at__lte=cutoff
    ).select_related("incident__tournament")
    waiting = [
        (job.proposal, job.state, job.posted, job.total, job.heartbeat_at or job.queued_at,
         f"posting-{job.pk}-stuck-{job.attempts}")
        for job in stuck
    ] + [
        (p, "queued", 0, p.lines_count, p.approved_at, f"posting-order-{p.pk}-stuck")
        for p in never_started
    ]  # fmt: skip
    reported = []
    managers = _wanting(_managers(), StaffKind.POSTING)
    for proposal, state, posted, total, since, reference in waiting:
        t = proposal.incident.tournament
        if StaffNotification.objects.filter(kind=StaffKind.POSTING, reference=reference).exists():
            continue  # told already (the unique key also stops a concurrent sweep)
        StaffNotification.objects.bulk_create(
            [
                StaffNotification(
                    kind=StaffKind.POSTING,
                    reference=reference,
                    user=user,
                    email=user.email,
                    subject=f"Posting stuck: {t.external_id} refunds",
                    body=(
                        f"Posting proposal {proposal.pk} for {t.external_id} is {state} "
                        f"with {posted:,} of {total:,} credits posted and no progress "
                        f"since {since:%Y-%m-%d %H:%M} UTC. The sweeper queues it again; if it "
                        "stays stuck, check the workers and the cashier.\n\n"
                        f"{_link('proposal_posting', proposal.pk)}\n"
                    ),
                )
                for user in managers
            ],
            ignore_conflicts=True,
        )
        reported.append(proposal.pk)
    return reported


def send_pending(limit=500):
    """Send pending staff e-mails. Each is claimed (pending -> sending) before it is handed to
    the mail server, so two senders never send one twice; a sender killed in between leaves it
    `sending` (at most once: e-mail cannot be asked whether it arrived)."""
    sent = 0
    ids = list(
        StaffNotification.objects.filter(state=StaffNotification.State.PENDING)
        .order_by("id")
        .values_list("pk", flat=True)[:limit]
    )
    for pk in ids:
        claimed = StaffNotification.objects.filter(
            pk=pk, state=StaffNotification.State.PENDING
        ).update(state=StaffNotification.State.SENDING)
        if not claimed:
            continue
        note = StaffNotification.objects.get(pk=pk)
        try:
            send_mail(note.subject, note.body, None, [note.email])
        except Exception as exc:
            log.warning("staff e-mail %s to %s failed: %s", pk, note.email, exc)
            StaffNotification.objects.filter(pk=pk).update(
                state=StaffNotification.State.FAILED, error=str(exc)[:2000]
            )
            continue
        StaffNotification.objects.filter(pk=pk).update(
            state=StaffNotification.State.SENT, sent_at=timezone.now()
        )
        sent += 1
    return sent
