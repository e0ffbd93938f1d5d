from django.contrib import admin
from django.urls import include, path

from refunds_admin.accounts.admin_site import RefundsAdminSite
from refunds_admin.web.views.account import (
    SignInView,
    ThrottledPasswordReset,
    mfa_enrol,
    mfa_verify,
)

# The admin (users, roles) asks superusers for their authenticator code as well as the password.
admin.site.__class__ = RefundsAdminSite

urlpatterns = [
    path("admin/", admin.site.urls),
    # Our sign-in page first; guessing is limited by django-axes (accounts/signin.py).
    path("accounts/login/", SignInView.as_view(), name="login"),
    path("accounts/two-factor/", mfa_enrol, name="mfa_enrol"),
    path("accounts/two-factor/verify/", mfa_verify, name="mfa_verify"),
    # Limited and answered in constant time (docs/security.md), before Django's own routes.
    path("accounts/password_reset/", ThrottledPasswordReset.as_view(), name="password_reset"),
    path("accounts/", include("django.contrib.auth.urls")),
    path("api/", include("refunds_admin.web.api_urls")),
    path("", include("refunds_admin.web.urls")),
]

# HTML for people, JSON under /api/ (refunds_admin/handlers.py).
handler400 = "refunds_admin.handlers.bad_request"
handler403 = "refunds_admin.handlers.permission_denied"
handler404 = "refunds_admin.handlers.page_not_found"
handler500 = "refunds_admin.handlers.server_error"
