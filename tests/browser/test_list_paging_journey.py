"""In Chromium: an auditor pages through the audit history and sorts it with htmx, and the
address follows (hx-push-url), filters and sort included; support pages the tournament list.
Three rows a page (PAGE_SIZE patched; the live server runs in this process)."""

import pytest
from playwright.sync_api import expect

from refunds_admin.web import paging
from tests.support.factories import import_doc

pytestmark = pytest.mark.browser


def test_the_audit_history_pages_and_sorts_in_place_and_the_address_follows(
    open_as, support, auditor, monkeypatch
):
    monkeypatch.setattr(paging, "PAGE_SIZE", 3)
    for i in range(7):
        import_doc(support, external_id=f"UP-PAGE-{i}")
    page = open_as(auditor)
    page.goto("/audit/?action=snapshot.")
    summary = page.locator("#events .paging-summary")
    expect(summary).to_have_text("Showing 1-3 of 7 events")
    page.click("#events a[rel=next]")
    expect(summary).to_have_text("Showing 4-6 of 7 events")
    assert "action=snapshot." in page.url and "cursor=" in page.url
    page.click("#events th a.sort:has-text('Tournament')")
    expect(page.locator("#events th[aria-sort=ascending]")).to_have_text("Tournament")
    expect(summary).to_have_text("Showing 1-3 of 7 events")
    assert "sort=tournament" in page.url and "cursor=" not in page.url
    first = page.locator("#events tbody tr >> nth=0")
    expect(first).to_contain_text("UP-PAGE-0")
    page.click("#events th a.sort:has-text('Tournament')")  # again: the other way
    expect(page.locator("#events th[aria-sort=descending]")).to_have_text("Tournament")
    expect(first).to_contain_text("UP-PAGE-6")
    # A new search keeps the sort chosen in the events part.
    page.fill("#id_tournament", "UP-PAGE-3")
    page.click("#audit-filters button[type=submit]")
    expect(summary).to_have_text("Showing 1-1 of 1 events")
    assert "sort=-tournament" in page.url and "tournament=UP-PAGE-3" in page.url
    # The pushed address is the page: opened afresh, it shows the same.
    page.goto(page.url)
    expect(summary).to_have_text("Showing 1-1 of 1 events")
    expect(page.locator("#events th[aria-sort=descending]")).to_have_text("Tournament")


def test_the_tournament_list_says_how_many_and_pages_to_the_end(open_as, support, monkeypatch):
    monkeypatch.setattr(paging, "PAGE_SIZE", 3)
    for i in range(5):
        import_doc(support, external_id=f"UP-TLIST-{i}")
    page = open_as(support)
    page.click("nav >> text=Tournaments")
    expect(page.locator(".paging-summary")).to_have_text("Showing 1-3 of 5 tournaments")
    page.click(".pager a:has-text('Last')")
    expect(page.locator(".paging-summary")).to_have_text("Showing 3-5 of 5 tournaments")
    page.click("th a.sort:has-text('Tournament')")
    expect(page.locator("th[aria-sort=ascending]")).to_have_text("Tournament")
    names = [t.split()[0] for t in page.locator("#tournaments tbody tr").all_inner_texts()]
    assert names == ["UP-TLIST-0", "UP-TLIST-1", "UP-TLIST-2"]


def test_the_breakdown_pages_in_place_and_a_reload_stays_on_the_page(open_as, support, auditor):
    from tests.support.factories import submitted_proposal, sunday_special_doc

    # 250 entries: three pages of 100 lines.
    doc = sunday_special_doc("UP-PAGED", entries=250, active=200, prizes=[400_00] * 25)
    proposal = submitted_proposal(support, doc=doc)
    page = open_as(auditor)
    page.goto(f"/proposals/{proposal.pk}/?show=")
    first_row = page.locator("#lines tbody tr >> nth=0")
    expect(first_row).to_contain_text("e000")
    page.click("#lines .pager a:has-text('Next')")
    expect(first_row).to_contain_text("e100")
    assert "after=" in page.url  # the address follows the page (hx-push-url)
    page.reload()
    expect(first_row).to_contain_text("e100")
    page.go_back()
    expect(first_row).to_contain_text("e000")
