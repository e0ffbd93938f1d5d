"""Every decision that moves money is made from a session that proved the second factor: a
manager signs in with the password and then a code from the authenticator app, and a session
signed in with the password alone (a stolen password) decides nothing. Codes are computed from
the device's key, as the app would."""

import pytest
from django.urls import reverse

from refunds_admin.incidents.models import Incident
from refunds_admin.outages.models import Outage
from refunds_admin.proposals.models import PayoutProposal
from tests.conftest import password_only_login
from tests.support.factories import open_incident, outage, submitted_proposal, totp_code

pytestmark = pytest.mark.django_db


@pytest.fixture
def new_manager(django_user_model):
    """A manager who has not enrolled an authenticator yet."""
    from django.contrib.auth.models import Group

    user = django_user_model.objects.create_user("nina_manager", password="pw-nina_manager")
    user.groups.add(Group.objects.get_or_create(name="manager")[0])
    return user


def _decisions(support):
    """Every money decision as (url, data), on fresh objects it would change."""
    proposal = submitted_proposal(support)
    incident = open_incident(support, external_id="T-2")
    an_outage = outage(support)
    posts = [
        (
            reverse("proposal_approval", args=[proposal.pk]),
            {"fingerprint": proposal.fingerprint, "password": "x", "otp_token": "123456"},
        ),
        (reverse("proposal_reject", args=[proposal.pk]), {"reason": "no"}),
        (reverse("incident_not_resumable", args=[incident.pk]), {"reason": "dead"}),
        (reverse("incident_site_wide", args=[incident.pk]), {"justification": "lag"}),
        (reverse("outage_site_wide", args=[an_outage.pk]), {"justification": "lag everywhere"}),
        (reverse("outage_not_resumable", args=[an_outage.pk]), {"reason": "the DC is gone"}),
        (
            reverse("outage_review", args=[an_outage.pk]),
            {"fingerprint": "0" * 64, "password": "x", "otp_token": "123456"},
        ),
        (reverse("outage_review_reject", args=[an_outage.pk]), {"reason": "no"}),
    ]
    return proposal, incident, an_outage, posts


def _nothing_changed(proposal, incident, an_outage):
    proposal.refresh_from_db()
    incident.refresh_from_db()
    an_outage.refresh_from_db()
    assert proposal.status == PayoutProposal.Status.SUBMITTED
    assert incident.status == Incident.Status.OPEN and not incident.site_wide_issue
    assert not an_outage.site_wide_issue and an_outage.rest_declared_by_id is None
    assert not Incident.objects.filter(site_wide_issue=True).exists()
    members = Incident.objects.filter(outage_membership__outage=an_outage)
    assert members.exists() and not members.exclude(status=Incident.Status.OPEN).exists()
    assert Outage.objects.get(pk=an_outage.pk).site_wide_confirmed_by_id is None


def test_every_money_decision_sends_a_manager_without_an_authenticator_to_enrol(
    client, support, new_manager
):
    proposal, incident, an_outage, posts = _decisions(support)
    client.force_login(new_manager)
    for url, data in posts:
        response = client.post(url, data)
        assert response.status_code == 302, url
        assert response["Location"].startswith(reverse("mfa_enrol")), url
    _nothing_changed(proposal, incident, an_outage)


def test_every_money_decision_refuses_a_session_signed_in_with_the_password_alone(
    client, support, manager
):
    proposal, incident, an_outage, posts = _decisions(support)
    password_only_login(client, manager)
    for url, data in posts:
        response = client.post(url, data)
        assert response.status_code == 302, url
        assert response["Location"].startswith(reverse("mfa_verify")), url
    _nothing_changed(proposal, incident, an_outage)


def test_a_manager_signs_in_with_the_password_then_a_code(client, support, manager):
    incident = open_incident(support, external_id="T-3")
    response = client.post(
        reverse("login"), {"username": manager.username, "password": "pw-" + manager.username}
    )
    assert response.status_code == 302 and response["Location"].startswith(reverse("mfa_verify"))
    # The password alone decides nothing yet.
    url = reverse("incident_not_resumable", args=[incident.pk])
    assert client.post(url, {"reason": "dead"})["Location"].startswith(reverse("mfa_verify"))
    right = client.post(reverse("mfa_verify"), {"code": totp_code(manager), "next": "/"})
    assert right.status_code == 302 and right["Location"] == "/"
    client.post(url, {"reason": "dead"})
    incident.refresh_from_db()
    assert incident.status == Incident.Status.CANCELLED and incident.closed_by == manager


def test_support_signs_in_with_the_password_alone(client, support):
    response = client.post(
        reverse("login"), {"username": support.username, "password": "pw-sam_support"}
    )
    assert response.status_code == 302 and response["Location"] == "/"


def test_the_second_factor_pages_are_never_cached(client, manager, new_manager):
    password_only_login(client, manager)
    assert "no-store" in client.get(reverse("mfa_verify"))["Cache-Control"]
    client.force_login(new_manager)
    enrol = client.get(reverse("mfa_enrol"))
    assert b"mfa-secret" in enrol.content
    assert "no-store" in enrol["Cache-Control"]


# A manager's POST views that are not money decisions, and why. Any other view a manager alone
# may POST to must ask for the second factor (accounts.mfa.money_decision).
NOT_MONEY_DECISIONS = {
    "statement_retry": "sends a player's statement e-mail again; no amount changes",
    "proposal_resume_posting": "posts the credits a manager already approved with a code",
}


def _views(patterns, prefix=""):
    from django.urls import URLPattern, URLResolver

    for p in patterns:
        if isinstance(p, URLResolver):
            yield from _views(p.url_patterns, prefix + str(p.pattern))
        elif isinstance(p, URLPattern):
            yield p.name, prefix + str(p.pattern), p.callback


def test_every_view_only_a_manager_may_post_to_asks_for_the_second_factor():
    from django.urls import get_resolver

    from refunds_admin.accounts.roles import CAN_DECIDE

    missing, seen = [], set()
    for name, route, view in _views(get_resolver().url_patterns):
        if getattr(view, "allowed_roles", None) != CAN_DECIDE:
            continue
        seen.add(name)
        if not getattr(view, "money_decision", False) and name not in NOT_MONEY_DECISIONS:
            missing.append(f"{name} ({route})")
    assert not missing, f"manager-only views deciding without the second factor: {missing}"
    # The check reads the decorators' marks: it must have found the decisions it guards.
    assert {"proposal_reject", "incident_not_resumable", "outage_review_reject"} <= seen
    assert set(NOT_MONEY_DECISIONS) <= seen
