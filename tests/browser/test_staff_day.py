"""In Chromium: what a newcomer trial found, each as a person meets it."""

import pytest
from playwright.sync_api import expect

from refunds_admin.proposals.models import PayoutProposal
from tests.support.factories import open_incident, prepared_outage, sunday_major_doc

pytestmark = pytest.mark.browser


def test_a_double_click_asks_once_and_sends_once(open_as, support):
    from datetime import timedelta

    incident = open_incident(
        support, failed_ago=timedelta(minutes=40), doc=sunday_major_doc("UP-DOUBLE-1")
    )
    page = open_as(support)
    page.goto(f"/incidents/{incident.pk}/")
    posts = []
    page.on("request", lambda r: posts.append(r.url) if r.method == "POST" else None)
    page.dblclick("button:has-text('Cancel the tournament')")
    page.wait_for_selector(".badge.cancelled")
    assert len(page.confirmations) == 1, page.confirmations
    assert len([u for u in posts if u.endswith("/cancel/")]) == 1


def test_a_manager_rejects_an_outage_batch_after_a_question(open_as, support, manager):
    outage = prepared_outage(support, external_ids=("REJ-1", "REJ-2"))
    page = open_as(manager)
    page.goto(f"/outages/{outage.pk}/review/")
    assert page.inner_text("#reject-batch").startswith("Reject 2 proposals · USD ")
    page.fill("#id_reject_reason", "The failure time is wrong: 21:40, not 21:14.")
    page.say_yes = False
    page.click("#reject-batch")
    assert page.confirmations[-1].startswith(f"Reject 2 proposals of outage {outage.pk}")
    assert set(PayoutProposal.objects.values_list("status", flat=True)) == {"submitted"}
    page.say_yes = True
    page.click("#reject-batch")
    page.wait_for_selector("text=Rejected 2 proposals")
    expect(page.locator("#outage-tournaments .badge.rejected")).to_have_count(0)
    assert set(PayoutProposal.objects.values_list("status", flat=True)) == {"rejected"}


def test_a_large_re_imports_differences_appear_once_the_page_is_drawn(
    open_as, support, monkeypatch
):
    """Above COMPARED_WHILE_DRAWN entries the incident page is drawn before the two snapshot
    versions are compared; htmx then fetches the comparison into its section."""
    from refunds_admin.web import queries
    from tests.support.factories import cancelled_incident, import_doc, snapshot_doc

    monkeypatch.setattr(queries, "COMPARED_WHILE_DRAWN", 3)
    incident = cancelled_incident(support, external_id="UP-LATER")
    doc = snapshot_doc(
        "UP-LATER", starts_at=incident.tournament.starts_at, entry_fields={1: {"fee_paid": "2.00"}}
    )
    import_doc(support, doc=doc)
    page = open_as(support)
    fetched = []
    page.on("request", lambda r: fetched.append(r.url) if "snapshot-changes" in r.url else None)
    page.goto(f"/incidents/{incident.pk}/")
    expect(page.locator("#snapshot-money-changes")).to_have_text(
        "1 entry with a different amount (e2: fee paid)"
    )
    expect(page.get_by_text("Comparing the two versions")).to_have_count(0)
    assert len(fetched) == 1, fetched
