"""Each tournament's current snapshot version gets its start from the tournament row, which the
import wrote from that version's document (tournaments.services._store). Older versions keep
none: the incident page reads theirs from their stored form."""

from django.db import migrations
from django.db.models import OuterRef, Subquery


def fill(apps, schema_editor):
    Snapshot = apps.get_model("tournaments", "Snapshot")
    Tournament = apps.get_model("tournaments", "Tournament")
    current = Tournament.objects.filter(current_snapshot=OuterRef("pk")).values("starts_at")[:1]
    Snapshot.objects.filter(
        starts_at=None, pk__in=Tournament.objects.values("current_snapshot")
    ).update(starts_at=Subquery(current))


class Migration(migrations.Migration):
    dependencies = [("tournaments", "0016_snapshot_starts_at")]

    operations = [migrations.RunPython(fill, migrations.RunPython.noop)]
