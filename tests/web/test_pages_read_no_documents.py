"""A snapshot version's stored document is megabytes for 100k entries (and its parsed form as
much again): the pages staff use all day read a version's sizes, start and versions, never the
document, so that they do not grow with the tournaments they list (issue 25)."""

from datetime import timedelta

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from django.utils import timezone

from tests.support.factories import cancelled_incident, import_doc, snapshot_doc

from .conftest import login

pytestmark = pytest.mark.django_db


def _reads_of_documents(client, url, params=None):
    """The queries of one GET of `url` that read a snapshot's stored document."""
    with CaptureQueriesContext(connection) as queries:
        response = client.get(url, params or {})
    assert response.status_code == 200, url
    return [q["sql"] for q in queries.captured_queries if "document_zlib" in q["sql"]]


def test_the_everyday_pages_never_read_a_snapshots_document(client, support):
    incident = cancelled_incident(support, external_id="DOC-1")
    # Re-imported after the incident: the incident page compares the two versions.
    import_doc(
        support,
        doc=snapshot_doc(
            "DOC-1",
            starts_at=incident.tournament.starts_at,
            active_chips=[40_000, 30_000, 15_000, 15_000],
        ),
    )
    import_doc(support, external_id="DOC-2")
    login(client, support)
    failed_at = timezone.localtime(timezone.now() - timedelta(minutes=10))
    pages = [
        (reverse("incident_detail", args=[incident.pk]), None),
        (reverse("player_lookup"), {"q": "p1"}),
        (reverse("tournament_list"), None),
        ("/outages/new/", {"failed_at": failed_at.strftime("%Y-%m-%dT%H:%M:%S")}),
        (reverse("incident_new"), None),
    ]
    for url, params in pages:
        assert _reads_of_documents(client, url, params) == [], url
