from datetime import date, timedelta

from django.core.paginator import Paginator
from django.http import HttpResponse
from django.shortcuts import render
from django.utils import timezone

from refunds_admin.incidents.services import elapsed_in_words
from refunds_admin.payouts.money import format_cents
from refunds_admin.reports import chart, selectors
from refunds_admin.reports.selectors import CAN_REPORT

from .. import palette
from ..access import get_proposal_for, role_required
from ..downloads import INTEGER, MONEY, MONTH, TEXT, csv_download, csv_writer, xlsx_download
from ..forms import ReportRangeForm


def _range(request):
    """The report's date range from the query string; by default the last twelve months. Days
    in the operator's time zone, as the report counts them."""
    form = ReportRangeForm(request.GET or None)
    today = timezone.localdate(timezone=selectors.report_zone())
    start: date | None = (today - timedelta(days=365)).replace(day=1)
    end: date | None = today
    if form.is_bound and form.is_valid():
        start = form.cleaned_data["start"] or None
        end = form.cleaned_data["end"] or None
    elif not form.is_bound:
        form = ReportRangeForm(initial={"start": start, "end": end})
    return form, start, end


def _query(start, end, currency=None):
    parts = [f"start={start or ''}", f"end={end or ''}"]
    if currency:
        parts.append(f"currency={currency}")
    return "&".join(parts)


@role_required(CAN_REPORT)
def finance_report(request):
    """Refunds paid per month, cause, rule and currency; incidents, players, median time from
    failure to posted; a stacked chart per currency; CSV export. Managers and auditors."""
    form, start, end = _range(request)
    report = selectors.finance_report(start, end) if form.is_valid() or not form.is_bound else None
    currency = request.GET.get("currency") or (
        report["currencies"][0] if report and report["currencies"] else ""
    )
    median = report and report["median_seconds"]
    return render(
        request,
        "web/finance_report.html",
        {
            "form": form,
            "report": report,
            "currency": currency,
            "query": _query(start, end),
            "chart_query": _query(start, end, currency),
            "median": _duration(median) if median is not None else "—",
            "postings": selectors.postings(start, end) if report else [],
            "time_zone": selectors.report_zone().key,
        },
    )


def _duration(seconds):
    return elapsed_in_words(seconds)


@role_required(CAN_REPORT)
def finance_report_chart(request):
    form, start, end = _range(request)
    report = selectors.finance_report(start, end)
    currency = request.GET.get("currency") or (report["currencies"] or ["USD"])[0]
    months, causes, values = selectors.chart_series(report["rows"], currency)
    # In the colours of the scheme asked for (`?scheme=dark`; the page offers both).
    colours = palette.colours(palette.scheme_of(request))
    svg = chart.stacked_months_svg(
        months, causes, values, currency, selectors.CAUSE_LABELS, colours=colours
    )
    return HttpResponse(svg, content_type="image/svg+xml")


# The CSV's cost columns after the amount (names as the finance team reads them); amounts as
# "30.00", tickets as a count. Then the time zone whose days and months the rows count (the
# operator's), on every row, so that a row copied elsewhere still says it.
_COST_COLUMNS = {
    "cash_cents": "cash_paid",
    "tournament_money_cents": "tournament_money_credited",
    "tickets": "tickets_returned",
    "ticket_cents": "tickets_value",
    "equal_share_cents": "equal_shares",
    "bounty_refund_cents": "bounty_money_returned",
    "overlay_kept_cents": "overlay_kept_by_house",
}


@role_required(CAN_REPORT)
def finance_report_csv(request):
    form, start, end = _range(request)
    report = selectors.finance_report(start, end)
    writer = csv_writer()

    costs = [name for name in _COST_COLUMNS if name in selectors.COST_FIELDS]

    def rows():
        yield writer.writerow(
            ["month", "cause", "rule", "currency", "incidents", "players", "credits", "amount"]
            + [_COST_COLUMNS[name] for name in costs]
            + ["time_zone"]
        )
        for r in report["rows"]:
            yield writer.writerow(
                [
                    r["month"].strftime("%Y-%m"), r["cause"], r["rule"], r["currency"],
                    r["incidents"], r["players"], r["credits"], format_cents(r["cents"]),
                ]
                + [
                    r[name] or 0 if name == "tickets" else format_cents(r[name] or 0)
                    for name in costs
                ]
                + [report["time_zone"]]
            )  # fmt: skip

    return csv_download(rows(), f"refunds-{start or 'start'}-{end or 'today'}.csv")


@role_required(CAN_REPORT)
def finance_report_xlsx(request):
    """The CSV's rows and columns as a spreadsheet: months as dates, counts and amounts as
    numbers (amounts with two decimals), so the finance team sums and pivots them as they are."""
    form, start, end = _range(request)
    report = selectors.finance_report(start, end)
    costs = [name for name in _COST_COLUMNS if name in selectors.COST_FIELDS]
    columns = [
        ("month", MONTH, 9), ("cause", TEXT, 16), ("rule", TEXT, 16), ("currency", TEXT, 9),
        ("incidents", INTEGER, 10), ("players", INTEGER, 10), ("credits", INTEGER, 10),
        ("amount", MONEY, 15),
    ] + [
        (_COST_COLUMNS[name], INTEGER if name == "tickets" else MONEY, 16) for name in costs
    ] + [("time_zone", TEXT, 20)]  # fmt: skip
    rows = (
        [
            r["month"], r["cause"], r["rule"], r["currency"],
            r["incidents"], r["players"], r["credits"], r["cents"],
        ]
        + [r[name] or 0 for name in costs]
        + [report["time_zone"]]
        for r in report["rows"]
    )  # fmt: skip
    name = f"refunds-{start or 'start'}-{end or 'today'}.xlsx"
    return xlsx_download(name, "refunds", columns, rows)


@role_required(CAN_REPORT)
def posting_credits(request, pk):
    """Every credit of a posting, with the cashier's reference for each."""
    proposal = get_proposal_for(request, pk)
    page = Paginator(selectors.posting_credits(proposal.pk), 200).get_page(request.GET.get("page"))
    refs = selectors.cashier_references([c["key"] for c in page.object_list])
    rows = [{**c, "cashier": refs.get(c["key"])} for c in page.object_list]
    return render(
        request,
        "web/posting_credits.html",
        {"proposal": proposal, "page": page, "rows": rows},
    )
