"""Search the history by player (`/audit/?player=ID`): a GIN index for `player_ids @> [...]`
on PostgreSQL (SQLite searches the JSON text instead)."""

from django.db import migrations


def create(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(
            "CREATE INDEX IF NOT EXISTS audit_event_player_ids ON audit_auditevent "
            "USING gin (player_ids jsonb_path_ops)"
        )


def drop(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute("DROP INDEX IF EXISTS audit_event_player_ids")


class Migration(migrations.Migration):
    dependencies = [("audit", "0002_append_only")]
    operations = [migrations.RunPython(create, drop)]
