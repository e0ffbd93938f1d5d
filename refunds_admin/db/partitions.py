"""One partition per parent row, indexed after the COPY (PostgreSQL).

A proposal's 100k lines (a snapshot's entries) are written once and read many times: the
breakdown pages sort and search them by six keys. Inserting them into a table that already
carries those indexes maintains each index row by row, in random key order, which was most of
the time of preparing a proposal (docs/performance.md, "Partitions"). A fresh table indexed after
the COPY sorts each key once instead. So the line and entry tables are partitioned by their
parent (migrations proposals/0005, tournaments/0004): each parent's rows are copied into a bare
table of their own, indexed, then attached as its partition; preparing again swaps the partition
instead of deleting 100k index entries one by one.
"""

import re
import secrets

from django.db import connection

from refunds_admin.payouts import paused_gc

from .beside import run_beside
from .copy import copy_binary

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
    with paused_gc(), connection.cursor() as cursor, connection.wrap_database_errors:
        cursor.execute(
            f"CREATE TABLE {qn(part)} (LIKE {qn(table)} INCLUDING DEFAULTS INCLUDING "
            f"CONSTRAINTS, CONSTRAINT {qn(part + '_key')} CHECK ({qn(key_column)} = {key}))"
        )
        copy_binary(part, columns, data)
        statements = _indexes_like(cursor, table, part) + [
            f"CREATE INDEX {qn(f'{part}_local{n}')} ON {qn(part)} {spec}"
            for n, spec in enumerate(local_indexes)
        ]
        # Statistics now, not whenever autovacuum comes by: without them the planner takes
        # `proposal_id = X` to match a few hundred of the partition's rows (it matches all)
        # and sorts the whole proposal for a keyset page. A small sample is enough to learn
        # that, and which ids are unique (docs/performance.md, "Partitions"; autovacuum refines
        # the statistics later). The SET ends with the transaction.
        statements += ["SET LOCAL default_statistics_target = 10", f"ANALYZE {qn(part)}"]
        result = _execute_meanwhile(statements, meanwhile)
        # The tables' owner drops the old partition and attaches the new one (the app's
        # database role cannot: proposals migration 0011, refunds_attach_partition).
        cursor.execute("SELECT refunds_attach_partition(%s, %s, %s)", [table, part, key])
    return result


def _execute_meanwhile(statements, meanwhile):
    """Run `statements` in this connection's transaction from a second thread while this one
    runs `meanwhile()`; return its result.

    Building a partition's indexes keeps PostgreSQL busy for a while (docs/performance.md,
    "Partitions"), during which Python would only wait: the second thread waits instead (psycopg
    releases the GIL while it waits, and its connection lock keeps the two threads from mixing
    statements), and `meanwhile` runs on the other core. These statements bypass Django's cursor
    wrappers (query logging), which live in the first thread.

    Safe under a failure in either thread (tests/services/test_db_face.py, on PostgreSQL): this thread
    always waits for the second before going on, so the connection is never used by both once
    this returns or raises; whichever fails, the error reaches the caller, whose transaction
    rolls back the bare table and its indexes, and the connection is usable afterwards.
    `meanwhile` must not touch the database.
    """
    if meanwhile is None:
        with connection.cursor() as cursor:
            for sql in statements:
                cursor.execute(sql)
        return None
    pg = connection.connection  # the psycopg connection under Django's wrapper

    def build() -> None:
        for sql in statements:
            pg.execute(sql)

    # A psycopg error is raised as it is: the caller's wrap_database_errors makes it Django's.
    return run_beside(build, meanwhile)[1]


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
