"""Reconciliation with the cashier, per credit, per method and per ticket.

`compare(ours, theirs)` takes what the app's ledger booked for a proposal and what the cashier
holds for it (its reconciliation answer, cashier-api.md), and says where they differ: credits
missing at the cashier or unknown to the ledger, credits held twice, amounts that differ, a
credit paid in another form than booked (cash for a ticket, say), a ticket given back as
another ticket, a ticket given back twice. It also totals both sides per method, so the report
can say "posted = approved" per method, not only in all.

Pure functions over plain dicts: the selectors read the rows, this compares them.
"""

from collections import Counter
from dataclasses import dataclass, field

CASH = "cash"


@dataclass
class Comparison:
    """What reconciling one proposal's credits with the cashier found."""

    ledger_by_method: dict[str, int] = field(default_factory=dict)
    cashier_by_method: dict[str, int] = field(default_factory=dict)
    ledger_tickets: int = 0
    cashier_tickets: int = 0
    missing: list[str] = field(default_factory=list)  # keys the cashier does not hold
    unknown: list[str] = field(default_factory=list)  # keys the ledger never booked
    twice: list[str] = field(default_factory=list)  # keys the cashier holds more than once
    amounts_differ: list[str] = field(default_factory=list)
    wrong_method: list[str] = field(default_factory=list)
    wrong_ticket: list[str] = field(default_factory=list)
    tickets_twice: list[str] = field(default_factory=list)  # ticket ids returned twice

    def problems(self, *, complete: bool) -> list[str]:
        """The differences as sentences for a human. With `complete` (the proposal is posted)
        every booked credit must be at the cashier; before that only what the cashier holds
        must be right."""
        out = []
        if self.twice:
            out.append(f"the cashier holds {len(self.twice)} credits twice ({_few(self.twice)})")
        if self.tickets_twice:
            out.append(
                f"the cashier returned {len(self.tickets_twice)} tickets more than once "
                f"({_few(self.tickets_twice)})"
            )
        if self.wrong_method:
            out.append(
                f"{len(self.wrong_method)} credits were paid in another form than booked "
                f"({_few(self.wrong_method)})"
            )
        if self.wrong_ticket:
            out.append(
                f"{len(self.wrong_ticket)} credits returned another ticket than booked "
                f"({_few(self.wrong_ticket)})"
            )
        if complete and (self.missing or self.unknown or self.amounts_differ):
            out.append(
                f"cashier differs: {len(self.missing)} missing, {len(self.unknown)} unknown, "
                f"{len(self.amounts_differ)} amounts differ "
                f"({_few(self.missing + self.unknown + self.amounts_differ)})"
            )
        elif self.unknown:
            out.append(f"the cashier holds credits the ledger does not ({_few(self.unknown)})")
        elif self.amounts_differ:
            out.append(f"{len(self.amounts_differ)} amounts differ ({_few(self.amounts_differ)})")
        if complete and not out:
            for method in sorted(set(self.ledger_by_method) | set(self.cashier_by_method)):
                if self.ledger_by_method.get(method, 0) != self.cashier_by_method.get(method, 0):
                    out.append(f"{method}: the ledger and the cashier hold different totals")
            if self.ledger_tickets != self.cashier_tickets:
                out.append(
                    f"the ledger returned {self.ledger_tickets} tickets, the cashier "
                    f"{self.cashier_tickets}"
                )
        return out


def _few(items, n=3):
    shown = ", ".join(str(i) for i in items[:n])
    return shown + (f" and {len(items) - n} more" if len(items) > n else "")


def compare(ours, theirs) -> Comparison:
    """`ours`: the ledger's credits, dicts with key, amount_cents, method, ticket_id.
    `theirs`: the cashier's, dicts with key, amount_cents and, when not cash, method and
    ticket_id (no method means cash, as in the cashier's API).

    cashier-api.md's reconciliation answer gives each credit's key, credit_id, amount, currency
    and player_id, and no form. A cashier that names no method on any credit does not report
    forms: each of its credits is taken in the form booked under its key (the cashier applied
    that key's body, method and ticket included, or answered 409), so a ticket is not called
    "paid in another form" for a field the answer never has. A cashier that names a method on
    some credit reports forms, and a credit without one is cash."""
    result = Comparison()
    reports_forms = any("method" in credit for credit in theirs)
    booked = {}
    for credit in ours:
        booked[credit["key"]] = credit
        method = credit.get("method") or CASH
        result.ledger_by_method[method] = (
            result.ledger_by_method.get(method, 0) + credit["amount_cents"]
        )
        result.ledger_tickets += method == "ticket"
    held: dict[str, dict] = {}
    tickets: Counter[str] = Counter()
    for credit in theirs:
        key = credit["key"]
        if not reports_forms and key in booked:
            mine = booked[key]
            credit = {**credit, "method": mine.get("method"), "ticket_id": mine.get("ticket_id")}
        method = credit.get("method") or CASH
        result.cashier_by_method[method] = (
            result.cashier_by_method.get(method, 0) + credit["amount_cents"]
        )
        if method == "ticket":
            result.cashier_tickets += 1
            tickets[str(credit.get("ticket_id") or "")] += 1
        if key in held:
            result.twice.append(key)
            continue
        held[key] = credit
        mine = booked.get(key)
        if mine is None:
            result.unknown.append(key)
            continue
        if mine["amount_cents"] != credit["amount_cents"]:
            result.amounts_differ.append(key)
        if (mine.get("method") or CASH) != method:
            result.wrong_method.append(key)
        elif method == "ticket" and (mine.get("ticket_id") or "") != (
            credit.get("ticket_id") or ""
        ):
            result.wrong_ticket.append(key)
    result.tickets_twice = sorted(t for t, n in tickets.items() if n > 1)
    result.missing = sorted(set(booked) - set(held))
    return result
