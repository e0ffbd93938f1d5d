"""The HTTP client of the cashier and the messaging webhook (ledger/http.py, urllib3) against a
real server on 127.0.0.1 writing raw bytes (tests/support/raw_http.py): framing a body without
Content-Length, interim answers, Retry-After in seconds and as a date, one kept-alive
connection, and never a blind resend of a POST whose outcome is unknown. Each case runs through
both adapters: a credit to the cashier, a statement to the webhook."""

import time
from types import SimpleNamespace

import pytest

from refunds_admin.ledger.wallets import CashierUnavailable, CashierWallet
from refunds_admin.notifications.adapters import Content, NotifierUnavailable, WebhookNotifier
from tests.support import raw_http
from tests.support.raw_http import RawHTTPServer

BODY = {"player_id": "p1", "currency": "USD", "amount": "12.50", "reference": "proposal 1 / e1"}
CONTENT = Content(subject="Your refund", text="USD 12.50", html="<p>USD 12.50</p>")


class Cashier:
    """A credit to the cashier: (applied, the cashier's credit id)."""

    prefix = "cc-"
    unavailable = CashierUnavailable

    def __init__(self, url, **options):
        self.adapter = CashierWallet(url, "t", concurrency=1, **options)

    def send(self, key):
        outcome = self.adapter.apply(key, BODY)
        return outcome.applied, outcome.cashier_credit_id


class Webhook:
    """A player's statement to the messaging webhook: (sent, the webhook's message id)."""

    prefix = "m-"
    unavailable = NotifierUnavailable

    def __init__(self, url, **options):
        self.adapter = WebhookNotifier(url, "t", connections=1, **options)

    def send(self, key):
        message = SimpleNamespace(player_id="p1", proposal_id=1, idempotency_key=key)
        outcome = self.adapter.send(message, CONTENT)
        return outcome.sent, outcome.remote_id


@pytest.fixture(params=[Cashier, Webhook], ids=["cashier", "webhook"])
def service(request):
    """(server, client): a raw server and one of the two adapters pointed at it, with a
    backoff so short (10 ms) that only an honoured Retry-After can make a request wait."""
    with RawHTTPServer() as server:
        client = request.param(server.url, timeout=2.0, backoff=0.01, max_tries=4)
        yield server, client
        client.adapter.close()


def test_a_body_without_content_length_is_read_to_the_close_then_a_new_connection_serves(
    service,
):
    server, client = service
    server.script = [raw_http.close_delimited]
    assert client.send("k1") == (True, client.prefix + "k1")
    # The bytes of that body were not left in a reused socket to be read as the next answer.
    assert client.send("k2") == (True, client.prefix + "k2")
    assert server.accepted == 2
    assert [(r.method, r.connection) for r in server.requests] == [("POST", 1), ("POST", 2)]


def test_interim_answers_are_skipped_and_never_taken_for_the_answer(service):
    server, client = service
    server.script = [raw_http.after_interim, raw_http.after_interim]
    assert client.send("k1") == (True, client.prefix + "k1")
    assert client.send("k2") == (True, client.prefix + "k2")  # not k1's answer, left behind
    assert client.send("k3") == (True, client.prefix + "k3")
    assert server.methods() == ["POST"] * 3 and server.accepted == 1


@pytest.mark.parametrize(
    "answer", [raw_http.chunked, raw_http.folded_headers], ids=["chunked", "a folded header"]
)
def test_an_answer_chunked_or_with_a_folded_header_is_read_whole_and_the_connection_kept(
    service, answer
):
    server, client = service
    server.script = [answer, answer]
    assert client.send("k1") == (True, client.prefix + "k1")
    assert client.send("k2") == (True, client.prefix + "k2")
    assert client.send("k3") == (True, client.prefix + "k3")  # not a byte of k2's left behind
    assert server.accepted == 1


def test_connection_close_is_honoured_and_the_next_request_opens_a_new_connection(service):
    server, client = service
    server.script = [raw_http.close_after]
    assert client.send("k1") == (True, client.prefix + "k1")
    assert client.send("k2") == (True, client.prefix + "k2")
    assert [(r.method, r.connection) for r in server.requests] == [("POST", 1), ("POST", 2)]


def test_retry_after_in_seconds_is_waited_for(service):
    server, client = service
    server.script = [raw_http.unavailable_for(1)]
    assert client.send("k1") == (True, client.prefix + "k1")
    first, second = server.requests
    assert (first.method, second.method) == ("POST", "POST")  # a 503 is an answer: sent again
    assert second.at - first.at >= 0.95  # the service's second, not our 10 ms backoff


def test_retry_after_as_an_http_date_is_waited_for(service):
    server, client = service
    # A date two seconds ahead, to the second: the wait is more than one second.
    server.script = [raw_http.unavailable_until(2)]
    assert client.send("k1") == (True, client.prefix + "k1")
    first, second = server.requests
    assert second.at - first.at >= 0.9


def test_one_connection_is_kept_alive_across_requests(service):
    server, client = service
    for n in range(6):
        assert client.send(f"k{n}") == (True, client.prefix + f"k{n}")
    assert server.accepted == 1
    assert {r.connection for r in server.requests} == {1}


def test_a_post_without_an_answer_is_never_sent_again_before_asking(service):
    server, client = service
    server.script = [raw_http.drop, raw_http.found]
    # The service applied it and the answer was lost: asked, and not sent a second time.
    assert client.send("k1") == (True, client.prefix + "k1")
    assert server.methods() == ["POST", "GET"]
    assert server.requests[1].path.endswith("/k1")


def test_a_post_the_service_never_received_is_sent_again_after_asking(service):
    server, client = service

    def never_received(request):
        return raw_http.response(404, "Not Found", b'{"error": "unknown key"}'), False

    server.script = [raw_http.drop, never_received]
    assert client.send("k1") == (True, client.prefix + "k1")
    assert server.methods() == ["POST", "GET", "POST"]


def test_every_request_counts_against_the_tries_and_then_the_service_is_unavailable(service):
    server, client = service
    server.script = [raw_http.unavailable_for(0)] * 10
    started = time.monotonic()
    with pytest.raises(client.unavailable):
        client.send("k1")
    # urllib3's retries and the adapter's loop share one budget: max_tries requests in all.
    assert server.methods() == ["POST"] * 4
    assert time.monotonic() - started < 2
