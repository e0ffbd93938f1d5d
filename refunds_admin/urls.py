from django.contrib import admin
from django.urls import include, path

from refunds_admin.web.login import RateLimitedLoginView

urlpatterns = [
    path("admin/", admin.site.urls),
    # Our sign-in page first: it limits password guessing (see web/login.py).
    path("accounts/login/", RateLimitedLoginView.as_view(), name="login"),
    path("accounts/", include("django.contrib.auth.urls")),
    path("api/", include("refunds_admin.web.api_urls")),
    path("", include("refunds_admin.web.urls")),
]
