"""Apply the cancellation policy to a snapshot: the three rules of payout-rules.md, to the cent.

Pure: snapshot + incident facts in, proposal out. Integer cents and integer comparisons only
(exact shares are `E' * chips / C`, kept as integer numerator and common denominator).
"""

import hashlib
import heapq
from dataclasses import dataclass, field
from datetime import datetime
from fractions import Fraction
from itertools import compress, islice, repeat
from operator import add
from typing import NamedTuple

from ._gc import paused_gc
from .money import format_cents
from .snapshot import ACTIVE, Instant, Problem, SnapshotError

FULL_REFUND = "full_refund"
IN_THE_MONEY = "in_the_money"
NOT_IN_THE_MONEY = "not_in_the_money"
RULES = (FULL_REFUND, IN_THE_MONEY, NOT_IN_THE_MONEY)

# Policy rule 1: a failure within 20 minutes of the start refunds everyone.
EARLY_FAILURE_SECONDS = 20 * 60
PROPOSAL_FORMAT = "payout-proposal/1"
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


@dataclass
class Proposal:
    external_id: str
    name: str
    currency: str
    rule: str
    elapsed_seconds: Fraction  # failed_at - starts_at, exact
    site_wide_issue: bool
    lines: list
    summary: dict  # amounts in cents
    warnings: list = field(default_factory=list)
    # How the chip equity was shared among the uncapped entries, for statements.
    equity_chips: int = 0  # chips of the entries that shared the equity pool after capping
    equity_shared: int = 0  # cents shared among them (E')

    def fingerprint(self):
        return fingerprint_lines(
            self.external_id,
            self.currency,
            self.rule,
            (
                (
                    ln.entry_id,
                    ln.player_id,
                    ln.buy_in_refund,
                    ln.next_prize,
                    ln.chip_equity,
                    ln.fee_refund,
                    ln.total,
                )
                for ln in self.lines
            ),
        )

    def line_for(self, entry_id):
        for ln in self.lines:
            if ln.entry_id == entry_id:
                return ln
        raise KeyError(entry_id)

    def to_json(self, *, with_fingerprint=True, with_lines=True):
        """The payout-proposal/1 document (amounts as strings)."""
        money_keys = {"remaining_pool", "guaranteed", "equity_pool", "fee_refunds", "buy_in_refunds",
                      "next_prizes", "chip_equity", "first_place_cap", "prizes_awarded", "total"}  # fmt: skip
        summary = {k: (format_cents(v) if k in money_keys else v) for k, v in self.summary.items()}
        doc = {
            "format": PROPOSAL_FORMAT,
            "tournament": self.external_id,
            "currency": self.currency,
            "rule": self.rule,
            "summary": summary,
            "warnings": list(self.warnings),
        }
        if with_lines:
            doc["lines"] = [line_json(ln) for ln in self.lines]
        if with_fingerprint:
            doc["fingerprint"] = self.fingerprint()
        return doc


def line_json(ln):
    return {
        "entry_id": ln.entry_id,
        "player_id": ln.player_id,
        "status": ln.status,
        "chips": ln.chips,
        "buy_in_refund": format_cents(ln.buy_in_refund),
        "next_prize": format_cents(ln.next_prize),
        "chip_equity": format_cents(ln.chip_equity),
        "fee_refund": format_cents(ln.fee_refund),
        "total": format_cents(ln.total),
        "capped": ln.capped,
    }


def fingerprint_lines(external_id, currency, rule, rows):
    """SHA-256 of the canonical lines: what a manager approves and what posting re-checks.

    `rows` yields (entry_id, player_id, buy_in_refund, next_prize, chip_equity, fee_refund, total)
    with amounts in cents, in snapshot order: the engine's lines and the stored PayoutLine rows
    give the same fingerprint. Strings are length-prefixed so that no id can imitate another line.
    """
    h = hashlib.sha256()
    h.update(f"{PROPOSAL_FORMAT}\n{len(external_id)}:{external_id}|{currency}|{rule}\n".encode())
    rows = iter(rows)
    while True:
        chunk = list(islice(rows, 16384))
        if not chunk:
            return h.hexdigest()
        ids, players, b, n, c, f, t = zip(*chunk)
        text = "".join(
            map(_CANONICAL.format, map(len, ids), ids, map(len, players), players, b, n, c, f, t)
        )
        h.update(text.encode())


_CANONICAL = "{}:{}{}:{}{},{},{},{},{}\n"


def _instant(value, what):
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


def elapsed_seconds(snapshot, failed_at):
    """Exact seconds from the actual start to the failure (negative when it failed before)."""
    return _instant(failed_at, "incident.failed_at").exact - snapshot.starts_at.exact


def select_rule(snapshot, failed_at, site_wide_issue):
    """The rule id the timing and management's site-wide finding select (payout-rules.md)."""
    if site_wide_issue or elapsed_seconds(snapshot, failed_at) <= EARLY_FAILURE_SECONDS:
        return FULL_REFUND
    active = sum(1 for e in snapshot.entries if e.status == ACTIVE)
    return IN_THE_MONEY if active <= snapshot.last_paid_place else NOT_IN_THE_MONEY


def compute_proposal(snapshot, *, failed_at=None, site_wide_issue=None):
    """Snapshot + incident facts -> Proposal. Arguments override the snapshot's own incident."""
    with paused_gc():
        return _compute_proposal(snapshot, failed_at, site_wide_issue)


def _compute_proposal(snapshot, failed_at, site_wide_issue):
    if failed_at is None and snapshot.incident is not None:
        failed_at = snapshot.incident.failed_at
    if failed_at is None:
        raise SnapshotError([Problem("incident.failed_at", "is required to compute a proposal")])
    failed_at = _instant(failed_at, "incident.failed_at")
    if site_wide_issue is None:
        site_wide_issue = (
            snapshot.incident.site_wide_issue if snapshot.incident is not None else False
        )

    rule = select_rule(snapshot, failed_at, site_wide_issue)
    proposal = Proposal(
        external_id=snapshot.external_id,
        name=snapshot.name,
        currency=snapshot.currency,
        rule=rule,
        elapsed_seconds=elapsed_seconds(snapshot, failed_at),
        site_wide_issue=bool(site_wide_issue),
        lines=[],
        summary={},
    )
    if rule == FULL_REFUND:
        _full_refund(snapshot, proposal)
    else:
        _rule_two(snapshot, proposal)
    proposal.warnings = _warnings(snapshot, proposal)
    return proposal


def _full_refund(snapshot, proposal):
    """Policy rule 1: every entry, active or eliminated, gets back what it paid. Nothing else."""
    proposal.lines = [
        Line(e.entry_id, e.player_id, e.screen_name, e.status, e.chips,
             e.buy_in_paid, 0, 0, e.fee_paid, e.buy_in_paid + e.fee_paid, False)
        for e in snapshot.entries
    ]  # fmt: skip
    buy_ins = sum(e.buy_in_paid for e in snapshot.entries)
    fees = sum(e.fee_paid for e in snapshot.entries)
    proposal.summary = {
        "entries": len(snapshot.entries),
        "active": sum(1 for e in snapshot.entries if e.status == ACTIVE),
        "remaining_pool": 0,
        "guaranteed": 0,
        "equity_pool": 0,
        "buy_in_refunds": buy_ins,
        "fee_refunds": fees,
        "first_place_cap": snapshot.first_prize,
        "capped_entries": 0,
        # Prizes already awarded stay with their winners: the operator absorbs them.
        "prizes_awarded": sum(e.prize_awarded or 0 for e in snapshot.entries),
        "total": buy_ins + fees,
    }


def _rule_two(snapshot, proposal):
    """Policy rule 2: guaranteed part + chip equity (capped at first prize) + fee refund.

    Works column by column (map, compress, zip run in C): a quarter of a million entries must
    compute in well under a second.
    """
    entries = snapshot.entries
    m = len(entries)
    ids, players, screens, statuses, chips, _, _, buy_ins, fees = (list(c) for c in zip(*entries))
    is_active = list(map(ACTIVE.__eq__, statuses))
    active = list(compress(range(m), is_active))
    n = len(active)
    first_prize = snapshot.first_prize
    if n < 2:
        raise SnapshotError(
            [
                Problem(
                    "entries",
                    f"{n} active entry left: the tournament has a winner, rule 2 does not apply",
                )
            ]
        )
    in_money = proposal.rule == IN_THE_MONEY
    if in_money:
        # Remaining pool: the prizes for places 1..N; everyone is guaranteed the next prize.
        remaining_pool = sum(snapshot.place_amounts[:n])
        guaranteed = [snapshot.place_amounts[n - 1]] * n
    else:
        # Not yet in the money: the whole prize table; everyone gets their buy-in back.
        remaining_pool = sum(snapshot.place_amounts)
        guaranteed = list(compress(buy_ins, is_active))

    problems = []
    if max(guaranteed) > first_prize:
        for k, i in enumerate(active):
            if guaranteed[k] > first_prize and len(problems) < 20:
                problems.append(
                    Problem(
                        f"entries[{i}] ({ids[i]})",
                        f"guaranteed part {format_cents(guaranteed[k])} is above first prize "
                        f"{format_cents(first_prize)}",
                    )
                )
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
    if problems:
        raise SnapshotError(problems)

    equity, capped, shared_chips, shared_pool = share_chip_equity(
        equity_pool,
        list(compress(chips, is_active)),
        guaranteed,
        first_prize,
        list(compress(ids, is_active)),
    )

    # Back to one column per line field, in snapshot order. Eliminated entries receive nothing
    # (their awarded prizes are untouched), so their columns stay zero.
    zeros = [0] * m
    guaranteed_col, equity_col, fee_col, capped_col = (
        zeros.copy(),
        zeros.copy(),
        zeros.copy(),
        [False] * m,
    )
    for k, i in enumerate(active):
        guaranteed_col[i] = guaranteed[k]
        equity_col[i] = equity[k]
        fee_col[i] = fees[i]
        capped_col[i] = capped[k]
    totals = list(map(add, map(add, guaranteed_col, equity_col), fee_col))
    buy_in_col, next_prize_col = (zeros, guaranteed_col) if in_money else (guaranteed_col, zeros)
    proposal.lines = list(
        map(
            Line,
            ids,
            players,
            screens,
            statuses,
            chips,
            buy_in_col,
            next_prize_col,
            equity_col,
            fee_col,
            totals,
            capped_col,
        )
    )
    proposal.equity_chips = shared_chips
    proposal.equity_shared = shared_pool
    total_equity = sum(equity)
    fee_total = sum(fee_col)
    proposal.summary = {
        "entries": m,
        "active": n,
        "remaining_pool": remaining_pool,
        "guaranteed": guaranteed_total,
        "equity_pool": equity_pool,
        "chip_equity": total_equity,
        "fee_refunds": fee_total,
        "first_place_cap": first_prize,
        "capped_entries": sum(capped),
        "prizes_awarded": sum(e.prize_awarded or 0 for e in entries),
        "total": remaining_pool + fee_total,
    }
    # The policy: the total prize pool is always distributed, to the cent.
    assert guaranteed_total + total_equity == remaining_pool


def share_chip_equity(pool, chips, guaranteed, cap, entry_ids):
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
    headroom = [cap - g for g in guaranteed]

    def passes_cap(k):
        # guaranteed + remaining * chips / total_chips > cap, in integers
        return remaining > 0 and remaining * chips[k] > headroom[k] * total_chips

    # Entries with the same headroom (the same guaranteed part) are capped in order of chips;
    # across groups, in order of chips per cent of headroom. Usually there is one group.
    if min(headroom) == max(headroom):
        groups = {headroom[0]: range(n)}
    else:
        groups = {}
        for k, h in enumerate(headroom):
            groups.setdefault(h, []).append(k)

    def urgency(k):  # smaller first; headroom 0 first of all (any share would pass the cap)
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
    if total_chips:
        uncapped = [k for k in range(n) if not capped[k]] if any(capped) else range(n)
        shares = round_shares(
            remaining, total_chips, [chips[k] for k in uncapped], [entry_ids[k] for k in uncapped]
        )
        for k, share in zip(uncapped, shares, strict=True):
            equity[k] = share
    return equity, capped, total_chips, remaining


def round_shares(pool, total_chips, chips, entry_ids):
    """Exact shares pool * chips / total_chips rounded once, so that they add up to pool.

    Floors in cents first; then the cents left over, one each, to the largest remainders. Ties go
    to the larger chip count, then to the smaller entry_id by code point. Remainders are compared
    as integers over the common denominator total_chips: no rounding error can creep in.
    """
    floors, remainders = zip(*map(divmod, map(pool.__mul__, chips), repeat(total_chips)))
    shares = list(floors)
    leftover = pool - sum(shares)
    if leftover:
        # The leftover-th largest remainder is the threshold: everything above it gets a cent;
        # among the entries exactly at it, the tie-breaks pick the rest. One sort of integers.
        threshold = sorted(remainders, reverse=True)[leftover - 1]
        winners = list(compress(range(len(chips)), map(threshold.__lt__, remainders)))
        tied = list(compress(range(len(chips)), map(threshold.__eq__, remainders)))
        tied.sort(key=lambda k: (-chips[k], entry_ids[k]))
        for k in winners + tied[: leftover - len(winners)]:
            shares[k] += 1
    return shares


def _warnings(snapshot, proposal):
    """Facts the rules do not use but that must agree; shown to the approver, never fatal."""
    warnings = []
    n = proposal.summary["active"]
    last_paid = snapshot.last_paid_place
    entries = snapshot.entries
    carried = [e for e in entries if e.prize_awarded is not None]
    if carried:
        expected = sum(snapshot.place_amounts[n:last_paid]) if n < last_paid else 0
        awarded = sum(e.prize_awarded for e in carried)
        if awarded != expected:
            warnings.append(
                f"prizes awarded to eliminated entries total {format_cents(awarded)}, but the prize table "
                f"pays {format_cents(expected)} for places {n + 1} to {last_paid}"
                if n < last_paid
                else f"prizes awarded to eliminated entries total {format_cents(awarded)}, but with {n} "
                f"entries left and {last_paid} paid places none should have been awarded yet"
            )
    per_entry = []
    for e in entries:
        if e.status == ACTIVE or e.finish_place is None:
            continue
        if e.finish_place <= n:
            per_entry.append(
                f"entry {e.entry_id} finished {e.finish_place}, but {n} entries are still active"
            )
        elif e.prize_awarded is not None and e.prize_awarded != snapshot.prize_for_place(
            e.finish_place
        ):
            per_entry.append(
                f"entry {e.entry_id} finished {e.finish_place} and was awarded {format_cents(e.prize_awarded)}, "
                f"but the prize table pays {format_cents(snapshot.prize_for_place(e.finish_place))} for that place"
            )
    warnings.extend(per_entry[:MAX_WARNINGS])
    if len(per_entry) > MAX_WARNINGS:
        warnings.append(
            f"and {len(per_entry) - MAX_WARNINGS} more entries with finish places that disagree"
        )
    return warnings
