"""The first credits booked (or confirmed by the cashier) after the job waited or its worker
died: the page stops showing the old reason at once, and the history keeps it."""

from refunds_admin.audit.services import record

from .models import PostingJob


def note_progress(job):
    """Inside the transaction that commits the progress: clear the job's wait and its last
    reason ("waiting for the wallet since ...", "the worker stopped ..."), recorded in the
    audit as `ledger.posting_recovered`. Nothing to do for a job that had no trouble."""
    if not job.last_error and job.wallet_unavailable_since is None:
        return
    changed = PostingJob.objects.filter(pk=job.pk, last_error=job.last_error).update(
        last_error="",
        waiting_for="",
        wallet_unavailable_since=None,
        wallet_unavailable_retries=0,
        retry_at=None,
    )
    if changed:
        record(
            "ledger.posting_recovered",
            job.proposal,
            actor=None,
            before={
                "error": job.last_error,
                "waiting_for": job.waiting_for,
                "since": job.wallet_unavailable_since.isoformat()
                if job.wallet_unavailable_since
                else None,
                "retries": job.wallet_unavailable_retries,
            },
            after={"error": ""},
            tournament=job.proposal.incident.tournament,
        )
    job.last_error, job.waiting_for = "", ""
    job.wallet_unavailable_since, job.wallet_unavailable_retries = None, 0
