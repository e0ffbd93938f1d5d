"""A re-import while the incident is live has its snapshot differences computed by a real
Celery worker on Redis once it commits, so that the incident page's first viewer reads them
from the shared cache instead of comparing the two versions' entries."""

import pytest
from django.core.cache import cache
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from refunds_admin.tournaments.models import Entry, Tournament
from refunds_admin.tournaments.services import current_snapshot_row
from refunds_admin.web import queries
from tests.support.factories import cancelled_incident, import_doc, snapshot_doc
from tests.support.posting_support import wait_for

pytestmark = [pytest.mark.postgres, pytest.mark.redis]


def test_the_worker_computes_a_re_imports_differences_before_the_first_view(
    celery_worker_process, support, client
):
    celery_worker_process.start()
    incident = cancelled_incident(support, external_id="WARM-1")
    # The platform corrects what e2 paid in fees while the incident waits for its proposal.
    doc = snapshot_doc(
        "WARM-1", starts_at=incident.tournament.starts_at, entry_fields={1: {"fee_paid": "2.00"}}
    )
    import_doc(support, doc=doc)
    old = queries.snapshot_at_recording(incident)
    new = current_snapshot_row(Tournament.objects.get(pk=incident.tournament_id))
    key = queries.changes_key(old, new)
    changes = wait_for(lambda: cache.get(key), timeout=60, message="the worker's differences")
    assert (changes["money_changed"], changes["money_examples"]) == (1, [("e2", ["fee paid"])])
    client.force_login(support)
    with CaptureQueriesContext(connection) as page:
        body = client.get(reverse("incident_detail", args=[incident.pk])).content.decode()
    assert "1 entry with a different amount (e2: fee paid)" in body
    assert not any(Entry._meta.db_table in q["sql"] for q in page.captured_queries)
