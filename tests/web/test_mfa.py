"""Two-factor sign-in for managers and superusers: enrolment with a QR code and a
confirming code, decisions only from an account with a confirmed device, a current code at every
approval, OTP in the admin. Every code is computed from the device's key, as an app would."""

import pytest
from django.urls import reverse
from django_otp.plugins.otp_totp.models import TOTPDevice

from refunds_admin.accounts import mfa
from refunds_admin.audit.models import AuditEvent
from refunds_admin.incidents.models import Incident
from tests.support.factories import open_incident, submitted_proposal, totp_code
from tests.support.pages import approve_on_page

pytestmark = pytest.mark.django_db


@pytest.fixture
def new_manager(django_user_model):
    """A manager who has not enrolled an authenticator yet."""
    from django.contrib.auth.models import Group

    user = django_user_model.objects.create_user("nina_manager", password="pw-nina_manager")
    user.groups.add(Group.objects.get_or_create(name="manager")[0])
    return user


def test_it_enrols_an_authenticator_with_a_qr_code_and_a_confirming_code(
    client, new_manager, settings
):
    # A wrong code delays the next check (1 s, then doubling); the test does not wait for it.
    settings.OTP_TOTP_THROTTLE_FACTOR = 0
    client.force_login(new_manager)
    page = client.get(reverse("mfa_enrol"))
    html = page.content.decode()
    assert page.status_code == 200 and "<svg" in html and 'class="segno"' in html
    device = TOTPDevice.objects.get(user=new_manager, confirmed=False)
    assert mfa.secret(device) in html
    assert client.get(reverse("mfa_enrol")).context["secret"] == mfa.secret(device)  # same key

    wrong = client.post(
        reverse("mfa_enrol"), {"code": "000000" if mfa.code_for(device) != "000000" else "111111"}
    )
    assert wrong.status_code == 400 and mfa.confirmed_device(new_manager) is None

    device.refresh_from_db()
    response = client.post(
        reverse("mfa_enrol"), {"code": mfa.code_for(device), "next": "/tournaments/"}
    )
    assert response.status_code == 302 and response["Location"] == "/tournaments/"
    assert mfa.confirmed_device(new_manager) == device
    event = AuditEvent.objects.get(action="mfa.device_confirmed")
    assert event.actor == new_manager and event.object_id == str(new_manager.pk)
    assert b"is set up" in client.get(reverse("mfa_enrol")).content


def test_it_refuses_decisions_from_a_manager_without_a_confirmed_device(
    client, support, new_manager
):
    proposal = submitted_proposal(support)
    incident = open_incident(support, external_id="T-2")
    client.force_login(new_manager)
    posts = [
        (
            reverse("proposal_approval", args=[proposal.pk]),
            {
                "fingerprint": proposal.fingerprint,
                "password": "pw-nina_manager",
                "otp_token": "123456",
            },
        ),
        (reverse("proposal_reject", args=[proposal.pk]), {"reason": "no"}),
        (reverse("incident_not_resumable", args=[incident.pk]), {"reason": "dead"}),
        (reverse("incident_site_wide", args=[incident.pk]), {"justification": "lag"}),
    ]
    for url, data in posts:
        response = client.post(url, data)
        assert response.status_code == 302, url
        assert response["Location"].startswith(reverse("mfa_enrol"))
    proposal.refresh_from_db()
    incident.refresh_from_db()
    assert proposal.status == "submitted"
    assert incident.status == Incident.Status.OPEN and not incident.site_wide_issue
    page = client.get(reverse("proposal_approval", args=[proposal.pk])).content.decode()
    assert 'id="mfa-needed"' in page


def test_it_approves_with_the_password_and_a_current_code(client, support, manager):
    proposal = submitted_proposal(support)
    client.force_login(manager)
    url = reverse("proposal_approval", args=[proposal.pk])
    base = {"fingerprint": proposal.fingerprint, "password": "pw-maria_manager"}

    without = client.post(url, base)
    assert without.status_code == 400 and "otp_token" in without.context["approve_form"].errors
    proposal.refresh_from_db()
    assert proposal.status == "submitted"

    code = totp_code(manager)
    response = client.post(url, {**base, "otp_token": code})
    assert response.status_code == 302
    proposal.refresh_from_db()
    assert proposal.status in ("approved", "posting", "posted")


def test_the_audit_says_an_approval_was_confirmed_with_a_code_and_which_device(
    client, support, manager, other_manager
):
    """An auditor reading the history a year later sees that the approver gave their password
    and a current code of their authenticator (which device), for a proposal and for a policy
    version: the events said only who approved."""
    from refunds_admin.audit.display import describe
    from tests.support.factories import approved_policy_version

    proposal = submitted_proposal(support)
    client.force_login(manager)
    response = approve_on_page(client, proposal, manager)
    assert response.status_code == 302
    device = mfa.confirmed_device(manager)
    event = AuditEvent.objects.get(action="proposal.approved")
    assert event.after["second_factor"] == f"password and authenticator code (device {device.pk})"
    assert "with their password and an authenticator code" in describe(event)

    approved_policy_version(other_manager, manager, policy_id="ultimatepoker-2026",
                            **{"full_refund.within_minutes": 30})  # fmt: skip
    event = AuditEvent.objects.get(action="policy.version_approved")
    assert event.after["second_factor"] == f"authenticator code (device {device.pk})"
    assert "with an authenticator code" in describe(event)


def test_it_refuses_a_wrong_or_reused_code(client, support, manager):
    first = submitted_proposal(support)
    second = submitted_proposal(support, external_id="T-2")
    client.force_login(manager)
    code = totp_code(manager)
    ok = client.post(
        reverse("proposal_approval", args=[first.pk]),
        {"fingerprint": first.fingerprint, "password": "pw-maria_manager", "otp_token": code},
    )
    assert ok.status_code == 302
    reused = client.post(
        reverse("proposal_approval", args=[second.pk]),
        {"fingerprint": second.fingerprint, "password": "pw-maria_manager", "otp_token": code},
    )
    assert reused.status_code == 400
    assert "does not match" in reused.content.decode()
    second.refresh_from_db()
    assert second.status == "submitted"


def test_it_asks_superusers_for_a_code_in_the_admin(client, superuser):
    # Signed in with the password only: the admin is not open.
    client.post(reverse("login"), {"username": "root", "password": "pw-root"})
    assert client.get("/admin/").status_code == 302
    # The admin's own sign-in needs the code too.
    response = client.post(
        "/admin/login/?next=/admin/", {"username": "root", "password": "pw-root"}
    )
    assert response.status_code == 200 and client.get("/admin/").status_code == 302
    response = client.post(
        "/admin/login/?next=/admin/",
        {"username": "root", "password": "pw-root", "otp_token": totp_code(superuser)},
    )
    assert response.status_code == 302
    assert client.get("/admin/").status_code == 200
