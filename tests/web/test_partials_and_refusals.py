"""Pages that answer htmx with a partial say so to caches (Vary: HX-Request), and a refused
action shows its page again, with the form's errors, through the page's own helper."""

from datetime import timedelta
from urllib.parse import quote

import pytest
from django.urls import reverse
from django.utils import timezone
from django.utils.cache import has_vary_header

from tests.support.factories import open_incident, submitted_proposal, totp_code

pytestmark = pytest.mark.django_db
HTMX = {"HTTP_HX_REQUEST": "true"}


def _pages(support):
    proposal = submitted_proposal(support)
    line = proposal.lines.filter(status="active").first()
    return {
        "tournament": (
            reverse("tournament_detail", args=[proposal.incident.tournament_id]),
            {"HTTP_HX_TARGET": "entries"},
        ),
        "proposal": (reverse("proposal_detail", args=[proposal.pk]), {"HTTP_HX_TARGET": "lines"}),
        "statement": (reverse("proposal_statement", args=[proposal.pk, line.entry_id]), {}),
        "audit": (reverse("audit"), {"HTTP_HX_TARGET": "events"}),
    }


def test_it_sends_vary_hx_request_from_every_page_with_a_partial(client, support, manager):
    client.force_login(manager)
    for name, (url, target) in _pages(support).items():
        full = client.get(url)
        partial = client.get(url, **HTMX, **target)
        assert full.status_code == partial.status_code == 200, name
        assert has_vary_header(full, "HX-Request") and has_vary_header(partial, "HX-Request"), name
        # The partial is a fragment of the page, not the page again.
        assert b"<html" in full.content and b"<html" not in partial.content, name


def test_it_shows_the_incident_page_again_after_a_refused_action(client, support):
    incident = open_incident(support)
    client.force_login(support)
    a_year_before = incident.failed_at - timedelta(days=365)
    response = client.post(
        reverse("incident_resumed", args=[incident.pk]),
        {"resumed_at": timezone.localtime(a_year_before).strftime("%Y-%m-%dT%H:%M")},
    )
    assert response.status_code == 400
    page = response.content.decode()
    assert f"Incident {incident.pk}" in page and "before the failure" in page
    incident.refresh_from_db()
    assert incident.status == "open"


def test_it_shows_the_approval_page_again_after_a_refused_rejection(client, support, manager):
    proposal = submitted_proposal(support)
    client.force_login(manager)
    response = client.post(reverse("proposal_reject", args=[proposal.pk]), {"reason": ""})
    assert response.status_code == 400
    page = response.content.decode()
    assert proposal.fingerprint in page and "This field is required." in page
    proposal.refresh_from_db()
    assert proposal.status == "submitted"


def test_it_shows_the_approval_page_again_after_a_refused_approval(client, support, manager):
    proposal = submitted_proposal(support)
    client.force_login(manager)
    response = client.post(
        reverse("proposal_approval", args=[proposal.pk]),
        {
            "fingerprint": "0" * 64,
            "password": "pw-" + manager.username,
            "otp_token": totp_code(manager),
        },
    )
    assert response.status_code == 400
    assert "is not the one you reviewed" in response.content.decode()
    proposal.refresh_from_db()
    assert proposal.status == "submitted"


def test_a_fragment_asked_for_after_sign_out_sends_the_whole_window_to_sign_in(client, support):
    # Signed out in another tab, a filter of the breakdown swapped the whole sign-in page (top
    # bar and all) into the breakdown's box, and pushed the sign-in address into the history.
    from tests.support.factories import draft_proposal

    proposal = draft_proposal(support)
    page = f"/proposals/{proposal.pk}/?show="
    response = client.get(
        reverse("proposal_detail", args=[proposal.pk]),
        {"show": ""},
        HTTP_HX_REQUEST="true",
        HTTP_HX_TARGET="lines",
        HTTP_HX_CURRENT_URL=f"http://testserver{page}",
    )
    assert response.status_code == 200 and not response.content
    assert response["HX-Redirect"] == f"/accounts/login/?next={quote(page)}"
    # Without htmx, the usual redirect.
    assert client.get(page).status_code == 302
