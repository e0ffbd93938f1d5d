"""Wallet adapters: where credits end up.

- InternalLedger (default): the app's own Credit table is the wallet; booking is posting.
- CashierWallet (CASHIER_URL set): every credit is still booked in the ledger first, then sent to
  the operator's cashier (../shared/spec/cashier-api.md) with its key as Idempotency-Key; it
  counts as posted only once the cashier confirmed it (a CashierDelivery in state `applied`).

The cashier client uses only the standard library (http.client).
"""

import http.client
import json
import logging
import time
import urllib.parse
from dataclasses import dataclass

from django.conf import settings
from django.utils import timezone

from refunds_admin.payouts.money import format_cents, parse_amount

log = logging.getLogger(__name__)


class CashierStopped(Exception):
    """The cashier refuses our credentials (401/403): a configuration error, stop the job."""


class CashierUnavailable(Exception):
    """The cashier kept failing (5xx, 429, refused, unknown outcome); try the job again later."""


class InternalLedger:
    """The default wallet: a credit booked in the ledger is posted."""

    external = False

    def deliver(self, keys, proposal, heartbeat=None):
        return None


@dataclass
class Outcome:
    applied: bool
    cashier_credit_id: str = ""
    error: str = ""


class _Unknown(Exception):
    """The request was sent but no answer came back: it may have been applied."""


class _NotSent(Exception):
    """The request never reached the cashier (connection refused): safe to send again."""


class CashierWallet:
    """Sends credits to the operator's cashier, exactly once per key."""

    external = True

    def __init__(self, base_url, token, *, timeout=10.0, max_tries=8, backoff=0.5, max_wait=30.0):
        parsed = urllib.parse.urlsplit(base_url.rstrip("/"))
        self.scheme, self.host, self.port = parsed.scheme, parsed.hostname, parsed.port
        self.base_path = parsed.path
        self.token = token
        self.timeout = timeout
        self.max_tries = max_tries
        self.backoff = backoff
        self.max_wait = max_wait

    # -- one HTTP exchange ---------------------------------------------------------------------

    def _request(self, method, path, body=None, headers=None):
        """(status, json or None, headers). Raises _NotSent before sending, _Unknown after."""
        cls = http.client.HTTPSConnection if self.scheme == "https" else http.client.HTTPConnection
        conn = cls(self.host, self.port, timeout=self.timeout)
        try:
            try:
                conn.connect()
            except OSError as exc:  # refused, unreachable, connect timeout: nothing was sent
                raise _NotSent(str(exc) or type(exc).__name__) from exc
            all_headers = {"Authorization": f"Bearer {self.token}", "Accept": "application/json"}
            all_headers.update(headers or {})
            try:
                conn.request(method, self.base_path + path, body=body, headers=all_headers)
                response = conn.getresponse()
                raw = response.read()
            except (OSError, http.client.HTTPException) as exc:
                # Timeout or dropped connection after the request went out: outcome unknown.
                raise _Unknown(str(exc) or type(exc).__name__) from exc
            try:
                payload = json.loads(raw) if raw else None
            except ValueError:
                payload = None
            return response.status, payload, response.headers
        finally:
            conn.close()

    def _wait(self, attempt, retry_after=None):
        delay = min(self.max_wait, self.backoff * (2 ** (attempt - 1)))
        if retry_after:
            try:
                delay = min(self.max_wait, max(0.0, float(retry_after)))
            except ValueError:
                pass
        time.sleep(delay)

    # -- the protocol ----------------------------------------------------------------------------

    def status_of(self, key):
        """(applied, credit_id): applied is True, False (never applied: safe to send) or None (unknown)."""
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
            raise CashierStopped(f"cashier answered {status} to GET /credits/{{key}}")
        return None, ""

    def apply(self, key, body):
        """Apply one credit; ends applied, refused (Outcome.applied False), or raises."""
        data = json.dumps(body).encode()
        headers = {"Idempotency-Key": key, "Content-Type": "application/json"}
        must_ask_first = False
        for attempt in range(1, self.max_tries + 1):
            if must_ask_first:
                # The last request may have been applied: ask before sending it again.
                applied, credit_id = self.status_of(key)
                if applied:
                    return Outcome(True, credit_id)
                if applied is None:
                    self._wait(attempt)
                    continue
                must_ask_first = False
            try:
                status, payload, response_headers = self._request("POST", "/credits", data, headers)
            except _NotSent as exc:
                log.info("cashier not reachable for %s (%s); retrying", key, exc)
                self._wait(attempt)
                continue
            except _Unknown as exc:
                log.info(
                    "no answer from the cashier for %s (%s); asking before resending", key, exc
                )
                must_ask_first = True
                continue
            if status in (200, 201):
                return Outcome(True, str((payload or {}).get("credit_id", "")))
            if status in (409, 422):
                error = (payload or {}).get("error", "") or f"HTTP {status}"
                return Outcome(False, error=f"cashier refused ({status}): {error}")
            if status in (401, 403):
                raise CashierStopped(f"cashier refused our token ({status}): check CASHIER_TOKEN")
            if status == 429 or status >= 500:
                self._wait(attempt, response_headers.get("Retry-After"))
                continue
            return Outcome(False, error=f"cashier answered an unexpected {status}")
        raise CashierUnavailable(f"no confirmation for {key} after {self.max_tries} tries")

    def credits_for(self, reference_prefix):
        """What the cashier holds for a reference prefix, amounts in cents."""
        query = urllib.parse.urlencode({"reference_prefix": reference_prefix})
        try:
            status, payload, _ = self._request("GET", "/credits?" + query)
        except (_NotSent, _Unknown) as exc:
            raise CashierUnavailable(str(exc)) from exc
        if status != 200 or payload is None:
            raise CashierUnavailable(f"cashier answered {status} to the reconciliation query")
        return [
            {**c, "amount_cents": parse_amount(str(c["amount"]))}
            for c in payload.get("credits", [])
        ]

    # -- what the posting job calls ----------------------------------------------------------------

    def deliver(self, keys, proposal, heartbeat=None):
        """Send the credits with these keys that the cashier has not confirmed yet.

        `heartbeat()` is called every few credits: a slow cashier is not a dead worker."""
        from .models import CashierDelivery, Credit

        tournament = proposal.incident.tournament.external_id
        confirmed = set(
            CashierDelivery.objects.filter(
                credit_id__in=keys, state=CashierDelivery.State.APPLIED
            ).values_list("credit_id", flat=True)
        )
        pending = Credit.objects.filter(key__in=[k for k in keys if k not in confirmed])
        for number, credit in enumerate(pending):
            if heartbeat is not None and number % 20 == 0:
                heartbeat()
            body = {
                "player_id": credit.player_id,
                "currency": credit.currency,
                "amount": format_cents(credit.amount_cents),
                "reference": f"proposal {proposal.pk} / entry {credit.entry_id} / {credit.component}",
                "memo": f"Tournament {tournament} cancelled: {credit.get_component_display()}",
            }
            outcome = self.apply(credit.key, body)
            CashierDelivery.objects.update_or_create(
                credit=credit,
                defaults={
                    "state": CashierDelivery.State.APPLIED
                    if outcome.applied
                    else CashierDelivery.State.FAILED,
                    "cashier_credit_id": outcome.cashier_credit_id,
                    "error": outcome.error,
                    "updated_at": timezone.now(),
                },
            )


def cashier_from_settings():
    if not settings.CASHIER_URL:
        return None
    return CashierWallet(
        settings.CASHIER_URL,
        settings.CASHIER_TOKEN,
        timeout=settings.CASHIER_TIMEOUT,
        max_tries=getattr(settings, "CASHIER_MAX_TRIES", 8),
        backoff=getattr(settings, "CASHIER_BACKOFF", 0.5),
    )


def get_wallet():
    """The cashier when CASHIER_URL is set, otherwise the app's own ledger."""
    return cashier_from_settings() or InternalLedger()
