"""Any cancellation policy applied to any tournament format (policies.md), to the cent: the
engine against a plain, slow reference written from the spec (tests/support/reference_engine),
and each policy parameter on its own."""

import pytest
from hypothesis import HealthCheck, given, settings

from refunds_admin.payouts import SnapshotError, compute_proposal, parse_policy, parse_snapshot
from refunds_admin.payouts.rules import refunds_json
from tests.support.formats import format_snapshots, policies
from tests.support.reference_engine import ReferenceRefusal, money, reference_proposal

SETTINGS = settings(deadline=None, suppress_health_check=[HealthCheck.too_slow])
AMOUNTS = ("buy_in_refund", "next_prize", "equal_share", "chip_equity", "fee_refund",
           "bounty_refund", "total")  # fmt: skip


def _engine_lines(proposal):
    doc = proposal.to_json()
    return doc["rule"], doc["lines"]


@SETTINGS
@given(format_snapshots(), policies())
def test_it_agrees_with_the_reference_on_any_policy_and_format(doc, policy_doc):
    policy = parse_policy(policy_doc)
    snapshot = parse_snapshot(doc)
    try:
        want = reference_proposal(doc, policy_doc)
    except ReferenceRefusal:
        with pytest.raises(SnapshotError):
            compute_proposal(snapshot, policy=policy)
        return
    proposal = compute_proposal(snapshot, policy=policy)
    rule, lines = _engine_lines(proposal)
    assert rule == want["rule"]
    for got, ref in zip(lines, want["lines"], strict=True):
        assert got["entry_id"] == ref["entry_id"]
        for key in AMOUNTS:
            assert got[key] == money(ref[key]), (ref["entry_id"], key)
        assert got["capped"] == ref["capped"], ref["entry_id"]
        if "refunds" in ref:
            assert got["refunds"] == [p | {"amount": money(p["amount"])} for p in ref["refunds"]]
        else:
            assert "refunds" not in got
    assert proposal.summary["total"] == sum(ln.total for ln in proposal.lines)
    assert proposal.policy == policy.ref


@SETTINGS
@given(format_snapshots(minutes=90), policies())
def test_rule_two_hands_out_exactly_the_pool_and_refunds_what_was_paid(doc, policy_doc):
    policy = parse_policy(policy_doc)
    try:
        p = compute_proposal(parse_snapshot(doc), policy=policy)
    except SnapshotError:
        return
    s = p.summary
    if p.rule == "full_refund":
        assert s["total"] == s["buy_in_refunds"] + s["fee_refunds"] + s["bounty_refunds"]
        assert sum(s["refunds_by_method"].values()) == s["total"]
        return
    prize_money = sum(ln.buy_in_refund + ln.next_prize + ln.equal_share + ln.chip_equity
                      for ln in p.lines)  # fmt: skip
    assert prize_money == s["remaining_pool"]
    assert sum(ln.equal_share for ln in p.lines) == s["equal_shares"]
    assert s["total"] == s["remaining_pool"] + s["fee_refunds"] + s["bounty_refunds"]
    assert s["refunds_by_method"] == ({"cash": s["total"]} if s["total"] else {})
    if policy.first_place_cap:
        k = s["first_place_cap"]
        assert all(ln.buy_in_refund + ln.next_prize + ln.equal_share + ln.chip_equity <= k
                   for ln in p.lines)  # fmt: skip
    assert all(ln.refunds is None for ln in p.lines)  # rule 2 pays in cash


@SETTINGS
@given(format_snapshots())
def test_the_fingerprint_covers_the_policy_hash(doc):
    snapshot = parse_snapshot(doc)
    a = parse_policy(_preset_like(doc, within_minutes=None))
    b = parse_policy(_preset_like(doc, within_minutes=None) | {"version": 2})
    try:
        pa, pb = compute_proposal(snapshot, policy=a), compute_proposal(snapshot, policy=b)
    except SnapshotError:
        return
    assert pa.to_json()["lines"] == pb.to_json()["lines"]  # the same amounts...
    assert pa.fingerprint() != pb.fingerprint()  # ...under two versions of the policy


def _preset_like(doc, **full_refund):
    return {
        "format": "cancellation-policy/1", "id": "house", "version": 1, "title": "House",
        "management_finding": "Management chose to roll the tournament back",
        "full_refund": {"within_minutes": 20, "before_first_elimination": False} | full_refund,
        "not_in_the_money": {"returned": "nothing", "equal_share_percent": 50},
        "in_the_money": {"equal_share_percent": 0},
        "first_place_cap": False, "overlay": "paid", "refund_form": "as_paid",
    }  # fmt: skip


def test_refunds_json_writes_a_ticket_with_its_id():
    from refunds_admin.payouts import Payment

    assert refunds_json([Payment("ticket", 5500, "T-1"), Payment("cash", 5, None)]) == [
        {"method": "ticket", "amount": "55.00", "ticket_id": "T-1"},
        {"method": "cash", "amount": "0.05"},
    ]


def test_the_command_line_says_how_to_compute_under_a_policy_it_does_not_ship(tmp_path):
    """Found by the second operator's trial: a snapshot naming the operator's own policy
    (approved in the app) was refused by compute_payouts with "'acme-poker-2027' is not a
    policy this app knows", though the app knows it: the command line runs without the
    database and knows only the shipped presets. It now says so and names --policy."""
    import io
    import json
    from pathlib import Path

    from refunds_admin.payouts.cli import main

    examples = Path(__file__).resolve().parent.parent / "data" / "examples"
    doc = json.loads((examples / "10-roll-forward-published-example.scenario.json").read_text())
    doc["tournament"]["policy"] = "acme-poker-2027"
    path = tmp_path / "snapshot.json"
    path.write_text(json.dumps(doc))
    out, err = io.StringIO(), io.StringIO()
    assert main([str(path)], stdout=out, stderr=err) == 1
    assert "tournament.policy" in err.getvalue()
    assert "--policy" in err.getvalue() and "shipped presets" in err.getvalue()
