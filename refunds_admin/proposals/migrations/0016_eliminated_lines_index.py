"""Each proposal's partition gets the "eliminated only" index of models.LINE_PARTITION_INDEXES,
(position) WHERE status = 'eliminated': the breakdown's "eliminated only" page then reads the
eliminated lines after its cursor instead of walking every active line before them. New
partitions get it at prepare (db.copy_into_partition builds every index of the list). PostgreSQL
only: SQLite has no partitions.

Built CONCURRENTLY, one partition at a time and outside a transaction, so that staff keep
reading the breakdowns and preparing proposals while the existing partitions are indexed. A build
that was interrupted leaves an invalid index behind: it is dropped and built again on the next
run.
"""

from django.db import migrations

SPEC = "(position) WHERE status = 'eliminated'"
# Its number in models.LINE_PARTITION_INDEXES on the day of this migration.
NUMBER = 3


def _partitions(schema_editor):
    """The names of the lines' partitions (not the default one, which holds no proposal), each
    with whether it already has a valid index of this migration."""
    with schema_editor.connection.cursor() as cursor:
        cursor.execute(
            "SELECT c.relname, x.indisvalid FROM pg_inherits i "
            "JOIN pg_class c ON c.oid = i.inhrelid "
            "LEFT JOIN pg_class ic ON ic.relname = c.relname || %s "
            "LEFT JOIN pg_index x ON x.indexrelid = ic.oid "
            "WHERE i.inhparent = 'proposals_payoutline'::regclass "
            "AND pg_get_expr(c.relpartbound, c.oid) <> 'DEFAULT' ORDER BY c.relname",
            [f"_local{NUMBER}"],
        )
        return cursor.fetchall()


def forward(apps, schema_editor):
    if schema_editor.connection.vendor != "postgresql":
        return
    for part, valid in _partitions(schema_editor):
        if valid:
            continue
        if valid is False:  # an interrupted build
            schema_editor.execute(f'DROP INDEX CONCURRENTLY IF EXISTS "{part}_local{NUMBER}"')
        schema_editor.execute(
            f'CREATE INDEX CONCURRENTLY IF NOT EXISTS "{part}_local{NUMBER}" ON "{part}" {SPEC}'
        )


def backward(apps, schema_editor):
    if schema_editor.connection.vendor != "postgresql":
        return
    for part, _ in _partitions(schema_editor):
        schema_editor.execute(f'DROP INDEX CONCURRENTLY IF EXISTS "{part}_local{NUMBER}"')


class Migration(migrations.Migration):
    atomic = False  # CREATE INDEX CONCURRENTLY cannot run in a transaction

    dependencies = [("proposals", "0015_line_key_is_the_position")]

    operations = [migrations.RunPython(forward, backward, elidable=False)]
