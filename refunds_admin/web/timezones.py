"""The staff member's display time zone: kept in the session, activated for every request.

Storage is always UTC; only display and the parsing of typed times use this zone.
"""

import zoneinfo

from django.utils import timezone

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
