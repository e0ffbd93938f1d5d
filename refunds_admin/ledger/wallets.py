"""Wallet adapters: where credits end up.

- InternalLedger: the app's own Credit table is the wallet; booking is posting.
- CashierWallet: every credit is still booked in the ledger first, then sent to the operator's
  cashier (../shared/spec/cashier-api.md) with its key as Idempotency-Key; it counts as posted
  only once the cashier confirmed it (a CashierDelivery in state `applied`).

Which one a job uses is decided at approval (the job's `wallet` and `wallet_identity`), never by
the settings of the process that happens to run it: `wallet_for_job()` refuses, with the reason,
when this process is not configured for the job's wallet.

The cashier client is urllib3 (ledger/http.py): `CASHIER_CONCURRENCY` threads share a pool of
as many keep-alive connections, so up to that many requests are in flight at once. A `429
Retry-After` or a backoff sleeps in the one thread that got it (its connection goes back to the
pool); the others go on. The threads only talk HTTP: every database write happens in the
calling thread (`deliver`'s `record` callback), a batch at a time.
"""

import json
import logging
import threading
import time
import urllib.parse
from concurrent.futures import FIRST_COMPLETED, ThreadPoolExecutor, wait
from dataclasses import dataclass

from django.conf import settings

from refunds_admin.ledger.http import Halted as _Halted
from refunds_admin.ledger.http import NotSent as _NotSent
from refunds_admin.ledger.http import ServiceClient, Tries, backoff_delay, pause
from refunds_admin.ledger.http import Unknown as _Unknown
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
        self.token = token
        self.timeout = timeout
        self.max_tries = max_tries
        self.backoff = backoff
        self.max_wait = max_wait
        self.concurrency = max(1, int(concurrency))
        # One connection per sending thread, kept alive across the whole delivery.
        self.client = ServiceClient(
            self.base_url,
            token,
            timeout=timeout,
            connections=self.concurrency,
            backoff=backoff,
            max_wait=max_wait,
        )

    # -- HTTP (ledger/http.py: urllib3, one pool of keep-alive connections) ---------------------

    def close(self):
        """Close every keep-alive connection (the delivery is over)."""
        self.client.close()

    def _request(self, method, path, body=None, headers=None, tries=None):
        """(status, json or None, headers). Raises _NotSent before sending, _Unknown after."""
        return self.client.request(method, path, body=body, headers=headers, tries=tries)

    def _delay(self, attempt):
        """The wait before asking again whether a credit landed: capped exponential backoff."""
        return backoff_delay(attempt, self.backoff, self.max_wait)

    def _sleep(self, delay, halt):
        """Sleep in this thread only; stop early when another credit halted the delivery."""
        pause(delay, halt)

    # -- the protocol ----------------------------------------------------------------------------

    def status_of(self, key, tries=None):
        """(applied, credit_id): True, False (never applied: safe to send) or None (unknown)."""
        try:
            status, payload, _ = self._request(
                "GET", "/credits/" + urllib.parse.quote(key, safe=""), tries=tries
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
        CashierStopped (401/403) or CashierUnavailable after `max_tries` requests that failed
        for the wallet unavailable (5xx, 429, no connection, unknown outcome).

        urllib3 sends again what is safe to (a refused connection, a 429 or 5xx answer, with
        Retry-After); a POST that was sent and not answered comes back here as _Unknown, and
        this loop asks the cashier whether it applied the credit before sending it again."""
        data = json.dumps(body).encode()
        headers = {"Idempotency-Key": key, "Content-Type": "application/json"}
        tries = Tries(self.max_tries, halt)
        must_ask_first = False
        last = "no answer"
        while tries.left > 0:
            if halt is not None and halt.is_set():
                raise _Halted()
            if must_ask_first:
                # The last request may have been applied: ask before sending it again.
                applied, credit_id = self.status_of(key, tries)
                if applied:
                    return Outcome(True, credit_id, status=200)
                if applied is None:
                    last = "the cashier could not say whether it applied the credit"
                    self._sleep(self._delay(tries.spent), halt)
                    continue
                must_ask_first = False
                if tries.left == 0:
                    break
            try:
                status, payload, response_headers = self._request(
                    "POST", "/credits", data, headers, tries
                )
            except _NotSent as exc:  # urllib3 tried again until the tries ran out
                last = f"cashier not reachable ({exc})"
                log.info("%s for %s", last, key)
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
                # urllib3 waited (Retry-After or the backoff) and sent it again until the tries
                # ran out: the cashier is unavailable.
                last = f"cashier answered {status}"
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
            self.close()  # a reconciliation asks once; no connection is left open
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
    """The JSON body of one credit (cashier-api.md): the amount formatted by payouts.money.

    Cash carries no `method` (the spec's default, and the body of every credit before methods
    existed, so a retry of an old key sends the very same body); tournament money and tickets
    name theirs, a ticket its `ticket_id` (its amount is the ticket's value). Nothing here ever
    turns a ticket or tournament money into cash."""
    method = credit.get("method") or "cash"
    ticket_id = credit.get("ticket_id") or ""
    reference = f"proposal {proposal_id} / entry {credit['entry_id']} / {credit['component']}"
    memo = f"Tournament {tournament_external_id} cancelled: {component_label}"
    body = {
        "player_id": credit["player_id"],
        "currency": credit["currency"],
        "amount": format_cents(credit["amount_cents"]),
        "reference": reference,
        "memo": memo,
    }
    if method == "ticket":
        if not ticket_id:
            raise ValueError(f"credit of entry {credit['entry_id']}: a ticket without ticket_id")
        body.update(
            method="ticket",
            ticket_id=ticket_id,
            reference=f"{reference} {ticket_id}",
            memo=f"Tournament {tournament_external_id} cancelled: ticket {ticket_id} returned",
        )
    elif method != "cash":
        body["method"] = method
    return body


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
