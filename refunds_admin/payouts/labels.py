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
