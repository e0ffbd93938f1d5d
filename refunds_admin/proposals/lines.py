"""The fingerprint of a proposal's stored lines, as approval and posting check it.

The fingerprint is the engine's (payouts.rules); its SQL twin lives beside it in
proposals/fingerprint.py. Approval checks the stored lines against it before a proposal is
approved, and posting checks them again before any credit is booked (ledger/writers.py), so
lines changed behind the app's back are refused at both.
"""

from contextlib import contextmanager

from django.db import connection, transaction
from django.db.models import CharField, OuterRef, QuerySet, Subquery

from refunds_admin.tournaments.models import Entry

from . import fingerprint
from .models import PayoutLine, PayoutProposal

_LINES_TABLE = PayoutLine._meta.db_table


def _postgres():
    return connection.vendor == "postgresql"


# A whole proposal sorted at once -- the fingerprint orders its lines by position, the posted
# total counts distinct players over its credits -- spills to disk under PostgreSQL's default
# work_mem (4 MB) past a few tens of thousands of lines, and an external sort grows faster than
# the rows (docs/performance.md, "Sorting in memory"). Those few statements get this much for
# themselves, then the setting goes back.
SORT_MEMORY = "64MB"


@contextmanager
def sort_memory():
    """Run the statements inside with work_mem = SORT_MEMORY (PostgreSQL), in a savepoint."""
    if not _postgres():
        yield
        return
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(
            "SELECT current_setting('work_mem'), set_config('work_mem', %s, true)", [SORT_MEMORY]
        )
        before = cursor.fetchone()[0]
        yield
        # (On an error the savepoint's rollback undoes the setting.)
        cursor.execute("SELECT set_config('work_mem', %s, true)", [before])


def entry_line(proposal: PayoutProposal, entry_id: str) -> "QuerySet[PayoutLine]":
    """The proposal's line of the entry `entry_id` (no row when the entry is not part of it).

    A proposal's lines are its snapshot's entries, position for position: the entry's position
    comes from the entries' unique (snapshot, entry_id) index, the line from the lines' key
    (proposal, position). The lines keep no index on entry_id of their own (migration 0017); the
    entry id is compared as well, so a line is never taken for another entry's."""
    position = (
        Entry.objects.filter(snapshot_id=proposal.snapshot_id, entry_id=entry_id)
        .order_by()
        .values("position")[:1]
    )
    # No ordering: there is one line at most (the model's default, by proposal, would join
    # the proposals' table only to sort one row).
    line = PayoutLine.objects.filter(
        proposal_id=proposal.pk, position=Subquery(position), entry_id=entry_id
    ).order_by()
    return with_screen_names(line, proposal.snapshot_id)


def with_screen_names(lines: "QuerySet[PayoutLine]", snapshot_id: int) -> "QuerySet[PayoutLine]":
    """`lines` (of a proposal of snapshot `snapshot_id`) with each one's `screen_name`: its
    entry's, the snapshot's entry at the same position, one lookup of the entries' key
    (snapshot, position) per line read. The lines keep no copy of it (migration 0018). For a
    few lines at a time (a statement, the approver's capped and top lines); a page of the
    breakdown reads its entries in one query (queries.entries_at), an export side by side."""
    return lines.annotate(screen_name=entry_screen_name(snapshot_id))


def entry_screen_name(snapshot_id: int) -> Subquery:
    """A line's screen name, as an expression over the line: its entry's, the snapshot's entry
    at the line's position (an index lookup of the entries' key)."""
    name = (
        Entry.objects.filter(snapshot_id=snapshot_id, position=OuterRef("position"))
        .order_by()
        .values("screen_name")[:1]
    )
    return Subquery(name, output_field=CharField())


def stored_fingerprint(proposal):
    """(fingerprint, lines) of the proposal's lines as stored, in the canonical form the
    proposal has; on PostgreSQL computed in the database (no line leaves it)."""
    if _postgres():
        digest, header = fingerprint.digest_sql(proposal)
        with sort_memory(), connection.cursor() as cursor:
            cursor.execute(
                f"SELECT {digest}, count(*) FROM {_LINES_TABLE} WHERE proposal_id = %(proposal)s",
                {"header": header, "proposal": proposal.pk},
            )
            found, lines = cursor.fetchone()
        return found, lines
    lines = PayoutLine.objects.filter(proposal_id=proposal.pk).count()
    return fingerprint.python_fingerprint(proposal), lines
