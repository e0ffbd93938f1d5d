"""POST /api/snapshots sent twice at the same moment for a tournament the app does not know yet
(the platform retried before its first call answered): real PostgreSQL connections, one per
thread. Both calls get the one imported version, whichever creates the tournament first."""

import json

import pytest

from refunds_admin.tournaments.models import Snapshot, Tournament
from tests.support.concurrency import at_once, platform_token, post_json
from tests.support.factories import snapshot_doc

pytestmark = pytest.mark.postgres
URL = "/api/snapshots"


@pytest.fixture
def token(transactional_db, django_user_model):
    """Each thread commits on its own connection, so the test database is transactional."""
    return platform_token(django_user_model)


def _post(body, token):
    return post_json(URL, body, token)


@pytest.mark.parametrize("attempt", range(3))
def test_two_identical_first_imports_at_once_both_answer_with_the_one_version(token, attempt):
    body = json.dumps(snapshot_doc("NEW-1"))
    responses = at_once(*(lambda: _post(body, token) for _ in range(4)))
    # The retry is not refused with a 400 ("was being imported at the same time"): the one that
    # lost the race to create the tournament finds the same document already imported.
    assert [r.status_code for r in responses] == [201] * 4, [r.content for r in responses]
    answers = [r.json() for r in responses]
    assert all(a == answers[0] for a in answers)
    assert answers[0]["snapshot"]["version"] == 1
    assert Tournament.objects.filter(external_id="NEW-1").count() == 1
    assert Snapshot.objects.filter(tournament__external_id="NEW-1").count() == 1


def test_two_different_first_imports_at_once_are_two_versions(token):
    first = json.dumps(snapshot_doc("NEW-2"))
    second = json.dumps(snapshot_doc("NEW-2", name="renamed"))
    responses = at_once(lambda: _post(first, token), lambda: _post(second, token))
    assert sorted(r.status_code for r in responses) == [201, 201], [r.content for r in responses]
    assert sorted(r.json()["snapshot"]["version"] for r in responses) == [1, 2]
