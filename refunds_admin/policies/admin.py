from django.contrib import admin

from refunds_admin.readonly_admin import ReadOnlyAdmin

from .models import DefaultPolicy, Policy, PolicyVersion


# Read-only: versions are proposed and approved on the Policies pages (four eyes, a second
# factor), never edited here.
@admin.register(Policy)
class PolicyAdmin(ReadOnlyAdmin):
    list_display = ("id", "created_at")


@admin.register(PolicyVersion)
class PolicyVersionAdmin(ReadOnlyAdmin):
    list_display = ("policy", "version", "title", "status", "proposed_by", "approved_by")
    list_filter = ("status", "policy")


@admin.register(DefaultPolicy)
class DefaultPolicyAdmin(ReadOnlyAdmin):
    list_display = ("policy", "changed_by", "changed_at")
