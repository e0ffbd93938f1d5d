"""Proposal lines: one partition per proposal, indexed after its COPY (docs/performance.md).

PostgreSQL only; SQLite keeps the plain table. The model does not change: Django still sees the
`id` primary key (the database's primary key is (proposal_id, id), as a partitioned table's
must include the partition key; ids still come from one sequence, so they stay unique). The
indexes and constraints keep their names. Existing lines move into a partition per proposal;
a default partition catches rows written straight into the parent (none are, by the services).

Reversing leaves the partitioned table in place: to Django it is the same table.
"""

from django.db import migrations

from refunds_admin.bulk import statement_level_foreign_key

TABLE = "proposals_payoutline"
OLD = "proposals_payoutline_unpartitioned"
FK_CREATE, FK_DROP = statement_level_foreign_key(TABLE, "proposal_id", "proposals_payoutproposal")


def partition(apps, schema_editor):
    connection = schema_editor.connection
    if connection.vendor != "postgresql":
        return
    from refunds_admin.bulk import _build_indexes_like

    with connection.cursor() as cursor:
        cursor.execute(FK_DROP)
        cursor.execute(f"ALTER TABLE {TABLE} RENAME TO {OLD}")
        cursor.execute(f"ALTER TABLE {OLD} ALTER id DROP IDENTITY")
        # The indexes and constraints as Django named them, to recreate on the parent.
        cursor.execute(
            """
            SELECT c.relname, pg_get_indexdef(x.indexrelid), con.contype,
                   pg_get_constraintdef(con.oid)
            FROM pg_index x JOIN pg_class c ON c.oid = x.indexrelid
            LEFT JOIN pg_constraint con ON con.conindid = x.indexrelid AND con.conrelid = x.indrelid
            WHERE x.indrelid = %s::regclass ORDER BY c.relname
            """,
            [OLD],
        )
        indexes = cursor.fetchall()
        for n, (name, _, contype, _) in enumerate(indexes):
            if contype == "p":
                cursor.execute(f'ALTER TABLE {OLD} DROP CONSTRAINT "{name}"')
            else:
                cursor.execute(f'ALTER INDEX "{name}" RENAME TO "{OLD}_{n}"')
        cursor.execute(
            f"CREATE TABLE {TABLE} (LIKE {OLD} INCLUDING DEFAULTS INCLUDING CONSTRAINTS) "
            "PARTITION BY LIST (proposal_id)"
        )
        cursor.execute(f"CREATE SEQUENCE {TABLE}_id_seq OWNED BY {TABLE}.id")
        cursor.execute(f"ALTER TABLE {TABLE} ALTER id SET DEFAULT nextval('{TABLE}_id_seq')")
        cursor.execute(f"SELECT setval('{TABLE}_id_seq', COALESCE(MAX(id), 0) + 1, false) FROM {OLD}")
        for name, indexdef, contype, condef in indexes:
            if contype == "p":
                cursor.execute(f'ALTER TABLE {TABLE} ADD CONSTRAINT "{name}" PRIMARY KEY (proposal_id, id)')
            elif contype == "u":
                cursor.execute(f'ALTER TABLE {TABLE} ADD CONSTRAINT "{name}" {condef}')
            else:
                cursor.execute(indexdef.replace(f" ON public.{OLD} ", f" ON {TABLE} "))
        cursor.execute(f"CREATE TABLE {TABLE}_default PARTITION OF {TABLE} DEFAULT")
        cursor.execute(f"SELECT DISTINCT proposal_id FROM {OLD} ORDER BY 1")
        for (key,) in cursor.fetchall():
            part = f"{TABLE}_p{key}_0"
            cursor.execute(
                f"CREATE TABLE {part} (LIKE {TABLE} INCLUDING DEFAULTS INCLUDING CONSTRAINTS, "
                f"CONSTRAINT {part}_key CHECK (proposal_id = {int(key)}))"
            )
            cursor.execute(f"INSERT INTO {part} SELECT * FROM {OLD} WHERE proposal_id = %s", [key])
            _build_indexes_like(cursor, TABLE, part)
            cursor.execute(f"ALTER TABLE {TABLE} ATTACH PARTITION {part} FOR VALUES IN ({int(key)})")
        cursor.execute(f"DROP TABLE {OLD}")
        cursor.execute(FK_CREATE)


class Migration(migrations.Migration):
    dependencies = [
        ("proposals", "0003_payoutline_capped_index"),
    ]

    operations = [
        migrations.RunPython(partition, migrations.RunPython.noop, elidable=False),
    ]
