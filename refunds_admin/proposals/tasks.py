"""Celery tasks of the proposals: thin, they take ids and call the batch services (imported
inside each task: the services queue tasks by name and never import this module)."""

from celery import shared_task
from django.conf import settings

from refunds_admin.jobs.locks import one_sweep_at_a_time
from refunds_admin.jobs.runtime import in_process


@shared_task(name="proposals.prepare_outage", acks_late=True)
def prepare_outage(run_id):
    """Prepare every proposal of an outage (one batch prepare run). Safe to deliver twice.
    On a worker the run is shared between OUTAGE_PREPARE_PARTS worker processes."""
    from . import batches

    parts = 1 if in_process() else settings.OUTAGE_PREPARE_PARTS
    return batches.run_prepare(run_id, parts=parts)


@shared_task(name="proposals.prepare_outage_part", acks_late=True)
def prepare_outage_part(run_id, incident_ids):
    """One part of a batch prepare run, on another worker process. Safe to deliver twice."""
    from . import batches

    return batches.run_prepare_part(run_id, incident_ids)


@shared_task(name="proposals.sweep_prepare")
def sweep_prepare():
    """Celery beat (periodic queue): batch prepare runs lost in the queue or stalled."""
    from . import batches

    with one_sweep_at_a_time("proposals.sweep_prepare") as mine:
        return batches.sweep_prepare() if mine else "busy"
