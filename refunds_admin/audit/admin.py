from django.contrib import admin

from refunds_admin.readonly_admin import ReadOnlyAdmin

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
