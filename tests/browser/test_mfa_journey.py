"""Two-factor sign-in in a real Chromium: a new manager signs in, is sent to enrol,
scans (reads) the key, confirms it with a code computed from that key; approving is refused
without a current code and done with one."""

import time
from base64 import b32decode

import pytest
from django.contrib.auth.models import Group

from refunds_admin.accounts import mfa
from refunds_admin.proposals.models import PayoutProposal
from tests.support.factories import submitted_proposal

from .conftest import shot

pytestmark = pytest.mark.browser


def _code_from_key(secret):
    """The code an authenticator app shows for the key it was given (RFC 6238, 30 s, 6 digits),
    computed here from the displayed key only."""
    from django_otp.oath import totp

    return f"{totp(b32decode(secret), step=30, t0=0, digits=6, drift=0):06d}"


def test_a_manager_enrols_and_approves_only_with_a_code(
    browser, live_server, support, django_user_model
):
    nina = django_user_model.objects.create_user("nina_manager", password="pw-nina_manager")
    nina.groups.add(Group.objects.get(name="manager"))
    proposal = submitted_proposal(support, external_id="UP-MFA-1")

    context = browser.new_context(
        base_url=live_server.url, viewport={"width": 1360, "height": 900}, timezone_id="UTC"
    )
    context.set_default_timeout(15000)
    page = context.new_page()
    # Approving asks "cannot be undone?" (window.confirm): the manager says yes.
    questions = []
    page.on("dialog", lambda dialog: (questions.append(dialog.message), dialog.accept()))
    try:
        # Signing in sends a manager without an authenticator to enrol one.
        page.goto(f"/accounts/login/?next=/proposals/{proposal.pk}/approval/")
        page.fill("#id_username", "nina_manager")
        page.fill("#id_password", "pw-nina_manager")
        page.click("button:has-text('Sign in')")
        page.wait_for_url("**/accounts/two-factor/**")
        assert page.locator("#mfa-qr svg").count() == 1  # the QR code, drawn on the server
        secret = page.inner_text("#mfa-secret").strip()
        shot(page, "mfa-enrol")

        # A wrong code does not confirm it.
        good = _code_from_key(secret)
        page.fill("#id_code", "000000" if good != "000000" else "111111")
        page.click("button:has-text('Confirm')")
        page.wait_for_selector("text=does not match")
        assert mfa.confirmed_device(nina) is None

        # The code the app shows (computed from the displayed key) confirms it; django-otp
        # waits a second after a wrong code before it checks again.
        time.sleep(1.2)
        page.fill("#id_code", _code_from_key(secret))
        page.click("button:has-text('Confirm')")
        page.wait_for_url(f"**/proposals/{proposal.pk}/approval/")
        assert mfa.confirmed_device(nina) is not None

        # Approving without a code is refused (the browser would insist; the server does too).
        page.fill("#id_password", "pw-nina_manager")
        page.evaluate("document.querySelector('#id_otp_token').removeAttribute('required')")
        page.click("button:has-text('Approve')")
        page.wait_for_selector("#decision >> text=This field is required")
        proposal.refresh_from_db()
        assert proposal.status == PayoutProposal.Status.SUBMITTED

        # With the app's next code it is approved.
        device = mfa.confirmed_device(nina)
        page.fill("#id_password", "pw-nina_manager")
        page.fill("#id_otp_token", mfa.code_for(device))
        shot(page, "mfa-approval")
        page.click("button:has-text('Approve')")
        page.wait_for_selector("text=Proposal approved")
        assert "cannot be undone" in questions[-1]
        proposal.refresh_from_db()
        assert proposal.status != PayoutProposal.Status.SUBMITTED
    finally:
        context.close()
