"""Read-only admin for the ledger: credits are append-only, jobs change only through services."""

from django.contrib import admin

from refunds_admin.readonly_admin import ReadOnlyAdmin

from .models import CashierDelivery, Credit, PostingJob


@admin.register(Credit)
class CreditAdmin(ReadOnlyAdmin):
    list_display = ["key", "player_id", "component", "amount_cents", "currency", "created_at"]
    list_filter = ["component", "currency"]
    search_fields = ["=player_id", "=entry_id", "=proposal__id"]
    show_full_result_count = False


@admin.register(PostingJob)
class PostingJobAdmin(ReadOnlyAdmin):
    list_display = [
        "proposal",
        "state",
        "posted",
        "total",
        "posted_cents",
        "total_cents",
        "attempts",
        "wallet",
        "wallet_identity",
        "wallet_unavailable_since",
    ]
    list_filter = ["state", "wallet"]


@admin.register(CashierDelivery)
class CashierDeliveryAdmin(ReadOnlyAdmin):
    list_display = ["credit", "state", "cashier_credit_id", "error", "updated_at"]
    list_filter = ["state"]
