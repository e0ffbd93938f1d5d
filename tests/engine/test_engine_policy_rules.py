"""Each parameter of a cancellation policy on its own, the fingerprint of old and new proposals,
the bounty-conservation warning, and compute_payouts --policy."""

import gc
import io
import json

import pytest

from refunds_admin.payouts import (
    PRESETS,
    SnapshotError,
    compute_proposal,
    parse_policy,
    parse_snapshot,
    select_rule,
)
from refunds_admin.payouts.cli import main
from refunds_admin.payouts.rules import LEGACY_POLICY, fingerprint_columns
from tests.support.factories import EXAMPLES, active, engine_doc, example, out

SEED = PRESETS["ultimatepoker-2026"].document()


def policy(**changes):
    """The seed policy with some fields changed: `within_minutes=None`, `returned="nothing"`,
    `percent_out=50`, `percent_in=30`, or any top-level field."""
    doc = json.loads(json.dumps(SEED)) | {"id": "test-policy"}
    if "within_minutes" in changes:
        doc["full_refund"]["within_minutes"] = changes.pop("within_minutes")
    if "before_first_elimination" in changes:
        doc["full_refund"]["before_first_elimination"] = changes.pop("before_first_elimination")
    if "returned" in changes:
        doc["not_in_the_money"]["returned"] = changes.pop("returned")
    if "percent_out" in changes:
        doc["not_in_the_money"]["equal_share_percent"] = changes.pop("percent_out")
    if "percent_in" in changes:
        doc["in_the_money"]["equal_share_percent"] = changes.pop("percent_in")
    return parse_policy(doc | changes)


ENTRIES = [active(1, 3000), active(2, 1000), active(3, 1000), out(4)]
# Three left, one paid place of 60.00 and one of 30.00: not yet in the money.
PRIZES = [{"place": 1, "amount": "60.00"}, {"place": 2, "amount": "30.00"}]


def lines(doc, p, **kwargs):
    return {
        ln.entry_id: ln for ln in compute_proposal(parse_snapshot(doc), policy=p, **kwargs).lines
    }


def test_the_window_decides_rule_one_and_a_null_window_leaves_it_to_management():
    doc = engine_doc(entries=ENTRIES, failed_after="00:15:00")
    snapshot = parse_snapshot(doc)
    assert select_rule(snapshot, snapshot.incident.failed_at, False) == "full_refund"
    assert select_rule(snapshot, snapshot.incident.failed_at, False, policy(within_minutes=10)) == (
        "not_in_the_money"
    )
    assert select_rule(snapshot, snapshot.incident.failed_at, False, policy(within_minutes=15)) == (
        "full_refund"  # exactly at the window: still rule 1
    )
    none = policy(within_minutes=None)
    assert select_rule(snapshot, snapshot.incident.failed_at, False, none) == "not_in_the_money"
    assert select_rule(snapshot, snapshot.incident.failed_at, True, none) == "full_refund"


@pytest.mark.parametrize("failed_at", ["2026-11-29T18:00:00Z", "2026-11-29T17:30:00Z"])
def test_nothing_played_is_always_rule_one_whatever_the_policy(failed_at):
    doc = engine_doc(entries=ENTRIES)
    doc["incident"]["failed_at"] = failed_at
    p = compute_proposal(parse_snapshot(doc), policy=policy(within_minutes=None))
    assert p.rule == "full_refund" and p.full_refund_reason == "nothing_played"


def test_before_the_first_elimination_refunds_everyone_only_while_nobody_is_out():
    p = policy(within_minutes=None, before_first_elimination=True)
    nobody_out = engine_doc(entries=ENTRIES[:3], failed_after="02:00:00")
    assert compute_proposal(parse_snapshot(nobody_out), policy=p).rule == "full_refund"
    one_out = engine_doc(entries=ENTRIES, failed_after="02:00:00")
    assert compute_proposal(parse_snapshot(one_out), policy=p).rule == "not_in_the_money"


def test_the_returned_part_before_the_money():
    # e2 rebought once (30.00 + 3.00); the pool is the whole table, 90.00.
    entries = [active(1, 3000), active(2, 1000) | {"rebuys_paid": "30.00", "rebuy_fees_paid": "3.00"},
               active(3, 1000) | {"buy_in_paid": "10.00"}, out(4)]  # fmt: skip
    doc = engine_doc(entries=entries, failed_after="01:00:00", prizes=[{"place": 1, "amount": "150.00"}, {"place": 2, "amount": "30.00"}])  # fmt: skip
    both = lines(doc, policy(returned="buy_in_and_rebuys"))
    assert [both[e].buy_in_refund for e in ("e1", "e2", "e3")] == [3000, 6000, 1000]
    first = lines(doc, policy(returned="buy_in"))
    assert [first[e].buy_in_refund for e in ("e1", "e2", "e3")] == [3000, 3000, 1000]
    none = lines(doc, policy(returned="nothing"))
    assert [none[e].buy_in_refund for e in ("e1", "e2", "e3")] == [0, 0, 0]
    for result in (both, first, none):  # the fees, rebuy fees included, always come back
        assert [result[e].fee_refund for e in ("e1", "e2", "e3", "e4")] == [300, 600, 300, 0]
        assert sum(ln.buy_in_refund + ln.chip_equity for ln in result.values()) == 18000


def test_the_equal_share_leftover_cents_go_to_the_larger_stacks_then_the_smaller_entry_id():
    # 100.00 table, nothing returned, 100% equal: 10,000 cents among 3 = 3,333 and 1 cent left,
    # which goes to the larger stack e1. With 2 cents left: e1, then e2 before e3 (tied stacks).
    doc = engine_doc(entries=ENTRIES, failed_after="01:00:00",
                     prizes=[{"place": 1, "amount": "60.00"}, {"place": 2, "amount": "40.00"}])  # fmt: skip
    result = lines(doc, policy(returned="nothing", percent_out=100, first_place_cap=False))
    assert [result[e].equal_share for e in ("e1", "e2", "e3", "e4")] == [3334, 3333, 3333, 0]
    assert all(ln.chip_equity == 0 for ln in result.values())
    doc["tournament"]["prizes"][1]["amount"] = "40.01"
    result = lines(doc, policy(returned="nothing", percent_out=100, first_place_cap=False))
    assert [result[e].equal_share for e in ("e1", "e2", "e3")] == [3334, 3334, 3333]


def test_half_equal_half_by_chips_as_the_published_example():
    scenario, _ = example("10-roll-forward-published-example")
    p = compute_proposal(parse_snapshot(scenario))
    first = p.line_for("e00001")
    assert (first.equal_share, first.chip_equity, first.fee_refund) == (4500, 56250, 300)
    assert p.summary["equal_shares"] == 450000 and p.summary["chip_equity"] == 450000


def test_the_cap_on_or_off_with_the_equal_share_inside_it():
    # In the money with three left: pool 100.00, next prize 20.00 each, E = 40.00, K = 50.00.
    # e1 holds 90% of the chips: 36.00 by chips would take its prize money to 56.00.
    doc = engine_doc(entries=[active(1, 900_000), active(2, 50_000), active(3, 50_000),
                              out(4, finish_place=4)],
                     failed_after="01:00:00",
                     prizes=[{"place": 1, "amount": "50.00"}, {"place": 2, "amount": "30.00"},
                             {"place": 3, "amount": "20.00"}])  # fmt: skip
    on = lines(doc, policy())
    assert on["e1"].capped and (on["e1"].next_prize, on["e1"].chip_equity) == (2000, 3000)
    assert (on["e2"].chip_equity, on["e3"].chip_equity) == (500, 500)
    off = lines(doc, policy(first_place_cap=False))
    assert not off["e1"].capped and [off[e].chip_equity for e in ("e1", "e2", "e3")] == [
        3600,
        200,
        200,
    ]
    # Half of E shared equally: 20.00 / 3 = 6.66, the two cents left to e1 (larger stack) and e2
    # (tied with e3, smaller entry_id); e1's fixed part 26.67 + 18.00 by chips stays under K.
    half = lines(doc, policy(percent_in=50))
    assert [half[e].equal_share for e in ("e1", "e2", "e3", "e4")] == [667, 667, 666, 0]
    assert [half[e].chip_equity for e in ("e1", "e2", "e3")] == [1800, 100, 100]
    assert not half["e1"].capped
    for result in (on, off, half):
        assert (
            sum(ln.next_prize + ln.equal_share + ln.chip_equity for ln in result.values()) == 10000
        )


def test_a_fixed_part_above_first_prize_is_refused_only_under_the_cap():
    # Not yet in the money (three left, two paid places): e1 paid a 50.00 buy-in, first prize
    # is 40.00.
    entries = [active(1, 1000) | {"buy_in_paid": "50.00"}, active(2, 1000), active(3, 1000), out(4)]
    doc = engine_doc(entries=entries, failed_after="01:00:00", buy_in="10.00",
                     prizes=[{"place": 1, "amount": "40.00"}, {"place": 2, "amount": "40.00"}])  # fmt: skip
    with pytest.raises(SnapshotError, match="above first prize") as refused:
        compute_proposal(parse_snapshot(doc), policy=policy())
    assert refused.value.problems[0].field == "entries[0] (e1)"
    uncapped = lines(doc, policy(first_place_cap=False))
    assert uncapped["e1"].buy_in_refund == 5000 and uncapped["e1"].chip_equity == 334
    # The equal share counts in the fixed part: 25% of E (10.00) = 2.50, 0.84 to e1.
    with pytest.raises(SnapshotError, match="guaranteed part and equal share"):
        doc["entries"][0]["buy_in_paid"] = "39.50"
        doc["tournament"]["prizes"][1]["amount"] = "40.00"
        compute_proposal(parse_snapshot(doc), policy=policy(percent_out=25))


def test_the_overlay_stays_with_the_house_only_with_a_guarantee_and_that_policy():
    # Six entries paid 30.00 each (180.00) into a 200.00 guaranteed table.
    entries = [active(1, 3000), active(2, 1000), active(3, 1000), out(4)]
    prizes = [{"place": 1, "amount": "120.00"}, {"place": 2, "amount": "80.00"}]
    doc = engine_doc(entries=entries + [out(5), out(6)], failed_after="01:00:00", prizes=prizes)
    house = policy(returned="nothing", overlay="returned_to_house", first_place_cap=False)
    no_guarantee = compute_proposal(parse_snapshot(doc), policy=house)
    assert no_guarantee.summary["remaining_pool"] == 20000
    doc["tournament"]["guarantee"] = "200.00"
    kept = compute_proposal(parse_snapshot(doc), policy=house)
    assert kept.summary["remaining_pool"] == 6 * 3000 and kept.summary["overlay_kept"] == 2000
    paid = compute_proposal(
        parse_snapshot(doc), policy=policy(returned="nothing", first_place_cap=False)
    )
    assert paid.summary["remaining_pool"] == 20000 and paid.summary["overlay_kept"] == 0


def test_a_full_refund_returns_each_part_in_the_form_paid_or_all_in_cash():
    scenario, _ = example("13-refund-in-the-form-paid")
    as_paid = compute_proposal(parse_snapshot(scenario))
    assert as_paid.line_for("e00001").refunds[0].ticket_id == "TKT-88121"
    assert as_paid.summary["refunds_by_method"] == {
        "cash": sum(ln.total for ln in as_paid.lines) - 5500 * 2 - 3000,
        "ticket": 11000,
        "tournament_money": 3000,
    }
    cash = compute_proposal(parse_snapshot(scenario), policy=policy(refund_form="cash"))
    assert all(ln.refunds is None for ln in cash.lines)
    assert cash.summary["refunds_by_method"] == {"cash": cash.summary["total"]}
    assert [ln.total for ln in cash.lines] == [ln.total for ln in as_paid.lines]


def test_a_full_refund_of_a_knockout_with_rebuys_returns_everything_that_was_paid():
    scenario, _ = example("12-knockout-rebuys-full-refund")
    p = compute_proposal(parse_snapshot(scenario))
    second = p.line_for("e00002")
    assert (second.buy_in_refund, second.fee_refund, second.bounty_refund) == (3000, 300, 500)
    assert p.summary["bounty_refunds"] == sum(ln.bounty_refund for ln in p.lines)


def test_old_proposals_keep_their_fingerprint_and_new_ones_cover_the_policy():
    scenario, _ = example("01-in-the-money")
    p = compute_proposal(parse_snapshot(scenario))
    assert p.policy == LEGACY_POLICY == PRESETS["ultimatepoker-2026"].ref
    c = p.columns
    assert p.has_legacy_form
    assert p.fingerprint() == fingerprint_columns(
        p.external_id, p.currency, p.rule,
        (c.entry_id, c.player_id, c.buy_in_refund, c.next_prize, c.chip_equity, c.fee_refund, c.total),
    )  # fmt: skip
    other = compute_proposal(parse_snapshot(scenario), policy=policy())  # same rules, another id
    assert [ln.total for ln in other.lines] == [ln.total for ln in p.lines]
    assert not other.has_legacy_form and other.fingerprint() != p.fingerprint()
    knockout, _ = example("11-progressive-knockout")
    assert not compute_proposal(parse_snapshot(knockout)).has_legacy_form


def test_the_bounty_conservation_warning_names_the_difference():
    entries = [active(1, 3000) | {"bounty": "15.00", "bounties_won": "5.00"},
               active(2, 1000) | {"bounty": "10.00", "bounties_won": "0.00"},
               out(3, bounties_won="0.00")]  # fmt: skip
    doc = engine_doc(entries=entries, failed_after="01:00:00")
    doc["tournament"]["bounty"] = "10.00"
    # Paid in 30.00; on heads 25.00, won 5.00: conserved.
    assert not any("bount" in w for w in compute_proposal(parse_snapshot(doc)).warnings)
    doc["entries"][0]["bounties_won"] = "2.50"
    (warning,) = [w for w in compute_proposal(parse_snapshot(doc)).warnings if "bount" in w]
    assert "30.00" in warning and "27.50" in warning and "2.50" in warning
    del doc["entries"][2]["bounties_won"]  # not every entry gives it: nothing to check
    assert not any("bount" in w for w in compute_proposal(parse_snapshot(doc)).warnings)


def test_the_summary_reports_the_prizes_already_awarded_under_every_rule():
    entries = [active(1, 3000), active(2, 1000), out(3, finish_place=3, prize_awarded="12.00")]
    prizes = [{"place": 1, "amount": "60.00"}, {"place": 2, "amount": "30.00"}, {"place": 3, "amount": "12.00"}]  # fmt: skip
    for after in ("00:10:00", "01:00:00"):
        for p in PRESETS.values():
            doc = engine_doc(entries=entries, failed_after=after, prizes=prizes)
            summary = compute_proposal(parse_snapshot(doc), policy=p).to_json()["summary"]
            assert summary["prizes_awarded"] == "12.00"


# --------------------------------------------------------------------------------------------
# The command line
# --------------------------------------------------------------------------------------------


def _run(*args):
    out_, err = io.StringIO(), io.StringIO()
    code = main(list(args), stdin=io.TextIOWrapper(io.BytesIO(b"")), stdout=out_, stderr=err)
    return code, out_.getvalue(), err.getvalue()


def test_a_policy_file_overrides_the_snapshots_policy(tmp_path):
    scenario = EXAMPLES / "10-roll-forward-published-example.scenario.json"
    file = tmp_path / "seed.json"
    file.write_text(json.dumps(SEED))
    code, out_, _ = _run(str(scenario), "--policy", str(file))
    doc = json.loads(out_)
    assert code == 0 and doc["policy"]["id"] == "ultimatepoker-2026"
    assert doc["lines"][0]["equal_share"] == "0.00" and doc["lines"][0]["buy_in_refund"] == "30.00"
    code, out_, _ = _run(str(scenario))
    assert json.loads(out_)["policy"] == {"id": "roll-forward-50-50", "version": 1,
                                          "sha256": PRESETS["roll-forward-50-50"].sha256}  # fmt: skip


def test_a_broken_policy_file_is_refused_naming_the_field(tmp_path):
    file = tmp_path / "bad.json"
    file.write_text(json.dumps(SEED | {"full_refund": {"within_minutes": "20"}}))
    code, out_, err = _run(str(EXAMPLES / "01-in-the-money.scenario.json"), "--policy", str(file))
    assert code == 1 and out_ == ""
    assert "full_refund.within_minutes" in err and "full_refund.before_first_elimination" in err
    code, _, err = _run(str(EXAMPLES / "01-in-the-money.scenario.json"), "--policy", "/nowhere")
    assert code == 2 and "/nowhere" in err


def test_an_unknown_policy_id_is_refused_on_stderr(tmp_path):
    scenario, _ = example("01-in-the-money")
    scenario["tournament"]["policy"] = "somebody-elses"
    file = tmp_path / "s.json"
    file.write_text(json.dumps(scenario))
    code, out_, err = _run(str(file))
    assert code == 1 and out_ == "" and "tournament.policy" in err and "somebody-elses" in err


def test_the_command_called_in_process_leaves_the_collector_as_it_was():
    assert gc.isenabled()
    code, _, _ = _run(str(EXAMPLES / "01-in-the-money.scenario.json"))
    assert code == 0 and gc.isenabled()
    gc.disable()
    try:
        _run(str(EXAMPLES / "01-in-the-money.scenario.json"))
        assert not gc.isenabled()
    finally:
        gc.enable()


@pytest.mark.parametrize("name", ["11-progressive-knockout", "13-refund-in-the-form-paid"])
def test_stored_rows_give_the_fingerprint_of_the_policy_form(name):
    """What the app re-checks from stored lines (refunds as payments or as their canonical
    text) is the proposal's own fingerprint."""
    from refunds_admin.payouts.rules import (
        fingerprint_policy_header,
        fingerprint_policy_lines,
        refunds_text,
    )

    scenario, _ = example(name)
    p = compute_proposal(parse_snapshot(scenario))
    c = p.columns
    rows = list(zip(c.entry_id, c.player_id, c.buy_in_refund, c.next_prize, c.equal_share,
                    c.chip_equity, c.fee_refund, c.bounty_refund, c.total, c.refunds))  # fmt: skip
    args = (p.external_id, p.currency, p.rule, p.policy.sha256)
    assert fingerprint_policy_lines(*args, rows) == p.fingerprint()
    as_text = [(*row[:-1], refunds_text(row[-1])) for row in rows]
    assert fingerprint_policy_lines(*args, as_text) == p.fingerprint()
    assert fingerprint_policy_header(*args).endswith(f"|policy:{p.policy.sha256}\n")
    if name.startswith("13"):
        assert refunds_text(p.line_for("e00001").refunds) == "ticket:5500:9:TKT-88121"
        assert refunds_text(p.line_for("e00002").refunds) == (
            "tournament_money:3000:0:;cash:2500:0:"
        )
