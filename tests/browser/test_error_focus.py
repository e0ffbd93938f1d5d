"""Keyboard and screen-reader use: a form sent back with an error puts the focus on the first
field in error, so that its label and its error are what is read next, rather than leaving the
person at the top of the page, eighteen Tab presses from the field to fix."""

import pytest

from tests.support.factories import submitted_proposal

pytestmark = pytest.mark.browser

_FOCUSED = "() => document.activeElement && document.activeElement.id"


def test_a_refused_approval_puts_the_focus_on_the_code_in_error(open_as, support, manager):
    proposal = submitted_proposal(support)
    page = open_as(manager)
    page.goto(f"/proposals/{proposal.pk}/approval/")
    page.fill("#id_password", "pw-" + manager.username)
    page.fill("#id_otp_token", "000000")
    page.click("button:has-text('Approve')")
    page.wait_for_selector("#id_otp_token_error")
    assert page.evaluate(_FOCUSED) == "id_otp_token"


def test_a_refused_csv_import_puts_the_focus_on_the_first_field_in_error(open_as, support):
    page = open_as(support)
    page.goto("/tournaments/import/")
    page.evaluate("document.getElementById('csv-form').noValidate = true")
    page.fill("#id_external_id", "CSV-FOCUS")
    page.click("button:has-text('Import CSV')")
    page.wait_for_selector("#import-errors")
    assert page.evaluate(_FOCUSED) == "id_name"


def test_a_page_without_an_error_leaves_the_focus_alone(open_as, support):
    page = open_as(support)
    page.goto("/tournaments/import/")
    assert page.evaluate(_FOCUSED) in ("", None)
