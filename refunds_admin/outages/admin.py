from django.contrib import admin

from refunds_admin.readonly_admin import ReadOnlyAdmin, ReadOnlyInline

from .models import Outage, OutageIncident


class OutageIncidentInline(ReadOnlyInline):
    model = OutageIncident


@admin.register(Outage)
class OutageAdmin(ReadOnlyAdmin):
    list_display = ("id", "failed_at", "cause", "site_wide_issue", "recorded_by")
    list_filter = ("cause", "site_wide_issue")
    search_fields = ("description",)
    inlines = [OutageIncidentInline]
