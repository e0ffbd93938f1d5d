"""The audit is tamper-evident: each event carries the hash of the one before it, and
`manage.py verify_audit` walks the chain, exiting 1 at an event changed, removed or slipped in,
even one written by someone with the database's owner rights (triggers off)."""

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.db import connection, transaction

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
