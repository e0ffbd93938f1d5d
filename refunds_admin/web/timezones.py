"""The staff member's display time zone: kept per user (accounts.StaffProfile, so it survives
signing out), cached in the session, activated for every request.

Storage is always UTC; only display and the parsing of typed times use this zone.
"""

import zoneinfo

from django.utils import timezone

from refunds_admin.accounts.services import time_zone_of

SESSION_KEY = "staff_tz"

# The zones the switch offers first; any IANA name is accepted.
COMMON_ZONES = [
    "UTC",
    "Europe/London",
    "Europe/Malta",
    "Europe/Berlin",
    "Europe/Sofia",
    "America/New_York",
    "America/Chicago",
    "America/Los_Angeles",
    "America/Sao_Paulo",
    "Asia/Manila",
    "Asia/Kolkata",
    "Australia/Sydney",
]


def valid_zone(name):
    try:
        zoneinfo.ZoneInfo(name)
    except (zoneinfo.ZoneInfoNotFoundError, ValueError, TypeError):
        return False
    return bool(name)


class StaffTimezoneMiddleware:
    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        name = request.session.get(SESSION_KEY) if hasattr(request, "session") else None
        user = getattr(request, "user", None)
        if name is None and user is not None and user.is_authenticated:
            # A new session (signed in again): the zone this person chose before. Cached in
            # the session ("" for the default) so that this is read once per sign-in.
            name = time_zone_of(user)
            request.session[SESSION_KEY] = name
        if name and valid_zone(name):
            timezone.activate(zoneinfo.ZoneInfo(name))
        else:
            timezone.deactivate()  # settings.TIME_ZONE
        try:
            return self.get_response(request)
        finally:
            timezone.deactivate()


def zone_choices(current):
    zones = list(COMMON_ZONES)
    if current and current not in zones:
        zones.insert(0, current)
    return zones
