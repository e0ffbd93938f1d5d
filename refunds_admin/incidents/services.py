"""Incidents and the 30-minute window.

An incident starts when play fails. If play resumes within 30 minutes of `failed_at` the incident
closes with no payout. If it has not resumed 30 minutes after `failed_at`, or a manager declares
it not resumable, the tournament is cancelled and a proposal can be prepared. The payout rule the
timing selects (the engine's `select_rule`) is shown before cancellation and stored on the
incident; it is recomputed whenever something it depends on changes (site-wide issue confirmed,
snapshot re-imported).
"""

from __future__ import annotations

import logging
from datetime import datetime
from typing import TYPE_CHECKING, Any, NamedTuple

from django.db import IntegrityError, transaction
from django.utils import timezone

from refunds_admin.accounts.roles import CAN_DECIDE, CAN_PREPARE, require_role
from refunds_admin.audit.services import record
from refunds_admin.errors import Refused, required_text
from refunds_admin.jobs.runtime import enqueue_on_commit, in_process
from refunds_admin.payouts import FULL_REFUND, IN_THE_MONEY, select_rule
from refunds_admin.payouts.labels import RULE_TEXT
from refunds_admin.policies.describe import full_refund_condition
from refunds_admin.tournaments import services as tournaments
from refunds_admin.tournaments.models import Snapshot, Tournament
from refunds_admin.tournaments.services import engine_snapshot
from refunds_admin.zones import zone_name

from .models import RESUME_WINDOW, Incident, RestartAttempt

if TYPE_CHECKING:
    from collections.abc import Mapping

    from django.contrib.auth.models import User
    from django.db.models import QuerySet

    from refunds_admin.payouts import Snapshot as ParsedSnapshot
    from refunds_admin.payouts.policy import Policy
    from refunds_admin.tournaments.services import CsvData

log = logging.getLogger(__name__)


class RulePreview(NamedTuple):
    rule: str
    sentence: str
    before_start: bool = False
    # Which policy applies ("ultimatepoker-2026 v1: UltimatePoker.com …") and its rule-1
    # condition, so that staff read why the rule follows.
    policy: str = ""
    condition: str = ""
    # Rule 1 in this tournament's words ("full refund of buy-in, knockout part and fee"), for
    # the confirmation of a failure before the start.
    full_refund: str = ""
    # The entries of the snapshot it was read from, for the confirmation's "all N entries".
    entries: int = 0


# --------------------------------------------------------------------------------------------
# Reading the timing
# --------------------------------------------------------------------------------------------


def local_words(value: datetime) -> str:
    """A moment as staff read it: in their time zone (the active one), named."""
    local = timezone.localtime(value)
    return f"{local:%Y-%m-%d %H:%M:%S} {zone_name(local)}"


def _check_moment(
    value: object,
    field: str,
    *,
    not_before: datetime | None = None,
    not_before_what: str = "",
    now: datetime | None = None,
) -> list[tuple[str, str]]:
    """Problems with a moment staff typed: it must be an aware datetime, not in the future and
    not before `not_before`."""
    if not isinstance(value, datetime):
        return [(field, "is required (a date and time)")]
    if timezone.is_naive(value):
        return [(field, "has no time zone; give the offset (e.g. +00:00) or UTC")]
    now = now or timezone.now()
    if value > now:
        return [(field, f"{local_words(value)} is in the future")]
    if not_before is not None and value < not_before:
        return [
            (field, f"{local_words(value)} is before {not_before_what} {local_words(not_before)}")
        ]
    return []


def _check_failed_at(parsed: ParsedSnapshot, failed_at: datetime) -> None:
    # The start comes from the stored snapshot document, the one source the rule is computed
    # from, so the check, the rule and the elapsed time can never disagree. A failure before the
    # start is a fact the policy covers (rule 1, full refund); recording it needs a confirmation.
    problems = _check_moment(failed_at, "failed_at")
    if problems:
        raise Refused("The failure time was refused.", problems=problems)


def fails_before_start(parsed: ParsedSnapshot, failed_at: object) -> bool:
    return isinstance(failed_at, datetime) and failed_at < parsed.starts_at.at


BEFORE_START_PROBLEM = (
    "is before the tournament's start {start}: that is rule 1, a {full_refund} to every entry; "
    "confirm it to record the incident"
)


def elapsed_in_words(seconds: float) -> str:
    """Seconds in words, without a sign, the one duration format of every screen:
    "2 d 3 h", "1 h 20 min", "14 min", "20 min 1 s", "8 s"."""
    seconds = abs(int(seconds))
    days, rest = divmod(seconds, 86400)
    hours, rest = divmod(rest, 3600)
    minutes, secs = divmod(rest, 60)
    if days:
        return f"{days} d {hours} h"
    if hours:
        return f"{hours} h {minutes} min"
    if not minutes:
        return f"{secs} s"
    if secs:
        return f"{minutes} min {secs} s"
    return f"{minutes} min"


def rule_sentence(
    rule: str,
    *,
    elapsed_seconds: float,
    site_wide_issue: bool,
    entries: int,
    active: int,
    paid_places: int,
    policy: Policy | None = None,
    knockout: bool = False,
    rebuys: bool = False,
) -> str:
    """The sentence shown beside the incident form and to the approver, e.g. "failed 14 min
    after start: full refund of buy-in and fee to all 1,000 entries".

    With the tournament's `policy`, the sentence says what that policy gives (the part
    returned before the money, the equal share, a knockout's bounty) and why rule 1 applies
    under it (management's finding in its words, or no entry eliminated yet); without one, the
    default policy's words. The default policy reads the same either way."""
    finding = policy.management_finding if policy is not None else None
    if elapsed_seconds < 0:
        when = f"failed {elapsed_in_words(elapsed_seconds)} before the start"
    else:
        when = f"failed {elapsed_in_words(elapsed_seconds)} after start"
    payout = _payout_words(rule, policy, knockout, rebuys)
    if rule == FULL_REFUND:
        confirmed = (
            "site-wide issues confirmed"
            if finding is None
            else f"management found: {finding.rstrip('.')}"
        )
        if site_wide_issue:
            why = f"{confirmed}, {when}"
        elif (
            policy is not None
            and elapsed_seconds > 0
            and not _within_window(policy, elapsed_seconds)
            and policy.before_first_elimination
            and entries == active
        ):
            why = f"{when}, before any entry was eliminated"
        else:
            why = when
        return f"{why}: {payout} to all {entries:,} entries"
    places = "within the" if rule == IN_THE_MONEY else "more than the"
    return (
        f"{when} with {active:,} entries left, {places} {paid_places:,} paid places: "
        f"{payout}, to the {active:,} active entries"
    )


def _within_window(policy: Policy, elapsed_seconds: float) -> bool:
    return policy.within_minutes is not None and elapsed_seconds <= policy.within_minutes * 60


# What the guaranteed part before the money is, by the policy's not_in_the_money.returned
# ("nothing": the whole pool is shared).
_RETURNED_WORDS = {"buy_in_and_rebuys": "buy-in refunded", "buy_in": "first buy-in refunded"}


def _payout_words(rule: str, policy: Policy | None, knockout: bool, rebuys: bool = False) -> str:
    """What each paid entry receives under `rule`, in the policy's terms (labels.RULE_TEXT's
    words for the default policy). A full refund names what it returns: the rebuys and their
    fees too in a tournament with rebuys or add-ons."""
    bounty = ", and the bounty on each head refunded" if knockout else ""
    if rule == FULL_REFUND:
        parts = [
            "buy-in",
            *(["rebuys"] if rebuys else []),
            *(["knockout part"] if knockout else []),
        ]
        return f"full refund of {', '.join(parts)} and {'fees' if rebuys else 'fee'}"
    if policy is None:
        return RULE_TEXT[rule].payout + bounty
    if rule == IN_THE_MONEY:
        guaranteed, percent = "next prize", policy.in_the_money_equal_share_percent
    else:
        guaranteed = _RETURNED_WORDS.get(policy.not_in_the_money_returned, "")
        if rebuys and policy.not_in_the_money_returned == "buy_in_and_rebuys":
            guaranteed = "buy-in and rebuys refunded"
        percent = policy.not_in_the_money_equal_share_percent
    pool = "the rest" if guaranteed else "the pool"
    if percent == 0:
        shared = "chip equity"
    elif percent == 100:
        shared = f"an equal share of {pool}"
    else:
        shared = f"{percent}% of {pool} in equal shares and {100 - percent}% by chip equity"
    words = f"{guaranteed} plus {shared}" if guaranteed else shared
    return f"{words}, and the {'fees' if rebuys else 'fee'} refunded{bounty}"


def _rule_for(
    parsed: ParsedSnapshot, failed_at: datetime, site_wide_issue: bool, tournament: Tournament
) -> str:
    """The rule under the tournament's own policy version."""
    policy = tournament.policy_version.engine()
    return select_rule(parsed, failed_at, bool(site_wide_issue), policy=policy)


def preview_rule(
    tournament: Tournament, failed_at: datetime, site_wide_issue: bool = False
) -> RulePreview:
    """Which rule a failure at `failed_at` selects, and why, in one sentence. Read-only.

    Raises `Refused` for a failure time that would be refused when recorded.
    """
    snapshot = tournaments.current_snapshot(tournament)
    parsed = engine_snapshot(snapshot)
    _check_failed_at(parsed, failed_at)
    rule = _rule_for(parsed, failed_at, site_wide_issue, tournament)
    policy = tournament.policy_version.engine()
    sentence = rule_sentence(
        rule,
        elapsed_seconds=(failed_at - parsed.starts_at.at).total_seconds(),
        site_wide_issue=site_wide_issue,
        entries=snapshot.entries_count,
        active=snapshot.active_count,
        paid_places=parsed.last_paid_place,
        policy=policy,
        knockout=parsed.is_knockout,
        rebuys=parsed.has_rebuys,
    )
    return RulePreview(
        rule,
        sentence,
        fails_before_start(parsed, failed_at),
        policy=f"{tournament.policy_version.label}: {policy.title}",
        condition=full_refund_condition(policy),
        full_refund=_payout_words(FULL_REFUND, policy, parsed.is_knockout, parsed.has_rebuys),
        entries=snapshot.entries_count,
    )


def store_rule(
    incident: Incident, parsed: ParsedSnapshot, *, acting_user: User | None, why: str
) -> str:
    """Recompute the incident's rule from the parsed current snapshot; audit a change."""
    rule = _rule_for(parsed, incident.failed_at, incident.site_wide_issue, incident.tournament)
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
# Snapshot imports that keep the live incident in step
# --------------------------------------------------------------------------------------------


@transaction.atomic
def import_snapshot(
    raw: bytes | str | dict[str, Any], *, acting_user: User | None, source: str
) -> Snapshot:
    """`tournaments.services._import_snapshot`, then the tournament's live incident is kept true
    to the new version (see `_follow_new_snapshot`). Views, the API and commands call this one."""
    snapshot = tournaments._import_snapshot(raw, acting_user=acting_user, source=source)
    return _follow_new_snapshot(snapshot, acting_user)


@transaction.atomic
def import_csv(
    entries_csv: CsvData,
    prizes_csv: CsvData,
    fields: Mapping[str, Any],
    *,
    acting_user: User | None,
) -> Snapshot:
    """`tournaments.services._import_csv`, then the live incident follows as for a JSON import."""
    snapshot = tournaments._import_csv(entries_csv, prizes_csv, fields, acting_user=acting_user)
    return _follow_new_snapshot(snapshot, acting_user)


def _follow_new_snapshot(snapshot: Snapshot, acting_user: User | None) -> Snapshot:
    """A new snapshot may change the start, the active entries or the paid places. A version
    that starts after the recorded failure is refused (the whole import rolls back with it);
    otherwise the live incident's rule is recomputed so that it describes the current snapshot."""
    incident = (
        Incident.objects.select_for_update()
        .filter(
            tournament_id=snapshot.tournament_id,
            status__in=[Incident.Status.OPEN, Incident.Status.CANCELLED],
        )
        .first()
    )
    if incident is None:
        return snapshot
    parsed = engine_snapshot(snapshot)
    if incident.failed_at < parsed.starts_at.at:
        raise Refused(
            "The new snapshot starts after the recorded failure; nothing was imported.",
            problems=[
                (
                    "tournament.starts_at",
                    f"{local_words(parsed.starts_at.at)} is after the incident's failure "
                    f"{local_words(incident.failed_at)}",
                )
            ],
        )
    store_rule(incident, parsed, acting_user=acting_user, why="snapshot re-imported")
    # The incident page lists what this version changed since the incident was recorded: a
    # worker computes it once this commits, into the shared cache, so that the page's first
    # viewer does not wait for it (0.1 s for 100k entries). In-process it is left to that view.
    if not in_process():
        enqueue_on_commit("web.snapshot_changes", incident.pk)
    return snapshot


# --------------------------------------------------------------------------------------------
# State changes
# --------------------------------------------------------------------------------------------


def _locked(incident: Incident) -> Incident:
    """The incident re-read under a row lock, so that decisions use its committed state. Its
    tournament is locked first: the one lock order is tournament -> incident -> proposal -> job."""
    Tournament.objects.select_for_update().filter(pk=incident.tournament_id).first()
    return (
        Incident.objects.select_for_update(of=("self",))
        .select_related("tournament")
        .get(pk=incident.pk)
    )


def _sync(incident: Incident) -> Incident:
    """Bring the caller's instance up to date with the change just made, and return it."""
    incident.refresh_from_db()
    return incident


@transaction.atomic
def record_incident(
    tournament: Tournament,
    *,
    failed_at: datetime,
    cause: str,
    description: str,
    acting_user: User,
    before_start_confirmed: bool = False,
) -> Incident:
    """Record that play failed at `failed_at`. The rule the timing selects is stored with it.

    A failure before the tournament's start selects rule 1 (full refund); because that is
    usually a mistyped time, it is recorded only with `before_start_confirmed`."""
    require_role(acting_user, CAN_PREPARE, "record incidents")
    tournament = Tournament.objects.select_for_update().get(pk=tournament.pk)
    snapshot = tournaments.current_snapshot(tournament)
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
    if not problems and fails_before_start(parsed, failed_at) and not before_start_confirmed:
        start = local_words(parsed.starts_at.at)
        full_refund = _payout_words(FULL_REFUND, None, parsed.is_knockout, parsed.has_rebuys)
        problems.append(
            ("failed_at", BEFORE_START_PROBLEM.format(start=start, full_refund=full_refund))
        )
    if problems:
        raise Refused("The incident was refused; nothing was recorded.", problems=problems)
    live = tournament.incidents.filter(status__in=[Incident.Status.OPEN, Incident.Status.CANCELLED])
    if live.exists():
        raise Refused(
            f"Tournament {tournament.external_id} already has an incident that is open or "
            "cancelled; there is one incident per failure."
        )
    rule = _rule_for(parsed, failed_at, False, tournament)
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
            **({"before_start": True} if fails_before_start(parsed, failed_at) else {}),
        },
        reason=description or "",
    )
    return incident


_CLOSED_BECAUSE: dict[str, str] = {
    Incident.Status.RESUMED: "closed: play resumed",
    Incident.Status.CANCELLED: "closed: the tournament was cancelled",
}


def _require_open(incident: Incident, doing: str) -> None:
    if incident.status != Incident.Status.OPEN:
        closed = _CLOSED_BECAUSE[incident.status]
        raise Refused(f"Incident {incident.pk} is not open ({closed}); cannot {doing}.")


def _locked_open_since_failure(
    incident: Incident, moment: datetime, field: str, *, doing: str, what: str
) -> Incident:
    """The incident locked, refused unless it is open and `moment` lies between the failure
    and now (a restart attempt, play resuming)."""
    fresh = _locked(incident)
    _require_open(fresh, doing)
    problems = _check_moment(
        moment, field, not_before=fresh.failed_at, not_before_what="the failure"
    )
    if problems:
        raise Refused(f"The {what} was refused.", problems=problems)
    return fresh


@transaction.atomic
def log_restart_attempt(
    incident: Incident,
    *,
    attempted_at: datetime,
    succeeded: bool,
    note: str,
    acting_user: User,
) -> RestartAttempt:
    """Log an attempt to restart play. Whether play resumed is `mark_resumed`'s business."""
    require_role(acting_user, CAN_PREPARE, "log restart attempts")
    fresh = _locked_open_since_failure(
        incident,
        attempted_at,
        "attempted_at",
        doing="log a restart attempt",
        what="restart attempt",
    )
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
def mark_resumed(incident: Incident, *, resumed_at: datetime, acting_user: User) -> Incident:
    """Play resumed at `resumed_at`, within 30 minutes of the failure: closed, no payout."""
    require_role(acting_user, CAN_PREPARE, "mark play resumed")
    fresh = _locked_open_since_failure(
        incident, resumed_at, "resumed_at", doing="mark play resumed", what="resumption"
    )
    if resumed_at > fresh.deadline:
        raise Refused(
            f"The 30-minute window passed at {local_words(fresh.deadline)}: play "
            f"resuming at {local_words(resumed_at)} does not count; the tournament is cancelled "
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


def _cancel(fresh: Incident, *, because: str, reason: str, acting_user: User | None) -> None:
    now = timezone.now()
    changed = Incident.objects.filter(pk=fresh.pk, status=Incident.Status.OPEN).update(
        status=Incident.Status.CANCELLED,
        cancelled_at=now,
        cancelled_because=because,
        cancel_reason=reason,
        closed_by=acting_user,
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
def declare_not_resumable(incident: Incident, *, reason: str, acting_user: User) -> Incident:
    """A manager's decision that play cannot resume: the tournament is cancelled now."""
    require_role(acting_user, CAN_DECIDE, "declare a tournament not resumable")
    reason = required_text(reason, "reason")
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
def cancel_after_window(incident: Incident, *, acting_user: User | None) -> Incident:
    """Cancel the tournament because play did not resume within 30 minutes of the failure.

    `acting_user` None is the system (the periodic check)."""
    if acting_user is not None:
        require_role(acting_user, CAN_PREPARE, "cancel a tournament")
    fresh = _locked(incident)
    _require_open(fresh, "cancel it")
    if timezone.now() < fresh.deadline:
        raise Refused(
            f"The 30-minute window is still running until {local_words(fresh.deadline)}; "
            "a manager can declare the tournament not resumable before then."
        )
    _cancel(
        fresh,
        because=Incident.CancelledBecause.WINDOW_PASSED,
        reason="",  # the cause is in `cancelled_because`; no one's judgement to record
        acting_user=acting_user,
    )
    return _sync(incident)


@transaction.atomic
def confirm_site_wide_issue(
    incident: Incident,
    *,
    justification: str,
    acting_user: User,
    finding_by: User | None = None,
) -> Incident:
    """A manager's finding that site-wide issues impaired play: selects the full refund.

    `finding_by`: the author of an outage's finding that `acting_user` applies to this incident
    (a tournament added to the outage later). The finding stays its author's, and the incident
    records both: neither may approve the proposal it leads to (four eyes)."""
    require_role(acting_user, CAN_DECIDE, "confirm a site-wide issue")
    justification = required_text(justification, "justification")
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
    parsed = engine_snapshot(tournaments.current_snapshot(fresh.tournament))
    rule = _rule_for(parsed, fresh.failed_at, True, fresh.tournament)
    author = finding_by or acting_user
    applied_by = acting_user if author.pk != acting_user.pk else None
    Incident.objects.filter(pk=fresh.pk, site_wide_issue=False).update(
        site_wide_issue=True,
        site_wide_justification=justification,
        site_wide_confirmed_by=author,
        site_wide_applied_by=applied_by,
        rule=rule,
    )
    # The finding in the words of the policy it was confirmed under: the history says what the
    # manager confirmed, whatever the tournament's policy later becomes.
    version = fresh.tournament.policy_version
    after = {
        "site_wide_issue": True,
        "rule": rule,
        "finding": version.engine().management_finding,
        "policy": version.label,
    }
    if applied_by is not None:
        after |= {"finding_by": author.get_username(), "applied_by": applied_by.get_username()}
    record(
        "incident.site_wide_confirmed",
        fresh,
        actor=acting_user,
        tournament=fresh.tournament,
        before={"site_wide_issue": False, "rule": before_rule},
        after=after,
        reason=justification,
    )
    return _sync(incident)


def overdue_incidents(now: datetime | None = None) -> QuerySet[Incident]:
    """Open incidents whose 30-minute window has passed (for the dashboard and the periodic check)."""
    now = now or timezone.now()
    return Incident.objects.filter(status=Incident.Status.OPEN, failed_at__lt=now - RESUME_WINDOW)


def flag_overdue_incidents() -> list[int]:
    """Flag each open incident past its 30-minute window once (the notifications app e-mails
    the managers once from the audit event).

    Nothing is cancelled here: staff cancel the incident (or declare it not resumable) and have
    the refunds prepared. Returns the ids flagged by this run."""
    flagged = []
    candidates = Incident.objects.filter(
        status=Incident.Status.OPEN,
        failed_at__lte=timezone.now() - RESUME_WINDOW,
        overdue_notified_at__isnull=True,
    ).select_related("tournament")
    for incident in candidates:
        if _flag_overdue(incident):
            flagged.append(incident.pk)
    return flagged


@transaction.atomic
def _flag_overdue(incident: Incident) -> bool:
    # Compare-and-set: two beat runs (or two workers) flag an incident only once.
    now = timezone.now()
    changed = Incident.objects.filter(
        pk=incident.pk, status=Incident.Status.OPEN, overdue_notified_at__isnull=True
    ).update(overdue_notified_at=now)
    if not changed:
        return False
    record(
        "incident.overdue_flagged",
        incident,
        actor=None,
        after={"overdue_notified_at": now.isoformat(), "deadline": incident.deadline.isoformat()},
        tournament=incident.tournament,
    )
    # The managers' e-mail is derived from this audit event once it has committed
    # (notifications, a higher layer; each manager can turn it off): never twice, never for
    # nothing.
    return True


# --------------------------------------------------------------------------------------------
# The tournament's policy
# --------------------------------------------------------------------------------------------


@transaction.atomic
def change_tournament_policy(
    tournament: Tournament, version: Any, *, acting_user: User, reason: str
) -> Tournament:
    """`tournaments.services.change_tournament_policy`, then the live incident's rule is
    recomputed under the new policy (its window or its finding may select another rule). A live
    proposal is stale from then on (proposals.services) and must be prepared again."""
    tournament = tournaments.change_tournament_policy(
        tournament, version, acting_user=acting_user, reason=reason
    )
    incident = (
        Incident.objects.select_for_update()
        .select_related("tournament__policy_version")
        .filter(
            tournament_id=tournament.pk,
            status__in=[Incident.Status.OPEN, Incident.Status.CANCELLED],
        )
        .first()
    )
    if incident is not None:
        parsed = engine_snapshot(tournaments.current_snapshot(tournament))
        store_rule(incident, parsed, acting_user=acting_user, why="tournament policy changed")
    return tournament
