from django.contrib import admin

from refunds_admin.readonly_admin import ReadOnlyAdmin

from .models import ApiClient, Entry, PrizePlace, Snapshot, Tournament


@admin.register(Tournament)
class TournamentAdmin(ReadOnlyAdmin):
    list_display = (
        "external_id",
        "name",
        "currency",
        "buy_in_cents",
        "fee_cents",
        "starts_at",
        "frozen_at",
    )
    search_fields = ("external_id", "name")
    list_filter = ("currency",)


@admin.register(Snapshot)
class SnapshotAdmin(ReadOnlyAdmin):
    """Snapshots are immutable: the document as received and its SHA-256."""

    list_display = (
        "tournament",
        "version",
        "source",
        "entries_count",
        "active_count",
        "imported_by",
        "imported_at",
    )
    list_filter = ("source",)
    search_fields = ("tournament__external_id", "sha256")
    list_select_related = ("tournament", "imported_by")


@admin.register(PrizePlace)
class PrizePlaceAdmin(ReadOnlyAdmin):
    list_display = ("snapshot", "place", "amount_cents", "non_cash", "description")
    search_fields = ("snapshot__tournament__external_id",)
    list_select_related = ("snapshot__tournament",)


@admin.register(Entry)
class EntryAdmin(ReadOnlyAdmin):
    list_display = (
        "snapshot",
        "position",
        "entry_id",
        "player_id",
        "screen_name",
        "status",
        "chips",
    )
    list_filter = ("status",)
    search_fields = ("entry_id", "player_id", "screen_name")
    list_select_related = ("snapshot__tournament",)
    show_full_result_count = False  # counting 100k-entry tables on every page is slow


@admin.register(ApiClient)
class ApiClientAdmin(admin.ModelAdmin):
    """Clients are created with `manage.py create_api_client` (the token is shown once); here a
    superuser can only switch one off."""

    list_display = (
        "name",
        "token_prefix",
        "acting_user",
        "is_active",
        "created_at",
        "last_used_at",
    )
    fields = ("name", "token_prefix", "acting_user", "is_active", "created_at", "last_used_at")
    readonly_fields = ("name", "token_prefix", "acting_user", "created_at", "last_used_at")

    def has_add_permission(self, request):
        return False

    def has_delete_permission(self, request, obj=None):
        return False
