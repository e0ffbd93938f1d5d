"""Two-factor sign-in (TOTP, django-otp) for managers and superusers.

A manager or a superuser enrols an authenticator app once: the enrolment page shows a QR code of
a new, unconfirmed device and asks for a code from the app, which confirms it. From then on the
decisions that move money (approve, reject, declare not resumable, confirm a site-wide issue)
need that confirmed device, approval asks for a current code every time, and the Django admin
asks for one at sign-in (OTPAdminSite). Codes are checked by django-otp: each code once, within
one step (30 s) of the clock either side, with growing delays after wrong codes.
"""

import time
from base64 import b32encode

import segno
from django.db import transaction
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
