"""The fingerprint of a proposal's stored lines: the engine's canonical fingerprint
(payouts.rules), computed in the database on PostgreSQL (no line leaves it) and in Python
elsewhere. Approval checks the lines against it before a proposal is approved, and posting
checks them again before any credit is booked (ledger/services.py), so lines changed behind the
app's back are refused at both.
"""

from contextlib import contextmanager

from django.db import connection, transaction

from refunds_admin.payouts.rules import fingerprint_header, fingerprint_lines

from .models import PayoutLine

_AMOUNT_FIELDS = [
    "buy_in_refund_cents",
    "next_prize_cents",
    "chip_equity_cents",
    "fee_refund_cents",
]
_LINES_TABLE = PayoutLine._meta.db_table


def _postgres():
    return connection.vendor == "postgresql"


# A whole proposal sorted at once -- the fingerprint orders its lines by position, the posted
# total counts distinct players over its credits -- spills to disk under PostgreSQL's default
# work_mem (4 MB) past a few tens of thousands of lines, and an external sort grows faster than
# the rows: at 250k lines the fingerprint took 0.9-1.4 s, 0.7 s sorted in memory (issue 15).
# Those few statements get this much for themselves, then the setting goes back.
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


# ---------------------------------------------------------------------------------------------
# The fingerprint of the stored lines: the engine's canonical fingerprint (payouts.rules), so
# that "the lines still match what the manager approved" is checked against the very fingerprint
# quoted at approval, not a second scheme.
# ---------------------------------------------------------------------------------------------

_FINGERPRINT_SQL = f"""
SELECT encode(sha256(convert_to(
           %(header)s || coalesce(string_agg(concat(
               length(entry_id), ':', entry_id, length(player_id), ':', player_id,
               buy_in_refund_cents, ',', next_prize_cents, ',', chip_equity_cents, ',',
               fee_refund_cents, ',', total_cents, E'\\n'), '' ORDER BY position), ''),
       'UTF8')), 'hex'),
       count(*),
       coalesce(sum({" + ".join(f"({f} > 0)::int" for f in _AMOUNT_FIELDS)}), 0),
       coalesce(sum({" + ".join(_AMOUNT_FIELDS)}), 0)
FROM {_LINES_TABLE} WHERE proposal_id = %(proposal)s
"""
_FINGERPRINT_FIELDS = [
    "entry_id", "player_id", "buy_in_refund_cents", "next_prize_cents",
    "chip_equity_cents", "fee_refund_cents", "total_cents",
]  # fmt: skip


def lines_summary(proposal):
    """(fingerprint, lines, credits, cents) of a proposal's stored lines; zero components are no
    credit. The fingerprint is computed in the database on PostgreSQL (no line leaves it)."""
    if _postgres():
        header = fingerprint_header(
            proposal.incident.tournament.external_id, proposal.currency, proposal.rule
        )
        with sort_memory(), connection.cursor() as cursor:
            cursor.execute(_FINGERPRINT_SQL, {"header": header, "proposal": proposal.pk})
            fingerprint, lines, credits, cents = cursor.fetchone()
        return fingerprint, lines, int(credits), int(cents)
    return lines_summary_in_python(proposal)


def lines_summary_in_python(proposal):
    rows = list(
        PayoutLine.objects.filter(proposal_id=proposal.pk)
        .order_by("position")
        .values_list(*_FINGERPRINT_FIELDS)
    )
    fingerprint = fingerprint_lines(
        proposal.incident.tournament.external_id, proposal.currency, proposal.rule, iter(rows)
    )
    amounts = [amount for row in rows for amount in row[2:6]]
    return fingerprint, len(rows), sum(1 for a in amounts if a > 0), sum(amounts)
