"""Dark mode in a real Chromium: with the browser set to prefer a dark colour scheme
(`page.emulate_media(color_scheme="dark")`), the main pages are drawn in palette.css's dark
colours, their charts too, and axe-core finds no critical or serious violation (its colour-
contrast rule on) in either scheme. Data through the services (tests/support/factories.py)."""

import pytest
from playwright.sync_api import expect

from refunds_admin.celery import app
from refunds_admin.proposals.models import PayoutProposal
from refunds_admin.web.palette import colours
from tests.support.factories import (
    approve_outage,
    posted_proposal,
    prepared_outage,
    submitted_proposal,
    sunday_major_doc,
)

from .conftest import axe_findings_in_both_schemes, color_scheme, shot, watch_csp

pytestmark = pytest.mark.browser


def _rgb(colour):
    """ "#10151d" -> "rgb(16, 21, 29)", as getComputedStyle gives it."""
    digits = colour.lstrip("#")
    if len(digits) == 3:
        digits = "".join(d * 2 for d in digits)
    return "rgb({}, {}, {})".format(*(int(digits[i : i + 2], 16) for i in (0, 2, 4)))


def _background(page, selector="body"):
    return page.locator(selector).first.evaluate("e => getComputedStyle(e).backgroundColor")


def _is_dark(page):
    """The page shows the dark palette: the browser says dark, the page's background and
    text are palette.css's dark ones, and form controls follow (color-scheme)."""
    assert color_scheme(page) == "dark"
    dark = colours("dark")
    assert _background(page) == _rgb(dark["bg"])
    assert page.locator("body").evaluate("e => getComputedStyle(e).color") == _rgb(dark["ink"])
    assert page.locator("html").evaluate("e => getComputedStyle(e).colorScheme") == "light dark"


def test_the_main_pages_are_dark_for_a_dark_browser_and_pass_axe_in_both_schemes(
    open_as, support, manager, auditor, browser, live_server, axe_violations, csp_violations,
    monkeypatch,
):  # fmt: skip
    # Everything posts in this process (no worker needed to show posted figures).
    monkeypatch.setitem(app.conf, "task_always_eager", True)
    posted = posted_proposal(
        support, manager, external_id="UP-DARK-1", emails={"e2": "Bea.Jones@example.test"}
    )
    waiting = submitted_proposal(support, doc=sunday_major_doc("UP-DARK-2"))
    outage = prepared_outage(support, external_ids=("OUT-DARK-1", "OUT-DARK-2"))
    approve_outage(outage, manager)
    assert set(
        PayoutProposal.objects.filter(incident__outage_membership__outage=outage).values_list(
            "status", flat=True
        )
    ) == {"posted"}

    # The sign-in page, before anyone is signed in.
    context = browser.new_context(
        base_url=live_server.url, viewport={"width": 1360, "height": 900}, timezone_id="UTC"
    )
    watch_csp(context, csp_violations)
    anonymous = context.new_page()
    anonymous.emulate_media(color_scheme="dark")
    anonymous.goto("/accounts/login/")
    _is_dark(anonymous)
    # Form controls are drawn dark too: the sign-in field's background is the browser's own.
    assert _background(anonymous, "#id_username") != _rgb(colours("light")["card"])
    axe_violations.extend(axe_findings_in_both_schemes(anonymous))
    context.close()

    # A manager's pages: the dashboard with an approval waiting, the approval, the
    # breakdown with its chart, the outage report, the finance report.
    page = open_as(manager)
    page.emulate_media(color_scheme="dark")
    page.goto("/")
    expect(page.locator("main")).to_contain_text("UP-DARK-2")
    _is_dark(page)
    assert _background(page, "header.topbar") == _rgb(colours("dark")["topbar_bg"])
    shot(page, "dark-dashboard", max_height=1100)
    axe_violations.extend(axe_findings_in_both_schemes(page))

    page.goto(f"/proposals/{waiting.pk}/approval/")
    expect(page.locator("#decision-money")).to_be_visible()
    _is_dark(page)
    axe_violations.extend(axe_findings_in_both_schemes(page))

    page.goto(f"/proposals/{posted.pk}/")
    expect(page.locator("#lines tbody tr").first).to_be_visible()
    _is_dark(page)
    # The chart follows the page: the dark drawing is the one shown.
    chart = page.locator("img.chart-img")
    expect(chart).to_have_js_property("complete", True)
    assert chart.evaluate("img => img.currentSrc").endswith("?scheme=dark")
    assert chart.evaluate("img => img.naturalWidth") > 0
    body = page.request.get(chart.evaluate("img => img.currentSrc")).text()
    assert f'fill="{colours("dark")["chart_bg"]}"' in body
    shot(page, "dark-proposal", max_height=1300)
    axe_violations.extend(axe_findings_in_both_schemes(page))
    # A statement opened under its row is paper-coloured in the dark scheme's way.
    page.locator("#lines tbody tr").first.locator("text=Statement").click()
    page.wait_for_selector("tr.statement-row #statement table.statement")
    assert _background(page, "table.statement") == _rgb(colours("dark")["paper"])
    axe_violations.extend(axe_findings_in_both_schemes(page))

    page.goto(f"/tournaments/{posted.incident.tournament_id}/")
    expect(page.locator("main")).to_contain_text("UP-DARK-1")
    _is_dark(page)
    axe_violations.extend(axe_findings_in_both_schemes(page))

    page.goto(f"/outages/{outage.pk}/report/")
    expect(page.locator("#cost-currency")).to_be_visible()
    _is_dark(page)
    axe_violations.extend(axe_findings_in_both_schemes(page))

    page.goto("/reports/")
    expect(page.locator("#rows")).to_be_visible()
    _is_dark(page)
    finance_chart = page.locator("img.chart")
    expect(finance_chart).to_have_js_property("complete", True)
    assert "scheme=dark" in finance_chart.evaluate("img => img.currentSrc")
    shot(page, "dark-finance-report", max_height=1100)
    axe_violations.extend(axe_findings_in_both_schemes(page))

    # Printing from a dark screen still gives black on white.
    page.emulate_media(media="print", color_scheme="dark")
    assert _background(page) == _rgb(colours("dark")["print_paper"])
    page.emulate_media(media="screen", color_scheme="dark")

    # An auditor's: the audit history and the player lookup.
    apage = open_as(auditor)
    apage.emulate_media(color_scheme="dark")
    apage.goto("/audit/?tournament=UP-DARK-1")
    expect(apage.locator("main table tbody tr").first).to_be_visible()
    _is_dark(apage)
    axe_violations.extend(axe_findings_in_both_schemes(apage))

    apage.goto("/players/?q=bea.jones@example.test")
    expect(apage.locator("#tournaments")).to_contain_text("UP-DARK-1")
    _is_dark(apage)
    axe_violations.extend(axe_findings_in_both_schemes(apage))
