"""In Chromium: the approver's whole picture, the worklists, and every defect
found (each journey names the defects it covers). Data is set up through the services
(tests/browser/helpers.py); the browser does what staff do.
"""

import csv
import re
from datetime import timedelta

import pytest
from django.utils import timezone
from playwright.sync_api import expect

from refunds_admin.incidents import services as incidents
from refunds_admin.incidents.models import Incident
from tests.support.factories import (
    approved_proposal,
    open_incident,
    submitted_proposal,
    sunday_major_doc,
    totp_code,
)

from .conftest import shot, snapshot_file

pytestmark = pytest.mark.browser

INK = "rgb(29, 36, 48)"  # --ink in app.css


def _contrast(page, selector):
    """WCAG contrast ratio of an element's text against its own background."""
    return page.evaluate(
        """(selector) => {
        const el = document.querySelector(selector);
        const style = getComputedStyle(el);
        const rgb = (c) => c.match(/\\d+(\\.\\d+)?/g).slice(0, 3).map(Number);
        const lum = ([r, g, b]) => {
          const f = (v) => { v /= 255; return v <= 0.03928 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4; };
          return 0.2126 * f(r) + 0.7152 * f(g) + 0.0722 * f(b);
        };
        const a = lum(rgb(style.color)), b = lum(rgb(style.backgroundColor));
        return (Math.max(a, b) + 0.05) / (Math.min(a, b) + 0.05);
      }""",
        selector,
    )


# The proposals of these journeys follow a lost data-centre uplink.
NETWORK_OUTAGE = {"cause": "network", "description": "Data centre uplink lost."}


def test_it_gives_the_approver_the_whole_picture_and_asks_before_deciding(
    open_as, support, manager, other_manager, tmp_path
):
    """Approval page content; confirmation before approve/reject; withdraw; four eyes on
    rejection; the statement opens under its row; the breakdown's search and sorts."""

    proposal = submitted_proposal(support, doc=sunday_major_doc("UP-DECIDE-1"), **NETWORK_OUTAGE)
    # The submitter takes it back, then submits again.
    page = open_as(support)
    page.goto(f"/proposals/{proposal.pk}/")
    page.click("#withdraw-form button")
    page.wait_for_selector("text=Submission withdrawn")
    assert "back to draft" in page.confirmations[-1]
    page.click("button:has-text('Submit for approval')")
    page.wait_for_selector(".badge.submitted")
    assert "for a manager's approval" in page.confirmations[-1]

    # The breakdown opens on the entries paid, largest first; all entries are one click away.
    assert page.input_value("#id_show") == "paid" and page.input_value("#id_sort") == "total"
    page.click("#all-entries")
    page.wait_for_selector("#lines th[aria-sort=ascending] >> text=Entry")
    # The breakdown: screen names by any-case prefix; every sort both ways.
    page.fill("#id_q", "SHARK000")
    # Locator waits: wait_for_function's eval() is refused by the Content-Security-Policy.
    expect(page.locator("#lines tbody tr")).to_have_count(10)
    page.fill("#id_q", "")
    expect(page.locator("#lines tbody tr")).to_have_count(100)
    page.click("#lines th >> text=Total")
    page.wait_for_selector("#lines th[aria-sort=descending]")
    first = page.inner_text("#lines tbody tr >> nth=0 >> td >> nth=9")
    page.click("#lines th >> text=Total")
    page.wait_for_selector("#lines th[aria-sort=ascending]")
    assert page.inner_text("#lines tbody tr >> nth=0 >> td >> nth=9") != first
    # A statement opens right under the row that was clicked, in view.
    row = page.locator("#lines tbody tr >> nth=3")
    row.locator("text=Statement").click()
    page.wait_for_selector("tr.statement-row #statement table.statement")
    assert page.evaluate(
        "document.querySelectorAll('#lines tbody tr')[4].classList.contains('statement-row')"
    )
    assert page.locator("tr.statement-row").is_visible()
    box = page.locator("tr.statement-row").bounding_box()
    assert box["y"] < page.viewport_size["height"]

    # The approver sees the incident, the rule and why, warnings, the money and the changes.
    mpage = open_as(manager)
    mpage.goto(f"/proposals/{proposal.pk}/approval/")
    incident = mpage.inner_text("#decision-incident")
    assert "Network" in incident and "Data centre uplink lost." in incident
    assert "after the start" in incident and "sam_support" in incident
    assert "30-minute window passed" in incident
    rule = mpage.inner_text("#decision-rule")
    assert "Rule 2: not yet in the money" in rule and "after start with 60 entries left" in rule
    money = mpage.inner_text("#decision-money")
    assert "Paid out = pool in, to the cent." in money
    assert "Smallest" in money and "Median" in money and "Largest" in money
    assert mpage.locator("#decision-top tbody tr").count() == 10
    assert "Version 1" in mpage.inner_text("#decision-changes")
    mpage.fill("#id_password", "pw-" + manager.username)
    mpage.fill("#id_otp_token", totp_code(manager))  # what the manager's app shows
    shot(mpage, "approval", max_height=2600)
    # Saying no to the question changes nothing.
    mpage.say_yes = False
    mpage.click("#approve-form button")
    mpage.wait_for_timeout(300)
    assert "cannot be undone" in mpage.confirmations[-1]
    proposal.refresh_from_db()
    assert proposal.status == "submitted"
    mpage.say_yes = True

    # Four eyes on rejection: the manager who submitted a proposal has no reject button.
    own = submitted_proposal(other_manager, doc=sunday_major_doc("UP-DECIDE-2"), **NETWORK_OUTAGE)
    opage = open_as(other_manager)
    opage.goto(f"/proposals/{own.pk}/approval/")
    opage.wait_for_selector("text=another manager must approve it or reject it")
    assert opage.locator("#reject-form").count() == 0
    mpage.goto(f"/proposals/{own.pk}/approval/")
    mpage.fill("#id_reason", "Chip counts are from before the last break.")
    mpage.click("#reject-form button")
    mpage.wait_for_selector("text=Proposal rejected")
    own.refresh_from_db()
    assert own.status == "rejected"


def test_it_gives_staff_their_worklists(open_as, support, manager, other_manager, tmp_path):
    """Proposals by status with filters and mine; incidents by status; tournaments with a
    status column explaining frozen; support's dashboard; recent activity full width."""

    submitted_proposal(support, doc=sunday_major_doc("UP-LIST-SUB"), **NETWORK_OUTAGE)
    submitted_proposal(manager, doc=sunday_major_doc("UP-LIST-MGR"), **NETWORK_OUTAGE)
    approved = approved_proposal(
        support, other_manager, doc=sunday_major_doc("UP-LIST-OK"), **NETWORK_OUTAGE
    )
    open_incident(support, doc=sunday_major_doc("UP-LIST-OPEN"), failed_ago=timedelta(minutes=12))
    late = open_incident(
        support, doc=sunday_major_doc("UP-LIST-LATE"), failed_ago=timedelta(minutes=45)
    )

    page = open_as(support)
    assert "UP-LIST-OPEN" in page.inner_text("#incidents-waiting-on-me")
    assert "30 minutes passed" in page.inner_text("#incidents-waiting-on-me")
    width = page.evaluate("document.querySelector('#recent-activity').offsetWidth")
    assert width >= page.evaluate("document.querySelector('main').clientWidth") - 60
    page.click("nav >> text=Proposals")
    page.wait_for_selector("#worklist .tabs a.current:has-text('Submitted')")
    assert "UP-LIST-SUB" in page.inner_text("#worklist") and "UP-LIST-MGR" in page.inner_text(
        "#worklist"
    )
    page.check("#id_mine")
    expect(page.locator("#worklist")).not_to_contain_text("UP-LIST-MGR")
    assert "UP-LIST-SUB" in page.inner_text("#worklist")
    page.uncheck("#id_mine")
    expect(page.locator("#worklist")).to_contain_text("UP-LIST-MGR")
    shot(page, "worklist-proposals")
    # Posted at once where tasks run in-process (no REDIS_URL); approved while a queue holds it.
    approved.refresh_from_db()
    page.click(f"#worklist .tabs a:has-text('{approved.get_status_display()}')")
    page.wait_for_selector("#worklist >> text=UP-LIST-OK")

    page.click("nav >> text=Incidents")
    page.wait_for_selector("#worklist .tabs a.current:has-text('Open')")
    text = page.inner_text("#worklist")
    assert "UP-LIST-OPEN" in text and "UP-LIST-LATE" in text
    # Overdue: the countdown is red, the row keeps readable ink.
    late_row = page.locator(f"#worklist tr:has(a[href='/incidents/{late.pk}/'])")
    assert late_row.locator("td >> nth=0").evaluate("el => getComputedStyle(el).color") == INK
    shot(page, "worklist-incidents")
    page.click("#worklist .tabs a:has-text('Cancelled')")
    page.wait_for_selector("#worklist >> text=UP-LIST-OK")

    page.click("nav >> text=Tournaments")
    row = page.locator("#tournaments tr:has-text('UP-LIST-OK')")
    assert "Frozen" in row.inner_text() and "final" in row.inner_text()
    assert "means a payout proposal was approved" in page.inner_text("#frozen-explained")
    shot(page, "tournaments")


def test_it_fixes_the_incident_form_and_timeline(open_as, support, manager, tmp_path):
    """Before the start is rule 1 with a confirmation; whole minutes by default; the preview
    shows at once; no CSRF token in the preview's URL; timeline in order, each restart once;
    the overdue card stays readable."""
    snapshot = incidents.import_snapshot(
        snapshot_file(tmp_path, external_id="UP-FORM-1").read_bytes(),
        acting_user=support,
        source="upload",
    )
    tournament = snapshot.tournament
    page = open_as(support)
    urls = []
    page.on("request", lambda request: urls.append(request.url))
    page.goto(f"/incidents/new/?tournament={tournament.pk}")
    assert "Rule 2" in page.inner_text("#rule-preview")  # shown before any typing
    value = page.input_value("#id_failed_at")
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d(:00)?", value), value
    before = timezone.localtime(tournament.starts_at - timedelta(minutes=5))
    page.fill("#id_failed_at", before.strftime("%Y-%m-%dT%H:%M"))
    page.wait_for_selector("#rule-preview >> text=before the start")
    assert "Rule 1: full refund" in page.inner_text("#rule-preview")
    page.click("button:has-text('Record incident')")
    page.wait_for_selector("text=that is rule 1, a full refund")
    assert not Incident.objects.exists()
    page.wait_for_selector("#id_before_start_confirmed")
    page.check("#id_before_start_confirmed")
    page.click("button:has-text('Record incident')")
    page.wait_for_selector("text=recorded")
    assert Incident.objects.get().rule == "full_refund"
    previews = [u for u in urls if "/incidents/preview/" in u]
    assert previews and not any("csrfmiddlewaretoken" in u for u in previews)

    # The timeline: a restart attempt logged through the page shows once, in time order.
    incident = Incident.objects.get()
    attempted = timezone.localtime(incident.failed_at + timedelta(minutes=1))
    page.fill("#id_attempted_at", attempted.strftime("%Y-%m-%dT%H:%M:%S"))
    page.fill("#id_note", "lobby restarted, tables did not")
    page.click("button:has-text('Log attempt')")
    page.wait_for_selector("text=Restart attempt logged")
    items = page.locator("#timeline li").all_inner_texts()
    assert sum("restart attempt" in i.lower() for i in items) == 1
    stamps = page.eval_on_selector_all(
        "#timeline li time", "els => els.map(e => e.getAttribute('datetime'))"
    )
    assert stamps == sorted(stamps)

    # An overdue incident's card keeps readable text; only the countdown is red.

    late = open_incident(
        support, doc=sunday_major_doc("UP-FORM-LATE"), failed_ago=timedelta(minutes=45)
    )
    page.goto(f"/incidents/{late.pk}/")
    page.wait_for_selector(".countdown.overdue")
    card = page.locator("section.card >> nth=0")
    assert card.evaluate("el => getComputedStyle(el).color") == INK
    assert card.evaluate("el => getComputedStyle(el).fontWeight") in ("400", "normal")
    assert "cannot be undone" in (
        page.get_attribute(f"form[action='/incidents/{late.pk}/cancel/']", "data-confirm") or ""
    )


def test_it_empties_the_rule_preview_when_the_failure_time_is_cleared(open_as, support, tmp_path):
    """Clearing the failure time replaces the rule shown for the old time by a line saying a
    failure time is needed (htmx's check of the form's required fields used to stop the
    request, leaving the old rule on the page); typing a time again brings a rule back."""
    tournament = incidents.import_snapshot(
        snapshot_file(tmp_path, external_id="UP-FORM-CLEAR").read_bytes(),
        acting_user=support,
        source="upload",
    ).tournament
    page = open_as(support)
    page.goto(f"/incidents/new/?tournament={tournament.pk}")
    assert "Rule 2" in page.inner_text("#rule-preview")
    typed = page.input_value("#id_failed_at")

    page.fill("#id_failed_at", "")
    expect(page.locator("#preview-needs-time")).to_contain_text("A failure time is needed")
    expect(page.locator("#rule-preview")).not_to_contain_text("Rule 2")

    page.fill("#id_failed_at", typed)
    expect(page.locator("#rule-preview")).to_contain_text("Rule 2")


def test_it_fixes_audit_time_exports_and_display(
    open_as, support, other_manager, auditor, tmp_path, request
):
    """Audit by player; before/after as money and labels without mid-word breaks; sentences in
    one time zone; time zone kept across sign-out; CSV has the currency; the SHA-256 fits at
    1366 px; the chart's labels are not clipped; a bad CSV lists every error at once by row."""

    proposal = approved_proposal(
        support, other_manager, doc=sunday_major_doc("UP-AUDIT-11"), **NETWORK_OUTAGE
    )
    page = open_as(auditor)
    page.select_option("#tz-select", "Europe/Berlin")
    page.wait_for_selector(
        "#tz-select >> option[value='Europe/Berlin'][selected]", state="attached"
    )
    page.click("button:has-text('Sign out')")
    page.fill("#id_username", auditor.username)
    page.fill("#id_password", "pw-" + auditor.username)
    page.click("button:has-text('Sign in')")
    page.wait_for_selector("h1:has-text('Dashboard')")
    assert page.input_value("#tz-select") == "Europe/Berlin"

    page.goto("/audit/?player=P0001")
    events = page.inner_text("#events")
    assert "proposal.approved" in events and "proposal.prepared" in events
    assert "incident.recorded" not in events
    page.goto("/audit/?tournament=UP-AUDIT-11")
    text = page.inner_text("#events")
    assert "+00:00" not in text and "CET" in text
    approved_row = page.locator("#events tr:has-text('proposal.approved')")
    changes = approved_row.locator("dl.changes").inner_text()
    assert re.search(r"Total\s+USD [\d,]+\.\d\d", changes) and "not_in_the_money" not in text
    wrap = approved_row.locator("dl.changes dd >> nth=0").evaluate(
        "el => getComputedStyle(el).overflowWrap"
    )
    assert wrap == "break-word"
    shot(page, "audit")

    with page.expect_download() as download:
        page.goto(f"/proposals/{proposal.pk}/")
        page.click("text=Export CSV")
    rows = list(csv.DictReader(open(download.value.path(), encoding="utf-8-sig")))
    assert rows[0]["currency"] == "USD"

    page.set_viewport_size({"width": 1366, "height": 900})
    page.goto(f"/tournaments/{proposal.incident.tournament_id}/")
    cell = page.locator("#snapshot-versions td.sha256 >> nth=0")
    assert cell.inner_text() == proposal.snapshot.sha256
    assert page.evaluate(
        "(() => { const c = document.querySelector('#snapshot-versions'); "
        "return c.scrollWidth <= c.clientWidth; })()"
    )
    page.goto(f"/proposals/{proposal.pk}/chart.svg")
    left = page.evaluate(
        "Math.min(...[...document.querySelectorAll('text')].map(t => t.getBBox().x))"
    )
    assert left >= 0

    spage = open_as(support)
    entries = tmp_path / "entries.csv"
    entries.write_text(
        "entry_id,player_id,screen_name,status,chips\n"
        "e1,p1,ace,active,48x200\n"
        "e2,p2,bob,active,-5\n"
        "e1,p3,cid,eliminated,0\n"
    )
    prizes = tmp_path / "prizes.csv"
    prizes.write_text("place,amount\n1,100.00\n")
    spage.goto("/tournaments/import/")
    form = spage.locator("#csv-form")
    form.locator("#id_external_id").fill("UP-BAD-11")
    form.locator("#id_name").fill("Broken export")
    form.locator("#id_buy_in").fill("30.00")
    form.locator("#id_fee").fill("3.00")
    form.locator("#id_starts_at").fill("2026-11-29T10:00")
    form.locator("#id_entries_csv").set_input_files(str(entries))
    form.locator("#id_prizes_csv").set_input_files(str(prizes))
    spage.click("button:has-text('Import CSV')")
    spage.wait_for_selector("#csv-form .errorlist")
    errors = spage.inner_text("#csv-form")
    assert "row 2" in errors and "row 3" in errors and "row 4" in errors  # all in one pass
    assert "entries[" not in errors and "also entries CSV row 2" in errors


def test_it_fixes_the_small_things(open_as, support, superuser, live_server, browser):
    """Favicon, skip link, a role tag that passes contrast, and a superuser without a role
    never sent round a 403 loop."""
    page = open_as(support)
    icon = page.get_attribute("link[rel=icon]", "href")
    assert page.request.get(live_server.url + icon).status == 200
    page.keyboard.press("Tab")
    assert page.evaluate("document.activeElement.className") == "skip-link"
    assert page.locator(".skip-link").is_visible()
    page.keyboard.press("Enter")
    assert page.evaluate("document.activeElement.id") == "main"
    assert _contrast(page, ".role-tag") >= 4.5

    context = browser.new_context(base_url=live_server.url)
    admin = context.new_page()
    admin.goto("/admin/login/")
    admin.fill("#id_username", "root")
    admin.fill("#id_password", "pw-root")
    admin.fill("#id_otp_token", totp_code(superuser))  # the admin asks for the second factor
    admin.click("input[type=submit]")
    admin.wait_for_selector("text=Site administration")
    assert admin.locator("a:has-text('View site')").count() == 0
    admin.goto("/")
    assert "Django admin" in admin.inner_text("main")
    context.close()
