"""The audit is tamper-evident: each event carries the hash of the one before it, and
`manage.py verify_audit` walks the chain, exiting 1 at an event changed, removed or slipped in,
even one written by someone with the database's owner rights (triggers off)."""

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.db import DatabaseError, connection, transaction

from refunds_admin.audit import chain
from refunds_admin.audit.models import AuditEvent
from refunds_admin.audit.services import record
from tests.support.concurrency import at_once
from tests.support.factories import open_incident
from tests.support.tampering import triggers_off


def _verify(capsys):
    call_command("verify_audit")
    return capsys.readouterr().out


@pytest.mark.django_db
def test_each_event_carries_the_hash_of_the_one_before(support, capsys):
    open_incident(support)
    events = list(AuditEvent.objects.order_by("id"))
    assert len(events) > 3 and events[0].prev_hash == ""
    assert all(e.prev_hash == before.hash for before, e in zip(events, events[1:]))
    assert "audit chain intact" in _verify(capsys)


@pytest.mark.django_db
def test_verify_audit_exits_1_at_an_event_changed_behind_the_apps_back(support, capsys):
    open_incident(support)
    victim = AuditEvent.objects.filter(action="incident.recorded").get()
    with triggers_off():
        AuditEvent.objects.filter(pk=victim.pk).update(reason="nothing happened")
    with pytest.raises(CommandError, match=f"broken at event {victim.pk}: it was changed") as e:
        call_command("verify_audit")
    assert e.value.returncode == 1


@pytest.mark.django_db
def test_verify_audit_exits_1_at_an_event_removed_or_slipped_in(support, capsys):
    open_incident(support)
    events = list(AuditEvent.objects.order_by("id"))
    middle = events[len(events) // 2]
    with triggers_off():
        AuditEvent.objects.filter(pk=middle.pk).delete()
    with pytest.raises(CommandError, match="does not follow the event before it") as e:
        call_command("verify_audit")
    assert e.value.returncode == 1
    # Slipped back in, back-dated, with a hash computed the app's way (but not the chain's).
    forged = AuditEvent(**{f.attname: getattr(middle, f.attname) for f in AuditEvent._meta.fields})
    forged.reason = "forged"
    forged.hash = chain.digest(forged, forged.prev_hash)
    forged.save(force_insert=True)
    with pytest.raises(CommandError, match=f"broken at event {events[len(events) // 2 + 1].pk}"):
        call_command("verify_audit")


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_concurrent_writers_keep_one_chain(support, capsys):
    """Events written at the same moment on separate connections chain one after the other."""

    def write(n):
        def action():
            with transaction.atomic():
                record(f"test.concurrent{n}", support, actor=None)
            return n

        return action

    assert sorted(at_once(*(write(n) for n in range(8)))) == list(range(8))
    assert "audit chain intact" in _verify(capsys)
    hashes = list(AuditEvent.objects.values_list("prev_hash", flat=True))
    assert len(hashes) == len(set(hashes))  # no two events follow the same one
    assert connection.vendor == "postgresql"


def _forged_after_the_last(support, reason):
    """An event as someone with the database's credentials, the app's code but not the chain's
    key would append it: after the last event, its hash computed without the key."""
    last = AuditEvent.objects.order_by("-id").first()
    forged = AuditEvent(
        created_at=last.created_at, actor=support, actor_name=support.username,
        action="proposal.approved", object_type="payoutproposal", object_id="1",
        player_ids=[], reason=reason, prev_hash=last.hash,
    )  # fmt: skip
    return forged


@pytest.mark.django_db
def test_an_event_appended_without_the_chains_key_does_not_fit(support, settings):
    open_incident(support)
    forged = _forged_after_the_last(support, "forged, plain SHA-256")
    forged.hash = chain.unkeyed_digest(forged, forged.prev_hash)
    forged.save(force_insert=True)
    with pytest.raises(CommandError, match=f"event {forged.pk}: .*without the chain's key"):
        call_command("verify_audit")


@pytest.mark.django_db
def test_an_event_appended_under_a_guessed_key_does_not_fit(support, settings):
    open_incident(support)
    real = settings.AUDIT_CHAIN_KEY
    settings.AUDIT_CHAIN_KEY = "a guess"
    forged = _forged_after_the_last(support, "forged under a guessed key")
    forged.hash = chain.digest(forged, forged.prev_hash)
    forged.save(force_insert=True)
    settings.AUDIT_CHAIN_KEY = real
    with pytest.raises(CommandError, match=f"broken at event {forged.pk}"):
        call_command("verify_audit")


@pytest.mark.django_db
def test_events_hashed_before_the_chain_was_keyed_still_verify_but_only_first(support, capsys):
    open_incident(support)
    # As an earlier release wrote them: the same chain in plain SHA-256.
    prev = ""
    with triggers_off():
        for event in AuditEvent.objects.order_by("id"):
            event.prev_hash, event.hash = prev, chain.unkeyed_digest(event, prev)
            AuditEvent.objects.filter(pk=event.pk).update(
                prev_hash=event.prev_hash, hash=event.hash
            )
            prev = event.hash
    record("test.after_the_upgrade", support, actor=None)  # keyed from now on
    assert "audit chain intact" in _verify(capsys)
    # An unkeyed event after a keyed one is not an old one: it does not fit.
    forged = _forged_after_the_last(support, "unkeyed after keyed")
    forged.hash = chain.unkeyed_digest(forged, forged.prev_hash)
    forged.save(force_insert=True)
    with pytest.raises(CommandError, match=f"broken at event {forged.pk}"):
        call_command("verify_audit")


@pytest.mark.django_db
def test_an_event_slipped_in_before_the_chain_without_a_hash_is_refused(support, capsys):
    """Events without a hash are counted as "written before the chain began", not checked: one
    inserted with the app's credentials at an id before the first event, naming any actor,
    would pass for history. The database takes no event without a hash; with one, it breaks
    the chain."""
    open_incident(support)
    first = AuditEvent.objects.order_by("id").first()
    forged = AuditEvent(
        id=first.pk - 1, created_at=first.created_at, actor_name="otto_manager",
        action="proposal.approved", object_type="payoutproposal", object_id="1", player_ids=[],
        reason="forged before the chain", prev_hash="", hash="",
    )  # fmt: skip
    if connection.vendor == "postgresql":
        with pytest.raises(DatabaseError, match="carries its hash"), transaction.atomic():
            forged.save(force_insert=True)
        assert "audit chain intact" in _verify(capsys)
    forged.hash = chain.unkeyed_digest(forged, "")
    forged.save(force_insert=True)
    with pytest.raises(CommandError, match=f"broken at event {first.pk}: it does not follow"):
        call_command("verify_audit")


@pytest.mark.django_db
def test_verify_audit_finds_events_removed_from_the_end_against_a_head_recorded_earlier(
    support, capsys
):
    """Removing the newest events leaves a chain that is whole, only shorter: an auditor who
    kept the head an earlier run printed finds that it is gone, or changed."""
    open_incident(support)
    out = _verify(capsys)
    last = AuditEvent.objects.order_by("-id").first()
    assert f"{last.pk}:{last.hash}" in out
    call_command("verify_audit", "--head", f"{last.pk}:{last.hash}")  # as it was: intact
    with triggers_off():
        AuditEvent.objects.filter(pk=last.pk).delete()
    assert "audit chain intact" in _verify(capsys)  # the chain alone cannot tell
    with pytest.raises(CommandError, match=f"no longer holds event {last.pk}") as e:
        call_command("verify_audit", "--head", f"{last.pk}:{last.hash}")
    assert e.value.returncode == 1
    earlier = AuditEvent.objects.order_by("-id").first()
    with pytest.raises(CommandError, match=f"event {earlier.pk}, the head recorded earlier"):
        call_command("verify_audit", "--head", f"{earlier.pk}:{'0' * 64}")
