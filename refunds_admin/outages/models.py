"""An outage: one failure (a server or a data centre) that stopped many tournaments at once.

Each affected tournament keeps its own Incident (its own snapshot, rule and proposal); the outage
groups them so that the failure, the 30-minute window, the manager's decisions and the site-wide
finding are recorded and justified once for all of them.
"""

from django.conf import settings
from django.db import models
from django.db.models import Q

from refunds_admin.incidents.models import RESUME_WINDOW, Incident


class Outage(models.Model):
    """One failure across many tournaments: one time, one cause, one description."""

    failed_at = models.DateTimeField(help_text="When play failed on every affected tournament.")
    cause = models.CharField(max_length=20, choices=Incident.Cause.choices)
    description = models.TextField(blank=True)
    people_involved = models.TextField(
        blank=True, help_text="Who was involved: on-call engineers, support staff, the operator."
    )
    recorded_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+"
    )
    recorded_at = models.DateTimeField(auto_now_add=True)

    # The manager's finding that site-wide issues impaired play throughout, justified once for
    # every tournament of the outage (each incident carries it too, so rule 1 applies to each).
    site_wide_issue = models.BooleanField(default=False)
    site_wide_justification = models.TextField(blank=True)
    site_wide_confirmed_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )
    site_wide_confirmed_at = models.DateTimeField(null=True, blank=True)

    # A manager's "the rest is not resumable", once for every tournament still open.
    rest_declared_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )
    rest_declared_at = models.DateTimeField(null=True, blank=True)
    rest_reason = models.TextField(blank=True)

    class Meta:
        ordering = ["-failed_at", "-id"]
        constraints = [
            models.CheckConstraint(
                condition=Q(site_wide_issue=False) | Q(site_wide_confirmed_by__isnull=False),
                name="outage_site_wide_needs_a_manager",
            ),
        ]

    def __str__(self):
        return f"Outage {self.pk} at {self.failed_at:%Y-%m-%d %H:%M} UTC"

    @property
    def deadline(self):
        """When the one 30-minute window of the whole outage closes."""
        return self.failed_at + RESUME_WINDOW


class OutageIncident(models.Model):
    """An affected tournament's incident, as a member of the outage (at most one outage each)."""

    outage = models.ForeignKey(Outage, on_delete=models.PROTECT, related_name="members")
    incident = models.OneToOneField(
        Incident, on_delete=models.PROTECT, related_name="outage_membership"
    )
    added_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+"
    )
    added_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["outage", "id"]

    def __str__(self):
        return f"Outage {self.outage_id}: incident {self.incident_id}"
