"""Celery tasks of the proposals: thin, they take ids and call the batch services."""

from celery import shared_task
from django.conf import settings

from . import batches


@shared_task(name="proposals.prepare_outage", bind=True, acks_late=True)
def prepare_outage(self, run_id):
    """Prepare every proposal of an outage (one batch prepare run). Safe to deliver twice.
    On a worker the run is shared between OUTAGE_PREPARE_PARTS worker processes."""
    parts = 1 if self.request.is_eager else settings.OUTAGE_PREPARE_PARTS
    return batches.run_prepare(run_id, parts=parts)


@shared_task(name="proposals.prepare_outage_part", acks_late=True)
def prepare_outage_part(run_id, incident_ids):
    """One part of a batch prepare run, on another worker process. Safe to deliver twice."""
    return batches.run_prepare_part(run_id, incident_ids)
