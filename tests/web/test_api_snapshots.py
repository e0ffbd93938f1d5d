"""POST /api/snapshots: the game platform's import, with per-client tokens hashed at rest."""

import hashlib
import json
from pathlib import Path

import pytest
from django.core.management import call_command
from django.test import Client
from jsonschema import Draft202012Validator

from refunds_admin.tournaments.models import ApiClient, Snapshot, Tournament
from refunds_admin.tournaments.services import create_api_client
from tests.support.factories import dumps, snapshot_doc

pytestmark = pytest.mark.django_db
URL = "/api/snapshots"
OPENAPI = Path(__file__).resolve().parents[2] / "docs" / "openapi.json"


@pytest.fixture
def api():
    # enforce_csrf_checks: the API must work without a CSRF token (it has no session).
    return Client(enforce_csrf_checks=True)


@pytest.fixture
def token(support):
    return create_api_client("platform", user=support)[1]


def _post(api, body, token=None):
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    return api.post(URL, data=body, content_type="application/json", headers=headers)


def test_it_imports_a_snapshot_and_answers_201(api, token):
    body = dumps(snapshot_doc("API-1"))
    response = _post(api, body, token)
    assert response.status_code == 201, response.content
    data = response.json()
    snapshot = Snapshot.objects.get()
    assert data["tournament"] == {"id": snapshot.tournament_id, "external_id": "API-1"}
    assert data["snapshot"]["version"] == 1
    assert data["snapshot"]["sha256"] == hashlib.sha256(body.encode()).hexdigest()
    assert snapshot.source == "api" and snapshot.document == body
    assert snapshot.imported_by.username == "sam_support"


def test_it_stores_only_a_hash_of_the_token(token):
    client = ApiClient.objects.get()
    assert client.token_sha256 == hashlib.sha256(token.encode()).hexdigest()
    assert token not in json.dumps(list(ApiClient.objects.values()), default=str)


@pytest.mark.parametrize("header", [None, "Bearer nope", "Basic c2FtOnB3", "Bearer "])
def test_it_answers_401_without_a_valid_token(api, token, header):
    headers = {"Authorization": header} if header else {}
    response = api.post(
        URL, data=dumps(snapshot_doc()), content_type="application/json", headers=headers
    )
    assert response.status_code == 401
    assert response["WWW-Authenticate"].startswith("Bearer")
    assert "error" in response.json()
    assert Tournament.objects.count() == 0


def test_it_answers_401_for_a_switched_off_client(api, token):
    ApiClient.objects.update(is_active=False)
    assert _post(api, dumps(snapshot_doc()), token).status_code == 401


def test_it_answers_403_when_the_clients_user_lacks_the_role(api, token, support):
    support.groups.clear()
    response = _post(api, dumps(snapshot_doc()), token)
    assert response.status_code == 403
    assert "may not import snapshots" in response.json()["error"]
    assert Tournament.objects.count() == 0


def test_an_auditors_client_reads_and_may_not_import(api, support, auditor):
    from tests.support.factories import submitted_proposal

    proposal = submitted_proposal(support)
    reader = create_api_client("audit-tools", user=auditor)[1]
    headers = {"Authorization": f"Bearer {reader}"}
    read = api.get(f"/api/proposals/{proposal.pk}", headers=headers)
    assert read.status_code == 200 and read.json()["total_cents"] == proposal.total_cents
    response = _post(api, dumps(snapshot_doc("API-AUDIT")), reader)
    assert response.status_code == 403
    assert not Tournament.objects.filter(external_id="API-AUDIT").exists()


def test_it_answers_400_listing_every_problem(api, token):
    doc = snapshot_doc()
    doc["tournament"]["fee"] = 3.0
    doc["entries"][0]["chips"] = 0
    doc["entries"][4]["status"] = "gone"
    response = _post(api, json.dumps(doc), token)
    assert response.status_code == 400
    data = response.json()
    assert data["error"]
    fields = [p["field"] for p in data["problems"]]
    assert "tournament.fee" in fields
    assert "entries[0] (e1).chips" in fields
    assert "entries[4] (e5).status" in fields
    assert all(p["message"] for p in data["problems"])
    assert Tournament.objects.count() == 0


def test_it_lists_the_first_50_problems_and_counts_them_all(api, token):
    doc = snapshot_doc(eliminated=200)
    for entry in doc["entries"][4:]:
        entry["status"] = "gone"  # 200 entries with an unknown status: 200 problems
    response = _post(api, json.dumps(doc), token)
    assert response.status_code == 400
    data = response.json()
    assert len(data["problems"]) == 50
    assert data["problems_total"] == 200
    assert all(p["field"].endswith(".status") for p in data["problems"])
    assert Tournament.objects.count() == 0


def test_it_answers_400_for_a_body_that_is_not_json(api, token):
    response = _post(api, "entries: none", token)
    assert response.status_code == 400
    assert response.json()["problems"][0]["field"] == "document"


def test_it_accepts_only_post(api, token):
    response = api.get(URL, headers={"Authorization": f"Bearer {token}"})
    assert response.status_code == 405


def test_it_prints_the_token_once_from_the_command(api, support, capsys):
    call_command("create_api_client", "platform-2", user=support.username)
    out = capsys.readouterr().out
    token = out.strip().splitlines()[-1]
    assert ApiClient.objects.get(name="platform-2").token_sha256 == (
        hashlib.sha256(token.encode()).hexdigest()
    )
    assert _post(api, dumps(snapshot_doc()), token).status_code == 201


def _schema_refuses(doc):
    """Whether docs/openapi.json's TournamentSnapshot, formats included, forbids the document."""
    components = json.loads(OPENAPI.read_text(encoding="utf-8"))["components"]
    schema = {"$ref": "#/components/schemas/TournamentSnapshot", "components": components}
    validator = Draft202012Validator(schema, format_checker=Draft202012Validator.FORMAT_CHECKER)
    return not validator.is_valid(doc)


def _no_entries(doc):
    doc["entries"] = []


def _typo_in_a_prize_row(doc):
    doc["tournament"]["prizes"][2]["amonut"] = "10.00"


def _space_for_the_t(doc):
    doc["tournament"]["starts_at"] = doc["tournament"]["starts_at"].replace("T", " ")


@pytest.mark.parametrize(
    ("change", "field"),
    [
        (_no_entries, "entries"),
        (_typo_in_a_prize_row, "tournament.prizes[2].amonut"),
        (_space_for_the_t, "tournament.starts_at"),
    ],
)
def test_what_the_schema_forbids_the_server_refuses_naming_the_field(api, token, change, field):
    doc = snapshot_doc("API-1")
    assert not _schema_refuses(doc)
    change(doc)
    assert _schema_refuses(doc)
    response = _post(api, dumps(doc), token)
    assert response.status_code == 400, response.content
    assert [p["field"] for p in response.json()["problems"]] == [field]
    assert not Tournament.objects.exists()


def test_a_misspelt_field_is_refused_though_the_schema_lets_a_platforms_own_fields_through(
    api, token
):
    # The schema allows an entry's own fields, so it cannot tell `buyin_paid` from `seat`; the
    # server does, and names the entry and the field the key resembles. Nothing is stored.
    doc = snapshot_doc()
    doc["entries"][1]["buyin_paid"] = "0.00"
    doc["entries"][0]["seat"] = 4
    assert not _schema_refuses(doc)
    response = _post(api, dumps(doc), token)
    assert response.status_code == 400
    problems = response.json()["problems"]
    entry_id = doc["entries"][1]["entry_id"]
    assert [p["field"] for p in problems] == [f"entries[1] ({entry_id}).buyin_paid"]
    assert "did you mean buy_in_paid?" in problems[0]["message"]
    assert not Snapshot.objects.exists()


def test_a_string_where_a_number_belongs_is_called_a_json_string(api, token):
    # The platform's trial: "must be a whole number, not a JSON str" (Python's name for it).
    doc = snapshot_doc("API-1")
    doc["entries"][0]["chips"] = "1000"
    response = _post(api, dumps(doc), token)
    assert response.status_code == 400
    problems = {p["field"]: p["message"] for p in response.json()["problems"]}
    assert problems["entries[0] (e1).chips"] == "must be a whole number, not a JSON string"


@pytest.mark.parametrize("offset", ["+23:53", "-16:00", "+14:01", "+10:75"])
def test_a_start_at_an_offset_no_time_zone_has_is_refused_naming_it_not_a_500(api, token, offset):
    # Schemathesis: PostgreSQL cannot hold an offset beyond +-15:59 (DataError, a 500); no time
    # zone is further than -12:00 or +14:00 from UTC.
    doc = snapshot_doc("API-1")
    doc["tournament"]["starts_at"] = "2026-11-29T18:00:00" + offset
    response = _post(api, dumps(doc), token)
    assert response.status_code == 400, response.content
    [problem] = response.json()["problems"]
    assert problem["field"] == "tournament.starts_at"
    assert "-12:00 to +14:00" in problem["message"]
    assert not Tournament.objects.exists()


def test_the_furthest_offsets_of_real_time_zones_are_accepted(api, token):
    for n, offset in enumerate(["+14:00", "-12:00", "+05:45"]):
        doc = snapshot_doc(f"API-{n}", starts_at=None)
        doc["tournament"]["starts_at"] = "2026-11-29T18:00:00" + offset
        response = _post(api, dumps(doc), token)
        assert response.status_code == 201, response.content
