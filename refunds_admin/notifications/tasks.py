"""Celery tasks of the notifications: thin, they take ids and call the services."""

import logging

from celery import shared_task
from celery.exceptions import MaxRetriesExceededError

from . import services, staff

log = logging.getLogger(__name__)


@shared_task(name="notifications.deliver_statements", bind=True, acks_late=True, max_retries=None)
def deliver_statements(self, proposal_id):
    """Send a posted proposal's player statements. Safe to run twice, or on two workers."""
    try:
        state = services.deliver_statements(proposal_id)
    except Exception as exc:
        if self.request.is_eager:
            if self.request.retries + 1 >= 3:
                log.warning("statements of proposal %s: %s (the sweeper retries)", proposal_id, exc)
                return "queued"
            return self.apply(args=(proposal_id,), retries=self.request.retries + 1).get()
        raise self.retry(exc=exc, countdown=min(60, 2**self.request.retries)) from exc
    if state == "busy" and not self.request.is_eager:
        try:
            raise self.retry(countdown=3, max_retries=40)
        except MaxRetriesExceededError:
            return state
    return state


@shared_task(name="notifications.dispatch_events")
def dispatch_events():
    """Staff e-mails and statement outboxes from the audit events committed since last time."""
    return staff.dispatch_events()


@shared_task(name="notifications.sweep")
def sweep():
    """Celery beat: what the after-commit kick missed, stale statement jobs, stuck postings."""
    handled = staff.dispatch_events()
    stuck = staff.check_stuck_postings()
    staff.send_pending()
    requeued = services.sweep_statements()
    return {"handled": handled, "stuck": stuck, "requeued": requeued}
