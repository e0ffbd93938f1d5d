"""Authenticator devices in the Django admin.

Devices: seen, removed (a lost phone), never written. A key typed or swapped in the admin would
let a superuser sign decisions as someone else, so the admin neither shows keys nor QR codes
(OTP_ADMIN_HIDE_SENSITIVE_DATA) nor adds or edits devices: each person enrols their own on the
enrolment page. Removing one is audited (mfa.device_removed) and the person enrols again.

The sign-in records' admin (django-axes), whose deletions are audited, is in audit/admin.py:
accounts sits below the audit and imports none of it (tests/services/test_layers.py).
"""

from django.contrib import admin
from django_otp.plugins.otp_totp.admin import TOTPDeviceAdmin
from django_otp.plugins.otp_totp.models import TOTPDevice


class AuthenticatorAdmin(TOTPDeviceAdmin):
    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False


if admin.site.is_registered(TOTPDevice):
    admin.site.unregister(TOTPDevice)
admin.site.register(TOTPDevice, AuthenticatorAdmin)
