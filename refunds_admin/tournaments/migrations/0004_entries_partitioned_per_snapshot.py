"""Snapshot entries: one partition per snapshot version, indexed after its COPY
(docs/performance.md).

PostgreSQL only; SQLite keeps the plain table. The model does not change (see
refunds_admin.db.partitions.partition_table). Reversing leaves the partitioned table in place:
to Django it is the same table.
"""

from django.db import migrations

from refunds_admin.db.partitions import partition_table


def partition(apps, schema_editor):
    partition_table(schema_editor, "tournaments_entry", "snapshot_id")


class Migration(migrations.Migration):
    dependencies = [
        ("tournaments", "0003_entry_email"),
    ]

    operations = [
        migrations.RunPython(partition, migrations.RunPython.noop, elidable=False),
    ]
