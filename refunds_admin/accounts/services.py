"""A staff member's own preferences (not workflow state: no audit event)."""

from __future__ import annotations

import zoneinfo
from typing import TYPE_CHECKING, Any

from .models import StaffProfile

if TYPE_CHECKING:
    from django.contrib.auth.models import AnonymousUser, User


def valid_zone(name: Any) -> bool:
    try:
        zoneinfo.ZoneInfo(name)
    except (zoneinfo.ZoneInfoNotFoundError, ValueError, TypeError):
        return False
    return bool(name)


def set_time_zone(user: User | AnonymousUser, name: str) -> bool:
    """Keep `name` as the user's display time zone (kept across sign-out). Returns False for a
    name that is not a time zone (or a visitor who is not signed in)."""
    if not valid_zone(name) or user.pk is None:
        return False
    StaffProfile.objects.update_or_create(user_id=user.pk, defaults={"time_zone": name})
    return True


def time_zone_of(user: User | AnonymousUser | None) -> str:
    """The user's chosen time zone, or "" for the default."""
    if user is None or not user.is_authenticated:
        return ""
    name = StaffProfile.objects.filter(user=user).values_list("time_zone", flat=True).first() or ""
    return name if valid_zone(name) else ""
