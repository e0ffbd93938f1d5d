"""python manage.py reconcile: approved totals against the ledger; non-zero exit on a mismatch."""

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from refunds_admin.ledger import posting, selectors
from refunds_admin.proposals.models import PayoutProposal
from tests.support.posting_support import make_approved_proposal

pytestmark = pytest.mark.django_db


def test_it_reconciles_posted_proposals(capsys):
    posted = make_approved_proposal(amounts=[(1000, 0, 33, 100)] * 3)
    posting.post_proposal(posted.pk)
    waiting = make_approved_proposal(lines=2)  # approved, not posted yet: not a mismatch

    call_command("reconcile")
    out = capsys.readouterr().out
    assert (
        f"ok  proposal {posted.pk} (posted): approved 33.99 USD, ledger 33.99 USD in 9 credits"
        in out
    )
    assert f"proposal {waiting.pk} (approved)" in out
    assert "2 proposals checked, 0 mismatched" in out


def test_it_fails_when_a_posted_proposal_is_not_in_the_ledger(capsys):
    proposal = make_approved_proposal(lines=2)
    PayoutProposal.objects.filter(pk=proposal.pk).update(status="posted")  # books nothing
    with pytest.raises(CommandError, match="1 proposal"):
        call_command("reconcile")
    out = capsys.readouterr().out
    assert f"MISMATCH proposal {proposal.pk} (posted)" in out
    assert "posted, but the ledger differs from the approved total" in out


def test_it_reconciles_only_the_proposals_asked_about():
    first = make_approved_proposal(lines=2)
    second = make_approved_proposal(lines=2)
    rows = selectors.reconcile([second.pk])
    assert [row["proposal"] for row in rows] == [second.pk]
    assert first.pk in [row["proposal"] for row in selectors.reconcile()]


# -- per method and per ticket -------------------------------------------------------


def _ours():
    return [
        {"key": "k-cash", "amount_cents": 1000, "method": "cash", "ticket_id": ""},
        {"key": "k-tm", "amount_cents": 2000, "method": "tournament_money", "ticket_id": ""},
        {"key": "k-t1", "amount_cents": 5500, "method": "ticket", "ticket_id": "TKT-1"},
    ]


def _theirs():
    # The cashier's answer: cash has no method.
    return [
        {"key": "k-cash", "amount_cents": 1000},
        {"key": "k-tm", "amount_cents": 2000, "method": "tournament_money"},
        {"key": "k-t1", "amount_cents": 5500, "method": "ticket", "ticket_id": "TKT-1"},
    ]


def test_the_ledger_and_the_cashier_agree_per_method_and_per_ticket():
    from refunds_admin.ledger.reconciliation import compare

    found = compare(_ours(), _theirs())
    assert found.problems(complete=True) == []
    assert (
        found.ledger_by_method
        == found.cashier_by_method
        == {
            "cash": 1000,
            "tournament_money": 2000,
            "ticket": 5500,
        }
    )
    assert (found.ledger_tickets, found.cashier_tickets) == (1, 1)


def test_a_ticket_paid_as_cash_or_as_another_ticket_or_twice_is_a_mismatch():
    from refunds_admin.ledger.reconciliation import compare

    as_cash = _theirs()
    as_cash[2] = {"key": "k-t1", "amount_cents": 5500}
    assert compare(_ours(), as_cash).wrong_method == ["k-t1"]
    assert (
        "paid in another form than booked (k-t1)"
        in compare(_ours(), as_cash).problems(complete=True)[0]
    )

    other_ticket = _theirs()
    other_ticket[2] = other_ticket[2] | {"ticket_id": "TKT-2"}
    assert compare(_ours(), other_ticket).wrong_ticket == ["k-t1"]

    twice = [
        *_theirs(),
        {"key": "k-t9", "amount_cents": 5500, "method": "ticket", "ticket_id": "TKT-1"},
    ]
    found = compare(_ours(), twice)
    assert found.tickets_twice == ["TKT-1"] and found.unknown == ["k-t9"]
    assert any("tickets more than once" in p for p in found.problems(complete=False))

    money_as_cash = _theirs()
    money_as_cash[1] = {"key": "k-tm", "amount_cents": 2000}
    found = compare(_ours(), money_as_cash)
    assert found.wrong_method == ["k-tm"]
    assert found.cashier_by_method["cash"] == 3000 != found.ledger_by_method["cash"]


def test_a_cashier_answering_as_the_spec_says_without_forms_reconciles():
    # cashier-api.md's reconciliation answer: key, credit_id, amount, currency, player_id and
    # no method. The credits confirmed under their keys are in the form booked, not cash.
    from refunds_admin.ledger.reconciliation import compare

    spec_shaped = [
        {"key": c["key"], "credit_id": "c" + c["key"], "amount_cents": c["amount_cents"]}
        for c in _ours()
    ]
    found = compare(_ours(), spec_shaped)
    assert found.wrong_method == [] and found.wrong_ticket == []
    assert found.problems(complete=True) == []
    assert found.cashier_by_method == found.ledger_by_method
    assert (found.ledger_tickets, found.cashier_tickets) == (1, 1)
    # Amounts and keys are still compared.
    spec_shaped[2] = spec_shaped[2] | {"amount_cents": 5000}
    assert compare(_ours(), spec_shaped).amounts_differ == ["k-t1"]


def test_before_posted_only_what_the_cashier_holds_must_be_right():
    from refunds_admin.ledger.reconciliation import compare

    partial = _theirs()[:1]
    assert compare(_ours(), partial).problems(complete=False) == []
    assert compare(_ours(), partial).problems(complete=True) == [
        "cashier differs: 2 missing, 0 unknown, 0 amounts differ (k-t1, k-tm)"
    ]
