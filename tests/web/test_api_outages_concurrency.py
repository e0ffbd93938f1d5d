"""POST /api/outages sent twice at the same moment (the platform retried before its first call
answered): real PostgreSQL connections, one per thread. Both calls get the outage, recorded
once, whichever arrives first."""

import json
from datetime import timedelta

import pytest
from django.utils import timezone

from refunds_admin.audit.models import AuditEvent
from refunds_admin.incidents.models import Incident
from refunds_admin.outages.models import Outage
from tests.support.concurrency import at_once, platform_token, post_json

pytestmark = pytest.mark.postgres
URL = "/api/outages"


@pytest.fixture
def token(transactional_db, django_user_model):
    """Each thread commits on its own connection, so the test database is transactional."""
    return platform_token(django_user_model, external_ids=("R-1", "R-2", "R-3"))


def _post(body, token):
    return post_json(URL, body, token)


@pytest.mark.parametrize("attempt", range(3))
def test_two_identical_calls_at_once_both_answer_with_the_one_outage(token, attempt):
    failed_at = (timezone.now() - timedelta(minutes=12)).replace(microsecond=0)
    body = json.dumps(
        {
            "failed_at": failed_at.isoformat(),
            "cause": "server_crash",
            "description": "Data centre A lost power",
            "external_ids": ["R-1", "R-2", "R-3"],
        }
    )
    responses = at_once(lambda: _post(body, token), lambda: _post(body, token))
    statuses = sorted(r.status_code for r in responses)
    # The first to commit recorded it (201); the other is the retry and gets it (200), not a
    # refusal saying its own tournaments already have an incident.
    assert statuses == [200, 201], [r.content for r in responses]
    outage = Outage.objects.get()
    first, second = (r.json() for r in responses)
    assert first == second and first["id"] == outage.pk
    assert [i["external_id"] for i in first["incidents"]] == ["R-1", "R-2", "R-3"]
    assert Incident.objects.count() == 3
    assert AuditEvent.objects.filter(action="outage.recorded").count() == 1
