"""Support finds a player by id, screen-name prefix or e-mail (any case), sees each tournament's
state for them (pending, approved, posted) and opens the printable statement; the statements
outbox and the notification settings pages."""

import pytest
from django.urls import reverse

from refunds_admin.notifications import staff
from refunds_admin.notifications.models import StaffKind, StatementMessage
from refunds_admin.web import queries
from tests.support.factories import (
    approved_proposal,
    draft_proposal,
    open_incident,
    posted_proposal,
)


@pytest.fixture
def three_tournaments(support, manager):
    emails = {"e2": "Bea.Jones@Example.test"}
    return {
        "posted": posted_proposal(support, manager, external_id="PL-POSTED", emails=emails),
        "approved": approved_proposal(support, manager, external_id="PL-APPROVED"),
        "pending": open_incident(support, external_id="PL-PENDING"),
    }


def test_it_finds_players_by_id_name_prefix_or_email_in_any_case(three_tournaments):
    assert [p["player_id"] for p in queries.find_players("P2")] == ["p2"]
    by_email = queries.find_players("bea.jones@example.TEST")
    assert [p["player_id"] for p in by_email] == ["p2"]
    assert by_email[0]["emails"] == ["Bea.Jones@Example.test"]
    assert by_email[0]["tournaments"] == 3
    # "player1" starts the screen names player1 and player10..: prefix, any case
    assert {p["player_id"] for p in queries.find_players("PLAYER")} == {"p1", "p2", "p3", "p4"}
    assert queries.find_players("layer1") == []  # a prefix, not a substring
    assert queries.find_players("nobody") == []


def test_a_long_name_prefix_must_match_beyond_the_characters_the_index_holds(support):
    """The screen-name index holds the first 16 characters, lowered (tournaments migration
    0012): the searches ask it for those and check the whole name on what it finds."""
    names = {
        0: {"screen_name": "Aurelio-the-Magnificent"},
        1: {"screen_name": "Aurelio-the-Magnifique"},
    }
    proposal = draft_proposal(support, entry_fields=names)
    assert [p["player_id"] for p in queries.find_players("AURELIO-THE-MAGNIFIC")] == ["p1"]
    assert {p["player_id"] for p in queries.find_players("aurelio-the-magn")} == {"p1", "p2"}
    assert queries.find_players("aurelio-the-magnificento") == []
    lines = queries.proposal_lines(proposal, q="aurelio-THE-magnifi")
    assert sorted(lines.values_list("entry_id", flat=True)) == ["e1", "e2"]
    lines = queries.proposal_lines(proposal, q="Aurelio-the-Magnifiq")
    assert list(lines.values_list("entry_id", flat=True)) == ["e2"]
    found = queries.snapshot_entries(proposal.snapshot, q="Aurelio-the-Magnificent")
    assert list(found.values_list("entry_id", flat=True)) == ["e1"]
    assert not queries.snapshot_entries(proposal.snapshot, q="Aurelio-the-Magnifi").exists()


def test_it_shows_each_tournaments_state_for_the_player(three_tournaments):
    states = {
        row["tournament"].external_id: row["state"] for row in queries.player_tournaments("p1")
    }
    assert states == {"PL-POSTED": "posted", "PL-APPROVED": "approved", "PL-PENDING": "pending"}


def test_the_lookup_page_links_the_printable_statement(client, support, three_tournaments):
    client.force_login(support)
    page = client.get(reverse("player_lookup") + "?q=BEA.JONES@example.test")
    assert page.status_code == 200
    posted = three_tournaments["posted"]
    statement_url = reverse("proposal_statement", args=[posted.pk, "e2"])
    assert statement_url in page.text and "Total paid out" in page.text
    for state in ("posted", "approved", "pending"):
        assert f'badge {state}"' in page.text
    many = client.get(reverse("player_lookup") + "?q=player")
    assert "4 players found" in many.text
    statement = client.get(statement_url)
    assert "data-print" in statement.text and "Cashier reference" in statement.text
    assert f"proposal-{posted.pk}/e2/" in statement.text
    assert "<script" not in statement.text.split("</head>")[1]  # no inline script (CSP)


def test_the_outbox_page_lists_messages_and_players_without_address(
    client, support, manager, settings
):
    settings.STATEMENT_CHANNEL = "email"
    proposal = posted_proposal(support, manager, emails={"e1": "a@example.test"})
    staff.dispatch_events()
    client.force_login(support)
    page = client.get(reverse("statement_outbox", args=[proposal.pk]) + "?show=no_address")
    assert page.status_code == 200
    assert "No address" in page.text and "p2" in page.text and "a@example.test" not in page.text
    assert "Retry failed statements" not in page.text  # support may not retry
    assert StatementMessage.objects.filter(proposal=proposal).count() == 4


def test_each_user_turns_kinds_off_on_the_settings_page(client, manager):
    client.force_login(manager)
    page = client.get(reverse("notification_settings"))
    assert page.text.count('type="checkbox"') == len(StaffKind.values)
    client.post(reverse("notification_settings"), {"kinds": [StaffKind.OVERDUE]})
    enabled = {kind for kind, _, on in staff.preferences_of(manager) if on}
    assert enabled == {StaffKind.OVERDUE}
