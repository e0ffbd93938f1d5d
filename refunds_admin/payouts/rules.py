"""Apply the cancellation policy to a snapshot: the three rules of payout-rules.md, to the cent.

Pure: snapshot + incident facts in, proposal out. Integer cents and integer comparisons only
(exact shares are `E' * chips / C`, kept as integer numerator and common denominator).
"""

import hashlib
import heapq
from dataclasses import dataclass, field
from datetime import datetime
from fractions import Fraction

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


@dataclass(slots=True)
class Line:
    entry_id: str
    player_id: str
    screen_name: str
    status: str
    chips: int
    buy_in_refund: int = 0
    next_prize: int = 0
    chip_equity: int = 0
    fee_refund: int = 0
    total: int = 0
    capped: bool = False


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

    def to_json(self, *, with_fingerprint=True):
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
            "lines": [line_json(ln) for ln in self.lines],
            "warnings": list(self.warnings),
        }
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
    with amounts in cents, in snapshot order. Strings are length-prefixed so that no entry id can
    imitate another line.
    """
    h = hashlib.sha256()
    h.update(f"{PROPOSAL_FORMAT}\n{len(external_id)}:{external_id}|{currency}|{rule}\n".encode())
    chunk = []
    for entry_id, player_id, b, n, c, f, t in rows:
        chunk.append(f"{len(entry_id)}:{entry_id}{len(player_id)}:{player_id}{b},{n},{c},{f},{t}\n")
        if len(chunk) >= 4096:
            h.update("".join(chunk).encode())
            chunk.clear()
    h.update("".join(chunk).encode())
    return h.hexdigest()


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
    lines = [
        Line(e.entry_id, e.player_id, e.screen_name, e.status, e.chips) for e in snapshot.entries
    ]
    proposal = Proposal(
        external_id=snapshot.external_id,
        name=snapshot.name,
        currency=snapshot.currency,
        rule=rule,
        elapsed_seconds=elapsed_seconds(snapshot, failed_at),
        site_wide_issue=bool(site_wide_issue),
        lines=lines,
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
    for e, ln in zip(snapshot.entries, proposal.lines, strict=True):
        ln.buy_in_refund = e.buy_in_paid
        ln.fee_refund = e.fee_paid
        ln.total = e.buy_in_paid + e.fee_paid
    buy_ins = sum(ln.buy_in_refund for ln in proposal.lines)
    fees = sum(ln.fee_refund for ln in proposal.lines)
    proposal.summary = {
        "entries": len(proposal.lines),
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
    """Policy rule 2: guaranteed part + chip equity (capped at first prize) + fee refund."""
    rule = proposal.rule
    active = [i for i, e in enumerate(snapshot.entries) if e.status == ACTIVE]
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
    entries = snapshot.entries
    if rule == IN_THE_MONEY:
        remaining_pool = sum(snapshot.place_amounts[:n])
        next_prize = snapshot.place_amounts[n - 1]
        guaranteed = [next_prize] * n
    else:
        remaining_pool = sum(snapshot.place_amounts)
        guaranteed = [entries[i].buy_in_paid for i in active]

    problems = []
    for i, g in zip(active, guaranteed, strict=True):
        if g > first_prize:
            problems.append(
                Problem(
                    f"entries[{i}] ({entries[i].entry_id})",
                    f"guaranteed part {format_cents(g)} is above first prize {format_cents(first_prize)}",
                )
            )
            if len(problems) >= 20:
                break
    equity_pool = remaining_pool - sum(guaranteed)
    if equity_pool < 0:
        problems.append(
            Problem(
                "tournament.prizes",
                f"the remaining pool {format_cents(remaining_pool)} is smaller than the guaranteed parts "
                f"{format_cents(sum(guaranteed))}: the policy cannot be applied automatically",
            )
        )
    if problems:
        raise SnapshotError(problems)

    chips = [entries[i].chips for i in active]
    equity, capped, shared_chips, shared_pool = share_chip_equity(
        equity_pool, chips, guaranteed, first_prize, [entries[i].entry_id for i in active]
    )
    for k, i in enumerate(active):
        ln = proposal.lines[i]
        if rule == IN_THE_MONEY:
            ln.next_prize = guaranteed[k]
        else:
            ln.buy_in_refund = guaranteed[k]
        ln.chip_equity = equity[k]
        ln.fee_refund = entries[i].fee_paid
        ln.capped = capped[k]
        ln.total = ln.buy_in_refund + ln.next_prize + ln.chip_equity + ln.fee_refund
    proposal.equity_chips = shared_chips
    proposal.equity_shared = shared_pool
    fees = sum(entries[i].fee_paid for i in active)
    total_equity = sum(equity)
    proposal.summary = {
        "entries": len(entries),
        "active": n,
        "remaining_pool": remaining_pool,
        "guaranteed": sum(guaranteed),
        "equity_pool": equity_pool,
        "chip_equity": total_equity,
        "fee_refunds": fees,
        "first_place_cap": first_prize,
        "capped_entries": sum(capped),
        "prizes_awarded": sum(e.prize_awarded or 0 for e in entries),
        "total": remaining_pool + fees,
    }
    assert sum(guaranteed) + total_equity == remaining_pool, "every cent of the pool is paid out"


def share_chip_equity(pool, chips, guaranteed, cap, entry_ids):
    """Split `pool` cents by chips with the first-place cap, then round once (payout-rules.md).

    Returns (equity cents per entry, capped flag per entry, chips of the uncapped entries,
    cents shared among them). An entry is capped when guaranteed + exact share > cap; capped
    entries get cap - guaranteed and leave; the rest share what is left, again, until none is
    capped. Capping only ever raises the share per chip of those left, so the entries are
    capped in order of chips per cent of headroom, and one pass in that order gives the same
    set as the round-by-round description.
    """
    n = len(chips)
    equity = [0] * n
    capped = [False] * n
    remaining = pool
    total_chips = sum(chips)
    # Candidates in order of chips per cent of headroom (cap - guaranteed), largest first.
    # Headroom 0 (guaranteed == cap) sorts first: any positive share would pass the cap.
    headroom = [cap - g for g in guaranteed]
    if len(set(headroom)) == 1:
        order = sorted(range(n), key=chips.__getitem__, reverse=True)
    else:
        order = sorted(
            range(n),
            key=lambda k: (
                (0, -chips[k]) if headroom[k] == 0 else (1, -Fraction(chips[k], headroom[k]))
            ),
        )
    for k in order:
        # guaranteed + remaining * chips / total_chips > cap, in integers
        if remaining > 0 and remaining * chips[k] > headroom[k] * total_chips:
            equity[k] = headroom[k]
            capped[k] = True
            remaining -= headroom[k]
            total_chips -= chips[k]
        else:
            break
    if remaining > 0 and total_chips == 0:  # cannot happen while the cap holds R <= N * K
        raise SnapshotError(
            [Problem("tournament.prizes", "the pool exceeds what the first-place cap allows")]
        )

    # Round once: floors, then the leftover cents to the largest remainders (ties: more chips,
    # then the smaller entry_id by code point).
    if total_chips:
        floors_total = 0
        remainders = {}
        for k in range(n):
            if capped[k]:
                continue
            q, r = divmod(remaining * chips[k], total_chips)
            equity[k] = q
            floors_total += q
            if r:
                remainders[k] = r
        leftover = remaining - floors_total
        if leftover:

            def rank(k):
                return (-remainders[k], -chips[k], entry_ids[k])

            if leftover * 8 < len(remainders):
                winners = heapq.nsmallest(leftover, remainders, key=rank)
            else:
                winners = sorted(remainders, key=rank)[:leftover]
            for k in winners:
                equity[k] += 1
    return equity, capped, total_chips, remaining


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
