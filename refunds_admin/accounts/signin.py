"""One lockout policy for every place a password is typed (django-axes): the sign-in page, the
Django admin's sign-in and the approval's re-authentication.

Failures are counted per (normalised username, client address). The username is normalised as
Django's sign-in form does it (Unicode NFKC, so `ｍａｎａｇｅｒ` and `𝗆𝖺𝗇𝖺𝗀𝖾𝗋` are `manager`),
stripped and case-folded on top, so no spelling of a name gets a fresh count. After
AXES_FAILURE_LIMIT failures the pair is refused for AXES_COOLOFF_TIME, even with the right
password, so a guesser learns nothing. Lockouts are written to the audit (audit/access.py).
"""

import unicodedata

from django.conf import settings
from django.shortcuts import render


def normalise_username(name):
    """The key a username is counted under: NFKC (what Django's sign-in form applies before it
    looks the user up), case-folded, NFKC again (case folding may leave a decomposed form)."""
    if not isinstance(name, str):
        return ""
    return unicodedata.normalize("NFKC", unicodedata.normalize("NFKC", name).strip().casefold())


def username_for_lockout(request, credentials):
    """AXES_USERNAME_CALLABLE: the normalised username of the attempt."""
    field = getattr(settings, "AXES_USERNAME_FORM_FIELD", "username")
    if credentials and credentials.get(field) is not None:
        name = credentials.get(field)
    else:
        name = getattr(request, "POST", {}).get(field, "")
    return normalise_username(name)


def client_address(request):
    """AXES_CLIENT_IP_CALLABLE: the client's address. Behind proxies, ClientAddressMiddleware
    (TRUSTED_PROXY_COUNT) has already put the client's address in REMOTE_ADDR."""
    return request.META.get("REMOTE_ADDR") or ""


def cooloff_minutes():
    cooloff = settings.AXES_COOLOFF_TIME
    return int(cooloff.total_seconds() // 60) if hasattr(cooloff, "total_seconds") else 15


def lockout_response(request, original_response=None, credentials=None):
    """AXES_LOCKOUT_CALLABLE: 429 with the sign-in page (or a page saying so elsewhere)."""
    message = (
        "Too many failed sign-in attempts for this account from your address. "
        f"Wait {cooloff_minutes()} minutes and try again, or ask a manager to check the account."
    )
    if request.path.startswith("/admin/") or request.path == settings.LOGIN_URL_PATH:
        from django.contrib.auth.forms import AuthenticationForm

        form = AuthenticationForm(request, initial={"username": request.POST.get("username", "")})
        return render(
            request,
            "registration/login.html",
            {"form": form, "lockout_message": message},
            status=429,
        )
    return render(request, "registration/locked_out.html", {"lockout_message": message}, status=429)
