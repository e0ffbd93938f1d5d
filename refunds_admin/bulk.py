"""Writing many rows at once: COPY on PostgreSQL, bulk_create elsewhere (SQLite in development).

A 100k-entry snapshot or proposal is written in well under a second with COPY; `bulk_create`
costs several seconds on PostgreSQL, which the staff member would wait for.
"""

import gc
import re
import secrets
import threading
from collections.abc import Sequence
from itertools import repeat

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


# --------------------------------------------------------------------------------------------
# Rows given column by column, sent as binary COPY
# --------------------------------------------------------------------------------------------
#
# The engine holds a proposal's lines (and a snapshot's entries) as columns, one list per
# field. They go to PostgreSQL in COPY's binary format: integers travel as 8 bytes instead of
# digits PostgreSQL must parse again, and text needs no escaping. Measured on 120k lines:
# 0.30-0.43 s, against 0.46-0.8 s for the text format (psycopg's write_row, or text built
# column by column in Python: PostgreSQL's parsing of the digits is the larger half).


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
    gc_was_enabled = gc.isenabled()
    gc.disable()
    try:
        return _copy_binary(model._meta.db_table, columns, data, meanwhile)
    finally:
        if gc_was_enabled:
            gc.enable()


def _copy_binary(table, columns, data, meanwhile):
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
            write_row = copy.write_row
            for row in rows_of(data):
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


# --------------------------------------------------------------------------------------------
# One partition per parent row, indexed after the COPY (PostgreSQL)
# --------------------------------------------------------------------------------------------
#
# A proposal's 100k lines are written once and read many times (the breakdown pages sort and
# search them by six keys). Inserting them into a table that already carries those indexes
# maintains each index row by row, in random key order: about 0.3 s per index per 100k rows,
# most of the time of preparing a proposal. A fresh table indexed after the COPY sorts each key
# once instead. So the line table is partitioned by proposal (migration proposals/0005): each proposal's
# lines are copied into a bare table of their own, indexed, then attached as its partition;
# preparing again swaps the partition instead of deleting 100k index entries one by one.

_INDEX_DEF = re.compile(r"^CREATE (UNIQUE )?INDEX \S+ ON ONLY \S+ (USING .*)$")


def partition_bound(cursor, table, key):
    """The partitions of `table` that hold `key` (usually one), by name."""
    cursor.execute(
        """
        SELECT c.relname FROM pg_inherits i
        JOIN pg_class c ON c.oid = i.inhrelid
        WHERE i.inhparent = %s::regclass
          AND pg_get_expr(c.relpartbound, c.oid) = %s
        """,
        [table, f"FOR VALUES IN ('{int(key)}')"],
    )
    return [name for (name,) in cursor.fetchall()]


def copy_into_partition(model, key_column, key, columns, data, *, meanwhile=None, local_indexes=()):
    """PostgreSQL: write the rows given column by column in `data` (see insert_columns) as the
    whole partition of `model`'s table for `key` (replacing the one it had), inside the caller's
    transaction. Returns `meanwhile()`'s result.

    The rows go into a bare table (the parent's columns, defaults and checks, plus a check that
    pins `key_column` to `key`, so that attaching it needs no scan). Its indexes (the parent's,
    and `local_indexes`, its own) are built after the COPY, each from one sort, and its
    statistics gathered, while this thread runs `meanwhile` (pure Python work such as a
    proposal's fingerprint: it must not use the database) on the other core. The old partition,
    if any, is dropped and the new one attached at the very end, so that the parent is locked
    only for that moment. Nothing else can refer to the rows: the caller holds the parent row
    (`key`) locked and wrote the check pinning it.
    """
    table = model._meta.db_table
    qn = connection.ops.quote_name
    key = int(key)
    part = f"{table}_p{key}_{secrets.token_hex(3)}"
    gc_was_enabled = gc.isenabled()
    gc.disable()
    try:
        with connection.cursor() as cursor, connection.wrap_database_errors:
            cursor.execute(
                f"CREATE TABLE {qn(part)} (LIKE {qn(table)} INCLUDING DEFAULTS INCLUDING "
                f"CONSTRAINTS, CONSTRAINT {qn(part + '_key')} CHECK ({qn(key_column)} = {key}))"
            )
            _copy_binary(part, columns, data, None)
            statements = _indexes_like(cursor, table, part) + [
                f"CREATE INDEX {qn(f'{part}_local{n}')} ON {qn(part)} {spec}"
                for n, spec in enumerate(local_indexes)
            ]
            # Statistics now, not whenever autovacuum comes by: without them the planner takes
            # `proposal_id = X` to match a few hundred of the partition's rows (it matches all)
            # and sorts 100k lines for a keyset page (60 ms instead of 0.2 ms for "sorted by
            # chips"; 100 ms for a search). A small sample is enough to learn that, and which
            # ids are unique: 3,000 rows instead of the default 30,000 (35 ms instead of 0.45 s
            # for 120k lines; autovacuum refines them later). The SET ends with the transaction.
            statements += ["SET LOCAL default_statistics_target = 10", f"ANALYZE {qn(part)}"]
            result = _execute_meanwhile(statements, meanwhile)
            # The tables' owner drops the old partition and attaches the new one (the app's
            # database role cannot: proposals migration 0011).
            cursor.execute("SELECT refunds_attach_partition(%s, %s, %s)", [table, part, key])
        return result
    finally:
        if gc_was_enabled:
            gc.enable()


def _execute_meanwhile(statements, meanwhile):
    """Run `statements` in this connection's transaction from a second thread while this one
    runs `meanwhile()`; return its result.

    Building a partition's indexes keeps PostgreSQL busy for about half a second per 100k rows,
    during which Python would only wait: the second thread waits instead (psycopg releases the
    GIL while it waits, and its connection lock keeps the two threads from mixing statements),
    and `meanwhile` runs on the other core. These statements bypass Django's cursor wrappers
    (query logging), which live in the first thread.
    """
    if meanwhile is None:
        with connection.cursor() as cursor:
            for sql in statements:
                cursor.execute(sql)
        return None
    pg = connection.connection  # the psycopg connection under Django's wrapper
    failed: list[BaseException] = []

    def build() -> None:
        try:
            for sql in statements:
                pg.execute(sql)
        except BaseException as exc:  # re-raised in the caller's thread, below
            failed.append(exc)

    thread = threading.Thread(target=build, name="partition-indexes")
    thread.start()
    try:
        result = meanwhile()
    finally:
        thread.join()
    if failed:
        raise failed[0]  # a psycopg error: the caller's wrap_database_errors makes it Django's
    return result


def _indexes_like(cursor, parent, part):
    """SQL for the indexes and unique constraints of the partitioned `parent`, on the bare table
    `part`, so that attaching `part` adopts them instead of building them under the parent's
    lock."""
    qn = connection.ops.quote_name
    cursor.execute(
        """
        SELECT pg_get_indexdef(x.indexrelid), con.contype, pg_get_constraintdef(con.oid)
        FROM pg_index x LEFT JOIN pg_constraint con ON con.conindid = x.indexrelid
            AND con.conrelid = x.indrelid
        WHERE x.indrelid = %s::regclass ORDER BY x.indexrelid
        """,
        [parent],
    )
    statements = []
    for n, (indexdef, contype, condef) in enumerate(cursor.fetchall()):
        name = qn(f"{part}_{n}")
        if contype in ("p", "u"):
            statements.append(f"ALTER TABLE {qn(part)} ADD CONSTRAINT {name} {condef}")
            continue
        m = _INDEX_DEF.match(indexdef)
        if m is None:  # not a shape we know: attaching builds it (correct, only slower)
            continue
        statements.append(f"CREATE {m.group(1) or ''}INDEX {name} ON {qn(part)} {m.group(2)}")
    return statements


def _build_indexes_like(cursor, parent, part):
    for sql in _indexes_like(cursor, parent, part):
        cursor.execute(sql)


def partition_table(schema_editor, table, key_column):
    """Migration step (PostgreSQL only): turn `table` into a table partitioned by list of
    `key_column`, with one partition per existing key and an empty default partition.

    The model does not change: indexes and constraints keep their names, the primary key becomes
    (key_column, id) because a partitioned table's must hold the partition key, and ids keep
    coming from one sequence. The table's own triggers (the statement-level foreign key, and any
    other statement trigger such as one refusing changes) move to the new parent.
    """
    connection = schema_editor.connection
    if connection.vendor != "postgresql":
        return
    old = f"{table}_unpartitioned"
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT pg_get_triggerdef(oid) FROM pg_trigger WHERE tgrelid = %s::regclass "
            "AND NOT tgisinternal ORDER BY tgname",
            [table],
        )
        triggers = [d.replace(f" ON public.{table} ", f" ON {table} ") for (d,) in cursor]
        cursor.execute(f"ALTER TABLE {table} RENAME TO {old}")
        cursor.execute(f"ALTER TABLE {old} ALTER id DROP IDENTITY")
        cursor.execute(
            """
            SELECT c.relname, pg_get_indexdef(x.indexrelid), con.contype,
                   pg_get_constraintdef(con.oid)
            FROM pg_index x JOIN pg_class c ON c.oid = x.indexrelid
            LEFT JOIN pg_constraint con ON con.conindid = x.indexrelid AND con.conrelid = x.indrelid
            WHERE x.indrelid = %s::regclass ORDER BY c.relname
            """,
            [old],
        )
        indexes = cursor.fetchall()
        for n, (name, _, contype, _) in enumerate(indexes):  # free the names for the parent
            if contype == "p":
                cursor.execute(f'ALTER TABLE {old} DROP CONSTRAINT "{name}"')
            else:
                cursor.execute(f'ALTER INDEX "{name}" RENAME TO "{old}_{n}"')
        cursor.execute(
            f"CREATE TABLE {table} (LIKE {old} INCLUDING DEFAULTS INCLUDING CONSTRAINTS) "
            f"PARTITION BY LIST ({key_column})"
        )
        cursor.execute(f"CREATE SEQUENCE {table}_id_seq OWNED BY {table}.id")
        cursor.execute(f"ALTER TABLE {table} ALTER id SET DEFAULT nextval('{table}_id_seq')")
        cursor.execute(
            f"SELECT setval('{table}_id_seq', COALESCE(MAX(id), 0) + 1, false) FROM {old}"
        )
        for name, indexdef, contype, condef in indexes:
            if contype == "p":
                cursor.execute(
                    f'ALTER TABLE {table} ADD CONSTRAINT "{name}" PRIMARY KEY ({key_column}, id)'
                )
            elif contype == "u":
                cursor.execute(f'ALTER TABLE {table} ADD CONSTRAINT "{name}" {condef}')
            else:
                cursor.execute(re.sub(r" ON (\S+\.)?" + old + " ", f" ON {table} ", indexdef))
        cursor.execute(f"CREATE TABLE {table}_default PARTITION OF {table} DEFAULT")
        cursor.execute(f"SELECT DISTINCT {key_column} FROM {old} ORDER BY 1")
        for (key,) in cursor.fetchall():
            part = f"{table}_p{int(key)}_0"
            cursor.execute(
                f"CREATE TABLE {part} (LIKE {table} INCLUDING DEFAULTS INCLUDING CONSTRAINTS, "
                f"CONSTRAINT {part}_key CHECK ({key_column} = {int(key)}))"
            )
            cursor.execute(f"INSERT INTO {part} SELECT * FROM {old} WHERE {key_column} = %s", [key])
            _build_indexes_like(cursor, table, part)
            cursor.execute(
                f"ALTER TABLE {table} ATTACH PARTITION {part} FOR VALUES IN ({int(key)})"
            )
        cursor.execute(f"DROP TABLE {old}")
        for trigger in triggers:
            cursor.execute(trigger)
