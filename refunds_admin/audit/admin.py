from axes.admin import AccessAttemptAdmin, AccessFailureLogAdmin, AccessLogAdmin
from axes.models import AccessAttempt, AccessFailureLog, AccessLog
from django.contrib import admin
from django.db import transaction

from refunds_admin.readonly_admin import ReadOnlyAdmin

from .access import audit
from .display import describe
from .models import AuditEvent


@admin.register(AuditEvent)
class AuditEventAdmin(ReadOnlyAdmin):
    """Append-only: no add, change or delete, here or (on PostgreSQL) in the database."""

    list_display = (
        "created_at",
        "actor_name",
        "action",
        "object_type",
        "object_id",
        "tournament_external_id",
        "sentence",
    )
    list_filter = ("action", "object_type")
    search_fields = ("tournament_external_id", "actor_name", "action", "object_id", "reason")
    date_hierarchy = "created_at"

    @admin.display(description="what happened")
    def sentence(self, obj):
        return describe(obj)


# Sign-in records (django-axes: attempts, logs, failures): a superuser may delete them (deleting a
# locked-out pair's attempts unlocks it before its cool-off ends), and each one deleted is audited
# (signin.record_deleted), for they are the history of who tried to sign in. Here, not in
# accounts: accounts sits below the audit (tests/services/test_layers.py).


class AuditedDeletes(admin.ModelAdmin):
    """Each record deleted from the admin (one, or a selection) is audited in the deletion's
    transaction: what it was and who deleted it."""

    def delete_model(self, request, obj):
        with transaction.atomic():
            _audit_deleted(obj)
            super().delete_model(request, obj)

    def delete_queryset(self, request, queryset):
        with transaction.atomic():
            for obj in queryset:
                _audit_deleted(obj)
            super().delete_queryset(request, queryset)


def _audit_deleted(obj):
    audit(
        "signin.record_deleted",
        obj,
        before={
            "kind": str(obj._meta.verbose_name),
            "username": obj.username,
            "ip": obj.ip_address,
            "at": str(getattr(obj, "attempt_time", "")),
        },
    )


for model, axes_admin in (
    (AccessAttempt, AccessAttemptAdmin),
    (AccessLog, AccessLogAdmin),
    (AccessFailureLog, AccessFailureLogAdmin),
):
    if admin.site.is_registered(model):
        admin.site.unregister(model)
    admin.site.register(model, type(axes_admin.__name__, (AuditedDeletes, axes_admin), {}))
