import json
from datetime import UTC, date, datetime, time, timedelta
from urllib.parse import urlencode

from django.shortcuts import render
from django.utils import timezone
from django.views.decorators.vary import vary_on_headers

from refunds_admin.accounts.roles import CAN_READ
from refunds_admin.audit.display import describe, for_export

from .. import queries
from ..access import role_required
from ..downloads import csv_download, csv_writer
from ..forms import AuditFilterForm
from ..paging import Column, KeysetPage


def _filtered(request):
    form = AuditFilterForm(request.GET)
    form.is_valid()
    data = form.cleaned_data
    tz = timezone.get_current_timezone()
    # Dates are days in the staff member's time zone; "to" includes the whole day (the last
    # day there is has no day after it: up to it is no end at all).
    since = datetime.combine(data["since"], time.min, tz) if data.get("since") else None
    until = (
        datetime.combine(data["until"] + timedelta(days=1), time.min, tz)
        if data.get("until") and data["until"] < date.max
        else None
    )
    qs = queries.audit_events(
        tournament=data.get("tournament", ""),
        player=data.get("player", ""),
        user=data.get("user", ""),
        action=data.get("action", ""),
        since=since,
        until=until,
    )
    if form.errors:
        # A filter that cannot be read (named on the page) filters out everything, never
        # nothing: the page and the export never pass off the whole history as its result.
        qs = qs.none()
    return form, qs


AUDIT_COLUMNS = [
    Column("when", "When", ("created_at",), descending_first=True),
    Column("what", "What", ("action",)),
    Column("object", "Object", ("object_type", "object_id")),
    Column("tournament", "Tournament", ("tournament_external_id",)),
]


@role_required(CAN_READ)
@vary_on_headers("HX-Request", "HX-Target")  # the events partial for htmx
def audit(request):
    """The history, 50 events a page, newest first; the filters and the sort stay in the
    address, so a link to page 3 of "proposal. for T-1" is that page for whoever opens it."""
    form, qs = _filtered(request)
    page = KeysetPage(request.GET, qs, AUDIT_COLUMNS, default="-when", noun="events")
    keep = urlencode(
        {k: v for k, v in request.GET.items() if k not in ("cursor", "sort", "before") and v}
    )
    template = "web/audit.html"
    if request.htmx and request.htmx.target == "events":
        template += "#events"
    return render(
        request,
        template,
        {
            "form": form,
            "events": [(event, describe(event)) for event in page.rows],
            "page": page,
            "keep": keep,
        },
    )


def _currency(event):
    for data in (event.after, event.before):
        if isinstance(data, dict) and data.get("currency"):
            return data["currency"]
    return ""


def _json(data):
    return json.dumps(data, sort_keys=True, ensure_ascii=False)


@role_required(CAN_READ)
def audit_export(request):
    """The filtered history as CSV, streamed; before/after as JSON text."""
    _, qs = _filtered(request)
    writer = csv_writer()
    header = [
        "id",
        "created_at_utc",
        "actor",
        "action",
        "object_type",
        "object_id",
        "tournament",
        "player_ids",
        "reason",
        "before",
        "after",
        "request_id",
        "ip",
    ]

    def rows():
        yield writer.writerow(header)
        for e in qs.order_by("id").iterator(chunk_size=2000):
            yield writer.writerow(
                [
                    e.id,
                    e.created_at.astimezone(UTC).isoformat(),
                    e.actor_name,
                    e.action,
                    e.object_type,
                    e.object_id,
                    e.tournament_external_id,
                    " ".join(e.player_ids or []),
                    e.reason,
                    # Money as amounts with their currency, never raw cents.
                    _json(for_export(e.before, _currency(e))) if e.before is not None else "",
                    _json(for_export(e.after, _currency(e))) if e.after is not None else "",
                    e.request_id,
                    e.ip or "",
                ]
            )

    return csv_download(rows(), "audit.csv")
