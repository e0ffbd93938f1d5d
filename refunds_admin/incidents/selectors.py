"""What the API reads about incidents (reads only; every change goes through services.py)."""

from django.db.models import Prefetch

from refunds_admin.tournaments.models import Tournament

from .models import Incident


def tournament_incidents(external_id: str) -> Tournament | None:
    """The tournament with this external id and its incidents (oldest failure first), each with
    its proposals (newest first), or None for an id the app does not know."""
    return (
        Tournament.objects.filter(external_id=external_id)
        .prefetch_related(
            Prefetch("incidents", queryset=Incident.objects.order_by("failed_at", "pk")),
            "incidents__proposals",
        )
        .first()
    )
