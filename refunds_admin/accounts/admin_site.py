"""The Django admin behind a second factor: OTPAdminSite, asking for the password and a current
code from the superuser's authenticator app on one form."""

from django_otp.admin import OTPAdminAuthenticationForm, OTPAdminSite

from . import mfa


class AdminSignInForm(OTPAdminAuthenticationForm):
    """django-otp asks to pick a device first; our superusers have one authenticator app, which
    is used when none is picked."""

    def _chosen_device(self, user):
        return super()._chosen_device(user) or mfa.confirmed_device(user)


class RefundsAdminSite(OTPAdminSite):
    login_form = AdminSignInForm
