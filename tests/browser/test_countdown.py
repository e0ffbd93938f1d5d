"""The live countdown to an incident's 30-minute deadline, long after it passed: an incident
recorded days late read "overdue by 9251:38" (minutes and seconds) to a newcomer. Past an
hour it reads in hours and minutes, past a day in days and hours, as the rule preview does."""

import re
from datetime import timedelta

import pytest
from django.utils import timezone

from tests.support.factories import open_incident, sunday_major_doc

pytestmark = pytest.mark.browser


def _countdown_of(open_as, support, failed_ago):
    starts = timezone.now().replace(microsecond=0) - failed_ago - timedelta(hours=1)
    incident = open_incident(
        support,
        failed_ago=failed_ago,
        doc=sunday_major_doc(f"UP-LATE-{int(failed_ago.total_seconds())}", starts_at=starts),
    )
    page = open_as(support)
    page.goto(f"/incidents/{incident.pk}/")
    page.wait_for_selector(".countdown.overdue >> text=overdue by")
    return page.inner_text(".countdown")


def test_a_deadline_passed_hours_ago_reads_in_hours_and_minutes(open_as, support):
    text = _countdown_of(open_as, support, timedelta(hours=3))
    assert re.fullmatch(r"overdue by 2 h (29|30) min", text), text


def test_a_deadline_passed_days_ago_reads_in_days_and_hours(open_as, support):
    text = _countdown_of(open_as, support, timedelta(days=6, hours=11))
    assert re.fullmatch(r"overdue by 6 d 10 h", text), text


def test_a_deadline_passed_minutes_ago_still_ticks_in_minutes_and_seconds(open_as, support):
    text = _countdown_of(open_as, support, timedelta(minutes=35))
    assert re.fullmatch(r"overdue by (4|5):\d\d", text), text
