import csv
import io

import pytest
from django.urls import reverse


@pytest.mark.django_db
def test_it_searches_the_tournament_list(client, world, auditor):
    client.force_login(auditor)
    assert "UP-TEST-1" in client.get(reverse("tournament_list"), {"q": "sunday"}).content.decode()
    assert (
        "UP-TEST-1" not in client.get(reverse("tournament_list"), {"q": "monday"}).content.decode()
    )


@pytest.mark.django_db
def test_it_shows_prizes_versions_and_searchable_entries(client, world, auditor):
    client.force_login(auditor)
    url = reverse("tournament_detail", args=[world["tournament"].pk])
    page = client.get(url).content.decode()
    assert "USD 1,200.00" in page and "v1" in page and "e029" in page
    page = client.get(url, {"q": "player007"}, HTTP_HX_REQUEST="true", HTTP_HX_TARGET="entries")
    body = page.content.decode()
    assert "e007" in body and "e008" not in body and "<html" not in body


@pytest.mark.django_db
def test_it_shows_the_incident_timeline_and_actions_by_role(
    client, world, support, manager, auditor
):
    url = reverse("incident_detail", args=[world["incident"].pk])
    client.force_login(auditor)
    page = client.get(url).content.decode()
    assert "play failed" in page and f"submitted proposal {world['proposal'].pk}" in page
    assert "Prepare proposal" not in page and "Nothing for you to do" not in page  # link to v1
    client.force_login(support)
    assert "Declare not resumable" not in client.get(url).content.decode()


@pytest.mark.django_db
def test_it_filters_the_audit_history(client, world, support, auditor):
    from django.db import transaction

    from refunds_admin.audit.services import record

    # Besides the preparation and approval (which name every player of the proposal), an event
    # that names two players, written by the audit service.
    with transaction.atomic():
        record(
            "player.answered",
            world["proposal"],
            actor=support,
            tournament=world["tournament"],
            player_ids=["p001", "p002"],
            reason="explained the chip equity to p001",
        )
    client.force_login(auditor)
    url = reverse("audit")
    page = client.get(url, {"player": "p001"}).content.decode()
    assert "explained the chip equity" in page
    # Every step of the proposal p001 is on concerns them; the incident before it does not.
    assert "submitted proposal" in page and "recorded incident" not in page
    page = client.get(url, {"player": "p-not-in-any-tournament"}).content.decode()
    assert "No event matches." in page
    page = client.get(url, {"action": "incident."}).content.decode()
    assert "recorded incident" in page and "submitted proposal" not in page
    page = client.get(url, {"user": "nobody"}).content.decode()
    assert "No event matches." in page
    page = client.get(url, {"since": "2000-01-01", "until": "2000-01-02"}).content.decode()
    assert "No event matches." in page


@pytest.mark.django_db
def test_it_finds_a_tournaments_events_whatever_the_case_typed(client, world, auditor):
    """An auditor types the tournament id as it comes: up-test-1 is UP-TEST-1."""
    client.force_login(auditor)
    for typed in ("up-test-1", "Up-Test-1 ", "UP-TEST-1"):
        page = client.get(reverse("audit"), {"tournament": typed}).content.decode()
        assert "submitted proposal" in page and "No event matches." not in page, typed
        response = client.get(reverse("audit_export"), {"tournament": typed})
        rows = list(
            csv.DictReader(io.StringIO(b"".join(response.streaming_content).decode("utf-8-sig")))
        )
        assert len(rows) == 5 and {r["tournament"] for r in rows} == {"UP-TEST-1"}, typed
    page = client.get(reverse("audit"), {"tournament": "up-test"}).content.decode()
    assert "No event matches." in page  # the whole id, not a part of it


@pytest.mark.django_db
def test_it_shows_before_and_after_as_readable_key_value_rows(client, world, auditor):
    client.force_login(auditor)
    page = client.get(reverse("audit"), {"action": "proposal."}).content.decode()
    assert "<dt>Status</dt>" in page and "<dd>draft → submitted</dd>" in page
    page = client.get(reverse("audit"), {"action": "incident."}).content.decode()
    assert "<dt>Cause</dt>" in page and "<dd>server crash</dd>" in page
    assert "{&#x27;" not in page and "{'" not in page  # no Python dict text


@pytest.mark.django_db
def test_it_exports_the_filtered_audit_history_as_csv(client, world, auditor):
    client.force_login(auditor)
    response = client.get(reverse("audit_export"), {"tournament": "UP-TEST-1"})
    rows = list(
        csv.DictReader(io.StringIO(b"".join(response.streaming_content).decode("utf-8-sig")))
    )
    assert [r["action"] for r in rows] == [
        "snapshot.imported",
        "incident.recorded",
        "incident.cancelled",
        "proposal.prepared",
        "proposal.submitted",
    ]
    assert rows[-1]["before"] == '{"status": "draft"}'
    assert rows[2]["actor"] == "system" and rows[2]["created_at_utc"] == "2026-11-29T21:45:00+00:00"


@pytest.mark.django_db
def test_it_shows_open_incidents_with_a_countdown_and_overdue_ones_stand_out(
    client, support, time_machine
):
    from datetime import UTC, timedelta

    from django.utils import timezone

    from tests.support.factories import open_incident

    now = timezone.now().replace(microsecond=0)
    time_machine.move_to(now, tick=False)
    open_incident(support, failed_ago=timedelta(minutes=45), external_id="UP-LATE")
    open_incident(support, failed_ago=timedelta(minutes=10), external_id="UP-FRESH")
    client.force_login(support)
    page = client.get(reverse("dashboard")).content.decode()
    deadline = (now + timedelta(minutes=20)).astimezone(UTC)
    assert f'data-deadline="{deadline:%Y-%m-%dT%H:%M:%SZ}"' in page
    rows = page.split("<tr")
    late_row = next(r for r in rows if "UP-LATE" in r)
    fresh_row = next(r for r in rows if "UP-FRESH" in r)
    # The overdue row is marked and its countdown says so; the text itself stays readable.
    assert late_row.startswith(' class="is-overdue"') and 'class="countdown overdue"' in late_row
    assert "is-overdue" not in fresh_row and "countdown overdue" not in fresh_row


def test_it_tells_recent_activity_in_sentences_on_the_dashboard(client, world, manager):
    client.force_login(manager)
    page = client.get(reverse("dashboard")).content.decode()
    section = page.split('id="recent-activity"')[1]
    assert f"sam_support submitted proposal {world['proposal'].pk}" in section
    assert "<code>proposal.submitted</code>" not in section


@pytest.mark.django_db
def test_uploading_the_current_snapshot_again_says_nothing_was_imported(client, support):
    from django.core.files.uploadedfile import SimpleUploadedFile

    from refunds_admin.audit.models import AuditEvent
    from refunds_admin.tournaments.models import Snapshot
    from tests.support.factories import dumps, snapshot_doc

    raw = dumps(snapshot_doc("UP-AGAIN")).encode()
    client.force_login(support)

    def upload():
        file = SimpleUploadedFile("s.json", raw, "application/json")
        return client.post("/tournaments/import/", {"kind": "json", "file": file}, follow=True)

    assert "Imported UP-AGAIN (snapshot version 1" in upload().content.decode()
    page = upload().content.decode()
    assert "Already imported: the file is identical to UP-AGAIN" in page
    assert "Imported UP-AGAIN" not in page
    assert Snapshot.objects.filter(tournament__external_id="UP-AGAIN").count() == 1
    assert AuditEvent.objects.filter(action="snapshot.imported").count() == 1


def test_an_empty_value_in_an_audit_event_reads_as_a_dash(client, support, manager, auditor):
    # An approval into the app's own ledger records no wallet identity (""): the auditor read
    # "Wallet identity" over an empty cell, as if something were missing.
    from tests.support.factories import approved_proposal

    approved_proposal(support, manager, external_id="UP-LEDGER")
    client.force_login(auditor)
    page = client.get(reverse("audit"), {"action": "proposal.approved"}).content.decode()
    assert "<dt>Wallet identity</dt>" in page
    cell = page.split("<dt>Wallet identity</dt>", 1)[1].split("</dd>", 1)[0]
    assert cell.strip().endswith("—"), cell


@pytest.mark.django_db
def test_a_filter_that_cannot_be_read_lists_and_exports_nothing_rather_than_everything(
    client, world, auditor
):
    """A "From" date that is not a date (a hand-edited or pasted address) was named as an
    error above the whole history, unfiltered, and the export gave every event."""
    client.force_login(auditor)
    page = client.get(reverse("audit"), {"since": "2026-13-01"}).content.decode()
    assert "Enter a valid date." in page
    assert "No event matches." in page and "recorded incident" not in page
    response = client.get(reverse("audit_export"), {"since": "2026-13-01"})
    rows = list(
        csv.DictReader(io.StringIO(b"".join(response.streaming_content).decode("utf-8-sig")))
    )
    assert rows == []


@pytest.mark.django_db
def test_the_last_day_there_is_as_the_end_of_a_range_means_no_end_not_a_500(client, world, auditor):
    """An auditor who types 9999-12-31 as "to" (everything from a day on) got a server error
    from the audit history, its export and the finance report: the day after it cannot be
    written."""
    client.force_login(auditor)
    page = client.get(reverse("audit"), {"since": "2026-11-29", "until": "9999-12-31"})
    assert page.status_code == 200
    assert "recorded incident" in page.content.decode()
    response = client.get(reverse("audit_export"), {"until": "9999-12-31"})
    assert response.status_code == 200
    rows = list(
        csv.DictReader(io.StringIO(b"".join(response.streaming_content).decode("utf-8-sig")))
    )
    assert any(row["action"] == "incident.recorded" for row in rows)
    for name in ("finance_report", "finance_report_chart", "finance_report_csv"):
        response = client.get(reverse(name), {"start": "2026-01-01", "end": "9999-12-31"})
        assert response.status_code == 200, name
    response = client.get(reverse("finance_report_xlsx"), {"end": "9999-12-31"})
    assert response.status_code == 200


@pytest.mark.django_db
def test_a_search_with_a_nul_character_finds_nothing_rather_than_a_500(client, world, auditor):
    """PostgreSQL takes no NUL in a text parameter: a pasted search with one answered 500 on the
    tournament list and a tournament's entries. No stored id or name holds one (imports refuse
    it), so nothing matches."""
    client.force_login(auditor)
    response = client.get(reverse("tournament_list"), {"q": "UP-TEST\x00"})
    assert response.status_code == 200 and "UP-TEST-1" not in response.content.decode()
    url = reverse("tournament_detail", args=[world["tournament"].pk])
    response = client.get(url, {"q": "e007\x00"})
    assert response.status_code == 200 and "e008" not in response.content.decode()
    assert "e008" in client.get(url).content.decode()  # listed when nothing is searched
