"""A player's statement for each way a tournament ends: the policy's layout, to the cent."""

from refunds_admin.payouts import compute_proposal, explain, parse_policy, parse_snapshot
from tests.support.factories import active, engine_doc, out, policy_doc

ENTRIES = [active(1, 3000), active(2, 1000), out(3)]


def _explain(doc, entry_id):
    return explain(compute_proposal(parse_snapshot(doc)), entry_id)


def test_it_explains_the_full_refund_of_an_early_failure_with_the_elapsed_time():
    text = _explain(engine_doc(entries=ENTRIES, failed_after="00:12:30"), "e1")
    assert text == (
        "Tournament T-1 Test: cancelled\n"
        "Entry e1, player p1\n"
        "Payout rule: Rule 1: full refund\n"
        "Policy: UltimatePoker.com tournament cancellation policy (ultimatepoker-2026, version 1)\n"
        "\n"
        "The tournament failed 12 min 30 s after the start, within 20 minutes: every registered"
        " entry is refunded its buy-in and fee.\n"
        "\n"
        "Your payout:\n"
        "Buy in refund\t$30.00\n"
        "Refund of tournament fee\t$3.00\n"
        "Total paid out\t$33.00"
    )


def test_it_explains_a_failure_before_play_began_to_an_eliminated_entry_too():
    doc = engine_doc(entries=ENTRIES)
    doc["incident"]["failed_at"] = "2026-11-29T17:55:00Z"  # five minutes before the start
    text = _explain(doc, "e3")
    assert "The tournament failed before play began: every registered entry is refunded" in text
    assert text.endswith("Total paid out\t$33.00")


def test_it_explains_a_site_wide_issue_as_managements_finding():
    text = _explain(engine_doc(entries=ENTRIES, failed_after="01:00:00", site_wide=True), "e2")
    assert "Site issues impaired play throughout the tournament, in management's finding" in text
    assert "after the start" not in text
    assert text.endswith("Total paid out\t$33.00")


def test_it_tells_an_eliminated_entry_it_gets_nothing_under_rule_2():
    text = _explain(engine_doc(entries=ENTRIES + [active(4, 500)], failed_after="01:00:00"), "e3")
    assert "Total prize pool\t$90.00" in text
    assert "This entry was eliminated before the tournament was cancelled: no refund." in text
    assert text.endswith("Total paid out\t$0.00")


def test_it_sums_the_buy_in_refunds_when_entries_paid_different_buy_ins():
    # e2 came in on a 10.00 discount seat: 30 + 10 + 30 = 70.00 is no "X for each" amount.
    entries = [active(1, 3000), active(2, 1000) | {"buy_in_paid": "10.00"}, active(4, 500)]
    text = _explain(engine_doc(entries=entries, failed_after="01:00:00"), "e2")
    assert "Buy-in refunds to the 3 players remaining\t$70.00" in text
    assert "Amount remaining for chip equity disbursement\t$20.00" in text
    # Exact shares 13.333..., 4.444... and 2.222...: the floors leave one cent, which goes to
    # the largest remainder, e2's.
    assert "Your share of remaining amount (1,000/4,500 X $20)\t$4.45" in text
    assert "Buy in refund\t$10.00" in text
    assert text.endswith("Total paid out\t$17.45")


def test_it_never_claims_an_amount_for_each_when_the_buy_ins_differ_but_divide_evenly():
    # 30 + 0 + 30 = 60.00 divides by 3, yet nobody was refunded 20.00.
    entries = [active(1, 3000), active(2, 1000) | {"buy_in_paid": "0.00"}, active(4, 500)]
    text = _explain(engine_doc(entries=entries, failed_after="01:00:00"), "e1")
    assert "for each of the 3 players" not in text
    assert "Buy-in refunds to the 3 players remaining\t$60.00" in text


def test_it_says_how_the_policy_divides_the_amount_remaining():
    """The default policy gives the amount remaining by chip equity, and its statement says
    "Amount remaining for chip equity disbursement"; a policy that shares some of it equally
    says so, as the approval page's sentence does (rule_sentence)."""
    entries = [active(1, 3000), active(2, 1000), active(4, 500), out(3)]
    prizes = [{"place": 1, "amount": "150.00"}, {"place": 2, "amount": "60.00"}]
    doc = engine_doc(entries=entries, prizes=prizes, failed_after="01:00:00")
    default = _explain(doc, "e1")
    assert "Amount remaining for chip equity disbursement\t$120.00" in default
    assert "equal share" not in default.lower()

    def under(policy):
        return explain(compute_proposal(parse_snapshot(doc), policy=policy), "e1")

    half = under(parse_policy(policy_doc("roll-forward-50-50")))
    assert "Amount remaining, 50% in equal shares and 50% by chip equity\t$210.00" in half
    assert "chip equity disbursement" not in half
    assert "Your equal share (50% of $210.00 shared equally among 3 players)\t$35.00" in half
    quarter = under(parse_policy(policy_doc(**{"not_in_the_money.equal_share_percent": 25})))
    assert "Amount remaining, 25% in equal shares and 75% by chip equity\t" in quarter
    everything = under(parse_policy(policy_doc(**{"not_in_the_money.equal_share_percent": 100})))
    assert "Amount remaining, all in equal shares\t$210.00" in everything
    assert "chip equity disbursement" not in everything
    # In the money, the policy's in-the-money share: buy-in-back-50-50 shares half equally.
    itm = engine_doc(
        entries=[active(1, 3000), active(2, 1000), out(3)], prizes=prizes, failed_after="01:00:00"
    )
    in_money = explain(
        compute_proposal(parse_snapshot(itm), policy=parse_policy(policy_doc("buy-in-back-50-50"))),
        "e1",
    )
    assert "Payout rule: Rule 2: in the money" in in_money
    assert "Amount remaining, 50% in equal shares and 50% by chip equity\t$90.00" in in_money


class _CountedColumn(list):
    """A column that counts the passes made over it."""

    passes = 0

    def __iter__(self):
        type(self).passes += 1
        return super().__iter__()


def test_statements_for_every_entry_read_the_whole_proposal_once_not_per_statement():
    # A posting sends every player their statement from one engine proposal: a pass over all
    # its lines per statement made 100k statements quadratic (5 minutes instead of 50 s).
    for failed_after in ("00:12:30", "01:00:00"):  # rule 1 and rule 2
        proposal = compute_proposal(
            parse_snapshot(engine_doc(entries=ENTRIES, failed_after=failed_after))
        )
        c = proposal.columns
        proposal.columns = c._replace(
            status=_CountedColumn(c.status),
            buy_in_refund=_CountedColumn(c.buy_in_refund),
            bounty_refund=_CountedColumn(c.bounty_refund),
        )
        _CountedColumn.passes = 0
        texts = [explain(proposal, entry_id) for entry_id in ("e1", "e2", "e3") * 10]
        assert texts[:3] == [_explain(engine_doc(entries=ENTRIES, failed_after=failed_after), e)
                             for e in ("e1", "e2", "e3")]  # fmt: skip
        assert _CountedColumn.passes <= 2, _CountedColumn.passes


def test_it_says_where_the_equal_pools_cents_left_over_go_in_good_english():
    # 210.01 in equal shares among 3: 70.00 each and one cent left, to the largest stack (e1).
    entries = [active(1, 3000), active(2, 1000), active(4, 500), out(3)]
    prizes = [{"place": 1, "amount": "150.01"}, {"place": 2, "amount": "60.00"}]
    doc = engine_doc(entries=entries, prizes=prizes, failed_after="01:00:00")
    policy = parse_policy(policy_doc(**{"not_in_the_money.equal_share_percent": 100}))
    text = explain(compute_proposal(parse_snapshot(doc), policy=policy), "e1")
    assert (
        "100% of $210.01 shared equally among 3 players: $70.00 "
        "(the 1 cent left over goes to the largest stack)\t$210.01"
    ) in text
    assert "Your equal share (100% of $210.01 shared equally among 3 players)\t$70.01" in text
    assert "1 cents" not in text
