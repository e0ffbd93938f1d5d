"""Who may open which page. Every view and every htmx endpoint goes through one of these.

The services check the role again before changing anything; these checks decide what a page
shows and refuse early (403) so that a support agent never even sees an approve button.
"""

from functools import wraps

from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.shortcuts import get_object_or_404

from refunds_admin.accounts.roles import CAN_READ, has_role
from refunds_admin.incidents.models import Incident
from refunds_admin.outages.models import Outage
from refunds_admin.proposals.models import PayoutProposal
from refunds_admin.tournaments.models import Tournament


def role_required(allowed):
    """Log in first (302 to the login page), then hold one of the allowed roles (else 403)."""

    def decorator(view):
        @wraps(view)
        @login_required
        def wrapper(request, *args, **kwargs):
            if not has_role(request.user, allowed):
                raise PermissionDenied("Your role does not allow this page.")
            return view(request, *args, **kwargs)

        return wrapper

    return decorator


# Permission-aware getters: every role that may read sees every tournament, incident and proposal
# (one operator, one back office); the role check is repeated so a getter is safe on its own.
def get_tournament_for(request, pk):
    if not has_role(request.user, CAN_READ):
        raise PermissionDenied
    return get_object_or_404(
        Tournament.objects.select_related("policy_version", "policy_changed_by"), pk=pk
    )


def get_incident_for(request, pk):
    if not has_role(request.user, CAN_READ):
        raise PermissionDenied
    return get_object_or_404(Incident.objects.select_related("tournament"), pk=pk)


def get_proposal_for(request, pk):
    if not has_role(request.user, CAN_READ):
        raise PermissionDenied
    return get_object_or_404(
        PayoutProposal.objects.select_related(
            "incident__tournament__policy_version",
            "policy_version",
            "incident__recorded_by",
            "incident__closed_by",
            "incident__site_wide_confirmed_by",
            "snapshot",
            "prepared_by",
            "submitted_by",
            "approved_by",
        ).defer("snapshot__document_zlib", "snapshot__parsed"),  # MBs; pages never show them
        pk=pk,
    )


def get_outage_for(request, pk):
    if not has_role(request.user, CAN_READ):
        raise PermissionDenied
    return get_object_or_404(Outage.objects.select_related("recorded_by"), pk=pk)
