from django.contrib import admin

from refunds_admin.readonly_admin import ReadOnlyAdmin

from .models import OutagePrepareRun, PayoutLine, PayoutProposal


@admin.register(PayoutProposal)
class PayoutProposalAdmin(ReadOnlyAdmin):
    """Read-only: proposals change only through the services (four eyes, fingerprint)."""

    list_display = (
        "id",
        "incident",
        "version",
        "status",
        "rule",
        "currency",
        "total_cents",
        "lines_count",
        "prepared_by",
        "approved_by",
    )
    list_filter = ("status", "rule", "currency")
    search_fields = ("incident__tournament__external_id", "fingerprint")
    list_select_related = ("incident__tournament", "prepared_by", "approved_by")


@admin.register(PayoutLine)
class PayoutLineAdmin(ReadOnlyAdmin):
    list_display = (
        "proposal",
        "position",
        "entry_id",
        "player_id",
        "status",
        "chips",
        "total_cents",
        "capped",
    )
    list_filter = ("status", "capped")
    # (A line's screen name is its entry's: searched on the entries' page.)
    search_fields = ("entry_id", "player_id")
    list_select_related = ("proposal",)
    show_full_result_count = False


@admin.register(OutagePrepareRun)
class OutagePrepareRunAdmin(ReadOnlyAdmin):
    """Read-only: an outage's batch prepare runs and their progress."""

    list_display = ("id", "outage", "state", "done", "total", "requested_by", "requested_at")
    list_filter = ("state",)
