"""An htmx request the server refuses swaps nothing: the page says so (found trying the app as
an auditor after signing in again in another tab)."""

import pytest

pytestmark = pytest.mark.browser


def test_a_refused_htmx_request_says_so_instead_of_doing_nothing(
    open_as, support, manager, auditor
):
    # Signed in again in another tab, the page's CSRF token is stale: "Replay" was refused with
    # a 403 that htmx swaps nowhere, and the click seemed to do nothing.
    from tests.support.factories import approved_proposal

    proposal = approved_proposal(support, manager)
    page = open_as(auditor)
    page.goto(f"/proposals/{proposal.pk}/")
    page.evaluate(
        """() => {
            document.querySelectorAll("input[name=csrfmiddlewaretoken]").forEach(i => i.value = "x");
            document.body.setAttribute("hx-headers", '{"X-CSRFToken": "x"}');
        }"""
    )
    page.click("button:has-text('Replay (check fingerprint)')")
    notice = page.locator("#request-problem[role=alert]")
    notice.wait_for()
    assert "Reload the page" in notice.inner_text()
