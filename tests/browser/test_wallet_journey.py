"""Refunds in the form paid, in a real Chromium: a site-wide outage of two
tournaments whose players paid partly with tickets and tournament money; a manager confirms the
site-wide issue (rule 1: a full refund, each part in the form paid), support prepares every
proposal, another manager approves the batch; posting returns each ticket once; the posting
page and the player lookup show the forms; the finance report's per-method table adds it up."""

import os
from datetime import timedelta

import pytest
from django.utils import timezone

from refunds_admin.ledger.models import Credit, PostedTotal
from refunds_admin.outages import services as outages
from refunds_admin.proposals.models import PayoutProposal
from tests.support.factories import import_doc, sunday_major_doc, totp_code

from .conftest import shot

pytestmark = pytest.mark.browser

AFFECTED = ("UP-DC2-A", "UP-DC2-B")


def _paid_partly_otherwise(external_id):
    """The Sunday Major ($100 + $9) of 60 entries: every third entry bought in with a ticket
    worth $109.00, the next with $100.00 of tournament money and the fee in cash."""
    doc = sunday_major_doc(external_id, entries=60, active=20)
    for i, entry in enumerate(doc["entries"]):
        if i % 3 == 0:
            ticket = f"TKT-{external_id[-1]}{i:04d}"
            entry["paid_with"] = [{"method": "ticket", "amount": "109.00", "ticket_id": ticket}]
        elif i % 3 == 1:
            entry["paid_with"] = [
                {"method": "tournament_money", "amount": "100.00"},
                {"method": "cash", "amount": "9.00"},
            ]
    return doc


def test_a_site_wide_outage_paid_partly_with_tickets_reaches_the_finance_report_by_method(
    open_as, support, manager, other_manager, auditor, request
):
    if os.environ.get("REDIS_URL"):
        request.getfixturevalue("celery_worker_process").start()
    tournaments = [import_doc(support, _paid_partly_otherwise(x)).tournament for x in AFFECTED]
    outage = outages.record_outage(
        failed_at=timezone.now().replace(microsecond=0) - timedelta(minutes=40),
        cause="server_crash",
        description="Data centre 2 lost power",
        tournaments=tournaments,
        acting_user=support,
    )

    # A manager finds a site-wide issue: rule 1 for every tournament, in the form paid.
    page = open_as(manager)
    page.goto(f"/outages/{outage.pk}/")
    page.fill("#site-wide-form textarea", "DC2 down: every table server lost power")
    page.click("#site-wide-form button[type=submit]")
    page.wait_for_selector("text=Confirmed")

    # Support cancels the tournaments and prepares every proposal.
    spage = open_as(support)
    spage.goto(f"/outages/{outage.pk}/")
    spage.click("#cancel-rest")
    spage.wait_for_selector("text=every tournament still open is cancelled")
    spage.click("#prepare-all")
    spage.wait_for_selector("#prepare-state:has-text('Done')", timeout=60000)

    # Another manager (the first confirmed the finding that chose the rule: four eyes) reviews
    # and approves the batch; posting reaches 100%.
    page = open_as(other_manager)
    page.goto(f"/outages/{outage.pk}/review/")
    page.fill("#id_password", "pw-" + other_manager.username)
    page.fill("#id_otp_token", totp_code(other_manager))
    page.click("#approve-batch")
    page.wait_for_selector("text=Batch approved")
    page.wait_for_selector("#posting-done", timeout=90000)
    assert set(PayoutProposal.objects.values_list("status", flat=True)) == {"posted"}
    tickets = Credit.objects.filter(method="ticket")
    assert tickets.count() == 2 * 20  # each ticket once
    assert tickets.values("ticket_id").distinct().count() == 40

    # The posting page of one tournament: cash, tournament money, tickets returned.
    proposal = PayoutProposal.objects.get(incident__tournament__external_id=AFFECTED[0])
    page.goto(f"/proposals/{proposal.pk}/")
    page.wait_for_selector("#posting-methods")
    methods = page.inner_text("#posting-methods")
    assert "Tickets returned" in methods and "Tournament money" in methods
    assert "USD 2,180.00" in methods  # 20 tickets x $109.00
    shot(page, "posting-methods")

    # The player lookup: the ticket came back as that ticket.
    page.goto("/players/?q=P0000")
    page.wait_for_selector("#tickets")
    assert "TKT-A0000" in page.inner_text("#tickets")
    shot(page, "player-lookup-tickets")

    # The finance report: cost per method, by month and cause.
    apage = open_as(auditor)
    apage.goto("/reports/")
    apage.wait_for_selector("#methods")
    table = apage.inner_text("#methods")
    totals = PostedTotal.objects.all()
    ticket_cents = sum(t.ticket_cents for t in totals)
    money_cents = sum(t.tournament_money_cents for t in totals)
    assert (ticket_cents, money_cents) == (40 * 109_00, 40 * 100_00)
    assert "USD 4,360.00" in table and "USD 4,000.00" in table and "40" in table
    shot(apage, "finance-report-methods")
