"""The player search index takes each event's players as the event is written (fastupdate off).

With GIN's default fast update, an event's keys go to a pending list that is merged into the
index whenever it outgrows gin_pending_list_limit (4 MB): an approval or a preparation lists up
to 250k players (several MB), so whichever write tipped the list over paid for merging everyone
else's too -- 0.1 s for an approval of 100k players one time, 1-2 s the next, and 1.5-2.3 s for
every approval of 250k. Written straight into the index, an event of 100k players costs about
0.4 s and one of 250k about 0.8 s, every time (issue 15, docs/performance.md). Searches no longer
scan a pending list either.
"""

from django.db import migrations


def without_pending_list(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        # Merge what is pending now, then stop using the list.
        schema_editor.execute("SELECT gin_clean_pending_list('audit_event_player_ids'::regclass)")
        schema_editor.execute("ALTER INDEX audit_event_player_ids SET (fastupdate = off)")


def with_pending_list(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute("ALTER INDEX audit_event_player_ids RESET (fastupdate)")


class Migration(migrations.Migration):
    dependencies = [("audit", "0003_player_ids_index")]
    operations = [migrations.RunPython(without_pending_list, with_pending_list)]
