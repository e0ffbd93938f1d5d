"""Who may open which page. Every view and every htmx endpoint goes through one of these.

The services check the role again before changing anything; these checks decide what a page
shows and refuse early (403) so that a support agent never even sees an approve button.
"""

from functools import wraps

from django.contrib.auth.decorators import login_required
from django.contrib.auth.models import User
from django.contrib.auth.views import redirect_to_login
from django.core.exceptions import PermissionDenied
from django.shortcuts import get_object_or_404
from django_htmx.http import HttpResponseClientRedirect

from refunds_admin.accounts.roles import CAN_READ, has_role
from refunds_admin.incidents.models import Incident
from refunds_admin.outages.models import Outage
from refunds_admin.proposals.models import PayoutProposal
from refunds_admin.tournaments.models import Tournament


def role_required(allowed):
    """Log in first (302 to the login page), then hold one of the allowed roles (else 403)."""

    def decorator(view):
        @login_required
        def signed_in(request, *args, **kwargs):
            if not has_role(request.user, allowed):
                # The page says the role does not allow it; this says which roles do.
                needed = " or ".join(sorted(allowed))
                raise PermissionDenied(f"It needs the {needed} role.")
            return view(request, *args, **kwargs)

        @wraps(view)
        def wrapper(request, *args, **kwargs):
            htmx = getattr(request, "htmx", None)
            if htmx and not request.user.is_authenticated:
                # A fragment asked for after the session ended (signed out in another tab, or
                # timed out): the whole window goes to the sign-in page and back to the page it
                # showed, rather than a sign-in page swapped into one of its boxes.
                back = htmx.current_url_abs_path or request.get_full_path()
                return HttpResponseClientRedirect(redirect_to_login(back)["Location"])
            return signed_in(request, *args, **kwargs)

        wrapper.allowed_roles = allowed  # type: ignore[attr-defined]
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
    proposal = get_object_or_404(
        PayoutProposal.objects.select_related(
            "incident__tournament__policy_version", "policy_version", "snapshot"
        ).defer("snapshot__document_zlib", "snapshot__parsed"),  # MBs; pages never show them
        pk=pk,
    )
    _with_staff(
        (proposal, ("prepared_by", "submitted_by", "approved_by", "rejected_by")),
        (
            proposal.incident,
            ("recorded_by", "closed_by", "site_wide_confirmed_by", "site_wide_applied_by"),
        ),
    )
    return proposal


def get_proposal_rows_for(request, pk):
    """The proposal and its snapshot, no more: what the breakdown's rows (the htmx partial)
    read. The whole page's joins (incident, tournament, two policy versions) and its six staff
    cost ~1.5 ms of CPU to compile and fill, a tenth of the partial (issue 25)."""
    if not has_role(request.user, CAN_READ):
        raise PermissionDenied
    return get_object_or_404(
        PayoutProposal.objects.select_related("snapshot").defer(
            "snapshot__document_zlib", "snapshot__parsed"
        ),
        pk=pk,
    )


def _with_staff(*objects_and_relations):
    """Fill in the staff the page names (who prepared, submitted, approved; who recorded,
    closed, confirmed the incident) from one query. Joined into the proposal's own query they
    made it a 13-table join that PostgreSQL took 4-7 ms to plan (its exhaustive planner stops
    at 12 tables), more than the rest of the page's queries together (issue 25)."""
    named = [(obj, name) for obj, relations in objects_and_relations for name in relations]
    ids = {getattr(obj, f"{name}_id") for obj, name in named} - {None}
    staff = User.objects.in_bulk(ids) if ids else {}
    for obj, name in named:
        user_id = getattr(obj, f"{name}_id")
        if user_id is not None:
            setattr(obj, name, staff[user_id])  # the relation's cache; the id stays the same


def get_outage_for(request, pk):
    if not has_role(request.user, CAN_READ):
        raise PermissionDenied
    return get_object_or_404(Outage.objects.select_related("recorded_by"), pk=pk)
