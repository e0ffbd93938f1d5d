"""Parse and validate a `tournament-snapshot/1` document (snapshot-format.md, payout-rules.md).

One validator for the whole project: the command line, the imports (JSON, CSV, API) and the
proposals all call `parse_snapshot`. A snapshot that breaks a rule is refused as a whole with
every problem found (up to MAX_PROBLEMS), each naming its field or entry.
"""

import difflib
import json
import re
from collections import deque
from collections.abc import Callable, Collection, Iterable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta, timezone
from fractions import Fraction
from functools import cached_property, partial
from itertools import accumulate, chain, compress, islice, repeat
from operator import add, eq, ge, is_, is_not, mul, not_, sub, xor
from typing import Any, NamedTuple

import orjson

from ._gc import paused_gc
from .money import (
    CURRENCIES_WITH_CENTS,
    MAX_CENTS,
    AmountError,
    format_cents,
    json_type,
    parse_amount,
)

FORMAT = "tournament-snapshot/1"
MAX_PROBLEMS = 50
# Places are expanded one by one (a row per place in the database); no tournament has a million
# paid places. The whole table may list at most EXTRA_PLACES more places than there are entries
# (a fixed payout table, in single places or in ranges, may name places a small field never
# reaches), so the expanded table is bounded by the entries, not by the text.
MAX_PLACE = 1_000_000
EXTRA_PLACES = 1_000

# The limits of docs/snapshot-limits.md: what the database can hold, checked here so that a
# document is refused with a reason per field instead of failing at the database (a 500).
MAX_DOCUMENT_BYTES = 100 * 1024 * 1024  # a 250k-entry snapshot is about 35 MB
MAX_CSV_BYTES = 50 * 1024 * 1024  # each of the two CSV files of the CSV form
MAX_ID_LENGTH = 128  # external_id, entry_id, player_id (the columns' max_length)
MAX_SCREEN_NAME_LENGTH = 128
MAX_NAME_LENGTH = 255  # tournament.name, prizes[].description
MAX_BIGINT = 2**63 - 1  # chips, chips_in_play (PostgreSQL bigint)
MAX_INT = 2**31 - 1  # finish_place, place (PostgreSQL integer)
EARLIEST = datetime(2000, 1, 1, tzinfo=UTC)  # times must fall in [2000-01-01, 2100-01-01) UTC
LATEST = datetime(2100, 1, 1, tzinfo=UTC)
# The furthest offsets from UTC any time zone has (PostgreSQL cannot hold one beyond 15:59):
# a time given at another offset is refused naming its field.
EARLIEST_OFFSET, LATEST_OFFSET = timedelta(hours=-12), timedelta(hours=14)
NO_SUCH_OFFSET = "has no real UTC offset: time zones are -12:00 to +14:00 from UTC"
# C0 and C1 control characters (NUL, CR, LF, TAB, ESC, DEL, ...) and lone surrogates, which
# neither PostgreSQL nor an HTTP header (the cashier's Idempotency-Key) can carry.
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f\ud800-\udfff]")
ACTIVE = "active"
ELIMINATED = "eliminated"


@dataclass(frozen=True, slots=True)
class Problem:
    field: str
    message: str

    def __str__(self) -> str:
        return f"{self.field}: {self.message}"


class SnapshotError(ValueError):
    """The snapshot (or the rules applied to it) is refused. `problems` lists every reason."""

    def __init__(self, problems: Iterable[Problem], more: int = 0) -> None:
        self.problems = list(problems)
        self.more = more
        super().__init__(str(self))

    def __str__(self) -> str:
        text = "; ".join(str(p) for p in self.problems)
        if self.more:
            text += f"; and {self.more} more problems"
        return text


@dataclass(frozen=True, slots=True)
class Instant:
    """A timestamp as given: `at` for people (to the microsecond), `exact` for the rules.

    `exact` is seconds since the epoch as a Fraction, so that "exactly 20:00 after the start"
    is compared exactly even when a platform sends more than six decimals.
    """

    at: datetime
    exact: Fraction

    @classmethod
    def from_datetime(cls, value: datetime) -> "Instant":
        if value.tzinfo is None or value.utcoffset() is None:
            raise ValueError("timestamp has no time zone offset")
        delta = value - datetime(1970, 1, 1, tzinfo=UTC)
        exact = Fraction(delta.days * 86400 + delta.seconds) + Fraction(delta.microseconds, 10**6)
        return cls(at=value, exact=exact)


class PrizeRow(NamedTuple):
    """One row of the prize table: a place or a range of places, amount in cents."""

    place_from: int
    place_to: int
    amount: int
    non_cash: bool
    description: str


PAYMENT_METHODS = ("cash", "tournament_money", "ticket")
CASH = "cash"
TICKET = "ticket"
MAX_PAYMENTS = 100  # items of one entry's paid_with: a buy-in and its rebuys, never hundreds


class Payment(NamedTuple):
    """One part of what an entry paid (`paid_with`): cash, tournament money or a ticket."""

    method: str  # "cash" | "tournament_money" | "ticket"
    amount: int  # cents
    ticket_id: str | None = None  # a ticket's id; None for the other methods


class Entry(NamedTuple):
    """One entry as the snapshot gives it; amounts in cents, defaults already applied."""

    entry_id: str
    player_id: str
    screen_name: str
    status: str
    chips: int
    finish_place: int | None
    prize_awarded: int | None
    buy_in_paid: int
    fee_paid: int
    # Tournament formats (policies.md), all optional in the snapshot:
    rebuys_paid: int = 0  # what the rebuys and add-ons put into the prize pool
    rebuy_fees_paid: int = 0  # the fees on them
    bounty_paid: int = 0  # the knockout part the entry paid (0 when no knockout)
    bounty: int = 0  # active: the bounty on the entry's head; eliminated: 0
    bounties_won: int | None = None  # knockout money already received (None: not given)
    paid_with: tuple[Payment, ...] | None = None  # how it paid (None: all in cash)


@dataclass(frozen=True, slots=True)
class IncidentFacts:
    failed_at: Instant | None
    site_wide_issue: bool


class EntryColumns(NamedTuple):
    """The entries column by column (one list per field, in snapshot order).

    The rules work on whole columns with map/zip/compress, which run in C: a quarter of a
    million entries costs a fraction of a second instead of seconds.
    """

    entry_id: list[str]
    player_id: list[str]
    screen_name: list[str]
    status: list[str]
    chips: list[int]
    finish_place: list[int | None]
    prize_awarded: list[int | None]
    buy_in_paid: list[int]
    fee_paid: list[int]
    rebuys_paid: list[int]
    rebuy_fees_paid: list[int]
    bounty_paid: list[int]
    bounty: list[int]
    bounties_won: list[int | None]
    paid_with: list[tuple[Payment, ...] | None]

    @classmethod
    def from_entries(cls, entries: Sequence[Entry]) -> "EntryColumns":
        if not entries:
            return cls(*([] for _ in cls._fields))
        return cls(*map(list, zip(*entries)))


@dataclass(frozen=True)
class Snapshot:
    external_id: str
    name: str
    currency: str
    buy_in: int
    fee: int
    starts_at: Instant
    chips_in_play: int | None
    prizes: list[PrizeRow]
    place_amounts: list[int]  # index place-1 -> cents, for places 1..P (the last paid place)
    columns: EntryColumns
    incident: IncidentFacts | None
    # entry_id -> e-mail address, for the entries that carry the optional `email` field. Where
    # a player's statement may be e-mailed; not part of any computation or fingerprint.
    emails: dict[str, str] = field(default_factory=dict)
    policy_id: str | None = None  # tournament.policy: the id of the policy the snapshot names
    bounty: int | None = None  # tournament.bounty: the knockout part of one entry's price
    guarantee: int | None = None  # tournament.guarantee: the advertised guaranteed prize pool

    @property
    def is_knockout(self) -> bool:
        return self.bounty is not None

    @property
    def has_rebuys(self) -> bool:
        c = self.columns
        return any(c.rebuys_paid) or any(c.rebuy_fees_paid)

    @property
    def has_paid_with(self) -> bool:
        return self.columns.paid_with.count(None) != len(self.columns.paid_with)

    def uses(self, feature: str) -> bool:
        """Whether the snapshot uses a format feature: "knockout", "rebuys", "paid_with" or
        "guarantee" (screens show those columns only where used)."""
        if feature == "knockout":
            return self.is_knockout
        if feature == "rebuys":
            return self.has_rebuys
        if feature == "paid_with":
            return self.has_paid_with
        if feature == "guarantee":
            return self.guarantee is not None
        raise ValueError(f"unknown feature {feature!r}")

    @cached_property
    def entries(self) -> list[Entry]:
        """The entries as Entry tuples (built on first use from the columns)."""
        return list(map(Entry._make, zip(*self.columns)))

    @property
    def active_count(self) -> int:
        return self.columns.status.count(ACTIVE)

    @property
    def first_prize(self) -> int:
        return self.place_amounts[0]

    @property
    def last_paid_place(self) -> int:
        return len(self.place_amounts)

    def prize_for_place(self, place: int) -> int:
        return self.place_amounts[place - 1] if 1 <= place <= len(self.place_amounts) else 0


_TIMESTAMP_PATTERN = (
    r"(\d{4})-(\d{2})-(\d{2})([Tt ])(\d{2}):(\d{2})(?::(\d{2})(?:[.,](\d+))?)?"
    r"(?:([Zz])|([+-])(\d{2})(?::?(\d{2}))?)"
)
# ISO 8601 writes its digits in ASCII: \d alone would also match full-width or Arabic-Indic
# digits, which int() reads, so "２０２６-11-29T18:00:00Z" would be taken as a time.
_TIMESTAMP = re.compile(_TIMESTAMP_PATTERN, re.ASCII)
# A document stored by an earlier release, which matched any Unicode digit, still replays.
_STORED_TIMESTAMP = re.compile(_TIMESTAMP_PATTERN)


def parse_timestamp(value: object, *, stored: bool = False) -> Instant:
    """ISO 8601 with an offset -> Instant. Raises ValueError with a message for people.

    `stored`: a time of a document stored by an earlier release, which also read a space
    between the date and the time, and digits other than ASCII's (see parse_snapshot)."""
    if not isinstance(value, str):
        raise ValueError(
            "must be an ISO 8601 date-time string with an offset (like 2026-11-29T18:00:00Z), "
            f"not a JSON {json_type(value)}"
        )
    pattern = _STORED_TIMESTAMP if stored else _TIMESTAMP
    m = pattern.fullmatch(value) if len(value) <= 64 else None
    if not m:
        if re.fullmatch(
            r"\d{4}-\d{2}-\d{2}([Tt ]\d{2}:\d{2}(:\d{2}([.,]\d+)?)?)?", value, re.ASCII
        ):
            raise ValueError(f"{value!r} has no time zone offset (add Z or +01:00)")
        raise ValueError(
            f"{_shorten(value)!r} is not an ISO 8601 timestamp like 2026-11-29T18:00:00Z"
        )
    year, month, day, separator, hour, minute, second, frac, zulu, sign, oh, om = m.groups()
    if separator == " " and not stored:
        # ISO 8601 (and the API schema's date-time) separates them with a T: the space of a
        # database's text output is refused, not guessed at.
        raise ValueError(
            f"{value!r} separates the date and the time with a space; ISO 8601 needs a T "
            f"({value[:10]}T{value[11:]})"
        )
    try:
        tz = UTC
        if not zulu:
            offset = timedelta(hours=int(oh), minutes=int(om or 0))
            tz = timezone(offset if sign == "+" else -offset)
        frac = frac or ""
        at = datetime(
            int(year), int(month), int(day), int(hour), int(minute), int(second or 0),
            int((frac + "000000")[:6]), tzinfo=tz,
        )  # fmt: skip
    except ValueError as exc:
        raise ValueError(f"{value!r} is not a valid date and time ({exc})") from None
    if not EARLIEST <= at < LATEST:
        raise ValueError(
            f"{value!r} is outside the years this tool accepts (2000-01-01 to 2099-12-31 UTC)"
        )
    if not zulu and not stored:
        # An import or an outage at +23:53 was a 500 (EARLIEST_OFFSET, LATEST_OFFSET).
        offset = timedelta(minutes=(int(oh) * 60 + int(om or 0)) * (1 if sign == "+" else -1))
        if int(om or 0) > 59 or not EARLIEST_OFFSET <= offset <= LATEST_OFFSET:
            raise ValueError(f"{value!r} {NO_SUCH_OFFSET}")
    instant = Instant.from_datetime(at)
    if len(frac) > 6:  # keep the digits a datetime cannot hold
        extra = Fraction(int(frac), 10 ** len(frac)) - Fraction(int(frac[:6]), 10**6)
        instant = Instant(at=at, exact=instant.exact + extra)
    return instant


class _Problems:
    def __init__(self) -> None:
        self.items: list[Problem] = []
        self.more = 0

    def add(self, field: str, message: str) -> None:
        if len(self.items) < MAX_PROBLEMS:
            self.items.append(Problem(field, message))
        else:
            self.more += 1

    def __bool__(self) -> bool:
        return bool(self.items)

    def raise_if_any(self) -> None:
        if self.items:
            raise SnapshotError(self.items, self.more)


_MISSING = object()
_PRIZE_KEYS = frozenset({"place", "places", "amount", "non_cash", "description"})
_BULK_KEYS = frozenset(
    {"entry_id", "player_id", "screen_name", "status", "chips", "finish_place",
     "prize_awarded", "buy_in_paid", "fee_paid", "email", "rebuys_paid", "rebuy_fees_paid",
     "bounty_paid", "bounty", "bounties_won", "paid_with"}
)  # fmt: skip


def _is_int(value: object) -> bool:
    return type(value) is int  # bool is an int in Python; JSON true is not a chip count


def _not_whole(value: object) -> str:
    """Why a value that should be a whole number is not one, in the sender's terms. JSON has one
    number type: a fraction (`5000.5`), a decimal point (`5000.0`) or an integer too large for
    a 64-bit reader (orjson reads 10^30 as 1e+30) all arrive here as floats."""
    if isinstance(value, float):
        if value.is_integer() and abs(value) > MAX_BIGINT:
            return f"must be a whole number of at most {MAX_BIGINT:,}, not {value:g}"
        return f"must be a whole number, not {value!r}"
    return f"must be a whole number, not a JSON {json_type(value)}"


def parse_snapshot(
    doc: bytes | bytearray | str | dict[str, Any],
    *,
    known_policies: Collection[str] | None = None,
    keep: list[object] | None = None,
    stored: bool = False,
) -> Snapshot:
    """bytes, str or an already decoded dict -> Snapshot. Raises SnapshotError listing problems.

    `known_policies`: the policy ids the caller knows; a `tournament.policy` outside them is
    refused (None: any well-formed id is accepted, for the caller to resolve). `keep`, when
    given, receives the decoded document: a process about to end (the command line) need not
    free its hundreds of thousands of objects one by one.

    `stored`: the document was accepted and stored by an earlier release and is read again (an
    auditor's replay, a parsed form of another layout). What those releases accepted and the
    API's schema forbids (a space for the T of a time, an unknown key in a prize row, no entry
    at all) is then read as it was, so that history still replays; a document received now is
    refused for it."""
    with paused_gc():
        return _parse_snapshot(doc, known_policies, keep, stored)


def _too_large(size: int, what: str = "document", limit: int | None = None) -> SnapshotError:
    limit = limit or MAX_DOCUMENT_BYTES
    return SnapshotError(
        [
            Problem(
                what,
                f"is {size / 2**20:,.1f} MB; at most {limit // 2**20} MB are accepted "
                "(docs/snapshot-limits.md)",
            )
        ]
    )


def _duplicate_key(
    text: str | bytes, doc: object, entry_colons: Callable[[], int] | None = None
) -> str | None:
    """The first key given twice in one JSON object, or None. orjson silently keeps the last
    value; another parser may keep the first, so such a document is refused.

    Fast check: a JSON text has one ':' per key plus those inside strings. Serialised again, the
    parsed document has one per key it kept plus the same ones inside strings, so the counts
    agree exactly when no key was dropped. Only when the text escapes a colon (\\u003a), which
    breaks the count, is it parsed again with json's object_pairs_hook to make sure.

    `entry_colons`, when the entries were read by the bulk path, gives their share of that count,
    worked out from their columns (_entry_colons): only the rest of the document is serialised
    again.
    """
    escaped = b"\\u003" in text if isinstance(text, bytes) else "\\u003" in text
    if not escaped:
        try:
            if entry_colons is None:
                again = orjson.dumps(doc).count(b":")
            else:
                assert isinstance(doc, dict)
                rest = {key: value for key, value in doc.items() if key != "entries"}
                again = orjson.dumps(rest).count(b":") + 1 + entry_colons()  # 1: "entries":
        except orjson.JSONEncodeError:  # nested more than 255 deep: no snapshot is
            raise SnapshotError([Problem("document", "is nested too deeply")]) from None
        given = text.count(b":") if isinstance(text, bytes) else text.count(":")
        if given == again:
            return None
    return _find_duplicate(text.decode() if isinstance(text, bytes) else text)


def _find_duplicate(text: str) -> str | None:
    found: list[str] = []

    def pairs(items: list[tuple[str, object]]) -> None:
        seen = set()
        for key, _ in items:
            if key in seen and not found:
                found.append(key)
            seen.add(key)
        return None

    try:
        json.loads(text, object_pairs_hook=pairs)
    except RecursionError:
        raise SnapshotError([Problem("document", "is nested too deeply")]) from None
    return found[0] if found else None


def _parse_snapshot(
    doc: object,
    known_policies: Collection[str] | None = None,
    keep: list[object] | None = None,
    stored: bool = False,
) -> Snapshot:
    text: str | bytes | None = None  # the JSON text, for the duplicate-key check
    if isinstance(doc, (bytes, bytearray)):
        if len(doc) > MAX_DOCUMENT_BYTES:
            raise _too_large(len(doc))
        try:
            # orjson reads UTF-8 bytes itself: no decoded copy of a 35 MB document. On any
            # error, the text is decoded and parsed again below, for the same messages.
            parsed = orjson.loads(doc)
        except orjson.JSONDecodeError:
            parsed = _MISSING
        if parsed is _MISSING:
            try:
                doc = doc.decode("utf-8")
            except UnicodeDecodeError as exc:
                raise SnapshotError(
                    [Problem("document", f"is not UTF-8 text ({exc.reason})")]
                ) from None
        else:
            text, doc = bytes(doc), parsed
    if isinstance(doc, str):
        text = doc
        if len(text) > MAX_DOCUMENT_BYTES or (
            len(text) * 4 > MAX_DOCUMENT_BYTES and len(text.encode("utf-8")) > MAX_DOCUMENT_BYTES
        ):
            raise _too_large(len(text.encode("utf-8")))
        try:
            # orjson parses a 250k-entry snapshot in a third of the time of json. It reads an
            # integer beyond 64 bits as a float, which is then refused like any non-integer
            # (no chip count comes near that).
            doc = orjson.loads(text)
        except orjson.JSONDecodeError as exc:
            raise SnapshotError([Problem("document", f"is not valid JSON ({exc})")]) from None
    problems = _Problems()
    if keep is not None:
        keep.append(doc)
    if not isinstance(doc, dict):
        if text is not None:
            _refuse_duplicate_key(text, doc, None)
        raise SnapshotError(
            [Problem("document", f"must be a JSON object, not a JSON {json_type(doc)}")]
        )

    fmt = doc.get("format", _MISSING)
    if fmt is _MISSING:
        problems.add("format", f"is required ({FORMAT})")
    elif fmt != FORMAT:
        problems.add(
            "format",
            f"must be {FORMAT!r}, not "
            + (repr(_shorten(fmt)) if isinstance(fmt, str) else f"a JSON {json_type(fmt)}"),
        )

    t = _object(doc, "tournament", "tournament", problems, required=True)
    entries_raw = doc.get("entries")
    # No place beyond the number of entries: nobody can finish there.
    last_place = len(entries_raw) if isinstance(entries_raw, list) else MAX_PLACE
    tournament = (
        _parse_tournament(t, problems, min(last_place, MAX_PLACE), known_policies, stored)
        if t is not None
        else None
    )
    keys = _keys_of(entries_raw)
    if not stored:
        _refuse_misspelt_fields(doc, t, entries_raw, keys, problems)
    entries, in_texts = _parse_entries(doc, tournament, problems, keys, stored)
    # A key given twice refuses the document before anything else is said about it: which of
    # the two values the checks above saw is not defined.
    if text is not None:
        entry_colons = None
        if in_texts is not None and keys is not None and isinstance(entries_raw, list):
            entry_colons = partial(_entry_colons, entries_raw, keys, in_texts)
        _refuse_duplicate_key(text, doc, entry_colons)
    emails = _parse_emails(entries_raw, problems, keys)
    incident = _parse_incident(doc, problems, stored)

    if tournament is not None and entries is not None:
        chips_in_play = tournament["chips_in_play"]
        if chips_in_play is not None:
            active_chips = sum(compress(entries.chips, map(eq, repeat(ACTIVE), entries.status)))
            if chips_in_play != active_chips:
                problems.add(
                    "tournament.chips_in_play",
                    f"is {chips_in_play:,} but the active entries hold {active_chips:,} chips "
                    "(an entry is missing or a chip count is wrong)",
                )
    if tournament is not None and entries is not None:
        _check_storable(tournament, entries, problems)
    problems.raise_if_any()
    # Without problems, both were read (a missing one is a problem).
    assert tournament is not None and entries is not None
    return Snapshot(columns=entries, incident=incident, emails=emails, **tournament)


# The fields of each object of the format (snapshot-format.md, policies.md), for telling a
# misspelt one from a platform's own field (_refuse_misspelt_fields).
_TOP_KEYS = frozenset({"format", "tournament", "entries", "incident"})
_TOURNAMENT_KEYS = frozenset(
    {"external_id", "name", "currency", "buy_in", "fee", "starts_at", "chips_in_play", "prizes",
     "policy", "bounty", "guarantee"}
)  # fmt: skip
_INCIDENT_KEYS = frozenset({"failed_at", "site_wide_issue"})
# How alike (difflib's ratio) an unknown key and a field must be to be taken for a misspelling:
# buyin_paid / buy_in_paid 0.95, guaranteed / guarantee 0.95, fee_payed / fee_paid 0.82,
# bounty_won / bounties_won 0.82; a platform's own fields (seat, table_id, country) are nowhere
# near, and one close to a field the object also gives (fees beside fee) is not a misspelling.
_MISSPELT = 0.8


def _misspelt(key: object, fields: frozenset[str], given: Collection[str]) -> str | None:
    """The field of `fields` that `key` (not one of them) looks like a misspelling of, when the
    object does not also give that field itself; else None."""
    if not isinstance(key, str) or key in fields:
        return None
    close = difflib.get_close_matches(key, sorted(fields), n=1, cutoff=_MISSPELT)
    return close[0] if close and close[0] not in given else None


def _refuse_misspelt_fields(
    doc: dict[str, Any],
    t: dict[str, Any] | None,
    entries_raw: object,
    keys: frozenset[str] | None,
    problems: _Problems,
) -> None:
    """A key that is not a field of the format but looks like one (`buyin_paid`, `guaranteed`)
    is refused, naming the field it resembles: read as the platform's own field, it would be
    ignored and the default used in its place (the tournament's buy-in, no guarantee), changing
    the money without a word. Other unknown keys are the platform's own and stay accepted."""

    def check(obj: dict[str, Any], fields: frozenset[str], path: str, what: str) -> None:
        for key in obj:
            field = _misspelt(key, fields, obj)
            if field is not None:
                problems.add(
                    f"{path}{_shorten(key)}",
                    f"is not a field of {what}: did you mean {field}? (misspelt, it would be "
                    "ignored and its default used)",
                )

    check(doc, _TOP_KEYS, "", "a snapshot")
    if t is not None:
        check(t, _TOURNAMENT_KEYS, "tournament.", "the tournament")
    incident = doc.get("incident")
    if isinstance(incident, dict):
        check(incident, _INCIDENT_KEYS, "incident.", "the incident")
    if not isinstance(entries_raw, list):
        return
    if keys is None:  # not every entry is an object (refused below): look at those that are
        keys = frozenset(chain.from_iterable(e for e in entries_raw if isinstance(e, dict)))
    suspects = [key for key in keys - _BULK_KEYS if _misspelt(key, _BULK_KEYS, ()) is not None]
    if not suspects:  # the usual case: the entries give the format's fields only
        return
    for i, e in enumerate(entries_raw):
        if isinstance(e, dict) and not e.keys().isdisjoint(suspects):
            check(e, _BULK_KEYS, f"{_entry_label(i, e.get('entry_id'))}.", "an entry")


def _entry_label(i: int, entry_id: object) -> str:
    """How a message names entry `i`: "entries[4] (e5)", or "entries[4]" when its entry_id is
    missing or not fit to be shown."""
    if isinstance(entry_id, str) and entry_id and not text_problem(entry_id, 40):
        return f"entries[{i}] ({entry_id})"
    return f"entries[{i}]"


def _refuse_duplicate_key(
    text: str | bytes, doc: object, entry_colons: Callable[[], int] | None
) -> None:
    duplicate = _duplicate_key(text, doc, entry_colons)
    if duplicate is not None:
        raise SnapshotError(
            [
                Problem(
                    "document",
                    f"gives the key {_shorten(duplicate)!r} twice in one object; each key "
                    "may appear once (parsers disagree on which value wins)",
                )
            ]
        )


def _keys_of(raw: object) -> frozenset[str] | None:
    """Every key some object of `raw` gives, when it is a list of objects (else None)."""
    if not isinstance(raw, list) or not raw:
        return None
    keys: set[str] = set()
    for start in range(0, len(raw), _BLOCK):  # while the block is in the cache (_read_fields)
        objects = raw[start : start + _BLOCK]
        if set(map(type, objects)) != {dict}:
            return None
        keys.update(chain.from_iterable(objects))
    return frozenset(keys)


# Deliberately loose: one @ with something on both sides and no spaces. The mail server is the
# judge of deliverability; this only catches a column that holds something else.
_EMAIL = re.compile(r"[^@\s]+@[^@\s]+\.[^@\s]+")
MAX_EMAIL = 254


def _parse_emails(
    raw: object, problems: _Problems, keys: frozenset[str] | None = None
) -> dict[str, str]:
    """{entry_id: address} for the entries carrying the optional `email` field ("" = none;
    null is refused, as any optional field given as null).
    `keys`: every key the entries give (_keys_of), when known."""
    if not isinstance(raw, list):
        return {}
    if keys is None:
        keys = _keys_of(raw)
    if keys is not None and "email" not in keys:
        return {}  # the usual case: no entry carries an e-mail address
    emails: dict[str, str] = {}
    for i, e in enumerate(raw):
        if not isinstance(e, dict) or "email" not in e:
            continue
        value = e["email"]
        label = f"entries[{i}] ({e.get('entry_id')}).email"
        if value == "":
            continue  # no address, said explicitly
        if not isinstance(value, str):  # null too: a field present is a value (payout-rules.md)
            problems.add(label, f"must be a string, not a JSON {json_type(value)}")
        elif len(value) > MAX_EMAIL or not _EMAIL.fullmatch(value):
            problems.add(label, f"{value[:60]!r} is not an e-mail address")
        elif isinstance(e.get("entry_id"), str):
            emails[e["entry_id"]] = value
    return emails


# The database stores cents and chips as 64-bit integers (PostgreSQL bigint). Every amount a
# proposal can hold (a line, a component, the proposal's total) is at most the money the
# snapshot names: the entries' buy-ins, fees and prizes awarded, plus the prize table.
DB_MAX_INTEGER = 2**63 - 1


def _check_storable(tournament: dict[str, Any], entries: EntryColumns, problems: _Problems) -> None:
    """Refuse, with a reason, a snapshot whose money or chips the database could not store, so
    that preparing a proposal from it never fails on an integer overflow."""
    pool = (
        sum(filter(None, entries.buy_in_paid))
        + sum(filter(None, entries.fee_paid))
        + sum(filter(None, entries.prize_awarded))
        + sum(tournament["place_amounts"] or ())
        + sum(entries.rebuys_paid)
        + sum(entries.rebuy_fees_paid)
        + sum(entries.bounty_paid)
        + sum(entries.bounty)
        + sum(filter(None, entries.bounties_won))
        + (tournament["guarantee"] or 0)
    )
    if pool > DB_MAX_INTEGER:
        problems.add(
            "entries",
            f"the buy-ins, fees and prizes add up to {pool:,} cents, more than the "
            f"{DB_MAX_INTEGER:,} cents a proposal can store; split the tournament or check "
            "the amounts",
        )
    chips = sum(entries.chips)  # whole numbers on both paths (a refused value reads 0)
    if chips > DB_MAX_INTEGER:
        problems.add(
            "entries",
            f"the entries hold {chips:,} chips in all, more than the {DB_MAX_INTEGER:,} "
            "the database can store",
        )


def _object(
    parent: dict[str, Any], key: str, path: str, problems: _Problems, *, required: bool
) -> dict[str, Any] | None:
    value = parent.get(key, _MISSING)
    if value is _MISSING:
        if required:
            problems.add(path, "is required")
        return None
    if not isinstance(value, dict):
        problems.add(path, f"must be a JSON object, not a JSON {json_type(value)}")
        return None
    return value


def _shorten(value: str, limit: int = 40) -> str:
    return value if len(value) <= limit else value[:limit] + "…"


def text_problem(value: str, max_length: int) -> str | None:
    """Why a string cannot be stored (too long for its column, or a control character), or None.

    The one check for ids and names: the bulk path, the entry-by-entry path and the CSV form all
    come here, so that a cashier's Idempotency-Key and a database column can hold every id.
    """
    if len(value) > max_length:
        return f"is {len(value):,} characters long; at most {max_length} are accepted"
    m = _CONTROL.search(value)
    if m:
        return (
            f"contains the control character U+{ord(m.group()):04X} at position {m.start() + 1} "
            "(NUL, line breaks, tabs and other control characters are refused)"
        )
    return None


def _string(
    obj: dict[str, Any],
    key: str,
    path: str,
    problems: _Problems,
    *,
    required: bool,
    nonempty: bool = False,
    max_length: int = MAX_NAME_LENGTH,
) -> str | None:
    value = obj.get(key, _MISSING)
    if value is _MISSING:
        if required:
            problems.add(path, "is required")
        return None
    if not isinstance(value, str):
        problems.add(path, f"must be a string, not a JSON {json_type(value)}")
        return None
    if nonempty and not value.strip():
        problems.add(path, "must not be empty")
        return None
    why = text_problem(value, max_length)
    if why:
        problems.add(path, why)
        return None
    return value


def _whole_number(
    value: object,
    path: str,
    problems: _Problems,
    *,
    low: int,
    high: int,
    what: str = "a whole number",
) -> int | None:
    """An integer within [low, high] (the column's range), or None after naming the problem."""
    if not isinstance(value, int) or isinstance(value, bool):
        problems.add(path, f"must be {what}, not a JSON {json_type(value)}")
        return None
    if not low <= value <= high:
        problems.add(path, f"must be between {low:,} and {high:,}, not {value:,}")
        return None
    return value


# Control characters (Unicode category Cc: C0, DEL, C1). An id is sent to the cashier inside
# the credit's Idempotency-Key header (percent-encoded, docs/posting.md): every other character
# is encoded losslessly, but a CR/LF in an id is a header injection waiting to happen, and no
# real id holds one.
def _identifier(obj: dict[str, Any], key: str, path: str, problems: _Problems) -> str | None:
    """A required, non-empty id that fits its column and holds no control character (so that
    a cashier's Idempotency-Key can carry it: docs/posting.md)."""
    return _string(obj, key, path, problems, required=True, nonempty=True, max_length=MAX_ID_LENGTH)


def _amount(
    obj: dict[str, Any],
    key: str,
    path: str,
    problems: _Problems,
    *,
    required: bool,
    default: int | None = None,
) -> int | None:
    value = obj.get(key, _MISSING)
    if value is _MISSING:
        if required:
            problems.add(path, "is required")
        return default
    try:
        return parse_amount(value)
    except AmountError as exc:
        problems.add(path, str(exc))
        return default


def _parse_tournament(
    t: dict[str, Any],
    problems: _Problems,
    last_place: int,
    known_policies: Collection[str] | None = None,
    stored: bool = False,
) -> dict[str, Any]:
    external_id = _string(
        t,
        "external_id",
        "tournament.external_id",
        problems,
        required=True,
        nonempty=True,
        max_length=MAX_ID_LENGTH,
    )
    name = _string(t, "name", "tournament.name", problems, required=False) or ""
    currency = _string(t, "currency", "tournament.currency", problems, required=True)
    if currency is not None and currency not in CURRENCIES_WITH_CENTS:
        problems.add(
            "tournament.currency",
            f"{currency!r} is not a supported ISO 4217 currency with cents "
            "(codes with 0 or 3 minor digits, like JPY or KWD, are refused)",
        )
    buy_in = _amount(t, "buy_in", "tournament.buy_in", problems, required=True)
    fee = _amount(t, "fee", "tournament.fee", problems, required=True)

    starts_at = None
    raw = t.get("starts_at", _MISSING)
    if raw is _MISSING:
        problems.add("tournament.starts_at", "is required")
    else:
        try:
            starts_at = parse_timestamp(raw, stored=stored)
        except ValueError as exc:
            problems.add("tournament.starts_at", str(exc))

    chips_in_play = t.get("chips_in_play", _MISSING)
    if chips_in_play is _MISSING:
        chips_in_play = None
    else:
        chips_in_play = _whole_number(
            chips_in_play, "tournament.chips_in_play", problems, low=0, high=MAX_BIGINT
        )

    prizes, place_amounts = _parse_prizes(t, problems, last_place, stored)
    policy_id = _policy_id(t, problems, known_policies)
    bounty = _amount(t, "bounty", "tournament.bounty", problems, required=False)
    guarantee = _amount(t, "guarantee", "tournament.guarantee", problems, required=False)
    if "bounty" in t and bounty is None:
        # Refused above; still a knockout, so that its entries are not refused for bounties.
        bounty = 0
    return dict(
        external_id=external_id, name=name, currency=currency, buy_in=buy_in, fee=fee,
        starts_at=starts_at, chips_in_play=chips_in_play, prizes=prizes, place_amounts=place_amounts,
        policy_id=policy_id, bounty=bounty, guarantee=guarantee,
    )  # fmt: skip


_POLICY_ID = re.compile(r"[a-z0-9][a-z0-9-]{0,62}")


def _policy_id(
    t: dict[str, Any], problems: _Problems, known_policies: Collection[str] | None
) -> str | None:
    """tournament.policy: the id of a policy the app knows (None: the app's default)."""
    value = t.get("policy", _MISSING)
    if value is _MISSING:
        return None
    if not isinstance(value, str):
        problems.add(
            "tournament.policy", f"must be a policy id string, not a JSON {json_type(value)}"
        )
        return None
    if not _POLICY_ID.fullmatch(value) or (
        known_policies is not None and value not in known_policies
    ):
        known = ""
        if known_policies is not None:
            known = " (known: " + ", ".join(sorted(known_policies)) + ")"
        problems.add(
            "tournament.policy", f"{_shorten(value)!r} is not a policy this app knows{known}"
        )
        return None
    return value


def _parse_prizes(
    t: dict[str, Any], problems: _Problems, last_place: int = MAX_PLACE, stored: bool = False
) -> tuple[list[PrizeRow], list[int]]:
    raw = t.get("prizes", _MISSING)
    if raw is _MISSING:
        problems.add("tournament.prizes", "is required")
        return [], []
    if not isinstance(raw, list):
        problems.add("tournament.prizes", f"must be a JSON array, not a JSON {json_type(raw)}")
        return [], []
    bulk = _parse_prizes_in_bulk(raw, last_place)
    if bulk is not None:
        return bulk
    # Something is unusual: check row by row, to name every problem precisely.
    return _parse_prizes_one_by_one(raw, problems, last_place, stored)


def _parse_prizes_one_by_one(
    raw: list[Any], problems: _Problems, last_place: int = MAX_PLACE, stored: bool = False
) -> tuple[list[PrizeRow], list[int]]:
    """Row by row, naming every problem. `last_place`: the number of entries, where the
    document's bounds check it; the table may list at most EXTRA_PLACES places more.
    `stored`: see parse_snapshot."""
    rows = []
    by_place: dict[int, tuple[int, int]] = {}  # place -> (amount, index in prizes)
    ok = True
    listed = 0  # places listed so far (a range counts each of its places)
    for i, row in enumerate(raw):
        path = f"tournament.prizes[{i}]"
        if not isinstance(row, dict):
            problems.add(path, f"must be a JSON object, not a JSON {json_type(row)}")
            ok = False
            continue
        if not stored:
            # A prize row has few fields and a typo in one is silently lost (`amonut` reads as
            # no amount, `non_csh` as a cash prize): refused, as in a payment of paid_with.
            for key in row:
                if key not in _PRIZE_KEYS:
                    problems.add(
                        f"{path}.{_shorten(str(key))}",
                        "is not a field of a prize row (place, places, amount, non_cash, "
                        "description)",
                    )
                    ok = False
        has_place, has_places = "place" in row, "places" in row
        place_from = place_to = None
        if has_place == has_places:
            problems.add(
                path,
                "must give either place or places [from, to], not "
                + ("both" if has_place else "neither"),
            )
        elif has_place:
            place = row["place"]
            if not _is_int(place):
                problems.add(f"{path}.place", _not_whole(place))
            elif place < 1:
                problems.add(f"{path}.place", f"must be 1 or more, not {place}")
            else:
                place_from = place_to = place
        else:
            places = row["places"]
            if not (
                isinstance(places, list) and len(places) == 2 and all(_is_int(p) for p in places)
            ):
                problems.add(f"{path}.places", "must be [from, to], two whole numbers")
            elif places[0] < 1:
                problems.add(f"{path}.places", f"must start at place 1 or more, not {places[0]}")
            elif places[0] > places[1]:
                problems.add(f"{path}.places", f"from {places[0]} is after to {places[1]}")
            else:
                place_from, place_to = places
        if place_to is not None and place_to > MAX_PLACE:
            problems.add(
                path, f"place {place_to:,} is beyond the {MAX_PLACE:,} places this tool accepts"
            )
            place_from = place_to = None
        elif (
            has_places
            and place_from is not None
            and place_to is not None
            and place_to - place_from + 1 > last_place + EXTRA_PLACES
        ):
            # Named on its row, and before it is expanded: one range can be the whole excess.
            problems.add(
                f"{path}.places",
                f"range {place_from:,}-{place_to:,} is {place_to - place_from + 1:,} places wide: "
                f"the table may list at most the {last_place:,} entries plus {EXTRA_PLACES:,}",
            )
            place_from = place_to = None
        elif place_from is not None and place_to is not None:
            listed += place_to - place_from + 1
            if listed > last_place + EXTRA_PLACES:
                problems.add(
                    "tournament.prizes",
                    f"lists more than {last_place + EXTRA_PLACES:,} places: at most the "
                    f"{last_place:,} entries plus {EXTRA_PLACES:,} are accepted",
                )
                ok = False
                break
        amount = _amount(row, "amount", f"{path}.amount", problems, required=True)
        non_cash = row.get("non_cash", False)
        if not isinstance(non_cash, bool):
            problems.add(
                f"{path}.non_cash", f"must be true or false, not a JSON {json_type(non_cash)}"
            )
            non_cash = False
        description = (
            _string(row, "description", f"{path}.description", problems, required=False) or ""
        )
        if place_from is None or place_to is None or amount is None:
            ok = False
            continue
        rows.append(PrizeRow(place_from, place_to, amount, non_cash, description))
        for place in range(place_from, place_to + 1):
            if place in by_place:
                problems.add(
                    path, f"place {place} is listed twice (also in prizes[{by_place[place][1]}])"
                )
                ok = False
                break
            by_place[place] = (amount, i)
    if not ok:
        return rows, []
    paid = [p for p, (amount, _) in by_place.items() if amount > 0]
    if not paid:
        problems.add("tournament.prizes", "has no paid place (no prize above 0.00)")
        return rows, []
    last_paid = max(paid)
    place_amounts = []
    for place in range(1, last_paid + 1):
        if place not in by_place:
            problems.add(
                "tournament.prizes",
                f"place {place} is missing: places 1 to {last_paid} must all be listed",
            )
            return rows, []
        place_amounts.append(by_place[place][0])
    for place in sorted(by_place):
        if place > 1 and place - 1 in by_place and by_place[place][0] > by_place[place - 1][0]:
            problems.add(
                f"tournament.prizes[{by_place[place][1]}]",
                f"place {place} pays more than place {place - 1}",
            )
    return rows, place_amounts


def _parse_entries(
    doc: dict[str, Any],
    tournament: dict[str, Any] | None,
    problems: _Problems,
    keys: frozenset[str] | None,
    stored: bool = False,
) -> tuple[EntryColumns | None, int | None]:
    """The entries' columns, and, when the bulk path read them, the ':' inside their ids and
    names (see _entry_colons). `stored`: see parse_snapshot."""
    raw = doc.get("entries", _MISSING)
    if raw is _MISSING:
        problems.add("entries", "is required")
        return None, None
    if not isinstance(raw, list):
        problems.add("entries", f"must be a JSON array, not a JSON {json_type(raw)}")
        return None, None
    if not raw and not stored:
        # Play started (starts_at is when cards were in the air): someone held a seat.
        problems.add("entries", "must list at least one entry; a tournament that started has one")
        return None, None
    default_buy_in = tournament["buy_in"] if tournament else None
    default_fee = tournament["fee"] if tournament else None
    # The knockout part of one entry's price; _UNKNOWN when the tournament itself was refused
    # (its entries are then not refused for giving bounties).
    bounty: int | None | object = tournament["bounty"] if tournament else _UNKNOWN
    if bounty is not _UNKNOWN:
        assert bounty is None or isinstance(bounty, int)
        bulk = _bulk_entries(raw, default_buy_in, default_fee, keys, bounty)
        if bulk is not None:
            return bulk
    # Something is unusual: check entry by entry, to name every problem precisely.
    entries = _parse_entries_one_by_one(raw, default_buy_in, default_fee, problems, bounty)
    return EntryColumns.from_entries(entries), None


_UNKNOWN = object()
_BOUNTY_FIELDS = ("bounty_paid", "bounty", "bounties_won")


def _parse_entries_one_by_one(
    raw: list[Any],
    default_buy_in: int | None,
    default_fee: int | None,
    problems: _Problems,
    tournament_bounty: int | None | object = None,
) -> list[Entry]:
    entries = []
    tickets: dict[str, str] = {}  # ticket_id -> the entry that paid with it
    seen_ids: dict[str, int] = {}
    active_player: dict[str, str | None] = {}
    for i, e in enumerate(raw):
        if not isinstance(e, dict):
            problems.add(f"entries[{i}]", f"must be a JSON object, not a JSON {json_type(e)}")
            continue
        label = _entry_label(i, e.get("entry_id"))
        entry_id = _identifier(e, "entry_id", f"{label}.entry_id", problems)
        player_id = _identifier(e, "player_id", f"{label}.player_id", problems)
        screen_name = (
            _string(
                e,
                "screen_name",
                f"{label}.screen_name",
                problems,
                required=False,
                max_length=MAX_SCREEN_NAME_LENGTH,
            )
            or ""
        )
        status = e.get("status", _MISSING)
        if status is _MISSING:
            problems.add(f"{label}.status", "is required (active or eliminated)")
            status = None
        elif status != ACTIVE and status != ELIMINATED:
            shown = repr(_shorten(status) if isinstance(status, str) else status)
            problems.add(f"{label}.status", f"must be active or eliminated, not {shown}")
            status = None

        chips = e.get("chips", _MISSING)
        if chips is _MISSING:
            if status == ACTIVE:
                problems.add(f"{label}.chips", "is required for an active entry")
            chips = 0
        elif not _is_int(chips):
            problems.add(f"{label}.chips", _not_whole(chips))
            chips = 0
        elif chips > MAX_BIGINT:
            problems.add(f"{label}.chips", f"must be at most {MAX_BIGINT:,}, not {chips:,}")
            chips = 0
        elif status == ACTIVE and chips <= 0:
            problems.add(f"{label}.chips", f"an active entry must hold chips above 0, not {chips}")
        elif status == ELIMINATED and chips != 0:
            problems.add(f"{label}.chips", f"an eliminated entry holds no chips, not {chips}")

        finish_place = e.get("finish_place", _MISSING)
        if finish_place is _MISSING:
            finish_place = None
        elif not _is_int(finish_place) or not 1 <= finish_place <= MAX_INT:
            problems.add(f"{label}.finish_place", f"must be a whole number from 1 to {MAX_INT:,}")
            finish_place = None
        prize_awarded = _amount(
            e, "prize_awarded", f"{label}.prize_awarded", problems, required=False
        )
        buy_in_paid = _amount(
            e,
            "buy_in_paid",
            f"{label}.buy_in_paid",
            problems,
            required=False,
            default=default_buy_in,
        )
        fee_paid = _amount(
            e, "fee_paid", f"{label}.fee_paid", problems, required=False, default=default_fee
        )
        rebuys_paid = _amount(
            e, "rebuys_paid", f"{label}.rebuys_paid", problems, required=False, default=0
        )
        rebuy_fees_paid = _amount(
            e, "rebuy_fees_paid", f"{label}.rebuy_fees_paid", problems, required=False, default=0
        )
        bounty_paid, bounty, bounties_won = _entry_bounties(
            e, label, status, tournament_bounty, problems
        )
        paid_with = None
        if "paid_with" in e:
            paid = [buy_in_paid, rebuys_paid, fee_paid, rebuy_fees_paid, bounty_paid]
            paid_with = _paid_with(
                e["paid_with"],
                label,
                None if None in paid else sum(p or 0 for p in paid),
                tickets,
                problems,
            )

        if entry_id is not None:
            if entry_id in seen_ids:
                problems.add(
                    f"{label}.entry_id",
                    f"{entry_id!r} is used twice (also entries[{seen_ids[entry_id]}])",
                )
            else:
                seen_ids[entry_id] = i
        if status == ACTIVE and player_id is not None:
            if player_id in active_player:
                first = active_player[player_id]
                problems.add(
                    f"{label}.player_id",
                    f"player {player_id!r} holds two active entries ({first} and {entry_id}); "
                    "a player holds at most one active entry",
                )
            else:
                active_player[player_id] = entry_id
        entries.append(
            # A value left None here is a problem already listed: the snapshot is refused.
            Entry(
                entry_id or "",
                player_id or "",
                screen_name,
                status or "",
                chips,
                finish_place,
                prize_awarded,
                buy_in_paid or 0,
                fee_paid or 0,
                rebuys_paid or 0,
                rebuy_fees_paid or 0,
                bounty_paid,
                bounty,
                bounties_won,
                paid_with,
            )
        )
    return entries


def _entry_bounties(
    e: dict[str, Any],
    label: str,
    status: str | None,
    tournament_bounty: int | None | object,
    problems: _Problems,
) -> tuple[int, int, int | None]:
    """(bounty_paid, bounty, bounties_won) of one entry (policies.md, knockouts)."""
    if tournament_bounty is None:
        for key in _BOUNTY_FIELDS:
            if key in e:
                problems.add(
                    f"{label}.{key}",
                    "is given but the tournament is not a knockout: tournament.bounty is "
                    "required for any bounty field",
                )
        return 0, 0, None
    default = tournament_bounty if isinstance(tournament_bounty, int) else 0
    bounty_paid = _amount(
        e, "bounty_paid", f"{label}.bounty_paid", problems, required=False, default=default
    )
    bounty_paid = bounty_paid or 0
    if "bounty" in e and status == ELIMINATED:
        problems.add(
            f"{label}.bounty",
            "an eliminated entry has no bounty on its head (the bounty is for active entries)",
        )
        bounty = 0
    else:
        bounty = _amount(e, "bounty", f"{label}.bounty", problems, required=False) or 0
        if "bounty" not in e:
            bounty = bounty_paid if status == ACTIVE else 0
    bounties_won = _amount(e, "bounties_won", f"{label}.bounties_won", problems, required=False)
    return bounty_paid, bounty, bounties_won


_PAYMENT_KEYS = frozenset({"method", "amount", "ticket_id"})


def _paid_with(
    value: object,
    label: str,
    paid: int | None,
    tickets: dict[str, str],
    problems: _Problems,
) -> tuple[Payment, ...] | None:
    """An entry's `paid_with`: what it paid with, adding up exactly to what it paid (`paid`,
    None when an amount of the entry was refused already). `tickets` gathers the ticket ids of
    the snapshot: one ticket pays for one entry."""
    path = f"{label}.paid_with"
    if not isinstance(value, list):
        problems.add(path, f"must be a JSON array of payments, not a JSON {json_type(value)}")
        return None
    if len(value) > MAX_PAYMENTS:
        problems.add(path, f"lists {len(value):,} payments; at most {MAX_PAYMENTS} are accepted")
        return None
    payments = []
    ok = True
    for j, item in enumerate(value):
        where = f"{path}[{j}]"
        if not isinstance(item, dict):
            problems.add(where, f"must be a JSON object, not a JSON {json_type(item)}")
            ok = False
            continue
        for key in item:
            if key not in _PAYMENT_KEYS:
                problems.add(
                    f"{where}.{_shorten(str(key))}",
                    "is not a field of a payment (method, amount, ticket_id)",
                )
                ok = False
        method = item.get("method", _MISSING)
        if method is _MISSING:
            problems.add(f"{where}.method", "is required (cash, tournament_money or ticket)")
            ok = False
        elif not isinstance(method, str) or method not in PAYMENT_METHODS:
            shown = (
                repr(_shorten(method)) if isinstance(method, str) else f"a JSON {json_type(method)}"
            )
            problems.add(
                f"{where}.method", f"must be cash, tournament_money or ticket, not {shown}"
            )
            ok = False
        amount = _amount(item, "amount", f"{where}.amount", problems, required=True)
        ticket_id = None
        if method == TICKET:
            ticket_id = _identifier(item, "ticket_id", f"{where}.ticket_id", problems)
            if ticket_id is not None:
                if ticket_id in tickets:
                    problems.add(
                        f"{where}.ticket_id",
                        f"ticket {ticket_id!r} is used twice (also by {tickets[ticket_id]}); "
                        "a ticket pays for one entry",
                    )
                    ok = False
                else:
                    tickets[ticket_id] = label
            else:
                ok = False
        elif "ticket_id" in item and method in PAYMENT_METHODS:
            problems.add(f"{where}.ticket_id", f"only a ticket has a ticket_id, not {method}")
            ok = False
        if amount is None:
            ok = False
            continue
        if ok:
            payments.append(Payment(str(method), amount, ticket_id))
    if not ok:
        return None
    given = sum(p.amount for p in payments)
    if paid is not None and given != paid:
        problems.add(
            path,
            f"adds up to {format_cents(given)}, but the entry paid {format_cents(paid)} "
            "(buy_in_paid + rebuys_paid + fee_paid + rebuy_fees_paid + bounty_paid)",
        )
        return None
    return tuple(payments)


def _parse_incident(
    doc: dict[str, Any], problems: _Problems, stored: bool = False
) -> IncidentFacts | None:
    inc = _object(doc, "incident", "incident", problems, required=False)
    if inc is None:
        return None
    failed_at = None
    raw = inc.get("failed_at", _MISSING)
    if raw is not _MISSING:
        try:
            failed_at = parse_timestamp(raw, stored=stored)
        except ValueError as exc:
            problems.add("incident.failed_at", str(exc))
    site_wide = inc.get("site_wide_issue", False)
    if not isinstance(site_wide, bool):
        problems.add(
            "incident.site_wide_issue", f"must be true or false, not a JSON {json_type(site_wide)}"
        )
        site_wide = False
    return IncidentFacts(failed_at, site_wide)


def _parse_entries_in_bulk(
    raw: list[Any],
    default_buy_in: int | None,
    default_fee: int | None,
    bounty: int | None = None,
) -> EntryColumns | None:
    """The same checks as the entry-by-entry path, column by column, for well-formed snapshots.

    A 250k-entry snapshot would spend seconds in per-entry Python; here each check runs over a
    whole column in C (map, join, set, compress, min, max). Returns None as soon as anything is
    unusual, and the caller then checks entry by entry to name every problem precisely. So this
    path only ever accepts; it never refuses.
    """
    bulk = _bulk_entries(raw, default_buy_in, default_fee, _keys_of(raw), bounty)
    return None if bulk is None else bulk[0]


def _bulk_entries(
    raw: list[Any],
    default_buy_in: int | None,
    default_fee: int | None,
    keys: frozenset[str] | None,
    bounty: int | None = None,
) -> tuple[EntryColumns, int] | None:
    """_parse_entries_in_bulk, given the entries' keys (_keys_of); with the columns, the
    number of ':' inside the ids and names and the payments' objects, for the duplicate-key
    check (_entry_colons). `bounty`: tournament.bounty (None: not a knockout).

    Each column is read once, and a field no entry gives is not read at all.
    """
    n = len(raw)
    if n == 0 or default_buy_in is None or default_fee is None:
        return None  # no entries, or the tournament's buy-in or fee was refused
    if keys is None or not keys <= _BULK_KEYS:
        return None  # an entry that is not an object, or an unknown field
    if bounty is None and not keys.isdisjoint(_BOUNTY_FIELDS):
        return None  # a bounty field in a tournament that is not a knockout
    # Each field, with what the checks below read where an entry omits it: None for a required
    # one (refused below), 0 chips, no screen name, and _MISSING for the others (an amount's
    # default depends on the tournament; a null finish place or paid_with is told apart from an
    # omitted one).
    defaults = dict.fromkeys(keys - {"email"}, _MISSING)
    defaults.update(entry_id=None, player_id=None, status=None, chips=0, screen_name="")
    # The amounts in cents, where an entry omits one: the tournament's buy-in, fee and bounty,
    # no rebuys, and None for the others (no prize awarded, no bounty given or won).
    amount_defaults = {
        "prize_awarded": None, "buy_in_paid": default_buy_in, "fee_paid": default_fee,
        "rebuys_paid": 0, "rebuy_fees_paid": 0, "bounty_paid": bounty or 0, "bounty": None,
        "bounties_won": None,
    }  # fmt: skip
    convert: dict[str, Callable[[list[Any]], list[Any]]] = {"status": _statuses}
    convert.update((key, _Cents(amount_defaults[key])) for key in keys & amount_defaults.keys())
    try:
        fields = _read_fields(raw, defaults, convert)
    except _Unusual:
        return None
    ids, players, screens = fields["entry_id"], fields["player_id"], fields["screen_name"]
    statuses, chips = fields["status"], fields["chips"]
    amounts: dict[str, list[Any]] = {
        key: fields[key] if key in fields else [default] * n  # no entry gives it: the default
        for key, default in amount_defaults.items()
    }
    active_count = statuses.count(ACTIVE)
    if active_count + statuses.count(ELIMINATED) != n:
        return None  # a missing or other status
    is_active = list(map(is_, statuses, repeat(ACTIVE)))
    # Ids and names; entry ids are unique, and a player holds at most one active entry.
    colons = 0
    texts = ((ids, True, True), (players, True, is_active), (screens, False, False))
    for column, required, unique in texts:
        checked = _text_column(column, required, unique)
        if checked is None:
            return None
        colons += checked
    # Chips: an eliminated entry may omit them (0); an active one without chips reads 0 and is
    # refused below like any active entry without chips above 0.
    if set(map(type, chips)) != {int} or max(chips) > MAX_BIGINT:
        return None  # a null, a float, a boolean or a number beyond a bigint
    if active_count and min(compress(chips, is_active)) <= 0:
        return None
    if any(compress(chips, map(not_, is_active))):
        return None  # an eliminated entry holds chips
    finish: list[Any] = [None] * n
    if "finish_place" in keys:
        read = fields["finish_place"]
        places = list(compress(read, map(is_not, read, repeat(_MISSING))))  # the places given
        if set(map(type, places)) != {int}:
            return None  # a null, or not a whole number
        if min(places) < 1 or max(places) > MAX_INT:
            return None
        finish = [None if place is _MISSING else place for place in read]
    prize_awarded, buy_ins, fees = (
        amounts[k] for k in ("prize_awarded", "buy_in_paid", "fee_paid")
    )
    rebuys, rebuy_fees = amounts["rebuys_paid"], amounts["rebuy_fees_paid"]
    bounty_paid: list[int] = amounts["bounty_paid"]
    won: list[int | None] = amounts["bounties_won"]
    heads: list[int] = bounty_paid  # not a knockout: all 0
    if bounty is not None:
        given_heads = amounts["bounty"]
        # The bounty on an active entry's head, by default what it paid; none on an
        # eliminated one (which may not give one).
        heads = list(map(mul, bounty_paid, is_active))
        if "bounty" in keys:
            if any(map(is_not, compress(given_heads, map(not_, is_active)), repeat(None))):
                return None
            if given_heads.count(None) == n - active_count:
                # Every active entry gives its bounty (a progressive knockout): the eliminated
                # ones' None becomes 0, in C.
                heads = list(map(_NONE_IS_ZERO.get, given_heads, given_heads))
            else:
                heads = [p if h is None else h for h, p in zip(given_heads, heads)]
    paid_with: list[tuple[Payment, ...] | None] = [None] * n
    if "paid_with" in keys:
        payments = _bulk_payments(
            fields["paid_with"], (buy_ins, fees, rebuys, rebuy_fees, bounty_paid)
        )
        if payments is None:
            return None
        paid_with, payment_colons = payments
        colons += payment_colons
    columns = EntryColumns(
        ids, players, screens, statuses, chips, finish, prize_awarded, buy_ins, fees,
        rebuys, rebuy_fees, bounty_paid, heads, won, paid_with,
    )  # fmt: skip
    return columns, colons


# Entries read at a time by _read_fields: a block and its values stay in the CPU's cache while
# each of their fields is read (docs/performance.md, "Issue 25: the knockout's engine row").
_BLOCK = 1024


def _read_fields(
    raw: list[dict[str, Any]],
    fields: dict[str, Any],
    convert: dict[str, Callable[[list[Any]], list[Any]]] | None = None,
) -> dict[str, list[Any]]:
    """{key: the entries' values of it, `fields[key]` where an entry omits it}, for each key;
    passed through `convert[key]`, a block at a time, where it is given (it may raise _Unusual).

    Read a block of entries at a time, every field of the block before the next block: 100k
    parsed entries and their values take more memory than the CPU's caches hold, and read one
    field at a time over the whole list, each field would fetch every entry from memory again (a
    knockout's entries, bigger and with their payments between them, cost several times as much
    to fetch as plain ones)."""
    columns: dict[str, list[Any]] = {key: [] for key in fields}
    for start in range(0, len(raw), _BLOCK):
        entries = raw[start : start + _BLOCK]
        m = len(entries)
        for key, default in fields.items():
            values: Iterable[Any] = map(dict.get, entries, repeat(key, m), repeat(default, m))
            if convert and key in convert:
                values = convert[key](list(values))  # while the values are in the cache
            columns[key] += values
    return columns


class _Unusual(Exception):
    """Something the bulk path does not take: the entry-by-entry check is to name it."""


def _statuses(values: list[Any]) -> list[str | None]:
    """Each status as one of the two module strings, None for any other value: the later passes
    over the column (the rules, the output) then find the same object on every line instead of
    fetching each entry's own copy of the word from memory."""
    try:
        return list(map(_STATUSES.get, values))
    except TypeError:
        raise _Unusual from None  # a list or an object


class _Cents:
    """An amount field read a block at a time (_read_fields): the block's amounts in cents,
    `default` where an entry omits the field (_MISSING). Each distinct text is parsed once, for
    the whole column. Raises _Unusual on a value that is not an amount string (a null
    included)."""

    def __init__(self, default: int | None) -> None:
        self.cents: dict[object, int | None] = {_MISSING: default}

    def __call__(self, texts: list[Any]) -> list[Any]:
        try:
            new = set(texts).difference(self.cents)
        except TypeError:
            raise _Unusual from None  # a list or an object
        if new:
            if set(map(type, new)) != {str}:
                raise _Unusual
            parsed = _parse_distinct(list(new))
            if parsed is None:
                raise _Unusual
            self.cents.update(parsed)
        return list(map(self.cents.__getitem__, texts))


_STATUSES = {ACTIVE: ACTIVE, ELIMINATED: ELIMINATED}
_ITEM_KEYS = {"cash": 2, "tournament_money": 2, "ticket": 3}  # method -> keys of its object
_NONE_IS_ZERO: dict[int | None, int] = {None: 0}


def _bulk_payments(
    read: list[Any], paid: tuple[list[int], ...]
) -> tuple[list[tuple[Payment, ...] | None], int] | None:
    """The `paid_with` column, or None when anything is unusual (the entry-by-entry check then
    names it); with the ':' of the payments' objects and ticket ids (_entry_colons).

    Column by column like the other fields: the payments of every entry that gives `paid_with`
    are checked as one column each of methods, amounts and ticket ids (the checks of
    _paid_with), then grouped back by entry; a block of entries at a time (_BLOCK), while they
    are in the CPU's cache (see _read_fields). `read`: the entries' paid_with, _MISSING where an
    entry gives none; `paid`: the columns whose sum each entry's payments must equal exactly."""
    column: list[tuple[Payment, ...] | None] = [None] * len(read)
    # A payment without an amount reads None (_read_fields' default), which _Cents refuses as
    # not an amount text.
    cents = _Cents(None)
    tickets: list[Any] = []
    colons = 0
    for start in range(0, len(read), _BLOCK):
        in_block = _payments_block(read, start, paid, cents, tickets, column)
        if in_block is None:
            return None
        colons += in_block
    if tickets:
        # Strings, not blank, no control character, and each once: one ticket pays one entry.
        in_ids = _text_column(tickets, True, True)
        if in_ids is None or max(map(len, tickets)) > MAX_ID_LENGTH:
            return None
        colons += in_ids
    return column, colons


def _payments_block(
    read: list[Any],
    start: int,
    paid: tuple[list[int], ...],
    cents: _Cents,
    tickets: list[Any],
    column: list[tuple[Payment, ...] | None],
) -> int | None:
    """_bulk_payments for the entries `start` to `start` + _BLOCK: their payments checked and
    set in `column`, their tickets' ids added to `tickets`. The ':' of their payments' objects,
    or None when anything is unusual."""
    block = read[start : start + _BLOCK]
    is_given = list(map(is_not, block, repeat(_MISSING)))
    given = list(compress(range(start, start + len(block)), is_given))
    if not given:
        return 0
    lists: list[Any] = list(compress(block, is_given))
    if set(map(type, lists)) != {list}:
        return None
    sizes = list(map(len, lists))
    if max(sizes) > MAX_PAYMENTS:
        return None
    items: list[Any] = list(chain.from_iterable(lists))
    if items and set(map(type, items)) != {dict}:
        return None
    count = len(items)
    try:
        fields = _read_fields(items, dict.fromkeys(_PAYMENT_KEYS), {"amount": cents})
    except _Unusual:
        return None
    methods, amounts, ticket_ids = fields["method"], fields["amount"], fields["ticket_id"]
    # Each method's object holds exactly its keys: method and amount, and a ticket's id (an
    # unknown method reads None and never equals a key count).
    key_counts = list(map(len, items))
    try:
        expected_counts = list(map(_ITEM_KEYS.get, methods))
    except TypeError:
        return None  # a method that is a list or an object: the entry-by-entry check names it
    if expected_counts != key_counts:
        return None
    tickets += compress(ticket_ids, map(eq, methods, repeat(TICKET, count)))
    # Each entry's payments add up to what it paid: the sums of consecutive runs of the
    # amounts, from their running total.
    running = list(accumulate(amounts, initial=0))
    ends = list(accumulate(sizes))
    totals = map(
        sub, map(running.__getitem__, ends), map(running.__getitem__, map(sub, ends, sizes))
    )
    owed: Iterable[int] = map(paid[0].__getitem__, given)
    for more in paid[1:]:
        owed = map(add, owed, map(more.__getitem__, given))
    if not all(map(eq, totals, owed)):
        return None
    # Back to one tuple per entry.
    payments = iter(map(tuple.__new__, repeat(Payment), zip(methods, amounts, ticket_ids)))
    deque(map(column.__setitem__, given, map(tuple, map(islice, repeat(payments), sizes))), 0)
    return sum(key_counts)


def _text_column(
    column: list[Any], required: bool, unique: bool | list[bool] = False
) -> int | None:
    """The ':' in a column of ids or names, or None when one is not a string, is too long,
    holds a control character, (`required`) is empty or blank, or is given twice among the
    strings `unique` selects (True: all of them; a list: where it is True)."""
    # Joined, measured and gathered a block at a time (_BLOCK): the lengths and the hashes are
    # read while the block's strings are still in the CPU's cache (see _read_fields).
    parts = []
    longest, shortest = 0, MAX_ID_LENGTH
    distinct: set[str] = set()
    for start in range(0, len(column), _BLOCK):
        strings = column[start : start + _BLOCK]
        try:
            parts.append("".join(strings))  # refuses anything but strings
        except TypeError:
            return None
        lengths = list(map(len, strings))
        longest, shortest = max(longest, max(lengths)), min(shortest, min(lengths))
        if unique is True:
            distinct.update(strings)
        elif unique:
            distinct.update(compress(strings, unique[start : start + _BLOCK]))
    if unique is not False and len(distinct) != (len(column) if unique is True else sum(unique)):
        return None  # one given twice
    text = "".join(parts)
    if longest > min(MAX_ID_LENGTH, MAX_SCREEN_NAME_LENGTH):
        return None
    if required and shortest == 0:
        return None
    if text.isascii():
        # What is left once the printable characters but the space are taken out: a control
        # character refuses, a space asks whether a whole id is blank.
        odd = text.encode("ascii").translate(None, _GRAPHIC_ASCII)
        if odd.strip(b" "):
            return None
        if odd and required and not all(map(str.strip, column)):
            return None
    elif _has_control_character(text) or required and not all(map(str.strip, column)):
        return None
    return text.count(":")


def _entry_colons(raw: list[Any], keys: frozenset[str], in_texts: int) -> int:
    """The ':' orjson.dumps(raw) writes, for entries the bulk path accepted: one per key, plus
    those inside the strings. Statuses, amounts and numbers hold none; ids and names hold
    `in_texts`; an e-mail address (checked elsewhere, any JSON value) is serialised to count."""
    colons = sum(map(len, raw)) + in_texts
    if "email" in keys:
        emails = list(map(dict.get, raw, repeat("email", len(raw))))
        colons += orjson.dumps(emails).count(b":")
    return colons


# Every printable ASCII character: what bytes.translate deletes to find control characters;
# and the same but for the space.
_PRINTABLE_ASCII = bytes(range(0x20, 0x7F))
_GRAPHIC_ASCII = bytes(range(0x21, 0x7F))


def _has_control_character(text: str) -> bool:
    """Whether `text` holds a character _CONTROL refuses, without a regex pass when it is plain
    (the regex costs a hundred instructions per character)."""
    if text.isascii():
        return bool(text.encode("ascii").translate(None, _PRINTABLE_ASCII))
    if text.isprintable():  # no control character (Cc) and no lone surrogate (Cs)
        return False
    return _CONTROL.search(text) is not None


# Amounts written with exactly two decimals, one per line: how platforms write them, and what
# _parse_distinct reads column-wise (a knockout's bounties are nearly all distinct).
_TWO_DECIMALS = re.compile(r"(?:[0-9]{1,15}\.[0-9]{2}\n)*")


def _parse_distinct(texts: list[str]) -> dict[str, int] | None:
    """{text: cents} for distinct amount strings, or None when one is not an amount.

    Texts with exactly two decimals are checked by one regex pass over their joined text and
    converted by int() without the point, in C; any other spelling ("30", "30.5") is parsed one
    by one by parse_amount, which decides."""
    joined = "\n".join(texts) + "\n"
    if len(texts) > 8 and joined.count("\n") == len(texts) and _TWO_DECIMALS.fullmatch(joined):
        cents = list(map(int, map(str.replace, texts, repeat("."), repeat(""))))
        if max(cents) <= MAX_CENTS:
            return dict(zip(texts, cents))
    try:
        return {text: parse_amount(text) for text in texts}
    except AmountError:
        return None


def _amounts_of(texts: list[str]) -> list[int] | None:
    """Cents for a column of amount strings, each distinct text parsed once (prize levels, buy-ins
    and fees repeat); None when one is not a plain amount."""
    try:
        cents = {text: parse_amount(text) for text in set(texts)}
    except AmountError:
        return None
    return list(map(cents.__getitem__, texts))


# What the bulk path leaves to the row-by-row check: descriptions longer than a database column
# holds, or holding control characters (the row-by-row check names them; docs/snapshot-limits.md).
_DESCRIPTION_MAX = 255


def _parse_prizes_in_bulk(
    raw: list[Any], last_place: int = MAX_PLACE
) -> tuple[list[PrizeRow], list[int]] | None:
    """The row-by-row checks of `_parse_prizes`, column by column, for a well-formed table.

    Platforms that export one row per paid place send tens of thousands of rows; here they cost
    a few C-level passes. Like the entries' bulk path it only ever accepts: anything unusual
    (an odd type, a gap, a place listed twice, a rising prize) returns None and the row-by-row
    check names the problem.
    """
    n = len(raw)
    keys = _keys_of(raw)  # every key some row gives (None: a row that is not an object)
    if n == 0 or keys is None or not keys <= _PRIZE_KEYS:
        return None
    is_single = list(map(dict.__contains__, raw, repeat("place", n)))
    is_range = list(map(dict.__contains__, raw, repeat("places", n)))
    if not all(map(xor, is_single, is_range)):
        return None  # both or neither
    texts: list[Any] = list(map(dict.get, raw, repeat("amount", n)))
    if set(map(type, texts)) != {str}:
        return None  # each distinct text is then parsed, and refused, by _amounts_of
    non_cash: list[Any] = [False] * n
    if "non_cash" in keys:
        non_cash = list(map(dict.get, raw, repeat("non_cash", n), repeat(False, n)))
        if set(map(type, non_cash)) != {bool}:
            return None
    descriptions: list[Any] = [""] * n
    if "description" in keys:
        descriptions = list(map(dict.get, raw, repeat("description", n), repeat("", n)))
        try:
            text = "".join(descriptions)  # refuses anything but strings
        except TypeError:
            return None
        if max(map(len, descriptions)) > _DESCRIPTION_MAX or _has_control_character(text):
            return None
    amounts = _amounts_of(texts)
    if amounts is None:
        return None
    place_from: list[Any] = list(map(dict.get, raw, repeat("place", n)))
    place_to = place_from.copy()
    singles = list(compress(place_from, is_single))
    if singles and (
        set(map(type, singles)) != {int} or min(singles) < 1 or max(singles) > MAX_PLACE
    ):
        return None
    # Every place the table lists, with its amount: the single places, then each range expanded.
    places = singles
    place_amounts = list(compress(amounts, is_single))
    for i in compress(range(n), is_range):  # ranges are few: a loop is fine
        pair = raw[i]["places"]
        if not (type(pair) is list and len(pair) == 2 and all(map(_is_int, pair))):
            return None
        first, last = pair
        if not 1 <= first <= last <= min(MAX_PLACE, last_place):
            return None
        place_from[i], place_to[i] = first, last
        places.extend(range(first, last + 1))
        place_amounts.extend(repeat(amounts[i], last - first + 1))
    # Places 1 to the last one listed, each exactly once (anything else: a gap or a place listed
    # twice, which the row-by-row check names).
    count = len(places)
    if max(places) != count or len(set(places)) != count:
        return None
    by_place = dict(zip(places, place_amounts))
    table = list(map(by_place.__getitem__, range(1, count + 1)))
    if table[0] <= 0 or not all(map(ge, table, islice(table, 1, None))):
        return None  # no paid place, or a place paying more than the one before it
    # The prizes never rise, so the unpaid places (0.00) are all at the end.
    last_paid = count - table.count(0)
    rows = list(
        # tuple.__new__ is what PrizeRow._make calls, without a Python call per row.
        map(
            tuple.__new__,
            repeat(PrizeRow, n),
            zip(place_from, place_to, amounts, non_cash, descriptions, strict=True),
        )
    )
    return rows, table[:last_paid]
