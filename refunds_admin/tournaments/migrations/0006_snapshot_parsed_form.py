"""Snapshot.parsed: the validated document in a compact form (payouts/stored.py), so that a
proposal is prepared without parsing the document again. Existing snapshots keep NULL and are
parsed from their document, as before.

On PostgreSQL the value is stored as it is (STORAGE EXTERNAL): it is already compressed, and
PostgreSQL would only spend time trying again.
"""

from django.db import migrations, models

from refunds_admin.db.ddl import postgres_only


class Migration(migrations.Migration):
    dependencies = [
        ("tournaments", "0005_prize_places_copy_friendly"),
    ]

    operations = [
        migrations.AddField(
            model_name="snapshot",
            name="parsed",
            field=models.BinaryField(editable=False, null=True),
        ),
        migrations.RunPython(
            postgres_only("ALTER TABLE tournaments_snapshot ALTER parsed SET STORAGE EXTERNAL"),
            migrations.RunPython.noop,
        ),
    ]
