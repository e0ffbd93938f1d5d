"""A policy in plain sentences: the readable table of a version, its rule-1 condition, and the
difference from the version before. The screens, the docs and the statements word a policy
from here, so that "management's finding" reads the same everywhere."""

from __future__ import annotations

from typing import TYPE_CHECKING, NamedTuple

if TYPE_CHECKING:
    from refunds_admin.payouts.policy import Policy

RETURNED = {
    "buy_in_and_rebuys": "the buy-in and rebuys back",
    "buy_in": "the first buy-in back",
    "nothing": "nothing guaranteed back",
}


class Row(NamedTuple):
    field: str
    label: str
    value: str
    sentence: str


def full_refund_condition(policy: Policy) -> str:
    """ "Full refund if play failed within 20 minutes of the start, or when management finds:
    General site issues impaired player performance throughout." """
    when = []
    if policy.within_minutes is not None:
        when.append(f"play failed within {policy.within_minutes} minutes of the start")
    if policy.before_first_elimination:
        when.append("no entry had been eliminated yet")
    finding = f"management finds: {policy.management_finding}"
    if not when:
        return f"Full refund only when {finding} (or when nothing was played)."
    return f"Full refund if {' or if '.join(when)}, or when {finding}."


def _share(percent: int, guaranteed: str) -> str:
    if percent == 0:
        return f"{guaranteed}, the rest of the pool by chip equity"
    if percent == 100:
        return f"{guaranteed}, the rest of the pool shared equally"
    return (
        f"{guaranteed}, then {percent}% of the rest shared equally among the active entries "
        f"and {100 - percent}% by chip equity"
    )


def rows(policy: Policy) -> list[Row]:
    """The version as a readable table: one plain sentence per parameter."""
    within = policy.within_minutes
    return [
        Row("id", "Policy", f"{policy.id} v{policy.version}", policy.title),
        Row(
            "management_finding",
            "Management's finding",
            policy.management_finding,
            f"A manager may find: “{policy.management_finding}”. That finding gives every "
            "entry a full refund.",
        ),
        Row(
            "full_refund.within_minutes",
            "Full refund window",
            "none" if within is None else f"{within} min",
            "No automatic window: a failure after the start is a full refund only by the other "
            "conditions."
            if within is None
            else f"Full refund if play failed within {within} minutes of the start.",
        ),
        Row(
            "full_refund.before_first_elimination",
            "Before the first elimination",
            "yes" if policy.before_first_elimination else "no",
            "Full refund if no entry had been eliminated yet."
            if policy.before_first_elimination
            else "An elimination-free tournament gets no full refund for that alone.",
        ),
        Row(
            "not_in_the_money.returned",
            "Before the money: returned",
            policy.not_in_the_money_returned,
            f"Before the money, each active entry gets the fee back and "
            f"{RETURNED[policy.not_in_the_money_returned]}.",
        ),
        Row(
            "not_in_the_money.equal_share_percent",
            "Before the money: equal share",
            f"{policy.not_in_the_money_equal_share_percent}%",
            "Before the money: "
            + _share(policy.not_in_the_money_equal_share_percent, "the guaranteed part")
            + ".",
        ),
        Row(
            "in_the_money.equal_share_percent",
            "In the money: equal share",
            f"{policy.in_the_money_equal_share_percent}%",
            "In the money: "
            + _share(policy.in_the_money_equal_share_percent, "the next prize")
            + ".",
        ),
        Row(
            "first_place_cap",
            "First-place cap",
            "yes" if policy.first_place_cap else "no",
            "No entry's prize money goes above first prize."
            if policy.first_place_cap
            else "No cap: an entry may receive more than first prize.",
        ),
        Row(
            "overlay",
            "Overlay of a guarantee",
            policy.overlay.replace("_", " "),
            "Before the money, a guarantee's overlay is distributed with the pool."
            if policy.overlay == "paid"
            else "Before the money, a guarantee's overlay is kept by the house: the pool is at "
            "most what the entries paid in.",
        ),
        Row(
            "refund_form",
            "Form of refunds",
            policy.refund_form.replace("_", " "),
            "A full refund returns each part the way it was paid (a ticket as that ticket)."
            if policy.refund_form == "as_paid"
            else "A full refund is paid all in cash, whatever the entry paid with.",
        ),
    ]


class Change(NamedTuple):
    label: str
    before: str
    after: str


def differences(old: Policy | None, new: Policy) -> list[Change]:
    """What changed from the version before, parameter by parameter (the id row and the version
    number aside)."""
    if old is None:
        return []
    before = {r.field: r for r in rows(old)}
    changes = []
    for row in rows(new):
        was = before[row.field]
        if row.field == "id":
            if old.title != new.title:
                changes.append(Change("Title", old.title, new.title))
            continue
        if was.value != row.value:
            changes.append(Change(row.label, was.value, row.value))
    return changes
