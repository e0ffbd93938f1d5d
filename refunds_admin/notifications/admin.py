"""Read-only admin: statements and staff e-mails change only through the services."""

from django.contrib import admin

from refunds_admin.readonly_admin import ReadOnlyAdmin

from .models import StaffNotification, StatementJob, StatementMessage


@admin.register(StatementJob)
class StatementJobAdmin(ReadOnlyAdmin):
    list_display = ["proposal", "channel", "state", "sent", "total", "failed", "no_address"]
    list_filter = ["state", "channel"]


@admin.register(StatementMessage)
class StatementMessageAdmin(ReadOnlyAdmin):
    list_display = ["idempotency_key", "address", "state", "attempts", "sent_at"]
    list_filter = ["state"]
    search_fields = ["=player_id", "=proposal__id"]
    show_full_result_count = False


@admin.register(StaffNotification)
class StaffNotificationAdmin(ReadOnlyAdmin):
    list_display = ["created_at", "kind", "reference", "email", "state", "sent_at"]
    list_filter = ["kind", "state"]
