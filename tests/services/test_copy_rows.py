"""Entries and lines reach PostgreSQL by binary COPY from the engine's columns
(refunds_admin/db/). Whatever a snapshot may hold must come back out exactly as it went in."""

import pytest

from refunds_admin.tournaments.models import Entry
from tests.support.factories import import_doc, snapshot_doc


@pytest.mark.django_db
def test_names_with_backslashes_and_accents_come_back_exactly(support):
    hostile = {0: {"screen_name": "C:\\poker\\new"}, 1: {"screen_name": "Ébert «ace» 🂡"}}
    snapshot = import_doc(support, snapshot_doc(entry_fields=hostile, emails={"e2": "a\\b@x.io"}))
    stored = dict(Entry.objects.filter(snapshot=snapshot).values_list("position", "screen_name"))
    assert stored[0] == "C:\\poker\\new"
    assert stored[1] == "Ébert «ace» 🂡"
    assert Entry.objects.get(snapshot=snapshot, entry_id="e2").email == "a\\b@x.io"
