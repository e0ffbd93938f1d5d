"""Authenticator devices and sign-in records in the Django admin.

Devices: seen, removed (a lost phone), never written. A key typed or swapped in the admin would
let a superuser sign decisions as someone else, so the admin neither shows keys nor QR codes
(OTP_ADMIN_HIDE_SENSITIVE_DATA) nor adds or edits devices: each person enrols their own on the
enrolment page. Removing one is audited (mfa.device_removed) and the person enrols again.

Sign-in records (django-axes: attempts, logs, failures): a superuser may delete them (deleting a
locked-out pair's attempts unlocks it before its cool-off ends), and each one deleted is audited
(signin.record_deleted), for they are the history of who tried to sign in.
"""

from axes.admin import AccessAttemptAdmin, AccessFailureLogAdmin, AccessLogAdmin
from axes.models import AccessAttempt, AccessFailureLog, AccessLog
from django.contrib import admin
from django.db import transaction
from django_otp.plugins.otp_totp.admin import TOTPDeviceAdmin
from django_otp.plugins.otp_totp.models import TOTPDevice

from refunds_admin.audit.access import audit


class AuthenticatorAdmin(TOTPDeviceAdmin):
    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False


if admin.site.is_registered(TOTPDevice):
    admin.site.unregister(TOTPDevice)
admin.site.register(TOTPDevice, AuthenticatorAdmin)


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
