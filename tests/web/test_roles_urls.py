"""Every URL of the browser app, for every role and for an anonymous visitor.

Anonymous visitors are sent to the sign-in page; a signed-in account without a role gets 403
everywhere; support, manager and auditor get what their role allows. Write endpoints are only
POSTed by roles that may not use them here (they must be refused before any service runs); what
an allowed role's POST does is tested page by page.
"""

import pytest
from django.urls import reverse

ALL = {"support", "manager", "auditor"}
PREPARE = {"support", "manager"}
DECIDE = {"manager"}
REPORT = {"manager", "auditor"}
PERSONAS = ["support", "manager", "auditor", "outsider"]


def _pages(w):
    t, i, p = w["tournament"].pk, w["incident"].pk, w["proposal"].pk
    # (url, method, roles allowed)
    return [
        (reverse("dashboard"), "get", ALL),
        (reverse("tournament_list"), "get", ALL),
        (reverse("tournament_list") + "?q=UP", "get", ALL),
        (reverse("tournament_detail", args=[t]), "get", ALL),
        (reverse("tournament_detail", args=[t]) + "?q=p001", "get", ALL),
        (reverse("tournament_import"), "get", PREPARE),
        (reverse("tournament_import"), "post", PREPARE),
        (reverse("incident_new"), "get", PREPARE),
        (reverse("incident_new"), "post", PREPARE),
        (reverse("incident_preview"), "get", PREPARE),
        (reverse("incident_detail", args=[i]), "get", ALL),
        (reverse("incident_restart", args=[i]), "post", PREPARE),
        (reverse("incident_resumed", args=[i]), "post", PREPARE),
        (reverse("incident_not_resumable", args=[i]), "post", DECIDE),
        (reverse("incident_site_wide", args=[i]), "post", DECIDE),
        (reverse("incident_cancel", args=[i]), "post", PREPARE),
        (reverse("incident_prepare", args=[i]), "post", PREPARE),
        (reverse("proposal_detail", args=[p]), "get", ALL),
        (reverse("proposal_detail", args=[p]) + "?sort=total&show=active", "get", ALL),
        (reverse("proposal_statement", args=[p, "e001"]), "get", ALL),
        (reverse("proposal_chart", args=[p]), "get", ALL),
        (reverse("proposal_export_csv", args=[p]), "get", ALL),
        (reverse("proposal_export_json", args=[p]), "get", ALL),
        (reverse("proposal_export_xlsx", args=[p]), "get", ALL),
        (reverse("proposal_submit", args=[p]), "post", PREPARE),
        (reverse("proposal_approval", args=[p]), "get", ALL),
        (reverse("proposal_approval", args=[p]), "post", DECIDE),
        (reverse("proposal_reject", args=[p]), "post", DECIDE),
        (reverse("proposal_withdraw", args=[p]), "post", PREPARE),
        (reverse("proposal_list"), "get", ALL),
        (reverse("proposal_list") + "?status=draft&mine=on&sort=total", "get", ALL),
        (reverse("incident_list"), "get", ALL),
        (reverse("incident_list") + "?status=cancelled&mine=on", "get", ALL),
        (reverse("proposal_replay", args=[p]), "post", ALL),
        (reverse("proposal_posting", args=[p]), "get", ALL),
        (reverse("proposal_resume_posting", args=[p]), "post", DECIDE),
        (reverse("audit"), "get", ALL),
        (reverse("audit") + "?tournament=UP-TEST-1&player=p001", "get", ALL),
        (reverse("audit_export"), "get", ALL),
        (reverse("player_lookup"), "get", ALL),
        (reverse("player_lookup") + "?q=PLAYER0", "get", ALL),
        (reverse("statement_outbox", args=[p]), "get", ALL),
        (reverse("statement_retry", args=[p]), "post", DECIDE),
        (reverse("notification_settings"), "get", ALL),
        (reverse("finance_report"), "get", REPORT),
        (reverse("finance_report") + "?start=2026-01-01&end=2026-12-31", "get", REPORT),
        (reverse("finance_report_chart"), "get", REPORT),
        (reverse("finance_report_csv"), "get", REPORT),
        (reverse("finance_report_xlsx"), "get", REPORT),
        (reverse("posting_credits", args=[p]), "get", REPORT),
    ]


@pytest.mark.django_db
def test_it_sends_anonymous_visitors_to_sign_in_everywhere(client, world):
    for url, method, _ in _pages(world):
        response = getattr(client, method)(url)
        assert response.status_code == 302, url
        assert response["Location"].startswith(reverse("login")), url


@pytest.mark.django_db
@pytest.mark.parametrize("persona", PERSONAS)
def test_it_gives_each_role_exactly_its_pages(client, world, persona, request):
    client.force_login(request.getfixturevalue(persona))
    checked = 0
    for url, method, allowed in _pages(world):
        if persona not in allowed:
            response = getattr(client, method)(url)
            assert response.status_code == 403, (persona, method, url)
            checked += 1
        elif method == "get":
            response = client.get(url)
            assert response.status_code == 200, (persona, url, response.status_code)
            # HEAD is the GET without its body (it was a 405 on the pages that also POST).
            head = client.head(url)
            body = b"".join(head.streaming_content) if head.streaming else head.content
            assert head.status_code == 200 and body == b"", (persona, url, head)
            checked += 1
    assert checked >= 15


@pytest.mark.django_db
def test_it_shows_the_403_page_to_a_user_without_a_role(client, world, outsider):
    client.force_login(outsider)
    response = client.get(reverse("dashboard"))
    assert response.status_code == 403
    assert b"Not allowed" in response.content


@pytest.mark.django_db
def test_it_refuses_get_on_write_endpoints(client, world, manager):
    client.force_login(manager)
    for name in ("proposal_submit", "proposal_reject", "proposal_replay"):
        assert client.get(reverse(name, args=[world["proposal"].pk])).status_code == 405


@pytest.mark.django_db
def test_the_refusal_page_says_which_roles_may_and_says_it_once(client, auditor):
    client.force_login(auditor)
    response = client.get(reverse("tournament_import"))
    page = response.content.decode()
    assert response.status_code == 403
    assert page.count("does not allow") == 1
    assert "It needs the manager or support role." in page
