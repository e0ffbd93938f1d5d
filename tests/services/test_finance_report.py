"""The finance report: totals equal the ledger's to the cent, per month, cause, rule and
currency, for any date range; managers and auditors only; chart, CSV and a posting's credits."""

import csv
import io
import zoneinfo
from datetime import date, datetime, timedelta
from decimal import Decimal

import openpyxl
import pytest
from django.db.models import Sum
from django.urls import reverse
from django.utils import timezone

from refunds_admin.ledger import posting
from refunds_admin.ledger.models import Credit, PostedTotal
from refunds_admin.proposals.models import PayoutProposal
from refunds_admin.reports import selectors
from tests.support.factories import posted_proposal, submitted_proposal


@pytest.fixture
def postings(support, manager):
    return [
        posted_proposal(support, manager, external_id="FR-1"),
        posted_proposal(support, manager, external_id="FR-2", cause="network"),
        posted_proposal(support, manager, external_id="FR-3", cause="network", currency="EUR"),
        posted_proposal(
            support, manager, external_id="FR-4", active_chips=[5_000, 4_000], eliminated=1
        ),
    ]


def ledger_total(currency):
    posted = PayoutProposal.objects.filter(status=PayoutProposal.Status.POSTED)
    return Credit.objects.filter(proposal__in=posted, currency=currency).aggregate(
        s=Sum("amount_cents")
    )["s"]


def test_its_totals_equal_the_ledger_to_the_cent(postings, support):
    submitted_proposal(support, external_id="FR-5")  # not posted: not paid
    report = selectors.finance_report()
    totals = {t["currency"]: t["cents"] for t in report["totals"]}
    assert totals == {"USD": ledger_total("USD"), "EUR": ledger_total("EUR")}
    for currency in totals:
        assert (
            sum(r["cents"] for r in report["rows"] if r["currency"] == currency) == totals[currency]
        )
    assert report["incidents"] == 4
    assert report["players"] == sum(
        Credit.objects.filter(proposal=p).values("player_id").distinct().count() for p in postings
    )
    by_cause = {(r["cause"], r["rule"], r["currency"]): r["cents"] for r in report["rows"]}
    assert by_cause[("network", postings[2].rule, "EUR")] == postings[2].total_cents
    # Every posting's summary row was written with it: credits, players, components.
    for proposal in postings:
        row = PostedTotal.objects.get(proposal=proposal)
        assert row.cents == proposal.total_cents == ledger_credits(proposal)
        assert row.cause == proposal.incident.cause and row.rule == proposal.rule


def ledger_credits(proposal):
    return Credit.objects.filter(proposal=proposal).aggregate(s=Sum("amount_cents"))["s"]


def test_it_reports_any_date_range_and_the_median_time_to_posted(postings):
    today = timezone.now().date()
    assert selectors.finance_report(today + timedelta(days=1), None)["rows"] == []
    assert selectors.finance_report(None, today - timedelta(days=1))["rows"] == []
    report = selectors.finance_report(today, today)
    assert report["postings"] == 4
    delays = sorted(
        (row.posted_at - row.failed_at).total_seconds() for row in PostedTotal.objects.all()
    )
    assert report["median_seconds"] == (delays[1] + delays[2]) / 2
    assert 40 * 60 <= report["median_seconds"] < 60 * 60  # failed 40 minutes before posting


def test_it_is_for_managers_and_auditors_with_chart_csv_and_credits(
    client, postings, support, auditor
):
    client.force_login(support)
    assert client.get(reverse("finance_report")).status_code == 403
    client.force_login(auditor)
    page = client.get(reverse("finance_report"))
    assert page.status_code == 200
    assert "Network" in page.text and "FR-4" in page.text
    svg = client.get(reverse("finance_report_chart") + "?currency=USD")
    assert svg["Content-Type"] == "image/svg+xml"
    assert svg.content.count(b"<rect") >= 2 and b"style=" not in svg.content
    exported = b"".join(client.get(reverse("finance_report_csv")).streaming_content).decode(
        "utf-8-sig"
    )
    rows = list(csv.DictReader(io.StringIO(exported)))
    usd = sum(int(Decimal(r["amount"]) * 100) for r in rows if r["currency"] == "USD")
    assert usd == ledger_total("USD")
    credits = client.get(reverse("posting_credits", args=[postings[0].pk]))
    assert credits.status_code == 200
    assert f"proposal-{postings[0].pk}/e1/" in credits.text
    bad = client.get(reverse("finance_report") + "?start=2026-05-01&end=2026-04-01")
    assert "before its start" in bad.text


def test_an_all_cash_posting_is_all_cash_paid_in_the_per_method_table_and_csv(
    client, postings, auditor
):
    report = selectors.finance_report()
    for t in report["totals"]:
        assert t["cash_cents"] == t["cents"] == ledger_total(t["currency"])
        assert (t["tournament_money_cents"], t["tickets"], t["ticket_cents"]) == (0, 0, 0)
    assert sum(r["cash_cents"] for r in report["by_method"] if r["currency"] == "USD") == (
        ledger_total("USD")
    )
    client.force_login(auditor)
    page = client.get(reverse("finance_report"))
    assert "What it cost, by form" in page.text and "Tickets returned" in page.text
    exported = b"".join(client.get(reverse("finance_report_csv")).streaming_content).decode(
        "utf-8-sig"
    )
    rows = list(csv.DictReader(io.StringIO(exported)))
    assert {"cash_paid", "tournament_money_credited", "tickets_returned", "tickets_value"} <= set(
        rows[0]
    )
    assert all(r["cash_paid"] == r["amount"] and r["tickets_returned"] == "0" for r in rows)


def test_it_counts_the_days_and_months_of_the_operators_time_zone_and_says_which(
    client, support, manager, auditor, settings, time_machine, monkeypatch
):
    """A refund posted at 23:30 on 30 November in New York (04:30 UTC on 1 December) is a
    refund of 30 November and of November in the report, as in the audit history, and the
    report says whose days they are: the page, the CSV and the XLSX."""
    settings.TIME_ZONE = "America/New_York"
    new_york = zoneinfo.ZoneInfo("America/New_York")
    posted_at = datetime(2026, 11, 30, 23, 30, tzinfo=new_york)
    time_machine.move_to(posted_at, tick=False)
    # PostgreSQL's clock cannot be frozen: the posting stamps this process's, as on SQLite.
    monkeypatch.setattr(posting, "db_now", timezone.now)
    proposal = posted_proposal(support, manager, external_id="TZ-1")
    assert PostedTotal.objects.get(proposal=proposal).posted_at == posted_at

    november_30 = date(2026, 11, 30)
    report = selectors.finance_report(november_30, november_30)
    assert report["postings"] == 1 and report["time_zone"] == "America/New_York"
    assert [r["month"] for r in report["rows"]] == [date(2026, 11, 1)]
    assert [r["month"] for r in report["by_method"]] == [date(2026, 11, 1)]
    assert selectors.finance_report(date(2026, 12, 1), None)["postings"] == 0

    client.force_login(auditor)
    day = {"start": "2026-11-30", "end": "2026-11-30"}
    page = client.get(reverse("finance_report"), day).text
    assert "Nov 2026" in page and "Dec 2026" not in page and "TZ-1" in page
    assert "Days of posting and months in America/New_York" in page
    # The audit history shows the posting on the same day.
    audit = client.get(reverse("audit"), {"since": "2026-11-30", "until": "2026-11-30"}).text
    assert "ledger.posted" in audit

    exported = b"".join(client.get(reverse("finance_report_csv"), day).streaming_content)
    rows = list(csv.DictReader(io.StringIO(exported.decode("utf-8-sig"))))
    assert [(r["month"], r["time_zone"]) for r in rows] == [("2026-11", "America/New_York")]
    response = client.get(reverse("finance_report_xlsx"), day)
    sheet = openpyxl.load_workbook(io.BytesIO(b"".join(response.streaming_content))).active
    header, *records = [[c.value for c in row] for row in sheet.iter_rows()]
    assert header[0] == "month" and header[-1] == "time_zone"
    assert [(r[0].date(), r[-1]) for r in records] == [(date(2026, 11, 1), "America/New_York")]
