"""Writing many rows at once: COPY on PostgreSQL, bulk_create elsewhere (SQLite in development).

A 100k-entry snapshot or proposal is written in well under a second with COPY; `bulk_create`
costs several seconds on PostgreSQL, which the staff member would wait for.
"""

import gc
import re
import secrets
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
# COPY text built column by column
# --------------------------------------------------------------------------------------------
#
# psycopg's write_row formats one row at a time in Python: about 3 µs a row, 0.4 s for a
# 120k-line proposal, more than PostgreSQL takes to store them. The engine already holds the
# rows as columns (one list per field), so the COPY text is built the same way: each column is
# turned into text by one C-level pass (str over integers, a table lookup for booleans and
# nulls), then the rows are joined with tabs and newlines. Chunks keep the memory flat.

_CHUNK = 20_000  # rows per piece of COPY text (about 2 MB)
_NULL = r"\N"
_NULL_OR_TEXT = {None: _NULL}
_BOOL_TEXT = {True: "t", False: "f"}
# COPY's text format gives a meaning to these four characters; anything else goes as it is.
_SPECIAL = re.compile(r"[\\\t\n\r]")
_ESCAPES = {"\\": "\\\\", "\t": "\\t", "\n": "\\n", "\r": "\\r"}


class Same:
    """A column holding one value on every row (the partition key): sent as text once per row
    without building a list of it."""

    def __init__(self, value: object) -> None:
        self.value = value


def _escape(text: str) -> str:
    return _SPECIAL.sub(lambda m: _ESCAPES[m.group()], text)


def _column_text(values: Sequence[object]) -> "Sequence[str] | map[str]":
    """The COPY text of one column (a slice of it), in one C-level pass where the types allow."""
    kinds = set(map(type, values))
    if kinds <= {int}:
        return map(str, values)
    if kinds <= {int, type(None)}:
        return map(_NULL_OR_TEXT.get, values, map(str, values))
    if kinds <= {bool}:
        return map(_BOOL_TEXT.__getitem__, values)
    if kinds <= {str}:
        if _SPECIAL.search("".join(values)):  # a backslash in a name: rare, escape one by one
            return list(map(_escape, values))  # type: ignore[arg-type]
        return values  # type: ignore[return-value]
    return [_NULL if v is None else _escape(_text(v)) for v in values]


def _text(value: object) -> str:
    if isinstance(value, bool):
        return _BOOL_TEXT[value]
    return str(value)


def copy_text_chunks(data: Sequence["Sequence[object] | Same"], rows: int):
    """The COPY text (bytes) of `rows` rows given column by column, in pieces of _CHUNK rows."""
    for start in range(0, rows, _CHUNK):
        stop = min(start + _CHUNK, rows)
        texts = [
            repeat(_text(col.value) if col.value is not None else _NULL, stop - start)
            if isinstance(col, Same)
            else _column_text(col[start:stop] if start or stop < len(col) else col)
            for col in data
        ]
        yield ("\n".join(map("\t".join, zip(*texts))) + "\n").encode()


def row_count(data: Sequence["Sequence[object] | Same"]) -> int:
    return next(len(col) for col in data if not isinstance(col, Same))


def rows_of(data: Sequence["Sequence[object] | Same"]):
    """The rows of column-wise `data` (for bulk_create where there is no COPY)."""
    return zip(*(repeat(col.value) if isinstance(col, Same) else col for col in data))


def insert_columns(model, columns, data, *, meanwhile=None):
    """insert_rows for rows given column by column (`data`: one sequence, or Same, per name in
    `columns`): COPY text built by column on PostgreSQL."""
    if connection.vendor != "postgresql":
        return insert_rows(model, columns, rows_of(data), meanwhile=meanwhile)
    gc_was_enabled = gc.isenabled()
    gc.disable()
    try:
        return _copy_columns(model._meta.db_table, columns, data, meanwhile)
    finally:
        if gc_was_enabled:
            gc.enable()


def _copy_columns(table, columns, data, meanwhile):
    quoted = ", ".join(connection.ops.quote_name(c) for c in columns)
    statement = f"COPY {connection.ops.quote_name(table)} ({quoted}) FROM STDIN"
    with connection.cursor() as cursor, connection.wrap_database_errors:
        pg_cursor = cursor.cursor
        with pg_cursor.copy(statement, writer=QueuedLibpqWriter(pg_cursor)) as copy:
            for chunk in copy_text_chunks(data, row_count(data)):
                copy.write(chunk)
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
    whole partition of `model`'s table for `key` (replacing
    the one it had), inside the caller's transaction. Returns `meanwhile()`'s result (see
    insert_rows).

    The rows go into a bare table (the parent's columns, defaults and checks, plus a check that
    pins `key_column` to `key`, so that attaching it needs no scan); its indexes are built after
    the COPY, each from one sort, and its statistics gathered; the old partition, if any, is
    dropped and the new one attached
    at the very end, so that the parent is locked only for that moment. Nothing else can refer
    to the rows: the caller holds the parent row (`key`) locked and wrote the check pinning it.
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
            result = _copy_columns(part, columns, data, meanwhile)
            _build_indexes_like(cursor, table, part)
            for n, spec in enumerate(local_indexes):  # the partition's own (see the caller)
                cursor.execute(f"CREATE INDEX {qn(f'{part}_local{n}')} ON {qn(part)} {spec}")
            # Statistics now, not whenever autovacuum comes by: without them the planner takes
            # `proposal_id = X` to match a few hundred of the partition's rows (it matches all)
            # and sorts 100k lines for a keyset page (60 ms instead of 0.2 ms for "sorted by
            # chips"; 100 ms for a search). A small sample is enough to learn that, and which
            # ids are unique: 3,000 rows instead of the default 30,000 (35 ms instead of 0.45 s
            # for 120k lines; autovacuum refines them later).
            cursor.execute("SET LOCAL default_statistics_target = 10")
            cursor.execute(f"ANALYZE {qn(part)}")  # (the SET ends with the transaction)
            for old in partition_bound(cursor, table, key):
                cursor.execute(f"DROP TABLE {qn(old)}")
            cursor.execute(
                f"ALTER TABLE {qn(table)} ATTACH PARTITION {qn(part)} FOR VALUES IN ({key})"
            )
        return result
    finally:
        if gc_was_enabled:
            gc.enable()


def _build_indexes_like(cursor, parent, part):
    """On the bare table `part`, the indexes and unique constraints of the partitioned `parent`,
    so that attaching `part` adopts them instead of building them under the parent's lock."""
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
    for n, (indexdef, contype, condef) in enumerate(cursor.fetchall()):
        name = qn(f"{part}_{n}")
        if contype in ("p", "u"):
            cursor.execute(f"ALTER TABLE {qn(part)} ADD CONSTRAINT {name} {condef}")
            continue
        m = _INDEX_DEF.match(indexdef)
        if m is None:  # not a shape we know: attaching builds it (correct, only slower)
            continue
        cursor.execute(f"CREATE {m.group(1) or ''}INDEX {name} ON {qn(part)} {m.group(2)}")


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
