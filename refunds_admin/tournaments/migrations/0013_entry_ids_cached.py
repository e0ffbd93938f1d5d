"""The entries' id sequence hands each database session a thousand ids at a time (CACHE 1000).

An import's COPY takes one id per entry from the sequence's default; uncached, each one locks
the sequence's page (and every 32nd writes WAL), a measurable part of the COPY's time in
PostgreSQL (docs/performance.md, "Issue 25: the import, Python and PostgreSQL at once"). Ids
stay unique and increase within one import (one session takes its blocks in order); what
changes is that concurrent imports' ids interleave by blocks and a session that ends leaves
the rest of its block unused. Nothing orders entries by id across snapshots (pages order by
position). SQLite keeps its own rowids.
"""

from django.db import migrations

from refunds_admin.db.ddl import postgres_only


class Migration(migrations.Migration):
    dependencies = [
        ("tournaments", "0012_cheaper_entry_search_indexes"),
    ]

    operations = [
        migrations.RunPython(
            postgres_only("ALTER SEQUENCE tournaments_entry_id_seq CACHE 1000"),
            postgres_only("ALTER SEQUENCE tournaments_entry_id_seq CACHE 1"),
        ),
    ]
