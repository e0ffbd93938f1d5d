"""Celery tasks of the ledger: thin, they take ids and call ledger.posting."""

import logging

from celery import shared_task
from celery.exceptions import MaxRetriesExceededError

from . import posting

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
    try:
        state = posting.post_proposal(proposal_id)
    except posting.PostingStopped as exc:
        log.error("posting of proposal %s stopped: %s", proposal_id, exc)
        return "failed"
    except posting.PostingDelayed as exc:
        if self.request.is_eager:
            return "waiting"  # in-process: nothing to wait in; the sweeper or a resume retries
        raise self.retry(countdown=exc.countdown) from exc
    except Exception as exc:
        # The job counts its attempts: the run that uses the last one marks it failed.
        if self.request.is_eager:
            # In-process (no REDIS_URL): nothing to wait in, try again right away.
            return self.apply(args=(proposal_id,), retries=self.request.retries + 1).get()
        raise self.retry(exc=exc, countdown=min(60, 2**self.request.retries)) from exc
    if state == "busy" and not self.request.is_eager:
        # Another session holds the job: a run in progress, or the session of a worker just
        # killed, which PostgreSQL ends shortly. Look again soon; the sweeper is the backstop.
        try:
            raise self.retry(countdown=BUSY_RETRY_SECONDS, max_retries=BUSY_RETRIES)
        except MaxRetriesExceededError:
            return state
    return state


@shared_task(name="ledger.sweep_unposted")
def sweep_unposted():
    """Celery beat: queue again approved proposals whose posting was lost or interrupted."""
    return posting.sweep_unposted()
