"""Every refusal of payout-rules.md "Validation": refused as a whole, naming the field or entry."""

import json

import pytest

from refunds_admin.payouts import SnapshotError, compute_proposal, parse_snapshot
from refunds_admin.payouts.money import AmountError, display, format_cents, parse_amount
from tests.support.factories import active, engine_doc, out


def base():
    return engine_doc(entries=[active(1, 600), active(2, 400), out(3)])


def refused(doc):
    with pytest.raises(SnapshotError) as info:
        compute_proposal(parse_snapshot(doc))
    return [str(p) for p in info.value.problems]


def mutate(path, value):
    """Set (or delete, with value=DELETE) one field of the base snapshot."""
    doc = base()
    *parents, last = path
    target = doc
    for key in parents:
        target = target[key]
    if value is DELETE:
        del target[last]
    else:
        target[last] = value
    return doc


DELETE = object()

CASES = [
    # (what, path, value, field named in the message, words in the message)
    ("wrong format", ("format",), "tournament-snapshot/2", "format", "tournament-snapshot/1"),
    ("format missing", ("format",), DELETE, "format", "required"),
    (
        "external_id missing",
        ("tournament", "external_id"),
        DELETE,
        "tournament.external_id",
        "required",
    ),
    ("external_id empty", ("tournament", "external_id"), "  ", "tournament.external_id", "empty"),
    ("currency missing", ("tournament", "currency"), DELETE, "tournament.currency", "required"),
    ("currency without cents", ("tournament", "currency"), "JPY", "tournament.currency", "JPY"),
    ("currency with 3 decimals", ("tournament", "currency"), "KWD", "tournament.currency", "KWD"),
    ("buy-in as number", ("tournament", "buy_in"), 30, "tournament.buy_in", "string"),
    ("fee as float", ("tournament", "fee"), 3.0, "tournament.fee", "string"),
    ("fee with sign", ("tournament", "fee"), "-3.00", "tournament.fee", "digits"),
    ("fee with three decimals", ("tournament", "fee"), "3.001", "tournament.fee", "digits"),
    ("fee with exponent", ("tournament", "fee"), "3e2", "tournament.fee", "digits"),
    ("fee with spaces", ("tournament", "fee"), " 3.00", "tournament.fee", "digits"),
    ("fee null", ("tournament", "fee"), None, "tournament.fee", "null"),
    (
        "start without offset",
        ("tournament", "starts_at"),
        "2026-11-29T18:00:00",
        "tournament.starts_at",
        "offset",
    ),
    (
        "start not a date",
        ("tournament", "starts_at"),
        "yesterday",
        "tournament.starts_at",
        "ISO 8601",
    ),
    (
        "impossible date",
        ("tournament", "starts_at"),
        "2026-02-30T18:00:00Z",
        "tournament.starts_at",
        "valid",
    ),
    (
        "chips_in_play float",
        ("tournament", "chips_in_play"),
        1000.0,
        "tournament.chips_in_play",
        "whole number",
    ),
    (
        "chips_in_play null",
        ("tournament", "chips_in_play"),
        None,
        "tournament.chips_in_play",
        "null",
    ),
    (
        "chips_in_play differs",
        ("tournament", "chips_in_play"),
        999,
        "tournament.chips_in_play",
        "1,000",
    ),
    ("prizes missing", ("tournament", "prizes"), DELETE, "tournament.prizes", "required"),
    (
        "no paid place",
        ("tournament", "prizes"),
        [{"place": 1, "amount": "0.00"}],
        "tournament.prizes",
        "no paid place",
    ),
    (
        "place and places",
        ("tournament", "prizes"),
        [{"place": 1, "places": [1, 2], "amount": "5"}],
        "tournament.prizes[0]",
        "both",
    ),
    (
        "neither place",
        ("tournament", "prizes"),
        [{"amount": "5"}],
        "tournament.prizes[0]",
        "neither",
    ),
    (
        "place zero",
        ("tournament", "prizes"),
        [{"place": 0, "amount": "5"}],
        "tournament.prizes[0].place",
        "1 or more",
    ),
    (
        "places reversed",
        ("tournament", "prizes"),
        [{"places": [3, 1], "amount": "5"}],
        "tournament.prizes[0].places",
        "after",
    ),
    (
        "place twice",
        ("tournament", "prizes"),
        [{"place": 1, "amount": "9"}, {"places": [1, 2], "amount": "5"}],
        "tournament.prizes[1]",
        "twice",
    ),
    (
        "gap in places",
        ("tournament", "prizes"),
        [{"place": 1, "amount": "9"}, {"place": 3, "amount": "5"}],
        "tournament.prizes",
        "place 2 is missing",
    ),
    (
        "prize rises",
        ("tournament", "prizes"),
        [{"place": 1, "amount": "5"}, {"place": 2, "amount": "9"}],
        "tournament.prizes[1]",
        "more than place 1",
    ),
    (
        "non_cash not bool",
        ("tournament", "prizes"),
        [{"place": 1, "amount": "9", "non_cash": "yes"}],
        "tournament.prizes[0].non_cash",
        "true or false",
    ),
    (
        "prize row with an unknown key (a typo)",
        ("tournament", "prizes"),
        [
            {"place": 1, "amount": "60.00"},
            {"place": 2, "amount": "30.00"},
            {"place": 3, "amount": "0", "amonut": "10.00"},
        ],
        "tournament.prizes[2].amonut",
        "not a field of a prize row",
    ),
    (
        "prize row with every field the format gives it",
        ("tournament", "prizes"),
        [
            {"place": 1, "amount": "60.00", "non_cash": True, "description": "WSOP package"},
            {"places": [2, 3], "amount": "30.00", "non_cash": False, "description": ""},
        ],
        None,
        None,
    ),
    (
        "start with a space for the T",
        ("tournament", "starts_at"),
        "2026-11-29 18:00:00Z",
        "tournament.starts_at",
        "needs a T (2026-11-29T18:00:00Z)",
    ),
    (
        "failed_at with a space for the T",
        ("incident", "failed_at"),
        "2026-11-29 18:30:00+00:00",
        "incident.failed_at",
        "with a space",
    ),
    ("entries missing", ("entries",), DELETE, "entries", "required"),
    ("no entries at all", ("entries",), [], "entries", "at least one entry"),
    ("empty entry id", ("entries", 0, "entry_id"), "", "entries[0].entry_id", "empty"),
    ("empty player id", ("entries", 0, "player_id"), "", "entries[0] (e1).player_id", "empty"),
    ("duplicate entry id", ("entries", 1, "entry_id"), "e1", "entries[1] (e1).entry_id", "twice"),
    ("unknown status", ("entries", 0, "status"), "busted", "entries[0] (e1).status", "busted"),
    ("status null", ("entries", 0, "status"), None, "entries[0] (e1).status", "None"),
    ("chips as float", ("entries", 0, "chips"), 600.0, "entries[0] (e1).chips", "whole number"),
    ("chips as bool", ("entries", 0, "chips"), True, "entries[0] (e1).chips", "whole number"),
    ("chips with a fraction", ("entries", 0, "chips"), 600.5, "entries[0] (e1).chips", "600.5"),
    ("active with zero chips", ("entries", 0, "chips"), 0, "entries[0] (e1).chips", "above 0"),
    ("active without chips", ("entries", 0, "chips"), DELETE, "entries[0] (e1).chips", "required"),
    ("eliminated holding chips", ("entries", 2, "chips"), 10, "entries[2] (e3).chips", "no chips"),
    ("eliminated chips null", ("entries", 2, "chips"), None, "entries[2] (e3).chips", "null"),
    (
        "screen name null",
        ("entries", 0, "screen_name"),
        None,
        "entries[0] (e1).screen_name",
        "null",
    ),
    ("prize awarded malformed", ("entries", 2, "prize_awarded"), "250", None, None),
    ("e-mail null", ("entries", 0, "email"), None, "entries[0] (e1).email", "null"),
    ("e-mail empty: no address", ("entries", 0, "email"), "", None, None),
    (
        "prize awarded as number",
        ("entries", 2, "prize_awarded"),
        250,
        "entries[2] (e3).prize_awarded",
        "string",
    ),
    (
        "paid buy-in malformed",
        ("entries", 0, "buy_in_paid"),
        "30.000",
        "entries[0] (e1).buy_in_paid",
        "digits",
    ),
    (
        "finish place null",
        ("entries", 2, "finish_place"),
        None,
        "entries[2] (e3).finish_place",
        "whole number",
    ),
    (
        "site-wide as string",
        ("incident", "site_wide_issue"),
        "false",
        "incident.site_wide_issue",
        "true or false",
    ),
    (
        "failed_at without offset",
        ("incident", "failed_at"),
        "2026-11-29T19:00:00",
        "incident.failed_at",
        "offset",
    ),
    (
        "failed_at with a decimal comma and no offset",
        ("incident", "failed_at"),
        "2026-11-29T19:00:00,5",
        "incident.failed_at",
        "no time zone offset",
    ),
    # ISO 8601's digits are ASCII; Python's int() would read these as 2026 and 18.
    (
        "start in full-width digits",
        ("tournament", "starts_at"),
        "\uff12\uff10\uff12\uff16-11-29T18:00:00Z",
        "tournament.starts_at",
        "ISO 8601",
    ),
    (
        "failed_at in Arabic-Indic digits",
        ("incident", "failed_at"),
        "\u0662\u0660\u0662\u0666-\u0661\u0661-\u0662\u0669T\u0661\u0668:\u0661\u0660:\u0660\u0660Z",
        "incident.failed_at",
        "ISO 8601",
    ),
]


@pytest.mark.parametrize("what,path,value,field,words", CASES, ids=[c[0] for c in CASES])
def test_it_refuses_bad_input_naming_the_field(what, path, value, field, words):
    doc = mutate(path, value)
    if field is None:  # a valid variation that must be accepted
        compute_proposal(parse_snapshot(doc))
        return
    problems = refused(doc)
    assert any(p.startswith(field) and words in p for p in problems), problems


def test_it_refuses_one_player_holding_two_active_entries():
    doc = engine_doc(entries=[active(1, 600), {**active(2, 400), "player_id": "p1"}])
    problems = refused(doc)
    assert any("p1" in p and "two active entries" in p for p in problems)


def test_it_allows_one_active_entry_beside_eliminated_re_entries():
    doc = engine_doc(entries=[out(1), {**active(2, 600), "player_id": "p1"}, active(3, 400)])
    assert compute_proposal(parse_snapshot(doc)).rule == "in_the_money"


def test_it_reports_every_problem_not_only_the_first():
    doc = base()
    doc["tournament"]["fee"] = 3
    doc["entries"][0]["chips"] = -5
    doc["entries"][1]["status"] = "gone"
    problems = refused(doc)
    assert len(problems) == 3


def test_it_caps_the_list_of_problems_and_counts_the_rest():
    doc = engine_doc(entries=[{**active(i, 10), "chips": 1.5} for i in range(80)])
    with pytest.raises(SnapshotError) as info:
        parse_snapshot(doc)
    assert len(info.value.problems) == 50 and info.value.more == 30
    assert "30 more" in str(info.value)


def test_it_refuses_documents_that_are_not_json_objects():
    for raw in (b"[1, 2]", b"{not json", b"\xff\xfe"):
        with pytest.raises(SnapshotError) as info:
            parse_snapshot(raw)
        assert info.value.problems[0].field == "document"


def test_it_refuses_rule_two_with_one_entry_left():
    doc = engine_doc(entries=[active(1, 600), out(2)], failed_after="01:00:00")
    assert any("winner" in p for p in refused(doc))


def test_it_accepts_one_entry_left_when_rule_one_applies():
    doc = engine_doc(entries=[active(1, 600), out(2)], failed_after="00:10:00")
    assert compute_proposal(parse_snapshot(doc)).rule == "full_refund"


def test_it_refuses_a_buy_in_back_above_first_prize():
    doc = engine_doc(
        entries=[active(1, 600), active(2, 400), active(3, 100)],
        prizes=[{"place": 1, "amount": "20.00"}],
        buy_in="30.00",
    )
    assert any("above first prize" in p for p in refused(doc))


def test_it_refuses_a_pool_smaller_than_the_buy_ins_it_must_return():
    doc = engine_doc(
        entries=[active(i, 100) for i in range(1, 5)],
        prizes=[{"place": 1, "amount": "50.00"}, {"place": 2, "amount": "40.00"}],
        buy_in="30.00",
    )
    assert any("cannot be applied automatically" in p for p in refused(doc))


def test_it_needs_a_failure_time_to_compute():
    doc = base()
    del doc["incident"]
    with pytest.raises(SnapshotError) as info:
        compute_proposal(parse_snapshot(doc))
    assert info.value.problems[0].field == "incident.failed_at"


def test_it_reads_amounts_exactly():
    assert parse_amount("30") == 3000
    assert parse_amount("30.5") == 3050
    assert parse_amount("0.07") == 7
    assert parse_amount("1234567.89") == 123456789
    for bad in ("30.", ".5", "+1", "1,000", "１２", "30.00\n", "NaN"):
        with pytest.raises(AmountError):
            parse_amount(bad)
    assert format_cents(81533) == "815.33" and format_cents(5) == "0.05"
    assert display(1750000, "USD") == "$17,500.00"
    assert display(1750000, "CAD", drop_zero_cents=True) == "CAD 17,500"


def test_it_gives_the_same_answer_for_bytes_text_and_decoded_json():
    doc = base()
    a = compute_proposal(parse_snapshot(doc)).to_json()
    b = compute_proposal(parse_snapshot(json.dumps(doc))).to_json()
    c = compute_proposal(parse_snapshot(json.dumps(doc).encode())).to_json()
    assert a == b == c


def test_it_does_not_count_an_entry_with_an_unknown_status_as_active():
    doc = engine_doc(
        entries=[active(1, 600), active(2, 400), {**active(3, 50), "status": "sitting_out"}],
        chips_in_play=1000,
    )
    problems = refused(doc)
    assert problems == ["entries[2] (e3).status: must be active or eliminated, not 'sitting_out'"]


def test_a_prize_range_beyond_a_small_field_pays_as_the_same_places_listed_one_by_one():
    # Three entries, a fixed table paying five places: places 3-5 are never reached, whether
    # the table writes them as a range or one by one (the spec refuses neither).
    as_range = engine_doc(
        entries=[active(1, 3000), active(2, 1000), out(3)],
        prizes=[{"place": 1, "amount": "30.00"}, {"places": [2, 5], "amount": "10.00"}],
    )
    one_by_one = engine_doc(
        entries=[active(1, 3000), active(2, 1000), out(3)],
        prizes=[{"place": 1, "amount": "30.00"}]
        + [{"place": p, "amount": "10.00"} for p in range(2, 6)],
    )
    lines = [compute_proposal(parse_snapshot(d)).lines for d in (as_range, one_by_one)]
    assert lines[0] == lines[1]
    # in the money (2 left, 5 paid): next prize 10.00 each, 20.00 by chips 3:1
    assert [(line.next_prize, line.chip_equity) for line in lines[0][:2]] == [
        (1000, 1500),
        (1000, 500),
    ]


def test_a_chip_count_too_large_for_64_bits_is_refused_as_too_large():
    # orjson reads an integer past 64 bits as a float: the message says too large, not a fraction.
    text = json.dumps(mutate(("entries", 0, "chips"), 10**30)).encode()
    problems = refused(text)
    assert any(
        p.startswith("entries[0] (e1).chips") and "at most 9,223,372,036,854,775,807" in p
        for p in problems
    ), problems


def test_a_stored_document_is_read_as_the_release_that_stored_it_accepted_it():
    """Earlier releases accepted a space for the T, digits other than ASCII's in a time, an
    unknown key in a prize row and a snapshot without entries; a document they stored still
    replays (parse_snapshot's `stored`)."""
    doc = base()
    doc["tournament"]["starts_at"] = "2026-11-29 18:00:00Z"
    doc["tournament"]["prizes"][1]["note"] = "as exported"
    doc["incident"]["failed_at"] = doc["incident"]["failed_at"].replace(
        "2026", "\uff12\uff10\uff12\uff16"
    )
    problems = refused(doc)
    assert any(p.startswith("tournament.starts_at") for p in problems), problems
    assert any(p.startswith("tournament.prizes[1].note") for p in problems), problems
    assert any(p.startswith("incident.failed_at") for p in problems), problems
    stored = parse_snapshot(doc, stored=True)
    assert stored.starts_at.at.isoformat() == "2026-11-29T18:00:00+00:00"
    assert compute_proposal(stored).to_json() == compute_proposal(parse_snapshot(base())).to_json()
    empty = mutate(("entries",), [])
    assert parse_snapshot(empty, stored=True).active_count == 0


def test_a_misspelt_field_is_refused_naming_the_field_it_resembles():
    """Read as the platform's own field, `buyin_paid` would be ignored and the entry priced at
    the tournament's buy-in; `guaranteed` would drop the guarantee. Both change the money."""
    doc = base()
    doc["entries"][1]["buyin_paid"] = "0.00"
    doc["entries"][2]["bounty_won"] = "5.00"
    doc["tournament"]["guaranteed"] = "1000.00"
    problems = refused(doc)
    assert (
        "entries[1] (e2).buyin_paid: is not a field of an entry: did you mean buy_in_paid? "
        "(misspelt, it would be ignored and its default used)"
    ) in problems
    assert any(
        p.startswith("entries[2] (e3).bounty_won: ") and "bounties_won" in p for p in problems
    )
    assert any(p.startswith("tournament.guaranteed: ") and "guarantee?" in p for p in problems)
    # The same document as an earlier release stored it still replays.
    assert parse_snapshot(doc, stored=True).columns.buy_in_paid[1] == 3000


def test_a_platforms_own_fields_are_still_accepted():
    """Fields of the platform's own (the schema allows them), and a near-miss given beside the
    field it resembles (`fees` beside `fee`: two fields, not a misspelling)."""
    doc = base()
    for entry in doc["entries"]:
        entry.update(seat=3, table_id="T-7", country="MT", player="Ana")
    doc["tournament"].update(fees="3.00 each", country="MT", prize="see prizes")
    doc["platform"] = {"version": "9.1"}
    plain = compute_proposal(parse_snapshot(base())).to_json()
    assert compute_proposal(parse_snapshot(doc)).to_json() == plain


def test_rule_two_with_no_entry_left_does_not_speak_of_a_winner():
    doc = engine_doc(entries=[out(1), out(2)], failed_after="01:00:00")
    (problem,) = refused(doc)
    assert "no active entry left" in problem and "winner" not in problem


@pytest.mark.parametrize(
    ("path", "value", "field"),
    [
        (("incident", "site_wide_issue"), "false", "incident.site_wide_issue"),
        (("entries", 0, "chips"), "600", "entries[0]"),
        (("tournament", "prizes", 0, "non_cash"), "yes", "tournament.prizes[0].non_cash"),
    ],
)
def test_a_string_where_another_json_type_belongs_is_called_a_json_string(path, value, field):
    # JSON's word, not Python's: "not a JSON string", never "not a JSON str".
    (problem,) = refused(mutate(path, value))
    assert problem.startswith(field) and problem.endswith("not a JSON string")
