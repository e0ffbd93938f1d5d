"""Bringing a tournament in: JSON and CSV imports, versions, the freeze, export round trip."""

import hashlib
import json
from datetime import timedelta
from pathlib import Path

import pytest
from django.core.exceptions import PermissionDenied
from django.utils import timezone

from refunds_admin.audit.models import AuditEvent
from refunds_admin.errors import Refused
from refunds_admin.incidents.models import Incident
from refunds_admin.incidents.services import import_csv, import_snapshot
from refunds_admin.tournaments.models import Entry, PrizePlace, Snapshot, Tournament
from refunds_admin.tournaments.services import export_snapshot
from tests.support.csv_data import ENTRIES_CSV, PRIZES_CSV, csv_fields
from tests.support.factories import (
    approved_proposal,
    dumps,
    import_doc,
    open_incident,
    snapshot_doc,
)

EXAMPLES = Path(__file__).parent.parent / "data" / "examples"
pytestmark = pytest.mark.django_db


def _nothing_stored():
    assert Tournament.objects.count() == 0
    assert Snapshot.objects.count() == 0
    assert Entry.objects.count() == 0
    assert PrizePlace.objects.count() == 0
    assert AuditEvent.objects.filter(action="snapshot.imported").count() == 0


def test_it_imports_a_snapshot_with_its_prize_table_and_entries(support):
    raw = (EXAMPLES / "01-in-the-money.scenario.json").read_bytes()
    snapshot = import_snapshot(raw, acting_user=support, source=Snapshot.Source.UPLOAD)

    t = snapshot.tournament
    assert (t.external_id, t.currency, t.buy_in_cents, t.fee_cents) == ("UP-EX-1", "USD", 3000, 300)
    assert t.current_snapshot == snapshot and snapshot.version == 1
    assert snapshot.document.encode() == raw  # byte for byte
    assert snapshot.sha256 == hashlib.sha256(raw).hexdigest()
    assert (snapshot.entries_count, snapshot.active_count) == (2000, 50)
    # Ranges are expanded to one row per place: places 1..180 are paid.
    assert snapshot.prize_places.count() == 180
    assert snapshot.prize_places.get(place=101).amount_cents == 21875
    first = snapshot.entries.get(entry_id="e00001")
    assert (first.player_id, first.status, first.chips, first.position) == (
        "p00001",
        "active",
        48200,
        0,
    )
    assert first.buy_in_paid_cents == 3000 and first.fee_paid_cents == 300
    event = AuditEvent.objects.get(action="snapshot.imported")
    assert event.actor == support and event.tournament_external_id == "UP-EX-1"
    assert event.after["version"] == 1 and event.after["sha256"] == snapshot.sha256


def test_it_keeps_non_cash_prizes_and_per_entry_amounts(support):
    doc = snapshot_doc()
    doc["tournament"]["prizes"][0].update(non_cash=True, description="WSOP package")
    doc["entries"][5].update(
        finish_place=7, prize_awarded="12.50", buy_in_paid="0.00", fee_paid="0"
    )
    snapshot = import_doc(support, doc)
    prize = snapshot.prize_places.get(place=1)
    assert prize.non_cash and prize.description == "WSOP package" and prize.amount_cents == 50000
    freeroll = snapshot.entries.get(entry_id="e6")
    assert (freeroll.finish_place, freeroll.prize_awarded_cents) == (7, 1250)
    assert (freeroll.buy_in_paid_cents, freeroll.fee_paid_cents) == (0, 0)


def test_it_exports_exactly_what_was_imported(support):
    # Odd spacing, key order and non-ASCII text must survive the round trip.
    entries = json.dumps(snapshot_doc()["entries"], ensure_ascii=False)
    tournament = json.dumps(
        snapshot_doc(name="Sonntag Spezial – 30 €")["tournament"], ensure_ascii=False
    )
    raw = (
        '{ "format":"tournament-snapshot/1",\n  "entries": '
        + entries
        + ',\n"tournament": '
        + tournament
        + " }"
    )
    snapshot = import_snapshot(raw.encode(), acting_user=support, source=Snapshot.Source.CLI)
    exported = export_snapshot(snapshot.tournament)
    assert exported == raw
    # ... and importing the export again is the same document: no new version.
    again = import_snapshot(exported, acting_user=support, source=Snapshot.Source.CLI)
    assert again.pk == snapshot.pk


@pytest.mark.parametrize(
    "example, field",
    [
        ("07-refused-float-amount", "fee"),
        ("08-refused-two-active-entries", "player_id"),
        ("09-refused-chips-mismatch", "chips_in_play"),
    ],
)
def test_it_refuses_the_refused_examples_and_stores_nothing(support, example, field):
    raw = (EXAMPLES / f"{example}.scenario.json").read_bytes()
    with pytest.raises(Refused) as refused:
        import_snapshot(raw, acting_user=support, source=Snapshot.Source.UPLOAD)
    assert any(field in where for where, _ in refused.value.problems), refused.value.problems
    _nothing_stored()


def _broken(mutate):
    doc = snapshot_doc()
    mutate(doc)
    return dumps(doc)


BAD_INPUTS = {
    "not JSON": ('{"format": "tournament-snapshot/1",', "document"),
    "wrong format": (_broken(lambda d: d.update(format="tournament-snapshot/2")), "format"),
    "missing external_id": (_broken(lambda d: d["tournament"].pop("external_id")), "external_id"),
    "null name": (_broken(lambda d: d["tournament"].update(name=None)), "name"),
    "amount as a number": (_broken(lambda d: d["tournament"].update(buy_in=30)), "buy_in"),
    "three decimals": (_broken(lambda d: d["tournament"].update(fee="3.001")), "fee"),
    "unsupported currency": (_broken(lambda d: d["tournament"].update(currency="JPY")), "currency"),
    "start without offset": (
        _broken(lambda d: d["tournament"].update(starts_at="2026-11-29T18:00:00")),
        "starts_at",
    ),
    "duplicate entry_id": (
        _broken(lambda d: d["entries"][1].update(entry_id="e1")),
        "entry_id",
    ),
    "empty player_id": (_broken(lambda d: d["entries"][2].update(player_id="")), "player_id"),
    "unknown status": (_broken(lambda d: d["entries"][0].update(status="sitting_out")), "status"),
    "active without chips": (_broken(lambda d: d["entries"][0].pop("chips")), "chips"),
    "chips as a float": (_broken(lambda d: d["entries"][0].update(chips=40000.0)), "chips"),
    "eliminated with chips": (_broken(lambda d: d["entries"][6].update(chips=5)), "chips"),
    "gap in the prize table": (
        _broken(lambda d: d["tournament"]["prizes"].pop(1)),
        "prizes",
    ),
    "prize above the place before": (
        _broken(lambda d: d["tournament"]["prizes"][2].update(amount="400.00")),
        "prizes",
    ),
    "malformed prize_awarded": (
        _broken(lambda d: d["entries"][6].update(prize_awarded="12.5.0")),
        "prize_awarded",
    ),
    "site_wide_issue as text": (
        _broken(lambda d: d.update(incident={"site_wide_issue": "false"})),
        "site_wide_issue",
    ),
}


@pytest.mark.parametrize("case", BAD_INPUTS, ids=list(BAD_INPUTS))
def test_it_refuses_bad_snapshots_naming_the_field_and_stores_nothing(support, case):
    raw, field = BAD_INPUTS[case]
    with pytest.raises(Refused) as refused:
        import_snapshot(raw, acting_user=support, source=Snapshot.Source.UPLOAD)
    assert any(field in where for where, _ in refused.value.problems), refused.value.problems
    _nothing_stored()


def test_it_refuses_text_that_is_not_utf8(support):
    with pytest.raises(Refused) as refused:
        import_snapshot(b'{"format": "\xff"}', acting_user=support, source="upload")
    assert refused.value.problems == [("document", "byte 12 is not UTF-8")]
    # A whole snapshot with one Latin-1 screen name: the bytes go to the engine undecoded, and
    # are still refused as not UTF-8, naming the byte.
    raw = dumps(snapshot_doc()).encode()
    at = raw.index(b'"screen_name": "') + len(b'"screen_name": "')
    with pytest.raises(Refused) as refused:
        import_snapshot(raw[:at] + b"Jos\xe9" + raw[at:], acting_user=support, source="upload")
    assert refused.value.problems == [("document", f"byte {at + 3} is not UTF-8")]
    _nothing_stored()


def test_it_lists_every_problem_at_once(support):
    doc = snapshot_doc()
    doc["tournament"]["fee"] = 3
    doc["entries"][1]["chips"] = -5
    doc["entries"][3]["player_id"] = ""
    with pytest.raises(Refused) as refused:
        import_doc(support, doc)
    where = [w for w, _ in refused.value.problems]
    assert "tournament.fee" in where
    assert "entries[1] (e2).chips" in where
    assert "entries[3] (e4).player_id" in where
    _nothing_stored()


def test_it_stores_a_new_version_when_the_tournament_is_imported_again(support):
    first = import_doc(support)
    doc = snapshot_doc(active_chips=[50_000, 30_000, 20_000], eliminated=7, name="Renamed")
    second = import_doc(support, doc)

    t = Tournament.objects.get()
    assert second.version == 2 and t.current_snapshot == second and t.name == "Renamed"
    assert first.entries.count() == 10 and second.entries.count() == 10  # both kept
    assert second.active_count == 3
    events = AuditEvent.objects.filter(action="snapshot.imported").order_by("id")
    assert [e.after["version"] for e in events] == [1, 2]
    assert events[1].before == {"version": 1, "sha256": first.sha256}


def test_it_recomputes_the_open_incidents_rule_when_a_new_snapshot_changes_it(support):
    incident = open_incident(support, failed_ago=timedelta(minutes=5))
    assert incident.rule == "not_in_the_money"  # 4 active, 3 paid places
    # The platform's corrected snapshot: one more entry was out, 3 are left in the money.
    import_doc(
        support,
        snapshot_doc(
            starts_at=incident.tournament.starts_at,
            active_chips=[70_000, 20_000, 10_000],
            eliminated=7,
        ),
    )
    incident.refresh_from_db()
    assert incident.rule == "in_the_money"
    event = AuditEvent.objects.get(action="incident.rule_changed")
    assert event.before == {"rule": "not_in_the_money"} and event.after == {"rule": "in_the_money"}


def test_it_refuses_a_new_snapshot_that_starts_after_the_recorded_failure(support):
    incident = open_incident(support, failed_ago=timedelta(minutes=5))
    later = snapshot_doc(starts_at=timezone.now() - timedelta(minutes=1))
    with pytest.raises(Refused) as refused:
        import_doc(support, later)
    assert refused.value.problems[0][0] == "tournament.starts_at"
    assert Snapshot.objects.count() == 1
    assert Incident.objects.get().rule == incident.rule


def test_it_refuses_a_reimport_once_the_tournament_is_frozen(support, manager):
    # Approving a proposal freezes the tournament's snapshot.
    snapshot = approved_proposal(support, manager).snapshot
    with pytest.raises(Refused, match="frozen: a proposal was approved"):
        import_doc(support, snapshot_doc(name="Too late"))
    assert Snapshot.objects.count() == 1
    assert Tournament.objects.get().current_snapshot == snapshot
    # The same document again (the platform retrying its call) replaces nothing: it is the
    # current version, answered as such, frozen or not.
    again = import_snapshot(
        snapshot.document.encode(), acting_user=support, source=Snapshot.Source.API
    )
    assert again == snapshot and Snapshot.objects.count() == 1


def test_it_lets_only_support_and_managers_import(auditor, outsider):
    for user in (auditor, outsider):
        with pytest.raises(PermissionDenied):
            import_doc(user)
    _nothing_stored()


# ---------------------------------------------------------------------------------------------
# CSV
# ---------------------------------------------------------------------------------------------


def test_it_imports_a_tournament_from_csv(support):
    snapshot = import_csv(ENTRIES_CSV.encode(), PRIZES_CSV, csv_fields(), acting_user=support)
    assert snapshot.source == "csv" and snapshot.tournament.external_id == "CSV-1"
    assert snapshot.entries_count == 6 and snapshot.active_count == 4
    assert list(snapshot.prize_places.values_list("place", "amount_cents", "non_cash")) == [
        (1, 50000, True),
        (2, 30000, False),
        (3, 20000, False),
        (4, 20000, False),
    ]
    e5 = snapshot.entries.get(entry_id="e5")
    assert (e5.buy_in_paid_cents, e5.finish_place) == (0, 5)
    doc = json.loads(snapshot.document)  # a real tournament-snapshot/1 document is stored
    assert doc["format"] == "tournament-snapshot/1"
    assert doc["tournament"]["prizes"][2] == {"places": [3, 4], "amount": "200.00"}
    assert export_snapshot(snapshot.tournament) == snapshot.document


def test_it_maps_engine_problems_back_to_csv_rows_and_form_fields(support):
    entries = ENTRIES_CSV.replace("e5,p5,,eliminated,,0.00", "e5,p5,,eliminated,-3,0.00")
    with pytest.raises(Refused) as refused:
        import_csv(entries, PRIZES_CSV, csv_fields(fee="3,00"), acting_user=support)
    where = dict(refused.value.problems)
    # entries[4] is the fifth entry: row 6 of the file, after the header.
    assert "entries CSV row 6 (entry e5), chips" in where
    assert "fee" in where
    _nothing_stored()


def test_it_names_the_csv_row_of_an_engine_problem(support):
    entries = ENTRIES_CSV.replace("e2,p2,king,active,30000", "e2,p1,king,active,30000")
    with pytest.raises(Refused) as refused:
        import_csv(entries, PRIZES_CSV, csv_fields(), acting_user=support)
    assert refused.value.problems[0][0] == "entries CSV row 3 (entry e2), player_id"
    prizes = PRIZES_CSV.replace("2,300.00", "2,30.0.0")
    with pytest.raises(Refused) as refused:
        import_csv(ENTRIES_CSV, prizes, csv_fields(), acting_user=support)
    assert refused.value.problems[0][0] == "prize table CSV row 3, amount"
    _nothing_stored()


@pytest.mark.parametrize(
    "entries, prizes, fields, where",
    [
        (
            ENTRIES_CSV.replace("40000", "4e4"),
            PRIZES_CSV,
            {},
            "entries CSV row 2 (entry e1), chips",
        ),
        (
            ENTRIES_CSV.replace(",6,\n", ",sixth,\n"),
            PRIZES_CSV,
            {},
            "entries CSV row 7 (entry e6), finish_place",
        ),
        (ENTRIES_CSV.replace("screen_name", "nickname"), PRIZES_CSV, {}, "entries CSV header"),
        (ENTRIES_CSV.replace("player_id,", ""), PRIZES_CSV, {}, "entries CSV header"),
        (ENTRIES_CSV.replace("e3,p3,,", "e3,p3,,,,,,,,,,"), PRIZES_CSV, {}, "entries CSV row 4"),
        ("", PRIZES_CSV, {}, "entries CSV"),
        (ENTRIES_CSV, PRIZES_CSV.replace("3-4", "three"), {}, "prize table CSV row 4, place"),
        (ENTRIES_CSV, PRIZES_CSV.replace("yes", "maybe"), {}, "prize table CSV row 2, non_cash"),
        (ENTRIES_CSV, PRIZES_CSV, {"name": ""}, "name"),
        (ENTRIES_CSV, PRIZES_CSV, {"chips_in_play": "lots"}, "chips_in_play"),
        (ENTRIES_CSV, PRIZES_CSV, {"chips_in_play": "99999"}, "chips_in_play"),
        (ENTRIES_CSV, PRIZES_CSV, {"starts_at": "2026-11-29 18:00"}, "starts_at"),
    ],
)
def test_it_refuses_bad_csv_naming_row_and_column(support, entries, prizes, fields, where):
    with pytest.raises(Refused) as refused:
        import_csv(entries, prizes, csv_fields(**fields), acting_user=support)
    assert where in [w for w, _ in refused.value.problems], refused.value.problems
    _nothing_stored()


def test_it_lists_unreadable_cells_and_the_engines_problems_at_once_by_row(support):
    """One pass: a cell that is not a number and the rows the engine refuses come together,
    each once, every one named by its CSV row (never `entries[0]`)."""
    entries = (
        "entry_id,player_id,screen_name,status,chips\n"
        "e1,p1,ace,active,48x200\n"
        "e2,p2,bob,active,-5\n"
        "e1,p3,cid,eliminated,0\n"
        "e4,p4,dee,active,\uff14\uff18\n"  # full-width digits: not a number in a CSV either
    )
    with pytest.raises(Refused) as refused:
        import_csv(entries.encode(), PRIZES_CSV, csv_fields(fee="3,00"), acting_user=support)
    problems = dict(refused.value.problems)
    assert problems["entries CSV row 2 (entry e1), chips"] == "'48x200' is not a whole number"
    assert problems["entries CSV row 5 (entry e4), chips"] == "'\uff14\uff18' is not a whole number"
    assert "above 0" in problems["entries CSV row 3 (entry e2), chips"]
    duplicate = problems["entries CSV row 4 (entry e1), entry_id"]
    assert "also entries CSV row 2 (entry e1)" in duplicate
    assert "fee" in problems
    assert len(refused.value.problems) == 5  # each problem once
    assert not any("entries[" in f"{where} {what}" for where, what in refused.value.problems)
    _nothing_stored()


def test_it_keeps_the_optional_email_of_csv_and_json_entries(support):
    entries = ENTRIES_CSV.replace("prize_awarded\n", "prize_awarded,email\n", 1).replace(
        "e2,p2,king,active,30000,,,,\n", "e2,p2,king,active,30000,,,,,King@Example.test\n"
    )
    snapshot = import_csv(entries.encode(), PRIZES_CSV, csv_fields(), acting_user=support)
    assert dict(snapshot.entries.exclude(email="").values_list("entry_id", "email")) == {
        "e2": "King@Example.test"
    }
    assert json.loads(snapshot.document)["entries"][1]["email"] == "King@Example.test"


def test_entries_without_an_email_read_as_empty_whether_or_not_another_entry_gives_one(support):
    # Without any e-mail the column is left to its database default; with one, every entry is
    # written. Either way an entry without one reads "", which the e-mail search leaves out.
    plain = import_csv(ENTRIES_CSV.encode(), PRIZES_CSV, csv_fields(), acting_user=support)
    assert set(plain.entries.values_list("email", flat=True)) == {""}
    entries = ENTRIES_CSV.replace("prize_awarded\n", "prize_awarded,email\n", 1).replace(
        "e2,p2,king,active,30000,,,,\n", "e2,p2,king,active,30000,,,,,k@example.test\n"
    )
    fields = csv_fields(external_id="T-EMAIL-2")
    mixed = import_csv(entries.encode(), PRIZES_CSV, fields, acting_user=support)
    emails = dict(mixed.entries.values_list("entry_id", "email"))
    assert emails.pop("e2") == "k@example.test"
    assert emails and set(emails.values()) == {""}


def test_it_names_a_bad_prize_place_once_and_lists_the_problems_in_row_order(support):
    """Found by the newcomer's trial: a place that is not a number was reported twice (the
    cell, then the engine's "must give either place or places" for the same row), and the
    problems came in the order they were found, not in the files' order."""
    prizes = PRIZES_CSV.replace("3-4,200.00", "three,2.0.0").replace("2,300.00", "2,3OO")
    entries = ENTRIES_CSV.replace("e3,p3,,active,20000", "e3,p3,,active,2e4")
    with pytest.raises(Refused) as refused:
        import_csv(entries, prizes, csv_fields(fee="x"), acting_user=support)
    where = [w for w, _ in refused.value.problems]
    assert [w for w in where if w.startswith("prize table CSV row 4")] == [
        "prize table CSV row 4, place",
        "prize table CSV row 4, amount",
    ], refused.value.problems
    rows = [w for w in where if " CSV row " in w]
    assert where[0] == "fee" and rows == sorted(
        rows, key=lambda w: (w.split(" row ")[0], int(w.split(" row ")[1].split(",")[0].split()[0]))
    ), where
    _nothing_stored()
