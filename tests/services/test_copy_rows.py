"""Entries and lines reach PostgreSQL by binary COPY from the engine's columns
(refunds_admin/db/). Whatever a snapshot may hold must come back out exactly as it went in."""

import pytest

from refunds_admin.db.copy import _ROWS_PER_WRITE
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


@pytest.mark.django_db
def test_a_snapshot_larger_than_one_copy_block_keeps_every_entry_in_order(support):
    # COPY hands the rows over a few thousand at a time (db.copy._ROWS_PER_WRITE): the entries
    # on both sides of each block's edge, and the last one, must all arrive, once, in order.
    eliminated = 2 * _ROWS_PER_WRITE + 3
    snapshot = import_doc(support, snapshot_doc(eliminated=eliminated))
    stored = list(
        Entry.objects.filter(snapshot=snapshot)
        .order_by("position")
        .values_list("position", "entry_id", "status", "finish_place")
    )
    assert len(stored) == snapshot.entries_count
    assert [position for position, *_ in stored] == list(range(len(stored)))
    assert [entry_id for _, entry_id, *_ in stored] == [f"e{i + 1}" for i in range(len(stored))]
    assert stored[-1][2:] == ("eliminated", None)  # a NULL in the last row of the last block
