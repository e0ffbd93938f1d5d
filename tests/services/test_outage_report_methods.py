"""The outage report by form: a site-wide outage of tournaments paid partly with
tickets and tournament money costs so much cash, so much tournament money and so many tickets;
the page and the CSV say it, per currency and per tournament."""

import csv
import io

import pytest

from refunds_admin.ledger import posting
from refunds_admin.outages import services as outages
from refunds_admin.proposals import batches
from refunds_admin.reports import outages as outage_reports
from tests.support.factories import approve_outage, cancelled_outage

pytestmark = pytest.mark.django_db

# OUT-1's first entry bought in with a ticket, its second with tournament money and cash.
PAID_OTHERWISE = {
    "OUT-1": {
        "entry_fields": {
            0: {"paid_with": [{"method": "ticket", "amount": "33.00", "ticket_id": "TKT-88121"}]},
            1: {
                "paid_with": [
                    {"method": "tournament_money", "amount": "30.00"},
                    {"method": "cash", "amount": "3.00"},
                ]
            },
        }
    }
}


@pytest.fixture
def paid_outage(support, manager, other_manager):
    o = cancelled_outage(support, docs=PAID_OTHERWISE)
    # One manager finds the site-wide issue, another approves (four eyes).
    outages.confirm_site_wide_issue(o, justification="DC1 lost power", acting_user=other_manager)
    run = batches.start_prepare(o, acting_user=support)
    batches.run_prepare(run.pk)
    approve_outage(o, manager)
    return o


def test_the_report_gives_the_cost_per_method(paid_outage):
    report = outage_reports.report(paid_outage)
    usd = report["by_currency"]["USD"]
    assert (usd["tickets"], usd["ticket_cents"], usd["tournament_money_cents"]) == (1, 3300, 3000)
    assert usd["cash_cents"] == usd["cents"] - 6300
    assert usd["cash_cents"] + usd["tournament_money_cents"] + usd["ticket_cents"] == usd["cents"]
    out1 = next(r for r in report["rows"] if r["tournament"].external_id == "OUT-1")
    assert (out1["tickets"], out1["ticket_cents"]) == (1, 3300)
    out2 = next(r for r in report["rows"] if r["tournament"].external_id == "OUT-2")
    assert (out2["tickets"], out2["cash_cents"]) == (0, out2["total_cents"])


def test_the_page_and_the_csv_show_the_methods_and_posting_pays_them(client, paid_outage, auditor):
    client.force_login(auditor)
    page = client.get(f"/outages/{paid_outage.pk}/report/").content.decode()
    assert "Cost per method" in page and 'id="cost-method"' in page
    rows = list(
        csv.DictReader(
            io.StringIO(
                client.get(f"/outages/{paid_outage.pk}/report.csv").content.decode("utf-8-sig")
            )
        )
    )
    out1 = next(r for r in rows if r["tournament"] == "OUT-1")
    assert (out1["tickets_returned"], out1["tickets_value"], out1["tournament_money_credited"]) == (
        "1",
        "33.00",
        "30.00",
    )
    # And posting pays exactly that, in those forms.
    for p in batches.live_proposals(paid_outage):
        posting.post_proposal(p.pk)
    report = outage_reports.report(paid_outage)
    assert report["all_posted"]
