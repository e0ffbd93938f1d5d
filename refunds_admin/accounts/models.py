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
    # Someone else (a superuser in the admin) set this person's password or authenticator: they
    # could sign in as this person, so until the person sets it again themselves they approve
    # nothing (accounts/credentials.py).
    password_set_for_them = models.BooleanField(default=False)
    device_set_for_them = models.BooleanField(default=False)
    credentials_set_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.PROTECT,
        related_name="+",
        help_text="Who last set this person's password or authenticator for them.",
    )

    def __str__(self):
        return f"{self.user} ({self.time_zone or 'default time zone'})"
