"""What a newcomer trial found on the pages, each with the behaviour a
person relies on (the browser journeys check the same things in Chromium)."""

import re
import subprocess
from pathlib import Path

import pytest
from django.core.management import call_command
from django.test import override_settings
from django.urls import reverse

ROOT = Path(__file__).resolve().parents[2]


# --- Set-up papercuts ---------------------------------------------------------------------


@pytest.mark.django_db
@override_settings(DEBUG=True)  # load_demo is for development only
def test_the_demo_says_how_to_print_a_code_from_the_virtualenv(capsys):
    call_command("load_demo")
    out = capsys.readouterr().out
    assert "manager: key " in out
    assert "DEBUG=1 .venv/bin/python manage.py totp_code manager" in out
    assert re.search(r"(?<!/)\bpython manage\.py totp_code", out) is None
    readme = (ROOT / "README.md").read_text()
    assert "DEBUG=1 .venv/bin/python manage.py totp_code manager" in readme
    assert re.search(r"`python manage\.py totp_code", readme) is None


def _make_run_dry(*args):
    return subprocess.run(
        ["make", "-n", "--no-print-directory", "run", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
        env={"PATH": "/usr/bin:/bin", "HOME": "/tmp"},
    ).stdout


def test_make_run_links_e_mails_to_its_own_port_and_writes_them_to_files():
    out = _make_run_dry("PORT=8123")
    assert "runserver 127.0.0.1:8123" in out
    assert "Links in them point to http://127.0.0.1:8123" in out
    assert "written as files to " + str(ROOT / "mail") in out


@pytest.mark.django_db
def test_recent_activity_leaves_out_the_authenticators_confirmed(client, world, manager):
    # The managers' authenticators were confirmed before the work began (tests/conftest.py).
    client.force_login(manager)
    page = client.get(reverse("dashboard")).content.decode()
    recent = page[page.index('id="recent-activity"') :]
    assert "confirmed an authenticator app" not in recent
    assert "submitted" in recent  # the refunds work is there
    # ... with the year: "2026-11-29 21:45 UTC", not "11-29 21:45".
    assert re.search(r">2026-11-29 \d\d:\d\d UTC<", recent)
    # The full history on the audit page still has it.
    audit = client.get(reverse("audit")).content.decode()
    assert "confirmed an authenticator app" in audit


# --- Major 3: the prize table as imported ---------------------------------------------------


def _major_with_ranges(external_id="UP-RANGES-1"):
    from tests.support.factories import sunday_major_doc

    doc = sunday_major_doc(external_id, entries=400, active=60)
    doc["tournament"]["prizes"] = [
        *doc["tournament"]["prizes"],
        {"places": [10, 12], "amount": "200.00"},
        {"places": [13, 40], "amount": "150.00"},
        {"place": 41, "amount": "120.00", "non_cash": True, "description": "Main event ticket"},
    ]
    return doc


@pytest.mark.django_db
def test_the_tournament_page_shows_prize_ranges_as_imported(client, support):
    from tests.support.factories import import_doc

    snapshot = import_doc(support, _major_with_ranges())
    client.force_login(support)
    page = client.get(reverse("tournament_detail", args=[snapshot.tournament_id])).content.decode()
    table = page[
        page.index('id="prize-ranges"') : page.index("</tbody>", page.index("prize-ranges"))
    ]
    assert table.count("<tr>") == 12  # 9 single places, 10–12, 13–40, 41
    assert "<td>10–12</td>" in table and "<td>13–40</td>" in table
    assert "<td>41</td>" in table and "Main event ticket" in table
    assert "USD 150.00" in table


def _prize_rows(page):
    table = page[
        page.index('id="prize-ranges"') : page.index("</tbody>", page.index("prize-ranges"))
    ]
    return re.findall(r"<tr><td>([0-9–]+)</td><td class=\"num\">([^<]+)</td>", table)


@pytest.mark.django_db
def test_a_prize_table_paying_every_place_its_own_amount_is_shown_a_page_at_a_time(client, support):
    from refunds_admin.payouts.money import format_cents
    from refunds_admin.web.queries import PRIZE_RANGES_SHOWN
    from tests.support.factories import import_doc, sunday_major_doc

    doc = sunday_major_doc("UP-EVERY-PLACE", entries=400, active=60)
    # 150 places, each paying a cent less than the one before: 150 ranges of one place.
    doc["tournament"]["prizes"] = [
        {"place": p, "amount": format_cents(2000_00 - p)} for p in range(1, 151)
    ]
    snapshot = import_doc(support, doc)
    client.force_login(support)
    url = reverse("tournament_detail", args=[snapshot.tournament_id])
    first = client.get(url).content.decode()
    rows = _prize_rows(first)
    assert len(rows) == PRIZE_RANGES_SHOWN == 100
    assert rows[0] == ("1", "USD 1,999.99") and rows[-1] == ("100", "USD 1,999.00")
    assert 'href="?version=1&prizes_from=101#prize-ranges">Places from 101</a>' in first
    assert "150 places in the table" in first
    rest = client.get(url, {"version": 1, "prizes_from": 101}).content.decode()
    rows = _prize_rows(rest)
    assert [r[0] for r in rows] == [str(p) for p in range(101, 151)]
    assert 'prizes_from=1#prize-ranges">Previous places</a>' in rest
    assert "Places from" not in rest


@pytest.mark.django_db
def test_prize_ranges_keep_places_of_one_amount_apart_when_their_descriptions_alternate(
    client, support
):
    """Places 10-12 pay the same amount, but 11 is a ticket: three ranges, not one."""
    from tests.support.factories import import_doc

    doc = _major_with_ranges("UP-RANGES-MIXED")
    doc["tournament"]["prizes"][9:] = [
        {"place": 10, "amount": "200.00"},
        {"place": 11, "amount": "200.00", "non_cash": True, "description": "Ticket"},
        {"place": 12, "amount": "200.00"},
        {"places": [13, 40], "amount": "150.00"},
    ]
    snapshot = import_doc(support, doc)
    client.force_login(support)
    page = client.get(reverse("tournament_detail", args=[snapshot.tournament_id])).content.decode()
    assert [r[0] for r in _prize_rows(page)][9:] == ["10", "11", "12", "13–40"]
    assert "Ticket <small>(counted at its cash value)</small>" in page


# --- Support / auditor: the stored snapshot document -----------------------------------------


@pytest.mark.django_db
def test_the_stored_snapshot_downloads_byte_for_byte_from_its_page(client, support, auditor):
    from tests.support.factories import dumps, import_doc

    doc = _major_with_ranges("UP-DOC-1")
    snapshot = import_doc(support, doc)
    client.force_login(auditor)
    page = client.get(reverse("tournament_detail", args=[snapshot.tournament_id])).content.decode()
    url = reverse("snapshot_document", args=[snapshot.tournament_id, 1])
    assert f'href="{url}" class="snapshot-download" download>Download JSON</a>' in page
    response = client.get(url)
    assert response.status_code == 200
    assert response["Content-Disposition"] == 'attachment; filename="UP-DOC-1-v1.json"'
    assert response.content == dumps(doc).encode()
    import hashlib

    assert hashlib.sha256(response.content).hexdigest() == response["X-Content-SHA256"]
    assert (
        client.get(reverse("snapshot_document", args=[snapshot.tournament_id, 2])).status_code
        == 404
    )


# --- Major 2: batch actions ask first, name the amount, reject on the batch page -------------


def _form(page, form_id):
    start = page.index(f'id="{form_id}"')
    return page[page.rindex("<form", 0, start) : page.index("</form>", start)]


@pytest.mark.django_db
def test_the_outage_page_asks_before_each_batch_decision(client, support, manager):
    from tests.support.factories import outage

    recorded = outage(support)
    client.force_login(manager)
    page = client.get(reverse("outage_detail", args=[recorded.pk])).content.decode()
    declare = _form(page, "not-resumable-form")
    assert 'data-confirm="Declare the 3 tournaments still open in outage' in declare
    assert "Declare 3 tournaments not resumable" in declare
    site_wide = _form(page, "site-wide-form")
    assert 'data-confirm="Confirm that site-wide issues impaired play throughout' in site_wide
    assert "3 tournaments" in site_wide
    client.force_login(support)
    page = client.get(reverse("outage_detail", args=[recorded.pk])).content.decode()
    assert 'data-confirm="Mark play resumed on the ticked tournaments?' in _form(
        page, "resumed-form"
    )
    assert 'data-confirm="Cancel the 3 tournaments still open' in _form(page, "cancel-rest")


@pytest.mark.django_db
def test_the_batch_review_names_the_amount_and_asks_before_approving(client, support, manager):
    from refunds_admin.payouts.money import display
    from refunds_admin.proposals.models import PayoutProposal
    from tests.support.factories import prepared_outage

    prepared = prepared_outage(support)
    total = sum(PayoutProposal.objects.values_list("total_cents", flat=True))
    amount = display(total, "USD", symbol=False)
    client.force_login(manager)
    page = client.get(reverse("outage_review", args=[prepared.pk])).content.decode()
    approve = _form(page, "approve-batch-form")
    assert f"Approve all 3 proposals · {amount}</button>" in approve
    assert f"3 proposals of outage {prepared.pk}, {amount} in all?" in approve
    reject = _form(page, "reject-batch-form")
    assert f"Reject 3 proposals · {amount}</button>" in reject
    assert "data-confirm=" in reject


@pytest.mark.django_db
def test_a_manager_rejects_the_batch_on_the_review_page(client, support, manager):
    import csv
    import io

    from refunds_admin.audit.models import AuditEvent
    from refunds_admin.proposals.models import PayoutProposal
    from tests.support.factories import prepared_outage

    prepared = prepared_outage(support)
    ids = list(PayoutProposal.objects.values_list("pk", flat=True))
    client.force_login(manager)
    url = reverse("outage_review_reject", args=[prepared.pk])
    refused = client.post(url, {"proposal": ids, "reason": ""}, follow=True)
    assert "Give the reason for rejecting" in refused.content.decode()
    assert set(PayoutProposal.objects.values_list("status", flat=True)) == {"submitted"}
    done = client.post(url, {"proposal": ids, "reason": "Wrong failure time"}, follow=True)
    assert "Rejected 3 proposals" in done.content.decode()
    assert set(PayoutProposal.objects.values_list("status", flat=True)) == {"rejected"}
    assert PayoutProposal.objects.filter(rejection_reason="Wrong failure time").count() == 3
    event = AuditEvent.objects.get(action="outage.batch_rejected")
    assert event.reason == "Wrong failure time"
    # The outage report says rejected for each, not a blank, until they are prepared again.
    report = client.get(reverse("outage_report_csv", args=[prepared.pk])).content.decode(
        "utf-8-sig"
    )
    rows = list(csv.DictReader(io.StringIO(report)))
    assert len(rows) == 3 and {r["proposal_status"] for r in rows} == {"rejected"}
    assert {r["total"] for r in rows} == {"0.00"}  # nothing committed to pay
    page = client.get(reverse("outage_report", args=[prepared.pk])).content.decode()
    assert page.count('<span class="badge rejected">Rejected</span>') == 3
    # Four eyes: a manager may not reject a batch they prepared; nothing is rejected.
    again = prepared_outage(manager, external_ids=("OUT-7", "OUT-8"))
    mine = list(PayoutProposal.objects.filter(status="submitted").values_list("pk", flat=True))
    page = client.post(
        reverse("outage_review_reject", args=[again.pk]),
        {"proposal": mine, "reason": "x"},
        follow=True,
    ).content.decode()
    assert "another manager must decide" in page and "Nothing was rejected" in page
    assert PayoutProposal.objects.filter(pk__in=mine, status="submitted").count() == 2


# --- Minor 12: the outage page says the prepare is done once it is -------------------------


@pytest.mark.django_db(transaction=True)
def test_the_outage_page_does_not_say_preparing_after_the_run_is_done(client, support, monkeypatch):
    from refunds_admin.celery import app
    from tests.support.factories import cancelled_outage

    monkeypatch.setitem(app.conf, "task_always_eager", True)  # as without REDIS_URL

    cancelled = cancelled_outage(support)
    client.force_login(support)
    # No worker (make run without REDIS_URL): the run finishes in-process as the request
    # commits, before the page is shown.
    page = client.post(reverse("outage_prepare", args=[cancelled.pk]), follow=True)
    body = page.content.decode()
    assert "Preparing every proposal" not in body
    assert "Every proposal is prepared" in body
    assert 'id="prepare-state">Done' in body


# --- Minor 5 and support's day: player lookup -----------------------------------------------


def _re_entry_doc(external_id="UP-REENTRY-1", entries=400):
    """The Sunday Major failed 10 minutes after its start (rule 1: every entry gets its buy-in
    and fee back, USD 109.00); player P0001 (entry E0001) busted twice before: E0100, E0101."""
    from datetime import timedelta

    from django.utils import timezone

    from tests.support.factories import sunday_major_doc

    doc = sunday_major_doc(
        external_id,
        entries=entries,
        active=60,
        starts_at=timezone.now().replace(microsecond=0) - timedelta(minutes=50),
    )
    for e in doc["entries"][100:102]:
        e["player_id"] = "P0001"
    return doc


@pytest.mark.django_db
def test_player_lookup_pages_through_every_player_found(client, support):
    from tests.support.factories import import_doc

    import_doc(support, _re_entry_doc(entries=120))  # screen names shark0000 ... shark0119
    client.force_login(support)
    page = client.get(reverse("player_lookup"), {"q": "shark"}).content.decode()
    # P0001 has three of the 120 entries: 118 players, 50 a page, none left out.
    assert "118 players found" in page and "Showing 1-50 of 118 players" in page
    assert 'rel="next"' in page
    page = client.get(reverse("player_lookup"), {"q": "shark001"}).content.decode()
    assert "10 players found" in page and 'rel="next"' not in page


@pytest.mark.django_db
def test_support_finds_a_player_by_the_amount_they_quote_and_one_total_over_re_entries(
    client, support
):
    from tests.support.factories import draft_proposal

    draft_proposal(support, doc=_re_entry_doc())
    client.force_login(support)
    # Every entry got USD 109.00: 398 players found by one entry's amount, 50 a page.
    page = client.get(reverse("player_lookup"), {"q": "109.00"}).content.decode()
    assert "398 players found refunded 109.00" in page
    assert "Showing 1-50 of 398 players" in page
    # P0001 quotes the sum of their three entries: the one player refunded that in total.
    page = client.get(reverse("player_lookup"), {"q": "$327.00"}).content.decode()
    assert "<h2>Player P0001</h2>" in page
    total = page[page.index('class="player-total"') :]
    assert "total for P0001 over 3 entries" in total and "USD 327.00" in total
    assert "No player was refunded exactly USD" not in page
    none = client.get(reverse("player_lookup"), {"q": "12.34"}).content.decode()
    assert "0 players found" in none and "No player was refunded exactly 12.34" in none


# --- Minor 6: the incident form offers only tournaments it accepts --------------------------


@pytest.mark.django_db
def test_the_incident_form_leaves_out_frozen_tournaments_and_those_with_an_incident(
    client, support, manager
):
    from tests.support.factories import approved_proposal, import_doc, open_incident

    free = import_doc(support, external_id="FREE-1").tournament
    busy = open_incident(support, external_id="BUSY-1").tournament
    frozen = approved_proposal(support, manager, external_id="FROZEN-1").incident.tournament
    client.force_login(support)
    page = client.get(reverse("incident_new")).content.decode()
    select = page[
        page.index('name="tournament"') : page.index("</select>", page.index('name="tournament"'))
    ]
    assert f'value="{free.pk}"' in select
    assert f'value="{busy.pk}"' not in select and f'value="{frozen.pk}"' not in select
    assert "are not listed" in page
    # The live preview names no rule for a frozen tournament.
    preview = client.get(
        reverse("incident_preview"), {"tournament": frozen.pk, "failed_at": "2026-11-29T21:14"}
    ).content.decode()
    assert "Rule " not in preview


# --- Auditor: the audit CSV's money; minor 4: replay beside its row ----------------------


@pytest.mark.django_db
def test_the_audit_csv_gives_money_as_amounts_with_their_currency(client, world, auditor):
    import csv
    import io
    import json

    client.force_login(auditor)
    response = client.get(reverse("audit_export"), {"tournament": "UP-TEST-1"})
    rows = list(
        csv.DictReader(io.StringIO(b"".join(response.streaming_content).decode("utf-8-sig")))
    )
    prepared = next(r for r in rows if r["action"] == "proposal.prepared")
    after = json.loads(prepared["after"])
    total = world["proposal"].total_cents
    assert after["total"] == f"USD {total // 100}.{total % 100:02d}"
    assert str(total) not in prepared["after"]
    imported = json.loads(next(r for r in rows if r["action"] == "snapshot.imported")["after"])
    assert not [k for k in imported if k.endswith("_cents")]


@pytest.mark.django_db
def test_a_replay_from_the_audit_history_opens_under_its_row_naming_the_proposal(
    client, world, auditor
):
    proposal = world["proposal"]
    client.force_login(auditor)
    page = client.get(reverse("audit")).content.decode()
    assert 'hx-target="closest tr" hx-swap="afterend"' in page
    result = client.post(
        reverse("proposal_replay", args=[proposal.pk]) + "?beside=row", HTTP_HX_REQUEST="true"
    ).content.decode()
    assert result.lstrip().startswith('<tr class="replay-row"><td colspan="6">')
    assert f"Proposal {proposal.pk} (UP-TEST-1 v{proposal.version}): fingerprint matches." in result


# --- Manager: per-tournament facts on the batch review; auditor: approver on the report ----


@pytest.mark.django_db
def test_the_batch_review_gives_each_tournaments_facts(client, support, manager):
    from tests.support.factories import prepared_outage

    prepared = prepared_outage(support)
    client.force_login(manager)
    page = client.get(reverse("outage_review", args=[prepared.pk])).content.decode()
    # Standard tournaments start 2 hours before now and failed 40 minutes ago: 1 h 20 min in.
    assert page.count("failed 1 h 20 min after the start · cancelled: not resumed within 30") == 3


@pytest.mark.django_db
def test_the_outage_report_names_the_approver(client, support, manager, auditor):
    import csv
    import io

    from tests.support.factories import approve_outage, prepared_outage

    prepared = prepared_outage(support)
    approve_outage(prepared, manager)
    client.force_login(auditor)
    page = client.get(reverse("outage_report", args=[prepared.pk])).content.decode()
    assert f'<dd id="approvers">{manager.username}</dd>' in page
    assert page.count(f"<small>by {manager.username}</small>") == 3
    rows = list(
        csv.DictReader(
            io.StringIO(
                client.get(reverse("outage_report_csv", args=[prepared.pk])).content.decode(
                    "utf-8-sig"
                )
            )
        )
    )
    assert {r["approved_by"] for r in rows} == {manager.username}


def test_one_duration_format_everywhere():
    from refunds_admin.incidents.services import elapsed_in_words
    from refunds_admin.web.templatetags.outages import duration

    assert duration(5 * 60 + 30) == elapsed_in_words(330) == "5 min 30 s"
    assert duration(3600 + 5 * 60) == "1 h 5 min"  # was "1 h 05 min"
    assert elapsed_in_words(8) == "8 s"


# --- Minor 10: the breakdown opens on the entries being paid, largest first ----------------


@pytest.mark.django_db
def test_the_breakdown_opens_on_the_entries_paid_largest_first(client, world, auditor):
    from refunds_admin.proposals.models import PayoutLine

    proposal = world["proposal"]
    client.force_login(auditor)
    url = reverse("proposal_detail", args=[proposal.pk])
    page = client.get(url).content.decode()
    lines = page[page.index('id="lines"') :]
    shown = re.findall(r"<td>(e\d{3})</td>", lines)
    paid = list(
        PayoutLine.objects.filter(proposal=proposal, total_cents__gt=0)
        .order_by("-total_cents", "-position")
        .values_list("entry_id", flat=True)
    )
    assert shown == paid and len(paid) < proposal.lines_count  # no USD 0.00 rows
    assert '<option value="paid" selected>Entries paid</option>' in page
    assert 'href="?show=" id="all-entries"' in page
    everything = client.get(url, {"show": ""}).content.decode()
    everything = everything[everything.index('id="lines"') :]
    assert re.findall(r"<td>(e\d{3})</td>", everything)[:3] == ["e000", "e001", "e002"]


# --- Minor 8 / manager: preparing again keeps the versions and shows the difference ----------


@pytest.mark.django_db
def test_preparing_again_keeps_the_version_and_shows_what_changed(client, support, manager):
    from refunds_admin.incidents import services as incidents
    from refunds_admin.proposals import services as proposals
    from tests.support.factories import draft_proposal

    first = draft_proposal(support, external_id="UP-AGAIN-1")
    incident = first.incident
    incidents.confirm_site_wide_issue(incident, justification="DDoS", acting_user=manager)
    again = proposals.prepare_proposal(incident, acting_user=support)
    assert again.version == 2
    client.force_login(manager)
    page = client.get(reverse("proposal_detail", args=[again.pk])).content.decode()
    changes = page[page.index('id="decision-changes"') :]
    url = reverse("proposal_detail", args=[first.pk])
    assert f'Since <a href="{url}">version 1</a>' in changes
    assert "no previous version" not in changes
    assert "rule Rule 2: not yet in the money → Rule 1: full refund" in changes
    assert "version 1 was replaced when this one was prepared" in changes
    old = client.get(url).content.decode()
    assert "Replaced by a newer version" in old


# --- Auditor: outage replay in the browser --------------------------------------------------


@pytest.mark.django_db
def test_an_auditor_replays_an_outage_from_its_report(client, support, auditor):
    from tests.support.factories import prepared_outage

    prepared = prepared_outage(support)
    client.force_login(auditor)
    report = client.get(reverse("outage_report", args=[prepared.pk])).content.decode()
    assert f'action="{reverse("outage_replay", args=[prepared.pk])}"' in report
    page = client.post(reverse("outage_replay", args=[prepared.pk])).content.decode()
    assert f"All 3 proposals of outage {prepared.pk} recompute exactly" in page
    assert page.count('<span class="badge approved">matches</span>') == 3
    assert client.get(reverse("outage_replay", args=[prepared.pk])).status_code == 405


# --- Manager: a note when a non-cash prize was counted at its cash value -------------------


@pytest.mark.django_db
def test_the_approver_is_told_a_non_cash_prize_counted_at_its_cash_value(client, support, manager):
    from tests.support.factories import submitted_proposal

    doc = _major_with_ranges("UP-NONCASH-1")  # place 41: a Main event ticket, USD 120.00
    proposal = submitted_proposal(support, doc=doc)
    assert proposal.rule != "full_refund"
    client.force_login(manager)
    for name in ("proposal_detail", "proposal_approval"):
        page = client.get(reverse(name, args=[proposal.pk])).content.decode()
        assert "Counted at their cash value: place 41 (Main event ticket) at USD 120.00" in page, (
            name
        )


# --- Minor 9: one vocabulary, plural rules and field labels ---------------------------------


@pytest.mark.django_db
def test_outage_refusals_name_fields_by_their_labels(client, support):
    from tests.support.factories import outage

    recorded = outage(support)
    client.force_login(support)
    page = client.post(
        reverse("outage_resumed", args=[recorded.pk]), {"resumed_at": "not a time"}, follow=True
    ).content.decode()
    assert (
        "resumed_at"
        not in page.split("<main", 1)[1].split("</form>", 1)[0].split('class="messages"')[-1][:2000]
    )
    assert "- " not in re.sub(
        r"<[^>]+>", "", page[page.index('class="messages"') :].split("</div>")[0]
    )
    assert "Play resumed at: " in page


# --- Minor 11: dates with the year, round axis ticks ------------------------------------------


def test_the_finance_chart_has_round_ticks_and_months_with_their_year():
    from datetime import date

    from refunds_admin.reports.chart import nice_ceiling, stacked_months_svg
    from refunds_admin.web.palette import colours

    assert nice_ceiling(14_952_262) == 20_000_000  # $149,522.62 -> axis to $200,000
    assert nice_ceiling(30_000) == 50_000 and nice_ceiling(100) == 100
    svg = stacked_months_svg(
        [date(2026, 12, 1)],
        ["server_crash"],
        {(date(2026, 12, 1), "server_crash"): 14_952_262},
        "USD",
        {"server_crash": "Server crash"},
        colours=colours("light"),
    )
    assert ">Dec 2026</text>" in svg and ">Dec 26<" not in svg
    tick = re.escape(colours("light")["chart_text"])  # the amounts' colour, not the months'
    ticks = re.findall(rf'fill="{tick}">([^<]+)</text>', svg)
    assert ticks == ["USD 0", "USD 50,000", "USD 100,000", "USD 150,000", "USD 200,000"]


# --- Support: a rule preview per tournament on the outage form --------------------------------


@pytest.mark.django_db
def test_the_outage_form_previews_the_rule_of_each_tournament(client, support):
    from datetime import timedelta

    from django.utils import timezone

    from tests.support.factories import import_doc, snapshot_doc

    import_doc(support, external_id="RULE-LATE")  # started 2 hours ago
    import_doc(
        support, snapshot_doc("RULE-EARLY", starts_at=timezone.now() - timedelta(minutes=25))
    )
    client.force_login(support)
    failed_at = timezone.localtime(timezone.now() - timedelta(minutes=10)).strftime(
        "%Y-%m-%dT%H:%M:%S"
    )
    page = client.get(reverse("outage_candidates"), {"failed_at": failed_at}).content.decode()
    rows = {
        m[0]: m[1]
        for m in re.findall(
            r'<label for="t-\d+">([^<]+)</label>.*?<td class="rule-preview">(.*?)</td>', page, re.S
        )
    }
    assert rows["RULE-EARLY"] == "Rule 1: full refund"  # 15 minutes into play
    assert rows["RULE-LATE"].startswith("Rule 2") or rows["RULE-LATE"].startswith("Rule 3")


# --- Support: re-send a statement, or send it to the address the player gives ------------------


@pytest.mark.django_db
def test_support_sends_a_player_their_statement_to_the_address_they_give(
    client, support, manager, settings
):
    from django.core import mail

    from refunds_admin.audit.models import AuditEvent
    from tests.support.factories import approved_proposal

    settings.EMAIL_BACKEND = "django.core.mail.backends.locmem.EmailBackend"
    proposal = approved_proposal(support, manager, doc=_re_entry_doc("UP-SEND-1"))
    client.force_login(support)
    page = client.get(reverse("player_lookup"), {"q": "P0001"}).content.decode()
    assert f'id="send-{proposal.pk}"' in page
    url = reverse("send_statement")
    # No e-mail in the snapshot and none given: support is told to ask the player.
    refused = client.post(url, {"proposal": proposal.pk, "player": "P0001"}, follow=True)
    assert "ask the player for one" in refused.content.decode() and not mail.outbox
    done = client.post(
        url, {"proposal": proposal.pk, "player": "P0001", "address": "p1@example.test"}, follow=True
    )
    assert "Statement of UP-SEND-1 sent to p1@example.test" in done.content.decode()
    (sent,) = mail.outbox
    assert sent.to == ["p1@example.test"]
    assert "(3 entries, $327.00)" in sent.subject and "E0100" in sent.body
    event = AuditEvent.objects.get(action="notifications.statement_copy_sent")
    assert event.after["address"] == "p1@example.test" and event.player_ids == ["P0001"]


# --- Minor 7: a CSV import stops at a file's structural error and names what was chosen -------


def _import_csv(client, entries, prizes, *, external_id, names=("entries.csv", "prizes.csv")):
    """The import page's CSV form, posted with these two files and a tournament an hour old."""
    from tests.support.pages import import_csv

    return import_csv(client, entries, prizes, external_id=external_id, names=names)


@pytest.mark.django_db
def test_a_csv_missing_a_column_is_refused_for_that_alone_and_the_choices_are_named(
    client, support
):
    from refunds_admin.tournaments.models import Tournament

    entries = "entry_id,player_id,chips\ne1,p1,40000\ne2,p2,30000\n"  # no status column
    prizes = "place,amount\n1,500.00\n2,300.00\n3-9,100.00\n"
    client.force_login(support)
    response = _import_csv(
        client, entries, prizes, external_id="CSV-9", names=("my-entries.csv", "my-prizes.csv")
    )
    page = response.content.decode()
    assert response.status_code == 400
    assert "column &#x27;status&#x27; is missing" in page or "column 'status' is missing" in page
    # Not a consequence: nothing about the prize table's size against 0 readable entries.
    assert "places wide" not in page and "lists more than" not in page
    assert "You chose <strong>my-entries.csv</strong>" in page
    assert "You chose <strong>my-prizes.csv</strong>" in page
    assert not Tournament.objects.exists()


@pytest.mark.django_db
def test_the_outage_history_names_the_cause_and_the_time_in_words(client, support):
    from tests.support.factories import outage

    recorded = outage(support)
    client.force_login(support)
    page = client.get(reverse("outage_detail", args=[recorded.pk])).content.decode()
    history = page[page.index('class="timeline"') :]
    assert "(server crash)" in history and "server_crash" not in history
    assert not re.search(r"failed at \d{4}-\d\d-\d\dT", history)  # no raw ISO time
    assert re.search(r"failed at \d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC", history)


@pytest.mark.django_db
def test_a_gap_in_the_prize_table_csv_is_said_next_to_that_file(client, support):
    from refunds_admin.tournaments.models import Tournament

    entries = "entry_id,player_id,status,chips\ne1,p1,active,40000\ne2,p2,active,30000\n"
    prizes = "place,amount\n1,40.00\n3,20.00\n"
    client.force_login(support)
    response = _import_csv(client, entries, prizes, external_id="CSV-GAP")
    page = response.content.decode()
    assert response.status_code == 400
    assert "place 2 is missing: places 1 to 3 must all be listed" in page
    assert ": place 2 is missing" not in page  # no empty place before the colon
    assert not Tournament.objects.exists()
