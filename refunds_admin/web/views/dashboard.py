from django.contrib.auth.decorators import login_required
from django.db.models import Exists, OuterRef, Q
from django.shortcuts import redirect, render
from django.utils import timezone
from django.utils.http import url_has_allowed_host_and_scheme
from django.views.decorators.http import require_POST

from refunds_admin.accounts.roles import CAN_DECIDE, CAN_PREPARE, CAN_READ, has_role
from refunds_admin.accounts.services import set_time_zone
from refunds_admin.audit.display import describe
from refunds_admin.audit.models import AuditEvent
from refunds_admin.incidents.models import Incident
from refunds_admin.proposals.models import NOT_LIVE, PayoutProposal
from refunds_admin.proposals.services import out_of_date_reasons

from ..access import role_required
from ..progress import progress_of
from ..timezones import SESSION_KEY

# Recent activity is the refunds work. Account upkeep (authenticators confirmed, users, groups,
# API clients, e-mail preferences) stays in the full history of the audit page.
_ACCOUNT_UPKEEP = Q()
for _prefix in ("mfa.", "user.", "group.", "permission.", "api_client.", "signin."):
    _ACCOUNT_UPKEEP |= Q(action__startswith=_prefix)
_ACCOUNT_UPKEEP |= Q(action="notifications.preferences_changed")

POSTING_STATES = [
    PayoutProposal.Status.APPROVED,
    PayoutProposal.Status.POSTING,
    PayoutProposal.Status.FAILED,
]


@role_required(CAN_READ)
def dashboard(request):
    now = timezone.now()
    open_incidents = list(
        Incident.objects.filter(status=Incident.Status.OPEN).select_related("tournament")[:50]
    )
    waiting = []
    if has_role(request.user, CAN_DECIDE):
        # Four eyes: a proposal I prepared, submitted or chose the rule of is not waiting for me.
        waiting = list(
            PayoutProposal.objects.awaiting_decision_by(request.user).select_related(
                "incident__tournament", "submitted_by"
            )[:50]
        )
    # A submission the facts moved past can no longer be approved: marked, not offered as work.
    # (From the rows already read: the incident and tournament come with each proposal.)
    out_of_date = {p.pk for p in waiting if out_of_date_reasons(p)}
    submitted_elsewhere = PayoutProposal.objects.filter(
        status=PayoutProposal.Status.SUBMITTED
    ).count()
    jobs = [
        (proposal, progress_of(proposal))
        for proposal in PayoutProposal.objects.filter(status__in=POSTING_STATES).select_related(
            "incident__tournament"
        )[:20]
    ]
    recent = [
        (event, describe(event))
        for event in AuditEvent.objects.exclude(_ACCOUNT_UPKEEP).order_by("-id")[:15]
    ]
    my_drafts, waiting_on_me = [], []
    if has_role(request.user, CAN_PREPARE):
        my_drafts = list(
            PayoutProposal.objects.filter(
                status=PayoutProposal.Status.DRAFT, prepared_by=request.user
            )
            .select_related("incident__tournament")
            .order_by("-prepared_at")[:20]
        )
        # My incidents that need me: still open (resume or cancel), or cancelled with no live
        # proposal yet (prepare one, again after a rejection).
        live = PayoutProposal.objects.filter(incident=OuterRef("pk")).exclude(status__in=NOT_LIVE)
        waiting_on_me = list(
            Incident.objects.filter(recorded_by=request.user)
            .filter(
                Q(status=Incident.Status.OPEN)
                | Q(status=Incident.Status.CANCELLED, tournament__frozen_at__isnull=True)
                & ~Exists(live)
            )
            .select_related("tournament")
            .order_by("failed_at")[:20]
        )
    return render(
        request,
        "web/dashboard.html",
        {
            "now": now,
            "open_incidents": open_incidents,
            "waiting": waiting,
            "out_of_date": out_of_date,
            "submitted_count": submitted_elsewhere,
            "jobs": jobs,
            "recent": recent,
            "my_drafts": my_drafts,
            "waiting_on_me": waiting_on_me,
        },
    )


@login_required
@require_POST
def set_timezone(request):
    """Remember the staff member's display time zone, for this session and the next ones."""
    name = request.POST.get("tz", "")
    if set_time_zone(request.user, name):
        request.session[SESSION_KEY] = name
    nxt = request.POST.get("next") or "/"
    if not url_has_allowed_host_and_scheme(nxt, {request.get_host()}, request.is_secure()):
        nxt = "/"
    return redirect(nxt)
