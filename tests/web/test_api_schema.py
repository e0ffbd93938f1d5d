"""The API's OpenAPI document: served at /api/schema to API clients only, the same as the
committed docs/openapi.json, and a valid OpenAPI 3.1 document that names every operation."""

import json
from pathlib import Path

import pytest
from django.test import Client
from openapi_spec_validator import validate

from refunds_admin.tournaments.services import create_api_client

pytestmark = pytest.mark.django_db
COMMITTED = Path(__file__).resolve().parents[2] / "docs" / "openapi.json"


@pytest.fixture
def served(support):
    token = create_api_client("platform", user=support)[1]
    response = Client().get("/api/schema", headers={"Authorization": f"Bearer {token}"})
    assert response.status_code == 200
    assert response["Content-Type"].startswith("application/json")
    return response.json()


def test_the_served_document_is_the_committed_one(served):
    committed = json.loads(COMMITTED.read_text(encoding="utf-8"))
    assert served == committed, (
        "docs/openapi.json differs from /api/schema: run "
        "`DEBUG=1 .venv/bin/python manage.py write_openapi` and commit the file"
    )


def test_the_document_is_valid_openapi_3_1(served):
    validate(served)  # raises, naming the offending part, on an invalid document
    assert served["openapi"].startswith("3.1")


def test_it_names_every_operation_its_auth_errors_and_limits(served):
    operations = {
        (path, method): op for path, ops in served["paths"].items() for method, op in ops.items()
    }
    assert set(operations) == {
        ("/api/snapshots", "post"),
        ("/api/outages", "post"),
        ("/api/tournaments/{external_id}/incidents", "get"),
        ("/api/proposals/{proposal_id}", "get"),
        ("/api/proposals/{proposal_id}/posting", "get"),
        ("/api/proposals/{proposal_id}/statements/{entry_id}", "get"),
    }
    schemes = served["components"]["securitySchemes"]
    assert schemes == {"ApiToken": {"type": "http", "scheme": "bearer"}}
    error = {"$ref": "#/components/schemas/ApiError"}
    for op in operations.values():
        assert op["security"] == [{"ApiToken": []}]
        assert op["responses"]["401"]["content"]["application/json"]["schema"] == error
        assert op["responses"]["403"]["content"]["application/json"]["schema"] == error
    schemas = served["components"]["schemas"]
    # The snapshot format with the policies' fields, and the error's field paths.
    entry = schemas["Entry"]["properties"]
    assert {"paid_with", "bounty", "bounties_won", "rebuys_paid", "rebuy_fees_paid"} <= set(entry)
    assert {"policy", "bounty", "guarantee"} <= set(schemas["Tournament"]["properties"])
    assert schemas["Payment"]["properties"]["method"]["enum"] == [
        "cash", "tournament_money", "ticket"
    ]  # fmt: skip
    assert "entries[0] (e1).chips" in schemas["Problem"]["properties"]["field"]["description"]
    assert "100 MB" in served["info"]["description"]
    assert "413" in operations[("/api/snapshots", "post")]["responses"]


@pytest.mark.parametrize("header", [None, "Bearer nope"])
def test_only_api_clients_may_read_it(header):
    headers = {"Authorization": header} if header else {}
    response = Client().get("/api/schema", headers=headers)
    assert response.status_code == 401 and response["WWW-Authenticate"].startswith("Bearer")
    assert response.json()["error"] == "A valid API token is required."


@pytest.mark.parametrize("method", ["post", "put", "delete"])
def test_it_answers_another_method_with_the_apis_json_405(support, method):
    token = create_api_client("platform", user=support)[1]
    # enforce_csrf_checks: as a client without a session cookie meets the deployed app.
    response = getattr(Client(enforce_csrf_checks=True), method)(
        "/api/schema", headers={"Authorization": f"Bearer {token}"}
    )
    assert response.status_code == 405 and response["Allow"] == "GET, HEAD"
    assert response.json()["error"] == "Only GET or HEAD is allowed here."
