from django.utils import timezone

from refunds_admin.accounts.roles import CAN_DECIDE, CAN_PREPARE, CAN_READ, has_role, roles_of
from refunds_admin.reports.selectors import CAN_REPORT

from .timezones import zone_choices


def staff(request):
    """What the layout needs on every page: the user's roles (for the nav) and time zone."""
    user = getattr(request, "user", None)
    current_tz = timezone.get_current_timezone_name()
    return {
        "roles": sorted(roles_of(user)),
        "can_read": has_role(user, CAN_READ),
        "can_prepare": has_role(user, CAN_PREPARE),
        "can_decide": has_role(user, CAN_DECIDE),
        "can_report": has_role(user, CAN_REPORT),
        "current_tz": current_tz,
        "tz_choices": zone_choices(current_tz),
    }
