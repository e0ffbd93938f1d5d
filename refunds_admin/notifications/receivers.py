"""After an audit event of interest commits, derive its notifications (see staff.py). The
receiver only queues the work; with the broker down the minute sweep does it."""

import logging

from django.dispatch import receiver

from refunds_admin.audit.signals import event_committed

log = logging.getLogger(__name__)


@receiver(event_committed, dispatch_uid="notifications.on_event_committed")
def on_event_committed(sender, event_id, action, **kwargs):
    from .staff import HANDLED_ACTIONS
    from .tasks import dispatch_events

    if action not in HANDLED_ACTIONS:
        return
    try:
        dispatch_events.delay()
    except Exception:
        log.warning("could not queue notifications for audit event %s", event_id, exc_info=True)
