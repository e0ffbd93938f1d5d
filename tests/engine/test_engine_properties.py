"""Hypothesis properties of the engine over generated snapshots."""

from fractions import Fraction
from unittest import mock

from hypothesis import given, settings
from hypothesis import strategies as st

import refunds_admin.payouts.snapshot as snapshot_module
from refunds_admin.payouts import parse_snapshot
from refunds_admin.payouts.money import AmountError, parse_amount
from refunds_admin.payouts.snapshot import (
    EntryColumns,
    _parse_entries_in_bulk,
    _parse_entries_one_by_one,
    _parse_prizes_in_bulk,
    _parse_prizes_one_by_one,
    _Problems,
)
from tests.support.strategies import SETTINGS, cents, computed, snapshots


def exact_shares(doc, proposal):
    """Exact rational chip equity of the uncapped entries, recomputed independently."""
    uncapped = [ln for ln in proposal.lines if ln.status == "active" and not ln.capped]
    pool = proposal.summary["equity_pool"] - sum(
        ln.chip_equity for ln in proposal.lines if ln.capped
    )
    chips = sum(ln.chips for ln in uncapped)
    return {ln.entry_id: Fraction(pool * ln.chips, chips) for ln in uncapped}


@SETTINGS
@given(snapshots(rule="rule_two"))
def test_it_pays_out_exactly_the_remaining_pool_as_prize_money(doc):
    p = computed(doc)
    if p is None or p.rule == "full_refund":
        return
    prize_money = sum(ln.buy_in_refund + ln.next_prize + ln.chip_equity for ln in p.lines)
    assert prize_money == p.summary["remaining_pool"]
    assert sum(ln.total for ln in p.lines) == p.summary["total"]


@SETTINGS
@given(snapshots(rule="rule_two"))
def test_it_never_pays_prize_money_above_first_prize(doc):
    p = computed(doc)
    if p is None:
        return
    cap = p.summary["first_place_cap"]
    assert all(ln.buy_in_refund + ln.next_prize + ln.chip_equity <= cap for ln in p.lines)


@SETTINGS
@given(snapshots(rule="rule_two"))
def test_it_keeps_every_uncapped_share_within_a_cent_of_its_exact_value(doc):
    p = computed(doc)
    if p is None:
        return
    exact = exact_shares(doc, p)
    for ln in p.lines:
        if ln.entry_id in exact:
            assert abs(ln.chip_equity - exact[ln.entry_id]) < 1


@SETTINGS
@given(snapshots(rule="rule_two"))
def test_it_never_gives_more_chips_less_chip_equity(doc):
    p = computed(doc)
    if p is None:
        return
    active = [ln for ln in p.lines if ln.status == "active"]
    for a in active:
        for b in active:
            same_guarantee = a.buy_in_refund + a.next_prize == b.buy_in_refund + b.next_prize
            if same_guarantee and a.chips > b.chips:
                assert a.chip_equity >= b.chip_equity


@SETTINGS
@given(snapshots(), st.randoms(use_true_random=False))
def test_it_gives_every_entry_the_same_amounts_in_any_order(doc, rnd):
    p = computed(doc)
    shuffled = {**doc, "entries": list(doc["entries"])}
    rnd.shuffle(shuffled["entries"])
    q = computed(shuffled)
    if p is None:
        assert q is None
        return
    assert {ln.entry_id: ln for ln in p.lines} == {ln.entry_id: ln for ln in q.lines}


@SETTINGS
@given(snapshots(rule="full_refund"))
def test_it_pays_exactly_what_was_paid_in_under_rule_one(doc):
    p = computed(doc)
    snap = parse_snapshot(doc)
    assert p.rule == "full_refund"
    assert sum(ln.total for ln in p.lines) == sum(e.buy_in_paid + e.fee_paid for e in snap.entries)
    for ln, e in zip(p.lines, snap.entries, strict=True):
        assert (ln.buy_in_refund, ln.fee_refund, ln.next_prize, ln.chip_equity) == (
            e.buy_in_paid,
            e.fee_paid,
            0,
            0,
        )


ODD_VALUES = st.one_of(
    st.none(), st.booleans(), st.integers(-2, 3), st.floats(allow_nan=False, width=16),
    st.sampled_from(["", " ", "x", "active", "eliminated", "1.00", "1.234", "e1", "p1"]),
)  # fmt: skip
KEYS = [
    "entry_id",
    "player_id",
    "screen_name",
    "status",
    "chips",
    "finish_place",
    "prize_awarded",
    "buy_in_paid",
    "fee_paid",
]


@settings(deadline=None)
@given(st.lists(st.dictionaries(st.sampled_from(KEYS), ODD_VALUES, max_size=9), max_size=6))
def test_it_validates_entries_the_same_way_in_bulk_and_one_by_one(raw):
    """The fast column-wise check may only accept what the entry-by-entry check accepts."""
    bulk = _parse_entries_in_bulk(raw, 3000, 300)
    problems = _Problems()
    slow = _parse_entries_one_by_one(raw, 3000, 300, problems)
    if bulk is not None:
        assert not problems, problems.items
        assert bulk == EntryColumns.from_entries(slow)


# Values the bulk path must also take apart, field by field: containers (unhashable), numbers
# beyond a bigint or an integer column, blank, duplicate or over-long ids, control and non-ASCII
# characters, amounts with a colon or too many digits.
_ID_VALUES = ["", " ", "\t", "a\x00", "é\x85", "\u00a0", "日本", "a:b", "x" * 128, "x" * 129]
_NUMBERS = [1, 0, 2, -1, 2**31 - 1, 2**31, 2**63 - 1, 2**63, 10**20, 1.5, True, "1"]
_AMOUNTS = ["", "0", "0.00", "1.234", "1:00", "1234567890123456.00", "999999999999999.99", 1]
ODD_BY_KEY = {
    "entry_id": ["e0", "e1", *_ID_VALUES],
    "player_id": ["p0", "p1", *_ID_VALUES],
    "screen_name": _ID_VALUES,
    "status": ["Active", "", "eliminated ", 1],
    "chips": _NUMBERS,
    "finish_place": _NUMBERS,
    "prize_awarded": _AMOUNTS,
    "buy_in_paid": _AMOUNTS,
    "fee_paid": _AMOUNTS,
}
WIDER_ODD_VALUES = st.one_of(
    st.none(), st.lists(st.integers(0, 2), max_size=2), st.just({"a": 1}), st.just(float("nan"))
)


@st.composite
def entries_with_odd_fields(draw):
    """Valid entries (statuses mixed, optional fields sometimes given), then one or two fields
    removed or set to an odd value."""
    n = draw(st.integers(1, 6))
    raw = []
    for i in range(n):
        active = draw(st.booleans())
        e = {
            "entry_id": f"e{i}",
            "player_id": f"p{i}",
            "status": "active" if active else "eliminated",
        }
        if active or draw(st.booleans()):
            e["chips"] = draw(st.integers(1, 100)) if active else 0
        for key, value in (
            ("screen_name", f"n{i}"),
            ("finish_place", i + 1),
            ("prize_awarded", "5.00"),
            ("buy_in_paid", "30"),
            ("fee_paid", "3.5"),
        ):
            if draw(st.booleans()):
                e[key] = value
        raw.append(e)
    for _ in range(draw(st.integers(1, 2))):
        target = draw(st.sampled_from(raw))
        key = draw(st.sampled_from(KEYS))
        how = draw(st.integers(0, 5))
        if how == 0:
            target.pop(key, None)
        elif how == 1:
            target[key] = draw(WIDER_ODD_VALUES)
        else:
            target[key] = draw(st.sampled_from(ODD_BY_KEY[key]))
    return raw


@settings(deadline=None, max_examples=1000)
@given(entries_with_odd_fields())
def test_it_validates_odd_entries_the_same_way_in_bulk_and_one_by_one(raw):
    """The bulk path reads each column once with a stand-in for a missing field: it must still
    accept only what the entry-by-entry check accepts, and never fail on a container."""
    bulk = _parse_entries_in_bulk(raw, 3000, 300)
    problems = _Problems()
    slow = _parse_entries_one_by_one(raw, 3000, 300, problems)
    if bulk is not None:
        assert not problems, problems.items
        assert bulk == EntryColumns.from_entries(slow)


@st.composite
def nearly_valid_entries(draw):
    n = draw(st.integers(1, 6))
    raw = []
    for i in range(n):
        status = draw(st.sampled_from(["active", "eliminated"]))
        e = {"entry_id": f"e{i}", "player_id": f"p{draw(st.integers(0, n))}", "status": status}
        if status == "active":
            e["chips"] = draw(st.integers(1, 100))
        elif draw(st.booleans()):
            e["chips"] = 0
        if draw(st.booleans()):
            e["finish_place"] = draw(st.integers(1, 9))
        raw.append(e)
    if draw(st.booleans()):  # one odd field somewhere
        target = draw(st.sampled_from(raw))
        target[draw(st.sampled_from(KEYS))] = draw(ODD_VALUES)
    return raw


@settings(deadline=None)
@given(nearly_valid_entries())
def test_it_validates_nearly_valid_entries_the_same_way_in_bulk_and_one_by_one(raw):
    bulk = _parse_entries_in_bulk(raw, 3000, 300)
    problems = _Problems()
    slow = _parse_entries_one_by_one(raw, 3000, 300, problems)
    if bulk is not None:
        assert not problems, problems.items
        assert bulk == EntryColumns.from_entries(slow)
    elif not problems:
        # The bulk path may give up on valid input (it then costs time, not correctness),
        # but for plain valid entries like these it should not.
        raise AssertionError(f"bulk path gave up on valid entries: {raw}")


PRIZE_KEYS = ["place", "places", "amount", "non_cash", "description"]
ODD_PRIZE_VALUES = st.one_of(
    ODD_VALUES,
    st.integers(0, 4),
    st.lists(st.integers(0, 5), max_size=3),
    st.sampled_from(["0", "0.00", "5.00", "10", "10.5", "1.001"]),
)


@st.composite
def nearly_valid_prize_tables(draw):
    """A prize table that is usually valid (places 1..P, as single places or ranges, never
    rising), sometimes with one odd value, a gap, a repeated place or a rising prize."""
    rows, place, amount = [], 1, draw(st.integers(1, 10_000))
    for _ in range(draw(st.integers(1, 6))):
        width = draw(st.integers(1, 3))
        text = cents(amount)
        if width == 1 and draw(st.booleans()):
            row = {"place": place, "amount": text}
        else:
            row = {"places": [place, place + width - 1], "amount": text}
        if draw(st.booleans()):
            row["non_cash"] = draw(st.booleans())
        if draw(st.booleans()):
            row["description"] = draw(
                st.sampled_from(["", "ticket", "package", "line\nbreak", "x" * 300])
            )
        rows.append(row)
        place += width
        amount = draw(st.integers(0, amount))
    if draw(st.booleans()):
        target = draw(st.sampled_from(rows))
        target[draw(st.sampled_from(PRIZE_KEYS))] = draw(ODD_PRIZE_VALUES)
    if draw(st.booleans()):
        draw(st.randoms()).shuffle(rows)
    return rows


@settings(max_examples=500, deadline=None)
@given(
    st.one_of(
        nearly_valid_prize_tables(),
        st.lists(
            st.dictionaries(st.sampled_from(PRIZE_KEYS), ODD_PRIZE_VALUES, max_size=5), max_size=5
        ),
    ),
    st.integers(1, 25),
)
def test_it_validates_prize_tables_the_same_way_in_bulk_and_row_by_row(raw, last_place):
    """The fast column-wise prize check may only accept what the row-by-row check accepts, with
    the same rows and the same amount per place."""
    bulk = _parse_prizes_in_bulk(raw, last_place)
    problems = _Problems()
    slow = _parse_prizes_one_by_one(raw, problems, last_place)
    if bulk is not None:
        assert not problems, problems.items
        assert bulk == slow


@settings(deadline=None, max_examples=300)
@given(entries_with_odd_fields(), st.integers(1, 3))
def test_it_reads_entries_the_same_way_a_block_at_a_time(raw, block):
    """The bulk path reads the entries' fields and checks their ids a block at a time (to stay
    in the CPU's cache): blocks of any size give the same columns, or give up the same way."""
    whole = _parse_entries_in_bulk(raw, 3000, 300)
    with mock.patch.object(snapshot_module, "_BLOCK", block):
        fields = (
            snapshot_module._read_fields(raw, dict.fromkeys(KEYS, "?")) if _all_dicts(raw) else None
        )
        in_blocks = _parse_entries_in_bulk(raw, 3000, 300)
    assert in_blocks == whole
    if fields is not None:
        assert fields == {key: [e.get(key, "?") for e in raw] for key in KEYS}


def _all_dicts(raw):
    return all(isinstance(e, dict) for e in raw)


_AMOUNT_TEXTS = st.one_of(
    st.from_regex(r"[0-9]{1,16}\.[0-9]{2}", fullmatch=True),
    st.from_regex(r"[0-9]{1,4}(\.[0-9]{0,3})?", fullmatch=True),
    st.sampled_from(["", ".50", "1.", "1e2", "-1.00", " 1.00", "1.00\n", "\uff11.00", "1:00"]),
)


@settings(deadline=None, max_examples=300)
@given(
    st.one_of(
        st.lists(_AMOUNT_TEXTS, min_size=1, max_size=30, unique=True),
        # All with two decimals, more than 8: the regex path (MAX_CENTS is 15 digits of units).
        st.lists(
            st.from_regex(r"0?[0-9]{1,15}\.[0-9]{2}", fullmatch=True), min_size=9, unique=True
        ),
    )
)
def test_it_parses_a_column_of_amounts_as_parse_amount_does_one_by_one(texts):
    """_parse_distinct reads two-decimal texts with one regex and int(); a block of entries
    (_Cents) may hand it any few of a column's texts: it must agree with parse_amount."""
    try:
        expected = {text: parse_amount(text) for text in texts}
    except AmountError:
        expected = None
    assert snapshot_module._parse_distinct(texts) == expected
