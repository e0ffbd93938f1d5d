"""The rules of payout-rules.md at their edges: timing, cap, rounding ties, warnings."""

import random
from datetime import UTC, datetime, timedelta

from hypothesis import given, settings
from hypothesis import strategies as st

from refunds_admin.payouts import compute_proposal, explain, parse_snapshot, select_rule
from refunds_admin.payouts.rules import kth_largest, round_shares
from tests.support.factories import active, engine_doc, out

ENTRIES = [active(1, 600), active(2, 400), out(3)]


def rule_at(failed_at_text, **kw):
    doc = engine_doc(entries=ENTRIES, **kw)
    doc["incident"]["failed_at"] = failed_at_text
    return compute_proposal(parse_snapshot(doc)).rule


def test_it_refunds_everyone_at_exactly_twenty_minutes():
    assert rule_at("2026-11-29T18:20:00Z") == "full_refund"
    assert rule_at("2026-11-29T19:20:00+01:00") == "full_refund"


def test_it_applies_rule_two_a_moment_after_twenty_minutes():
    assert rule_at("2026-11-29T18:20:01Z") == "in_the_money"
    assert rule_at("2026-11-29T18:20:00.000001Z") == "in_the_money"
    # More digits than a datetime holds are still compared exactly.
    assert rule_at("2026-11-29T18:20:00.0000001Z") == "in_the_money"
    assert rule_at("2026-11-29T18:20:00.0000000Z") == "full_refund"


def test_it_refunds_everyone_when_play_failed_before_the_start():
    assert rule_at("2026-11-29T17:59:00Z") == "full_refund"


def test_it_refunds_everyone_when_management_found_site_wide_issues():
    assert rule_at("2026-11-29T21:00:00Z", site_wide=True) == "full_refund"


def test_it_takes_the_incident_from_arguments_over_the_snapshot():
    snap = parse_snapshot(engine_doc(entries=ENTRIES, failed_after="03:00:00"))
    early = datetime(2026, 11, 29, 18, 5, tzinfo=UTC)
    assert compute_proposal(snap, failed_at=early).rule == "full_refund"
    assert compute_proposal(snap, site_wide_issue=True).rule == "full_refund"
    assert select_rule(snap, early + timedelta(hours=1), False) == "in_the_money"


def test_it_selects_not_in_the_money_when_more_entries_remain_than_places_paid():
    doc = engine_doc(
        entries=[active(i, 100 * i) for i in range(1, 4)], prizes=[{"place": 1, "amount": "90.00"}]
    )
    proposal = compute_proposal(parse_snapshot(doc))
    assert proposal.rule == "not_in_the_money"
    assert [ln.buy_in_refund for ln in proposal.lines] == [3000, 3000, 3000]
    assert sum(ln.chip_equity for ln in proposal.lines) == 0


def test_it_refunds_what_each_entry_actually_paid_under_rule_one():
    entries = [
        {**active(1, 600), "buy_in_paid": "0.00", "fee_paid": "0.00"},  # freeroll seat
        {**active(2, 400), "buy_in_paid": "25.00"},  # discount
        out(3),
        {**out(4), "player_id": "p2", "buy_in_paid": "30", "fee_paid": "3"},  # re-entry
    ]
    proposal = compute_proposal(
        parse_snapshot(engine_doc(entries=entries, failed_after="00:12:00"))
    )
    assert [(ln.buy_in_refund, ln.fee_refund, ln.total) for ln in proposal.lines] == [
        (0, 0, 0),
        (2500, 300, 2800),
        (3000, 300, 3300),
        (3000, 300, 3300),
    ]


def test_it_caps_prize_money_at_first_prize_and_re_splits_the_excess():
    # Two seats of 100.00 each, three left; the big stack would take more than a seat.
    doc = engine_doc(
        entries=[active(1, 9000), active(2, 600), active(3, 400)],
        prizes=[{"places": [1, 2], "amount": "100.00"}],
        buy_in="10.00",
        fee="1.00",
    )
    proposal = compute_proposal(parse_snapshot(doc))
    big, mid, small = proposal.lines
    assert big.capped and big.buy_in_refund + big.chip_equity == 10000
    assert not mid.capped and not small.capped
    # Pool 200.00 - 30.00 buy-ins = 170.00; the cap takes 90.00, 80.00 is re-split 600:400.
    assert (mid.chip_equity, small.chip_equity) == (4800, 3200)
    assert sum(ln.buy_in_refund + ln.chip_equity for ln in proposal.lines) == 20000
    assert proposal.summary["capped_entries"] == 1
    assert "capped so that your prize money is at most first prize ($100.00)" in explain(
        proposal, "e1"
    )
    assert "(600/1,000 X $80)" in explain(proposal, "e2")


def test_it_never_caps_the_fee_refund():
    doc = engine_doc(
        entries=[active(1, 9000), active(2, 600), active(3, 400)],
        prizes=[{"places": [1, 2], "amount": "100.00"}],
        buy_in="10.00",
        fee="50.00",
    )
    big = compute_proposal(parse_snapshot(doc)).lines[0]
    assert big.total == 10000 + 5000


def test_it_gives_leftover_cents_to_the_largest_remainders():
    # 100 cents over three equal stacks: 33.33.. each, one cent left over.
    assert round_shares(100, 3, [1, 1, 1], ["b", "a", "c"]) == [33, 34, 33]


def test_it_breaks_remainder_ties_by_chips_then_entry_id_by_code_point():
    # Equal remainders, different chips: the larger stack wins the cent.
    assert round_shares(1, 4, [1, 1, 1, 1], ["d", "c", "b", "a"]) == [0, 0, 0, 1]
    # "E-10" sorts before "E-3" by code point, as Python compares strings.
    assert round_shares(1, 2, [1, 1], ["E-3", "E-10"]) == [0, 1]


def test_it_does_not_depend_on_input_order_for_ties():
    entries = [active(1, 100), active(2, 100), active(3, 100)]
    doc = engine_doc(
        entries=entries,
        prizes=[{"place": 1, "amount": "100.00"}, {"places": [2, 3], "amount": "50.00"}],
    )
    a = {ln.entry_id: ln.total for ln in compute_proposal(parse_snapshot(doc)).lines}
    doc["entries"].reverse()
    b = {ln.entry_id: ln.total for ln in compute_proposal(parse_snapshot(doc)).lines}
    assert a == b


def test_it_counts_a_non_cash_prize_at_its_stated_value():
    doc = engine_doc(
        entries=[active(1, 500), active(2, 500)],
        prizes=[{"place": 1, "amount": "1000.00", "non_cash": True, "description": "WSOP package"},
                {"place": 2, "amount": "200.00"}],
    )  # fmt: skip
    proposal = compute_proposal(parse_snapshot(doc))
    assert proposal.summary["remaining_pool"] == 120000
    assert [ln.next_prize + ln.chip_equity for ln in proposal.lines] == [60000, 60000]


def test_it_warns_when_awarded_prizes_disagree_with_the_prize_table():
    doc = engine_doc(
        entries=[active(1, 500), active(2, 500), out(3, finish_place=3, prize_awarded="10.00")],
        prizes=[
            {"place": 1, "amount": "60.00"},
            {"place": 2, "amount": "30.00"},
            {"place": 3, "amount": "15.00"},
        ],
    )
    proposal = compute_proposal(parse_snapshot(doc))
    assert any("10.00" in w and "15.00" in w for w in proposal.warnings)


def test_it_warns_about_a_finish_place_still_in_play():
    doc = engine_doc(entries=[active(1, 500), active(2, 500), out(3, finish_place=2)])
    assert any("finished 2" in w for w in compute_proposal(parse_snapshot(doc)).warnings)


def test_it_reports_the_prizes_the_operator_absorbs_on_a_full_refund():
    doc = engine_doc(
        entries=[active(1, 500), active(2, 500), out(3, finish_place=3, prize_awarded="15.00")],
        prizes=[
            {"place": 1, "amount": "60.00"},
            {"place": 2, "amount": "30.00"},
            {"place": 3, "amount": "15.00"},
        ],
        site_wide=True,
    )
    summary = compute_proposal(parse_snapshot(doc)).to_json()["summary"]
    assert summary["prizes_awarded"] == "15.00"
    assert summary["total"] == "99.00"


def test_it_fingerprints_the_lines_and_only_the_lines():
    doc = engine_doc(entries=ENTRIES)
    a = compute_proposal(parse_snapshot(doc)).fingerprint()
    doc["tournament"]["name"] = "Renamed"
    assert compute_proposal(parse_snapshot(doc)).fingerprint() == a
    doc["entries"][0]["chips"] = 601
    assert compute_proposal(parse_snapshot(doc)).fingerprint() != a


def test_it_reads_offsets_in_every_iso_8601_form():
    # (Not a space for the T: ISO 8601 has none, and the API schema's date-time refuses it.)
    for text in ("2026-11-29T19:30:00+01:00", "2026-11-29T19:30:00+0100", "2026-11-29T19:30:00+01",
                 "2026-11-29t18:30:00z"):  # fmt: skip
        assert rule_at(text) == "in_the_money", text


@settings(max_examples=60, deadline=None)
@given(
    st.integers(0, 2**32),
    st.sampled_from(["uniform", "few values", "ascending", "descending", "skewed", "equal"]),
    st.integers(1, 9000),
    st.floats(0, 1),
)
def test_it_finds_the_kth_largest_remainder_as_a_full_sort_does(seed, shape, n, where):
    """kth_largest guesses a window from a sample; whatever the values, the answer is the
    sort's (the threshold of the leftover cents depends on it)."""
    rng = random.Random(seed)
    values = {
        "uniform": lambda: [rng.randrange(10**10) for _ in range(n)],
        "few values": lambda: [rng.choice([0, 5, 7, 10**9]) for _ in range(n)],
        "ascending": lambda: list(range(n)),
        "descending": lambda: list(range(n, 0, -1)),
        "skewed": lambda: [int(rng.paretovariate(0.5)) for _ in range(n)],
        "equal": lambda: [3] * n,
    }[shape]()
    k = 1 + int(where * (n - 1))
    assert kth_largest(values, k) == sorted(values, reverse=True)[k - 1]
