"""The fingerprint of a proposal's stored lines, as approval and posting check it.

The fingerprint is the engine's (payouts.rules); its SQL twin lives beside it in
proposals/fingerprint.py. Approval checks the stored lines against it before a proposal is
approved, and posting checks them again before any credit is booked (ledger/writers.py), so
lines changed behind the app's back are refused at both.
"""

from contextlib import contextmanager

from django.db import connection, transaction
from django.db.models import QuerySet, Subquery

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
    return PayoutLine.objects.filter(
        proposal_id=proposal.pk, position=Subquery(position), entry_id=entry_id
    ).order_by()


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
