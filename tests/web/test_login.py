"""Sign-in: one lockout policy (django-axes) for the sign-in page, the admin's sign-in and the
approval's re-authentication, keyed on the normalised username and the address."""

import pytest
from django.urls import reverse

from refunds_admin.accounts.signin import normalise_username
from refunds_admin.audit.models import AuditEvent
from tests.support.factories import enrol_device, submitted_proposal, totp_code

pytestmark = pytest.mark.django_db
LIMIT = 5
LOCKED = b"Too many failed sign-in attempts"


def _sign_in(client, username, password, **extra):
    return client.post(reverse("login"), {"username": username, "password": password}, **extra)


def _fail(client, username, times=LIMIT, **extra):
    return [_sign_in(client, username, "nope", **extra).status_code for _ in range(times)]


def test_it_signs_in_with_the_right_password(client, support):
    assert _sign_in(client, support.username, "pw-sam_support").status_code == 302
    assert client.get(reverse("dashboard")).status_code == 200


def test_it_locks_out_after_five_failures_even_with_the_right_password(client, support):
    assert _fail(client, support.username) == [200, 200, 200, 200, 429]
    response = _sign_in(client, support.username, "pw-sam_support")
    assert response.status_code == 429 and LOCKED in response.content
    assert client.get(reverse("dashboard")).status_code == 302  # still signed out


@pytest.mark.parametrize(
    "lookalike", ["ｍａｎａｇｅｒ", "𝗆𝖺𝗇𝖺𝗀𝖾𝗋", " manager ", "MANAGER", "Manager"]
)
def test_it_counts_unicode_and_case_lookalikes_against_the_same_account(
    client, django_user_model, lookalike
):
    django_user_model.objects.create_user("manager", password="pw-manager-real")
    assert normalise_username(lookalike) == "manager"
    _fail(client, "manager")
    # Django's sign-in form would sign `ｍａｎａｇｅｒ` in as manager (NFKC): still locked out.
    response = _sign_in(client, lookalike, "pw-manager-real")
    assert response.status_code == 429
    assert client.get(reverse("dashboard")).status_code == 302


def test_it_counts_lookalike_failures_together(client, django_user_model):
    django_user_model.objects.create_user("manager", password="pw-manager-real")
    for name in ["manager", "ｍａｎａｇｅｒ", "𝗆𝖺𝗇𝖺𝗀𝖾𝗋", "MANAGER"]:
        _sign_in(client, name, "nope")
    assert _sign_in(client, "ｍａｎａｇｅｒ", "nope").status_code == 429
    assert _sign_in(client, "manager", "pw-manager-real").status_code == 429


def test_it_counts_failures_per_username_and_address(client, support, manager):
    _fail(client, support.username)
    # Another account from the same address is not locked out by someone guessing support's.
    assert _sign_in(client, manager.username, "pw-maria_manager").status_code == 302
    client.logout()
    # The same account from another address is not locked out either.
    response = _sign_in(client, support.username, "pw-sam_support", REMOTE_ADDR="10.1.2.3")
    assert response.status_code == 302


def test_it_writes_a_lockout_to_the_audit_once(client, support, manager):
    _fail(client, support.username, times=LIMIT + 3)
    events = list(AuditEvent.objects.filter(action="signin.locked_out"))
    assert len(events) == 1
    event = events[0]
    assert event.object_id == str(support.pk) and event.after["username"] == "sam_support"
    assert event.after["ip"] == "127.0.0.1" and event.after["failures"] == LIMIT
    client.force_login(manager)
    page = client.get(reverse("audit")).content.decode()
    assert "Sign-in locked out for &#x27;sam_support&#x27; from 127.0.0.1" in page


def test_it_limits_the_admin_sign_in_with_the_same_policy(client, superuser):
    url = "/admin/login/?next=/admin/"
    for _ in range(LIMIT - 1):
        response = client.post(url, {"username": "root", "password": "nope", "otp_token": "1"})
        assert response.status_code == 200
    response = client.post(url, {"username": "ＲＯＯＴ", "password": "nope", "otp_token": "1"})
    assert response.status_code == 429
    response = client.post(
        url, {"username": "root", "password": "pw-root", "otp_token": totp_code(superuser)}
    )
    assert response.status_code == 429
    assert client.get("/admin/").status_code == 302  # not signed in
    # The main sign-in page shares the count: one policy.
    assert _sign_in(client, "root", "pw-root").status_code == 429


def test_it_limits_the_approval_password_with_the_same_policy(client, support, manager):
    proposal = submitted_proposal(support)
    client.force_login(manager)
    url = reverse("proposal_approval", args=[proposal.pk])
    data = {"fingerprint": proposal.fingerprint, "password": "nope", "otp_token": "000000"}
    statuses = [client.post(url, data).status_code for _ in range(LIMIT)]
    assert statuses == [400, 400, 400, 400, 429]
    data.update(password="pw-maria_manager", otp_token=totp_code(manager))
    response = client.post(url, data)
    assert response.status_code == 429
    proposal.refresh_from_db()
    assert proposal.status == "submitted"
    # And signing in again is refused too.
    client.logout()
    assert _sign_in(client, manager.username, "pw-maria_manager").status_code == 429


def test_it_shows_a_labelled_sign_in_form(client):
    response = client.get(reverse("login"))
    assert b'<label for="id_username">Username</label>' in response.content
    assert b'<label for="id_password">Password</label>' in response.content


def test_it_sends_a_superuser_without_a_staff_role_to_the_django_admin(client, superuser):
    response = _sign_in(client, "root", "pw-root")
    assert response.status_code == 302 and response["Location"] == reverse("admin:index")


def test_it_sends_a_superuser_or_manager_without_an_authenticator_to_enrol(
    client, django_user_model
):
    django_user_model.objects.create_superuser("root2", password="pw-root-2")
    response = _sign_in(client, "root2", "pw-root-2")
    assert response.status_code == 302
    assert response["Location"].startswith(reverse("mfa_enrol") + "?next=")


def test_the_enrolled_fixture_has_a_working_code(manager):
    assert totp_code(manager).isdigit()
    assert enrol_device  # the helper the personas use


def test_it_counts_failures_per_client_behind_the_proxy(client, support, settings):
    """Behind one proxy (TRUSTED_PROXY_COUNT=1) every request comes from the proxy's address;
    the lockout keys on the client address the proxy appended to X-Forwarded-For, and what the
    client itself put further left is ignored."""
    from django.test import Client

    settings.TRUSTED_PROXY_COUNT = 1
    attacker = {"REMOTE_ADDR": "10.0.0.2", "HTTP_X_FORWARDED_FOR": "1.2.3.4, 203.0.113.9"}
    statuses = [
        _sign_in(client, support.username, "nope", **attacker).status_code for _ in range(5)
    ]
    assert statuses == [200, 200, 200, 200, 429]
    # Another spoofed "client" in front of the same real address is still locked out.
    spoofed = {**attacker, "HTTP_X_FORWARDED_FOR": "9.9.9.9, 203.0.113.9"}
    assert _sign_in(client, support.username, "pw-sam_support", **spoofed).status_code == 429
    # A colleague elsewhere, through the same proxy, signs in as usual.
    colleague = {"REMOTE_ADDR": "10.0.0.2", "HTTP_X_FORWARDED_FOR": "198.51.100.7"}
    response = _sign_in(Client(), support.username, "pw-sam_support", **colleague)
    assert response.status_code == 302
