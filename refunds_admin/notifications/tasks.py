"""Celery tasks of the notifications: thin, they take ids and call the services (imported
inside each task: the services queue tasks by name and never import this module)."""

import logging

from celery import shared_task
from celery.exceptions import MaxRetriesExceededError

from refunds_admin.jobs.locks import one_sweep_at_a_time
from refunds_admin.jobs.runtime import in_process, retry, run_again_in_process

log = logging.getLogger(__name__)

# In-process, a delivery that fails is tried this many times at once; the sweeper retries later.
IN_PROCESS_TRIES = 3


@shared_task(name="notifications.deliver_statements", bind=True, acks_late=True, max_retries=None)
def deliver_statements(self, proposal_id):
    """Send a posted proposal's player statements. Safe to run twice, or on two workers."""
    from . import services

    try:
        state = services.deliver_statements(proposal_id)
    except Exception as exc:
        if in_process():
            again = run_again_in_process(self, (proposal_id,), tries=IN_PROCESS_TRIES)
            if again is None:
                log.warning("statements of proposal %s: %s (the sweeper retries)", proposal_id, exc)
                return "queued"
            return again
        retry(self, exc=exc, countdown=min(60, 2**self.request.retries))
    if state == "busy" and not in_process():
        try:
            retry(self, countdown=3, max_retries=40)
        except MaxRetriesExceededError:
            return state
    return state


@shared_task(name="notifications.dispatch_events")
def dispatch_events():
    """Staff e-mails and statement outboxes from the audit events committed since last time."""
    from . import staff

    return staff.dispatch_events()


@shared_task(name="notifications.sweep")
def sweep():
    """Celery beat (periodic queue): what the after-commit kick missed, stale statement jobs,
    stuck postings. One sweep at a time."""
    from . import services, staff

    with one_sweep_at_a_time("notifications.sweep") as mine:
        if not mine:
            return "busy"
        handled = staff.dispatch_events()
        stuck = staff.check_stuck_postings()
        staff.send_pending()
        requeued = services.sweep_statements()
        return {"handled": handled, "stuck": stuck, "requeued": requeued}
