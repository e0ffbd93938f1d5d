"""Wallet adapters: where credits end up.

- InternalLedger: the app's own Credit table is the wallet; booking is posting.
- CashierWallet: every credit is still booked in the ledger first, then sent to the operator's
  cashier (../shared/spec/cashier-api.md) with its key as Idempotency-Key; it counts as posted
  only once the cashier confirmed it (a CashierDelivery in state `applied`).

Which one a job uses is decided at approval (the job's `wallet` and `wallet_identity`), never by
the settings of the process that happens to run it: `wallet_for_job()` refuses, with the reason,
when this process is not configured for the job's wallet.

The cashier client uses the standard library only: `CASHIER_CONCURRENCY` threads, each with its
own keep-alive `http.client` connection, so up to that many requests are in flight at once. A
`429 Retry-After` or a backoff sleeps in the one thread that got it; the others go on. The
threads only talk HTTP: every database write happens in the calling thread (`deliver`'s
`record` callback), a batch at a time.
"""

import http.client
import json
import logging
import threading
import time
import urllib.parse
from concurrent.futures import FIRST_COMPLETED, ThreadPoolExecutor, wait
from dataclasses import dataclass

from django.conf import settings

from refunds_admin.ledger.http import NotSent as _NotSent
from refunds_admin.ledger.http import Unknown as _Unknown
from refunds_admin.ledger.http import backoff_delay, json_or_none
from refunds_admin.payouts.money import AmountError, format_cents, parse_amount
from refunds_admin.proposals.posting_order import (
    CASHIER,
    LEDGER,
    configured_wallet,
    describe_wallet,
)

log = logging.getLogger(__name__)


class CashierStopped(Exception):
    """The cashier refuses our credentials (401/403): a configuration error, stop the job."""


class CashierRefused(Exception):
    """The cashier refused a credit (409/422): a human must look at it; the job stops."""


class CashierUnavailable(Exception):
    """The cashier kept failing (5xx, 429, refused connections, unknown outcome): the wallet is
    unavailable. The job waits and retries later without using up its attempts."""


class WalletNotConfigured(Exception):
    """This process is not configured for the job's wallet: it must not touch the job."""


class InternalLedger:
    """The app's own ledger: a credit booked in it is posted."""

    external = False
    name = LEDGER


@dataclass
class Outcome:
    applied: bool
    cashier_credit_id: str = ""
    error: str = ""
    status: int = 0


class _Halted(Exception):
    """Another credit stopped the delivery: this one was not sent (or not retried)."""


class CashierWallet:
    """Sends credits to the operator's cashier, exactly once per key, several at a time."""

    external = True
    name = CASHIER

    def __init__(
        self,
        base_url,
        token,
        *,
        timeout=10.0,
        max_tries=8,
        backoff=0.5,
        max_wait=30.0,
        concurrency=16,
    ):
        self.base_url = base_url.rstrip("/")
        parsed = urllib.parse.urlsplit(self.base_url)
        self.scheme, self.host, self.port = parsed.scheme, parsed.hostname, parsed.port
        self.base_path = parsed.path
        self.token = token
        self.timeout = timeout
        self.max_tries = max_tries
        self.backoff = backoff
        self.max_wait = max_wait
        self.concurrency = max(1, int(concurrency))
        self._local = threading.local()
        self._connections = []
        self._connections_lock = threading.Lock()

    # -- one HTTP exchange over this thread's keep-alive connection ------------------------------

    def _connection(self):
        conn = getattr(self._local, "conn", None)
        if conn is None:
            cls = (
                http.client.HTTPSConnection
                if self.scheme == "https"
                else http.client.HTTPConnection
            )
            conn = cls(self.host, self.port, timeout=self.timeout)
            try:
                conn.connect()
            except OSError as exc:  # refused, unreachable, connect timeout: nothing was sent
                conn.close()
                raise _NotSent(str(exc) or type(exc).__name__) from exc
            self._local.conn = conn
            with self._connections_lock:
                self._connections.append(conn)
        return conn

    def _drop_connection(self):
        conn = getattr(self._local, "conn", None)
        if conn is not None:
            conn.close()
            self._local.conn = None

    def close(self):
        """Close every keep-alive connection (each thread's)."""
        with self._connections_lock:
            for conn in self._connections:
                conn.close()
            self._connections.clear()

    def _request(self, method, path, body=None, headers=None):
        """(status, json or None, headers). Raises _NotSent before sending, _Unknown after."""
        conn = self._connection()
        all_headers = {"Authorization": f"Bearer {self.token}", "Accept": "application/json"}
        all_headers.update(headers or {})
        try:
            conn.request(method, self.base_path + path, body=body, headers=all_headers)
            response = conn.getresponse()
            raw = response.read()
        except (OSError, http.client.HTTPException) as exc:
            # Timeout, or the connection dropped after the request went out (or a keep-alive
            # connection the cashier had closed): the outcome is unknown.
            self._drop_connection()
            raise _Unknown(str(exc) or type(exc).__name__) from exc
        if response.will_close:
            self._drop_connection()
        return response.status, json_or_none(raw), response.headers

    def _delay(self, attempt, retry_after=None):
        """Capped exponential backoff; the cashier's Retry-After (seconds) wins when given."""
        return backoff_delay(attempt, self.backoff, self.max_wait, retry_after)

    def _sleep(self, delay, halt):
        """Sleep in this thread only; stop early when another credit halted the delivery.
        (Short sleeps rather than a timed Event.wait: the same behaviour, and it holds under a
        shifted clock such as the suite's libfaketime run.)"""
        deadline = time.monotonic() + delay
        while True:
            if halt is not None and halt.is_set():
                raise _Halted()
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return
            time.sleep(min(0.05, remaining))

    # -- the protocol ----------------------------------------------------------------------------

    def status_of(self, key):
        """(applied, credit_id): True, False (never applied: safe to send) or None (unknown)."""
        try:
            status, payload, _ = self._request(
                "GET", "/credits/" + urllib.parse.quote(key, safe="")
            )
        except (_NotSent, _Unknown):
            return None, ""
        if status == 200 and payload and payload.get("status") == "applied":
            return True, str(payload.get("credit_id", ""))
        if status == 404:
            return False, ""
        if status in (401, 403):
            raise CashierStopped(_refusal_text(status, payload, "GET /credits/{key}"))
        return None, ""

    def apply(self, key, body, halt=None):
        """Apply one credit. Returns an Outcome (applied, or refused by 409/422); raises
        CashierStopped (401/403) or CashierUnavailable after `max_tries` tries that failed for
        the wallet unavailable (5xx, 429, no connection, unknown outcome)."""
        data = json.dumps(body).encode()
        headers = {"Idempotency-Key": key, "Content-Type": "application/json"}
        must_ask_first = False
        last = "no answer"
        for attempt in range(1, self.max_tries + 1):
            if halt is not None and halt.is_set():
                raise _Halted()
            if must_ask_first:
                # The last request may have been applied: ask before sending it again.
                applied, credit_id = self.status_of(key)
                if applied:
                    return Outcome(True, credit_id, status=200)
                if applied is None:
                    last = "the cashier could not say whether it applied the credit"
                    self._sleep(self._delay(attempt), halt)
                    continue
                must_ask_first = False
            try:
                status, payload, response_headers = self._request("POST", "/credits", data, headers)
            except _NotSent as exc:
                last = f"cashier not reachable ({exc})"
                log.info("%s for %s; retrying", last, key)
                self._sleep(self._delay(attempt), halt)
                continue
            except _Unknown as exc:
                last = f"no answer from the cashier ({exc})"
                log.info("%s for %s; asking before resending", last, key)
                must_ask_first = True
                continue
            if status in (200, 201):
                return Outcome(True, str((payload or {}).get("credit_id", "")), status=status)
            if status in (409, 422):
                return Outcome(False, error=_refusal_text(status, payload), status=status)
            if status in (401, 403):
                raise CashierStopped(_refusal_text(status, payload) + ": check CASHIER_TOKEN")
            if status == 429 or status >= 500:
                last = f"cashier answered {status}"
                self._sleep(self._delay(attempt, response_headers.get("Retry-After")), halt)
                continue
            return Outcome(False, error=f"cashier answered an unexpected {status}", status=status)
        raise CashierUnavailable(f"no confirmation for {key} after {self.max_tries} tries: {last}")

    def credits_for(self, reference_prefix):
        """What the cashier holds for a reference prefix, amounts in cents."""
        query = urllib.parse.urlencode({"reference_prefix": reference_prefix})
        try:
            status, payload, _ = self._request("GET", "/credits?" + query)
        except (_NotSent, _Unknown) as exc:
            raise CashierUnavailable(str(exc)) from exc
        finally:
            self._drop_connection()
        if status in (401, 403):
            raise CashierStopped(_refusal_text(status, payload, "the reconciliation query"))
        if status != 200 or payload is None:
            raise CashierUnavailable(f"cashier answered {status} to the reconciliation query")
        held = []
        for credit in payload.get("credits", []):
            try:
                cents = parse_amount(str(credit["amount"]))
            except (AmountError, KeyError) as exc:
                raise CashierUnavailable(f"cashier sent an unreadable amount: {exc}") from exc
            held.append({**credit, "amount_cents": cents})
        return held

    # -- what the posting job calls --------------------------------------------------------------

    def _apply_or_halt(self, key, body, halt):
        """apply(), and stop the others at once on a refusal, a bad token or the cashier being
        unavailable."""
        try:
            outcome = self.apply(key, body, halt)
        except (CashierStopped, CashierUnavailable):
            halt.set()
            raise
        if not outcome.applied:
            halt.set()
        return outcome

    def deliver(self, items, *, record, heartbeat=None, flush_every=1.0, batch=500):
        """Send `items` (an iterable of (key, body), read lazily) with up to `concurrency`
        requests in flight: a slow or throttled credit never holds back the ones behind it.

        `record(results)` is called in this thread with [(key, Outcome), ...] every `batch`
        answers or `flush_every` seconds, and once at the end, so progress commits per batch.
        A refusal (409/422), a bad token (401/403) or the cashier being unavailable stops the
        delivery: nothing new is sent, requests in flight finish, what was confirmed is recorded, then
        CashierRefused / CashierStopped / CashierUnavailable is raised.
        """
        halt = threading.Event()
        stop: Exception | None = None
        done = []
        last_flush = time.monotonic()
        source = iter(items)
        window = self.concurrency * 2  # queued work per thread: enough to never idle
        pool = ThreadPoolExecutor(self.concurrency, thread_name_prefix="cashier")
        pending: dict = {}

        def refill():
            while len(pending) < window and not halt.is_set():
                try:
                    key, body = next(source)
                except StopIteration:
                    return
                pending[pool.submit(self._apply_or_halt, key, body, halt)] = key

        try:
            refill()
            while pending:
                finished, _ = wait(pending, timeout=flush_every, return_when=FIRST_COMPLETED)
                for future in finished:
                    key = pending.pop(future)
                    try:
                        outcome = future.result()
                    except _Halted:
                        continue
                    except (CashierStopped, CashierUnavailable) as exc:
                        stop = stop or exc
                        halt.set()
                        continue
                    done.append((key, outcome))
                    if not outcome.applied:
                        stop = stop or CashierRefused(
                            f"cashier refused credit {key}: {outcome.error}"
                        )
                        halt.set()
                if done and (len(done) >= batch or time.monotonic() - last_flush >= flush_every):
                    record(done)
                    done = []
                    last_flush = time.monotonic()
                elif heartbeat is not None and time.monotonic() - last_flush >= flush_every:
                    heartbeat()
                    last_flush = time.monotonic()
                refill()
        finally:
            halt.set()
            pool.shutdown(wait=True, cancel_futures=True)
            self.close()
        if done:
            record(done)
        if stop is not None:
            raise stop


def _refusal_text(status, payload, what="the credit"):
    reason = (payload or {}).get("error", "") if isinstance(payload, dict) else ""
    return f"cashier refused {what} ({status}): {reason or 'no reason given'}"


def credit_body(credit, proposal_id, tournament_external_id, component_label):
    """The JSON body of one credit (cashier-api.md): the amount formatted by payouts.money."""
    return {
        "player_id": credit["player_id"],
        "currency": credit["currency"],
        "amount": format_cents(credit["amount_cents"]),
        "reference": f"proposal {proposal_id} / entry {credit['entry_id']} / {credit['component']}",
        "memo": f"Tournament {tournament_external_id} cancelled: {component_label}",
    }


def cashier_at(base_url):
    """A CashierWallet for this base URL with this process's token and tuning."""
    return CashierWallet(
        base_url,
        settings.CASHIER_TOKEN,
        timeout=settings.CASHIER_TIMEOUT,
        max_tries=getattr(settings, "CASHIER_MAX_TRIES", 8),
        backoff=getattr(settings, "CASHIER_BACKOFF", 0.5),
        concurrency=getattr(settings, "CASHIER_CONCURRENCY", 16),
    )


def wallet_problem(wallet, identity):
    """Why this process must not post to (wallet, identity), or None when it may."""
    have, have_identity = configured_wallet()
    if wallet == CASHIER:
        if have != CASHIER:
            return (
                f"this job pays into {describe_wallet(wallet, identity)}, but this process has "
                "no CASHIER_URL: it refuses to touch the job, which waits for a process "
                "configured for that cashier"
            )
        if have_identity != identity:
            return (
                f"this job pays into {describe_wallet(wallet, identity)}, but this process is "
                f"configured for {describe_wallet(have, have_identity)}: it refuses to touch the "
                "job, which waits for a process configured for the job's cashier"
            )
        if not settings.CASHIER_TOKEN:
            return (
                f"this job pays into {describe_wallet(wallet, identity)}, but this process has "
                "no CASHIER_TOKEN: it refuses to touch the job"
            )
        return None
    if wallet == LEDGER:
        return None
    return f"the approval recorded no wallet ({wallet!r}): nothing can be posted"


def wallet_for_job(wallet, identity):
    """The adapter for a job's wallet; raises WalletNotConfigured (with the reason) when this
    process is not configured for it."""
    problem = wallet_problem(wallet, identity)
    if problem:
        raise WalletNotConfigured(problem)
    if wallet == CASHIER:
        return cashier_at(identity)
    have, have_identity = configured_wallet()
    if have == CASHIER:
        # Approved when the approving process had no CASHIER_URL: the job pays where it was
        # approved to (docs/posting.md, "Limits"), but operators should know.
        log.warning(
            "posting a job approved for the app's own ledger from a process configured for "
            "the cashier at %s: check that every process has the same CASHIER_URL",
            have_identity,
        )
    return InternalLedger()
