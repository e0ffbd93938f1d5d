"""Entries and proposal lines are written 100k at a time (COPY on PostgreSQL); their foreign
keys are checked once per statement by a trigger, and must still hold like foreign keys."""

import pytest
from django.db import IntegrityError, connection, transaction
from django.test.utils import CaptureQueriesContext

from refunds_admin.db import insert_rows, partition_bound
from refunds_admin.proposals import services as proposals
from refunds_admin.proposals.lines import entry_line, stored_fingerprint
from refunds_admin.proposals.models import LINE_PARTITION_INDEXES, PayoutLine
from refunds_admin.tournaments.models import Entry
from refunds_admin.web.queries import (
    audit_events,
    player_matches,
    player_tournaments,
    proposal_lines,
    snapshot_entries,
    with_names,
)
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
                " status, chips, buy_in_refund_cents, next_prize_cents,"
                " chip_equity_cents, fee_refund_cents, total_cents, capped)"
                " VALUES (424242, 0, 'e1', 'p1', 'active', 1, 0, 0, 0, 0, 0, false)"
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
    # The parent's key, (proposal, position), plus the partition's own sort and filter indexes
    # (LINE_PARTITION_INDEXES); no index on `id`, none on entry_id (proposals migration 0017).
    assert parent_indexes == 1 and len(LINE_PARTITION_INDEXES) == 4
    assert len(names) == 1 and counts == [5]
    first = list(proposal.lines.order_by("position").values_list("entry_id", "total_cents"))

    again = proposals.prepare_proposal(proposal.incident, acting_user=support)
    new_names, counts, _ = _partitions("proposals_payoutline", again.pk)
    assert again.pk != proposal.pk and len(new_names) == 1 and new_names != names
    assert counts == [5]
    assert _partitions("proposals_payoutline", proposal.pk)[:2] == (names, [5])
    assert list(again.lines.order_by("position").values_list("entry_id", "total_cents")) == first
    # The partition's key holds like the table's: one line per position.
    with pytest.raises(IntegrityError), transaction.atomic():
        PayoutLine.objects.filter(proposal=again, position=1).update(position=0)
    # One line per entry: a line is its snapshot's entry at the same position, whose entry id the
    # entries' key makes unique; a line given another entry's id no longer matches the
    # proposal's fingerprint, which approval and posting check.
    with pytest.raises(IntegrityError), transaction.atomic():
        entry_id = Entry.objects.get(snapshot_id=again.snapshot_id, position=0).entry_id
        Entry.objects.filter(snapshot_id=again.snapshot_id, position=1).update(entry_id=entry_id)
    with transaction.atomic():
        entry_id = again.lines.get(position=0).entry_id
        PayoutLine.objects.filter(proposal=again, position=1).update(entry_id=entry_id)
        assert stored_fingerprint(again)[0] != again.fingerprint
        transaction.set_rollback(True)
    assert stored_fingerprint(again) == (again.fingerprint, again.lines_count)

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


def test_the_eliminated_lines_are_read_from_their_own_index(support):
    """ "Eliminated only" after a line: PostgreSQL reads the eliminated lines from their own
    partial index, not every line after that one in position order (the actives, usually all of
    them, come before the first eliminated line: such a page grew with the proposal)."""
    proposal = draft_proposal(support)
    eliminated = proposal_lines(proposal, show="eliminated")
    assert set(eliminated.values_list("status", flat=True)) == {"eliminated"}
    page = eliminated.filter(position__gt=1).order_by("position")[:51]
    with connection.cursor() as cursor:
        cursor.execute("SET LOCAL enable_seqscan = off")
        plan = _plan(cursor, page)
    assert "Index Scan" in plan and "Sort" not in plan, plan
    # The index holds the eliminated lines only: no line is read to check its status.
    assert "eliminated" not in plan, plan


def _plan(cursor, qs):
    sql, params = qs.query.sql_with_params()
    cursor.execute("EXPLAIN " + sql, params)
    return "\n".join(row[0] for row in cursor.fetchall()).replace("Sort Key", "")


def test_an_entrys_line_is_found_through_the_entrys_position(support):
    """The statement page and the API read one entry's line: the entries' key (snapshot,
    entry_id) gives its position, the lines' key (proposal, position) the line, and the entries'
    key (snapshot, position) its screen name, each an index lookup in one partition (the lines
    have no entry_id index, proposals migration 0017, and no screen name, 0018)."""
    proposal = draft_proposal(support)
    entry = Entry.objects.get(snapshot_id=proposal.snapshot_id, position=3)
    assert entry.screen_name
    line = entry_line(proposal, entry.entry_id).get()
    assert (line.position, line.entry_id) == (3, entry.entry_id)
    assert line.screen_name == entry.screen_name
    assert not entry_line(proposal, "no such entry").exists()
    with connection.cursor() as cursor:
        cursor.execute("SET LOCAL enable_seqscan = off")  # a table of 10 lines would be read whole
        plan = _plan(cursor, entry_line(proposal, entry.entry_id))
    assert "Seq Scan" not in plan and plan.count("Index Scan") == 3, plan
    assert " on proposals_payoutline_p" in plan and " on tournaments_entry_p" in plan, plan


def test_the_entry_searches_read_the_entries_search_indexes(support):
    """The player lookup, the history's player search and the breakdown's and tournament page's
    searches find entries through the expression indexes of tournaments migration 0012: the
    player id lowered in the C collation, and the first 16 characters of the screen name
    lowered (docs/performance.md). Each query must name the index's own expression (and
    collation, and the partial indexes' condition), or PostgreSQL reads every entry instead."""
    proposal = draft_proposal(support)
    snapshot = proposal.snapshot
    long_name = "Aurelio-the-Magnificent"  # longer than the index's 16 characters
    Entry.objects.filter(snapshot=snapshot, entry_id="e1").update(screen_name=long_name)
    by_id, by_name = "entry_player_id_lower_c", "entry_screen_name_prefix"
    searches = {
        "the history's player search": (lambda: audit_events(player="P2"), [by_id]),
        "the breakdown, by player id": (lambda: proposal_lines(proposal, q="P2"), [by_id]),
        "the breakdown, by name": (lambda: proposal_lines(proposal, q="PLAYER1"), [by_name]),
        "the breakdown, by a long name": (
            lambda: proposal_lines(proposal, q=long_name[:20]),
            [by_name],
        ),
        # In a partition of 10 entries, (snapshot, entry_id) finds them all cheaper than the
        # three indexes together; on 150k entries the plan is the three (docs/performance.md).
        "the tournament page": (lambda: snapshot_entries(snapshot, q=long_name), []),
        "the player lookup": (lambda: player_matches(long_name.upper()), [by_id, by_name]),
        "the lookup's names": (lambda: with_names([{"player_id": "p2"}]), [by_id]),
        "the player's tournaments": (lambda: player_tournaments("p2"), [by_id]),
    }
    for what, (search, indexes) in searches.items():
        with CaptureQueriesContext(connection) as ran:
            list(search())
        with connection.cursor() as cursor:
            # A table of 10 entries would be read whole, or through the snapshot's own key.
            cursor.execute("SET LOCAL enable_seqscan = off")
            cursor.execute("SET LOCAL enable_indexscan = off")
            plans = []
            for query in ran.captured_queries:
                if "tournaments_entry" in query["sql"]:
                    cursor.execute("EXPLAIN " + query["sql"])
                    plans.append("\n".join(row[0] for row in cursor.fetchall()))
            plan = "\n".join(plans)
            assert plans and "Seq Scan on tournaments_entry" not in plan, (what, plan)
            for index in indexes:
                names = _attached(cursor, index)
                assert any(f" on {name}" in plan for name in names), (what, index, plan)
            cursor.execute("RESET enable_seqscan")
            cursor.execute("RESET enable_indexscan")
    # and they find what they did before
    lines = proposal_lines(proposal, q=long_name[:20].upper())
    assert list(lines.values_list("entry_id", flat=True)) == ["e1"]
    found = snapshot_entries(snapshot, q=long_name)
    assert list(found.values_list("entry_id", flat=True)) == ["e1"]
    assert [p["player_id"] for p in player_matches(long_name.upper())] == ["p1"]


def _attached(cursor, index):
    """The partitions' indexes attached to the parent's `index`."""
    cursor.execute(
        "SELECT c.relname FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid "
        "JOIN pg_class p ON p.oid = i.inhparent WHERE p.relname = %s",
        [index],
    )
    return [name for (name,) in cursor.fetchall()]
