"""The Django admin: everything visible to superusers, nothing of the workflow editable there."""

import pytest
from django.contrib import admin
from django.urls import reverse

from refunds_admin.audit.models import AuditEvent
from refunds_admin.proposals import services as proposals
from refunds_admin.tournaments.models import ApiClient, Snapshot
from tests.support.factories import cancelled_incident

pytestmark = pytest.mark.django_db


@pytest.fixture
def superuser_client(admin_client, support):
    proposals.prepare_proposal(cancelled_incident(support), acting_user=support)
    return admin_client


WORKFLOW_MODELS = [
    m
    for m in admin.site._registry
    if m._meta.app_label in {"tournaments", "incidents", "proposals", "audit"}
]


@pytest.mark.parametrize("model", WORKFLOW_MODELS, ids=lambda m: m._meta.label)
def test_it_shows_every_workflow_model_to_superusers(superuser_client, model):
    meta = model._meta
    response = superuser_client.get(reverse(f"admin:{meta.app_label}_{meta.model_name}_changelist"))
    assert response.status_code == 200
    obj = model.objects.first()
    if obj is not None:
        url = reverse(f"admin:{meta.app_label}_{meta.model_name}_change", args=[obj.pk])
        assert superuser_client.get(url).status_code == 200


@pytest.mark.parametrize("model", [AuditEvent, Snapshot], ids=["audit event", "snapshot"])
def test_it_keeps_audit_events_and_snapshots_read_only(superuser_client, model):
    meta = model._meta
    obj = model.objects.first()
    change = reverse(f"admin:{meta.app_label}_{meta.model_name}_change", args=[obj.pk])
    assert (
        superuser_client.get(reverse(f"admin:{meta.app_label}_{meta.model_name}_add")).status_code
        == 403
    )
    before = model.objects.count()
    superuser_client.post(change, {"reason": "rewritten", "document": "{}"})
    delete = reverse(f"admin:{meta.app_label}_{meta.model_name}_delete", args=[obj.pk])
    assert superuser_client.post(delete, {"post": "yes"}).status_code == 403
    obj.refresh_from_db()
    assert model.objects.count() == before
    assert getattr(obj, "reason", "") == "" and getattr(obj, "document", "x") != "{}"


def test_it_creates_api_clients_only_through_the_command(superuser_client):
    # The token is shown once by `create_api_client`; the admin cannot make one without it.
    assert superuser_client.get(reverse("admin:tournaments_apiclient_add")).status_code == 403
    assert ApiClient in admin.site._registry


def test_the_admin_shows_no_authenticator_secret_and_refuses_to_write_devices(
    superuser_client, manager
):
    """A superuser must not become a manager: no key or QR code to copy, no key to rewrite."""
    from django_otp.plugins.otp_totp.models import TOTPDevice

    from refunds_admin.accounts import mfa

    device = mfa.confirmed_device(manager)
    secret = mfa.secret(device)
    listing = superuser_client.get(reverse("admin:otp_totp_totpdevice_changelist"))
    assert listing.status_code == 200 and device.key not in listing.content.decode()
    change = reverse("admin:otp_totp_totpdevice_change", args=[device.pk])
    page = superuser_client.get(change).content.decode()
    assert device.key not in page and secret not in page and "qrcode" not in page.lower()
    for url in (
        reverse("admin:otp_totp_totpdevice_config", args=[device.pk]),
        reverse("admin:otp_totp_totpdevice_qrcode", args=[device.pk]),
    ):
        assert superuser_client.get(url).status_code == 403
    rewritten = superuser_client.post(
        change, {"user": manager.pk, "name": "x", "key": "00" * 20, "confirmed": "on"}
    )
    assert rewritten.status_code == 403
    add = superuser_client.get(reverse("admin:otp_totp_totpdevice_add"))
    assert add.status_code == 403
    assert TOTPDevice.objects.get(pk=device.pk).key == device.key


def test_a_manager_whose_password_a_superuser_set_approves_nothing_until_they_change_it(
    superuser_client, superuser, support, manager, client
):
    """The superuser's attack: set manager2's password in the admin, then approve as them."""
    from django.core.exceptions import PermissionDenied

    from tests.support.factories import submitted_proposal

    proposal = submitted_proposal(support, external_id="T-ADMIN")
    url = reverse("admin:auth_user_password_change", args=[manager.pk])
    response = superuser_client.post(
        url,
        {
            "password1": "Known-to-root-42",
            "password2": "Known-to-root-42",
            "usable_password": "true",
        },
    )
    assert response.status_code == 302, response.content[:2000]
    event = AuditEvent.objects.filter(action="user.changed", object_id=str(manager.pk)).last()
    assert event.actor == superuser and event.after["set_for_someone_else"] is True
    assert "password" not in str(event.after).replace("set_for_someone_else", "").replace(
        "(changed)", ""
    ).replace("'password'", "")
    with pytest.raises(PermissionDenied, match="password was set by root"):
        proposals.approve_proposal(proposal, acting_user=manager, fingerprint=proposal.fingerprint)
    # The manager changes it themselves: their sign-in is theirs again.
    manager.refresh_from_db()
    client.force_login(manager)
    changed = client.post(
        reverse("password_change"),
        {
            "old_password": "Known-to-root-42",
            "new_password1": "Mine-only-77x",
            "new_password2": "Mine-only-77x",
        },
    )
    assert changed.status_code == 302 and changed["Location"] == reverse("password_change_done")
    proposals.approve_proposal(proposal, acting_user=manager, fingerprint=proposal.fingerprint)
