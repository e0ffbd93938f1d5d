"""Apply the cancellation policy to a snapshot: the three rules of payout-rules.md, to the cent.

Pure: snapshot + incident facts in, proposal out. Integer cents and integer comparisons only
(exact shares are `E' * chips / C`, kept as integer numerator and common denominator).
"""

import heapq
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from fractions import Fraction
from functools import cached_property
from itertools import compress, islice, repeat
from operator import add, and_, eq, floordiv, is_not, le, mod, mul, ne, not_, or_, sub, truth
from typing import TYPE_CHECKING, Any, NamedTuple

if TYPE_CHECKING:
    import hashlib

from ._gc import paused_gc
from .money import format_cents
from .policy import DEFAULT_POLICY_ID, PRESETS, Policy, PolicyRef, default_policy
from .snapshot import (
    ACTIVE,
    CASH,
    ELIMINATED,
    EntryColumns,
    Instant,
    Payment,
    Problem,
    Snapshot,
    SnapshotError,
)

FULL_REFUND = "full_refund"
IN_THE_MONEY = "in_the_money"
NOT_IN_THE_MONEY = "not_in_the_money"
RULES = (FULL_REFUND, IN_THE_MONEY, NOT_IN_THE_MONEY)

# The seed policy's rule 1: a failure within 20 minutes of the start refunds everyone.
EARLY_FAILURE_SECONDS = 20 * 60
# Version 1 of the default policy: proposals stored before policies existed were computed under
# it, and a proposal under it with nothing the old lines lacked keeps the old fingerprint.
LEGACY_POLICY = PolicyRef(
    DEFAULT_POLICY_ID, 1, "259687f6607d38e61db38d01d81657afd43df6b911d3220552347cd8cd6ac8ba"
)
PROPOSAL_FORMAT = "payout-proposal/1"
WHOLE_PERCENT = 100  # equal_share_percent is out of 100
MAX_WARNINGS = 20


class Line(NamedTuple):
    """One entry's line of the proposal; money in cents."""

    entry_id: str
    player_id: str
    screen_name: str
    status: str
    chips: int
    buy_in_refund: int
    next_prize: int
    chip_equity: int
    fee_refund: int
    total: int
    capped: bool
    equal_share: int = 0
    bounty_refund: int = 0
    # Rule 1 under refund_form as_paid, for an entry that paid partly otherwise than in cash:
    # its paid_with, in order (what goes back, ticket for ticket). None: all in cash.
    refunds: tuple[Payment, ...] | None = None


class LineColumns(NamedTuple):
    """The proposal's lines column by column, in snapshot order (see EntryColumns)."""

    entry_id: list[str]
    player_id: list[str]
    screen_name: list[str]
    status: list[str]
    chips: list[int]
    buy_in_refund: list[int]
    next_prize: list[int]
    chip_equity: list[int]
    fee_refund: list[int]
    total: list[int]
    capped: list[bool]
    equal_share: list[int]
    bounty_refund: list[int]
    refunds: list[tuple[Payment, ...] | None]

    @classmethod
    def empty(cls) -> "LineColumns":
        return cls([], [], [], [], [], [], [], [], [], [], [], [], [], [])

    @property
    def has_refunds(self) -> bool:
        """Whether some line goes back otherwise than all in cash."""
        return self.refunds.count(None) != len(self.refunds)


@dataclass
class Proposal:
    external_id: str
    name: str
    currency: str
    rule: str
    elapsed_seconds: Fraction  # failed_at - starts_at, exact
    site_wide_issue: bool
    columns: LineColumns = field(default_factory=LineColumns.empty)
    summary: dict[str, Any] = field(default_factory=dict)  # amounts in cents
    warnings: list[str] = field(default_factory=list)
    # How the chip equity was shared among the uncapped entries, for statements.
    equity_chips: int = 0  # chips of the entries that shared the equity pool after capping
    equity_shared: int = 0  # cents shared among them (E')
    # The policy the proposal was computed under: what it records (id, version, SHA-256), and
    # the policy itself, whose words the statements use.
    policy: PolicyRef = LEGACY_POLICY
    terms: Policy = field(default_factory=default_policy)
    # For statements: why rule 1 applies (full_refund_reason()), and the snapshot's rebuys and
    # their fees per entry (the same lists, not copies; None when nobody rebought).
    full_refund_reason: str | None = None
    rebuys: tuple[list[int], list[int]] | None = None

    @cached_property
    def lines(self) -> list[Line]:
        """The lines as Line tuples (built on first use from the columns)."""
        return list(map(Line._make, zip(*self.columns)))

    # What a statement says of the whole proposal, worked out once: statements for every
    # player of a 100k-entry posting ask it 100k times, and a pass over the columns each time
    # made sending them quadratic (docs/performance.md, "Issue 25: lines without screen names,
    # the breakdown's name search, player statements").

    @cached_property
    def active_buy_in_refund(self) -> int | None:
        """The buy-in refund every active entry got, when they all got the same one (a
        statement then says "X for each"); None when they differ (tickets, freerolls)."""
        c = self.columns
        refunds = {b for b, st in zip(c.buy_in_refund, c.status, strict=True) if st == ACTIVE}
        return refunds.pop() if len(refunds) == 1 else None

    @cached_property
    def refunds_bounties(self) -> bool:
        """Whether any line refunds a bounty."""
        return any(self.columns.bounty_refund)

    @property
    def has_legacy_form(self) -> bool:
        """Whether the proposal is fingerprinted as before policies existed: version 1 of the
        default policy, no equal share, no bounty, nothing returned otherwise than in cash."""
        c = self.columns
        return (
            self.policy == LEGACY_POLICY
            and not any(c.equal_share)
            and not any(c.bounty_refund)
            and not c.has_refunds
        )

    def fingerprint(self) -> str:
        c = self.columns
        if self.has_legacy_form:
            return fingerprint_columns(
                self.external_id,
                self.currency,
                self.rule,
                (c.entry_id, c.player_id, c.buy_in_refund, c.next_prize, c.chip_equity,
                 c.fee_refund, c.total),
            )  # fmt: skip
        return fingerprint_policy_columns(
            self.external_id,
            self.currency,
            self.rule,
            self.policy.sha256,
            (c.entry_id, c.player_id, c.buy_in_refund, c.next_prize, c.equal_share,
             c.chip_equity, c.fee_refund, c.bounty_refund, c.total, c.refunds),
        )  # fmt: skip

    @cached_property
    def _positions(self) -> dict[str, int]:
        """entry_id -> index: statements for every player of a 100k-entry proposal read one
        line each, which list.index would make quadratic."""
        assert self.columns is not None
        return {entry_id: i for i, entry_id in enumerate(self.columns.entry_id)}

    def rebought(self, entry_id: str) -> bool:
        """Whether the entry's refunds include rebuys or add-ons (or their fees)."""
        if self.rebuys is None:
            return False
        i = self._positions[entry_id]
        return bool(self.rebuys[0][i] or self.rebuys[1][i])

    def line_for(self, entry_id: str) -> Line:
        try:
            i = self._positions[entry_id]
        except KeyError:
            raise KeyError(entry_id) from None
        return Line._make(column[i] for column in self.columns)

    def to_json(self, *, with_fingerprint: bool = True, with_lines: bool = True) -> dict[str, Any]:
        """The payout-proposal/1 document (amounts as strings)."""
        summary = {
            k: (
                format_cents(v)
                if k in MONEY_KEYS
                else {m: format_cents(c) for m, c in v.items()}
                if k == "refunds_by_method"
                else v
            )
            for k, v in self.summary.items()
        }
        doc: dict[str, Any] = {
            "format": PROPOSAL_FORMAT,
            "tournament": self.external_id,
            "currency": self.currency,
            "rule": self.rule,
            "policy": {
                "id": self.policy.id,
                "version": self.policy.version,
                "sha256": self.policy.sha256,
            },
            "summary": summary,
            "warnings": list(self.warnings),
        }
        if with_lines:
            doc["lines"] = [line_json(ln) for ln in self.lines]
        if with_fingerprint:
            doc["fingerprint"] = self.fingerprint()
        return doc


# The summary's amounts (cents in Proposal.summary, strings in the document). Every summary has
# entries, active, remaining_pool, guaranteed, equity_pool, fee_refunds, capped_entries,
# prizes_awarded (what the operator absorbs: prizes already paid stay with their winners),
# total, equal_shares, bounty_refunds, overlay_kept and refunds_by_method (method -> amount:
# how the total goes back; all "cash" but under rule 1 with refund_form as_paid). Rule 1 adds
# buy_in_refunds, rule 2 chip_equity; first_place_cap (first prize) is there when the policy
# caps prize money at it.
MONEY_KEYS = frozenset(
    {"remaining_pool", "guaranteed", "equity_pool", "fee_refunds", "buy_in_refunds",
     "next_prizes", "chip_equity", "first_place_cap", "prizes_awarded", "total",
     "equal_shares", "bounty_refunds", "overlay_kept"}
)  # fmt: skip


def line_json(ln: Line) -> dict[str, Any]:
    doc: dict[str, Any] = {
        "entry_id": ln.entry_id,
        "player_id": ln.player_id,
        "status": ln.status,
        "chips": ln.chips,
        "buy_in_refund": format_cents(ln.buy_in_refund),
        "next_prize": format_cents(ln.next_prize),
        "equal_share": format_cents(ln.equal_share),
        "chip_equity": format_cents(ln.chip_equity),
        "fee_refund": format_cents(ln.fee_refund),
        "bounty_refund": format_cents(ln.bounty_refund),
        "total": format_cents(ln.total),
        "capped": ln.capped,
    }
    if ln.refunds is not None:
        doc["refunds"] = refunds_json(ln.refunds)
    return doc


def refunds_json(refunds: Iterable[Payment]) -> list[dict[str, str]]:
    """A line's refunds as the document gives them: method, amount, and a ticket's id."""
    out = []
    for p in refunds:
        item = {"method": p.method, "amount": format_cents(p.amount)}
        if p.ticket_id is not None:
            item["ticket_id"] = p.ticket_id
        out.append(item)
    return out


def fingerprint_lines(
    external_id: str,
    currency: str,
    rule: str,
    rows: Iterable[tuple[str, str, int, int, int, int, int]],
) -> str:
    """SHA-256 of the canonical lines: what a manager approves and what posting re-checks.

    `rows` yields (entry_id, player_id, buy_in_refund, next_prize, chip_equity, fee_refund, total)
    with amounts in cents, in snapshot order: the engine's lines and the stored PayoutLine rows
    give the same fingerprint. Strings are length-prefixed so that no id can imitate another line.
    """
    h = _fingerprint_start(external_id, currency, rule)
    remaining = iter(rows)
    while chunk := list(islice(remaining, _FINGERPRINT_CHUNK)):
        _fingerprint_update(h, _canonical_lines(*zip(*chunk)))
    return h.hexdigest()


def fingerprint_columns(
    external_id: str, currency: str, rule: str, columns: tuple[list[Any], ...]
) -> str:
    """fingerprint_lines of the rows zip(*columns), without making the rows: the proposal's
    own columns go straight into the canonical text."""
    h = _fingerprint_start(external_id, currency, rule)
    _fingerprint_update(h, _canonical_lines(*columns))
    return h.hexdigest()


# One canonical line: the ids with their lengths, then the five amounts in cents. %s is what
# str.format("{}") wrote before: the same text for the same values, byte for byte.
_CANONICAL = "%s:%s%s:%s%s,%s,%s,%s,%s\n"
_FINGERPRINT_CHUNK = 16384


def _canonical_lines(
    ids: Sequence[str],
    players: Sequence[str],
    buy_in: Sequence[int],
    next_prize: Sequence[int],
    equity: Sequence[int],
    fee: Sequence[int],
    total: Sequence[int],
) -> Iterator[str]:
    fields = zip(
        map(len, ids), ids, map(len, players), players, buy_in, next_prize, equity, fee, total
    )
    return map(_CANONICAL.__mod__, fields)


def _fingerprint_start(
    external_id: str, currency: str, rule: str, policy_sha256: str | None = None
) -> "hashlib._Hash":
    import hashlib  # here, not at the top: compute_payouts starts faster without OpenSSL

    h = hashlib.sha256()
    if policy_sha256 is None:
        h.update(fingerprint_header(external_id, currency, rule).encode())
    else:
        h.update(fingerprint_policy_header(external_id, currency, rule, policy_sha256).encode())
    return h


# The fingerprint of every proposal but the legacy ones (Proposal.has_legacy_form): the header
# names the policy's SHA-256, and each line gives the seven amounts and the refunds.
#   header: "payout-proposal/1\n<len>:<external_id>|<currency>|<rule>|policy:<sha256>\n"
#   line:   "<len>:<entry_id><len>:<player_id><buy_in_refund>,<next_prize>,<equal_share>,
#            <chip_equity>,<fee_refund>,<bounty_refund>,<total>,<refunds>\n" (one line, cents)
#   refunds: "" (all in cash), else refunds_text(): "<method>:<cents>:<len>:<ticket_id>" per
#            part, joined by ";" (len 0 and no id for cash and tournament money).
_CANONICAL_POLICY = "%s:%s%s:%s%s,%s,%s,%s,%s,%s,%s,%s\n"


def fingerprint_policy_header(
    external_id: str, currency: str, rule: str, policy_sha256: str
) -> str:
    return (
        f"{PROPOSAL_FORMAT}\n{len(external_id)}:{external_id}|{currency}|{rule}"
        f"|policy:{policy_sha256}\n"
    )


def refunds_text(refunds: Iterable[Payment] | None) -> str:
    """A line's refunds in the canonical form of the fingerprint ("" when all in cash)."""
    if refunds is None:
        return ""
    return ";".join(
        f"{p.method}:{p.amount}:{len(p.ticket_id or '')}:{p.ticket_id or ''}" for p in refunds
    )


def fingerprint_policy_columns(
    external_id: str,
    currency: str,
    rule: str,
    policy_sha256: str,
    columns: tuple[Sequence[Any], ...],
) -> str:
    """The fingerprint of a proposal with a policy (see _CANONICAL_POLICY). `columns`:
    (entry_id, player_id, buy_in_refund, next_prize, equal_share, chip_equity, fee_refund,
    bounty_refund, total, refunds), amounts in cents, refunds as Payment tuples or None (or
    already as refunds_text())."""
    h = _fingerprint_start(external_id, currency, rule, policy_sha256)
    _fingerprint_update(h, _canonical_policy_lines(*columns))
    return h.hexdigest()


def fingerprint_policy_lines(
    external_id: str, currency: str, rule: str, policy_sha256: str, rows: Iterable[Sequence[Any]]
) -> str:
    """fingerprint_policy_columns of rows (stored lines) in that column order."""
    h = _fingerprint_start(external_id, currency, rule, policy_sha256)
    remaining = iter(rows)
    while chunk := list(islice(remaining, _FINGERPRINT_CHUNK)):
        _fingerprint_update(h, _canonical_policy_lines(*zip(*chunk)))
    return h.hexdigest()


def _canonical_policy_lines(
    ids: Sequence[str],
    players: Sequence[str],
    *amounts_and_refunds: Sequence[Any],
) -> Iterator[str]:
    *amounts, refunds = amounts_and_refunds
    texts = map(_refunds_as_text, refunds)
    fields = zip(map(len, ids), ids, map(len, players), players, *amounts, texts)
    return map(_CANONICAL_POLICY.__mod__, fields)


def _refunds_as_text(refunds: object) -> str:
    if refunds is None or isinstance(refunds, str):
        return refunds or ""
    assert isinstance(refunds, tuple | list)
    return refunds_text(Payment(*p) for p in refunds)


def _fingerprint_update(h: "hashlib._Hash", lines: Iterator[str]) -> None:
    while text := "".join(islice(lines, _FINGERPRINT_CHUNK)):
        h.update(text.encode())


def fingerprint_header(external_id: str, currency: str, rule: str) -> str:
    return f"{PROPOSAL_FORMAT}\n{len(external_id)}:{external_id}|{currency}|{rule}\n"


def _instant(value: Instant | datetime, what: str) -> Instant:
    if value is None:
        return None
    if isinstance(value, Instant):
        return value
    if isinstance(value, datetime):
        try:
            return Instant.from_datetime(value)
        except ValueError:
            raise SnapshotError([Problem(what, "has no time zone offset")]) from None
    raise TypeError(f"{what} must be a datetime or Instant")


def elapsed_seconds(snapshot: Snapshot, failed_at: Instant | datetime) -> Fraction:
    """Exact seconds from the actual start to the failure (negative when it failed before)."""
    return _instant(failed_at, "incident.failed_at").exact - snapshot.starts_at.exact


def policy_for(snapshot: Snapshot, policy: Policy | None = None) -> Policy:
    """The policy a proposal is computed under: `policy` when given, else the preset the
    snapshot names (tournament.policy), else the default policy."""
    if policy is not None:
        return policy
    if snapshot.policy_id is None:
        return default_policy()
    try:
        return PRESETS[snapshot.policy_id]
    except KeyError:
        raise SnapshotError(
            [
                Problem(
                    "tournament.policy",
                    f"{snapshot.policy_id!r} is not a policy this app knows "
                    f"(known: {', '.join(sorted(PRESETS))})",
                )
            ]
        ) from None


def full_refund_reason(
    snapshot: Snapshot,
    failed_at: Instant | datetime,
    site_wide_issue: bool,
    policy: Policy | None = None,
) -> str | None:
    """Why rule 1 applies, or None: "site_wide_issue" (management's finding),
    "nothing_played" (elapsed <= 0, whatever the policy), "within_minutes" (the policy's
    window) or "before_first_elimination" (no entry is eliminated, where the policy says so)."""
    policy = policy_for(snapshot, policy)
    if site_wide_issue:
        return "site_wide_issue"
    elapsed = elapsed_seconds(snapshot, failed_at)
    if elapsed <= 0:
        return "nothing_played"
    if policy.within_minutes is not None and elapsed <= policy.within_minutes * 60:
        return "within_minutes"
    if policy.before_first_elimination and ELIMINATED not in snapshot.columns.status:
        return "before_first_elimination"
    return None


def select_rule(
    snapshot: Snapshot,
    failed_at: Instant | datetime,
    site_wide_issue: bool,
    policy: Policy | None = None,
) -> str:
    """The rule id the policy selects from the timing, the entries and management's finding
    (policies.md, "Which rule"; `policy` None: the snapshot's, else the default)."""
    if full_refund_reason(snapshot, failed_at, site_wide_issue, policy) is not None:
        return FULL_REFUND
    active = snapshot.active_count
    return IN_THE_MONEY if active <= snapshot.last_paid_place else NOT_IN_THE_MONEY


def compute_proposal(
    snapshot: Snapshot,
    *,
    failed_at: Instant | datetime | None = None,
    site_wide_issue: bool | None = None,
    policy: Policy | None = None,
) -> Proposal:
    """Snapshot + incident facts -> Proposal. Arguments override the snapshot's own incident;
    `policy` None: the preset the snapshot names (tournament.policy), else the default."""
    with paused_gc():
        return _compute_proposal(snapshot, failed_at, site_wide_issue, policy)


def _compute_proposal(
    snapshot: Snapshot,
    failed_at: Instant | datetime | None,
    site_wide_issue: bool | None,
    policy: Policy | None = None,
) -> Proposal:
    if failed_at is None and snapshot.incident is not None:
        failed_at = snapshot.incident.failed_at
    if failed_at is None:
        raise SnapshotError([Problem("incident.failed_at", "is required to compute a proposal")])
    failed_at = _instant(failed_at, "incident.failed_at")
    if site_wide_issue is None:
        site_wide_issue = (
            snapshot.incident.site_wide_issue if snapshot.incident is not None else False
        )
    policy = policy_for(snapshot, policy)

    rule = select_rule(snapshot, failed_at, site_wide_issue, policy)
    proposal = Proposal(
        external_id=snapshot.external_id,
        name=snapshot.name,
        currency=snapshot.currency,
        rule=rule,
        elapsed_seconds=elapsed_seconds(snapshot, failed_at),
        site_wide_issue=bool(site_wide_issue),
        policy=policy.ref,
        terms=policy,
        full_refund_reason=full_refund_reason(snapshot, failed_at, site_wide_issue, policy),
        rebuys=(snapshot.columns.rebuys_paid, snapshot.columns.rebuy_fees_paid)
        if snapshot.has_rebuys
        else None,
    )
    if rule == FULL_REFUND:
        _full_refund(snapshot, proposal, policy)
    else:
        _rule_two(snapshot, proposal, policy)
    proposal.warnings = _warnings(snapshot, proposal)
    return proposal


def _paid_in(e: EntryColumns) -> list[int]:
    """buy_in_paid + rebuys_paid per entry (the buy-ins column itself when nobody rebought)."""
    return list(map(add, e.buy_in_paid, e.rebuys_paid)) if any(e.rebuys_paid) else e.buy_in_paid


def _fees(e: EntryColumns) -> list[int]:
    """fee_paid + rebuy_fees_paid per entry."""
    return list(map(add, e.fee_paid, e.rebuy_fees_paid)) if any(e.rebuy_fees_paid) else e.fee_paid


def _non_cash(payments: tuple[Payment, ...] | None) -> tuple[Payment, ...] | None:
    """What goes back in the form paid: the payments, when any part is not cash."""
    if payments is None:
        return None
    for p in payments:
        if p.method != CASH:
            return payments
    return None


def _full_refund(snapshot: Snapshot, proposal: Proposal, policy: Policy) -> None:
    """Rule 1: every entry, active or eliminated, gets back what it paid (buy-in and rebuys,
    fees, the knockout part), in the form paid under refund_form as_paid. Nothing else."""
    e = snapshot.columns
    m = len(e.entry_id)
    zeros = [0] * m
    paid_in = _paid_in(e)
    fees = _fees(e)
    totals = list(map(add, paid_in, fees))
    bounties = e.bounty_paid
    knockout = any(bounties)
    if knockout:
        totals = list(map(add, totals, bounties))
    refunds: list[tuple[Payment, ...] | None] = [None] * m
    if policy.refund_form == "as_paid" and snapshot.has_paid_with:
        refunds = list(map(_non_cash, e.paid_with))
    proposal.columns = LineColumns(
        e.entry_id, e.player_id, e.screen_name, e.status, e.chips,
        paid_in, zeros, zeros, fees, totals, [False] * m,
        zeros, bounties if knockout else zeros, refunds,
    )  # fmt: skip
    buy_ins = sum(paid_in)
    fee_total = sum(fees)
    bounty_total = sum(bounties) if knockout else 0
    total = buy_ins + fee_total + bounty_total
    summary: dict[str, Any] = {
        "entries": m,
        "active": snapshot.active_count,
        "remaining_pool": 0,
        "guaranteed": 0,
        "equity_pool": 0,
        "buy_in_refunds": buy_ins,
        "fee_refunds": fee_total,
    }
    if policy.first_place_cap:
        summary["first_place_cap"] = snapshot.first_prize
    summary.update(
        {
            "capped_entries": 0,
            # Prizes already awarded stay with their winners: the operator absorbs them.
            "prizes_awarded": _awarded_total(e),
            "total": total,
            "equal_shares": 0,
            "bounty_refunds": bounty_total,
            "overlay_kept": 0,
            "refunds_by_method": _by_method(total, proposal.columns),
        }
    )
    proposal.summary = summary


def _by_method(total: int, columns: LineColumns) -> dict[str, int]:
    """How the proposal's total goes back: method -> cents (cash unless returned as paid)."""
    if not columns.has_refunds:
        return {CASH: total} if total else {}
    by_method: dict[str, int] = {}
    returned = 0
    for payments in filter(None, columns.refunds):
        for p in payments:
            by_method[p.method] = by_method.get(p.method, 0) + p.amount
            returned += p.amount
    if total - returned:
        by_method[CASH] = by_method.get(CASH, 0) + total - returned
    return {method: by_method[method] for method in sorted(by_method) if by_method[method]}


def _awarded_total(columns: EntryColumns) -> int:
    return sum(filter(None, columns.prize_awarded))


def _rule_two(snapshot: Snapshot, proposal: Proposal, policy: Policy) -> None:
    """Rule 2: guaranteed part + equal share + chip equity (capped at first prize where the
    policy says so) + fee refund + the bounty on the entry's head.

    Works column by column (map, compress, zip run in C): a quarter of a million entries must
    compute in well under a second.
    """
    e = snapshot.columns
    ids, players, screens, statuses, chips = (
        e.entry_id,
        e.player_id,
        e.screen_name,
        e.status,
        e.chips,
    )
    m = len(ids)
    is_active = list(map(eq, repeat(ACTIVE), statuses))
    active = list(compress(range(m), is_active))
    n = len(active)
    first_prize = snapshot.first_prize
    if n < 2:
        # One entry left has won; none left (every entry eliminated) has no winner to speak of.
        left = (
            "1 active entry left: the tournament has a winner" if n == 1 else "no active entry left"
        )
        raise SnapshotError(
            [Problem("entries", f"{left}, rule 2 does not apply (it needs two active entries)")]
        )
    # Every column below is full length, in snapshot order. Eliminated entries receive nothing
    # (their awarded prizes are untouched): they hold no chips and their guaranteed part and fee
    # refund are masked to zero, so the chip equity split gives them zero too.
    in_money = proposal.rule == IN_THE_MONEY
    overlay_kept = 0
    if in_money:
        # Remaining pool: the prizes for places 1..N; everyone is guaranteed the next prize.
        remaining_pool = sum(snapshot.place_amounts[:n])
        guaranteed = list(map(mul, repeat(snapshot.place_amounts[n - 1], m), is_active))
    else:
        # Not yet in the money: the whole prize table (less a guarantee's overlay, where the
        # house keeps it); the policy's returned part back to everyone.
        remaining_pool = sum(snapshot.place_amounts)
        if policy.overlay == "returned_to_house" and snapshot.guarantee is not None:
            contributions = sum(_paid_in(e))
            if contributions < remaining_pool:
                overlay_kept = remaining_pool - contributions
                remaining_pool = contributions
        returned = policy.not_in_the_money_returned
        if returned == "buy_in_and_rebuys":
            guaranteed = list(map(mul, _paid_in(e), is_active))
        elif returned == "buy_in":
            guaranteed = list(map(mul, e.buy_in_paid, is_active))
        else:
            guaranteed = [0] * m

    capped_at = policy.first_place_cap
    problems = _above_first_prize(guaranteed, active, ids, first_prize, "guaranteed part")
    guaranteed_total = sum(guaranteed)
    equity_pool = remaining_pool - guaranteed_total
    if equity_pool < 0:
        problems.append(
            Problem(
                "tournament.prizes",
                f"the remaining pool {format_cents(remaining_pool)} is smaller than the guaranteed parts "
                f"{format_cents(guaranteed_total)}: the policy cannot be applied automatically",
            )
        )
    if problems and (capped_at or equity_pool < 0):
        raise SnapshotError(problems if capped_at else problems[-1:])
    # The equal share: Q = floor(E * s / 100), floor(Q / N) each, the cents left one each to
    # the larger chip counts, then the smaller entry_id.
    percent = policy.equal_share_percent(in_money)
    equal_pool = equity_pool * percent // WHOLE_PERCENT
    zeros = [0] * m
    if equal_pool:
        equal_share = _equal_shares(equal_pool, n, is_active, chips, ids)
        fixed = list(map(add, guaranteed, equal_share))
    else:
        equal_share = zeros
        fixed = guaranteed
    chip_pool = equity_pool - equal_pool
    if capped_at and equal_pool:
        problems = _above_first_prize(
            fixed, active, ids, first_prize, "guaranteed part and equal share"
        )
        if problems:
            raise SnapshotError(problems)

    if capped_at:
        equity, capped, shared_chips, shared_pool = share_chip_equity(
            chip_pool, chips, fixed, first_prize, ids
        )
    else:
        shared_chips = sum(chips)
        shared_pool = chip_pool
        equity = round_shares(chip_pool, shared_chips, chips, ids)
        capped = [False] * m
    fees = _fees(e)
    fee_refunds = list(map(mul, fees, is_active))
    totals = list(map(add, map(add, fixed, equity), fee_refunds))
    bounties = e.bounty  # 0 for eliminated entries
    knockout = any(bounties)
    if knockout:
        totals = list(map(add, totals, bounties))
    buy_in_refunds, next_prizes = (zeros, guaranteed) if in_money else (guaranteed, zeros)
    proposal.columns = LineColumns(
        ids, players, screens, statuses, chips,
        buy_in_refunds, next_prizes, equity, fee_refunds, totals, capped,
        equal_share, bounties if knockout else zeros, [None] * m,
    )  # fmt: skip
    proposal.equity_chips = shared_chips
    proposal.equity_shared = shared_pool
    total_equity = sum(equity)
    fee_total = sum(fee_refunds)
    bounty_total = sum(bounties) if knockout else 0
    total = remaining_pool + fee_total + bounty_total
    summary: dict[str, Any] = {
        "entries": m,
        "active": n,
        "remaining_pool": remaining_pool,
        "guaranteed": guaranteed_total,
        "equity_pool": equity_pool,
        "chip_equity": total_equity,
        "fee_refunds": fee_total,
    }
    if capped_at:
        summary["first_place_cap"] = first_prize
    summary.update(
        {
            "capped_entries": sum(capped),
            "prizes_awarded": _awarded_total(e),
            "total": total,
            "equal_shares": equal_pool,
            "bounty_refunds": bounty_total,
            "overlay_kept": overlay_kept,
            "refunds_by_method": {CASH: total} if total else {},
        }
    )
    proposal.summary = summary
    # The policy: the pool is always distributed, to the cent.
    assert guaranteed_total + equal_pool + total_equity == remaining_pool


def _above_first_prize(
    fixed: list[int], active: list[int], ids: list[str], first_prize: int, what: str
) -> list[Problem]:
    """The entries whose fixed part alone passes first prize (refused under the cap)."""
    problems: list[Problem] = []
    if max(fixed) > first_prize:
        for i in active:
            if fixed[i] > first_prize and len(problems) < 20:
                problems.append(
                    Problem(
                        f"entries[{i}] ({ids[i]})",
                        f"{what} {format_cents(fixed[i])} is above first prize "
                        f"{format_cents(first_prize)}",
                    )
                )
    return problems


def _equal_shares(
    pool: int, n: int, is_active: list[bool], chips: list[int], ids: list[str]
) -> list[int]:
    """Each active entry's equal share of `pool` cents: floor(pool / n), and the cents left one
    each to the active entries with the larger chip count, then the smaller entry_id."""
    each, left = divmod(pool, n)
    shares = list(map(mul, repeat(each, len(is_active)), is_active))
    if left:
        # The left-th largest chip count is the threshold: every entry above it gets a cent;
        # among those exactly at it, the smaller entry_ids get the rest.
        threshold = kth_largest(chips, left)  # eliminated entries hold 0 chips: never reached
        above = list(map(threshold.__lt__, chips))
        shares = list(map(add, shares, above))
        tied = sorted(compress(range(len(ids)), map(threshold.__eq__, chips)), key=ids.__getitem__)
        for k in tied[: left - sum(above)]:
            shares[k] += 1
    return shares


def share_chip_equity(
    pool: int, chips: list[int], guaranteed: list[int], cap: int, entry_ids: list[str]
) -> tuple[list[int], list[bool], int, int]:
    """Split `pool` cents by chips with the first-place cap, then round once (payout-rules.md).

    Returns (equity cents per entry, capped flag per entry, chips of the uncapped entries,
    cents shared among them). An entry is capped when guaranteed + exact share > cap; capped
    entries get cap - guaranteed and leave; the rest share what is left, again, until none is
    capped. Capping an entry only ever raises the share per chip of those left, so entries are
    capped in order of chips per cent of headroom (cap - guaranteed), and one pass in that order
    caps exactly the set that the round-by-round description of the rules caps.
    """
    n = len(chips)
    equity = [0] * n
    capped = [False] * n
    remaining = pool
    total_chips = sum(chips)
    headroom = list(map(sub, repeat(cap, n), guaranteed))

    def passes_cap(k: int) -> bool:
        # guaranteed + remaining * chips / total_chips > cap, in integers
        return remaining > 0 and remaining * chips[k] > headroom[k] * total_chips

    # Entries with the same headroom (the same guaranteed part) are capped in order of chips;
    # across groups, in order of chips per cent of headroom. Usually there is one group. Entries
    # without chips (eliminated) take no share and can never be capped.
    holders = list(compress(range(n), chips))
    if len(set(compress(headroom, chips))) == 1:
        groups = {headroom[holders[0]]: holders}
    else:
        groups = {}
        for k in holders:
            groups.setdefault(headroom[k], []).append(k)

    def urgency(
        k: int,
    ) -> tuple[
        int, int | Fraction
    ]:  # smaller first; headroom 0 first of all (any share would pass the cap)
        return (0, -chips[k]) if headroom[k] == 0 else (1, -Fraction(chips[k], headroom[k]))

    heads = [max(ks, key=chips.__getitem__) for ks in groups.values()]
    if passes_cap(min(heads, key=urgency)):  # rare: sort only when someone is capped at all
        queues = [sorted(ks, key=chips.__getitem__, reverse=True) for ks in groups.values()]
        heap = [(urgency(q[0]), g, 0) for g, q in enumerate(queues)]
        heapq.heapify(heap)
        while heap:
            _, g, pos = heapq.heappop(heap)
            k = queues[g][pos]
            if not passes_cap(k):
                break
            equity[k] = headroom[k]
            capped[k] = True
            remaining -= headroom[k]
            total_chips -= chips[k]
            if pos + 1 < len(queues[g]):
                heapq.heappush(heap, (urgency(queues[g][pos + 1]), g, pos + 1))
    if remaining > 0 and total_chips == 0:  # cannot happen while the cap holds R <= N * K
        raise SnapshotError(
            [Problem("tournament.prizes", "the pool exceeds what the first-place cap allows")]
        )
    if total_chips and not any(capped):  # the usual case: everyone shares, column by column
        equity = round_shares(remaining, total_chips, chips, entry_ids)
    elif total_chips:
        # The uncapped entries that hold chips share the rest. An entry without chips would get
        # 0 with a remainder of 0, and never a leftover cent: fewer cents are left over than
        # there are non-zero remainders, so the threshold remainder is above 0.
        sharers = list(compress(range(n), map(and_, map(truth, chips), map(not_, capped))))
        shares = round_shares(
            remaining,
            total_chips,
            list(map(chips.__getitem__, sharers)),
            list(map(entry_ids.__getitem__, sharers)),
        )
        # Each sharer's share at its position, the capped entries' equity elsewhere (in C: a
        # monster stack capped leaves 100k sharers).
        at = dict(zip(sharers, shares, strict=True))
        equity = list(map(at.get, range(n), equity))
    return equity, capped, total_chips, remaining


def round_shares(pool: int, total_chips: int, chips: list[int], entry_ids: list[str]) -> list[int]:
    """Exact shares pool * chips / total_chips rounded once, so that they add up to pool.

    Floors in cents first; then the cents left over, one each, to the largest remainders. Ties go
    to the larger chip count, then to the smaller entry_id by code point. Remainders are compared
    as integers over the common denominator total_chips: no rounding error can creep in.
    """
    products = list(map(pool.__mul__, chips))
    shares = list(map(floordiv, products, repeat(total_chips)))
    remainders = list(map(mod, products, repeat(total_chips)))
    del products
    leftover = pool - sum(shares)
    if leftover:
        # The leftover-th largest remainder is the threshold: everything above it gets a cent;
        # among the entries exactly at it, the tie-breaks pick the rest.
        threshold = kth_largest(remainders, leftover)
        # A cent to every entry above the threshold, added column-wise (True counts 1).
        above = list(map(threshold.__lt__, remainders))
        shares = list(map(add, shares, above))
        tied = list(compress(range(len(chips)), map(threshold.__eq__, remainders)))
        tied.sort(key=lambda k: (-chips[k], entry_ids[k]))
        for k in tied[: leftover - sum(above)]:
            shares[k] += 1
    return shares


def kth_largest(values: list[int], k: int) -> int:
    """The k-th largest of `values` (1 <= k <= len(values)), as sorted(values)[-k] gives it.

    A full sort of 100k remainders is the most expensive step of the rules. A sample of the
    values guesses a narrow window around the answer; counting (in C) how many values lie above
    it and sorting only those inside gives the exact answer. A wrong guess (a skewed sample)
    falls back to the full sort: the answer never depends on the sample, only the time does.
    """
    n = len(values)
    if n < 4096:
        return sorted(values, reverse=True)[k - 1]
    sample = sorted(values[:: n // 1024])
    m = len(sample)
    at = m - k * m // n  # where the answer falls in the sample, counted from the smallest
    inside: Iterator[bool] | None = None  # the window: values from low to high
    above = 0  # values above high
    if at + 48 < m:
        high = sample[at + 48]
        above = sum(map(high.__lt__, values))
        inside = map(high.__ge__, values)
    if at - 48 >= 0:
        low = sample[at - 48]
        at_least_low = map(low.__le__, values)
        inside = at_least_low if inside is None else map(and_, inside, at_least_low)
    if above < k and inside is not None:
        window = sorted(compress(values, inside), reverse=True)
        if above + len(window) >= k:
            return window[k - above - 1]
    return sorted(values, reverse=True)[k - 1]


def _warnings(snapshot: Snapshot, proposal: Proposal) -> list[str]:
    """Facts the rules do not use but that must agree; shown to the approver, never fatal."""
    warnings = []
    n = proposal.summary["active"]
    last_paid = snapshot.last_paid_place
    e = snapshot.columns
    none_awarded = e.prize_awarded.count(None) == len(e.prize_awarded)
    carried = [] if none_awarded else [a for a in e.prize_awarded if a is not None]
    if carried:
        expected = sum(snapshot.place_amounts[n:last_paid]) if n < last_paid else 0
        awarded = sum(carried)
        if awarded != expected:
            warnings.append(
                f"prizes awarded to eliminated entries total {format_cents(awarded)}, but the prize table "
                f"pays {format_cents(expected)} for places {n + 1} to {last_paid}"
                if n < last_paid
                else f"prizes awarded to eliminated entries total {format_cents(awarded)}, but with {n} "
                f"entries left and {last_paid} paid places none should have been awarded yet"
            )
    per_entry = []
    # Only eliminated entries with a finish place can disagree: find them column by column (a
    # snapshot may list hundreds of thousands of eliminated entries, nearly all in order).
    m = len(e.entry_id)
    placed = map(is_not, e.finish_place, repeat(None))
    candidates = list(compress(range(m), map(and_, placed, map(ne, e.status, repeat(ACTIVE)))))
    places: Iterator[Any] = map(e.finish_place.__getitem__, candidates)  # never None here
    prizes = map(e.prize_awarded.__getitem__, candidates)
    early = map(le, places, repeat(n))
    suspects = compress(candidates, map(or_, early, map(is_not, prizes, repeat(None))))
    for k in suspects:
        entry_id, finish_place, prize = e.entry_id[k], e.finish_place[k], e.prize_awarded[k]
        assert finish_place is not None
        if finish_place <= n:
            per_entry.append(
                f"entry {entry_id} finished {finish_place}, but {n} entries are still active"
            )
        elif prize is not None and prize != snapshot.prize_for_place(finish_place):
            per_entry.append(
                f"entry {entry_id} finished {finish_place} and was awarded {format_cents(prize)}, "
                f"but the prize table pays {format_cents(snapshot.prize_for_place(finish_place))} for that place"
            )
    warnings.extend(per_entry[:MAX_WARNINGS])
    if len(per_entry) > MAX_WARNINGS:
        warnings.append(
            f"and {len(per_entry) - MAX_WARNINGS} more entries with finish places that disagree"
        )
    conservation = bounty_conservation_warning(snapshot)
    if conservation:
        warnings.append(conservation)
    return warnings


def bounty_conservation_warning(snapshot: Snapshot) -> str | None:
    """In a knockout where every entry gives `bounties_won`, the bounties paid in must equal the
    bounties on active heads plus the bounties won (policies.md); else a warning naming the
    difference, shown to the approver."""
    e = snapshot.columns
    if not snapshot.is_knockout or not e.bounties_won or None in e.bounties_won:
        return None
    paid = sum(e.bounty_paid)
    heads = sum(e.bounty)  # 0 on eliminated entries
    won = sum(filter(None, e.bounties_won))
    if paid == heads + won:
        return None
    difference = paid - (heads + won)
    return (
        f"bounties paid in total {format_cents(paid)}, but the bounties on active heads "
        f"({format_cents(heads)}) plus the bounties won ({format_cents(won)}) total "
        f"{format_cents(heads + won)}: a difference of {format_cents(abs(difference))} "
        + ("not accounted for" if difference > 0 else "more than was paid in")
    )
