from datetime import timedelta

from django.conf import settings
from django.db import models
from django.db.models import Q

# The policy: if play has not resumed 30 minutes after the failure, the tournament is cancelled.
RESUME_WINDOW = timedelta(minutes=30)


class Incident(models.Model):
    """A failure of a tournament: open until play resumes (no payout) or it is cancelled."""

    class Status(models.TextChoices):
        OPEN = "open", "Open"
        RESUMED = "resumed", "Play resumed"
        CANCELLED = "cancelled", "Cancelled"

    class Cause(models.TextChoices):
        SERVER_CRASH = "server_crash", "Server crash"
        NETWORK = "network", "Network"
        DATABASE = "database", "Database"
        CLIENT_SOFTWARE = "client_software", "Client software"
        DDOS = "ddos", "DDoS"
        OTHER = "other", "Other"

    class CancelledBecause(models.TextChoices):
        WINDOW_PASSED = "window_passed", "Not resumed within 30 minutes"
        NOT_RESUMABLE = "not_resumable", "Declared not resumable by a manager"

    tournament = models.ForeignKey(
        "tournaments.Tournament", on_delete=models.PROTECT, related_name="incidents"
    )
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.OPEN)
    failed_at = models.DateTimeField(help_text="When play failed.")
    cause = models.CharField(max_length=20, choices=Cause.choices)
    description = models.TextField(blank=True)
    recorded_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+"
    )
    recorded_at = models.DateTimeField(auto_now_add=True)

    # Management's finding that site issues impaired play throughout (selects the full refund).
    site_wide_issue = models.BooleanField(default=False)
    site_wide_justification = models.TextField(blank=True)
    site_wide_confirmed_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )
    # A tournament added to an outage after its site-wide finding gets that finding (its author
    # above); the manager who added it applied the finding to it, and so chose its rule too.
    site_wide_applied_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )

    rule = models.CharField(
        max_length=20, blank=True, help_text="The payout rule the timing selects."
    )

    resumed_at = models.DateTimeField(null=True, blank=True)
    cancelled_at = models.DateTimeField(null=True, blank=True)
    cancelled_because = models.CharField(
        max_length=20, choices=CancelledBecause.choices, blank=True
    )
    cancel_reason = models.TextField(blank=True)
    closed_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )
    overdue_notified_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-failed_at", "-id"]
        constraints = [
            # At most one incident per tournament still open or leading to a payout.
            models.UniqueConstraint(
                fields=["tournament"],
                condition=Q(status__in=["open", "cancelled"]),
                name="one_live_incident_per_tournament",
            ),
            models.CheckConstraint(
                condition=Q(site_wide_issue=False) | Q(site_wide_confirmed_by__isnull=False),
                name="site_wide_issue_needs_a_manager",
            ),
        ]

    def __str__(self):
        return f"Incident {self.pk} on {self.tournament.external_id}"

    @property
    def deadline(self):
        """When the 30-minute window closes."""
        return self.failed_at + RESUME_WINDOW


class RestartAttempt(models.Model):
    incident = models.ForeignKey(
        Incident, on_delete=models.PROTECT, related_name="restart_attempts"
    )
    attempted_at = models.DateTimeField()
    succeeded = models.BooleanField(default=False)
    note = models.TextField(blank=True)
    recorded_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+"
    )
    recorded_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["attempted_at", "id"]
