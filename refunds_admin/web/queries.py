"""Read-only queries behind the pages. Nothing here changes data.

Proposal lines and snapshot entries are paged by keyset ("the rows after this one in this
order"), not by OFFSET, so the last page of a 100k-line proposal costs what the first one does:
the database walks the (proposal, sort key, position) index from the cursor instead of counting
and skipping every row before it.
"""

import hashlib
import re
from bisect import bisect_right
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, NamedTuple

from django.core.cache import cache
from django.db import connection, transaction
from django.db.models import Count, F, Max, Min, Q, Value
from django.db.models.functions import Collate, Left, Lower

from refunds_admin.audit.models import AuditEvent
from refunds_admin.db import AnyOf
from refunds_admin.incidents.services import rule_sentence
from refunds_admin.payouts.money import display, to_cents
from refunds_admin.proposals.figures import RULE_COMPONENTS
from refunds_admin.proposals.figures import from_lines as figures_from_lines
from refunds_admin.proposals.lines import entry_line, entry_screen_name
from refunds_admin.proposals.models import NOT_LIVE, PayoutLine, PayoutProposal
from refunds_admin.tournaments.models import KNOCKOUT, PAID_WITH, REBUYS, Entry, PrizePlace
from refunds_admin.tournaments.services import engine_snapshot

PAGE_SIZE = 100

# Sort choices of the breakdown table: name -> (field, descending). Ties break on position, in
# the same direction. Every column sorts both ways ("-" flips the usual direction).
LINE_SORTS = {
    "position": ("position", False),
    "-position": ("position", True),
    "chips": ("chips", True),
    "-chips": ("chips", False),
    "total": ("total_cents", True),
    "-total": ("total_cents", False),
}


@dataclass
class Page:
    rows: list
    first_cursor: str | None  # cursor of the first row shown (for "previous")
    last_cursor: str | None  # cursor of the last row shown (for "next")
    has_next: bool
    has_prev: bool


def _cursor(row, field):
    if field == "position":
        return str(row.position)
    return f"{getattr(row, field)}.{row.position}"


def _parse_cursor(cursor, field):
    """ "48200.17" -> (48200, 17); a cursor that does not parse means "from the start"."""
    try:
        if field == "position":
            return None, int(cursor)
        value, position = cursor.split(".", 1)
        return int(value), int(position)
    except (AttributeError, TypeError, ValueError):
        return None


def _beyond(field, descending, cursor, forward):
    """The Q for rows strictly after (forward) or before the cursor in the sort order.

    Ties on the field are ordered by position in the same direction, so one index on
    (proposal, field, position) serves both directions. `value <= v AND (value < v OR ...)`
    rather than the OR alone: the first half lets the database start its index scan at the
    cursor instead of filtering rows from the top.
    """
    value, position = cursor
    # Walking forward in a descending order means going to smaller keys, and vice versa.
    lt, lte = ("lt", "lte") if descending == forward else ("gt", "gte")
    if field == "position":
        return Q(**{f"position__{lt}": position})
    return Q(**{f"{field}__{lte}": value}) & (
        Q(**{f"{field}__{lt}": value}) | Q(**{field: value, f"position__{lt}": position})
    )


def keyset_page(qs, *, field, descending, after=None, before=None, last=False, size=PAGE_SIZE):
    """One page of `qs` ordered by (field, position). `after`/`before` are cursors of the row
    the page starts after / ends before; `last` jumps to the final page by reading backwards."""
    sign = "-" if descending else ""
    backwards = bool(before) or last
    if backwards:
        sign = "" if descending else "-"
    order = [f"{sign}{field}"] if field == "position" else [f"{sign}{field}", f"{sign}position"]
    cursor = None if last else _parse_cursor(before if backwards else after, field)
    if cursor:
        qs = qs.filter(_beyond(field, descending, cursor, forward=not backwards))
    rows = list(qs.order_by(*order)[: size + 1])
    more = len(rows) > size
    rows = rows[:size]
    if backwards:
        rows.reverse()
        has_prev, has_next = more, bool(before)
    else:
        has_prev, has_next = bool(cursor), more
    if not rows:
        return Page([], None, None, False, False)
    return Page(rows, _cursor(rows[0], field), _cursor(rows[-1], field), has_next, has_prev)


# Up to this many matches of a name search, the breakdown reads their positions and picks their
# lines; past it, it walks the lines in order (proposal_lines). The walk costs in proportion to
# the lines it passes before a page is full, so it is slowest just past the limit, where matches
# are sparsest; the list costs in proportion to the matches. 2,000 evens out the two worst cases
# on a 100k-line proposal (docs/performance.md, "the breakdown's name search, either side of
# SEARCH_LIST"); at 1,000 a sparse walk took 47-55 ms, over the page goal.
SEARCH_LIST = 2000

# How much of a screen name the entries' prefix index holds, lowered (tournaments migration 0012).
NAME_PREFIX = 16


def player_id_lower():
    """lower(player_id) as the entries' index holds it: in the C collation on PostgreSQL.

    The database's collation (C.UTF-8) made that index cost an import four times a plain one
    (docs/performance.md); equality finds the same entries in either collation, but PostgreSQL
    uses the index only when the query names its collation too. SQLite has no "C" collation to
    name (and no such index: it scans)."""
    if connection.vendor == "postgresql":
        return Collate(Lower("player_id"), "C")
    return Lower("player_id")


_ASCII_LOWER = str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz")


def lowered(q):
    """`q` lowered as the database lowers what it is compared with (LOWER(...) of a name, an id
    or an address). PostgreSQL lowers every letter, as Python does. SQLite, the development desk
    of `make run`, lowers the ASCII letters only: a query lowered by Python would never find
    "Fish Ünïcode" there, so it is lowered the same way (any case for A-Z, the other letters as
    typed)."""
    if connection.vendor == "sqlite":
        return q.translate(_ASCII_LOWER)
    return q.lower()


def name_starts(q, *, exact=False):
    """The entries whose screen name starts with `q` in any case (or is `q`, exactly, when
    `exact`): the index holds the lowered first NAME_PREFIX characters of each name, so it is
    asked for those, and the whole name is checked on the entries it finds. The queryset is
    annotated with name_columns() first (or the same two names spelled out, where the query
    orders by one of them: the type checker cannot see names given as **kwargs)."""
    q = lowered(q)
    # The index leaves out the entries without a name (most have one or none): saying so lets
    # PostgreSQL use it.
    named = ~Q(screen_name="")
    if exact:
        return named & Q(name_start=q[:NAME_PREFIX], screen_lower=q)
    return named & Q(name_start__startswith=q[:NAME_PREFIX], screen_lower__startswith=q)


def name_columns():
    """The two expressions name_starts() compares: the indexed start and the whole name."""
    return {
        "name_start": Lower(Left("screen_name", NAME_PREFIX)),
        "screen_lower": Lower("screen_name"),
    }


def proposal_lines(proposal, *, q="", show="", sort="position"):
    """The breakdown table's rows before paging: search by entry id (exact), player id (in any
    case, as the player lookup and the audit read it: what a player quotes on the phone) or the
    start of the screen name (in any case); show all, active, eliminated or capped entries.

    A proposal's lines are its snapshot's entries, position for position, so the search runs on
    the entries' indexes and picks the lines by position: the lines need no search index of
    their own (each would be paid for at every prepare: docs/performance.md). It costs the same
    on 100k lines as on 100.
    """
    qs = PayoutLine.objects.filter(proposal=proposal)
    q = (q or "").strip()
    if q:
        # Usually a handful of entries match: their positions are read from the entries'
        # indexes first, then their lines by position. (Left as one query joining the two,
        # PostgreSQL may walk all 100k lines in order, expecting matches everywhere.)
        entries = Entry.objects.filter(snapshot_id=proposal.snapshot_id).order_by()
        by_id = entries.annotate(player_lower=player_id_lower()).filter(
            Q(entry_id=q) | Q(player_lower=lowered(q))
        )
        # In no order: only whether there are more than SEARCH_LIST, and which, matters. (Sorted
        # by name, a prefix most names share read every match before the first 1,001: 80-90 ms
        # for 111k matches of 250k entries, docs/performance.md.)
        by_name = entries.annotate(**name_columns()).filter(name_starts(q))
        positions = list(by_name.values_list("position", flat=True)[: SEARCH_LIST + 1])
        if len(positions) <= SEARCH_LIST:
            positions += by_id.values_list("position", flat=True)
            # Up to 2,000 positions, as one array parameter (db/lookups.py).
            qs = qs.filter(AnyOf(F("position"), positions))
        else:
            # A short prefix ("pl"): its matches are everywhere, so walking the lines in order
            # and reading their entries' screen names (one lookup of the entries' key per line
            # walked) finds the next page after a few rows.
            screen_name = entry_screen_name(proposal.snapshot_id)
            qs = qs.annotate(screen_lower=Lower(screen_name)).filter(
                Q(position__in=list(by_id.values_list("position", flat=True)))
                | Q(screen_lower__startswith=lowered(q))
            )
    if show == "paid":
        qs = qs.filter(total_cents__gt=0)
    elif show in ("active", "eliminated"):
        qs = qs.filter(status=show)
    elif show == "capped":
        qs = qs.filter(capped=True)
    return qs


def snapshot_entries(snapshot, *, q=""):
    """A snapshot's entries, searched by player id (in any case), entry id or screen name. Each branch
    is an index lookup in the snapshot's partition on PostgreSQL: (snapshot, entry_id), and the
    expression indexes on lower(player_id) and on the screen name's lowered start (tournaments
    migration 0012)."""
    qs = Entry.objects.filter(snapshot=snapshot)
    q = (q or "").strip()
    if "\x00" in q:
        # PostgreSQL takes no NUL in a text parameter, and no stored id or name holds one.
        return qs.none()
    if q:
        qs = qs.annotate(player_lower=player_id_lower(), **name_columns()).filter(
            Q(entry_id=q)
            | Q(player_lower=lowered(q))
            | (name_starts(q, exact=True) & Q(screen_name=q))
        )
    return qs


class PrizeRange(NamedTuple):
    """Consecutive places paying the same prize ("10–12, USD 150.00 each")."""

    first: int
    last: int
    amount_cents: int
    non_cash: bool
    description: str


def prize_ranges(snapshot) -> tuple[PrizeRange, ...]:
    """The snapshot's prize table as a platform writes it: consecutive places paying the same
    prize form one range, so a 100k-entry field shows a score of rows, not one per paid place
    (the stored table has one row per place, for the engine and the lookups).

    A snapshot never changes once imported, so its ranges are worked out once per web process
    and kept (keyed by the document's SHA-256 too, so that a reused id can never be served
    another table): reading the 14k-50k stored places again costs 20-60 ms at every view of
    the tournament page and of each of its proposals' pages (docs/performance.md, issue 25).
    """
    return _prize_ranges(snapshot.pk, snapshot.sha256)


@lru_cache(maxsize=64)
def _prize_ranges(snapshot_id: int, sha256: str) -> tuple[PrizeRange, ...]:
    places = PrizePlace.objects.filter(snapshot_id=snapshot_id).order_by()
    # One group per (amount, non-cash, description), counted by the database. The import
    # refuses a prize that rises, so the places of one amount are consecutive, and a group
    # whose places fill its span is a range. Only when one amount mixes descriptions (place 5
    # a ticket, 6 cash, 7 a ticket again) does a group have holes: then the places are walked
    # in order.
    groups = (
        places.values("amount_cents", "non_cash", "description")
        .annotate(first=Min("place"), last=Max("place"), n=Count("pk"))
        .order_by("first")
    )
    ranges = []
    for g in groups:
        if g["last"] - g["first"] + 1 != g["n"]:
            return _prize_ranges_walked(places)
        ranges.append(
            PrizeRange(g["first"], g["last"], g["amount_cents"], g["non_cash"], g["description"])
        )
    return tuple(ranges)


def _prize_ranges_walked(places) -> tuple[PrizeRange, ...]:
    ranges: list[PrizeRange] = []
    rows = places.order_by("place").values_list("place", "amount_cents", "non_cash", "description")
    for place, amount, non_cash, description in rows.iterator(chunk_size=5000):
        last = ranges[-1] if ranges else None
        if (
            last is not None
            and last.last == place - 1
            and last[2:] == (amount, non_cash, description)
        ):
            ranges[-1] = last._replace(last=place)
        else:
            ranges.append(PrizeRange(place, place, amount, non_cash, description))
    return tuple(ranges)


PRIZE_RANGES_SHOWN = 100


@dataclass
class PrizePage:
    ranges: tuple[PrizeRange, ...]
    paid_places: int  # the last place the table lists
    next_from: int | None  # first place of the next page of ranges
    prev_from: int | None  # first place of the previous page


def prize_page(snapshot, from_place=None, size=PRIZE_RANGES_SHOWN) -> PrizePage:
    """At most `size` ranges of the prize table, from the range holding `from_place` on: a
    table whose every place pays its own amount (50k places, 50k ranges) is paged like the
    entries rather than sent whole."""
    ranges = prize_ranges(snapshot)
    start = 0
    if from_place and ranges:
        start = max(0, bisect_right([r.first for r in ranges], from_place) - 1)
    shown = ranges[start : start + size]
    more = start + size < len(ranges)
    return PrizePage(
        ranges=shown,
        paid_places=ranges[-1].last if ranges else 0,
        next_from=ranges[start + size].first if more else None,
        prev_from=ranges[max(0, start - size)].first if start else None,
    )


def breakdown_columns(proposal):
    """Which optional columns the proposal's breakdown, exports and statements show: knockout
    (bounty paid, bounty on the head, bounties won, bounty refund), rebuys, payments (paid with,
    refunds), and the equal share -- each only for tournaments that use it."""
    formats = proposal.snapshot.formats or []
    components = (proposal.figures or {}).get("components") or {}
    summary = proposal.summary or {}
    return {
        "knockout": KNOCKOUT in formats,
        "rebuys": REBUYS in formats,
        "paid_with": PAID_WITH in formats,
        "equal_share": bool(components.get("equal_share"))
        or bool(to_cents(summary.get("equal_shares") or 0)),
    }


def entries_at(snapshot_id, positions):
    """The snapshot's entries at these positions (a page of the breakdown: the lines' own
    positions), by position, with what the breakdown shows of them (the screen name, the
    formats' columns); one index lookup per position."""
    return {
        e.position: e
        for e in Entry.objects.filter(snapshot_id=snapshot_id, position__in=list(positions)).only(
            "position",
            "screen_name",
            "rebuys_paid_cents",
            "rebuy_fees_paid_cents",
            "bounty_paid_cents",
            "bounty_cents",
            "bounties_won_cents",
            "paid_with",
        )
    }


_METHOD_WORDS = {"cash": "cash", "tournament_money": "tournament money", "ticket": "ticket"}
# What the pages say of an entry without paid_with (it paid all in cash: the spec's default) and
# of a line without refunds (refunded in cash, as rule 2 always pays); the exports say the same.
ALL_IN_CASH = "cash"


def payments_text(payments, currency):
    """An entry's paid_with or a line's refunds as people read it, with the currency code as the
    amounts beside it: "ticket TKT-88121 USD 55.00 + cash USD 11.00"; "" for none."""
    if not payments:
        return ""
    return " + ".join(
        f"{_METHOD_WORDS.get(p['method'], p['method'])}"
        + (f" {p['ticket_id']}" if p.get("ticket_id") else "")
        + f" {display(p['amount_cents'], currency, symbol=False)}"
        for p in payments
    )


def chart_points(proposal, limit=500):
    """At most ~`limit` (chips, total_cents, capped) points of the active entries, evenly spread
    over the chip order, for the payout-against-chip-stack chart. Sampled in the database so a
    100k-line proposal sends 500 rows, not 100k."""
    table = PayoutLine._meta.db_table
    sql = f"""
        SELECT chips, total_cents, capped FROM (
            SELECT chips, total_cents, capped,
                   ROW_NUMBER() OVER (ORDER BY chips, position) AS rn,
                   COUNT(*) OVER () AS n
            FROM {table} WHERE proposal_id = %s AND chips > 0
        ) sampled
        WHERE (rn - 1) %% ((n + %s - 1) / %s) = 0 OR rn = n
        ORDER BY chips
    """
    with connection.cursor() as cursor:
        cursor.execute(sql, [proposal.pk, limit, limit])
        return [(int(c), int(t), bool(k)) for c, t, k in cursor.fetchall()]


# The events of a proposal that concern every player its approval credits: posting the credits
# into their accounts (ledger.posting_started, ledger.posted, ...) and telling them with their
# statements (notifications.statements_scheduled, notifications.statements_sent, ...).
CREDITED_PLAYERS_ACTIONS = ("ledger.", "notifications.statements_")


def audit_events(*, tournament="", player="", user="", action="", since=None, until=None):
    """The audit history filtered the way an auditor asks: by tournament, player, user, action
    (a prefix such as "proposal." works) and a date range."""
    qs = AuditEvent.objects.all()
    if tournament:
        # In any case, like the player: "up-ex-1" finds UP-EX-1's events (audit migration 0007
        # indexes the lowered id; the database lowers both sides, so they agree).
        qs = qs.annotate(tournament_lower=Lower("tournament_external_id")).filter(
            tournament_lower=Lower(Value(tournament.strip()))
        )
    if player:
        qs = qs.filter(_concerning_player(player.strip()))
    if user:
        qs = qs.filter(actor_name=user.strip())
    if action:
        qs = qs.filter(action__startswith=action.strip())
    if since:
        qs = qs.filter(created_at__gte=since)
    if until:
        qs = qs.filter(created_at__lt=until)
    return qs


def _concerning_player(player):
    """The events about one player: those that name them (an approval lists the players it
    credits, a statement copy its player), every step of a proposal with one of their
    entries, and the posting and statement events of a proposal whose approval credits them.
    The id is found in any case, like the tournament's: "P2" finds p2's events.

    The last two are found by proposal: the ids are read first (a player is on a few
    proposals), so that each branch is an index lookup -- the GIN index on player_ids, the
    entries' lower(player_id) index, (object_type, object_id) -- instead of a filter over every
    proposal's events."""
    # The id as the entries spell it, and their snapshots. The database lowers both sides, so
    # that an id it lowers differently from Python (outside ASCII) is still found.
    found = set(
        Entry.objects.annotate(player_lower=player_id_lower())
        .filter(player_lower=_lowered_like_player_id(player))
        .values_list("player_id", "snapshot_id")
        .distinct()
    )
    named = Q()
    for spelling in sorted({player} | {player_id for player_id, _ in found}):
        if connection.vendor == "postgresql":
            named |= Q(player_ids__contains=[spelling])
        else:  # SQLite has no JSON containment; the JSON text holds the id in quotes.
            named |= Q(player_ids__icontains=f'"{spelling}"')
    # A proposal's life (prepared, submitted, approved or rejected, superseded, withdrawn)
    # concerns every player on its lines, which are its snapshot's entries. Its events do not
    # list them (a 100k-entry list would cost each prepare half a second of search index).
    on_lines = _proposal_ids(
        PayoutProposal.objects.filter(snapshot_id__in={snapshot for _, snapshot in found}), "id"
    )
    # Posting and statements concern the players the approval credits, as the approval's own
    # event lists them (the posting writes one credit per credited line, the statements go
    # to each credited player); their events do not repeat a list of 100k players.
    credited = _proposal_ids(
        AuditEvent.objects.filter(named, action="proposal.approved", object_type="payoutproposal"),
        "object_id",
    )
    paid_and_told = Q()
    for prefix in CREDITED_PLAYERS_ACTIONS:
        paid_and_told |= Q(action__startswith=prefix)
    return (
        named
        | Q(action__startswith="proposal.", object_type="payoutproposal", object_id__in=on_lines)
        | (Q(object_type="payoutproposal", object_id__in=credited) & paid_and_told)
    )


def _lowered_like_player_id(text):
    """`text` lowered by the database the way player_id_lower() lowers the column."""
    if connection.vendor == "postgresql":
        return Collate(Lower(Value(text)), "C")
    return Lower(Value(text))


def _proposal_ids(qs, field):
    """Proposal ids as the audit's object_id holds them (text)."""
    return sorted({str(pk) for pk in qs.values_list(field, flat=True)})


# --------------------------------------------------------------------------------------------
# What the approver reads: the figures, the incident, and what changed
# --------------------------------------------------------------------------------------------


def proposal_figures(proposal):
    """The proposal's stored figures (proposals/figures.py), or, for a proposal prepared before
    they were stored, the same computed from its lines."""
    stored = proposal.figures or {}
    if "components" in stored:
        return stored
    summary = {k: to_cents(v) if isinstance(v, str) else v for k, v in proposal.summary.items()}
    computed = figures_from_lines(proposal, summary)
    tournament = proposal.incident.tournament
    computed["rule_sentence"] = rule_sentence(
        proposal.rule,
        elapsed_seconds=(proposal.failed_at - tournament.starts_at).total_seconds(),
        site_wide_issue=proposal.site_wide_issue,
        entries=int(summary.get("entries") or proposal.lines_count),
        active=int(summary.get("active") or 0),
        paid_places=proposal.snapshot.prize_places.filter(amount_cents__gt=0).count(),
        policy=proposal.policy_version.engine(),
        knockout=tournament.bounty_cents is not None,
        rebuys=proposal.snapshot.uses_rebuys,
    )
    return computed


# The reconciliation's rows, in the policy's words (policies.md), by component.
_COMPONENT_ROWS = {
    "buy_in_refund": "Buy-in refunds",
    "next_prize": "Next prizes",
    "equal_share": "Equal shares",
    "chip_equity": "Chip equity",
    "fee_refund": "Fees out",
    "bounty_refund": "Bounties on active heads",
}
_FULL_REFUND_ROWS = _COMPONENT_ROWS | {
    "buy_in_refund": "Buy-ins and rebuys back",
    "bounty_refund": "Knockout parts back",
}
_METHOD_LABELS = {
    "cash": "Cash",
    "tournament_money": "Tournament money",
    "ticket": "Tickets",
}


def pool_reconciliation(figures, *, rule=None, knockout=False):
    """Per currency: the pool in (engine summary) against what the lines pay out, by component.

    Only the components the rule pays are rows (under rule 1 no next prize, equal share or chip
    equity); the equal share only where the policy gives one, the bounties only in a knockout.
    Beside the pool: what the operator absorbs (prizes already paid, under rule 1) or keeps (the
    overlay of a guarantee), and the refunds per method when some are not cash."""
    rule = figures.get("rule") or rule
    parts = figures["components"]
    paid_out = sum(parts.values())
    labels = _FULL_REFUND_ROWS if rule == "full_refund" else _COMPONENT_ROWS
    shown = RULE_COMPONENTS.get(rule, tuple(labels))
    rows = [
        (labels[name], parts.get(name, 0))
        for name in shown
        if parts.get(name, 0)
        or name not in ("equal_share", "bounty_refund")
        or (name == "bounty_refund" and knockout)
    ]
    # A component paid that the rule does not name (never, unless the engine changes): shown,
    # so that the rows still add up to what is paid out.
    rows += [
        (labels.get(name, name), cents)
        for name, cents in parts.items()
        if cents and name not in shown
    ]
    beside = []
    if rule == "full_refund":
        beside.append(
            ("Prizes already paid, absorbed by the operator", figures.get("prizes_awarded", 0))
        )
    if figures.get("overlay_kept"):
        beside.append(("Overlay kept by the house", figures["overlay_kept"]))
    by_method = figures.get("refunds_by_method") or {}
    methods = [
        (_METHOD_LABELS.get(method, method), cents)
        for method, cents in by_method.items()
        if method != "tickets" and cents
    ]
    return [
        {
            "currency": figures["currency"],
            "pool_in": figures["pool_in"],
            "rows": rows,
            "paid_out": paid_out,
            "difference": paid_out - figures["pool_in"],
            "beside": beside,
            "methods": methods if any(m != "Cash" for m, _ in methods) else [],
            "tickets": by_method.get("tickets", 0),
        }
    ]


def snapshot_at_recording(incident):
    """The snapshot that was current when the incident was recorded (the last one imported
    before it)."""
    return (
        incident.tournament.snapshots.filter(imported_at__lte=incident.recorded_at)
        .defer("document_zlib", "parsed")  # megabytes each, read only when they are compared
        .order_by("-version")
        .first()
    )


def _prize_table(snapshot):
    return dict(snapshot.prize_places.values_list("place", "amount_cents"))


# What an entry paid, won and carries besides its chips, as the snapshot's words name it: a
# re-import that changes one of these changes that player's refund.
_ENTRY_MONEY = {
    "buy_in_paid_cents": "buy-in paid",
    "fee_paid_cents": "fee paid",
    "rebuys_paid_cents": "rebuys paid",
    "rebuy_fees_paid_cents": "rebuy fees paid",
    "bounty_paid_cents": "bounty paid",
    "bounty_cents": "bounty on their head",
    "bounties_won_cents": "bounties won",
    "prize_awarded_cents": "prize awarded",
    "finish_place": "finish place",
    "paid_with": "paid with",
}


def _money_fields_changed(was, now):
    """The names (_ENTRY_MONEY's words) of the money fields that differ between two rows."""
    return [name for name, a, b in zip(_ENTRY_MONEY.values(), was, now, strict=True) if a != b]


# How many of each change the incident page lists by name (the counts are always whole).
CHANGE_EXAMPLES = 10
# How many changed paid places it lists (the first by place; the count is whole): a re-import
# that corrects the whole prize table of 100k entries changes 14k places, which the tournament
# page pages through.
PRIZE_CHANGES_SHOWN = 20


def _entry_changes(old, new):
    """The entries' differences between two snapshot versions (see snapshot_changes), read into
    Python: one read of each version, entry id -> (status, chips, *money fields). The form that
    checks _entry_changes_in_sql (tests/web/test_snapshot_changes.py), and SQLite's."""
    fields = ("entry_id", "status", "chips", *_ENTRY_MONEY)
    before = {r[0]: r[1:] for r in old.entries.values_list(*fields).iterator(5000)}
    after = {r[0]: r[1:] for r in new.entries.values_list(*fields).iterator(5000)}
    both = [(e, before[e], row) for e, row in after.items() if e in before]
    money_changed = [
        (e, _money_fields_changed(was[2:], now[2:])) for e, was, now in both if was[2:] != now[2:]
    ]
    chips_changed = [(e, was[1], now[1]) for e, was, now in both if was[1] != now[1]]
    added = sorted(e for e in after if e not in before)
    removed = sorted(e for e in before if e not in after)
    return {
        "added_count": len(added),
        "added": added[:CHANGE_EXAMPLES],
        "removed_count": len(removed),
        "removed": removed[:CHANGE_EXAMPLES],
        "eliminated_count": sum(
            1 for _, was, now in both if was[0] == "active" and now[0] == "eliminated"
        ),
        "chips_before": sum(r[1] for r in before.values()),
        "chips_after": sum(r[1] for r in after.values()),
        "chips_changed": len(chips_changed),
        "chips_examples": sorted(chips_changed, key=lambda r: (-abs(r[2] - r[1]), r[0]))[
            :CHANGE_EXAMPLES
        ],
        "money_changed": len(money_changed),
        "money_examples": sorted(money_changed)[:CHANGE_EXAMPLES],
    }


def _entry_changes_in_sql(old_id, new_id):
    """_entry_changes in one statement on PostgreSQL: the two versions' partitions joined on the
    entry id by a hash join, keeping only the entries that differ (a re-import usually changes
    a few), then counted and the first few of each kind listed. Nothing of the 100k entries
    that did not change comes back to Python (docs/performance.md, "The incident page's
    snapshot differences in SQL"). Entry ids are ordered by code point (COLLATE "C"), as
    Python's sorted() orders them."""
    table = Entry._meta.db_table
    money = list(_ENTRY_MONEY)
    was = ", ".join(f"o.{f}" for f in money)
    now = ", ".join(f"n.{f}" for f in money)
    which = ", ".join(f"o.{f} IS DISTINCT FROM n.{f}" for f in money)
    columns = ", ".join(["entry_id", "status", "chips", *money])
    sql = f"""
        WITH differ AS MATERIALIZED (
            SELECT o.entry_id AS was_id, n.entry_id AS now_id,
                   o.status = 'active' AND n.status = 'eliminated' AS eliminated,
                   o.chips AS chips_before, n.chips AS chips_after,
                   ({was}) IS DISTINCT FROM ({now}) AS money,
                   ARRAY[{which}] AS which
            FROM (SELECT {columns} FROM {table} WHERE snapshot_id = %(old)s) o
            FULL JOIN (SELECT {columns} FROM {table} WHERE snapshot_id = %(new)s) n
                ON n.entry_id COLLATE "C" = o.entry_id COLLATE "C"
            WHERE o.entry_id IS NULL OR n.entry_id IS NULL OR o.status <> n.status
                OR o.chips <> n.chips OR ({was}) IS DISTINCT FROM ({now})
        )
        SELECT
            (SELECT count(*) FROM differ WHERE was_id IS NULL),
            ARRAY(SELECT now_id FROM differ WHERE was_id IS NULL
                  ORDER BY now_id COLLATE "C" LIMIT %(n)s),
            (SELECT count(*) FROM differ WHERE now_id IS NULL),
            ARRAY(SELECT was_id FROM differ WHERE now_id IS NULL
                  ORDER BY was_id COLLATE "C" LIMIT %(n)s),
            (SELECT count(*) FROM differ WHERE eliminated),
            (SELECT count(*) FROM differ WHERE chips_before <> chips_after),
            (SELECT json_agg(json_build_array(now_id, chips_before, chips_after)
                             ORDER BY abs(chips_after - chips_before) DESC, now_id COLLATE "C")
             FROM (SELECT * FROM differ WHERE chips_before <> chips_after
                   ORDER BY abs(chips_after - chips_before) DESC, now_id COLLATE "C"
                   LIMIT %(n)s) c),
            (SELECT coalesce(sum(chips), 0) FROM {table} WHERE snapshot_id = %(old)s),
            (SELECT coalesce(sum(chips), 0) FROM {table} WHERE snapshot_id = %(new)s),
            (SELECT count(*) FROM differ WHERE was_id = now_id AND money),
            (SELECT json_agg(json_build_array(now_id, which) ORDER BY now_id COLLATE "C")
             FROM (SELECT * FROM differ WHERE was_id = now_id AND money
                   ORDER BY now_id COLLATE "C" LIMIT %(n)s) m)
    """
    with transaction.atomic(), connection.cursor() as cursor:
        # The planner cannot know that most entries are unchanged: it expects the join to keep
        # millions of rows, and would compile the statement for them (JIT, 0.4 s on 100k
        # entries) and sort both versions on disk for a merge join. One version's entries
        # hashed in memory is all this needs (0.1 s).
        cursor.execute("SET LOCAL jit = off")
        cursor.execute("SET LOCAL work_mem = '64MB'")
        cursor.execute("SET LOCAL enable_mergejoin = off")
        cursor.execute(sql, {"old": old_id, "new": new_id, "n": CHANGE_EXAMPLES})
        (added_count, added, removed_count, removed, eliminated_count, chips_changed,
         chips_examples, chips_before, chips_after, money_changed,
         money_examples) = cursor.fetchone()  # fmt: skip
        # Nothing was written: rolling back ends the settings above here, also when this runs
        # in a savepoint of the caller's transaction (whose end they would otherwise last to).
        transaction.set_rollback(True)
    names = list(_ENTRY_MONEY.values())
    return {
        "added_count": added_count,
        "added": added,
        "removed_count": removed_count,
        "removed": removed,
        "eliminated_count": eliminated_count,
        "chips_before": int(chips_before),
        "chips_after": int(chips_after),
        "chips_changed": chips_changed,
        "chips_examples": [tuple(row) for row in chips_examples or []],
        "money_changed": money_changed,
        "money_examples": [
            (e, [name for name, differs in zip(names, which, strict=True) if differs])
            for e, which in money_examples or []
        ],
    }


# What the cached differences depend on besides the two versions: a release that changes the
# money fields compared or how many examples are kept reads none of an older release's (the
# last number is raised by hand when what is kept changes in another way).
_CHANGES_FORM = hashlib.sha256(
    repr((sorted(_ENTRY_MONEY.items()), CHANGE_EXAMPLES, PRIZE_CHANGES_SHOWN, 2)).encode()
).hexdigest()[:12]
# A day: the differences between two versions never change (each is a fixed document), so the
# cache only saves the first viewer of the day the work; it need not hold them for ever.
_CHANGES_KEPT = 24 * 3600


def changes_key(old, new, *, with_entries=True):
    """The cache key of two versions' differences: each version's row (its entries never change)
    and document (so that a database created again does not meet a key of the old one)."""
    return (
        f"snapshot-changes:{_CHANGES_FORM}:{old.pk}:{old.sha256}:"
        f"{new.pk}:{new.sha256}:{int(with_entries)}"
    )


# Up to this many entries in the two versions together, the incident page compares them while
# it is drawn (a few milliseconds). Beyond, it is drawn at once and fetches the comparison
# after (htmx), unless a worker or an earlier view already keeps it (snapshot_changes `wait`).
COMPARED_WHILE_DRAWN = 20_000


def snapshot_changes(old, new, *, with_entries=True, wait=True):
    """What a re-import changed between two snapshot versions of one tournament: the start,
    the prize table, and (with_entries) the entries: how many were added, removed and
    eliminated, changed their chips or their money fields (_ENTRY_MONEY), with the first
    CHANGE_EXAMPLES of each by entry id (the chips' by the largest change first).

    Two versions never change, so their differences are kept in the shared cache
    (changes_key): the incident page computes them once a day (about 0.1 s for 100k entries,
    docs/performance.md, "The incident page's snapshot differences in SQL"), not on every
    view. With `wait=False`, two large versions not compared yet are not compared now: the
    result says only which versions, and `pending` (the page fetches the rest after)."""
    if old is None or new is None or old.pk == new.pk:
        return None
    key = changes_key(old, new, with_entries=with_entries)
    try:
        changes = cache.get(key)
    except Exception:  # no shared cache to ask (Redis down): compute them
        changes = None
    large = old.entries_count + new.entries_count > COMPARED_WHILE_DRAWN
    if changes is None and with_entries and large and not wait:
        return {"old": old, "new": new, "pending": True}
    if changes is None:
        changes = _snapshot_changes(old, new, with_entries=with_entries)
        try:
            cache.set(key, changes, timeout=_CHANGES_KEPT)
        except Exception:
            pass
    return {"old": old, "new": new, **changes}


def _snapshot_changes(old, new, *, with_entries):
    old_start, new_start = _start_of(old), _start_of(new)
    changes = {
        "start_before": old_start,
        "start_after": new_start,
        "start_changed": old_start != new_start,
        **_prize_changes(old, new),
        "entries_before": old.entries_count,
        "entries_after": new.entries_count,
        "active_before": old.active_count,
        "active_after": new.active_count,
    }
    if with_entries:
        if connection.vendor == "postgresql":
            changes.update(_entry_changes_in_sql(old.pk, new.pk))
        else:
            changes.update(_entry_changes(old, new))
    return changes


def _start_of(snapshot):
    """The version's start, as kept at import (Snapshot.starts_at), or read from its document
    for a version imported before it was kept."""
    if snapshot.starts_at is not None:
        return snapshot.starts_at
    return engine_snapshot(snapshot).starts_at.at


def _prize_changes(old, new, *, shown=None):
    """How many paid places' prizes differ between two versions (`prizes_changed`), and the
    first `shown` of them by place (`prizes`: {place, before, after}; None where a version pays
    none). On PostgreSQL the two prize tables (one row per place: 14k for 100k entries) are
    compared in the database."""
    shown = PRIZE_CHANGES_SHOWN if shown is None else shown
    if connection.vendor != "postgresql":
        before, after = _prize_table(old), _prize_table(new)
        changed = [
            {"place": place, "before": before.get(place), "after": after.get(place)}
            for place in sorted(set(before) | set(after))
            if before.get(place) != after.get(place)
        ]
        return {"prizes_changed": len(changed), "prizes": changed[:shown]}
    table = PrizePlace._meta.db_table
    with connection.cursor() as cursor:
        cursor.execute(
            f"""
            SELECT coalesce(o.place, n.place), o.amount_cents, n.amount_cents, count(*) OVER ()
            FROM (SELECT place, amount_cents FROM {table} WHERE snapshot_id = %s) o
            FULL JOIN (SELECT place, amount_cents FROM {table} WHERE snapshot_id = %s) n
                ON n.place = o.place
            WHERE o.amount_cents IS DISTINCT FROM n.amount_cents
            ORDER BY 1
            LIMIT %s
            """,
            [old.pk, new.pk, shown],
        )
        rows = cursor.fetchall()
    return {
        "prizes_changed": rows[0][3] if rows else 0,
        "prizes": [{"place": p, "before": b, "after": a} for p, b, a, _ in rows],
    }


# ---------------------------------------------------------------------------------------------
# Player lookup (support): by player id, screen-name prefix or e-mail, case-insensitively
# ---------------------------------------------------------------------------------------------

# An amount a player quotes: "815.33", "$815.33", "USD 1,815.33" (two decimals, so that a
# player id of digits is still looked up as an id).
_QUOTED_AMOUNT = re.compile(
    r"^(?:[a-z]{3}\s*|[$€£]\s*)?([0-9]{1,3}(?:,[0-9]{3})+|[0-9]+)\.([0-9]{2})$"
)


def quoted_amount(q):
    """Cents of the amount in `q` ("$815.33" -> 81533), or None when `q` is no amount."""
    match = _QUOTED_AMOUNT.match((q or "").strip().lower())
    if not match:
        return None
    return int(match.group(1).replace(",", "")) * 100 + int(match.group(2))


def _paid(amount_cents):
    """The ids of the players refunded exactly `amount_cents` in a live (not rejected)
    proposal: for one entry, or in total over their entries in a tournament (re-entries)."""
    from django.db.models import Sum

    live = PayoutProposal.objects.exclude(status__in=NOT_LIVE).values("pk")
    lines = PayoutLine.objects.filter(proposal_id__in=live)
    by_entry = lines.filter(total_cents=amount_cents).values("player_id")
    by_player = (
        lines.values("player_id", "proposal_id")
        .annotate(sum=Sum("total_cents"), n=Count("pk"))
        .filter(sum=amount_cents, n__gt=1)
        .values("player_id")
    )
    return Q(player_id__in=by_entry) | Q(player_id__in=by_player)


def player_matches(q):
    """The players whose id or e-mail is `q` or whose screen name starts with `q`, in any case,
    in every tournament's current snapshot -- or, when `q` is an amount ("$815.33"), those
    refunded exactly that. One row per player: {player_id, tournaments} (every tournament the
    player played, not only those where the match was found), unordered: the page sorts and
    pages it (web/paging.py), so a search that finds 5,000 players lists them all.

    Each branch is an index lookup on PostgreSQL (expression indexes on lower(...), migrations
    tournaments/0003 and 0012)."""
    from refunds_admin.tournaments.models import Tournament

    q = lowered((q or "").strip())
    current = Tournament.objects.exclude(current_snapshot=None).values("current_snapshot_id")
    base = Entry.objects.filter(snapshot_id__in=current)
    if not q:
        found = base.none()
    elif quoted_amount(q) is not None:
        found = base.filter(_paid(quoted_amount(q)))
    else:
        # Each branch names its index's expression and, for the partial ones (e-mail, screen
        # name), its condition: PostgreSQL combines the three index lookups only if it can use
        # all three, and reads every entry otherwise.
        found = base.annotate(
            id_lower=player_id_lower(), email_lower=Lower("email"), **name_columns()
        ).filter(Q(id_lower=q) | (~Q(email="") & Q(email_lower=q)) | name_starts(q))
    return (
        base.filter(player_id__in=found.values("player_id"))
        .values("player_id")
        .annotate(tournaments=Count("snapshot_id", distinct=True))
        .order_by()
    )


def with_names(players):
    """The screen names and e-mails of a page of `player_matches` rows (one query), sorted."""
    players = list(players)
    ids = [p["player_id"] for p in players]
    names: dict[str, set] = {i: set() for i in ids}
    emails: dict[str, set] = {i: set() for i in ids}
    for player_id, screen_name, email in (
        # lower(player_id) finds them through its index (no index holds the plain player_id).
        Entry.objects.annotate(player_lower=player_id_lower())
        .filter(player_lower__in=sorted({lowered(i) for i in ids}), player_id__in=ids)
        .values_list("player_id", "screen_name", "email")
        .distinct()
    ):
        if screen_name:
            names[player_id].add(screen_name)
        if email:
            emails[player_id].add(email)
    return [
        {
            **p,
            "screen_names": sorted(names[p["player_id"]]),
            "emails": sorted(emails[p["player_id"]]),
        }
        for p in players
    ]


def find_players(q, limit=50):
    """The first `limit` players `q` finds, by player id, with their names."""
    return with_names(player_matches(q).order_by("player_id")[:limit])


def player_tournaments(player_id):
    """Every tournament the player has an entry in (current snapshot), newest first, with its
    state for the player: pending (no approved proposal yet), approved (approved, posting, or
    posting failed and waiting) or posted, and the player's lines in the live proposal."""
    from refunds_admin.proposals.models import PayoutProposal
    from refunds_admin.tournaments.models import Tournament

    Status = PayoutProposal.Status
    entries = list(
        # lower(player_id) finds them through its index (no index holds the plain player_id).
        Entry.objects.annotate(player_lower=player_id_lower())
        .filter(
            player_lower=lowered(player_id),
            player_id=player_id,
            snapshot_id__in=Tournament.objects.exclude(current_snapshot=None).values(
                "current_snapshot_id"
            ),
        )
        .select_related("snapshot__tournament")
        .defer("snapshot__document_zlib", "snapshot__parsed")  # megabytes each, never shown
        .order_by("-snapshot__tournament__starts_at", "position")
    )
    tournaments: dict[int, dict[str, Any]] = {}
    for entry in entries:
        t = entry.snapshot.tournament
        tournaments.setdefault(t.pk, {"tournament": t, "entries": []})["entries"].append(entry)
    proposals: dict[int, PayoutProposal] = {}
    for proposal in (
        PayoutProposal.objects.filter(incident__tournament_id__in=list(tournaments))
        .exclude(status__in=NOT_LIVE)
        .select_related("incident")
        .order_by("incident__tournament_id", "-id")
    ):
        proposals.setdefault(proposal.incident.tournament_id, proposal)
    lines: dict[int, list[PayoutLine]] = {}
    if proposals:
        for line in PayoutLine.objects.filter(
            proposal_id__in=[p.pk for p in proposals.values()], player_id=player_id
        ):
            lines.setdefault(line.proposal_id, []).append(line)
    out = []
    for tid, row in tournaments.items():
        live = proposals.get(tid)
        if live is None or live.status in (Status.DRAFT, Status.SUBMITTED):
            state = "pending"
        elif live.status == Status.POSTED:
            state = "posted"
        else:
            state = "approved"
        mine = lines.get(live.pk, []) if live else []
        row.update(
            proposal=live,
            state=state,
            lines=mine,
            # One total per player: re-entries are separate lines, the player hears one sum.
            player_total_cents=sum(line.total_cents for line in mine),
        )
        out.append(row)
    return out


def proposal_by_id(proposal_id):
    """The proposal with its tournament, for the API's reads (the snapshot's document and parsed
    form deferred: MBs no answer shows), or None."""
    return (
        PayoutProposal.objects.select_related("incident__tournament", "snapshot")
        .defer("snapshot__document_zlib", "snapshot__parsed")
        .filter(pk=proposal_id)
        .first()
    )


def proposal_line(proposal, entry_id):
    """The entry's line of the proposal, or None when the entry is not part of it."""
    return entry_line(proposal, entry_id).first()
