"""Worklists: proposals and incidents by status, with filters and "mine"."""

from urllib.parse import urlencode

from django import forms
from django.core.paginator import Paginator
from django.db.models import Count, Q
from django.shortcuts import render
from django.utils import timezone
from django.views.decorators.vary import vary_on_headers

from refunds_admin.accounts.roles import CAN_READ
from refunds_admin.incidents.models import RESUME_WINDOW, Incident
from refunds_admin.proposals.models import PayoutProposal

from ..access import role_required

PAGE_SIZE = 50
RULE_CHOICES = [
    ("", "Any rule"),
    ("full_refund", "Rule 1: full refund"),
    ("in_the_money", "Rule 2: in the money"),
    ("not_in_the_money", "Rule 2: not yet in the money"),
]


class ProposalFilterForm(forms.Form):
    q = forms.CharField(label="Tournament id or name", required=False)
    rule = forms.ChoiceField(label="Rule", required=False, choices=RULE_CHOICES)
    person = forms.CharField(label="Prepared or submitted by", required=False)
    mine = forms.BooleanField(label="Mine only", required=False)
    sort = forms.ChoiceField(
        label="Sort by",
        required=False,
        choices=[
            ("-prepared", "Newest first"),
            ("prepared", "Oldest first"),
            ("-total", "Largest total first"),
            ("total", "Smallest total first"),
        ],
    )


class IncidentFilterForm(forms.Form):
    q = forms.CharField(label="Tournament id or name", required=False)
    mine = forms.BooleanField(label="Recorded by me", required=False)
    sort = forms.ChoiceField(
        label="Sort by",
        required=False,
        choices=[("-failed", "Latest failure first"), ("failed", "Earliest failure first")],
    )


PROPOSAL_SORTS = {
    "-prepared": ("-prepared_at", "-id"),
    "prepared": ("prepared_at", "id"),
    "-total": ("-total_cents", "-id"),
    "total": ("total_cents", "id"),
}
# The tabs in the order work flows through them.
_S = PayoutProposal.Status
PROPOSAL_TABS = [
    (s.value, s.label)
    for s in (
        _S.DRAFT,
        _S.SUBMITTED,
        _S.APPROVED,
        _S.POSTING,
        _S.POSTED,
        _S.REJECTED,
        _S.SUPERSEDED,
        _S.FAILED,
    )
]
INCIDENT_SORTS = {"-failed": ("-failed_at", "-id"), "failed": ("failed_at", "id")}


def _status_tabs(statuses, counts, current, keep):
    return [
        {
            "value": value,
            "label": label,
            "count": counts.get(value, 0),
            "current": value == current,
            "query": urlencode({**keep, "status": value}),
        }
        for value, label in statuses
    ]


def _page(request, qs):
    return Paginator(qs, PAGE_SIZE).get_page(request.GET.get("page"))


def _render(request, template, context):
    if request.htmx and request.htmx.target == "worklist":
        template += "#worklist"
    return render(request, template, context)


@role_required(CAN_READ)
@vary_on_headers("HX-Request", "HX-Target")  # the worklist partial for htmx
def proposal_list(request):
    form = ProposalFilterForm(request.GET)
    form.is_valid()
    data = form.cleaned_data
    qs = PayoutProposal.objects.all()
    if data.get("q"):
        q = data["q"].strip()
        qs = qs.filter(
            Q(incident__tournament__external_id__icontains=q)
            | Q(incident__tournament__name__icontains=q)
        )
    if data.get("rule"):
        qs = qs.filter(rule=data["rule"])
    if data.get("person"):
        person = data["person"].strip()
        qs = qs.filter(
            Q(prepared_by__username__iexact=person) | Q(submitted_by__username__iexact=person)
        )
    if data.get("mine"):
        qs = qs.filter(Q(prepared_by=request.user) | Q(submitted_by=request.user))
    counts = dict(qs.values_list("status").annotate(n=Count("id")).order_by())
    statuses = PROPOSAL_TABS
    status = request.GET.get("status") or "submitted"
    if status not in dict(statuses):
        status = "submitted"
    keep = {k: v for k, v in request.GET.items() if k not in ("status", "page") and v}
    page = _page(
        request,
        qs.filter(status=status)
        .select_related(
            "incident__tournament", "prepared_by", "submitted_by", "approved_by", "rejected_by"
        )
        .order_by(*PROPOSAL_SORTS[data.get("sort") or "-prepared"]),
    )
    return _render(
        request,
        "web/proposal_list.html",
        {
            "form": form,
            "tabs": _status_tabs(statuses, counts, status, keep),
            "status": status,
            "status_label": dict(statuses)[status],
            "page": page,
            "keep": urlencode({**keep, "status": status}),
        },
    )


@role_required(CAN_READ)
@vary_on_headers("HX-Request", "HX-Target")  # the worklist partial for htmx
def incident_list(request):
    form = IncidentFilterForm(request.GET)
    form.is_valid()
    data = form.cleaned_data
    qs = Incident.objects.all()
    if data.get("q"):
        q = data["q"].strip()
        qs = qs.filter(Q(tournament__external_id__icontains=q) | Q(tournament__name__icontains=q))
    if data.get("mine"):
        qs = qs.filter(recorded_by=request.user)
    counts = dict(qs.values_list("status").annotate(n=Count("id")).order_by())
    statuses = Incident.Status.choices
    status = request.GET.get("status") or "open"
    if status not in dict(statuses):
        status = "open"
    keep = {k: v for k, v in request.GET.items() if k not in ("status", "page") and v}
    page = _page(
        request,
        qs.filter(status=status)
        .select_related("tournament", "recorded_by", "closed_by")
        .prefetch_related("proposals")
        .order_by(*INCIDENT_SORTS[data.get("sort") or "-failed"]),
    )
    now = timezone.now()
    rows = [
        {
            "incident": incident,
            "overdue": incident.status == Incident.Status.OPEN
            and incident.failed_at + RESUME_WINDOW < now,
            "proposal": max(incident.proposals.all(), key=lambda p: p.version, default=None),
        }
        for incident in page.object_list
    ]
    return _render(
        request,
        "web/incident_list.html",
        {
            "form": form,
            "tabs": _status_tabs(statuses, counts, status, keep),
            "status": status,
            "status_label": dict(statuses)[status],
            "page": page,
            "rows": rows,
            "now": now,
            "keep": urlencode({**keep, "status": status}),
        },
    )
