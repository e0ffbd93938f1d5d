"""A player's statement in the policy's own layout ("Your share of remaining amount (48,200/
1,500,000 X $17,500) $562.33 ..."). Built once: the command line's --explain, the staff's screens
and the text sent to players all use it.
"""

from .labels import rule_label
from .money import display
from .rules import FULL_REFUND, IN_THE_MONEY, Proposal
from .snapshot import ACTIVE


def statement_lines(proposal: Proposal, entry_id: str) -> list[tuple[str, str]]:
    """[(label, amount text or "")] for one entry; a ("", "") pair is a blank line."""
    line = proposal.line_for(entry_id)
    s = proposal.summary
    cur = proposal.currency

    def money(cents: int, short: bool = False) -> str:
        return display(cents, cur, drop_zero_cents=short)

    out = [
        (f"Tournament {proposal.external_id} {proposal.name}".rstrip() + ": cancelled", ""),
        (f"Entry {line.entry_id}, player {line.player_id}", ""),
        (f"Payout rule: {rule_label(proposal.rule)}", ""),
        ("", ""),
    ]
    if proposal.rule == FULL_REFUND:
        if proposal.site_wide_issue:
            why = "Site issues impaired play throughout the tournament, in management's finding"
        elif proposal.elapsed_seconds < 0:
            why = "The tournament failed before play began"
        else:
            secs = int(proposal.elapsed_seconds)
            why = f"The tournament failed {secs // 60} min {secs % 60:02d} s after the start, within 20 minutes"
        out += [
            (why + ": every registered entry is refunded its buy-in and fee.", ""),
            ("", ""),
            ("Your payout:", ""),
            ("Buy in refund", money(line.buy_in_refund)),
            ("Refund of tournament fee", money(line.fee_refund)),
            ("Total paid out", money(line.total)),
        ]
        return out

    n = s["active"]
    guaranteed = s["guaranteed"]
    in_money = proposal.rule == IN_THE_MONEY
    # "X for each" only when every active entry really got X: entries can have paid different
    # buy-ins (tickets, freerolls), and then an even total says nothing about each one.
    c = proposal.columns
    refunds = {b for b, st in zip(c.buy_in_refund, c.status) if st == ACTIVE}
    per_entry = refunds.pop() if len(refunds) == 1 else None
    if in_money:
        out.append(("Remaining prize pool", money(s["remaining_pool"])))
        out.append(
            (
                f"{money(guaranteed // n, True)} for each of the {n:,} players remaining",
                money(guaranteed),
            )
        )
    else:
        out.append(("Total prize pool", money(s["remaining_pool"])))
        if per_entry is not None:
            label = (
                f"{money(per_entry, True)} buy-in refund for each of the {n:,} players remaining"
            )
        else:
            label = f"Buy-in refunds to the {n:,} players remaining"
        out.append((label, money(guaranteed)))
    out.append(("Amount remaining for chip equity disbursement", money(s["equity_pool"])))
    if s["capped_entries"]:
        capped_total = s["equity_pool"] - proposal.equity_shared
        out.append(
            (
                f"Chip equity of the {s['capped_entries']:,} entries capped at first prize "
                f"({money(s['first_place_cap'])})",
                money(capped_total),
            )
        )
        out.append(("Shared by chips among the other entries", money(proposal.equity_shared)))
    out += [("", ""), ("Your payout:", "")]

    if line.status != ACTIVE:
        out += [
            ("This entry was eliminated before the tournament was cancelled: no refund.", ""),
            ("Total paid out", money(line.total)),
        ]
        return out
    if line.capped:
        label = f"Your share of remaining amount, capped so that your prize money is at most first prize ({money(s['first_place_cap'])})"
    else:
        label = (
            f"Your share of remaining amount ({line.chips:,}/{proposal.equity_chips:,} X "
            f"{money(proposal.equity_shared, True)})"
        )
    out.append((label, money(line.chip_equity)))
    if in_money:
        out.append(("Next prize payout", money(line.next_prize)))
    else:
        out.append(("Buy in refund", money(line.buy_in_refund)))
    out.append(("Refund of tournament fee", money(line.fee_refund)))
    out.append(("Total paid out", money(line.total)))
    return out


def explain(proposal: Proposal, entry_id: str) -> str:
    """The statement as text: label and amount separated by a tab, as the policy prints it."""
    return "\n".join(
        f"{label}\t{amount}" if amount else label
        for label, amount in statement_lines(proposal, entry_id)
    )
