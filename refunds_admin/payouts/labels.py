"""What each payout rule is called, in one table: the staff's pages, the history's sentences, the
incident form's rule preview and the players' statements all read their words from here."""

from typing import NamedTuple

from .rules import FULL_REFUND, IN_THE_MONEY, NOT_IN_THE_MONEY


class RuleText(NamedTuple):
    label: str  # a heading or badge: "Rule 2: not yet in the money"
    name: str  # inside a sentence: "rule 2, not yet in the money"
    payout: str  # what each entry that is paid receives


RULE_TEXT: dict[str, RuleText] = {
    FULL_REFUND: RuleText("Rule 1: full refund", "full refund", "full refund of buy-in and fee"),
    IN_THE_MONEY: RuleText(
        "Rule 2: in the money",
        "in the money",
        "next prize plus chip equity, and the fee refunded",
    ),
    NOT_IN_THE_MONEY: RuleText(
        "Rule 2: not yet in the money",
        "not yet in the money",
        "buy-in refunded plus chip equity, and the fee refunded",
    ),
}


def rule_label(rule: str | None) -> str:
    """ "full_refund" -> "Rule 1: full refund"; an unknown code is shown as it is, none as "—"."""
    text = RULE_TEXT.get(rule or "")
    return text.label if text else (rule or "—")


def rule_name(rule: str | None) -> str:
    """ "full_refund" -> "full refund", for use inside a sentence; an unknown code as it is."""
    text = RULE_TEXT.get(rule or "")
    return text.name if text else (rule or "?")


# Every line a player's statement can hold, in one table: the statement (statement.py), the
# staff's breakdown and the e-mailed text all read their words from here. Placeholders are
# filled with amounts already written for people ("$45.00") and counts with separators.
STATEMENT_TEXT: dict[str, str] = {
    # The heading
    "cancelled": "Tournament {tournament}: cancelled",
    "entry": "Entry {entry_id}, player {player_id}",
    "rule": "Payout rule: {rule}",
    "policy": "Policy: {title} ({policy_id}, version {version})",
    # Why rule 1 applies, and what it gives
    "why_site_wide_seed": (
        "Site issues impaired play throughout the tournament, in management's finding"
    ),
    "why_site_wide": "{finding}, in management's finding",
    "why_before_start": "The tournament failed before play began",
    "why_within": (
        "The tournament failed {minutes} min {seconds:02d} s after the start, within {window} minutes"
    ),
    "why_no_elimination": (
        "The tournament failed before any entry was eliminated, which this policy refunds in full"
    ),
    "refunded_plain": ": every registered entry is refunded its buy-in and fee.",
    "refunded_formats": (
        ": every registered entry is refunded what it paid: buy-in and rebuys, fees and the "
        "knockout part."
    ),
    # The pool (rule 2)
    "remaining_pool": "Remaining prize pool",
    "total_pool": "Total prize pool",
    "overlay_kept": (
        "The guarantee's overlay stays with the house: the pool is what the entries paid in"
    ),
    "next_prize_each": "{each} for each of the {n} players remaining",
    "buy_in_each": "{each} buy-in refund for each of the {n} players remaining",
    "buy_ins": "Buy-in refunds to the {n} players remaining",
    "nothing_returned": "Nothing is returned before the money: the whole pool is shared",
    "equity_pool": "Amount remaining for chip equity disbursement",
    # ... under a policy that shares some of it equally (policies.md, the equal share)
    "equity_pool_split": (
        "Amount remaining, {percent}% in equal shares and {chips_percent}% by chip equity"
    ),
    "equity_pool_equal": "Amount remaining, all in equal shares",
    "equal_pool": "{percent}% of {pool} shared equally among {n} players: {each}",
    "equal_left": "the {cents} cents left over go one each to the largest stacks",
    "equal_left_one": "the 1 cent left over goes to the largest stack",
    "chip_pool": "The other {percent}% shared by chips",
    "capped_pool": "Chip equity of the {count} entries capped at first prize ({cap})",
    "capped_pool_one": "Chip equity of the 1 entry capped at first prize ({cap})",
    "shared_by_chips": "Shared by chips among the other entries",
    "heads": "Bounties on the heads of the {n} players remaining",
    # The entry's own payout
    "your_payout": "Your payout:",
    "eliminated": "This entry was eliminated before the tournament was cancelled: no refund.",
    "share_capped": (
        "Your share of remaining amount, capped so that your prize money is at most first prize "
        "({cap})"
    ),
    "share": "Your share of remaining amount ({chips}/{total_chips} X {pool})",
    "equal_share": "Your equal share ({percent}% of {pool} shared equally among {n} players)",
    "next_prize": "Next prize payout",
    "buy_in_refund": "Buy in refund",
    "buy_in_and_rebuys_refund": "Buy in and rebuys refund",
    "fee_refund": "Refund of tournament fee",
    "fees_refund": "Refund of tournament and rebuy fees",
    "bounty_paid_refund": "Refund of the knockout part you paid (bounty)",
    "bounty_refund": "The bounty on your head",
    "total": "Total paid out",
    # How it goes back (rule 1, refund_form as_paid)
    "returned_as_paid": "Returned in the form you paid:",
    "ticket": "Ticket {ticket_id} returned",
    "tournament_money": "Tournament money returned",
    "cash": "Cash",
}
