"""Hypothesis strategies for policies.md: random cancellation policies, and valid snapshots with
knockouts (progressive bounties), rebuys and add-ons, paid_with (cash, tournament money,
tickets) and guarantees."""

import random

from hypothesis import strategies as st

from .reference_engine import money


@st.composite
def policies(draw, *, policy_id="generated"):
    """A valid cancellation-policy/1 document, any value of the table."""
    return {
        "format": "cancellation-policy/1",
        "id": policy_id,
        "version": draw(st.integers(1, 5)),
        "title": "Generated policy",
        "management_finding": "Management chose to roll the tournament back",
        "full_refund": {
            "within_minutes": draw(st.one_of(st.none(), st.integers(0, 150))),
            "before_first_elimination": draw(st.booleans()),
        },
        "not_in_the_money": {
            "returned": draw(st.sampled_from(["buy_in_and_rebuys", "buy_in", "nothing"])),
            "equal_share_percent": draw(st.sampled_from([0, 0, 25, 50, 100]) | st.integers(0, 100)),
        },
        "in_the_money": {
            "equal_share_percent": draw(st.sampled_from([0, 0, 30, 50, 100]) | st.integers(0, 100))
        },
        "first_place_cap": draw(st.booleans()),
        "overlay": draw(st.sampled_from(["paid", "returned_to_house"])),
        "refund_form": draw(st.sampled_from(["as_paid", "cash"])),
    }


def _split(draw, total, prefix, tickets):
    """A paid_with list adding up exactly to `total` cents."""
    parts = draw(st.integers(1, 3))
    cuts = sorted(draw(st.lists(st.integers(0, total), min_size=parts - 1, max_size=parts - 1)))
    amounts = [b - a for a, b in zip([0, *cuts], [*cuts, total], strict=True)]
    items = []
    for amount in amounts:
        method = draw(st.sampled_from(["cash", "tournament_money", "ticket"]))
        item = {"method": method, "amount": money(amount)}
        if method == "ticket":
            tickets[0] += 1
            item["ticket_id"] = f"TKT-{prefix}-{tickets[0]}"
        items.append(item)
    return items


@st.composite
def format_snapshots(draw, *, minutes=None):
    """A valid snapshot with its incident, using any mix of the optional format fields."""
    paid = draw(st.integers(1, 10))
    amounts = sorted(
        draw(st.lists(st.integers(1, 300_000), min_size=paid, max_size=paid)), reverse=True
    )
    # Sometimes unpaid places at the end of the table (0.00), sometimes a range.
    prizes = [{"place": p + 1, "amount": money(a)} for p, a in enumerate(amounts)]
    buy_in = draw(st.integers(0, 20_000))
    fee = draw(st.integers(0, 2_000))
    knockout = draw(st.booleans())
    bounty = draw(st.integers(0, 10_000)) if knockout else None
    n_active = draw(st.integers(1, 14))
    n_out = draw(st.integers(0, 8))
    if draw(st.booleans()) and paid >= 3 and n_active + n_out >= 2:
        prizes[-2:] = [{"places": [paid - 1, paid], "amount": money(amounts[-1])}]
    # Chip counts from a small set too, so that ties (and their tie-breaks) happen.
    chip = st.integers(1, 10**6) | st.sampled_from([100, 100, 5000, 10**9])
    entries = []
    tickets = [0]
    for i in range(n_active + n_out):
        status = "active" if i < n_active else "eliminated"
        e = {"entry_id": f"E-{i}", "player_id": f"p{i}", "status": status}
        if status == "active":
            e["chips"] = draw(chip)
        paid_in = buy_in
        if draw(st.integers(0, 3)) == 0:
            paid_in = draw(st.sampled_from([0, buy_in // 2, buy_in * 2]))
            e["buy_in_paid"] = money(paid_in)
        rebuys = rebuy_fees = 0
        if draw(st.integers(0, 2)) == 0:
            rebuys = buy_in * draw(st.integers(1, 3))
            rebuy_fees = fee * draw(st.integers(0, 3))
            e["rebuys_paid"] = money(rebuys)
            if rebuy_fees or draw(st.booleans()):
                e["rebuy_fees_paid"] = money(rebuy_fees)
        entry_fee = fee
        if draw(st.integers(0, 5)) == 0:
            entry_fee = draw(st.integers(0, 3_000))
            e["fee_paid"] = money(entry_fee)
        bounty_paid = 0
        if knockout:
            bounty_paid = bounty
            if draw(st.integers(0, 3)) == 0:
                bounty_paid = draw(st.integers(0, 10_000))
                e["bounty_paid"] = money(bounty_paid)
            if status == "active" and draw(st.booleans()):
                e["bounty"] = money(draw(st.integers(0, 50_000)))  # a progressive knockout
            if draw(st.booleans()):
                e["bounties_won"] = money(draw(st.integers(0, 20_000)))
        if draw(st.integers(0, 2)) == 0:
            total = paid_in + rebuys + entry_fee + rebuy_fees + bounty_paid
            e["paid_with"] = _split(draw, total, i, tickets)
        entries.append(e)
    random.Random(draw(st.integers(0, 1000))).shuffle(entries)
    tournament = {
        "external_id": "F-1", "name": "generated", "currency": "USD",
        "buy_in": money(buy_in), "fee": money(fee), "starts_at": "2026-11-29T18:00:00Z",
        "prizes": prizes,
    }  # fmt: skip
    if knockout:
        tournament["bounty"] = money(bounty)
    if draw(st.booleans()):
        tournament["guarantee"] = money(draw(st.integers(0, 3_000_000)))
    if minutes is None:
        minutes = draw(st.sampled_from([-5, 0, 5, 10, 20, 21, 45, 90, 200]))
    failed = 18 * 60 + minutes
    return {
        "format": "tournament-snapshot/1",
        "tournament": tournament,
        "entries": entries,
        "incident": {
            "failed_at": f"2026-11-29T{failed // 60:02d}:{failed % 60:02d}:00Z",
            "site_wide_issue": draw(st.integers(0, 4)) == 0,
        },
    }
