"""Worker task for the pages: the incident page's snapshot differences, computed once a
re-import commits, so that the page's first viewer reads them from the cache (the work is
`queries.snapshot_changes`)."""

from celery import shared_task

from refunds_admin.incidents.models import Incident
from refunds_admin.tournaments.services import current_snapshot_row

from . import queries


@shared_task(name="web.snapshot_changes")
def snapshot_changes(incident_id):
    """Compute and cache what the tournament's current snapshot version changed since the
    incident was recorded; the number of entries whose amounts changed, or None (no incident,
    or no re-import since it was recorded)."""
    incident = Incident.objects.select_related("tournament").filter(pk=incident_id).first()
    if incident is None:
        return None
    changes = queries.snapshot_changes(
        queries.snapshot_at_recording(incident), current_snapshot_row(incident.tournament)
    )
    return None if changes is None else changes["money_changed"]
