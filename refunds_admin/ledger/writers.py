"""Turning approved lines into credits, a chunk at a time, skipping credits already booked.

On PostgreSQL one statement per chunk books the credits straight from the proposal's lines:
`INSERT ... SELECT`, so no line travels to Python and back (even COPY through a staging table
would first have to read the lines out); a chunk of which some credits are booked already is
booked again with `ON CONFLICT (key) DO NOTHING`. Elsewhere (SQLite in development) the same
is done in Python with `bulk_create(ignore_conflicts=True)`. Both paths build the same keys
(`credit_key`) and the same fingerprint of the lines; tests run both.
"""

from django.db import IntegrityError, connection, transaction
from django.utils import timezone

from refunds_admin.db.keys import credit_key, credit_key_sql, key_part_sql
from refunds_admin.proposals import fingerprint
from refunds_admin.proposals.lines import SORT_MEMORY, sort_memory  # noqa: F401 (used by posting)
from refunds_admin.proposals.models import PayoutLine

from .models import COMPONENT_FIELDS, Credit

_AMOUNT_FIELDS = [field for _, field in COMPONENT_FIELDS]
_LINE_FIELDS = ["position", "entry_id", "player_id", *_AMOUNT_FIELDS]
# Table names from the models, never spelled out in the SQL below (plain identifiers: Django's
# default names need no quoting).
_LINES_TABLE = PayoutLine._meta.db_table
_CREDITS_TABLE = Credit._meta.db_table


def _postgres():
    return connection.vendor == "postgresql"


# ---------------------------------------------------------------------------------------------
# The fingerprint of the stored lines: the engine's canonical fingerprint, so that "the lines
# still match what the manager approved" is checked against the very fingerprint quoted at
# approval, not a second scheme. Its SQL twin lives beside the Python form in
# proposals/fingerprint.py.
# ---------------------------------------------------------------------------------------------


def _summary_sql(digest):
    return f"""
SELECT {digest},
       count(*),
       coalesce(sum({" + ".join(f"({f} > 0)::int" for f in _AMOUNT_FIELDS)}), 0),
       coalesce(sum({" + ".join(_AMOUNT_FIELDS)}), 0)
FROM {_LINES_TABLE} WHERE proposal_id = %(proposal)s
"""


# One statement per canonical form (proposals/fingerprint.py).
_SUMMARY_SQL = {
    fingerprint.LEGACY_DIGEST_SQL: _summary_sql(fingerprint.LEGACY_DIGEST_SQL),
    fingerprint.POLICY_DIGEST_SQL: _summary_sql(fingerprint.POLICY_DIGEST_SQL),
}


def lines_summary(proposal):
    """(fingerprint, lines, credits, cents) of a proposal's stored lines; zero components are no
    credit. The fingerprint is computed in the database on PostgreSQL (no line leaves it)."""
    if _postgres():
        # The legacy or the policy form of the fingerprint, as the proposal has it.
        digest, header = fingerprint.digest_sql(proposal)
        with sort_memory(), connection.cursor() as cursor:
            cursor.execute(_SUMMARY_SQL[digest], {"header": header, "proposal": proposal.pk})
            digest, lines, credits, cents = cursor.fetchone()
        return digest, lines, int(credits), int(cents)
    return lines_summary_in_python(proposal)


def lines_summary_in_python(proposal):
    amounts = [
        amount
        for row in PayoutLine.objects.filter(proposal_id=proposal.pk).values_list(*_AMOUNT_FIELDS)
        for amount in row
    ]
    lines = PayoutLine.objects.filter(proposal_id=proposal.pk).count()
    return (
        fingerprint.python_fingerprint(proposal),
        lines,
        sum(1 for a in amounts if a > 0),
        sum(amounts),
    )


# ---------------------------------------------------------------------------------------------
# Booking one chunk
# ---------------------------------------------------------------------------------------------

# The entry's part of the key is computed once per line, not once per credit (key_part_sql:
# the common case inline, refunds_admin/db/keys.py, where its Python twin credit_key lives).
_VALUES = ", ".join(f"('{component}', c.{field})" for component, field in COMPONENT_FIELDS)


def _chunk_sql(*, skip_booked: bool) -> str:
    """The one statement that books a chunk: its lines, their credits, inserted.

    With `skip_booked` False it is a plain INSERT, for a chunk none of whose credits is booked
    yet -- the normal case: a chunk's credits commit together with the job's progress past it,
    so a run continues after them. ON CONFLICT DO NOTHING costs a speculative insertion per
    credit (docs/performance.md, "Posting"); a key already booked (a redelivered chunk) makes the
    plain INSERT fail as a whole, and the chunk is booked again with `skip_booked`. The primary
    key is what makes a credit posted exactly once, in both statements.
    """
    on_conflict = "ON CONFLICT (key) DO NOTHING" if skip_booked else ""
    key = credit_key_sql("%(proposal)s::text", "c.key_part", "v.component")
    return f"""
WITH chunk AS (
    SELECT {", ".join(_LINE_FIELDS)}, {key_part_sql("entry_id")} AS key_part
    FROM {_LINES_TABLE}
    WHERE proposal_id = %(proposal)s AND position > %(after)s
    ORDER BY position LIMIT %(size)s
), credits AS (
    SELECT {key} AS key, c.entry_id, c.player_id, v.component, v.amount
    FROM chunk c CROSS JOIN LATERAL (VALUES {_VALUES}) AS v(component, amount)
    WHERE v.amount > 0
), booked AS (
    INSERT INTO {_CREDITS_TABLE} (key, proposal_id, entry_id, component, player_id, currency,
                               amount_cents, created_at)
    SELECT key, %(proposal)s, entry_id, component, player_id, %(currency)s, amount, %(now)s
    FROM credits
    {on_conflict}
    RETURNING 1
)
SELECT (SELECT max(position) FROM chunk),
       (SELECT count(*) FROM credits),
       (SELECT coalesce(sum(amount), 0) FROM credits),
       (SELECT count(*) FROM booked)
"""


_CHUNK_SQL = _chunk_sql(skip_booked=True)
_FRESH_CHUNK_SQL = _chunk_sql(skip_booked=False)
_UNIQUE_VIOLATION = "23505"


def book_chunk(proposal, after_position, size):
    """Book the credits of the next `size` lines after `after_position`; already booked keys are
    skipped. Must run inside the chunk's transaction.

    Returns (last position, credits in the chunk, cents in the chunk, newly booked), or None
    when no line is left.
    """
    if _postgres():
        params = {
            "proposal": proposal.pk,
            "after": after_position,
            "size": size,
            "currency": proposal.currency,
            # The app's clock, as on SQLite, not the database server's now(): one source of
            # time for every record (and a frozen clock in tests holds).
            "now": timezone.now(),
        }
        with connection.cursor() as cursor:
            try:
                with transaction.atomic():  # a savepoint: a failed try undoes only itself
                    cursor.execute(_FRESH_CHUNK_SQL, params)
            except IntegrityError as exc:
                if getattr(exc.__cause__, "sqlstate", None) != _UNIQUE_VIOLATION:
                    raise
                cursor.execute(_CHUNK_SQL, params)  # some were booked: skip those
            through, credits, cents, booked = cursor.fetchone()
        return None if through is None else (through, credits, int(cents), booked)

    lines = list(
        PayoutLine.objects.filter(proposal_id=proposal.pk, position__gt=after_position)
        .order_by("position")
        .values_list(*_LINE_FIELDS)[:size]
    )
    if not lines:
        return None
    now = timezone.now()
    credits = [
        Credit(
            key=credit_key(proposal.pk, entry_id, component),
            proposal_id=proposal.pk,
            entry_id=entry_id,
            component=component,
            player_id=player_id,
            currency=proposal.currency,
            amount_cents=amount,
            created_at=now,
        )
        for _, entry_id, player_id, *amounts in lines
        for (component, _), amount in zip(COMPONENT_FIELDS, amounts, strict=True)
        if amount > 0
    ]
    keys = [credit.key for credit in credits]
    already = Credit.objects.filter(key__in=keys).count() if keys else 0
    Credit.objects.bulk_create(credits, ignore_conflicts=True, batch_size=500)
    return lines[-1][0], len(credits), sum(c.amount_cents for c in credits), len(credits) - already
