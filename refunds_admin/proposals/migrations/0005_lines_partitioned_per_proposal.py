"""Proposal lines: one partition per proposal, indexed after its COPY (docs/performance.md).

PostgreSQL only; SQLite keeps the plain table. The model does not change (see
refunds_admin.db.partitions.partition_table). Reversing leaves the partitioned table in place:
to Django it is the same table.
"""

from django.db import migrations

from refunds_admin.db.partitions import partition_table


def partition(apps, schema_editor):
    partition_table(schema_editor, "proposals_payoutline", "proposal_id")


class Migration(migrations.Migration):
    dependencies = [
        ("proposals", "0004_figures_and_screen_name_search"),
    ]

    operations = [
        migrations.RunPython(partition, migrations.RunPython.noop, elidable=False),
    ]
