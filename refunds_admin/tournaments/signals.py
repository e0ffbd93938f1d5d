"""API clients act as a staff user: creating one, switching it off or changing whom it acts as
is a change of who may import, audited like users and roles (audit/access.py), from the command
line, the admin or the shell alike. The token itself is never audited, only its prefix."""

from django.db.models.signals import post_delete, post_save, pre_save
from django.dispatch import receiver

from refunds_admin.audit.access import audit

from .models import ApiClient


def _state(client):
    return {
        "name": client.name,
        "acting_user": client.acting_user.get_username() if client.acting_user_id else None,
        "token_prefix": client.token_prefix,
        "is_active": client.is_active,
    }


@receiver(pre_save, sender=ApiClient, dispatch_uid="audit_api_client_before")
def _before(sender, instance, raw=False, update_fields=None, **kwargs):
    instance._audit_before = None
    if raw or instance.pk is None or (update_fields and set(update_fields) <= {"last_used_at"}):
        return
    old = sender.objects.select_related("acting_user").filter(pk=instance.pk).first()
    instance._audit_before = _state(old) if old else None


@receiver(post_save, sender=ApiClient, dispatch_uid="audit_api_client_after")
def _after(sender, instance, created, raw=False, **kwargs):
    if raw:
        return
    after = _state(instance)
    if created:
        audit("api_client.created", instance, after=after)
        return
    before = getattr(instance, "_audit_before", None)
    if before is None:
        return
    changed = {k: after[k] for k in after if after[k] != before[k]}
    if changed:
        audit(
            "api_client.changed",
            instance,
            before={k: before[k] for k in changed},
            after=changed,
        )


@receiver(post_delete, sender=ApiClient, dispatch_uid="audit_api_client_deleted")
def _deleted(sender, instance, **kwargs):
    audit("api_client.deleted", instance, before=_state(instance))
