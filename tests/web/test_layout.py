import re

import pytest
from django.urls import reverse
from django.utils import timezone

from refunds_admin.accounts.models import StaffProfile
from refunds_admin.web.templatetags.staff import money, money_symbol, staff_time


def test_it_formats_cents_with_their_currency():
    assert money(81533, "USD") == "USD 815.33"
    assert money("30150.00", "USD") == "USD 30,150.00"
    assert money("30.5", "EUR") == "EUR 30.50"
    assert money(5, "USD") == "USD 0.05"
    assert money_symbol(81533, "USD") == "$815.33"
    assert money_symbol(54300, "GBP") == "£543.00"
    assert money_symbol(100, "CHF") == "CHF 1.00"


def test_it_refuses_to_format_a_float_as_money():
    with pytest.raises(TypeError):
        money(815.33, "USD")


def test_it_shows_times_in_the_staff_zone_with_utc_in_the_tooltip():
    import zoneinfo
    from datetime import UTC, datetime

    value = datetime(2026, 11, 29, 21, 14, tzinfo=UTC)
    with timezone.override(zoneinfo.ZoneInfo("Europe/Malta")):
        html = staff_time(value)
    assert "2026-11-29 22:14 CET" in html
    assert 'title="2026-11-29 21:14:00 UTC"' in html


def test_a_zone_abbreviation_two_offered_zones_share_is_followed_by_its_offset():
    """Asia/Manila and America/Los_Angeles, both offered, are both "PST": a statement printed
    or an audit history read in Manila said "2026-01-01 07:10 PST", which reads as Pacific time.
    The offset follows such an abbreviation wherever a moment is named."""
    import zoneinfo
    from datetime import UTC, datetime

    from refunds_admin.audit.display import when
    from refunds_admin.incidents.services import local_words

    value = datetime(2025, 12, 31, 23, 10, tzinfo=UTC)
    with timezone.override(zoneinfo.ZoneInfo("Asia/Manila")):
        assert "2026-01-01 07:10 PST (UTC+08:00)" in staff_time(value)
        assert when(value.isoformat()) == "2026-01-01 07:10:00 PST (UTC+08:00)"
        assert local_words(value) == "2026-01-01 07:10:00 PST (UTC+08:00)"
    with timezone.override(zoneinfo.ZoneInfo("America/Los_Angeles")):
        assert "2025-12-31 15:10 PST (UTC-08:00)" in staff_time(value)
    with timezone.override(zoneinfo.ZoneInfo("Europe/Malta")):
        assert staff_time(value).endswith("2026-01-01 00:10 CET</time>")  # unambiguous: as it was


@pytest.mark.django_db
def test_a_printed_statement_names_its_zone_without_ambiguity(client, world, auditor):
    """The statement's "printed" line named the zone by its abbreviation alone ("PST" in
    Manila), unlike the rest of the page."""
    client.force_login(auditor)
    client.post(reverse("set_timezone"), {"tz": "Asia/Manila"})
    url = reverse("proposal_statement", args=[world["proposal"].pk, "e001"])
    page = client.get(url).content.decode()
    assert re.search(r"printed <time [^>]*>[-0-9 :]+ PST \(UTC\+08:00\)</time>", page), page


@pytest.mark.django_db
def test_it_remembers_the_chosen_time_zone_for_the_whole_session(client, world, support):
    client.force_login(support)
    url = reverse("incident_detail", args=[world["incident"].pk])
    assert "21:14:00 UTC" in client.get(url).content.decode()
    response = client.post(reverse("set_timezone"), {"tz": "America/New_York", "next": url})
    assert response.status_code == 302 and response["Location"] == url
    page = client.get(url).content.decode()
    assert "16:14:00 EST" in page  # 21:14 UTC in New York, November
    assert 'title="2026-11-29 21:14:00 UTC"' in page


@pytest.mark.django_db
def test_it_ignores_an_unknown_time_zone_and_foreign_redirects(client, support):
    client.force_login(support)
    response = client.post(
        reverse("set_timezone"), {"tz": "Mars/Olympus", "next": "https://evil.example/"}
    )
    assert response["Location"] == "/"
    assert not client.session.get("staff_tz")
    assert not StaffProfile.objects.filter(user=support).exists()


@pytest.mark.django_db
def test_it_puts_the_csrf_token_in_htmx_headers_and_serves_htmx_locally(client, support):
    client.force_login(support)
    page = client.get(reverse("dashboard")).content.decode()
    assert re.search(r"hx-headers='\{\"X-CSRFToken\": \"[A-Za-z0-9]+\"\}'", page)
    assert "/static/js/htmx.min.js" in page and "unpkg" not in page


@pytest.mark.django_db
def test_it_shows_navigation_by_role(client, support, auditor):
    client.force_login(auditor)
    page = client.get(reverse("dashboard")).content.decode()
    assert "Record incident" not in page and "Audit" in page
    client.force_login(support)
    assert "Record incident" in client.get(reverse("dashboard")).content.decode()
