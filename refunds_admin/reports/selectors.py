"""The finance report: read-only selectors over the ledger's per-posting rows (PostedTotal).

PostedTotal is written by the posting job in the transaction that marks a proposal posted, from
the credits themselves, so these totals are the ledger's to the cent; the report reads one row
per posting (about a thousand a year), never the millions of credits. The date range is on the
day a proposal was posted, both ends included, and the months are calendar months, both in the
operator's time zone (settings.TIME_ZONE): a refund posted at 23:30 there is on that day in
both, whoever reads them. (The audit history's days are the reader's own time zone, as its
times are: docs/ui.md.)
"""

import statistics
import zoneinfo
from collections import defaultdict
from datetime import date, datetime, time, timedelta
from typing import Any

from django.conf import settings
from django.db.models import Count, Sum
from django.db.models.functions import TruncMonth

from refunds_admin.accounts.roles import AUDITOR, MANAGER
from refunds_admin.incidents.models import Incident
from refunds_admin.ledger.models import CashierDelivery, Credit, PostedTotal

# Who may open the report: finance questions are for managers and auditors.
CAN_REPORT = {MANAGER, AUDITOR}

CAUSE_LABELS = dict(Incident.Cause.choices)

# What each posting cost, by the form the money took and by the policy's components, summed per
# row of the report: cash paid, tournament money credited, tickets returned (count and value),
# equal shares, bounty money returned, and the overlay the house kept (not paid).
_POSTED_FIELDS = {f.name for f in PostedTotal._meta.fields}
COST_FIELDS = [
    name
    for name in (
        "cash_cents", "tournament_money_cents", "tickets", "ticket_cents",
        "equal_share_cents", "bounty_refund_cents", "overlay_kept_cents",
    )
    if name in _POSTED_FIELDS
]  # fmt: skip


def _costs():
    return {name: Sum(name) for name in COST_FIELDS}


def report_zone():
    """The operator's time zone (settings.TIME_ZONE): the report's days and months are its own,
    not the reader's, so that everyone reads the same figures."""
    return zoneinfo.ZoneInfo(settings.TIME_ZONE)


def _window(start, end):
    zone = report_zone()
    qs = PostedTotal.objects.all()
    if start:
        qs = qs.filter(posted_at__gte=datetime.combine(start, time.min, tzinfo=zone))
    if end and end < date.max:  # the last day there is: no day after it, no end at all
        qs = qs.filter(
            posted_at__lt=datetime.combine(end + timedelta(days=1), time.min, tzinfo=zone)
        )
    return qs


def _months(rows):
    """Each row's month as a date (its first day): a month, not an instant that a page would
    show in the reader's time zone (the 1st at 00:00 in Malta is still October in New York)."""
    rows = list(rows)
    for row in rows:
        row["month"] = row["month"].date()
    return rows


def finance_report(start=None, end=None):
    """Refunds paid per month, cause, rule and currency in [start, end] (dates, inclusive).

    Returns rows (month, cause, rule, currency, incidents, players, credits, cents and the
    COST_FIELDS), the totals per currency (the same figures), `by_method`: per month, cause and
    currency what was paid in cash, credited as tournament money, returned as tickets, shared
    equally, returned as bounties and kept by the house as overlay; the number of incidents and
    players, and the median time from failure to posted. Players are counted once per incident
    (a player refunded by two incidents counts twice): the distinct count across incidents
    would have to read the credits. Days and months are the operator's (`time_zone`, the name
    of report_zone()); a row's month is the date of its first day.
    """
    zone = report_zone()
    qs = _window(start, end)
    rows = _months(
        qs.annotate(month=TruncMonth("posted_at", tzinfo=zone))
        .values("month", "cause", "rule", "currency")
        .annotate(
            incidents=Count("proposal__incident_id", distinct=True),
            players=Sum("players"),
            credits=Sum("credits"),
            cents=Sum("cents"),
            **_costs(),
        )
        .order_by("month", "currency", "cause", "rule")
    )
    for row in rows:
        row["cause_label"] = CAUSE_LABELS.get(row["cause"], row["cause"])
    totals = list(
        qs.values("currency")
        .annotate(
            incidents=Count("proposal__incident_id", distinct=True),
            players=Sum("players"),
            credits=Sum("credits"),
            cents=Sum("cents"),
            **_costs(),
        )
        .order_by("currency")
    )
    by_method = _months(
        qs.annotate(month=TruncMonth("posted_at", tzinfo=zone))
        .values("month", "cause", "currency")
        .annotate(
            incidents=Count("proposal__incident_id", distinct=True), cents=Sum("cents"), **_costs()
        )
        .order_by("month", "currency", "cause")
    )
    for row in by_method:
        row["cause_label"] = CAUSE_LABELS.get(row["cause"], row["cause"])
    delays = [
        (posted - failed).total_seconds()
        for posted, failed in qs.values_list("posted_at", "failed_at")
    ]
    summary = qs.aggregate(
        incidents=Count("proposal__incident_id", distinct=True), players=Sum("players")
    )
    return {
        "rows": rows,
        "totals": totals,
        "by_method": by_method,
        "incidents": summary["incidents"] or 0,
        "players": summary["players"] or 0,
        "postings": len(delays),
        "median_seconds": statistics.median(delays) if delays else None,
        "currencies": [t["currency"] for t in totals],
        "time_zone": zone.key,
    }


def chart_series(rows, currency):
    """(months, causes, {(month, cause): cents}) of one currency, for the stacked chart."""
    values: defaultdict[tuple[Any, str], int] = defaultdict(int)
    months, causes = set(), set()
    for row in rows:
        if row["currency"] != currency:
            continue
        month = row["month"]
        months.add(month)
        causes.add(row["cause"])
        values[(month, row["cause"])] += row["cents"]
    return sorted(months), sorted(causes), values


def posting_credits(proposal_id):
    """A posting's credits with the cashier's reference (when a cashier is configured)."""
    return (
        Credit.objects.filter(proposal_id=proposal_id)
        .order_by("key")
        .values(
            "key",
            "entry_id",
            "player_id",
            "component",
            "currency",
            "amount_cents",
            "method",
            "ticket_id",
            "created_at",
        )
    )


def cashier_references(keys):
    """{credit key: (state, cashier credit id)} for these credits."""
    return {
        key: (state, ref)
        for key, state, ref in CashierDelivery.objects.filter(credit_id__in=keys).values_list(
            "credit_id", "state", "cashier_credit_id"
        )
    }


def postings(start=None, end=None, limit=200):
    """The postings in the range, newest first (each links to its credits)."""
    rows = list(
        _window(start, end)
        .select_related("proposal__incident__tournament")
        .order_by("-posted_at")[:limit]
    )
    for row in rows:
        row.cause_label = CAUSE_LABELS.get(row.cause, row.cause)
    return rows
