"""The database's fast paths (refunds_admin/db/): the credit key is the same whichever side
builds it, and filling a partition while Python works on the other core is safe whichever of
the two fails: the error reaches the caller, nothing is half-saved, the connection goes on."""

import re
import threading

import pytest
from django.db import DatabaseError, connection, transaction

from refunds_admin.db import (
    beside,
    copy_into_partition,
    credit_key,
    fetch_beside,
    key_part,
    partition_bound,
)
from refunds_admin.db import partitions as partitions_module
from refunds_admin.db.keys import UNRESERVED, credit_key_sql, key_part_sql
from refunds_admin.tournaments.models import Entry
from tests.support.factories import import_doc

ODD = ["a/b c", "x%y", "玩家-00001", "e.1_~-", "tab\there", "+plus", ""]


def test_the_key_keeps_exactly_the_unreserved_characters():
    plain = re.compile(f"[{UNRESERVED}]")
    for code in range(128):
        char = chr(code)
        assert (key_part(char) == char) == bool(plain.fullmatch(char)), repr(char)


@pytest.mark.django_db
@pytest.mark.postgres
def test_the_sql_key_is_the_python_key():
    sql = credit_key_sql("%s::text", key_part_sql("t.id"), "%s")
    with connection.cursor() as cursor:
        for entry_id in [*ODD, "e000001"]:
            cursor.execute(
                f"SELECT {sql} FROM (SELECT %s::text AS id) t", [7, "chip_equity", entry_id]
            )
            assert cursor.fetchone()[0] == credit_key(7, entry_id, "chip_equity"), entry_id


COLUMNS = ["snapshot_id", "entry_id", "player_id", "screen_name", "status", "chips",
           "buy_in_paid_cents", "fee_paid_cents", "finish_place", "prize_awarded_cents",
           "position"]  # fmt: skip


def _one_entry(snapshot_id):
    row = (snapshot_id, "e99", "p99", "", "eliminated", 0, 0, 0, None, None, 99)
    return [[value] for value in row]


def _fill(snapshot, **kwargs):
    """Replace the snapshot's partition with one entry, as an import does, in a transaction."""
    with transaction.atomic():
        return copy_into_partition(
            Entry, "snapshot_id", snapshot.pk, COLUMNS, _one_entry(snapshot.pk), **kwargs
        )


def _state(snapshot):
    with connection.cursor() as cursor:
        names = partition_bound(cursor, Entry._meta.db_table, snapshot.pk)
    return names, Entry.objects.filter(snapshot=snapshot).count()


def _failing_fingerprint():
    raise ValueError("the fingerprint failed")


def _beside_threads():
    """The threads still running database work beside Python (db.beside.run_beside)."""
    return [t for t in threading.enumerate() if t.name == beside.THREAD_NAME]


@pytest.fixture
def slow_indexes(monkeypatch):
    """The index statements take a moment, so a failure on the Python side comes first."""
    real = partitions_module._indexes_like

    def slow(cursor, parent, part):
        return ["SELECT pg_sleep(0.3)", *real(cursor, parent, part)]

    monkeypatch.setattr(partitions_module, "_indexes_like", slow)


@pytest.mark.django_db(transaction=True)
@pytest.mark.postgres
def test_a_failure_in_python_while_the_indexes_build_saves_nothing(support, slow_indexes):
    snapshot = import_doc(support)
    before = _state(snapshot)
    with pytest.raises(ValueError, match="fingerprint"):
        _fill(snapshot, meanwhile=_failing_fingerprint)
    assert _beside_threads() == []  # the second thread was waited for
    assert _state(snapshot) == before  # the old partition and its rows, as they were


@pytest.mark.django_db(transaction=True)
@pytest.mark.postgres
def test_a_failure_in_the_index_thread_reaches_the_caller_and_saves_nothing(support):
    snapshot = import_doc(support)
    before = _state(snapshot)
    ran = []

    def meanwhile():
        ran.append(True)
        return "fingerprint"

    with pytest.raises(DatabaseError, match="no_such_column"):
        _fill(snapshot, meanwhile=meanwhile, local_indexes=["(no_such_column)"])
    assert ran == [True] and _beside_threads() == []
    assert _state(snapshot) == before


@pytest.mark.django_db(transaction=True)
@pytest.mark.postgres
def test_both_failing_leaves_the_connection_usable(support, slow_indexes):
    snapshot = import_doc(support)
    before = _state(snapshot)
    with pytest.raises(ValueError, match="fingerprint"):
        _fill(snapshot, meanwhile=_failing_fingerprint, local_indexes=["(no_such_column)"])
    assert _beside_threads() == [] and _state(snapshot) == before
    # And the same connection goes on: the next fill runs to its end, where the tables' owner
    # refuses to replace entries a snapshot already has (they are written once), and nothing of
    # it is saved either.
    with pytest.raises(DatabaseError, match="already has its entries"):
        _fill(snapshot, meanwhile=lambda: "ok")
    assert _beside_threads() == [] and _state(snapshot) == before


@pytest.mark.django_db(transaction=True)
def test_rows_read_beside_python_come_from_the_callers_transaction(support):
    """The second thread's query sees what the caller's transaction wrote and has not committed
    (the previous version's lines, read while the engine computes the next one)."""
    with transaction.atomic():
        snapshot = import_doc(support)
        sql = "SELECT entry_id FROM tournaments_entry WHERE snapshot_id = %s ORDER BY position"
        rows, result = fetch_beside(sql, [snapshot.pk], lambda: "computed")
        expected = list(
            Entry.objects.filter(snapshot=snapshot).order_by("position").values_list("entry_id")
        )
    assert result == "computed" and rows == expected and len(rows) > 1
    assert _beside_threads() == []


@pytest.mark.django_db(transaction=True)
@pytest.mark.postgres
def test_a_failure_on_either_side_of_a_read_beside_reaches_the_caller(support):
    snapshot = import_doc(support)
    ran = []
    with pytest.raises(DatabaseError, match="no_such_column"), transaction.atomic():
        fetch_beside("SELECT no_such_column FROM tournaments_entry", [], lambda: ran.append(1))
    assert ran == [1] and _beside_threads() == []
    with pytest.raises(ValueError, match="fingerprint"), transaction.atomic():
        fetch_beside("SELECT pg_sleep(0.2)", [], _failing_fingerprint)
    assert _beside_threads() == []
    # The connection goes on.
    assert Entry.objects.filter(snapshot=snapshot).count() > 1
