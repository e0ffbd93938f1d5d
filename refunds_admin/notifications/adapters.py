"""Where player statements go: the operator's messaging webhook, or Django's e-mail backend.

Both answer `send(message, content)` with an Outcome: sent (with the remote id), refused (a
definite "no": needs a human), or raise NotifierStopped (our credentials are refused: stop the
job) / NotifierUnavailable (kept failing: the job retries later).

The webhook client follows the cashier adapter's rules (ledger/wallets.py, design.md convention
13): the Idempotency-Key is the same on every try; a refused connection is safe to send again;
after a timeout or a dropped answer the outcome is unknown, so it asks (GET) before sending
again; 429 and 5xx wait (Retry-After in seconds or as an HTTP date, else exponential backoff)
and retry; 409/422 is a refusal for a human; 401/403 stops the job. Both use the client of
ledger/http.py (urllib3): a pool of keep-alive connections, one per sending thread, reused across
batches (a 100k-player posting is 100k requests), urllib3's Retry for what is safe to send
again, and the ask-before-sending-again loop below for what is not.
"""

import logging
import smtplib
import threading
import time
import urllib.parse
from dataclasses import dataclass

import orjson
from django.conf import settings
from django.core.mail import EmailMultiAlternatives, get_connection

from refunds_admin.ledger.http import NotSent as _NotSent
from refunds_admin.ledger.http import ServiceClient, Tries, backoff_delay
from refunds_admin.ledger.http import Unknown as _Unknown

from .models import Channel

log = logging.getLogger(__name__)


class NotifierStopped(Exception):
    """The messaging service refuses our credentials (401/403): stop the job, fix the config."""


class NotifierUnavailable(Exception):
    """The messaging service kept failing (5xx, 429, refused, unknown outcome): retry later."""


@dataclass
class Outcome:
    sent: bool
    remote_id: str = ""
    error: str = ""


@dataclass
class Content:
    subject: str
    text: str
    html: str


class WebhookNotifier:
    """POST {NOTIFY_URL}/messages, keyed by player id (docs/notifications.md)."""

    channel = Channel.WEBHOOK
    claims_before_sending = False  # idempotent: a resend under the same key is harmless
    # What `address_for` returns, for the outbox written in SQL (services._ADDRESS_SQL).
    address_source = "player_id"

    def __init__(
        self,
        base_url,
        token,
        *,
        timeout=10.0,
        max_tries=8,
        backoff=0.5,
        max_wait=30.0,
        connections=8,
    ):
        self.endpoint = base_url.rstrip("/") + "/messages"
        self.token = token
        self.timeout = timeout
        self.max_tries = max_tries
        self.backoff = backoff
        self.max_wait = max_wait
        # One keep-alive connection per sending thread (NOTIFY_CONCURRENCY), reused across batches.
        self.client = ServiceClient(
            base_url,
            token,
            timeout=timeout,
            connections=connections,
            backoff=backoff,
            max_wait=max_wait,
        )

    def address_for(self, player_id, email):
        """The webhook is keyed by player id: every player has an address."""
        return player_id

    def close(self):
        """Close every connection (the job is over)."""
        self.client.close()

    def _request(self, method, path, body=None, headers=None, tries=None):
        """(status, json or None, headers). Raises _NotSent before sending, _Unknown after."""
        return self.client.request(method, path, body=body, headers=headers, tries=tries)

    def _wait(self, attempt):
        time.sleep(backoff_delay(attempt, self.backoff, self.max_wait))

    # -- the protocol ------------------------------------------------------------------------------

    def status_of(self, key, tries=None):
        """(delivered, id): True, False (never received: safe to send) or None (unknown)."""
        try:
            status, payload, _ = self._request(
                "GET", "/messages/" + urllib.parse.quote(key, safe=""), tries=tries
            )
        except (_NotSent, _Unknown):
            return None, ""
        if status == 200 and payload is not None:
            return True, str(payload.get("message_id", ""))
        if status == 404:
            return False, ""
        if status in (401, 403):
            raise NotifierStopped(f"messaging webhook answered {status}: check NOTIFY_TOKEN")
        return None, ""

    def send(self, message, content):
        body = orjson.dumps(
            {
                "player_id": message.player_id,
                "subject": content.subject,
                "text": content.text,
                "html": content.html,
                "reference": f"proposal {message.proposal_id}",
            }
        )
        key = message.idempotency_key
        headers = {"Idempotency-Key": key, "Content-Type": "application/json"}
        tries = Tries(self.max_tries)
        must_ask_first = False
        while tries.left > 0:
            if must_ask_first:
                # The last request may have been delivered: ask before sending it again.
                delivered, remote_id = self.status_of(key, tries)
                if delivered:
                    return Outcome(True, remote_id)
                if delivered is None:
                    self._wait(tries.spent)
                    continue
                must_ask_first = False
                if tries.left == 0:
                    break
            try:
                status, payload, response_headers = self._request(
                    "POST", "/messages", body, headers, tries
                )
            except _NotSent as exc:  # urllib3 tried again until the tries ran out
                log.info("messaging webhook not reachable for %s (%s)", key, exc)
                continue
            except _Unknown as exc:
                log.info("no answer from the webhook for %s (%s); asking first", key, exc)
                must_ask_first = True
                continue
            if status in (200, 201, 202):
                return Outcome(True, str((payload or {}).get("message_id", "")))
            if status in (409, 422):
                error = (payload or {}).get("error", "") or f"HTTP {status}"
                return Outcome(False, error=f"webhook refused ({status}): {error}")
            if status in (401, 403):
                raise NotifierStopped(f"messaging webhook refused our token ({status})")
            if status == 429 or status >= 500:
                continue  # urllib3 waited and sent it again until the tries ran out
            return Outcome(False, error=f"webhook answered an unexpected {status}")
        raise NotifierUnavailable(f"no confirmation for {key} after {self.max_tries} tries")


class EmailNotifier:
    """Django's e-mail backend, for players whose snapshot entry carries `email`.

    SMTP has no idempotency key and no way to ask whether a message arrived, so the job marks a
    message `sending` before handing it over: a worker killed in between leaves it `sending`,
    and the next run lists it as failed ("outcome unknown") for a manager to check and retry,
    rather than e-mailing the player twice.
    """

    channel = Channel.EMAIL
    claims_before_sending = True
    # What `address_for` returns, for the outbox written in SQL (services._ADDRESS_SQL).
    address_source = "email"

    def __init__(self):
        self.endpoint = settings.EMAIL_BACKEND
        self._local = threading.local()

    def address_for(self, player_id, email):
        return email or ""

    def close(self):
        conn = getattr(self._local, "conn", None)
        if conn is not None:
            conn.close()
            self._local.conn = None

    def send(self, message, content):
        conn = getattr(self._local, "conn", None)
        if conn is None:
            conn = self._local.conn = get_connection()
            conn.open()
        email = EmailMultiAlternatives(
            subject=content.subject,
            body=content.text,
            to=[message.address],
            connection=conn,
            headers={"X-Idempotency-Key": message.idempotency_key},
        )
        email.attach_alternative(content.html, "text/html")
        try:
            email.send()
        except smtplib.SMTPRecipientsRefused as exc:  # a definite "no" for this address
            return Outcome(False, error=f"e-mail refused: {exc}")
        except OSError as exc:  # the server is down or dropped us (SMTPException is an OSError)
            self.close()
            raise NotifierUnavailable(f"e-mail backend: {exc}") from exc
        except Exception as exc:  # SMTPRecipientsRefused and the like: a definite refusal
            return Outcome(False, error=f"e-mail refused: {exc}")
        return Outcome(True, "")


def notifier_for(channel):
    if channel == Channel.WEBHOOK:
        if not settings.NOTIFY_URL:
            raise NotifierStopped("the webhook channel needs NOTIFY_URL")
        return WebhookNotifier(
            settings.NOTIFY_URL,
            settings.NOTIFY_TOKEN,
            timeout=settings.NOTIFY_TIMEOUT,
            max_tries=settings.NOTIFY_MAX_TRIES,
            backoff=settings.NOTIFY_BACKOFF,
            connections=settings.NOTIFY_CONCURRENCY,
        )
    return EmailNotifier()


def configured_channel():
    return settings.STATEMENT_CHANNEL
