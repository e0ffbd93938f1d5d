from django.contrib import admin

from refunds_admin.readonly_admin import ReadOnlyAdmin, ReadOnlyInline

from .models import Incident, RestartAttempt


class RestartAttemptInline(ReadOnlyInline):
    model = RestartAttempt


@admin.register(Incident)
class IncidentAdmin(ReadOnlyAdmin):
    list_display = (
        "id",
        "tournament",
        "status",
        "failed_at",
        "cause",
        "rule",
        "site_wide_issue",
        "recorded_by",
    )
    list_filter = ("status", "cause", "rule", "site_wide_issue")
    search_fields = ("tournament__external_id", "description")
    list_select_related = ("tournament", "recorded_by")
    inlines = [RestartAttemptInline]


@admin.register(RestartAttempt)
class RestartAttemptAdmin(ReadOnlyAdmin):
    list_display = ("incident", "attempted_at", "succeeded", "recorded_by")
