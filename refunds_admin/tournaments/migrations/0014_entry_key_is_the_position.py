"""A snapshot's entries are keyed by (snapshot, position) on PostgreSQL: the unique constraint
`entry_position_unique` becomes the table's primary key, and the primary key (snapshot, id)
goes, as the proposals' lines did (proposals migration 0015).

Both said the same thing (one row per entry of a snapshot), and each is an index built on every
partition after the import's COPY (docs/performance.md, "Issue 25: the entries' key and the
lines' entry index"). `id` stays, Django's handle on an entry, filled by its sequence (no writer
names it: the COPY leaves it to the default), so it is unique by construction, no longer
enforced by an index; a lookup by id alone (the read-only admin's entry page) reads every
partition, as it did before (the old key began with snapshot_id). SQLite keeps its tables as
they are.

Adding the primary key builds a unique index on every existing partition while the entries
table is locked: run it when staff are not working in the app.
"""

from django.db import migrations

from refunds_admin.db.ddl import postgres_only

FORWARD = """
ALTER TABLE tournaments_entry DROP CONSTRAINT tournaments_entry_pkey;
ALTER TABLE tournaments_entry DROP CONSTRAINT entry_position_unique;
ALTER TABLE tournaments_entry
    ADD CONSTRAINT entry_position_unique PRIMARY KEY (snapshot_id, position);
"""

BACKWARD = """
ALTER TABLE tournaments_entry DROP CONSTRAINT entry_position_unique;
ALTER TABLE tournaments_entry ADD CONSTRAINT entry_position_unique UNIQUE (snapshot_id, position);
ALTER TABLE tournaments_entry ADD CONSTRAINT tournaments_entry_pkey PRIMARY KEY (snapshot_id, id);
"""


class Migration(migrations.Migration):
    dependencies = [("tournaments", "0013_entry_ids_cached")]

    operations = [migrations.RunPython(postgres_only(FORWARD), postgres_only(BACKWARD))]
