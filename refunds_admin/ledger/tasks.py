"""Celery tasks of the ledger: thin, they take ids and call ledger.posting (imported inside
each task: the services queue tasks by name and never import this module)."""

import logging

from celery import shared_task
from celery.exceptions import MaxRetriesExceededError

from refunds_admin.jobs.locks import one_sweep_at_a_time
from refunds_admin.jobs.runtime import in_process, retry

log = logging.getLogger(__name__)

BUSY_RETRY_SECONDS = 3
BUSY_RETRIES = 40


@shared_task(name="ledger.post_proposal", bind=True, acks_late=True, max_retries=None)
def post_proposal(self, proposal_id):
    """Post an approved proposal's credits. Safe to run twice, or on two workers at once.

    The wallet being unavailable (PostingDelayed) is retried after the job's own backoff and never
    uses up an attempt; a real error is retried with exponential backoff and counts as one of the job's
    POSTING_MAX_ATTEMPTS. A worker killed mid-run leaves its message unacknowledged (acks_late)
    and its job without heartbeat: the message is redelivered or the sweeper queues the job
    again, and the run continues where it stopped. A process not configured for the job's
    wallet leaves it alone ("refused"): the sweeper offers it to the other workers later.
    """
    from . import posting

    try:
        state = posting.post_proposal(proposal_id)
    except posting.PostingStopped as exc:
        log.error("posting of proposal %s stopped: %s", proposal_id, exc)
        return "failed"
    except posting.PostingDelayed as exc:
        if in_process():
            return "waiting"  # nothing to wait in; the sweeper or a resume retries
        retry(self, countdown=exc.countdown)
    except Exception as exc:
        # The job counts its attempts: the run that uses the last one marks it failed.
        if in_process():
            # Nothing to wait in: try again right away.
            return self.apply(args=(proposal_id,), retries=self.request.retries + 1).get()
        retry(self, exc=exc, countdown=min(60, 2**self.request.retries))
    if state == "busy" and not in_process():
        # Another session holds the job: a run in progress, or the session of a worker just
        # killed, which PostgreSQL ends shortly. Look again soon; the sweeper is the backstop.
        try:
            retry(self, countdown=BUSY_RETRY_SECONDS, max_retries=BUSY_RETRIES)
        except MaxRetriesExceededError:
            return state
    return state


@shared_task(name="ledger.sweep_unposted")
def sweep_unposted():
    """Celery beat (periodic queue): queue again approved proposals whose posting was lost or
    interrupted. One sweep at a time."""
    from . import posting

    with one_sweep_at_a_time("ledger.sweep_unposted") as mine:
        return posting.sweep_unposted() if mine else "busy"
