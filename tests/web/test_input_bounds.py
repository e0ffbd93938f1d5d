"""The hostile probes, each a regression test: every input bounded by the engine's one validator
(docs/snapshot-limits.md), refused with a reason per field and nothing stored; the pages that list
tournaments keep rendering; the API answers JSON for every refusal."""

import json
import time

import pytest
from django.test import Client, override_settings

from refunds_admin.incidents.services import import_csv
from refunds_admin.payouts import SnapshotError, parse_snapshot
from refunds_admin.payouts import snapshot as engine
from refunds_admin.tournaments.models import Entry, Snapshot, Tournament
from refunds_admin.tournaments.services import create_api_client
from tests.support.factories import dumps, import_doc, snapshot_doc

pytestmark = pytest.mark.django_db
URL = "/api/snapshots"


@pytest.fixture
def api(support):
    token = create_api_client("platform", user=support)[1]
    client = Client(enforce_csrf_checks=True)

    def post(body, **extra):
        if isinstance(body, dict):
            body = dumps(body)
        return client.post(
            URL,
            data=body,
            content_type="application/json",
            headers={"Authorization": f"Bearer {token}"},
            **extra,
        )

    return post


def _nothing_stored():
    assert not Tournament.objects.exists()
    assert not Snapshot.objects.exists()
    assert not Entry.objects.exists()


def _refused(response, field, words=""):
    assert response.status_code == 400, response.content[:300]
    assert response["Content-Type"] == "application/json"
    problems = response.json()["problems"]
    assert any(
        p["field"].startswith(field) and words in f"{p['field']} {p['message']}" for p in problems
    ), problems
    _nothing_stored()
    return problems


def _doc_with(**tournament):
    return snapshot_doc(**tournament)


def _entry(index, **fields):
    return snapshot_doc(entry_fields={index: fields})


# --- times ---------------------------------------------------------------------------------


@pytest.mark.parametrize("starts_at", ["0001-01-01T00:00:00+05:00", "9999-12-31T23:59:59-14:00"])
def test_it_refuses_a_start_outside_2000_to_2100_and_the_lists_keep_rendering(
    api, client, manager, starts_at
):
    doc = snapshot_doc()
    doc["tournament"]["starts_at"] = starts_at
    _refused(api(doc), "tournament.starts_at", "2000-01-01")
    import_doc(manager)  # an accepted tournament beside the refused one
    client.force_login(manager)
    for url in ("/tournaments/", "/incidents/new/", "/"):
        assert client.get(url).status_code == 200, url


@pytest.mark.parametrize(
    "value, accepted",
    [
        ("1999-12-31T23:59:59Z", False),
        ("2000-01-01T00:00:00Z", True),
        ("2000-01-01T00:30:00+01:00", False),  # 1999 in UTC
        ("2099-12-31T23:59:59Z", True),
        ("2100-01-01T00:00:00Z", False),
    ],
)
def test_it_bounds_times_at_the_edges(value, accepted):
    doc = snapshot_doc()
    doc["tournament"]["starts_at"] = value
    if accepted:
        parse_snapshot(json.dumps(doc))
    else:
        with pytest.raises(SnapshotError, match="tournament.starts_at"):
            parse_snapshot(json.dumps(doc))


# --- NUL and control characters, lengths -----------------------------------------------------


@pytest.mark.parametrize(
    "doc, field",
    [
        (_doc_with(name="Sunday\x00Special"), "tournament.name"),
        (_doc_with(external_id="T-\x00"), "tournament.external_id"),
        (_entry(0, entry_id="e\x001"), "entries[0].entry_id"),
        (_entry(0, player_id="p\x00"), "entries[0]"),
        (_entry(0, screen_name="ace\x00"), "entries[0]"),
        (_doc_with(external_id="T-1\nX"), "tournament.external_id"),
        (_doc_with(external_id="T-1\r\nSet-Cookie: x=1"), "tournament.external_id"),
        (_entry(1, entry_id="e2\n"), "entries[1].entry_id"),
        (_entry(2, player_id="p\x1b[31m"), "entries[2]"),
        (_entry(3, player_id="p\x7f"), "entries[3]"),
        (_entry(3, player_id="p\x85"), "entries[3]"),
    ],
)
def test_it_refuses_nul_and_control_characters_naming_the_field(api, doc, field):
    _refused(api(doc), field, "control character")


@pytest.mark.parametrize(
    "make, field, limit",
    [
        (lambda v: _doc_with(external_id=v), "tournament.external_id", 128),
        (lambda v: _doc_with(name=v), "tournament.name", 255),
        (lambda v: _entry(0, entry_id=v), "entries[0].entry_id", 128),
        (lambda v: _entry(0, player_id=v), "entries[0]", 128),
        (lambda v: _entry(0, screen_name=v), "entries[0]", 128),
        (
            lambda v: _doc_with(prizes=[{"place": 1, "amount": "500.00", "description": v}]),
            "tournament.prizes[0].description",
            255,
        ),
    ],
)
def test_it_accepts_the_column_length_and_refuses_one_more(api, manager, make, field, limit):
    _refused(api(make("x" * (limit + 1))), field, f"at most {limit}")
    assert api(make("é" * limit)).status_code == 201  # characters, not bytes


# --- integers --------------------------------------------------------------------------------


@pytest.mark.parametrize("chips", [2**63, 2**64 - 1])
def test_it_refuses_chips_beyond_a_bigint(api, chips):
    doc = snapshot_doc(active_chips=[chips, 10])
    doc["tournament"].pop("chips_in_play")
    _refused(api(doc), "entries[0]", "chips")


def test_it_refuses_chips_in_play_beyond_a_bigint(api):
    _refused(api(_doc_with(chips_in_play=2**63)), "tournament.chips_in_play")


def test_it_accepts_the_largest_bigint_of_chips(api):
    doc = snapshot_doc(active_chips=[2**63 - 1])
    assert api(doc).status_code == 201
    assert Entry.objects.get(entry_id="e1").chips == 2**63 - 1


def test_it_refuses_a_finish_place_beyond_an_integer_and_accepts_the_largest(api):
    _refused(api(_entry(5, finish_place=2**31)), "entries[5]", "finish_place")
    assert api(_entry(5, finish_place=2**31 - 1)).status_code == 201


def test_it_refuses_amounts_with_thousands_of_digits_quickly(api):
    started = time.monotonic()
    _refused(api(_doc_with(fee="9" * 5000)), "tournament.fee", "larger")
    _refused(api(_entry(4, buy_in_paid="9" * 5000 + ".00")), "entries[4]", "larger")
    assert time.monotonic() - started < 5


# --- CSV form: huge integers ------------------------------------------------------------------

ENTRIES_CSV = "entry_id,player_id,status,chips,finish_place\ne1,p1,active,{chips},\ne2,p2,eliminated,,{place}\n"
PRIZES_CSV = "place,amount\n1,100.00\n"


def _csv(support, chips="10", place="2", prizes=PRIZES_CSV, **fields):
    from django.utils import timezone

    fields = {
        "external_id": "CSV-1",
        "name": "CSV",
        "currency": "USD",
        "buy_in": "1.00",
        "fee": "0.10",
        "starts_at": timezone.now().isoformat(),
        **fields,
    }
    return import_csv(
        ENTRIES_CSV.format(chips=chips, place=place).encode(),
        prizes,
        fields,
        acting_user=support,
    )


@pytest.mark.parametrize(
    "chips, place, words",
    [
        ("9" * 5000, "2", "too large"),
        (str(2**64), "2", "too large"),
        (str(2**63), "2", "at most"),
        ("10", str(2**31), "finish_place"),
        ("10", "9" * 5000, "too large"),
    ],
)
def test_it_refuses_huge_integers_in_the_csv_form_naming_the_row(support, chips, place, words):
    from refunds_admin.errors import Refused

    with pytest.raises(Refused) as refused:
        _csv(support, chips=chips, place=place)
    assert any("entries CSV row" in where for where, _ in refused.value.problems)
    assert any(words in f"{where} {what}" for where, what in refused.value.problems)
    _nothing_stored()


def test_it_refuses_a_huge_prize_range_in_the_csv_form(support):
    from refunds_admin.errors import Refused

    with pytest.raises(Refused):
        _csv(support, prizes="place,amount\n1-" + "9" * 5000 + ",1.00\n")
    _nothing_stored()


# --- prize ranges ------------------------------------------------------------------------------


def test_it_refuses_a_prize_range_far_wider_than_the_entries_at_once(api):
    doc = _doc_with(
        prizes=[{"place": 1, "amount": "500.00"}, {"places": [1000, 1000000], "amount": "1.00"}]
    )
    started = time.monotonic()
    _refused(api(doc), "tournament.prizes[1].places", "entries")
    assert time.monotonic() - started < 5


def test_it_refuses_many_narrow_ranges_that_add_up_to_a_huge_table(api):
    # Each range is no wider than the 10 entries, but together they list 2,000 places.
    prizes = [{"place": 1, "amount": "500.00"}] + [
        {"places": [p, p + 9], "amount": "0.00"} for p in range(2, 2002, 10)
    ]
    started = time.monotonic()
    _refused(api(_doc_with(prizes=prizes)), "tournament.prizes", "at most the 10 entries plus")
    assert time.monotonic() - started < 5


def test_it_accepts_a_fixed_table_naming_a_few_places_beyond_a_small_field(api):
    # 10 entries; the table names 15 places, one by one or as a range: both are accepted.
    prizes = [{"place": p, "amount": "100.00" if p < 3 else "0.00"} for p in range(1, 16)]
    assert api(_doc_with(prizes=prizes)).status_code == 201
    prizes = [
        {"place": 1, "amount": "500.00"},
        {"place": 2, "amount": "100.00"},
        {"places": [3, 15], "amount": "10.00"},
    ]
    assert api(_doc_with(prizes=prizes, external_id="T-RANGE")).status_code == 201


def test_it_accepts_a_range_up_to_the_last_entry(api):
    doc = _doc_with(
        prizes=[{"place": 1, "amount": "500.00"}, {"places": [2, 10], "amount": "1.00"}]
    )
    assert api(doc).status_code == 201


# --- duplicate keys ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text, key",
    [
        ('{"format": "tournament-snapshot/1", "format": "tournament-snapshot/1"', "format"),
        ('{"a": 1, "\\u0061": 2', "a"),  # the same key, once escaped
        ('{"x": {"k": "1:2"}, "x": {"k": "3"}', "x"),
        ('{"c": "\\u003a", "c": 1', "c"),  # an escaped colon: the slow, exact check
    ],
)
def test_it_refuses_a_key_given_twice(text, key):
    with pytest.raises(SnapshotError) as refused:
        parse_snapshot(text + "}")
    assert f"key {key!r} twice" in str(refused.value)


def test_it_refuses_a_duplicate_key_inside_an_entry_through_the_api(api):
    text = dumps(snapshot_doc()).replace(
        '"entry_id": "e3",', '"entry_id": "e3", "status": "eliminated",', 1
    )
    assert '"status": "eliminated"' in text
    _refused(api(text), "document", "twice")


def test_it_does_not_mistake_colons_in_values_for_duplicates(api):
    doc = snapshot_doc(name="Sunday: 10:00 \u003a special", entry_fields={0: {"screen_name": ":"}})
    text = dumps(doc).replace("special", "\\u003a\\u003A special")
    assert api(text).status_code == 201


# --- size --------------------------------------------------------------------------------------


def test_it_refuses_a_document_above_the_documented_size(monkeypatch):
    monkeypatch.setattr(engine, "MAX_DOCUMENT_BYTES", 1000)
    with pytest.raises(SnapshotError, match="at most 0 MB|MB"):
        parse_snapshot(dumps(snapshot_doc()).encode())


def test_it_answers_a_too_large_api_body_with_413_json_without_reading_it(api):
    response = api(dumps(snapshot_doc()), CONTENT_LENGTH=str(210 * 2**20))
    assert response.status_code == 413
    assert response["Content-Type"] == "application/json"
    # The limit docs/api.md states for a snapshot body, not Django's 1 MB more.
    assert "larger than the 100 MB this API accepts" in response.json()["error"]
    _nothing_stored()


@override_settings(DATA_UPLOAD_MAX_MEMORY_SIZE=1000)
def test_it_answers_413_json_when_django_refuses_the_body(api):
    response = api(dumps(snapshot_doc()))
    assert response.status_code == 413
    assert "larger than the 1,000 bytes this API accepts" in response.json()["error"]
    _nothing_stored()


def test_it_answers_json_for_unknown_api_paths_and_methods(support):
    client = Client()
    response = client.get("/api/nope")
    assert response.status_code == 404 and response.json()["error"]
    response = client.get(URL)
    assert response.status_code == 405 and response.json()["error"]


def test_it_refuses_an_upload_above_the_limit_before_reading_it(client, support, monkeypatch):
    from django.core.files.uploadedfile import SimpleUploadedFile

    from refunds_admin.web import forms

    monkeypatch.setattr(forms, "MAX_DOCUMENT_BYTES", 100)
    client.force_login(support)
    upload = SimpleUploadedFile("s.json", dumps(snapshot_doc()).encode(), "application/json")
    response = client.post("/tournaments/import/", {"kind": "json", "file": upload})
    assert response.status_code == 400 and b"at most" in response.content
    _nothing_stored()


@pytest.mark.parametrize("failed_at", ["0001-01-01T00:00:00", "9999-12-31T23:59:59"])
def test_the_incident_form_refuses_extreme_times_without_a_500(client, support, failed_at):
    tournament = import_doc(support).tournament
    client.force_login(support)
    response = client.post(
        "/incidents/new/",
        {"tournament": tournament.pk, "failed_at": failed_at, "cause": "server_crash"},
    )
    assert response.status_code == 400
    preview = client.get(
        "/incidents/preview/", {"tournament": tournament.pk, "failed_at": failed_at}
    )
    assert preview.status_code == 200


def test_the_api_answers_json_even_when_it_fails(support, monkeypatch):
    from refunds_admin.incidents import services as incident_services

    token = create_api_client("platform", user=support)[1]

    def broken(*args, **kwargs):
        raise RuntimeError("disk full")

    monkeypatch.setattr(incident_services, "import_snapshot", broken)
    client = Client(raise_request_exception=False)
    response = client.post(
        URL,
        data=dumps(snapshot_doc()),
        content_type="application/json",
        headers={"Authorization": f"Bearer {token}"},
    )
    assert response.status_code == 500
    assert response["Content-Type"] == "application/json" and response.json()["error"]
    assert "disk full" not in response.content.decode()


def test_it_refuses_a_csv_file_above_the_documented_size(support, monkeypatch):
    from refunds_admin.errors import Refused
    from refunds_admin.tournaments import services

    monkeypatch.setattr(services, "MAX_CSV_BYTES", 10)
    with pytest.raises(Refused) as refused:
        _csv(support)
    assert refused.value.problems[0][0] == "entries CSV"
    assert "MB are accepted" in refused.value.problems[0][1]
    _nothing_stored()
