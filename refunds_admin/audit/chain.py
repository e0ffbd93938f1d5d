"""The audit as a hash chain: each event's `hash` is an HMAC-SHA256, under the chain's key
(settings.AUDIT_CHAIN_KEY), of its contents and the hash of the event before it (by id).
Changing, removing or slipping in an event breaks the chain at that point, which `verify()` (and
`manage.py verify_audit`) finds. The key is not in the database: its credentials alone (the app
role's, or a copy of the data) cannot compute a hash that fits, so an event appended that way is
found too. Events written before the chain was keyed carry the plain SHA-256 of the same text;
they may only come before the first keyed one.

Appending is serialised: on PostgreSQL `link()` takes a transaction-level advisory lock before it
reads the last hash, so concurrent transactions chain one after the other (the lock is held to
their commit, and the next one then sees the committed event); SQLite's writers are serialised
already (transaction mode IMMEDIATE).
"""

import hashlib
import hmac
import json

from django.conf import settings
from django.db import connection

from .models import AuditEvent

# pg_advisory_xact_lock key of the audit chain (any constant the app uses for nothing else).
CHAIN_LOCK = 0x61756469  # "audi"

FIELDS = (
    "created_at", "actor_id", "actor_name", "action", "object_type", "object_id",
    "tournament_external_id", "player_ids", "before", "after", "reason", "request_id", "ip",
)  # fmt: skip


def _text(event, prev_hash):
    """What an event's hash covers: its fields and the previous hash, as canonical JSON."""
    fields = {name: getattr(event, name) for name in FIELDS}
    fields["created_at"] = event.created_at.isoformat()
    canonical = json.dumps(
        [prev_hash, fields], sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str
    )
    return canonical.encode("utf-8")


def digest(event, prev_hash):
    """The event's hash: HMAC-SHA256 of its text under the chain's key."""
    key = settings.AUDIT_CHAIN_KEY.encode("utf-8")
    return hmac.new(key, _text(event, prev_hash), hashlib.sha256).hexdigest()


def unkeyed_digest(event, prev_hash):
    """The hash of an event written before the chain was keyed: SHA-256 of the same text."""
    return hashlib.sha256(_text(event, prev_hash)).hexdigest()


def link(event):
    """Set `event`'s prev_hash and hash from the last event (call just before it is inserted,
    inside the transaction that inserts it)."""
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_advisory_xact_lock(%s)", [CHAIN_LOCK])
    last = AuditEvent.objects.order_by("-id").values_list("hash", flat=True).first()
    event.prev_hash = last or ""
    event.hash = digest(event, event.prev_hash)


def verify(events):
    """Walk events in id order: (count, unchained_before, first_break) where first_break is
    None or (event id, what is wrong). Events written before the chain began (no hash) may only
    come first."""
    count = unchained = 0
    prev = None
    keyed = False  # a keyed event was seen: every later one must be keyed too
    for event in events:
        count += 1
        if not event.hash:
            if prev is not None:
                return count, unchained, (event.pk, "has no hash inside the chain")
            unchained += 1
            continue
        expected_prev = prev if prev is not None else event.prev_hash
        if prev is not None and event.prev_hash != prev:
            return (
                count,
                unchained,
                (
                    event.pk,
                    "does not follow the event before it (an event was removed or slipped in)",
                ),
            )
        if hmac.compare_digest(digest(event, expected_prev), event.hash):
            keyed = True
        elif keyed or unkeyed_digest(event, expected_prev) != event.hash:
            what = "was changed after it was written, or written without the chain's key"
            return count, unchained, (event.pk, what)
        if prev is None and unchained == 0 and event.prev_hash:
            return count, unchained, (event.pk, "is the first event but names a previous one")
        prev = event.hash
    return count, unchained, None
