"""The HTTP wallet adapter against a real (fake) cashier on 127.0.0.1: each credit applied
exactly once, whatever the cashier does."""

import time

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from refunds_admin.ledger import posting, selectors
from refunds_admin.ledger.models import CashierDelivery, PostingJob
from refunds_admin.ledger.wallets import CashierStopped, CashierUnavailable, CashierWallet
from tests.support.fake_cashier import FakeCashier
from tests.support.posting_support import expected_keys, make_approved_proposal

BODY = {"player_id": "p1", "currency": "USD", "amount": "815.33", "reference": "proposal 1 / e1"}


@pytest.fixture
def cashier():
    with FakeCashier(ignore_keys=True) as fake:
        yield fake


def wallet_for(fake, **options):
    options = {"timeout": 0.3, "backoff": 0.01, "max_tries": 6} | options
    return CashierWallet(fake.url, fake.token, **options)


def test_it_applies_each_credit_once_through_errors_timeouts_and_drops(cashier):
    # This cashier even ignores the Idempotency-Key: a blind resend would pay twice.
    cashier.script = {
        "k-500": ["500", "500"],
        "k-drop": ["drop"],
        "k-timeout": ["timeout"],
        "k-429": ["429"],
        "k-mixed": ["500", "drop", "500"],
        "k-ok": [],
    }
    wallet = wallet_for(cashier)
    for key in list(cashier.script):
        outcome = wallet.apply(key, BODY | {"reference": f"ref {key}"})
        assert outcome.applied and outcome.cashier_credit_id == f"cc-{key}", key
    assert {key: cashier.times_applied(key) for key in cashier.script} == dict.fromkeys(
        cashier.script, 1
    )


def test_it_honours_retry_after(cashier):
    cashier.script = {"k": ["429"]}
    started = time.monotonic()
    assert wallet_for(cashier).apply("k", BODY).applied
    assert time.monotonic() - started >= 0.3  # the cashier asked for 0.3 s; our backoff is 0.01


def test_it_marks_a_refused_credit_for_a_human_and_never_resends_it(cashier):
    cashier.script = {"k-409": ["409"], "k-422": ["422"]}
    wallet = wallet_for(cashier)
    for key in ("k-409", "k-422"):
        outcome = wallet.apply(key, BODY)
        assert not outcome.applied and "refused" in outcome.error
        assert cashier.posts[key] == 1 and cashier.times_applied(key) == 0


def test_it_stops_on_a_bad_token(cashier):
    with pytest.raises(CashierStopped):
        CashierWallet(cashier.url, "wrong", timeout=0.3).apply("k", BODY)
    assert cashier.applied == {}


def test_it_gives_up_for_now_when_the_cashier_is_unreachable():
    wallet = CashierWallet("http://127.0.0.1:9/api", "t", timeout=0.3, backoff=0.01, max_tries=3)
    with pytest.raises(CashierUnavailable):
        wallet.apply("k", BODY)


@pytest.fixture
def cashier_settings(settings, cashier):
    settings.CASHIER_URL = cashier.url
    settings.CASHIER_TOKEN = cashier.token
    settings.CASHIER_TIMEOUT = 0.3
    settings.CASHIER_BACKOFF = 0.01
    settings.POSTING_CHUNK_SIZE = 3
    settings.CASHIER_CONCURRENCY = 4
    return settings


@pytest.mark.django_db
def test_it_posts_a_proposal_to_the_cashier_and_reconciles(cashier, cashier_settings):
    proposal = make_approved_proposal(amounts=[(1000, 0, 250, 100), (0, 0, 0, 0)] * 4)
    keys = sorted(expected_keys(proposal))
    cashier.script = {keys[0]: ["500"], keys[1]: ["drop"], keys[4]: ["timeout"]}

    assert posting.post_proposal(proposal.pk) == "posted"
    assert {key: cashier.times_applied(key) for key in keys} == dict.fromkeys(keys, 1)
    assert CashierDelivery.objects.filter(state="applied").count() == len(keys) == 12
    progress = selectors.posting_progress(proposal)
    assert (progress["posted"], progress["posted_cents"]) == (12, proposal.total_cents)
    amount = cashier.applied[f"proposal-{proposal.pk}/e000001/chip_equity"][0]["amount"]
    assert amount == "2.50"

    [row] = selectors.reconcile()
    assert row["ok"] and row["cashier_cents"] == proposal.total_cents
    call_command("reconcile")  # exits 0

    # The cashier loses a credit: reconciliation says so and the command fails.
    del cashier.applied[keys[2]]
    [row] = selectors.reconcile()
    assert not row["ok"] and "1 missing" in row["problems"][0]
    with pytest.raises(CommandError):
        call_command("reconcile")


@pytest.mark.django_db
def test_it_fails_the_job_on_a_refused_credit_until_a_manager_resumes_it(
    cashier, cashier_settings, manager
):
    proposal = make_approved_proposal(lines=4)
    keys = sorted(expected_keys(proposal))
    cashier.script = {keys[3]: ["422"]}

    with pytest.raises(posting.PostingStopped):
        posting.post_proposal(proposal.pk)
    job = PostingJob.objects.get(proposal=proposal)
    # Stopped at once, with the cashier's own reason.
    assert job.state == "failed"
    assert f"cashier refused credit {keys[3]}" in job.last_error
    assert "(422): refused (422)" in job.last_error
    assert CashierDelivery.objects.get(credit_id=keys[3]).state == "failed"
    # Only what the cashier confirmed counts as posted.
    assert job.posted == CashierDelivery.objects.filter(state="applied").count() < len(keys)

    # The account was fixed at the cashier; a manager resumes the job.
    posting.resume_posting(proposal, acting_user=manager)
    assert posting.post_proposal(proposal.pk) == "posted"
    assert {key: cashier.times_applied(key) for key in keys} == dict.fromkeys(keys, 1)


@pytest.mark.django_db
def test_it_stops_the_job_when_the_cashier_refuses_our_token(cashier, cashier_settings):
    cashier_settings.CASHIER_TOKEN = "revoked"
    proposal = make_approved_proposal(lines=5)
    with pytest.raises(posting.PostingStopped):
        posting.post_proposal(proposal.pk)
    job = PostingJob.objects.get(proposal=proposal)
    assert job.state == "failed" and "CASHIER_TOKEN" in job.last_error
    assert "(401): bad token" in job.last_error  # the cashier's reason
    # Nothing new is sent after the refusal: at most the requests already in flight.
    assert sum(cashier.posts.values()) <= cashier_settings.CASHIER_CONCURRENCY
    assert cashier.applied == {}


def test_it_keeps_other_requests_going_while_one_waits_for_retry_after():
    with FakeCashier(retry_after="1.0") as fake:
        fake.script = {"k-slow": ["429"]}
        wallet = CashierWallet(fake.url, fake.token, timeout=2, backoff=0.01, concurrency=4)
        items = [("k-slow", BODY)] + [(f"k-{i}", BODY | {"reference": f"r{i}"}) for i in range(40)]
        finished = {}
        started = time.monotonic()

        def record(results):
            for key, outcome in results:
                assert outcome.applied
                finished[key] = time.monotonic() - started

        wallet.deliver(items, record=record, flush_every=0.05, batch=1)
    assert len(finished) == 41 and fake.duplicates() == 0
    # The 40 others were confirmed while k-slow slept its Retry-After second in its own thread.
    others = max(t for key, t in finished.items() if key != "k-slow")
    assert others < 0.9 <= 1.0 <= finished["k-slow"]
    assert fake.posts["k-slow"] == 2


# -- methods and tickets -------------------------------------------------------------


def _credit(component, method="cash", ticket_id="", cents=5500):
    return {
        "entry_id": "e1",
        "player_id": "p1",
        "currency": "USD",
        "amount_cents": cents,
        "component": component,
        "method": method,
        "ticket_id": ticket_id,
    }


def test_the_body_names_the_form_of_the_refund_and_cash_stays_as_it_was():
    from refunds_admin.ledger.wallets import credit_body

    cash = credit_body(_credit("buy_in_refund"), 12, "UP-1", "Buy-in refund")
    assert cash == {
        "player_id": "p1",
        "currency": "USD",
        "amount": "55.00",
        "reference": "proposal 12 / entry e1 / buy_in_refund",
        "memo": "Tournament UP-1 cancelled: Buy-in refund",
    }  # no method: cash, the very body older keys were sent with
    money = credit_body(_credit("tournament_money", "tournament_money"), 12, "UP-1", "x")
    assert money["method"] == "tournament_money" and "ticket_id" not in money
    ticket = credit_body(_credit("ticket", "ticket", "TKT-88121"), 12, "UP-1", "x")
    assert (ticket["method"], ticket["ticket_id"], ticket["amount"]) == (
        "ticket",
        "TKT-88121",
        "55.00",
    )
    assert ticket["memo"] == "Tournament UP-1 cancelled: ticket TKT-88121 returned"
    with pytest.raises(ValueError, match="ticket without ticket_id"):
        credit_body(_credit("ticket", "ticket", ""), 12, "UP-1", "x")


TICKET = BODY | {"amount": "55.00", "method": "ticket", "ticket_id": "TKT-88121"}


def test_a_ticket_is_returned_once_whatever_the_retries():
    with FakeCashier() as fake:  # this one honours keys, as the spec says
        fake.script = {"k-t": ["500", "drop", "429"]}
        wallet = wallet_for(fake)
        assert wallet.apply("k-t", TICKET).applied
        again = wallet.apply("k-t", TICKET)  # a retry under the same key: nothing new
        assert again.applied and again.status == 200
        assert fake.tickets == {"TKT-88121": ["k-t"]} and fake.ticket_duplicates() == 0


def test_a_ticket_the_cashier_cannot_return_is_refused_with_its_reason_never_paid_as_cash():
    with FakeCashier() as fake:
        fake.unknown_tickets = {"TKT-404"}
        wallet = wallet_for(fake)
        assert wallet.apply("k-1", TICKET).applied
        # The same ticket under another key: already returned.
        twice = wallet.apply("k-2", TICKET)
        assert (twice.applied, twice.status) == (False, 422)
        assert "ticket TKT-88121 was already returned" in twice.error
        unknown = wallet.apply("k-3", TICKET | {"ticket_id": "TKT-404"})
        assert (unknown.applied, unknown.status) == (False, 422)
        assert "unknown ticket TKT-404" in unknown.error
        # Nothing went out as cash instead: one application, the ticket.
        assert fake.total_cents(method="cash") == 0
        assert fake.total_cents(method="ticket") == 5500
        assert sorted(fake.applied) == ["k-1"]


def test_the_fake_cashier_itself_reports_a_ticket_returned_twice():
    # A blind cashier (keys ignored) re-issues a ticket resent under its key: the figure the
    # fault tests assert stays 0 counts exactly that.
    with FakeCashier(ignore_keys=True) as fake:
        wallet = wallet_for(fake)
        wallet.apply("k-t", TICKET)
        wallet.apply("k-t", TICKET)
        assert fake.ticket_duplicates() == 1
