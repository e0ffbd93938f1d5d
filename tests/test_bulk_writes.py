"""Entries and proposal lines are written 100k at a time (COPY on PostgreSQL); their foreign
keys are checked once per statement by a trigger, and must still hold like foreign keys."""

import pytest
from django.db import IntegrityError, connection, transaction

from refunds_admin.bulk import insert_rows
from refunds_admin.tournaments.models import Entry

from .factories import import_doc

pytestmark = [pytest.mark.django_db, pytest.mark.postgres]

ROW = ("e99", "p99", "", "eliminated", 0, 0, 0, None, None)
COLUMNS = (
    "snapshot_id",
    "entry_id",
    "player_id",
    "screen_name",
    "status",
    "chips",
    "buy_in_paid_cents",
    "fee_paid_cents",
    "finish_place",
    "prize_awarded_cents",
    "position",
)


def test_it_refuses_entries_of_a_snapshot_that_does_not_exist(support):
    snapshot = import_doc(support)
    with pytest.raises(IntegrityError, match="does not exist"), transaction.atomic():
        insert_rows(Entry, COLUMNS, [(snapshot.pk + 1000, *ROW, 99)])
    with pytest.raises(IntegrityError, match="does not exist"), transaction.atomic():
        Entry.objects.filter(snapshot=snapshot, entry_id="e1").update(snapshot_id=snapshot.pk + 1)
    insert_rows(Entry, COLUMNS, [(snapshot.pk, *ROW, 99)])  # the right snapshot is fine
    assert snapshot.entries.count() == 11


def test_it_refuses_deleting_a_snapshot_that_still_has_entries(support):
    snapshot = import_doc(support)
    with pytest.raises(IntegrityError, match="still refer to it"), transaction.atomic():
        with connection.cursor() as cursor:
            cursor.execute("UPDATE tournaments_tournament SET current_snapshot_id = NULL")
            cursor.execute("DELETE FROM tournaments_snapshot WHERE id = %s", [snapshot.pk])


def test_it_refuses_lines_of_a_proposal_that_does_not_exist(support):
    with pytest.raises(IntegrityError, match="does not exist"), transaction.atomic():
        with connection.cursor() as cursor:
            cursor.execute(
                "INSERT INTO proposals_payoutline (proposal_id, position, entry_id, player_id,"
                " screen_name, status, chips, buy_in_refund_cents, next_prize_cents,"
                " chip_equity_cents, fee_refund_cents, total_cents, capped)"
                " VALUES (424242, 0, 'e1', 'p1', '', 'active', 1, 0, 0, 0, 0, 0, false)"
            )
