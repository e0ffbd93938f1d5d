"""Once an audit event of interest commits, derive its notifications (see staff.py). The
receiver runs inside the event's transaction and only registers the after-commit kick; the kick
only queues the work (with the broker down, the minute sweep does it)."""

import logging
from functools import partial

from django.db import transaction
from django.dispatch import receiver

from refunds_admin.audit.signals import event_recorded

log = logging.getLogger(__name__)


@receiver(event_recorded, dispatch_uid="notifications.on_event_recorded")
def on_event_recorded(sender, event, **kwargs):
    from .staff import HANDLED_ACTIONS

    if event.action in HANDLED_ACTIONS:
        transaction.on_commit(partial(_kick, event.pk), robust=True)


def _kick(event_id):
    from .tasks import dispatch_events

    try:
        dispatch_events.delay()
    except Exception:
        log.warning("could not queue notifications for audit event %s", event_id, exc_info=True)
