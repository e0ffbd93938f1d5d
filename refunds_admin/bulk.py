"""Writing many rows at once: COPY on PostgreSQL, bulk_create elsewhere (SQLite in development).

A 100k-entry snapshot or proposal is written in well under a second with COPY; `bulk_create`
costs several seconds on PostgreSQL, which the staff member would wait for.
"""

import gc

from django.db import connection


def insert_rows(model, columns, rows):
    """Insert `rows` (tuples in the order of `columns`, which are field attnames such as
    `snapshot_id`) into `model`'s table, inside the caller's transaction."""
    gc_was_enabled = gc.isenabled()
    gc.disable()  # hundreds of thousands of small tuples, no cycles: the collector only slows us
    try:
        if connection.vendor == "postgresql":
            _copy(model._meta.db_table, columns, rows)
        else:
            model.objects.bulk_create(
                (model(**dict(zip(columns, row, strict=True))) for row in rows), batch_size=2000
            )
    finally:
        if gc_was_enabled:
            gc.enable()


def _copy(table, columns, rows):
    quoted = ", ".join(connection.ops.quote_name(c) for c in columns)
    with connection.cursor() as cursor:
        # `cursor.cursor` is the psycopg 3 cursor under Django's wrapper.
        with cursor.cursor.copy(
            f"COPY {connection.ops.quote_name(table)} ({quoted}) FROM STDIN"
        ) as copy:
            write_row = copy.write_row
            for row in rows:
                write_row(row)
