"""Bringing a tournament in: snapshot import (JSON, CSV, API), export, API clients.

Validation is the engine's `parse_snapshot` and nothing else (one validator). An import is all or
nothing: the document, the tournament's fields, the prize table and every entry are written in one
transaction, or a `Refused` listing every problem is raised and nothing is stored.
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
import re
import secrets
import zlib
from collections.abc import Callable, Collection, Mapping
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Any, BinaryIO, TypeVar

from django.db import IntegrityError, connection, transaction
from django.db.models import Max
from django.utils import timezone

from refunds_admin import payouts as engine
from refunds_admin.accounts.roles import CAN_DECIDE, CAN_PREPARE, CAN_READ, require_role
from refunds_admin.audit import context as audit_context
from refunds_admin.audit.services import record
from refunds_admin.db import Same, copy_into_partition, insert_columns, update_binary
from refunds_admin.errors import Refused, required_text
from refunds_admin.payouts import SnapshotError, parse_snapshot, paused_gc, stored
from refunds_admin.payouts.snapshot import MAX_CSV_BYTES, EntryColumns
from refunds_admin.policies import services as policies
from refunds_admin.policies.models import PolicyVersion
from refunds_admin.recent import Recent

from .models import (
    FORMATS,
    KNOCKOUT,
    PAID_WITH,
    REBUYS,
    ApiClient,
    Entry,
    PrizePlace,
    Snapshot,
    Tournament,
)

if TYPE_CHECKING:
    from django.contrib.auth.models import User

# (field or CSV row, message), as `Refused.problems` lists them.
Problems = list[tuple[str, str]]
# Uploaded CSV data: the file's bytes, its text, or the file itself.
CsvData = bytes | str | BinaryIO

# --------------------------------------------------------------------------------------------
# Reading stored snapshots back into the engine
# --------------------------------------------------------------------------------------------

# A stored snapshot never changes (append-only versions), so its parsed form can be cached by id
# and hash. The rule preview runs on every keystroke of the incident form; parsing a 100k-entry
# document each time would make it sluggish. Two documents are enough for the usual work.
_PARSED: Recent[tuple[int, str], engine.Snapshot] = Recent(size=2)


def engine_snapshot(snapshot: Snapshot) -> engine.Snapshot:
    """The engine's parsed `Snapshot` for a stored snapshot version (cached; it is immutable):
    from the compact form stored at import when there is one (payouts/stored.py), else parsed
    from the document."""
    return _PARSED.get((snapshot.pk, snapshot.sha256), lambda: _parsed_form(snapshot))


def current_snapshot(tournament: Tournament) -> Snapshot:
    """The tournament's current snapshot row for computing from it, without its document (14 MB
    for 100k entries): `engine_snapshot` reads the parsed form stored beside it."""
    if tournament.current_snapshot_id is None:
        raise Refused(f"Tournament {tournament.external_id} has no snapshot; import one first.")
    return Snapshot.objects.defer("document_zlib").get(pk=tournament.current_snapshot_id)


def current_snapshot_row(tournament: Tournament) -> Snapshot | None:
    """The tournament's current snapshot version without its document and parsed form
    (megabytes each for 100k entries; pages show neither, and `engine_snapshot` reads the
    parsed form when it is not cached), or None when it has none."""
    if tournament.current_snapshot_id is None:
        return None
    return Snapshot.objects.defer("document_zlib", "parsed").get(pk=tournament.current_snapshot_id)


def _parsed_form(snapshot: Snapshot) -> engine.Snapshot:
    if snapshot.parsed is not None:
        found = stored.load(bytes(snapshot.parsed))
        if found is not None:  # None: written by a release with another layout
            return found
    # Accepted when it was imported, perhaps by a release that read more than this one does.
    return parse_snapshot(snapshot.document, stored=True)


def _problems_of(error: SnapshotError) -> Problems:
    problems = [(p.field, p.message) for p in error.problems]
    if getattr(error, "more", 0):
        problems.append(("document", f"and {error.more} more problems not listed"))
    return problems


# --------------------------------------------------------------------------------------------
# JSON import
# --------------------------------------------------------------------------------------------


def _document_text(raw: bytes | bytearray | memoryview | str | dict[str, Any]) -> str:
    """The document as text, exactly as received: bytes must be UTF-8 (the format's encoding)."""
    if isinstance(raw, dict):
        return json.dumps(raw, indent=1, ensure_ascii=False) + "\n"
    if isinstance(raw, (bytes, bytearray, memoryview)):
        try:
            return bytes(raw).decode("utf-8")
        except UnicodeDecodeError as e:
            raise Refused(
                "The snapshot is not valid UTF-8 text.",
                problems=[("document", f"byte {e.start} is not UTF-8")],
            ) from None
    if isinstance(raw, str):
        return raw
    raise TypeError(f"a snapshot document is bytes, str or dict, not {type(raw).__name__}")


def _require_importer(acting_user: User | None) -> None:
    # None is the system: the command line run by an operator on the server, the demo loader.
    # A request always has a user (possibly anonymous), so a view can never pass None.
    if acting_user is not None:
        require_role(acting_user, CAN_PREPARE, "import snapshots")


# The collector paused: an import builds hundreds of thousands of small objects and no cycles,
# and each full collection would walk them all (docs/performance.md, "The collector").
@paused_gc()
@transaction.atomic
def _import_snapshot(
    raw: bytes | str | dict[str, Any], *, acting_user: User | None, source: str
) -> Snapshot:
    """Validate a `tournament-snapshot/1` document and store it as the tournament's next version.

    `acting_user` needs the support or manager role (None: the system, e.g. the command line).
    `raw` is the document as received (bytes or str; it is stored byte for byte with its
    SHA-256). Importing the `external_id` of a known tournament adds a snapshot version (the
    incident may still be open while the platform sends a better snapshot: views, the API and
    commands call `incidents.services.import_snapshot`, the only caller of this one, which keeps
    that incident's rule in step with the new version); once a proposal was
    approved the tournament is frozen and a re-import is refused. Importing exactly the document
    of the current version again changes nothing and returns that version (its `already_current`
    set, for the upload page to say so), so that a retried API call does not pile up identical
    versions.
    """
    _require_importer(acting_user)
    # Bytes as received go to the engine as they are: orjson reads UTF-8 itself, so the document
    # is neither decoded to a str first nor encoded back by orjson (docs/performance.md, "Issue
    # 25: the entries' key and the lines' entry index"). They are checked to be UTF-8 only when
    # the engine refuses them, for the same message as before.
    document = (
        bytes(raw) if isinstance(raw, (bytes, bytearray, memoryview)) else _document_text(raw)
    )
    # The decoded document, 100k-300k small objects: kept past the parse and let go while
    # PostgreSQL indexes the entries (_store), where this thread would otherwise wait.
    decoded: list[object] = []
    with ThreadPoolExecutor(max_workers=1) as other_core:
        # zlib and SHA-256 let go of the interpreter while they work: the document is compressed
        # and hashed on the other core while this one validates it.
        stored_form = other_core.submit(_compressed_and_hashed, document)
        try:
            # tournament.policy must name a policy the app knows (refused naming the field).
            parsed = parse_snapshot(
                document, known_policies=policies.known_policy_ids(), keep=decoded
            )
        except SnapshotError as e:
            if isinstance(document, bytes):
                _document_text(document)  # bytes that are not UTF-8 are refused as such
            raise Refused(
                "The snapshot was refused; nothing was imported.",
                problems=_problems_of(e),
                total=len(e.problems) + e.more,
            ) from None
        document_zlib, sha256 = stored_form.result()
    return _store(
        parsed, document_zlib, sha256, acting_user=acting_user, source=source, decoded=decoded
    )


def _compressed_and_hashed(document: str | bytes) -> tuple[bytes, str]:
    """The document (text, or its UTF-8) as stored (zlib, fastest level: docs/performance.md)
    and its SHA-256."""
    data = document.encode("utf-8") if isinstance(document, str) else document
    return zlib.compress(data, 1), hashlib.sha256(data).hexdigest()


def _store(
    parsed: engine.Snapshot,
    document_zlib: bytes,
    sha256: str,
    *,
    acting_user: User | None,
    source: str,
    decoded: list[object] | None = None,
) -> Snapshot:
    """Store a validated snapshot as the tournament's next version. `decoded`, when given, holds
    the decoded document, emptied (its objects freed) while PostgreSQL indexes the entries."""
    formats = formats_of(parsed)
    fields = {
        "name": parsed.name,
        "currency": parsed.currency,
        "buy_in_cents": parsed.buy_in,
        "fee_cents": parsed.fee,
        "starts_at": parsed.starts_at.at,
        "bounty_cents": parsed.bounty,
        "guarantee_cents": parsed.guarantee,
        "formats": formats,
    }
    locked = Tournament.objects.select_for_update().filter(external_id=parsed.external_id)
    tournament = locked.first()
    named_policy = parsed.policy_id
    previous = None
    policy_before = None
    created = False
    if tournament is None:
        # The policy the snapshot names, or the default policy: its current approved version.
        policy_version = policies.version_for_snapshot(named_policy)
        try:
            # A savepoint, so that a tournament created concurrently is not a crash.
            with transaction.atomic():
                tournament = Tournament.objects.create(
                    external_id=parsed.external_id, policy_version=policy_version, **fields
                )
            created = True
        except IntegrityError:
            # Another import created it and committed meanwhile (a retried API call racing its
            # first): this one is a re-import of that tournament, as if it had come after.
            tournament = locked.first()
            if tournament is None:
                raise Refused(
                    f"Tournament {parsed.external_id} was being imported at the same time; "
                    "try again."
                ) from None
    if not created:
        previous = current_snapshot_row(tournament)  # its version and SHA-256
        if previous is not None and previous.sha256 == sha256:
            # The same document again (a retried API call): nothing to replace, frozen or not.
            # Marked, so that the upload page says nothing was imported.
            previous.already_current = True
            return previous
        if tournament.frozen_at is not None:
            raise Refused(
                f"Tournament {tournament.external_id} is frozen: a proposal was approved on "
                f"{tournament.frozen_at:%Y-%m-%d %H:%M} UTC, so its snapshot can no longer be "
                "replaced."
            )
        # A re-import that names another policy moves the tournament to it (the platform's
        # word); one that names none keeps the tournament's policy, a manager's change included.
        if named_policy and named_policy != tournament.policy_version.policy_id:
            fields["policy_version"] = policies.version_for_snapshot(named_policy)
            # Whoever imported it chose the policy now (four eyes on the proposal that follows,
            # as for "Change the policy"); the system (None) is the platform's word.
            fields["policy_changed_by"] = (
                acting_user if acting_user and acting_user.is_authenticated else None
            )
            fields["policy_changed_at"] = timezone.now()
            policy_before = tournament.policy_version.label
        for name, value in fields.items():
            setattr(tournament, name, value)

    version = (tournament.snapshots.aggregate(v=Max("version"))["v"] or 0) + 1
    active = parsed.active_count
    snapshot = Snapshot.objects.create(
        tournament=tournament,
        version=version,
        # Written with the compact form at the end, in binary (db.update_binary).
        document_zlib=b"",
        sha256=sha256,
        source=source,
        formats=formats,
        entries_count=len(parsed.columns.entry_id),
        active_count=active,
        starts_at=parsed.starts_at.at,
        imported_by=acting_user if acting_user and acting_user.is_authenticated else None,
    )
    sid = snapshot.pk
    # One row per paid place (a range of places is expanded), column by column.
    places = [
        (place, row) for row in parsed.prizes for place in range(row.place_from, row.place_to + 1)
    ]
    insert_columns(
        PrizePlace,
        ("snapshot_id", "place", "amount_cents", "non_cash", "description"),
        (
            Same(sid),
            [place for place, _ in places],
            [row.amount for _, row in places],
            [bool(row.non_cash) for _, row in places],
            [row.description or "" for _, row in places],
        ),
    )

    def compact_form() -> bytes:
        # Run while PostgreSQL indexes the entries: the compact form of the parsed snapshot
        # (payouts/stored.py), and the decoded document let go.
        if decoded is not None:
            decoded.clear()
        return stored.dump(parsed)

    snapshot.parsed = _insert_entries(
        snapshot, parsed.columns, parsed.emails, formats=formats, meanwhile=compact_form
    )
    snapshot.document_zlib = document_zlib
    update_binary(
        Snapshot, snapshot.pk, {"document_zlib": document_zlib, "parsed": snapshot.parsed}
    )
    tournament.current_snapshot = snapshot
    tournament.save()
    # The rule preview and the proposal that usually follow need the parsed snapshot: keep it.
    # Safe even if this transaction rolls back: the key holds the document's SHA-256, and the
    # parsed form is a function of the document alone.
    _PARSED.put((snapshot.pk, sha256), parsed)

    record(
        "snapshot.imported",
        snapshot,
        actor=acting_user,
        tournament=tournament,
        before=None
        if previous is None
        else {"version": previous.version, "sha256": previous.sha256}
        | ({"policy": policy_before} if policy_before else {}),
        after={
            "version": version,
            "sha256": sha256,
            "source": source,
            "entries": len(parsed.columns.entry_id),
            "active": active,
            "policy": tournament.policy_version.label,
        },
    )
    return snapshot


ENTRY_COLUMNS_IN_DB = (
    "snapshot_id",
    "position",
    "entry_id",
    "player_id",
    "screen_name",
    "status",
    "chips",
    "buy_in_paid_cents",
    "fee_paid_cents",
    "finish_place",
    "prize_awarded_cents",
)
# The columns of each format, written only for a snapshot that uses it: the others keep their
# database defaults (0, or empty), so a plain snapshot's COPY carries what it always did.
FORMAT_COLUMNS_IN_DB = {
    REBUYS: ("rebuys_paid_cents", "rebuy_fees_paid_cents"),
    KNOCKOUT: ("bounty_paid_cents", "bounty_cents", "bounties_won_cents"),
    PAID_WITH: ("paid_with",),
}


def formats_of(parsed: engine.Snapshot) -> list[str]:
    """What the snapshot uses beyond a freeze-out paid in cash (models.FORMATS), from the
    engine's columns: the screens show those columns only then."""
    uses = {
        KNOCKOUT: parsed.is_knockout,
        REBUYS: parsed.has_rebuys,
        PAID_WITH: parsed.has_paid_with,
    }
    return [name for name in FORMATS if uses[name]]


def payments_json(payments: tuple[engine.Payment, ...] | None) -> list[dict[str, Any]] | None:
    """An entry's `paid_with` (or a line's `refunds`) as stored: a list of
    {"method", "amount_cents", "ticket_id" (tickets only)}, in the snapshot's order."""
    if payments is None:
        return None
    return [
        {"method": p.method, "amount_cents": p.amount}
        | ({"ticket_id": p.ticket_id} if p.ticket_id is not None else {})
        for p in payments
    ]


_T = TypeVar("_T")


def _email_of(emails: dict[str, str]) -> Callable[[str], str]:
    """entry_id -> e-mail address or "" (most entries carry none)."""
    return lambda entry_id: emails.get(entry_id, "")


def _insert_entries(
    snapshot: Snapshot,
    columns: EntryColumns,
    emails: dict[str, str] | None = None,
    *,
    formats: Collection[str] = FORMATS,
    meanwhile: Callable[[], _T],
) -> _T:
    """Write the entries in snapshot order (COPY on PostgreSQL), from the engine's columns;
    `position` is the index in the document's `entries` array, so row `entries[4]` of an error
    message is position 4. Returns `meanwhile()`, run while PostgreSQL indexes them.

    The columns of the formats a snapshot does not use (`formats`, see formats_of), and the
    e-mail column when no entry gives one, are not written: they keep their database defaults,
    and a plain snapshot costs what it always did."""
    c = columns
    names = list(ENTRY_COLUMNS_IN_DB)
    data = [
        Same(snapshot.pk), range(len(c.entry_id)), c.entry_id, c.player_id, c.screen_name, c.status, c.chips,
        c.buy_in_paid, c.fee_paid, c.finish_place, c.prize_awarded,
    ]  # fmt: skip
    if emails:  # most snapshots give none: the column keeps its default, ""
        names.append("email")
        data.append(list(map(_email_of(emails), c.entry_id)))
    if REBUYS in formats:
        names += FORMAT_COLUMNS_IN_DB[REBUYS]
        data += [c.rebuys_paid, c.rebuy_fees_paid]
    if KNOCKOUT in formats:
        names += FORMAT_COLUMNS_IN_DB[KNOCKOUT]
        data += [c.bounty_paid, c.bounty, c.bounties_won]
    if PAID_WITH in formats:
        names += FORMAT_COLUMNS_IN_DB[PAID_WITH]
        data.append(list(map(payments_json, c.paid_with)))
    if connection.vendor == "postgresql":
        # The snapshot's own partition, indexed after the COPY (refunds_admin/db/,
        # docs/performance.md): a new snapshot version never has entries yet.
        return copy_into_partition(
            Entry, "snapshot_id", snapshot.pk, names, data, meanwhile=meanwhile
        )
    return insert_columns(Entry, names, data, meanwhile=meanwhile)


def export_snapshot(tournament: Tournament) -> str:
    """The current snapshot exactly as it was imported (importing it again round-trips)."""
    if tournament.current_snapshot_id is None:
        raise Refused(f"Tournament {tournament.external_id} has no snapshot.")
    return Snapshot.objects.only("document_zlib").get(pk=tournament.current_snapshot_id).document


# --------------------------------------------------------------------------------------------
# CSV import: for staff who only have a chip-count export
# --------------------------------------------------------------------------------------------

# The entries CSV, header row required (column order free; only entry_id, player_id and status
# are required, an empty cell means "not given": chips for eliminated entries, paid amounts
# defaulting to the tournament's buy-in and fee, finish place and prize awarded):
ENTRY_COLUMNS = (
    "entry_id",
    "player_id",
    "screen_name",
    "status",
    "chips",
    "buy_in_paid",
    "fee_paid",
    "finish_place",
    "prize_awarded",
    "email",
    # Tournament formats (policies.md), all optional: amounts like the others, and paid_with
    # written "ticket TKT-88121 55.00; cash 11.00" (see PAID_WITH_SYNTAX).
    "rebuys_paid",
    "rebuy_fees_paid",
    "bounty_paid",
    "bounty",
    "bounties_won",
    "paid_with",
)
ENTRY_REQUIRED = ("entry_id", "player_id", "status")
ENTRY_INTEGERS = ("chips", "finish_place")
# One cell for an entry's payments: parts separated by ";", each "method amount", a ticket
# "ticket TICKET-ID amount". The engine checks methods, amounts, ticket ids and the sum.
PAID_WITH_SYNTAX = '"ticket TKT-88121 55.00; cash 11.00"'

# The prize table CSV: `place` is one place ("1") or an inclusive range ("10-18"; a `places`
# column is accepted as a synonym), `amount` the cash value, `non_cash` yes/no (a package or a
# ticket counted at its stated value), `description` free text.
PRIZE_COLUMNS = ("place", "amount", "non_cash", "description")
PRIZE_REQUIRED = ("place", "amount")

# The tournament fields typed in the form.
TOURNAMENT_FIELDS = ("external_id", "name", "currency", "buy_in", "fee", "starts_at")
TOURNAMENT_OPTIONAL = ("chips_in_play", "bounty", "guarantee", "policy")

# At most 19 digits: every number the format holds fits a 64-bit integer (the engine then checks
# the column's own range); a longer one is refused before int() spends time on it.
_INTEGER = re.compile(r"^-?[0-9]{1,19}$")
_RANGE = re.compile(r"^\s*([0-9]{1,19})\s*(?:-|–|\.\.)\s*([0-9]{1,19})\s*$")
_TRUE = {"yes", "y", "true", "1", "x"}
_FALSE = {"", "no", "n", "false", "0"}


def _csv_text(data: CsvData, what: str) -> str:
    if isinstance(data, (bytes, bytearray, str)) and len(data) > MAX_CSV_BYTES:
        raise Refused(
            f"The {what} is too large.",
            problems=[
                (
                    what,
                    f"is {len(data) / 2**20:,.1f} MB; at most {MAX_CSV_BYTES // 2**20} MB are "
                    "accepted (docs/snapshot-limits.md)",
                )
            ],
        )
    if isinstance(data, (bytes, bytearray)):
        try:
            # utf-8-sig: spreadsheet exports often start with a byte-order mark.
            return bytes(data).decode("utf-8-sig")
        except UnicodeDecodeError as e:
            raise Refused(
                f"The {what} is not UTF-8 text.", problems=[(what, f"byte {e.start} is not UTF-8")]
            ) from None
    if hasattr(data, "read"):
        return _csv_text(data.read(), what)
    return data.lstrip("\ufeff")


def _read_csv(
    data: CsvData,
    what: str,
    columns: tuple[str, ...],
    required: tuple[str, ...],
    synonyms: Mapping[str, str] | None = None,
) -> tuple[list[tuple[int, dict[str, str]]], Problems]:
    """Rows of a CSV as (row number, dict); the header is row 1. Problems are collected."""
    problems = []
    text = _csv_text(data, what)
    reader = csv.reader(io.StringIO(text, newline=""))
    try:
        header = next(reader)
    except StopIteration:
        return [], [(what, "is empty; a header row is required")]
    except csv.Error as e:
        return [], [(f"{what} row 1", str(e))]
    header = [(synonyms or {}).get(h.strip().lower(), h.strip().lower()) for h in header]
    for name in header:
        if name not in columns:
            problems.append(
                (f"{what} header", f"unknown column {name!r}; expected {', '.join(columns)}")
            )
    for name in required:
        if name not in header:
            problems.append((f"{what} header", f"column {name!r} is missing"))
    if problems:
        return [], problems
    rows = []
    try:
        for cells in reader:
            number = reader.line_num
            if not any(c.strip() for c in cells):
                continue
            if len(cells) > len(header):
                problems.append(
                    (f"{what} row {number}", f"{len(cells)} cells for {len(header)} columns")
                )
                continue
            cells = cells + [""] * (len(header) - len(cells))
            rows.append((number, {h: c.strip() for h, c in zip(header, cells, strict=True)}))
    except csv.Error as e:
        problems.append((f"{what} row {reader.line_num}", str(e)))
    return rows, problems


def _entries_from_csv(data: CsvData) -> tuple[list[dict[str, Any]], list[str], Problems]:
    rows, problems = _read_csv(data, "entries CSV", ENTRY_COLUMNS, ENTRY_REQUIRED)
    entries, where = [], []
    for number, row in rows:
        label = f"entries CSV row {number}" + (
            f" (entry {row['entry_id'][:40]})" if row.get("entry_id") else ""
        )
        entry: dict[str, Any] = {}
        for name in ENTRY_COLUMNS:
            value = row.get(name, "")
            if value == "" and name not in ENTRY_REQUIRED:
                continue  # an empty cell means the field is not given
            if name in ENTRY_INTEGERS:
                if not _INTEGER.match(value):
                    problems.append(
                        (
                            f"{label}, {name}",
                            f"{value[:40]!r} is not a whole number"
                            if not re.fullmatch(r"-?[0-9]+", value)
                            else f"{value[:20]}… is too large",
                        )
                    )
                    continue
                entry[name] = int(value)
            elif name == "paid_with":
                if value.lower() == "cash":
                    # "cash" alone: all in cash, as the breakdown and the proposal's CSV export
                    # write it, the same as an empty cell (the spec's default).
                    continue
                payments = _payments_from_cell(value)
                if isinstance(payments, str):
                    problems.append((f"{label}, paid_with", payments))
                    continue
                entry[name] = payments
            else:
                entry[name] = value
        entries.append(entry)
        where.append(label)
    return entries, where, problems


def _payments_from_cell(cell: str) -> list[dict[str, str]] | str:
    """The `paid_with` list of one CSV cell, or what is wrong with the cell's layout."""
    payments = []
    for n, part in enumerate(cell.split(";"), start=1):
        words = part.split()
        if not words:
            return f"part {n} is empty; write {PAID_WITH_SYNTAX}"
        if len(words) not in (2, 3) or (len(words) == 3) != (words[0] == "ticket"):
            return (
                f'part {n} {part.strip()[:40]!r} is not "method amount" (a ticket: '
                f'"ticket TICKET-ID amount"); write {PAID_WITH_SYNTAX}'
            )
        payment = {"method": words[0], "amount": words[-1]}
        if len(words) == 3:
            payment["ticket_id"] = words[1]
        payments.append(payment)
    return payments


def _prizes_from_csv(data: CsvData) -> tuple[list[dict[str, Any]], list[str], Problems]:
    rows, problems = _read_csv(
        data, "prize table CSV", PRIZE_COLUMNS, PRIZE_REQUIRED, synonyms={"places": "place"}
    )
    prizes, where = [], []
    for number, row in rows:
        label = f"prize table CSV row {number}"
        prize: dict[str, Any] = {}
        place = row["place"]
        if _INTEGER.match(place):
            prize["place"] = int(place)
        elif m := _RANGE.match(place):
            prize["places"] = [int(m.group(1)), int(m.group(2))]
        else:
            problems.append(
                (f"{label}, place", f"{place[:40]!r} is not a place (3) or range (10-18)")
            )
        prize["amount"] = row["amount"]
        non_cash = row.get("non_cash", "").lower()
        if non_cash in _TRUE:
            prize["non_cash"] = True
        elif non_cash not in _FALSE:
            problems.append((f"{label}, non_cash", f"{row['non_cash']!r} is not yes or no"))
        if row.get("description"):
            prize["description"] = row["description"]
        prizes.append(prize)
        where.append(label)
    return prizes, where, problems


def _tournament_from_fields(fields: Mapping[str, Any]) -> tuple[dict[str, Any], Problems]:
    problems: Problems = []
    tournament: dict[str, Any] = {}
    for name in TOURNAMENT_FIELDS:
        value = fields.get(name)
        if value is None or str(value).strip() == "":
            problems.append((name, "is required"))
            continue
        if hasattr(value, "isoformat"):
            value = value.isoformat()
        tournament[name] = str(value).strip()
    for name in ("bounty", "guarantee", "policy"):
        value = fields.get(name)
        if value is not None and str(value).strip() != "":
            tournament[name] = str(value).strip()
    chips = fields.get("chips_in_play")
    if chips is not None and str(chips).strip() != "":
        if isinstance(chips, int) or _INTEGER.match(str(chips).strip()):
            tournament["chips_in_play"] = int(chips)
        else:
            problems.append(("chips_in_play", f"{chips!r} is not a whole number"))
    return tournament, problems


# The engine names a field `entries[4] (e5).chips` or `tournament.prizes[2].amount`.
_ENGINE_FIELD = re.compile(
    r"^(entries|tournament\.prizes)\[(\d+)\](?: \(.*?\))?(?:\.([a-z_]+(?:\[\d+\])?(?:\.[a-z_]+)?))?$"
)


def _csv_where(field: str, entry_where: list[str], prize_where: list[str]) -> str:
    """Turn the engine's field path into the place the person typed it: `entries[4].chips` is
    'entries CSV row 6 (entry e5), chips'; `tournament.fee` is the form's field 'fee'."""
    m = _ENGINE_FIELD.match(field)
    if m:
        rows = entry_where if m.group(1) == "entries" else prize_where
        index = int(m.group(2))
        label = rows[index] if index < len(rows) else field
        return f"{label}, {m.group(3)}" if m.group(3) else label
    if field.startswith("tournament.prizes"):
        return "prize table CSV"
    if field == "entries":
        return "entries CSV"
    if field.startswith("tournament."):
        return field.removeprefix("tournament.")
    return field


_ENGINE_REFERENCE = re.compile(r"\b(entries|tournament\.prizes)\[(\d+)\]")


def _csv_message(message: str, entry_where: list[str], prize_where: list[str]) -> str:
    """The engine's message with its references to other entries ("also entries[0]") turned
    into the CSV rows they came from ("also entries CSV row 2 (entry e1)")."""

    def row(match: re.Match[str]) -> str:
        rows = entry_where if match.group(1) == "entries" else prize_where
        index = int(match.group(2))
        return rows[index] if index < len(rows) else match.group(0)

    return _ENGINE_REFERENCE.sub(row, message)


def snapshot_document_from_csv(
    entries_csv: CsvData, prizes_csv: CsvData, fields: Mapping[str, Any]
) -> tuple[dict[str, Any], engine.Snapshot]:
    """Build the `tournament-snapshot/1` document (a dict) from the two CSVs and the typed fields,
    then validate it with the engine. Returns (document, parsed); raises `Refused` naming the
    CSV rows and columns or the form fields at fault.

    Every problem is reported at once: the cells that could not be read and everything the
    engine finds in the rest, each once, by CSV row (a cell that could not be read is left out
    of the document, so the engine's complaint about the same cell is dropped)."""
    tournament, problems = _tournament_from_fields(fields)
    entries, entry_where, entry_problems = _entries_from_csv(entries_csv)
    prizes, prize_where, prize_problems = _prizes_from_csv(prizes_csv)
    problems += prize_problems + entry_problems
    tournament["prizes"] = prizes
    document = {"format": "tournament-snapshot/1", "tournament": tournament, "entries": entries}
    structural = [
        (where, what)
        for where, what in problems
        if where.endswith(" header") or where in ("entries CSV", "prize table CSV")
    ]
    if structural:
        # A file whose header or shape could not be read: stop there. Checking the rest would
        # only add consequences (a prize table "larger than the pool" of entries not read).
        fields_at_fault = [(w, m) for w, m in problems if w in TOURNAMENT_FIELDS]
        raise Refused(
            "The CSV import was refused; nothing was imported.",
            problems=structural + fields_at_fault,
        )
    parsed = None
    try:
        parsed = parse_snapshot(document, known_policies=policies.known_policy_ids())
    except SnapshotError as e:
        # A CSV whose header could not be read has no rows to check: skip what the engine
        # says about it (it would only repeat "no entries").
        unreadable = {where.removesuffix(" header") for where, _ in problems if "header" in where}
        unreadable |= {
            where for where, _ in problems if where in ("entries CSV", "prize table CSV")
        }
        seen = {where for where, _ in problems}
        if any(where.endswith(", chips") for where, _ in problems):
            seen.add("chips_in_play")  # a sum over a chip count that could not be read
        for field, message in _problems_of(e):
            where = _csv_where(field, entry_where, prize_where)
            if where in seen or any(where.startswith(u) for u in unreadable):
                continue
            if f"{where}, place" in seen:
                continue  # "neither place nor places": the place cell could not be read
            if where in TOURNAMENT_FIELDS and where not in tournament:
                continue  # already "is required"
            seen.add(where)
            problems.append((where, _csv_message(message, entry_where, prize_where)))
    if problems or parsed is None:
        raise Refused(
            "The CSV import was refused; nothing was imported.", problems=_in_file_order(problems)
        )
    return document, parsed


_CSV_ROW = re.compile(r"^(entries CSV|prize table CSV) row (\d+)\b")


def _in_file_order(problems: Problems) -> Problems:
    """The typed fields' problems first, then each file's by row, as the person reads them (a
    row's cell problems before the engine's, which were found afterwards)."""

    def key(problem: tuple[str, str]) -> tuple[int, str, int]:
        row = _CSV_ROW.match(problem[0])
        return (1, row.group(1), int(row.group(2))) if row else (0, "", 0)

    return sorted(problems, key=key)


def csv_problems(entries_csv: CsvData, prizes_csv: CsvData, fields: Mapping[str, Any]) -> Problems:
    """Every problem the CSV import would name in these files and fields, or []; stores nothing.
    For a form that refused some fields itself: the rest is checked in the same round."""
    try:
        snapshot_document_from_csv(entries_csv, prizes_csv, fields)
    except Refused as exc:
        return list(exc.problems)
    return []


@transaction.atomic
def _import_csv(
    entries_csv: CsvData,
    prizes_csv: CsvData,
    fields: Mapping[str, Any],
    *,
    acting_user: User | None,
) -> Snapshot:
    """Import a tournament from an entries CSV, a prize table CSV and the form's tournament
    fields (see ENTRY_COLUMNS, PRIZE_COLUMNS, TOURNAMENT_FIELDS). The built snapshot document is
    stored like any other, with source "csv", so that export and replay read a real snapshot."""
    _require_importer(acting_user)
    document, parsed = snapshot_document_from_csv(entries_csv, prizes_csv, fields)
    text = json.dumps(document, indent=1, ensure_ascii=False) + "\n"
    document_zlib, sha256 = _compressed_and_hashed(text)
    return _store(
        parsed, document_zlib, sha256, acting_user=acting_user, source=Snapshot.Source.CSV
    )


# --------------------------------------------------------------------------------------------
# API clients (POST /api/snapshots)
# --------------------------------------------------------------------------------------------


def hash_token(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


@transaction.atomic
def create_api_client(
    name: str, *, user: User, acting_user: User | None = None
) -> tuple[ApiClient, str]:
    """Create an API client acting as `user`; returns (client, token). Only the token's SHA-256
    is stored, so the token is shown this once. `acting_user` None is the command line.

    `user` needs a role that reads (CAN_READ): a client acting as an auditor reads proposals and
    statements, and is refused the imports and outages (403), as the auditor is on the pages."""
    require_role(user, CAN_READ, "use the API")
    if ApiClient.objects.filter(name=name).exists():
        raise Refused(f"An API client named {name!r} already exists.")
    token = "ra_" + secrets.token_urlsafe(32)
    # Audited by tournaments/signals.py (api_client.created), like any change to a client.
    with audit_context.acting(acting_user):
        client = ApiClient.objects.create(
            name=name, token_prefix=token[:10], token_sha256=hash_token(token), acting_user=user
        )
    return client, token


def authenticate_api_client(token: str) -> ApiClient | None:
    """The active API client holding this token, acting for an active user, or None."""
    if not token:
        return None
    client = (
        ApiClient.objects.select_related("acting_user")
        # A deactivated staff account's clients stop working with it.
        .filter(token_sha256=hash_token(token), is_active=True, acting_user__is_active=True)
        .first()
    )
    if client is not None:
        ApiClient.objects.filter(pk=client.pk).update(last_used_at=timezone.now())
    return client


# --------------------------------------------------------------------------------------------
# The policy that applies
# --------------------------------------------------------------------------------------------


@transaction.atomic
def change_tournament_policy(
    tournament: Tournament, version: PolicyVersion, *, acting_user: User, reason: str
) -> Tournament:
    """A manager puts the tournament under another approved policy version, with a reason,
    before any proposal is approved. A live proposal computed under the old version is stale
    from then on and must be prepared again (proposals.services); the manager who changed it
    is recorded (four eyes on the proposal that follows). Views call
    `incidents.services.change_tournament_policy`, which also recomputes the incident's rule."""
    require_role(acting_user, CAN_DECIDE, "change a tournament's policy")
    reason = required_text(reason, "reason")
    fresh = Tournament.objects.select_for_update().get(pk=tournament.pk)
    if fresh.frozen_at is not None:
        raise Refused(
            f"Tournament {fresh.external_id} is frozen: a proposal was approved under "
            f"{fresh.policy_version.label}, which stays its policy."
        )
    if version.status != PolicyVersion.Status.APPROVED:
        raise Refused(
            f"{version.label} is {version.get_status_display().lower()}: only an approved "
            "policy version applies to a tournament.",
            problems=[("policy_version", "is not approved")],
        )
    if version.pk == fresh.policy_version_id:
        raise Refused(f"Tournament {fresh.external_id} is already under {version.label}.")
    before = fresh.policy_version.label
    now = timezone.now()
    changed = Tournament.objects.filter(
        pk=fresh.pk, policy_version_id=fresh.policy_version_id, frozen_at__isnull=True
    ).update(policy_version=version, policy_changed_by=acting_user, policy_changed_at=now)
    if not changed:
        raise Refused(f"Tournament {fresh.external_id} changed at the same time; reload it.")
    fresh.refresh_from_db()
    record(
        "tournament.policy_changed",
        fresh,
        actor=acting_user,
        tournament=fresh,
        before={"policy": before},
        after={"policy": version.label, "sha256": version.sha256},
        reason=reason,
    )
    return fresh
