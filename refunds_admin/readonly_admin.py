"""The Django admin shows the workflow's records to superusers without letting them be edited.

Every change to a tournament, incident or proposal goes through a service (role check, audit
event, compare-and-set); the admin is for looking, and for user and role management.
"""

from django.contrib import admin


class _LookOnly:
    """No add, change or delete, whoever asks."""

    def has_add_permission(self, request, obj=None):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return False


class ReadOnlyAdmin(_LookOnly, admin.ModelAdmin):
    """Visible to superusers; no add, change or delete."""


class ReadOnlyInline(_LookOnly, admin.TabularInline):
    extra = 0
    max_num = 0
    show_change_link = False
