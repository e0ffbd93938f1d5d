"""Signing in and the second factor.

Password guessing is limited by django-axes (refunds_admin/accounts/signin.py) for every place
a password is typed; this module only decides where a signed-in person goes, and lets managers
and superusers enrol their authenticator app (refunds_admin/accounts/mfa.py).
"""

import logging
import time
from urllib.parse import urlencode

from django import forms
from django.conf import settings
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.contrib.auth.views import LoginView, PasswordResetView
from django.core.cache import cache
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils.http import url_has_allowed_host_and_scheme
from django.utils.safestring import mark_safe
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_http_methods
from django_otp import login as otp_login

from refunds_admin.accounts import mfa
from refunds_admin.accounts.roles import ROLES, has_role
from refunds_admin.accounts.signin import client_address, normalise_username
from refunds_admin.accounts.tasks import send_password_reset
from refunds_admin.errors import Refused


class SignInView(LoginView):
    template_name = "registration/login.html"
    redirect_authenticated_user = True

    def get_success_url(self):
        user = self.request.user
        if mfa.needs_device(user) and mfa.confirmed_device(user) is None:
            # Managers and superusers enrol their authenticator app before anything else.
            return f"{reverse('mfa_enrol')}?{urlencode({'next': super().get_success_url()})}"
        if mfa.needs_device(user) and has_role(user, ROLES):
            # The second step of a manager's sign-in: a code from the app verifies the session.
            # (A superuser without a staff role goes to the admin, whose sign-in asks for it.)
            return f"{reverse('mfa_verify')}?{urlencode({'next': super().get_success_url()})}"
        return super().get_success_url()

    def get_default_redirect_url(self):
        # A superuser without a staff role manages users and roles in the Django admin; the
        # staff pages would only show them "your role does not allow this page".
        user = self.request.user
        if user.is_staff and not has_role(user, ROLES):
            return reverse("admin:index")
        return super().get_default_redirect_url()


log = logging.getLogger(__name__)


class ThrottledPasswordReset(PasswordResetView):
    """Django's password reset (an e-mail with a one-time link), limited and answered in
    constant time: at most PASSWORD_RESET_LIMIT requests an hour per client address and per
    e-mail address (429 beyond). The request only queues the e-mail (accounts.tasks), the same
    work whether or not the address has an account, and every answer takes at least
    PASSWORD_RESET_MIN_SECONDS on top, so timing does not tell who has an account. The link
    goes through EMAIL_BACKEND, never printed in production (settings.py)."""

    def post(self, request, *args, **kwargs):
        started = time.monotonic()
        try:
            return self._answer(request)
        finally:
            spent = time.monotonic() - started
            time.sleep(max(0.0, settings.PASSWORD_RESET_MIN_SECONDS - spent))

    def _answer(self, request):
        form = self.get_form()
        if not form.is_valid():
            return self.form_invalid(form)
        email = form.cleaned_data["email"]
        if _over_limit(f"ip:{client_address(request)}", f"email:{normalise_username(email)}"):
            return render(
                request,
                "registration/locked_out.html",
                {
                    "lockout_message": "Too many password-reset requests: wait an hour, or ask "
                    "a superuser to set a temporary password."
                },
                status=429,
            )
        try:
            send_password_reset.delay(
                email, domain=request.get_host(), use_https=request.is_secure()
            )
        except Exception:  # the broker is down: the answer must not differ
            log.exception("password reset e-mail not queued")
        return redirect(self.get_success_url())


def _over_limit(*keys):
    """Count one request under each key for an hour; True when any is over the limit."""
    over = False
    for key in keys:
        key = f"pwreset:{key}"
        cache.add(key, 0, timeout=3600)
        try:
            count = cache.incr(key)
        except ValueError:  # expired between add and incr
            cache.set(key, 1, timeout=3600)
            count = 1
        over = over or count > settings.PASSWORD_RESET_LIMIT
    return over


class CodeForm(forms.Form):
    code = forms.CharField(
        label="Code from your app",
        max_length=8,
        widget=forms.TextInput(
            attrs={"autocomplete": "one-time-code", "inputmode": "numeric", "pattern": "[0-9 ]*"}
        ),
    )


def _next_url(request):
    target = request.POST.get("next") or request.GET.get("next") or ""
    if url_has_allowed_host_and_scheme(target, {request.get_host()}, request.is_secure()):
        return target
    return reverse("dashboard")


@never_cache  # a page about the second factor: nothing of it stays in a cache
@login_required
@require_http_methods(["GET", "HEAD", "POST"])
def mfa_verify(request):
    """The second step of signing in for managers and superusers: a current code from the app
    verifies this session (django-otp), which every money decision requires."""
    device = mfa.confirmed_device(request.user)
    if device is None:
        return redirect(f"{reverse('mfa_enrol')}?{urlencode({'next': _next_url(request)})}")
    if mfa.session_verified(request):
        return redirect(_next_url(request))
    form = CodeForm(request.POST or None)
    status = 200
    if request.method == "POST":
        status = 400
        if form.is_valid():
            verified = mfa.verify_code(request.user, form.cleaned_data["code"])
            if verified is not None:
                otp_login(request, verified)
                return redirect(_next_url(request))
            form.add_error(
                "code",
                "That code does not match your authenticator app (each code works once; wait "
                "for the next one).",
            )
    return render(
        request, "web/mfa_verify.html", {"form": form, "next": _next_url(request)}, status=status
    )


@never_cache  # shows the authenticator's secret key and QR code
@login_required
@require_http_methods(["GET", "HEAD", "POST"])
def mfa_enrol(request):
    """Enrol an authenticator app: scan the QR code, type a code to confirm it."""
    device = mfa.confirmed_device(request.user)
    if device is not None:
        return render(request, "web/mfa_enrol.html", {"confirmed": device})
    device = mfa.start_enrolment(request.user)
    form = CodeForm(request.POST or None)
    status = 200
    if request.method == "POST":
        status = 400
        if form.is_valid():
            try:
                device = mfa.confirm_device(
                    device, form.cleaned_data["code"], acting_user=request.user
                )
            except Refused as exc:
                form.add_error("code", exc.message)
            else:
                otp_login(request, device)  # this session has just shown the second factor
                messages.success(request, "Two-factor sign-in is on for your account.")
                return redirect(_next_url(request))
    return render(
        request,
        "web/mfa_enrol.html",
        {
            "form": form,
            # segno draws the SVG from the device's own URL: no user input reaches it.
            "qr": mark_safe(mfa.qr_svg(device)),  # noqa: S308
            "secret": mfa.secret(device),
            "next": _next_url(request),
            "required": mfa.needs_device(request.user),
        },
        status=status,
    )
