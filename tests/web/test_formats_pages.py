"""The screens of tournament formats and the approver's reconciliation per rule
(item 1): knockout, rebuy and payment columns only where the tournament uses them;
the pool reconciled with the figures the rule uses, plus what the operator absorbs.

The knockout is tests/factories.knockout_doc ($30 + $10 KO + $3, heads $20 / $15 / $10 / $15).
"""

import re
from datetime import timedelta

import pytest
from django.urls import reverse
from django.utils import timezone

from refunds_admin.proposals.models import PayoutProposal
from tests.support.factories import draft_proposal, knockout_doc, snapshot_doc, submitted_proposal
from tests.support.pages import approve_on_page

pytestmark = pytest.mark.django_db


def _page(client, name, *args):
    response = client.get(reverse(name, args=args))
    assert response.status_code == 200, response.status_code
    return response.content.decode()


def _section(page, element_id):
    return page.split(f'id="{element_id}"', 1)[1].split("</section>", 1)[0]


def _breakdown_header(page):
    lines = page.partition('<div id="lines">')[2]
    return re.findall(r"<th[^>]*>(?:<a[^>]*>)?([^<]+)", lines.split("</thead>")[0])


def _table(html, element_id):
    """(row label, amount) pairs of a reconciliation table."""
    body = html.split(f'id="{element_id}"', 1)[1].split("</table>", 1)[0]
    rows = re.findall(
        r'<th scope="row">([^<]+)(?:<small>[^<]*</small>)?</th><td class="num">([^<]+)</td>', body
    )
    return [(label.strip(), amount) for label, amount in rows]


def _full_refund_doc(doc):
    doc["tournament"]["starts_at"] = (timezone.now() - timedelta(minutes=50)).isoformat()
    return doc


# --------------------------------------------------------------------------------------------
# Columns only where used
# --------------------------------------------------------------------------------------------


def test_the_tournament_page_shows_bounties_rebuys_and_payments_of_a_knockout(client, support):
    knockout = submitted_proposal(support, doc=knockout_doc(guarantee="2000.00"))
    plain = submitted_proposal(support, external_id="T-PLAIN")
    client.force_login(support)
    page = _page(client, "tournament_detail", knockout.incident.tournament_id)
    assert 'id="tournament-bounty">USD 10.00' in page
    assert 'id="tournament-guarantee">USD 2,000.00' in page
    entries = page.partition('<div id="entries">')[2]
    for header in (
        "Rebuys and add-ons",
        "Bounty paid",
        "Bounty on head",
        "Bounties won",
        "Paid with",
    ):
        assert header in entries
    assert "ticket TKT-1 USD 43.00" in entries
    assert "tournament money USD 20.00 + cash USD 23.00" in entries
    page = _page(client, "tournament_detail", plain.incident.tournament_id)
    entries = page.partition('<div id="entries">')[2]
    for header in ("Rebuys", "Bounty", "Paid with"):
        assert header not in entries
    assert "tournament-bounty" not in page


def test_the_breakdown_shows_knockout_columns_only_for_a_knockout(client, support, auditor):
    knockout = submitted_proposal(support, doc=knockout_doc(paid_with=False))
    plain = submitted_proposal(support, external_id="T-PLAIN")
    client.force_login(auditor)
    header = _breakdown_header(_page(client, "proposal_detail", knockout.pk))
    assert {
        "Bounty paid",
        "Bounty on head",
        "Bounties won",
        "Rebuys + fees",
        "Bounty refund",
    } <= set(header)
    assert "Paid with" not in header and "Equal share" not in header
    lines = _page(client, "proposal_detail", knockout.pk).partition('<div id="lines">')[2]
    e1 = lines.split("<td>e1</td>", 1)[1].split("</tr>", 1)[0]
    # bounty paid, on the head, won; then the amounts, the bounty refund before the total
    assert re.findall(r'<td class="num">([^<]*)</td>', e1)[1:4] == [
        "USD 10.00",
        "USD 20.00",
        "USD 20.00",
    ]
    header = _breakdown_header(_page(client, "proposal_detail", plain.pk))
    assert not {"Bounty paid", "Bounty refund", "Rebuys + fees", "Paid with", "Equal share"} & set(
        header
    )
    assert header[:5] == ["Entry", "Player", "Screen name", "Status", "Chips"]


def test_the_breakdown_shows_the_equal_share_and_the_ticket_returned(client, support, auditor):
    shared = submitted_proposal(
        support, doc=knockout_doc("T-RF", paid_with=False, policy="roll-forward-50-50")
    )
    tickets = draft_proposal(support, doc=_full_refund_doc(knockout_doc("T-TK")))
    client.force_login(auditor)
    assert "Equal share" in _breakdown_header(_page(client, "proposal_detail", shared.pk))
    page = _page(client, "proposal_detail", tickets.pk)
    header = _breakdown_header(page)
    assert "Paid with" in header and "Refunded as" in header
    e1 = page.partition('<div id="lines">')[2].split("<td>e1</td>", 1)[1].split("</tr>", 1)[0]
    assert e1.count("ticket TKT-1 USD 43.00") == 2  # paid with it, refunded as it


# --------------------------------------------------------------------------------------------
# The approver's reconciliation, per rule
# --------------------------------------------------------------------------------------------


def test_under_rule_1_the_approver_sees_the_prizes_already_paid_and_no_pool_rows(
    client, support, manager
):
    # Entry e5 was paid a prize before the failure; rule 1 refunds everyone anyway.
    doc = _full_refund_doc(snapshot_doc("T-R1", entry_fields={4: {"prize_awarded": "150.00"}}))
    proposal = submitted_proposal(support, doc=doc)
    assert proposal.rule == "full_refund"
    client.force_login(manager)
    for name in ("proposal_approval", "proposal_detail"):
        page = _page(client, name, proposal.pk)
        money = _section(page, "decision-money")
        assert _table(money, "decision-pool") == [
            ("Pool in", "USD 330.00"),
            ("Buy-ins and rebuys back", "USD 300.00"),
            ("Fees out", "USD 30.00"),
            ("Paid out", "USD 330.00"),
        ]
        assert _table(money, "decision-absorbed") == [
            ("Prizes already paid, absorbed by the operator", "USD 150.00")
        ]
        rule = _section(page, "decision-rule")
        assert "First-place cap" not in rule and "Capped entries" not in rule
    summary = _section(_page(client, "proposal_detail", proposal.pk), "summary")
    assert "Remaining pool" not in summary and "Equity pool" not in summary
    assert "First-place cap" not in summary
    assert 'id="summary-prizes-awarded">USD 150.00' in summary


def test_under_rule_2_a_knockout_reconciles_the_bounties_on_active_heads(client, support, manager):
    proposal = submitted_proposal(support, doc=knockout_doc(paid_with=False))
    client.force_login(manager)
    money = _section(_page(client, "proposal_approval", proposal.pk), "decision-money")
    rows = dict(_table(money, "decision-pool"))
    assert list(rows) == ["Pool in", "Buy-in refunds", "Chip equity", "Fees out",
                          "Bounties on active heads", "Paid out"]  # fmt: skip
    assert rows["Bounties on active heads"] == "USD 60.00"
    assert rows["Pool in"] == rows["Paid out"] == f"USD {proposal.total_cents / 100:,.2f}"
    assert "Paid out = pool in, to the cent." in money
    assert 'id="decision-absorbed"' not in money  # nothing absorbed, no overlay


def test_a_roll_forward_reconciles_the_equal_shares(client, support, manager):
    proposal = submitted_proposal(
        support, doc=knockout_doc(paid_with=False, policy="roll-forward-50-50")
    )
    client.force_login(manager)
    money = _section(_page(client, "proposal_approval", proposal.pk), "decision-money")
    rows = dict(_table(money, "decision-pool"))
    assert "Equal shares" in rows and rows["Equal shares"] != "USD 0.00"
    assert rows["Pool in"] == rows["Paid out"]


def test_under_rule_1_the_refunds_per_method_name_the_tickets(client, support, manager):
    proposal = submitted_proposal(support, doc=_full_refund_doc(knockout_doc()))
    client.force_login(manager)
    page = _page(client, "proposal_approval", proposal.pk)
    methods = dict(_table(_section(page, "decision-money"), "decision-methods"))
    assert methods["Tickets"] == "USD 43.00" and methods["Tournament money"] == "USD 20.00"
    assert methods["Cash"] == f"USD {(proposal.total_cents - 63_00) / 100:,.2f}"
    assert "(1)" in page.split('id="decision-methods"')[1].split("</table>")[0]  # one ticket


def test_the_bounty_conservation_warning_reaches_the_approver(client, support, manager):
    doc = knockout_doc(paid_with=False)
    doc["entries"][2]["bounties_won"] = "5.00"  # $5 more won than the bounties paid in allow
    proposal = submitted_proposal(support, doc=doc)
    assert proposal.warnings
    client.force_login(manager)
    warnings = _section(_page(client, "proposal_approval", proposal.pk), "decision-rule")
    assert "5.00" in warnings.split('id="decision-warnings"')[1]


def test_approving_non_cash_refunds_from_the_page_approves_them(client, support, manager):
    # The approval page approves them: the wallet returns them in the form paid.

    proposal = submitted_proposal(support, doc=_full_refund_doc(knockout_doc()))
    client.force_login(manager)
    page = _page(client, "proposal_approval", proposal.pk)
    assert 'id="approval-not-yet"' not in page and "not available yet" not in page
    response = approve_on_page(client, proposal, manager)
    assert response.status_code == 302, response.content.decode()
    proposal.refresh_from_db()
    assert proposal.status != PayoutProposal.Status.SUBMITTED


def test_under_rule_1_the_summary_names_the_rebuys_refunded_with_the_buy_ins(client, support):
    """A newcomer read "Buy-ins refunded USD 100.00" above a reconciliation of "Buy-ins and
    rebuys back USD 100.00": where entries rebought, the summary says so too."""
    with_rebuys = draft_proposal(support, doc=_full_refund_doc(knockout_doc("T-R1-RB")))
    plain = draft_proposal(support, doc=_full_refund_doc(snapshot_doc("T-R1-PLAIN")))
    client.force_login(support)
    summary = _section(_page(client, "proposal_detail", with_rebuys.pk), "summary")
    assert "<dt>Buy-ins and rebuys refunded</dt>" in summary
    summary = _section(_page(client, "proposal_detail", plain.pk), "summary")
    assert "<dt>Buy-ins refunded</dt>" in summary
