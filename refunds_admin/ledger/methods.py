"""Reading the ledger by the form the money took (cash, tournament money, tickets): what the
posting page and the player lookup show. Read-only."""

from typing import Any

from django.db.models import Count, Q, Sum

from .models import CashierDelivery, Credit, Method

METHOD_LABELS = dict(Method.choices)
_APPLIED = CashierDelivery.State.APPLIED
_FAILED = CashierDelivery.State.FAILED


def credits_by_method(proposal_id: int) -> list[dict]:
    """Per method booked for a proposal: credits and cents booked, and how many of them the
    cashier confirmed or refused (0 when the ledger is the wallet). Cash first."""
    rows = (
        Credit.objects.filter(proposal_id=proposal_id)
        .values("method")
        .annotate(
            credits=Count("pk"),
            cents=Sum("amount_cents"),
            confirmed=Count("pk", filter=Q(delivery__state=_APPLIED)),
            confirmed_cents=Sum("amount_cents", filter=Q(delivery__state=_APPLIED)),
            refused=Count("pk", filter=Q(delivery__state=_FAILED)),
        )
    )
    order = {method: i for i, method in enumerate(Method.values)}
    out = [
        {**row, "label": METHOD_LABELS.get(row["method"], row["method"])}
        for row in sorted(rows, key=lambda r: order.get(r["method"], 99))
    ]
    for row in out:
        row["confirmed_cents"] = row["confirmed_cents"] or 0
    return out


def refused_credits(proposal_id: int, limit: int = 50) -> list[Any]:
    """The credits the cashier refused (a human must look), tickets with their ticket id, and
    the cashier's reason."""
    return list(
        CashierDelivery.objects.filter(credit__proposal_id=proposal_id, state=_FAILED)
        .order_by("credit_id")
        .values(
            "credit_id", "error", "credit__entry_id", "credit__player_id", "credit__method",
            "credit__ticket_id", "credit__amount_cents", "credit__currency",
        )[:limit]
    )  # fmt: skip


def player_refund_forms(player_id: str) -> dict:
    """A player's refunds by form: cash and tournament money per currency, and every ticket
    given back (newest proposal first) with where it stands at the cashier."""
    sums = (
        Credit.objects.filter(player_id=player_id)
        .values("method", "currency")
        .annotate(cents=Sum("amount_cents"))
        .order_by("currency")
    )
    by_method: dict[str, dict[str, int]] = {}
    for row in sums:
        by_method.setdefault(row["method"], {})[row["currency"]] = row["cents"]
    tickets = list(
        Credit.objects.filter(player_id=player_id, method=Method.TICKET)
        .select_related("proposal__incident__tournament", "delivery")
        .order_by("-proposal_id", "entry_id", "ticket_id")
    )
    return {
        "cash": sorted(by_method.get(Method.CASH, {}).items()),
        "tournament_money": sorted(by_method.get(Method.TOURNAMENT_MONEY, {}).items()),
        "tickets": [
            {
                "ticket_id": c.ticket_id,
                "amount_cents": c.amount_cents,
                "currency": c.currency,
                "entry_id": c.entry_id,
                "proposal": c.proposal,
                "tournament": c.proposal.incident.tournament,
                "cashier": getattr(getattr(c, "delivery", None), "state", ""),
                "error": getattr(getattr(c, "delivery", None), "error", ""),
            }
            for c in tickets
        ],
    }
