"""Incidents and the 30-minute window.

An incident starts when play fails. If play resumes within 30 minutes of `failed_at` the incident
closes with no payout. If it has not resumed 30 minutes after `failed_at`, or a manager declares
it not resumable, the tournament is cancelled and a proposal can be prepared. The payout rule the
timing selects (the engine's `select_rule`) is shown before cancellation and stored on the
incident; it is recomputed whenever something it depends on changes (site-wide issue confirmed,
snapshot re-imported).
"""

from datetime import datetime
from typing import NamedTuple

from django.db import IntegrityError, transaction
from django.utils import timezone

from refunds_admin.accounts.roles import CAN_DECIDE, CAN_PREPARE, require_role
from refunds_admin.audit.services import record
from refunds_admin.errors import Refused
from refunds_admin.payouts import select_rule
from refunds_admin.tournaments.models import Tournament
from refunds_admin.tournaments.services import engine_snapshot

from .models import RESUME_WINDOW, Incident, RestartAttempt

RULE_WORDS = {
    "full_refund": "full refund of buy-in and fee",
    "in_the_money": "next prize plus chip equity, and the fee refunded",
    "not_in_the_money": "buy-in refunded plus chip equity, and the fee refunded",
}


class RulePreview(NamedTuple):
    rule: str
    sentence: str


# --------------------------------------------------------------------------------------------
# Reading the timing
# --------------------------------------------------------------------------------------------


def _check_moment(value, field, *, not_before=None, not_before_what="", now=None):
    """Problems with a moment staff typed: it must be an aware datetime, not in the future and
    not before `not_before`."""
    if not isinstance(value, datetime):
        return [(field, "is required (a date and time)")]
    if timezone.is_naive(value):
        return [(field, "has no time zone; give the offset (e.g. +00:00) or UTC")]
    now = now or timezone.now()
    if value > now:
        return [(field, f"{value.isoformat()} is in the future")]
    if not_before is not None and value < not_before:
        return [
            (field, f"{value.isoformat()} is before {not_before_what} {not_before.isoformat()}")
        ]
    return []


def _current_snapshot(tournament):
    snapshot = tournament.current_snapshot
    if snapshot is None:
        raise Refused(f"Tournament {tournament.external_id} has no snapshot; import one first.")
    return snapshot


def _check_failed_at(parsed, failed_at):
    # The start comes from the stored snapshot document, the one source the rule is computed
    # from, so the check, the rule and the elapsed time can never disagree.
    problems = _check_moment(
        failed_at,
        "failed_at",
        not_before=parsed.starts_at.at,
        not_before_what="the tournament's start",
    )
    if problems:
        raise Refused("The failure time was refused.", problems=problems)


def _elapsed_words(seconds):
    seconds = int(seconds)
    hours, rest = divmod(seconds, 3600)
    minutes, secs = divmod(rest, 60)
    if hours:
        return f"{hours} h {minutes} min"
    if secs:
        return f"{minutes} min {secs} s"
    return f"{minutes} min"


def rule_sentence(rule, *, elapsed_seconds, site_wide_issue, entries, active, paid_places):
    """The sentence shown beside the incident form, e.g. "failed 14 min after start: full refund
    of buy-in and fee to all 1,000 entries"."""
    when = f"failed {_elapsed_words(elapsed_seconds)} after start"
    if rule == "full_refund":
        why = "site-wide issues confirmed, " + when if site_wide_issue else when
        return f"{why}: full refund of buy-in and fee to all {entries:,} entries"
    if rule == "in_the_money":
        return (
            f"{when} with {active:,} entries left, within the {paid_places:,} paid places: "
            f"next prize plus chip equity, and the fee refunded, to the {active:,} active entries"
        )
    return (
        f"{when} with {active:,} entries left, more than the {paid_places:,} paid places: "
        f"buy-in refunded plus chip equity, and the fee refunded, to the {active:,} active entries"
    )


def _rule_for(parsed, failed_at, site_wide_issue):
    return select_rule(parsed, failed_at, bool(site_wide_issue))


def preview_rule(tournament, failed_at, site_wide_issue=False):
    """Which rule a failure at `failed_at` selects, and why, in one sentence. Read-only.

    Raises `Refused` for a failure time that would be refused when recorded.
    """
    snapshot = _current_snapshot(tournament)
    parsed = engine_snapshot(snapshot)
    _check_failed_at(parsed, failed_at)
    rule = _rule_for(parsed, failed_at, site_wide_issue)
    sentence = rule_sentence(
        rule,
        elapsed_seconds=(failed_at - parsed.starts_at.at).total_seconds(),
        site_wide_issue=site_wide_issue,
        entries=snapshot.entries_count,
        active=snapshot.active_count,
        paid_places=parsed.last_paid_place,
    )
    return RulePreview(rule, sentence)


def store_rule(incident, parsed, *, acting_user, why):
    """Recompute the incident's rule from the parsed current snapshot; audit a change."""
    rule = _rule_for(parsed, incident.failed_at, incident.site_wide_issue)
    if rule != incident.rule:
        before = incident.rule
        Incident.objects.filter(pk=incident.pk).update(rule=rule)
        incident.rule = rule
        record(
            "incident.rule_changed",
            incident,
            actor=acting_user,
            tournament=incident.tournament,
            before={"rule": before},
            after={"rule": rule},
            reason=why,
        )
    return rule


# --------------------------------------------------------------------------------------------
# State changes
# --------------------------------------------------------------------------------------------


def _locked(incident):
    """The incident re-read under a row lock, so that decisions use its committed state. Its
    tournament is locked first: the one lock order is tournament -> incident -> proposal -> job."""
    Tournament.objects.select_for_update().filter(pk=incident.tournament_id).first()
    return (
        Incident.objects.select_for_update(of=("self",))
        .select_related("tournament")
        .get(pk=incident.pk)
    )


def _sync(incident):
    """Bring the caller's instance up to date with the change just made, and return it."""
    incident.refresh_from_db()
    return incident


@transaction.atomic
def record_incident(tournament, *, failed_at, cause, description, acting_user):
    """Record that play failed at `failed_at`. The rule the timing selects is stored with it."""
    require_role(acting_user, CAN_PREPARE, "record incidents")
    tournament = Tournament.objects.select_for_update().get(pk=tournament.pk)
    snapshot = _current_snapshot(tournament)
    if tournament.frozen_at is not None:
        raise Refused(f"Tournament {tournament.external_id} is frozen: its payout was approved.")
    parsed = engine_snapshot(snapshot)
    problems = []
    if cause not in Incident.Cause.values:
        problems.append(("cause", f"{cause!r} is not one of {', '.join(Incident.Cause.values)}"))
    try:
        _check_failed_at(parsed, failed_at)
    except Refused as e:
        problems += e.problems
    if problems:
        raise Refused("The incident was refused; nothing was recorded.", problems=problems)
    live = tournament.incidents.filter(status__in=[Incident.Status.OPEN, Incident.Status.CANCELLED])
    if live.exists():
        raise Refused(
            f"Tournament {tournament.external_id} already has an incident that is open or "
            "cancelled; there is one incident per failure."
        )
    rule = _rule_for(parsed, failed_at, False)
    try:
        with transaction.atomic():
            incident = Incident.objects.create(
                tournament=tournament,
                failed_at=failed_at,
                cause=cause,
                description=description or "",
                recorded_by=acting_user,
                rule=rule,
            )
    except IntegrityError:
        raise Refused(
            "Another incident was recorded for this tournament at the same time."
        ) from None
    record(
        "incident.recorded",
        incident,
        actor=acting_user,
        tournament=tournament,
        after={
            "status": incident.status,
            "failed_at": failed_at.isoformat(),
            "cause": cause,
            "rule": rule,
            "snapshot_version": snapshot.version,
        },
        reason=description or "",
    )
    return incident


def _require_open(incident, doing):
    if incident.status != Incident.Status.OPEN:
        closed = {
            Incident.Status.RESUMED: "closed: play resumed",
            Incident.Status.CANCELLED: "closed: the tournament was cancelled",
        }[incident.status]
        raise Refused(f"Incident {incident.pk} is not open ({closed}); cannot {doing}.")


@transaction.atomic
def log_restart_attempt(incident, *, attempted_at, succeeded, note, acting_user):
    """Log an attempt to restart play. Whether play resumed is `mark_resumed`'s business."""
    require_role(acting_user, CAN_PREPARE, "log restart attempts")
    fresh = _locked(incident)
    _require_open(fresh, "log a restart attempt")
    problems = _check_moment(
        attempted_at, "attempted_at", not_before=fresh.failed_at, not_before_what="the failure"
    )
    if problems:
        raise Refused("The restart attempt was refused.", problems=problems)
    attempt = RestartAttempt.objects.create(
        incident=fresh,
        attempted_at=attempted_at,
        succeeded=bool(succeeded),
        note=note or "",
        recorded_by=acting_user,
    )
    record(
        "incident.restart_attempt",
        fresh,
        actor=acting_user,
        tournament=fresh.tournament,
        after={"attempted_at": attempted_at.isoformat(), "succeeded": bool(succeeded)},
        reason=note or "",
    )
    return attempt


@transaction.atomic
def mark_resumed(incident, *, resumed_at, acting_user):
    """Play resumed at `resumed_at`, within 30 minutes of the failure: closed, no payout."""
    require_role(acting_user, CAN_PREPARE, "mark play resumed")
    fresh = _locked(incident)
    _require_open(fresh, "mark play resumed")
    problems = _check_moment(
        resumed_at, "resumed_at", not_before=fresh.failed_at, not_before_what="the failure"
    )
    if problems:
        raise Refused("The resumption was refused.", problems=problems)
    if resumed_at > fresh.deadline:
        raise Refused(
            f"The 30-minute window passed at {fresh.deadline:%Y-%m-%d %H:%M:%S} UTC: play "
            f"resuming at {resumed_at:%H:%M:%S} does not count; the tournament is cancelled "
            "under the policy.",
            problems=[("resumed_at", "is more than 30 minutes after the failure")],
        )
    Incident.objects.filter(pk=fresh.pk, status=Incident.Status.OPEN).update(
        status=Incident.Status.RESUMED, resumed_at=resumed_at, closed_by=acting_user
    )
    record(
        "incident.resumed",
        fresh,
        actor=acting_user,
        tournament=fresh.tournament,
        before={"status": "open"},
        after={"status": "resumed", "resumed_at": resumed_at.isoformat()},
    )
    return _sync(incident)


def _cancel(fresh, *, because, reason, acting_user):
    now = timezone.now()
    changed = Incident.objects.filter(pk=fresh.pk, status=Incident.Status.OPEN).update(
        status=Incident.Status.CANCELLED,
        cancelled_at=now,
        cancelled_because=because,
        cancel_reason=reason,
        closed_by=acting_user if acting_user is not None else None,
    )
    if not changed:
        raise Refused(f"Incident {fresh.pk} was closed at the same time.")
    record(
        "incident.cancelled",
        fresh,
        actor=acting_user,
        tournament=fresh.tournament,
        before={"status": "open"},
        after={"status": "cancelled", "cancelled_because": because, "rule": fresh.rule},
        reason=reason,
    )


@transaction.atomic
def declare_not_resumable(incident, *, reason, acting_user):
    """A manager's decision that play cannot resume: the tournament is cancelled now."""
    require_role(acting_user, CAN_DECIDE, "declare a tournament not resumable")
    reason = (reason or "").strip()
    if not reason:
        raise Refused("A reason is required.", problems=[("reason", "is required")])
    fresh = _locked(incident)
    _require_open(fresh, "declare it not resumable")
    _cancel(
        fresh,
        because=Incident.CancelledBecause.NOT_RESUMABLE,
        reason=reason,
        acting_user=acting_user,
    )
    return _sync(incident)


@transaction.atomic
def cancel_after_window(incident, *, acting_user):
    """Cancel the tournament because play did not resume within 30 minutes of the failure.

    `acting_user` None is the system (the periodic check)."""
    if acting_user is not None:
        require_role(acting_user, CAN_PREPARE, "cancel a tournament")
    fresh = _locked(incident)
    _require_open(fresh, "cancel it")
    if timezone.now() < fresh.deadline:
        raise Refused(
            f"The 30-minute window is still running until {fresh.deadline:%Y-%m-%d %H:%M:%S} "
            "UTC; a manager can declare the tournament not resumable before then."
        )
    _cancel(
        fresh,
        because=Incident.CancelledBecause.WINDOW_PASSED,
        reason="",  # the cause is in `cancelled_because`; no one's judgement to record
        acting_user=acting_user,
    )
    return _sync(incident)


@transaction.atomic
def confirm_site_wide_issue(incident, *, justification, acting_user):
    """A manager's finding that site-wide issues impaired play: selects the full refund."""
    require_role(acting_user, CAN_DECIDE, "confirm a site-wide issue")
    justification = (justification or "").strip()
    if not justification:
        raise Refused("A justification is required.", problems=[("justification", "is required")])
    fresh = _locked(incident)
    if fresh.status == Incident.Status.RESUMED:
        raise Refused(f"Incident {fresh.pk} closed with play resumed: there is no payout.")
    if fresh.tournament.frozen_at is not None:
        raise Refused(
            f"Tournament {fresh.tournament.external_id} is frozen: its payout was approved."
        )
    if fresh.site_wide_issue:
        raise Refused(f"A site-wide issue was already confirmed for incident {fresh.pk}.")
    before_rule = fresh.rule
    parsed = engine_snapshot(_current_snapshot(fresh.tournament))
    rule = _rule_for(parsed, fresh.failed_at, True)
    Incident.objects.filter(pk=fresh.pk, site_wide_issue=False).update(
        site_wide_issue=True,
        site_wide_justification=justification,
        site_wide_confirmed_by=acting_user,
        rule=rule,
    )
    record(
        "incident.site_wide_confirmed",
        fresh,
        actor=acting_user,
        tournament=fresh.tournament,
        before={"site_wide_issue": False, "rule": before_rule},
        after={"site_wide_issue": True, "rule": rule},
        reason=justification,
    )
    return _sync(incident)


def overdue_incidents(now=None):
    """Open incidents whose 30-minute window has passed (for the dashboard and the periodic check)."""
    now = now or timezone.now()
    return Incident.objects.filter(status=Incident.Status.OPEN, failed_at__lt=now - RESUME_WINDOW)
