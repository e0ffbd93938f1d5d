"""A validated snapshot in a compact form to keep beside its document, so that preparing a
proposal does not parse and validate a 100k-entry document again.

The document stays the record: it is what was received, what an auditor replays, and what this
form is derived from at import, in the same transaction. This form is only a faster way back to
the very same `Snapshot`: `load(dump(s)) == s` (tests/test_stored_snapshot.py). Columns travel as
JSON arrays, which orjson reads about ten times faster than the entry objects of the document,
and zlib at its fastest level makes them small (about a sixth) for the database.

`FORM` names the layout. A stored form of another layout (written by an older release) is
ignored and the document parsed again: `load` returns None.
"""

import zlib
from datetime import datetime
from fractions import Fraction
from typing import Any

import orjson

from .snapshot import EntryColumns, IncidentFacts, Instant, PrizeRow, Snapshot

FORM = "parsed-snapshot/1"


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
        "columns": snapshot.columns._asdict(),
        "incident": None
        if incident is None
        else {
            "failed_at": None if incident.failed_at is None else _instant(incident.failed_at),
            "site_wide_issue": incident.site_wide_issue,
        },
        "emails": snapshot.emails,
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
        prizes=[PrizeRow(*row) for row in doc["prizes"]],
        place_amounts=doc["place_amounts"],
        columns=EntryColumns(**{name: columns[name] for name in EntryColumns._fields}),
        incident=None
        if incident is None
        else IncidentFacts(
            failed_at=None
            if incident["failed_at"] is None
            else _from_instant(incident["failed_at"]),
            site_wide_issue=incident["site_wide_issue"],
        ),
        emails=doc["emails"],
    )


def _instant(value: Instant) -> list[Any]:
    # The time as given (its offset kept) and the exact seconds as a fraction: the rules compare
    # the exact value, which may hold more than the microseconds a datetime can.
    return [value.at.isoformat(), value.exact.numerator, value.exact.denominator]


def _from_instant(value: list[Any]) -> Instant:
    at, numerator, denominator = value
    return Instant(at=datetime.fromisoformat(at), exact=Fraction(numerator, denominator))
