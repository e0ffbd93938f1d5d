"""The approver's figures read a proposal's columns in a few C passes; these properties keep
each fast form equal to the plain loop it replaced (docs/performance.md, "Pages and figures")."""

import heapq
from types import SimpleNamespace

import pytest
from hypothesis import given
from hypothesis import strategies as st

from refunds_admin.proposals.figures import (
    TOP,
    changes,
    changes_by_position,
    refunds_by_method,
    top_paid,
)

# Few distinct totals, so that ties (which the order among equals decides) are common.
totals_st = st.lists(st.sampled_from([0, 0, 1, 5, 5, 100, 250, 10_000]), max_size=60)


@given(totals_st, st.integers(min_value=1, max_value=12))
def test_top_paid_is_nlargest_of_every_paid_line(totals, top):
    paid = sorted(t for t in totals if t > 0)
    plain = [i for i in heapq.nlargest(top, range(len(totals)), key=totals.__getitem__)]
    plain = [i for i in plain if totals[i] > 0]
    assert top_paid(totals, paid, top) == plain


def test_top_paid_default_is_the_first_ten():
    totals = [3] * 15 + [0, 7]
    assert top_paid(totals, sorted(t for t in totals if t)) == [16, *range(TOP - 1)]


part_st = st.tuples(st.sampled_from(["cash", "ticket", "tournament_money"]), st.integers(0, 500))


@given(st.lists(st.tuples(st.integers(0, 10_000), st.one_of(st.none(), st.just(()),
                                                           st.lists(part_st, min_size=1, max_size=3).map(tuple)))))  # fmt: skip
def test_refunds_by_method_is_the_line_by_line_sum(lines):
    totals = [t for t, _ in lines]
    refunds = [r for _, r in lines]
    by_method, tickets = {"cash": 0}, 0
    for total, parts in lines:
        if not parts:
            by_method["cash"] += total
            continue
        for method, amount in parts:
            by_method[method] = by_method.get(method, 0) + amount
            tickets += method == "ticket"
    expected = by_method | ({"tickets": tickets} if tickets else {})
    assert refunds_by_method(totals, refunds) == expected


# A proposal prepared again from the same snapshot: the same entries, some totals changed, with
# few distinct changes, so that ties in the size of a change (ordered by entry id) are common.
@given(st.lists(st.tuples(st.sampled_from([0, 0, 1, 5, 100, 10_000]),
                          st.sampled_from([0, 0, 0, 1, -1, 5, 95, -100, 10_000])), max_size=60),
       st.randoms(use_true_random=False))  # fmt: skip
def test_changes_by_position_is_changes_by_entry_id(lines, random):
    entry_ids = [f"e{n}" for n in range(len(lines))]
    random.shuffle(entry_ids)  # positions are not in entry id order
    before = [t for t, _ in lines]
    after = [max(t + d, 0) for t, d in lines]
    columns = SimpleNamespace(entry_id=entry_ids, total=after)
    by_entry = changes(dict(zip(entry_ids, before, strict=True)), columns)
    assert changes_by_position(before, columns) == by_entry
    assert by_entry["added"] == by_entry["removed"] == 0


def test_changes_by_position_refuses_lines_of_other_entries():
    with pytest.raises(ValueError):
        changes_by_position([1, 2], SimpleNamespace(entry_id=["a"], total=[1]))
