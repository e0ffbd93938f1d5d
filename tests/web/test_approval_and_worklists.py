"""The approver decides with the whole picture; staff get their worklists; and the
defects found on the way. Data through the services (tests/support/factories.py) only.

The standard tournament (factories): 10 entries, 4 active (40,000 / 30,000 / 20,000 / 10,000
chips), prizes 500 / 300 / 200, buy-in 30 + fee 3, failing 1 h 20 min after the start:
not in the money. Remaining pool 1,000.00, guaranteed 4 x 30.00, equity 880.00 shared by chips:
totals 385.00 / 297.00 / 209.00 / 121.00, 1,012.00 in all.
"""

import csv
import io
import logging
import re
import time
from datetime import timedelta

import pytest
from django.core import mail
from django.core.exceptions import PermissionDenied
from django.urls import reverse
from django.utils import timezone

from refunds_admin.accounts.models import StaffProfile
from refunds_admin.audit.display import describe
from refunds_admin.audit.models import AuditEvent
from refunds_admin.errors import Refused
from refunds_admin.incidents import services as incidents
from refunds_admin.incidents.models import Incident
from refunds_admin.notifications import services as notifications
from refunds_admin.notifications import staff as staff_notifications
from refunds_admin.proposals import services as proposals
from refunds_admin.web import queries
from tests.support.factories import (
    approved_proposal,
    cancelled_incident,
    draft_proposal,
    import_doc,
    open_incident,
    posted_proposal,
    snapshot_doc,
    submitted_proposal,
)

pytestmark = pytest.mark.django_db


def _page(client, name, *args, **params):
    response = client.get(reverse(name, args=args), params)
    assert response.status_code == 200, response.status_code
    return response.content.decode()


def _section(page, element_id):
    """The HTML of the element with this id, up to the next section."""
    return page.split(f'id="{element_id}"', 1)[1].split("</section>", 1)[0]


# --------------------------------------------------------------------------------------------
# The approval page and the proposal page
# --------------------------------------------------------------------------------------------


def test_it_shows_the_approver_the_incident_the_rule_and_the_money(client, support, manager):
    proposal = submitted_proposal(support)
    client.force_login(manager)
    for page in (
        _page(client, "proposal_approval", proposal.pk),
        _page(client, "proposal_detail", proposal.pk),
    ):
        incident = _section(page, "decision-incident")
        assert "Server crash" in incident and "game server crashed" in incident
        assert "1 h 20 min after the start" in incident
        assert "sam_support" in incident.split("Recorded by")[1]
        assert "the 30-minute window passed without play resuming" in incident
        rule = _section(page, "decision-rule")
        assert "Rule 2: not yet in the money" in rule
        assert "failed 1 h 20 min after start with 4 entries left, more than the 3 paid" in rule
        assert "USD 500.00" in rule  # the first-place cap
        money = _section(page, "decision-money")
        pool = money.split('id="decision-pool"')[1].split("</table>")[0]
        assert re.findall(r"USD [\d,.]+", pool) == [
            "USD 1,012.00",  # pool in: remaining pool 1,000.00 + the active entries' fees
            "USD 120.00",  # buy-in refunds (no next prizes row: rule 2 before the money pays none)
            "USD 880.00",  # chip equity
            "USD 12.00",  # fees out
            "USD 1,012.00",  # paid out
        ]
        assert "Paid out = pool in, to the cent." in money
        spread = money.split('id="decision-distribution"')[1].split("</dl>")[0]
        assert re.findall(r"USD [\d,.]+", spread) == ["USD 121.00", "USD 209.00", "USD 385.00"]
        assert "4 of 10" in spread
        top = money.split('id="decision-top"')[1].split("</table>")[0]
        assert re.findall(r"<td>(e\d+)</td>", top) == ["e1", "e2", "e3", "e4"]
        assert "Version 1: there is no previous version." in _section(page, "decision-changes")


def test_it_lists_the_capped_entries_and_warnings_in_words(client, support, manager):
    # One entry holds 90% of the chips: its share passes first prize, so it is capped.
    proposal = submitted_proposal(support, active_chips=[90_000, 5_000, 3_000, 2_000])
    client.force_login(manager)
    rule = _section(_page(client, "proposal_approval", proposal.pk), "decision-rule")
    assert 'id="decision-capped-count">1<' in rule
    capped = rule.split('id="decision-capped"')[1].split("</table>")[0]
    assert "<td>e1</td>" in capped and "USD 470.00" in capped  # 500.00 cap - 30.00 guaranteed
    assert "None: every fact in the snapshot agrees" in rule


def test_it_shows_what_changed_since_the_previous_version_and_the_reimported_snapshot(
    client, support, manager
):
    first = submitted_proposal(support, external_id="T-CHANGE")
    proposals.reject_proposal(first, acting_user=manager, reason="wait for the final counts")
    started = first.incident.tournament.starts_at
    # The platform sends better chip counts while the incident is still the live one.
    import_doc(
        support,
        external_id="T-CHANGE",
        starts_at=started,
        active_chips=[50_000, 30_000, 15_000, 5_000],
    )
    second = proposals.prepare_proposal(first.incident, acting_user=support)
    assert second.version == 2
    client.force_login(manager)
    changes = _section(_page(client, "proposal_detail", second.pk), "decision-changes")
    assert "Since <a" in changes and "version 1</a>" in changes
    assert "0 entries added" in changes and "0 removed" in changes
    assert "3 with a different amount" in changes  # e1, e3 and e4; e2 keeps 30% of the chips
    rows = changes.split('id="decision-version-changes"')[1].split("</table>")[0]
    # e1: 385.00 -> 473.00 (50% of 880.00 + 33.00), the largest change first.
    assert re.search(
        r"<td>e1</td><td[^>]*>USD 385.00</td><td[^>]*>USD 473.00</td>"
        r"<td[^>]*>\+USD 88.00</td>",
        rows,
    )
    assert 'id="decision-snapshot-flag"' in changes
    assert "computed from snapshot v2; the incident was recorded with v1" in changes
    incident_page = _page(client, "incident_detail", first.incident.pk)
    section = incident_page.split('id="snapshot-changes"')[1].split("</dl>")[0]
    assert "v1 → v2" in section
    assert "100,000 → 100,000 in play" in section
    assert "3 entries with a different count" in section


def test_it_lets_the_submitter_withdraw_a_submission_and_audits_it(client, support, manager):
    proposal = submitted_proposal(support)
    with pytest.raises(PermissionDenied):
        proposals.withdraw_proposal(proposal, acting_user=manager)
    client.force_login(support)
    page = _page(client, "proposal_approval", proposal.pk)
    assert (
        'id="withdraw-form"' in page
        and "data-confirm=" in page.split('id="withdraw-form"')[1].split(">")[0]
    )
    response = client.post(reverse("proposal_withdraw", args=[proposal.pk]))
    assert response.status_code == 302
    proposal.refresh_from_db()
    assert proposal.status == "draft" and proposal.submitted_by is None
    event = AuditEvent.objects.get(action="proposal.withdrawn")
    assert event.actor == support and event.before == {"status": "submitted"}
    assert describe(event).endswith(
        f"withdrew the submission of proposal {proposal.pk}: back to draft"
    )
    with pytest.raises(Refused):
        proposals.withdraw_proposal(proposal, acting_user=support)  # a draft is not submitted


def test_it_applies_four_eyes_to_rejection_as_well(client, manager, other_manager):
    proposal = submitted_proposal(manager)
    with pytest.raises(PermissionDenied):
        proposals.reject_proposal(proposal, acting_user=manager, reason="mine, but wrong")
    client.force_login(manager)
    page = _page(client, "proposal_approval", proposal.pk)
    assert 'id="reject-form"' not in page and 'id="approve-form"' not in page
    response = client.post(reverse("proposal_reject", args=[proposal.pk]), {"reason": "forged"})
    assert response.status_code == 403
    proposal.refresh_from_db()
    assert proposal.status == "submitted"
    proposals.reject_proposal(proposal, acting_user=other_manager, reason="counts are off")
    proposal.refresh_from_db()
    assert proposal.status == "rejected"


def test_it_asks_for_confirmation_before_every_irreversible_step(client, support, manager):
    proposal = submitted_proposal(support)
    client.force_login(manager)
    page = _page(client, "proposal_approval", proposal.pk)
    for form_id in ("approve-form", "reject-form"):
        tag = page.split(f'id="{form_id}"')[1].split(">")[0]
        assert "data-confirm=" in tag, form_id
    assert "cannot be undone" in page.split('id="approve-form"')[1].split(">")[0]
    draft = draft_proposal(support, external_id="T-DRAFT")
    client.force_login(support)
    page = _page(client, "proposal_detail", draft.pk)
    submit = page.split(f'action="{reverse("proposal_submit", args=[draft.pk])}"')[1].split(">")[0]
    assert "data-confirm=" in submit
    incident = open_incident(support, external_id="T-OPEN", failed_ago=timedelta(minutes=40))
    client.force_login(manager)
    page = _page(client, "incident_detail", incident.pk)
    for name in (
        "incident_cancel",
        "incident_not_resumable",
        "incident_site_wide",
        "incident_resumed",
    ):
        tag = page.split(f'action="{reverse(name, args=[incident.pk])}"')[1].split(">")[0]
        assert "data-confirm=" in tag, name
    # The script that asks is a static file, not inline code.
    assert "onclick" not in page and "data-confirm" in open("static/js/app.js").read()


# --------------------------------------------------------------------------------------------
# Worklists and dashboard
# --------------------------------------------------------------------------------------------


def test_it_lists_proposals_by_status_with_filters_and_mine(
    client, support, manager, other_manager
):
    submitted_proposal(support, external_id="T-SUB")
    draft_proposal(support, external_id="T-DRAFT")
    submitted_proposal(manager, external_id="T-MGR")
    approved_proposal(support, other_manager, external_id="T-OK")
    client.force_login(support)
    page = _page(client, "proposal_list")  # submitted by default
    worklist = page.split('id="worklist"')[1]
    assert "T-SUB" in worklist and "T-MGR" in worklist and "T-DRAFT" not in worklist
    counts = dict(re.findall(r'status=(\w+)"[^>]*>[^<]+<span class="count">(\d+)</span>', page))
    assert counts["submitted"] == "2" and counts["draft"] == "1" and counts["rejected"] == "0"
    assert counts["approved"] == "1" or counts.get("posted") == "1"
    mine = _page(client, "proposal_list", status="submitted", mine="on").split('id="worklist"')[1]
    assert "T-SUB" in mine and "T-MGR" not in mine
    drafts = _page(client, "proposal_list", status="draft").split('id="worklist"')[1]
    assert "T-DRAFT" in drafts and "T-SUB" not in drafts
    by_person = _page(client, "proposal_list", person="maria_manager").split('id="worklist"')[1]
    assert "T-MGR" in by_person and "T-SUB" not in by_person
    assert "No proposal is rejected" in _page(client, "proposal_list", status="rejected")
    # Both directions of a sort.
    newest = _page(client, "proposal_list", sort="-prepared").split('id="worklist"')[1]
    oldest = _page(client, "proposal_list", sort="prepared").split('id="worklist"')[1]
    assert newest.index("T-MGR") < newest.index("T-SUB") and oldest.index("T-SUB") < oldest.index(
        "T-MGR"
    )
    partial = client.get(
        reverse("proposal_list"),
        {"status": "draft"},
        HTTP_HX_REQUEST="true",
        HTTP_HX_TARGET="worklist",
    )
    assert partial.content.decode().lstrip().startswith('<div id="worklist"')
    assert "HX-Request" in partial["Vary"]


def test_it_lists_incidents_by_status_and_tournaments_with_their_status(
    client, support, manager, other_manager
):
    open_incident(support, external_id="T-OPEN")
    cancelled_incident(support, external_id="T-CANC")
    approved_proposal(support, other_manager, external_id="T-FROZEN")
    client.force_login(manager)
    open_list = _page(client, "incident_list").split('id="worklist"')[1]
    assert (
        "T-OPEN" in open_list and "T-CANC" not in open_list and "left</span> to resume" in open_list
    )
    cancelled = _page(client, "incident_list", status="cancelled").split('id="worklist"')[1]
    assert "T-CANC" in cancelled and "no proposal yet" in cancelled
    assert "T-FROZEN" in cancelled and "proposal v1" in cancelled
    assert (
        "T-OPEN"
        not in _page(client, "incident_list", status="open", mine="on").split('id="worklist"')[1]
    )
    page = _page(client, "tournament_list")
    assert "means a payout proposal was approved" in page
    rows = {
        m[0]: m[1]
        for m in re.findall(r">(T-\w+)</a>.*?<td class=\"status\">(.*?)</td>", page, re.S)
    }
    assert (
        "Frozen" in rows["T-FROZEN"]
        and "snapshot it was computed from is final" in rows["T-FROZEN"]
    )
    assert "Incident open" in rows["T-OPEN"] and "Cancelled" in rows["T-CANC"]


def test_it_shows_support_their_drafts_and_the_incidents_waiting_on_them(client, support, manager):
    draft = draft_proposal(support, external_id="T-MYDRAFT")
    waiting = cancelled_incident(support, external_id="T-PREPARE")
    open_incident(support, external_id="T-RUNNING")
    open_incident(manager, external_id="T-NOT-MINE")
    client.force_login(support)
    page = _page(client, "dashboard")
    mine = _section(page, "my-work")
    assert "T-MYDRAFT v1" in mine and reverse("proposal_detail", args=[draft.pk]) in mine
    assert "T-PREPARE</a>:\n          cancelled: prepare the proposal" in mine.replace("\r", "")
    assert reverse("incident_detail", args=[waiting.pk]) in mine
    assert "T-RUNNING" in mine and "T-NOT-MINE" not in mine
    # Recent activity is its own full-width section, after the grid.
    assert page.index('id="recent-activity"') > page.index('id="my-work"')


# --------------------------------------------------------------------------------------------
# Defects: audit and search
# --------------------------------------------------------------------------------------------


def test_it_finds_the_events_that_concern_a_player(client, support, other_manager, auditor):
    approved_proposal(support, other_manager, external_id="T-PLAYER")
    client.force_login(auditor)
    events = _page(client, "audit", player="p2").split('id="events"')[1]
    assert "proposal.approved" in events and "proposal.prepared" in events
    assert "incident.recorded" not in events
    # Eliminated entries are not credited: the approval names the credited players only.
    approved = AuditEvent.objects.get(action="proposal.approved")
    assert approved.player_ids == ["p1", "p2", "p3", "p4"]
    # The preparation names nobody itself; its lines do, the eliminated entries' too.
    prepared = AuditEvent.objects.get(action="proposal.prepared")
    assert prepared.player_ids == []
    # Every step of the proposal concerns them (their line says why it is zero).
    events = _page(client, "audit", player="p6").split('id="events"')[1]
    assert "proposal.prepared" in events and "proposal.submitted" in events
    assert "proposal.approved" in events
    assert "No event matches." in _page(client, "audit", player="p99")


def test_it_finds_the_posting_and_the_statements_of_a_credited_player(
    client, support, other_manager, auditor, settings
):
    """The credits posted to a player's account and the statements e-mailed to them are
    events about that player, although (for 100k players) they do not list them."""
    settings.STATEMENT_CHANNEL = "email"
    paid = posted_proposal(
        support, other_manager, external_id="T-PAID", emails={"e2": "p2@example.test"}
    )
    staff_notifications.dispatch_events()  # schedules the posted proposal's statements
    notifications.deliver_statements(paid.pk)
    assert [m.to for m in mail.outbox] == [["p2@example.test"]]
    # Another tournament's posting, where p2 did not play (its second entry is q2's).
    posted_proposal(
        support, other_manager, external_id="T-OTHER", entry_fields={1: {"player_id": "q2"}}
    )
    client.force_login(auditor)

    found = _page(client, "audit", player="p2").split('id="events"')[1]
    for action in (
        "ledger.posting_started",
        "ledger.posted",
        "notifications.statements_scheduled",
        "notifications.statements_sent",
    ):
        assert f"<code>{action}</code>" in found, action
    assert found.count("<code>ledger.posted</code>") == 1  # T-PAID's, not T-OTHER's
    assert ">T-OTHER</a>" not in found
    # An eliminated player is credited nothing: no posting, no statement.
    out = _page(client, "audit", player="p6").split('id="events"')[1]
    assert "<code>proposal.prepared</code>" in out
    assert "<code>ledger." not in out and "<code>notifications." not in out


def test_it_finds_a_players_events_whatever_the_case_typed(client, support, other_manager, auditor):
    """Like the tournament filter: the player id as an auditor types it, P2 for p2."""
    posted_proposal(support, other_manager, external_id="T-CASE")
    client.force_login(auditor)

    def actions(player):
        page = _page(client, "audit", player=player).split('id="events"')[1]
        return sorted(re.findall(r"<code>([a-z_]+\.[a-z_]+)</code>", page))

    expected = [
        "ledger.posted",
        "ledger.posting_started",
        "proposal.approved",
        "proposal.prepared",
        "proposal.submitted",
    ]
    assert actions("p2") == expected
    assert actions("P2") == expected and actions(" p2 ") == expected
    # Eliminated: on every step of the proposal (their line says why it is zero), but neither
    # credited nor told.
    assert actions("P6") == ["proposal.approved", "proposal.prepared", "proposal.submitted"]
    assert actions("P") == []  # the whole id, not a part of it


def test_it_searches_the_breakdown_by_any_case_prefix_of_the_screen_name(client, support, auditor):
    proposal = submitted_proposal(support)
    client.force_login(auditor)

    def entries(**params):
        page = _page(client, "proposal_detail", proposal.pk, **params)
        return re.findall(r"<td>(e\d+)</td>", page.split('<div id="lines">')[1])

    assert entries(q="PLAYER3") == ["e3"]
    assert entries(q="Play") == ["e1", "e2", "e3", "e4"]
    assert entries(q="p2") == ["e2"]  # a player id, exactly
    assert entries(q="layer") == []  # a prefix, not anywhere in the name


def test_a_prefix_that_matches_many_entries_pages_like_any_search(
    client, support, auditor, monkeypatch
):
    # Beyond SEARCH_LIST matches, the lines are walked in order instead of picked by position.
    proposal = submitted_proposal(support)
    client.force_login(auditor)
    monkeypatch.setattr(queries, "SEARCH_LIST", 2)

    def entries(**params):
        page = _page(client, "proposal_detail", proposal.pk, **params)
        return re.findall(r"<td>(e\d+)</td>", page.split('<div id="lines">')[1])

    assert entries(q="Play") == ["e1", "e2", "e3", "e4"]
    assert entries(q="player2") == ["e2"]
    assert entries(q="p2") == ["e2"]


def test_it_sorts_the_breakdown_both_ways(client, support, auditor):
    proposal = submitted_proposal(support)
    client.force_login(auditor)

    def entries(sort):
        page = _page(client, "proposal_detail", proposal.pk, sort=sort)
        return re.findall(r"<td>(e\d+)</td>", page.split('<div id="lines">')[1])

    assert entries("total")[:4] == ["e1", "e2", "e3", "e4"]
    assert entries("-total")[-4:] == ["e4", "e3", "e2", "e1"]
    assert entries("-position")[0] == "e10" and entries("position")[0] == "e1"
    assert entries("-chips")[-1] == "e1" and entries("chips")[0] == "e1"
    page = _page(client, "proposal_detail", proposal.pk, sort="total")
    # The sorted column's header flips the direction on the next click.
    assert 'aria-sort="descending"' in page and "sort=-total" in page


# --------------------------------------------------------------------------------------------
# Defects: the incident form
# --------------------------------------------------------------------------------------------


def _previewed_before_the_start(client, support, doc_of):
    """Support imports the tournament `doc_of(starts_at)` describes (started 30 minutes ago) and
    previews a failure 5 minutes before its start: the tournament, that time as typed, and the
    preview."""
    started = timezone.now().replace(second=0, microsecond=0) - timedelta(minutes=30)
    tournament = import_doc(support, doc=doc_of(started)).tournament
    client.force_login(support)
    before = timezone.localtime(started - timedelta(minutes=5)).strftime("%Y-%m-%dT%H:%M")
    preview = client.get(
        reverse("incident_preview"),
        {"tournament": tournament.pk, "failed_at": before},
        HTTP_HX_REQUEST="true",
    ).content.decode()
    return tournament, before, preview


def test_it_records_a_failure_before_the_start_as_rule_1_with_a_confirmation(client, support):
    tournament, before, preview = _previewed_before_the_start(
        client, support, lambda started: snapshot_doc("T-EARLY", starts_at=started)
    )
    assert "Rule 1: full refund" in preview and "5 min before the start" in preview
    assert 'name="before_start_confirmed"' in preview and "all 10 entries" in preview
    data = {
        "tournament": tournament.pk,
        "failed_at": before,
        "cause": "server_crash",
        "description": "",
    }
    refused = client.post(reverse("incident_new"), data)
    assert refused.status_code == 400
    assert "that is rule 1, a full refund" in refused.content.decode()
    assert not Incident.objects.exists()
    response = client.post(reverse("incident_new"), {**data, "before_start_confirmed": "on"})
    assert response.status_code == 302
    assert Incident.objects.get().rule == "full_refund"


def test_it_prefills_whole_minutes_and_previews_the_rule_at_once(client, support):
    tournament = import_doc(support, external_id="T-PREFILL").tournament
    client.force_login(support)
    page = _page(client, "incident_new", tournament=tournament.pk)
    value = re.search(r'name="failed_at" value="([^"]+)"', page).group(1)
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d", value), value  # no seconds
    preview = page.split('id="rule-preview"')[1].split("</div>")[0]
    assert "Rule 2: not yet in the money" in preview and "after start" in preview
    # Seconds that were typed are kept and shown.
    typed = timezone.localtime(tournament.starts_at + timedelta(minutes=20, seconds=1))
    response = client.post(
        reverse("incident_new"),
        {
            "tournament": tournament.pk,
            "failed_at": typed.strftime("%Y-%m-%dT%H:%M:%S"),
            "cause": "aliens",
        },
    )
    assert f'value="{typed:%Y-%m-%dT%H:%M:%S}"' in response.content.decode()


def test_it_keeps_the_csrf_token_out_of_the_preview_url(client, support):
    client.force_login(support)
    page = _page(client, "incident_new")
    # The block that asks for the preview (not the form: see incident_form.html).
    asker = page.split('id="incident-fields"')[1].split(">")[0]
    assert 'hx-params="tournament,failed_at,before_start_confirmed"' in asker


# --------------------------------------------------------------------------------------------
# Defects: time and ordering
# --------------------------------------------------------------------------------------------


def test_it_writes_sentences_in_the_readers_time_zone(support):
    incident = open_incident(support, external_id="T-TZ")
    event = AuditEvent.objects.get(action="incident.recorded")
    with timezone.override("Europe/Berlin"):
        sentence = describe(event)
        local = timezone.localtime(incident.failed_at).strftime("%Y-%m-%d %H:%M:%S CET")
    assert f"failed at {local}" in sentence and "+00:00" not in sentence


def test_it_keeps_the_time_zone_across_sign_out(client, support):
    client.force_login(support)
    client.post(reverse("set_timezone"), {"tz": "Asia/Manila", "next": "/"})
    assert StaffProfile.objects.get(user=support).time_zone == "Asia/Manila"
    client.post(reverse("logout"))
    client.force_login(support)
    page = _page(client, "dashboard")
    assert '<option value="Asia/Manila" selected>' in page


def test_it_tells_the_incident_timeline_in_order_with_each_restart_once(client, support):
    incident = open_incident(support, external_id="T-LINE", failed_ago=timedelta(minutes=10))
    incidents.log_restart_attempt(
        incident,
        attempted_at=incident.failed_at + timedelta(minutes=2),
        succeeded=False,
        note="table server 3 down",
        acting_user=support,
    )
    client.force_login(support)
    timeline = (
        _page(client, "incident_detail", incident.pk).split('id="timeline"')[1].split("</ol>")[0]
    )
    items = re.findall(r"<li>(.*?)</li>", timeline, re.S)
    assert sum("restart" in item for item in items) == 1
    times = [re.search(r'datetime="([^"]+)"', item).group(1) for item in items]
    assert times == sorted(times)
    assert (
        "play started" in items[0]
        and "play failed" in items[1]
        and "restart attempt failed" in items[2]
    )


# --------------------------------------------------------------------------------------------
# Defects: exports and display
# --------------------------------------------------------------------------------------------


def test_it_exports_the_currency_in_the_proposal_csv(client, support, auditor):
    proposal = submitted_proposal(support)
    client.force_login(auditor)
    response = client.get(reverse("proposal_export_csv", args=[proposal.pk]))
    rows = list(
        csv.DictReader(io.StringIO(b"".join(response.streaming_content).decode("utf-8-sig")))
    )
    assert rows[0]["currency"] == "USD" and rows[0]["total"] == "385.00"


def test_it_shows_audit_changes_as_money_and_labels(client, support, other_manager, auditor):
    approved_proposal(support, other_manager, external_id="T-LABELS")
    client.force_login(auditor)
    events = _page(client, "audit", action="proposal.approved").split('id="events"')[1]
    assert "<dt>Total</dt>" in events and "<dd>USD 1,012.00</dd>" in events
    assert "101200" not in events
    prepared = _page(client, "audit", action="proposal.prepared").split('id="events"')[1]
    assert (
        "<dd>Rule 2: not yet in the money</dd>" in prepared and "not_in_the_money" not in prepared
    )
    # The changes' values wrap between words, never letter by letter in a narrow column.
    css = open("static/css/app.css").read()
    changes_rule = css.split("dl.changes dd {")[1].split("}")[0]
    assert "overflow-wrap: break-word" in changes_rule and "anywhere" not in changes_rule


def test_it_shows_the_whole_sha256_of_each_snapshot(client, support, auditor):
    snapshot = import_doc(support, external_id="T-SHA")
    client.force_login(auditor)
    page = _page(client, "tournament_detail", snapshot.tournament_id)
    assert f">{snapshot.sha256}</td>" in page.split('id="snapshot-versions"')[1]


def test_it_leaves_room_for_the_charts_labels(client, support, auditor):
    proposal = submitted_proposal(support)
    client.force_login(auditor)
    svg = client.get(reverse("proposal_chart", args=[proposal.pk])).content.decode()
    label = re.search(r'<text x="(\d+)"[^>]*class="ymax">([^<]+)<', svg)
    assert label.group(2) == "USD 385.00" and int(label.group(1)) >= 90
    assert "<style" not in svg


def test_it_opens_a_statement_right_under_its_row(client, support, auditor):
    proposal = submitted_proposal(support)
    client.force_login(auditor)
    page = _page(client, "proposal_detail", proposal.pk)
    assert 'hx-target="closest tr" hx-swap="afterend"' in page
    response = client.get(
        reverse("proposal_statement", args=[proposal.pk, "e1"]), HTTP_HX_REQUEST="true"
    )
    assert response.content.decode().lstrip().startswith('<tr class="statement-row">')
    assert "HX-Request" in response["Vary"]


# --------------------------------------------------------------------------------------------
# Defects: logs, security and small things
# --------------------------------------------------------------------------------------------


def test_it_logs_a_403_as_one_line_without_a_traceback(client, support, caplog):
    proposal = submitted_proposal(support)
    client.force_login(support)
    from refunds_admin.logfilters import NoTracebackBelow500

    logger = logging.getLogger("django.request")
    assert any(isinstance(f, NoTracebackBelow500) for f in logger.filters)  # settings.LOGGING
    with caplog.at_level(logging.WARNING, logger="django.request"):
        response = client.post(reverse("proposal_reject", args=[proposal.pk]), {"reason": "x"})
    assert response.status_code == 403
    records = [r for r in caplog.records if r.name == "django.request"]
    assert records and all(r.exc_info is None for r in records)
    assert "Forbidden" in records[0].getMessage()


def test_it_has_a_favicon_a_skip_link_and_a_readable_role_tag(client, support):
    client.force_login(support)
    page = _page(client, "dashboard")
    assert re.search(r'<link rel="icon" href="/static/favicon.svg"', page)
    assert open("static/favicon.svg").read().startswith("<svg")
    assert page.index('class="skip-link" href="#main"') < page.index("<header")
    assert '<main id="main"' in page
    assert '<span class="role-tag">support</span>' in page


def test_it_never_sends_a_superuser_without_a_role_round_in_a_403_loop(client, django_user_model):
    admin = django_user_model.objects.create_superuser("root", password="pw-root")
    client.force_login(admin)
    index = client.get(reverse("admin:index")).content.decode()
    assert "View site" not in index
    forbidden = client.get(reverse("dashboard"))
    assert forbidden.status_code == 403
    body = forbidden.content.decode()
    assert reverse("admin:index") in body and "Back to the dashboard" not in body


def test_it_keeps_player_ids_small_enough_to_search_on_postgresql_too():
    # The migration adds a GIN index on PostgreSQL; on SQLite the JSON text is searched.
    from django.db import connection

    if connection.vendor != "postgresql":
        pytest.skip("PostgreSQL only")
    with connection.cursor() as cursor:
        cursor.execute("SELECT indexdef FROM pg_indexes WHERE indexname = 'audit_event_player_ids'")
        assert "gin" in cursor.fetchone()[0].lower()


def test_a_knockouts_failure_before_the_start_is_confirmed_in_its_own_words(client, support):
    from tests.support.factories import knockout_doc

    tournament, before, preview = _previewed_before_the_start(
        client, support, lambda started: knockout_doc("T-EARLY-KO", starts_at=started)
    )
    confirm = preview.split('class="field confirm-before-start"')[1].split("</label>")[0]
    # knockout_doc has rebuys: they and their fees are refunded too.
    assert "a full refund of buy-in, rebuys, knockout part and fees to all" in confirm
    refused = client.post(
        reverse("incident_new"),
        {"tournament": tournament.pk, "failed_at": before, "cause": "server_crash"},
    ).content.decode()
    assert "that is rule 1, a full refund of buy-in, rebuys, knockout part and fees to every" in (
        refused
    )


def test_it_names_who_rejected_a_proposal(client, support, manager, auditor):
    # An auditor reading a rejected proposal saw when and why, but not who sent it back,
    # while an approval names its manager.
    proposal = submitted_proposal(support)
    proposals.reject_proposal(proposal, acting_user=manager, reason="counts are off")
    client.force_login(auditor)
    page = _page(client, "proposal_detail", proposal.pk)
    rejected = page.split("<dt>Rejected</dt>", 1)[1].split("</dd>", 1)[0]
    assert f"by {manager.get_username()}" in rejected and "counts are off" in rejected
    worklist = _page(client, "proposal_list", status="rejected").split('id="worklist"')[1]
    assert f"by {manager.get_username()}" in worklist


def test_the_dashboard_promises_approval_only_to_those_who_may_approve(
    client, support, manager, auditor
):
    # Support and auditors read "Waiting for my approval" over a count they can never approve.
    submitted_proposal(support)
    for user, heading in (
        (auditor, "Waiting for a manager's approval"),
        (support, "Waiting for a manager's approval"),
        (manager, "Waiting for my approval"),
    ):
        client.force_login(user)
        card = _section(_page(client, "dashboard"), "waiting-approval")
        assert f"<h2>{heading}</h2>" in card, user


@pytest.mark.django_db
def test_the_dashboard_says_a_posting_whose_worker_died_is_stalled_as_its_page_does(
    client, support, manager, settings
):
    """The worker posting a proposal was SIGKILLed: the posting page says "Stalled, resuming"
    (jobs.kinds.JobStatus); the dashboard's "Posting jobs" said "running" from the raw state."""
    from tests.support.factories import partly_posted_proposal

    settings.POSTING_CHUNK_SIZE = 2
    proposal = partly_posted_proposal(support, manager, chunks=1)
    settings.POSTING_STALE_AFTER = 1
    time.sleep(1.5)  # no heartbeat since: its worker is gone
    client.force_login(support)
    page = client.get(f"/proposals/{proposal.pk}/posting/").content.decode()
    assert "Stalled, resuming" in page
    html = client.get("/").content.decode()
    jobs = html[html.index('id="posting-jobs"') :]
    jobs = jobs[: jobs.index("</section>")]
    assert "Stalled, resuming" in jobs
    assert ">running<" not in jobs


@pytest.mark.django_db
def test_a_running_posting_tells_an_earlier_attempts_error_as_earlier(client, support, manager):
    """A posting running again after a failed attempt still holds that attempt's error: the
    pages say it is an earlier attempt's, not an error of the run under way."""
    from refunds_admin.ledger.models import PostingJob
    from tests.support.factories import partly_posted_proposal

    proposal = partly_posted_proposal(support, manager, chunks=1)
    PostingJob.objects.filter(proposal=proposal).update(
        state="running", last_error="the cashier answered 503", heartbeat_at=timezone.now()
    )
    client.force_login(support)
    page = client.get(f"/proposals/{proposal.pk}/posting/").content.decode()
    assert 'id="posting-earlier-error">Earlier attempt: the cashier answered 503' in page
    assert '<p class="error">the cashier answered 503' not in page
