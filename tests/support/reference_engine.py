"""A plain, slow reference of policies.md and payout-rules.md, written from the text of the spec.

No columns, no shortcuts: one entry at a time, exact Fractions, the round-by-round cap, the
sort that the tie-breaks describe. It reads the snapshot document itself (already valid: the
engine's own validation is tested elsewhere) and a `cancellation-policy/1` document, and gives
the rule and every line as the proposal document writes them. The property tests compare the
fast engine with it over random policies and tournament formats.
"""

from datetime import datetime
from fractions import Fraction
from math import floor


class ReferenceRefusal(Exception):
    """Rule 2 cannot be applied automatically (N < 2, a fixed part above K, E < 0, ...)."""


def cents(text):
    whole, _, frac = text.partition(".")
    return int(whole) * 100 + int((frac + "00")[:2])


def money(c):
    return f"{c // 100}.{c % 100:02d}"


def _instant(text):
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


def _place_table(prizes):
    """place -> cents, for every listed place."""
    table = {}
    for row in prizes:
        first, last = (row["place"], row["place"]) if "place" in row else row["places"]
        for place in range(first, last + 1):
            table[place] = cents(row["amount"])
    return table


def _entry(doc, e):
    t = doc["tournament"]
    knockout = "bounty" in t
    buy_in_paid = cents(e.get("buy_in_paid", t["buy_in"]))
    fee_paid = cents(e.get("fee_paid", t["fee"]))
    rebuys = cents(e.get("rebuys_paid", "0"))
    rebuy_fees = cents(e.get("rebuy_fees_paid", "0"))
    bounty_paid = cents(e.get("bounty_paid", t["bounty"])) if knockout else 0
    if e["status"] == "active":
        bounty = cents(e["bounty"]) if "bounty" in e else bounty_paid
    else:
        bounty = 0
    return {
        "entry_id": e["entry_id"],
        "status": e["status"],
        "chips": e.get("chips", 0),
        "buy_in_paid": buy_in_paid,
        "paid_in": buy_in_paid + rebuys,
        "fees": fee_paid + rebuy_fees,
        "bounty_paid": bounty_paid,
        "bounty": bounty,
        "paid_with": e.get("paid_with"),
    }


def select_rule(doc, policy, entries, last_paid):
    t, inc = doc["tournament"], doc["incident"]
    delta = _instant(inc["failed_at"]) - _instant(t["starts_at"])
    elapsed = Fraction(delta.days * 86400 + delta.seconds) + Fraction(delta.microseconds, 10**6)
    full = policy["full_refund"]
    if inc.get("site_wide_issue", False):
        return "full_refund"
    if elapsed <= 0:
        return "full_refund"
    if full["within_minutes"] is not None and elapsed <= full["within_minutes"] * 60:
        return "full_refund"
    if full["before_first_elimination"] and all(e["status"] != "eliminated" for e in entries):
        return "full_refund"
    n = sum(1 for e in entries if e["status"] == "active")
    return "in_the_money" if n <= last_paid else "not_in_the_money"


def _line(e, **amounts):
    line = {"entry_id": e["entry_id"]}
    for key in ("buy_in_refund", "next_prize", "equal_share", "chip_equity", "fee_refund",
                "bounty_refund"):  # fmt: skip
        line[key] = amounts.get(key, 0)
    line["total"] = sum(line[k] for k in line if k != "entry_id")
    line["capped"] = amounts.get("capped", False)
    return line


def reference_proposal(doc, policy):
    """{"rule", "lines": [...]} with amounts in cents and `refunds` where they go back as paid;
    raises ReferenceRefusal where rule 2 cannot be applied."""
    t = doc["tournament"]
    entries = [_entry(doc, e) for e in doc["entries"]]
    table = _place_table(t["prizes"])
    paid_places = [p for p, a in table.items() if a > 0]
    last_paid = max(paid_places)
    amounts = [table[p] for p in range(1, last_paid + 1)]
    rule = select_rule(doc, policy, entries, last_paid)
    if rule == "full_refund":
        lines = []
        for e in entries:
            line = _line(
                e,
                buy_in_refund=e["paid_in"],
                fee_refund=e["fees"],
                bounty_refund=e["bounty_paid"],
            )
            paid_with = e["paid_with"]
            if (
                policy["refund_form"] == "as_paid"
                and paid_with is not None
                and any(p["method"] != "cash" for p in paid_with)
            ):
                line["refunds"] = [
                    {"method": p["method"], "amount": cents(p["amount"])}
                    | ({"ticket_id": p["ticket_id"]} if p["method"] == "ticket" else {})
                    for p in paid_with
                ]
            lines.append(line)
        return {"rule": rule, "lines": lines}

    active = [e for e in entries if e["status"] == "active"]
    n = len(active)
    if n < 2:
        raise ReferenceRefusal("fewer than two active entries")
    k = amounts[0]
    in_money = rule == "in_the_money"
    if in_money:
        pool = sum(amounts[:n])
        fixed = {e["entry_id"]: amounts[n - 1] for e in active}
        percent = policy["in_the_money"]["equal_share_percent"]
    else:
        pool = sum(amounts)
        if policy["overlay"] == "returned_to_house" and "guarantee" in t:
            pool = min(pool, sum(e["paid_in"] for e in entries))
        returned = policy["not_in_the_money"]["returned"]
        fixed = {
            e["entry_id"]: {"buy_in_and_rebuys": e["paid_in"], "buy_in": e["buy_in_paid"],
                            "nothing": 0}[returned]
            for e in active
        }  # fmt: skip
        percent = policy["not_in_the_money"]["equal_share_percent"]
    guaranteed = dict(fixed)
    cap = policy["first_place_cap"]
    if cap and any(g > k for g in guaranteed.values()):
        raise ReferenceRefusal("a guaranteed part above first prize")
    equity_pool = pool - sum(guaranteed.values())
    if equity_pool < 0:
        raise ReferenceRefusal("E < 0")

    # The equal share: floor(Q / N) each, the leftover cents to the larger stacks, then the
    # smaller entry_id.
    q = floor(Fraction(equity_pool * percent, 100))
    equal = {e["entry_id"]: q // n for e in active}
    order = sorted(active, key=lambda e: (-e["chips"], e["entry_id"]))
    for e in order[: q - (q // n) * n]:
        equal[e["entry_id"]] += 1
    for e in active:
        fixed[e["entry_id"]] += equal[e["entry_id"]]
    if cap and any(f > k for f in fixed.values()):
        raise ReferenceRefusal("a fixed part above first prize")

    # The chip pool, round by round.
    chip_pool = equity_pool - q
    equity = {}
    capped = set()
    sharing = list(active)
    left = Fraction(chip_pool)
    while cap:
        total_chips = sum(e["chips"] for e in sharing)
        over = [
            e for e in sharing
            if total_chips and fixed[e["entry_id"]] + left * e["chips"] / total_chips > k
        ]  # fmt: skip
        if not over:
            break
        for e in over:
            equity[e["entry_id"]] = k - fixed[e["entry_id"]]
            capped.add(e["entry_id"])
            left -= k - fixed[e["entry_id"]]
        sharing = [e for e in sharing if e["entry_id"] not in capped]
    total_chips = sum(e["chips"] for e in sharing)
    if left and not total_chips:
        raise ReferenceRefusal("the pool exceeds what the cap allows")
    exact = {e["entry_id"]: left * e["chips"] / total_chips for e in sharing}
    floors = {i: floor(x) for i, x in exact.items()}
    leftover = int(left - sum(floors.values()))
    ranked = sorted(
        sharing, key=lambda e: (-(exact[e["entry_id"]] - floors[e["entry_id"]]), -e["chips"],
                                e["entry_id"])
    )  # fmt: skip
    for e in ranked[:leftover]:
        floors[e["entry_id"]] += 1
    equity.update(floors)

    lines = []
    for e in entries:
        if e["status"] != "active":
            lines.append(_line(e))
            continue
        i = e["entry_id"]
        lines.append(
            _line(
                e,
                buy_in_refund=0 if in_money else guaranteed[i],
                next_prize=guaranteed[i] if in_money else 0,
                equal_share=equal[i],
                chip_equity=equity[i],
                fee_refund=e["fees"],
                bounty_refund=e["bounty"],
                capped=i in capped,
            )
        )
    return {"rule": rule, "lines": lines}
