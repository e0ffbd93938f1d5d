"""A policy gets a new version in a real Chromium: a manager proposes it from the fields of the
version before, reads it as a table and as a difference; a second manager approves it with a
password and a code from their authenticator app; tournaments imported under it get it."""

import pytest

from refunds_admin.policies import services as policies
from refunds_admin.policies.models import PolicyVersion
from tests.support.factories import import_doc, totp_code

from .conftest import shot

pytestmark = pytest.mark.browser


def test_a_manager_proposes_a_policy_version_and_another_approves_it(
    open_as, support, manager, other_manager
):
    maria = open_as(manager)
    maria.click("nav >> text=Policies")
    maria.wait_for_selector("#policy-ultimatepoker-2026 >> text=default")
    shot(maria, "policies")

    # From roll-forward-50-50 v1: a 10-minute automatic window is added.
    maria.click("#policy-roll-forward-50-50 >> text=v1")
    maria.click("text=Propose a new version based on this one")
    maria.fill("#id_within_minutes", "10")
    maria.fill("#id_title", "Roll forward, with a 10-minute full refund")
    shot(maria, "policy-propose")
    maria.click("#policy-fields-form >> button:has-text('Propose')")
    maria.wait_for_selector("text=roll-forward-50-50 v2 proposed")
    assert maria.inner_text("#policy-condition") == (
        "Full refund if play failed within 10 minutes of the start, or when management finds: "
        "Management chose to roll the tournament back."
    )
    changes = maria.inner_text("#policy-changes")
    assert "Full refund window" in changes and "10 min" in changes
    assert maria.locator("#policy-approve-form").count() == 0  # never her own
    shot(maria, "policy-version-proposed")

    version = PolicyVersion.objects.get(policy_id="roll-forward-50-50", version=2)
    otto = open_as(other_manager)
    otto.goto(f"/policies/versions/{version.pk}/")
    otto.fill("#policy-approve-form >> #id_password", "pw-otto_manager")
    otto.fill("#policy-approve-form >> #id_otp_token", "000000")
    otto.click("button:has-text('Approve roll-forward-50-50 v2')")
    otto.wait_for_selector("text=does not match your authenticator app")
    version.refresh_from_db()
    assert version.status == "proposed"

    otto.fill("#policy-approve-form >> #id_password", "pw-otto_manager")
    otto.fill("#policy-approve-form >> #id_otp_token", totp_code(other_manager))
    otto.click("button:has-text('Approve roll-forward-50-50 v2')")
    otto.wait_for_selector("text=roll-forward-50-50 v2 approved.")
    version.refresh_from_db()
    assert version.status == "approved" and version.approved_by == other_manager
    shot(otto, "policy-version-approved")

    # A tournament set to the policy now gets version 2, and its page says so.
    policies.set_default_policy(version.policy, acting_user=manager)
    tournament = import_doc(support, external_id="UP-POLICY-1").tournament
    assert tournament.policy_version == version
    otto.goto(f"/tournaments/{tournament.pk}/")
    assert "roll-forward-50-50 v2" in otto.inner_text("#tournament-policy")
