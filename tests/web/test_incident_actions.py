"""Incident form, preview and actions through the real workflow services."""

from datetime import timedelta

import pytest
from django.urls import reverse
from django.utils import timezone

from refunds_admin.incidents.models import Incident
from tests.support.factories import import_doc


@pytest.fixture
def tournament(support):
    # Play started an hour ago, so a failure a few minutes ago is a valid one. Imported through
    # the service, so the stored document and the rows agree on the start.
    started = timezone.now().replace(microsecond=0) - timedelta(hours=1)
    return import_doc(support, external_id="UP-LIVE-1", starts_at=started).tournament


def _local(dt):
    return timezone.localtime(dt).strftime("%Y-%m-%dT%H:%M:%S")


def _record_database_failure(client, support, tournament):
    """Support records, through the incident form, that the database failed 3 minutes ago."""
    client.force_login(support)
    client.post(
        reverse("incident_new"),
        {
            "tournament": tournament.pk,
            "failed_at": _local(timezone.now() - timedelta(minutes=3)),
            "cause": "database",
        },
    )
    return Incident.objects.get(tournament=tournament)


@pytest.mark.django_db
def test_it_previews_the_rule_as_the_failure_time_is_typed(client, support, tournament):
    client.force_login(support)
    early = tournament.starts_at + timedelta(minutes=14)
    response = client.get(
        reverse("incident_preview"),
        {"tournament": tournament.pk, "failed_at": _local(early)},
        HTTP_HX_REQUEST="true",
    )
    body = response.content.decode()
    assert body.lstrip().startswith('<div id="rule-preview"')
    assert "Rule 1: full refund" in body and "14 min after start" in body


@pytest.mark.django_db
def test_it_says_a_failure_time_is_needed_when_the_time_is_cleared(client, support, tournament):
    client.force_login(support)
    response = client.get(
        reverse("incident_preview"),
        {"tournament": tournament.pk, "failed_at": ""},
        HTTP_HX_REQUEST="true",
    )
    body = response.content.decode()
    assert body.lstrip().startswith('<div id="rule-preview"')
    assert "A failure time is needed" in body and "Rule " not in body


@pytest.mark.django_db
def test_it_records_an_incident_typed_in_local_time_as_utc(client, support, tournament):
    client.force_login(support)
    client.post(reverse("set_timezone"), {"tz": "Asia/Manila"})  # UTC+8
    failed = (timezone.now() - timedelta(minutes=5)).replace(microsecond=0)
    import zoneinfo

    typed = failed.astimezone(zoneinfo.ZoneInfo("Asia/Manila")).strftime("%Y-%m-%dT%H:%M:%S")
    response = client.post(
        reverse("incident_new"),
        {"tournament": tournament.pk, "failed_at": typed, "cause": "network", "description": "x"},
    )
    incident = Incident.objects.get(tournament=tournament)
    assert response.status_code == 302
    assert incident.failed_at == failed


@pytest.mark.django_db
def test_it_shows_a_refusal_next_to_the_form_and_changes_nothing(client, support, tournament):
    client.force_login(support)
    response = client.post(
        reverse("incident_new"),
        {
            "tournament": tournament.pk,
            "failed_at": _local(tournament.starts_at - timedelta(minutes=5)),
            "cause": "network",
        },
    )
    assert response.status_code == 400
    assert 'class="errorlist' in response.content.decode()
    assert not Incident.objects.filter(tournament=tournament).exists()


@pytest.mark.django_db
def test_it_lets_only_a_manager_declare_not_resumable(client, support, manager, tournament):
    incident = _record_database_failure(client, support, tournament)
    url = reverse("incident_not_resumable", args=[incident.pk])
    assert client.post(url, {"reason": "db corrupted"}).status_code == 403
    client.force_login(manager)
    response = client.post(url, {"reason": ""})
    assert response.status_code == 400 and "This field is required." in response.content.decode()
    response = client.post(url, {"reason": "Database corrupted, no restore possible."})
    assert response.status_code == 302
    incident.refresh_from_db()
    assert incident.status == "cancelled" and incident.cancelled_because == "not_resumable"
    # Back and resubmit (or a second tab): refused, and the page says why, though the reason's
    # form is no longer drawn on a cancelled incident.
    again = client.post(url, {"reason": "Database corrupted, no restore possible."})
    page = again.content.decode()
    assert again.status_code == 400
    assert f"Incident {incident.pk} is not open (closed: the tournament was cancelled)" in page


@pytest.mark.django_db
def test_a_second_incident_for_the_same_tournament_is_refused_saying_why(
    client, support, tournament
):
    # Two support staff opened the form; the first records the incident.
    client.force_login(support)
    data = {
        "tournament": tournament.pk,
        "failed_at": _local(timezone.now() - timedelta(minutes=3)),
        "cause": "network",
    }
    assert client.post(reverse("incident_new"), data).status_code == 302
    first = Incident.objects.get(tournament=tournament)
    response = client.post(reverse("incident_new"), data)
    page = response.content.decode()
    assert response.status_code == 400
    assert (
        f"Tournament UP-LIVE-1 already has incident {first.pk} (open): there is one incident "
        "per failure." in page
    )
    assert "Select a valid choice" not in page
    assert Incident.objects.filter(tournament=tournament).count() == 1

    for forged in ("abc", "99999999999999999999999", "-1"):
        response = client.post(reverse("incident_new"), {**data, "tournament": forged})
        assert response.status_code == 400 and "Select a valid choice" in response.content.decode()


@pytest.mark.django_db
def test_a_stale_forms_field_error_names_its_field_above_the_page(
    client, support, manager, tournament
):
    # A second tab still shows the restart form after the manager declared the outage not
    # resumable; its bad time is refused above the page, saying which field was wrong.
    incident = _record_database_failure(client, support, tournament)
    client.force_login(manager)
    client.post(reverse("incident_not_resumable", args=[incident.pk]), {"reason": "gone"})
    client.force_login(support)
    response = client.post(
        reverse("incident_restart", args=[incident.pk]), {"attempted_at": "yesterday-ish"}
    )
    page = response.content.decode()
    assert response.status_code == 400
    assert "Attempted at: Enter a valid date/time." in page
    incident.refresh_from_db()
    assert incident.status == "cancelled" and not incident.restart_attempts.exists()


def test_an_out_of_date_submission_is_prepared_again_from_the_incident(client, support):
    from refunds_admin.proposals.models import PayoutProposal
    from tests.support.factories import snapshot_doc, submitted_proposal

    proposal = submitted_proposal(support, external_id="UP-STALE")
    incident = proposal.incident
    client.force_login(support)
    url = reverse("incident_detail", args=[incident.pk])
    # A current submission waits for its manager: it is not prepared again over their head.
    assert "Prepare proposal" not in client.get(url).content.decode()
    # The platform sends a better snapshot: the submission can no longer be approved.
    import_doc(
        support,
        doc=snapshot_doc("UP-STALE", starts_at=incident.tournament.starts_at, eliminated=7),
    )
    page = client.get(url).content.decode()
    assert "Prepare proposal" in page
    assert "replaces submitted v1, which is out of date" in page
    assert client.post(reverse("incident_prepare", args=[incident.pk])).status_code == 302
    versions = PayoutProposal.objects.filter(incident=incident).values_list("version", "status")
    assert dict(versions) == {1: "superseded", 2: "draft"}


def test_the_managers_dashboard_marks_a_submission_that_went_out_of_date(client, support, manager):
    from tests.support.factories import snapshot_doc, submitted_proposal

    proposal = submitted_proposal(support, external_id="UP-STALE")
    client.force_login(manager)
    mark = "Out of date: it must be prepared again"
    page = client.get(reverse("dashboard")).content.decode()
    assert "UP-STALE v1" in page and mark not in page
    import_doc(
        support,
        doc=snapshot_doc(
            "UP-STALE", starts_at=proposal.incident.tournament.starts_at, eliminated=7
        ),
    )
    page = client.get(reverse("dashboard")).content.decode()
    assert "UP-STALE v1" in page and mark in page


def test_the_incident_page_lists_entries_whose_amounts_changed_in_a_re_import(client, support):
    from tests.support.factories import cancelled_incident, snapshot_doc

    incident = cancelled_incident(support, external_id="UP-MONEY")
    starts_at = incident.tournament.starts_at
    # The platform corrects what e2 paid; e3's chips and everything else stay the same.
    doc = snapshot_doc("UP-MONEY", starts_at=starts_at, entry_fields={1: {"buy_in_paid": "29.00"}})
    import_doc(support, doc=doc)
    client.force_login(support)
    page = client.get(reverse("incident_detail", args=[incident.pk])).content.decode()
    heading = "Snapshot re-imported after the incident was recorded: v1 → v2"
    assert heading in page
    money = page.split('id="snapshot-money-changes"')[1].split("</dd>")[0]
    assert "1 entry with a different amount (e2: buy-in paid)" in money


@pytest.mark.django_db
@pytest.mark.parametrize("offset", ["+23:53", "-16:00"])
def test_a_failure_time_typed_with_an_offset_no_time_zone_has_is_refused_naming_the_field(
    client, support, tournament, offset
):
    """The form's field takes a local time; a value sent with an offset (a script, not the
    browser's picker) that no time zone has is refused next to the field, not a 500 from the
    database (PostgreSQL holds offsets up to 15:59)."""
    import datetime as dt

    client.force_login(support)
    sign, hours, minutes = offset[0], int(offset[1:3]), int(offset[4:])
    zone = dt.timezone((1 if sign == "+" else -1) * timedelta(hours=hours, minutes=minutes))
    at = (tournament.starts_at + timedelta(minutes=5)).astimezone(zone)
    typed = at.strftime("%Y-%m-%dT%H:%M:%S") + offset  # five minutes after the start
    response = client.post(
        reverse("incident_new"),
        {"tournament": tournament.pk, "failed_at": typed, "cause": "network", "description": "x"},
    )
    assert response.status_code == 400
    assert "no real UTC offset" in response.content.decode()
    assert not Incident.objects.filter(tournament=tournament).exists()


def test_a_stale_incident_page_does_not_pull_back_a_current_submission(client, support):
    # Support opened the incident page while the draft was still a draft; meanwhile it was
    # submitted. "Prepare proposal" on that stale page replaced the submission waiting for a
    # manager with an identical draft: the manager's approval was then refused.
    from refunds_admin.proposals.models import PayoutProposal
    from tests.support.factories import submitted_proposal

    proposal = submitted_proposal(support, external_id="UP-WAITING")
    client.force_login(support)
    response = client.post(reverse("incident_prepare", args=[proposal.incident.pk]), follow=True)
    proposal.refresh_from_db()
    assert proposal.status == "submitted"
    assert PayoutProposal.objects.filter(incident=proposal.incident).count() == 1
    page = response.content.decode()
    assert "waiting for a manager" in page and f"v{proposal.version}" in page


@pytest.mark.django_db
def test_a_refusal_to_apply_the_policy_says_what_to_do_next(client, support, manager):
    """Four active entries each owed their $30 buy-in back from a $90 prize table: rule 2
    cannot be applied automatically. The refusal goes on to say what staff can do about it,
    with links to where it is done."""
    from tests.support.factories import cancelled_incident, snapshot_doc

    doc = snapshot_doc("T-SMALL-POOL")
    doc["tournament"]["prizes"] = [
        {"place": 1, "amount": "50.00"},
        {"place": 2, "amount": "40.00"},
    ]
    incident = cancelled_incident(support, doc=doc)
    client.force_login(support)
    response = client.post(reverse("incident_prepare", args=[incident.pk]), follow=True)
    body = response.content.decode()
    assert "cannot be applied automatically" in body
    step = body.split('id="refused-next-step"', 1)[1].split("</p>", 1)[0]
    assert "Ask a manager" in step
    tournament_page = reverse("tournament_detail", args=[incident.tournament.pk])
    assert f'href="{tournament_page}#tournament-policy-form"' in step
    assert "Change the policy" in step
    assert "Confirm management's finding" in step.replace("&#x27;", "'")
    assert "import the corrected snapshot" in step and "prepare the proposal again" in step
    # A manager is told what they can do themselves, with a link to the finding's form.
    client.force_login(manager)
    response = client.post(reverse("incident_prepare", args=[incident.pk]), follow=True)
    body = response.content.decode()
    step = body.split('id="refused-next-step"', 1)[1].split("</p>", 1)[0]
    assert "Ask a manager" not in step and "you can" in step
    assert 'href="#finding-form"' in step and 'id="finding-form"' in body


@pytest.mark.django_db
def test_the_finding_button_says_managements_finding_not_the_seeds_site_wide_issue(
    client, support, manager
):
    """Found by the second operator's trial: under a policy whose finding is "Management chose
    to roll the tournament back", the form headed "Confirm management's finding" (and the
    refused-prepare step pointing to it) was sent by a button reading "Confirm site-wide
    issue", the seed policy's finding."""
    from tests.support.factories import open_incident

    incident = open_incident(support, policy="roll-forward-50-50")
    client.force_login(manager)
    body = client.get(reverse("incident_detail", args=[incident.pk])).content.decode()
    form = body.split('id="finding-form"', 1)[1].split("</form>", 1)[0].replace("&#x27;", "'")
    assert "Management chose to roll the tournament back" in form
    assert "site-wide" not in form
    assert '<button type="submit">Confirm management\'s finding</button>' in form
