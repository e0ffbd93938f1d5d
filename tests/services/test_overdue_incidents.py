"""The periodic check flags an incident whose 30-minute window passed and e-mails the managers,
exactly once."""

from datetime import timedelta

import pytest
from django.core import mail
from django.utils import timezone

from refunds_admin.audit.models import AuditEvent
from refunds_admin.celery import app
from refunds_admin.incidents import services as incidents
from refunds_admin.incidents.tasks import flag_overdue
from tests.support.factories import open_incident

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def locmem_mail(settings, monkeypatch):
    settings.EMAIL_BACKEND = "django.core.mail.backends.locmem.EmailBackend"
    # The e-mail is derived from the committed audit event by the notifications' dispatch task:
    # in-process here, as without REDIS_URL.
    monkeypatch.setitem(app.conf, "task_always_eager", True)


def incident(support, minutes_ago, *, resumed=False, n=[0]):  # noqa: B006
    n[0] += 1
    opened = open_incident(
        support, failed_ago=timedelta(minutes=minutes_ago), external_id=f"OV-{n[0]}"
    )
    if resumed:  # play resumed ten minutes after the failure
        incidents.mark_resumed(
            opened, resumed_at=opened.failed_at + timedelta(minutes=10), acting_user=support
        )
    return opened


@pytest.fixture(autouse=True)
def frozen_clock(time_machine):
    """The 29- and 31-minute incidents stay on their side of the window however slow the run."""
    time_machine.move_to(timezone.now(), tick=False)


def test_it_flags_an_overdue_incident_and_mails_managers_once(
    support, manager, other_manager, django_capture_on_commit_callbacks
):
    manager.email, other_manager.email = "maria@example.test", "otto@example.test"
    manager.save()
    other_manager.save()
    support.email = "sam@example.test"
    support.save()
    overdue = incident(support, minutes_ago=31)
    incident(support, minutes_ago=29)  # still inside its window
    incident(support, minutes_ago=90, resumed=True)  # play resumed

    with django_capture_on_commit_callbacks(execute=True):
        assert flag_overdue() == [overdue.pk]
    with django_capture_on_commit_callbacks(execute=True):
        assert flag_overdue() == []  # the next beat run: already flagged

    overdue.refresh_from_db()
    assert overdue.overdue_notified_at is not None
    # One e-mail per manager (each can turn this kind off), none to support.
    assert sorted(m.to[0] for m in mail.outbox) == ["maria@example.test", "otto@example.test"]
    for message in mail.outbox:
        assert "OV-1" in message.subject and "not resumed after 30 minutes" in message.subject
    assert AuditEvent.objects.filter(action="incident.overdue_flagged").count() == 1
