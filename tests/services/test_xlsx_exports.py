"""XLSX exports a manager opens in Excel: the proposal's breakdown, the finance report and the
outage report, read back with openpyxl. Amounts are numbers with a money format (so they add
up), ids are text (so "007" stays "007"), names keep every character, and the roles are those
of the CSV."""

import csv
import io
import re
import zipfile
from datetime import UTC, timedelta
from decimal import Decimal

import openpyxl
import pytest
from django.urls import reverse

from refunds_admin.proposals import services as proposals
from refunds_admin.reports import outages as outage_reports
from refunds_admin.reports import selectors
from refunds_admin.web.downloads import MONEY, MONEY_FORMAT, TEXT, xlsx_download
from tests.support.factories import (
    approve_outage,
    draft_proposal,
    knockout_doc,
    posted_proposal,
    prepared_outage,
)

pytestmark = pytest.mark.django_db

NAME = "Jürgen 玩家 Ørsted"
XLSX = "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"


def _sheet(response):
    assert response.status_code == 200
    assert response["Content-Type"] == XLSX
    body = b"".join(response.streaming_content)
    assert body[:2] == b"PK"  # a zip: an Office Open XML workbook
    return openpyxl.load_workbook(io.BytesIO(body)).active


def _records(ws):
    rows = list(ws.iter_rows())
    header = [c.value for c in rows[0]]
    return header, [dict(zip(header, row, strict=True)) for row in rows[1:]]


def _cents(cell):
    """A money cell back to integer cents; it must be a number, not text."""
    assert isinstance(cell.value, int | float), (cell.coordinate, cell.value)
    assert cell.number_format == MONEY_FORMAT, (cell.coordinate, cell.number_format)
    cents = Decimal(str(cell.value)) * 100
    assert cents == cents.to_integral_value(), cell.value
    return int(cents)


def test_the_proposal_xlsx_has_every_entry_with_its_amounts_as_numbers(client, support):
    fields = {0: {"screen_name": NAME, "entry_id": "007"}, 1: {"screen_name": "=1+2"}}
    proposal = draft_proposal(support, entry_fields=fields)
    client.force_login(support)
    response = client.get(reverse("proposal_export_xlsx", args=[proposal.pk]))
    assert response["Content-Disposition"] == (
        f'attachment; filename="proposal-{proposal.incident.tournament.external_id}'
        f'-v{proposal.version}.xlsx"'
    )
    ws = _sheet(response)
    assert ws.freeze_panes == "A2"  # the header stays in view
    assert ws.column_dimensions["D"].width > 20  # screen_name is wide enough to read
    header, records = _records(ws)
    assert header[:4] == ["currency", "entry_id", "player_id", "screen_name"]
    assert "total" in header and "chip_equity" in header
    assert len(records) == proposal.lines.count()
    components = ("buy_in_refund", "next_prize", "chip_equity", "fee_refund")
    for record, line in zip(records, proposal.lines.order_by("position"), strict=True):
        assert record["entry_id"].data_type == "s" and record["entry_id"].value == line.entry_id
        assert record["player_id"].data_type == "s"
        assert record["currency"].value == proposal.currency
        assert _cents(record["total"]) == line.total_cents
        assert [_cents(record[c]) for c in components] == [
            line.buy_in_refund_cents,
            line.next_prize_cents,
            line.chip_equity_cents,
            line.fee_refund_cents,
        ]
        assert isinstance(record["chips"].value, int)
        assert record["capped"].value is line.capped
    by_entry = {r["entry_id"].value: r for r in records}
    assert by_entry["007"]["screen_name"].value == NAME
    # A name that looks like a formula is the text it is, never run.
    hostile = next(r for r in records if r["screen_name"].value == "=1+2")["screen_name"]
    assert hostile.data_type == "s"
    assert sum(_cents(r["total"]) for r in records) == proposal.total_cents


def test_a_knockout_proposal_xlsx_has_the_csvs_columns_and_its_payments(client, support):
    proposal = draft_proposal(support, doc=knockout_doc("KO-XLSX"))
    client.force_login(support)
    csv_body = b"".join(
        client.get(reverse("proposal_export_csv", args=[proposal.pk])).streaming_content
    )
    csv_header = csv_body.decode("utf-8-sig").splitlines()[0].split(",")
    response = client.get(reverse("proposal_export_xlsx", args=[proposal.pk]))
    header, records = _records(_sheet(response))
    assert header == csv_header
    assert {"bounty_refund", "bounties_won", "paid_with", "refunds"} <= set(header)
    first = next(r for r in records if r["entry_id"].value == "e1")
    assert first["paid_with"].value == "ticket TKT-1 43.00"  # the entries CSV's own syntax
    # Every amount of every line is the CSV's, as a number.
    csv_rows = list(csv.DictReader(io.StringIO(csv_body.decode("utf-8-sig"))))
    money = [n for n in header if n in ("total", "bounty", "bounty_refund", "bounties_won")]
    for record, row in zip(records, csv_rows, strict=True):
        for name in money:
            want = int(Decimal(row[name]) * 100) if row[name] else None
            assert (_cents(record[name]) if want is not None else record[name].value) == want


@pytest.fixture
def postings(support, manager):
    return [
        posted_proposal(support, manager, external_id="FX-1"),
        posted_proposal(support, manager, external_id="FX-2", cause="network", currency="EUR"),
    ]


def test_the_finance_xlsx_totals_equal_the_report(client, postings, auditor):
    client.force_login(auditor)
    ws = _sheet(client.get(reverse("finance_report_xlsx")))
    assert ws.freeze_panes == "A2"
    header, records = _records(ws)
    assert header[:8] == [
        "month", "cause", "rule", "currency", "incidents", "players", "credits", "amount"
    ]  # fmt: skip
    report = selectors.finance_report()
    totals = {t["currency"]: t["cents"] for t in report["totals"]}
    assert totals == {p.currency: p.total_cents for p in postings}
    for currency, cents in totals.items():
        assert sum(_cents(r["amount"]) for r in records if r["currency"].value == currency) == cents
    for r in records:
        assert r["month"].is_date and r["month"].number_format == "yyyy-mm"
        assert isinstance(r["credits"].value, int)
        assert _cents(r["cash_paid"]) == _cents(r["amount"])  # every posting paid in cash
        assert isinstance(r["tickets_returned"].value, int)


def test_the_outage_xlsx_totals_equal_the_report(client, support, manager, auditor):
    ids = ["ÜBER-1", "007"]
    o = prepared_outage(support, external_ids=ids, docs={"ÜBER-1": {"name": NAME}})
    approve_outage(o, manager)
    client.force_login(auditor)
    ws = _sheet(client.get(reverse("outage_report_xlsx", args=[o.pk])))
    assert ws.freeze_panes == "A2"
    header, records = _records(ws)
    report = outage_reports.report(o)
    assert len(records) == len(report["rows"]) == 2
    by_id = {r["tournament"].value: r for r in records}
    assert set(by_id) == set(ids)  # "007" stays text
    assert by_id["ÜBER-1"]["name"].value == NAME
    for row in report["rows"]:
        record = by_id[row["tournament"].external_id]
        assert _cents(record["total"]) == row["total_cents"]
        assert _cents(record["cash_paid"]) == row["cash_cents"]
        # Excel has no time zones: the time in UTC, as the cell's format says.
        assert record["failed_at"].is_date and "UTC" in record["failed_at"].number_format
        utc = o.failed_at.astimezone(UTC).replace(tzinfo=None)
        assert abs(record["failed_at"].value - utc) < timedelta(milliseconds=1)
    assert sum(_cents(r["total"]) for r in records) == sum(r["total_cents"] for r in report["rows"])


def test_a_role_the_csv_refuses_is_refused_the_xlsx(client, support, manager, outsider):
    o = prepared_outage(support)
    proposal = draft_proposal(support)
    proposals.submit_proposal(proposal, acting_user=support)
    urls = [
        reverse("proposal_export_xlsx", args=[proposal.pk]),
        reverse("outage_report_xlsx", args=[o.pk]),
        reverse("finance_report_xlsx"),
    ]
    client.force_login(outsider)  # signed in, no role
    assert [client.get(url).status_code for url in urls] == [403, 403, 403]
    client.force_login(support)  # the finance report is for managers and auditors
    assert client.get(reverse("finance_report_xlsx")).status_code == 403
    assert client.get(reverse("finance_report_csv")).status_code == 403
    client.logout()
    assert all(client.get(url).status_code == 302 for url in urls)  # to the sign-in page


def test_every_page_with_a_csv_link_has_the_xlsx_link_beside_it(client, support, manager):
    o = prepared_outage(support)
    approve_outage(o, manager)
    proposal = draft_proposal(support)
    client.force_login(manager)
    pages = {
        reverse("proposal_detail", args=[proposal.pk]): "proposal_export_xlsx",
        reverse("outage_report", args=[o.pk]): "outage_report_xlsx",
        reverse("finance_report"): "finance_report_xlsx",
    }
    for page, name in pages.items():
        html = client.get(page).content.decode()
        args = (
            [] if name == "finance_report_xlsx" else [proposal.pk if "proposal" in name else o.pk]
        )
        assert f'href="{reverse(name, args=args)}' in html, page


def test_amounts_are_written_as_their_exact_digits_and_empty_values_stay_empty_cells():
    """The file holds each amount's digits (999997 cents as "9999.97", where a float would be
    written "9999.969999999999"); None and "" are no cell at all, as write_row left them."""
    amounts = [999997, 81533, -999995, 0, 123456789012]
    columns = [("id", TEXT, 10), ("note", TEXT, 10), ("amount", MONEY, 14)]
    rows = [(f"r{i}", "" if i % 2 else None, cents) for i, cents in enumerate(amounts)]
    response = xlsx_download("t.xlsx", "t", columns, rows)
    body = b"".join(response.streaming_content)
    sheet = zipfile.ZipFile(io.BytesIO(body)).read("xl/worksheets/sheet1.xml").decode()
    values = re.findall(r'<c r="C\d+" s="\d+"><v>([^<]*)</v>', sheet)
    assert values == ["9999.97", "815.33", "-9999.95", "0.00", "1234567890.12"]
    header, records = _records(openpyxl.load_workbook(io.BytesIO(body)).active)
    assert [_cents(r["amount"]) for r in records] == amounts
    assert all(r["note"].value is None for r in records)
