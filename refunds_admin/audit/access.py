"""Who may do what is itself audited: every change to users, groups and permissions, from the
Django admin, a management command or the shell, lands in the audit (issue 10).

Receivers, not services, because these rows are written by Django's own code (the admin's user
form, `createsuperuser`, `user.groups.add(...)` in a shell) that never calls our services. The
event is written inside the change's transaction when there is one (the admin, our services and
commands run in one); a bare `user.save()` in an autocommit shell writes it right after. The
actor is the signed-in user of the request, or "system" for a command or the shell.

Passwords are never copied into the audit: only the fact that one was set or changed.
"""

from axes.models import AccessAttempt
from axes.signals import user_locked_out
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group, Permission
from django.db import transaction
from django.db.models.signals import m2m_changed, post_delete, post_save, pre_save
from django.dispatch import receiver

from refunds_admin.accounts import credentials

from . import context
from .services import record

User = get_user_model()

USER_FIELDS = (
    "username",
    "email",
    "first_name",
    "last_name",
    "is_active",
    "is_staff",
    "is_superuser",
)
# Saves that touch only these fields are not changes of who may do what (sign-in stamps).
NOT_AUDITED = frozenset({"last_login"})


def actor():
    """The user whose request caused the change, or None (the system: a command, the shell)."""
    ctx = context.current.get()
    user = ctx.user if ctx.user is not None else getattr(ctx.request, "user", None)
    return user if user is not None and getattr(user, "is_authenticated", False) else None


def audit(action, obj, *, before=None, after=None):
    """Write the event in the change's transaction (a savepoint inside it), or in its own."""
    with transaction.atomic():
        record(action, obj, actor=actor(), before=before, after=after)


def _skip(raw, update_fields):
    return raw or (update_fields is not None and set(update_fields) <= NOT_AUDITED)


# --- users -------------------------------------------------------------------------------------


def _user_state(user):
    return {name: getattr(user, name) for name in USER_FIELDS}


@receiver(pre_save, sender=User, dispatch_uid="audit_user_before")
def _user_before(sender, instance, raw=False, update_fields=None, **kwargs):
    instance._audit_before = None
    if _skip(raw, update_fields) or instance.pk is None:
        return
    old = sender.objects.filter(pk=instance.pk).values(*USER_FIELDS, "password").first()
    instance._audit_before = old


@receiver(post_save, sender=User, dispatch_uid="audit_user_after")
def _user_after(sender, instance, created, raw=False, update_fields=None, **kwargs):
    if _skip(raw, update_fields):
        return
    after = _user_state(instance)
    if created:
        after["password_set"] = instance.has_usable_password()
        if instance.has_usable_password():
            _password_set(instance, after)
        audit("user.created", instance, after=after)
        return
    old = getattr(instance, "_audit_before", None)
    if old is None:
        return
    password_changed = old.pop("password") != instance.password
    before = {k: v for k, v in old.items() if after[k] != v}
    changed = {k: after[k] for k in before}
    if password_changed:
        before["password"], changed["password"] = "(old)", "(changed)"
        _password_set(instance, changed)
    if changed:
        audit("user.changed", instance, before=before, after=changed)


def _password_set(user, after):
    """A password set for someone else (say so in the event) or by the person themselves."""
    by = actor()
    if by is not None and by.pk != user.pk:
        after["set_for_someone_else"] = True
        credentials.set_for(user, credentials.PASSWORD, by=by)
    elif by is not None:
        credentials.set_by_themselves(user, credentials.PASSWORD)


@receiver(post_delete, sender=User, dispatch_uid="audit_user_deleted")
def _user_deleted(sender, instance, **kwargs):
    audit("user.deleted", instance, before=_user_state(instance))


# --- groups (roles) and permissions ----------------------------------------------------------


@receiver(pre_save, sender=Group, dispatch_uid="audit_group_before")
def _group_before(sender, instance, raw=False, **kwargs):
    instance._audit_before = (
        None
        if raw or instance.pk is None
        else sender.objects.filter(pk=instance.pk).values_list("name", flat=True).first()
    )


@receiver(post_save, sender=Group, dispatch_uid="audit_group_after")
def _group_after(sender, instance, created, raw=False, **kwargs):
    if raw:
        return
    if created:
        audit("group.created", instance, after={"name": instance.name})
    elif getattr(instance, "_audit_before", None) not in (None, instance.name):
        audit(
            "group.renamed",
            instance,
            before={"name": instance._audit_before},
            after={"name": instance.name},
        )


@receiver(post_delete, sender=Group, dispatch_uid="audit_group_deleted")
def _group_deleted(sender, instance, **kwargs):
    audit("group.deleted", instance, before={"name": instance.name})


def _permission_label(permission):
    return f"{permission.content_type.app_label}.{permission.codename}"


@receiver(post_save, sender=Permission, dispatch_uid="audit_permission_saved")
def _permission_saved(sender, instance, created, raw=False, **kwargs):
    if not raw:
        audit(
            "permission.created" if created else "permission.changed",
            instance,
            after={"permission": _permission_label(instance), "name": instance.name},
        )


@receiver(post_delete, sender=Permission, dispatch_uid="audit_permission_deleted")
def _permission_deleted(sender, instance, **kwargs):
    audit("permission.deleted", instance, before={"permission": _permission_label(instance)})


# --- memberships: user <-> group, user <-> permission, group <-> permission ------------------
# m2m_changed fires on either side (user.groups.add(g) or g.user_set.add(u)) and for clear():
# the event is always written from the side whose rights change (the user, or the group for
# its permissions), with the full list before and after.


def _names(related, pks):
    if related is Group:
        return sorted(Group.objects.filter(pk__in=pks).values_list("name", flat=True))
    if related is Permission:
        return sorted(
            _permission_label(p)
            for p in Permission.objects.filter(pk__in=pks).select_related("content_type")
        )
    return sorted(User.objects.filter(pk__in=pks).values_list("username", flat=True))


def _current(owner, field):
    return set(getattr(owner, field).values_list("pk", flat=True))


def _membership(owner_model, field, related, action_name):
    """A receiver for one m2m relation, `owner_model.field` -> `related`."""

    def receive(sender, instance, action, reverse, model, pk_set, **kwargs):
        if action not in (
            "pre_add",
            "pre_remove",
            "pre_clear",
            "post_add",
            "post_remove",
            "post_clear",
        ):
            return
        if not reverse:
            owners = [instance]
        elif action == "pre_clear":
            # Clearing from the other side (group.user_set.clear()): remember who loses it.
            reverse_name = owner_model._meta.get_field(field).remote_field.get_accessor_name()
            instance._audit_clear_owners = list(getattr(instance, reverse_name).all())
            owners = instance._audit_clear_owners
        elif action == "post_clear":
            owners = getattr(instance, "_audit_clear_owners", [])
        else:
            owners = list(owner_model.objects.filter(pk__in=pk_set or ()))
        # Kept on the instance the signal is sent for, keyed by owner: on the reverse side the
        # owners are loaded afresh for pre_ and post_.
        remembered = instance.__dict__.setdefault("_audit_m2m", {})
        for owner in owners:
            key = (field, owner.pk)
            if action.startswith("pre_"):
                remembered[key] = _current(owner, field)
                continue
            before = remembered.pop(key, None)
            after = _current(owner, field)
            if before is None or before == after:
                continue
            audit(
                action_name,
                owner,
                before={field: _names(related, before)},
                after={field: _names(related, after)},
            )

    return receive


_user_groups = _membership(User, "groups", Group, "user.groups_changed")
_user_permissions = _membership(User, "user_permissions", Permission, "user.permissions_changed")
_group_permissions = _membership(Group, "permissions", Permission, "group.permissions_changed")
m2m_changed.connect(_user_groups, sender=User.groups.through, dispatch_uid="audit_user_groups")
m2m_changed.connect(
    _user_permissions, sender=User.user_permissions.through, dispatch_uid="audit_user_permissions"
)
m2m_changed.connect(
    _group_permissions, sender=Group.permissions.through, dispatch_uid="audit_group_permissions"
)


# --- sign-in lockouts (django-axes) and authenticator devices --------------------------------


@receiver(user_locked_out, dispatch_uid="audit_sign_in_locked_out")
def _locked_out(sender, request, username, ip_address, **kwargs):
    from django.conf import settings

    failures = getattr(request, "axes_failures_since_start", None)
    if failures != settings.AXES_FAILURE_LIMIT:
        # A further attempt while already locked out: refused (and the cool-off restarts), but
        # audited only once, when the lockout began: a guesser must not flood the history.
        return
    user = User.objects.filter(username__iexact=username).first() if username else None
    after = {
        "username": username,
        "ip": ip_address,
        "failures": request.axes_failures_since_start,
        "where": getattr(request, "path", "") or "sign-in",
    }
    # The account, or for a name that is no account (guessing at names) django-axes' own record
    # of the attempts.
    audited = user or AccessAttempt.objects.filter(username=username, ip_address=ip_address).last()
    if audited is None:
        return
    with transaction.atomic():
        record("signin.locked_out", audited, actor=None, after=after)


@receiver(pre_save, sender="otp_totp.TOTPDevice", dispatch_uid="audit_device_before")
def _device_before(sender, instance, raw=False, **kwargs):
    old = (
        None
        if raw or instance.pk is None
        else sender.objects.filter(pk=instance.pk).values_list("confirmed", "key").first()
    )
    confirmed, key = old if old is not None else (None, None)
    instance._audit_confirmed = confirmed
    instance._audit_key_changed = old is not None and key != instance.key


@receiver(post_save, sender="otp_totp.TOTPDevice", dispatch_uid="audit_device_confirmed")
def _device_saved(sender, instance, created, raw=False, **kwargs):
    """Confirmed by a code on the enrolment page (accounts.mfa.confirm_device), or switched on or
    off by a superuser in the admin; the verification stamps (last_t, throttling) are not."""
    if raw:
        return
    was = None if created else getattr(instance, "_audit_confirmed", None)
    by = actor()
    if getattr(instance, "_audit_key_changed", False):
        # A key rewritten (the shell: the admin refuses it): never the key itself.
        if by is not None and by.pk != instance.user_id:
            credentials.set_for(instance.user, credentials.DEVICE, by=by)
        audit(
            "mfa.device_key_changed",
            instance.user,
            after={"device": instance.name, "device_id": instance.pk},
        )
    if bool(was) == bool(instance.confirmed):
        return
    if instance.confirmed and by is not None and by.pk != instance.user_id:
        credentials.set_for(instance.user, credentials.DEVICE, by=by)
    elif instance.confirmed and by is not None:
        credentials.set_by_themselves(instance.user, credentials.DEVICE)
    audit(
        "mfa.device_confirmed" if instance.confirmed else "mfa.device_unconfirmed",
        instance.user,
        before=None if created else {"confirmed": bool(was)},
        after={"device": instance.name, "device_id": instance.pk, "confirmed": instance.confirmed},
    )


@receiver(post_delete, sender="otp_totp.TOTPDevice", dispatch_uid="audit_device_removed")
def _device_removed(sender, instance, **kwargs):
    audit(
        "mfa.device_removed",
        instance.user,
        before={"device": instance.name, "user": instance.user.get_username()},
    )
