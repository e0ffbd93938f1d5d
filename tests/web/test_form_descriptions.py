"""What a screen reader hears on the main forms: every hint and every error a field points at
(aria-describedby) is on the page, and a CSV form refused before the import says so at the top,
naming each field, as a refused import does."""

import re
from datetime import timedelta

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse

from refunds_admin.tournaments.models import Tournament
from tests.support.csv_data import ENTRIES_CSV, PRIZES_CSV, csv_fields
from tests.support.factories import open_incident

pytestmark = pytest.mark.django_db


def _dangling(page):
    """The ids an aria-describedby names that no element of the page carries."""
    ids = set(re.findall(r'\sid="([^"]+)"', page))
    named = [
        name for value in re.findall(r'aria-describedby="([^"]*)"', page) for name in value.split()
    ]
    assert named, "no field is described: the check would prove nothing"
    return sorted(name for name in named if name not in ids)


def test_every_hint_a_support_form_points_at_is_on_the_page(client, support):
    incident = open_incident(support, failed_ago=timedelta(minutes=5))
    client.force_login(support)
    for url in (
        reverse("tournament_import"),
        reverse("incident_new"),
        reverse("incident_detail", args=[incident.pk]),
        reverse("player_lookup"),
        reverse("outage_new"),
    ):
        page = client.get(url).content.decode()
        assert _dangling(page) == [], url


def test_every_hint_a_manager_or_auditor_form_points_at_is_on_the_page(client, manager, auditor):
    client.force_login(manager)
    page = client.get(reverse("policy_propose")).content.decode()
    assert _dangling(page) == []
    client.force_login(auditor)
    page = client.get(reverse("audit")).content.decode()
    assert _dangling(page) == []


def _csv_post(client, **changes):
    data = {key: value for key, value in csv_fields(**changes).items() if value is not None}
    data["starts_at"] = data["starts_at"][:16]
    return client.post(
        reverse("tournament_import"),
        {
            **data,
            "kind": "csv",
            "entries_csv": SimpleUploadedFile("entries.csv", ENTRIES_CSV.encode(), "text/csv"),
            "prizes_csv": SimpleUploadedFile("prizes.csv", PRIZES_CSV.encode(), "text/csv"),
        },
    )


def test_a_csv_form_missing_a_field_says_at_the_top_that_nothing_was_saved_naming_it(
    client, support
):
    client.force_login(support)
    response = _csv_post(client, buy_in="", fee="")
    assert response.status_code == 400
    page = response.content.decode()
    banner = page.split('id="import-errors"', 1)[1].split("</section>", 1)[0]
    assert "The CSV import was refused; nothing was imported." in banner
    assert "Buy-in" in banner and "Fee" in banner
    # Each error is read with its field.
    assert 'aria-describedby="id_buy_in_helptext id_buy_in_error"' in page
    assert _dangling(page) == []
    assert not Tournament.objects.exists()


def test_a_csv_form_missing_a_field_lists_the_other_problems_in_the_same_round(client, support):
    """Found by the newcomer's trial: with a required field left empty, a bad value elsewhere
    (the fee "x", the currency "usd1") was shown only on the next submit. The files and the
    other fields are checked too, and every problem is listed at once; nothing is saved."""
    client.force_login(support)
    response = _csv_post(client, name="", fee="x")
    assert response.status_code == 400
    page = response.content.decode()
    banner = page.split('id="import-errors"', 1)[1].split("</section>", 1)[0]
    assert "Name" in banner and "Fee" in banner, banner
    assert "not &#x27;x&#x27;" in page or "not 'x'" in page
    assert 'id="id_fee_error"' in page and 'id="id_name_error"' in page
    assert banner.count("Name") == 1  # "is required" said once, by the form
    assert not Tournament.objects.exists()
