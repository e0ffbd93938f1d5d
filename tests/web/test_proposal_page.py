import csv
import io
import json
import re
from datetime import datetime
from zoneinfo import ZoneInfo

import pytest
from django.urls import reverse
from django.utils import timezone

from refunds_admin.incidents import services as incidents
from refunds_admin.proposals.services import prepare_proposal, submit_proposal
from refunds_admin.web import queries
from tests.support.factories import (
    cancelled_incident,
    draft_proposal,
    import_doc,
    submitted_proposal,
    sunday_special_doc,
)


def _entries(response):
    import re

    # The breakdown's rows only (the approver's figures above it list entries too).
    lines = response.content.decode().partition('<div id="lines">')[2] or response.content.decode()
    return re.findall(r"<td>(e\d{3})</td>", lines)


@pytest.fixture
def big(support):
    """250 entries, 200 active: three pages of 100. 25 paid places of 400.00, so the first-place
    cap binds: e199's huge stack is capped, every other active entry shares the rest."""
    doc = sunday_special_doc(
        "UP-BIG",
        entries=250,
        active=200,
        prizes=[400_00] * 25,
        chips=lambda i: 5_000_000 if i == 199 else (i + 1) * 1000,
    )
    return submitted_proposal(support, doc=doc)


@pytest.mark.django_db
def test_it_shows_summary_warnings_and_total_with_currency(client, world, auditor):
    client.force_login(auditor)
    page = client.get(reverse("proposal_detail", args=[world["proposal"].pk])).content.decode()
    assert "Rule 2: not yet in the money" in page
    assert "USD 1,950.00" in page  # remaining pool from the summary
    assert "prizes awarded to eliminated entries total 50.00" in page
    assert world["proposal"].fingerprint in page


@pytest.mark.django_db
def test_it_pages_the_breakdown_by_keyset_in_both_directions(client, big, auditor):
    client.force_login(auditor)
    url = reverse("proposal_detail", args=[big.pk])
    first = _entries(client.get(url, {"show": ""}))  # all entries, snapshot order
    assert first[0] == "e000" and len(first) == 100
    second = _entries(client.get(url, {"after": "99"}))
    assert second[0] == "e100" and second[-1] == "e199"
    last = _entries(client.get(url, {"last": "1"}))
    assert last[0] == "e150" and last[-1] == "e249"
    back = _entries(client.get(url, {"before": "150"}))
    assert back[0] == "e050" and back[-1] == "e149"


@pytest.mark.django_db
def test_it_sorts_by_total_descending_across_pages_without_gaps(client, big, auditor):
    client.force_login(auditor)
    qs = queries.proposal_lines(big)
    seen, after = [], None
    while True:
        page = queries.keyset_page(qs, field="total_cents", descending=True, after=after, size=40)
        seen += [(line.total_cents, line.position) for line in page.rows]
        if not page.has_next:
            break
        after = page.last_cursor
    assert len(seen) == 250 and len(set(seen)) == 250
    assert seen == sorted(seen, reverse=True)
    last = queries.keyset_page(qs, field="total_cents", descending=True, last=True, size=40)
    assert [(line.total_cents, line.position) for line in last.rows] == seen[-40:]


@pytest.mark.django_db
def test_it_searches_by_player_id_or_screen_name_and_filters(client, big, auditor):
    client.force_login(auditor)
    url = reverse("proposal_detail", args=[big.pk])
    assert _entries(client.get(url, {"q": "p042"})) == ["e042"]
    assert _entries(client.get(url, {"q": "player024"})) == ["e024"]
    eliminated = _entries(client.get(url, {"show": "eliminated"}))
    assert eliminated[0] == "e200" and len(eliminated) == 50
    assert _entries(client.get(url, {"show": "capped"})) == ["e199"]


@pytest.mark.django_db
def test_it_answers_htmx_with_only_the_lines_partial(client, big, auditor):
    client.force_login(auditor)
    response = client.get(
        reverse("proposal_detail", args=[big.pk]),
        {"sort": "chips"},
        HTTP_HX_REQUEST="true",
        HTTP_HX_TARGET="lines",
    )
    body = response.content.decode()
    assert body.lstrip().startswith('<div id="lines">')
    assert "<html" not in body
    assert _entries(response)[0] == "e199"  # the biggest stack first


@pytest.mark.django_db
def test_it_draws_a_chart_of_at_most_500_points(client, support, auditor):
    doc = sunday_special_doc("UP-CHART", entries=1200, active=1200, prizes=[400_00] * 100)
    proposal = draft_proposal(support, doc=doc)
    client.force_login(auditor)
    response = client.get(reverse("proposal_chart", args=[proposal.pk]))
    assert response["Content-Type"] == "image/svg+xml"
    dots = response.content.decode().count("<circle")
    assert 300 <= dots <= 501


@pytest.mark.django_db
def test_it_exports_every_line_as_csv_and_json(client, big, auditor):
    client.force_login(auditor)
    response = client.get(reverse("proposal_export_csv", args=[big.pk]))
    rows = list(
        csv.DictReader(io.StringIO(b"".join(response.streaming_content).decode("utf-8-sig")))
    )
    assert len(rows) == 250
    # e000 (1,000 chips): 30.00 buy-in + 0.18 chip equity + 3.00 fee.
    assert rows[0]["entry_id"] == "e000" and rows[0]["total"] == "33.18"
    response = client.get(reverse("proposal_export_json", args=[big.pk]))
    doc = json.loads(b"".join(response.streaming_content))
    assert doc["format"] == "payout-proposal/1" and len(doc["lines"]) == 250
    assert doc["policy"] == {
        "id": "ultimatepoker-2026",
        "version": big.policy_version_number,
        "sha256": big.policy_sha256,
    }
    assert len(doc["policy"]["sha256"]) == 64
    assert doc["lines"][1]["chip_equity"] == "0.36"  # twice e000's stack, twice its share
    assert sum(int(line["total"].replace(".", "")) for line in doc["lines"]) == big.total_cents


@pytest.mark.django_db
def test_it_hides_the_approve_button_from_the_preparer(client, world, support, manager):
    proposal = world["proposal"]  # prepared and submitted by support
    client.force_login(support)
    page = client.get(reverse("proposal_approval", args=[proposal.pk])).content.decode()
    assert 'id="approve-form"' not in page
    client.force_login(manager)
    page = client.get(reverse("proposal_approval", args=[proposal.pk])).content.decode()
    assert 'id="approve-form"' in page and proposal.fingerprint in page


@pytest.mark.django_db
def test_it_hides_the_approve_button_from_a_manager_who_submitted(client, support, manager):
    proposal = submit_proposal(
        draft_proposal(support, doc=sunday_special_doc("UP-OWN")), acting_user=manager
    )
    client.force_login(manager)
    page = client.get(reverse("proposal_approval", args=[proposal.pk])).content.decode()
    assert 'id="approve-form"' not in page
    assert "another manager must approve it" in page


@pytest.mark.django_db
def test_it_asks_for_the_password_before_approving(client, world, manager):
    client.force_login(manager)
    response = client.post(
        reverse("proposal_approval", args=[world["proposal"].pk]),
        {"fingerprint": world["proposal"].fingerprint, "password": "wrong"},
    )
    assert response.status_code == 400
    assert "That is not your password." in response.content.decode()
    world["proposal"].refresh_from_db()
    assert world["proposal"].status == "submitted"


@pytest.mark.django_db
def test_it_requires_a_reason_to_reject(client, world, manager):
    client.force_login(manager)
    response = client.post(reverse("proposal_reject", args=[world["proposal"].pk]), {"reason": ""})
    assert response.status_code == 400
    assert "This field is required." in response.content.decode()
    world["proposal"].refresh_from_db()
    assert world["proposal"].status == "submitted"


@pytest.mark.django_db
def test_it_shows_an_entrys_statement_with_the_amounts_in_their_own_column(
    client, support, auditor
):
    proposal = prepare_proposal(cancelled_incident(support), acting_user=support)
    line = proposal.lines.filter(status="active").first()
    client.force_login(auditor)
    page = client.get(
        reverse("proposal_statement", args=[proposal.pk, line.entry_id])
    ).content.decode()
    assert '<table class="statement">' in page
    assert '<td>Refund of tournament fee</td><td class="num">$' in page
    assert '<td>Total paid out</td><td class="num">$' in page
    # Printed for a player: the time of printing named in the zone it is written in.
    client.post(reverse("set_timezone"), {"tz": "America/Los_Angeles", "next": "/"})
    page = client.get(
        reverse("proposal_statement", args=[proposal.pk, line.entry_id])
    ).content.decode()
    printed = re.search(
        r"Refund statement, printed <time [^>]*>(\d{4}-\d\d-\d\d \d\d:\d\d) (\w+)[^<]*</time></p>",
        page,
    )
    assert printed and printed.group(2) in ("PST", "PDT")
    expected = timezone.localtime(timezone.now(), ZoneInfo("America/Los_Angeles"))
    shown = datetime.strptime(printed.group(1), "%Y-%m-%d %H:%M").replace(tzinfo=expected.tzinfo)
    assert abs((expected - shown).total_seconds()) < 120


@pytest.mark.django_db
def test_it_tells_the_incident_timeline_in_sentences(client, world, auditor):
    client.force_login(auditor)
    incident = world["proposal"].incident
    page = client.get(reverse("incident_detail", args=[incident.pk])).content.decode()
    timeline = page.split('id="timeline"')[1].split("</ol>")[0]
    assert f"sam_support submitted proposal {world['proposal'].pk}" in timeline
    assert "<code>proposal.submitted</code>" not in timeline


@pytest.mark.django_db
def test_an_out_of_date_proposal_says_why_and_offers_no_approval(client, support, manager):
    proposal = submitted_proposal(support)
    client.force_login(manager)
    page = client.get(reverse("proposal_approval", args=[proposal.pk])).content.decode()
    assert 'id="approve-form"' in page and 'id="out-of-date"' not in page
    # The platform sends a better snapshot while the proposal waits for approval.
    import_doc(support, active_chips=[41_000, 29_000, 20_000, 10_000])
    page = client.get(reverse("proposal_approval", args=[proposal.pk])).content.decode()
    assert 'id="out-of-date"' in page
    assert "snapshot was re-imported after this proposal was prepared" in page
    assert 'id="approve-form"' not in page  # no password and code spent on a refusal
    assert 'id="reject-form"' in page  # rejecting it stays possible
    client.force_login(support)
    page = client.get(reverse("proposal_detail", args=[proposal.pk])).content.decode()
    assert 'id="out-of-date"' in page and "Prepare it again" in page


@pytest.mark.django_db
def test_a_draft_overtaken_by_a_site_wide_finding_offers_no_submit(client, support, manager):
    proposal = draft_proposal(support)
    client.force_login(support)
    page = client.get(reverse("proposal_detail", args=[proposal.pk])).content.decode()
    assert "Submit for approval" in page and 'id="out-of-date"' not in page
    incidents.confirm_site_wide_issue(
        proposal.incident, justification="lag everywhere", acting_user=manager
    )
    page = client.get(reverse("proposal_detail", args=[proposal.pk])).content.decode()
    assert "a site-wide issue was confirmed after this proposal was prepared" in page
    assert "Submit for approval" not in page


@pytest.mark.django_db
def test_who_chose_the_rule_is_told_they_may_not_approve_yet_may_send_it_back(
    client, support, manager
):
    from tests.support.factories import open_incident

    incident = incidents.declare_not_resumable(
        open_incident(support, external_id="UP-CHOSE"), reason="rack gone", acting_user=manager
    )
    proposal = submit_proposal(prepare_proposal(incident, acting_user=support), acting_user=support)
    client.force_login(manager)
    page = client.get(reverse("proposal_approval", args=[proposal.pk])).content.decode()
    assert 'id="approve-form"' not in page and 'id="reject-form"' in page
    assert "another manager must approve it (four eyes)" in page
    assert "approve it or reject it" not in page


@pytest.mark.django_db
def test_a_screen_name_with_letters_beyond_ascii_is_found_as_it_is_spelt(client, support):
    from tests.support.factories import snapshot_doc

    proposal = draft_proposal(
        support,
        doc=snapshot_doc("UP-UNI", entry_fields={0: {"screen_name": "Fish Ünïcode 7"}}),
    )
    client.force_login(support)
    for q in ("Fish Ünïcode 7", "fish Ü", "FISH ÜNÏ"[:6]):
        page = client.get(reverse("proposal_detail", args=[proposal.pk]), {"q": q}).content
        assert "Fish Ünïcode 7" in page.decode(), q
    players = client.get(reverse("player_lookup"), {"q": "Fish Ün"}).content.decode()
    assert "Fish Ünïcode 7" in players


@pytest.mark.django_db
def test_a_player_id_is_found_in_any_case_as_everywhere_else(client, support):
    proposal = draft_proposal(support, external_id="UP-CASE")
    client.force_login(support)
    for url in (
        reverse("proposal_detail", args=[proposal.pk]),
        reverse("tournament_detail", args=[proposal.incident.tournament_id]),
    ):
        page = client.get(url, {"q": "P3"}).content.decode()
        assert ">p3<" in page and "No entry matches" not in page, url


@pytest.mark.django_db
def test_it_counts_one_capped_entry_in_the_singular_on_the_statement(client, big, auditor):
    """A newcomer read "Chip equity of the 1 entries capped" on a player's statement."""
    client.force_login(auditor)
    page = client.get(reverse("proposal_statement", args=[big.pk, "e199"])).content.decode()
    assert "Chip equity of the 1 entry capped at first prize" in page
    assert "1 entries" not in page
