from django.conf import settings
from django.db import models


class StaffProfile(models.Model):
    """What a staff member chose for themselves and keeps across sign-ins."""

    user = models.OneToOneField(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="staff_profile"
    )
    time_zone = models.CharField(
        max_length=64, blank=True, help_text="IANA name of the display time zone; empty: default."
    )

    def __str__(self):
        return f"{self.user} ({self.time_zone or 'default time zone'})"
