"""Two-factor sign-in (TOTP, django-otp) for managers and superusers.

A manager or a superuser enrols an authenticator app once: the enrolment page shows a QR code of
a new, unconfirmed device and asks for a code from the app, which confirms it. From then on they
sign in with the password and then a code (the session is *verified*, django-otp's
`is_verified()`), every decision that moves money is made only from such a session
(`money_decision` below, on every such view), approval asks for a current code every time on top,
and the Django admin asks for one at sign-in (OTPAdminSite). Codes are checked by django-otp: each code once, within
one step (30 s) of the clock either side, with growing delays after wrong codes.
"""

import time
from base64 import b32encode
from functools import wraps
from urllib.parse import urlencode

import segno
from django.contrib import messages
from django.db import transaction
from django.shortcuts import redirect
from django.urls import reverse
from django_otp import devices_for_user
from django_otp.oath import TOTP
from django_otp.plugins.otp_totp.models import TOTPDevice

from refunds_admin.errors import Refused

from .roles import MANAGER, has_role

DEVICE_NAME = "Authenticator app"


def needs_device(user):
    """Managers and superusers sign their decisions with a second factor."""
    return bool(user and user.is_authenticated and (user.is_superuser or has_role(user, {MANAGER})))


def confirmed_device(user):
    if not (user and user.is_authenticated):
        return None
    return next(
        (d for d in devices_for_user(user, confirmed=True) if isinstance(d, TOTPDevice)), None
    )


def session_verified(request):
    """This session proved the second factor (at sign-in, or by enrolling just now)."""
    user = request.user
    return bool(getattr(user, "is_verified", None) and user.is_verified())


def decision_refusal(request):
    """Why this request may not make a money decision, as the redirect that fixes it (enrol, or
    type a code), or None when it may. Nothing is changed either way."""
    user = request.user
    back = request.META.get("HTTP_REFERER") or reverse("dashboard")
    if confirmed_device(user) is None:
        messages.error(
            request,
            "Set up two-factor sign-in first: managers sign decisions with a code from an "
            "authenticator app. Nothing was changed.",
        )
        return redirect(f"{reverse('mfa_enrol')}?{urlencode({'next': back})}")
    if not session_verified(request):
        messages.error(
            request,
            "Type the code from your authenticator app first: decisions that move money are "
            "made only from a session signed in with both factors. Nothing was changed.",
        )
        return redirect(f"{reverse('mfa_verify')}?{urlencode({'next': back})}")
    return None


def money_decision(view):
    """The one check in front of every decision that moves money (approve, batch approve,
    reject, declare not resumable for an incident or the rest of an outage, confirm a site-wide
    issue for an incident or an outage, policy versions, the default policy): the person has a
    confirmed authenticator and this session was verified with it. Put it under the role check:

        @role_required(CAN_DECIDE)
        @require_POST
        @money_decision
        def my_decision(request, pk): ...

    Only POSTs are checked: a GET shows the page (and its form) without deciding anything."""

    @wraps(view)
    def wrapper(request, *args, **kwargs):
        if request.method == "POST" and needs_device(request.user):
            # (Anyone else is refused by the view itself: their role may not decide.)
            refusal = decision_refusal(request)
            if refusal is not None:
                return refusal
        return view(request, *args, **kwargs)

    # Read by tests/web/test_money_decisions.py, which finds every manager's POST view without it.
    wrapper.money_decision = True  # type: ignore[attr-defined]
    return wrapper


@transaction.atomic
def start_enrolment(user):
    """The user's unconfirmed device to show as a QR code (made on first use, then reused, so
    reloading the page does not invalidate the code already scanned)."""
    device = (
        TOTPDevice.objects.select_for_update()
        .filter(user=user, confirmed=False)
        .order_by("id")
        .first()
    )
    if device is None:
        device = TOTPDevice.objects.create(user=user, name=DEVICE_NAME, confirmed=False)
    return device


@transaction.atomic
def confirm_device(device, code, *, acting_user):
    """Confirm an enrolment with a code from the app; audited. Raises Refused for a wrong code."""
    device = TOTPDevice.objects.select_for_update().get(pk=device.pk)
    if acting_user is not None and device.user_id != acting_user.pk:
        raise Refused("This is not your device.")
    if device.confirmed:
        return device
    if not device.verify_token(_digits(code)):
        raise Refused(
            "That code does not match: type the 6 digits your app shows now.",
            problems=[("code", "does not match the app's current code")],
        )
    device.confirmed = True
    # Audited in this transaction by audit/access.py (mfa.device_confirmed): accounts sits
    # below every app, audit included.
    device.save(update_fields=["confirmed"])
    return device


def verify_code(user, code):
    """The user's confirmed device when `code` is its current code (each code works once)."""
    device = confirmed_device(user)
    if device is None or not _digits(code):
        return None
    with transaction.atomic():
        device = TOTPDevice.objects.select_for_update().get(pk=device.pk)
        return device if device.verify_token(_digits(code)) else None


def evidence(device, *, password=False):
    """What the audit records of how a decision was confirmed: the second factor, naming the
    device that accepted the code (and the password typed again, where the page asked for it)."""
    factor = f"authenticator code (device {device.pk})"
    return f"password and {factor}" if password else factor


def _digits(code):
    code = "".join(str(code or "").split())
    return code if code.isdigit() and len(code) <= 8 else ""


def secret(device):
    """The key as the base32 text an app accepts when typed in instead of scanned."""
    return b32encode(device.bin_key).decode("ascii")


def qr_svg(device):
    """The device's otpauth:// URL as an inline SVG QR code, drawn on the server (no script, no
    third party sees the secret)."""
    return segno.make(device.config_url, error="m").svg_inline(scale=4, title="QR code")


def code_for(device, *, at=None):
    """A code the device accepts now and has not accepted before: what an authenticator app
    would show. For `manage.py totp_code` (demo and development) and the tests, which sign in
    with real codes computed from the device's key."""
    now = time.time() if at is None else at
    t_now = int((now - device.t0) // device.step) + device.drift
    t = max(t_now - device.tolerance, device.last_t + 1)
    totp = TOTP(device.bin_key, device.step, device.t0, device.digits, 0)
    totp.time = device.t0 + t * device.step
    return f"{totp.token():0{device.digits}d}"
