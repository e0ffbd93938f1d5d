"""Refunds returned in the form they were paid: a ticket comes back as that ticket,
once, tournament money as tournament money, never as cash; "posted = approved" per method; a
ticket the cashier cannot return is marked failed with its reason for a human. The ledger as
the wallet and a real HTTP cashier on 127.0.0.1 (tests/support/fake_cashier.py); data built through the
services (a full refund of entries that paid with tickets and tournament money)."""

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.db.models import Count, Sum

from refunds_admin.ledger import posting, selectors
from refunds_admin.ledger.models import (
    CashierDelivery,
    Credit,
    PostedTotal,
    parse_credit_key,
    parse_ticket_id,
    ticket_key,
)
from refunds_admin.ledger.writers import lines_summary, lines_summary_in_python
from refunds_admin.payouts.money import format_cents
from refunds_admin.proposals.models import PayoutProposal
from tests.support.fake_cashier import point_settings_at
from tests.support.posting_support import expected_credits, make_approved_proposal, third_non_cash

pytestmark = pytest.mark.django_db


@pytest.fixture
def with_cashier(settings, cashier):
    return point_settings_at(settings, cashier, max_tries=3, chunk_size=4)


def _proposal(lines=9):
    # Entries 1, 4, 7: a ticket worth $11.00; 2, 5, 8: $10.00 tournament money + $1.00 cash.
    return make_approved_proposal(lines=lines, paid_with=third_non_cash, schedule=False)


def _by_method(proposal):
    return dict(
        Credit.objects.filter(proposal=proposal)
        .values("method")
        .annotate(cents=Sum("amount_cents"))
        .values_list("method", "cents")
    )


def _ticket_of(proposal, entry_id):
    return f"TKT-{proposal.incident.tournament.external_id}-{entry_id}"


def test_the_ledger_books_each_part_in_the_form_paid_and_posted_equals_approved_per_method():
    proposal = _proposal()
    assert posting.post_proposal(proposal.pk) == "posted"
    booked = {
        c.key: (c.method, c.ticket_id, c.amount_cents)
        for c in Credit.objects.filter(proposal=proposal)
    }
    assert booked == expected_credits(proposal)
    e1 = Credit.objects.filter(proposal=proposal, entry_id="e000001")
    ticket = _ticket_of(proposal, "e000001")
    assert [(c.key, c.method, c.ticket_id, c.amount_cents) for c in e1] == [
        (ticket_key(proposal.pk, "e000001", ticket), "ticket", ticket, 1100)
    ]  # the whole refund is the ticket: no cash beside it
    e2 = {
        c.component: (c.method, c.amount_cents) for c in Credit.objects.filter(entry_id="e000002")
    }
    assert e2 == {"tournament_money": ("tournament_money", 1000), "cash_refund": ("cash", 100)}
    # Posted = approved, in all and per method (3 tickets, 3 x $10 tournament money).
    assert sum(_by_method(proposal).values()) == proposal.total_cents
    assert _by_method(proposal) == {
        "ticket": 3300,
        "tournament_money": 3000,
        "cash": 9 * 1100 - 6300,
    }
    total = PostedTotal.objects.get(proposal=proposal)
    assert (total.tickets, total.ticket_cents, total.tournament_money_cents) == (3, 3300, 3000)
    assert total.cash_cents == total.cents - 6300
    assert total.buy_in_refund_cents == 9 * 1000 and total.fee_refund_cents == 9 * 100
    [row] = selectors.reconcile([proposal.pk])
    assert row["ok"], row["problems"]
    assert row["by_method"]["ticket"]["ledger_cents"] == 3300


def test_keys_and_counts_are_the_same_in_sql_and_python():
    proposal = _proposal(lines=6)
    _, lines, credits, cents = lines_summary(proposal)
    assert (lines, credits, cents) == lines_summary_in_python(proposal)[1:]
    assert credits == len(expected_credits(proposal)) == 2 * 2 + 2 * 1 + 2 * 2
    posting.post_proposal(proposal.pk)
    for key in Credit.objects.filter(proposal=proposal, method="ticket").values_list(
        "key", flat=True
    ):
        assert parse_credit_key(key)[2] == "ticket" and parse_ticket_id(key).startswith("TKT-")


def test_a_ticket_key_is_the_same_on_every_retry_and_names_the_ticket():
    assert ticket_key(12, "e1", "TKT-88121") == "proposal-12/e1/ticket/TKT-88121"
    assert ticket_key(12, "e1", "TKT 1/2") == "proposal-12/e1/ticket/TKT%201%2F2"
    assert parse_ticket_id("proposal-12/e1/ticket/TKT%201%2F2") == "TKT 1/2"
    assert parse_ticket_id("proposal-12/e1/fee_refund") is None


def test_the_cashier_gets_each_ticket_once_and_each_form_as_booked(with_cashier, cashier):
    cashier.faults = {"500": 0.1, "drop": 0.1, "429": 0.05}
    cashier.retry_after = "0.01"
    with_cashier.CASHIER_MAX_TRIES = 12
    proposal = _proposal(lines=30)
    assert posting.post_proposal(proposal.pk) == "posted"
    expected = expected_credits(proposal)
    assert set(cashier.applied) == set(expected) and cashier.duplicates() == 0
    for key, (method, ticket_id, cents) in expected.items():
        [body] = cashier.applied[key]
        assert body.get("method", "cash") == method, key  # never cash for a ticket
        assert body.get("ticket_id", "") == ticket_id
        assert body["amount"] == format_cents(cents)
    assert len(cashier.tickets) == 10 and cashier.ticket_duplicates() == 0
    for method in ("cash", "tournament_money", "ticket"):
        assert (
            cashier.total_cents(f"proposal {proposal.pk} ", method) == _by_method(proposal)[method]
        )
    [row] = selectors.reconcile([proposal.pk])
    assert row["ok"], row["problems"]
    assert row["tickets"] == {"ledger": 10, "cashier": 10}
    assert {m: v["cashier_cents"] for m, v in row["by_method"].items()} == _by_method(proposal)


def test_a_ticket_the_cashier_cannot_return_fails_for_a_human_and_is_never_paid_as_cash(
    with_cashier, cashier, manager
):
    proposal = _proposal()
    ticket = _ticket_of(proposal, "e000004")
    cashier.unknown_tickets = {ticket}
    with pytest.raises(posting.PostingStopped):
        posting.post_proposal(proposal.pk)
    proposal.refresh_from_db()
    assert proposal.status == PayoutProposal.Status.FAILED
    key = ticket_key(proposal.pk, "e000004", ticket)
    refused = CashierDelivery.objects.get(credit_id=key)
    assert refused.state == "failed" and f"unknown ticket {ticket}" in refused.error
    assert f"unknown ticket {ticket}" in proposal.posting_job.last_error
    # Nothing for that entry went out in another form, nor under another key.
    assert not [k for k in cashier.applied if "/e000004/" in k]
    assert Credit.objects.filter(proposal=proposal, entry_id="e000004").count() == 1
    # The posting page names the ticket and the reason.
    from refunds_admin.web.progress import progress_of

    progress = progress_of(proposal)
    assert [r["credit__ticket_id"] for r in progress["refused"]] == [ticket]
    # The operator re-issues the ticket at the cashier; a manager resumes: same key, once.
    cashier.unknown_tickets = set()
    posting.resume_posting(proposal, acting_user=manager)
    assert posting.post_proposal(proposal.pk) == "posted"
    assert cashier.tickets[ticket] == [key] and cashier.ticket_duplicates() == 0
    assert selectors.reconcile([proposal.pk])[0]["ok"]


def test_a_ticket_returned_under_another_key_is_refused_not_returned_twice(with_cashier, cashier):
    proposal = _proposal(lines=3)
    ticket = _ticket_of(proposal, "e000001")
    cashier.tickets[ticket] = ["some-other-key"]  # returned before, by hand or another app
    with pytest.raises(posting.PostingStopped):
        posting.post_proposal(proposal.pk)
    delivery = CashierDelivery.objects.get(credit__ticket_id=ticket)
    assert delivery.state == "failed" and "already returned" in delivery.error
    assert cashier.tickets[ticket] == ["some-other-key"]


def test_reconcile_catches_a_ticket_paid_as_cash_at_the_cashier(with_cashier, cashier, capsys):
    proposal = _proposal(lines=3)
    posting.post_proposal(proposal.pk)
    key = next(k for k in cashier.applied if "/ticket/" in k)
    body = cashier.applied[key][0]
    cashier.applied[key] = [{k: v for k, v in body.items() if k not in ("method", "ticket_id")}]
    with pytest.raises(CommandError):
        call_command("reconcile")
    out = capsys.readouterr().out
    assert "paid in another form than booked" in out and key in out
    assert "ticket: ledger 11.00 USD, cashier 0.00 USD" in out


def test_a_posted_proposal_shows_its_forms_on_the_posting_page_and_the_player_lookup(
    client, manager
):
    proposal = _proposal(lines=3)
    posting.post_proposal(proposal.pk)
    client.force_login(manager)
    page = client.get(f"/proposals/{proposal.pk}/posting/")
    assert 'id="posting-methods"' in page.text and "Tickets returned" in page.text
    assert "Tournament money" in page.text
    lookup = client.get("/players/?q=p000001")
    ticket = _ticket_of(proposal, "e000001")
    assert 'id="tickets"' in lookup.text and ticket in lookup.text
    credits = client.get(f"/reports/postings/{proposal.pk}/credits/")
    assert f"Ticket <code>{ticket}</code>" in credits.text


def test_the_delivered_statement_names_the_ticket_returned():
    from refunds_admin.notifications.services import refund_forms
    from refunds_admin.notifications.statements import form_sentences

    proposal = _proposal(lines=3)
    posting.post_proposal(proposal.pk)
    forms = refund_forms(proposal.pk)
    assert set(forms) == {"e000001", "e000002"}  # e000003 paid all in cash
    ticket = _ticket_of(proposal, "e000001")
    assert form_sentences(forms["e000001"], "USD") == [
        f"Your ticket {ticket} ($11.00) has been returned to your account"
    ]
    assert form_sentences(forms["e000002"], "USD") == [
        "$10.00 has been credited to your tournament money balance",
        "$1.00 has been paid to your cash balance",
    ]


def test_counts_per_method_in_the_ledger_are_what_the_lines_promise():
    proposal = _proposal(lines=12)
    posting.post_proposal(proposal.pk)
    counts = dict(
        Credit.objects.filter(proposal=proposal)
        .values("method")
        .annotate(n=Count("pk"))
        .values_list("method", "n")
    )
    # 4 tickets; 4 tournament money; cash: 4 x (buy-in + fee) + 4 cash parts.
    assert counts == {"ticket": 4, "tournament_money": 4, "cash": 12}


def test_posting_refuses_to_call_posted_a_ledger_that_paid_a_ticket_as_cash(monkeypatch):
    from refunds_admin.ledger import writers

    proposal = _proposal(lines=3)
    real = writers.line_credits

    def as_cash(proposal_id, entry_id, player_id, *rest):
        # A writer that forgot the forms: every refund part booked as cash under its key.
        return [
            c | {"method": "cash", "ticket_id": "", "component": "cash_refund"}
            for c in real(proposal_id, entry_id, player_id, *rest)
        ]

    monkeypatch.setattr(writers, "line_credits", as_cash)
    monkeypatch.setattr(writers, "_postgres", lambda: False)  # the Python writer, patched
    with pytest.raises(posting.PostingStopped, match="tickets"):
        posting.post_proposal(proposal.pk)
    proposal.refresh_from_db()
    assert proposal.status == PayoutProposal.Status.FAILED
    assert "the approved proposal 1 tickets" in proposal.posting_job.last_error


def test_the_statement_page_lists_each_credit_in_its_form(client, manager):
    proposal = _proposal(lines=3)
    posting.post_proposal(proposal.pk)
    client.force_login(manager)
    page = client.get(f"/proposals/{proposal.pk}/statement/e000001/").content.decode()
    credits = page.split('class="credits"')[1].split("</table>")[0]
    assert f"Ticket <code>{_ticket_of(proposal, 'e000001')}</code>" in credits
    assert "credit-form cash" not in credits  # the whole refund came back as the ticket


@pytest.mark.postgres
def test_the_ticket_key_sql_twin_builds_the_python_key():
    from django.db import connection

    from refunds_admin.db.keys import key_part_sql, ticket_key_sql

    sql = ticket_key_sql("v.p::text", key_part_sql("v.e"), key_part_sql("v.t"))
    for entry_id, ticket_id in [
        ("e1", "TKT-88121"),
        ("a/b c", "TKT 1/2"),
        ("玩家-00001", "票-7%"),
    ]:
        with connection.cursor() as cursor:
            cursor.execute(
                f"SELECT {sql} FROM (VALUES (%s, %s, %s)) AS v(p, e, t)", [12, entry_id, ticket_id]
            )
            assert cursor.fetchone()[0] == ticket_key(12, entry_id, ticket_id)


def _a_seat_worth_nothing(index, entry, tournament=""):
    """Entry 1 paid its $11.00 in cash and handed in a seat ticket worth 0.00 besides (a
    freeroll's seat, say); the others paid in cash."""
    if index == 1:
        return [
            {"method": "cash", "amount": "11.00"},
            {"method": "ticket", "amount": "0.00", "ticket_id": f"SEAT-{tournament}"},
        ]
    return None


@pytest.mark.parametrize("wallet", ["ledger", "cashier"])
def test_a_ticket_worth_nothing_is_given_back_as_that_ticket(wallet, request):
    """Found by the second operator's trial: the statement said the seat ticket was returned,
    but no credit ever named it, so the cashier never gave it back (credits of 0 were refused
    and skipped alike). A ticket is the thing itself: it goes back whatever its value."""
    if wallet == "cashier":
        request.getfixturevalue("with_cashier")
        cashier = request.getfixturevalue("cashier")
    proposal = make_approved_proposal(lines=3, paid_with=_a_seat_worth_nothing, schedule=False)
    seat = f"SEAT-{proposal.incident.tournament.external_id}"
    key = ticket_key(proposal.pk, "e000001", seat)
    assert expected_credits(proposal)[key] == ("ticket", seat, 0)
    _, lines, credits, cents = lines_summary(proposal)
    assert (lines, credits, cents) == lines_summary_in_python(proposal)[1:]
    assert credits == 1 + 1 + 2 * 2  # e1: cash + the seat; e2, e3: buy-in and fee in cash
    assert posting.post_proposal(proposal.pk) == "posted"
    booked = Credit.objects.get(key=key)
    assert (booked.method, booked.ticket_id, booked.amount_cents) == ("ticket", seat, 0)
    assert PostedTotal.objects.get(proposal=proposal).tickets == 1
    if wallet == "cashier":
        [body] = cashier.applied[key]
        assert (body["method"], body["ticket_id"], body["amount"]) == ("ticket", seat, "0.00")
        assert cashier.tickets[seat] == [key]
    [row] = selectors.reconcile([proposal.pk])
    assert row["ok"], row["problems"]


def _only_a_seat(index, entry, tournament=""):
    """Entry 1 played a freeroll on a seat ticket worth 0.00; the others paid in cash."""
    if index == 1:
        return [{"method": "ticket", "amount": "0.00", "ticket_id": f"SEAT-{tournament}"}]
    return None


def test_a_player_given_back_only_a_seat_ticket_is_told():
    """The statement goes to each player a line credits: with money, or with a ticket given
    back, a seat worth 0.00 too (the outbox left out every line whose total was 0)."""
    from django.db import connection, transaction
    from django.utils import timezone

    from refunds_admin.notifications import services as notifications
    from refunds_admin.notifications.adapters import WebhookNotifier
    from refunds_admin.notifications.models import StatementJob, StatementMessage
    from refunds_admin.notifications.statements import form_sentences

    proposal = make_approved_proposal(
        amounts=[(0, 0, 0, 0), (1000, 0, 0, 100), (0, 0, 0, 0)],
        paid_with=_only_a_seat,
        schedule=False,
    )
    assert posting.post_proposal(proposal.pk) == "posted"
    writers = [notifications._write_messages_in_python]
    if connection.vendor == "postgresql":
        writers.append(notifications._write_messages_in_sql)
    for write in writers:
        with transaction.atomic():
            job = StatementJob.objects.create(
                proposal=proposal, channel="webhook", endpoint="-", total=0
            )
            write(job, proposal, WebhookNotifier("http://127.0.0.1:9", "token"), timezone.now())
            told = dict(
                StatementMessage.objects.filter(job=job).values_list("player_id", "total_cents")
            )
            transaction.set_rollback(True)
        # p000003 played the freeroll without a ticket: nothing comes back, nothing to tell.
        assert told == {"p000001": 0, "p000002": 1100}, write.__name__
    seat = f"SEAT-{proposal.incident.tournament.external_id}"
    assert form_sentences(notifications.refund_forms(proposal.pk)["e000001"], "USD") == [
        f"Your ticket {seat} ($0.00) has been returned to your account"
    ]
