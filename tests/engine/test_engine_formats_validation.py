"""What policies.md refuses, each named by its entry and field: a policy with a wrong field, and
snapshots whose knockout, rebuy, paid_with or policy fields are broken. Nothing is computed."""

import copy
import json
from unittest import mock

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import refunds_admin.payouts.snapshot as snapshot_module
from refunds_admin.payouts import (
    PRESETS,
    PolicyError,
    SnapshotError,
    compute_proposal,
    parse_policy,
    parse_snapshot,
)
from refunds_admin.payouts.snapshot import (
    EntryColumns,
    _parse_entries_in_bulk,
    _parse_entries_one_by_one,
    _Problems,
)
from tests.support.factories import active, engine_doc, out
from tests.support.formats import format_snapshots

SETTINGS = settings(deadline=None, suppress_health_check=[HealthCheck.too_slow])
SEED = json.loads(json.dumps(PRESETS["ultimatepoker-2026"].document()))


def policy_refusal(mutate):
    doc = copy.deepcopy(SEED)
    mutate(doc)
    with pytest.raises(PolicyError) as refused:
        parse_policy(doc)
    return [p.field for p in refused.value.problems]


@pytest.mark.parametrize(
    "mutate, field",
    [
        (lambda d: d.update(colour="blue"), "colour"),
        (lambda d: d["full_refund"].update(hours=1), "full_refund.hours"),
        (lambda d: d["full_refund"].pop("within_minutes"), "full_refund.within_minutes"),
        (lambda d: d.pop("refund_form"), "refund_form"),
        (lambda d: d["full_refund"].update(within_minutes=-1), "full_refund.within_minutes"),
        (lambda d: d["full_refund"].update(within_minutes="20"), "full_refund.within_minutes"),
        (lambda d: d["full_refund"].update(within_minutes=20.0), "full_refund.within_minutes"),
        (lambda d: d["full_refund"].update(within_minutes=True), "full_refund.within_minutes"),
        (
            lambda d: d["full_refund"].update(before_first_elimination="no"),
            "full_refund.before_first_elimination",
        ),
        (lambda d: d["not_in_the_money"].update(returned="half"), "not_in_the_money.returned"),
        (
            lambda d: d["not_in_the_money"].update(equal_share_percent=101),
            "not_in_the_money.equal_share_percent",
        ),
        (
            lambda d: d["in_the_money"].update(equal_share_percent=-1),
            "in_the_money.equal_share_percent",
        ),
        (lambda d: d.update(in_the_money=[]), "in_the_money"),
        (lambda d: d.update(first_place_cap="yes"), "first_place_cap"),
        (lambda d: d.update(overlay="kept"), "overlay"),
        (lambda d: d.update(refund_form="cheque"), "refund_form"),
        (lambda d: d.update(id="Bad_Id"), "id"),
        (lambda d: d.update(id="x" * 64), "id"),
        (lambda d: d.update(version=0), "version"),
        (lambda d: d.update(version="1"), "version"),
        (lambda d: d.update(format="cancellation-policy/2"), "format"),
        (lambda d: d.update(title=""), "title"),
        (lambda d: d.update(management_finding=None), "management_finding"),
    ],
)
def test_a_policy_with_a_wrong_field_is_refused_naming_it(mutate, field):
    assert field in policy_refusal(mutate)


def test_a_policy_names_every_wrong_field_at_once():
    def mutate(d):
        d["full_refund"].pop("within_minutes")
        d["overlay"] = "kept"

    assert policy_refusal(mutate) == ["overlay", "full_refund.within_minutes"]


def test_a_policy_file_that_is_not_json_or_gives_a_field_twice_is_refused():
    with pytest.raises(PolicyError, match="not valid JSON"):
        parse_policy(b"{")
    text = json.dumps(SEED)[:-1] + ', "overlay": "paid"}'
    with pytest.raises(PolicyError) as refused:
        parse_policy(text)
    assert refused.value.problems[0].field == "overlay"


def test_the_presets_are_the_table_of_policies_md():
    seed = PRESETS["ultimatepoker-2026"]
    assert (seed.within_minutes, seed.before_first_elimination) == (20, False)
    assert seed.not_in_the_money_returned == "buy_in_and_rebuys" and seed.first_place_cap
    assert seed.management_finding == "General site issues impaired player performance throughout"
    roll = PRESETS["roll-forward-50-50"]
    assert (roll.within_minutes, roll.before_first_elimination) == (None, False)
    assert (roll.not_in_the_money_returned, roll.not_in_the_money_equal_share_percent) == (
        "nothing",
        50,
    )
    assert (roll.in_the_money_equal_share_percent, roll.first_place_cap) == (0, False)
    bust = PRESETS["rollback-before-first-bust"]
    assert (bust.within_minutes, bust.before_first_elimination) == (None, True)
    assert bust.overlay == "returned_to_house" and bust.not_in_the_money_returned == "nothing"
    back = PRESETS["buy-in-back-50-50"]
    assert back.not_in_the_money_returned == "buy_in"
    assert (back.not_in_the_money_equal_share_percent, back.in_the_money_equal_share_percent) == (
        50,
        50,
    )
    for policy in PRESETS.values():
        assert policy.version == 1 and policy.refund_form == "as_paid"
        if policy.id != "ultimatepoker-2026":
            assert policy.management_finding == "Management chose to roll the tournament back"
            assert policy.overlay == ("returned_to_house" if policy is bust else "paid")


def test_the_hash_is_of_the_canonical_json_keys_sorted_without_spaces():
    import hashlib

    policy = PRESETS["roll-forward-50-50"]
    canonical = policy.canonical_json()
    assert canonical == json.dumps(
        policy.document(), sort_keys=True, separators=(",", ":"), ensure_ascii=False
    ).encode("utf-8")
    assert canonical.startswith(b'{"first_place_cap":false,"format":"cancellation-policy/1"')
    assert policy.sha256 == hashlib.sha256(canonical).hexdigest()
    assert parse_policy(canonical) == policy  # the canonical form reads back as the same policy
    other = parse_policy(policy.document() | {"title": "Ça roule"})
    assert "Ça roule".encode() in other.canonical_json()  # UTF-8, not \\u escapes
    assert other.sha256 != policy.sha256


# --------------------------------------------------------------------------------------------
# Snapshots
# --------------------------------------------------------------------------------------------


def knockout(entries, bounty="10.00", **extra):
    doc = engine_doc(entries=entries, failed_after="01:00:00", **extra)
    doc["tournament"]["bounty"] = bounty
    return doc


def refused_fields(doc, **kwargs):
    with pytest.raises(SnapshotError) as refused:
        parse_snapshot(doc, **kwargs)
    return [p.field for p in refused.value.problems]


@pytest.mark.parametrize("key", ["bounty_paid", "bounty", "bounties_won"])
def test_a_bounty_field_without_a_knockout_tournament_is_refused(key):
    doc = engine_doc(entries=[active(1, 3000), active(2, 1000) | {key: "5.00"}])
    assert refused_fields(doc) == [f"entries[1] (e2).{key}"]


def test_a_bounty_on_an_eliminated_entry_is_refused():
    doc = knockout([active(1, 3000), active(2, 1000), out(3, bounty="10.00")])
    assert refused_fields(doc) == ["entries[2] (e3).bounty"]


@pytest.mark.parametrize(
    "key, value",
    [
        ("rebuys_paid", "1.234"),
        ("rebuys_paid", 30),
        ("rebuy_fees_paid", "-3.00"),
        ("rebuy_fees_paid", None),
        ("bounty_paid", "ten"),
        ("bounty", "1e3"),
        ("bounties_won", " 5.00"),
    ],
)
def test_a_malformed_amount_in_a_format_field_is_refused(key, value):
    doc = knockout([active(1, 3000), active(2, 1000) | {key: value}])
    assert refused_fields(doc) == [f"entries[1] (e2).{key}"]


@pytest.mark.parametrize("key", ["bounty", "guarantee"])
def test_a_malformed_tournament_bounty_or_guarantee_is_refused(key):
    doc = engine_doc(entries=[active(1, 3000), active(2, 1000)])
    doc["tournament"][key] = 10
    assert refused_fields(doc) == [f"tournament.{key}"]


def paying(*payments, **entry):
    return active(2, 1000) | {"paid_with": list(payments)} | entry


def test_paid_with_must_add_up_to_everything_the_entry_paid():
    # 30.00 buy-in + 3.00 fee + 30.00 rebuy + 3.00 rebuy fee + 10.00 bounty = 76.00
    entry = paying(
        {"method": "cash", "amount": "50.00"},
        {"method": "ticket", "amount": "25.00", "ticket_id": "T-1"},
        rebuys_paid="30.00",
        rebuy_fees_paid="3.00",
    )
    doc = knockout([active(1, 3000), entry])
    with pytest.raises(SnapshotError) as refused:
        parse_snapshot(doc)
    (problem,) = refused.value.problems
    assert problem.field == "entries[1] (e2).paid_with"
    assert "75.00" in problem.message and "76.00" in problem.message
    doc["entries"][1]["paid_with"][0]["amount"] = "51.00"
    assert parse_snapshot(doc).columns.paid_with[1][1].ticket_id == "T-1"


@pytest.mark.parametrize(
    "payments, field",
    [
        ([{"method": "voucher", "amount": "33.00"}], "entries[1] (e2).paid_with[0].method"),
        ([{"method": ["cash"], "amount": "33.00"}], "entries[1] (e2).paid_with[0].method"),
        ([{"method": {"cash": 1}, "amount": "33.00"}], "entries[1] (e2).paid_with[0].method"),
        ([{"amount": "33.00"}], "entries[1] (e2).paid_with[0].method"),
        ([{"method": "cash"}], "entries[1] (e2).paid_with[0].amount"),
        ([{"method": "cash", "amount": 33}], "entries[1] (e2).paid_with[0].amount"),
        ([{"method": "ticket", "amount": "33.00"}], "entries[1] (e2).paid_with[0].ticket_id"),
        (
            [{"method": "ticket", "amount": "33.00", "ticket_id": " "}],
            "entries[1] (e2).paid_with[0].ticket_id",
        ),
        (
            [{"method": "ticket", "amount": "33.00", "ticket_id": 7}],
            "entries[1] (e2).paid_with[0].ticket_id",
        ),
        (
            [{"method": "cash", "amount": "33.00", "ticket_id": "T-1"}],
            "entries[1] (e2).paid_with[0].ticket_id",
        ),
        (
            [{"method": "cash", "amount": "33.00", "note": "x"}],
            "entries[1] (e2).paid_with[0].note",
        ),
        (["cash"], "entries[1] (e2).paid_with[0]"),
        ({"method": "cash", "amount": "33.00"}, "entries[1] (e2).paid_with"),
        (None, "entries[1] (e2).paid_with"),
    ],
)
def test_a_broken_payment_is_refused_naming_the_entry_and_field(payments, field):
    entry = active(2, 1000) | {"paid_with": payments}
    doc = engine_doc(entries=[active(1, 3000), entry])
    assert field in refused_fields(doc)


def test_one_ticket_pays_for_one_entry():
    ticket = {"method": "ticket", "amount": "33.00", "ticket_id": "TKT-1"}
    doc = engine_doc(
        entries=[
            active(1, 3000) | {"paid_with": [ticket]},
            active(2, 1000) | {"paid_with": [ticket]},
        ]
    )
    assert refused_fields(doc) == ["entries[1] (e2).paid_with[0].ticket_id"]
    half = {"method": "ticket", "amount": "16.50", "ticket_id": "TKT-2"}
    doc = engine_doc(entries=[active(1, 3000) | {"paid_with": [half, half]}, active(2, 1000)])
    assert refused_fields(doc) == ["entries[0] (e1).paid_with[1].ticket_id"]


def test_an_unknown_tournament_policy_is_refused():
    doc = engine_doc(entries=[active(1, 3000), active(2, 1000)])
    doc["tournament"]["policy"] = "pokerstars-2031"
    assert refused_fields(doc, known_policies=PRESETS.keys()) == ["tournament.policy"]
    # Without the list, the id is read; computing it without such a preset is refused too.
    snapshot = parse_snapshot(doc)
    assert snapshot.policy_id == "pokerstars-2031"
    with pytest.raises(SnapshotError, match="tournament.policy"):
        compute_proposal(snapshot)
    doc["tournament"]["policy"] = "roll-forward-50-50"
    assert parse_snapshot(doc, known_policies=PRESETS.keys()).policy_id == "roll-forward-50-50"
    for bad in (7, "", "Roll Forward"):
        doc["tournament"]["policy"] = bad
        assert refused_fields(doc) == ["tournament.policy"]


def test_every_problem_of_a_formats_snapshot_is_named_at_once():
    doc = engine_doc(
        entries=[
            active(1, 3000) | {"bounty": "1.00"},
            active(2, 1000)
            | {"rebuys_paid": "x", "paid_with": [{"method": "gold", "amount": "1"}]},
        ]
    )
    doc["tournament"]["policy"] = "nope"
    fields = refused_fields(doc, known_policies=PRESETS.keys())
    assert fields == [
        "tournament.policy",
        "entries[0] (e1).bounty",
        "entries[1] (e2).rebuys_paid",
        "entries[1] (e2).paid_with[0].method",
    ]


def test_the_new_fields_are_read_with_their_defaults():
    doc = knockout(
        [
            active(1, 3000) | {"bounty": "25.00", "bounties_won": "5.00"},
            active(2, 1000) | {"bounty_paid": "0.00", "rebuys_paid": "30", "rebuy_fees_paid": "3"},
            out(3, bounties_won="0.00"),
        ]
    )
    doc["tournament"]["guarantee"] = "100.00"
    s = parse_snapshot(doc)
    c = s.columns
    assert (s.bounty, s.guarantee, s.policy_id) == (1000, 10000, None)
    assert c.bounty_paid == [1000, 0, 1000]
    assert c.bounty == [2500, 0, 0]  # active: given or what was paid; eliminated: none
    assert c.bounties_won == [500, None, 0]
    assert c.rebuys_paid == [0, 3000, 0] and c.rebuy_fees_paid == [0, 300, 0]
    assert c.paid_with == [None, None, None]
    assert s.is_knockout and s.has_rebuys and not s.has_paid_with
    assert s.uses("guarantee") and not s.uses("paid_with")
    plain = parse_snapshot(engine_doc(entries=[active(1, 3000), active(2, 1000)]))
    assert not (plain.is_knockout or plain.has_rebuys or plain.has_paid_with)
    assert plain.columns.bounty_paid == [0, 0] and plain.columns.bounties_won == [None, None]


@SETTINGS
@given(format_snapshots(), st.integers(1, 3))
def test_the_bulk_path_reads_the_format_fields_as_the_entry_by_entry_path(doc, block):
    """Column-wise or entry by entry, the same columns: the bulk path only ever accepts. Read
    a block of entries at a time (_BLOCK), blocks of any size give the same columns."""
    raw = doc["entries"]
    t = doc["tournament"]
    buy_in, fee = (int(t[k].replace(".", "")) for k in ("buy_in", "fee"))
    bounty = int(t["bounty"].replace(".", "")) if "bounty" in t else None
    bulk = _parse_entries_in_bulk(raw, buy_in, fee, bounty)
    problems = _Problems()
    slow = _parse_entries_one_by_one(raw, buy_in, fee, problems, bounty)
    assert not problems
    assert bulk is not None  # a valid snapshot stays on the fast path
    assert bulk == EntryColumns.from_entries(slow)
    with mock.patch.object(snapshot_module, "_BLOCK", block):
        assert _parse_entries_in_bulk(raw, buy_in, fee, bounty) == bulk


BAD_AMOUNTS = ["1.234", 5, None, "-1.00", "1e2", "", " 1.00", "\uff11.00", True, [], "1.00\n"]


@st.composite
def broken_format_snapshots(draw):
    """A valid formats snapshot broken in one entry, and the field the refusal must name."""
    doc = draw(format_snapshots())
    entries = doc["entries"]
    i = draw(st.integers(0, len(entries) - 1))
    e = entries[i]
    label = f"entries[{i}] ({e['entry_id']})"
    knockout = "bounty" in doc["tournament"]
    breaks = ["amount", "paid_with_sum", "method", "ticket", "payment_key", "paid_with_type"]
    if not knockout:
        breaks.append("bounty_without_knockout")
    elif e["status"] == "eliminated":
        breaks.append("bounty_on_eliminated")
    how = draw(st.sampled_from(breaks))
    if how == "amount":
        keys = ["rebuys_paid", "rebuy_fees_paid"] + (
            ["bounty_paid", "bounties_won"] + (["bounty"] if e["status"] == "active" else [])
            if knockout
            else []
        )
        key = draw(st.sampled_from(keys))
        e[key] = draw(st.sampled_from(BAD_AMOUNTS))
        e.pop("paid_with", None)
        return doc, f"{label}.{key}"
    if how == "bounty_without_knockout":
        key = draw(st.sampled_from(["bounty_paid", "bounty", "bounties_won"]))
        e[key] = "1.00"
        return doc, f"{label}.{key}"
    if how == "bounty_on_eliminated":
        e["bounty"] = "1.00"
        return doc, f"{label}.bounty"
    if not e.get("paid_with"):
        e["paid_with"] = [{"method": "cash", "amount": _money(_owed(doc["tournament"], e))}]
    payments = e["paid_with"]
    j = draw(st.integers(0, len(payments) - 1))
    p = payments[j]
    where = f"{label}.paid_with"
    if how == "paid_with_sum":
        p["amount"] = money_plus_one(p["amount"])
        return doc, where
    if how == "method":
        p["method"] = draw(st.sampled_from(["voucher", "Cash", None, 1]))
        return doc, f"{where}[{j}].method"
    if how == "ticket":
        p["method"] = "ticket"
        choice = draw(st.sampled_from(["missing", "blank", "number", "twice"]))
        if choice == "missing":
            p.pop("ticket_id", None)
        elif choice == "blank":
            p["ticket_id"] = "  "
        elif choice == "number":
            p["ticket_id"] = 12
        else:
            others = [o for k, o in enumerate(entries) if k < i]
            if not others:
                p["ticket_id"] = "  "
            else:
                other = others[0]
                other.setdefault("paid_with", [])
                total = _cents(p["amount"])
                # The earlier entry holds the same ticket (its own payments still add up).
                other["paid_with"] = [x for x in other["paid_with"]] + [
                    {"method": "ticket", "amount": "0.00", "ticket_id": "DUP-1"}
                ]
                p["ticket_id"] = "DUP-1"
                p["amount"] = f"{total // 100}.{total % 100:02d}"
        return doc, f"{where}[{j}].ticket_id"
    if how == "payment_key":
        p["note"] = "x"
        return doc, f"{where}[{j}].note"
    payments_value = draw(st.sampled_from(["cash", None, {"method": "cash"}, 5]))
    e["paid_with"] = payments_value
    return doc, where


def _owed(t, e):
    bounty = e.get("bounty_paid", t["bounty"]) if "bounty" in t else "0"
    parts = [e.get("buy_in_paid", t["buy_in"]), e.get("fee_paid", t["fee"]),
             e.get("rebuys_paid", "0"), e.get("rebuy_fees_paid", "0"), bounty]  # fmt: skip
    return sum(map(_cents, parts))


def _money(c):
    return f"{c // 100}.{c % 100:02d}"


def _cents(text):
    whole, _, frac = text.partition(".")
    return int(whole) * 100 + int((frac + "00")[:2])


def money_plus_one(text):
    c = _cents(text) + 1
    return f"{c // 100}.{c % 100:02d}"


@SETTINGS
@given(broken_format_snapshots())
def test_a_broken_formats_snapshot_is_refused_naming_the_entry_and_field(case):
    doc, field = case
    with pytest.raises(SnapshotError) as refused:
        parse_snapshot(doc)
    assert field in [p.field for p in refused.value.problems], refused.value.problems
