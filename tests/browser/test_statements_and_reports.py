"""Journeys in a real Chromium: support finds a player by e-mail, sees each tournament's state and
prints the statement; an auditor reads the finance report (chart, CSV, a posting's credits);
a manager turns a kind of e-mail off. Data through the services (tests/support/factories.py)."""

from datetime import timedelta

import pytest
import time_machine
from django.db.models import Sum
from django.utils import timezone
from playwright.sync_api import expect

from refunds_admin.celery import app
from refunds_admin.ledger.models import Credit, PostedTotal
from refunds_admin.notifications import services as notifications
from refunds_admin.notifications import staff
from refunds_admin.notifications.models import StaffKind
from refunds_admin.payouts.money import display
from tests.support.factories import approved_proposal, open_incident, posted_proposal

from .conftest import shot

pytestmark = pytest.mark.browser


def test_support_finds_a_player_by_email_and_prints_the_statement(
    open_as, support, manager, settings, monkeypatch
):
    settings.STATEMENT_CHANNEL = "email"
    posted = posted_proposal(
        support, manager, external_id="UP-STMT-1", emails={"e2": "Bea.Jones@example.test"}
    )
    staff.dispatch_events()
    notifications.deliver_statements(posted.pk)
    with monkeypatch.context() as m:
        # Approved, and its posting queued for a worker that is not running: still "approved".
        m.setitem(app.conf, "task_always_eager", False)
        approved_proposal(support, manager, external_id="UP-STMT-2")
    open_incident(support, external_id="UP-STMT-3")

    page = open_as(support)
    page.click("nav >> text=Player lookup")
    page.fill("#id_q", "bea.jones@EXAMPLE.test")  # any case
    page.click("button:has-text('Look up')")
    page.wait_for_selector("#tournaments")
    rows = {
        row.inner_text().split()[0]: row.inner_text()
        for row in page.locator("#tournaments tbody tr").all()
    }
    assert "posted" in rows["UP-STMT-1"] and "approved" in rows["UP-STMT-2"]
    assert "pending" in rows["UP-STMT-3"]
    shot(page, "player-lookup-by-email")

    page.click("#tournaments tr:has-text('UP-STMT-1') >> text=Printable statement")
    page.wait_for_selector("#statement table.statement")
    text = page.inner_text("#statement")
    assert "Total paid out" in text and f"proposal-{posted.pk}/e2/" in text
    assert page.locator("button[data-print]").is_visible()
    page.emulate_media(media="print")
    assert page.locator("header.topbar").is_hidden()
    assert page.locator("button[data-print]").is_hidden()
    shot(page, "statement-page")
    page.emulate_media(media="screen")

    page.goto("/players/?q=PLAYER")  # a screen-name prefix
    page.wait_for_selector("#matches >> text=4 players found")
    page.goto(f"/proposals/{posted.pk}/statements/")
    page.wait_for_selector("#messages >> text=Bea.Jones@example.test")
    assert "without an address" in page.inner_text("#job")
    shot(page, "statement-outbox")


def test_an_auditor_reads_the_finance_report(open_as, support, manager, auditor, tmp_path):
    # Eight postings over six months, by cause, some months with two causes.
    postings = [
        (0, "server_crash"), (0, "network"), (1, "database"), (2, "server_crash"),
        (3, "ddos"), (3, "server_crash"), (4, "network"), (5, "database"),
    ]  # fmt: skip
    now = timezone.now()
    for n, (months_ago, cause) in enumerate(postings):
        with time_machine.travel(now - timedelta(days=31 * months_ago), tick=True):
            proposal = posted_proposal(
                support,
                manager,
                external_id=f"UP-FIN-{n}",
                cause=cause,
                active_chips=[40_000, 30_000, 20_000, 10_000, 5_000][: 2 + n % 4],
            )
            # Posting stamps the database's clock, which the travel does not move (PostgreSQL):
            # the finance report's row says when, in the month the history needs.
            PostedTotal.objects.filter(proposal=proposal).update(posted_at=timezone.now())
    ledger = Credit.objects.aggregate(s=Sum("amount_cents"))["s"]

    page = open_as(auditor)
    page.click("nav >> text=Finance")
    page.wait_for_selector("#rows")
    assert display(ledger, "USD", symbol=False) in page.inner_text("#figures")
    assert page.inner_text("#incidents") == "8"
    assert "Server crash" in page.inner_text("#postings")
    # (Locators and requests, not wait_for_function: its eval() breaks the CSP.)
    expect(page.locator("img.chart")).to_be_visible()
    chart = page.request.get(page.locator("img.chart").get_attribute("src"))
    assert chart.ok and chart.headers["content-type"] == "image/svg+xml"
    assert chart.body().count(b"<rect") >= 8
    shot(page, "finance-report")
    with page.expect_download() as download:
        page.click("text=Export CSV")
    exported = open(download.value.path(), encoding="utf-8-sig").read()
    assert exported.startswith("month,cause,rule,currency") and "network" in exported

    page.fill("#id_start", (now - timedelta(days=20)).date().isoformat())
    page.fill("#id_end", now.date().isoformat())
    page.click("button:has-text('Show')")
    page.wait_for_selector("#incidents >> text=2")
    page.click("#postings a:text-is('Credits')")
    page.wait_for_selector("#credits code")
    assert "internal ledger" in page.inner_text("#credits")


def test_a_manager_turns_a_kind_of_email_off(open_as, manager):
    manager.email = "maria@example.test"
    manager.save()
    page = open_as(manager)
    page.click("header >> text=E-mails")
    page.wait_for_selector("#notification-settings")
    page.uncheck(f"input[value='{StaffKind.SUBMITTED}']")
    page.click("button:has-text('Save')")
    page.wait_for_selector("text=Your notification settings are saved.")
    assert not page.is_checked(f"input[value='{StaffKind.SUBMITTED}']")
    assert page.is_checked(f"input[value='{StaffKind.OVERDUE}']")
    shot(page, "notification-settings")
    enabled = {kind for kind, _, on in staff.preferences_of(manager) if on}
    assert StaffKind.SUBMITTED not in enabled
