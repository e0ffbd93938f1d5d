"""Each proposal's partition gets the "eliminated only" index of models.LINE_PARTITION_INDEXES,
(position) WHERE status = 'eliminated': the breakdown's "eliminated only" page then reads the
eliminated lines after its cursor instead of walking every active line before them. New
partitions get it at prepare (db.copy_into_partition builds every index of the list). PostgreSQL
only: SQLite has no partitions.
"""

from django.db import migrations

SPEC = "(position) WHERE status = 'eliminated'"
# Its number in models.LINE_PARTITION_INDEXES on the day of this migration.
NUMBER = 3


def _partitions(schema_editor):
    """The names of the lines' partitions (not the default one, which holds no proposal)."""
    with schema_editor.connection.cursor() as cursor:
        cursor.execute(
            "SELECT c.relname FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid "
            "WHERE i.inhparent = 'proposals_payoutline'::regclass "
            "AND pg_get_expr(c.relpartbound, c.oid) <> 'DEFAULT' ORDER BY c.relname"
        )
        return [name for (name,) in cursor.fetchall()]


def forward(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        for part in _partitions(schema_editor):
            schema_editor.execute(
                f'CREATE INDEX IF NOT EXISTS "{part}_local{NUMBER}" ON "{part}" {SPEC}'
            )


def backward(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        for part in _partitions(schema_editor):
            schema_editor.execute(f'DROP INDEX IF EXISTS "{part}_local{NUMBER}"')


class Migration(migrations.Migration):
    dependencies = [("proposals", "0015_line_key_is_the_position")]

    operations = [migrations.RunPython(forward, backward, elidable=False)]
