"""The Django admin: everything visible to superusers, nothing of the workflow editable there."""

import pytest
from django.contrib import admin
from django.urls import reverse

from refunds_admin.audit.models import AuditEvent
from refunds_admin.proposals import services as proposals
from refunds_admin.tournaments.models import ApiClient, Snapshot

from .factories import cancelled_incident

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
