"""A proposal's fingerprint, in Python (the engine's) and in SQL (its twin), side by side.

The fingerprint is the SHA-256 of the proposal's canonical lines (payouts.rules): what a manager
approves, and what posting checks the stored lines against before paying them. The engine
computes it from its columns; posting computes it in the database from the stored PayoutLine
rows, so that no line leaves PostgreSQL. Both must produce the same bytes: the SQL below is
built from the engine's own canonical line (its %-format string) and a list naming the column
each `%s` holds, so that the two forms cannot drift apart without this module failing to load
(`_concat` checks the count) or tests/test_fingerprint_twin.py failing (it compares them byte
for byte on PostgreSQL, on proposals with every component).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from refunds_admin.payouts import rules

from .models import PayoutLine

if TYPE_CHECKING:
    from .models import PayoutProposal

LINES_TABLE = PayoutLine._meta.db_table

# ---------------------------------------------------------------------------------------------
# The canonical form every proposal had before policies (and still has under version 1 of the
# default policy with no new component): the ids with their lengths, then five amounts.
# ---------------------------------------------------------------------------------------------

LINE_FORMAT = rules._CANONICAL
# What each %s of LINE_FORMAT holds, as a SQL expression over a PayoutLine row; the same order
# as the engine's _canonical_lines.
LINE_SQL = (
    "length(entry_id)",
    "entry_id",
    "length(player_id)",
    "player_id",
    "buy_in_refund_cents",
    "next_prize_cents",
    "chip_equity_cents",
    "fee_refund_cents",
    "total_cents",
)
# The PayoutLine fields the Python form reads, in the order fingerprint_lines takes them.
LINE_FIELDS = (
    "entry_id",
    "player_id",
    "buy_in_refund_cents",
    "next_prize_cents",
    "chip_equity_cents",
    "fee_refund_cents",
    "total_cents",
)


def _literal(text: str) -> str:
    """A PostgreSQL string literal for the separator text between two fields."""
    escaped = text.replace("\\", "\\\\").replace("'", "\\'").replace("\n", "\\n")
    return f"E'{escaped}'"


def _concat(line_format: str, expressions: tuple[str, ...]) -> str:
    """SQL concat(...) writing one canonical line exactly as `line_format % values` would."""
    pieces = line_format.split("%s")
    if "%" in line_format.replace("%s", "") or len(pieces) != len(expressions) + 1:
        raise AssertionError(
            f"the engine's canonical line {line_format!r} has {len(pieces) - 1} fields; the SQL "
            f"twin names {len(expressions)}: update proposals/fingerprint.py"
        )
    parts = []
    for piece, expression in zip(pieces, expressions, strict=False):
        if piece:
            parts.append(_literal(piece))
        parts.append(expression)
    if pieces[-1]:
        parts.append(_literal(pieces[-1]))
    return "concat(" + ", ".join(parts) + ")"


def digest_sql(line_format: str = LINE_FORMAT, expressions: tuple[str, ...] = LINE_SQL) -> str:
    """The SQL expression (an aggregate over one proposal's PayoutLine rows, with the header as
    the %(header)s parameter) whose value is the fingerprint, hex."""
    line = _concat(line_format, expressions)
    return (
        "encode(sha256(convert_to(%(header)s || coalesce(string_agg("
        f"{line}, '' ORDER BY position), ''), 'UTF8')), 'hex')"
    )


DIGEST_SQL = digest_sql()


def header(proposal: PayoutProposal) -> str:
    """The canonical header of a stored proposal (tournament, currency, rule)."""
    return rules.fingerprint_header(
        proposal.incident.tournament.external_id, proposal.currency, proposal.rule
    )


def python_fingerprint(proposal: PayoutProposal) -> str:
    """The engine's fingerprint of the stored lines (no SQL beyond reading them)."""
    rows = (
        PayoutLine.objects.filter(proposal_id=proposal.pk)
        .order_by("position")
        .values_list(*LINE_FIELDS)
        .iterator(chunk_size=10_000)
    )
    return rules.fingerprint_lines(
        proposal.incident.tournament.external_id, proposal.currency, proposal.rule, rows
    )


def sql_fingerprint(proposal: PayoutProposal) -> str:
    """The same fingerprint computed by PostgreSQL from the stored lines."""
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT {DIGEST_SQL} FROM {LINES_TABLE} WHERE proposal_id = %(proposal)s",
            {"header": header(proposal), "proposal": proposal.pk},
        )
        return cursor.fetchone()[0]


def stored_fingerprint(proposal: PayoutProposal) -> str:
    """The fingerprint of the stored lines: computed by PostgreSQL there, else in Python."""
    from django.db import connection

    if connection.vendor == "postgresql":
        return sql_fingerprint(proposal)
    return python_fingerprint(proposal)
