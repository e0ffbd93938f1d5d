"""Outages: recording one failure across many tournaments, and its one 30-minute window.

Every step calls the single-tournament services of `incidents` for each affected tournament
(record_incident, mark_resumed, declare_not_resumable, cancel_after_window,
confirm_site_wide_issue), so each incident is exactly what the single-tournament flow would have
recorded, with its own audit events; the outage adds its own event for the decision taken once.
Every step is one transaction: all tournaments or none.
"""

from datetime import datetime

from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from refunds_admin.accounts.roles import CAN_DECIDE, CAN_PREPARE, require_role
from refunds_admin.audit.services import record
from refunds_admin.errors import Conflict, Refused
from refunds_admin.incidents import services as incident_services
from refunds_admin.incidents.models import Incident
from refunds_admin.payouts.money import json_type
from refunds_admin.payouts.snapshot import EARLIEST, MAX_ID_LENGTH, text_problem
from refunds_admin.tournaments.models import Tournament

from .models import Outage, OutageIncident

LIVE = (Incident.Status.OPEN, Incident.Status.CANCELLED)


# --------------------------------------------------------------------------------------------
# Reading
# --------------------------------------------------------------------------------------------


def incidents_of(outage):
    """The outage's incidents, with their tournaments, in the order they were added."""
    return (
        Incident.objects.filter(outage_membership__outage=outage)
        .select_related("tournament")
        .order_by("outage_membership__id")
    )


def is_open(outage):
    """An outage is open while at least one of its tournaments is still waiting for a decision
    (not resumed, not cancelled). Tournaments can be added only then."""
    return incidents_of(outage).filter(status=Incident.Status.OPEN).exists()


def tournaments_running_at(failed_at, q="", *, limit=None):
    """Tournaments that were running at `failed_at`: play had started, the current snapshot
    still has active entries, no payout was approved, and no incident is open or cancelled for
    them already. `q` searches the id and the name."""
    tournaments = (
        Tournament.objects.filter(
            current_snapshot__isnull=False,
            current_snapshot__active_count__gt=0,
            starts_at__lte=failed_at,
            frozen_at__isnull=True,
        )
        .exclude(incidents__status__in=LIVE)
        .select_related("current_snapshot")
        # Their sizes and versions, not their documents and parsed forms (megabytes each).
        .defer("current_snapshot__document_zlib", "current_snapshot__parsed")
        .order_by("external_id")
    )
    q = (q or "").strip()
    if q:
        tournaments = tournaments.filter(Q(external_id__icontains=q) | Q(name__icontains=q))
    return tournaments[:limit] if limit else tournaments


def already_recorded(*, failed_at, cause, tournaments):
    """The outage recorded with exactly this failure time and cause for exactly these
    tournaments, or None: a call the platform retried (after a timeout) gets the same answer
    instead of a refusal."""
    wanted = {t.pk for t in tournaments}
    for outage in Outage.objects.filter(failed_at=failed_at, cause=cause).order_by("pk"):
        members = set(incidents_of(outage).values_list("tournament_id", flat=True))
        if members == wanted:
            return outage
    return None


def _differs(recorded):
    shown = recorded if len(recorded) <= 200 else recorded[:200] + "..."
    return f"differs from the description recorded: {shown!r}"


def _id_problem(value):
    """Why one item of `external_ids` cannot be a tournament's id, or None."""
    if not isinstance(value, str):
        return f"must be a tournament id string, not a JSON {json_type(value)}"
    if not value.strip():
        return "must not be empty"
    # An id no snapshot can carry (docs/snapshot-limits.md) is not looked up: PostgreSQL cannot
    # even compare a NUL or a lone surrogate. The engine's words, as for a snapshot's ids.
    return text_problem(value, MAX_ID_LENGTH)


def resolve_external_ids(external_ids):
    """Tournaments for the platform's external ids, and a problem per unknown or snapshot-less
    one (as (external_id, message) pairs)."""
    problems = []
    if not isinstance(external_ids, list) or not external_ids:
        return [], [("external_ids", "must be a non-empty list of tournament ids")]
    # An item that is not an id is named by its place in the list (`external_ids[3]`), never by
    # itself: it may be a number, an empty string or 10,000 characters.
    malformed = [
        (f"external_ids[{i}]", why)
        for i, why in enumerate(map(_id_problem, external_ids))
        if why is not None
    ]
    if malformed:
        return [], malformed
    found = {t.external_id: t for t in Tournament.objects.filter(external_id__in=external_ids)}
    tournaments, seen = [], set()
    for external_id in external_ids:
        if external_id in seen:
            problems.append((external_id, "is listed twice"))
            continue
        seen.add(external_id)
        tournament = found.get(external_id)
        if tournament is None:
            problems.append((external_id, "unknown tournament: import its snapshot first"))
        elif tournament.current_snapshot_id is None:
            problems.append((external_id, "has no snapshot: import one first"))
        else:
            tournaments.append(tournament)
    return tournaments, problems


# --------------------------------------------------------------------------------------------
# Recording
# --------------------------------------------------------------------------------------------


def _check_outage_fields(failed_at, cause):
    problems = []
    if not isinstance(failed_at, datetime):
        problems.append(("failed_at", "is required (a date and time)"))
    elif timezone.is_naive(failed_at):
        problems.append(("failed_at", "has no time zone; give the offset (e.g. +00:00) or UTC"))
    elif failed_at > timezone.now():
        problems.append(("failed_at", f"{failed_at.isoformat()} is in the future"))
    elif failed_at < EARLIEST:
        # As for a snapshot's times: year 1 in some time zone cannot even be shifted to UTC.
        problems.append(("failed_at", f"{failed_at.isoformat()} is before 2000-01-01"))
    if cause not in Incident.Cause.values:
        problems.append(("cause", f"{cause!r} is not one of {', '.join(Incident.Cause.values)}"))
    return problems


def _join(outage, tournament, *, acting_user, why):
    """Record the tournament's own incident (the single-tournament service) and make it a member.
    Raises Refused naming the tournament."""
    try:
        with transaction.atomic():
            incident = incident_services.record_incident(
                tournament,
                failed_at=outage.failed_at,
                cause=outage.cause,
                description=outage.description,
                acting_user=acting_user,
            )
    except Refused as exc:
        details = "; ".join(f"{where}: {what}" for where, what in exc.problems)
        raise Refused(
            exc.message, problems=[(tournament.external_id, details or exc.message)]
        ) from None
    OutageIncident.objects.create(outage=outage, incident=incident, added_by=acting_user)
    record(
        "incident.joined_outage",
        incident,
        actor=acting_user,
        tournament=tournament,
        after={"outage": outage.pk, "failed_at": outage.failed_at.isoformat()},
        reason=why,
    )
    return incident


def _lock_tournaments(tournaments):
    """Lock the tournaments in id order, before any of their incidents (the one lock order,
    tournament first, as proposals.batches._lock_in_order): two calls recording an outage over
    the same tournaments queue behind each other on the first one they share, and neither
    deadlocks with the other whatever order their lists name them in."""
    list(
        Tournament.objects.select_for_update()
        .filter(pk__in=[t.pk for t in tournaments])
        .order_by("pk")
        .values_list("pk", flat=True)
    )


@transaction.atomic
def record_outage(*, failed_at, cause, description, tournaments, acting_user, people_involved=""):
    """Record an outage and one incident per affected tournament, all or nothing.

    Raises Refused listing every problem (per field, and per tournament by its external id) when
    anything is wrong; then nothing is recorded.
    """
    require_role(acting_user, CAN_PREPARE, "record outages")
    problems = _check_outage_fields(failed_at, cause)
    unique = sorted({t.pk: t for t in tournaments or []}.values(), key=lambda t: t.external_id)
    if not unique:
        problems.append(("tournaments", "choose at least one affected tournament"))
    if problems:
        raise Refused("The outage was refused; nothing was recorded.", problems=problems)
    _lock_tournaments(unique)
    outage = Outage.objects.create(
        failed_at=failed_at,
        cause=cause,
        description=description or "",
        people_involved=people_involved or "",
        recorded_by=acting_user,
    )
    for tournament in unique:
        try:
            _join(outage, tournament, acting_user=acting_user, why="recorded with the outage")
        except Refused as exc:
            problems += exc.problems
    if problems:
        # Raising rolls back the outage and every incident recorded before the problem.
        raise Refused("The outage was refused; nothing was recorded.", problems=problems)
    record(
        "outage.recorded",
        outage,
        actor=acting_user,
        after={
            "failed_at": failed_at.isoformat(),
            "cause": cause,
            "tournaments": [t.external_id for t in unique],
            "count": len(unique),
        },
        reason=description or "",
    )
    return outage


@transaction.atomic
def record_outage_for_external_ids(
    *, failed_at, cause, description, external_ids, acting_user, people_involved=""
):
    """The API's entry point: tournaments named by the platform's ids, every problem at once.
    Returns (outage, created): the same call again returns the outage already recorded, also
    when it arrives while the first is still being recorded. The same failure time, cause and
    tournaments with another description raise Conflict (nothing is changed)."""
    require_role(acting_user, CAN_PREPARE, "record outages")
    tournaments, problems = resolve_external_ids(external_ids)
    problems = _check_outage_fields(failed_at, cause) + problems
    if problems:
        raise Refused("The outage was refused; nothing was recorded.", problems=problems)
    # A platform that timed out may send the call again before the first has committed: the
    # retry waits here for the first to finish, then finds its outage below instead of being
    # refused because its own tournaments already have incidents.
    _lock_tournaments(tournaments)
    existing = already_recorded(failed_at=failed_at, cause=cause, tournaments=tournaments)
    if existing is not None:
        # A retry is the same call: the failure time, cause and tournaments make the outage, and
        # the description must match too. A different one is refused rather than dropped (the
        # platform would believe it recorded) or applied (an outage is changed by staff, on its
        # page, audited; never by a repeated POST).
        if existing.description != (description or ""):
            raise Conflict(
                f"Outage {existing.pk} was already recorded for this failure time, cause and "
                "these tournaments, with another description; nothing was changed.",
                problems=[("description", _differs(existing.description))],
            )
        return existing, False
    outage = record_outage(
        failed_at=failed_at,
        cause=cause,
        description=description,
        tournaments=tournaments,
        acting_user=acting_user,
        people_involved=people_involved,
    )
    return outage, True


def _locked(outage):
    return Outage.objects.select_for_update().get(pk=outage.pk)


def _sync(outage):
    outage.refresh_from_db()
    return outage


@transaction.atomic
def add_tournament(outage, tournament, *, acting_user, second_factor):
    """Add a tournament found later to an open outage: its incident gets the outage's failure
    time and cause, and the outage's site-wide finding when one was confirmed.

    `second_factor`: the request comes from a session signed in with both factors (views pass
    accounts.mfa.session_verified; commands and tests True). Applying a finding is a money
    decision, made only from such a session: checked here, under the outage's lock, so that a
    finding confirmed a moment before the request is not applied without it."""
    require_role(acting_user, CAN_PREPARE, "add tournaments to an outage")
    fresh = _locked(outage)
    if not is_open(fresh):
        raise Refused(
            f"Outage {fresh.pk} is closed: every tournament in it was resumed or cancelled."
        )
    if fresh.site_wide_issue:
        # The finding is a manager's decision; applying it to one more tournament is too.
        require_role(
            acting_user, CAN_DECIDE, "add a tournament to an outage with a site-wide finding"
        )
        if not second_factor:
            raise Refused(
                f"Outage {fresh.pk} has a site-wide finding, which adding a tournament applies "
                "to it: type the code from your authenticator app first. Nothing was changed."
            )
    incident = _join(fresh, tournament, acting_user=acting_user, why="added to the outage later")
    if fresh.site_wide_issue:
        # The finding stays its author's; this manager applied it (both chose the rule).
        incident_services.confirm_site_wide_issue(
            incident,
            justification=fresh.site_wide_justification,
            acting_user=acting_user,
            finding_by=fresh.site_wide_confirmed_by,
        )
    record(
        "outage.tournament_added",
        fresh,
        actor=acting_user,
        tournament=tournament,
        after={"tournament": tournament.external_id, "incident": incident.pk},
    )
    return incident


def _members(outage, incident_ids):
    """The outage's incidents with these ids; Refused for any that is not one of them."""
    incidents = list(incidents_of(outage).filter(pk__in=incident_ids))
    missing = set(incident_ids) - {i.pk for i in incidents}
    if missing:
        raise Refused(
            f"Incidents {', '.join(map(str, sorted(missing)))} are not part of outage {outage.pk}."
        )
    return incidents


def _each(incidents, action):
    """Run `action` on every incident; collect every refusal by tournament, then refuse all."""
    problems = []
    for incident in incidents:
        try:
            with transaction.atomic():
                action(incident)
        except Refused as exc:
            details = "; ".join(f"{where}: {what}" for where, what in exc.problems)
            problems.append(
                (
                    incident.tournament.external_id,
                    exc.message + (f" ({details})" if details else ""),
                )
            )
    return problems


@transaction.atomic
def mark_resumed(outage, incident_ids, *, resumed_at, acting_user):
    """Per-tournament resumed marks: play resumed on these tournaments within the window."""
    require_role(acting_user, CAN_PREPARE, "mark play resumed")
    fresh = _locked(outage)
    incidents = _members(fresh, incident_ids)
    if not incidents:
        raise Refused(
            "Choose the tournaments where play resumed.", problems=[("incidents", "none chosen")]
        )
    problems = _each(
        incidents,
        lambda i: incident_services.mark_resumed(i, resumed_at=resumed_at, acting_user=acting_user),
    )
    if problems:
        raise Refused("Nothing was marked resumed.", problems=problems)
    record(
        "outage.resumed_marked",
        fresh,
        actor=acting_user,
        after={
            "resumed_at": resumed_at.isoformat(),
            "tournaments": [i.tournament.external_id for i in incidents],
        },
    )
    return incidents


def _open_incidents(outage):
    return list(incidents_of(outage).filter(status=Incident.Status.OPEN))


@transaction.atomic
def declare_rest_not_resumable(outage, *, reason, acting_user):
    """A manager's one decision: every tournament of the outage still open is not resumable."""
    require_role(acting_user, CAN_DECIDE, "declare tournaments not resumable")
    reason = (reason or "").strip()
    if not reason:
        raise Refused("A reason is required.", problems=[("reason", "is required")])
    fresh = _locked(outage)
    incidents = _open_incidents(fresh)
    if not incidents:
        raise Refused(f"Outage {fresh.pk} has no tournament still open.")
    problems = _each(
        incidents,
        lambda i: incident_services.declare_not_resumable(
            i, reason=reason, acting_user=acting_user
        ),
    )
    if problems:
        raise Refused("No tournament was declared not resumable.", problems=problems)
    now = timezone.now()
    Outage.objects.filter(pk=fresh.pk).update(
        rest_declared_by=acting_user, rest_declared_at=now, rest_reason=reason
    )
    record(
        "outage.rest_not_resumable",
        fresh,
        actor=acting_user,
        after={
            "tournaments": [i.tournament.external_id for i in incidents],
            "count": len(incidents),
        },
        reason=reason,
    )
    return _sync(outage)


@transaction.atomic
def cancel_rest_after_window(outage, *, acting_user):
    """The 30-minute window of the outage passed: cancel every tournament still open."""
    require_role(acting_user, CAN_PREPARE, "cancel tournaments")
    fresh = _locked(outage)
    if timezone.now() < fresh.deadline:
        raise Refused(
            f"The 30-minute window is still running until {fresh.deadline:%Y-%m-%d %H:%M:%S} "
            "UTC; a manager can declare the rest not resumable before then."
        )
    incidents = _open_incidents(fresh)
    if not incidents:
        raise Refused(f"Outage {fresh.pk} has no tournament still open.")
    problems = _each(
        incidents, lambda i: incident_services.cancel_after_window(i, acting_user=acting_user)
    )
    if problems:
        raise Refused("No tournament was cancelled.", problems=problems)
    record(
        "outage.window_passed",
        fresh,
        actor=acting_user,
        after={
            "tournaments": [i.tournament.external_id for i in incidents],
            "count": len(incidents),
        },
    )
    return _sync(outage)


@transaction.atomic
def confirm_site_wide_issue(outage, *, justification, acting_user):
    """A manager's finding, justified once, that site-wide issues impaired play throughout: rule
    1 (full refund) for every tournament of the outage that was not resumed."""
    require_role(acting_user, CAN_DECIDE, "confirm a site-wide issue")
    justification = (justification or "").strip()
    if not justification:
        raise Refused("A justification is required.", problems=[("justification", "is required")])
    fresh = _locked(outage)
    if fresh.site_wide_issue:
        raise Refused(f"A site-wide issue was already confirmed for outage {fresh.pk}.")
    incidents = [
        i
        for i in incidents_of(fresh)
        if i.status != Incident.Status.RESUMED and not i.site_wide_issue
    ]
    problems = _each(
        incidents,
        lambda i: incident_services.confirm_site_wide_issue(
            i, justification=justification, acting_user=acting_user
        ),
    )
    if problems:
        raise Refused(
            "The site-wide finding was not recorded for any tournament.", problems=problems
        )
    changed = Outage.objects.filter(pk=fresh.pk, site_wide_issue=False).update(
        site_wide_issue=True,
        site_wide_justification=justification,
        site_wide_confirmed_by=acting_user,
        site_wide_confirmed_at=timezone.now(),
    )
    if not changed:
        raise Refused(f"Outage {fresh.pk} changed at the same time; reload it.")
    record(
        "outage.site_wide_confirmed",
        fresh,
        actor=acting_user,
        before={"site_wide_issue": False},
        after={
            "site_wide_issue": True,
            "rule": "full_refund",
            "tournaments": [i.tournament.external_id for i in incidents],
        },
        reason=justification,
    )
    return _sync(outage)
