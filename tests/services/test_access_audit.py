"""Every change to users, roles, permissions and API clients is audited, in the
change's transaction, from the admin, a command or the shell (refunds_admin/audit/access.py)."""

import pytest
from django.contrib.auth.models import Group, Permission
from django.core.management import call_command
from django.db import transaction
from django.urls import reverse

from refunds_admin.audit.display import describe
from refunds_admin.audit.models import AuditEvent
from refunds_admin.tournaments.models import ApiClient

pytestmark = pytest.mark.django_db


def _events(action):
    return list(AuditEvent.objects.filter(action=action).order_by("id"))


@pytest.fixture
def root(admin_client, superuser):
    return superuser


def test_it_audits_a_superuser_creating_a_second_manager_in_the_admin(
    admin_client, root, manager, django_user_model
):
    client = admin_client
    response = client.post(
        reverse("admin:auth_user_add"),
        {
            "username": "mallory",
            "password1": "Xk9#long-pass",
            "password2": "Xk9#long-pass",
            "usable_password": "true",
        },
    )
    assert response.status_code == 302, response.content[:2000]
    mallory = django_user_model.objects.get(username="mallory")
    created = _events("user.created")[-1]
    assert created.actor == root and created.object_id == str(mallory.pk)
    assert created.after["username"] == "mallory" and created.after["password_set"] is True
    assert "password" not in created.after

    change = reverse("admin:auth_user_change", args=[mallory.pk])
    form = client.get(change).context["adminform"].form
    data = {k: v for k, v in form.initial.items() if v is not None and k != "password"}
    data.update(
        {
            "groups": [Group.objects.get(name="manager").pk],
            "is_active": "on",
            "is_staff": "on",
            "date_joined_0": mallory.date_joined.strftime("%Y-%m-%d"),
            "date_joined_1": mallory.date_joined.strftime("%H:%M:%S"),
        }
    )
    data.pop("date_joined", None)
    data.pop("user_permissions", None)
    data.pop("last_login", None)
    assert client.post(change, data).status_code == 302
    roles = _events("user.groups_changed")[-1]
    assert roles.actor == root and roles.object_id == str(mallory.pk)
    assert roles.before == {"groups": []} and roles.after == {"groups": ["manager"]}
    staff = _events("user.changed")[-1]
    assert staff.before == {"is_staff": False} and staff.after == {"is_staff": True}

    # And it reads as a sentence on the audit page.
    client.force_login(manager)
    page = client.get(reverse("audit")).content.decode()
    assert f"root changed the roles of user {mallory.pk}: +manager (now: manager)" in page
    assert "root created user &#x27;mallory&#x27;" in page


def test_it_audits_changes_made_in_the_shell_from_either_side(support, django_user_model):
    managers = Group.objects.get_or_create(name="manager")[0]
    support.groups.add(managers)
    managers.user_set.remove(support)
    managers.user_set.add(support)
    support.groups.clear()
    changes = [(e.before, e.after) for e in _events("user.groups_changed")]
    assert changes[-4:] == [
        ({"groups": ["support"]}, {"groups": ["manager", "support"]}),
        ({"groups": ["manager", "support"]}, {"groups": ["support"]}),
        ({"groups": ["support"]}, {"groups": ["manager", "support"]}),
        ({"groups": ["manager", "support"]}, {"groups": []}),
    ]
    assert {e.actor_name for e in _events("user.groups_changed")} == {"system"}


def test_it_audits_clearing_a_role_from_the_groups_side(support, other_manager, manager):
    managers = Group.objects.get(name="manager")
    managers.user_set.clear()
    cleared = [e for e in _events("user.groups_changed") if e.after == {"groups": []}]
    assert sorted(e.object_id for e in cleared) == sorted([str(manager.pk), str(other_manager.pk)])


def test_it_audits_permissions_of_users_and_groups(support):
    permission = Permission.objects.get(codename="view_tournament")
    support.user_permissions.add(permission)
    group = Group.objects.get(name="support")
    group.permissions.add(permission)
    group.name = "helpdesk"
    group.save()
    assert _events("user.permissions_changed")[-1].after == {
        "user_permissions": ["tournaments.view_tournament"]
    }
    assert _events("group.permissions_changed")[-1].after == {
        "permissions": ["tournaments.view_tournament"]
    }
    renamed = _events("group.renamed")[-1]
    assert (renamed.before, renamed.after) == ({"name": "support"}, {"name": "helpdesk"})


def test_it_audits_a_password_change_without_copying_the_password(support):
    support.set_password("a-new-secret-pass")
    support.save()
    event = _events("user.changed")[-1]
    assert event.after == {"password": "(changed)"}
    assert "a-new-secret-pass" not in str(event.after) + str(event.before)
    assert support.password not in str(event.after)


def test_it_does_not_audit_the_sign_in_stamp(client, support):
    before = AuditEvent.objects.count()
    response = client.post(
        reverse("login"), {"username": support.username, "password": "pw-sam_support"}
    )
    assert response.status_code == 302
    assert AuditEvent.objects.count() == before


def test_it_writes_the_event_in_the_changes_transaction(support):
    managers = Group.objects.get_or_create(name="manager")[0]
    before = AuditEvent.objects.count()
    with pytest.raises(RuntimeError), transaction.atomic():
        support.groups.add(managers)
        assert AuditEvent.objects.count() == before + 1
        raise RuntimeError("the change is rolled back")
    assert AuditEvent.objects.count() == before
    assert not support.groups.filter(name="manager").exists()


def test_it_audits_api_clients_from_the_command_and_the_shell(support):
    call_command("create_api_client", "platform", "--user", support.username)
    client = ApiClient.objects.get(name="platform")
    created = _events("api_client.created")[-1]
    assert created.after["acting_user"] == "sam_support" and created.actor_name == "system"
    assert created.after["token_prefix"] == client.token_prefix
    client.is_active = False
    client.save()
    changed = _events("api_client.changed")[-1]
    assert (changed.before, changed.after) == ({"is_active": True}, {"is_active": False})
    assert "switched" in describe(changed) or "is_active" in describe(changed)


def test_it_audits_a_superuser_removing_a_managers_authenticator(admin_client, root, manager):
    from refunds_admin.accounts import mfa

    device = mfa.confirmed_device(manager)
    url = reverse("admin:otp_totp_totpdevice_delete", args=[device.pk])
    assert admin_client.post(url, {"post": "yes"}).status_code == 302
    assert mfa.confirmed_device(manager) is None
    removed = _events("mfa.device_removed")[-1]
    assert removed.actor == root and removed.object_id == str(manager.pk)
    assert "removed authenticator app" in describe(removed)
    confirmed = [e for e in _events("mfa.device_confirmed") if e.object_id == str(manager.pk)]
    assert len(confirmed) == 1  # the enrolment, once (verifications are not audited)


def test_it_audits_each_sign_in_record_a_superuser_deletes_in_the_admin(admin_client, root):
    """Found by the insider's trial: the sign-in history (django-axes) could be deleted in the
    admin without a trace. Deleting stays possible (it unlocks a locked-out pair before its
    cool-off ends); each record deleted is audited, one at a time or a selection."""
    from axes.models import AccessAttempt, AccessLog

    attempt = AccessAttempt.objects.create(
        username="maria_manager", ip_address="10.0.0.9", user_agent="x", get_data="",
        post_data="", http_accept="", path_info="/accounts/login/", failures_since_start=5,
    )  # fmt: skip
    logs = [
        AccessLog.objects.create(
            username=name,
            ip_address="10.0.0.8",
            user_agent="x",
            http_accept="",
            path_info="/accounts/login/",
        )  # fmt: skip
        for name in ("otto", "sam")
    ]
    url = reverse("admin:axes_accessattempt_delete", args=[attempt.pk])
    assert admin_client.post(url, {"post": "yes"}).status_code == 302
    assert not AccessAttempt.objects.exists()
    response = admin_client.post(
        reverse("admin:axes_accesslog_changelist"),
        {"action": "delete_selected", "_selected_action": [log.pk for log in logs], "post": "yes"},
    )
    assert response.status_code == 302
    assert not AccessLog.objects.filter(pk__in=[log.pk for log in logs]).exists()
    deleted = _events("signin.record_deleted")
    assert sorted((e.before["username"], e.before["ip"]) for e in deleted) == [
        ("maria_manager", "10.0.0.9"),
        ("otto", "10.0.0.8"),
        ("sam", "10.0.0.8"),
    ]
    assert {e.actor for e in deleted} == {root}
    assert "deleted a sign-in record (access attempt) of 'maria_manager'" in describe(deleted[0])
