"""Hypothesis strategies and helpers shared by the engine's property tests."""

import random

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st

from refunds_admin.payouts import SnapshotError, compute_proposal, parse_snapshot

# How many examples: the Hypothesis profile decides (fast by default, thorough in CI).
SETTINGS = settings(deadline=None, suppress_health_check=[HealthCheck.too_slow])


def cents(c):
    return f"{c // 100}.{c % 100:02d}"


@st.composite
def snapshots(draw, *, rule=None):
    """A valid snapshot with its incident; rule 2 cases where the policy applies."""
    paid = draw(st.integers(1, 12))
    # A prize table that never rises: first prize down to the last paid place.
    amounts = sorted(
        draw(st.lists(st.integers(1, 500_000), min_size=paid, max_size=paid)), reverse=True
    )
    buy_in = draw(st.integers(0, 20_000))
    fee = draw(st.integers(0, 2_000))
    n_active = draw(st.integers(2, 30))
    n_out = draw(st.integers(0, 10))
    chips = draw(st.lists(st.integers(1, 10**7), min_size=n_active, max_size=n_active))
    paid_in = draw(
        st.lists(
            st.sampled_from([None, 0, buy_in // 2, buy_in]),
            min_size=n_active + n_out,
            max_size=n_active + n_out,
        )
    )
    entries = []
    for i in range(n_active + n_out):
        e = {
            "entry_id": f"E-{i}",
            "player_id": f"p{i}",
            "status": "active" if i < n_active else "eliminated",
        }
        if i < n_active:
            e["chips"] = chips[i]
        if paid_in[i] is not None:
            e["buy_in_paid"] = cents(paid_in[i])
        entries.append(e)
    random.Random(draw(st.integers(0, 1000))).shuffle(entries)
    minutes = (
        draw(st.sampled_from([5, 20, 21, 90]))
        if rule is None
        else (5 if rule == "full_refund" else 90)
    )
    return {
        "format": "tournament-snapshot/1",
        "tournament": {
            "external_id": "H-1", "name": "generated", "currency": "EUR",
            "buy_in": cents(buy_in), "fee": cents(fee), "starts_at": "2026-11-29T18:00:00Z",
            "prizes": [{"place": p + 1, "amount": cents(a)} for p, a in enumerate(amounts)],
        },
        "entries": entries,
        "incident": {"failed_at": f"2026-11-29T{18 + minutes // 60}:{minutes % 60:02d}:00Z",
                     "site_wide_issue": draw(st.booleans()) if rule is None else False},
    }  # fmt: skip


def computed(doc):
    """The proposal, or None when the rules refuse it (E < 0, buy-in above first prize)."""
    try:
        return compute_proposal(parse_snapshot(doc))
    except SnapshotError:
        return None
