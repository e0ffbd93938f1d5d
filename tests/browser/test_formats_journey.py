"""A progressive knockout paid partly with a ticket, in a real Chromium.

Support imports the snapshot (examples 11 and 13 are its models: bounties grown on the heads,
an entry bought in with ticket TKT-1, another with tournament money), records a failure ten
minutes into play and prepares the proposal: rule 1 gives every entry back what it paid, each
part in the form paid. The proposal page, the approval page and the player's statement show the
policy, the bounties and the returned ticket; another manager approves it.
"""

from datetime import timedelta

import pytest
from django.utils import timezone

from tests.support.factories import dumps, knockout_doc, totp_code

from .conftest import shot, shot_of

pytestmark = pytest.mark.browser

# Where the breakdown's card and its last headers end (px from the window's left), how far it
# scrolls sideways, the page's width and the table's type size.
_BREAKDOWN_FIT = """() => {
    const card = document.querySelector('#lines').closest('.card');
    const ths = [...document.querySelectorAll('#lines thead th')];
    const right = name => ths.find(h => h.textContent.trim().startsWith(name))
        .getBoundingClientRect().right;
    return {
        scroll: card.scrollWidth, client: card.clientWidth,
        right: card.getBoundingClientRect().right, total: right('Total'),
        refunded: right('Refunded as'), last: ths[ths.length - 1].getBoundingClientRect().right,
        page: document.documentElement.scrollWidth,
        font: parseFloat(getComputedStyle(document.querySelector('#lines table')).fontSize),
    };
}"""


def test_support_imports_a_knockout_and_the_approver_sees_bounties_and_a_ticket(
    open_as, support, manager, tmp_path
):
    starts = timezone.now().replace(microsecond=0) - timedelta(minutes=50)
    doc = knockout_doc(
        "UP-2026-PKO-1",
        name="$30 + $10 PKO + $3",
        starts_at=starts,
        guarantee="1000.00",
    )
    path = tmp_path / "pko.json"
    path.write_text(dumps(doc))

    # Support imports the knockout: the tournament page shows its bounties and payments.
    page = open_as(support)
    page.goto("/tournaments/import/")
    page.set_input_files("#id_file", str(path))
    page.click("button:has-text('Import JSON')")
    page.wait_for_selector("text=Imported UP-2026-PKO-1")
    assert "USD 10.00" in page.inner_text("#tournament-bounty")
    entries = page.inner_text("#entries")
    assert "Bounty on head" in entries and "ticket TKT-1 USD 43.00" in entries
    shot(page, "knockout-tournament")

    # Ten minutes into play the server failed; the window passed; support prepares.
    page.click("text=Record an incident")
    failed_at = starts + timedelta(minutes=10)
    page.fill("#id_failed_at", failed_at.strftime("%Y-%m-%dT%H:%M:%S"))
    page.wait_for_selector("#rule-preview >> text=Rule 1: full refund")
    page.select_option("#id_cause", "server_crash")
    page.fill("#id_description", "Knockout table servers crashed at level 3.")
    page.click("button:has-text('Record incident')")
    page.wait_for_selector("text=recorded")
    page.click("button:has-text('Cancel the tournament')")
    page.wait_for_selector(".badge.cancelled")
    page.click("button:has-text('Prepare proposal')")
    page.wait_for_selector("h1:has-text('Proposal v1')")

    # The proposal page: knockout parts back, the ticket returned as a ticket.
    summary = page.inner_text("#summary")
    assert "Knockout parts refunded" in summary and "USD 100.00" in summary
    assert "ultimatepoker-2026 v1" in page.inner_text("#proposal-policy")
    lines = page.inner_text("#lines")
    assert "Bounty refund" in lines and "Refunded as" in lines
    row = page.locator("#lines tbody tr:has(td:text-is('e1'))").first
    assert row.inner_text().count("ticket TKT-1 USD 43.00") == 2  # paid with, refunded as
    # The breakdown's many columns never widen the page. Its card takes the window's width, and
    # from a 1280 px window up the whole table fits it: no sideways scroll, the total, the form
    # of the refund and the statement links in view.
    for width in (1366, 1920, 1280):
        page.set_viewport_size({"width": width, "height": 900})
        fit = page.evaluate(_BREAKDOWN_FIT)
        assert fit["page"] <= width and fit["right"] <= width, (width, fit)
        assert fit["total"] <= fit["right"] and fit["font"] >= 11.7, (width, fit)
        assert fit["scroll"] <= fit["client"] + 1, (width, fit)
        assert fit["refunded"] <= fit["right"] and fit["last"] <= fit["right"], (width, fit)
    page.set_viewport_size({"width": 1360, "height": 900})
    money = page.inner_text("#decision-money")
    assert "Knockout parts back" in money and "Tickets" in money
    page.click("button:has-text('Submit for approval')")
    page.wait_for_selector(".badge.submitted")
    shot_of(page.locator("#lines"), "knockout-breakdown")
    row = page.locator("#lines tbody tr:has(td:text-is('e1'))").first
    row.locator("text=Statement").click()
    page.wait_for_selector("#statement table.statement")
    statement = page.inner_text("#statement")
    assert "TKT-1" in statement
    shot(page, "knockout-proposal", max_height=1400)
    shot_of(page.locator("#statement"), "knockout-statement")

    # The manager reviews: the pool reconciled with the bounties and the refunds per method;
    # approving approves it.
    mpage = open_as(manager)
    mpage.goto(page.url.split("?")[0] + "approval/")
    mpage.wait_for_selector("#decision-methods")
    assert "ultimatepoker-2026 v1" in mpage.inner_text("#decision-policy")
    methods = mpage.inner_text("#decision-methods")
    assert "Tickets" in methods and "USD 43.00" in methods and "Tournament money" in methods
    assert "Prizes already paid" in mpage.inner_text("#decision-absorbed")
    assert not mpage.locator("#approval-not-yet").count()  # the wallet returns them
    mpage.fill("#id_password", "pw-" + manager.username)
    mpage.fill("#id_otp_token", totp_code(manager))
    shot(mpage, "knockout-approval", max_height=1600)
    mpage.click("button:has-text('Approve')")
    mpage.wait_for_selector(".badge.approved, .badge.posting, .badge.posted")
    from refunds_admin.proposals.models import PayoutProposal

    proposal = PayoutProposal.objects.get(incident__tournament__external_id="UP-2026-PKO-1")
    assert proposal.status != PayoutProposal.Status.SUBMITTED
