"""The three roles of the design card, as Django groups, and the checks the services call.

Permission checks live here and in the services, never only in views, so that a view, a
management command and the API cannot disagree about who may do what.
"""

from django.core.exceptions import PermissionDenied

SUPPORT = "support"
MANAGER = "manager"
AUDITOR = "auditor"
ROLES = (SUPPORT, MANAGER, AUDITOR)

# What each role may do. A manager may do everything support does.
CAN_PREPARE = {SUPPORT, MANAGER}  # import snapshots, record incidents, prepare and submit proposals
CAN_DECIDE = {
    MANAGER
}  # declare not resumable, confirm site-wide issues, approve, reject, resume posting
CAN_READ = {SUPPORT, MANAGER, AUDITOR}  # see everything, export, replay


def roles_of(user):
    if user is None or not user.is_authenticated or not user.is_active:
        return set()
    cached = getattr(user, "_refunds_roles", None)
    if cached is None:
        cached = set(user.groups.filter(name__in=ROLES).values_list("name", flat=True))
        user._refunds_roles = cached
    return cached


def has_role(user, allowed):
    """True when the user holds one of the allowed roles (a set of role names)."""
    return bool(roles_of(user) & set(allowed))


def require_role(user, allowed, action):
    """Raise PermissionDenied naming the action when the user holds none of the allowed roles."""
    if not has_role(user, allowed):
        who = getattr(user, "username", None) or "anonymous"
        raise PermissionDenied(f"{who} may not {action}")
