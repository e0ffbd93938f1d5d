from django.contrib import messages
from django.core.paginator import Paginator
from django.shortcuts import redirect, render
from django.views.decorators.http import require_http_methods, require_POST

from refunds_admin.accounts.roles import CAN_DECIDE, CAN_READ, has_role
from refunds_admin.errors import Refused
from refunds_admin.notifications import services as notification_services
from refunds_admin.notifications import staff as staff_notifications
from refunds_admin.notifications.models import StatementMessage

from ..access import get_proposal_for, role_required

FILTERS = {
    "": None,
    "failed": StatementMessage.State.FAILED,
    "no_address": StatementMessage.State.NO_ADDRESS,
    "pending": StatementMessage.State.PENDING,
    "sent": StatementMessage.State.SENT,
}


@role_required(CAN_READ)
def statement_outbox(request, pk):
    """Every statement message of a posted proposal: sent, failed (retryable by a manager),
    players without an address, and the job's progress."""
    proposal = get_proposal_for(request, pk)
    outbox = notification_services.statement_outbox(proposal)
    show = request.GET.get("show", "")
    rows = StatementMessage.objects.filter(proposal=proposal).order_by("id")
    if FILTERS.get(show):
        rows = rows.filter(state=FILTERS[show])
    page = Paginator(rows, 100).get_page(request.GET.get("page"))
    template = "web/statement_outbox.html"
    if request.htmx:
        template += "#outbox"
    return render(
        request,
        template,
        {
            "proposal": proposal,
            "outbox": outbox,
            "page": page,
            "show": show,
            "filters": [(k, k.replace("_", " ") or "all") for k in FILTERS],
            "may_retry": has_role(request.user, CAN_DECIDE),
        },
    )


@require_POST
@role_required(CAN_DECIDE)
def statement_retry(request, pk):
    proposal = get_proposal_for(request, pk)
    try:
        n = notification_services.retry_statements(proposal, acting_user=request.user)
    except Refused as exc:
        messages.error(request, exc.message)
    else:
        messages.success(request, f"{n} failed statement{'s' if n != 1 else ''} queued again.")
    return redirect("statement_outbox", pk=proposal.pk)


@require_http_methods(["GET", "HEAD", "POST"])
@role_required(CAN_READ)
def notification_settings(request):
    """Each user turns each kind of staff e-mail on or off."""
    if request.method == "POST":
        staff_notifications.set_preferences(
            request.user,
            [
                k
                for k in request.POST.getlist("kinds")
                if k in dict(staff_notifications.StaffKind.choices)
            ],
        )
        messages.success(request, "Your notification settings are saved.")
        return redirect("notification_settings")
    return render(
        request,
        "web/notification_settings.html",
        {"preferences": staff_notifications.preferences_of(request.user)},
    )
