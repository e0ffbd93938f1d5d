"""Once an audit event of interest commits, derive its notifications (see staff.py). The
receiver runs inside the event's transaction and only queues the work after commit, by name
(with the broker down, the minute sweep does it)."""

from django.dispatch import receiver

from refunds_admin.audit.signals import event_recorded
from refunds_admin.jobs.runtime import enqueue_on_commit

from .models import HANDLED_ACTIONS


@receiver(event_recorded, dispatch_uid="notifications.on_event_recorded")
def on_event_recorded(sender, event, **kwargs):
    if event.action in HANDLED_ACTIONS:
        enqueue_on_commit("notifications.dispatch_events")
