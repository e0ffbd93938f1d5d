"""Prize places: the foreign key checked once per COPY, as for entries (refunds_admin/db/).

A prize table sent as one row per paid place has tens of thousands of rows; a row-by-row foreign
key check costs several microseconds each. No separate index on snapshot_id: the unique
(snapshot, place) index starts with it.
"""

import django.db.models.deletion
from django.db import migrations, models

from refunds_admin.db.ddl import postgres_only, statement_level_foreign_key

CREATE, DROP = statement_level_foreign_key(
    "tournaments_prizeplace", "snapshot_id", "tournaments_snapshot"
)


class Migration(migrations.Migration):
    dependencies = [
        ("tournaments", "0004_entries_partitioned_per_snapshot"),
    ]

    operations = [
        migrations.AlterField(
            model_name="prizeplace",
            name="snapshot",
            field=models.ForeignKey(
                db_constraint=False,
                db_index=False,
                on_delete=django.db.models.deletion.CASCADE,
                related_name="prize_places",
                to="tournaments.snapshot",
            ),
        ),
        migrations.RunPython(postgres_only(CREATE), postgres_only(DROP)),
    ]
