"""Snapshot documents are stored compressed by the application (zlib, fastest level), which does
it on another core while the import validates the document; PostgreSQL stores the bytes as they
are (STORAGE EXTERNAL) instead of compressing 14 MB itself while the import waits.
`Snapshot.document` gives the text back, byte for byte. Existing documents are compressed here.
"""

import zlib

from django.db import migrations, models

from refunds_admin.db.ddl import postgres_only


def compress(apps, schema_editor):
    Snapshot = apps.get_model("tournaments", "Snapshot")
    for pk in Snapshot.objects.values_list("pk", flat=True).iterator():
        text = Snapshot.objects.values_list("document", flat=True).get(pk=pk)
        Snapshot.objects.filter(pk=pk).update(
            document_zlib=zlib.compress(text.encode("utf-8"), 1)
        )


def decompress(apps, schema_editor):
    Snapshot = apps.get_model("tournaments", "Snapshot")
    for pk in Snapshot.objects.values_list("pk", flat=True).iterator():
        data = Snapshot.objects.values_list("document_zlib", flat=True).get(pk=pk)
        Snapshot.objects.filter(pk=pk).update(
            document=zlib.decompress(bytes(data)).decode("utf-8")
        )


class Migration(migrations.Migration):
    dependencies = [
        ("tournaments", "0006_snapshot_parsed_form"),
    ]

    operations = [
        migrations.AddField(
            model_name="snapshot",
            name="document_zlib",
            field=models.BinaryField(editable=False, null=True),
        ),
        migrations.AlterField(
            model_name="snapshot",
            name="document",
            field=models.TextField(null=True),
        ),
        migrations.RunPython(compress, decompress),
        migrations.RemoveField(model_name="snapshot", name="document"),
        migrations.AlterField(
            model_name="snapshot",
            name="document_zlib",
            field=models.BinaryField(editable=False),
        ),
        migrations.RunPython(
            postgres_only(
                "ALTER TABLE tournaments_snapshot ALTER document_zlib SET STORAGE EXTERNAL"
            ),
            migrations.RunPython.noop,
        ),
    ]
