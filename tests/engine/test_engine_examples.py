"""The worked examples of ../shared/examples, copied into tests/data/examples, to the cent."""

import io
import json

import pytest

from refunds_admin.payouts import SnapshotError, compute_proposal, explain, parse_snapshot
from refunds_admin.payouts.cli import main
from refunds_admin.payouts.policy import PRESETS, parse_policy
from tests.support.factories import EXAMPLES, example

NAMES = sorted(p.name.removesuffix(".scenario.json") for p in EXAMPLES.glob("*.scenario.json"))
FIELDS = ("buy_in_refund", "next_prize", "chip_equity", "fee_refund", "total")
# Compared too where the expected line gives them (policies.md, examples 10-18).
MORE = ("equal_share", "bounty_refund", "refunds")


def test_it_has_all_eighteen_examples():
    assert len(NAMES) == 18


def _policy_of(name):
    path = EXAMPLES / f"{name}.policy.json"
    return parse_policy(path.read_bytes()) if path.exists() else None


@pytest.mark.parametrize("name", NAMES)
def test_it_reproduces_each_worked_example(name):
    scenario, expected = example(name)
    policy = _policy_of(name)
    known = None if policy else PRESETS.keys()
    if "error" in expected:
        with pytest.raises(SnapshotError):
            compute_proposal(parse_snapshot(scenario, known_policies=known), policy=policy)
        return
    doc = compute_proposal(parse_snapshot(scenario, known_policies=known), policy=policy).to_json()
    assert doc["rule"] == expected["rule"]
    for got, want in zip(doc["lines"], expected["lines"], strict=True):
        assert got["entry_id"] == want["entry_id"]
        for f in FIELDS + tuple(m for m in MORE if m in want):
            assert got[f] == want[f], (want["entry_id"], f)
        if "refunds" not in want and name >= "10":
            assert "refunds" not in got, want["entry_id"]


@pytest.mark.parametrize("name", [n for n in NAMES if n >= "10"])
def test_the_command_line_agrees_with_each_policy_example(name):
    scenario, expected = example(name)
    args = [str(EXAMPLES / f"{name}.scenario.json")]
    if (EXAMPLES / f"{name}.policy.json").exists():
        args += ["--policy", str(EXAMPLES / f"{name}.policy.json")]
    code, out, err = _run(*args)
    if "error" in expected:
        assert code == 1 and out == "" and err.strip()
        return
    assert code == 0, err
    doc = json.loads(out)
    assert doc["rule"] == expected["rule"]
    assert [ln["total"] for ln in doc["lines"]] == [ln["total"] for ln in expected["lines"]]


def test_the_published_roll_forward_example_reads_like_the_policy():
    scenario, _ = example("10-roll-forward-published-example")
    text = explain(compute_proposal(parse_snapshot(scenario)), "e00001")
    assert "Policy: Roll forward" in text and "(roll-forward-50-50, version 1)" in text
    assert "50% of $9,000.00 shared equally among 100 players: $45.00\t$4,500.00" in text
    assert "Your share of remaining amount (37,500/300,000 X $4,500)\t$562.50" in text
    assert "Refund of tournament fee\t$3.00" in text
    assert text.endswith("Total paid out\t$610.50")


def test_a_player_left_in_a_knockout_is_told_the_bounty_on_their_head():
    scenario, _ = example("11-progressive-knockout")
    text = explain(compute_proposal(parse_snapshot(scenario)), "e00010")
    assert "The bounty on your head\t$33.13" in text
    assert text.endswith("Total paid out\t$60.98")


def test_a_ticket_comes_back_as_that_ticket_in_the_statement():
    scenario, _ = example("13-refund-in-the-form-paid")
    proposal = compute_proposal(parse_snapshot(scenario))
    assert "Ticket TKT-88121 returned\t$55.00" in explain(proposal, "e00001")
    text = explain(proposal, "e00002")
    assert "Tournament money returned\t$30.00" in text and "Cash\t$25.00" in text
    assert "returned" not in explain(proposal, "e00003")  # paid in cash: nothing to list


def test_it_pays_the_policy_example_player_815_33():
    scenario, _ = example("01-in-the-money")
    text = explain(compute_proposal(parse_snapshot(scenario)), "e00001")
    assert "Your share of remaining amount (48,200/1,500,000 X $17,500)\t$562.33" in text
    assert "Next prize payout\t$250.00" in text
    assert "Refund of tournament fee\t$3.00" in text
    assert "Total paid out\t$815.33" in text
    assert "$250 for each of the 50 players remaining\t$12,500.00" in text


def test_it_pays_the_policy_example_player_543_00():
    scenario, _ = example("02-not-in-the-money")
    text = explain(compute_proposal(parse_snapshot(scenario)), "e00001")
    assert "Your share of remaining amount (30,000/1,500,000 X $25,500)\t$510.00" in text
    assert "Buy in refund\t$30.00" in text
    assert "Total paid out\t$543.00" in text
    assert "$30 buy-in refund for each of the 150 players remaining\t$4,500.00" in text


def _run(*args, stdin=b""):
    out, err = io.StringIO(), io.StringIO()
    fake_stdin = io.TextIOWrapper(io.BytesIO(stdin))
    code = main(list(args), stdin=fake_stdin, stdout=out, stderr=err)
    return code, out.getvalue(), err.getvalue()


def test_it_prints_proposal_json_from_the_command_line():
    code, out, err = _run(str(EXAMPLES / "01-in-the-money.scenario.json"))
    assert code == 0 and err == ""
    doc = json.loads(out)
    assert doc["format"] == "payout-proposal/1"
    assert doc["lines"][0]["total"] == "815.33"
    assert doc["summary"]["total"] == "30150.00"


def test_it_reads_the_snapshot_from_stdin():
    raw = (EXAMPLES / "02-not-in-the-money.scenario.json").read_bytes()
    code, out, _ = _run("-", stdin=raw)
    assert code == 0
    assert json.loads(out)["lines"][0]["total"] == "543.00"


def test_it_refuses_on_stderr_with_nothing_on_stdout():
    code, out, err = _run(str(EXAMPLES / "07-refused-float-amount.scenario.json"))
    assert code == 1 and out == ""
    assert "tournament.fee" in err and "string" in err


def test_it_explains_one_entry_from_the_command_line():
    code, out, _ = _run(str(EXAMPLES / "01-in-the-money.scenario.json"), "--explain", "e00001")
    assert code == 0 and "Total paid out\t$815.33" in out


def test_it_says_when_the_explained_entry_does_not_exist():
    code, out, err = _run(str(EXAMPLES / "01-in-the-money.scenario.json"), "--explain", "nobody")
    assert code != 0 and "nobody" in err and out == ""


def test_it_adds_the_fingerprint_when_asked():
    code, out, _ = _run(str(EXAMPLES / "05-first-place-cap.scenario.json"), "--fingerprint")
    scenario, _ = example("05-first-place-cap")
    assert (
        json.loads(out)["fingerprint"] == compute_proposal(parse_snapshot(scenario)).fingerprint()
    )


def test_it_runs_as_manage_py_command(tmp_path):
    import subprocess
    import sys

    res = subprocess.run(
        [
            sys.executable,
            "manage.py",
            "compute_payouts",
            str(EXAMPLES / "08-refused-two-active-entries.scenario.json"),
        ],
        capture_output=True,
        text=True,
    )
    assert res.returncode == 1 and res.stdout == ""
    assert "two active entries" in res.stderr
