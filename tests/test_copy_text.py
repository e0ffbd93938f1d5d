"""Entries and lines reach PostgreSQL as COPY text built column by column (refunds_admin/bulk.py).
Whatever a snapshot may hold must come back out of the database exactly as it went in."""

import pytest

from refunds_admin.bulk import Same, copy_text_chunks
from refunds_admin.tournaments.models import Entry

from .factories import import_doc, snapshot_doc


def test_it_writes_each_type_as_copy_text_and_escapes_what_copy_reads_specially():
    data = (
        Same(7),
        range(3),
        ["plain", "back\\slash", "tab\there"],
        [None, 0, -12],
        [True, False, True],
        Same(""),
    )
    text = b"".join(copy_text_chunks(data, 3)).decode()
    assert text == (
        "7\t0\tplain\t\\N\tt\t\n7\t1\tback\\\\slash\t0\tf\t\n7\t2\ttab\\there\t-12\tt\t\n"
    )


def test_it_splits_many_rows_into_pieces_that_add_up_to_every_row(monkeypatch):
    monkeypatch.setattr("refunds_admin.bulk._CHUNK", 4)
    names = [f"n{i}" for i in range(10)]
    chunks = list(copy_text_chunks((range(10), names), 10))
    assert len(chunks) == 3
    rows = b"".join(chunks).decode().splitlines()
    assert rows == [f"{i}\tn{i}" for i in range(10)]


@pytest.mark.django_db
def test_names_with_backslashes_and_accents_come_back_exactly(support):
    hostile = {0: {"screen_name": "C:\\poker\\new"}, 1: {"screen_name": "Ébert «ace» 🂡"}}
    snapshot = import_doc(support, snapshot_doc(entry_fields=hostile, emails={"e2": "a\\b@x.io"}))
    stored = dict(Entry.objects.filter(snapshot=snapshot).values_list("position", "screen_name"))
    assert stored[0] == "C:\\poker\\new"
    assert stored[1] == "Ébert «ace» 🂡"
    assert Entry.objects.get(snapshot=snapshot, entry_id="e2").email == "a\\b@x.io"
