"""A staff member's own preferences (not workflow state: no audit event)."""

import zoneinfo

from .models import StaffProfile


def valid_zone(name):
    try:
        zoneinfo.ZoneInfo(name)
    except (zoneinfo.ZoneInfoNotFoundError, ValueError, TypeError):
        return False
    return bool(name)


def set_time_zone(user, name):
    """Keep `name` as the user's display time zone (kept across sign-out). Returns False for a
    name that is not a time zone."""
    if not valid_zone(name):
        return False
    StaffProfile.objects.update_or_create(user=user, defaults={"time_zone": name})
    return True


def time_zone_of(user):
    """The user's chosen time zone, or "" for the default."""
    if user is None or not user.is_authenticated:
        return ""
    name = StaffProfile.objects.filter(user=user).values_list("time_zone", flat=True).first() or ""
    return name if valid_zone(name) else ""
