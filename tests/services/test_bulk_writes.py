"""Entries and proposal lines are written 100k at a time (COPY on PostgreSQL); their foreign
keys are checked once per statement by a trigger, and must still hold like foreign keys."""

import pytest
from django.db import IntegrityError, connection, transaction

from refunds_admin.db import insert_rows, partition_bound
from refunds_admin.proposals import services as proposals
from refunds_admin.proposals.models import LINE_PARTITION_INDEXES, PayoutLine
from refunds_admin.tournaments.models import Entry
from refunds_admin.web.queries import proposal_lines
from tests.support.factories import draft_proposal, import_doc

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


def _partitions(table, key):
    with connection.cursor() as cursor:
        names = partition_bound(cursor, table, key)
        counts = []
        for name in names:
            cursor.execute("SELECT count(*) FROM pg_index WHERE indrelid = %s::regclass", [name])
            counts.append(cursor.fetchone()[0])
        cursor.execute("SELECT count(*) FROM pg_index WHERE indrelid = %s::regclass", [table])
        return names, counts, cursor.fetchone()[0]


def test_it_writes_each_proposal_into_its_own_indexed_partition_and_swaps_it_on_prepare(support):
    """Lines are copied into a bare table, indexed after the COPY and attached as the proposal's
    partition (docs/performance.md); preparing again writes the new version into a partition of
    its own, and the superseded version keeps its lines, never two partitions for one proposal."""
    proposal = draft_proposal(support)
    names, counts, parent_indexes = _partitions("proposals_payoutline", proposal.pk)
    # The parent's primary key and two unique constraints, plus the partition's own lookup and
    # sort indexes (LINE_PARTITION_INDEXES).
    assert parent_indexes == 3 and len(LINE_PARTITION_INDEXES) == 3
    assert len(names) == 1 and counts == [6]
    first = list(proposal.lines.order_by("position").values_list("entry_id", "total_cents"))

    again = proposals.prepare_proposal(proposal.incident, acting_user=support)
    new_names, counts, _ = _partitions("proposals_payoutline", again.pk)
    assert again.pk != proposal.pk and len(new_names) == 1 and new_names != names
    assert counts == [6]
    assert _partitions("proposals_payoutline", proposal.pk)[:2] == (names, [6])
    assert list(again.lines.order_by("position").values_list("entry_id", "total_cents")) == first
    # The partition's unique constraints hold like the table's.
    with pytest.raises(IntegrityError), transaction.atomic():
        PayoutLine.objects.filter(proposal=again, position=1).update(position=0)

    entries, counts, parent_indexes = _partitions("tournaments_entry", again.snapshot_id)
    assert len(entries) == 1 and counts == [parent_indexes]


def test_the_breakdown_pages_read_their_partitions_indexes_not_every_line(support):
    """Each sort and search of the breakdown is an index scan of the proposal's own partition
    (sorting or filtering all its lines would make a page grow with the proposal)."""
    proposal = draft_proposal(support)
    ordered = {
        "by chips": proposal_lines(proposal).order_by("-chips", "-position")[:51],
        "by total": proposal_lines(proposal).order_by("total_cents", "position")[:51],
        "capped": proposal_lines(proposal, show="capped").order_by("position")[:51],
    }
    with connection.cursor() as cursor:
        cursor.execute("SET LOCAL enable_seqscan = off")  # a table of 10 lines would be read whole
        for what, qs in ordered.items():
            plan = _plan(cursor, qs)
            assert "Index Scan" in plan and "Sort" not in plan, (what, plan)
            assert " on proposals_payoutline_p" in plan, (what, plan)


def _plan(cursor, qs):
    sql, params = qs.query.sql_with_params()
    cursor.execute("EXPLAIN " + sql, params)
    return "\n".join(row[0] for row in cursor.fetchall()).replace("Sort Key", "")
