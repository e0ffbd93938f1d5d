"""The outage journey in a real Chromium: support records an outage of three tournaments
(searching the running tournaments and selecting all), cancels them when the window passed and
prepares every proposal in one job; another manager reviews the batch and approves it with their
password; the posting progress reaches 100%; the report adds it up and exports CSV."""

import os
from datetime import timedelta

import pytest
from django.utils import timezone
from playwright.sync_api import expect

from refunds_admin.outages.models import Outage
from refunds_admin.proposals.models import PayoutProposal
from tests.support.factories import import_doc, outage, sunday_major_doc, totp_code

from .conftest import shot

pytestmark = pytest.mark.browser

AFFECTED = ("OUT-DC1-A", "OUT-DC1-B", "OUT-DC1-C")


def test_it_handles_an_outage_of_three_tournaments_from_recording_to_the_report(
    open_as, support, manager, request
):
    if os.environ.get("REDIS_URL"):
        request.getfixturevalue("celery_worker_process").start()
    for external_id in (*AFFECTED, "UNRELATED-9"):
        import_doc(support, sunday_major_doc(external_id, entries=120, active=30))

    # Support records the outage: the tournaments running at the failure time are listed.
    page = open_as(support)
    page.click("nav >> text=Outages")
    page.click("text=Record an outage")
    failed_at = timezone.now().replace(microsecond=0) - timedelta(minutes=40)
    page.fill("#id_failed_at", failed_at.strftime("%Y-%m-%dT%H:%M:%S"))
    page.wait_for_selector("#candidates >> text=UNRELATED-9")
    assert page.locator("input.candidate").count() == 4
    page.fill("#id_q", "OUT-DC1")
    expect(page.locator("input.candidate")).to_have_count(3)
    page.check("#select-all")
    expect(page.locator("#chosen-count")).to_have_text("3")
    page.select_option("#id_cause", "server_crash")
    page.fill("#id_description", "Data centre 1 lost power; every table server went down.")
    page.fill("#id_people_involved", "Ops on call: J. Rivera; support lead: S. Kim")
    shot(page, "outage-form")
    page.click("#record-outage")
    page.wait_for_selector("text=recorded for 3 tournaments")
    outage = Outage.objects.get()
    assert sorted(
        outage.members.values_list("incident__tournament__external_id", flat=True)
    ) == list(AFFECTED)

    # The window passed: support cancels the rest and prepares every proposal in one job.
    page.click("#cancel-rest")
    page.wait_for_selector("text=every tournament still open is cancelled")
    # An irreversible batch step asks first, naming what it does.
    assert page.confirmations[-1].startswith("Cancel the 3 tournaments still open in outage")
    page.click("#prepare-all")
    page.wait_for_selector("#prepare-state:has-text('Done')", timeout=60000)
    # Once done, the page reloads itself: every tournament shows its submitted proposal.
    expect(page.locator("#outage-tournaments .badge.submitted")).to_have_count(3)
    assert page.locator("#prepare-results tbody tr").count() == 3
    assert "Prepared and submitted" in page.inner_text("#prepare-results")
    shot(page, "outage", max_height=1400)

    # A manager reviews the batch and approves it all with their password.
    mpage = open_as(manager)
    mpage.goto(f"/outages/{outage.pk}/review/")
    assert mpage.locator("#review tbody tr").count() == 3
    assert "Total USD" in mpage.inner_text("#review-totals")
    fingerprint = mpage.inner_text("#outage-fingerprint")
    assert len(fingerprint) == 64
    mpage.fill("#id_password", "pw-" + manager.username)
    mpage.fill("#id_otp_token", totp_code(manager))
    shot(mpage, "outage-review")
    mpage.fill("#id_password", "not-my-password")
    mpage.fill("#id_otp_token", "123456")  # not even checked: the password is wrong
    mpage.click("#approve-batch")
    mpage.wait_for_selector("text=That is not your password.")
    mpage.fill("#id_password", "pw-" + manager.username)
    mpage.fill("#id_otp_token", totp_code(manager))
    total = sum(PayoutProposal.objects.values_list("total_cents", flat=True))
    amount = f"USD {total // 100:,}.{total % 100:02d}"
    assert mpage.inner_text("#approve-batch") == f"Approve all 3 proposals · {amount}"
    mpage.click("#approve-batch")
    mpage.wait_for_selector("text=Batch approved")
    assert f"3 proposals of outage {outage.pk}, {amount} in all?" in mpage.confirmations[-1]
    mpage.wait_for_selector("#posting-done", timeout=60000)
    assert "Every approved proposal is posted" in mpage.inner_text("#posting-done")
    assert "100%" in mpage.inner_text("#posting-summary")
    assert set(PayoutProposal.objects.values_list("status", flat=True)) == {"posted"}

    # The report: cost per currency and rule, who was paid, timings, CSV.
    mpage.click("text=Report")
    mpage.wait_for_selector("#cost-currency")
    total = sum(PayoutProposal.objects.values_list("total_cents", flat=True))
    assert f"USD {total // 100:,}.{total % 100:02d}" in mpage.inner_text("#cost-currency")
    assert mpage.locator("#report-rows tbody tr").count() == 3
    assert "Failure to posted" in mpage.inner_text("#timings")
    shot(mpage, "outage-report")
    with mpage.expect_download() as download:
        mpage.click("#report-csv")
    text = open(download.value.path(), encoding="utf-8-sig").read()
    assert all(x in text for x in AFFECTED) and "UNRELATED-9" not in text


def test_marking_resumed_with_nothing_ticked_asks_nothing_and_says_so(open_as, support):
    """With no tournament ticked there is nothing to confirm: the page says that no tournament
    was ticked, in staff words; with one ticked, the question comes first."""
    recorded = outage(support, failed_ago=timedelta(minutes=5))
    page = open_as(support)
    page.goto(f"/outages/{recorded.pk}/")
    page.click("#mark-resumed")
    expect(page.locator(".messages")).to_contain_text("No tournament was ticked")
    assert page.confirmations == []
    assert "none chosen" not in page.inner_text("main")

    page.say_yes = False
    page.locator("#resumed-form input[name=incidents]").first.check()
    page.click("#mark-resumed")
    expect(page.locator("#resumed-form input[name=incidents]")).to_have_count(3)
    assert page.confirmations[-1].startswith("Mark play resumed on the ticked tournaments?")


def test_clearing_the_failure_time_empties_the_list_of_running_tournaments(open_as, support):
    """The list of running tournaments belongs to the failure time typed: once it is cleared the
    list goes (htmx's check of the form's required fields used to stop the request, leaving the
    old time's tournaments listed, ready to be ticked), and typing a time brings it back."""
    import_doc(support, sunday_major_doc("OUT-CLEAR-1", entries=20, active=8))
    page = open_as(support)
    asked = []
    page.on("request", lambda r: asked.append(r.url) if "/candidates" in r.url else None)
    page.goto("/outages/new/")
    failed_at = timezone.now().replace(second=0, microsecond=0) - timedelta(minutes=40)
    typed = failed_at.strftime("%Y-%m-%dT%H:%M")
    page.fill("#id_failed_at", typed)
    expect(page.locator("#candidates")).to_contain_text("OUT-CLEAR-1")

    page.fill("#id_failed_at", "")
    expect(page.locator("#candidates")).to_contain_text("Type when play failed")
    expect(page.locator("input.candidate")).to_have_count(0)

    page.fill("#id_failed_at", typed)
    expect(page.locator("#candidates")).to_contain_text("OUT-CLEAR-1")
    # The form's CSRF token never travels in the list's address (logs, history).
    assert asked and not [url for url in asked if "csrfmiddlewaretoken" in url]
