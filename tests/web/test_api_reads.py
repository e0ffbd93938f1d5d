"""The platform's reads: a tournament's incidents, a proposal's status and totals, its posting
job's progress and one player's statement, with the API's token and the acting user's role."""

import pytest
from django.contrib.auth.models import Group
from django.test import Client

from refunds_admin.ledger.models import Credit
from refunds_admin.payouts.money import display
from refunds_admin.proposals import services as proposal_services
from refunds_admin.proposals.models import PayoutLine
from refunds_admin.tournaments.services import create_api_client
from tests.support.factories import (
    approved_proposal,
    draft_proposal,
    open_incident,
    posted_proposal,
)

pytestmark = pytest.mark.django_db


@pytest.fixture
def api():
    return Client(enforce_csrf_checks=True)


def _token(user, name="platform"):
    return create_api_client(name, user=user)[1]


def _get(api, url, token):
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    return api.get(url, headers=headers)


def test_a_tournaments_incidents_with_their_proposals(api, support):
    proposal = draft_proposal(support, external_id="UP/7")  # an external id with a slash
    other = open_incident(support, external_id="OTHER")
    response = _get(api, "/api/tournaments/UP/7/incidents", _token(support))
    assert response.status_code == 200, response.content
    data = response.json()
    assert data["tournament"] == {"id": proposal.incident.tournament_id, "external_id": "UP/7"}
    [incident] = data["incidents"]
    assert incident["id"] == proposal.incident_id and incident["id"] != other.pk
    assert incident["status"] == "cancelled" and incident["rule"] == proposal.rule
    assert incident["proposals"] == [{"id": proposal.pk, "version": 1, "status": "draft"}]


def test_an_unknown_tournament_is_a_404_in_the_apis_error_shape(api, support):
    response = _get(api, "/api/tournaments/NOPE/incidents", _token(support))
    assert response.status_code == 404
    assert response.json() == {"error": "No such tournament.", "problems": []}


def test_a_proposals_status_and_totals(api, support):
    proposal = draft_proposal(support)
    response = _get(api, f"/api/proposals/{proposal.pk}", _token(support))
    assert response.status_code == 200, response.content
    data = response.json()
    lines = PayoutLine.objects.filter(proposal=proposal)
    assert data["status"] == "draft" and data["lines"] == lines.count() == 10
    assert data["total_cents"] == sum(line.total_cents for line in lines) > 0
    assert sum(data["components_cents"].values()) == data["total_cents"]
    assert data["components_cents"]["fee_refund"] == sum(x.fee_refund_cents for x in lines)
    assert data["refunds_by_method"]["cash"] == data["total_cents"]
    assert data["policy"]["id"] == proposal.policy_id
    assert data["tournament"]["external_id"] == "T-1"


def test_an_unknown_proposal_is_a_404(api, support):
    token = _token(support)
    for url in ("/api/proposals/999999", "/api/proposals/999999/posting",
                "/api/proposals/999999/statements/e1"):  # fmt: skip
        response = _get(api, url, token)
        assert response.status_code == 404, url
        assert response.json()["error"] == "No such proposal."


def test_posting_progress_before_approval_queued_and_posted(api, support, manager):
    token = _token(support)
    draft = draft_proposal(support, external_id="D-1")
    before = _get(api, f"/api/proposals/{draft.pk}/posting", token).json()
    assert before["state"] is None and before["done"] is False and before["posted"] == 0

    approved = approved_proposal(support, manager, external_id="A-1")
    queued = _get(api, f"/api/proposals/{approved.pk}/posting", token).json()
    assert queued["state"] == "queued" and queued["status"] == "queued"
    assert queued["total_cents"] == approved.total_cents and queued["wallet"]

    posted = posted_proposal(support, manager, external_id="P-1")
    done = _get(api, f"/api/proposals/{posted.pk}/posting", token).json()
    assert done["state"] == "posted" and done["done"] is True and done["percent"] == 100
    credits = Credit.objects.filter(proposal=posted)
    assert done["posted"] == done["total"] == credits.count() > 0
    assert done["posted_cents"] == posted.total_cents


def test_one_players_statement_with_its_credits(api, support, manager):
    proposal = posted_proposal(support, manager)
    line = PayoutLine.objects.get(proposal=proposal, entry_id="e1")
    response = _get(api, f"/api/proposals/{proposal.pk}/statements/e1", _token(support))
    assert response.status_code == 200, response.content
    data = response.json()
    assert (data["entry_id"], data["player_id"]) == ("e1", "p1")
    assert data["total_cents"] == line.total_cents > 0
    assert data["amounts_cents"]["chip_equity"] == line.chip_equity_cents
    # The text the page and the e-mail show, ending on the entry's total.
    assert data["text"] == proposal_services.statement(proposal, "e1")
    assert display(line.total_cents, "USD") in data["text"]
    assert sum(c["amount_cents"] for c in data["credits"]) == line.total_cents
    booked = Credit.objects.filter(proposal=proposal, entry_id="e1").values_list("key", flat=True)
    assert sorted(c["key"] for c in data["credits"]) == sorted(booked)


def test_a_statement_for_an_entry_not_in_the_proposal_is_a_404(api, support):
    proposal = draft_proposal(support)
    response = _get(api, f"/api/proposals/{proposal.pk}/statements/e999", _token(support))
    assert response.status_code == 404
    assert "entry" in response.json()["error"]


def test_reads_need_a_token_and_a_role_that_may_read(api, support, manager):
    proposal = draft_proposal(support)
    reader, nobody = _token(support, "reader"), _token(manager, "no-role")
    # The accounts moved: one to the auditors (who may read), one to no team at all.
    support.groups.set([Group.objects.get(name="auditor")])
    manager.groups.clear()
    urls = [
        "/api/tournaments/T-1/incidents",
        f"/api/proposals/{proposal.pk}",
        f"/api/proposals/{proposal.pk}/posting",
        f"/api/proposals/{proposal.pk}/statements/e1",
    ]
    for url in urls:
        assert _get(api, url, reader).status_code == 200, url  # an auditor may read
        unauthorized = _get(api, url, None)
        assert unauthorized.status_code == 401 and unauthorized["WWW-Authenticate"]
        assert _get(api, url, "wrong").status_code == 401
        refused = _get(api, url, nobody)
        assert refused.status_code == 403 and "may not read" in refused.json()["error"]


def test_a_read_answers_only_get_and_head_in_json(api, support):
    proposal = draft_proposal(support)
    response = api.post(
        f"/api/proposals/{proposal.pk}", headers={"Authorization": f"Bearer {_token(support)}"}
    )
    assert response.status_code == 405 and response["Allow"] == "GET, HEAD"
    assert response.json()["error"] == "Only GET or HEAD is allowed here."


def test_head_on_every_read_answers_as_its_get_without_the_body(api, support, manager):
    # Found by the platform's trial: HEAD on a read was a 405 (ninja serves only the methods an
    # operation names), where HTTP says it is GET without the body.
    proposal = posted_proposal(support, manager, external_id="UP/7")
    token = _token(support)
    headers = {"Authorization": f"Bearer {token}"}
    reads = [
        "/api/tournaments/UP/7/incidents",
        f"/api/proposals/{proposal.pk}",
        f"/api/proposals/{proposal.pk}/posting",
        f"/api/proposals/{proposal.pk}/statements/e1",
        "/api/schema",
        "/api/tournaments/NOPE/incidents",  # a 404 is the GET's 404
    ]
    for url in reads:
        get, head = api.get(url, headers=headers), api.head(url, headers=headers)
        assert head.status_code == get.status_code, (url, head.content)
        assert get.status_code in (200, 404) and head["Content-Type"] == "application/json"
        assert head["Content-Length"] == str(len(get.content)) and head.content == b"", url
    # Without a token: the GET's 401. On an operation that only POSTs: the JSON 405.
    assert api.head(f"/api/proposals/{proposal.pk}").status_code == 401
    refused = api.head("/api/outages", headers=headers)
    assert refused.status_code == 405 and refused["Allow"] == "POST"


@pytest.mark.parametrize("raw", ["null,null", "0", "99999999999999999999"])
def test_a_proposal_id_that_is_no_id_is_a_400_naming_it(api, support, raw):
    # Found by Schemathesis: a non-integer id fell through to a page's 404.
    response = _get(api, f"/api/proposals/{raw}/posting", _token(support))
    assert response.status_code == 400
    assert [p["field"] for p in response.json()["problems"]] == ["path.proposal_id"]


@pytest.mark.parametrize(
    "url",
    [
        "/api/proposals/{pk}/statements/e%0A1",  # a control character no id may hold
        "/api/tournaments/T%0A1/incidents",
        "/api/proposals/{pk}/statements/",  # an empty id
        "/api/tournaments//incidents",
        "/api/proposals/{pk}/posting/",
        "/api/",
        "/api/nothing",
    ],
)
def test_an_address_under_api_that_no_operation_serves_is_a_json_404_with_debug_on(
    api, support, settings, url
):
    # Found by Schemathesis (ST105): an entry id with a newline matched no route and, with DEBUG
    # on (`make run`), got Django's HTML 404 page instead of the API's error shape.
    settings.DEBUG = True
    proposal = draft_proposal(support)
    token = _token(support)
    for method in (api.get, api.post):
        response = method(url.format(pk=proposal.pk), headers={"Authorization": f"Bearer {token}"})
        assert response.status_code == 404, url
        assert response["Content-Type"] == "application/json", url
        assert response.json() == {"error": "No such API endpoint.", "problems": []}
