"""Writing many rows at once: COPY on PostgreSQL, bulk_create elsewhere (SQLite in development).

A 100k-entry snapshot or proposal is written with COPY in a fraction of the time `bulk_create`
takes on PostgreSQL, which the staff member would wait for (docs/performance.md, "COPY").

The engine holds a proposal's lines (and a snapshot's entries) as columns, one list per field.
`insert_columns` sends them in COPY's binary format: integers travel as 8 bytes instead of
digits PostgreSQL must parse again, and text needs no escaping.
"""

from collections import deque
from collections.abc import Sequence
from itertools import islice, repeat

from django.db import connection
from psycopg import Cursor

# psycopg's row formatter (C), which its write_row calls; psycopg is pinned in requirements.lock,
# and tests/services/test_copy_rows.py checks what comes back out.
from psycopg._copy_base import format_row_binary
from psycopg.copy import QueuedLibpqWriter

from refunds_admin.payouts import paused_gc


def insert_rows(model, columns, rows, *, meanwhile=None):
    """Insert `rows` (tuples in the order of `columns`, which are field attnames such as
    `snapshot_id`) into `model`'s table, inside the caller's transaction.

    `meanwhile`, if given, is called once every row has been handed over, while PostgreSQL is
    still writing them and their indexes (CPU on the other core): work such as a proposal's
    fingerprint overlaps the wait. Its result is returned.
    """
    # Hundreds of thousands of small tuples and no cycles: the collector would only slow us.
    with paused_gc():
        if connection.vendor == "postgresql":
            return _copy_text(model._meta.db_table, columns, rows, meanwhile)
        model.objects.bulk_create(
            (model(**dict(zip(columns, row, strict=True))) for row in rows), batch_size=2000
        )
        return meanwhile() if meanwhile else None


def _copy_text(table, columns, rows, meanwhile):
    quoted = ", ".join(connection.ops.quote_name(c) for c in columns)
    statement = f"COPY {connection.ops.quote_name(table)} ({quoted}) FROM STDIN"
    # wrap_database_errors: psycopg's errors become Django's (IntegrityError, ...) as usual.
    with connection.cursor() as cursor, connection.wrap_database_errors:
        pg_cursor = cursor.cursor  # the psycopg 3 cursor under Django's wrapper
        # The queued writer sends the data from its own thread, so this thread can go on.
        with pg_cursor.copy(statement, writer=QueuedLibpqWriter(pg_cursor)) as copy:
            write_row = copy.write_row
            for row in rows:
                write_row(row)
            return meanwhile() if meanwhile else None


class Same:
    """A column holding one value on every row (the partition key), without a list of it."""

    def __init__(self, value: object) -> None:
        self.value = value


def rows_of(data: Sequence["Sequence[object] | Same"]):
    """The rows of column-wise `data`."""
    return zip(*(repeat(col.value) if isinstance(col, Same) else col for col in data))


def insert_columns(model, columns, data, *, meanwhile=None):
    """insert_rows for rows given column by column (`data`: one sequence, or Same, per name in
    `columns`), as binary COPY on PostgreSQL."""
    if connection.vendor != "postgresql":
        return insert_rows(model, columns, rows_of(data), meanwhile=meanwhile)
    with paused_gc():
        return copy_binary(model._meta.db_table, columns, data, meanwhile)


def copy_binary(table, columns, data, meanwhile=None):
    """Binary COPY of column-wise `data` into `table` (PostgreSQL), in the caller's transaction;
    returns `meanwhile()`'s result, run once every row has been handed over."""
    qn = connection.ops.quote_name
    statement = f"COPY {qn(table)} ({', '.join(qn(c) for c in columns)}) FROM STDIN (FORMAT BINARY)"
    with connection.cursor() as cursor, connection.wrap_database_errors:
        # Binary COPY needs each column's exact type, as the catalogue has it.
        cursor.execute(
            "SELECT attname, format_type(atttypid, NULL) FROM pg_attribute "
            "WHERE attrelid = %s::regclass AND attnum > 0 AND NOT attisdropped",
            [table],
        )
        types = dict(cursor.fetchall())
        pg_cursor = cursor.cursor
        with pg_cursor.copy(statement, writer=QueuedLibpqWriter(pg_cursor)) as copy:
            copy.set_types([types[c] for c in columns])
            _write_binary_rows(copy, rows_of(data))
            return meanwhile() if meanwhile else None


# COPY's binary format (PostgreSQL's documentation, "COPY", "Binary Format"): a signature (no
# flags, no header extension), the rows, and -1 as the trailer.
_SIGNATURE = b"PGCOPY\n\xff\r\n\x00" + bytes(8)
_TRAILER = b"\xff\xff"
_ROWS_PER_WRITE = 8192


def _write_binary_rows(copy, rows):
    """Hand `rows` to `copy` (binary, its types set) a few thousand at a time.

    Each row is formatted by psycopg's own C formatter, the one `copy.write_row` calls, but
    mapped over the rows from C: write_row adds two Python calls per row, about 0.08 s of CPU per
    100k rows (docs/performance.md, "Issue 25: the import's and prepare's database side").
    Building the fields column by column with struct was slower than either. The blocks
    carry the signature and the trailer themselves (psycopg adds them only in row mode).
    """
    transformer = copy.formatter.transformer
    copy.write(_SIGNATURE)
    while True:
        block = bytearray()
        deque(map(format_row_binary, islice(rows, _ROWS_PER_WRITE), repeat(transformer),
                  repeat(block)), maxlen=0)  # fmt: skip
        if not block:
            break
        copy.write(block)
    copy.write(_TRAILER)


def update_binary(model, pk, values):
    """`UPDATE` the binary columns `values` ({attname: bytes or None}) of `model`'s row `pk`,
    inside the caller's transaction; sent in binary on PostgreSQL.

    Django's PostgreSQL cursor binds parameters on the client, so a bytes value travels as a
    hex literal twice its size, which psycopg writes and PostgreSQL decodes again: for a
    snapshot's compressed document and compact form, a measurable part of the import
    (docs/performance.md, "Issue 25: the import, Python and PostgreSQL at once").
    """
    if connection.vendor != "postgresql":
        model.objects.filter(pk=pk).update(**values)
        return
    qn = connection.ops.quote_name
    names = list(values)
    statement = (
        f"UPDATE {qn(model._meta.db_table)} SET "
        + ", ".join(f"{qn(name)} = %b" for name in names)
        + f" WHERE {qn(model._meta.pk.column)} = %s"
    )
    connection.ensure_connection()
    # A server-binding cursor of the same connection (and so of the same transaction): only it
    # sends parameters in binary.
    with connection.wrap_database_errors, Cursor(connection.connection) as cursor:
        cursor.execute(statement, [*(values[name] for name in names), pk])
