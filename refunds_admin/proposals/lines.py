"""The fingerprint of a proposal's stored lines, as approval and posting check it.

The fingerprint is the engine's (payouts.rules); its SQL twin lives beside it in
proposals/fingerprint.py. Approval checks the stored lines against it before a proposal is
approved, and posting checks them again before any credit is booked (ledger/writers.py), so
lines changed behind the app's back are refused at both.
"""

from contextlib import contextmanager

from django.db import connection, transaction

from . import fingerprint
from .models import PayoutLine

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
