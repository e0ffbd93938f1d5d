from django.contrib import admin
from django.urls import include, path

from refunds_admin.web.login import RateLimitedLoginView

urlpatterns = [
    path("admin/", admin.site.urls),
    # Our sign-in page first: it limits password guessing (see web/login.py).
    path("accounts/login/", RateLimitedLoginView.as_view(), name="login"),
    path("accounts/", include("django.contrib.auth.urls")),
    path("api/", include("refunds_admin.tournaments.api_urls")),
    path("", include("refunds_admin.web.urls")),
]

# HTML for people, JSON under /api/ (refunds_admin/handlers.py).
handler400 = "refunds_admin.handlers.bad_request"
handler403 = "refunds_admin.handlers.permission_denied"
handler404 = "refunds_admin.handlers.page_not_found"
handler500 = "refunds_admin.handlers.server_error"
