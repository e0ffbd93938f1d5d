"""The HTTP wallet adapter against a real (fake) cashier on 127.0.0.1: each credit applied
exactly once, whatever the cashier does."""

import time

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from refunds_admin.ledger import posting, selectors
from refunds_admin.ledger.models import CashierDelivery, PostingJob
from refunds_admin.ledger.wallets import CashierStopped, CashierUnavailable, CashierWallet
from tests.fake_cashier import FakeCashier
from tests.posting_support import expected_keys, make_approved_proposal

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
