"""The figures an approver reads beside the total: where the money goes, how it is spread, who
gets the most, who hit the first-place cap, and what changed since the previous version.

Computed once, when the proposal is prepared, from the engine's columns (a 100k-line proposal
costs a few milliseconds here and nothing on every page view), and stored on the proposal.
`from_lines` computes the same from the stored lines, for a proposal prepared before the
figures were stored.
"""

from __future__ import annotations

import heapq
from itertools import compress, repeat
from operator import ge, ne, not_, sub
from typing import TYPE_CHECKING, Any

from django.db.models import Count, Max, Min, Sum

from .lines import with_screen_names

if TYPE_CHECKING:
    from refunds_admin.payouts.rules import LineColumns

    from .models import PayoutProposal

COMPONENTS = (
    "buy_in_refund",
    "next_prize",
    "equal_share",
    "chip_equity",
    "fee_refund",
    "bounty_refund",
)
# The components each rule pays (policies.md); the approval page reconciles only these.
RULE_COMPONENTS = {
    "full_refund": ("buy_in_refund", "fee_refund", "bounty_refund"),
    "in_the_money": ("next_prize", "equal_share", "chip_equity", "fee_refund", "bounty_refund"),
    "not_in_the_money": (
        "buy_in_refund",
        "equal_share",
        "chip_equity",
        "fee_refund",
        "bounty_refund",
    ),
}
CASH = "cash"
TOP = 10
MAX_CAPPED = 50
MAX_CHANGES = 20


def _pool_in(rule: str, summary: dict[str, Any]) -> int:
    """What went into the pool the lines pay out, from the engine's summary: under rule 1 the
    buy-ins (rebuys included), fees and knockout parts paid; under rule 2 the remaining prize
    pool (after any overlay the house keeps) plus the active entries' fees and the bounties on
    their heads."""
    bounties = int(summary.get("bounty_refunds", 0))
    if rule == "full_refund":
        return int(summary.get("buy_in_refunds", 0)) + int(summary.get("fee_refunds", 0)) + bounties
    return int(summary.get("remaining_pool", 0)) + int(summary.get("fee_refunds", 0)) + bounties


def _beside(summary: dict[str, Any]) -> dict[str, int]:
    """What the operator absorbs or keeps beside the money paid: prizes already awarded (they
    stay with their winners under rule 1) and the overlay of a guarantee the house keeps."""
    return {
        "prizes_awarded": int(summary.get("prizes_awarded", 0) or 0),
        "overlay_kept": int(summary.get("overlay_kept", 0) or 0),
    }


def refunds_by_method(totals: list[int], refunds: list[Any]) -> dict[str, int]:
    """Cents per method ("cash", "ticket", "tournament_money") of the lines: a line without
    `refunds` is paid in cash; one with them, in the forms they list. Tickets are counted too,
    under "tickets"."""
    if len(totals) != len(refunds):
        raise ValueError("totals and refunds must be as long as each other")
    # Most lines are paid in cash (no `refunds`): summed in one pass; only the others are read.
    in_forms = list(map(bool, refunds))
    by_method: dict[str, int] = {CASH: sum(compress(totals, map(not_, in_forms)))}
    tickets = 0
    for parts in compress(refunds, in_forms):
        for part in parts:
            method, amount = part[0], part[1]
            by_method[method] = by_method.get(method, 0) + amount
            tickets += method == "ticket"
    return by_method | ({"tickets": tickets} if tickets else {})


def top_paid(totals: list[int], paid: list[int], top: int = TOP) -> list[int]:
    """The positions of the `top` largest paid lines (total above 0), largest first, earlier
    lines first among equals; `paid` is the paid totals, sorted. Only lines at or above the
    top-th largest paid total can be among them, so nlargest reads those alone."""
    if not paid:
        return []
    least = paid[-top] if len(paid) >= top else paid[0]
    contenders = list(compress(range(len(totals)), map(ge, totals, repeat(least))))
    return heapq.nlargest(top, contenders, key=totals.__getitem__)


def _line(columns: LineColumns, i: int) -> dict[str, Any]:
    return {
        "entry_id": columns.entry_id[i],
        "player_id": columns.player_id[i],
        "screen_name": columns.screen_name[i],
        "chips": columns.chips[i],
        "chip_equity": columns.chip_equity[i],
        "total": columns.total[i],
        "capped": bool(columns.capped[i]),
    }


def from_columns(
    columns: LineColumns, *, rule: str, currency: str, summary_cents: dict[str, Any]
) -> dict[str, Any]:
    """Figures from the engine's LineColumns (amounts in cents) and its summary (cents)."""
    totals = columns.total
    m = len(totals)
    paid = sorted(filter((0).__lt__, totals))
    capped = list(compress(range(m), columns.capped))
    top = top_paid(totals, paid)
    return {
        "currency": currency,
        "rule": rule,
        "pool_in": _pool_in(rule, summary_cents),
        "components": {name: sum(getattr(columns, name)) for name in COMPONENTS},
        **_beside(summary_cents),
        "refunds_by_method": refunds_by_method(totals, columns.refunds),
        "total": sum(totals),
        "paid_entries": len(paid),
        "smallest": paid[0] if paid else 0,
        "median": paid[(len(paid) - 1) // 2] if paid else 0,
        "largest": paid[-1] if paid else 0,
        "top": [_line(columns, i) for i in top],
        "capped_count": len(capped),
        "capped": [_line(columns, i) for i in capped[:MAX_CAPPED]],
    }


def from_lines(proposal: PayoutProposal, summary_cents: dict[str, Any]) -> dict[str, Any]:
    """The same figures from the stored lines (SQL), for proposals without stored figures."""
    lines = proposal.lines.all()
    sums = lines.aggregate(
        total=Sum("total_cents"),
        **{name: Sum(f"{name}_cents") for name in COMPONENTS},
    )
    paid = lines.filter(total_cents__gt=0)
    spread = paid.aggregate(n=Count("id"), smallest=Min("total_cents"), largest=Max("total_cents"))
    n = spread["n"] or 0
    median = (
        paid.order_by("total_cents", "position").values_list("total_cents", flat=True)[(n - 1) // 2]
        if n
        else 0
    )

    def as_line(row):
        return {
            "entry_id": row.entry_id,
            "player_id": row.player_id,
            "screen_name": row.screen_name,
            "chips": row.chips,
            "chip_equity": row.chip_equity_cents,
            "total": row.total_cents,
            "capped": row.capped,
        }

    capped = lines.filter(capped=True).order_by("position")
    non_cash = list(lines.filter(refunds__isnull=False).values_list("total_cents", "refunds"))
    by_method = refunds_by_method(
        [t for t, _ in non_cash],
        [[(p["method"], p["amount_cents"]) for p in r or ()] for _, r in non_cash],
    )
    by_method[CASH] += (sums["total"] or 0) - sum(t for t, _ in non_cash)
    return {
        "currency": proposal.currency,
        "rule": proposal.rule,
        "pool_in": _pool_in(proposal.rule, summary_cents),
        "components": {name: sums[name] or 0 for name in COMPONENTS},
        **_beside(summary_cents),
        "refunds_by_method": by_method,
        "total": sums["total"] or 0,
        "paid_entries": n,
        "smallest": spread["smallest"] or 0,
        "median": median,
        "largest": spread["largest"] or 0,
        "top": [
            as_line(r)
            for r in with_screen_names(paid, proposal.snapshot_id).order_by(
                "-total_cents", "position"
            )[:TOP]
        ],
        "capped_count": capped.count(),
        "capped": [
            as_line(r) for r in with_screen_names(capped, proposal.snapshot_id)[:MAX_CAPPED]
        ],
    }


def changes(previous_totals: dict[str, int], columns: LineColumns) -> dict[str, Any]:
    """Entries added, removed and changed between the previous version's lines
    ({entry_id: total cents}) and this version's columns, with the largest changes first.
    The previous version was computed from another snapshot version (re-imported): its entries
    are matched to this one's by entry id."""
    current = dict(zip(columns.entry_id, columns.total, strict=True))
    added = [e for e in current if e not in previous_totals]
    removed = [e for e in previous_totals if e not in current]
    changed = [
        (e, previous_totals[e], t)
        for e, t in current.items()
        if e in previous_totals and previous_totals[e] != t
    ]
    rows: list[tuple[str, int | None, int | None]] = [(e, None, current[e]) for e in added]
    rows += [(e, previous_totals[e], None) for e in removed]
    rows += changed
    rows.sort(key=_by_size)
    return _changes(
        len(added), len(removed), len(changed), sum(previous_totals.values()), sum(current.values()),
        rows,
    )  # fmt: skip


def changes_by_position(previous_totals: list[int], columns: LineColumns) -> dict[str, Any]:
    """The same as `changes` when the previous version was computed from the same snapshot
    version (prepared again after a new policy version or a confirmed site-wide issue, the usual
    case): its lines are this one's entries position for position, so nothing is added or
    removed and its totals are compared in order, in C passes, instead of building a dict of
    every entry id twice (0.3 s of CPU for 300k lines; docs/performance.md, "Issue 25: preparing
    again"). Only the lines whose change could be among the MAX_CHANGES largest are sorted.
    tests/services/test_figures_properties.py keeps it equal to `changes`."""
    totals = columns.total
    if len(previous_totals) != len(totals):
        raise ValueError("the previous version's lines are not this snapshot's entries")
    at = list(compress(range(len(totals)), map(ne, previous_totals, totals)))
    before = list(map(previous_totals.__getitem__, at))
    after = list(map(totals.__getitem__, at))
    sizes = list(map(abs, map(sub, after, before)))
    rows: list[tuple[str, int | None, int | None]] = []
    if at:
        least = heapq.nlargest(MAX_CHANGES, sizes)[-1]
        contenders = list(compress(range(len(at)), map(ge, sizes, repeat(least))))
        rows = [(columns.entry_id[at[k]], before[k], after[k]) for k in contenders]
        rows.sort(key=_by_size)
    return _changes(0, 0, len(at), sum(previous_totals), sum(totals), rows)


def _by_size(row: tuple[str, int | None, int | None]) -> tuple[int, str]:
    """Largest change first, then by entry id."""
    entry_id, before, after = row
    return (-abs((after or 0) - (before or 0)), entry_id)


def _changes(
    added: int,
    removed: int,
    changed: int,
    total_before: int,
    total_after: int,
    rows: list[tuple[str, int | None, int | None]],
) -> dict[str, Any]:
    return {
        "added": added,
        "removed": removed,
        "changed": changed,
        "total_before": total_before,
        "total_after": total_after,
        "largest": [
            {"entry_id": e, "before": b, "after": a, "delta": (a or 0) - (b or 0)}
            for e, b, a in rows[:MAX_CHANGES]
        ],
    }
