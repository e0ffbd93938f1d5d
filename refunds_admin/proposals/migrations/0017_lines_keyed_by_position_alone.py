"""A proposal's lines lose their second unique index, (proposal, entry_id), and their id
sequence hands each database session a thousand ids at a time.

A line is its snapshot's entry at the same position (the writer copies the engine's lines in
snapshot order), so the key (proposal, position) already allows one line per entry: the
entries' unique (snapshot, entry_id) constraint is what makes the entry ids distinct, and the
ledger's credit keys name each entry's part once. The index said it a second time at the price
of a sort of 100k-300k entry ids at every prepare, the costliest of the partition's index builds
(docs/performance.md, "Issue 25: the entries' key and the lines' entry index"). Lookups of an
entry's line go through the entry's position (lines.entry_line).

The sequence: uncached, every line of a prepare's COPY locks the sequence's page, as the
entries' did (tournaments migration 0013). Ids stay unique and rise within one prepare.
"""

from django.db import migrations

from refunds_admin.db.ddl import postgres_only


class Migration(migrations.Migration):
    dependencies = [("proposals", "0016_eliminated_lines_index")]

    operations = [
        migrations.RemoveConstraint(model_name="payoutline", name="line_entry_unique"),
        migrations.RunPython(
            postgres_only("ALTER SEQUENCE proposals_payoutline_id_seq CACHE 1000"),
            postgres_only("ALTER SEQUENCE proposals_payoutline_id_seq CACHE 1"),
        ),
    ]
