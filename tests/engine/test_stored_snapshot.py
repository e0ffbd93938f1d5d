"""The compact form a snapshot is stored in beside its document (payouts/stored.py) gives back
the very same parsed snapshot, so a proposal prepared from it is the one the document gives."""

import json
import zlib
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings

from refunds_admin.payouts import SnapshotError, compute_proposal, parse_snapshot, stored
from refunds_admin.tournaments import services as tournaments
from refunds_admin.tournaments.models import Snapshot
from tests.support.factories import import_doc, snapshot_doc
from tests.support.formats import format_snapshots
from tests.support.strategies import SETTINGS, snapshots


def _snapshot_of(path):
    doc = json.loads(path.read_text())
    return doc.get("snapshot", doc)


def _accepted(path):
    try:
        parse_snapshot(_snapshot_of(path))
    except SnapshotError:
        return False  # a refused example: nothing is stored for it
    return True


EXAMPLES = [
    path
    for path in sorted(Path(__file__).parent.parent.glob("data/examples/*.scenario.json"))
    if _accepted(path)
]


def test_it_is_checked_on_every_example_the_engine_accepts():
    assert len(EXAMPLES) == 14  # the eighteen worked examples less the four refused ones


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.name.split(".")[0])
def test_it_gives_back_each_worked_example_exactly(path):
    parsed = parse_snapshot(_snapshot_of(path))
    again = stored.load(stored.dump(parsed))
    assert again == parsed
    assert compute_proposal(again).to_json() == compute_proposal(parsed).to_json()


def test_it_keeps_what_the_rules_read_beyond_the_entries():
    doc = snapshot_doc(emails={"e1": "ann@example.com"})
    doc["tournament"]["starts_at"] = "2026-11-29T19:00:00.1234567+01:00"  # 7 decimals, an offset
    doc["tournament"]["prizes"] = [
        {"place": 1, "amount": "500.00", "non_cash": True, "description": "WSOP package"},
        {"places": [2, 3], "amount": "100.00"},
    ]
    doc["incident"] = {"failed_at": "2026-11-29T18:20:00.0000001Z", "site_wide_issue": True}
    parsed = parse_snapshot(doc)
    again = stored.load(stored.dump(parsed))
    assert again == parsed
    assert again.starts_at.exact == parsed.starts_at.exact  # beyond a datetime's microseconds
    assert again.starts_at.at.utcoffset() == parsed.starts_at.at.utcoffset()
    assert again.emails == {"e1": "ann@example.com"}


@SETTINGS
@given(snapshots())
def test_it_gives_back_any_valid_snapshot_exactly(doc):
    parsed = parse_snapshot(doc)
    assert stored.load(stored.dump(parsed)) == parsed


def test_a_form_of_another_layout_is_ignored():
    assert stored.load(zlib.compress(b'{"form": "parsed-snapshot/0"}')) is None


@pytest.mark.django_db
def test_an_import_stores_the_form_and_preparing_reads_it(support, monkeypatch):
    snapshot = Snapshot.objects.get(pk=import_doc(support).pk)  # as a later request reads it
    tournaments._PARSED.clear()
    expected = parse_snapshot(snapshot.document)
    assert snapshot.parsed is not None
    monkeypatch.setattr(tournaments, "parse_snapshot", _no_parse)
    assert tournaments.engine_snapshot(snapshot) == expected


@pytest.mark.django_db
def test_a_snapshot_without_the_form_is_parsed_from_its_document(support):
    snapshot = import_doc(support)
    Snapshot.objects.filter(pk=snapshot.pk).update(parsed=None)  # imported by an older release
    snapshot = Snapshot.objects.get(pk=snapshot.pk)
    tournaments._PARSED.clear()
    assert tournaments.engine_snapshot(snapshot) == parse_snapshot(snapshot.document)


def _no_parse(document):
    raise AssertionError("the document was parsed again")


@settings(deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(format_snapshots())
def test_it_gives_back_knockouts_rebuys_and_payments_exactly(doc):
    parsed = parse_snapshot(doc)
    again = stored.load(stored.dump(parsed))
    assert again == parsed
    assert again.columns.paid_with == parsed.columns.paid_with
    assert _computed(again) == _computed(parsed)


def _computed(snapshot):
    try:
        return compute_proposal(snapshot).to_json()
    except SnapshotError as exc:
        return str(exc)


def test_it_reads_an_older_stored_form_as_none_so_the_document_is_parsed_again():
    import orjson

    old = zlib.compress(orjson.dumps({"form": "parsed-snapshot/1", "columns": {}}), 1)
    assert stored.load(old) is None
