"""Sign-in with a brake on password guessing.

Failed attempts are counted per (username, IP) in the cache; after LIMIT failures within WINDOW
seconds that username is refused from that address until the window passes, even with the right
password, so a guesser learns nothing from trying.
"""

import hashlib

from django.contrib.auth.views import LoginView
from django.core.cache import cache
from django.urls import reverse

from refunds_admin.accounts.roles import ROLES, has_role

LIMIT = 5
WINDOW = 15 * 60


def _key(username, ip):
    raw = f"{(username or '').strip().lower()}|{ip or ''}".encode()
    return "login-failures:" + hashlib.sha256(raw).hexdigest()


def failures(username, ip):
    return cache.get(_key(username, ip), 0)


def _count_failure(username, ip):
    key = _key(username, ip)
    if cache.add(key, 1, WINDOW):
        return
    try:
        cache.incr(key)
    except ValueError:  # expired between add() and incr()
        cache.add(key, 1, WINDOW)


class RateLimitedLoginView(LoginView):
    template_name = "registration/login.html"
    redirect_authenticated_user = True

    def post(self, request, *args, **kwargs):
        username = request.POST.get("username", "")
        ip = request.META.get("REMOTE_ADDR")
        if failures(username, ip) >= LIMIT:
            # An unbound form: the password is not even checked while the account is locked.
            form = self.form_class(request, initial={"username": username})
            message = (
                "Too many failed sign-in attempts for this account from your address. "
                f"Wait {WINDOW // 60} minutes and try again, or ask a manager to check the account."
            )
            context = self.get_context_data(form=form, lockout_message=message)
            response = self.render_to_response(context)
            response.status_code = 429
            return response
        return super().post(request, *args, **kwargs)

    def form_invalid(self, form):
        _count_failure(self.request.POST.get("username", ""), self.request.META.get("REMOTE_ADDR"))
        return super().form_invalid(form)

    def form_valid(self, form):
        cache.delete(
            _key(self.request.POST.get("username", ""), self.request.META.get("REMOTE_ADDR"))
        )
        return super().form_valid(form)

    def get_default_redirect_url(self):
        # A superuser without a staff role manages users and roles in the Django admin; the
        # staff pages would only show them "your role does not allow this page".
        user = self.request.user
        if user.is_staff and not has_role(user, ROLES):
            return reverse("admin:index")
        return super().get_default_redirect_url()
