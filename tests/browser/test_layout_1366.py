"""Pages at a 1366 px laptop window: every table fits its card, nothing hidden behind a
sideways scroll that nobody sees (found trying the app as a manager and an auditor)."""

import pytest

from tests.support.factories import approve_outage, import_doc, knockout_doc, prepared_outage

pytestmark = pytest.mark.browser

# Each table of the page whose card scrolls sideways: its id, and how much is hidden.
_HIDDEN = """() => [...document.querySelectorAll('main table')].map(t => {
    const card = t.closest('.card');
    return [t.id || t.parentElement.id, card.scrollWidth - card.clientWidth];
}).filter(([, hidden]) => hidden > 1)"""


def test_the_outage_report_shows_every_cost_per_method_at_1366_px(
    open_as, support, manager, auditor
):
    outage = prepared_outage(support)
    approve_outage(outage, manager)
    page = open_as(auditor)
    page.set_viewport_size({"width": 1366, "height": 900})
    page.goto(f"/outages/{outage.pk}/report/")
    assert "Overlay kept by the house" in page.inner_text("#cost-method")
    assert page.evaluate(_HIDDEN) == []


def test_a_knockout_tournaments_entries_fit_their_card_at_1366_px(open_as, support, auditor):
    tournament = import_doc(support, knockout_doc("T-KO-1366")).tournament
    page = open_as(auditor)
    page.set_viewport_size({"width": 1366, "height": 900})
    page.goto(f"/tournaments/{tournament.pk}/")
    assert "Paid with" in page.inner_text("#entries")
    assert page.evaluate(_HIDDEN) == []
