"""The web pages' test world, built through the services (tests.factories) on a fixed Sunday:
the clock is frozen there for the whole test, so the times the pages show never change."""

from datetime import UTC, datetime, timedelta

import pytest
from django.core.cache import cache

from refunds_admin.incidents import services as incidents
from refunds_admin.proposals import services as proposals
from tests.support.factories import open_incident, sunday_special_doc

STARTS = datetime(2026, 11, 29, 18, 0, tzinfo=UTC)
FAILED = STARTS + timedelta(hours=3, minutes=14)


@pytest.fixture(autouse=True)
def _fresh_cache():
    """Each test starts with an empty cache (failed sign-ins are counted by django-axes in the
    database, which each test rolls back)."""
    cache.clear()
    yield
    cache.clear()


@pytest.fixture
def world(support, manager, other_manager, auditor, outsider, time_machine):
    """The Sunday Special (UP-TEST-1: 30 entries, 10 still active, 5 paid places) failed at
    21:14 UTC, 3 h 14 min into play; its window passed, support prepared and submitted the
    proposal (not in the money). The last eliminated entry carries an awarded prize although
    no one is in the money yet, so the proposal shows a warning."""
    time_machine.move_to(FAILED + timedelta(minutes=6), tick=False)
    incident = open_incident(
        support,
        failed_ago=timedelta(minutes=6),
        description="Game server 3 crashed",
        doc=sunday_special_doc("UP-TEST-1", starts_at=STARTS, awarded={29: 50_00}),
    )
    time_machine.shift(timedelta(minutes=25))  # 31 minutes after the failure
    incident = incidents.cancel_after_window(incident, acting_user=None)
    time_machine.shift(timedelta(minutes=9))
    proposal = proposals.prepare_proposal(incident, acting_user=support)
    time_machine.shift(timedelta(minutes=5))
    proposal = proposals.submit_proposal(proposal, acting_user=support)
    time_machine.shift(timedelta(minutes=1))
    return {"tournament": incident.tournament, "incident": incident, "proposal": proposal}


def login(client, user):
    client.force_login(user)
    return client
