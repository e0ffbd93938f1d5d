"""Writing many rows at once: COPY on PostgreSQL, bulk_create elsewhere (SQLite in development).

A 100k-entry snapshot or proposal is written in well under a second with COPY; `bulk_create`
costs several seconds on PostgreSQL, which the staff member would wait for.
"""

import gc

from django.db import connection
from psycopg.copy import QueuedLibpqWriter


def insert_rows(model, columns, rows, *, meanwhile=None):
    """Insert `rows` (tuples in the order of `columns`, which are field attnames such as
    `snapshot_id`) into `model`'s table, inside the caller's transaction.

    `meanwhile`, if given, is called once every row has been handed over, while PostgreSQL is
    still writing them and their indexes (a few hundred milliseconds of CPU on the other core):
    work such as a proposal's fingerprint overlaps the wait. Its result is returned.
    """
    gc_was_enabled = gc.isenabled()
    gc.disable()  # hundreds of thousands of small tuples, no cycles: the collector only slows us
    try:
        if connection.vendor == "postgresql":
            return _copy(model._meta.db_table, columns, rows, meanwhile)
        model.objects.bulk_create(
            (model(**dict(zip(columns, row, strict=True))) for row in rows), batch_size=2000
        )
        return meanwhile() if meanwhile else None
    finally:
        if gc_was_enabled:
            gc.enable()


def _copy(table, columns, rows, meanwhile):
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


def statement_level_foreign_key(child, column, parent):
    """SQL (create, drop) for a foreign key checked once per statement instead of once per row.

    Used for the two tables written 100k rows at a time (entries, proposal lines): a regular
    foreign key runs one check per row (about a second per 100k rows here), this runs one
    set-based check per COPY. Like a foreign key it takes KEY SHARE locks on the parent rows,
    refuses rows whose parent does not exist, and refuses deleting a parent that still has
    rows. PostgreSQL only; SQLite relies on the services.
    """
    name = f"{child}_{column}_exists"
    create = f"""
CREATE FUNCTION {name}() RETURNS trigger AS $$
DECLARE missing bigint;
BEGIN
    PERFORM 1 FROM {parent} WHERE id IN (SELECT DISTINCT {column} FROM new_rows) FOR KEY SHARE;
    SELECT n.{column} INTO missing FROM (SELECT DISTINCT {column} FROM new_rows) n
        LEFT JOIN {parent} p ON p.id = n.{column} WHERE p.id IS NULL LIMIT 1;
    IF FOUND THEN
        RAISE EXCEPTION '{child}.{column} = % does not exist in {parent}', missing
            USING ERRCODE = 'foreign_key_violation';
    END IF;
    RETURN NULL;
END;
$$ LANGUAGE plpgsql;
CREATE TRIGGER {name}_on_insert AFTER INSERT ON {child}
    REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION {name}();
CREATE TRIGGER {name}_on_update AFTER UPDATE ON {child}
    REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION {name}();

CREATE FUNCTION {parent}_keeps_{child}() RETURNS trigger AS $$
BEGIN
    IF EXISTS (SELECT 1 FROM old_rows o JOIN {child} c ON c.{column} = o.id) THEN
        RAISE EXCEPTION '{parent}: rows of {child} still refer to it'
            USING ERRCODE = 'foreign_key_violation';
    END IF;
    RETURN NULL;
END;
$$ LANGUAGE plpgsql;
CREATE TRIGGER {parent}_keeps_{child} AFTER DELETE ON {parent}
    REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION {parent}_keeps_{child}();
"""
    drop = f"""
DROP TRIGGER IF EXISTS {name}_on_insert ON {child};
DROP TRIGGER IF EXISTS {name}_on_update ON {child};
DROP FUNCTION IF EXISTS {name}();
DROP TRIGGER IF EXISTS {parent}_keeps_{child} ON {parent};
DROP FUNCTION IF EXISTS {parent}_keeps_{child}();
"""
    return create, drop


def postgres_only(sql):
    def run(apps, schema_editor):
        if schema_editor.connection.vendor == "postgresql":
            schema_editor.execute(sql, params=None)

    return run
