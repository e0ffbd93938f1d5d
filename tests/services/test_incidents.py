"""Incidents and the 30-minute window: record, restart attempts, resume, cancel, site-wide."""

from datetime import timedelta
from datetime import timezone as timezone_of

import pytest
from django.core.exceptions import PermissionDenied
from django.utils import timezone

from refunds_admin.audit.models import AuditEvent
from refunds_admin.errors import Refused
from refunds_admin.incidents import services
from refunds_admin.incidents.models import Incident, RestartAttempt
from tests.support.factories import import_doc, open_incident

pytestmark = pytest.mark.django_db


def _record(tournament, user, failed_at, cause="server_crash"):
    return services.record_incident(
        tournament, failed_at=failed_at, cause=cause, description="crash", acting_user=user
    )


def test_it_records_an_incident_with_the_rule_the_timing_selects(support):
    tournament = import_doc(support).tournament
    incident = _record(tournament, support, tournament.starts_at + timedelta(hours=1))
    assert incident.status == "open" and incident.recorded_by == support
    assert incident.rule == "not_in_the_money"  # 4 active entries, 3 paid places
    event = AuditEvent.objects.get(action="incident.recorded")
    assert event.after["rule"] == "not_in_the_money" and event.actor == support


@pytest.mark.parametrize(
    "failed_at, message",
    [
        (lambda t: t.starts_at - timedelta(seconds=1), "before the tournament's start"),
        (lambda t: timezone.now() + timedelta(minutes=2), "in the future"),
        (lambda t: (t.starts_at + timedelta(hours=1)).replace(tzinfo=None), "no time zone"),
        (lambda t: None, "is required"),
    ],
    ids=["before start", "future", "naive", "missing"],
)
def test_it_refuses_a_bad_failure_time_and_records_nothing(support, failed_at, message):
    tournament = import_doc(support).tournament
    with pytest.raises(Refused) as refused:
        _record(tournament, support, failed_at(tournament))
    assert refused.value.problems[0][0] == "failed_at"
    assert message in refused.value.problems[0][1]
    assert Incident.objects.count() == 0
    assert not AuditEvent.objects.filter(action__startswith="incident.").exists()


def test_it_refuses_an_unknown_cause(support):
    tournament = import_doc(support).tournament
    with pytest.raises(Refused) as refused:
        _record(tournament, support, tournament.starts_at + timedelta(minutes=30), cause="aliens")
    assert refused.value.problems[0][0] == "cause"
    assert Incident.objects.count() == 0


def test_it_keeps_one_live_incident_per_tournament(support):
    incident = open_incident(support)
    with pytest.raises(Refused, match="already has an incident"):
        _record(incident.tournament, support, timezone.now() - timedelta(minutes=1))
    # Once play resumed the tournament can fail again later.
    services.mark_resumed(incident, resumed_at=timezone.now(), acting_user=support)
    again = _record(incident.tournament, support, timezone.now() - timedelta(seconds=1))
    assert again.status == "open"


def test_it_logs_restart_attempts(support):
    incident = open_incident(support)
    attempt = services.log_restart_attempt(
        incident,
        attempted_at=timezone.now() - timedelta(minutes=1),
        succeeded=False,
        note="rebooted table servers",
        acting_user=support,
    )
    assert attempt.incident == incident and not attempt.succeeded
    assert AuditEvent.objects.get(action="incident.restart_attempt").reason == (
        "rebooted table servers"
    )
    with pytest.raises(Refused) as refused:
        services.log_restart_attempt(
            incident,
            attempted_at=incident.failed_at - timedelta(minutes=1),
            succeeded=True,
            note="",
            acting_user=support,
        )
    assert refused.value.problems[0][0] == "attempted_at"
    assert RestartAttempt.objects.count() == 1


def test_it_closes_the_incident_when_play_resumes_within_30_minutes(support):
    incident = open_incident(support, failed_ago=timedelta(minutes=29))
    resumed_at = incident.failed_at + timedelta(minutes=29)
    services.mark_resumed(incident, resumed_at=resumed_at, acting_user=support)
    assert incident.status == "resumed" and incident.resumed_at == resumed_at
    event = AuditEvent.objects.get(action="incident.resumed")
    assert event.before == {"status": "open"} and event.after["status"] == "resumed"


def test_it_refuses_resumption_after_the_window_passed(support):
    incident = open_incident(support, failed_ago=timedelta(minutes=45))
    with pytest.raises(Refused, match="30-minute window passed"):
        services.mark_resumed(
            incident, resumed_at=incident.failed_at + timedelta(minutes=31), acting_user=support
        )
    incident.refresh_from_db()
    assert incident.status == "open"


def test_it_refuses_a_resumption_before_the_failure(support):
    incident = open_incident(support)
    with pytest.raises(Refused) as refused:
        services.mark_resumed(
            incident, resumed_at=incident.failed_at - timedelta(seconds=1), acting_user=support
        )
    assert refused.value.problems[0][0] == "resumed_at"


def test_it_cancels_only_after_the_window(support, time_machine):
    time_machine.move_to(timezone.now(), tick=False)
    incident = open_incident(support, failed_ago=timedelta(minutes=29, seconds=59))
    with pytest.raises(Refused, match="still running"):
        services.cancel_after_window(incident, acting_user=support)
    time_machine.shift(timedelta(seconds=1))  # exactly 30 minutes: the window has passed
    services.cancel_after_window(incident, acting_user=None)  # the system's periodic check
    assert incident.status == "cancelled" and incident.cancelled_because == "window_passed"
    event = AuditEvent.objects.get(action="incident.cancelled")
    assert event.actor is None and event.actor_name == "system"


def test_it_lets_a_manager_declare_it_not_resumable_within_the_window(support, manager):
    incident = open_incident(support, failed_ago=timedelta(minutes=3))
    with pytest.raises(PermissionDenied):
        services.declare_not_resumable(incident, reason="db corrupted", acting_user=support)
    with pytest.raises(Refused, match="reason is required"):
        services.declare_not_resumable(incident, reason="  ", acting_user=manager)
    services.declare_not_resumable(incident, reason="db corrupted", acting_user=manager)
    assert incident.status == "cancelled" and incident.cancelled_because == "not_resumable"
    assert incident.cancel_reason == "db corrupted" and incident.closed_by == manager
    assert AuditEvent.objects.get(action="incident.cancelled").reason == "db corrupted"
    with pytest.raises(Refused, match="not open"):
        services.mark_resumed(incident, resumed_at=timezone.now(), acting_user=support)


def test_it_lets_only_a_manager_confirm_a_site_wide_issue(support, manager):
    incident = open_incident(support)
    assert incident.rule == "not_in_the_money"
    with pytest.raises(PermissionDenied):
        services.confirm_site_wide_issue(incident, justification="DDoS", acting_user=support)
    with pytest.raises(Refused, match="justification is required"):
        services.confirm_site_wide_issue(incident, justification="", acting_user=manager)
    services.confirm_site_wide_issue(
        incident, justification="DDoS lag all evening", acting_user=manager
    )
    assert incident.site_wide_issue and incident.rule == "full_refund"
    assert incident.site_wide_confirmed_by == manager
    event = AuditEvent.objects.get(action="incident.site_wide_confirmed")
    assert event.before["rule"] == "not_in_the_money" and event.after["rule"] == "full_refund"
    assert event.reason == "DDoS lag all evening"


def test_it_previews_the_rule_with_a_sentence(support):
    tournament = import_doc(support).tournament
    start = tournament.starts_at
    preview = services.preview_rule(tournament, start + timedelta(minutes=14))
    assert preview.rule == "full_refund"
    assert preview.sentence == (
        "failed 14 min after start: full refund of buy-in and fee to all 10 entries"
    )
    # Exactly 20:00 is still the full refund; one second more is rule 2.
    assert services.preview_rule(tournament, start + timedelta(minutes=20)).rule == "full_refund"
    late = services.preview_rule(tournament, start + timedelta(minutes=20, seconds=1))
    assert late.rule == "not_in_the_money"
    assert late.sentence.startswith("failed 20 min 1 s after start with 4 entries left")
    assert late.sentence.endswith(
        "buy-in refunded plus chip equity, and the fee refunded, to the 4 active entries"
    )
    assert "more than the 3 paid places" in late.sentence
    site_wide = services.preview_rule(tournament, start + timedelta(hours=1), site_wide_issue=True)
    assert site_wide.rule == "full_refund" and site_wide.sentence.startswith(
        "management found: General site issues impaired player performance throughout"
    )
    # A time in another zone is the same instant.
    other_zone = (start + timedelta(minutes=14)).astimezone(timezone_of(timedelta(hours=-5)))
    assert services.preview_rule(tournament, other_zone).rule == "full_refund"
    # A failure before the start is rule 1 (payout-rules.md), said in words.
    early = services.preview_rule(tournament, start - timedelta(minutes=1))
    assert early.rule == "full_refund" and early.before_start
    assert early.sentence.startswith("failed 1 min before the start: full refund")


def test_the_rule_sentence_says_what_the_tournaments_policy_gives_and_why():
    from refunds_admin.payouts.policy import policy_named

    common = {"site_wide_issue": False, "paid_places": 3}
    # Roll-forward 50/50 before the money, a knockout: the fee back, the pool shared half
    # equally, half by chips, and each head's bounty back; nothing of the buy-in guaranteed.
    assert services.rule_sentence(
        "not_in_the_money",
        elapsed_seconds=45 * 60,
        entries=10,
        active=4,
        policy=policy_named("roll-forward-50-50"),
        knockout=True,
        **common,
    ) == (
        "failed 45 min after start with 4 entries left, more than the 3 paid places: 50% of "
        "the pool in equal shares and 50% by chip equity, and the fee refunded, and the bounty "
        "on each head refunded, to the 4 active entries"
    )
    # Buy-in back 50/50 in the money: the next prize, then the rest half and half.
    assert "next prize plus 50% of the rest in equal shares and 50% by chip equity" in (
        services.rule_sentence(
            "in_the_money",
            elapsed_seconds=45 * 60,
            entries=10,
            active=3,
            policy=policy_named("buy-in-back-50-50"),
            **common,
        )
    )
    # Rollback before the first bust: 45 minutes in, a full refund because nobody was out yet.
    assert services.rule_sentence(
        "full_refund",
        elapsed_seconds=45 * 60,
        entries=4,
        active=4,
        policy=policy_named("rollback-before-first-bust"),
        **common,
    ) == (
        "failed 45 min after start, before any entry was eliminated: full refund of buy-in and "
        "fee to all 4 entries"
    )


def test_it_records_a_failure_before_the_start_as_rule_1_once_confirmed(support):
    tournament = import_doc(support).tournament
    failed_at = tournament.starts_at - timedelta(minutes=3)
    with pytest.raises(Refused) as refused:
        _record(tournament, support, failed_at)
    assert "that is rule 1, a full refund" in refused.value.problems[0][1]
    assert Incident.objects.count() == 0
    incident = services.record_incident(
        tournament,
        failed_at=failed_at,
        cause="server_crash",
        description="lobby crashed before cards were dealt",
        acting_user=support,
        before_start_confirmed=True,
    )
    assert incident.rule == "full_refund"
    event = AuditEvent.objects.get(action="incident.recorded")
    assert event.after["before_start"] is True and event.after["rule"] == "full_refund"


def test_it_previews_in_the_money(support):
    tournament = import_doc(support, active_chips=[50_000, 30_000, 20_000], eliminated=7).tournament
    preview = services.preview_rule(
        tournament, tournament.starts_at + timedelta(hours=1, minutes=5)
    )
    assert preview.rule == "in_the_money"
    assert preview.sentence.startswith(
        "failed 1 h 5 min after start with 3 entries left, within the 3 paid places"
    )


def test_the_history_names_the_finding_in_the_policys_own_words(support, manager):
    """Found by the second operator's trial: under a policy whose finding is "Management chose
    to roll the tournament back", the incident's timeline and the audit read "manager confirmed
    that site-wide issues impaired play", the seed policy's finding, not the one confirmed."""
    from refunds_admin.audit.display import describe

    incident = open_incident(support, policy="roll-forward-50-50")
    services.confirm_site_wide_issue(incident, justification="rolled back", acting_user=manager)
    event = AuditEvent.objects.get(action="incident.site_wide_confirmed")
    assert event.after["finding"] == "Management chose to roll the tournament back"
    assert event.after["policy"] == "roll-forward-50-50 v1"
    sentence = describe(event)
    assert "site-wide" not in sentence, sentence
    assert (
        f"{manager.get_username()} confirmed management's finding “Management chose to roll "
        f"the tournament back” under roll-forward-50-50 v1 (incident {incident.pk})"
    ) in sentence


def test_the_rule_sentence_names_the_rebuys_a_full_refund_returns(support):
    """Found by the second operator's trial: in a rebuy tournament the incident preview, the
    proposal and the approval page read "full refund of buy-in and fee" (or "buy-in, knockout
    part and fee"), while the refund returns the rebuys and their fees too, as the statement
    says ("buy-in and rebuys, fees and the knockout part")."""
    rebuy = {"rebuys_paid": "30.00", "rebuy_fees_paid": "3.00"}
    tournament = import_doc(support, entry_fields={0: rebuy}).tournament
    preview = services.preview_rule(tournament, tournament.starts_at + timedelta(minutes=14))
    assert preview.rule == "full_refund"
    assert preview.sentence == (
        "failed 14 min after start: full refund of buy-in, rebuys and fees to all 10 entries"
    )
    knockout = import_doc(
        support,
        external_id="T-KO-REBUY",
        bounty="10.00",
        entry_fields={0: rebuy},
    ).tournament
    preview = services.preview_rule(knockout, knockout.starts_at + timedelta(minutes=14))
    assert "full refund of buy-in, rebuys, knockout part and fees" in preview.sentence


def test_before_the_money_the_sentence_names_the_rebuys_returned(support):
    """The same trial: before the money under the default policy (buy-in and rebuys back), a
    rebuy tournament read "buy-in refunded ..., and the fee refunded" while the rebuys and
    their fees are returned too."""
    rebuy = {"rebuys_paid": "30.00", "rebuy_fees_paid": "3.00"}
    tournament = import_doc(support, entry_fields={0: rebuy}).tournament
    preview = services.preview_rule(tournament, tournament.starts_at + timedelta(hours=1))
    assert preview.rule == "not_in_the_money"
    assert "buy-in and rebuys refunded plus" in preview.sentence
    assert "and the fees refunded" in preview.sentence
    plain = import_doc(support, external_id="T-PLAIN").tournament
    preview = services.preview_rule(plain, plain.starts_at + timedelta(hours=1))
    assert "buy-in refunded plus" in preview.sentence and "the fee refunded" in preview.sentence
