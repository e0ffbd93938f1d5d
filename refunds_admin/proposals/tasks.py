"""Celery tasks of the proposals: thin, they take ids and call the batch services."""

from celery import shared_task

from . import batches


@shared_task(name="proposals.prepare_outage", acks_late=True)
def prepare_outage(run_id):
    """Prepare every proposal of an outage (one batch prepare run). Safe to deliver twice."""
    return batches.run_prepare(run_id)
