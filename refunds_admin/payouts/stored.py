"""A validated snapshot in a compact form to keep beside its document, so that preparing a
proposal does not parse and validate a 100k-entry document again.

The document stays the record: it is what was received, what an auditor replays, and what this
form is derived from at import, in the same transaction. This form is only a faster way back to
the very same `Snapshot`: `load(dump(s)) == s` (tests/engine/test_stored_snapshot.py). Columns travel as
JSON arrays, which orjson reads about ten times faster than the entry objects of the document,
and zlib at its fastest level makes them small (about a sixth) for the database.

`FORM` names the layout. A stored form of another layout (written by an older release) is
ignored and the document parsed again: `load` returns None.
"""

import zlib
from collections import deque
from datetime import datetime
from fractions import Fraction
from itertools import chain, islice, repeat
from typing import Any

import orjson

from .snapshot import EntryColumns, IncidentFacts, Instant, Payment, PrizeRow, Snapshot

FORM = "parsed-snapshot/2"  # 2: the tournament formats of policies.md (bounties, rebuys, paid_with)

# The columns of the tournament formats, left out when no entry uses them (their value is then
# what every entry of a plain snapshot has): most snapshots store and load none of them.
_FORMAT_COLUMNS = ("rebuys_paid", "rebuy_fees_paid", "bounty_paid", "bounty", "bounties_won",
                   "paid_with")  # fmt: skip


def dump(snapshot: Snapshot) -> bytes:
    """The snapshot as compressed JSON (see the module docstring)."""
    incident = snapshot.incident
    doc = {
        "form": FORM,
        "external_id": snapshot.external_id,
        "name": snapshot.name,
        "currency": snapshot.currency,
        "buy_in": snapshot.buy_in,
        "fee": snapshot.fee,
        "starts_at": _instant(snapshot.starts_at),
        "chips_in_play": snapshot.chips_in_play,
        "prizes": [list(row) for row in snapshot.prizes],
        "place_amounts": snapshot.place_amounts,
        "columns": _columns(snapshot.columns),
        "incident": None
        if incident is None
        else {
            "failed_at": None if incident.failed_at is None else _instant(incident.failed_at),
            "site_wide_issue": incident.site_wide_issue,
        },
        "emails": snapshot.emails,
        "policy_id": snapshot.policy_id,
        "bounty": snapshot.bounty,
        "guarantee": snapshot.guarantee,
    }
    return zlib.compress(orjson.dumps(doc), 1)


def load(data: bytes) -> Snapshot | None:
    """The snapshot `dump` wrote, or None when `data` holds another layout."""
    doc = orjson.loads(zlib.decompress(data))
    if doc.get("form") != FORM:
        return None
    incident = doc["incident"]
    columns = doc["columns"]
    return Snapshot(
        external_id=doc["external_id"],
        name=doc["name"],
        currency=doc["currency"],
        buy_in=doc["buy_in"],
        fee=doc["fee"],
        starts_at=_from_instant(doc["starts_at"]),
        chips_in_play=doc["chips_in_play"],
        # tuple.__new__ is what PrizeRow._make calls, without a Python call per row (a table of
        # one row per paid place has tens of thousands); the stored rows are ours, five fields.
        prizes=list(map(tuple.__new__, repeat(PrizeRow), doc["prizes"])),
        place_amounts=doc["place_amounts"],
        columns=_from_columns(columns),
        incident=None
        if incident is None
        else IncidentFacts(
            failed_at=None
            if incident["failed_at"] is None
            else _from_instant(incident["failed_at"]),
            site_wide_issue=incident["site_wide_issue"],
        ),
        emails=doc["emails"],
        policy_id=doc["policy_id"],
        bounty=doc["bounty"],
        guarantee=doc["guarantee"],
    )


def _columns(columns: EntryColumns) -> dict[str, Any]:
    doc: dict[str, Any] = columns._asdict()
    for name in _FORMAT_COLUMNS:
        column = doc[name]
        if column.count(None) == len(column) if name in _NONE_COLUMNS else not any(column):
            del doc[name]
    if "paid_with" in doc:
        doc["paid_with"] = _payments_as_columns(doc["paid_with"])
    return doc


_NONE_COLUMNS = ("bounties_won", "paid_with")


def _payments_as_columns(paid_with: list[tuple[Payment, ...] | None]) -> dict[str, list[Any]]:
    """paid_with as flat columns (what orjson reads fastest): the number of payments of each
    entry (-1: none given), then every payment's method, amount and ticket id in order."""
    sizes = [-1 if items is None else len(items) for items in paid_with]
    payments = list(chain.from_iterable(filter(None, paid_with)))
    methods, amounts, tickets = (list(c) for c in zip(*payments)) if payments else ([], [], [])
    return {"sizes": sizes, "method": methods, "amount": amounts, "ticket_id": tickets}


def _payments_from_columns(doc: dict[str, list[Any]]) -> list[tuple[Payment, ...] | None]:
    sizes = doc["sizes"]
    payments = iter(
        map(tuple.__new__, repeat(Payment), zip(doc["method"], doc["amount"], doc["ticket_id"]))
    )
    column: list[tuple[Payment, ...] | None] = [None] * len(sizes)
    given = [i for i, size in enumerate(sizes) if size >= 0]
    deque(
        map(
            column.__setitem__,
            given,
            map(tuple, map(islice, repeat(payments), map(sizes.__getitem__, given))),
        ),
        0,
    )
    return column


def _from_columns(doc: dict[str, Any]) -> EntryColumns:
    n = len(doc["entry_id"])
    values: dict[str, Any] = {}
    for name in EntryColumns._fields:
        column = doc.get(name)
        if column is None:
            column = [None] * n if name in _NONE_COLUMNS else [0] * n
        elif name == "paid_with":
            column = _payments_from_columns(column)
        values[name] = column
    return EntryColumns(**values)


def _instant(value: Instant) -> list[Any]:
    # The time as given (its offset kept) and the exact seconds as a fraction: the rules compare
    # the exact value, which may hold more than the microseconds a datetime can.
    return [value.at.isoformat(), value.exact.numerator, value.exact.denominator]


def _from_instant(value: list[Any]) -> Instant:
    at, numerator, denominator = value
    return Instant(at=datetime.fromisoformat(at), exact=Fraction(numerator, denominator))
